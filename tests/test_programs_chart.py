import numpy as np
import pytest
from helpers.reference_chart import reference
from helpers.strategies import tables
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vicogym.answers import anls, exact_match, format_number, parse_number, relaxed_accuracy
from vicogym.errors import GenerationError, InvalidEdit
from vicogym.programs.chart import (
    OPS,
    TEMPLATES,
    Op,
    anchors,
    answer_text,
    cell_rule,
    execute,
    generate_question,
    instantiate,
    invariant_rule,
    make_program,
    program_rule,
    question_matches,
    relabel,
)
from vicogym.structures.chart import Table

T = Table("Country", ("France", "Spain", "Italy"), ("2020", "2021"), ((10.0, 12.0), (30.0, 8.0), (20.0, 8.0)))


#: a table whose values differ within every row and every series: no op ties on it
WIDE = Table("Country", ("France", "Spain", "Italy", "Peru"), ("2020", "2021", "2022"),
             ((10.0, 12.0, 7.0), (30.0, 8.0, 9.0), (20.0, 5.0, 11.0), (15.0, 14.0, 13.0)))


def test_at_least_fifteen_templates_over_every_op():
    assert len(TEMPLATES) >= 15
    assert {t.op for t in TEMPLATES} == set(OPS)


@pytest.mark.parametrize("name", sorted(OPS))
def test_every_op_record_is_complete_and_agrees_with_its_handler(name):
    """What each layer reads of an op's record holds for its handler: a program with the
    declared arguments runs, its answer is of the declared kind, it reads the declared
    cells, and a value op's answer follows from those cells as the record says."""
    op = OPS[name]
    assert op.name == name and op.cost >= 0
    rows, series = WIDE.rows[: len(op.rows)], WIDE.series[: len(op.series)]
    assert len(WIDE.series) >= op.min_series
    number = None if op.draw_number is None else op.draw_number(WIDE, series[0], np.random.default_rng(0))
    program = make_program(name, rows, series, number)
    assert set(program) == {"op", *op.arguments}
    answer = execute(WIDE, program)
    cells = op.cells(program, WIDE)
    values = [WIDE.cell(r, s) for r, s in cells]
    expected_cells = {"cells": len(op.rows) * len(op.series), "row": len(WIDE.series), "column": len(WIDE.rows),
                      "none": 0}[op.reads]
    assert len(cells) == expected_cells and None not in values
    assert {r for r, _ in cells} <= set(WIDE.rows) and {s for _, s in cells} <= set(WIDE.series)
    if op.answer == "number":
        assert isinstance(answer, float)
    else:
        assert answer in {"row": WIDE.rows, "series": WIDE.series, "yes_no": ("Yes", "No")}[op.answer]
    if op.seen == "value":
        assert op.combine(values) == pytest.approx(answer, rel=1e-12)
        assert op.readings is None or 1 <= op.readings <= len(values)
    if op.seen == "ratio":
        assert answer == pytest.approx(values[0] / values[1], rel=1e-12)
    if op.extreme in ("max", "min"):
        best = max(values) if op.extreme == "max" else min(values)
        if op.answer in ("row", "series"):
            assert [v for cell, v in zip(cells, values) if answer in cell] == [best]
        elif op.answer == "number":
            assert answer == best
    if op.seen in ("threshold", "find"):
        assert op.number in program and op.reads == "column"
    if op.seen == "count":
        assert cells == [] and op.reads == "none"


@pytest.mark.parametrize("fields, problem", [
    ({"seen": "value"}, "combine"),
    ({"seen": "ratio", "combine": max}, "combine"),
    ({"seen": "order"}, "extreme"),
    ({"seen": "threshold"}, "number argument"),
    ({"seen": "value", "combine": max, "number": "value"}, "draw_number"),
    ({"seen": "glance"}, "seen 'glance' not in"),
    ({"seen": "count", "answer": "colour"}, "answer 'colour' not in"),
    ({"seen": "value", "combine": max, "rows": ("series",)}, "distinct"),
])
def test_an_incomplete_op_record_is_refused(fields, problem):
    with pytest.raises(ValueError, match=problem):
        Op("new", lambda t, a: 0.0, cost=0.5, **fields)


