"""Region renderer of raster units (CLEVR frames, photos): the full-resolution image is
decoded once (kept in a small cache) and every view cuts its crop from it.

A raster unit's ``spec`` names its pixels either by ``png`` (the SHA-256 of PNG bytes the
task carries as a payload: what the package rendered itself) or by ``path`` (a file of a
loaded data set). A path is opened only when a data-set loader checked it in this process
(:func:`vicogym.images.read_checked`: found inside its data set's folder,
its header within the pixel cap) and only its checked bytes are decoded (their SHA-256 is
compared before decoding): a stored task cannot make the renderer read another file.
Every raster's header is read before it is decoded: it must declare the unit's own size,
at most :data:`vicogym.images.MAX_IMAGE_PIXELS` pixels.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from vicogym.errors import SourceError
from vicogym.renderers.evidence import RasterCache, cut
from vicogym.structures.evidence import Box, Unit
from vicogym.validation import brief


class RegionRenderer:
    def __init__(self, settings: Mapping[str, Any] | None = None, cache_size: int = 8):
        self.cache = RasterCache(cache_size)
        #: PNG bytes by SHA-256, for units drawn by the package
        self.payloads: dict[str, bytes] = {}

    def full(self, unit: Unit) -> np.ndarray:
        spec = unit.spec
        key = spec.get("png") or spec.get("path")
        if not key:
            raise ValueError("a raster unit's spec needs 'png' (a payload's SHA-256) or 'path' (an image file)")
        return self.cache.get(str(key), lambda: self._decode(unit))

    def _decode(self, unit: Unit) -> np.ndarray:
        from vicogym.images import decode_png, image_header, read_checked

        spec = unit.spec
        if spec.get("png"):
            data = self.payloads.get(spec["png"])
            if data is None:
                raise KeyError(f"no payload with SHA-256 {spec['png']} was given to the renderer")
            where = f"the raster payload {brief(spec['png'], 120)}"
        else:
            where = f"the image unit's file {brief(spec['path'], 120)}"
            try:
                data = read_checked(spec["path"], spec.get("sha256"))
            except ValueError as exc:
                raise SourceError(f"{where}: {exc}") from None
        try:
            width, height = image_header(data)  # at most MAX_IMAGE_PIXELS, read before anything is decoded
            if (width, height) != (unit.width, unit.height):
                raise ValueError(f"the unit says {unit.width}x{unit.height} but its image is {width}x{height}")
            image = decode_png(data)
        except ValueError as exc:
            raise SourceError(f"{where}: {exc}") from None
        if image.shape[:2] != (unit.height, unit.width):
            raise ValueError(f"the unit says {unit.width}x{unit.height} but its image is "
                             f"{image.shape[1]}x{image.shape[0]}")
        return image

    def draw(self, unit: Unit, crop: Box, size: tuple[int, int]) -> np.ndarray:
        return cut(self.full(unit), crop, size)

    def naive(self, unit: Unit, crop: Box, size: tuple[int, int]) -> np.ndarray:
        """Decode the whole image again, then crop."""
        return cut(self._decode(unit), crop, size)

    def close(self) -> None:
        self.cache.clear()
