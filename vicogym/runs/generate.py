"""Offline generation of label-valid training data (``vicogym generate``).

Episodes run in blocks of ``episodes_per_shard``; block ``b`` becomes shard ``b`` (see
:mod:`vicogym.runs.shards`), so a crashed run resumes from the first missing shard without
duplicates or gaps. Episode ``e`` is seeded from ``SeedSequence([seed, e])`` alone, so the
output bytes do not depend on ``workers``. A run ends with the episode that makes its
``n``-th sample: the last shard holds the episodes up to that one, and a run with one
worker runs no episode past it (``--n 1`` runs one episode when that one keeps a
sample). Environment settings reach the environment only through ``env_kwargs``
(the environment's own defaults otherwise: 3-turn episodes).
"""

from __future__ import annotations

import collections
import concurrent.futures as cf
import functools
import math
import multiprocessing
import os
import pickle
import queue
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any, TypedDict

import numpy as np

import vicogym
from vicogym.core import canonical_json
from vicogym.errors import RunError, RunInterrupted
from vicogym.processes import BACKEND_SETTINGS, check_backend, die_with_parent, limit_threads
from vicogym.registry import check_id, env_class, env_kind, make_config
from vicogym.runs.rollout import KEEP_POLICIES, EpisodeStats, row_schema, run_episode, sample_row
from vicogym.runs.shards import ENTRIES_DIR, PENDING_DIR, RunFolder, shard_path
from vicogym.runs.trainer_columns import verl_fields
from vicogym.validation import did_you_mean, is_int

#: settings of how a run runs, not of what it writes (the command line and evolve pass them on;
#: ``workers`` is a setting of its own)
RUNTIME = tuple(s for s in BACKEND_SETTINGS if s != "workers") + ("threads", "episodes_in_flight")


class ShardStats(TypedDict):
    """A shard's statistics (its entry's ``stats``): :class:`~vicogym.runs.rollout.EpisodeStats`
    summed over its episodes, their count, its row count and each row's pass rate."""

    steps: int
    valid: int
    no_edit: int
    rejections: dict[str, int]
    seed_rejections: dict[str, int]
    episodes: int
    rows: int
    pass_rates: list[float]


class ShardEntry(TypedDict):
    """A committed shard as the run records it (``entries/part-NNNNN.json``)."""

    name: str
    rows: int
    sha256: str
    #: row id -> the row's content hash
    row_hashes: dict[str, str]
    stats: ShardStats
    #: the shared files its rows name -> their SHA-256
    files: dict[str, str]
    #: the episodes it holds: ``[first, first + count]``
    episodes: list[int]


class ManifestEnv(TypedDict):
    id: str
    version: int | None
    entry_point: str
    arm: str
    env_config: dict[str, Any]


class ManifestCounts(TypedDict):
    samples: int
    requested: int
    episodes: int
    steps: int
    valid_steps: int
    rejected_steps: int
    no_edit_episodes: int
    shards: int


class PassRateHistogram(TypedDict):
    #: the 11 bin edges from 0.0 to 1.0, and the kept samples per bin
    edges: list[float]
    counts: list[int]


class _RunManifest(TypedDict):
    config: dict[str, Any]
    package_version: str
    code_sha256: str
    gymnasium_version: str
    env: ManifestEnv
    counts: ManifestCounts
    #: whether the run holds its ``n`` samples
    complete: bool
    rejections: dict[str, int]
    seed_rejections: dict[str, int]
    pass_rate_histogram: PassRateHistogram
    sweet_zone_hit_rate: float
    #: the folder of the shard entries
    entries: str


class RunManifest(_RunManifest, total=False):
    """A generation run's ``manifest.json``. The last three keys are the run's progress's
    (:meth:`_Progress.manifest`): every written manifest has them."""

    #: whether the run ended (a manifest written while it runs says ``False``)
    finished: bool
    #: the source's summary (:meth:`vicogym.arm.Arm.source_summary`)
    source: dict[str, Any]
    #: every shared file of the run -> its SHA-256
    files: dict[str, str]


