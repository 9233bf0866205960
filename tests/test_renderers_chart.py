from dataclasses import replace

import numpy as np
import pytest
from helpers.legend_cover import legend_covers
from hypothesis import given, settings
from hypothesis import strategies as st

from vicogym.checks.chart import check_legend_cover
from vicogym.images import decode_png, encode_png
from vicogym.renderers.chart import LEGEND_PLACES, ChartRenderer, nice_ceiling, value_limits
from vicogym.sources.chart import procedural_seed
from vicogym.structures.chart import LEGEND_POSITIONS, ChartSpec, ChartStructure, Table

MULTI = Table("Country", ("France", "Germany", "Italy", "Spain"), ("2019", "2020"),
              ((1.0, 2.0), (3.5, 4.0), (2.0, None), (5.0, 1.5)), "%")
SINGLE = Table("Product", ("A", "B", "C"), ("Sales",), ((10.0,), (20.0,), (30.0,)))
CASES = [(MULTI, t) for t in ("hbar", "grouped_bar", "stacked_bar", "line")] + [
    (SINGLE, t) for t in ("bar", "hbar", "line", "pie")
]


@pytest.fixture(scope="module")
def renderer():
    r = ChartRenderer(dpi=60)
    yield r
    r.close()


@pytest.mark.parametrize("table, chart_type", CASES)
def test_every_chart_type_renders_with_mark_boxes(renderer, table, chart_type):
    s = ChartStructure(table, ChartSpec(chart_type=chart_type, title="T", data_labels=True))
    out = renderer.render(s)
    h, w, _ = out.image.shape
    assert (h, w) == (288, 384) and out.image.dtype == np.uint8
    assert len(out.marks) == len(table.rows) * len(table.series)
    for mark in out.marks:
        if mark["value"] is None:
            assert mark["box"] is None
            continue
        x0, y0, x1, y1 = mark["box"]
        assert -1 <= x0 <= x1 <= w + 1 and -1 <= y0 <= y1 <= h + 1
    assert sum(1 for lab in out.labels if lab["kind"] == "data_label") == sum(v is not None for v in table.all_values())
    assert out.image.std() > 10  # something was drawn


def test_bar_heights_follow_values(renderer):
    out = renderer.render(ChartStructure(SINGLE, ChartSpec(chart_type="bar")))
    heights = [m["box"][3] - m["box"][1] for m in out.marks]
    assert heights[0] < heights[1] < heights[2]
    assert heights[2] / heights[0] == pytest.approx(3.0, rel=0.03)


def test_cached_frames_give_the_same_bytes_as_fresh_ones():
    warm = ChartRenderer(dpi=60)
    other = Table("Country", MULTI.rows, MULTI.series, ((1.1, 2.0), (3.0, 4.2), (2.0, None), (4.9, 1.5)), "%")
    spec = ChartSpec(chart_type="grouped_bar", data_labels=True)
    warm.render(ChartStructure(other, spec))  # builds the frame with other values
    cached = warm.render(ChartStructure(MULTI, spec))
    assert warm.frames_built == 1
    fresh = ChartRenderer(dpi=60).render(ChartStructure(MULTI, spec))
    assert np.array_equal(cached.image, fresh.image)
    assert cached.marks == fresh.marks and cached.labels == fresh.labels
    assert not np.array_equal(cached.image, warm.render(ChartStructure(other, spec)).image)


def test_style_changes_change_pixels(renderer):
    a = renderer.render(ChartStructure(SINGLE, ChartSpec(chart_type="bar", palette="tab10"))).image
    b = renderer.render(ChartStructure(SINGLE, ChartSpec(chart_type="bar", palette="Dark2"))).image
    assert not np.array_equal(a, b)


def test_png_round_trip_is_lossless_and_deterministic(renderer):
    image = renderer.render(ChartStructure(SINGLE, ChartSpec())).image
    data = encode_png(image)
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    assert np.array_equal(decode_png(data), image)
    assert encode_png(image) == data


def test_value_limits_are_nice_and_cover_the_data():
    assert nice_ceiling(0.93) == 1.0 and nice_ceiling(101) == 120 and nice_ceiling(7) == 8
    assert value_limits(SINGLE, "bar") == (0.0, 40.0)
    neg = Table("X", ("a", "b"), ("s",), ((-12.0,), (30.0,)))
    lo, hi = value_limits(neg, "bar")
    assert lo <= -12 and hi >= 30


def test_bad_renderer_settings_are_refused():
    with pytest.raises(ValueError, match="expected dpi as an integer in \\[30, 300\\], got 5"):
        ChartRenderer(dpi=5)


