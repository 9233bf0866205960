"""Answerability checks of the chart arm: each check on charts built to fail it, and a
property test whose accepted samples are re-checked from the image's pixels."""

from dataclasses import replace

import gymnasium as gym
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vicogym.checks.chart import INVARIANT_COST, MIN_DELTA_E, check, delta_e, reasoning_cost, screen
from vicogym.errors import GenerationError, InvalidEdit
from vicogym.programs.chart import OPS, TEMPLATES, instantiate, invariant_rule, program_rule
from vicogym.renderers.chart import ChartRenderer
from vicogym.structures.chart import ChartSpec, ChartStructure, Table

RENDERER = ChartRenderer(dpi=80)
YEARS = tuple(str(y) for y in range(2015, 2021))


def _code(structure, rule):
    try:
        check(structure, rule, RENDERER.render(structure))
    except InvalidEdit as exc:
        return exc.code, str(exc)
    return None, ""


def _table(values, rows=YEARS[:4], series=("Sales",), **kwargs):
    return Table("Year", tuple(rows), tuple(series), tuple(tuple(float(v) for v in r) for r in values), **kwargs)


def test_a_plain_readable_chart_passes():
    t = _table([[10], [20], [35], [28]])
    assert (_code(ChartStructure(t, ChartSpec(data_labels=True)),
                  program_rule({"op": "argmax", "series": "Sales"}))[0] is None)
    assert _code(ChartStructure(t), program_rule({"op": "lookup", "row": "2017", "series": "Sales"}))[0] is None


@pytest.mark.parametrize("values, rule, labels, code", [
    # 2 on a 0-40 axis: read to about +-1, the relaxed scorer wants +-0.1
    ([[2], [20], [35], [28]], program_rule({"op": "lookup", "row": "2015", "series": "Sales"}), False, "unreadable"),
    ([[2], [20], [35], [28]], program_rule({"op": "lookup", "row": "2015", "series": "Sales"}), True, None),
    # the top two differ by 0.2 on a 0-40 axis (well under 4 px)
    ([[10], [20], [35], [34.8]], program_rule({"op": "argmax", "series": "Sales"}), False, "near_tie"),
    ([[10], [20], [35], [34.8]], program_rule({"op": "argmax", "series": "Sales"}), True, None),
    # printed the same: 35.001 and 35 both print 35
    ([[10], [20], [35.001], [35]], program_rule({"op": "argmax", "series": "Sales"}), True, "near_tie"),
    # a value 0.1 from the threshold
    ([[10], [20], [30.1], [28]], program_rule({"op": "count_above", "series": "Sales", "threshold": 30.0}), False,
     "near_tie"),
    ([[10], [20], [30.1], [28]], program_rule({"op": "count_above", "series": "Sales", "threshold": 30.0}), True, None),
    # a sum of four readings of +-1 each for an answer of 93 (tolerance 4.65) is fine; of 9.3 it is not
    ([[10], [20], [35], [28]], program_rule({"op": "sum", "series": "Sales"}), False, None),
    ([[1], [2], [3.5], [2.8]], program_rule({"op": "ratio", "a": "2015", "b": "2016", "series": "Sales"}), False,
     "unreadable"),
    # no program: whatever values it may need must be printed
    ([[10], [20], [35], [28]], invariant_rule(_table([[10], [20], [35], [28]]), "35", "q?"), False, "unreadable"),
    ([[10], [20], [35], [28]], invariant_rule(_table([[10], [20], [35], [28]]), "2017", "q?"), False, "unreadable"),
    ([[10], [20], [35], [28]], invariant_rule(_table([[10], [20], [35], [28]]), "2017", "q?"), True, None),
    # a value to find is found by its printed label
    ([[10], [20], [35], [28]], program_rule({"op": "row_with_value", "series": "Sales", "value": 35.0}), False,
     "unreadable"),
    ([[10], [20], [35], [28]], program_rule({"op": "row_with_value", "series": "Sales", "value": 35.0}), True, None),
])
def test_values_must_be_readable_at_the_precision_the_answer_needs(values, rule, labels, code):
    structure = ChartStructure(_table(values, decimals=3), ChartSpec(data_labels=labels))
    assert _code(structure, rule)[0] == code


