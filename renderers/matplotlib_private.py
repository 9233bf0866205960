"""The matplotlib steps the chart renderer's caches call that are not matplotlib's public
API, in one place: they are why ``pyproject.toml`` pins matplotlib to one minor version,
and a new matplotlib must pass the renderer's byte-equality tests against plain
matplotlib before the pin moves.

- ``Text._get_layout`` (and the private attributes its result depends on), cached per
  string, font, rotation and alignment by :func:`label_class`;
- ``Patch._draw_paths_with_artist_properties``, which draws many patches of the same
  properties through one graphics context (:func:`draw_patches`);
- the FreeType steps Agg takes to draw text (``FT2Font._layout``, ``_set_transform``,
  ``_render_glyph``, ``RendererAgg._prepare_font``, ``_renderer.draw_text_image``,
  ``fontManager._find_fonts_by_props``), repeated by :func:`text_cached_canvas`'s renderer
  with the same arguments, so each string is measured and each glyph rasterised once.

Each cache is a function of what matplotlib's own step reads, so the pixels are the ones
matplotlib draws without it (``tests/test_renderers_chart.py`` compares them).
"""

from __future__ import annotations

import math
import threading
from typing import Any

import numpy as np

#: what the caches keep, bounded: entries are small (a string's size, a layout, a glyph's
#: coverage bitmap), and charts reuse few strings and fewer glyphs
TEXT_CACHE_LIMIT = 200_000


def bounded(cache: dict) -> dict:
    """``cache``, emptied first when it outgrew :data:`TEXT_CACHE_LIMIT`."""
    if len(cache) > TEXT_CACHE_LIMIT:
        cache.clear()
    return cache


def prop_key(prop: Any) -> tuple:
    """What a FontProperties selects and sizes, as a hashable key."""
    return (tuple(prop.get_family()), prop.get_style(), prop.get_variant(), prop.get_weight(), prop.get_stretch(),
            prop.get_size_in_points(), prop.get_file(), prop.get_math_fontfamily())


# -- text layouts ---------------------------------------------------------------------------------
_LABEL_CLASS: Any = None
_LAYOUTS: dict[tuple, Any] = {}


def _layout_key(text: Any, renderer: Any) -> tuple:
    """What ``Text._get_layout`` reads: everything but the position."""
    return (text.get_text(), prop_key(text._fontproperties), text.get_rotation(), text._horizontalalignment,
            text._verticalalignment, text.get_rotation_mode(), text._linespacing, text._get_multialignment(),
            text.get_parse_math(), text.get_figure(root=True).dpi, type(renderer))


def label_class() -> type:
    """A matplotlib ``Text`` whose layout (its lines' sizes and offsets from the anchor,
    which depend on the string, font, rotation and alignment, never on the position) is
    computed once per such combination and reused: ``Text._get_layout`` is the costliest
    step of drawing a short label."""
    global _LABEL_CLASS
    if _LABEL_CLASS is None:
        from matplotlib.text import Text

        class Label(Text):
            def _get_layout(self, renderer: Any) -> Any:
                if self.get_wrap() or self.get_usetex() or self._bbox_patch is not None:
                    return super()._get_layout(renderer)
                key = _layout_key(self, renderer)
                found = _LAYOUTS.get(key)
                if found is None:
                    found = bounded(_LAYOUTS).setdefault(key, super()._get_layout(renderer))
                return found

        _LABEL_CLASS = Label
    return _LABEL_CLASS


# -- patches --------------------------------------------------------------------------------------
def path_args(patch: Any) -> tuple:
    """What ``Patch.draw`` hands the renderer for ``patch``: its path, transform and fill."""
    transform = patch.get_transform()
    face = patch.get_facecolor()
    return transform.transform_path_non_affine(patch.get_path()), transform.get_affine(), face if face[3] else None


def draw_patches(template: Any, renderer: Any, patches: list[tuple]) -> None:
    """Draw ``patches`` (:func:`path_args` of each) with ``template``'s edge, clip and
    snapping, through one graphics context, in order: what drawing them one by one does
    when only their fills differ."""
    template._draw_paths_with_artist_properties(renderer, patches)


# -- text drawn from caches -----------------------------------------------------------------------
_CANVAS: Any = None
_SIZES: dict[tuple, tuple[float, float, float]] = {}
_HEIGHTS: dict[tuple, tuple] = {}
_GLYPHS: dict[tuple, tuple[np.ndarray, int, int]] = {}
# a layout holds the FreeType font objects that draw its glyphs, which matplotlib keeps one
# per thread and which must not be used from two threads at once (renderers run side by side
# in threads, one per environment): layouts are kept per thread; sizes, heights and glyph
# bitmaps are plain values, shared
_PER_THREAD = threading.local()


def font_height_metrics(prop: Any, dpi: float) -> tuple:
    """A font's line height (ascent, descent, gap in pixels), as ``Text._get_layout``
    measures it when the renderer does not."""
    from matplotlib.font_manager import fontManager, get_font

    font = get_font(fontManager._find_fonts_by_props(prop))
    for table_name, gap_key, ascent_key, descent_key in (
            ("OS/2", "sTypoLineGap", "sTypoAscender", "sTypoDescender"), ("hhea", "lineGap", "ascent", "descent")):
        table = font.get_sfnt_table(table_name)
        if table is None:
            continue
        scale = 1 / font.get_sfnt_table("head")["unitsPerEm"] * prop.get_size_in_points() * dpi / 72
        return table[ascent_key] * scale, -table[descent_key] * scale, table[gap_key] * scale
    return None, None, None


