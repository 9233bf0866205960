"""What vicogym's training backends (:mod:`vicogym.trainers.grpo_actor`,
:mod:`vicogym.trainers.rwr_rewriter`) share about a checkpoint: the record it keeps
(``MARKER``), the error for input they cannot use, the sha256 of its inputs and the
atomic write of the next round's spec."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence
from pathlib import Path

#: what a checkpoint folder records about how it was made
MARKER = "vicogym-train.json"


class TrainingInputError(ValueError):
    """Input the trainer cannot use: the message names what to change."""


def file_sha256(path: Path) -> str:
    """The sha256 of the file at ``path``, read a megabyte at a time."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def folder_sha256(folder: Path, skip: Sequence[str] = (MARKER,)) -> dict[str, str]:
    """The sha256 of every file under ``folder`` (by path relative to it), but ``skip``."""
    return {str(p.relative_to(folder)): file_sha256(p) for p in sorted(folder.rglob("*"))
            if p.is_file() and p.name not in skip}


def write_text_atomic(path: Path, text: str) -> None:
    """``text`` into ``path`` by a temporary file replaced into place."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def write_next_spec(path: Path, out: Path) -> None:
    """``transformers:OUT`` (the checkpoint ``out``, absolute) into ``path``, atomically:
    the next round's model spec."""
    write_text_atomic(path, f"transformers:{out.resolve()}\n")


__all__ = ["MARKER", "TrainingInputError", "file_sha256", "folder_sha256", "write_next_spec", "write_text_atomic"]