@dataclass(frozen=True)
class GenerateConfig:
    """Settings of one generation run. ``env_kwargs`` are ``gymnasium.make`` keyword
    arguments of ``env_id`` (checked against its config fields)."""

    env_id: str = "vicogym/Chart-v0"
    n: int = 64
    out: str = "vicogym-out"
    seed: int = 0
    workers: int = 1
    keep: str = "final"
    episodes_per_shard: int = 16
    max_episodes: int | None = None
    env_kwargs: Mapping[str, Any] = field(default_factory=dict)
    rewriter: str = "random"
    backend: str = "local"
    ray_address: str | None = None
    ray_cpus: float = 1.0
    ray_gpus: float = 0.0
    threads: int = 1
    episodes_in_flight: int = 1

    def __post_init__(self) -> None:
        check_id(self.env_id)
        if env_kind(self.env_id) != "edit":
            raise ValueError(f"{self.env_id} has no rewriter edits to generate from; its samples come from "
                             f"`vicogym synthesize` (see `vicogym synthesize --help`)")
        check_backend(self.backend, self.ray_address, ray_cpus=self.ray_cpus, ray_gpus=self.ray_gpus)
        from vicogym.policies import parse_rewriter

        parse_rewriter(self.rewriter)  # a bad spec fails here, before anything runs
        for name in ("n", "workers", "episodes_per_shard", "threads", "episodes_in_flight"):
            v = getattr(self, name)
            if not is_int(v, 1):
                raise ValueError(f"expected {name} to be a positive integer, got {v!r}")
        if self.max_episodes is not None and (isinstance(self.max_episodes, bool)
                                              or not isinstance(self.max_episodes, int) or self.max_episodes < 1):
            raise ValueError(f"expected max_episodes to be a positive integer or None, got {self.max_episodes!r}")
        if not is_int(self.seed, 0):
            raise ValueError(f"expected seed to be a non-negative integer, got {self.seed!r}")
        if self.keep not in KEEP_POLICIES:
            raise ValueError(f"expected keep in {KEEP_POLICIES}, got {self.keep!r}")
        if not isinstance(self.out, (str, os.PathLike)):
            raise TypeError(f"expected out to be a folder path, got {self.out!r}")
        if not isinstance(self.env_kwargs, Mapping) or not all(isinstance(k, str) for k in self.env_kwargs):
            raise TypeError(f"expected env_kwargs as a mapping of setting names to values, got {self.env_kwargs!r}")
        object.__setattr__(self, "out", str(self.out))
        object.__setattr__(self, "env_kwargs", dict(self.env_kwargs))
        try:
            canonical_json(self.env_kwargs)
        except (TypeError, ValueError):
            raise TypeError(f"expected JSON values in env_kwargs, got {self.env_kwargs!r}") from None
        make_config(self.env_id, self.make_kwargs)  # names and values checked before anything runs

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any]) -> GenerateConfig:
        """A config from plain data (a TOML or JSON file); unknown keys get a suggestion."""
        known = [f.name for f in fields(cls)]
        for key in data:
            if key not in known:
                raise ValueError(
                    f"unknown generate setting {key!r}{did_you_mean(key, known)} (settings: {', '.join(known)}; "
                    f"environment settings go under env_kwargs)"
                )
        return cls(**data)

    @property
    def make_kwargs(self) -> dict[str, Any]:
        """The keyword arguments ``gymnasium.make`` gets."""
        return dict(self.env_kwargs)

    @property
    def episode_budget(self) -> int:
        """Episodes tried before giving up on reaching ``n`` samples (bounded generation)."""
        return self.max_episodes if self.max_episodes is not None else max(4 * self.n, 32)

    def identity(self) -> dict[str, Any]:
        """What fixes the output's contents (where and how it runs does not)."""
        d = asdict(self)
        for name in ("workers", "out", "env_kwargs", *RUNTIME):
            d.pop(name)
        d["env_kwargs"] = settings_given(self.env_id, self.make_kwargs)
        if d["rewriter"] == "random":  # runs from before rewriters were a setting stay resumable
            d.pop("rewriter")
        return d


