"""Chart renderer: structure -> RGB pixels plus the pixel boxes of marks and labels.

Uses matplotlib's object-oriented API on the Agg canvas (no pyplot state). Speed comes
from drawing a chart in three layers, each cached by exactly what it depends on:

1. the *frame*: axes box, title, axis titles, legend. Keyed (:class:`FrameKey`) by the
   spec, the series, and the room the tick labels need (the value axis' order of
   magnitude, the category labels' extent rounded up), not by rows or values;
2. the *axes layer*: both axes' ticks, tick labels and gridlines drawn over the frame,
   keyed by (rows, value limits, gridlines); value limits are "nice" numbers, so most
   value edits keep them;
3. the *marks*: bars, line points, wedges and data labels, drawn every time from pools
   of animated artists with ``draw_artist`` over the restored axes layer, and a legend
   inside the plot over them, at the first place where it covers none of them (else the
   chart is drawn with its legend outside).

So a value edit usually costs only the marks, a row edit (add, remove, rename,
reorder) an axes layer, and a style or series edit a new frame. Every cached layer's
pixels are a function of its key alone, and a fresh render takes the same drawing steps
as a cached one, so the bytes of a render never depend on what was rendered before.

Across charts (generation draws fresh ones all the time), three things are shared: an
evicted frame's figure, axes, tick styles, bar and label pools are set up again for a new
frame of the same figure size (:func:`shape_of`), which saves matplotlib's costly axes
and tick construction; ticks are drawn from per-frame pools (:class:`_AxisArtists`: one
line holding every tick mark, gridlines, labels) updated in place, not by matplotlib's
Tick objects one at a time; and text is measured once per (string, font, size), laid
out once per (string, font, rotation, alignment) (:func:`label_class`) and each glyph
rasterised once per (font, size, angle, sub-pixel offset) (:func:`text_cached_canvas`),
the same FreeType calls that plain Agg makes. Tests compare each against matplotlib's
own path (new figures, its own ticks, plain Agg), byte for byte.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from vicogym.answers import format_number
from vicogym.renderers.matplotlib_private import draw_patches, label_class, path_args, text_cached_canvas
from vicogym.structures.chart import ChartSpec, ChartStructure, Table

BAR_TYPES = ("bar", "hbar", "grouped_bar", "stacked_bar")
_NICE = (1.0, 1.2, 1.5, 2.0, 2.5, 3.0, 4.0, 5.0, 6.0, 8.0, 10.0)


def nice_ceiling(x: float) -> float:
    """The smallest 'nice' number (1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8 x 10^k) >= x > 0."""
    if x <= 0:
        return 0.0
    exponent = math.floor(math.log10(x))
    for step in _NICE:
        candidate = step * 10.0**exponent
        if candidate >= x * (1 - 1e-12):
            return float(f"{candidate:.12g}")
    return 10.0 ** (exponent + 1)


def value_limits(table: Table, chart_type: str) -> tuple[float, float]:
    """Value-axis limits with 8% headroom, snapped to nice numbers (part of the axes-layer key)."""
    if chart_type == "pie":
        return (0.0, 1.0)
    if chart_type == "stacked_bar":
        totals = [sum(v for v in row if v is not None) for row in table.values]
        hi, lo = max(totals + [0.0]), 0.0
    else:
        present = [v for v in table.all_values() if v is not None] or [0.0]
        hi, lo = max(present + [0.0]), min(present + [0.0])
    top = nice_ceiling(hi * 1.08) if hi > 0 else 0.0
    bottom = -nice_ceiling(-lo * 1.08) if lo < 0 else 0.0
    if top == bottom:
        top = 1.0
    return bottom, top


def axis_magnitude(limits: tuple[float, float]) -> tuple[int, int]:
    """Decimal orders of magnitude of the limits (the frame reserves tick-label room by it)."""
    return tuple(int(math.floor(math.log10(abs(v)))) if v else -99 for v in limits)  # type: ignore[return-value]


def layout_limits(magnitude: tuple[int, int]) -> tuple[float, float]:
    """Limits that a frame is laid out with: determined by the magnitude alone, so a frame
    never depends on which values happened to build it."""
    lo, hi = (0.0 if m == -99 else 9.0 * 10.0**m for m in magnitude)
    return (-lo, hi if hi else 1.0)


def _axis_number(x: float, _pos: Any = None) -> str:
    text = f"{x:,.2f}".rstrip("0").rstrip(".") if abs(x) >= 1000 else f"{x:.6g}"
    return "0" if text in ("-0", "") else text


@dataclass(frozen=True)
class ChartFacts:
    """One rendered chart. Boxes are ``[x0, y0, x1, y1]`` in image pixels, origin top-left;
    each label also carries its font size in points (``size_pt``; ``facts["dpi"]`` turns it
    into pixels)."""

    image: np.ndarray
    marks: list[dict[str, Any]]
    labels: list[dict[str, Any]]
    value_limits: tuple[float, float]
    facts: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class FrameKey:
    """Everything a frame is drawn from. Category labels are not in it (they are drawn per
    render) except for pies, whose legend lists them; only the room they need is."""

    spec: ChartSpec
    series: tuple[str, ...]
    unit: str
    magnitude: tuple[int, int]
    rotation: float
    category_room: int
    lead_room: int = 0
    pie_rows: tuple[str, ...] = ()
    #: series with no value drawn (every cell missing), which the legend leaves out
    undrawn: tuple[int, ...] = ()


@dataclass(frozen=True)
class _LegendFacts:
    """A drawn legend's box, its entries (text, colour, boxes) and its entries' labels."""

    box: list[float]
    entries: tuple[dict[str, Any], ...]
    labels: tuple[dict[str, Any], ...]


@dataclass
class _Frame:
    key: FrameKey
    fig: Any
    canvas: Any
    ax: Any
    background: Any
    height: int
    colors: list[Any]
    bars: list[list[Any]] = field(default_factory=list)  # per series index, per row
    lines: dict[str, Any] = field(default_factory=dict)
    wedges: list[Any] = field(default_factory=list)
    texts: list[Any] = field(default_factory=list)
    static_labels: list[dict[str, Any]] = field(default_factory=list)
    layers: OrderedDict = field(default_factory=OrderedDict)
    #: the legend's box, entries and entry labels where the frame draws it (its spec's place)
    legend: _LegendFacts | None = None
    legend_on_top: Any = None  # a legend inside the plot, drawn over the marks
    plot_box: list[float] | None = None
    axis_titles: list[Any] = field(default_factory=list)
    axis_artists: tuple[Any, Any] = ()  # (value axis, category axis) tick pools: _AxisArtists


def shape_of(key: FrameKey) -> tuple | None:
    """What a frame's figure, axes and ticks are tied to: its size. Any two non-pie keys of
    one figure size share them; everything else a key sets (chart type, fonts, turned
    labels, title, legend, texts, colours, margins) is set again when a frame is reshaped,
    and a reshaped frame draws the bytes a new one does (tests compare them). Pies (axis
    off, square aspect) are not shared."""
    spec = key.spec
    if spec.chart_type == "pie":
        return None
    return tuple(spec.figure_size)


def _palette(name: str, n: int) -> list[tuple[float, float, float, float]]:
    from matplotlib import colormaps

    cmap = colormaps[name]
    colors = getattr(cmap, "colors", None)
    if colors is not None and len(colors) >= n and name != "viridis":
        return [tuple(c) + (1.0,) if len(c) == 3 else tuple(c) for c in colors[:n]]
    return [tuple(cmap(x)) for x in np.linspace(0.1, 0.9, max(n, 1))]


#: evicted frames kept for reshaping (each keeps its figure and its canvas buffer, about 1 MB)
SPARES = 32
ROTATION = 35.0
GRID_ALPHA = 0.4
LAYERS_PER_FRAME = 4
ROOM_STEP = 24.0  # px: category label room is rounded up to this, so most row edits keep a frame
PLOT_SHARE = 0.75  # of the figure width, what the plot area is assumed to get when labels are laid out
GLYPH_WARNING = r"Glyph .* missing from font"  # reported as facts (missing_glyphs) instead


def rgb255(color: Any) -> tuple[int, int, int]:
    """A matplotlib colour as drawn on white: ``(r, g, b)`` in 0-255."""
    r, g, b, a = (tuple(color) + (1.0,))[:4]
    return tuple(int(round(255 * (c * a + (1.0 - a)))) for c in (r, g, b))  # type: ignore[return-value]


class ChartRenderer:
    """Renders :class:`ChartStructure` objects; holds an LRU cache of frames."""

    def __init__(self, dpi: int = 80, cache_size: int = 8):
        if not isinstance(dpi, int) or not 30 <= dpi <= 300:
            raise ValueError(f"expected dpi as an integer in [30, 300], got {dpi!r}")
        if not isinstance(cache_size, int) or cache_size < 1:
            raise ValueError(f"expected cache_size as a positive integer, got {cache_size!r}")
        self.dpi = dpi
        self.cache_size = cache_size
        self._frames: OrderedDict[FrameKey, _Frame] = OrderedDict()
        #: evicted frames whose figure, axes and ticks a new frame of the same shape reuses
        self._spares: list[_Frame] = []
        self.frames_reshaped = 0
        self._measure: Any = None
        self._sizes: dict[tuple[str, float], tuple[float, float]] = {}
        self._charmap: set[int] | None = None
        self.frames_built = 0

    def max_image_shape(self) -> tuple[int, int, int]:
        """The largest image any allowed figure size gives (8 x 6 inches)."""
        return (int(round(6.0 * self.dpi)), int(round(8.0 * self.dpi)), 3)

    # -- public ----------------------------------------------------------------------
    def render(self, structure: ChartStructure) -> ChartFacts:
        import warnings

        table, spec = structure.table, structure.spec
        limits = value_limits(table, spec.chart_type)
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=GLYPH_WARNING)
            key = self.frame_key(structure, limits)
            frame = self._frames.get(key)
            if frame is None:
                frame = self._build_frame(key, self._spare(key))
                self._frames[key] = frame
                self.frames_built += 1
                if len(self._frames) > self.cache_size:
                    self.evict(1)
            else:
                self._frames.move_to_end(key)
            facts = self._draw(frame, structure, limits)
        if facts is None:  # a legend inside the plot covers a mark wherever it goes: it goes outside
            return self.render(replace(structure, spec=replace(spec, legend="outside")))
        return facts

    def missing_glyphs(self, text: str) -> str:
        """The characters of ``text`` the chart font cannot draw (shown as empty boxes)."""
        if self._charmap is None:
            from matplotlib.font_manager import FontProperties, findfont
            from matplotlib.ft2font import FT2Font

            self._charmap = set(FT2Font(findfont(FontProperties())).get_charmap())
        return "".join(dict.fromkeys(c for c in text if ord(c) not in self._charmap and not c.isspace()))

    def close(self) -> None:
        for frame in [*self._frames.values(), *self._spares]:
            frame.fig.clear()
        self._frames.clear()
        self._spares.clear()

    def evict(self, count: int | None = None) -> None:
        """Evict the ``count`` least recently used frames (all by default): a frame of a
        shape that can be reshaped keeps its figure, axes and ticks among the spares;
        others are dropped, not cleared (clearing a discarded figure is wasted work)."""
        for _ in range(len(self._frames) if count is None else min(count, len(self._frames))):
            _old_key, old = self._frames.popitem(last=False)
            if shape_of(old.key) is not None:
                old.layers.clear()  # saved pixels go; the figure, axes and ticks stay
                old.background = None
                self._spares.append(old)
                if len(self._spares) > SPARES:
                    self._spares.pop(0)

    def _spare(self, key: FrameKey) -> _Frame | None:
        """An evicted frame of ``key``'s shape, taken from the spares, or ``None``."""
        shape = shape_of(key)
        if shape is None:
            return None
        for i, frame in enumerate(self._spares):
            if shape_of(frame.key) == shape:
                return self._spares.pop(i)
        return None

    def frame_key(self, s: ChartStructure, limits: tuple[float, float]) -> FrameKey:
        t, spec = s.table, s.spec
        # data labels and gridlines are drawn per render (gridlines with the axes layer)
        spec = replace(spec, data_labels=False, gridlines=False)
        if spec.chart_type == "pie":
            return FrameKey(spec, t.series, t.unit, (0, 0), 0.0, 0, 0, t.rows)
        horizontal = spec.chart_type == "hbar"
        sizes = [self._text_size(r, spec.font_size * 0.9) for r in t.rows]
        slot = PLOT_SHARE * spec.figure_size[0] * self.dpi / len(t.rows)
        # labels too wide for their slot are turned, so neighbours do not run together
        rotation = ROTATION if not horizontal and max(w for w, _ in sizes) > 0.92 * slot else 0.0
        lead = 0.0
        if horizontal:
            room = max(w for w, _ in sizes)
        elif rotation:
            angle = math.radians(rotation)
            room = max(w * math.sin(angle) + h * math.cos(angle) for w, h in sizes)
            # a turned label ends at its tick: the first ones reach left of the plot
            lead = max(w * math.cos(angle) - (i + 0.5) * slot for i, (w, _) in enumerate(sizes))
        else:
            room = max(h for _, h in sizes)
        undrawn = tuple(j for j, row in enumerate(zip(*t.values)) if all(v is None for v in row))
        return FrameKey(spec, t.series, t.unit, axis_magnitude(limits), rotation, _rounded_room(room),
                        _rounded_room(lead) if lead > 0 else 0, undrawn=undrawn)

    def _text_size(self, text: str, size: float) -> tuple[float, float]:
        cached = self._sizes.get((text, size))
        if cached is not None:
            return cached
        if len(self._sizes) > 20000:
            self._sizes.clear()
        if self._measure is None:
            from matplotlib.figure import Figure

            self._measure = text_cached_canvas()(Figure(dpi=self.dpi))
        self._sizes[(text, size)] = _text_size(self._measure, text, size)
        return self._sizes[(text, size)]

    # -- frame -----------------------------------------------------------------------
    def _build_frame(self, key: FrameKey, spare: _Frame | None = None) -> _Frame:
        """The frame of ``key``: a new figure, or ``spare`` (a frame of the same shape)
        stripped of everything its own key drew and set up again for ``key``, which keeps
        matplotlib's axes and tick objects, the costly part of a new figure."""
        if spare is not None:
            fig, canvas, ax, bars, data_labels = self._reuse(spare, key)
        else:
            fig, canvas, ax, bars, data_labels = self._new_figure(key)
        colors = _palette(key.spec.palette, len(key.pie_rows if key.spec.chart_type == "pie" else key.series))
        self._style(key, spare, ax, bars, data_labels, colors)
        if key.spec.chart_type == "pie":
            handles, axis_artists, titles = _set_up_pie(ax, key, colors), (), ("", "")
        else:
            handles, axis_artists, titles = _set_up_axes(fig, ax, key, spare, colors)
        _place_legend(ax, key.spec, handles)
        legend_outside = key.spec.legend == "outside"
        _fit_margins(fig, canvas, key, ax.get_legend() is not None and legend_outside)
        axis_titles = _axis_titles(fig, ax, key.spec, *titles)
        canvas.draw()
        frame = _Frame(key, fig, canvas, ax, canvas.copy_from_bbox(fig.bbox), int(fig.bbox.height), colors)
        frame.axis_titles, frame.bars, frame.texts, frame.axis_artists = axis_titles, bars, data_labels, axis_artists
        _measure(frame)
        _add_animated_marks(frame)
        return frame

    def _reuse(self, spare: _Frame, key: FrameKey) -> tuple:
        """``spare``'s figure, canvas and axes, back to a new axes' state where ``key`` may
        differ from its own; its pooled bars and data labels stay in the axes, unseen."""
        fig, canvas, ax = spare.fig, spare.canvas, spare.ax
        for artist in [*spare.lines.values(), *spare.axis_titles]:
            artist.remove()
        if ax.get_legend() is not None:
            ax.get_legend().remove()
        ax.title.set_text("")
        if spare.key.rotation and not key.rotation:  # the tick style the pooled labels copy
            ax.tick_params(axis="x", labelrotation=0.0)
        self.frames_reshaped += 1
        return fig, canvas, ax, spare.bars, spare.texts

    def _new_figure(self, key: FrameKey) -> tuple:
        from matplotlib.figure import Figure

        fig = Figure(figsize=key.spec.figure_size, dpi=self.dpi)
        canvas = text_cached_canvas()(fig)
        ax = fig.add_subplot()
        ax.set_autoscale_on(False)
        return fig, canvas, ax, [], []

    @staticmethod
    def _style(key: FrameKey, spare: _Frame | None, ax: Any, bars: list[list[Any]], data_labels: list[Any],
               colors: list[Any]) -> None:
        """Pools recoloured (and cut to the series there are), fonts sized, the title set."""
        fs = key.spec.font_size
        for artist in (b for pool in bars[len(colors):] for b in pool):
            artist.remove()
        del bars[len(colors):]
        for pool, color in zip(bars, colors):
            for patch in pool:
                patch.set_facecolor(color)
        for text in data_labels:
            text.set_fontsize(fs * 0.8)
        if spare is None or spare.key.spec.font_size != fs:  # tick_params touches every tick: only on a change
            ax.tick_params(labelsize=fs * 0.9)
        # every text is data, never TeX: "$5 to $10" is drawn as written (titles and legend
        # entries here; tick and data labels where they are made)
        ax.title.set_parse_math(False)
        if key.spec.title:
            ax.set_title(key.spec.title, fontsize=fs * 1.15, y=1.0, pad=6.0)  # fixed y: no tight-bbox pass

    # -- per render ------------------------------------------------------------------
    def _text(self, frame: _Frame, k: int) -> Any:
        while len(frame.texts) <= k:  # as Axes.text makes them, of the layout-caching kind
            text = label_class()(0.0, 0.0, "", fontsize=frame.key.spec.font_size * 0.8, animated=True, clip_on=False,
                                 parse_math=False, verticalalignment="baseline", horizontalalignment="left",
                                 transform=frame.ax.transData)
            frame.ax.add_artist(text)
            frame.texts.append(text)
        return frame.texts[k]

    def _axes_layer(self, frame: _Frame, rows: tuple[str, ...], limits: tuple[float, float],
                    gridlines: bool) -> list[dict[str, Any]]:
        """Put the frame plus both axes (ticks, labels, gridlines) on the canvas; return the
        tick labels' facts. The pixels are a function of (frame, rows, limits, gridlines)
        alone, so they are cached per frame and restored when an edit keeps those."""
        key = (rows, limits, gridlines)
        layer = frame.layers.get(key)
        if layer is not None:
            frame.layers.move_to_end(key)
            frame.canvas.restore_region(layer[0])
            return layer[1]
        ax, renderer = frame.ax, frame.canvas.get_renderer()
        frame.canvas.restore_region(frame.background)
        _, val_axis = _category_and_value_axes(ax, frame.key.spec.chart_type)
        # the value axis' ticks are where its locator puts them within the limits, as matplotlib
        # places them; categories sit at 0..n-1, all within the limits (-0.5, n - 0.5)
        low, high = sorted(val_axis.get_view_interval())
        slack = (high - low) * 1e-10
        values = [float(v) for v in val_axis.get_major_locator()() if low - slack <= v <= high + slack]
        value_axis, category_axis = frame.axis_artists
        facts = []
        for kind, artists, locs, texts in (
                ("value_tick", value_axis, values, [_axis_number(v) for v in values]),
                ("category", category_axis, [float(i) for i in range(len(rows))], list(rows))):
            drawn = artists.draw(renderer, locs, texts, gridlines and kind == "value_tick")
            for loc, text, label in zip(locs, texts, drawn):
                if text:
                    fact = {"kind": kind, "text": text, "value": loc, "size_pt": float(label.get_fontsize()),
                            "box": _box(label.get_window_extent(renderer), frame.height)}
                    if kind == "category" and frame.key.rotation:
                        # a turned label's box is wider than its glyphs: report the unturned size too
                        fact["rotation"] = frame.key.rotation
                        fact["size"] = list(self._text_size(text, frame.key.spec.font_size * 0.9))
                    facts.append(fact)
        frame.layers[key] = (frame.canvas.copy_from_bbox(frame.fig.bbox), facts)
        if len(frame.layers) > LAYERS_PER_FRAME:
            frame.layers.popitem(last=False)
        return facts

    def _draw(self, frame: _Frame, s: ChartStructure, limits: tuple[float, float]) -> ChartFacts | None:
        """One render over the frame: the axes layer, the marks, their data labels, the
        legend on top (at the first place of :data:`LEGEND_PLACES` where it covers nothing
        drawn; ``None`` when there is none); the pixels and what they show."""
        t, spec = s.table, s.spec
        values = np.array([[np.nan if v is None else v for v in row] for row in t.values], dtype=float)
        labels = list(frame.static_labels)
        if spec.chart_type == "pie":
            frame.canvas.restore_region(frame.background)
            boxes, anchors = _draw_wedges(frame, values[:, 0])
        else:
            labels += self._draw_axes(frame, t.rows, limits, spec)
            if spec.chart_type in BAR_TYPES:
                boxes, anchors = _draw_bars(frame, values, spec.chart_type)
            else:
                boxes, anchors = _draw_lines(frame, t.series, values, self.dpi)
        marks, data_labels = self._draw_data_labels(frame, t, spec.data_labels, boxes, anchors)
        labels += data_labels
        legend, position = frame.legend, (spec.legend if frame.legend is not None else None)
        if frame.legend_on_top is not None:
            position = _legend_place(frame, marks, labels)
            if position is None:
                return None
            frame.fig.draw_artist(frame.legend_on_top)
            if position != spec.legend:  # moved: measured where it is drawn
                legend = _legend_facts(frame, frame.legend_on_top)
        if legend is not None:
            labels[len(frame.static_labels):len(frame.static_labels)] = [dict(lab) for lab in legend.labels]
        if spec.chart_type == "pie":
            _pie_facts(frame, marks, values[:, 0])
        import cv2

        image = cv2.cvtColor(np.asarray(frame.canvas.buffer_rgba()), cv2.COLOR_RGBA2RGB)
        names = t.rows if spec.chart_type == "pie" else t.series
        facts = {
            "legend_box": list(legend.box) if legend is not None else None,
            "legend_entries": [dict(e) for e in legend.entries] if legend is not None else [],
            "legend_position": position,
            "colors": {name: rgb255(c) for name, c in zip(names, frame.colors)},
            "plot_box": frame.plot_box,
            "image_size": [int(image.shape[1]), int(image.shape[0])],
            "dpi": self.dpi,
            "missing_glyphs": {lab["text"]: m for lab in labels if (m := self.missing_glyphs(lab["text"]))},
        }
        return ChartFacts(image=image, marks=marks, labels=labels, value_limits=limits, facts=facts)

    def _draw_axes(self, frame: _Frame, rows: tuple[str, ...], limits: tuple[float, float],
                   spec: ChartSpec) -> list[dict[str, Any]]:
        """The data limits of this render, and the axes layer over the frame; its tick
        labels' facts."""
        ax, n_rows = frame.ax, len(rows)
        if spec.chart_type == "hbar":
            ax.set_ylim(n_rows - 0.5, -0.5)
            ax.set_xlim(*limits)
        else:
            ax.set_xlim(-0.5, n_rows - 0.5)
            ax.set_ylim(*limits)
        return self._axes_layer(frame, rows, limits, spec.gridlines)

    def _draw_data_labels(self, frame: _Frame, t: Table, data_labels: bool, boxes: list[Any],
                          anchors: list[tuple[float, float, str, str]]) -> tuple[list[dict], list[dict]]:
        """Every mark's fact and, with data labels, its printed value at its anchor."""
        fig, ax, renderer = frame.fig, frame.ax, frame.canvas.get_renderer()
        n_series = len(t.series)
        marks, labels = [], []
        k_text = 0
        for k in range(len(t.rows) * n_series):
            i, j = divmod(k, n_series)
            v = t.values[i][j]
            marks.append({"row": t.rows[i], "series": t.series[j], "value": v, "box": boxes[k]})
            if data_labels and v is not None:
                text = self._text(frame, k_text)
                k_text += 1
                x, y, ha, va = anchors[k]
                text.set_position(_nudged(ax, x, y, ha, va))
                text.set_text(format_number(v) + (t.unit if t.unit == "%" else ""))
                text.set_horizontalalignment(ha)
                text.set_verticalalignment(va)
                fig.draw_artist(text)
                labels.append({"kind": "data_label", "text": text.get_text(), "row": t.rows[i], "series": t.series[j],
                               "size_pt": float(text.get_fontsize()),
                               "box": _box(text.get_window_extent(renderer), frame.height)})
        return marks, labels


