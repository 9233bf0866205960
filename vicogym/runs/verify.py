"""Independent verification of a generation run's folder (``vicogym verify``).

Checks the folder against its manifest (every shard present, unchanged and of the
recorded length; no shard the manifest does not list), then every row: a unique id, its
content hash as recorded, trainer columns that agree with the label columns, the label
re-derived and the question checked by the row's own arm (dispatched on ``env_id``), the
structure rendered again and compared pixel for pixel with the stored image (which must
decode), the arm's answerability checks on that render, and the whole episode replayed:
the seed drawn again from the recorded seed (from the run's source, or from ``source``)
and every recorded edit applied again, which must give the stored seed, question, rule,
structure and answer. Shared files (``files/``) must be those the manifest lists, with
their recorded SHA-256; an arm reads them (a natural image's source and mask) only after
that check. Any problem is reported; nothing is trusted because it is stored.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

from vicogym.arm import payload_dict
from vicogym.errors import InvalidEdit, MissingExtra, RunError, UnknownEnvironment
from vicogym.images import decode_png, row_png, same_image
from vicogym.runs.shards import FILES_DIR, MANIFEST_FILE, SHARD_GLOB, RunFolder, file_sha256, local_run, row_hash
from vicogym.runs.trainer_columns import verl_mismatch


@dataclass
class Findings:
    """What verification found: rows read, (where, reason) for each problem, and notes on
    checks that could not run (a source folder that is not on this machine)."""

    rows: int = 0
    problems: list[tuple[str, str]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems

    def add(self, where: str, reason: str) -> None:
        self.problems.append((where, reason))


def read_manifest(out: Path) -> dict[str, Any]:
    if not out.is_dir():
        raise RunError(f"{out} is not a folder written by `vicogym generate`")
    path = out / MANIFEST_FILE
    if not path.is_file():
        hint = ("the run did not finish: run the same generate command again to resume it"
                if any(out.glob(SHARD_GLOB)) else "it holds no generation run")
        raise RunError(f"{out} has no {MANIFEST_FILE}; {hint}")
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
        shards = manifest["shards"]
        if not all(isinstance(s, dict) and {"name", "rows", "sha256"} <= set(s) for s in shards):
            raise KeyError("shards")
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise RunError(f"{path} is damaged ({type(exc).__name__}: {exc}); regenerate into a new --out") from None
    return manifest


def _read_shard(path: Path, findings: Findings) -> list[dict[str, Any]] | None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        return pq.read_table(path).to_pylist()
    except (pa.ArrowException, OSError) as exc:
        findings.add(path.name, f"cannot be read ({type(exc).__name__}: {str(exc).splitlines()[0]}); "
                   f"delete it and run the generate command again to rewrite it")
        return None


class _Arms:
    """One arm (and, for replays, one environment) per env id, built from the run's
    settings; with ``source``, that folder replaces the run's source."""

    def __init__(self, manifest: dict[str, Any], findings: Findings, source: str | None = None,
                 files: Path | None = None):
        kwargs = dict(manifest.get("config", {}).get("env_kwargs", {}))
        if source is not None:
            kwargs["source"] = str(source)
        self._kwargs = {manifest.get("env", {}).get("id"): kwargs}
        self._source, self._findings, self._files = source, findings, files
        self._arms: dict[str, Any] = {}
        self._envs: dict[str, Any] = {}

    def get(self, env_id: str) -> Any:
        if env_id not in self._arms:
            from vicogym.registry import make_arm

            arm = make_arm(env_id, self._kwargs.get(env_id))
            if self._files is not None:
                arm.attach_run(self._files)
            self._arms[env_id] = arm
        return self._arms[env_id]

    def env(self, env_id: str) -> Any:
        """An environment that draws the run's seeds again, or ``None`` where its source
        cannot be opened here (noted; an error when ``source`` was given)."""
        if env_id not in self._envs:
            import gymnasium as gym

            from vicogym.errors import SourceError

            kwargs = dict(self._kwargs.get(env_id) or {}, k=1, actor="simulated", **self.get(env_id).replay_settings())
            try:
                self._envs[env_id] = gym.make(env_id, **kwargs).unwrapped
            except (SourceError, OSError) as exc:
                if self._source is not None:
                    raise
                self._findings.notes.append(f"{env_id}: episodes not replayed, the run's source cannot be opened here "
                                          f"({exc}); pass --source DIR to replay them")
                self._envs[env_id] = None
        return self._envs[env_id]

    def close(self) -> None:
        for arm in self._arms.values():
            arm.close()
        for env in self._envs.values():
            if env is not None:
                env.close()