def settings_given(env_id: str, env_kwargs: Mapping[str, Any]) -> dict[str, Any]:
    """``env_kwargs`` less the settings that leave the environment's config as it is
    without them (``k=8`` where K is 8 by default, ``templates=null``): a setting given at
    its default value does not change a run's identity, nor its row ids."""
    kept = dict(env_kwargs)
    config = make_config(env_id, kept).to_dict()
    for name in list(kept):
        without = {key: value for key, value in kept.items() if key != name}
        if make_config(env_id, without).to_dict() == config:
            kept = without
    return kept


#: the packages whose files decide what a run writes (the layers install as vicogym.<layer>)
CODE_PACKAGES = ("vicogym", "vicogym.programs", "vicogym.editors", "vicogym.renderers", "vicogym.envs",
                 "vicogym.sources", "vicogym.structures", "vicogym.checks", "vicogym.assets")


@functools.lru_cache(maxsize=1)
def code_sha256() -> str:
    """SHA-256 of the package's code and shipped data (every .py and asset file, by path):
    a run records it, so that verify can tell a replay that differs because the code did.
    The version number stays the same between releases; this does not."""
    import hashlib
    import importlib

    digest = hashlib.sha256()
    for name in CODE_PACKAGES:
        for root in importlib.import_module(name).__path__:
            for path in sorted(Path(root).rglob("*")):
                if path.is_file() and "__pycache__" not in path.parts and path.suffix in (".py", ".json", ".jsonl"):
                    digest.update(f"{name}/{path.relative_to(root).as_posix()}\0".encode())
                    digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()


def episode_seed(seed: int, episode: int) -> int:
    return int(np.random.SeedSequence([seed, episode]).generate_state(1)[0])


def _slug(env_id: str) -> str:
    return env_id.split("/")[-1].lower()


#: settings that decide which episodes a run holds, not what an episode writes
EXTENT_SETTINGS = ("n", "max_episodes", "episodes_per_shard", "seed")


def id_prefix(identity: Mapping[str, Any]) -> str:
    """What every row id of a run starts with: the environment's slug and 8 hex digits of
    the settings that decide what an episode writes (the source, K, the rewriter, keep ...;
    not n, the budget or the shard size, which only decide how many episodes there are).
    Two runs of one seed with other settings, a procedural chart run and a ChartQA one,
    give their rows other ids, so merged data sets do not collide; a run extended to a
    larger n keeps its ids."""
    import hashlib

    settings = {k: v for k, v in identity.items() if k not in EXTENT_SETTINGS}
    return f"{_slug(str(identity['env_id']))}-{hashlib.sha256(canonical_json(settings).encode()).hexdigest()[:8]}"


def row_id(prefix: str, seed: int, episode: int, turn: int) -> str:
    return f"{prefix}-s{seed}-e{episode:07d}-t{turn}"


# -- one block of episodes (in this process or a worker) ----------------------------------
_WORKER_ENVS: dict[str, list[Any]] = {}


def _envs_for(config: GenerateConfig, count: int = 1) -> list[Any]:
    """``count`` environments of the run's settings, kept for the life of this process
    (a renderer, frame caches or a Blender scene are built once, not once per shard)."""
    key = config.env_id + canonical_json(config.make_kwargs)
    envs = _WORKER_ENVS.setdefault(key, [])
    while len(envs) < count:
        import gymnasium as gym

        envs.append(gym.make(config.env_id, **config.make_kwargs).unwrapped)
    return envs[:count]


def _env_for(config: GenerateConfig) -> Any:
    return _envs_for(config)[0]


def start_worker(parent: int, threads: int) -> None:
    """First thing in a worker process: die with ``parent``, native thread pools at ``threads``."""
    die_with_parent(parent)
    limit_threads(threads)


def _episode(config: GenerateConfig, env: Any, e: int) -> tuple[Any, float, list[Any], EpisodeStats]:
    """Episode ``e`` of the run: its seed, and a rewriter of its own, depend on ``e`` alone."""
    from vicogym.policies import make_rewriter

    rng = np.random.default_rng(np.random.SeedSequence([config.seed, e, 1]))
    return run_episode(env, make_rewriter(config.rewriter, env), seed=episode_seed(config.seed, e), rng=rng,
                       keep=config.keep, episode=e)


