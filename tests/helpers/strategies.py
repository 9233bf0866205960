"""Hypothesis strategies shared by the chart tests."""

from hypothesis import strategies as st

from vicogym.structures.chart import ChartSpec, ChartStructure, Table, Vocabulary

LABELS = (st.text(alphabet="abcdefghijklmnopqrstuvwxyz ABCDEFGHIJ0123456789", min_size=1,
                  max_size=12) .map(str.strip) .filter(bool))
VALUES = st.one_of(st.integers(-50, 200).map(float),
                   st.floats(-1e4, 1e4, allow_nan=False, allow_infinity=False).map(lambda v: round(v, 2)))


@st.composite
def tables(draw, min_rows=2, max_rows=8, max_series=3, allow_missing=False):
    rows = draw(st.lists(LABELS, min_size=min_rows, max_size=max_rows, unique=True))
    series = draw(st.lists(LABELS, min_size=1, max_size=max_series, unique=True))
    cell = st.one_of(VALUES, st.none()) if allow_missing else VALUES
    values = draw(st.lists(st.lists(cell, min_size=len(series), max_size=len(series)), min_size=len(rows),
                           max_size=len(rows)))
    return Table("Item", tuple(rows), tuple(series), tuple(tuple(r) for r in values))


@st.composite
def structures(draw, **kwargs):
    table = draw(tables(**kwargs))
    chart_type = "bar" if len(table.series) == 1 else "grouped_bar"
    vocabulary = Vocabulary(tuple(draw(st.lists(LABELS, max_size=6, unique=True))),
                            tuple(draw(st.lists(LABELS, max_size=3, unique=True))))
    return ChartStructure(table, ChartSpec(chart_type=chart_type), vocabulary)
