"""Offline generation of label-valid training data, and its independent verification.

``generate`` runs rewriter episodes and streams accepted samples to Parquet shards:
shard ``b`` holds the samples of episodes ``[b * E, (b + 1) * E)`` (``E`` =
``episodes_per_shard``), written atomically, so a crashed run resumes from the first
missing shard without duplicates or gaps. Episode ``e`` is seeded from
``SeedSequence([seed, e])`` alone, so the output bytes do not depend on ``workers``.
"""

from __future__ import annotations

import concurrent.futures as cf
import json
import math
import multiprocessing
import os
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Iterator

import numpy as np

import vicogym
from vicogym.registry import check_id
from vicogym.rewards import in_sweet_zone

KEEP_POLICIES = ("final", "all", "sweet")
PROMPT_SUFFIX = "\nAnswer with a single word or number."
SHARD_GLOB = "part-*.parquet"


@dataclass(frozen=True)
class GenerateConfig:
    env_id: str = "vicogym/Chart-v0"
    n: int = 64
    out: str = "vicogym-out"
    k: int = 8
    seed: int = 0
    workers: int = 1
    keep: str = "final"
    source: str = "procedural"
    max_turns: int = 3
    episodes_per_shard: int = 16
    max_episodes: int | None = None
    env_kwargs: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        check_id(self.env_id)
        for name in ("n", "k", "workers", "max_turns", "episodes_per_shard"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"expected {name} to be a positive integer, got {v!r}")
        if isinstance(self.seed, bool) or not isinstance(self.seed, int) or self.seed < 0:
            raise ValueError(f"expected seed to be a non-negative integer, got {self.seed!r}")
        if self.keep not in KEEP_POLICIES:
            raise ValueError(f"expected keep in {KEEP_POLICIES}, got {self.keep!r}")

    @property
    def episode_budget(self) -> int:
        """Episodes tried before giving up on reaching ``n`` samples (bounded generation)."""
        return self.max_episodes if self.max_episodes is not None else max(4 * self.n, 32)

    def env_make_kwargs(self) -> dict[str, Any]:
        return {"k": self.k, "max_turns": self.max_turns, "source": self.source, **self.env_kwargs}

    def identity(self) -> dict[str, Any]:
        """What fixes the output's contents (``workers`` and ``out`` do not)."""
        d = asdict(self)
        d.pop("workers")
        d.pop("out")
        return d


def episode_seed(seed: int, episode: int) -> int:
    return int(np.random.SeedSequence([seed, episode]).generate_state(1)[0])


def _slug(env_id: str) -> str:
    return env_id.split("/")[-1].lower()


# -- one episode ------------------------------------------------------------------------
_WORKER_ENVS: dict[str, Any] = {}


def _env_for(config: GenerateConfig):
    key = json.dumps(config.env_make_kwargs(), sort_keys=True) + config.env_id
    if key not in _WORKER_ENVS:
        import gymnasium as gym

        _WORKER_ENVS[key] = gym.make(config.env_id, **config.env_make_kwargs()).unwrapped
    return _WORKER_ENVS[key]