#: one episode's part of a shard: its rows, its statistics, and the files its rows share
EpisodeResult = tuple[list[dict[str, Any]], EpisodeStats, dict[str, bytes]]


def run_block(config: GenerateConfig, block: int, needed: int | None = None) -> list[EpisodeResult]:
    """The rows, statistics and shared files (see :meth:`vicogym.arm.Arm.side_files`) of
    each episode of shard ``block``, in order. With ``needed``, the block stops after the
    episode that brings its rows to ``needed``: a run that needs few more samples runs
    only the episodes that make them (the shard keeps exactly the episodes up to that one
    however the block ran, see :func:`shard_contents`). With ``episodes_in_flight`` > 1
    that many episodes run side by side on their own environments (threads: while one
    waits for an actor server, another renders), and the server sees their requests at
    once."""
    episodes = range(block * config.episodes_per_shard,
                     min((block + 1) * config.episodes_per_shard, config.episode_budget))
    envs = _envs_for(config, min(config.episodes_in_flight, len(episodes)) or 1)
    results: list[EpisodeResult] = []
    rows = 0
    in_order = _in_flight(config, envs, episodes)
    try:
        for result in in_order:
            results.append(result)
            rows += len(result[0])
            if needed is not None and rows >= needed:
                break
    finally:
        in_order.close()  # episodes side by side not started yet are cancelled
    return results


def _in_flight(config: GenerateConfig, envs: list[Any], episodes: range) -> Iterator[EpisodeResult]:
    """The results of ``episodes`` in order: one by one on one environment, or side by side
    on several (a thread takes the next episode as soon as it is free; closing the
    generator cancels those not started, and those running finish, unread)."""
    if len(envs) == 1:
        for e in episodes:
            yield _episode_result(config, envs[0], e)
        return
    free: queue.Queue = queue.Queue()
    for env in envs:
        free.put(env)

    def one(e: int) -> EpisodeResult:
        env = free.get()
        try:
            return _episode_result(config, env, e)
        finally:
            free.put(env)

    with cf.ThreadPoolExecutor(max_workers=len(envs)) as pool:
        futures = [pool.submit(one, e) for e in episodes]
        try:
            for future in futures:
                yield future.result()
        finally:
            for future in futures:
                future.cancel()


def _episode_result(config: GenerateConfig, env: Any, e: int) -> EpisodeResult:
    seed_sample, p0, kept, stats = _episode(config, env, e)
    rows: list[dict[str, Any]] = []
    files: dict[str, bytes] = {}
    prefix = id_prefix(config.identity())
    for k in kept:
        rid = row_id(prefix, config.seed, e, k.turn)
        provenance = dict(k.sample.provenance.to_dict(), seed=episode_seed(config.seed, e), index=e, turn=k.turn,
                          run_seed=config.seed)
        row = sample_row(env.arm, config.env_id, rid, k, seed_sample, p0, provenance)
        row.update(verl_fields(row, env.arm.export, index=e))
        rows.append(row)
        files.update(env.arm.side_files(k.sample.structure))
    return rows, stats, files


def episode_rows(config: GenerateConfig, episode: int) -> list[dict[str, Any]]:
    """The rows episode ``episode`` of the run ``config`` keeps, as its shard holds them
    (made on this process's environment of the run's settings; for trainers that draw
    episodes as they go, :mod:`vicogym.trainers.verl_agent`)."""
    return _episode_result(config, _env_for(config), episode)[0]


def rewriter_episode_row(config: GenerateConfig, episode: int) -> dict[str, Any]:
    """Episode ``episode`` of the run ``config`` as a rewriter episode to play (for trainers
    whose policy is the rewriter: :mod:`vicogym.trainers.verl_agent`, :mod:`vicogym.trainers.trl`): the
    environment, the seed ``generate`` draws for the episode and the run's settings (JSON)."""
    seed = episode_seed(config.seed, episode)
    return {"id": f"{_slug(config.env_id)}-s{config.seed}-e{episode:07d}", "data_source": config.env_id,
            "prompt": [{"role": "user", "content": f"Rewrite episode {episode} of {config.env_id} (seed {seed})."}],
            "ability": "rewriting", "reward_model": {"style": "rule", "ground_truth": ""},
            "extra_info": {"index": episode, "env_id": config.env_id, "seed": seed,
                           "settings": canonical_json(config.make_kwargs), "split": "train"}}