def _pooled_bar(frame: _Frame, series_index: int, i: int) -> Any:
    """Bar ``i`` of a series, from the frame's pools (they grow on demand; unused bars are
    simply not drawn)."""
    from matplotlib.patches import Rectangle

    while len(frame.bars) <= series_index:
        frame.bars.append([])
    pool = frame.bars[series_index]
    while len(pool) <= i:
        patch = Rectangle((0.0, 0.0), 0.0, 0.0, facecolor=frame.colors[series_index], animated=True)
        frame.ax.add_patch(patch)
        pool.append(patch)
    return pool[i]


_NO_ANCHOR = (0.0, 0.0, "center", "center")


def _draw_bars(frame: _Frame, values: np.ndarray, chart_type: str) -> tuple[list[Any], list[tuple]]:
    """Bars from the frame's pools, drawn through one graphics context; each mark's box and
    its data label's anchor (a missing value has neither)."""
    n_rows, n_series = values.shape
    horizontal, stacked = chart_type == "hbar", chart_type == "stacked_bar"
    grouped = chart_type in ("grouped_bar", "hbar") and n_series > 1
    width = 0.8 / n_series if grouped else 0.7
    bottoms = np.zeros(n_rows)
    boxes: list[Any] = []
    anchors: list[tuple] = []
    bar_paths: list[tuple] = []
    for i in range(n_rows):
        for j in range(n_series):
            v = values[i, j]
            offset = (j - (n_series - 1) / 2.0) * width if grouped else 0.0
            base = bottoms[i] if stacked else 0.0
            length = 0.0 if np.isnan(v) else v
            patch = _pooled_bar(frame, j, i)
            if horizontal:
                patch.set_bounds(base, i + offset - width / 2.0, length, width)
            else:
                patch.set_bounds(i + offset - width / 2.0, base, width, length)
            if stacked:
                bottoms[i] += length
            if np.isnan(v):
                boxes.append(None)
                anchors.append(_NO_ANCHOR)
                continue
            bar_paths.append(path_args(patch))
            boxes.append(_data_box(frame.ax, patch.get_x(), patch.get_y(), patch.get_width(), patch.get_height(),
                                   frame.height))
            mid = i + offset
            if stacked:
                anchors.append((mid, base + length / 2.0, "center", "center"))
            elif horizontal:
                anchors.append((base + length, mid, "left" if v >= 0 else "right", "center"))
            else:
                anchors.append((mid, base + length, "center", "bottom" if v >= 0 else "top"))
    if bar_paths:
        # every bar has the same edge, clip and snapping (only its fill differs): one
        # graphics context for all, in the order they would be drawn one by one
        draw_patches(frame.bars[0][0], frame.canvas.get_renderer(), bar_paths)
    return boxes, anchors


