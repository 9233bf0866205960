"""Output folders of generation runs: Parquet shards, the run lock and the manifest.

A run folder holds ``part-NNNNN.parquet`` shards (each written to a temporary file and
renamed, so a shard is either whole or absent), ``run.json`` (the settings that fix the
output, written with the first shard) and, when the run ends, ``manifest.json`` with
each shard's row count and SHA-256. A run that wrote no shard leaves nothing that
blocks a retry with other settings.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

from vicogym.errors import RunError

SHARD_GLOB = "part-*.parquet"
#: the columns a row's content hash covers (the trainer columns are derived from them)
HASHED_COLUMNS = ("id", "env_id", "source_id", "question", "answer", "label_rule", "label", "structure",
                  "seed_structure", "edit_trace", "pass_rate", "pass_rate_before", "reward", "provenance")
RUN_FILE = "run.json"
MANIFEST_FILE = "manifest.json"
STATS_KEY = b"vicogym_stats"


def shard_path(out: Path, block: int) -> Path:
    return out / f"part-{block:05d}.parquet"


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def row_hash(row: dict[str, Any]) -> str:
    """SHA-256 of a row's content: its label-bearing columns, its image and its payloads."""
    from vicogym.core import canonical_json

    digest = hashlib.sha256(canonical_json({c: row.get(c) for c in HASHED_COLUMNS}).encode("utf-8"))
    digest.update(hashlib.sha256(bytes(row.get("image") or b"")).digest())
    for column in ("payloads", "seed_payloads"):
        for item in row.get(column) or []:
            digest.update(str(item["name"]).encode("utf-8") + hashlib.sha256(bytes(item["data"])).digest())
    return digest.hexdigest()


def write_json_atomic(path: Path, data: Any) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data, indent=1, sort_keys=True), encoding="utf-8")
    os.replace(tmp, path)


def write_shard(out: Path, block: int, rows: list[dict[str, Any]], stats: dict[str, Any], schema: Any) -> dict[str, Any]:
    """Write one shard atomically; its entry for the manifest (name, rows, sha256, and each
    row's content hash)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.Table.from_pylist(rows, schema=schema)
    table = table.replace_schema_metadata({STATS_KEY: json.dumps(stats, sort_keys=True).encode()})
    path = shard_path(out, block)
    tmp = path.with_suffix(".tmp")
    pq.write_table(table, tmp, compression="zstd")
    os.replace(tmp, path)
    return {"name": path.name, "rows": len(rows), "sha256": file_sha256(path),
            "row_hashes": {row["id"]: row_hash(row) for row in rows}}


def shard_entry(path: Path) -> dict[str, Any]:
    """The manifest entry of a complete shard already on disk (a resumed run)."""
    import pyarrow.parquet as pq

    rows = pq.read_table(path).to_pylist()
    return {"name": path.name, "rows": len(rows), "sha256": file_sha256(path),
            "row_hashes": {row["id"]: row_hash(row) for row in rows}}


def read_shard_stats(path: Path) -> dict[str, Any]:
    import pyarrow.parquet as pq

    meta = pq.read_schema(path).metadata or {}
    return json.loads(meta[STATS_KEY])


class RunFolder:
    """The ``--out`` folder of one run: checks it, locks it to one set of settings once a
    shard exists, and finds the complete shards a crashed run left."""

    def __init__(self, out: str | Path):
        self.out = Path(out)
        if self.out.exists() and not self.out.is_dir():
            raise RunError(f"--out {self.out} is an existing file; name a folder (new or from an earlier run)")

    def shards(self) -> list[Path]:
        return sorted(self.out.glob(SHARD_GLOB)) if self.out.is_dir() else []

    def check(self, identity: dict[str, Any]) -> None:
        """Refuse a folder whose shards come from other settings (before writing anything)."""
        run_path = self.out / RUN_FILE
        if not self.shards() or not run_path.is_file():
            return
        try:
            previous = json.loads(run_path.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as exc:
            raise RunError(f"{run_path} cannot be read ({exc}); use a new --out or delete the folder") from None
        if previous != identity:
            changed = sorted(k for k in set(previous) | set(identity) if previous.get(k) != identity.get(k))
            raise RunError(f"{self.out} holds a run with other settings (differing: {', '.join(changed)}); "
                           f"use a new --out, or the same settings to resume it")

    def open(self, identity: dict[str, Any]) -> None:
        """Create the folder, drop leftovers of a crash, and record the settings."""
        self.check(identity)
        self.out.mkdir(parents=True, exist_ok=True)
        for stale in self.out.glob("*.tmp"):
            stale.unlink()
        if not self.shards():
            (self.out / MANIFEST_FILE).unlink(missing_ok=True)
        write_json_atomic(self.out / RUN_FILE, identity)

    def release_if_empty(self) -> None:
        """After a failed start: remove the lock when no shard was written."""
        if not self.shards():
            (self.out / RUN_FILE).unlink(missing_ok=True)

    def write_manifest(self, manifest: dict[str, Any]) -> None:
        write_json_atomic(self.out / MANIFEST_FILE, manifest)
