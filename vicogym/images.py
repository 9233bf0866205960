"""Image encoding and the observation image policy, shared by every arm.

Samples keep their image at its native size (that is what the actor sees and what is
exported as PNG). A Gymnasium observation needs one fixed shape, so each arm declares an
:class:`ImagePolicy` that puts the native image on a fixed canvas; ``obs["image"]`` and
``env.render()`` both show that canvas.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from vicogym.validation import is_int

POLICY_MODES = ("fixed", "pad", "letterbox")
#: the most pixels an image the package decodes may have, checked on its header first (40 MP:
#: a 7300 x 5500 photo; a render is far smaller)
MAX_IMAGE_PIXELS = 40_000_000


@dataclass(frozen=True)
class ImagePolicy:
    """How a native image is put on the observation canvas of ``height`` x ``width``.

    - ``fixed``: the renderer always draws exactly the canvas size (a 3D scene at a set
      resolution); any other size is a renderer bug and raises.
    - ``pad``: the image is centred on the canvas without scaling, the rest filled with
      ``fill``; images never exceed the canvas (charts, whose figure size is an edit).
    - ``letterbox``: the image is scaled, keeping its aspect ratio, to fit the canvas
      and centred (photos of any size).
    """

    mode: str
    height: int
    width: int
    fill: int = 255

    def __post_init__(self) -> None:
        if self.mode not in POLICY_MODES:
            raise ValueError(f"expected image policy mode in {POLICY_MODES}, got {self.mode!r}")
        for name in ("height", "width"):
            v = getattr(self, name)
            if not is_int(v, 1):
                raise ValueError(f"expected {name} to be a positive integer, got {v!r}")
        if not is_int(self.fill, 0, 255):
            raise ValueError(f"expected fill in [0, 255], got {self.fill!r}")

    @property
    def shape(self) -> tuple[int, int, int]:
        return (self.height, self.width, 3)

    def apply(self, image: np.ndarray) -> np.ndarray:
        """The canvas showing ``image`` (an RGB ``uint8`` array of any size)."""
        if image.ndim != 3 or image.shape[2] != 3 or image.dtype != np.uint8:
            raise ValueError(f"expected an RGB uint8 image, got shape {image.shape} and dtype {image.dtype}")
        h, w = image.shape[:2]
        if self.mode == "fixed":
            if (h, w) != (self.height, self.width):
                raise ValueError(f"expected a {self.height}x{self.width} render under the fixed policy, got {h}x{w}")
            return image.copy()
        if self.mode == "letterbox":
            image = _scale_to_fit(image, self.height, self.width)
            h, w = image.shape[:2]
        elif h > self.height or w > self.width:
            raise ValueError(f"expected an image within {self.height}x{self.width} under the pad policy, got {h}x{w}")
        canvas = np.full(self.shape, self.fill, dtype=np.uint8)
        top, left = (self.height - h) // 2, (self.width - w) // 2
        canvas[top : top + h, left : left + w] = image
        return canvas


def _scale_to_fit(image: np.ndarray, height: int, width: int) -> np.ndarray:
    import cv2

    h, w = image.shape[:2]
    scale = min(height / h, width / w)
    size = (max(1, min(width, round(w * scale))), max(1, min(height, round(h * scale))))
    if size == (w, h):
        return image
    interpolation = cv2.INTER_AREA if scale < 1 else cv2.INTER_LINEAR
    return cv2.resize(image, size, interpolation=interpolation)


def encode_png(image: np.ndarray, compression: int = 3) -> bytes:
    """PNG bytes of an RGB ``uint8`` array (``imagecodecs``' libpng; deterministic).

    Every row is stored Up-filtered (as its difference from the row above) instead of
    libpng's default of trying five filters per row: on renders, whose large flat areas
    make most differences zero, that compresses to within a few per cent of the default
    at a third of the time (``benchmarks/chart_step.py`` encodes every image it times)."""
    import imagecodecs

    array = np.ascontiguousarray(image)
    if array.dtype != np.uint8 or array.ndim != 3 or array.shape[2] != 3:
        raise ValueError(f"expected an RGB uint8 image of shape (height, width, 3), got {array.dtype} {array.shape}")
    return imagecodecs.png_encode(array, level=compression, filter=imagecodecs.PNG.FILTER.UP)


def image_header(data: bytes) -> tuple[int, int]:
    """``(width, height)`` an encoded image's header declares; ``ValueError`` when it is no
    image, or has more than :data:`MAX_IMAGE_PIXELS` pixels. Nothing is decoded."""
    import io
    import struct

    from PIL import Image

    try:
        with Image.open(io.BytesIO(data)) as header:
            width, height = header.size
    except Image.DecompressionBombError:
        width = height = None
    except (OSError, ValueError, SyntaxError, struct.error, EOFError):
        raise ValueError("expected PNG bytes, could not read an image header") from None
    if width is None or width * height > MAX_IMAGE_PIXELS:
        shape = f"{width} x {height} pixels" if width else "over 179 million pixels"
        raise ValueError(f"expected an image of at most {MAX_IMAGE_PIXELS / 1e6:g} MP, got one of {shape}")
    return int(width), int(height)


#: Adam7's passes: (first column, first row, column step, row step)
_ADAM7 = ((0, 0, 8, 8), (4, 0, 8, 8), (0, 4, 4, 8), (2, 0, 4, 4), (0, 2, 2, 4), (1, 0, 2, 2), (0, 1, 1, 2))
_PNG_CHANNELS = {0: 1, 2: 3, 3: 1, 4: 2, 6: 4}


def check_png_stream(data: bytes) -> None:
    """``ValueError`` when PNG ``data``'s compressed pixels inflate to more bytes than its
    header's width, height, bit depth and interlacing need (a decompression bomb: a small
    file whose stream inflates to gigabytes keeps a decoder busy for minutes whatever size
    it declares). The stream is inflated in bounded pieces and never kept; bytes that are
    not PNG pass (their own decoder bounds them by the declared size)."""
    import struct
    import zlib

    view = memoryview(data)
    if bytes(view[:8]) != b"\x89PNG\r\n\x1a\n" or len(view) < 33 or bytes(view[12:16]) != b"IHDR":
        return
    width, height, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", bytes(view[16:29]))
    bits = _PNG_CHANNELS.get(colour, 4) * max(depth, 1)
    passes = _ADAM7 if interlace else ((0, 0, 1, 1),)
    needed = 0
    for x0, y0, dx, dy in passes:
        columns, rows = -(-(width - x0) // dx) if width > x0 else 0, -(-(height - y0) // dy) if height > y0 else 0
        if columns and rows:
            needed += rows * (1 + -(-columns * bits // 8))
    inflater, inflated, pos = zlib.decompressobj(), 0, 8
    while pos + 8 <= len(view) and not inflater.eof:
        length, kind = struct.unpack(">I4s", bytes(view[pos:pos + 8]))
        if kind == b"IDAT":
            pending = bytes(view[pos + 8:pos + 8 + length])
            while pending and not inflater.eof:
                try:
                    inflated += len(inflater.decompress(pending, 1 << 20))
                except zlib.error:
                    return  # a damaged stream: the decoder says so
                if inflated > needed + (needed >> 4) + 65536:  # room for an encoder's padding, not for a bomb
                    raise ValueError(f"the PNG's pixel data inflates to far more than the {needed} bytes its "
                                     f"{width} x {height} header needs (a decompression bomb); save the image again")
                pending = inflater.unconsumed_tail
        elif kind == b"IEND":
            break
        pos += 12 + length


def decode_png(data: bytes) -> np.ndarray:
    """The RGB array of PNG bytes; ``ValueError`` when they are not a decodable image or
    their header declares more than :data:`MAX_IMAGE_PIXELS` pixels."""
    import cv2

    if not isinstance(data, (bytes, bytearray, memoryview)) or not data:
        raise ValueError("expected PNG bytes, got none")
    image_header(bytes(data))
    check_png_stream(data)
    image = cv2.imdecode(np.frombuffer(data, dtype=np.uint8), cv2.IMREAD_COLOR)
    if image is None:
        raise ValueError("expected PNG bytes, could not decode")
    return cv2.cvtColor(image, cv2.COLOR_BGR2RGB)


#: the largest image file the package reads (as ``vicogym.sources.LIMITS["image"]``)
MAX_IMAGE_BYTES = 64 << 20
#: image files a data-set loader checked in this process (found inside its folder, a
#: regular file, its header within the caps): resolved path -> SHA-256 of the checked bytes
_CHECKED_FILES: dict[str, str] = {}


def record_checked(path: str, sha256: str) -> None:
    """Record that a data-set loader checked the image file at ``path`` (resolved)."""
    _CHECKED_FILES[str(path)] = sha256


def checked_image(path: Any) -> str | None:
    """The SHA-256 a loader recorded for the image file at ``path`` in this process;
    ``None`` for any other path."""
    return _CHECKED_FILES.get(path) if isinstance(path, str) else None


def read_checked(path: Any, sha256: Any = None) -> bytes:
    """The bytes of the image file a data-set loader checked at ``path``: ``ValueError``
    when no loader checked it in this process, or the file no longer holds the checked
    bytes (nor ``sha256``, the unit's record of them, when given). A stored task cannot
    make a renderer read another file."""
    import hashlib
    import os
    import stat

    known = checked_image(path)
    shown = repr(path) if len(repr(path)) <= 120 else repr(path)[:100] + "..."
    if known is None:
        raise ValueError(f"the image file {shown} was not checked by a data-set loader in this process; an "
                         f"image file is opened only after its data set is loaded")
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        with os.fdopen(fd, "rb") as f:
            if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
                raise ValueError(f"the image file {shown} is no longer a regular file; load its data set again")
            data = f.read(MAX_IMAGE_BYTES + 1)
    except OSError as exc:
        raise ValueError(f"the image file {shown} cannot be read ({exc.strerror or exc}); load its data set "
                         f"again") from None
    digest = hashlib.sha256(data).hexdigest()
    if digest != known or (sha256 and digest != sha256):
        raise ValueError(f"the image file {shown} changed since its data set was loaded (its SHA-256 differs); "
                         f"load its data set again")
    return data


#: the share of pixels that may differ when a renderer cannot promise the same bytes
#: (a pixel on a rounding boundary, not a swapped or edited region)
DIFFERING_PIXELS = 0.001


def same_image(a: np.ndarray, b: np.ndarray, tolerance: int = 0) -> bool:
    """Whether two renders of one structure agree: identical bytes when ``tolerance`` is 0;
    otherwise no channel further apart than ``tolerance`` and at most ``DIFFERING_PIXELS``
    of the pixels different at all."""
    if a.shape != b.shape:
        return False
    if tolerance == 0:
        return bool(np.array_equal(a, b))
    diff = np.abs(a.astype(np.int16) - b.astype(np.int16))
    if int(diff.max(initial=0)) > tolerance:
        return False
    differing = int(diff.reshape(-1, diff.shape[-1]).any(axis=1).sum()) if diff.ndim == 3 else int((diff > 0).sum())
    return differing <= DIFFERING_PIXELS * a.shape[0] * a.shape[1]


def row_png(row: Mapping[str, Any]) -> bytes:
    """The PNG bytes of a stored row's image (``images[0].bytes``); ``ValueError`` when the
    row holds none."""
    images = row.get("images") or []
    data = images[0].get("bytes") if images and isinstance(images[0], Mapping) else None
    if not data:
        raise ValueError("the row holds no image (images[0].bytes is empty)")
    return bytes(data)
