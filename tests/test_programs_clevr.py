import collections
import json
from dataclasses import replace

import numpy as np
import pytest
from helpers import reference_clevr
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vicogym.errors import GenerationError, InvalidEdit
from vicogym.programs.clevr import (
    FAMILIES,
    HANDLERS,
    TEMPLATES,
    answer_text,
    attributes_read,
    execute,
    generate_question,
    normalize_program,
    relation_problem,
    run,
)
from vicogym.sources.clevr import procedural_scene
from vicogym.structures.clevr import Obj, Scene

# a known scene seen from CLEVR's camera: "behind" points away from it, "left" to its left
SCENE = Scene((
    Obj("cube", "red", "metal", "large", 0.0, 0.0),        # 0: centre
    Obj("sphere", "blue", "rubber", "small", 1.278, 2.231),     # 1: right of 0 (and neither behind nor front)
    Obj("cylinder", "red", "rubber", "small", -1.278, -2.231),  # 2: left of 0
    Obj("sphere", "red", "metal", "small", -2.231, 1.278),      # 3: behind 0
))


def node(function, inputs=(), values=()):
    return {"function": function, "inputs": list(inputs), "value_inputs": list(values)}


def test_relationships_follow_the_camera():
    rel = SCENE.relationships()
    assert rel["right"][0] == [1] and rel["left"][0] == [2, 3] and rel["behind"][0] == [1, 3]
    assert rel["front"][3] == [0, 1, 2]
    assert rel == reference_clevr.relationships(SCENE.to_dict())


@pytest.mark.parametrize("program, expected", [
    ([node("scene"), node("filter_color", [0], ["red"]), node("count", [1])], 3),
    ([node("scene"), node("filter_shape", [0], ["sphere"]), node("exist", [1])], True),
    ([node("scene"), node("filter_material", [0], ["rubber"]), node("filter_size", [1], ["small"]),
      node("count", [2])], 2),
    ([node("scene"), node("filter_shape", [0], ["cube"]), node("unique", [1]), node("query_color", [2])], "red"),
    ([node("scene"), node("filter_shape", [0], ["cylinder"]), node("unique", [1]), node("query_shape", [2])],
     "cylinder"),
    ([node("scene"), node("filter_color", [0], ["blue"]), node("unique", [1]), node("query_size", [2])], "small"),
    ([node("scene"), node("filter_color", [0], ["blue"]), node("unique", [1]), node("query_material", [2])], "rubber"),
    ([node("scene"), node("filter_shape", [0], ["cube"]), node("unique", [1]), node("relate", [2], ["left"]),
      node("count", [3])], 2),
    ([node("scene"), node("filter_color", [0], ["red"]), node("filter_color", [0], ["blue"]), node("union", [1, 2]),
      node("count", [3])], 4),
    ([node("scene"), node("filter_color", [0], ["red"]), node("filter_material", [0], ["metal"]),
      node("intersect", [1, 2]), node("count", [3])], 2),
    ([node("scene"), node("filter_shape", [0], ["cube"]), node("unique", [1]), node("same_color", [2]),
      node("count", [3])], 2),
    ([node("scene"), node("filter_shape", [0], ["cube"]), node("unique", [1]), node("same_size", [2]),
      node("count", [3])], 0),
    ([node("scene"), node("filter_shape", [0], ["cube"]), node("unique", [1]), node("same_shape", [2]),
      node("exist", [3])], False),
    ([node("scene"), node("filter_shape", [0], ["sphere"]), node("unique", [1])], None),  # two spheres: no answer
    ([node("scene"), node("filter_shape", [0], ["cube"]), node("unique", [1]), node("query_material", [2]),
      node("filter_shape", [0], ["cylinder"]), node("unique", [4]), node("query_material", [5]),
      node("equal_material", [3, 6])], False),
    ([node("scene"), node("filter_color", [0], ["red"]), node("count", [1]), node("filter_color", [0], ["blue"]),
      node("count", [3]), node("greater_than", [2, 4])], True),
    ([node("scene"), node("filter_color", [0], ["red"]), node("count", [1]), node("filter_color", [0], ["blue"]),
      node("count", [3]), node("less_than", [2, 4])], False),
    ([node("scene"), node("filter_color", [0], ["red"]), node("count", [1]), node("filter_color", [0], ["blue"]),
      node("count", [3]), node("equal_integer", [2, 4])], False),
])
def test_every_handler_on_a_known_scene(program, expected):
    if expected is None:
        with pytest.raises(InvalidEdit) as info:
            execute(SCENE, program)
        assert str(info.value) == "[ambiguous] the question's object is not unique: 2 objects fit its description"
        return
    assert execute(SCENE, normalize_program(program)) == expected
    assert reference_clevr.answer(SCENE.to_dict(), program) == answer_text(expected)


