"""Fuzzed actions and rows: no step and no score raises, and every rejected action is a
typed error that changes nothing but the step count (recorded as a rejection).

For each rejection the *whole* environment state is compared before and after: every
attribute of the environment (deep copies: views, pixels, notes, history, the task, the
sample, the trace, caches, the random generators' states), the observation and the info,
less the step count and the one history record of the rejection. Actions are drawn from
what a model's output can hold once parsed or read as JSON: integers of more than 4300
digits (Python will not print them), ``inf``/``nan``/``1e999``, nesting 100,000 deep,
keys that are not strings, bytes, objects, NUL bytes, lone surrogates, very long strings,
and code fences around runs of white space (a cubic regex once read them)."""

from __future__ import annotations

import copy
import dataclasses
import json
import math
import time

import gymnasium as gym
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import vicogym  # noqa: F401  (registers the environments)
from vicogym.errors import EDIT_ERROR_CODES, VicogymError
from vicogym.verl_reward import RowError, compute_score

#: each example snapshots and compares the whole environment twice (a few tenths of a second), so the
#: stateful fuzzers draw 40 actions; the actions known to have broken a step are each played below
#: (the reported-action tests), and test_registry_suite.py fuzzes every edit environment's answers
#: to broken edits and garbage actions on 600 more examples
FUZZ = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                         HealthCheck.too_slow])
DIGITS = st.integers(4301, 6000)


# -- what a model's output can hold ------------------------------------------------------------
def _nested(depth: int, leaf, kind: str):
    value = leaf
    for _ in range(depth):
        value = [value] if kind == "list" else {"a": value}
    return value


class Unprintable:
    """An object whose repr and str raise (a value only Python code can send)."""

    def __repr__(self):
        raise ValueError("no repr")

    __str__ = __repr__


huge_ints = DIGITS.flatmap(lambda n: st.sampled_from([10 ** n - 1, -(10 ** n) + 1]))
special_floats = st.sampled_from([math.inf, -math.inf, math.nan, 1e308, -0.0, 5e-324])
odd_objects = st.one_of(st.sampled_from([b"\x00\xff", bytearray(b"zoom"), {1, 2}, 1 + 2j, np.int64(3),
                                        np.float32("nan"), np.zeros(3), frozenset(), range(3)]),
                        st.builds(Unprintable), st.builds(object))
odd_strings = st.one_of(
    st.text(st.characters(min_codepoint=0, max_codepoint=0x10FFFF, exclude_categories=()), max_size=40),  # NUL, Cs
    # (a fence around 5000 spaces took a cubic regex over a minute)
    st.sampled_from(["\x00", "\ud800", "a\udfffb", "\x00" * 50, "x" * 300_000, "```" + " " * 5000 + "x",
                     "```json" + " " * 5000 + "x```y", " " * 10_000]),
)
deep = st.tuples(st.sampled_from([64, 1000, 100_000]), st.sampled_from(["list", "dict"])).map(
    lambda t: _nested(t[0], 1, t[1]))
odd_keys = st.one_of(st.integers(), huge_ints, st.none(), st.tuples(huge_ints), st.floats(allow_nan=True),
                     st.booleans())
nasty = st.one_of(huge_ints, special_floats, odd_objects, odd_strings, deep,
                  st.dictionaries(odd_keys, st.integers(), min_size=1, max_size=2))
values = st.recursive(st.one_of(nasty, st.integers(-3, 30), st.floats(-2, 2), st.none(), st.booleans(),
                                st.text(max_size=8)),
                      lambda inner: st.one_of(st.lists(inner, max_size=4),
                                              st.dictionaries(st.one_of(st.text(max_size=6), odd_keys), inner,
                                                              max_size=3)),
                      max_leaves=6)
FIELDS = {"zoom": ("image", "regions", "note"), "note": ("notes",), "view": ("units",),
          "compose": ("units", "cols"), "answer": ("answer", "note")}