def test_pies_show_values_only_through_labels():
    t = _table([[50], [30], [20], [0.5]], part_of_whole=True, unit="")
    lookup = program_rule({"op": "lookup", "row": "2016", "series": "Sales"})
    assert _code(ChartStructure(t, ChartSpec(chart_type="pie")), lookup)[0] == "unreadable"
    assert _code(ChartStructure(t, ChartSpec(chart_type="pie", data_labels=True)), lookup)[0] is None
    tie = program_rule({"op": "argmin", "series": "Sales"})
    close = _table([[50], [30], [19.5], [20]], part_of_whole=True)
    assert _code(ChartStructure(close, ChartSpec(chart_type="pie")), tie)[0] == "near_tie"


def test_several_series_need_a_legend_in_distinct_colours():
    t = _table([[1, 2], [3, 4], [5, 6.5], [7, 8]], series=("A", "B"))
    rule = program_rule({"op": "lookup", "row": "2016", "series": "A"})
    assert _code(ChartStructure(t, ChartSpec(chart_type="grouped_bar", legend="none", data_labels=True)), rule)[0] == \
        "unlabelled"
    many = Table("Year", YEARS[:2], tuple(f"S{i}" for i in range(11)),
                 tuple(tuple(float(i + j) for j in range(11)) for i in range(2)))
    wide = ChartSpec(chart_type="grouped_bar", figure_size=(8.0, 6.0), font_size=7.0)
    code, message = _code(ChartStructure(many, wide), program_rule({"op": "count_rows"}))
    assert code == "indistinct" and "tab10 has 10" in message  # tab10 cycles after 10 colours
    assert _code(ChartStructure(many, replace(wide, palette="Paired")), program_rule({"op": "count_rows"}))[0] is None


def test_text_must_be_drawable_unclipped_and_apart():
    rule = program_rule({"op": "count_rows"})
    cjk = _table([[1], [2]], rows=("东京", "大阪"))
    assert _code(ChartStructure(cjk), rule)[0] == "glyph"
    long_title = ChartSpec(title="A title far too long to fit across this small figure at this size" * 2)
    assert _code(ChartStructure(_table([[1], [2]], rows=("a", "b")), long_title), rule)[0] == "clipped"
    crowded = _table([[v] for v in range(1, 31)], rows=tuple(f"Region number {i}" for i in range(30)))
    assert _code(ChartStructure(crowded, ChartSpec(figure_size=(4.0, 3.0))), rule)[0] in ("overlap", "clipped")
    assert _code(ChartStructure(crowded, ChartSpec(chart_type="hbar", figure_size=(8.0, 6.0), font_size=6.0)),
                 rule)[0] is None


def _legend_over(facts, box):
    """``facts`` with the legend's box put at ``box`` (image pixels), over a mark on purpose."""
    return replace(facts, facts={**facts.facts, "legend_box": [float(v) for v in box]})


def _refusal(structure, facts):
    try:
        check(structure, program_rule({"op": "count_rows"}), facts)
    except InvalidEdit as exc:
        return exc.code, str(exc)
    return None, ""


def test_a_legend_over_the_foot_of_a_bar_is_refused():
    """A legend over the lower part of a tall bar hides no value end and under a quarter of
    the bar: it is still drawn over the bar (a legend at lower left over the 2022 bar)."""
    t = _table([[9.5, 21.1], [27.5, 26.5], [16.4, 18.1]], rows=("Initech", "Hooli", "Globex"),
               series=("2022", "2023"))
    structure = ChartStructure(t, ChartSpec(chart_type="grouped_bar", data_labels=True))
    facts = RENDERER.render(structure)
    assert _refusal(structure, facts)[0] is None
    x0, y0, x1, y1 = next(m["box"] for m in facts.marks if (m["row"], m["series"]) == ("Hooli", "2022"))
    over = _legend_over(facts, [x0 + 2, y1 - 0.15 * (y1 - y0), x0 + 0.6 * (x1 - x0), y1 - 1])
    code, message = _refusal(structure, over)
    assert code == "occluded" and "the bar of 'Hooli' in '2022'" in message
    px0, py0 = facts.facts["plot_box"][:2]
    clear = [px0 + 5, py0 + 5, x0 - 5, py0 + 25]  # top left: above Initech's bars and their labels
    assert _refusal(structure, _legend_over(facts, clear))[0] is None


