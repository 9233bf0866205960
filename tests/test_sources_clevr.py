import json

import numpy as np
import pytest
from helpers import reference_clevr

from vicogym.errors import SourceError
from vicogym.sources.clevr import ReleaseSource, make_source, procedural_scene
from vicogym.structures.clevr import COLORS, Scene, camera_facing, placement_problem


def test_procedural_scenes_keep_clevrs_rules_and_are_deterministic():
    for seed in range(40):
        a = procedural_scene(np.random.default_rng(seed), 320, 240)
        assert a == procedural_scene(np.random.default_rng(seed), 320, 240)
        assert 3 <= len(a.objects) <= 10 and placement_problem(a) is None
    counts = {len(procedural_scene(np.random.default_rng(s), 320, 240).objects) for s in range(60)}
    assert min(counts) <= 4 and max(counts) >= 9


def test_scene_json_is_what_clevrs_question_generator_reads():
    scene = procedural_scene(np.random.default_rng(0), 480, 320)
    data = json.loads(scene.to_json())
    assert {"image_index", "image_filename", "split", "objects", "directions", "relationships"} <= set(data)
    for obj in data["objects"]:
        assert {"shape", "color", "material", "size", "3d_coords", "rotation", "pixel_coords"} <= set(obj)
        assert obj["color"] in COLORS and len(obj["3d_coords"]) == 3 and len(obj["pixel_coords"]) == 3
    assert set(data["relationships"]) == {"left", "right", "front", "behind"}
    assert all(len(v) == len(data["objects"]) for v in data["relationships"].values())
    assert set(data["directions"]) == {"left", "right", "front", "behind", "above", "below"}
    assert data["relationships"] == reference_clevr.relationships(data)
    assert Scene.from_dict(data) == scene  # and back


def test_a_released_scene_gets_a_camera_facing_its_directions():
    scene = procedural_scene(np.random.default_rng(1), 480, 320)
    turned = json.loads(scene.to_json())
    turned.pop("camera")
    angle = np.radians(20.0)
    for name, v in turned["directions"].items():
        x, y, z = v
        turned["directions"][name] = [x * np.cos(angle) - y * np.sin(angle), x * np.sin(angle) + y * np.cos(angle), z]
    camera = camera_facing(turned["directions"])
    loaded = Scene.from_dict(turned)
    assert loaded.camera == camera
    assert np.allclose(loaded.directions()["behind"], turned["directions"]["behind"], atol=1e-5)


def _release(tmp_path, questions):
    rng = np.random.default_rng(3)
    scenes = [json.loads(procedural_scene(rng, 480, 320).to_json()) for _ in range(3)]
    for k, scene in enumerate(scenes):
        scene.update(image_index=k, image_filename=f"CLEVR_val_{k:06d}.png", split="val")
        scene.pop("camera")  # as in the release: scenes carry directions, not cameras
        scene.pop("lights")
    (tmp_path / "scenes").mkdir()
    (tmp_path / "scenes" / "CLEVR_val_scenes.json").write_text(json.dumps({"info": {"split": "val"}, "scenes": scenes}))
    if questions is not None:
        (tmp_path / "questions").mkdir()
        (tmp_path / "questions" / "CLEVR_val_questions.json").write_text(
            json.dumps({"info": {}, "questions": questions})
        )
    return tmp_path, scenes


def _count_program(color, spelling="function"):
    key, values = ("function", "value_inputs") if spelling == "function" else ("type", "side_inputs")
    return [{key: "scene", "inputs": [], values: []}, {key: "filter_color", "inputs": [0], values: [color]},
            {key: "count", "inputs": [1], values: []}]


def test_release_questions_load_in_either_spelling_and_must_reproduce(tmp_path):
    folder, scenes = _release(tmp_path, None)
    color = scenes[0]["objects"][0]["color"]
    truth = str(sum(o["color"] == color for o in scenes[0]["objects"]))
    questions = [
        {"image_index": 0, "question": f"How many {color} things are there?", "program": _count_program(color),
         "answer": truth},
        {"image_index": 0, "question": f"How many {color} things are there?", "program": _count_program(color, "type"),
         "answer": truth},
        {"image_index": 0, "question": "How many?", "program": _count_program(color), "answer": str(int(truth) + 1)},
        {"image_index": 9, "question": "Missing scene?", "program": _count_program(color), "answer": truth},
        {"image_index": 1, "question": "Broken?", "program": [{"function": "teleport"}], "answer": "1"},
    ]
    (folder / "questions").mkdir()
    (folder / "questions" / "CLEVR_val_questions.json").write_text(json.dumps({"questions": questions}))
    source = ReleaseSource(folder, 480, 320)
    assert source.summary() == {"scenes": 3, "questions_used": 2, "split": "val", "questions_skipped": {
        "answer_not_reproduced": 1, "no_scene": 1, "malformed_program": 1}}
    seed = source.seed(1, np.random.default_rng(0))
    assert seed.answer == truth and seed.source_id == "CLEVR_val_questions.json#1"
    assert seed.label_rule["program"] == _count_program(color)  # stored in the released spelling
    assert reference_clevr.answer(json.loads(seed.structure.to_json()), seed.label_rule["program"]) == truth


def test_release_scenes_without_questions_get_templated_ones(tmp_path):
    folder, _ = _release(tmp_path, None)
    source = ReleaseSource(folder, 320, 240)
    seed = source.sample(np.random.default_rng(4))
    assert seed.source == "clevr" and seed.source_id.startswith("CLEVR_val_scenes.json#")
    assert seed.structure.width == 320 and seed.label_rule["template"]


