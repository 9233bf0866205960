"""Every evidence task family through the environment: Gymnasium's checker, determinism,
vector envs, the generic answerability checks, Direct against the oracle, and a
generated run that verifies. Each family's own labels are tested in its own file."""

from __future__ import annotations

import importlib
import importlib.util
import json

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import vicogym  # noqa: F401
from vicogym.checks.evidence import check_task
from vicogym.evidence import runs
from vicogym.evidence.episodes import play, trace_line
from vicogym.evidence.executors import make_executor
from vicogym.sources.evidence import FAMILIES

NEEDS_BPY = pytest.mark.skipif(importlib.util.find_spec("bpy") is None,
                               reason="the CLEVR families need bpy: pip install -e '.[clevr]'")
#: small, fast settings per family (the defaults are production-sized)
FAST = {"clevr_detail": {"width": 960, "height": 720}, "clevr_sequence": {"width": 320, "height": 240}}
FAMILY_PARAMS = [pytest.param(f, marks=[NEEDS_BPY, pytest.mark.slow] if f.startswith("clevr") else [])
                 for f in FAMILIES]


def make(family, **kwargs):
    settings = {family: FAST[family]} if family in FAST else {}
    kwargs.setdefault("view_size", 256 if family.startswith("clevr") else 768)
    return gym.make("vicogym/Evidence-v0", tasks=family, family_settings=settings, **kwargs)


@pytest.mark.parametrize("family", [*FAMILIES, "funsd"])
def test_each_family_finds_its_check_file_by_its_name_or_the_shared_file_named_for_it(family):
    from vicogym.checks.evidence import SHARED_CHECKS

    module = importlib.import_module(f"vicogym.checks.evidence.{SHARED_CHECKS.get(family, family)}")
    assert callable(module.check)
    assert (family in SHARED_CHECKS) == (module.__name__.rsplit(".", 1)[-1] != family)
    assert importlib.util.find_spec(f"vicogym.checks.evidence.{family}") is None or family not in SHARED_CHECKS


@pytest.mark.parametrize("family", FAMILY_PARAMS)
def test_check_env_determinism_and_the_generic_checks(family):
    env = make(family, max_images=2)
    check_env(env.unwrapped, skip_render_check=True)
    a, info_a = env.reset(seed=11)
    task_a = env.unwrapped.task.to_dict()
    assert check_task(env.unwrapped.task) is None
    b, info_b = make(family, max_images=2).reset(seed=11)
    assert json.dumps(task_a, sort_keys=True) == json.dumps(env.unwrapped.task.to_dict(), sort_keys=True)
    if not family.startswith("clevr"):  # drawn units: same bytes; rasters are compared within tolerance elsewhere
        assert np.array_equal(a["images"], b["images"])
    assert info_a["support"] == info_b["support"]
    other = make(family, max_images=2)
    other.reset(seed=12)
    assert other.unwrapped.task.to_dict() != task_a


@pytest.mark.parametrize("family", FAMILY_PARAMS)
def test_vector_envs_return_what_single_envs_return(family):
    settings = {family: FAST[family]} if family in FAST else {}
    vec = gym.make_vec("vicogym/Evidence-v0", num_envs=2, vectorization_mode="sync", tasks=family,
                       family_settings=settings, view_size=256, max_images=2)
    obs, _ = vec.reset(seed=[3, 4])
    single, _ = make(family, view_size=256, max_images=2).reset(seed=3)
    assert np.array_equal(obs["images"][0], single["images"]) and obs["question"][0] == single["question"]
    vec.close()


@pytest.mark.parametrize("family", FAMILY_PARAMS)
def test_the_oracle_reads_what_direct_cannot_and_a_run_verifies(family, tmp_path):
    n = 2 if family.startswith("clevr") else 5
    scores = {}
    for spec in ("direct", "simulated:oracle"):
        env = make(family, executor=spec, max_steps=16)
        traces = [play(env, make_executor(spec), seed=s) for s in range(n)]
        scores[spec] = (np.mean([t["score"] for t in traces]), np.mean([t["support"]["share"] for t in traces]))
    assert scores["simulated:oracle"][1] == 1.0  # the oracle's zooms make every piece of evidence legible
    if family in ("forms", "clevr_detail"):  # fine detail: the whole input at once is not enough
        assert scores["simulated:oracle"][0] > scores["direct"][0] + 0.3
        assert scores["direct"][1] < 0.5
    settings = {family: FAST[family]} if family in FAST else {}
    out = tmp_path / "run"
    runs.run_traces(family, "simulated:oracle", out, n=2, seed=0, episodes_per_shard=2,
                    env_kwargs={"family_settings": settings, "view_size": 256})
    rows, problems, _ = runs.verify_run(out)
    assert rows == 2 and problems == []


def test_the_same_seed_gives_the_same_trace_on_forms():
    env = make("forms", executor="simulated")
    a = trace_line(play(env, make_executor("simulated"), seed=5))
    assert a == trace_line(play(make("forms", executor="simulated"), make_executor("simulated"), seed=5))