def test_a_legend_over_a_line_between_its_points_is_refused():
    structure = ChartStructure(_table([[10], [40], [10], [40]]), ChartSpec(chart_type="line"))
    facts = RENDERER.render(structure)
    a, b = (m["box"] for m in facts.marks[:2])
    mid = ((a[0] + a[2] + b[0] + b[2]) / 4.0, (a[1] + a[3] + b[1] + b[3]) / 4.0)  # halfway, far from both points
    code, message = _refusal(structure, _legend_over(facts, [mid[0] - 6, mid[1] - 6, mid[0] + 6, mid[1] + 6]))
    assert code == "occluded" and "the line of 'Sales' from '2015' to '2016'" in message


def test_a_legend_over_the_rim_of_a_slice_is_refused():
    t = _table([[50], [30], [20]], rows=("A", "B", "C"), part_of_whole=True)
    structure = ChartStructure(t, ChartSpec(chart_type="pie", data_labels=True))
    facts = RENDERER.render(structure)
    first = facts.marks[0]  # from twelve o'clock clockwise to six: the right half
    cx, cy, r = *first["centre"], first["radius"]
    code, message = _refusal(structure, _legend_over(facts, [cx + 0.6 * r, cy - 0.35 * r, cx + r, cy - 0.1 * r]))
    assert code == "occluded" and "the slice 'A'" in message
    corner = [cx + 0.8 * r, cy - r, cx + r, cy - 0.8 * r]  # inside the slice's box, outside its circle
    assert _refusal(structure, _legend_over(facts, corner))[0] is None


def test_every_question_kind_has_a_reasoning_cost():
    assert {op: reasoning_cost(op) for op in OPS} == {name: op.cost for name, op in OPS.items()}
    assert reasoning_cost("cell") == OPS["lookup"].cost and reasoning_cost("invariant") == INVARIANT_COST
    with pytest.raises(ValueError, match="expected a question op in"):
        reasoning_cost("mode")


@pytest.mark.parametrize("template", TEMPLATES, ids=lambda t: t.id)
@pytest.mark.parametrize("labelled", [False, True])
def test_the_value_checks_read_every_op(template, labelled):
    """Every op's record tells the value checks what to read: each template's program is
    screened (passed or refused for a stated reason, never an unhandled op), a question
    that names a value to find needs printed values, and one read at a reader's
    resolution passes."""
    t = Table("Country", ("France", "Spain", "Italy", "Peru"), ("2020", "2021", "2022"),
              ((10.0, 12.0, 7.0), (30.0, 8.0, 9.0), (20.0, 5.0, 11.0), (15.0, 14.0, 13.0)))
    structure = ChartStructure(t, ChartSpec(chart_type="grouped_bar", data_labels=labelled))
    _, program = instantiate(template, t, np.random.default_rng(0))
    op = OPS[program["op"]]
    try:
        screen(structure, program_rule(program), (0.0, 35.0), 2000.0, 5)
    except InvalidEdit as exc:
        assert not labelled and exc.code in ("unreadable", "near_tie")
        assert op.seen in ("value", "ratio", "find", "order", "threshold")
        return
    assert labelled or op.seen != "find"


def test_delta_e_matches_known_colour_differences():
    d = delta_e([(255, 0, 0), (255, 0, 0), (0, 0, 255), (250, 5, 5)])
    assert d[0, 1] == 0 and d[0, 2] > 50 and 0 < d[0, 3] < 5


# -- every accepted sample, re-checked from its pixels ---------------------------------------
def _handle_colour(image, box):
    """The colour of a legend handle read from the image: the commonest of its pixels that
    are nearly as far from white as its farthest (a thin line's core, not its anti-aliased
    rim)."""
    x0, y0, x1, y1 = (int(round(v)) for v in box)
    patch = image[max(y0 - 1, 0):max(y1 + 1, y0 + 1), max(x0, 0):max(x1, x0 + 1)].reshape(-1, 3).astype(int)
    distance = np.linalg.norm(255 - patch, axis=1)
    if distance.max() < 20:
        return None
    core = patch[distance >= 0.85 * distance.max()]
    values, counts = np.unique(core, axis=0, return_counts=True)
    return tuple(int(v) for v in values[int(np.argmax(counts))])