def glyph_layout(renderer: Any, text: str, prop: Any, flags: Any, features: Any, language: Any) -> list[tuple]:
    """The glyphs of ``text`` (font object, glyph index, x, y), as Agg lays them out; cached
    per thread."""
    key = (text, prop_key(prop), renderer.dpi, flags, features, language)
    layouts = _PER_THREAD.__dict__.setdefault("layouts", {})
    items = layouts.get(key)
    if items is None:
        font = renderer._prepare_font(prop)
        items = bounded(layouts).setdefault(key, [
            (item.ft_object, item.glyph_index, item.x, item.y)
            for item in font._layout(text, flags=flags, features=features, language=language)])
    return items


def glyph_bitmap(font: Any, size: float, dpi: float, glyph_index: int, flags: Any, angle: float, matrix: np.ndarray,
                 offset: tuple[int, int], antialiased: bool) -> tuple[np.ndarray, int, int]:
    """The coverage bitmap of one glyph (its buffer, left and top) at a sub-pixel
    ``offset`` (a whole-pixel shift moves FreeType's bitmap by whole pixels, so only the
    offset is part of the key)."""
    from matplotlib.ft2font import RenderMode

    key = (font.fname, font.family_name, font.style_name, size, dpi, glyph_index, flags, angle, *offset, antialiased)
    glyph = _GLYPHS.get(key)
    if glyph is None:
        font.set_size(size, dpi)
        font._set_transform(matrix, list(offset))
        bitmap = font._render_glyph(glyph_index, flags, RenderMode.NORMAL if antialiased else RenderMode.MONO)
        buffer = np.array(bitmap.buffer)
        if not antialiased:
            buffer *= 0xff
        glyph = bounded(_GLYPHS).setdefault(key, (buffer, bitmap.left, bitmap.top))
    return glyph


def draw_glyphs(renderer: Any, gc: Any, x: float, y: float, items: list[tuple], size: float, angle: float,
                flags: Any) -> None:
    """Draw laid-out glyphs as ``RendererAgg._draw_text_glyphs_and_boxes`` does (dy upwards)."""
    cos, sin = math.cos(math.radians(angle)), math.sin(math.radians(angle))
    matrix = (0x10000 * np.array([[cos, -sin], [sin, cos]])).round().astype(int)
    antialiased = gc.get_antialiased()
    for font, glyph_index, dx, dy in items:
        tx = round(0x40 * (x + dx * cos - dy * sin))
        ty = round(0x40 * (renderer.height - y + dx * sin + dy * cos))
        buffer, left, top = glyph_bitmap(font, size, renderer.dpi, glyph_index, flags, angle, matrix,
                                         (tx & 0x3F, ty & 0x3F), antialiased)
        left, top = left + (tx >> 6), top + (ty >> 6)
        renderer._renderer.draw_text_image(buffer, left, int(renderer.height) - top + buffer.shape[0], 0, gc)


def text_cached_canvas() -> type:
    """An Agg canvas whose renderer measures each (string, font, size) once and rasterises
    each glyph once per (font, size, angle, sub-pixel position): the same FreeType calls
    with the same arguments give the same coverage, so the pixels are the ones plain Agg
    draws, bit for bit."""
    global _CANVAS
    if _CANVAS is None:
        _CANVAS = _canvas_class()
    return _CANVAS


def _canvas_class() -> type:
    from matplotlib.backends.backend_agg import FigureCanvasAgg, RendererAgg, get_hinting_flag

    class CachedTextRenderer(RendererAgg):
        def _get_font_height_metrics(self, prop: Any) -> tuple:
            # Text._get_layout asks a renderer that has this for a font's line height
            # (ascent, descent, gap) before it reads them from the font's tables itself
            key = (prop_key(prop), self.dpi)
            found = _HEIGHTS.get(key)
            if found is None:
                found = bounded(_HEIGHTS).setdefault(key, font_height_metrics(prop, self.dpi))
            return found

        def get_text_width_height_descent(self, s: str, prop: Any, ismath: Any) -> Any:
            if ismath:
                return super().get_text_width_height_descent(s, prop, ismath)
            key = (s, prop_key(prop), self.dpi, get_hinting_flag())
            found = _SIZES.get(key)
            if found is None:
                found = bounded(_SIZES).setdefault(key, super().get_text_width_height_descent(s, prop, ismath))
            return found

        def draw_text(self, gc: Any, x: float, y: float, s: str, prop: Any, angle: float, ismath: Any = False,
                      mtext: Any = None) -> None:
            if ismath:
                return super().draw_text(gc, x, y, s, prop, angle, ismath, mtext)
            flags = get_hinting_flag()
            features = mtext.get_fontfeatures() if mtext is not None else None
            language = mtext.get_language() if mtext is not None else None
            items = glyph_layout(self, s, prop, flags, features, language)
            draw_glyphs(self, gc, x, y, items, prop.get_size_in_points(), angle, flags)

    class CachedTextCanvas(FigureCanvasAgg):
        def get_renderer(self) -> Any:
            w, h = self.get_width_height(physical=True)
            key = w, h, self.figure.dpi
            if self._lastKey != key:
                self.renderer = CachedTextRenderer(w, h, self.figure.dpi)
                self._lastKey = key
            return self.renderer

    return CachedTextCanvas