def _draw_lines(frame: _Frame, series: tuple[str, ...], values: np.ndarray, dpi: int) -> tuple[list[Any], list[tuple]]:
    """The series' lines; each point's box and its data label's anchor."""
    n_rows, n_series = values.shape
    positions = np.arange(n_rows, dtype=float)
    half = 4.0 * dpi / 72.0
    for j, name in enumerate(series):
        frame.lines[name].set_data(positions, values[:, j])
        frame.fig.draw_artist(frame.lines[name])
    boxes: list[Any] = []
    anchors: list[tuple] = []
    for i in range(n_rows):
        for j in range(n_series):
            v = values[i, j]
            if np.isnan(v):
                boxes.append(None)
                anchors.append(_NO_ANCHOR)
                continue
            px, py = frame.ax.transData.transform((positions[i], v))
            boxes.append([round(px - half, 1), round(frame.height - py - half, 1),
                          round(px + half, 1), round(frame.height - py + half, 1)])
            anchors.append((positions[i], v, "center", "bottom"))
    return boxes, anchors


def _draw_wedges(frame: _Frame, column: np.ndarray) -> tuple[list[Any], list[tuple]]:
    """A pie's wedges, clockwise from the top; each wedge's box and its label's anchor."""
    renderer = frame.canvas.get_renderer()
    total = float(column.sum())
    angle = 90.0
    boxes: list[Any] = []
    anchors: list[tuple] = []
    for k, wedge in enumerate(frame.wedges):
        sweep = 360.0 * column[k] / total
        wedge.set_theta1(angle - sweep)
        wedge.set_theta2(angle)
        mid = math.radians(angle - sweep / 2.0)
        angle -= sweep
        frame.fig.draw_artist(wedge)
        boxes.append(_box(wedge.get_window_extent(renderer), frame.height) if column[k] > 0 else None)
        anchors.append((0.7 * math.cos(mid), 0.7 * math.sin(mid), "center", "center"))
    return boxes, anchors