# JSON literals Python reads into trouble, or cannot read at all
JSON_LITERALS = st.one_of(
    DIGITS.map(lambda n: "9" * n), DIGITS.map(lambda n: "-" + "1" * n),
    st.sampled_from(["1e999", "-1e999", "NaN", "Infinity", "-Infinity", '"\\ud800"', '"\\u0000"', '"x\\udc00"',
                     '"' + "y" * 200_000 + '"', "[" * 100_000 + "]" * 100_000, '{"a":' * 5000 + "1" + "}" * 5000,
                     "[" * 100_000, "[[0, 0, 1e999, 1]]", '[{"x0": NaN, "y0": 0, "x1": 1, "y1": 1}]',
                     '[{"at": [Infinity, 0.5], "image": 0}]']),
)


@st.composite
def evidence_actions(draw):
    """An action as a dict (Python's values), as JSON text, or anything at all."""
    name = draw(st.one_of(st.sampled_from(sorted(FIELDS)), values))
    how = draw(st.sampled_from(["fields", "text", "raw", "fenced"]))
    if how == "raw":
        return draw(st.one_of(values, nasty))
    if how == "fields":
        fields = FIELDS.get(name, ("answer",)) if isinstance(name, str) else ("answer",)
        action = {"action": name}
        for field in draw(st.lists(st.sampled_from(fields), min_size=1, max_size=2, unique=True)):
            action[field] = draw(values)
        if draw(st.booleans()):
            action[draw(odd_keys)] = draw(values)
        return action
    field = draw(st.sampled_from(FIELDS[name] if isinstance(name, str) and name in FIELDS else ("answer",)))
    text = f'{{"action": "{name if isinstance(name, str) and name in FIELDS else "answer"}", "{field}": ' \
           f'{draw(JSON_LITERALS)}}}'
    return f"```json\n{text}\n```" if how == "fenced" else text


# -- the whole state of an environment ---------------------------------------------------------
def snapshot(env) -> dict:
    """Deep copies of every attribute of ``env`` (those that cannot be copied by identity)."""
    out = {}
    for key, value in vars(env).items():
        try:
            out[key] = copy.deepcopy(value)
        except Exception:
            out[key] = ("identity", id(value))
    return out


def differences(a, b, path="env", seen=None) -> list[str]:
    """Where ``a`` and ``b`` differ (arrays by value, generators by state, objects by
    their attributes, NaN equal to NaN)."""
    seen = set() if seen is None else seen
    if (id(a), id(b)) in seen:
        return []
    seen.add((id(a), id(b)))
    if type(a) is not type(b):
        return [f"{path}: {type(a).__name__} != {type(b).__name__}"]
    if isinstance(a, np.ndarray):
        return [] if a.shape == b.shape and a.dtype == b.dtype and np.array_equal(a, b, equal_nan=a.dtype.kind == "f") \
            else [path]
    if isinstance(a, np.random.Generator):
        return [] if a.bit_generator.state == b.bit_generator.state else [f"{path} (generator state)"]
    if isinstance(a, dict):
        if set(a) != set(b):
            return [f"{path}: keys {sorted(map(str, set(a) ^ set(b)))}"]
        return [d for k in a for d in differences(a[k], b[k], f"{path}[{k!r}]", seen)]
    if isinstance(a, (list, tuple)):
        if len(a) != len(b):
            return [f"{path}: length {len(a)} != {len(b)}"]
        return [d for i, (x, y) in enumerate(zip(a, b)) for d in differences(x, y, f"{path}[{i}]", seen)]
    if isinstance(a, float) and math.isnan(a):
        return [] if math.isnan(b) else [path]
    if isinstance(a, (str, bytes, int, float, bool, type(None))):
        return [] if a == b else [f"{path}: {a!r:.60} != {b!r:.60}"]
    if dataclasses.is_dataclass(a):
        return [d for f in dataclasses.fields(a) for d in differences(getattr(a, f.name), getattr(b, f.name),
                                                                       f"{path}.{f.name}", seen)]
    if hasattr(a, "__dict__") and not isinstance(a, type):
        return differences(vars(a), vars(b), path, seen)
    try:
        return [] if a == b else [path]
    except Exception:
        return [f"{path}: not comparable"]


