"""Seed samples per arm. Shared here: reading the text, JSON, JSON-lines and image files
that sources load, each bounded in size before it is decoded and kept inside its source
folder, with errors that name the file, line and column."""

from __future__ import annotations

import json
import os
from pathlib import Path, PurePosixPath
from typing import Any, Iterator

import numpy as np

from vicogym.errors import SourceError

MiB = 1 << 20
#: the largest file of each kind a source reads (checked on the file's size before reading)
LIMITS = {"text": 2048 * MiB, "csv": 1 * MiB, "image": 64 * MiB}
#: the most pixels an image may have (checked on its header, before it is decoded): 40 MP
MAX_IMAGE_PIXELS = 40_000_000


def check_size(path: Path, limit: int, what: str = "file") -> None:
    """``SourceError`` naming ``path`` when it cannot be read or is larger than ``limit`` bytes."""
    try:
        size = path.stat().st_size
    except OSError as exc:
        raise SourceError(f"{path}: cannot read this {what} ({exc.strerror or exc})") from None
    if size > limit:
        raise SourceError(f"{path}: {size / MiB:.1f} MiB, more than the {limit / MiB:g} MiB a {what} may have; "
                          f"split it or make it smaller")


def read_text(path: Path, limit: int = LIMITS["text"], what: str = "file") -> str:
    check_size(path, limit, what)
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise SourceError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start}); save it as UTF-8") from None
    except MemoryError:
        raise SourceError(f"{path}: too large to read into this machine's memory") from None
    except OSError as exc:
        raise SourceError(f"{path}: cannot read this {what} ({exc.strerror or exc})") from None


def parse_json(text: str, where: str, hint: str = "") -> Any:
    """``text`` as JSON; ``SourceError`` at ``where`` (a file, or ``file:line``) otherwise:
    not JSON, nested deeper than the parser follows, or a number Python will not convert."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        line = f":{exc.lineno}" if ":" not in where.rsplit("/", 1)[-1] else ""
        raise SourceError(f"{where}{line}: not valid JSON ({exc.msg} at column {exc.colno}){hint}") from None
    except RecursionError:
        raise SourceError(f"{where}: JSON nested deeper than the parser follows; flatten it{hint}") from None
    except ValueError as exc:  # an integer literal of thousands of digits
        raise SourceError(f"{where}: a JSON value Python will not convert ({str(exc).split(';')[0]}){hint}") from None


def read_json(path: Path, limit: int = LIMITS["text"]) -> Any:
    return parse_json(read_text(path, limit, "JSON file"), str(path))


def json_lines(lines: list[str], where: str, hint: str = "") -> Iterator[tuple[int, Any]]:
    """``(line number, value)`` for every non-blank line."""
    for number, line in enumerate(lines, 1):
        if line.strip():
            yield number, parse_json(line, f"{where}:{number}", hint)


def inside(base: Path, ref: str, where: str, what: str = "file") -> Path:
    """The path ``ref`` names relative to ``base``; ``SourceError`` (at ``where``) when it is
    absolute or climbs out of ``base`` (a source reads only its own folder's files)."""
    if not isinstance(ref, str) or not ref.strip():
        raise SourceError(f"{where}: expected a relative path to a {what}, got {ref!r}")
    parts = PurePosixPath(ref.replace("\\", "/"))
    if parts.is_absolute() or os.path.isabs(ref) or ".." in parts.parts or (len(ref) > 1 and ref[1] == ":"):
        raise SourceError(f"{where}: {what} {ref!r} lies outside {base}; a source reads only files inside its folder "
                          f"(copy or link the {what} into it and give its path relative to {base})")
    return base / Path(*parts.parts)


def read_image(path: Path, ref: str) -> np.ndarray:
    """An image file decoded by OpenCV (channels as stored, BGR), after its size on disk and
    its pixel count (read from the header) are checked."""
    import cv2
    from PIL import Image

    check_size(path, LIMITS["image"], "image")
    try:
        with Image.open(path) as header:
            width, height = header.size
    except Image.DecompressionBombError:  # Pillow's own bound (about 179 MP) is far above ours
        width, height = None, None
    except (OSError, ValueError, SyntaxError):
        raise SourceError(f"image {ref!r}: {path} is not an image file that can be read") from None
    if width is None or width * height > MAX_IMAGE_PIXELS:
        shape = f"is {width} x {height} pixels" if width else "has over 179 million pixels"
        raise SourceError(f"image {ref!r}: {path} {shape}, more than the {MAX_IMAGE_PIXELS / 1e6:g} MP an image "
                          f"may have; downscale it")
    image = cv2.imread(str(path), cv2.IMREAD_UNCHANGED)
    if image is None:
        raise SourceError(f"image {ref!r}: {path} is not an image OpenCV can read")
    return image