def shard_contents(results: list[EpisodeResult], needed: int | None) -> tuple[list[dict[str, Any]], ShardStats,
                                                                                dict[str, Any]]:
    """A shard from a block's episode results: the episodes up to the one that brings the
    rows to ``needed`` (all of them if none does, or ``needed`` is ``None``), their rows cut
    at ``needed``, their summed statistics and shared files. The same whether the block
    stopped there or ran on (another worker count, Ray), so the bytes do not depend on how
    it ran."""
    rows: list[dict[str, Any]] = []
    total = EpisodeStats()
    files: dict[str, Any] = {}
    episodes = 0
    for episode_rows, stats, episode_files in results:
        if needed is not None and len(rows) >= needed:
            break
        rows.extend(episode_rows)
        total.add(stats)
        files.update(episode_files)
        episodes += 1
    if needed is not None:
        rows = rows[:needed]  # the last shard stops at exactly n samples
    return rows, dict(total.to_dict(), episodes=episodes, rows=len(rows),
                      pass_rates=[r["pass_rate"] for r in rows]), files


def make_block(config: GenerateConfig, block: int, needed: int | None = None) -> dict[str, Any]:
    """A worker's part of a run: block ``block`` run (see :func:`run_block`), its shard and
    shared files written to the run's store, pending (:meth:`RunFolder.write_pending`).
    What comes back is small whatever the images weigh: the shard's manifest entry and,
    for each episode, its row count, statistics and shared files' names (what the run
    needs to cut the last shard at ``n`` rows)."""
    results = run_block(config, block, needed)
    rows, stats, files = shard_contents(results, None)
    entry = RunFolder(config.out).write_pending(block, rows, stats, files, row_schema())
    entry["episodes"] = _episodes(config, block, stats["episodes"])
    return {"entry": entry, "episodes": [(len(r), s.to_dict(), sorted(f)) for r, s, f in results]}


# -- the run -----------------------------------------------------------------------------
def generate(config: GenerateConfig, progress: bool = True,
             on_shard: Callable[[dict[str, Any]], None] | None = None,
             on_resume: Callable[[int], None] | None = None) -> RunManifest:
    """Generate ``config.n`` samples into ``config.out`` (a folder, or a filesystem URL such
    as ``s3://bucket/prefix``, which workers write to directly); resume what a crash left,
    or extend a finished run to a larger ``n`` (its rows stay as they are, new ones follow).
    ``on_shard``, if given, hears of every shard the run commits: its block, the bytes the
    worker's answer took (pickled), the manifest bytes written for it, and the seconds this
    process spent recording it. ``on_resume``, if given, hears how many samples of an
    earlier run of these settings the run keeps (0 for a new run) before it makes any.
    Interrupted (Ctrl-C), it raises :class:`~vicogym.errors.RunInterrupted` with the
    samples kept on disk: the same call resumes from them."""
    folder = RunFolder(config.out)
    if folder.store.in_process and (config.workers > 1 or config.backend == "ray"):
        raise RunError(f"--out {config.out} lives in this process alone, where worker processes cannot write: use "
                       f"--workers 1 with the local backend, or a folder or URL the workers reach")
    return _generate(config, folder, progress, on_shard, on_resume)


#: settings a finished run may grow: more samples from the same seed (the rows made stay)
GROWABLE = ("n", "max_episodes")


def _check_growth(stored: Mapping[str, Any] | None, config: GenerateConfig, where: str) -> None:
    if stored is None:
        return
    if config.n < int(stored["n"]):
        raise RunError(f"{where} holds a run of n={stored['n']}; --n {config.n} would drop rows it holds: use --n "
                       f"{stored['n']} or more (a larger n extends it), or a new --out")
    before = stored.get("max_episodes")
    if before != config.max_episodes and (before is None or config.max_episodes is None
                                          or config.max_episodes < before):
        raise RunError(f"{where} holds a run with max_episodes={before}; keep it, or raise it to extend the run "
                       f"(got {config.max_episodes}), or use a new --out")


