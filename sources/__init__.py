"""Seed samples per arm. Shared here: reading the text, JSON and JSON-lines files that
sources load, with errors that name the file, line and column."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterator

from vicogym.errors import SourceError


def read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise SourceError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start}); save it as UTF-8") from None


def read_json(path: Path) -> Any:
    try:
        return json.loads(read_text(path))
    except json.JSONDecodeError as exc:
        raise SourceError(f"{path}:{exc.lineno}: not valid JSON ({exc.msg} at column {exc.colno})") from None


def json_lines(lines: list[str], where: str) -> Iterator[tuple[int, Any]]:
    """``(line number, value)`` for every non-blank line."""
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            yield number, json.loads(line)
        except json.JSONDecodeError as exc:
            raise SourceError(f"{where}:{number}: not valid JSON ({exc.msg} at column {exc.colno})") from None
