"""Draws the evidence arm's views: each tile's crop of its unit at the tile's scale, the
notes as coloured rings, and a sheet's labels.

A region of a unit the package draws itself (a form, a chart, a slide) is re-drawn at the
view's scale, so a zoom recovers real detail; a raster unit (a CLEVR frame, a photo) is
decoded once at full resolution and the crop is cut from it. Each unit kind has one
region renderer (``draw(unit, crop, size)``), in its own file here; this module dispatches
on the kind and composes the view. Same view, same bytes.

Region renderers follow unit kinds, not task families (a file's name is also its key in
the ``render_settings`` of ``vicogym/Evidence-v0``): ``forms.py`` draws ``form`` units
(the ``forms`` family); ``charts.py`` draws ``chart`` and ``slide`` units (the
``multichart`` and ``slides`` families); ``clevr.py`` draws ``clevr`` units (the
``clevr_detail`` and ``clevr_sequence`` families); ``rasters.py`` draws ``image`` units
(the tasks of the ``funsd`` and ``jsonl`` loaders) and cuts the CLEVR renders.
"""

from __future__ import annotations

import importlib
import math
import os
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import Any

import numpy as np

from vicogym.structures.evidence import Box, Task, Tile, Unit, View

#: unit kind -> the module whose ``RegionRenderer`` draws it
REGION_RENDERERS: Mapping[str, str] = {
    "form": "vicogym.renderers.evidence.forms",
    "chart": "vicogym.renderers.evidence.charts",
    "slide": "vicogym.renderers.evidence.charts",
    "clevr": "vicogym.renderers.evidence.clevr",
    "image": "vicogym.renderers.evidence.rasters",
}
#: the unit kinds drawn from PNG payloads
RASTER_KINDS = ("image", "clevr")
#: ring colours by note ordinal (RGB), as the paper's canvas numbers its markers
RING_COLORS = ((230, 25, 75), (0, 130, 200), (60, 180, 75), (245, 130, 48), (145, 30, 180), (70, 240, 240),
               (240, 50, 230), (128, 128, 0), (0, 128, 128), (170, 110, 40))
RING_RADIUS = 11
LABEL_PX = 40
LABEL_FONT_PX = 11
BACKGROUND = 236


def font_path(name: str = "DejaVuSans.ttf") -> str:
    """A font that ships with matplotlib (so every machine has the same glyphs): ``name`` is a
    file name in matplotlib's font folder, never a path (a stored task names its font)."""
    import matplotlib

    if not isinstance(name, str) or not name.endswith(".ttf") or os.path.basename(name) != name or "\\" in name:
        raise ValueError(f"expected the file name of a font matplotlib ships (such as 'DejaVuSans.ttf'), got "
                         f"{str(name)[:80]!r}")
    path = os.path.join(os.path.dirname(matplotlib.__file__), "mpl-data", "fonts", "ttf", name)
    if not os.path.isfile(path):
        raise FileNotFoundError(f"matplotlib ships no font {name!r} at {path}")
    return path


@lru_cache(maxsize=64)
def font(name: str, px: int) -> Any:
    from PIL import ImageFont

    return ImageFont.truetype(font_path(name), max(1, int(px)))


def resize(image: np.ndarray, size: tuple[int, int]) -> np.ndarray:
    """``image`` resized to ``size`` (width, height): area averaging down, linear up."""
    import cv2

    h, w = image.shape[:2]
    if (w, h) == tuple(size):
        return image
    shrink = size[0] < w or size[1] < h
    return cv2.resize(image, tuple(int(v) for v in size), interpolation=cv2.INTER_AREA if shrink else cv2.INTER_LINEAR)


#: the largest factor a small view is drawn larger by before it is area-averaged down
MAX_SUPERSAMPLE = 32


def supersample(crop: Box, size: tuple[int, int]) -> int:
    """How many times larger a view of ``crop`` (unit pixels) at ``size`` is drawn before
    it is area-averaged down: enough to reach one view pixel per unit pixel (where a drawn
    unit's every text is set as real glyphs), 1 when the view is that large already."""
    scale = min(size[0] / (crop[2] - crop[0]), size[1] / (crop[3] - crop[1]))
    return 1 if scale >= 1.0 else min(MAX_SUPERSAMPLE, math.ceil(1.0 / scale - 1e-9))


def cut(image: np.ndarray, crop: Box, size: tuple[int, int]) -> np.ndarray:
    """The ``crop`` (whole pixels of ``image``: views snap their crops to whole unit
    pixels) of ``image`` resampled to ``size``."""
    x0, y0, x1, y1 = (int(round(v)) for v in crop)
    return resize(np.ascontiguousarray(image[y0:y1, x0:x1]), size)


