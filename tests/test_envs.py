"""The suite every registered environment gets, plus chart-specific behaviour."""

import copy
import json

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import vicogym
from vicogym.errors import UnknownEnvironment
from vicogym.programs.scoring import get_scorer

ENV_IDS = [env_id for env_id, _ in vicogym.list_environments()]
FAST = {"k": 4, "max_turns": 3}


def _strip(info):
    return {k: v for k, v in info.items() if k != "timings"}


def _episode(env, seed, n_steps=3):
    obs, info = env.reset(seed=seed)
    rng = np.random.default_rng(seed)
    frames = [(obs, _strip(info), None)]
    for _ in range(n_steps):
        edit = env.unwrapped.sample_edit(obs, rng)
        obs, reward, terminated, truncated, info = env.step(edit)
        frames.append((obs, _strip(info), reward))
        if terminated or truncated:
            break
    return frames


def _same(a, b):
    for (oa, ia, ra), (ob, ib, rb) in zip(a, b, strict=True):
        if not (np.array_equal(oa["image"], ob["image"]) and oa["question"] == ob["question"]
                and oa["structure"] == ob["structure"] and ia == ib and ra == rb):
            return False
    return True


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_check_env(env_id):
    env = gym.make(env_id, **FAST)
    check_env(env.unwrapped, skip_render_check=False)
    env.close()


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_same_seed_same_episode_different_seed_differs(env_id):
    a = _episode(gym.make(env_id, **FAST), seed=3)
    b = _episode(gym.make(env_id, **FAST), seed=3)
    assert _same(a, b)
    c = _episode(gym.make(env_id, **FAST), seed=4)
    assert not np.array_equal(a[0][0]["image"], c[0][0]["image"]) or a[0][0]["question"] != c[0][0]["question"]


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_oracle_answer_scores_one(env_id):
    env = gym.make(env_id, **FAST).unwrapped
    scorer = get_scorer(env.config.scorer)
    for seed in range(10):
        _, info = env.reset(seed=seed)
        assert scorer(info["answer"], env.sample.answer) == 1.0


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_invalid_edits_leave_state_unchanged(env_id):
    env = gym.make(env_id, **FAST).unwrapped
    env.reset(seed=0)
    before = (copy.deepcopy(env.sample.structure), env.sample.answer, env.sample.image.copy(), env.pass_rate, list(env.trace))
    rng_state = copy.deepcopy(env.np_random.bit_generator.state)
    for bad in ["{", {"ops": [{"op": "nope"}]}, {"ops": [{"op": "remove_row", "row": "missing"}]}]:
        obs, reward, terminated, truncated, info = env.step(bad)
        assert reward == env.config.invalid_penalty == -1.0
        assert info["valid"] is False and info["error"]["code"] in ("malformed", "unknown_op", "not_found")
        assert env.sample.structure == before[0] and env.sample.answer == before[1]
        assert np.array_equal(env.sample.image, before[2]) and env.pass_rate == before[3] and env.trace == before[4]
        if truncated:
            break
    assert env.np_random.bit_generator.state == rng_state


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_spec_and_config_round_trip_through_json(env_id):
    env = gym.make(env_id, **FAST)
    spec = gym.spec(env_id)
    assert gym.envs.registration.EnvSpec.from_json(spec.to_json()) == spec
    assert gym.envs.registration.EnvSpec.from_json(env.spec.to_json()).kwargs == env.spec.kwargs == FAST
    remade = gym.make(env.spec)
    assert remade.unwrapped.config == env.unwrapped.config
    config = env.unwrapped.config.to_dict()
    again = type(env.unwrapped.config)(**json.loads(json.dumps(config)))
    assert again == env.unwrapped.config


def test_unknown_id_suggests_the_closest():
    with pytest.raises(UnknownEnvironment) as info:
        vicogym.make("vicogym/Chrat-v0")
    assert str(info.value) == "no vicogym environment 'vicogym/Chrat-v0'; did you mean 'vicogym/Chart-v0'? Known: ['vicogym/Chart-v0']"