def test_programs_are_made_with_the_arguments_their_op_declares():
    assert make_program("series_greater", ["Spain"], ["2020", "2021"]) == {
        "op": "series_greater", "row": "Spain", "s1": "2020", "s2": "2021"}
    assert make_program("count_above", series=["2020"], number=15.0) == {
        "op": "count_above", "series": "2020", "threshold": 15.0}
    with pytest.raises(ValueError, match="expected op 'absdiff' to name rows"):
        make_program("absdiff", ["Spain"], ["2020"])
    with pytest.raises(ValueError, match="expected op 'count_above' to name rows"):
        make_program("count_above", series=["2020"])
    with pytest.raises(ValueError, match="expected an op in"):
        make_program("mode", series=["2020"])


@pytest.mark.parametrize(
    "program, expected",
    [
        ({"op": "lookup", "row": "Spain", "series": "2020"}, "30"),
        ({"op": "max", "series": "2020"}, "30"),
        ({"op": "min", "series": "2021"}, "8"),
        ({"op": "argmax", "series": "2020"}, "Spain"),
        ({"op": "argmin", "series": "2020"}, "France"),
        ({"op": "sum", "series": "2020"}, "60"),
        ({"op": "mean", "series": "2021"}, "9.33"),
        ({"op": "median", "series": "2020"}, "20"),
        ({"op": "range", "series": "2020"}, "20"),
        ({"op": "absdiff", "a": "France", "b": "Spain", "series": "2020"}, "20"),
        ({"op": "ratio", "a": "Spain", "b": "France", "series": "2020"}, "3"),
        ({"op": "greater", "a": "Spain", "b": "Italy", "series": "2020"}, "Yes"),
        ({"op": "less", "a": "Spain", "b": "Italy", "series": "2020"}, "No"),
        ({"op": "count_above", "series": "2020", "threshold": 15}, "2"),
        ({"op": "count_rows"}, "3"),
        ({"op": "row_argmax", "row": "France"}, "2021"),
        ({"op": "row_sum", "row": "Italy"}, "28"),
        ({"op": "series_greater", "row": "Spain", "s1": "2020", "s2": "2021"}, "Yes"),
    ],
)
def test_every_op_on_a_known_table(program, expected):
    assert answer_text(execute(T, program)) == expected


@pytest.mark.parametrize("program, message",
                         [({"op": "argmin", "series": "2021"}, "[ambiguous] 2 labels tie at 8: ['Spain', 'Italy']"),
                          ({"op": "greater", "a": "Spain", "b": "Italy", "series": "2021"},
                           "[ambiguous] the compared values are equal (8)"),
                          ({"op": "lookup", "row": "Peru", "series": "2020"},
                           "[not_found] row 'Peru' is not in the table")])
def test_ambiguity_is_rejected_not_guessed(program, message):
    with pytest.raises(InvalidEdit) as info:
        execute(T, program)
    assert str(info.value) == message


def test_missing_values_and_division_by_zero_are_ambiguous():
    t = Table("X", ("a", "b"), ("s",), ((None,), (0.0,)))
    with pytest.raises(InvalidEdit, match="the value of 'a' in 's' is missing"):
        execute(t, {"op": "sum", "series": "s"})
    t2 = Table("X", ("a", "b"), ("s",), ((3.0,), (0.0,)))
    with pytest.raises(InvalidEdit, match="divides by zero"):
        execute(t2, {"op": "ratio", "a": "a", "b": "b", "series": "s"})