class EvidenceRenderer:
    """Draws views of a task's units; region renderers are made on first use and keep
    their own caches (``cache_size`` full-resolution rasters at most)."""

    def __init__(self, settings: Mapping[str, Mapping[str, Any]] | None = None, cache_size: int = 8):
        self.settings = {k: dict(v) for k, v in (settings or {}).items()}
        self.cache_size = cache_size
        self._renderers: dict[str, Any] = {}

    def region_renderer(self, kind: str) -> Any:
        module = REGION_RENDERERS.get(kind)
        if module is None:
            raise ValueError(f"no region renderer for unit kind {kind!r} (known: {sorted(REGION_RENDERERS)})")
        if module not in self._renderers:
            self._renderers[module] = importlib.import_module(module).RegionRenderer(
                self.settings.get(module.rsplit(".", 1)[-1], {}), self.cache_size)
        return self._renderers[module]

    def prepare(self, task: Task) -> tuple[Task, dict[str, bytes]]:
        """``task`` completed with what only drawing knows (a raster unit's pixels as a
        payload, a drawn object's box as evidence), and the payloads (PNG bytes by
        SHA-256). Each unit kind's region renderer that has a ``prepare(task)`` is given
        the task in turn; the payloads are kept for drawing its views."""
        payloads: dict[str, bytes] = {}
        for kind in dict.fromkeys(u.kind for u in task.units):
            renderer = self.region_renderer(kind)
            if hasattr(renderer, "prepare"):
                task, more = renderer.prepare(task)
                payloads.update(more)
        self.add_payloads(payloads)
        return task, payloads

    def add_payloads(self, payloads: Mapping[str, bytes]) -> None:
        """PNG bytes by SHA-256 that raster units name (a stored task's, a trace's)."""
        if payloads:
            for kind in RASTER_KINDS:
                self.region_renderer(kind).payloads.update(payloads)

    def draw_tile(self, unit: Unit, tile: Tile) -> np.ndarray:
        return self.region_renderer(unit.kind).draw(unit, tile.crop, tile.size)

    def draw(self, view: View, units: Sequence[Unit]) -> np.ndarray:
        """The RGB ``uint8`` pixels of ``view`` (``view.height`` x ``view.width``)."""
        if len(view.tiles) == 1 and view.tiles[0].at == (0, 0) and not view.tiles[0].label:
            tile = view.tiles[0]
            image = self.draw_tile(units[tile.unit], tile)
            canvas = _fit(image, view.width, view.height)
        else:
            canvas = np.full((view.height, view.width, 3), BACKGROUND, np.uint8)
            for tile in view.tiles:
                x0, y0, _, _ = (int(v) for v in tile.rect)
                image = self.draw_tile(units[tile.unit], tile)
                h, w = image.shape[:2]
                h, w = min(h, view.height - y0), min(w, view.width - x0)
                canvas[y0:y0 + h, x0:x0 + w] = image[:h, :w]
            canvas = _labels(canvas, view.tiles)
        return burn_notes(styled(canvas, view), view)

    def naive_tile(self, unit: Unit, tile: Tile) -> np.ndarray:
        """The baseline way to draw a tile: the whole unit at full detail, then the crop
        (``benchmarks/evidence_step.py`` times it against :meth:`draw_tile`)."""
        return self.region_renderer(unit.kind).naive(unit, tile.crop, tile.size)

    def close(self) -> None:
        for renderer in self._renderers.values():
            close = getattr(renderer, "close", None)
            if close is not None:
                close()
        self._renderers.clear()


def _fit(image: np.ndarray, width: int, height: int) -> np.ndarray:
    if image.shape[:2] == (height, width):
        return image
    canvas = np.full((height, width, 3), BACKGROUND, np.uint8)
    h, w = min(height, image.shape[0]), min(width, image.shape[1])
    canvas[:h, :w] = image[:h, :w]
    return canvas


def _labels(canvas: np.ndarray, tiles: Sequence[Tile]) -> np.ndarray:
    """Each tile's label above it, in up to three lines (the last shortened with an
    ellipsis when the title is longer still), as wide as the room up to the next tile of
    its row (a thumbnail smaller than its cell leaves its label the cell's width)."""
    from PIL import Image, ImageDraw

    picture = Image.fromarray(canvas)
    draw = ImageDraw.Draw(picture)
    face = font("DejaVuSans.ttf", LABEL_FONT_PX)
    for tile in tiles:
        if tile.label:
            x0, y0 = tile.rect[0], tile.rect[1]
            right = min((t.rect[0] for t in tiles if t.at[1] == tile.at[1] and t.rect[0] > x0), default=canvas.shape[1])
            width = max(8, int(right - x0) - 4)
            for k, line in enumerate(_wrap(tile.label, width, lambda t: draw.textlength(t, font=face))):
                draw.text((x0 + 1, y0 - LABEL_PX + 1 + k * (LABEL_FONT_PX + 2)), line, fill=(20, 20, 20), font=face)
    return np.asarray(picture)


