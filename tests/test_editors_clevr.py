import copy
import json

import numpy as np
import pytest
from helpers import reference_clevr
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vicogym.editors.clevr import OP_FIELDS, apply, sample_op
from vicogym.errors import GenerationError, InvalidEdit
from vicogym.programs.clevr import generate_question, relabel
from vicogym.sources.clevr import procedural_scene
from vicogym.structures.clevr import Obj, Scene, placement_problem

SCENE = Scene((
    Obj("cube", "red", "metal", "large", 0.0, 0.0),
    Obj("sphere", "blue", "rubber", "small", 1.278, 2.231),
    Obj("cylinder", "red", "rubber", "small", -1.278, -2.231),
    Obj("sphere", "red", "metal", "small", -2.231, 1.278),
))
COUNT_RED = {"kind": "program", "question": "How many red things are there?",
             "program": [{"function": "scene", "inputs": [], "value_inputs": []},
                         {"function": "filter_color", "inputs": [0], "value_inputs": ["red"]},
                         {"function": "count", "inputs": [1], "value_inputs": []}]}
CUBE_COLOR = {"kind": "program", "question": "What color is the cube?",
              "program": [{"function": "scene", "inputs": [], "value_inputs": []},
                          {"function": "filter_shape", "inputs": [0], "value_inputs": ["cube"]},
                          {"function": "unique", "inputs": [1], "value_inputs": []},
                          {"function": "query_color", "inputs": [2], "value_inputs": []}]}


def test_every_op_applies_and_the_answer_follows():
    assert relabel(SCENE, COUNT_RED) == "3"
    s = apply(SCENE, {"op": "set_color", "object": 1, "color": "red"}, COUNT_RED)
    assert relabel(s, COUNT_RED) == "4"
    s = apply(s, {"op": "add_object", "shape": "cube", "color": "red", "material": "rubber", "size": "small",
                  "x": 2.231, "y": -1.278, "rotation": 10}, COUNT_RED)
    assert relabel(s, COUNT_RED) == "5" and len(s.objects) == 5
    s = apply(s, [{"op": "remove_object", "object": 0}, {"op": "set_material", "object": 0, "material": "metal"},
                  {"op": "set_size", "object": 0, "size": "large"}, {"op": "set_shape", "object": 0, "shape": "cube"}],
              COUNT_RED)
    assert s.objects[0] == Obj("cube", "red", "metal", "large", 1.278, 2.231)
    moved = apply(s, {"op": "move", "object": 1, "x": 1.696, "y": 0.05}, COUNT_RED)
    assert (moved.objects[1].x, moved.objects[1].y) == (1.696, 0.05)
    swapped = apply(s, {"op": "swap", "a": 0, "b": 1}, COUNT_RED)
    assert (swapped.objects[0].x, swapped.objects[1].x) == (s.objects[1].x, s.objects[0].x)
    camera = apply(s, {"op": "jitter_camera", "dx": 0.3, "dy": -0.2, "dz": 0.1}, COUNT_RED)
    assert camera.camera.location != s.camera.location and camera.pixel_coords() != s.pixel_coords()
    lit = apply(s, {"op": "jitter_lights", "key": [0.5, 0.0, -0.5], "intensity": 1.2}, COUNT_RED)
    assert lit.lights.key == (0.5, 0.0, -0.5) and lit.lights.intensity == 1.2
    assert SCENE.objects[1].color == "blue"  # inputs untouched


@pytest.mark.parametrize("op, message",
                         [({"op": "set_color", "object": 9, "color": "red"},
                           "[not_found] ops[0] set_color: object 9 is not an object; the scene has objects 0-3"),
                          ({"op": "set_color", "object": 0, "color": "pink"},
                           "[bad_value] ops[0] set_color: color must be one of ['gray', "
                           "'red', 'blue', 'green', 'brown', 'purple', 'cyan', 'yellow'], " "got 'pink'"),
                          ({"op": "move", "object": 0, "x": 9, "y": 0},
                           "[bad_value] ops[0] move: x must be within [-3, 3], got 9"),
                          ({"op": "move", "object": 0, "x": 1.278, "y": 2.231},
                           "[spacing] ops[0] move: objects 0 and 1 are 0.00 apart, closer than 0.25; move one of them"),
                          ({"op": "remove_object", "object": 0}, None),
                          ({"op": "swap", "a": 1, "b": 1}, "[bad_value] ops[0] swap: swap needs two different objects"),
                          ({"op": "jitter_camera", "dx": 0.9, "dy": 0, "dz": 0},
                           "[bad_value] ops[0] jitter_camera: dx must be within [-0.5, 0.5], got 0.9"),
                          ({"op": "jitter_lights"},
                           "[bad_field] ops[0] jitter_lights: jitter_lights needs at least one of ['key', 'fill', "
                           "'back', 'intensity']"), ({"op": "explode"}, None)])