def test_every_function_of_clevr_has_a_handler():
    names = {"scene", "unique", "relate", "union", "intersect", "count", "exist", "equal_integer", "less_than",
             "greater_than"} | {f"{kind}_{a}" for kind in ("filter", "query", "same", "equal")
                                for a in ("color", "shape", "material", "size")}
    assert set(HANDLERS) == names


def test_programs_load_in_either_spelling_and_are_checked():
    generator_spelling = [{"type": "scene", "inputs": [], "side_inputs": []},
                          {"type": "filter_color", "inputs": [0], "side_inputs": ["red"]},
                          {"type": "count", "inputs": [1]}]
    released = normalize_program(generator_spelling)
    assert released == [node("scene"), node("filter_color", [0], ["red"]), node("count", [1])]
    assert normalize_program(released) == released
    for bad, message in [
        ([{"function": "fly"}], "program node 0: unknown function 'fly'"),
        ([node("scene"), node("count", [2])],
         "program node 1 (count): inputs must be indices of earlier nodes, got [2]"),
        ([node("scene"), node("filter_color", [0])], "program node 1 (filter_color) takes 1 inputs and 1 value inputs, "
                                                      "got 1 and 0"),
        ([], "expected a program as a non-empty list of nodes, got list"),
    ]:
        with pytest.raises(ValueError) as info:
            normalize_program(bad)
        assert str(info.value) == message


def test_templates_cover_clevrs_nine_families():
    assert set(FAMILIES) == {"zero_hop", "one_hop", "two_hop", "three_hop", "single_and", "single_or", "same_relate",
                             "comparison", "compare_integer"}


def _scenes(n, seed=0):
    rng = np.random.default_rng(seed)
    return [procedural_scene(rng, 320, 240) for _ in range(n)]


@pytest.mark.parametrize("template", [t.id for t in TEMPLATES])
def test_every_template_gives_valid_non_degenerate_programs(template):
    rng = np.random.default_rng(1)
    made = 0
    for scene in _scenes(12):
        try:
            question, rule, answer = generate_question(scene, rng, templates=[template])
        except GenerationError:
            continue
        made += 1
        outputs = run(scene, rule["program"])
        for k, n in enumerate(rule["program"]):
            if n["function"].startswith("filter_"):
                assert len(outputs[k]) < len(outputs[n["inputs"][0]]), f"a filter that changes nothing: {question}"
        assert question.endswith("?") and rule["question"] == question and rule["template"] == template
        assert reference_clevr.answer(scene.to_dict(), rule["program"]) == answer
    # a question that reads material fits only scenes where no cube's material decides it
    assert made >= (1 if "material" in template else 3), f"{template} rarely fits a scene"


def test_answers_are_balanced_and_families_mixed():
    rng = np.random.default_rng(2)
    answers, families = collections.Counter(), collections.Counter()
    for scene in _scenes(150, seed=3):
        _q, rule, answer = generate_question(scene, rng)
        answers[answer] += 1
        families[rule["family"]] += 1
    assert abs(answers["yes"] - answers["no"]) <= 0.35 * (answers["yes"] + answers["no"])
    assert len(families) >= 8 and len(answers) >= 15


def test_a_relation_the_picture_does_not_show_is_reported():
    # the sphere is 0.5 left of the cube on the floor, but 2.5 behind it: perspective draws it
    # almost straight above the cube
    left_of_red = [node("scene"), node("filter_color", [0], ["red"]), node("unique", [1]),
                   node("relate", [2], ["left"]), node("count", [3])]
    far = Scene((Obj("cube", "red", "metal", "large", 0.063, -2.12),
                 Obj("sphere", "blue", "rubber", "small", -2.463, -0.426),
                 Obj("cylinder", "green", "rubber", "small", -1.5, 2.5)), width=320, height=240)
    assert far.relationships()["left"][0] == [1]
    assert relation_problem(far, left_of_red, 6) == ("object 1 is left of object 0 on the floor but 2 px left of it in "
                                                     "the image; a reader needs it at least 6 px to the left")
    near = replace(far, objects=(far.objects[0], replace(far.objects[1], x=-1.735, y=-1.112), far.objects[2]))
    assert near.relationships()["left"][0] == [1] and relation_problem(near, left_of_red, 6) is None
    assert relation_problem(far, [node("scene"), node("count", [0])], 6) is None  # no relate step, nothing to see