def _assert_only_the_step_and_its_record_changed(before, after, obs_before, obs_after, extra_record: bool):
    """Everything as it was but the step count (+1) and, with ``extra_record``, one new
    history record of the rejection."""
    before, after = dict(before), dict(after)
    assert after.pop("steps") == before.pop("steps") + 1
    history_before, history_after = before.pop("history"), after.pop("history")
    assert history_after[:-1] == history_before and len(history_after) == len(history_before) + int(extra_record)
    assert differences(before, after) == []
    assert set(obs_before) == set(obs_after)
    for key in obs_before:
        if key == "budget":
            assert obs_after[key][0] == obs_before[key][0] - 1 and list(obs_after[key][1:]) == list(obs_before[key][1:])
        elif key != "history":
            assert differences(obs_before[key], obs_after[key], key) == []


# -- Evidence-v0 -------------------------------------------------------------------------------
@pytest.fixture
def evidence(tmp_path, monkeypatch):
    """An evidence environment on the toy family (see test_envs_evidence.py), two units,
    steps enough for a long fuzz."""
    import vicogym.sources.evidence as source

    monkeypatch.setitem(source.FAMILIES, "toy", "helpers.evidence_toy")
    env = gym.make("vicogym/Evidence-v0", tasks="toy", view_size=256, max_images=4, max_steps=256,
                   family_settings={"toy": {"folder": str(tmp_path), "units": 2}}).unwrapped
    env.reset(seed=0)
    yield env
    env.close()


def _evidence_step(env, action):
    if env._done:
        env.reset(seed=1)
    before, obs_before = snapshot(env), env._observation()
    t0 = time.perf_counter()
    obs, reward, terminated, truncated, info = env.step(action)  # never raises
    assert time.perf_counter() - t0 < 10, "one action took more than 10 s"
    json.dumps(env.history[-1], allow_nan=False).encode("utf-8")  # every record is strict JSON, UTF-8
    assert env.observation_space.contains(obs)
    if "error" in info:
        error = info["error"]
        assert error["code"] in EDIT_ERROR_CODES and error["code"] != "unhandled", error
        assert isinstance(error["message"], str) and len(error["message"]) < 1000
        assert reward == 0.0 and not terminated and not truncated
        assert env.history[-1] == {"step": before["steps"] + 1, "action": env.history[-1]["action"],
                                   "error": error["code"]}
        _assert_only_the_step_and_its_record_changed(before, snapshot(env), obs_before, obs, extra_record=True)
    else:
        assert env.steps == before["steps"] + 1 and len(env.history) == len(before["history"]) + 1
    return info


@FUZZ
@given(action=evidence_actions())
def test_evidence_any_action_is_taken_or_rejected_with_a_typed_error_that_changes_nothing_else(evidence, action):
    _evidence_step(evidence, action)


@pytest.mark.parametrize("action", [
    {"action": "zoom", "image": 10 ** 5000, "regions": [[0, 0, 1, 1]]},
    {"action": "answer", "answer": 10 ** 5000},
    {"action": 10 ** 5000},
    {"action": "view", "units": [10 ** 5000]},
    {"action": "view", "units": [0], (10 ** 5000,): 1},
    {"action": "view", "units": [0], 1: 2, "b": 3},
    {"action": "zoom", "image": 0, "regions": [[0, 0, 10 ** 5000, 1]]},
    {"action": "note", "notes": [{"image": 10 ** 5000, "at": [0.5, 0.5]}]},
    '{"action": "zoom", "image": ' + "9" * 5000 + ', "regions": [[0, 0, 1, 1]]}',
    '{"action": "answer", "answer": 1e999}',
    {"action": "answer", "answer": math.nan},
    {"action": "answer", "answer": "\ud800"},
    {"action": "answer", "answer": b"bytes"},
    {"action": "answer", "answer": Unprintable()},
    {"action": "view", "units": _nested(100_000, 0, "list")},
    {"action": "view", "units": _nested(100_000, 0, "dict")},
    _nested(100_000, {"action": "answer", "answer": "1"}, "list"),
    '{"action": "view", "units": ' + "[" * 100_000 + "]" * 100_000 + "}",
    "```" + " " * 5000 + "x",
    "x" * 2_000_000,
    Unprintable(),
    None,
])
def test_evidence_the_reported_actions_are_typed_errors(evidence, action):
    info = _evidence_step(evidence, action)
    assert "error" in info