def test_rejections_name_op_field_and_reason(op, message):
    before = SCENE.to_json()
    if message is None:
        with pytest.raises(InvalidEdit):
            apply(apply(SCENE, {"op": "remove_object", "object": 3}, COUNT_RED), op, COUNT_RED)
        return
    with pytest.raises(InvalidEdit) as info:
        apply(SCENE, op, COUNT_RED)
    assert str(info.value) == message
    assert SCENE.to_json() == before


def test_too_few_objects_and_margins_are_refused():
    three = apply(SCENE, {"op": "remove_object", "object": 3}, COUNT_RED)
    with pytest.raises(InvalidEdit) as info:
        apply(three, {"op": "remove_object", "object": 0}, COUNT_RED)
    assert str(info.value) == "[object_count] ops[0] remove_object: a scene holds 3-10 objects, this edit leaves 2"
    # 0.3 apart along "right": clear of each other, but a borderline left/right relation
    right = np.asarray(SCENE.directions()["right"][:2])
    x, y = (np.array([-1.278, -2.231]) + 1.05 * right + 0.3 * np.asarray(SCENE.directions()["behind"][:2])).round(3)
    with pytest.raises(InvalidEdit) as info:
        apply(SCENE, {"op": "add_object", "shape": "sphere", "color": "gray", "material": "rubber", "size": "small",
                      "x": float(x), "y": float(y)}, COUNT_RED)
    assert info.value.code == "spacing"


def test_replacement_is_validated():
    data = json.loads(SCENE.to_json())
    data["objects"][0]["color"] = "green"
    assert apply(SCENE, {"replace": data}, CUBE_COLOR).objects[0].color == "green"
    data["objects"][1]["3d_coords"] = [0.1, 0.1, 0.35]
    with pytest.raises(InvalidEdit) as info:
        apply(SCENE, {"replace": data}, CUBE_COLOR)
    assert info.value.code == "spacing" and info.value.op == "replace"
    with pytest.raises(InvalidEdit) as info:
        apply(SCENE, {"replace": {"objects": [{"shape": "pyramid"}]}}, CUBE_COLOR)
    assert info.value.code == "malformed"
    with pytest.raises(InvalidEdit) as info:
        apply(SCENE, {"replace": dict(json.loads(SCENE.to_json()), camera={"foo": 1})}, CUBE_COLOR)
    assert str(info.value) == (
        "[malformed] replace: replacement scene: expected 'camera' as an object with fields from "
        "['location', 'rotation', 'lens', 'sensor'], got ['foo']"
    )


def test_removing_stops_at_three_objects_however_many_ops_ask():
    with pytest.raises(InvalidEdit) as info:
        apply(SCENE, {"ops": [{"op": "remove_object", "object": 0}] * 8}, COUNT_RED)
    assert str(info.value) == "[object_count] ops[1] remove_object: a scene holds 3-10 objects, this edit leaves 2"
    with pytest.raises(InvalidEdit) as info:
        apply(SCENE, {"op": "move", "object": 10**400, "x": 0, "y": 0}, COUNT_RED)
    assert "object an integer of about 400 digits is not an object" in str(info.value) and len(str(info.value)) < 200


RAW = st.fixed_dictionaries({"op": st.sampled_from(sorted(OP_FIELDS))},
                            optional={"object": st.integers(-1, 11), "x": st.floats(-4, 4), "y": st.floats(-4, 4),
                                      "color": st.sampled_from(["red", "pink", "blue"]), "a": st.integers(0, 4),
                                      "b": st.integers(0, 4), "size": st.sampled_from(["large", "small", "huge"]),
                                      "dx": st.floats(-1, 1), "dy": st.floats(-1, 1), "dz": st.floats(-1, 1)})


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 2**32 - 1), st.lists(st.one_of(st.none(), RAW), min_size=1, max_size=8))
def test_random_edit_sequences_keep_scenes_valid_and_labels_right(seed, raw_ops):
    rng = np.random.default_rng(seed)
    scene = procedural_scene(rng, 320, 240)
    try:
        _q, rule, _a = generate_question(scene, rng)
    except GenerationError:
        return
    for raw in raw_ops:
        edit = {"ops": [sample_op(scene, rng) if raw is None else raw]}
        before = copy.deepcopy(scene.to_dict())
        try:
            new = apply(scene, edit, rule)
            answer = relabel(new, rule)
        except InvalidEdit as exc:
            assert exc.code != "unhandled"
            assert scene.to_dict() == before
            continue
        stored = json.loads(new.to_json())
        assert placement_problem(new) is None
        assert reference_clevr.answer(stored, rule["program"]) == answer
        assert stored["relationships"] == reference_clevr.relationships(stored)
        scene = new
