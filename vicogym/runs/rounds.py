"""Resumable runs: what every run folder records so that a killed run resumes where it
stopped, and a run with other settings is refused.

- A run's *identity* (the settings its data depends on) is recorded once;
  :func:`check_identity` refuses another identity, naming the settings that differ
  (``growable`` ones may grow: more rounds, more samples). ``vicogym generate`` keeps it in
  its run file, ``vicogym synthesize`` in its memory, ``vicogym evolve`` in its ledger.
- A run in rounds records each round's *stages* as they finish: :class:`Ledger` (a JSON
  file written atomically) for ``vicogym evolve``, whose rounds have stages of their own
  (generated, exported, trained); ``vicogym synthesize`` commits a round in one memory
  transaction, its one stage, and both take the next round as the first not recorded.
"""

from __future__ import annotations

import errno
import json
import os
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from vicogym.errors import RunError


@contextmanager
def writing(path: Path) -> Iterator[None]:
    """Turn an ``OSError`` while writing ``path`` (a full disk, a file-size limit, no
    permission) into a :class:`RunError` that names the file and what to do."""
    try:
        yield
    except RunError:
        raise
    except OSError as exc:
        reason = exc.strerror or str(exc)
        if exc.errno == errno.ENOSPC or "No space left" in str(exc):
            hint = "; free some space on that disk, or write to another with --out"
        elif exc.errno == errno.EFBIG or "too large" in str(exc).lower():
            hint = "; the file is larger than this process may write (raise `ulimit -f`)"
        else:
            hint = ""
        raise RunError(f"cannot write {path} ({reason}){hint}") from None


def write_bytes_atomic(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` in one step (a temporary file moved into place), so that
    a crash leaves the old file or the new one, never half of one."""
    tmp = path.with_name(path.name + ".tmp")
    with writing(path):
        tmp.write_bytes(data)
        os.replace(tmp, path)


def write_json_atomic(path: Path, data: Any) -> None:
    """Write ``data`` as JSON to ``path`` in one step (:func:`write_bytes_atomic`)."""
    write_bytes_atomic(path, json.dumps(data, indent=1, sort_keys=True).encode("utf-8"))


def differing(stored: Mapping[str, Any], identity: Mapping[str, Any], growable: Iterable[str] = ()) -> list[str]:
    """The settings whose values differ between two identities (compared as JSON), but
    the ``growable`` ones."""
    stored, identity = json.loads(json.dumps(dict(stored))), json.loads(json.dumps(dict(identity)))
    keys = (set(stored) | set(identity)) - set(growable)
    return sorted(k for k in keys if stored.get(k) != identity.get(k))


def check_identity(stored: Mapping[str, Any] | None, identity: Mapping[str, Any], message: str,
                   growable: Iterable[str] = ()) -> None:
    """``RunError`` when a run recorded an identity (``stored``) other than ``identity``:
    ``message`` is formatted with ``{changed}``, the differing settings."""
    if stored is None:
        return
    changed = differing(stored, identity, growable)
    if changed:
        raise RunError(message.format(changed=", ".join(changed)))


class Ledger:
    """The rounds of a resumable run and the stages each finished, in a JSON file written
    atomically after every change. A ledger with another identity is refused (only the
    ``growable`` settings may change), unless no stage of it was ever done."""

    def __init__(self, path: str | Path, identity: Mapping[str, Any], message: str, growable: Iterable[str] = ()):
        """``message``: the refusal of another identity, formatted with ``{changed}``."""
        self.path = Path(path)
        identity = json.loads(json.dumps(dict(identity)))
        state = json.loads(self.path.read_text(encoding="utf-8")) if self.path.is_file() else None
        if state is None or not any(entry.get("stages") for entry in state.get("rounds", [])):
            state = {"config": identity, "rounds": []}  # nothing was done: the settings may change freely
        check_identity(state.get("config"), identity, message, growable)
        state["config"] = identity
        self.state = state

    @property
    def rounds(self) -> list[dict[str, Any]]:
        return self.state["rounds"]

    def entry(self, r: int, **fields: Any) -> dict[str, Any]:
        """Round ``r``'s record: the one recorded, or a new one with ``fields`` (the rounds
        before it must be recorded)."""
        if r < len(self.rounds):
            return self.rounds[r]
        if r != len(self.rounds):
            raise RunError(f"round {r} cannot follow round {len(self.rounds) - 1} in {self.path}")
        self.rounds.append({"round": r, **fields, "stages": []})
        self.save()
        return self.rounds[r]

    @staticmethod
    def done(entry: Mapping[str, Any], stage: str) -> bool:
        return stage in entry["stages"]

    def mark(self, entry: dict[str, Any], stage: str, **fields: Any) -> None:
        """Record that ``stage`` of ``entry``'s round finished (with what it made)."""
        entry.update(fields)
        if stage not in entry["stages"]:
            entry["stages"].append(stage)
        self.save()

    def redo(self, entry: dict[str, Any], stages: Iterable[str], **fields: Any) -> None:
        """Record that only ``stages`` of ``entry``'s round stand (its inputs changed: the
        others must be done again)."""
        entry.update(fields)
        entry["stages"] = list(stages)
        self.save()

    def finish(self, **fields: Any) -> dict[str, Any]:
        self.state.update(fields)
        self.save()
        return self.state

    def save(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        write_json_atomic(self.path, self.state)
