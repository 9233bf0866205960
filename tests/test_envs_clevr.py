"""The CLEVR environment end to end (Workbench at a small size): labels against an
independent executor on the stored scene, visibility rejections, the actor stand-in."""

import collections
import json

import gymnasium as gym
import numpy as np
import pytest
from helpers import reference_clevr

from vicogym.checks.clevr import difficulty, difficulty_features, distractors
from vicogym.errors import GenerationError, InvalidEdit
from vicogym.policies import RandomRewriter, SimulatedActor
from vicogym.programs import clevr as clevr_programs
from vicogym.renderers.clevr import ClevrFacts
from vicogym.structures.clevr import COLORS, Obj, Scene

pytest.importorskip("bpy", reason="the CLEVR environment needs the [clevr] extra (bpy)")

FAST = {"engine": "workbench", "width": 160, "height": 120, "k": 4}
RED_SHAPE = [{"function": "scene", "inputs": [], "value_inputs": []},
             {"function": "filter_color", "inputs": [0], "value_inputs": ["red"]},
             {"function": "unique", "inputs": [1], "value_inputs": []},
             {"function": "query_shape", "inputs": [2], "value_inputs": []}]


def test_accepted_steps_store_answers_that_an_independent_executor_reproduces():
    env = gym.make("vicogym/CLEVR-v0", max_turns=12, **FAST)
    rewriter, rng = RandomRewriter.for_env(env), np.random.default_rng(0)
    accepted = 0
    for seed in (0, 1):
        obs, info = env.reset(seed=seed)
        for _ in range(6):
            scene = json.loads(obs["structure"])
            assert reference_clevr.relationships(scene) == scene["relationships"]  # CLEVR's 0.2 rule, from the JSON
            assert reference_clevr.answer(scene, info["label"]["program"]) == info["answer"]
            before = obs["structure"]
            obs, _, terminated, truncated, info = env.step(rewriter.propose(obs, rng))
            accepted += info["valid"]
            if not info["valid"]:
                assert obs["structure"] == before and info["error"]["code"]
            if terminated or truncated:
                break
    env.close()
    assert accepted >= 4


def test_an_object_hidden_behind_another_is_rejected_by_name():
    env = gym.make("vicogym/CLEVR-v0", **FAST)
    env.reset(seed=0)
    arm = env.unwrapped.arm
    camera = Scene(()).camera
    toward = np.asarray(camera.location[:2]) / np.linalg.norm(camera.location[:2])
    scene = Scene((Obj("sphere", "red", "rubber", "small", *(toward * 0.5).round(3)),
                   Obj("cube", "gray", "rubber", "large", *(toward * 1.8).round(3)),
                   Obj("cylinder", "blue", "metal", "large", -1.5, 1.5)), width=160, height=120)
    rule = {"kind": "program", "question": "What shape is the red thing?", "program": RED_SHAPE}
    render = arm.render(scene, np.random.default_rng(0))
    with pytest.raises(InvalidEdit, match="small red rubber sphere|object 0") as caught:
        arm.validate(scene, render, rule)
    assert caught.value.code == "hidden"
    env.close()


def test_a_relation_the_picture_contradicts_is_rejected():
    env = gym.make("vicogym/CLEVR-v0", engine="workbench")
    arm = env.unwrapped.arm
    left_of_red = [{"function": "scene", "inputs": [], "value_inputs": []},
                   {"function": "filter_color", "inputs": [0], "value_inputs": ["red"]},
                   {"function": "unique", "inputs": [1], "value_inputs": []},
                   {"function": "relate", "inputs": [2], "value_inputs": ["left"]},
                   {"function": "count", "inputs": [3], "value_inputs": []}]
    rule = {"kind": "program", "question": "How many things are left of the red thing?", "program": left_of_red}
    far = Scene((Obj("cube", "red", "metal", "large", 0.063, -2.12),
                 Obj("sphere", "blue", "rubber", "small", -2.463, -0.426),
                 Obj("cylinder", "green", "rubber", "small", -1.5, 2.5)))
    with pytest.raises(InvalidEdit) as caught:
        arm.validate(far, arm.render(far, np.random.default_rng(0)), rule)
    assert caught.value.code == "relation_unseen"  # at 480 x 320: 3 px apart, 10 px needed
    assert "3 px left of it in the image; a reader needs it at least 10 px to the left" in str(caught.value)
    env.close()


