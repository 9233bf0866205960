"""Region renderer of raster units (CLEVR frames, photos): the full-resolution image is
decoded once (kept in a small cache) and every view cuts its crop from it.

A raster unit's ``spec`` names its pixels either by ``png`` (the SHA-256 of PNG bytes the
task carries as a payload: what the package rendered itself) or by ``path`` (a file of a
loaded data set, with its ``sha256`` when the loader recorded one, checked on first read).
"""

from __future__ import annotations

import hashlib
from typing import Any, Mapping

import numpy as np

from vicogym.renderers.evidence import RasterCache, cut
from vicogym.structures.evidence import Box, Unit


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
        from vicogym.images import decode_png

        spec = unit.spec
        if spec.get("png"):
            data = self.payloads.get(spec["png"])
            if data is None:
                raise KeyError(f"no payload with SHA-256 {spec['png']} was given to the renderer")
        else:
            with open(spec["path"], "rb") as f:
                data = f.read()
            if spec.get("sha256") and hashlib.sha256(data).hexdigest() != spec["sha256"]:
                raise ValueError(f"{spec['path']} changed since the task was made (its SHA-256 differs)")
        image = decode_png(data)
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