def test_evidence_a_rejected_action_keeps_the_views_notes_and_budgets_mid_episode(evidence):
    env = evidence
    assert "error" not in env.step({"action": "zoom", "image": 0, "regions": [[0.1, 0.1, 0.6, 0.6]]})[4]
    assert "error" not in env.step({"action": "note", "notes": [{"image": 1, "at": [0.5, 0.5], "text": "here"}]})[4]
    for action in ({"action": "zoom", "image": 1, "regions": [[0.1, 0.1, 0.6, 0.6], [0, 0, 10 ** 5000, 1]]},
                   {"action": "note", "notes": [{"image": 1, "at": [0.2, 0.2]}, {"image": 1, "at": [math.inf, 0]}]},
                   {"action": "compose", "units": [0, 1], "cols": 10 ** 5000}):
        _evidence_step(env, action)


def test_evidence_acting_after_the_end_changes_nothing_at_all(evidence):
    env = evidence
    _, reward, terminated, truncated, info = env.step({"action": "answer", "answer": env.task.answer})
    assert terminated and reward == 1.0
    before, obs_before = snapshot(env), env._observation()
    for action in ({"action": "answer", "answer": env.task.answer}, 10 ** 5000, "not json"):
        obs, reward, terminated, truncated, info = env.step(action)
        assert info["error"]["code"] == "episode_over" and reward == 0.0 and terminated and not truncated
        assert "score" not in info and "outcome" not in info  # the episode's score is reported once
        assert differences(before, snapshot(env)) == []
        assert all(differences(obs_before[k], obs[k], k) == [] for k in obs)


def test_evidence_a_step_that_fails_inside_changes_nothing_and_is_reported(evidence, monkeypatch):
    """A bug below the protocol (a renderer that raises) rejects the action as
    ``unhandled``: the step count and its record move together, nothing else."""
    env = evidence

    def broken(view):
        raise RuntimeError("renderer crashed")

    monkeypatch.setattr(env, "_drawn", broken)
    before, obs_before = snapshot(env), env._observation()
    obs, reward, terminated, truncated, info = env.step({"action": "view", "units": [1]})
    assert info["error"]["code"] == "unhandled" and "renderer crashed" in info["error"]["message"]
    after = snapshot(env)
    assert env.history[-1]["error"] == "unhandled"
    _assert_only_the_step_and_its_record_changed(before, after, obs_before, obs, extra_record=True)


# -- the edit environments (Chart-v0 for the base class) -------------------------------------------
@pytest.fixture(scope="module")
def chart():
    env = gym.make("vicogym/Chart-v0", max_turns=10_000, k=2).unwrapped
    env.reset(seed=0)
    yield env
    env.close()


@st.composite
def edit_actions(draw):
    ops = ("set_cell", "rename_row", "set_style", "stop", "add_row", "delete_row")
    how = draw(st.sampled_from(["op", "ops", "text", "raw"]))
    if how == "raw":
        return draw(st.one_of(values, nasty))
    if how == "text":
        return f'{{"op": "set_cell", "row": "x", "series": "y", "value": {draw(JSON_LITERALS)}}}'
    op = {"op": draw(st.one_of(st.sampled_from(ops), values))}
    for _ in range(draw(st.integers(1, 3))):
        op[draw(st.one_of(st.sampled_from(["row", "series", "value", "to", "gridlines"]), odd_keys))] = draw(values)
    return op if how == "op" else {"ops": [op, draw(values)] if draw(st.booleans()) else [op]}