def test_difficulty_rises_with_occlusion_small_metal_and_hops():
    easy = Scene((Obj("cube", "red", "rubber", "large", 0.0, 0.0), Obj("sphere", "blue", "rubber", "small", 1.3, 2.2),
                  Obj("cylinder", "yellow", "rubber", "large", -1.3, -2.2)))
    hard = Scene((Obj("cube", "red", "metal", "small", 0.0, 0.0), Obj("sphere", "brown", "rubber", "small", 1.3, 2.2),
                  Obj("cylinder", "yellow", "rubber", "large", -1.3, -2.2)))
    rule = {"program": RED_SHAPE}
    seen = ClevrFacts(np.zeros((1, 1, 3), np.uint8), [5000, 5000, 5000], [None] * 3, [False] * 3)
    covered = ClevrFacts(np.zeros((1, 1, 3), np.uint8), [120, 5000, 5000], [None] * 3, [False] * 3)
    f_easy, f_hard = difficulty_features(easy, seen, rule), difficulty_features(hard, covered, rule)
    assert f_easy == {"n_objects": 3, "occluded": 0.0, "small": 0.0, "metal": 0.0, "similar_colors": 0.0,
                      "program_length": 4, "hops": 0}
    assert f_hard | {"program_length": 4} == {"n_objects": 3, "occluded": 1.0, "small": 1.0, "metal": 1.0,
                                              "similar_colors": 1.0, "program_length": 4, "hops": 0}
    assert difficulty(f_hard) > difficulty(f_easy) + 2
    assert difficulty({**f_easy, "hops": 2, "program_length": 8}) > difficulty(f_easy)


@pytest.mark.parametrize("answer, kind",
                         [("yes", {"no"}), ("no", {"yes"}), ("0", {"1", "2"}), ("3", {"1", "2", "4", "5"}),
                          ("red", set(COLORS) - {"red"}), ("metal", {"rubber"}), ("cylinder", {"cube", "sphere"}),
                          ("large", {"small"})])
def test_wrong_answers_are_of_the_answers_kind(answer, kind):
    assert set(distractors(answer)) == kind
    actor = SimulatedActor(skill=-20.0)  # always wrong
    out = actor.answer(np.zeros((4, 4, 3), np.uint8), "q", 50, rng=np.random.default_rng(0),
                       context={"answer": answer, "difficulty": 1.0, "distractors": distractors(answer),
                                "closed": True})
    assert set(out) <= kind and answer not in out


def test_workbench_never_asks_about_material_and_refuses_a_question_that_does():
    env = gym.make("vicogym/CLEVR-v0", **FAST)
    arm = env.unwrapped.arm
    for seed in range(6):
        obs, info = env.reset(seed=seed)
        assert "material" not in clevr_programs.attributes_read(info["label"]["program"]), obs["question"]
    scene = arm.decode(obs["structure"])
    metal = [{"function": "scene", "inputs": [], "value_inputs": []},
             {"function": "filter_material", "inputs": [0], "value_inputs": ["metal"]},
             {"function": "count", "inputs": [1], "value_inputs": []}]
    rule = {"kind": "program", "question": "How many metal things are there?", "program": metal}
    assert "which workbench images do not show" in arm.check_question(rule["question"], rule, scene)
    cycles = gym.make("vicogym/CLEVR-v0", width=160, height=120).unwrapped.arm  # draws nothing until asked
    assert cycles.check_question(rule["question"], rule, scene) is None
    assert cycles.replay_settings() == {"engine": "workbench", "question_engine": "cycles"}
    replay = gym.make("vicogym/CLEVR-v0", width=160, height=120, **cycles.replay_settings()).unwrapped.arm
    assert replay.check_question(rule["question"], rule, scene) is None  # a Cycles run's questions replay as drawn
    env.close()


def test_unasked_adds_to_what_the_engine_cannot_show():
    config = gym.make("vicogym/CLEVR-v0", engine="workbench", unasked=["color"]).unwrapped.arm.config
    assert config.unasked_attributes() == {"color", "material"}
    with pytest.raises(ValueError, match="every attribute is unasked"):
        gym.make("vicogym/CLEVR-v0", engine="workbench", unasked=["color", "shape", "size"])


def test_random_edits_of_a_yes_no_question_keep_its_answer():
    # edits drawn regardless of their answer drifted a run's yes/no answers to one side (most
    # of an "are they the same colour?" question's edits leave it at "no"); the seeds' answers
    # are balanced over the run, and the random rewriter's edits keep them
    from vicogym.core import Edit
    from vicogym.envs.clevr import ClevrArm, ClevrEnvConfig
    from vicogym.sources.clevr import procedural_scene

    arm = ClevrArm(ClevrEnvConfig(**{k: v for k, v in FAST.items() if k != "k"}))
    scene = procedural_scene(np.random.default_rng(3), 160, 120, 6, 6)
    outcomes = collections.Counter()
    questions = (clevr_programs.generate_question(scene, np.random.default_rng(seed), [template])
                 for template, seed in (("compare_integer_equal_integer", 1), ("comparison_color", 0)))
    for _question, rule, before in questions:
        template = rule["template"]
        assert before == {"compare_integer_equal_integer": "yes", "comparison_color": "no"}[template]
        for i in range(20):
            try:
                edit = arm.sample_edit(scene, rule, np.random.default_rng(i))
            except GenerationError as exc:  # no edit keeps it: the rewriter has none, the episode ends
                assert f"answer {before!r}" in str(exc)
                outcomes["none"] += 1
                continue
            new = arm.apply(scene, Edit.parse(edit), rule)
            assert new != scene and arm.relabel(new, rule) == before, (template, i)
            outcomes[before] += 1
    assert outcomes["yes"] >= 10 and outcomes["no"] >= 10, outcomes


