"""Chart renderer: structure -> RGB pixels plus the pixel boxes of marks and labels.

Uses matplotlib's object-oriented API on the Agg canvas (no pyplot state). Speed comes
from splitting a chart into a *frame* and *marks*:

- the frame is everything that does not depend on the values (axes box, category
  labels, legend, title), keyed by the structure without its values plus the order of
  magnitude of the value axis (which fixes the room its tick labels need);
- the value axis (ticks, tick labels, gridlines) and the marks (bars, line points,
  wedges, data labels) are animated artists redrawn with ``draw_artist`` over the
  frame's cached pixels.

Frames are cached (LRU) by everything except the values. A fresh frame is drawn once and
then takes exactly the same mark-drawing path, so a cached render and a fresh render of
the same structure give identical bytes, whatever was rendered before.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from vicogym.structures import ChartStructure, Table, format_number

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
    """Value-axis limits with 8% headroom, snapped to nice numbers (part of the frame key)."""
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


def placeholder_limits(magnitude: tuple[int, int]) -> tuple[float, float]:
    """Limits that a frame is laid out with: determined by the magnitude alone, so a frame
    never depends on which values happened to build it."""
    lo, hi = (0.0 if m == -99 else 9.0 * 10.0**m for m in magnitude)
    return (-lo, hi if hi else 1.0)


def _axis_number(x: float, _pos: Any = None) -> str:
    if abs(x) >= 1000:
        text = f"{x:,.2f}".rstrip("0").rstrip(".")
    else:
        text = f"{x:.6g}"
    return "0" if text in ("-0", "") else text


@dataclass(frozen=True)
class ChartRender:
    """One rendered chart. Boxes are ``[x0, y0, x1, y1]`` in image pixels, origin top-left."""

    image: np.ndarray
    marks: list[dict[str, Any]]
    labels: list[dict[str, Any]]
    value_limits: tuple[float, float]
    facts: dict[str, Any] = field(default_factory=dict)


@dataclass
class _Frame:
    fig: Any
    canvas: Any
    ax: Any
    background: Any
    height: int
    marks: list[tuple[str, str, Any]]  # (row, series, artist)
    data_labels: list[Any]
    lines: dict[str, Any]
    static_labels: list[dict[str, Any]]


def _palette(name: str, n: int) -> list[tuple[float, float, float, float]]:
    from matplotlib import colormaps

    cmap = colormaps[name]
    colors = getattr(cmap, "colors", None)
    if colors is not None and len(colors) >= n and name != "viridis":
        return [tuple(c) + (1.0,) if len(c) == 3 else tuple(c) for c in colors[:n]]
    return [tuple(cmap(x)) for x in np.linspace(0.1, 0.9, max(n, 1))]


class ChartRenderer:
    """Renders :class:`ChartStructure` objects; holds an LRU cache of frames."""

    def __init__(self, dpi: int = 80, cache_size: int = 16):
        if not isinstance(dpi, int) or not 30 <= dpi <= 300:
            raise ValueError(f"expected dpi as an integer in [30, 300], got {dpi!r}")
        if not isinstance(cache_size, int) or cache_size < 1:
            raise ValueError(f"expected cache_size as a positive integer, got {cache_size!r}")
        self.dpi = dpi
        self.cache_size = cache_size
        self._frames: OrderedDict[tuple, _Frame] = OrderedDict()
        self.frames_built = 0

    def max_image_shape(self) -> tuple[int, int, int]:
        """The largest image any allowed figure size gives (8 x 6 inches)."""
        return (int(round(6.0 * self.dpi)), int(round(8.0 * self.dpi)), 3)

    # -- public ----------------------------------------------------------------------
    def render(self, structure: ChartStructure) -> ChartRender:
        table, spec = structure.table, structure.spec
        limits = value_limits(table, spec.chart_type)
        magnitude = axis_magnitude(limits)
        key = (table.index_name, table.unit, table.rows, table.series, spec, magnitude)
        frame = self._frames.get(key)
        if frame is None:
            frame = self._build_frame(structure, placeholder_limits(magnitude))
            self._frames[key] = frame
            self.frames_built += 1
            if len(self._frames) > self.cache_size:
                old_key, old = self._frames.popitem(last=False)
                old.fig.clear()
        else:
            self._frames.move_to_end(key)
        return self._draw_marks(frame, structure, limits)

    def close(self) -> None:
        for frame in self._frames.values():
            frame.fig.clear()
        self._frames.clear()

    # -- frame -----------------------------------------------------------------------
    def _build_frame(self, s: ChartStructure, limits: tuple[float, float]) -> _Frame:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
        from matplotlib.ticker import FuncFormatter

        t, spec = s.table, s.spec
        fs = spec.font_size
        fig = Figure(figsize=spec.figure_size, dpi=self.dpi)
        canvas = FigureCanvasAgg(fig)
        ax = fig.add_subplot()
        n_rows, n_series = len(t.rows), len(t.series)
        marks: list[tuple[str, str, Any]] = []
        lines: dict[str, Any] = {}
        colors = _palette(spec.palette, n_rows if spec.chart_type == "pie" else n_series)
        legend_handles: list[Any] = []
        ax.tick_params(labelsize=fs * 0.9)
        if spec.title:
            ax.set_title(spec.title, fontsize=fs * 1.15, y=1.0, pad=6.0)  # fixed y: no tight-bbox pass
        long_labels = sum(len(r) for r in t.rows) > 60 or max(len(r) for r in t.rows) > 14

        if spec.chart_type in BAR_TYPES:
            horizontal = spec.chart_type == "hbar"
            grouped = spec.chart_type in ("grouped_bar", "hbar") and n_series > 1
            width = 0.8 / n_series if grouped else 0.7
            positions = np.arange(n_rows, dtype=float)
            for j, name in enumerate(t.series):
                offset = (j - (n_series - 1) / 2.0) * width if grouped else 0.0
                ones = np.ones(n_rows)
                if horizontal:
                    bars = ax.barh(positions + offset, ones, height=width, color=colors[j], label=name, animated=True)
                else:
                    bars = ax.bar(positions + offset, ones, width=width, color=colors[j], label=name, animated=True)
                legend_handles.append(bars)
                marks.extend((row, name, patch) for row, patch in zip(t.rows, bars.patches))
            cat_axis, val_axis = (ax.yaxis, ax.xaxis) if horizontal else (ax.xaxis, ax.yaxis)
            cat_axis.set_ticks(positions, labels=list(t.rows))
            if horizontal:
                ax.set_ylim(n_rows - 0.5, -0.5)
                ax.set_xlim(*limits)
            else:
                ax.set_xlim(-0.5, n_rows - 0.5)
                ax.set_ylim(*limits)
                if long_labels:
                    for label in ax.get_xticklabels():
                        label.set_rotation(35)
                        label.set_horizontalalignment("right")
            val_axis.set_major_formatter(FuncFormatter(_axis_number))
            val_axis.set_animated(True)
            if spec.gridlines:
                ax.grid(True, axis="x" if horizontal else "y", alpha=0.4)
                ax.set_axisbelow(True)
            ax.set_xlabel(spec.y_label if horizontal else spec.x_label, fontsize=fs)
            ax.set_ylabel(spec.x_label if horizontal else spec.y_label, fontsize=fs)
        elif spec.chart_type == "line":
            positions = np.arange(n_rows, dtype=float)
            for j, name in enumerate(t.series):
                (line,) = ax.plot(positions, np.zeros(n_rows), marker="o", markersize=4, color=colors[j], label=name, animated=True)
                lines[name] = line
                legend_handles.append(line)
                marks.extend((row, name, line) for row in t.rows)
            ax.set_xticks(positions, labels=list(t.rows))
            if long_labels:
                for label in ax.get_xticklabels():
                    label.set_rotation(35)
                    label.set_horizontalalignment("right")
            ax.set_xlim(-0.5, n_rows - 0.5)
            ax.set_ylim(*limits)
            ax.yaxis.set_major_formatter(FuncFormatter(_axis_number))
            ax.yaxis.set_animated(True)
            if spec.gridlines:
                ax.grid(True, alpha=0.4)
            ax.set_xlabel(spec.x_label, fontsize=fs)
            ax.set_ylabel(spec.y_label, fontsize=fs)
        else:  # pie
            from matplotlib.patches import Wedge

            ax.set_xlim(-1.25, 1.25)
            ax.set_ylim(-1.25, 1.25)
            ax.set_aspect("equal")
            ax.axis("off")
            for i, row in enumerate(t.rows):
                wedge = Wedge((0.0, 0.0), 1.0, 0.0, 1.0, facecolor=colors[i], edgecolor="white", linewidth=1.0,
                              label=row, animated=True)
                ax.add_patch(wedge)
                legend_handles.append(wedge)
                marks.append((row, t.series[0], wedge))

        show_legend = spec.legend != "none" and (spec.chart_type == "pie" or n_series > 1)
        if show_legend:
            # "best" placement would depend on the frame's placeholder marks, so it is not offered
            if spec.legend == "outside":
                ax.legend(handles=legend_handles, loc="center left", bbox_to_anchor=(1.01, 0.5), fontsize=fs * 0.85,
                          frameon=False)
            else:
                loc = "upper center" if spec.legend == "top" else spec.legend
                ax.legend(handles=legend_handles, loc=loc, fontsize=fs * 0.85, framealpha=0.85)

        data_labels = []
        if spec.data_labels:
            for _ in marks:
                text = ax.text(0.0, 0.0, "", fontsize=fs * 0.8, animated=True, clip_on=False)
                data_labels.append(text)

        _fit_margins(fig, canvas, s, limits, long_labels, show_legend)
        canvas.draw()
        background = canvas.copy_from_bbox(fig.bbox)
        height = int(fig.bbox.height)
        renderer = canvas.get_renderer()
        static_labels = []
        texts = [("title", ax.title)] if spec.title else []
        texts += [("category", lab) for lab in (ax.get_yticklabels() if spec.chart_type == "hbar" else ax.get_xticklabels())]
        if spec.chart_type == "pie":
            texts = [("title", ax.title)] if spec.title else []
        legend = ax.get_legend()
        if legend is not None:
            texts += [("legend", lab) for lab in legend.get_texts()]
        for kind, artist in texts:
            if artist.get_visible() and artist.get_text():
                static_labels.append({"kind": kind, "text": artist.get_text(),
                                      "box": _box(artist.get_window_extent(renderer), height)})
        return _Frame(fig, canvas, ax, background, height, marks, data_labels, lines, static_labels)

    # -- marks -----------------------------------------------------------------------
    def _draw_marks(self, frame: _Frame, s: ChartStructure, limits: tuple[float, float]) -> ChartRender:
        t, spec = s.table, s.spec
        fig, ax, canvas = frame.fig, frame.ax, frame.canvas
        canvas.restore_region(frame.background)
        renderer = canvas.get_renderer()
        values = np.array([[np.nan if v is None else v for v in row] for row in t.values], dtype=float)
        n_rows = len(t.rows)
        drawn_labels = list(frame.static_labels)
        if spec.chart_type != "pie":
            val_axis = ax.xaxis if spec.chart_type == "hbar" else ax.yaxis
            (ax.set_xlim if spec.chart_type == "hbar" else ax.set_ylim)(*limits)
            fig.draw_artist(val_axis)
            for lab in val_axis.get_ticklabels():
                if lab.get_visible() and lab.get_text():
                    drawn_labels.append({"kind": "value_tick", "text": lab.get_text(),
                                         "box": _box(lab.get_window_extent(renderer), frame.height)})
        label_anchor: list[tuple[float, float, str, str]] = []
        boxes: list[list[float] | None] = []
        if spec.chart_type in BAR_TYPES:
            horizontal = spec.chart_type == "hbar"
            bottoms = np.zeros(n_rows)
            for k, (row, name, patch) in enumerate(frame.marks):
                i, j = t.rows.index(row), t.series.index(name)
                v = values[i, j]
                present = not np.isnan(v)
                v = v if present else 0.0
                base = bottoms[i] if spec.chart_type == "stacked_bar" else 0.0
                if horizontal:
                    patch.set_x(base)
                    patch.set_width(v)
                else:
                    patch.set_y(base)
                    patch.set_height(v)
                patch.set_visible(present)
                if spec.chart_type == "stacked_bar":
                    bottoms[i] += v
                fig.draw_artist(patch)
                box = _box(patch.get_window_extent(renderer), frame.height) if present else None
                boxes.append(box)
                cx, cy = patch.get_x() + patch.get_width() / 2.0, patch.get_y() + patch.get_height() / 2.0
                if spec.chart_type == "stacked_bar":
                    label_anchor.append((cx, cy, "center", "center"))
                elif horizontal:
                    label_anchor.append((patch.get_x() + patch.get_width(), cy, "left" if v >= 0 else "right", "center"))
                else:
                    label_anchor.append((cx, patch.get_y() + patch.get_height(), "center", "bottom" if v >= 0 else "top"))
        elif spec.chart_type == "line":
            xs = np.arange(n_rows, dtype=float)
            for j, name in enumerate(t.series):
                frame.lines[name].set_ydata(values[:, j])
                fig.draw_artist(frame.lines[name])
            half = 4.0 * self.dpi / 72.0
            for row, name, _line in frame.marks:
                i, j = t.rows.index(row), t.series.index(name)
                v = values[i, j]
                if np.isnan(v):
                    boxes.append(None)
                    label_anchor.append((xs[i], 0.0, "center", "bottom"))
                    continue
                px, py = ax.transData.transform((xs[i], v))
                boxes.append([px - half, frame.height - py - half, px + half, frame.height - py + half])
                label_anchor.append((xs[i], v, "center", "bottom"))
        else:
            column = values[:, 0]
            total = float(column.sum())
            angle = 90.0
            for k, (row, _name, wedge) in enumerate(frame.marks):
                sweep = 360.0 * column[k] / total
                wedge.set_theta1(angle - sweep)
                wedge.set_theta2(angle)
                mid = math.radians(angle - sweep / 2.0)
                angle -= sweep
                fig.draw_artist(wedge)
                boxes.append(_box(wedge.get_window_extent(renderer), frame.height) if column[k] > 0 else None)
                label_anchor.append((0.7 * math.cos(mid), 0.7 * math.sin(mid), "center", "center"))

        mark_facts = []
        for k, (row, name, _artist) in enumerate(frame.marks):
            i, j = t.rows.index(row), t.series.index(name)
            v = t.values[i][j]
            mark_facts.append({"row": row, "series": name, "value": v, "box": boxes[k]})
            if frame.data_labels and v is not None:
                text = frame.data_labels[k]
                x, y, ha, va = label_anchor[k]
                text.set_position((x, y))
                text.set_text(format_number(v) + (t.unit if t.unit == "%" else ""))
                text.set_horizontalalignment(ha)
                text.set_verticalalignment(va)
                fig.draw_artist(text)
                drawn_labels.append({"kind": "data_label", "text": text.get_text(), "row": row, "series": name,
                                     "box": _box(text.get_window_extent(renderer), frame.height)})
        import cv2

        image = cv2.cvtColor(np.asarray(canvas.buffer_rgba()), cv2.COLOR_RGBA2RGB)
        facts = {"frame_cached": True, "image_size": [image.shape[1], image.shape[0]]}
        return ChartRender(image=image, marks=mark_facts, labels=drawn_labels, value_limits=limits, facts=facts)


def _text_size(canvas: Any, text: str, size: float) -> tuple[float, float]:
    from matplotlib.font_manager import FontProperties

    if not text:
        return 0.0, 0.0
    w, h, _d = canvas.get_renderer().get_text_width_height_descent(text, FontProperties(size=size), ismath=False)
    return float(w), float(h)


def _fit_margins(fig: Any, canvas: Any, s: ChartStructure, limits: tuple[float, float], rotated: bool,
                 legend_outside: bool) -> None:
    """Margins from measured text sizes (one pass; far cheaper than a layout engine).
    Depends only on the frame key, never on the values being drawn."""
    t, spec = s.table, s.spec
    fs, pt = spec.font_size, fig.dpi / 72.0
    width, height = fig.bbox.width, fig.bbox.height
    tick = fs * 0.9
    pad = 6.0 * pt
    value_text = max((_axis_number(v) for v in (limits[0], limits[1], limits[1] / 3.0)), key=len)
    value_w, value_h = _text_size(canvas, value_text + "0", tick)
    cat_sizes = [_text_size(canvas, r, tick) for r in t.rows]
    cat_w = max(w for w, _ in cat_sizes)
    cat_h = max(h for _, h in cat_sizes)
    if rotated:
        angle = math.radians(35)
        cat_h = cat_w * math.sin(angle) + cat_h * math.cos(angle)
    _, label_h = _text_size(canvas, "Ag", fs)
    _, title_h = _text_size(canvas, spec.title, fs * 1.15)
    if spec.chart_type == "pie":
        left, bottom = pad, pad
    elif spec.chart_type == "hbar":
        left = cat_w + pad + (label_h + pad if spec.x_label else 0.0)
        bottom = value_h + pad + (label_h + pad if spec.y_label else 0.0)
    else:
        left = value_w + pad + (label_h + pad if spec.y_label else 0.0)
        bottom = cat_h + pad + (label_h + pad if spec.x_label else 0.0)
    top = (title_h + 2 * pad) if spec.title else pad
    right = pad * 2
    if legend_outside:
        names = t.rows if spec.chart_type == "pie" else t.series
        right += max(_text_size(canvas, str(n), fs * 0.85)[0] for n in names) + 3.5 * fs * pt
    left, right = min(left + pad, width * 0.55), min(right, width * 0.45)
    bottom, top = min(bottom + pad, height * 0.5), min(top, height * 0.3)
    fig.subplots_adjust(left=left / width, right=1 - right / width, bottom=bottom / height, top=1 - top / height)


def _box(bbox: Any, height: int) -> list[float]:
    return [round(float(bbox.x0), 1), round(float(height - bbox.y1), 1),
            round(float(bbox.x1), 1), round(float(height - bbox.y0), 1)]


def encode_png(image: np.ndarray, compression: int = 3) -> bytes:
    """PNG bytes of an RGB ``uint8`` array (OpenCV's encoder; deterministic)."""
    import cv2

    ok, buf = cv2.imencode(".png", cv2.cvtColor(image, cv2.COLOR_RGB2BGR), [cv2.IMWRITE_PNG_COMPRESSION, compression])
    if not ok:
        raise RuntimeError("OpenCV could not encode the image as PNG")
    return buf.tobytes()


def decode_png(data: bytes) -> np.ndarray:
    import cv2

    image = cv2.imdecode(np.frombuffer(data, dtype=np.uint8), cv2.IMREAD_COLOR)
    if image is None:
        raise ValueError("expected PNG bytes, could not decode")
    return cv2.cvtColor(image, cv2.COLOR_BGR2RGB)