def _wrap(text: str, width: int, measure: Any, lines: int = 3) -> list[str]:
    words, out, line = text.split(), [], ""
    for word in words:
        trial = f"{line} {word}".strip()
        if measure(trial) <= width or not line:
            line = trial
        else:
            out.append(line)
            line = word
    out.append(line)
    if len(out) > lines:
        out = out[:lines - 1] + [" ".join(out[lines - 1:])]
    last = out[-1]
    while len(last) > 1 and measure(last) > width:
        last = last[:-2] + "\u2026"
    out[-1] = last
    return out


GRID_COLOR = (0, 150, 255)
STAMP_PX = 14


def styled(canvas: np.ndarray, view: View) -> np.ndarray:
    """``canvas`` with ``view.style`` drawn on it: a coordinate grid (``grid`` lines per
    side, each labelled with its fraction of the view, what a zoom region is given in)
    and timestamps (``timestamps``: "t=i" in a small dark box at each tile's top-left
    corner, ``i`` the tile's place in the pool counted from 1: a frame's place in its
    sequence, as "Frame i" names it)."""
    style = view.style
    if not style.get("grid") and not style.get("timestamps"):
        return canvas
    import cv2

    out = np.ascontiguousarray(canvas.copy())
    h, w = out.shape[:2]
    lines = int(style.get("grid") or 0)
    for k in range(1, lines):
        f = k / lines
        x, y = int(round(f * w)), int(round(f * h))
        cv2.line(out, (x, 0), (x, h - 1), GRID_COLOR, 1)
        cv2.line(out, (0, y), (w - 1, y), GRID_COLOR, 1)
    for k in range(1, lines):  # labels last, on white, along the bottom and right edges (clear of sheet labels)
        f = k / lines
        x, y = int(round(f * w)), int(round(f * h))
        (tw, th), _ = cv2.getTextSize(f"{f:.2g}", cv2.FONT_HERSHEY_SIMPLEX, 0.35, 1)
        for at in ((x + 2, h - 3), (w - tw - 2, y - 2)):
            cv2.rectangle(out, (at[0] - 1, at[1] - th - 1), (at[0] + tw, at[1] + 2), (255, 255, 255), -1)
            cv2.putText(out, f"{f:.2g}", at, cv2.FONT_HERSHEY_SIMPLEX, 0.35, GRID_COLOR, 1, cv2.LINE_AA)
    if style.get("timestamps"):
        for tile in view.tiles:
            x0, y0, x1, _ = (int(v) for v in tile.rect)
            text = f"t={tile.unit + 1}"
            (tw, _), _ = cv2.getTextSize(text, cv2.FONT_HERSHEY_SIMPLEX, 0.4, 1)
            cv2.rectangle(out, (x0, y0), (min(x1, x0 + tw + 6) - 1, y0 + STAMP_PX - 1), (30, 30, 30), -1)
            cv2.putText(out, text, (x0 + 3, y0 + STAMP_PX - 4), cv2.FONT_HERSHEY_SIMPLEX, 0.4, (255, 255, 255), 1,
                        cv2.LINE_AA)
    return out


def burn_notes(canvas: np.ndarray, view: View) -> np.ndarray:
    """``view``'s notes drawn as rings (colour by ordinal, or all in the first colour
    with ``style["rings"] == "mono"``) with their numbers, wherever a tile shows the noted
    point."""
    if not view.notes:
        return canvas
    import cv2

    out = np.ascontiguousarray(canvas.copy())
    mono = view.style.get("rings") == "mono"
    for note in view.notes:
        color = RING_COLORS[0 if mono else note.ordinal % len(RING_COLORS)]
        for tile in view.tiles:
            if tile.unit != note.unit or not (tile.crop[0] <= note.at[0] <= tile.crop[2]
                                              and tile.crop[1] <= note.at[1] <= tile.crop[3]):
                continue
            x, y = tile.to_view(*note.at)
            centre = (int(round(x)), int(round(y)))
            cv2.circle(out, centre, RING_RADIUS, color, 3, lineType=cv2.LINE_AA)
            cv2.putText(out, str(note.ordinal + 1), (centre[0] + RING_RADIUS, centre[1] - RING_RADIUS),
                        cv2.FONT_HERSHEY_SIMPLEX, 0.5, color, 2, lineType=cv2.LINE_AA)
    return out


class RasterCache:
    """Full-resolution rasters by key, the ``size`` most recently used."""

    def __init__(self, size: int = 8):
        self.size = max(1, int(size))
        self._items: OrderedDict[str, np.ndarray] = OrderedDict()

    def get(self, key: str, make: Any) -> np.ndarray:
        if key in self._items:
            self._items.move_to_end(key)
            return self._items[key]
        value = make()
        self._items[key] = value
        while len(self._items) > self.size:
            self._items.popitem(last=False)
        return value

    def clear(self) -> None:
        self._items.clear()