def test_chart_step_info_and_episode_end():
    env = gym.make("vicogym/Chart-v0", k=8, max_turns=2, render_mode="rgb_array")
    obs, info = env.reset(seed=1)
    assert set(info) >= {"valid", "error", "answer", "label_rule", "pass_rate", "pass_rate_before", "timings"}
    structure = json.loads(obs["structure"])
    row, series = structure["table"]["rows"][0], structure["table"]["series"][0]
    edit = json.dumps({"ops": [{"op": "set_style", "data_labels": True}]})
    obs, reward, terminated, truncated, info = env.step(edit)
    assert info["valid"] and info["error"] is None and reward in (0.0, 1.0)
    assert set(info["timings"]) >= {"edit", "relabel", "render", "actor", "total"}
    assert 0.0 <= info["pass_rate"] <= 1.0 and len(info["actor_answers"]) == 8
    assert env.render().shape == env.unwrapped.sample.image.shape
    obs, reward, terminated, truncated, info = env.step({"op": "set_cell", "row": row, "series": series, "value": 1e30})
    assert truncated and not terminated and info["error"]["code"] == "bad_value"
    _, _, terminated, _, info = env.step({"op": "stop"})
    assert terminated and info["error"]["code"] == "episode_over"


def test_stop_terminates_with_zero_reward():
    env = gym.make("vicogym/Chart-v0", **FAST)
    env.reset(seed=2)
    _, reward, terminated, truncated, info = env.step({"op": "stop"})
    assert (reward, terminated, truncated, info["stopped"], info["valid"]) == (0.0, True, False, True, True)


def test_tier1_chartqa_answer_follows_the_cell(chartqa):
    env = gym.make("vicogym/Chart-v0", source=str(chartqa), **FAST).unwrapped
    for index in range(len(env.source.records)):
        _, info = env.reset(seed=0, options={"index": index})
        if info["label_rule"] == "cell":
            break
    rule = env.sample.label_rule
    _, _, _, _, info = env.step({"op": "set_cell", "row": rule["row"], "series": rule["series"], "value": 123.4})
    assert info["valid"] and info["answer"] == "123.4"


def test_config_errors_say_what_to_change():
    with pytest.raises(ValueError, match="expected k to be a positive integer, got 0"):
        gym.make("vicogym/Chart-v0", k=0)
    with pytest.raises(ValueError, match="expected source 'procedural' or a ChartQA folder"):
        gym.make("vicogym/Chart-v0", source="/no/such/folder")
    with pytest.raises(ValueError, match="expected actor name in \\['simulated'\\], got 'gpt'"):
        gym.make("vicogym/Chart-v0", actor="gpt")


def test_a_custom_actor_object_plugs_in():
    class Oracle:
        def answer(self, image, question, k, *, rng, context):
            assert image.ndim == 3 and isinstance(question, str)
            return [context["answer"]] * k

    env = gym.make("vicogym/Chart-v0", actor=Oracle(), k=3)
    _, info = env.reset(seed=0)
    assert info["pass_rate"] == 1.0


def test_an_edit_whose_legend_hides_marks_is_rejected():
    from dataclasses import replace

    from vicogym.envs.chart import occluded_marks
    from vicogym.programs.chart import program_rule
    from vicogym.structures import ChartSpec, ChartStructure, Table

    table = Table("Year", ("2019", "2020", "2021"), ("North", "South"), ((10.0, 12.0), (20.0, 22.0), (45.0, 46.0)))
    env = gym.make("vicogym/Chart-v0", **FAST).unwrapped
    env.reset(seed=0)
    structure = ChartStructure(table, ChartSpec(chart_type="grouped_bar"))
    image, facts = env._render(structure)
    assert occluded_marks(facts, "grouped_bar") == []
    env.sample = replace(env.sample, structure=structure, label_rule=program_rule({"op": "count_rows"}), answer="3", image=image)
    _, reward, _, _, info = env.step({"op": "set_style", "legend": "upper left"})
    assert info["valid"]
    _, reward, _, _, info = env.step({"op": "set_style", "legend": "upper right"})
    assert reward == -1.0 and info["error"]["code"] == "occluded" and info["error"]["field"] == "legend"
    assert info["error"]["message"].startswith("the legend covers the mark of '2021' in ")
    assert env.sample.structure.spec.legend == "upper left"