def _edit_step(env, action):
    if env._done:
        env.reset(seed=1)
    before, obs_before = snapshot(env), env._observation()
    result = env.step_result(action)  # never raises
    info = result.info
    if info["valid"]:
        return info
    assert info["error"]["code"] in EDIT_ERROR_CODES and info["error"]["code"] != "unhandled", info["error"]
    assert not result.terminated and not result.truncated
    before, after = dict(before), snapshot(env)
    assert after.pop("_turn") == before.pop("_turn") + 1
    assert differences(before, {k: v for k, v in after.items() if k != "_turn"}) == []
    assert all(differences(obs_before[k], result.observation[k], k) == [] for k in obs_before)
    return info


@FUZZ
@given(action=edit_actions())
def test_an_edit_environment_takes_or_rejects_any_edit_changing_nothing_but_the_turn(chart, action):
    _edit_step(chart, action)


@pytest.mark.parametrize("action", [
    {(10 ** 5000,): 1},
    {"ops": [{"op": "set_cell", "row": [10 ** 5000], "series": 0, "value": 1}]},
    {"op": "set_cell", "row": "x", "series": "y", "value": 10 ** 5000},
    '{"op": "set_cell", "row": "x", "series": "y", "value": ' + "9" * 5000 + "}",
    {"op": "set_cell", "row": "x", "series": "y", "value": math.nan},
    _nested(100_000, {"op": "stop"}, "list"),
    "[" * 100_000 + "]" * 100_000,
    Unprintable(),
    {"op": Unprintable()},
])
def test_an_edit_environment_answers_the_reported_edits_with_typed_errors(chart, action):
    assert not _edit_step(chart, action)["valid"]


def test_an_edit_environment_after_the_end_changes_nothing(chart):
    chart.reset(seed=2)
    assert chart.step_result({"op": "stop"}).info["stopped"]
    before = snapshot(chart)
    result = chart.step_result({"op": "stop"})
    assert result.info["error"]["code"] == "episode_over" and result.terminated
    assert differences(before, snapshot(chart)) == []


def test_an_edit_environment_whose_actor_fails_keeps_its_turn(chart, monkeypatch):
    """The actor (a model server) failing while probing an edit raises, as it is no fault
    of the edit; nothing changed, the turn included."""
    chart.reset(seed=3)
    edit = chart.sample_edit(rng=np.random.default_rng(0))
    before = snapshot(chart)

    def down(*args, **kwargs):
        raise ConnectionError("actor server down")

    monkeypatch.setattr(type(chart.actor), "answer", down)
    with pytest.raises(ConnectionError):
        chart.step_result(edit)
    monkeypatch.undo()
    assert differences(before, snapshot(chart)) == []


# -- compute_score -----------------------------------------------------------------------------
TRUTH_TEXTS = st.one_of(
    st.text(st.characters(min_codepoint=0, max_codepoint=0x10FFFF, exclude_categories=()), max_size=60),
    JSON_LITERALS,
    st.sampled_from(["", "null", "[]", "{}", '{"scorer": "anls"}', '{"scorer": "relaxed", "answer": 5}',
                     '{"scorer": "nope", "answer": "1"}', '{"scorer": "letter", "answer": "A", "options": 3}',
                     '{"scorer": "relaxed", "answer": "1", "golds": [1e999]}', '{"constraints": 5}',
                     '{"constraints": [null]}', '{"constraints": [{"id": 5}]}',
                     '{"constraints": [{"id": "word_count", "params": {"n": "x"}}]}',
                     '{"constraints": [{"id": "word_count", "params": []}]}',
                     '{"scorer": "relaxed", "answer": "1", "golds": [' + "9" * 5000 + "]}"]),
)
SOURCES = ("vicogym/Chart-v0", "vicogym/CLEVR-v0", "vicogym/Evidence-v0", "vicogym/Instruct-v0")


