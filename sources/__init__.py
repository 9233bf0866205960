"""Seed samples per arm. Shared here: reading the text, JSON, JSON-lines and image files
that sources load, each bounded in size before it is decoded and kept inside its source
folder, with errors that name the file, line and column.

Every file a source opens is found through :func:`inside` (a path a source file names) or
:func:`contained` (a path the loader lists or builds): both follow the path one component
at a time, symlinks included, and refuse it as soon as it would leave the source folder,
before anything outside is touched, so an error says no more about the outside than that."""

from __future__ import annotations

import json
import math
import os
import re
import stat
from collections.abc import Iterator
from pathlib import Path, PurePosixPath
from typing import Any

import numpy as np

from vicogym.errors import SourceError
from vicogym.images import MAX_IMAGE_PIXELS
from vicogym.validation import lone_surrogate

MiB = 1 << 20
#: the largest file of each kind a source reads (checked on the file's size before reading)
LIMITS = {"text": 2048 * MiB, "csv": 1 * MiB, "image": 64 * MiB}
#: the most digits a whole number in a JSON file may have (more cannot be a float: 1e308 is the largest)
MAX_INT_DIGITS = 300
#: the most symlinks one path may pass through (Linux's own limit)
MAX_SYMLINKS = 40
#: the image formats a source decodes (what OpenCV and Pillow both read)
IMAGE_FORMATS = ("PNG", "JPEG", "MPO", "BMP", "WEBP")


def _safe(ref: Any) -> str:
    """``ref`` as an error may print it: control characters escaped, cut to 120 characters."""
    shown = repr(ref)
    return shown if len(shown) <= 120 else f"{shown[:100]}... ({len(shown)} characters)"


def place(path: Any) -> str:
    """A path (or ``file:line``) as an error prints it: as is when every character prints,
    escaped (see :func:`_safe`) when a name holds a control character."""
    text = str(path)
    return text if text.isprintable() and len(text) <= 4096 else _safe(text)


def one_line(text: str) -> str:
    """``text`` with every character that does not print (NUL, a line break, a direction
    override) escaped, so that an error from a file's content stays one line."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in text)


def check_size(path: Path, limit: int, what: str = "file", where: str = "") -> None:
    """``SourceError`` naming ``path`` (after ``where``, the record that names it, when
    given) when it is no regular file (a folder, a pipe, a device), cannot be read, or is
    larger than ``limit`` bytes."""
    at = f"{where}: {place(path)}" if where else place(path)
    try:
        info = path.stat()
    except (OSError, ValueError) as exc:
        raise SourceError(f"{at}: cannot read this {what} ({getattr(exc, 'strerror', None) or exc})") from None
    if not stat.S_ISREG(info.st_mode):
        raise SourceError(f"{at}: not a regular file; give the {what} as a plain file")
    if info.st_size > limit:
        raise SourceError(f"{at}: {info.st_size / MiB:.1f} MiB, more than the {limit / MiB:g} MiB a {what} "
                          f"may have; split it or make it smaller")


def decode_text(data: bytes, where: str, what: str = "file") -> str:
    """UTF-8 ``data`` (a leading byte-order mark dropped) as text; ``SourceError`` naming the
    line of the first byte that is not UTF-8."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise SourceError(f"{where}:{line}: not UTF-8 text ({exc.reason} at byte {exc.start}); save the {what} as "
                          f"UTF-8") from None


def read_bytes(path: Path, limit: int = LIMITS["text"], what: str = "file") -> bytes:
    check_size(path, limit, what)
    try:
        return path.read_bytes()
    except MemoryError:
        raise SourceError(f"{place(path)}: too large to read into this machine's memory") from None
    except OSError as exc:
        raise SourceError(f"{place(path)}: cannot read this {what} ({exc.strerror or exc})") from None


def read_text(path: Path, limit: int = LIMITS["text"], what: str = "file") -> str:
    return decode_text(read_bytes(path, limit, what), place(path), what)


class _Refused(ValueError):
    """A JSON number the parser met that a source may not hold (``literal``, ``why``)."""

    def __init__(self, literal: str, why: str):
        super().__init__(why)
        self.literal, self.why = literal, why


def _float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise _Refused(text, f"the number {_safe(text)} is too large for a float")
    return value


def _int(text: str) -> int:
    digits = len(text.lstrip("-"))
    if digits > MAX_INT_DIGITS:
        raise _Refused(text, f"a number of {digits} digits, more than the {MAX_INT_DIGITS} a value may have")
    return int(text)


def _constant(name: str) -> Any:
    raise _Refused(name, f"{name} is no number JSON allows")


