"""Output folders of generation runs: Parquet shards, the run lock and the manifest.

A run folder (a local folder, or a filesystem URL fsspec understands: :class:`Store`)
holds ``part-NNNNN.parquet`` shards (each written to a temporary name and moved into
place, so a shard is either whole or absent), ``run.json`` (the settings that fix the
output), the manifest's shard entries under ``entries/`` (``entries/part-NNNNN.json``, one
small file per shard with its row count, SHA-256, row hashes, episodes, statistics and
shared files, written once when the shard is committed: recording a shard costs the same
at the first shard and the millionth) and ``manifest.json``, the run's summary (settings,
counts, histograms, ``finished``), written when the run starts and when it ends. Files
that many rows share (a natural image's source and mask) are kept once under ``files/``,
by names that are a function of their content, each in place before the first shard that
needs it. Workers write their shards and shared files under ``.pending/``; the run commits
them in block order (moved into place, then the entry written), so blocks a worker made
ahead of a run that stopped never stand beside the run's shards. A run that wrote no
shard leaves nothing that blocks a retry with other settings; a resumed run checks every
shard it keeps against its entry.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
import uuid
from collections.abc import Callable, Container, Iterator
from pathlib import Path
from typing import Any

from vicogym.errors import RunError
from vicogym.runs.rounds import check_identity, writing

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
ENTRIES_DIR = "entries"
PENDING_DIR = ".pending"
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


def shard_table(rows: list[dict[str, Any]], stats: dict[str, Any], schema: Any) -> Any:
    """The Arrow table of one shard: its rows, with its statistics and the Hugging Face
    features in the schema's metadata."""
    import pyarrow as pa

    from vicogym.runs.trainer_columns import hf_features

    table = pa.Table.from_pylist(rows, schema=schema)
    return table.replace_schema_metadata({
        STATS_KEY: json.dumps(stats, sort_keys=True).encode(),
        b"huggingface": json.dumps({"info": {"features": hf_features(schema)}}).encode(),
    })


def shard_entry_of(name: str, rows: list[dict[str, Any]], sha256: str) -> dict[str, Any]:
    return {"name": name, "rows": len(rows), "sha256": sha256,
            "row_hashes": {row["id"]: row_hash(row) for row in rows}}


def write_shard(out: Path, block: int, rows: list[dict[str, Any]], stats: dict[str, Any],
                schema: Any) -> dict[str, Any]:
    """Write one shard into the local folder ``out`` atomically; its entry for the manifest
    (name, rows, sha256, and each row's content hash)."""
    import pyarrow.parquet as pq

    path = shard_path(out, block)
    tmp = path.with_suffix(".tmp")
    with writing(path):
        pq.write_table(shard_table(rows, stats, schema), tmp, compression="zstd")
        os.replace(tmp, path)
    return shard_entry_of(path.name, rows, file_sha256(path))


def _is_run_file(name: str) -> bool:
    return name in (RUN_FILE, MANIFEST_FILE, LOCK_FILE, FILES_DIR, ENTRIES_DIR, PENDING_DIR) or \
        name.endswith(".tmp") or (name.startswith("part-") and name.endswith(".parquet"))


def _is_identity(data: Any) -> bool:
    return isinstance(data, dict) and {"env_id", "seed", "n", "env_kwargs"} <= set(data)


