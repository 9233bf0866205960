"""Probe policies: fixed K (the paper's) and sequential (batches until the Beta posterior
decides whether the pass rate is in the sweet zone)."""

import json

import gymnasium as gym
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import vicogym
from vicogym.rewards import PROBE_PRIOR, probe_decided, sequential_draws, zone_belief
from vicogym.runs.generate import GenerateConfig, generate
from vicogym.runs.verify import verify

ZONE = (0.35, 0.65)


def _belief_by_integration(successes, draws, zone, steps=200_000):
    """P(low <= p <= high) under Beta(prior + s, prior + n - s), by the midpoint rule."""
    a, b = PROBE_PRIOR + successes, PROBE_PRIOR + draws - successes
    grid = (np.arange(steps) + 0.5) / steps
    density = np.exp((a - 1) * np.log(grid) + (b - 1) * np.log1p(-grid))
    inside = (grid >= zone[0]) & (grid <= zone[1])
    return float(density[inside].sum() / density.sum())


@pytest.mark.parametrize("successes, draws", [(0, 3), (3, 3), (2, 3), (5, 6), (4, 8), (8, 8), (0, 0)])
def test_the_zone_belief_is_the_beta_posterior_mass_in_the_zone(successes, draws):
    belief = zone_belief([1.0] * successes + [0.0] * (draws - successes), ZONE)
    assert belief == pytest.approx(_belief_by_integration(successes, draws, ZONE), abs=2e-3)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from([0.0, 1.0]), max_size=24), st.integers(1, 24), st.integers(1, 8),
       st.floats(0.55, 0.99))
def test_sequential_draws_stop_at_the_first_decided_batch(scores, k, batch, confidence):
    drawn = sequential_draws(scores, k, batch, ZONE, confidence)
    assert 1 <= drawn <= k
    boundaries = [min(b, k) for b in range(batch, k + batch, batch)]
    assert drawn in boundaries
    for boundary in boundaries:  # no earlier boundary was decided
        if boundary >= drawn:
            break
        assert boundary > len(scores) or not probe_decided(scores[:boundary], ZONE, confidence)
    if drawn < k and drawn <= len(scores):
        assert probe_decided(scores[:drawn], ZONE, confidence)


class _Recording:
    def __init__(self, actor):
        self.actor, self.calls = actor, []

    def answer(self, image, question, k, *, rng, context):
        self.calls.append(k)
        return self.actor.answer(image, question, k, rng=rng, context=context)


def test_a_sequential_probe_draws_in_batches_and_scores_what_it_drew():
    env = gym.make("vicogym/Chart-v0", probe="sequential", k=8, probe_batch=3).unwrapped
    env.actor = recording = _Recording(env.actor)
    drawn = []
    for seed in range(12):
        _, info = env.reset(seed=seed)
        answers = info["actor_answers"]
        scores = [env.arm.score(a, info["sample"].answer) for a in answers]
        assert len(answers) == sequential_draws(scores, 8, 3, ZONE, 0.8)
        assert info["pass_rate"] == float(np.mean(scores))
        drawn.append(len(answers))
    assert set(recording.calls) <= {3, 2} and sum(recording.calls) == sum(drawn)
    assert min(drawn) == 3 and np.mean(drawn) < 8  # unanimous batches stop early


def test_fixed_probes_are_unchanged_and_sequential_ones_repeat():
    def episode(**settings):
        env = gym.make("vicogym/Chart-v0", **settings)
        obs, info = env.reset(seed=3)
        trace = [info["actor_answers"]]
        for _ in range(3):
            edit = env.unwrapped.sample_edit(rng=np.random.default_rng(len(trace)))
            *_, info = env.step(edit)
            trace.append(info["actor_answers"])
        return trace

    fixed = episode()
    assert all(len(a) == 8 for a in fixed if a) and episode(probe="fixed") == fixed
    assert episode(probe="sequential") == episode(probe="sequential")
    sequential = episode(probe="sequential")
    assert sequential[0] == fixed[0][:len(sequential[0])]  # the seed's probe: the first draws of the same stream


def test_check_env_passes_with_sequential_probes():
    from gymnasium.utils.env_checker import check_env

    check_env(gym.make("vicogym/Chart-v0", probe="sequential").unwrapped, skip_render_check=True)


@pytest.mark.parametrize("setting, message", [
    ({"probe": "adaptive"}, "expected probe in ('fixed', 'sequential')"),
    ({"probe_confidence": 1.0}, "expected probe_confidence in (0.5, 1)"),
    ({"probe_confidence": "high"}, "expected probe_confidence in (0.5, 1)"),
    ({"probe_batch": 0}, "expected probe_batch to be an integer in [1, 4096]"),
])
def test_bad_probe_settings_are_named(setting, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)").replace("[", r"\[")):
        gym.make("vicogym/Chart-v0", **setting)


def test_the_search_rewriter_spends_fewer_generations_on_candidates_far_from_the_zone():
    from vicogym.policies import make_rewriter
    from vicogym.runs.rollout import run_episode

    spent = {}
    for probe in ("fixed", "sequential"):
        env = gym.make("vicogym/Chart-v0", probe=probe, max_turns=2).unwrapped
        env.actor = recording = _Recording(env.actor)
        for e in range(4):
            run_episode(env, make_rewriter("search:4", env), seed=e, rng=np.random.default_rng(e), keep="final")
        spent[probe] = sum(recording.calls)
    assert spent["sequential"] < 0.8 * spent["fixed"]


def test_a_sequential_run_verifies_and_a_dropped_answer_is_caught(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    from vicogym.runs.shards import file_sha256, row_hash

    out = tmp_path / "run"
    settings = {"k": 8, "max_turns": 2, "probe": "sequential", "actor": {"name": "simulated", "skill": 0.5}}
    generate(GenerateConfig(n=6, out=str(out), seed=2, episodes_per_shard=3, env_kwargs=settings), progress=False)
    again = tmp_path / "again"
    generate(GenerateConfig(n=6, out=str(again), seed=2, episodes_per_shard=3, env_kwargs=settings), progress=False)
    shards = sorted(out.glob("part-*.parquet"))
    assert [p.read_bytes() for p in shards] == [p.read_bytes() for p in sorted(again.glob("part-*.parquet"))]
    assert verify(out).ok
    assert any(len(r["actor_answers"]) < 8 for s in shards for r in pq.read_table(s).to_pylist())
    shard, rows = next((s, pq.read_table(s).to_pylist()) for s in shards
                       if any(len(r["actor_answers"]) > 3 for r in pq.read_table(s).to_pylist()))
    row = next(r for r in rows if len(r["actor_answers"]) > 3)
    row["actor_answers"] = row["actor_answers"][:-1]  # one answer dropped, the pass rate made to agree
    arm = vicogym.registry.make_arm("vicogym/Chart-v0", settings)
    row["pass_rate"] = float(np.mean([arm.score(a, row["answer"]) for a in row["actor_answers"]]))
    pq.write_table(pa.Table.from_pylist(rows, schema=pq.read_table(shard).schema), shard)
    entry_path = out / "entries" / shard.name.replace(".parquet", ".json")
    entry = json.loads(entry_path.read_text())
    entry.update(sha256=file_sha256(shard), row_hashes={r["id"]: row_hash(r) for r in rows})
    entry_path.write_text(json.dumps(entry))
    problems = [reason for _, reason in verify(out, images=False).problems]
    assert any("a sequential probe (at most k=8, batches of 3) stops after" in p for p in problems), problems
