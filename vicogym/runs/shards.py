"""Output folders of generation runs: Parquet shards, the run lock and the manifest.

A run folder holds ``part-NNNNN.parquet`` shards (each written to a temporary file and
renamed, so a shard is either whole or absent), ``run.json`` (the settings that fix the
output) and ``manifest.json``, rewritten after every shard, with each shard's row count,
SHA-256 and row hashes, and ``finished`` once the run ends. Files that many rows share (a
natural image's source and mask) are kept once under ``files/``, by names that are a
function of their content, each written before the first shard that needs it, and listed
with its SHA-256 in the manifest. A run that wrote no shard
leaves nothing that blocks a retry with other settings; a resumed run checks every shard
it keeps against the manifest.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any, Iterator

from vicogym.errors import RunError
from vicogym.runs.rounds import check_identity, write_bytes_atomic, write_json_atomic, writing

SHARD_GLOB = "part-*.parquet"
#: the columns a row's content hash covers (the trainer columns are derived from them)
HASHED_COLUMNS = ("id", "env_id", "source_id", "question", "answer", "label_rule", "label", "structure",
                  "seed_structure", "edit_trace", "pass_rate", "pass_rate_before", "reward", "provenance")
#: hashed where a row has them (runs written before rows kept their actor answers keep their hashes)
HASHED_IF_PRESENT = ("actor_answers", "seed_actor_answers")
RUN_FILE = "run.json"
MANIFEST_FILE = "manifest.json"
LOCK_FILE = ".lock"
FILES_DIR = "files"
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

    content = {c: row.get(c) for c in HASHED_COLUMNS} | {c: row[c] for c in HASHED_IF_PRESENT if c in row}
    digest = hashlib.sha256(canonical_json(content).encode("utf-8"))
    images = row.get("images") or [{}]
    digest.update(hashlib.sha256(bytes((images[0] or {}).get("bytes") or b"")).digest())
    for column in ("payloads", "seed_payloads"):
        for item in row.get(column) or []:
            digest.update(str(item["name"]).encode("utf-8") + hashlib.sha256(bytes(item["data"])).digest())
    return digest.hexdigest()


def write_shard(out: Path, block: int, rows: list[dict[str, Any]], stats: dict[str, Any],
                schema: Any) -> dict[str, Any]:
    """Write one shard atomically; its entry for the manifest (name, rows, sha256, and each
    row's content hash)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.Table.from_pylist(rows, schema=schema)
    from vicogym.runs.trainer_columns import hf_features

    table = table.replace_schema_metadata({
        STATS_KEY: json.dumps(stats, sort_keys=True).encode(),
        b"huggingface": json.dumps({"info": {"features": hf_features(schema)}}).encode(),
    })
    path = shard_path(out, block)
    tmp = path.with_suffix(".tmp")
    with writing(path):
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
    """The statistics a shard carries; :class:`RunError` naming the shard when it has none or
    cannot be read."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        meta = pq.read_schema(path).metadata or {}
        return json.loads(meta[STATS_KEY])
    except (pa.ArrowException, OSError, KeyError, ValueError) as exc:
        reason = "it carries no vicogym statistics (rewritten by another tool?)" if isinstance(exc, KeyError) else \
            f"it cannot be read ({str(exc).splitlines()[0]})"
        raise RunError(f"shard {path} is damaged: {reason}; delete it and run the same generate command again to "
                       f"rewrite it") from None


def _is_run_file(name: str) -> bool:
    return name in (RUN_FILE, MANIFEST_FILE, LOCK_FILE, FILES_DIR) or name.endswith(".tmp") or (
        name.startswith("part-") and name.endswith(".parquet"))


def _is_identity(data: Any) -> bool:
    return isinstance(data, dict) and {"env_id", "seed", "n", "env_kwargs"} <= set(data)


class RunFolder:
    """The ``--out`` folder of one run: checks that it is new, empty or a vicogym run, locks
    it against a second writer, ties it to one set of settings once a shard exists, and
    checks the shards a previous run left before resuming from them."""

    def __init__(self, out: str | Path):
        if not str(out).strip():
            raise RunError("--out is empty; name a folder for the run (new, empty, or from an earlier run)")
        self.out = Path(out)
        if self.out.exists() and not self.out.is_dir():
            raise RunError(f"--out {self.out} is an existing file; name a folder (new or from an earlier run)")
        self._lock: Any = None

    def shards(self) -> list[Path]:
        return sorted(self.out.glob(SHARD_GLOB)) if self.out.is_dir() else []

    def _read_json(self, name: str) -> Any:
        path = self.out / name
        try:
            return json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise RunError(f"{path} cannot be read ({exc}); use a new --out") from None

    def check(self, identity: dict[str, Any]) -> None:
        """Refuse, before anything is written, a folder that holds something other than a
        vicogym run, or a run whose shards come from other settings."""
        if not self.out.is_dir():
            return
        names = sorted(entry.name for entry in self.out.iterdir() if entry.name != LOCK_FILE)
        ours = [n for n in names if _is_run_file(n)]
        if (self.out / RUN_FILE).is_file():
            previous = self._read_json(RUN_FILE)
            if not _is_identity(previous):
                raise RunError(f"{self.out / RUN_FILE} is not a vicogym run file; use a new or empty --out")
        elif ours:
            raise RunError(f"{self.out} holds {', '.join(ours)} but no {RUN_FILE}: not a vicogym run; use a new or "
                           f"empty --out")
        else:
            if names:
                raise RunError(f"{self.out} is not empty ({', '.join(names[:5])}{' ...' if len(names) > 5 else ''}); "
                               f"use a new or empty --out")
            return
        if self.shards():
            check_identity(previous, identity, f"{self.out} holds a run with other settings (differing: {{changed}}); "
                           f"use a new --out, or the same settings to resume it")

    def lock(self) -> None:
        """Hold the folder for this process (a second ``generate`` on it is refused)."""
        try:
            self.out.mkdir(parents=True, exist_ok=True)
            handle = (self.out / LOCK_FILE).open("a")
        except OSError as exc:  # a parent that is a file, a read-only or virtual file system
            raise RunError(f"cannot create or write the --out folder {self.out} ({exc.strerror or exc}); name a "
                           f"folder you can write to") from None
        try:
            import fcntl

            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except ImportError:  # no advisory locks on this platform
            pass
        except OSError:
            handle.close()
            raise RunError(f"another vicogym run is writing to {self.out}; wait for it or use another "
                           f"--out") from None
        self._lock = handle

    def unlock(self) -> None:
        """Release the folder; the lock file goes with the lock (a run that finds one left by
        a killed run takes it over: the kernel released the lock with the process)."""
        if self._lock is not None:
            try:
                (self.out / LOCK_FILE).unlink()
            except OSError:
                pass
            self._lock.close()
            self._lock = None

    def open(self, identity: dict[str, Any]) -> dict[str, dict[str, Any]]:
        """Lock and prepare the folder; the manifest entries of the shards a previous run of
        these settings wrote (empty for a new run)."""
        self.check(identity)
        self.lock()
        for stale in [*self.out.glob("*.tmp"), *(self.out / FILES_DIR).rglob("*.tmp")]:
            stale.unlink()
        previous: dict[str, dict[str, Any]] = {}
        if self.shards() and (self.out / MANIFEST_FILE).is_file():
            manifest = self._read_json(MANIFEST_FILE)
            previous = {e["name"]: e for e in manifest.get("shards", []) if isinstance(e, dict) and "name" in e}
        if not self.shards():
            (self.out / MANIFEST_FILE).unlink(missing_ok=True)
        write_json_atomic(self.out / RUN_FILE, identity)
        return previous

    def resumed_entry(self, path: Path, recorded: dict[str, Any] | None) -> dict[str, Any]:
        """The entry of a shard a previous run left: checked against the manifest that
        recorded it, or read whole when the run stopped before recording it."""
        if recorded is not None:
            if file_sha256(path) != recorded.get("sha256"):
                raise RunError(f"shard {path} changed since it was written (its SHA-256 differs from "
                               f"{MANIFEST_FILE}); delete it and run the same generate command again to rewrite it")
            return recorded
        read_shard_stats(path)  # a clear error for a damaged shard
        return shard_entry(path)

    def release_if_empty(self) -> None:
        """After a failed start: remove the settings file (and shared files) when no shard
        was written."""
        if not self.shards():
            (self.out / RUN_FILE).unlink(missing_ok=True)
            if (self.out / FILES_DIR).is_dir():
                import shutil

                shutil.rmtree(self.out / FILES_DIR)

    def side_files(self) -> dict[str, str]:
        """The shared files already in the folder (relative name -> SHA-256)."""
        root = self.out / FILES_DIR
        if not root.is_dir():
            return {}
        return {path.relative_to(root).as_posix(): file_sha256(path) for path in sorted(root.rglob("*"))
                if path.is_file() and not path.name.endswith(".tmp")}

    def write_side_files(self, files: dict[str, bytes]) -> dict[str, str]:
        """Write the shared files not yet in the folder (each to a temporary file, then
        renamed); their names and SHA-256."""
        written = {}
        root = self.out / FILES_DIR
        for name, data in sorted(files.items()):
            path = (root / name).resolve()
            if root.resolve() not in path.parents:
                raise RunError(f"a shared file's name {name!r} leads outside {root}")
            if not path.is_file():
                path.parent.mkdir(parents=True, exist_ok=True)
                write_bytes_atomic(path, data)
            written[name] = hashlib.sha256(data).hexdigest()
        return written

    def write_manifest(self, manifest: dict[str, Any]) -> None:
        write_json_atomic(self.out / MANIFEST_FILE, manifest)


# -- runs kept in object storage -----------------------------------------------------------
def is_url(out: Any) -> bool:
    """Whether ``out`` names a filesystem URL (``s3://bucket/prefix``, ``memory://x``) rather
    than a local folder."""
    text = str(out)
    return "://" in text and not text.startswith("file://")


class Mirror:
    """A run folder at a filesystem URL that fsspec understands, worked on through a local
    staging folder: :meth:`pull` copies what the URL holds (a run to resume) into it, and
    :meth:`push` uploads what changed, each file to a temporary name then moved into place
    (whole or absent, as on a local disk), shards and shared files before ``run.json`` and
    the manifest, so a manifest never lists a shard the URL lacks. No lock guards the URL
    against a second writer."""

    ORDER = {RUN_FILE: 1, MANIFEST_FILE: 2}

    def __init__(self, url: str, staging: Path):
        import fsspec

        try:
            self.fs, self.root = fsspec.core.url_to_fs(url)
        except (ValueError, ImportError) as exc:
            raise RunError(f"--out {url}: {exc}; install the fsspec package for its scheme (e.g. s3fs for s3://) "
                           f"or give a local folder") from None
        self.url, self.staging = url, Path(staging)
        self._pushed: dict[str, tuple[int, int]] = {}

    def _remote(self, name: str) -> str:
        return f"{self.root.rstrip('/')}/{name}"

    def pull(self) -> Path:
        """Copy the run the URL holds, if any, into the staging folder; the staging folder."""
        self.staging.mkdir(parents=True, exist_ok=True)
        if self.fs.exists(self.root) and not self.fs.isdir(self.root):
            raise RunError(f"--out {self.url} is an existing file; name a folder (new or from an earlier run)")
        if self.fs.isdir(self.root):
            for remote in self.fs.find(self.root):
                name = remote[len(self.root.rstrip("/")) + 1:]
                local = self.staging / name
                local.parent.mkdir(parents=True, exist_ok=True)
                self.fs.get_file(remote, str(local))
                self._pushed[name] = self._stamp(local)
        return self.staging

    @staticmethod
    def _stamp(path: Path) -> tuple[int, int]:
        stat = path.stat()
        return stat.st_mtime_ns, stat.st_size

    def push(self) -> None:
        """Upload what changed in the staging folder since the last push, remove what
        was removed there."""
        current = {p.relative_to(self.staging).as_posix(): self._stamp(p) for p in self.staging.rglob("*")
                   if p.is_file() and p.name != LOCK_FILE and not p.name.endswith(".tmp")}
        changed = sorted((n for n, s in current.items() if self._pushed.get(n) != s),
                         key=lambda n: (self.ORDER.get(n, 0), n))
        for name in changed:
            tmp = self._remote(name + ".tmp")
            self.fs.put_file(str(self.staging / name), tmp)
            self.fs.mv(tmp, self._remote(name))
            self._pushed[name] = current[name]
        for name in sorted(set(self._pushed) - set(current)):
            if self.fs.exists(self._remote(name)):
                self.fs.rm(self._remote(name))
            del self._pushed[name]


@contextlib.contextmanager
def local_run(out: Any) -> Iterator[Path]:
    """A run folder to read: ``out`` itself, or for a URL a local copy of what it holds
    (removed afterwards)."""
    if not is_url(out):
        yield Path(out)
        return
    with tempfile.TemporaryDirectory(prefix="vicogym-run-") as tmp:
        mirror = Mirror(str(out), Path(tmp) / "run")
        if not mirror.fs.isdir(mirror.root):
            raise RunError(f"{out} is not a folder written by `vicogym generate`")
        yield mirror.pull()