@pytest.mark.parametrize("setup, message", [
    (lambda p: None, "expected a CLEVR folder with scenes/CLEVR_<split>_scenes.json"),
    (lambda p: ((p / "scenes").mkdir(), (p / "scenes" / "CLEVR_val_scenes.json").write_text("{oops")),
     "CLEVR_val_scenes.json:1: not valid JSON"),
    (lambda p: ((p / "scenes").mkdir(), (p / "scenes" / "CLEVR_val_scenes.json").write_text('{"scenes": [{}]}')),
     "scenes[0] is not a CLEVR scene (expected a scene object with an 'objects' list)"),
])
def test_bad_release_folders_name_the_file(tmp_path, setup, message):
    setup(tmp_path)
    with pytest.raises(SourceError, match=message.replace("(", r"\(").replace(")", r"\)").replace("[", r"\[")):
        ReleaseSource(tmp_path, 320, 240)


def _questions_file(folder, questions):
    (folder / "questions").mkdir(exist_ok=True)
    (folder / "questions" / "CLEVR_val_questions.json").write_text(json.dumps({"questions": questions}))


@pytest.mark.parametrize("record, message", [
    ({"image_index": "abc", "answer": "1"}, "questions[0].image_index must be an integer, got 'abc'"),
    ({"image_index": 0, "answer": None}, "questions[0].answer: a program's answer is a yes/no, a count or an attribute "
                                         "value, got None"),
])
def test_bad_question_records_name_the_file_and_record(tmp_path, record, message):
    folder, _ = _release(tmp_path, None)
    _questions_file(folder, [dict({"question": "How many?", "program": _count_program("red")}, **record)])
    with pytest.raises(SourceError) as info:
        ReleaseSource(folder, 320, 240)
    assert str(info.value) == f"{folder / 'questions' / 'CLEVR_val_questions.json'}: {message}"


def test_a_questions_file_with_nothing_usable_is_an_error_not_a_silent_fallback(tmp_path):
    folder, scenes = _release(tmp_path, None)
    color = scenes[0]["objects"][0]["color"]
    wrong = str(sum(o["color"] == color for o in scenes[0]["objects"]) + 1)
    _questions_file(folder,
                    [{"image_index": 0, "question": "How many?", "program": _count_program(color), "answer": wrong}])
    with pytest.raises(SourceError,
                       match=r"none of its 1 questions can be used \(skipped: \{'answer_not_reproduced': 1\}\)"):
        ReleaseSource(folder, 320, 240)


def test_questions_reading_an_unasked_attribute_are_skipped(tmp_path):
    folder, scenes = _release(tmp_path, None)
    objects = scenes[0]["objects"]
    material = objects[0]["material"]
    program = [{"function": "scene", "inputs": [], "value_inputs": []},
               {"function": "filter_material", "inputs": [0], "value_inputs": [material]},
               {"function": "count", "inputs": [1], "value_inputs": []}]
    truth = str(sum(o["material"] == material for o in objects))
    color = objects[0]["color"]
    _questions_file(folder, [
        {"image_index": 0, "question": f"How many {material} things are there?", "program": program, "answer": truth},
        {"image_index": 0, "question": f"How many {color} things are there?", "program": _count_program(color),
         "answer": str(sum(o["color"] == color for o in objects))}])
    assert ReleaseSource(folder, 320, 240).summary()["questions_used"] == 2
    source = ReleaseSource(folder, 320, 240, unasked=frozenset({"material"}))
    assert source.summary()["questions_used"] == 1
    assert source.summary()["questions_skipped"] == {"reads_what_the_engine_does_not_show": 1}


def test_procedural_source_honours_object_counts_and_refuses_a_split():
    source = make_source("procedural", 320, 240, min_objects=5, max_objects=6)
    rng = np.random.default_rng(0)
    assert {len(source.scene(rng).objects) for _ in range(12)} <= {5, 6}
    with pytest.raises(SourceError, match="the procedural source has none"):
        make_source("procedural", 320, 240, split="val")


@pytest.mark.parametrize("count", [0, 2, 11, 500])
def test_scenes_outside_clevrs_object_counts_are_refused_at_load_naming_the_file(tmp_path, count):
    folder, scenes = _release(tmp_path, None)
    objects = scenes[0]["objects"]
    scenes[1]["objects"] = (objects * 200)[:count]
    (folder / "scenes" / "CLEVR_val_scenes.json").write_text(json.dumps({"info": {}, "scenes": scenes}))
    with pytest.raises(SourceError, match=rf"CLEVR_val_scenes.json: scenes\[1\] is not a CLEVR scene \(a CLEVR "
                                          rf"scene holds 3-10 objects, this one has {count}\)"):
        ReleaseSource(folder, 64, 48)


def test_deep_or_unreadable_scene_files_are_named(tmp_path):
    folder, _ = _release(tmp_path, None)
    path = folder / "scenes" / "CLEVR_val_scenes.json"
    path.write_text('{"scenes": ' + "[" * 100_000 + "]" * 100_000 + "}")
    with pytest.raises(SourceError, match="CLEVR_val_scenes.json:1: JSON nested deeper than the parser follows"):
        ReleaseSource(folder, 64, 48)
    path.write_text('{"info": {}, "scenes": [{"image_index": "x", "objects": []}]}')
    with pytest.raises(SourceError, match=r"CLEVR_val_scenes.json: scenes\[0\]"):
        ReleaseSource(folder, 64, 48)