@settings(max_examples=300, deadline=None)
@given(source=st.sampled_from(SOURCES), truth=st.one_of(TRUTH_TEXTS, values), solution=st.one_of(odd_strings, values))
def test_compute_score_gives_a_score_or_names_the_rows_problem(source, truth, solution):
    try:
        score = compute_score(source, solution, truth, None)
    except RowError as exc:  # a corrupt row: a typed error naming its data source, never json's traceback
        assert source in str(exc) and len(str(exc)) < 1000
        assert source not in ("vicogym/Chart-v0", "vicogym/CLEVR-v0") or not isinstance(truth, str)
        return
    except VicogymError as exc:  # UnknownConstraintType: a row naming types that were not loaded
        assert source == "vicogym/Instruct-v0", exc
        return
    assert isinstance(score, float) and 0.0 <= score <= 1.0


@settings(max_examples=200, deadline=None)
@given(solution=st.one_of(odd_strings, values, st.text(max_size=200).map(lambda t: f"Answer: {t}")),
       extra=st.one_of(st.none(), st.just({}), st.dictionaries(st.text(max_size=5), values, max_size=2)))
def test_compute_score_scores_any_solution_of_a_good_row(solution, extra):
    evidence = json.dumps({"answer": "42", "golds": ["forty-two"], "scorer": "anls", "options": []})
    for source, truth in (("vicogym/Chart-v0", "42"), ("vicogym/CLEVR-v0", "yes"), ("vicogym/Evidence-v0", evidence)):
        score = compute_score(source, solution, truth, extra)
        assert 0.0 <= score <= 1.0


def test_compute_score_is_quick_on_long_replies():
    truth = json.dumps({"answer": "Acme Corp", "golds": [], "scorer": "anls", "options": []})
    t0 = time.perf_counter()
    assert compute_score("vicogym/Evidence-v0", "x" * 1_000_000, truth) == 0.0
    assert compute_score("vicogym/Chart-v0", "Answer: " + "7" * 100_000, "7") == 0.0
    assert time.perf_counter() - t0 < 5


@pytest.mark.parametrize("truth, problem", [
    ("not json", "not JSON"),
    ("[" * 100_000 + "]" * 100_000, "nested too deeply"),
    ('{"answer": ' + "9" * 5000 + "}", "integer too long"),
    ("[]", "JSON array"),
    ('{"scorer": "relaxed", "answer": "1", "golds": 5}', "golds"),
])
def test_compute_score_names_a_corrupt_ground_truth(truth, problem):
    for source in ("vicogym/Evidence-v0", "vicogym/Instruct-v0"):
        with pytest.raises(RowError, match=source) as caught:
            compute_score(source, "Answer: 1", truth)
        assert isinstance(caught.value, ValueError)
        if source == "vicogym/Evidence-v0" or problem != "golds":
            assert problem in str(caught.value)
    with pytest.raises(RowError, match="evidence_score"):
        compute_score("vicogym/Evidence-v0", "x", '{"scorer": "exact", "answer": "1"}', {"evidence_score": "high"})


# -- Instruct-v0 (one response per episode) ----------------------------------------------------
@pytest.fixture(scope="module")
def instruct():
    from vicogym.registry import env_class

    env = gym.make("vicogym/Instruct-v0", **env_class("vicogym/Instruct-v0").smoke_settings).unwrapped
    env.reset(seed=0)
    yield env
    env.close()


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(response=st.one_of(odd_strings, values, st.text(max_size=300)))
def test_instruct_any_response_is_scored_or_a_typed_error_and_the_episode_then_over(instruct, response):
    env = instruct
    env.reset(seed=5)
    _, reward, terminated, truncated, info = env.step(response)  # never raises
    assert terminated and not truncated and 0.0 <= reward <= 1.0
    if "error" in info:
        assert info["error"]["code"] in EDIT_ERROR_CODES and reward == 0.0
    before = snapshot(env)
    _, reward, terminated, _, info = env.step(response)
    assert info["error"]["code"] == "episode_over" and reward == 0.0 and terminated
    assert differences(before, snapshot(env)) == []