def _pixel_problems(image, facts):
    problems = []
    border = np.concatenate([image[0], image[-1], image[:, 0], image[:, -1]])
    if border.min() < 200:  # something drawn runs into the edge: clipped
        problems.append("ink on the image border")
    colours = [_handle_colour(image, e["handle_box"]) for e in facts.facts["legend_entries"]]
    colours = [c for c in colours if c is not None]
    if len(colours) >= 2:
        d = delta_e(colours)
        np.fill_diagonal(d, np.inf)
        if d.min() < MIN_DELTA_E - 1.0:  # anti-aliasing may shift a measured colour a little
            problems.append(f"legend colours {d.min():.1f} apart in the pixels")
    return problems


@pytest.mark.slow
@settings(max_examples=1000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 2**32 - 1), st.integers(2, 5))
def test_every_accepted_sample_passes_the_checks_read_from_pixels(seed, turns):
    """1000 random episodes (seed plus 2-5 sampled edits, at 60 dpi to keep it quick)."""
    env = _ENV
    obs, info = env.reset(seed=seed)
    rng = np.random.default_rng(seed)
    samples = [(info["sample"], env._render_out)]
    for _ in range(turns):
        try:
            edit = env.sample_edit(obs, rng)
        except GenerationError:  # the random rewriter found no valid edit for this table: the episode ends
            break
        obs, _, _, truncated, info = env.step(edit)
        if info["valid"]:
            samples.append((info["sample"], env._render_out))
        if truncated:
            break
    for sample, render in samples:
        assert _pixel_problems(np.asarray(sample.image), render.facts) == [], sample.provenance


# the checks read from the renderer's facts alone: at 60 dpi Tesseract reads little of the
# text (the reader check is tested in test_chart_reader.py, at the default dpi)
_ENV = gym.make("vicogym/Chart-v0", k=1, max_turns=10, dpi=60, reader_check="off").unwrapped


def test_a_which_series_question_left_one_series_is_refused_as_too_small_never_unhandled():
    import vicogym
    from vicogym.core import Edit

    two = _table([[10, 12], [20, 18], [35, 30], [28, 40]], series=("Sales", "Costs"))
    rule = program_rule({"op": "row_argmax", "row": "2016"})
    one = ChartStructure(_table([[10], [20], [35], [28]]), ChartSpec(data_labels=True))
    assert _code(one, rule)[0] == "size"  # a seed drawn so is redrawn, not a traceback
    env = vicogym.make("vicogym/Chart-v0", k=1, max_turns=5).unwrapped
    env.reset(seed=0)
    from vicogym.structures.chart import Vocabulary

    structure = ChartStructure(two, ChartSpec(chart_type="line", data_labels=True),
                               Vocabulary(YEARS, ("Profit",), ordered=True))
    with pytest.raises(InvalidEdit) as info:
        env._edit(replace(env.sample, structure=structure, label_rule=rule),
                  Edit.parse({"op": "remove_series", "series": "Costs"}), {})
    assert info.value.code == "size" and "only ['Sales']" in str(info.value)


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**31))
def test_the_pre_render_screen_rejects_only_what_the_render_check_rejects(seed):
    """A seed the screen turns away before its render fails the value checks on its
    render too: screening saves renders and changes no decision."""
    from vicogym.checks import chart as chart_checks

    env = _screen_env()
    drawn = env.arm.draw_seed(np.random.default_rng(seed), {})
    for variant in env.arm.seed_variants(drawn):
        try:
            env.arm.screen(variant.structure, variant.label_rule)
        except InvalidEdit as screened:
            _, render = env.arm.encode_and_render(variant.structure)
            with pytest.raises(InvalidEdit) as checked:
                chart_checks.check_values(variant.structure, variant.label_rule, render.facts, env.arm.tolerance)
            assert checked.value.code == screened.code


def test_seeds_drawn_with_the_screen_are_those_drawn_without(monkeypatch):
    env = _screen_env()
    screened = [env.reset(seed=s)[1]["sample"] for s in range(24)]
    monkeypatch.setattr(type(env.arm), "screen", lambda self, structure, rule: None)
    plain = [env.reset(seed=s)[1]["sample"] for s in range(24)]
    for a, b in zip(screened, plain):
        assert (a.structure, a.question, a.answer) == (b.structure, b.question, b.answer)
        assert np.array_equal(a.image, b.image)


_SCREEN_ENVS: list = []


def _screen_env():
    if not _SCREEN_ENVS:
        _SCREEN_ENVS.append(gym.make("vicogym/Chart-v0", k=1).unwrapped)
    return _SCREEN_ENVS[0]
