"""Run folders of the evidence arm: episode traces (``vicogym evidence run``) and task rows
(``vicogym generate vicogym/Evidence-v0``), both resumable and both verified by
``vicogym verify``.

A folder holds ``run.json`` (the settings that fix its bytes: ``kind`` says which of the
two it is), ``part-NNNNN.parquet`` shards (written whole or not at all, as every vicogym
run), ``manifest.json`` and, under ``files/``, the raster payloads (PNG by SHA-256) that
tasks name. Episode ``i`` of a run with seed ``s`` is played with seed
``episode_seed(s, i)``, so a run killed at any point and started again with the same
command writes the same bytes. A traces run keeps latencies apart, in ``timings.jsonl``.

Verification replays every trace from the folder alone: it redraws each task from its
seed and compares it, rebuilds every sent view bit for bit against the SHA-256 in the
trace, re-scores every answer, and re-derives each answer with the family's programs; a
tasks run is checked the same way, its unit images against fresh renders.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from vicogym.errors import RunError
from vicogym.evidence.episodes import pixels_sha256, play, trace_line
from vicogym.evidence.skills import load_skill
from vicogym.runs.kinds import Findings, code_note, guarded, read_json, shard_problem
from vicogym.runs.shards import FILES_DIR, MANIFEST_FILE, RUN_FILE, RunFolder, write_shard
from vicogym.validation import MAX_SEED, is_int

ENV_ID = "vicogym/Evidence-v0"
KINDS = ("evidence-traces", "evidence-tasks")
TIMINGS_FILE = "timings.jsonl"


def episode_seed(seed: int, index: int) -> int:
    return int(np.random.SeedSequence([int(seed), int(index)]).generate_state(2, np.uint64)[0]) % MAX_SEED


def _make_env(env_kwargs: Mapping[str, Any]) -> Any:
    import gymnasium as gym

    import vicogym  # noqa: F401  (registers the environments)

    return gym.make(ENV_ID, **dict(env_kwargs)).unwrapped


def _check(n: Any, seed: Any, per_shard: Any) -> None:
    if not is_int(n, 1):
        raise ValueError(f"expected --n as a whole number >= 1, got {n!r}")
    if not is_int(seed, 0, MAX_SEED):
        raise ValueError(f"expected --seed as a whole number in [0, 2**63 - 1], got {seed!r}")
    if not is_int(per_shard, 1):
        raise ValueError(f"expected episodes per shard as a whole number >= 1, got {per_shard!r}")


def _payload_files(env: Any) -> dict[str, bytes]:
    return {f"{sha}.png": data for sha, data in env.payloads.items()}


def _run(out: str | Path, identity: dict[str, Any], n: int, per_shard: int,
         make_row: Callable[[Any, int, int], tuple[dict[str, Any], dict[str, Any]]], schema: Any,
         env_kwargs: Mapping[str, Any], progress: Callable[[int], None] | None) -> dict[str, Any]:
    folder = RunFolder(out)
    previous = folder.open(identity)
    try:
        env = _make_env(env_kwargs)
        entries, shards = [], []
        timings_path = folder.out / TIMINGS_FILE
        done_timings = _timing_episodes(timings_path)
        for block in range((n + per_shard - 1) // per_shard):
            first, last = block * per_shard, min(n, (block + 1) * per_shard)
            path = folder.out / f"part-{block:05d}.parquet"
            if path.is_file():
                entries.append(folder.resumed_entry(path, previous.get(path.name)))
                if progress:
                    progress(last)
                continue
            rows, timings = [], []
            for index in range(first, last):
                row, timing = make_row(env, index, episode_seed(identity["seed"], index))
                folder.write_side_files(_payload_files(env))
                rows.append(row)
                if timing and index not in done_timings:
                    timings.append(timing)
                if progress:
                    progress(index + 1)
            entries.append(write_shard(folder.out, block, rows, {"rows": len(rows)}, schema))
            if timings:
                with timings_path.open("a", encoding="utf-8") as f:
                    f.writelines(json.dumps(t, sort_keys=True) + "\n" for t in timings)
            shards.append(path.name)
            folder.write_manifest(_manifest(identity, entries, folder, complete=False))
        env.close()
        manifest = _manifest(identity, entries, folder, complete=True)
        folder.write_manifest(manifest)
        return manifest
    except BaseException:
        folder.release_if_empty()
        raise
    finally:
        folder.unlock()


def _timing_episodes(path: Path) -> set[int]:
    if not path.is_file():
        return set()
    out = set()
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            out.add(int(json.loads(line)["episode"]))
        except (ValueError, KeyError, TypeError):
            continue
    return out


def _manifest(identity: Mapping[str, Any], entries: list[dict[str, Any]], folder: RunFolder,
              complete: bool) -> dict[str, Any]:
    from vicogym.runs.generate import code_sha256

    rows = sum(e["rows"] for e in entries)
    return {"kind": identity["kind"], "code_sha256": code_sha256(),
            "env": {"id": ENV_ID, "kwargs": identity["env_kwargs"]}, "identity": dict(identity),
            "shards": entries, "files": folder.side_files(), "counts": {"rows": rows, "requested": identity["n"]},
            "complete": complete and rows == identity["n"], "finished": complete}


# -- traces ---------------------------------------------------------------------------------
TRACE_COLUMNS = ("id", "episode", "seed", "task_id", "family", "executor", "score", "outcome", "support_share",
                 "failure", "steps", "pixels_sent", "trace")


def run_traces(tasks: Any, executor: str, out: str | Path, n: int = 32, seed: int = 0, skill: str | None = None,
               env_kwargs: Mapping[str, Any] | None = None, episodes_per_shard: int = 16,
               progress: Callable[[int], None] | None = None) -> dict[str, Any]:
    """Play ``n`` episodes of ``tasks`` with ``executor`` (and the skill in folder
    ``skill``) into the run folder ``out``; resumable. The manifest, with the mean score
    and evidence support by family."""
    import pyarrow as pa

    from vicogym.evidence.executors import make_executor

    _check(n, seed, episodes_per_shard)
    the_skill = load_skill(skill)
    kwargs = {**dict(env_kwargs or {}), **the_skill.env_settings(), "tasks": tasks, "executor": executor}
    runner = make_executor(executor)
    identity = {"kind": "evidence-traces", "env_id": ENV_ID, "seed": seed, "n": n, "env_kwargs": kwargs,
                "executor": executor, "skill": the_skill.to_dict(), "episodes_per_shard": episodes_per_shard}

    def make_row(env: Any, index: int, s: int) -> tuple[dict[str, Any], dict[str, Any]]:
        trace = play(env, runner, seed=s, skill=the_skill)
        trace["episode"] = index
        timing = {"episode": index, **trace["timing"]}
        row = {"id": f"evidence-{identity_digest(identity)}-e{index:07d}", "episode": index, "seed": s,
               "task_id": trace["task"]["id"], "family": trace["task"]["family"], "executor": trace["executor"],
               "score": trace["score"], "outcome": trace["outcome"], "support_share": trace["support"]["share"],
               "failure": trace["failure"] or "", "steps": len(trace["steps"]), "pixels_sent": trace["pixels_sent"],
               "trace": trace_line(trace)}
        return row, timing

    schema = pa.schema([("id", pa.string()), ("episode", pa.int64()), ("seed", pa.int64()), ("task_id", pa.string()),
                      ("family", pa.string()), ("executor", pa.string()), ("score", pa.float64()),
                      ("outcome", pa.string()), ("support_share", pa.float64()), ("failure", pa.string()),
                      ("steps", pa.int64()), ("pixels_sent", pa.int64()), ("trace", pa.string())])
    manifest = _run(out, identity, n, episodes_per_shard, make_row, schema, kwargs, progress)
    manifest["summary"] = summarize(out)
    RunFolder(out).write_manifest(manifest)
    return manifest


def identity_digest(identity: Mapping[str, Any]) -> str:
    return hashlib.sha256(json.dumps(identity, sort_keys=True).encode("utf-8")).hexdigest()[:8]


def read_rows(out: str | Path) -> list[dict[str, Any]]:
    import pyarrow.parquet as pq

    rows: list[dict[str, Any]] = []
    for path in sorted(Path(out).glob("part-*.parquet")):
        rows.extend(pq.read_table(path).to_pylist())
    return rows


def summarize(out: str | Path) -> dict[str, Any]:
    """Mean score, evidence support and failure kinds by family, from a traces run."""
    by: dict[str, dict[str, Any]] = {}
    for row in read_rows(out):
        s = by.setdefault(row["family"], {"episodes": 0, "score": 0.0, "support": 0.0, "failures": {}})
        s["episodes"] += 1
        s["score"] += row["score"]
        s["support"] += row["support_share"]
        if row["failure"]:
            s["failures"][row["failure"]] = s["failures"].get(row["failure"], 0) + 1
    for s in by.values():
        s["score"] = round(s["score"] / s["episodes"], 4)
        s["support"] = round(s["support"] / s["episodes"], 4)
    return by


# -- tasks as rows ----------------------------------------------------------------------------
def generate_tasks(out: str | Path, n: int = 64, seed: int = 0, env_kwargs: Mapping[str, Any] | None = None,
                   episodes_per_shard: int = 16, progress: Callable[[int], None] | None = None) -> dict[str, Any]:
    """Write ``n`` tasks as Parquet rows for multi-turn training: the units as full
    resolution images, the start views as the prompt's images, question, answer, scorer,
    evidence boxes and the task itself; resumable, verified like every run."""
    import pyarrow as pa

    from vicogym.evidence.protocol import ACTIONS, episode_tools_kwargs, tool_contract_text
    from vicogym.images import encode_png
    from vicogym.runs.trainer_columns import IMAGE_TOKEN, TOOL_AGENT, images_type, verl_schema

    _check(n, seed, episodes_per_shard)
    kwargs = dict(env_kwargs or {})
    identity = {"kind": "evidence-tasks", "env_id": ENV_ID, "seed": seed, "n": n, "env_kwargs": kwargs,
                "episodes_per_shard": episodes_per_shard}

    def make_row(env: Any, index: int, s: int) -> tuple[dict[str, Any], dict[str, Any]]:
        env.reset(seed=s)
        task = env.task
        row_id = f"evidence-{identity_digest(identity)}-s{s}-e{index:07d}"
        units = [{"bytes": encode_png(env.unit_pixels(k)), "path": f"{row_id}-u{k}.png"}
                 for k in range(len(task.units))]
        starts = [{"bytes": encode_png(env.view_pixels(v.id)), "path": f"{row_id}-v{v.id}.png"} for v in env.views]
        # the rows are played with tools (agent_name tool_agent): the protocol names the tools
        prompt = (tool_contract_text(env.config.max_regions) + "\n\n" + env.question_text() + "\n"
                  + IMAGE_TOKEN * len(starts))
        truth = json.dumps({"answer": task.answer, "golds": list(task.golds), "scorer": task.scorer,
                            "options": list(task.options)}, sort_keys=True)
        row = {"id": row_id, "episode": index, "seed": s, "task_id": task.id, "family": task.family,
               "question": task.question, "answer": task.answer, "contract": task.contract, "scorer": task.scorer,
               "evidence": json.dumps([e.to_dict() for e in task.evidence], sort_keys=True),
               "task": json.dumps(task.to_dict(), sort_keys=True), "payloads": sorted(env.payloads),
               "start_views": json.dumps([v.to_dict() for v in env.views], sort_keys=True),
               "images": starts, "units": units,
               "data_source": ENV_ID, "prompt": [{"role": "user", "content": prompt}], "ability": "evidence_reading",
               "reward_model": {"style": "rule", "ground_truth": truth},
               "agent_name": TOOL_AGENT,
               "extra_info": {"id": row_id, "index": index, "split": "train", "question": task.question,
                              "answer": task.answer, "label_rule": json.dumps({"family": task.family}),
                              "tools_kwargs": episode_tools_kwargs(s, kwargs, task.id)}}
        return row, {}

    schema = pa.schema([("id", pa.string()), ("episode", pa.int64()), ("seed", pa.int64()), ("task_id", pa.string()),
                      ("family", pa.string()), ("question", pa.string()), ("answer", pa.string()),
                      ("contract", pa.string()), ("scorer", pa.string()), ("evidence", pa.string()),
                      ("task", pa.string()), ("payloads", pa.list_(pa.string())), ("start_views", pa.string()),
                      ("images", images_type()), ("units", images_type()), *list(verl_schema(ACTIONS))])
    return _run(out, identity, n, episodes_per_shard, make_row, schema, kwargs, progress)


# -- verification ------------------------------------------------------------------------------
#: how far (unit pixels) a raster unit's drawn boxes may move when it is drawn again in
#: another process (Blender's mask pass on an anti-aliased edge)
BOX_SLACK = 3.0


def same_task(stored: Mapping[str, Any], fresh: Mapping[str, Any]) -> bool:
    """Whether a task drawn again equals the stored one: exactly, but for what a raster
    unit's drawing records (its PNG's SHA-256 and render facts, compared apart within the
    renderer's tolerance) and its evidence boxes and sizes, within :data:`BOX_SLACK`."""
    a, b = json.loads(json.dumps(stored)), json.loads(json.dumps(fresh))
    raster = {k for k, u in enumerate(a.get("units", [])) if u.get("kind") in ("clevr", "image") and "png" in
              u.get("spec", {})}
    for task in (a, b):
        for unit in task.get("units", []):
            if unit.get("kind") in ("clevr", "image"):
                unit.get("spec", {}).pop("png", None)
                unit.get("spec", {}).pop("facts", None)
    ea, eb = a.pop("evidence", []), b.pop("evidence", [])
    if json.dumps(a, sort_keys=True) != json.dumps(b, sort_keys=True) or len(ea) != len(eb):
        return False
    for x, y in zip(ea, eb):
        if x["unit"] in raster and x["unit"] == y["unit"]:
            near = all(abs(p - q) <= BOX_SLACK for p, q in zip(x["box"] + [x["size"]], y["box"] + [y["size"]]))
            if not near or {k: v for k, v in x.items() if k not in ("box", "size")} != {
                    k: v for k, v in y.items() if k not in ("box", "size")}:
                return False
        elif json.dumps(x, sort_keys=True) != json.dumps(y, sort_keys=True):
            return False
    return True