class Store:
    """Where a run's files are kept: a local folder, or a filesystem URL that fsspec
    understands (``s3://bucket/prefix``, ``gs://...``, ``memory://...``). Every file is
    written to a temporary name of its own (two writers of one name never share one) and
    moved into place, so a reader finds it whole or absent."""

    def __init__(self, location: str | Path):
        self.location = str(location)
        self.url = is_url(location)
        if self.url:
            import fsspec

            try:
                self.fs, root = fsspec.core.url_to_fs(self.location)
            except (ValueError, ImportError) as exc:
                raise RunError(f"--out {location}: {exc}; install the fsspec package for its scheme (e.g. s3fs for "
                               f"s3://) or give a local folder") from None
            self.root = root.rstrip("/")
        else:
            from fsspec.implementations.local import LocalFileSystem

            self.fs = LocalFileSystem(auto_mkdir=True)
            self.root = Path(location).absolute().as_posix().rstrip("/")

    @property
    def in_process(self) -> bool:
        """Whether the store lives in this process alone (``memory://``): other processes
        cannot write to it."""
        return "memory" in (self.fs.protocol if isinstance(self.fs.protocol, tuple) else (self.fs.protocol,))

    def path(self, name: str) -> str:
        return f"{self.root}/{name}" if name else self.root

    def exists(self, name: str) -> bool:
        return self.fs.exists(self.path(name))

    def names(self, folder: str = "") -> list[str]:
        """The names directly in ``folder`` of the store (files and folders), sorted."""
        path = self.path(folder)
        if not self.fs.isdir(path):
            return []
        return sorted(entry.rstrip("/").rsplit("/", 1)[-1] for entry in self.fs.ls(path, detail=False))

    def read_bytes(self, name: str) -> bytes:
        return self.fs.cat_file(self.path(name))

    def sha256(self, name: str) -> str:
        digest = hashlib.sha256()
        with self.fs.open(self.path(name), "rb") as handle:
            for chunk in iter(lambda: handle.read(1 << 20), b""):
                digest.update(chunk)
        return digest.hexdigest()

    def write(self, name: str, write: Callable[[Any], None]) -> None:
        """Write ``name`` whole: ``write`` fills a temporary file, which is then moved into place."""
        tmp = self.path(f"{name}.{uuid.uuid4().hex[:12]}.tmp")
        with writing(Path(self.path(name))):
            self._parent(tmp)
            with self.fs.open(tmp, "wb") as handle:
                write(handle)
            self._move(tmp, self.path(name))

    def write_bytes(self, name: str, data: bytes) -> None:
        self.write(name, lambda handle: handle.write(data))

    def move(self, source: str, target: str) -> None:
        with writing(Path(self.path(target))):
            self._move(self.path(source), self.path(target))

    def _move(self, source: str, target: str) -> None:
        self._parent(target)
        if self.url:
            self.fs.mv(source, target)
        else:
            os.replace(source, target)

    def _parent(self, path: str) -> None:
        """Make the folder ``path`` is in (object stores have none to make)."""
        if self.url:
            self.fs.makedirs(path.rsplit("/", 1)[0], exist_ok=True)
        else:
            Path(path).parent.mkdir(parents=True, exist_ok=True)

    def remove(self, name: str, recursive: bool = False) -> None:
        if self.exists(name):
            self.fs.rm(self.path(name), recursive=recursive)