def _generate(config: GenerateConfig, folder: RunFolder, progress: bool,
              on_shard: Callable[[dict[str, Any]], None] | None,
              on_resume: Callable[[int], None] | None = None) -> RunManifest:
    from tqdm import tqdm

    identity = config.identity()
    stored = folder.check(identity, GROWABLE)
    _check_growth(stored, config, folder.where)
    env = _env_for(config)  # builds the source: bad source data fails here, before any file is written
    previous = folder.open(identity, GROWABLE)
    schema = row_schema()
    blocks_total = math.ceil(config.episode_budget / config.episodes_per_shard)
    zone = env.config.sweet_zone
    run = _Progress(config, env.arm.source_summary(), zone)
    bar = tqdm(total=config.n, desc=f"generate {config.env_id}", unit="sample", disable=not progress)
    block = 0
    try:
        block = _resume(config, folder, run, previous, stored, blocks_total, functools.partial(_row_files, env.arm))
        bar.update(run.count)
        folder.write_manifest(run.manifest(finished=False))
        if on_resume is not None:
            on_resume(run.count)

        def commit(result: dict[str, Any], b: int) -> None:
            started = time.perf_counter()
            entry = _final_entry(config, folder, result, b, config.n - run.count, schema)
            written = folder.commit(entry, run.files)
            run.absorb(entry)
            bar.update(entry["rows"])
            bar.set_postfix(run.rates(), refresh=True)
            if on_shard is not None:
                on_shard({"block": b, "received_bytes": len(pickle.dumps(result)), "manifest_bytes": written,
                          "seconds": time.perf_counter() - started})

        results = _block_results(config, block, blocks_total if run.count < config.n else block,
                                 lambda: config.n - run.count)
        try:
            for b, result in results:
                commit(result, b)
                if run.count >= config.n:
                    break
        finally:
            results.close()  # stops what is still running
        folder.clear_pending()  # blocks made ahead that the run did not need
        manifest = run.manifest(finished=True)
        folder.write_manifest(manifest)
        return manifest
    except KeyboardInterrupt as stop:
        folder.release_if_empty()
        raise RunInterrupted(config.out, run.count, config.n) from stop
    except BaseException:
        folder.release_if_empty()
        raise
    finally:
        bar.close()
        folder.unlock()


def _resume(config: GenerateConfig, folder: RunFolder, run: _Progress, previous: dict[str, dict[str, Any]],
            stored: Mapping[str, Any] | None, blocks_total: int,
            files_of: Callable[[list[dict[str, Any]]], dict[str, str]]) -> int:
    """Keep the shards a previous run of these settings committed, each checked against its
    entry (a shard moved into place just before a kill is read whole and recorded); the
    first block to make. The last shard of a smaller run is made again, whole, when the run
    grows past it (its rows stop at the old n; the ones it holds come out the same)."""
    shards, recorded = set(folder.shards()), set(folder.entry_names())
    earlier_n = int(stored["n"]) if stored is not None else config.n
    block = 0
    while block < blocks_total and run.count < config.n:
        name = shard_path(Path(), block).name
        if name not in shards:
            break
        known = folder.read_entry(name) if name in recorded else previous.get(name)
        entry = folder.resumed_entry(name, known)
        if "stats" not in entry:  # moved into place but not recorded, or recorded before entries held statistics
            rows, stats = folder.read_shard(name)
            entry = dict(entry, stats=stats, files=files_of(rows))
        stats = entry["stats"]
        first = block * config.episodes_per_shard
        whole = first + stats["episodes"] >= min(first + config.episodes_per_shard, config.episode_budget)
        ended_smaller_run = earlier_n < config.n and run.count + entry["rows"] >= earlier_n
        if (not whole or ended_smaller_run) and run.count + entry["rows"] < config.n:
            break
        entry = dict(entry, episodes=_episodes(config, block, stats["episodes"]))
        if name not in recorded or entry != known:
            folder.record(entry)
        run.absorb(entry)
        block += 1
    folder.cut(shard_path(Path(), block).name)
    return block