def _payloads(out: Path, shas: list[str], findings: Findings, where: str) -> dict[str, bytes]:
    found = {}
    for sha in shas:
        path = out / FILES_DIR / f"{sha}.png"
        try:
            data = path.read_bytes()
        except OSError:
            findings.add(where, f"the payload {sha[:12]} is missing from {FILES_DIR}/")
            continue
        if hashlib.sha256(data).hexdigest() != sha:
            findings.add(where, f"{FILES_DIR}/{sha}.png does not hold what its name says (its SHA-256 differs)")
            continue
        found[sha] = data
    return found


def _same_payloads(stored: Mapping[str, bytes], fresh: Mapping[str, bytes], tolerance: int) -> str | None:
    from vicogym.images import decode_png, same_image

    if len(stored) != len(fresh):
        return f"the task has {len(fresh)} raster payloads when redrawn, {len(stored)} stored"
    for (a_sha, a), (b_sha, b) in zip(sorted(stored.items()), sorted(fresh.items())):
        if a_sha != b_sha and not same_image(decode_png(a), decode_png(b), tolerance):
            return f"a raster unit redrawn differs from the stored one beyond {tolerance} levels"
    return None


def verify_run(out: str | Path, images: bool = True, tolerance: int = 8
               ) -> tuple[int, list[tuple[str, str]], list[str]]:
    """:func:`verify_evidence`'s rows read, problems (``(where, why)``) and notes."""
    findings = verify_evidence(out, images, tolerance)
    return findings.rows, findings.problems, findings.notes


