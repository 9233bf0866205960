"""Independent verification of a generation run's folder (``vicogym verify``).

Checks the folder against its manifest (every shard present, unchanged and of the
recorded length; no shard the manifest does not list), then every row: a unique id,
an image that decodes, trainer columns that agree with the label columns, and the label
re-derived by the row's own arm (dispatched on ``env_id``). Any problem is reported;
nothing is trusted because it is stored.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

from vicogym.errors import MissingExtra, RunError, UnknownEnvironment
from vicogym.exporters import verl_mismatch
from vicogym.images import decode_png
from vicogym.shards import MANIFEST_FILE, SHARD_GLOB, file_sha256


@dataclass
class Report:
    """What verification found: rows read, and (where, reason) for each problem."""

    rows: int = 0
    problems: list[tuple[str, str]] = field(default_factory=list)

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


def _read_shard(path: Path, report: Report) -> list[dict[str, Any]] | None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        return pq.read_table(path).to_pylist()
    except (pa.ArrowException, OSError) as exc:
        report.add(path.name, f"cannot be read ({type(exc).__name__}: {str(exc).splitlines()[0]}); "
                   f"delete it and run the generate command again to rewrite it")
        return None


class _Arms:
    """One arm per env id, built from the run's settings, for re-deriving labels."""

    def __init__(self, manifest: dict[str, Any]):
        self._kwargs = {manifest.get("env", {}).get("id"): manifest.get("config", {}).get("env_kwargs", {})}
        self._arms: dict[str, Any] = {}

    def get(self, env_id: str) -> Any:
        if env_id not in self._arms:
            from vicogym.registry import make_arm

            self._arms[env_id] = make_arm(env_id, self._kwargs.get(env_id))
        return self._arms[env_id]

    def close(self) -> None:
        for arm in self._arms.values():
            arm.close()


def verify(out: str | Path, *, images: bool = True) -> Report:
    """Check every shard and row of the run in ``out``; a :class:`Report`."""
    out = Path(out)
    manifest = read_manifest(out)
    report = Report()
    listed = {s["name"]: s for s in manifest["shards"]}
    for path in sorted(out.glob(SHARD_GLOB)):
        if path.name not in listed:
            report.add(path.name, "is not in the manifest (a shard from elsewhere, or a copy)")
    arms = _Arms(manifest)
    seen: dict[str, str] = {}
    try:
        for name, entry in listed.items():
            path = out / name
            if not path.is_file():
                report.add(name, f"is missing ({entry['rows']} rows lost); run the generate command again to rewrite it")
                continue
            if file_sha256(path) != entry["sha256"]:
                report.add(name, "changed since it was written (SHA-256 differs from the manifest)")
            rows = _read_shard(path, report)
            if rows is None:
                continue
            if len(rows) != entry["rows"]:
                report.add(name, f"holds {len(rows)} rows, the manifest recorded {entry['rows']}")
            for row in rows:
                report.rows += 1
                _check_row(row, name, seen, arms, report, images)
    finally:
        arms.close()
    expected = manifest.get("counts", {}).get("samples")
    if report.rows != expected:
        report.add(MANIFEST_FILE, f"records {expected} samples, the shards hold {report.rows}")
    if report.rows == 0:
        report.add(str(out), "holds no rows")
    return report


def _check_row(row: dict[str, Any], shard: str, seen: dict[str, str], arms: _Arms, report: Report,
               images: bool) -> None:
    row_id = str(row.get("id"))
    if row_id in seen:
        report.add(row_id, f"appears twice ({seen[row_id]} and {shard})")
        return
    seen[row_id] = shard
    missing = [c for c in ("env_id", "image", "question", "answer", "label_rule", "label", "structure") if c not in row]
    if missing:
        report.add(row_id, f"lacks columns {missing}")
        return
    if images:
        try:
            decode_png(row["image"])
        except ValueError as exc:
            report.add(row_id, f"image does not decode ({exc})")
            return
    try:
        arm = arms.get(row["env_id"])
    except (UnknownEnvironment, MissingExtra, ValueError, TypeError) as exc:
        report.add(row_id, f"cannot be checked: {exc}")
        return
    problem = verl_mismatch(row, arm.export) or arm.verify_row(row)
    if problem:
        report.add(row_id, problem)


def iter_rows(out: str | Path, columns: list[str] | None = None) -> Iterator[dict[str, Any]]:
    """Every row of the shards in ``out`` (for reading results, not for verification)."""
    import pyarrow.parquet as pq

    shards = sorted(Path(out).glob(SHARD_GLOB))
    if not shards:
        raise RunError(f"no {SHARD_GLOB} shards in {out}")
    for path in shards:
        yield from pq.read_table(path, columns=columns).to_pylist()