_STRING = r'"(?:[^"\\]|\\.)*"'


def _line_column(text: str, at: int) -> tuple[int, int]:
    line = text.count("\n", 0, at) + 1
    return line, at - (text.rfind("\n", 0, at) + 1) + 1


def _locate(text: str, literal: str) -> int:
    """Where the first ``literal`` outside a JSON string lies in ``text`` (0 when not found)."""
    pattern = re.compile(rf"{_STRING}|(?<![\w.+-]){re.escape(literal)}(?![\w.])")
    return next((m.start() for m in pattern.finditer(text) if not m.group().startswith('"')), 0)


def _deepest(text: str) -> tuple[int, int]:
    """(depth, offset) of the deepest point of ``text``'s nesting, strings skipped."""
    depth = best = where = 0
    for match in re.finditer(rf"{_STRING}|[\[\]{{}}]", text):
        token = match.group()
        if token in "[{":
            depth += 1
            if depth > best:
                best, where = depth, match.start()
        elif token in "]}":
            depth -= 1
    return best, where


#: a ``\\uD800``-``\\uDFFF`` escape that is not half of a pair: JSON allows it, Unicode text does not
_LONE_SURROGATE = re.compile(r"\\u[dD][89abAB][0-9a-fA-F]{2}(?!\\u[dD][c-fC-F])"
                             r"|(?<!\\u[dD][89abAB][0-9a-fA-F]{2})\\u[dD][c-fC-F][0-9a-fA-F]{2}")


def parse_json(text: str, where: str, hint: str = "", surrogates: bool = True) -> Any:
    """``text`` as JSON; ``SourceError`` at ``where`` (a file, or ``file:line``) otherwise:
    not JSON, nested deeper than the parser follows, or a number no float holds
    (``Infinity``, ``NaN``, ``1e999``, an integer of more than :data:`MAX_INT_DIGITS` digits),
    or (``surrogates``: unless the caller checks its fields' text itself) a string holding
    half of a surrogate pair."""
    has_line = ":" in where.rsplit("/", 1)[-1]
    try:
        value = json.loads(text, parse_float=_float, parse_int=_int, parse_constant=_constant)
    except json.JSONDecodeError as exc:
        line = f":{exc.lineno}" if not has_line else ""
        raise SourceError(f"{where}{line}: not valid JSON ({exc.msg} at column {exc.colno}){hint}") from None
    except _Refused as exc:
        line, column = _line_column(text, _locate(text, exc.literal))
        at = f"{where}:{line}" if not has_line else where
        raise SourceError(f"{at}: {exc.why} (column {column}); write a finite number of at most "
                          f"{MAX_INT_DIGITS} digits{hint}") from None
    except RecursionError:
        depth, offset = _deepest(text)
        at = f"{where}:{_line_column(text, offset)[0]}" if not has_line else where
        raise SourceError(f"{at}: JSON nested deeper than the parser follows ({depth} levels); flatten it"
                          f"{hint}") from None
    except ValueError as exc:  # anything else Python will not convert
        raise SourceError(f"{where}: a JSON value Python will not convert ({str(exc).split(';')[0]}){hint}") from None
    if surrogates and "\\u" in text and lone_surrogate(value) is not None:
        found = _LONE_SURROGATE.search(text)
        line, column = _line_column(text, found.start() if found else 0)
        at = f"{where}:{line}" if not has_line else where
        raise SourceError(f"{at}: a string holds {found.group(0) if found else 'an escape'} (column {column}), "
                          f"half of a surrogate pair, which is no character; write the character itself{hint}")
    return value


def read_json(path: Path, limit: int = LIMITS["text"]) -> Any:
    return parse_json(read_text(path, limit, "JSON file"), place(path))


def json_lines(lines: list[str], where: str, hint: str = "", surrogates: bool = True) -> Iterator[tuple[int, Any]]:
    """``(line number, value)`` for every non-blank line."""
    for number, line in enumerate(lines, 1):
        if line.strip():
            yield number, parse_json(line, f"{where}:{number}", hint, surrogates)


#: the longest file name and path the package opens (Linux's NAME_MAX and PATH_MAX, in bytes)
MAX_NAME_BYTES, MAX_PATH_BYTES = 255, 4096