def _set_up_pie(ax: Any, key: FrameKey, colors: list[Any]) -> list[Any]:
    """A pie's axes (square, no axis); its legend handles."""
    from matplotlib.patches import Patch

    ax.set_xlim(-1.25, 1.25)
    ax.set_ylim(-1.25, 1.25)
    ax.set_aspect("equal")
    ax.axis("off")
    return [Patch(facecolor=c, edgecolor="white", label=r) for r, c in zip(key.pie_rows, colors)]


def _set_up_axes(fig: Any, ax: Any, key: FrameKey, spare: _Frame | None, colors: list[Any]) -> tuple:
    """The axes of a chart with axes: animated (the frame's tick pools draw them), turned
    labels where the key turns them; the legend handles, the tick pools and the axis
    titles (bottom, left)."""
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    spec = key.spec
    cat_axis, val_axis = _category_and_value_axes(ax, spec.chart_type)
    cat_axis.set_animated(True)
    val_axis.set_animated(True)
    if key.rotation and (spare is None or spare.key.rotation != key.rotation):
        ax.tick_params(axis="x", labelrotation=key.rotation)
    axis_artists = spare.axis_artists if spare is not None else (_AxisArtists(fig), _AxisArtists(fig))
    axis_artists[0].style(val_axis, 0.0)
    axis_artists[1].style(cat_axis, key.rotation)
    titles = (spec.y_label, spec.x_label) if spec.chart_type == "hbar" else (spec.x_label, spec.y_label)
    listed = [(n, c) for j, (n, c) in enumerate(zip(key.series, colors)) if j not in key.undrawn]
    if spec.chart_type == "line":
        handles = [Line2D([], [], color=c, marker="o", markersize=4, label=n) for n, c in listed]
    else:
        handles = [Patch(facecolor=c, label=n) for n, c in listed]
    return handles, axis_artists, titles