def verify_evidence(out: str | Path, images: bool = True, tolerance: int = 8) -> Findings:
    """Verify an evidence run folder (see the module doc): what it found, with a note where
    the code that wrote the run differs from this code."""
    from vicogym.runs.verify import entry_problem

    out = Path(out)
    remedy = "run the same command into a new --out"
    identity = read_json(out / RUN_FILE, remedy)
    if not (isinstance(identity, dict) and identity.get("kind") in KINDS and is_int(identity.get("seed"), 0)
            and is_int(identity.get("n"), 0) and isinstance(identity.get("env_kwargs"), dict)):
        raise RunError(f"{out / RUN_FILE} is damaged: expected an object of kind, seed, n and env_kwargs of an "
                       f"evidence run; {remedy}")
    manifest_path = out / MANIFEST_FILE
    manifest = read_json(manifest_path, remedy) if manifest_path.is_file() else {}
    if not isinstance(manifest, dict) or not isinstance(manifest.get("shards", []), list):
        raise RunError(f"{manifest_path} is damaged: expected an object with a list of shards; {remedy}")
    findings = Findings()
    for entry in manifest.get("shards", []):
        problem = entry_problem(entry)
        if problem:
            findings.add(MANIFEST_FILE, f"shard entry {problem}")
            continue
        problem = shard_problem(out / entry["name"], entry["sha256"])
        if problem:
            findings.add(entry["name"], problem)
    rows = read_rows(out)
    env = _make_env(identity["env_kwargs"])
    seen: set[int] = set()
    try:
        for row in rows:
            findings.rows += 1
            guarded(row, findings, _check_row, out, identity, env, row, seen, images, tolerance, findings)
    finally:
        env.close()
    missing = sorted(set(range(identity["n"])) - seen)
    if manifest.get("complete") and missing:
        findings.add(str(out), f"episodes {missing[:5]} are missing though the manifest says complete")
    note = code_note(manifest.get("code_sha256"))
    if note:
        findings.notes.append(note)
    return findings