def test_row_edits_reuse_the_frame_and_match_a_fresh_render():
    spec = ChartSpec(chart_type="grouped_bar", gridlines=True, data_labels=True)
    warm = ChartRenderer(dpi=60)
    warm.render(ChartStructure(MULTI, spec))
    renamed = Table("Country", ("France", "Austria", "Italy"), MULTI.series, MULTI.values[:3], "%")
    toggled = ChartSpec(chart_type="grouped_bar", gridlines=False, data_labels=False)
    for structure in (ChartStructure(renamed, spec), ChartStructure(MULTI, toggled), ChartStructure(MULTI, spec)):
        cached = warm.render(structure)
        fresh = ChartRenderer(dpi=60).render(structure)
        assert np.array_equal(cached.image, fresh.image)
        assert cached.labels == fresh.labels
    assert warm.frames_built == 1
    categories = [lab["text"] for lab in warm.render(ChartStructure(renamed, spec)).labels if lab["kind"] == "category"]
    assert categories == ["France", "Austria", "Italy"]


def test_dollar_signs_are_drawn_as_written_not_as_math(renderer):
    table = Table("Price", ("$5 to $10", "5 to 10"), ("Share",), ((1.0,), (2.0,)))
    out = renderer.render(ChartStructure(table, ChartSpec(title="Price in $ and $ per unit")))
    boxes = {lab["text"]: lab["box"] for lab in out.labels}
    width = lambda text: boxes[text][2] - boxes[text][0]
    assert width("$5 to $10") > width("5 to 10")  # math mode would have dropped the dollars
    assert out.facts["missing_glyphs"] == {}
    # titles, axis titles and legend entries too (a fresh figure and a reshaped one)
    two = Table("Region", ("A", "B"), ("$x$ cars", "x cars"), ((1.0, 2.0), (3.0, 4.0)))
    for _ in range(2):
        spec = ChartSpec(chart_type="grouped_bar", title="$a$ b", x_label="$a$ b", y_label="a b", legend="outside")
        out = renderer.render(ChartStructure(two, spec))
        kinds = {(lab["kind"], lab["text"]): lab["box"] for lab in out.labels}
        # two dollar glyphs wider (math mode would draw an italic x, about as wide as a plain one)
        assert kinds[("legend", "$x$ cars")][2] - kinds[("legend", "$x$ cars")][0] > \
            1.25 * (kinds[("legend", "x cars")][2] - kinds[("legend", "x cars")][0])
        titled = kinds[("title", "$a$ b")]
        axis_title = kinds[("axis_title", "$a$ b")]
        plain = kinds[("axis_title", "a b")]  # turned 90 degrees: its length is its height
        assert titled[2] - titled[0] > 1.5 * (plain[3] - plain[1])  # the title's font is 1.15 times larger
        assert axis_title[2] - axis_title[0] > 1.25 * (plain[3] - plain[1])
        renderer.evict()


def _fresh_charts_and_edits(seed, count):
    """Procedural seed charts, each followed by up to two of the arm's own random edits:
    the sequence generation renders."""
    from vicogym.core import Edit
    from vicogym.errors import GenerationError, InvalidEdit
    from vicogym.registry import make_arm

    arm = make_arm("vicogym/Chart-v0")
    arm.open()
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(count):
        drawn = arm.draw_seed(rng, {})
        structure = drawn.structure
        out.append(structure)
        for _ in range(2):
            try:
                structure = arm.apply(structure, Edit.parse(arm.sample_edit(structure, drawn.label_rule, rng)),
                                      drawn.label_rule)
                out.append(structure)
            except (GenerationError, InvalidEdit):
                break
    arm.close()
    return out


def test_text_drawn_from_the_caches_is_the_text_plain_agg_draws(monkeypatch):
    """Measured and rasterised once, text still lands on the same pixels: a renderer whose
    canvases use the text caches (warm from earlier charts) against one on plain Agg."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    import vicogym.renderers.matplotlib_private as private

    structures = _fresh_charts_and_edits(seed=7, count=12)
    cached = [ChartRenderer(dpi=80).render(s) for s in structures]
    monkeypatch.setattr(private, "_CANVAS", FigureCanvasAgg)
    plain = [ChartRenderer(dpi=80).render(s) for s in structures]
    for a, b in zip(cached, plain):
        assert np.array_equal(a.image, b.image)
        assert a.labels == b.labels and a.marks == b.marks


def test_any_cache_state_gives_the_bytes_of_a_fresh_render():
    """Random sequences of fresh charts and their edits through one long-lived renderer
    (frames, axes layers and text caches warm, frames evicted) against a new renderer per
    chart."""
    structures = _fresh_charts_and_edits(seed=11, count=30)
    order = np.random.default_rng(3).permutation(len(structures))
    warm = ChartRenderer(dpi=80, cache_size=2)
    for i in order:
        got = warm.render(structures[i])
        fresh = ChartRenderer(dpi=80).render(structures[i])
        assert np.array_equal(got.image, fresh.image) and got.labels == fresh.labels and got.marks == fresh.marks
    assert warm.frames_reshaped >= 5  # evicted frames' figures were set up again for other charts


def test_a_reshaped_frame_draws_what_a_new_one_draws():
    """Two charts of one shape (type, size, font, legend) with other titles, labels, series
    and colours: the second reuses the first's figure once it is evicted."""
    a = ChartStructure(MULTI, ChartSpec(chart_type="grouped_bar", title="First", x_label="Country", y_label="Share",
                                        palette="tab10"))
    other = Table("Region", ("North", "South", "East"), ("Cars", "Trucks"), ((10.0, 2.0), (30.5, 4.0), (22.0, 9.0)))
    b = ChartStructure(other, ChartSpec(chart_type="grouped_bar", title="A much longer second title", x_label="Region",
                                        y_label="Units sold", palette="Dark2", data_labels=True, gridlines=True))
    warm = ChartRenderer(dpi=60, cache_size=1)
    warm.render(a)
    warm.render(ChartStructure(SINGLE, ChartSpec(chart_type="pie")))  # evicts a's frame to the spares
    got = warm.render(b)
    assert warm.frames_reshaped == 1
    fresh = ChartRenderer(dpi=60).render(b)
    assert np.array_equal(got.image, fresh.image) and got.labels == fresh.labels and got.marks == fresh.marks


