"""Region renderer of form pages (``vicogym/Evidence-v0``'s ``forms`` family): a crop of
the page's vector layout re-drawn at the view's size, so a zoom is a real re-render with
crisp glyphs, not upsampled pixels.

The page's ``spec`` (``vicogym.sources.evidence.forms.page_layout``) lists fills, rules
and cell borders, check boxes, and texts by font, size and baseline origin in unit
pixels. :meth:`RegionRenderer.draw` maps the crop onto a canvas of exactly the requested
size, draws only what intersects the crop, and sets each text in its font at the scaled
(fractional) pixel size with PIL, anchored at its baseline. Hinting can make a small
size's line a little longer than the scaled advance; such a text is set a fraction
smaller until it fits, so every text stays inside its measured box at every scale. A rule
thinner than one view pixel is drawn one pixel wide in a lighter gray (the same ink
spread over the pixel); text smaller than :data:`MIN_TEXT_PX` is drawn as a light bar
(no glyph is readable there anyway).

:meth:`RegionRenderer.naive` draws the whole page at full resolution and then cuts and
resizes the crop: the baseline a benchmark compares against. Same inputs, same bytes.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import lru_cache
from typing import Any

import numpy as np

from vicogym.renderers.evidence import cut, font_path, supersample
from vicogym.structures.evidence import Box, Unit

PAPER = (255, 255, 255)
#: the smallest font size (view pixels) set as glyphs; smaller text is a light bar
MIN_TEXT_PX = 2.5


@lru_cache(maxsize=512)
def _face(name: str, px: float) -> Any:
    from PIL import ImageFont

    return ImageFont.truetype(font_path(name), px)


def _face_at(name: str, px: float) -> Any:
    return _face(name, round(float(px), 3))


class RegionRenderer:
    """Draws crops of form pages at any scale."""

    def __init__(self, settings: Mapping[str, Any] | None = None, cache_size: int = 8):
        # the env hands a region renderer its family's settings (page size, caps, ...);
        # a page is drawn from its spec alone, so only an optional 'paper' colour is read
        paper = dict(settings or {}).get("paper", PAPER)
        if not (isinstance(paper, (list, tuple)) and len(paper) == 3
                and all(isinstance(v, int) and 0 <= v <= 255 for v in paper)):
            raise ValueError(f"expected the forms renderer's 'paper' as an RGB triple of 0-255, got {paper!r}")
        self.paper = tuple(paper)

    def draw(self, unit: Unit, crop: Box, size: tuple[int, int]) -> np.ndarray:
        """The page's ``crop`` (unit pixels) drawn at ``size`` (width, height).

        Under one view pixel per unit pixel the crop is drawn :func:`supersample` times
        larger and area-averaged down, as a scanner or a camera integrates light over each
        pixel: a glyph, a rule or a check mark smaller than a pixel becomes the share of
        the pixel it covers, not a hinted glyph or a whole pixel of ink."""
        w, h = int(size[0]), int(size[1])
        k = supersample(crop, (w, h))
        if k == 1:
            return np.asarray(self._render(unit.spec, crop, (w, h)))
        return cut(np.asarray(self._render(unit.spec, crop, (w * k, h * k))), (0, 0, w * k, h * k), (w, h))

    def naive(self, unit: Unit, crop: Box, size: tuple[int, int]) -> np.ndarray:
        """The whole page drawn at the detail the view needs (its scale, at least full
        resolution), then the crop cut and resized."""
        scale = max(1.0, min(float(unit.max_scale), size[0] / (crop[2] - crop[0]), size[1] / (crop[3] - crop[1])))
        whole = (max(1, round(unit.width * scale)), max(1, round(unit.height * scale)))
        full = np.asarray(self._render(unit.spec, unit.frame, whole))
        return cut(full, tuple(v * scale for v in crop), size)

    def _render(self, spec: Mapping[str, Any], crop: Box, size: tuple[int, int]) -> Any:
        from PIL import Image, ImageDraw

        w, h = int(size[0]), int(size[1])
        if w < 1 or h < 1:
            raise ValueError(f"expected a drawing size of at least 1x1 px, got {size!r}")
        x0, y0, x1, y1 = (float(v) for v in crop)
        if not (x1 > x0 and y1 > y0):
            raise ValueError(f"expected a crop with x0 < x1 and y0 < y1, got {list(crop)!r}")
        sx, sy = w / (x1 - x0), h / (y1 - y0)
        scale = (sx + sy) / 2
        image = Image.new("RGB", (w, h), self.paper)
        draw = ImageDraw.Draw(image)

        def vx(x: float) -> float:
            return (x - x0) * sx

        def vy(y: float) -> float:
            return (y - y0) * sy

        def seen(box: Any, margin: float = 2.0) -> bool:
            return box[0] - margin < x1 and box[2] + margin > x0 and box[1] - margin < y1 and box[3] + margin > y0

        for fx0, fy0, fx1, fy1, gray in spec.get("fills", ()):
            if seen((fx0, fy0, fx1, fy1)):
                draw.rectangle([round(vx(fx0)), round(vy(fy0)), round(vx(fx1)) - 1, round(vy(fy1)) - 1],
                               fill=(gray, gray, gray))
        for line in spec.get("lines", ()):
            lx0, ly0, lx1, ly1, width, gray = line
            if seen((min(lx0, lx1), min(ly0, ly1), max(lx0, lx1), max(ly0, ly1)), width + 2):
                self._line(draw, vx(lx0), vy(ly0), vx(lx1), vy(ly1), width * scale, gray)
        for box in spec.get("boxes", ()):
            bx0, by0, bx1, by1 = box["box"]
            if not seen(box["box"]):
                continue
            t = box.get("width", 1.0) * scale
            gray = box.get("gray", 30)
            for a in ((bx0, by0, bx1, by0), (bx1, by0, bx1, by1), (bx0, by1, bx1, by1), (bx0, by0, bx0, by1)):
                self._line(draw, vx(a[0]), vy(a[1]), vx(a[2]), vy(a[3]), t, gray)
            if box.get("checked"):
                inset = 0.2 * (bx1 - bx0)
                ink = (gray, gray, gray)
                mark = max(1, round(1.8 * t))
                draw.line([vx(bx0 + inset), vy(by0 + inset), vx(bx1 - inset), vy(by1 - inset)], fill=ink, width=mark)
                draw.line([vx(bx0 + inset), vy(by1 - inset), vx(bx1 - inset), vy(by0 + inset)], fill=ink, width=mark)
        for text in spec.get("texts", ()):
            if seen(text["box"]):
                self._text(draw, text, vx(text["x"]), vy(text["y"]), sx, sy)
        return image

    def _line(self, draw: Any, ax: float, ay: float, bx: float, by: float, thickness: float, gray: int) -> None:
        """A rule from (ax, ay) to (bx, by) in view pixels, ``thickness`` view pixels
        wide; under one pixel it is one pixel of proportionally lighter gray."""
        paper = self.paper[0]
        shade = gray if thickness >= 1 else round(paper - (paper - gray) * max(thickness, 0.0))
        color = (shade, shade, shade)
        t = max(1, round(thickness))
        if abs(ay - by) < 1e-6:  # horizontal
            top = round(ay - t / 2)
            draw.rectangle([round(min(ax, bx)), top, max(round(min(ax, bx)), round(max(ax, bx)) - 1), top + t - 1],
                           fill=color)
        elif abs(ax - bx) < 1e-6:  # vertical
            left = round(ax - t / 2)
            draw.rectangle([left, round(min(ay, by)), left + t - 1, max(round(min(ay, by)), round(max(ay, by)) - 1)],
                           fill=color)
        else:
            draw.line([ax, ay, bx, by], fill=color, width=t)

    def _text(self, draw: Any, text: Mapping[str, Any], x: float, y: float, sx: float, sy: float) -> None:
        px = float(text["px"]) * sy
        color = tuple(text.get("color", (20, 20, 20)))
        target = float(text["w"]) * sx
        if px < MIN_TEXT_PX:
            # a bar over the x-height band, in a light shade of the ink
            shade = tuple(round(255 - (255 - c) * 0.35) for c in color)
            top, bottom = y - 0.5 * px, y
            if target >= 1:
                draw.rectangle([round(x), round(top), max(round(x), round(x + target) - 1),
                                max(round(top), round(bottom) - 1)], fill=shade)
            return
        face = _face_at(text["font"], px)
        length = face.getlength(text["text"])
        if length > target + 0.25 and length > 0:
            face = _face_at(text["font"], px * target / length)
        draw.text((x, y), text["text"], fill=color, font=face, anchor="ls")