def test_attributes_read_are_those_of_filter_query_same_and_equal_nodes():
    assert attributes_read([node("scene"), node("filter_material", [0], ["metal"]), node("count", [1])]) == {"material"}
    assert attributes_read([node("scene"), node("unique", [0]), node("same_shape", [1]),
                            node("exist", [2])]) == {"shape"}
    assert attributes_read([{"type": "scene"}, {"type": "relate", "side_inputs": ["left"]}]) == set()


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 2**32 - 1))
def test_unasked_attributes_are_never_read(seed):
    rng = np.random.default_rng(seed)
    scene = procedural_scene(rng, 320, 240)
    question, rule, answer = generate_question(scene, rng, unasked=frozenset({"material"}))
    assert "material" not in attributes_read(rule["program"])
    assert not any(word in question for word in ("metal", "rubber", "material", "made of"))
    assert answer_text(execute(scene, rule["program"])) == answer


def test_templates_that_only_ask_an_unasked_attribute_are_refused():
    with pytest.raises(ValueError, match="every template asked for reads \\['material'\\]"):
        generate_question(SCENE, np.random.default_rng(0), ["zero_hop_query_material", "comparison_material"],
                          unasked=frozenset({"material"}))


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 2**32 - 1))
def test_generated_questions_agree_with_an_independent_executor(seed):
    rng = np.random.default_rng(seed)
    scene = procedural_scene(rng, 320, 240)
    question, rule, answer = generate_question(scene, rng)
    stored = json.loads(scene.to_json())
    assert reference_clevr.answer(stored, rule["program"]) == answer
    assert stored["relationships"] == reference_clevr.relationships(stored)


def test_front_and_behind_need_a_separation_a_reader_can_see():
    behind_red = [node("scene"), node("filter_color", [0], ["red"]), node("unique", [1]),
                  node("relate", [2], ["behind"]), node("count", [3])]
    bx, by = np.asarray(Scene(()).directions()["behind"][:2]) / np.hypot(*Scene(()).directions()["behind"][:2])
    base = Scene((Obj("cube", "red", "metal", "large", 0.0, 0.0),
                  Obj("sphere", "blue", "rubber", "small", 2.5 * bx, 2.5 * by),
                  Obj("cylinder", "green", "rubber", "small", -2.5 * bx, -2.5 * by)), width=320, height=240)
    pixels = base.pixel_coords()
    behind = base.relationships()["behind"][0]
    assert behind == [1] and pixels[1][1] < pixels[0][1]  # behind: higher in the picture
    assert relation_problem(base, behind_red, 6, 12) is None
    # slide the sphere towards the cube until it is drawn only a few pixels above it
    for step in np.linspace(0.0, 1.0, 200):
        d = 2.5 * (1 - step) + 0.45 * step
        near = replace(base, objects=(base.objects[0], replace(base.objects[1], x=d * bx, y=d * by), base.objects[2]))
        dy = abs(near.pixel_coords()[1][1] - near.pixel_coords()[0][1])
        if 1 in near.relationships()["behind"][0] and dy < 12:
            problem = relation_problem(near, behind_red, 6, 12)
            assert problem is not None and "a reader needs 12 px up the image" in problem, (dy, problem)
            break
    else:
        pytest.fail("the sphere never came within 12 px of the cube while behind it")