def _ticks_drawn_by_matplotlib(self, renderer, locs, texts, gridlines):
    """The reference for the renderer's tick pools: the axis' own Tick objects, placed and
    labelled with matplotlib's public tick API, each drawing itself (gridline, tick marks,
    labels, one tick at a time)."""
    ax = self.template.axes
    axis = ax.yaxis if self.vertical else ax.xaxis
    axis.set_ticks(locs, labels=texts)
    if gridlines:
        axis.grid(True, alpha=0.4)
    else:
        axis.grid(False)
    ticks = axis.get_major_ticks(len(locs))
    for tick in ticks:
        tick.label1.set_parse_math(False)
        if self.rotation:
            tick.label1.set_horizontalalignment("right")
            tick.label1.set_rotation_mode("anchor")
        tick.draw(renderer)
    return [tick.label1 for tick in ticks]


def test_tick_pools_draw_what_matplotlib_ticks_draw(monkeypatch):
    """Tick marks (one line with a marker per tick), gridlines and labels drawn from the
    frame's pools give the pixels and boxes of matplotlib's own ticks, over fresh charts
    and edits of every type, turned labels, gridlines and horizontal bars included."""
    import vicogym.renderers.chart as chart_renderer

    structures = _fresh_charts_and_edits(seed=5, count=16)
    assert any(s.spec.gridlines for s in structures) and any(s.spec.chart_type == "hbar" for s in structures)
    pooled = ChartRenderer(dpi=80, cache_size=2)
    got = [pooled.render(s) for s in structures]
    monkeypatch.setattr(chart_renderer._AxisArtists, "draw", _ticks_drawn_by_matplotlib)
    for structure, a in zip(structures, got):
        b = ChartRenderer(dpi=80).render(structure)
        assert np.array_equal(a.image, b.image)
        assert a.labels == b.labels and a.marks == b.marks
    turned = [lab for r in got for lab in r.labels if lab.get("rotation")]
    assert turned  # the sequence has turned category labels


def test_renderers_in_threads_at_once_draw_what_plain_agg_draws(monkeypatch):
    """Environments side by side (``episodes_in_flight``) render in threads at once, each
    with its own renderer, sharing the text caches from cold: FreeType font objects are
    never used from two threads (they once were, through shared glyph layouts: wrong
    glyphs, FreeType errors, aborts), and every image is plain Agg's."""
    import threading
    from concurrent.futures import ThreadPoolExecutor

    from matplotlib.backends.backend_agg import FigureCanvasAgg

    import vicogym.renderers.matplotlib_private as private

    structures = _fresh_charts_and_edits(seed=17, count=24)
    for name in ("_LAYOUTS", "_SIZES", "_HEIGHTS", "_GLYPHS"):  # new, empty text caches
        monkeypatch.setattr(private, name, {})
    monkeypatch.setattr(private, "_PER_THREAD", threading.local())

    def render_all(chunk):
        renderer = ChartRenderer(dpi=80, cache_size=2)
        return [renderer.render(s).image for s in chunk]

    chunks = [structures[i::4] for i in range(4)]
    with ThreadPoolExecutor(4) as pool:
        images = list(pool.map(render_all, chunks))
    monkeypatch.setattr(private, "_CANVAS", FigureCanvasAgg)
    for chunk, got in zip(chunks, images):
        for structure, image in zip(chunk, got):
            assert np.array_equal(image, ChartRenderer(dpi=80).render(structure).image)