def _place_legend(ax: Any, spec: ChartSpec, handles: list[Any]) -> None:
    """The legend where the spec puts it, listing ``handles``: the series with a value drawn
    (a pie's slices). Inside the plot it is drawn over the marks, and each render moves it
    off them (:func:`_legend_place`): the frame does not hold the marks, so no place chosen
    here could avoid them. A chart of one series has a legend only where its spec asks for
    one (the procedural source leaves it out where the title says what the series is)."""
    if spec.legend == "none" or not handles:
        return
    fs = spec.font_size
    if spec.legend == "outside":
        ax.legend(handles=handles, loc="center left", bbox_to_anchor=(1.01, 0.5), fontsize=fs * 0.85, frameon=False)
    else:
        loc = "upper center" if spec.legend == "top" else spec.legend
        # inside the plot the legend goes over the marks: drawn after them, every render
        ax.legend(handles=handles, loc=loc, fontsize=fs * 0.85, framealpha=0.85).set_animated(True)
    for text in ax.get_legend().get_texts():
        text.set_parse_math(False)


def _axis_titles(fig: Any, ax: Any, spec: ChartSpec, bottom: str, left: str) -> list[Any]:
    """Axis titles as static text of the frame, not part of the animated axes."""
    titles = []
    box = ax.get_position()
    if bottom:
        titles.append(fig.text((box.x0 + box.x1) / 2.0, 4.0 / fig.bbox.height, bottom, fontsize=spec.font_size,
                               ha="center", va="bottom", parse_math=False))
    if left:
        titles.append(fig.text(4.0 / fig.bbox.width, (box.y0 + box.y1) / 2.0, left, fontsize=spec.font_size,
                               ha="left", va="center", rotation=90, parse_math=False))
    return titles