class RunFolder:
    """The ``--out`` folder of one run (a local folder or a URL: :class:`Store`): checks
    that it is new, empty or a vicogym run, locks a local one against a second writer, ties
    it to one set of settings once a shard exists, and checks the shards a previous run
    left before resuming from them."""

    def __init__(self, out: str | Path):
        if not str(out).strip():
            raise RunError("--out is empty; name a folder for the run (new, empty, or from an earlier run)")
        self.store = Store(out)
        self.out = Path(out)
        if self.store.url:
            if self.store.fs.exists(self.store.root) and not self.store.fs.isdir(self.store.root):
                raise RunError(f"--out {out} is an existing file; name a folder (new or from an earlier run)")
        elif self.out.exists() and not self.out.is_dir():
            raise RunError(f"--out {self.out} is an existing file; name a folder (new or from an earlier run)")
        self._lock: Any = None

    @property
    def where(self) -> str:
        return self.store.location

    def shards(self) -> list[str]:
        """The names of the shards in the folder, in block order."""
        return [n for n in self.store.names() if n.startswith("part-") and n.endswith(".parquet")]

    def _read_json(self, name: str) -> Any:
        try:
            return json.loads(self.store.read_bytes(name).decode("utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise RunError(f"{self.store.path(name)} cannot be read ({exc}); use a new --out") from None

    def check(self, identity: dict[str, Any], growable: tuple[str, ...] = ()) -> dict[str, Any] | None:
        """Refuse, before anything is written, a folder that holds something other than a
        vicogym run, or a run whose shards come from other settings (``growable`` ones may
        differ); the settings the folder recorded, if any."""
        names = [n for n in self.store.names() if n != LOCK_FILE]
        ours = [n for n in names if _is_run_file(n)]
        if RUN_FILE in names:
            previous = self._read_json(RUN_FILE)
            if not _is_identity(previous):
                raise RunError(f"{self.store.path(RUN_FILE)} is not a vicogym run file; use a new or empty --out")
        elif ours:
            raise RunError(f"{self.where} holds {', '.join(ours)} but no {RUN_FILE}: not a vicogym run; use a new or "
                           f"empty --out")
        else:
            if names:
                raise RunError(f"{self.where} is not empty ({', '.join(names[:5])}{' ...' if len(names) > 5 else ''}); "
                               f"use a new or empty --out")
            return None
        if not self.shards():
            return None
        check_identity(previous, identity, f"{self.where} holds a run with other settings (differing: {{changed}}); "
                       f"use a new --out, or the same settings to resume it", growable)
        return previous

    def lock(self) -> None:
        """Hold a local folder for this process (a second ``generate`` on it is refused);
        no lock guards a URL against a second writer."""
        if self.store.url:
            return
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
            with contextlib.suppress(OSError):
                (self.out / LOCK_FILE).unlink()
            self._lock.close()
            self._lock = None

    def open(self, identity: dict[str, Any], growable: tuple[str, ...] = ()) -> dict[str, dict[str, Any]]:
        """Lock and prepare the folder (what workers left pending and temporary files go);
        the manifest entries a manifest of the list form (runs from before entries were
        files) records, by shard name."""
        self.check(identity, growable)
        self.lock()
        self.clear_pending()
        for folder in ("", FILES_DIR, ENTRIES_DIR):
            for name in self.store.names(folder):
                path = f"{folder}/{name}" if folder else name
                # the run's temporary files only: a folder is another writer's (a checkpoint that
                # vicogym evolve's trainer is making in ROUND/actor-model.tmp)
                if name.endswith(".tmp") and not self.store.fs.isdir(self.store.path(path)):
                    self.store.remove(path)
        previous: dict[str, dict[str, Any]] = {}
        if self.shards() and self.store.exists(MANIFEST_FILE):
            listed = self._read_json(MANIFEST_FILE).get("shards")
            if isinstance(listed, list):
                previous = {e["name"]: e for e in listed if isinstance(e, dict) and "name" in e}
        if not self.shards():
            self.store.remove(MANIFEST_FILE)
            self.store.remove(ENTRIES_DIR, recursive=True)
        write_json(self.store, RUN_FILE, identity)
        return previous

    def clear_pending(self) -> None:
        self.store.remove(PENDING_DIR, recursive=True)

    def entry_names(self) -> list[str]:
        """The shards that have an entry, in block order."""
        return [n[:-len(".json")] + ".parquet" for n in self.store.names(ENTRIES_DIR) if n.endswith(".json")]

    def read_entry(self, shard: str) -> dict[str, Any]:
        return self._read_json(entry_name(shard))

    def resumed_entry(self, shard: str | Path, recorded: dict[str, Any] | None) -> dict[str, Any]:
        """The entry of a shard (a name in the folder) a previous run left: checked against
        the entry that recorded it, or read whole when the run stopped before recording it."""
        name = Path(shard).name
        if recorded is not None:
            if self.store.sha256(name) != recorded.get("sha256"):
                raise RunError(f"shard {self.store.path(name)} changed since it was written (its SHA-256 differs from "
                               f"its manifest entry); delete it and run the same command again to rewrite it")
            return recorded
        rows, _ = self.read_shard(name)
        return shard_entry_of(name, rows, self.store.sha256(name))

    def read_shard(self, name: str) -> tuple[list[dict[str, Any]], dict[str, Any]]:
        """A shard's rows and the statistics it carries; :class:`RunError` naming the shard
        when it cannot be read or carries none."""
        import pyarrow as pa
        import pyarrow.parquet as pq

        try:
            with self.store.fs.open(self.store.path(name), "rb") as handle:
                table = pq.read_table(handle)
            return table.to_pylist(), json.loads((table.schema.metadata or {})[STATS_KEY])
        except (pa.ArrowException, OSError, KeyError, ValueError) as exc:
            reason = "it carries no vicogym statistics (rewritten by another tool?)" if isinstance(exc, KeyError) \
                else f"it cannot be read ({str(exc).splitlines()[0]})"
            raise RunError(f"shard {self.store.path(name)} is damaged: {reason}; delete it and run the same generate "
                           f"command again to rewrite it") from None

    def release_if_empty(self) -> None:
        """After a failed start: remove the settings file (and shared files) when no shard
        was written."""
        if not self.shards():
            for name in (RUN_FILE, MANIFEST_FILE):
                self.store.remove(name)
            for folder in (FILES_DIR, ENTRIES_DIR, PENDING_DIR):
                self.store.remove(folder, recursive=True)

    def side_files(self) -> dict[str, str]:
        """The shared files already in the folder (relative name -> SHA-256)."""
        root = self.out / FILES_DIR
        if not root.is_dir():
            return {}
        return {path.relative_to(root).as_posix(): file_sha256(path) for path in sorted(root.rglob("*"))
                if path.is_file() and not path.name.endswith(".tmp")}

    def write_side_files(self, files: dict[str, bytes], folder: str = FILES_DIR) -> dict[str, str]:
        """Write the shared files not yet in the folder (each to a temporary file, then
        moved into place); their names and SHA-256."""
        written = {}
        for name, data in sorted(files.items()):
            parts = Path(name).parts
            if Path(name).is_absolute() or ".." in parts or not parts:
                raise RunError(f"a shared file's name {name!r} leads outside {self.store.path(folder)}")
            if not self.store.exists(f"{FILES_DIR}/{name}") and not self.store.exists(f"{folder}/{name}"):
                self.store.write_bytes(f"{folder}/{name}", data)
            written[name] = hashlib.sha256(data).hexdigest()
        return written

    def write_manifest(self, manifest: dict[str, Any]) -> None:
        write_json(self.store, MANIFEST_FILE, manifest)

    # -- shards made by workers, committed by the run ------------------------------------
    def write_pending(self, block: int, rows: list[dict[str, Any]], stats: dict[str, Any], files: dict[str, bytes],
                      schema: Any) -> dict[str, Any]:
        """A worker's part: block ``block``'s shard and the shared files its rows need,
        written under ``.pending/`` (nothing a reader of the run sees); the shard's entry."""
        if not self.store.exists(RUN_FILE):
            raise RunError(f"this worker cannot see the run's folder {self.where} (no {RUN_FILE} there): workers on "
                           f"other machines need --out on a shared file system or a URL they all reach (s3://...)")
        shared = self.write_side_files(files, f"{PENDING_DIR}/{FILES_DIR}")
        return self.write_final(shard_path(Path(), block).name, rows, stats, shared, schema)

    def write_final(self, name: str, rows: list[dict[str, Any]], stats: dict[str, Any], files: dict[str, str],
                    schema: Any) -> dict[str, Any]:
        """Shard ``name`` written pending, for :meth:`commit` to move into place (a worker's
        block, or the last shard the run cuts at exactly ``n`` rows); its entry."""
        import pyarrow.parquet as pq

        table = shard_table(rows, stats, schema)
        self.store.write(f"{PENDING_DIR}/{name}", lambda handle: pq.write_table(table, handle, compression="zstd"))
        return dict(shard_entry_of(name, rows, self.store.sha256(f"{PENDING_DIR}/{name}")), stats=stats, files=files)

    def commit(self, entry: dict[str, Any], committed: Container[str]) -> int:
        """Move a pending shard into place after the shared files it needs (those not among
        the ``committed`` ones), then record its entry (``entries/part-NNNNN.json``); the
        bytes of the entry."""
        for name in sorted(entry.get("files") or {}):
            if name not in committed:
                if self.store.exists(f"{PENDING_DIR}/{FILES_DIR}/{name}"):
                    self.store.move(f"{PENDING_DIR}/{FILES_DIR}/{name}", f"{FILES_DIR}/{name}")
                elif not self.store.exists(f"{FILES_DIR}/{name}"):
                    raise RunError(f"the shared file {name} of {entry['name']} was not written; run the same "
                                   "generate command again")
        self.store.move(f"{PENDING_DIR}/{entry['name']}", entry["name"])
        return self.record(entry)

    def record(self, entry: dict[str, Any]) -> int:
        data = entry_bytes(entry)
        self.store.write_bytes(entry_name(entry["name"]), data)
        return len(data)

    def cut(self, first: str) -> None:
        """Remove the shards and entries from shard ``first`` on (a shard to make again)."""
        for name in self.shards():
            if name >= first:
                self.store.remove(name)
        for name in self.entry_names():
            if name >= first:
                self.store.remove(entry_name(name))


def entry_name(shard: str) -> str:
    return f"{ENTRIES_DIR}/{shard[:-len('.parquet')]}.json"


def entry_bytes(entry: dict[str, Any]) -> bytes:
    return json.dumps(entry, sort_keys=True, separators=(",", ":")).encode("utf-8")


def write_json(store: Store, name: str, data: Any) -> None:
    store.write_bytes(name, json.dumps(data, indent=1, sort_keys=True).encode("utf-8"))


def run_entries(out: str | Path, manifest: dict[str, Any] | None = None) -> Iterator[dict[str, Any]]:
    """The manifest's shard entries of a run, in block order, read one at a time (from
    ``entries/``, or from the manifest's list for runs written before entries were files)."""
    folder = RunFolder(out)
    if manifest is None and folder.store.exists(MANIFEST_FILE):
        manifest = folder._read_json(MANIFEST_FILE)
    if manifest is not None and isinstance(manifest.get("shards"), list):
        yield from manifest["shards"]
        return
    for name in folder.entry_names():
        yield folder.read_entry(name)


def existing_folder(folder: Any, hint: str) -> Path:
    """``folder`` as a path, when it names a folder that exists; else a
    :class:`~vicogym.errors.RunError` that says it does not exist or is a file, and
    ``hint`` (what to name instead)."""
    path = Path(folder)
    if not path.exists():
        raise RunError(f"{folder} does not exist; {hint}")
    if not path.is_dir():
        raise RunError(f"{folder} is a file, not a run folder; {hint}")
    return path


# -- runs kept in object storage -----------------------------------------------------------
def is_url(out: Any) -> bool:
    """Whether ``out`` names a filesystem URL (``s3://bucket/prefix``, ``memory://x``) rather
    than a local folder."""
    text = str(out)
    return "://" in text and not text.startswith("file://")


@contextlib.contextmanager
def local_run(out: Any) -> Iterator[Path]:
    """A run folder to read: ``out`` itself, or for a URL a local copy of what it holds
    (removed afterwards; what workers left pending is not copied)."""
    if not is_url(out):
        yield Path(out)
        return
    store = Store(out)
    if not store.fs.isdir(store.root):
        missing = "does not exist" if not store.fs.exists(store.root) else "is a file, not a run folder"
        raise RunError(f"{out} {missing}; name the folder a `vicogym generate` --out wrote")
    with tempfile.TemporaryDirectory(prefix="vicogym-run-") as tmp:
        local = Path(tmp) / "run"
        local.mkdir()
        for remote in store.fs.find(store.root):
            name = remote[len(store.root) + 1:]
            if name.split("/")[0] != PENDING_DIR:
                (local / name).parent.mkdir(parents=True, exist_ok=True)
                store.fs.get_file(remote, str(local / name))
        yield local