def verify(out: str | Path, *, images: bool = True, source: str | Path | None = None) -> Findings:
    """Check every shard and row of the run in ``out``; a :class:`Findings`. ``images=False``
    skips decoding and re-rendering; ``source`` compares rows with that source folder.
    ``out`` may be a filesystem URL (``s3://bucket/prefix``): a local copy is checked."""
    with local_run(out) as folder:
        return _verify(folder, images, source)


def _verify(out: Path, images: bool, source: str | Path | None) -> Findings:
    manifest = read_manifest(out)
    findings = Findings()
    listed = {s["name"]: s for s in manifest["shards"]}
    for path in sorted(out.glob(SHARD_GLOB)):
        if path.name not in listed:
            findings.add(path.name, "is not in the manifest (a shard from elsewhere, or a copy)")
    files_ok = _check_side_files(out, manifest, findings)
    arms = _Arms(manifest, findings, None if source is None else str(source), out / FILES_DIR if files_ok else None)
    seen: dict[str, str] = {}
    try:
        for name, entry in listed.items():
            path = out / name
            if not path.is_file():
                findings.add(name,
                             f"is missing ({entry['rows']} rows lost); run the generate command again to rewrite it")
                continue
            if file_sha256(path) != entry["sha256"]:
                findings.add(name, "changed since it was written (SHA-256 differs from the manifest)")
            rows = _read_shard(path, findings)
            if rows is None:
                continue
            if len(rows) != entry["rows"]:
                findings.add(name, f"holds {len(rows)} rows, the manifest recorded {entry['rows']}")
            hashes = entry.get("row_hashes") or {}
            for row in rows:
                findings.rows += 1
                recorded = hashes.get(str(row.get("id")))
                if recorded is None:
                    findings.add(str(row.get("id")), f"is not among the rows the manifest records for {name}")
                elif recorded != row_hash(row):
                    findings.add(str(row.get("id")), "content differs from the hash recorded at generation")
                _check_row(row, name, seen, arms, findings, images)
    finally:
        arms.close()
    if manifest.get("finished") is False:
        findings.add(MANIFEST_FILE, "the run did not finish (interrupted); run the same generate command again to "
                   "complete it")
    expected = manifest.get("counts", {}).get("samples")
    if findings.rows != expected:
        findings.add(MANIFEST_FILE, f"records {expected} samples, the shards hold {findings.rows}")
    if findings.rows == 0:
        findings.add(str(out), "holds no rows")
    return findings


def _check_side_files(out: Path, manifest: dict[str, Any], findings: Findings) -> bool:
    """Whether every shared file is present and as the manifest recorded it (and no other)."""
    listed = manifest.get("files") or {}
    if not isinstance(listed, dict):
        findings.add(MANIFEST_FILE, "its files entry is not a mapping of names to SHA-256")
        return False
    stored, ok = RunFolder(out).side_files(), True
    for name, digest in sorted(listed.items()):
        if name not in stored:
            findings.add(f"{FILES_DIR}/{name}", "is missing; rows that share it cannot be checked")
            ok = False
        elif stored[name] != digest:
            findings.add(f"{FILES_DIR}/{name}", "changed since it was written (SHA-256 differs from the manifest)")
            ok = False
    for name in sorted(set(stored) - set(listed)):
        findings.add(f"{FILES_DIR}/{name}", "is not in the manifest")
    return ok


def run_arm(run: Path, manifest: dict[str, Any]) -> Any:
    """The arm of a run's environment, built from the run's settings, with the run's shared
    files attached (for exports and reports of a folder verify has not vouched for)."""
    from vicogym.registry import make_arm

    arm = make_arm(manifest["env"]["id"], manifest["config"]["env_kwargs"])
    if (Path(run) / FILES_DIR).is_dir():
        arm.attach_run(Path(run) / FILES_DIR)
    return arm