def test_label_rules_relabel_and_anchor():
    assert relabel(T, cell_rule("Italy", "2021")) == "8"
    rule = program_rule({"op": "absdiff", "a": "France", "b": "Spain", "series": "2020"})
    assert anchors(rule) == (frozenset({"France", "Spain"}), frozenset({"2020"}))
    inv = invariant_rule(T, "Spain")
    assert relabel(T, inv) == "Spain"
    changed = Table("Country", T.rows, T.series, ((10.0, 12.0), (31.0, 8.0), (20.0, 8.0)))
    with pytest.raises(InvalidEdit) as info:
        relabel(changed, inv)
    assert info.value.code == "invariance"


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tables(), st.integers(0, len(TEMPLATES) - 1), st.integers(0, 2**32 - 1))
def test_programs_agree_with_an_independent_reference(table, template_index, seed):
    template = TEMPLATES[template_index]
    rng = np.random.default_rng(seed)
    try:
        _question, program = instantiate(template, table, rng)
    except InvalidEdit as exc:
        assert exc.code == "size"
        return
    expected = reference(table, program)
    try:
        got = execute(table, program)
    except InvalidEdit as exc:
        assert exc.code == "ambiguous"
        assert expected is None
        return
    assert expected is not None
    if isinstance(got, str):
        assert got == expected
    else:
        assert got == pytest.approx(float(expected), rel=1e-9, abs=1e-9)


@settings(max_examples=300, deadline=None)
@given(tables(), st.integers(0, 2**32 - 1), st.randoms(use_true_random=False))
def test_programs_are_entity_anchored(table, seed, shuffler):
    try:
        _q, program, answer = generate_question(table, np.random.default_rng(seed))
    except GenerationError:
        return
    order = list(range(len(table.rows)))
    shuffler.shuffle(order)
    permuted = Table(table.index_name, tuple(table.rows[i] for i in order), table.series,
                     tuple(table.values[i] for i in order))
    assert answer_text(execute(permuted, program)) == answer


@settings(max_examples=300, deadline=None)
@given(tables(), st.integers(0, 2**32 - 1))
def test_generated_questions_are_given_back_by_their_program(table, seed):
    try:
        question, program, _answer = generate_question(table, np.random.default_rng(seed))
    except GenerationError:
        return
    rule = program_rule(program)
    assert question_matches(question, rule, table) is None
    assert question_matches(question + " Explain.", rule, table).startswith("the program asks ")


def test_question_generation_is_deterministic_and_bounded():
    a = generate_question(T, np.random.default_rng(5))
    b = generate_question(T, np.random.default_rng(5))
    assert a == b
    tied = Table("X", ("a", "b"), ("s",), ((1.0,), (1.0,)))
    with pytest.raises(GenerationError, match="no unambiguous question in 4 tries"):
        generate_question(tied, np.random.default_rng(0), templates=("argmax", "greater"), max_tries=4)


@pytest.mark.parametrize(
    "prediction, target, score",
    [
        ("80", "80", 1.0), ("83", "80", 1.0), ("85", "80", 0.0), ("80%", "80", 1.0), ("1,327.7", "1327.7", 1.0),
        ("0", "0", 1.0), ("0.1", "0", 0.0), ("yes", "Yes", 1.0), ("Yes.", "Yes", 1.0), ("No", "Yes", 0.0),
        ("italy", "Italy", 1.0), ("Spain", "Italy", 0.0), ("$12", "12", 1.0),
    ],
)
def test_relaxed_accuracy(prediction, target, score):
    assert relaxed_accuracy(prediction, target) == score


def test_other_scorers():
    assert exact_match(" Italy. ", "italy") == 1.0
    assert anls("Itly", "Italy") == pytest.approx(0.8)
    assert anls("xyz", "Italy") == 0.0
    assert parse_number("−3.5") == -3.5 and parse_number("abc") is None


@given(st.one_of(st.just(0.0), st.floats(1e-6, 1e9), st.floats(-1e9, -1e-6)))
def test_format_number_round_trips_within_relaxed_tolerance(x):
    text = format_number(x)
    # the canonical text, read back, is the number itself within the scorer's tolerance
    assert relaxed_accuracy(text, repr(x)) == 1.0
    assert parse_number(text) is not None and "e" not in text.lower()
    if abs(x) >= 0.01:
        assert float(text) == pytest.approx(x, rel=0.01, abs=0.006)


@pytest.mark.parametrize("x, text",
                         [(80.0, "80"), (0.6666, "0.6666"), (2.6666, "2.67"), (1327.7, "1327.7"), (-3.5, "-3.5"),
                          (0.00123456, "0.001235"), (-0.0, "0"), (1e15, "1000000000000000")])
def test_format_number_known_values(x, text):
    assert format_number(x) == text