def check_name(ref: Any, where: str, what: str = "file") -> str:
    """``ref`` when it can name a file: a non-empty string with no NUL byte or other control
    character, no name longer than 255 bytes and no path longer than 4096; ``SourceError``
    at ``where`` otherwise."""
    if not isinstance(ref, str) or not ref.strip():
        raise SourceError(f"{where}: expected a relative path to a {what} as a string, got {_safe(ref)[:80]}")
    if "\x00" in ref:
        raise SourceError(f"{where}: the {what} path {_safe(ref)} holds a NUL byte; remove it")
    if any(ord(c) < 32 or 127 <= ord(c) < 160 for c in ref):
        raise SourceError(f"{where}: the {what} path {_safe(ref)} holds a control character; rename the file")
    try:
        encoded = [part.encode("utf-8") for part in re.split(r"[/\\]", ref)]
    except UnicodeEncodeError:
        raise SourceError(f"{where}: the {what} path {_safe(ref)} is not valid Unicode; rename the file") from None
    if max(len(part) for part in encoded) > MAX_NAME_BYTES or len(ref.encode("utf-8")) > MAX_PATH_BYTES:
        raise SourceError(f"{where}: the {what} path {_safe(ref)} is longer than a file name may be "
                          f"({MAX_NAME_BYTES} bytes a name, {MAX_PATH_BYTES} a path); shorten it")
    return ref


def _outside(base: Path, shown: str, where: str, what: str) -> SourceError:
    return SourceError(f"{where}: the {what} {shown} lies outside the source folder {place(base)}; a source reads only "
                       f"files inside its folder (copy the {what} into it and give its path relative to it; links "
                       f"out are refused)")


def _walk(root: Path, parts: list[str], shown: str, where: str, what: str) -> Path:
    """``root / parts`` with every symlink resolved, one component at a time, refused as
    soon as it steps out of ``root`` (nothing outside is looked at, not even a link's target)."""
    current, todo, hops = root, list(parts), 0
    while todo:
        part = todo.pop(0)
        if part in ("", "."):
            continue
        if part == "..":
            if current == root:
                raise _outside(root, shown, where, what)
            current = current.parent
            continue
        step = current / part
        try:
            is_link = step.is_symlink()
            target = os.readlink(step) if is_link else ""
        except (OSError, ValueError):
            is_link = False  # an unreadable component: opening it fails later, inside the folder
        if not is_link:
            current = step
            continue
        hops += 1
        if hops > MAX_SYMLINKS:
            raise SourceError(f"{where}: the {what} {shown} passes through more than {MAX_SYMLINKS} symlinks (a "
                              f"loop); replace the links with regular files inside {place(root)}")
        link = PurePosixPath(target)
        if link.is_absolute():  # a link may name a place inside the folder by its full path
            parts_of = link.parts
            root_parts = root.parts
            if parts_of[: len(root_parts)] != root_parts:
                raise _outside(root, shown, where, what)
            current, todo = root, list(parts_of[len(root_parts):]) + todo
        else:
            todo = list(link.parts) + todo
    return current


def _root(base: Path, where: str) -> Path:
    try:
        return Path(os.path.realpath(base))
    except (OSError, ValueError):
        raise SourceError(f"{where}: the source folder {place(base)} cannot be resolved") from None


def contained(base: Path, path: Path, where: str, what: str = "file") -> Path:
    """``path`` (under ``base``: found by listing it, or built from it) with every symlink
    resolved, when that lies inside ``base``; ``SourceError`` at ``where`` otherwise, saying
    no more about the outside than that."""
    root, shown = _root(base, where), _safe(str(path))
    for start in (Path(os.path.abspath(base)), root):
        try:
            relative = Path(os.path.abspath(path)).relative_to(start)
        except ValueError:
            continue
        return _walk(root, list(relative.parts), shown, where, what)
    raise _outside(base, shown, where, what)


def inside(base: Path, ref: str, where: str, what: str = "file", under: str = "") -> Path:
    """The file ``ref`` names relative to ``base`` (to its subfolder ``under``, when given),
    every symlink resolved; ``SourceError`` (at ``where``) when it is absolute, climbs out
    with ``..``, or resolves outside ``base`` (a source reads only its own folder's files)."""
    check_name(ref, where, what)
    parts = PurePosixPath(ref.replace("\\", "/"))
    if parts.is_absolute() or os.path.isabs(ref) or ".." in parts.parts or (len(ref) > 1 and ref[1] == ":"):
        raise _outside(base, _safe(ref), where, what)
    return _walk(_root(base, where), [*PurePosixPath(under).parts, *parts.parts], _safe(ref), where, what)