def _check_row(out: Path, identity: Mapping[str, Any], env: Any, row: Mapping[str, Any], seen: set[int],
               images: bool, tolerance: int, findings: Findings) -> None:
    """One row: its episode's seed, its task drawn again, its payloads, views and score."""
    where = row["id"]
    if row["episode"] in seen:
        findings.add(where, f"episode {row['episode']} appears twice")
    seen.add(row["episode"])
    if row["seed"] != episode_seed(identity["seed"], row["episode"]):
        findings.add(where, "the row's seed is not the run's seed for its episode")
        return
    traces = identity["kind"] == "evidence-traces"
    record = json.loads(row["trace"] if traces else row["task"])
    task = record["task"] if traces else record
    stored = _payloads(out, record["payloads"] if traces else row["payloads"], findings, where)
    env.reset(seed=row["seed"])  # the task drawn again from the episode's seed
    if not same_task(task, env.task.to_dict()):
        findings.add(where, "the task drawn again from its seed differs from the stored one")
        return
    differs = _same_payloads(stored, env.payloads, tolerance) if images else None
    if differs:
        findings.add(where, differs)
    problem = env.check_task(task)
    if problem:
        findings.add(where, f"the task does not hold: {problem}")
    if images:
        views = (record["start_views"] + [v for s in record["steps"] for v in s["views"]] if traces
                 else json.loads(row["start_views"]))
        for view in views:
            want = view.get("sha256")
            pixels = env.draw_view(task, view, stored)
            if want is not None and pixels_sha256(pixels) != want:
                findings.add(where, f"view {view['id']} rebuilt from the trace differs from the one sent")
    if traces:
        for problem in _check_trace(env, record, row):
            findings.add(where, problem)


def _check_trace(env: Any, trace: Mapping[str, Any], row: Mapping[str, Any]) -> list[str]:
    out = []
    task = trace["task"]
    if trace["outcome"] == "answered":
        score = env.score(task, trace["response"])
        if abs(score - trace["score"]) > 1e-9:
            out.append(f"the answer {trace['response']!r} scores {score}, the trace says {trace['score']}")
    elif trace["score"] != 0.0:
        out.append("an episode that ran out of steps must score 0")
    if abs(row["score"] - trace["score"]) > 1e-9 or row["outcome"] != trace["outcome"]:
        out.append("the row's score or outcome differs from its trace's")
    return out