@pytest.mark.parametrize("chart_type, legend",
                         [("grouped_bar", "outside"), ("line", "top"), ("stacked_bar", "lower left")])
def test_a_series_with_nothing_drawn_is_not_in_the_legend(renderer, chart_type, legend):
    """A grouped bar chart listed 1985, 1995 and 2000 in its legend, and drew none of them."""
    table = Table("Country", ("A", "B", "C"), ("1985", "1990", "1995", "2000"),
                  ((None, 4.0, None, None), (None, 5.0, None, 2.0), (None, 6.0, None, 1.0)), decimals=0,
                  stackable=True)
    facts = renderer.render(ChartStructure(table, ChartSpec(chart_type=chart_type, legend=legend, palette="tab10")))
    entries = facts.facts["legend_entries"]
    assert [e["text"] for e in entries] == ["1990", "2000"]
    colors = facts.facts["colors"]
    assert [e["color"] for e in entries] == [colors["1990"], colors["2000"]]  # each entry in its series' colour
    full = renderer.render(ChartStructure(replace(table, values=((1.0, 4.0, 1.0, 1.0),) * 3),
                                          ChartSpec(chart_type=chart_type, legend=legend, palette="tab10")))
    assert [e["text"] for e in full.facts["legend_entries"]] == list(table.series)


INSIDE = tuple(p for p in LEGEND_POSITIONS if p not in ("outside", "none"))
LEGENDS = ChartRenderer(dpi=50, cache_size=256)  # one warm renderer: frames and layers reused across examples


@settings(max_examples=36, deadline=None)
@given(st.integers(0, 2**32 - 1), st.sampled_from(INSIDE), st.booleans())
def test_a_legend_inside_the_plot_is_drawn_where_it_covers_nothing(seed, place, data_labels):
    """Procedural charts with the legend set inside the plot: the drawn legend (measured on
    the artists drawn) covers no bar, line segment, marker, slice, data label or tick
    label; it stays at its place where it can, else moves to another inside or outside,
    and the check agrees. A warm renderer draws the bytes a fresh one does."""
    drawn = procedural_seed(np.random.default_rng(seed)).structure
    structure = replace(drawn, spec=replace(drawn.spec, legend=place, data_labels=data_labels))
    facts = LEGENDS.render(structure)
    assert legend_covers(LEGENDS, structure, facts) == []
    check_legend_cover(structure, facts)
    assert facts.facts["legend_position"] in (place, *LEGEND_PLACES, "outside")
    fresh = ChartRenderer(dpi=50).render(structure)
    assert np.array_equal(fresh.image, facts.image) and fresh.labels == facts.labels and fresh.facts == facts.facts


def test_a_legend_with_no_room_inside_the_plot_goes_outside(renderer):
    """Bars reaching near the top of every slot leave no corner free: the legend is drawn
    right of the plot, and a chart with room keeps its legend where the spec puts it."""
    full = Table("Year", ("2019", "2020", "2021", "2022"), ("North", "South"),
                 ((100.0, 110.0), (105.0, 110.0), (100.0, 108.0), (104.0, 110.0)))
    facts = renderer.render(ChartStructure(full, ChartSpec(chart_type="grouped_bar", legend="lower left")))
    assert facts.facts["legend_position"] == "outside"
    assert facts.facts["legend_box"][0] > facts.facts["plot_box"][2]
    assert legend_covers(renderer, ChartStructure(full, ChartSpec(chart_type="grouped_bar")), facts) == []
    low = replace(full, values=((10.0, 20.0), (15.0, 12.0), (100.0, 108.0), (104.0, 110.0)))
    kept = renderer.render(ChartStructure(low, ChartSpec(chart_type="grouped_bar", legend="upper left")))
    assert kept.facts["legend_position"] == "upper left"
    assert kept.facts["legend_box"][2] < kept.facts["plot_box"][2]


def test_a_moved_legend_draws_the_bytes_of_a_fresh_render():
    """One frame draws a chart whose legend moves (its place covers the tall bars on the
    right) and one whose legend stays, in turns: each render is what a fresh renderer draws."""
    spec = ChartSpec(chart_type="grouped_bar", legend="upper right")
    right = Table("Year", ("2019", "2020", "2021", "2022"), ("North", "South"),
                  ((10.0, 20.0), (15.0, 12.0), (100.0, 108.0), (104.0, 110.0)))
    left = replace(right, values=right.values[::-1])
    warm = ChartRenderer(dpi=60)
    for table in (right, left, right, left):
        got = warm.render(ChartStructure(table, spec))
        fresh = ChartRenderer(dpi=60).render(ChartStructure(table, spec))
        assert got.facts["legend_position"] == ("upper right" if table is left else "upper left")
        assert np.array_equal(got.image, fresh.image) and got.labels == fresh.labels and got.facts == fresh.facts
    assert warm.frames_built == 1