def _measure(frame: _Frame) -> None:
    """What the drawn frame shows: the plot box, the boxes of its texts, its legend's box
    and entries (a legend on top of the marks is laid out now, to measure it)."""
    ax, renderer = frame.ax, frame.canvas.get_renderer()
    frame.plot_box = _box(ax.get_window_extent(renderer), frame.height)
    texts = [("title", ax.title)] if frame.key.spec.title else []
    texts += [("axis_title", artist) for artist in frame.axis_titles]
    legend = ax.get_legend()
    if legend is not None:
        if legend.get_animated():  # not in the background: lay it out now to measure it
            legend.draw(renderer)
            frame.legend_on_top = legend
        frame.legend = _legend_facts(frame, legend)
    frame.static_labels = [_label_fact(kind, artist, renderer, frame.height) for kind, artist in texts
                           if artist.get_visible() and artist.get_text()]


def _label_fact(kind: str, artist: Any, renderer: Any, height: int) -> dict[str, Any]:
    return {"kind": kind, "text": artist.get_text(), "size_pt": float(artist.get_fontsize()),
            "box": _box(artist.get_window_extent(renderer), height)}


def _legend_facts(frame: _Frame, legend: Any) -> _LegendFacts:
    """The box, entries and entry labels of ``legend`` as last laid out (drawn)."""
    renderer = frame.canvas.get_renderer()
    listed = [c for j, c in enumerate(frame.colors) if j not in frame.key.undrawn]
    entries = tuple({"text": text.get_text(), "color": rgb255(color),
                     "box": _box(text.get_window_extent(renderer), frame.height),
                     "handle_box": _box(handle.get_window_extent(renderer), frame.height)}
                    for text, handle, color in zip(legend.get_texts(), legend.legend_handles, listed))
    labels = tuple(_label_fact("legend", text, renderer, frame.height) for text in legend.get_texts()
                   if text.get_visible() and text.get_text())
    return _LegendFacts(_box(legend.get_window_extent(renderer), frame.height), entries, labels)


