"""The typed records (``TypedDict``) against real values: step infos of real episodes, the
label rules of generated samples of every arm, the instruction env's verdicts, a generation
run's manifest and shard entries. A producer that adds, drops or renames a key, or writes a
kind its ``Literal`` does not list, fails here."""

import json
import types
import typing
from collections.abc import Mapping

import gymnasium as gym
import numpy as np
import pytest

import vicogym
from vicogym.core import ErrorRecord, ProvenanceDict, Sample, StepInfo, TraceEntry
from vicogym.errors import GenerationError
from vicogym.registry import env_class, env_kind
from vicogym.rewards import RewardConfig, RewardConfigDict
from vicogym.structures.chart import ChartRule
from vicogym.structures.clevr import ClevrRule
from vicogym.structures.geometry import GeometryRule
from vicogym.structures.natural import ANSWER_TYPES, ProtectedRule


# -- the checker ----------------------------------------------------------------------------
def mismatch(value, hint, where="value", complete=False):
    """Why ``value`` does not fit the type ``hint``, or ``None``. A ``TypedDict`` must hold
    every required key and no key it does not declare (with ``complete``, every optional
    key too); a union fits when one member does (a union of rules is chosen by ``kind``);
    ``Literal`` values, lists, dicts and plain classes are checked; ``Any`` takes anything."""
    if hint is typing.Any:
        return None
    if typing.is_typeddict(hint):
        return _typeddict_mismatch(value, hint, where, complete)
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        problems = [mismatch(value, arm, where, complete) for arm in args]
        return None if None in problems else _best(problems, value)
    if origin is typing.Literal:
        return None if value in args else f"{where}: {value!r} is not one of {args}"
    if origin is list:
        if not isinstance(value, list):
            return f"{where}: expected a list, got {type(value).__name__}"
        return next((p for i, item in enumerate(value) if (p := mismatch(item, args[0], f"{where}[{i}]"))), None)
    if origin in (dict, Mapping):
        if not isinstance(value, Mapping):
            return f"{where}: expected a dict, got {type(value).__name__}"
        problems = (mismatch(k, args[0], f"{where} key") or mismatch(item, args[1], f"{where}[{k!r}]")
                    for k, item in value.items())
        return next((p for p in problems if p), None)
    if hint is type(None):
        return None if value is None else f"{where}: expected None, got {value!r}"
    if hint is float:
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
    elif hint is int:
        ok = isinstance(value, int) and not isinstance(value, bool)
    else:
        ok = isinstance(value, hint)
    return None if ok else f"{where}: expected {hint.__name__}, got {type(value).__name__} {value!r}"


def _best(problems, value):
    """Of a union's failures, the one of the member whose ``kind`` the value names, if any."""
    kind = value.get("kind") if isinstance(value, Mapping) else None
    named = [p for p in problems if p and f"kind: {kind!r} is not" not in p]
    return (named or problems)[0]


def _typeddict_mismatch(value, td, where, complete):
    if not isinstance(value, Mapping):
        return f"{where}: expected a {td.__name__} object, got {type(value).__name__}"
    keys = set(value)
    missing = td.__required_keys__ - keys
    if complete:
        missing |= td.__optional_keys__ - keys
    unknown = keys - td.__required_keys__ - td.__optional_keys__
    if missing or unknown:
        return f"{where}: a {td.__name__} lacks {sorted(missing)} and has undeclared {sorted(unknown)}"
    hints = typing.get_type_hints(td)
    for key in sorted(keys):
        problem = mismatch(value[key], hints[key], f"{where}.{key}" if where != "value" else key)
        if problem:
            return problem
    return None


def fits(value, hint, complete=False):
    problem = mismatch(value, hint, complete=complete)
    assert problem is None, problem


def test_the_checker_sees_an_added_a_dropped_and_a_misspelt_key():
    error = {"code": "bad_value", "message": "m", "op": None, "field": None}
    fits(error, ErrorRecord)
    assert "undeclared ['hint']" in mismatch({**error, "hint": "x"}, ErrorRecord)
    assert "lacks ['field']" in mismatch({k: v for k, v in error.items() if k != "field"}, ErrorRecord)
    assert "not one of" in mismatch({"kind": "protected", "answer_type": "colour"}, ProtectedRule)
    assert "lacks ['template']" in mismatch({"kind": "program", "program": [], "question": "q", "family": "f"},
                                            ClevrRule, complete=True)
    cell = {"kind": "cell", "row": "2010", "series": "Sales", "series_named": True}
    fits(cell, ChartRule)
    assert "undeclared ['colour']" in mismatch({**cell, "colour": "red"}, ChartRule)


def test_literals_list_what_the_arms_define():
    assert typing.get_args(typing.get_type_hints(ProtectedRule)["answer_type"]) == ANSWER_TYPES


# -- step infos of the edit environments --------------------------------------------------------
EDIT_ENVS = [env_id for env_id, _ in vicogym.list_environments() if env_kind(env_id) == "edit"]
#: each arm's label rule type (the test-only toy arm has none)
RULES = {"chart": ChartRule, "clevr": ClevrRule, "natural": ProtectedRule, "geometry": GeometryRule}


