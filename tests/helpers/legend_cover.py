"""What a chart renderer's drawn legend covers, measured on the matplotlib artists it drew
(each artist's window extent or path in display pixels, as drawn), independently of the
boxes the renderer reports and the checks read."""

import numpy as np
from matplotlib.path import Path
from matplotlib.transforms import Bbox

from vicogym.renderers.chart import BAR_TYPES

SLACK_PX = 1.0


def _meet(a, b) -> bool:
    return min(a.x1, b.x1) - max(a.x0, b.x0) > SLACK_PX and min(a.y1, b.y1) - max(a.y0, b.y0) > SLACK_PX


def legend_covers(renderer, structure, facts) -> list[str]:
    """What the legend of ``renderer``'s last render (of ``structure``, giving ``facts``)
    covers by more than a pixel each way: bars, line segments and markers, slices, data
    labels and tick labels, each named."""
    frame = next(reversed(renderer._frames.values()))  # the frame the last render drew on
    legend = frame.ax.get_legend()
    if legend is None:
        return []
    drawer = frame.canvas.get_renderer()
    box = legend.get_window_extent(drawer)
    inner = Bbox.from_extents(box.x0 + SLACK_PX, box.y0 + SLACK_PX, box.x1 - SLACK_PX, box.y1 - SLACK_PX)
    table, chart_type = structure.table, frame.key.spec.chart_type
    covered = []
    if chart_type in BAR_TYPES:
        covered += [f"bar {table.rows[i]}/{table.series[j]}" for j in range(len(table.series))
                    for i in range(len(table.rows))
                    if table.values[i][j] is not None and _meet(frame.bars[j][i].get_window_extent(drawer), box)]
    elif chart_type == "line":
        for name in table.series:
            line = frame.lines[name]
            points = line.get_transform().transform(line.get_xydata())
            half = line.get_markersize() * frame.fig.dpi / 72.0 / 2.0
            for a, b in zip(points[:-1], points[1:]):
                if np.isfinite([a, b]).all() and Path(np.array([a, b])).intersects_bbox(inner, filled=False):
                    covered.append(f"segment of {name}")
            covered += [f"marker of {name}" for x, y in points if np.isfinite([x, y]).all()
                        and _meet(Bbox.from_extents(x - half, y - half, x + half, y + half), box)]
    else:
        covered += [f"slice {table.rows[k]}" for k, wedge in enumerate(frame.wedges[:len(table.rows)])
                    if table.values[k][0] and wedge.get_transform().transform_path(wedge.get_path())
                    .intersects_bbox(inner, filled=True)]
    n_data_labels = sum(1 for lab in facts.labels if lab["kind"] == "data_label")
    covered += [f"data label {t.get_text()}" for t in frame.texts[:n_data_labels]
                if _meet(t.get_window_extent(drawer), box)]
    for kind, pool in zip(("value_tick", "category"), frame.axis_artists):  # the labels this render drew
        drawn = pool.labels[:sum(1 for lab in facts.labels if lab["kind"] == kind)]
        covered += [f"tick label {t.get_text()}" for t in drawn if _meet(t.get_window_extent(drawer), box)]
    return covered