def run_episode(config: GenerateConfig, episode: int) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Rows kept from one episode and its statistics."""
    from vicogym.policies import RandomRewriter
    from vicogym.renderers.chart import encode_png

    env = _env_for(config)
    seed = episode_seed(config.seed, episode)
    rng = np.random.default_rng(np.random.SeedSequence([config.seed, episode, 1]))
    rewriter = RandomRewriter.for_env(env)
    obs, info = env.reset(seed=seed)
    seed_sample, p0 = env.sample, info["pass_rate"]
    stats: dict[str, Any] = {"steps": 0, "valid": 0, "rejections": Counter()}
    kept: list[tuple[int, Any, float, float, list]] = []
    done = False
    while not done:
        obs, reward, terminated, truncated, info = env.step(rewriter.propose(obs, rng))
        done = terminated or truncated
        if info["stopped"]:
            break
        stats["steps"] += 1
        if not info["valid"]:
            stats["rejections"][info["error"]["code"]] += 1
            continue
        stats["valid"] += 1
        kept.append((info["turn"], env.sample, info["pass_rate"], reward, list(env.trace)))
    if config.keep == "final":
        kept = kept[-1:]
    elif config.keep == "sweet":
        reward_config = env.config.reward_config()
        kept = [k for k in kept if in_sweet_zone(k[2], reward_config)]
    rows = []
    for turn, sample, p, reward, trace in kept:
        png = encode_png(sample.image)
        row_id = f"{_slug(config.env_id)}-s{config.seed}-e{episode:07d}-t{turn}"
        prov = dict(sample.provenance.to_dict(), seed=seed, index=episode, turn=turn, run_seed=config.seed)
        rows.append({
            "id": row_id,
            "env_id": config.env_id,
            "source_id": sample.provenance.source_id,
            "image": png,
            "question": sample.question,
            "answer": sample.answer,
            "label_rule": sample.rule_kind,
            "label": json.dumps(sample.label_rule, ensure_ascii=False, sort_keys=True),
            "structure": json.dumps(sample.structure.to_dict(), ensure_ascii=False, sort_keys=True),
            "seed_structure": json.dumps(seed_sample.structure.to_dict(), ensure_ascii=False, sort_keys=True),
            "edit_trace": json.dumps(trace, ensure_ascii=False, sort_keys=True),
            "pass_rate": float(p),
            "pass_rate_before": float(p0),
            "reward": float(reward),
            "provenance": json.dumps(prov, sort_keys=True),
            # verl's multimodal RL dataset fields
            "data_source": config.env_id,
            "prompt": [{"role": "user", "content": "<image>" + sample.question + PROMPT_SUFFIX}],
            "images": [{"bytes": png, "path": None}],
            "ability": "chart_reasoning",
            "reward_model": {"style": "rule", "ground_truth": sample.answer},
            "extra_info": {"id": row_id, "index": episode, "split": "train", "question": sample.question,
                           "answer": sample.answer, "label_rule": sample.rule_kind},
        })
    return rows, stats


def run_block(config: GenerateConfig, block: int) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    first = block * config.episodes_per_shard
    rows: list[dict[str, Any]] = []
    total: dict[str, Any] = {"episodes": 0, "steps": 0, "valid": 0, "rejections": Counter()}
    for e in range(first, min(first + config.episodes_per_shard, config.episode_budget)):
        episode_rows, stats = run_episode(config, e)
        rows.extend(episode_rows)
        total["episodes"] += 1
        for key in ("steps", "valid", "rejections"):
            total[key] += stats[key]
    total["rejections"] = dict(total["rejections"])
    return rows, total


# -- shards ---------------------------------------------------------------------------
def _shard_path(out: Path, block: int) -> Path:
    return out / f"part-{block:05d}.parquet"


def _write_shard(out: Path, block: int, rows: list[dict[str, Any]], stats: dict[str, Any]) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.Table.from_pylist(rows) if rows else pa.table({"id": pa.array([], pa.string())})
    table = table.replace_schema_metadata({b"vicogym_stats": json.dumps(stats, sort_keys=True).encode()})
    tmp = _shard_path(out, block).with_suffix(".tmp")
    pq.write_table(table, tmp, compression="zstd")
    os.replace(tmp, _shard_path(out, block))


def _read_shard_stats(path: Path) -> dict[str, Any]:
    import pyarrow.parquet as pq

    meta = pq.read_schema(path).metadata or {}
    return json.loads(meta[b"vicogym_stats"])


def _run_config_path(out: Path) -> Path:
    return out / "run.json"


def generate(config: GenerateConfig, progress: bool = True) -> dict[str, Any]:
    """Generate ``config.n`` samples into ``config.out``; resume what a crash left."""
    from tqdm import tqdm

    out = Path(config.out)
    out.mkdir(parents=True, exist_ok=True)
    run_path = _run_config_path(out)
    if run_path.exists():
        previous = json.loads(run_path.read_text())
        if previous != config.identity():
            raise ValueError(f"{out} holds a run with other settings ({previous}); use a new --out or the same settings")
    else:
        run_path.write_text(json.dumps(config.identity(), sort_keys=True, indent=1))
    for stale in out.glob("*.tmp"):
        stale.unlink()

    blocks_total = math.ceil(config.episode_budget / config.episodes_per_shard)
    totals = {"episodes": 0, "steps": 0, "valid": 0, "rejections": Counter(), "pass_rates": []}
    count, block = 0, 0
    bar = tqdm(total=config.n, desc=f"generate {config.env_id}", unit="sample", disable=not progress)

    def absorb(block_rows: int, stats: dict[str, Any]) -> None:
        nonlocal count
        count += block_rows
        bar.update(block_rows)
        for key in ("episodes", "steps", "valid", "pass_rates"):
            totals[key] += stats[key]
        totals["rejections"].update(stats["rejections"])

    # resume: complete shards are kept as they are
    while block < blocks_total and count < config.n and _shard_path(out, block).exists():
        stats = _read_shard_stats(_shard_path(out, block))
        absorb(stats["rows"], stats)
        block += 1

    def finish(rows: list[dict[str, Any]], stats: dict[str, Any], b: int) -> None:
        rows = rows[: config.n - count]  # the last shard stops at exactly n samples
        stats = dict(stats, rows=len(rows), pass_rates=[r["pass_rate"] for r in rows])
        _write_shard(out, b, rows, stats)
        absorb(len(rows), stats)

    if config.workers == 1:
        while block < blocks_total and count < config.n:
            finish(*run_block(config, block), block)
            block += 1
    else:
        context = multiprocessing.get_context("spawn")
        with cf.ProcessPoolExecutor(max_workers=config.workers, mp_context=context) as pool:
            while block < blocks_total and count < config.n:
                window = range(block, min(block + config.workers, blocks_total))
                futures = [pool.submit(run_block, config, b) for b in window]
                for b, future in zip(window, futures):
                    if count >= config.n:
                        break
                    finish(*future.result(), b)
                    block = b + 1
    bar.close()
    manifest = _manifest(config, totals, count)
    (out / "manifest.json").write_text(json.dumps(manifest, indent=2, sort_keys=True))
    return manifest


def _manifest(config: GenerateConfig, totals: dict[str, Any], count: int) -> dict[str, Any]:
    import gymnasium as gym

    hist, edges = np.histogram(totals["pass_rates"], bins=10, range=(0.0, 1.0))
    spec = gym.spec(config.env_id)
    return {
        "config": asdict(config),
        "package_version": vicogym.__version__,
        "gymnasium_version": gym.__version__,
        "env": {"id": config.env_id, "version": spec.version, "entry_point": str(spec.entry_point)},
        "counts": {"samples": count, "requested": config.n, "episodes": totals["episodes"], "steps": totals["steps"],
                   "valid_steps": totals["valid"], "rejected_steps": totals["steps"] - totals["valid"]},
        "complete": count >= config.n,
        "rejections": dict(sorted(totals["rejections"].items())),
        "pass_rate_histogram": {"edges": [round(e, 2) for e in edges.tolist()], "counts": hist.tolist()},
        "shards": sorted(p.name for p in Path(config.out).glob(SHARD_GLOB)),
    }


# -- verification -------------------------------------------------------------------------
def iter_rows(out: str | Path, columns: list[str] | None = None) -> Iterator[dict[str, Any]]:
    import pyarrow.parquet as pq

    shards = sorted(Path(out).glob(SHARD_GLOB))
    if not shards:
        raise FileNotFoundError(f"no {SHARD_GLOB} shards in {out}")
    for path in shards:
        table = pq.read_table(path, columns=columns if pq.read_schema(path).names != ["id"] else None)
        yield from table.to_pylist()


def verify_row(row: dict[str, Any]) -> str | None:
    """Why a stored row's label does not follow from what it stores, or ``None``."""
    from vicogym.errors import InvalidEdit
    from vicogym.programs.chart import question_matches, relabel
    from vicogym.structures import ChartStructure

    try:
        structure = ChartStructure.from_json(row["structure"])
        rule = json.loads(row["label"])
        answer = relabel(structure.table, rule)
    except (InvalidEdit, ValueError, TypeError, KeyError) as exc:
        return f"label cannot be re-derived: {exc}"
    if answer != row["answer"]:
        return f"stored answer {row['answer']!r} but the label rule gives {answer!r}"
    mismatch = question_matches(row["question"], rule, structure.table)
    if mismatch:
        return f"question {row['question']!r} does not fit its label rule: {mismatch}"
    if row["reward_model"]["ground_truth"] != row["answer"]:
        return "reward_model.ground_truth differs from answer"
    return None


def verify(out: str | Path) -> tuple[int, list[tuple[str, str]]]:
    """Re-derive every label in ``out``: (rows checked, [(id, reason), ...])."""
    bad = []
    n = 0
    columns = ["id", "structure", "label", "question", "answer", "reward_model"]
    for row in iter_rows(out, columns):
        n += 1
        problem = verify_row(row)
        if problem:
            bad.append((row["id"], problem))
    return n, bad