def test_questions_clevrs_generator_calls_degenerate_are_found_and_never_generated():
    from vicogym.programs.clevr import degeneracy

    scene = Scene((Obj("cube", "red", "metal", "large", -2.0, 0.0),
                   Obj("sphere", "purple", "rubber", "small", 2.0, 0.0),
                   Obj("cylinder", "purple", "rubber", "large", 0.0, 2.5)), width=320, height=240)
    # "how many spheres are right of the red cube?": every sphere is, so the relate changes nothing
    right_of_red = [node("scene"), node("filter_color", [0], ["red"]), node("unique", [1]),
                    node("relate", [2], ["right"]), node("filter_shape", [3], ["sphere"]), node("count", [4])]
    assert "relate step 3 (right) changes nothing" in degeneracy(scene, right_of_red)
    nested = [node("scene"), node("filter_color", [0], ["purple"]), node("filter_shape", [1], ["sphere"]),
              node("scene"), node("filter_color", [3], ["purple"]), node("count", [2]), node("count", [4]),
              node("greater_than", [5, 6])]
    assert "nest" in degeneracy(scene, nested)  # "more purple spheres than purple things": always no
    fine = [node("scene"), node("filter_shape", [0], ["sphere"]), node("scene"), node("filter_shape", [2], ["cube"]),
            node("count", [1]), node("count", [3]), node("greater_than", [4, 5])]
    assert degeneracy(scene, fine) is None
    rng = np.random.default_rng(0)
    for _ in range(150):
        s = procedural_scene(rng, 320, 240)
        _q, rule, _a = generate_question(s, rng)
        assert degeneracy(s, rule["program"]) is None, rule


def test_no_answer_depends_on_a_cubes_material_which_its_faces_do_not_show():
    from vicogym.programs.clevr import material_unseen

    scene = Scene((Obj("cube", "red", "metal", "large", -2.0, 0.0), Obj("sphere", "red", "metal", "small", 2.0, 0.0),
                   Obj("cylinder", "blue", "rubber", "large", 0.0, 2.5)), width=320, height=240)
    count_metal = [node("scene"), node("filter_material", [0], ["metal"]), node("count", [1])]
    assert "object 0 (a red cube) is metal or rubber" in material_unseen(scene, count_metal)
    metal_spheres = [node("scene"), node("filter_shape", [0], ["sphere"]), node("filter_material", [1], ["metal"]),
                     node("count", [2])]
    assert material_unseen(scene, metal_spheres) is None  # a sphere's highlights show its material
    assert material_unseen(scene, [node("scene"), node("filter_color", [0], ["red"]), node("count", [1])]) is None
    rng = np.random.default_rng(1)
    for _ in range(150):
        s = procedural_scene(rng, 320, 240)
        _q, rule, _a = generate_question(s, rng)
        assert material_unseen(s, rule["program"]) is None, rule


def test_each_yes_no_template_is_drawn_with_yes_as_often_as_no():
    # a sample's target (template, and for a yes/no template its answer) is drawn once, before
    # any scene, so a scene that gives one answer more easily cannot tip the balance
    from vicogym.programs.clevr import draw_target

    rng = np.random.default_rng(0)
    counts = collections.Counter()
    for _ in range(20000):
        target = draw_target(rng)
        if target.answer is not None:
            counts[(target.templates[0], target.answer)] += 1
        else:
            assert all(t.answer != "bool" for t in TEMPLATES if t.id in target.templates)
    bool_ids = [t.id for t in TEMPLATES if t.answer == "bool"]
    assert {t for t, _ in counts} == set(bool_ids)
    for t in bool_ids:
        assert 0.43 < counts[(t, "yes")] / (counts[(t, "yes")] + counts[(t, "no")]) < 0.57, (t, counts)


def test_a_held_answer_is_never_traded_for_the_one_this_scene_gives():
    # every colour differs, so "same colour?" can only be "no" here: a question drawn for "yes"
    # is refused (draw another scene for it), never answered "no" in its place
    from vicogym.programs.clevr import Target

    scene = Scene((Obj("cube", "red", "rubber", "large", -2.0, -2.0),
                   Obj("sphere", "blue", "rubber", "large", 2.0, 2.0),
                   Obj("cylinder", "green", "rubber", "large", -2.0, 2.0)), width=320, height=240)
    with pytest.raises(GenerationError, match="'yes' of comparison_color"):
        generate_question(scene, np.random.default_rng(0), target=Target(("comparison_color",), "yes"), max_tries=2)
    _q, rule, answer = generate_question(scene, np.random.default_rng(0), target=Target(("comparison_color",), "no"))
    assert answer == "no" and rule["template"] == "comparison_color"