def _row_files(arm: Any, rows: list[dict[str, Any]]) -> dict[str, str]:
    """The shared files ``rows`` need (name -> SHA-256), from their structures."""
    import hashlib

    from vicogym.arm import payload_dict

    files: dict[str, str] = {}
    for row in rows:
        for name, data in arm.side_files(arm.decode(row["structure"], payload_dict(row.get("payloads")))).items():
            files[name] = hashlib.sha256(data).hexdigest()
    return dict(sorted(files.items()))


def _final_entry(config: GenerateConfig, folder: RunFolder, result: dict[str, Any], b: int, needed: int,
                 schema: Any) -> ShardEntry:
    """The entry of block ``b``'s shard as the run keeps it: the worker's, or, for the shard
    that reaches ``n`` before its block ends, the shard cut there (read back from the
    store and written again: once a run)."""
    entry, episodes = result["entry"], result["episodes"]
    rows = 0
    for kept, (count, _, _) in enumerate(episodes):  # noqa: B007 (kept is read after the loop)
        if rows >= needed:
            break
        rows += count
    else:
        kept = len(episodes)
    if kept == len(episodes) and rows <= needed:
        return entry
    stored, _ = folder.read_shard(f"{PENDING_DIR}/{entry['name']}")
    parts, at = [], 0
    for count, stats, names in episodes:
        parts.append((stored[at:at + count], EpisodeStats.from_dict(stats), {n: entry["files"][n] for n in names}))
        at += count
    rows_kept, stats, files = shard_contents(parts, needed)
    final = folder.write_final(entry["name"], rows_kept, stats, files, schema)
    final["episodes"] = _episodes(config, b, stats["episodes"])
    return final


def _block_results(config: GenerateConfig, first: int, last: int,
                   needed: Callable[[], int]) -> Iterator[tuple[int, Any]]:
    """``(b, run_block(config, b))`` for blocks ``first`` to ``last - 1``, in order, computed
    here, by ``config.workers`` worker processes or by Ray actors, with at most ``workers``
    blocks ahead of the one being read. Closing the generator stops the workers. Blocks
    run here (one after another, each read before the next starts) stop once they make
    the ``needed()`` samples the run still needs; blocks run ahead elsewhere run whole."""
    if config.backend == "ray":
        yield from _ray_block_results(config, first, last, needed)
        return
    if config.workers == 1:
        with limit_threads(config.threads):
            for b in range(first, last):
                yield b, make_block(config, b, needed())
        return
    context = multiprocessing.get_context("spawn")
    pool = cf.ProcessPoolExecutor(max_workers=config.workers, mp_context=context, initializer=start_worker,
                                  initargs=(os.getpid(), config.threads))
    try:
        yield from _in_order(range(first, last), lambda b: pool.submit(make_block, config, b), cf.Future.result,
                             config.workers, collections.deque())
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def _in_order(blocks: range, submit: Callable[[int], Any], result: Callable[[Any], Any], ahead: int,
              pending: collections.deque) -> Iterator[tuple[int, Any]]:
    """``(b, result(submit(b)))`` in block order, with up to ``ahead`` blocks submitted and
    not yet read; ``pending`` holds them (so the caller can cancel what is left)."""
    for b in blocks:
        pending.append((b, submit(b)))
        if len(pending) >= ahead:
            b0, handle = pending.popleft()
            yield b0, result(handle)
    while pending:
        b0, handle = pending.popleft()
        yield b0, result(handle)


class _RayBlockWorker:
    """A Ray actor: one long-lived environment (renderer, frame caches, Blender scene)
    reused across the blocks it runs."""

    def __init__(self, threads: int) -> None:
        limit_threads(threads)

    def run(self, config: GenerateConfig, block: int) -> Any:
        return make_block(config, block)