#: where a legend inside the plot may go, in order after its spec's place (``top`` is upper centre)
LEGEND_PLACES = ("upper right", "upper left", "top", "lower right", "lower left")


def _legend_place(frame: _Frame, marks: list[dict[str, Any]], labels: list[dict[str, Any]]) -> str | None:
    """Put the frame's legend inside the plot at its spec's place, or else the first of
    :data:`LEGEND_PLACES`, where its laid-out box covers no mark (bar, point, line segment,
    slice) and no text of this render; that place, or ``None`` (the legend is then left
    where it was)."""
    legend, spec = frame.legend_on_top, frame.key.spec
    renderer = frame.canvas.get_renderer()
    for place in dict.fromkeys((spec.legend, *LEGEND_PLACES)):
        legend.set_loc("upper center" if place == "top" else place)
        bbox = legend.get_window_extent(renderer)
        if _covers_nothing(frame, _box(bbox, frame.height), bbox, marks, labels):
            return place
    legend.set_loc("upper center" if spec.legend == "top" else spec.legend)
    return None


def _covers_nothing(frame: _Frame, box: list[float], bbox: Any, marks: list[dict[str, Any]],
                    labels: list[dict[str, Any]]) -> bool:
    """Whether the legend at ``box`` (image pixels; ``bbox`` the same in display pixels)
    leaves uncovered every text but its own, every bar and point (their boxes), every line
    (its path) and every slice (its outline), as drawn in this render."""
    boxes = [lab["box"] for lab in labels if lab["kind"] != "legend"]
    if frame.key.spec.chart_type != "pie":  # a slice's box holds more than the slice: its outline below
        boxes += [m["box"] for m in marks if m["box"] is not None]
    if boxes:
        b = np.asarray(boxes, dtype=float)
        if np.any((np.minimum(b[:, 2], box[2]) > np.maximum(b[:, 0], box[0]))
                  & (np.minimum(b[:, 3], box[3]) > np.maximum(b[:, 1], box[1]))):
            return False
    from matplotlib.path import Path

    for line in frame.lines.values():
        points = line.get_transform().transform(line.get_xydata())
        if any(Path(pair).intersects_bbox(bbox, filled=False)
               for pair in zip(points[:-1], points[1:]) if np.isfinite(pair).all()):
            return False  # one segment at a time: a missing value breaks the line as drawn
    return not any(wedge.get_transform().transform_path(wedge.get_path()).intersects_bbox(bbox, filled=True)
                   for wedge, m in zip(frame.wedges, marks) if m["box"] is not None)


def _pie_facts(frame: _Frame, marks: list[dict[str, Any]], column: np.ndarray) -> None:
    """A pie's wedges as drawn: each slice's mark gets its ``degrees`` (counter-clockwise
    from three o'clock) and its circle's ``centre`` and ``radius`` in image pixels."""
    (cx, cy), (ex, _ey) = frame.ax.transData.transform([(0.0, 0.0), (1.0, 0.0)])
    for mark, wedge, value in zip(marks, frame.wedges, column):
        if mark["box"] is not None and value > 0:
            mark.update(degrees=[round(float(wedge.theta1), 4), round(float(wedge.theta2), 4)],
                        centre=[round(float(cx), 1), round(float(frame.height - cy), 1)],
                        radius=round(float(ex - cx), 1))


def _add_animated_marks(frame: _Frame) -> None:
    """A line chart's lines and a pie's wedges, drawn per render."""
    spec = frame.key.spec
    if spec.chart_type == "line":
        for name, color in zip(frame.key.series, frame.colors):
            (frame.lines[name],) = frame.ax.plot([], [], marker="o", markersize=4, color=color, animated=True)
    if spec.chart_type == "pie":
        from matplotlib.patches import Wedge

        for color in frame.colors:
            wedge = Wedge((0.0, 0.0), 1.0, 0.0, 1.0, facecolor=color, edgecolor="white", linewidth=1.0, animated=True)
            frame.ax.add_patch(wedge)
            frame.wedges.append(wedge)


LABEL_GAP_PX = 3.0  # data labels sit this far off the end of their mark, not on it


def _nudged(ax: Any, x: float, y: float, ha: str, va: str) -> tuple[float, float]:
    """``(x, y)`` moved LABEL_GAP_PX away from the mark end in the direction the label
    extends (centred labels stay where they are)."""
    dx = LABEL_GAP_PX if ha == "left" else -LABEL_GAP_PX if ha == "right" else 0.0
    dy = LABEL_GAP_PX if va == "bottom" else -LABEL_GAP_PX if va == "top" else 0.0
    if not dx and not dy:
        return x, y
    px, py = ax.transData.transform((x, y))
    nx, ny = ax.transData.inverted().transform((px + dx, py + dy))
    return float(nx), float(ny)


def _rounded_room(px: float) -> int:
    return int(math.ceil(px / ROOM_STEP) * ROOM_STEP)


def _category_and_value_axes(ax: Any, chart_type: str) -> tuple[Any, Any]:
    return (ax.yaxis, ax.xaxis) if chart_type == "hbar" else (ax.xaxis, ax.yaxis)


def _text_size(canvas: Any, text: str, size: float) -> tuple[float, float]:
    from matplotlib.font_manager import FontProperties

    if not text:
        return 0.0, 0.0
    w, h, _d = canvas.get_renderer().get_text_width_height_descent(text, FontProperties(size=size), ismath=False)
    return float(w), float(h)


