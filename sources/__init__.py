"""Seed samples per arm. Shared here: reading the text, JSON, JSON-lines and image files
that sources load, each bounded in size before it is decoded and kept inside its source
folder, with errors that name the file, line and column."""

from __future__ import annotations

import json
import os
import re
import struct
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


#: the longest file name and path the package opens (Linux's NAME_MAX and PATH_MAX, in bytes)
MAX_NAME_BYTES, MAX_PATH_BYTES = 255, 4096


def _safe(ref: str) -> str:
    """``ref`` as an error may print it: control characters escaped, cut to 120 characters."""
    shown = repr(ref)
    return shown if len(shown) <= 120 else shown[:100] + f"...' ({len(ref)} characters)"


def check_name(ref: Any, where: str, what: str = "file") -> str:
    """``ref`` when it can name a file: a non-empty string with no NUL byte, no name longer
    than 255 bytes and no path longer than 4096; ``SourceError`` at ``where`` otherwise."""
    if not isinstance(ref, str) or not ref.strip():
        raise SourceError(f"{where}: expected a relative path to a {what} as a string, got {_safe(ref)[:80]}")
    if "\x00" in ref:
        raise SourceError(f"{where}: the {what} path {_safe(ref)} holds a NUL byte; remove it")
    try:
        encoded = [part.encode("utf-8") for part in re.split(r"[/\\]", ref)]
    except UnicodeEncodeError:
        raise SourceError(f"{where}: the {what} path {_safe(ref)} is not valid Unicode; rename the file") from None
    if max(len(part) for part in encoded) > MAX_NAME_BYTES or len(ref.encode("utf-8")) > MAX_PATH_BYTES:
        raise SourceError(f"{where}: the {what} path {_safe(ref)} is longer than a file name may be "
                          f"({MAX_NAME_BYTES} bytes a name, {MAX_PATH_BYTES} a path); shorten it")
    return ref


def contained(base: Path, path: Path, where: str, what: str = "file") -> Path:
    """``path`` with every symlink resolved, when that lies inside ``base`` (itself resolved);
    ``SourceError`` at ``where`` otherwise, saying no more about the outside than that."""
    try:
        root, resolved = base.resolve(), path.resolve()
    except (OSError, RuntimeError):  # a symlink loop, or a component that cannot be read
        raise SourceError(f"{where}: the {what} {_safe(str(path))} cannot be resolved (a symlink loop or an "
                          f"unreadable folder); replace it with a regular file inside {base}") from None
    if not resolved.is_relative_to(root):
        raise SourceError(f"{where}: the {what} {_safe(str(path))} lies outside the source folder {base}; a source "
                          f"reads only files inside its folder (copy the {what} into it; links out are refused)")
    return resolved


def inside(base: Path, ref: str, where: str, what: str = "file") -> Path:
    """The file ``ref`` names relative to ``base``, every symlink resolved; ``SourceError``
    (at ``where``) when it is absolute, climbs out with ``..``, or resolves outside ``base``
    (a source reads only its own folder's files)."""
    check_name(ref, where, what)
    parts = PurePosixPath(ref.replace("\\", "/"))
    if parts.is_absolute() or os.path.isabs(ref) or ".." in parts.parts or (len(ref) > 1 and ref[1] == ":"):
        raise SourceError(f"{where}: the {what} {_safe(ref)} lies outside the source folder {base}; a source reads "
                          f"only files inside its folder (copy the {what} into it and give its path relative to it)")
    return contained(base, base / Path(*parts.parts), where, what)


def image_size(path: Path, where: str, formats: tuple[str, ...] | None = None) -> tuple[int, int]:
    """``(width, height)`` of the image file at ``path`` read from its header, after its size
    on disk is checked; ``SourceError`` at ``where`` when it is no image (of ``formats``, when
    given) or has more than ``MAX_IMAGE_PIXELS`` pixels. Nothing is decoded."""
    from PIL import Image

    check_size(path, LIMITS["image"], "image")
    try:
        with Image.open(path) as header:
            (width, height), kind = header.size, header.format
    except Image.DecompressionBombError:  # Pillow's own bound (about 179 MP) is far above ours
        width, height, kind = None, None, None
    except (OSError, ValueError, SyntaxError, struct.error):
        raise SourceError(f"{where}: {_safe(str(path))} is not an image file that can be read; "
                          f"give a PNG or JPEG") from None
    if width is None or width * height > MAX_IMAGE_PIXELS:
        shape = f"is {width} x {height} pixels" if width else "has over 179 million pixels"
        raise SourceError(f"{where}: {_safe(str(path))} {shape}, more than the {MAX_IMAGE_PIXELS / 1e6:g} MP an "
                          f"image may have; downscale it")
    if formats is not None and kind not in formats:
        raise SourceError(f"{where}: {_safe(str(path))} is a {kind} image; use {' or '.join(formats)}")
    return int(width), int(height)


def read_image(path: Path, ref: str) -> np.ndarray:
    """An image file decoded by OpenCV (channels as stored, BGR), after its size on disk and
    its pixel count (read from the header) are checked."""
    import cv2

    image_size(path, f"image {_safe(ref)}")
    image = cv2.imread(str(path), cv2.IMREAD_UNCHANGED)
    if image is None:
        raise SourceError(f"image {_safe(ref)}: {_safe(str(path))} is not an image OpenCV can read; give a PNG or JPEG")
    return image