def _ray_block_results(config: GenerateConfig, first: int, last: int,
                       needed: Callable[[], int]) -> Iterator[tuple[int, Any]]:
    """Blocks on Ray actors. While Ray starts (seconds for a local instance), this process
    runs the first blocks itself: a block's rows do not depend on where it runs."""
    from vicogym.processes import ray_actors

    pool = ray_actors(_RayBlockWorker, config, config.threads)  # names the [ray] extra when ray is missing
    import ray

    pending: collections.deque = collections.deque()
    block = first
    try:
        with limit_threads(config.threads):
            while block < last and not pool.ready.is_set():
                yield block, make_block(config, block, needed())
                block += 1
        workers = pool.wait()
        yield from _in_order(range(block, last), lambda b: workers[(b - block) % len(workers)].run.remote(config, b),
                             ray.get, config.workers, pending)
    finally:
        pool.close(ref for _, ref in pending)  # blocks run ahead that the run no longer needs


class _Progress:
    """What a run has committed so far, summed as it goes (recording a shard costs the same
    however many came before), and its manifest."""

    def __init__(self, config: GenerateConfig, source_report: dict[str, Any], zone: tuple[float, float]):
        self.config, self.source_report, self.zone = config, source_report, zone
        self.totals = EpisodeStats()
        self.episodes = self.count = self.shards = self.sweet = 0
        self.histogram = np.zeros(10, dtype=np.int64)
        self.files: dict[str, str] = {}

    def absorb(self, entry: ShardEntry) -> None:
        stats = entry["stats"]
        self.count += entry["rows"]
        self.episodes += stats["episodes"]
        self.shards += 1
        self.totals.add(EpisodeStats.from_dict(stats))
        rates = stats["pass_rates"]
        self.histogram += np.histogram(rates, bins=10, range=(0.0, 1.0))[0]
        self.sweet += sum(self.zone[0] <= p <= self.zone[1] for p in rates)
        self.files.update(entry.get("files") or {})

    def rates(self) -> dict[str, str]:
        """What the progress bar shows beside rate and ETA: the share of edits accepted and
        of kept samples in the sweet zone."""
        sweet = self.sweet / self.count if self.count else 0.0
        accepted = self.totals.valid / self.totals.steps if self.totals.steps else 0.0
        return {"accepted": f"{accepted:.0%}", "sweet": f"{sweet:.0%}"}

    def manifest(self, finished: bool) -> RunManifest:
        manifest = _manifest(self.config, self.totals, self.episodes, self.count, self.histogram,
                             self.sweet, self.shards)
        manifest["finished"] = finished
        manifest["source"] = self.source_report
        manifest["files"] = dict(sorted(self.files.items()))
        return manifest


def _episodes(config: GenerateConfig, block: int, count: int) -> list[int]:
    """The episodes shard ``block`` holds: ``count`` from the block's first."""
    first = block * config.episodes_per_shard
    return [first, first + count]


def _manifest(config: GenerateConfig, totals: EpisodeStats, episodes: int, count: int, histogram: np.ndarray,
              sweet: int, shards: int) -> RunManifest:
    import gymnasium as gym

    spec = gym.spec(config.env_id)
    env_config = make_config(config.env_id, config.make_kwargs)
    return {
        "config": dict(asdict(config), env_kwargs=config.make_kwargs),
        "package_version": vicogym.__version__,
        "code_sha256": code_sha256(),
        "gymnasium_version": gym.__version__,
        "env": {"id": config.env_id, "version": spec.version, "entry_point": str(spec.entry_point),
                "arm": env_class(config.env_id).arm_class.name,
                "env_config": env_config.to_dict()},
        "counts": {"samples": count, "requested": config.n, "episodes": episodes, "steps": totals.steps,
                   "valid_steps": totals.valid, "rejected_steps": totals.steps - totals.valid,
                   "no_edit_episodes": totals.no_edit, "shards": shards},
        "complete": count >= config.n,
        "rejections": dict(sorted(totals.rejections.items())),
        "seed_rejections": dict(sorted(totals.seed_rejections.items())),
        "pass_rate_histogram": {"edges": [round(e, 2) for e in np.linspace(0.0, 1.0, 11).tolist()],
                                "counts": histogram.tolist()},
        "sweet_zone_hit_rate": round(sweet / count if count else 0.0, 4),
        "entries": ENTRIES_DIR,
    }