def _fit_margins(fig: Any, canvas: Any, key: FrameKey, legend_outside: bool) -> None:
    """Margins from measured text sizes (one pass; far cheaper than a layout engine).
    Depends only on the frame key, never on the values or labels being drawn."""
    spec = key.spec
    fs, pt = spec.font_size, fig.dpi / 72.0
    width, height = fig.bbox.width, fig.bbox.height
    pad = 6.0 * pt
    limits = layout_limits(key.magnitude)
    value_text = max((_axis_number(v) for v in (limits[0], limits[1], limits[1] / 3.0)), key=len)
    value_w, value_h = _text_size(canvas, value_text + "0", fs * 0.9)
    _, label_h = _text_size(canvas, "Ag", fs)
    _, title_h = _text_size(canvas, spec.title, fs * 1.15)
    room = float(key.category_room)
    if spec.chart_type == "pie":
        left, bottom = pad, pad
    elif spec.chart_type == "hbar":
        left = room + pad + (label_h + pad if spec.x_label else 0.0)
        bottom = value_h + pad + (label_h + pad if spec.y_label else 0.0)
    else:
        left = max(value_w + pad + (label_h + pad if spec.y_label else 0.0), float(key.lead_room) + pad)
        bottom = room + pad + (label_h + pad if spec.x_label else 0.0)
    top = (title_h + 2 * pad) if spec.title else pad
    # the last value label of horizontal bars is centred on the plot's right edge
    right = max(pad * 2, value_w / 2.0 + pad) if spec.chart_type == "hbar" else pad * 2
    if legend_outside:
        names = key.pie_rows or key.series
        right += max(_text_size(canvas, str(n), fs * 0.85)[0] for n in names) + 3.5 * fs * pt
    left, right = min(left + pad, width * 0.55), min(right, width * 0.45)
    bottom, top = min(bottom + pad, height * 0.5), min(top, height * 0.3)
    # margins that would leave no plot are shrunk to leave a sliver (the checks call it cramped)
    left, right = _shrunk(left, right, width)
    bottom, top = _shrunk(bottom, top, height)
    fig.subplots_adjust(left=left / width, right=1 - right / width, bottom=bottom / height, top=1 - top / height)


def _shrunk(a: float, b: float, total: float) -> tuple[float, float]:
    scale = min(1.0, 0.9 * total / max(a + b, 1e-9))
    return a * scale, b * scale


def _data_box(ax: Any, x: float, y: float, w: float, h: float, height: int) -> list[float]:
    """The pixel box of a data-space rectangle (cheaper than an artist's window extent)."""
    (x0, y0), (x1, y1) = ax.transData.transform([(x, y), (x + w, y + h)])
    return [round(float(min(x0, x1)), 1), round(float(height - max(y0, y1)), 1),
            round(float(max(x0, x1)), 1), round(float(height - min(y0, y1)), 1)]


def _box(bbox: Any, height: int) -> list[float]:
    return [round(float(bbox.x0), 1), round(float(height - bbox.y1), 1),
            round(float(bbox.x1), 1), round(float(height - bbox.y0), 1)]


# -- tick marks, gridlines and labels, from pools -------------------------------------------
class _AxisArtists:
    """One axis' ticks, drawn from pools: a line with a tick mark at every tick, and a
    gridline and a label per tick, set up in the style of the axis' own first tick (its
    sizes, pads, fonts and transforms, which ``tick_params`` sets). matplotlib's ticks
    draw the same artists, one tick at a time and invisible ones besides; these are
    updated in place, and draw the same pixels (tests compare them with a figure whose
    axes draw their own ticks)."""

    def __init__(self, fig: Any):
        from matplotlib.lines import Line2D

        self.fig = fig
        self.marks = Line2D([], [])
        self.marks.set_figure(fig)
        self.grid: list[Any] = []
        self.labels: list[Any] = []
        self.template: Any = None
        self.vertical = False
        self.rotation = 0.0
        self.styled: dict[int, int] = {}  # id of a pooled artist -> the style it has
        self.style_id = 0

    def style(self, axis: Any, rotation: float) -> None:
        """Take the look of ``axis``' ticks (call again after ``tick_params``). Pooled
        gridlines and labels take it when next drawn."""
        self.template = axis.get_major_ticks(1)[0]
        self.vertical = axis.axis_name == "y"
        self.rotation = rotation
        self.marks.update_from(self.template.tick1line)
        self.style_id += 1

    def _restyled(self, artist: Any) -> bool:
        if self.styled.get(id(artist)) == self.style_id:
            return False
        self.styled[id(artist)] = self.style_id
        return True

    def _style_grid(self, line: Any) -> None:
        if not self._restyled(line):
            return
        line.update_from(self.template.gridline)
        line.set_alpha(GRID_ALPHA)  # as axis.grid(True, alpha=GRID_ALPHA) sets it on the ticks
        line.set_visible(True)

    def _style_label(self, label: Any) -> None:
        if not self._restyled(label):
            return
        label.update_from(self.template.label1)
        label.set_parse_math(False)  # labels are data, never TeX
        if self.rotation:  # a turned label ends at its tick
            label.set_horizontalalignment("right")
            label.set_rotation_mode("anchor")
        else:
            label.set_rotation_mode("default")

    def draw(self, renderer: Any, locs: list[float], texts: list[str], gridlines: bool) -> list[Any]:
        """Draw ticks at ``locs`` labelled ``texts``; return the labels drawn."""
        from matplotlib.lines import Line2D

        zeros = [0.0] * len(locs)
        if gridlines:
            while len(self.grid) < len(locs):
                line = Line2D([], [])
                line.set_figure(self.fig)
                self.grid.append(line)
            for loc, line in zip(locs, self.grid):
                self._style_grid(line)
                line.set_data(([0.0, 1.0], [loc, loc]) if self.vertical else ([loc, loc], [0.0, 1.0]))
                line.draw(renderer)
        self.marks.set_data((zeros, locs) if self.vertical else (locs, zeros))
        self.marks.draw(renderer)
        while len(self.labels) < len(locs):
            label = label_class()(0.0, 0.0, "")
            label.set_figure(self.fig)
            self.labels.append(label)
        for loc, text, label in zip(locs, texts, self.labels):
            self._style_label(label)
            label.set_text(text)
            label.set_position((0.0, loc) if self.vertical else (loc, 0.0))
            label.draw(renderer)
        return self.labels[:len(locs)]