def image_size(path: Path, where: str, formats: tuple[str, ...] | None = None) -> tuple[int, int]:
    """``(width, height)`` of the image file at ``path`` read from its header, after its size
    on disk is checked; ``SourceError`` at ``where`` when it is no image (of ``formats``, when
    given) or has more than ``MAX_IMAGE_PIXELS`` pixels. Nothing is decoded."""
    from PIL import Image

    check_size(path, LIMITS["image"], "image", where)
    try:
        with Image.open(path) as header:
            (width, height), kind = header.size, header.format
    except Image.DecompressionBombError as exc:  # Pillow's own bound (about 179 MP) is far above ours
        width, height, kind = None, None, None
        count = re.search(r"\((\d+) pixels\)", str(exc))
        shape = f"has {int(count[1]) / 1e6:g} million pixels" if count else "has over 179 million pixels"
    except Exception:  # Pillow's header parsers raise many kinds of error on a damaged file
        raise SourceError(f"{where}: {place(path)} is not an image file that can be read; give a PNG or JPEG") from None
    if width is None or width * height > MAX_IMAGE_PIXELS:
        shape = f"is {width} x {height} pixels" if width else shape
        raise SourceError(f"{where}: {place(path)} {shape}, more than the {MAX_IMAGE_PIXELS / 1e6:g} MP an image may "
                          f"have; downscale it")
    if width < 1 or height < 1:
        raise SourceError(f"{where}: {place(path)} is {width} x {height} pixels; give an image with pixels")
    if formats is not None and kind not in formats:
        raise SourceError(f"{where}: {place(path)} is a {kind} image; use {' or '.join(formats)}")
    return int(width), int(height)


def read_image(path: Path, ref: str) -> np.ndarray:
    """An image file decoded by OpenCV (channels as stored, BGR), after its size on disk and
    its pixel count (read from the header) are checked."""
    import cv2

    where = f"image {_safe(ref)}"
    image_size(path, where)
    image = cv2.imdecode(_bounded_bytes(path, where), cv2.IMREAD_UNCHANGED)
    if image is None:
        raise SourceError(f"image {_safe(ref)}: {place(path)} is not an image OpenCV can read; give a PNG or JPEG")
    return image


def _bounded_bytes(path: Path, where: str) -> np.ndarray:
    """The bytes of the image file at ``path`` (its size already checked), after its
    compressed pixels are checked to inflate to no more than its header needs."""
    from vicogym.images import check_png_stream

    try:
        data = path.read_bytes()
    except OSError as exc:
        raise SourceError(f"{where}: {place(path)} cannot be read ({exc.strerror or exc})") from None
    try:
        check_png_stream(data)
    except ValueError as exc:
        raise SourceError(f"{where}: {place(path)}: {exc}") from None
    return np.frombuffer(data, dtype=np.uint8)


def read_rgb(path: Path, where: str, formats: tuple[str, ...] = IMAGE_FORMATS) -> np.ndarray:
    """An image file as an RGB ``uint8`` array (16-bit images scaled down, alpha dropped,
    grey repeated; the orientation as stored), after its size on disk, format and pixel
    count are checked on its header: at most one 8-bit copy of the picture is made."""
    import cv2

    size = image_size(path, where, formats)
    image = cv2.imdecode(_bounded_bytes(path, where), cv2.IMREAD_COLOR | cv2.IMREAD_IGNORE_ORIENTATION)
    if image is None or image.shape[1::-1] != size:
        raise SourceError(f"{where}: {place(path)} cannot be decoded (a damaged or truncated file); save it again "
                          f"as a PNG or JPEG")
    return cv2.cvtColor(image, cv2.COLOR_BGR2RGB, dst=image)


def source_path(source: Any, expected: str) -> tuple[Path, str]:
    """The path a ``source`` setting names and what lies there: ``"folder"``, ``"file"`` or
    ``"none"``; ``SourceError`` saying ``expected`` when it can name no path (not a string,
    blank, a NUL byte, a name too long) or cannot be looked at."""
    if not isinstance(source, str) or not source.strip():
        raise SourceError(f"expected source {expected}, got {_safe(source)[:80]}")
    try:
        too_long = len(os.fsencode(source)) > MAX_PATH_BYTES or any(
            len(os.fsencode(part)) > MAX_NAME_BYTES for part in Path(source).parts)
    except UnicodeEncodeError:
        too_long = True
    if "\x00" in source or too_long:
        raise SourceError(f"expected source {expected}, got {_safe(source)}, which can name no file (a NUL byte, "
                          f"a name longer than {MAX_NAME_BYTES} bytes, or not Unicode)")
    path = Path(source)
    try:
        kind = "folder" if path.is_dir() else "file" if path.is_file() else "none" if not path.exists() else "other"
    except (OSError, ValueError) as exc:
        raise SourceError(f"source {_safe(source)}: cannot be looked at ({getattr(exc, 'strerror', None) or exc}); "
                          f"expected {expected}") from None
    return path, kind