def _make(env_id, **kwargs):
    return gym.make(env_id, **{**dict(getattr(env_class(env_id), "smoke_settings", {})), "k": 2, **kwargs})


def _episode_infos(env, seed):
    """The infos of one episode: its reset, an accepted edit, a rejected one, ``stop``, and a
    step after the end."""
    _, info = env.reset(seed=seed)
    infos = [("reset", info)]
    try:
        edit = env.unwrapped.sample_edit(rng=np.random.default_rng(seed))
    except GenerationError:
        edit = None
    if edit is not None:  # accepted, or rejected by a check sample_edit does not run
        infos.append(("edit", env.step(edit)[4]))
    infos.append(("rejected", env.step({"op": "no_such_op"})[4]))
    infos.append(("stop", env.step({"op": "stop"})[4]))
    infos.append(("over", env.step({"op": "stop"})[4]))
    return infos


@pytest.mark.parametrize("env_id", EDIT_ENVS)
def test_step_infos_and_label_rules_fit_their_types(env_id):
    env = _make(env_id, max_turns=5)
    rule_type = RULES.get(env.unwrapped.arm.name)
    kinds, accepted = set(), 0
    for seed in range(4):
        for what, info in _episode_infos(env, seed):
            fits(info, StepInfo, complete=what == "reset")  # a reset's info holds seed_rejections too
            if what != "edit":
                assert (info["error"] is None) == (what in ("reset", "stop")), (what, info["error"])
            assert (info["error"] is None) == info["valid"]
            sample = info["sample"]
            assert isinstance(sample, Sample)
            fits(sample.provenance.to_dict(), ProvenanceDict)
            if rule_type is not None:
                fits(info["label"], rule_type)
                fits(dict(sample.label_rule), rule_type)
                kinds.add(info["label"]["kind"])
            if what == "edit" and info["valid"]:
                accepted += 1
                assert info["edit_trace"]
                for entry in info["edit_trace"]:
                    fits(entry, TraceEntry)
    env.close()
    assert accepted
    if rule_type is not None:
        assert kinds


def test_chart_rules_of_chartqa_samples_fit(chartqa):
    """ChartQA's questions give cell and invariant rules (procedural charts give programs)."""
    env = gym.make("vicogym/Chart-v0", source=str(chartqa), k=2).unwrapped
    kinds = {}
    for index in range(min(40, len(env.arm.source.usable))):
        try:
            _, info = env.reset(seed=index, options={"index": index})
        except GenerationError:
            continue
        fits(info["label"], ChartRule)
        kinds[info["label"]["kind"]] = kinds.get(info["label"]["kind"], 0) + 1
    assert len(kinds) >= 2, kinds
    env.close()


def test_clevr_rules_read_from_files_fit():
    from vicogym.programs.clevr import program_rule

    rule = program_rule([{"type": "scene", "inputs": [], "side_inputs": []},
                         {"type": "count", "inputs": [0], "side_inputs": []}], "How many things are there?")
    fits(rule, ClevrRule)
    assert "template" not in rule


def test_clevr_difficulty_features_fit():
    pytest.importorskip("bpy")
    from vicogym.checks.clevr import DifficultyFeatures, difficulty_features

    env = _make("vicogym/CLEVR-v0").unwrapped
    env.reset(seed=0)
    fits(difficulty_features(env.sample.structure, env._render_out.facts, env.sample.label_rule), DifficultyFeatures,
         complete=True)
    env.close()


def test_reward_config_dict_fits():
    fits(RewardConfig().to_dict(), RewardConfigDict, complete=True)


# -- the instruction environment -----------------------------------------------------------------
def test_instruct_infos_and_verdicts_fit():
    from vicogym.envs.instruct import InstructResetInfo, InstructStepInfo

    env = gym.make("vicogym/Instruct-v0", **env_class("vicogym/Instruct-v0").smoke_settings)
    for seed in range(2):
        _, info = env.reset(seed=seed)
        fits(info, InstructResetInfo)
        _, _, _, _, info = env.step("A short answer. Is it red?")
        fits(info, InstructStepInfo)
        assert set(info) == {"verdicts", "pass_rate", "constraints"}
        _, _, _, _, info = env.step("again")
        fits(info, InstructStepInfo)
        assert set(info) == {"error", "constraints"}
    env.reset(seed=3)
    _, _, _, _, info = env.step(5)
    fits(info, InstructStepInfo, complete=True)
    env.close()


# -- a generation run ---------------------------------------------------------------------------------
def test_generation_manifest_and_shard_entries_fit(tmp_path):
    from vicogym.runs.generate import GenerateConfig, RunManifest, ShardEntry, generate

    out = tmp_path / "run"
    manifest = generate(GenerateConfig(n=3, out=str(out), seed=1, episodes_per_shard=2,
                                       env_kwargs={"k": 2, "max_turns": 2}), progress=False)
    fits(manifest, RunManifest, complete=True)
    fits(json.loads((out / "manifest.json").read_text()), RunManifest, complete=True)
    entries = sorted((out / manifest["entries"]).glob("*.json"))
    assert entries
    for path in entries:
        fits(json.loads(path.read_text()), ShardEntry, complete=True)