def _check_row(row: dict[str, Any], shard: str, seen: dict[str, str], arms: _Arms, findings: Findings,
               images: bool) -> None:
    row_id = str(row.get("id"))
    if row_id in seen:
        findings.add(row_id, f"appears twice ({seen[row_id]} and {shard})")
        return
    seen[row_id] = shard
    missing = [c for c in ("env_id", "images", "question", "answer", "label_rule", "label",
                           "structure") if c not in row]
    if missing:
        findings.add(row_id, f"lacks columns {missing}")
        return
    try:
        arm = arms.get(row["env_id"])
    except (UnknownEnvironment, MissingExtra, ValueError, TypeError, OSError) as exc:
        findings.add(row_id, f"cannot be checked: {exc}")
        return
    problem = verl_mismatch(row, arm.export) or _reward_problem(row, arm) or arm.verify_row(row)
    if problem is None:
        env = arms.env(row["env_id"])
        problem = None if env is None else _replay_problem(row, env)
    if problem is None and images:
        problem = _image_problem(row, arm)
    if problem:
        findings.add(row_id, problem)


def _reward_problem(row: dict[str, Any], arm: Any) -> str | None:
    from vicogym.rewards import difficulty_reward

    try:
        expected = difficulty_reward(float(row["pass_rate"]), arm.config.reward_config())
    except (KeyError, TypeError, ValueError) as exc:
        return f"pass_rate cannot be read ({exc})"
    if row.get("reward") != expected:
        return f"reward {row.get('reward')!r} differs from the reward {expected!r} of its pass rate"
    if not 0.0 <= float(row.get("pass_rate_before", -1)) <= 1.0:
        return f"pass_rate_before {row.get('pass_rate_before')!r} is not a pass rate"
    return None


def _replay_problem(row: dict[str, Any], env: Any) -> str | None:
    """Draw the row's seed again and apply its recorded edits: every stored label-bearing
    column must come out the same."""
    from vicogym.core import Edit
    from vicogym.errors import GenerationError

    arm = env.arm
    try:
        provenance = json.loads(row["provenance"])
        trace = json.loads(row["edit_trace"])
        _, info = env.reset(seed=int(provenance["seed"]))
    except (ValueError, TypeError, KeyError, GenerationError) as exc:
        return f"the episode cannot be replayed from its provenance ({type(exc).__name__}: {exc})"
    seed = info["sample"]
    if arm.encode(seed.structure)[0] != row.get("seed_structure"):
        return "seed_structure differs from the seed its provenance draws"
    if seed.question != row["question"]:
        return f"question differs from the seed's question {seed.question!r}"
    if json.loads(row["label"]) != seed.label_rule:
        return "label differs from the seed's label rule"
    if seed.provenance.source_id != row.get("source_id"):
        return f"source_id differs from the seed's {seed.provenance.source_id!r}"
    structure, answer = seed.structure, seed.answer
    try:
        for entry in trace:
            structure = arm.apply(structure, Edit.parse(entry["edit"]), seed.label_rule)
            answer = arm.relabel(structure, seed.label_rule)
            if answer != entry.get("answer"):
                return (f"edit of turn {entry.get('turn')} gives the answer {answer!r}, "
                        f"the trace says {entry.get('answer')!r}")
    except (InvalidEdit, ValueError, TypeError, KeyError) as exc:
        return f"the recorded edits do not apply again: {exc}"
    if arm.encode(structure)[0] != row["structure"]:
        return "structure differs from the seed with the recorded edits applied"
    if answer != row["answer"]:
        return f"answer {row['answer']!r} differs from the replayed answer {answer!r}"
    return None


def _image_problem(row: dict[str, Any], arm: Any) -> str | None:
    """Decode the stored image, render the stored structure again, compare, and re-run the
    arm's answerability checks on the render."""
    try:
        stored = decode_png(row_png(row))
    except ValueError as exc:
        return f"image does not decode ({exc})"
    try:
        structure = arm.decode(row["structure"], payload_dict(row.get("payloads")))
        render = arm.render_checked(structure, json.loads(row["label"]))
    except InvalidEdit as exc:
        return f"a reader could not answer from this image: {exc}"
    except (ValueError, TypeError, KeyError) as exc:
        return f"structure cannot be rendered again: {exc}"
    if not same_image(stored, render.image, arm.pixel_tolerance):
        return "image differs from a fresh render of the stored structure (swapped or edited pixels)"
    return None


def iter_rows(out: str | Path, columns: list[str] | None = None) -> Iterator[dict[str, Any]]:
    """Every row of the shards in ``out`` (for reading results, not for verification)."""
    import pyarrow.parquet as pq

    shards = sorted(Path(out).glob(SHARD_GLOB))
    if not shards:
        raise RunError(f"no {SHARD_GLOB} shards in {out}")
    for path in shards:
        yield from pq.read_table(path, columns=columns).to_pylist()