def test_a_run_asks_its_yes_no_questions_yes_as_often_as_no():
    # CLEVR's generator balances answers over its data set; a run does the same over its
    # episodes: episode e's target is stratified by e, whatever run of episodes it is
    from vicogym.programs.clevr import draw_target

    rng = np.random.default_rng(0)
    for start in (0, 37, 5000):
        answers = collections.Counter()
        for e in range(start, start + 200):
            target = draw_target(rng, episode=e)
            if target.answer is not None:
                answers[(target.templates[0], target.answer)] += 1
        yes = sum(n for (_, a), n in answers.items() if a == "yes")
        no = sum(n for (_, a), n in answers.items() if a == "no")
        assert yes + no >= 40 and 0.45 <= yes / (yes + no) <= 0.55, (start, yes, no)
        for template, _ in answers:  # template by template, within one
            assert abs(answers[(template, "yes")] - answers[(template, "no")]) <= 1, (start, template)


#: a small purple cylinder two-thirds behind a large yellow one (33 of its about 100 pixels
#: show at 160 x 120, over the 25-pixel floor), and a cyan cube in the clear
HIDING = Scene((Obj("cylinder", "yellow", "rubber", "large", 0.0, 0.0),
                Obj("cylinder", "purple", "metal", "small", -1.5, 2.3),
                Obj("cube", "cyan", "rubber", "large", 2.0, -2.5, 20.0)), width=160, height=120)


def test_an_object_the_question_reads_must_show_half_its_outline():
    from vicogym.checks.clevr import MIN_VISIBLE_SHARE, check, check_visible, visible_shares
    from vicogym.core import Render
    from vicogym.envs.clevr import ClevrArm, ClevrEnvConfig

    arm = ClevrArm(ClevrEnvConfig(**{k: v for k, v in FAST.items() if k != "k"}))
    facts = arm.renderer.visibility(HIDING)
    check_visible(HIDING, facts)  # every object shows the pixels CLEVR asks of it
    assert visible_shares(HIDING, facts)[1] < MIN_VISIBLE_SHARE <= min(visible_shares(HIDING, facts)[::2])
    small = [{"function": "scene", "inputs": [], "value_inputs": []},
             {"function": "filter_size", "inputs": [0], "value_inputs": ["small"]},
             {"function": "unique", "inputs": [1], "value_inputs": []},
             {"function": "query_material", "inputs": [2], "value_inputs": []}]
    with pytest.raises(InvalidEdit) as refused:
        check(HIDING, facts, clevr_programs.program_rule(small, "What material is the small thing?"))
    assert refused.value.code == "hidden" and "object 1" in str(refused.value) and "the question reads" in str(
        refused.value)
    # counting cylinders reads it too; asking about the cube does not
    cylinders = small[:1] + [{"function": "filter_shape", "inputs": [0], "value_inputs": ["cylinder"]},
                             {"function": "count", "inputs": [1], "value_inputs": []}]
    with pytest.raises(InvalidEdit, match="object 1"):
        check(HIDING, facts, clevr_programs.program_rule(cylinders, "How many cylinders are there?"))
    cube = small[:1] + [{"function": "filter_shape", "inputs": [0], "value_inputs": ["cube"]},
                        {"function": "unique", "inputs": [1], "value_inputs": []},
                        {"function": "query_color", "inputs": [2], "value_inputs": []}]
    check(HIDING, facts, clevr_programs.program_rule(cube, "What color is the cube?"))
    # what an edit and verify run: the rendered sample is refused the same way
    with pytest.raises(InvalidEdit, match="shows 3"):
        arm.validate(HIDING, Render(facts.image, facts), clevr_programs.program_rule(small, "What material is the "
                                                                                      "small thing?"))


def test_a_held_yes_no_answer_may_change_template_but_not_answer_when_scenes_keep_failing():
    from vicogym.programs.clevr import TEMPLATES, Target, widened

    wide = widened(Target(("comparison_color",), "yes"))
    assert wide.answer == "yes" and "comparison_color" in wide.templates
    assert set(wide.templates) == {t.id for t in TEMPLATES if t.answer == "bool"}
    assert widened(Target(("count",), None)) == Target(("count",), None)