@pytest.mark.parametrize("settings", ["[" * 100_000, '{"k": ' + "7" * 5000 + "}", "not json", "[1, 2]"])
def test_a_rows_settings_text_is_a_value_error_naming_the_field_whatever_it_holds(settings):
    from vicogym.trainers.common import settings_from

    with pytest.raises(ValueError, match="^extra_info.settings: expected the environment settings as a JSON object"):
        settings_from(settings, "extra_info.settings")


# -- the table of actions: a new entry reaches every consumer -------------------------------------
def _mark_action():
    """An action the protocol does not have: ``mark`` an image with a label."""
    from vicogym.evidence.protocol import Action

    return Action("mark", "Mark a sent image with a label.",
                  {"image": {"type": "integer", "description": "the number of a sent image"},
                   "label": {"type": "string", "description": "the label"}}, ("image",),
                  lambda obj, max_regions: {"image": int(obj["image"]), "label": str(obj.get("label") or "")},
                  '{"action": "mark", "image": N, "label": ".."}', "label image N (at most {max_regions} a time)",
                  "label an image")


def test_every_action_of_the_table_has_its_plan_in_the_environment():
    from vicogym.envs.evidence import EvidenceEnv
    from vicogym.evidence.protocol import ACTION_TABLE, ACTIONS

    assert ACTIONS == tuple(ACTION_TABLE) == ("zoom", "note", "view", "compose", "answer")
    planned = {name for name in ACTION_TABLE if callable(getattr(EvidenceEnv, f"_plan_{name}", None))}
    assert planned | {"answer"} == set(ACTION_TABLE) and "answer" not in planned  # the answer ends the episode


def test_a_new_action_in_the_table_is_parsed_contracted_and_played(monkeypatch):
    """One entry in the table and its ``_plan_<name>`` in the environment make an action:
    the parser, both contracts, the rows' tools_kwargs and the environment's step see it."""
    from vicogym.envs.evidence import EvidenceEnv
    from vicogym.evidence import protocol
    from vicogym.evidence.protocol import ACTION_TABLE, contract_text, episode_tools_kwargs, parse_action

    env = gym.make("vicogym/Evidence-v0", view_size=256).unwrapped
    env.reset(seed=2)
    with pytest.raises(VicogymError, match="unknown action 'mark'"):
        parse_action({"action": "mark", "image": 0})
    monkeypatch.setitem(ACTION_TABLE, "mark", _mark_action())
    assert parse_action({"action": "mark", "image": 0, "label": "x"}) == {"action": "mark", "image": 0, "label": "x"}
    with pytest.raises(VicogymError, match="mark has no field 'colour'"):
        parse_action({"action": "mark", "image": 0, "colour": "red"})
    assert contract_text(3).endswith('- {"action": "mark", "image": N, "label": ".."} (label image N (at most 3 a '
                                     'time))')
    assert "answer (ends the task) and mark (label an image)" in protocol.tool_contract_text(2)
    assert list(episode_tools_kwargs(1, {}, "t")) == ["zoom", "note", "view", "compose", "answer", "mark"]
    assert protocol.tool_schema_of("mark")["function"]["parameters"]["required"] == ["image"]

    seen = []

    def plan_mark(self, parsed, next_id, made):
        seen.append((parsed, next_id, made))
        return [], []

    _, _, _, _, info = env.step({"action": "mark", "image": 0})
    assert info["error"]["code"] == "unhandled" and not seen  # in the table, but the environment cannot play it
    monkeypatch.setattr(EvidenceEnv, "_plan_mark", plan_mark, raising=False)
    _, reward, terminated, _, info = env.step({"action": "mark", "image": 0, "label": "x"})
    assert "error" not in info and reward == 0.0 and not terminated
    assert seen == [({"action": "mark", "image": 0, "label": "x"}, len(env.views), {"step": 2, "action": "mark"})]
    assert env.history[-1] == {"step": 2, "action": {"action": "mark", "image": 0, "label": "x"}, "views": []}
