"""The geometry arm's pure layers: the surd field, the question programs, the scorer and
the editors (property tests with hypothesis, and hand-worked answers)."""

import json
import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vicogym.editors.geometry import OP_FIELDS, apply, sample_op
from vicogym.errors import GenerationError, InvalidEdit
from vicogym.programs.geometry import (
    count_triangles,
    parse_value,
    question_text,
    relabel,
    score,
    unstated,
)
from vicogym.structures.geometry import Figure, Surd, solve

TRIANGLE = {"steps": [{"op": "origin", "point": "A"},
                      {"op": "polar", "point": "B", "from": "A", "length": "6", "angle": "0", "ref": None},
                      {"op": "asa", "point": "C", "from": ["A", "B"], "angles": ["45", "60"], "side": 1},
                      {"op": "foot", "point": "H", "from": "C", "to": ["A", "B"]},
                      {"op": "midpoint", "point": "M", "of": ["A", "C"]}],
            "draw": [["segment", "A", "B"], ["segment", "B", "C"], ["segment", "A", "C"], ["segment", "C", "H"]],
            "diagram": ["length:A,B", "angle:B,A,C"]}
RIGHT = {"steps": [{"op": "origin", "point": "P"},
                   {"op": "polar", "point": "Q", "from": "P", "length": "4", "angle": "0", "ref": None},
                   {"op": "polar", "point": "R", "from": "P", "length": "3", "angle": "90", "ref": "Q"},
                   {"op": "incircle", "circle": "w", "center": "I", "of": ["P", "Q", "R"]}],
         "draw": [["segment", "P", "Q"], ["segment", "Q", "R"], ["segment", "P", "R"], ["circle", "w"]],
         "diagram": ["length:P,Q", "length:P,R", "angle:Q,P,R"]}


def rule(kind, target, text=(), figure=TRIANGLE):
    r = {"kind": kind, "target": target, "text": list(text)}
    r["question"] = question_text(Figure.from_dict(figure), r)
    return r


# -- the surd field -----------------------------------------------------------------------
small = st.integers(-20, 20)
roots = st.sampled_from([1, 2, 3, 5, 6, 7, 10])
surds = st.lists(st.tuples(small, st.integers(1, 6), roots), max_size=4).map(
    lambda terms: sum((Surd.root(m) * Fraction(a, b) for a, b, m in terms), Surd(0)))


@given(surds, surds, surds)
@settings(max_examples=150, deadline=None)
def test_the_surds_are_a_field_and_agree_with_their_values(a, b, c):
    assert (a + b) * c == a * c + b * c
    assert math.isclose((a * b).to_float(), a.to_float() * b.to_float(), rel_tol=1e-9, abs_tol=1e-9)
    assert math.isclose((a - b).to_float(), a.to_float() - b.to_float(), rel_tol=1e-9, abs_tol=1e-9)
    if not b.is_zero():
        assert (a / b) * b == a
    assert (a == b) == (a - b).is_zero()
    assert Surd.parse(str(a)) == a  # the printed form reads back exactly


@given(surds)
@settings(max_examples=150, deadline=None)
def test_a_square_root_squares_back_and_is_found_for_every_square(a):
    square = a * a
    root = square.sqrt()
    assert root is not None and root * root == square and root == abs(a)
    r = a.sqrt()
    if r is not None:
        assert r * r == a and r.sign() >= 0


def test_nested_roots_denest_when_they_can_and_are_refused_when_not():
    assert Surd.parse("3 + 2*sqrt(2)").sqrt() == Surd.parse("1 + √2")
    assert Surd.parse("2 + √3").sqrt() == Surd.parse("√6/2 + √2/2")
    assert Surd.parse("1 + √2").sqrt() is None  # sqrt(1 + sqrt 2) is no surd
    with pytest.raises(InvalidEdit, match="exact number"):
        Surd.parse("2**0.5")


# -- answers, worked by hand --------------------------------------------------------------
def test_hand_worked_answers():
    f = Figure.from_dict(TRIANGLE)
    # C: angles 45 at A and 60 at B on AB = 6, so AC = 6 sin 60 / sin 75 and the height is 9 - 3√3
    assert relabel(f, rule("angle", {"at": ["A", "C", "B"]}, ["angle:A,B,C"])) == "75"
    assert relabel(f, rule("length", {"of": ["C", "H"]}, ["angle:A,B,C", "perpendicular:H"])) == "9 - 3√3"
    assert relabel(f, rule("area", {"of": ["A", "B", "C"]}, ["angle:A,B,C"])) == "27 - 9√3"
    assert relabel(f, rule("relation", {"relation": "perpendicular", "a": ["C", "H"], "b": ["A", "B"]},
                           ["angle:A,B,C", "perpendicular:H"])) == "Yes"
    assert relabel(f, rule("relation", {"relation": "equal", "a": ["A", "H"], "b": ["C", "H"]},
                           ["angle:A,B,C", "perpendicular:H"])) == "Yes"  # the 45-degree angle at A
    assert relabel(f, rule("relation", {"relation": "parallel", "a": ["A", "C"], "b": ["B", "C"]},
                           ["angle:A,B,C"])) == "No"
    assert relabel(f, rule("count", {}, ["angle:A,B,C", "perpendicular:H"])) == "3"  # ABC, ACH, BCH
    g = Figure.from_dict(RIGHT)
    assert relabel(g, rule("length", {"of": ["Q", "R"]}, figure=RIGHT)) == "5"
    assert relabel(g, rule("area", {"circle": "w"}, ["inscribed:w"], figure=RIGHT)) == "π"  # r = (3+4-5)/2 = 1
    assert relabel(g, rule("perimeter", {"of": ["P", "Q", "R"]}, figure=RIGHT)) == "12"
    assert relabel(g, rule("angle", {"at": ["Q", "P", "R"]}, figure=RIGHT)) == "90"
    assert relabel(g, rule("angle", {"at": ["P", "Q", "R"]}, figure=RIGHT)) == "36.87"  # atan(3/4)


def test_counting_triangles_takes_in_unnamed_crossings():
    f = Figure.from_dict({"steps": [{"op": "origin", "point": "A"},
                                    {"op": "polar", "point": "B", "from": "A", "length": "4", "angle": "0",
                                     "ref": None},
                                    {"op": "polar", "point": "C", "from": "B", "length": "4", "angle": "-90",
                                     "ref": "A"},
                                    {"op": "polar", "point": "D", "from": "A", "length": "4", "angle": "90",
                                     "ref": "B"}],
                          "draw": [["segment", "A", "B"], ["segment", "B", "C"], ["segment", "C", "D"],
                                   ["segment", "D", "A"], ["segment", "A", "C"], ["segment", "B", "D"]]})
    # a square with both diagonals: 4 small triangles at the centre crossing and 4 halves
    assert count_triangles(f, solve(f)) == 8


# -- the scorer -----------------------------------------------------------------------------
@pytest.mark.parametrize("written, target, expected", [
    ("2√3", "2√3", 1), ("2*sqrt(3)", "2√3", 1), ("2\\sqrt{3}", "2√3", 1), ("$2\\sqrt{3}$", "2√3", 1),
    ("3.46", "2√3", 1), ("3.464", "2√3", 1), ("3.5", "2√3", 0), ("√12", "2√3", 1), ("sqrt(12)", "2√3", 1),
    ("\\frac{5}{2}", "5/2", 1), ("2.5", "5/2", 1), ("5/2 cm", "5/2", 1), ("45°", "45", 1), ("45^\\circ", "45", 1),
    ("4π", "4π", 1), ("4\\pi", "4π", 1), ("12.57", "4π", 1), ("12.6", "4π", 0), ("9 - 3√3", "9 - 3√3", 1),
    ("3.80", "9 - 3√3", 1), ("(B)", "B", 1), ("B. 75", "B", 1), ("C", "B", 0), ("yes", "Yes", 1), ("No.", "Yes", 0),
    ("8", "8", 1), ("eight", "8", 0), ("", "2√3", 0), ("import os", "2√3", 0), ("2^^3", "8", 0),
])
def test_the_scorer_reads_the_forms_models_write(written, target, expected):
    assert score(written, target) == expected


@given(st.text(max_size=80))
@settings(max_examples=300, deadline=None)
def test_any_text_gets_a_score_or_none_never_an_error(text):
    assert score(text, "2√3") in (0.0, 1.0)
    value = parse_value(text)
    assert value is None or math.isfinite(value)


# -- editors ------------------------------------------------------------------------------
def test_edits_recompute_the_answer_and_keep_the_question():
    f = Figure.from_dict(TRIANGLE)
    r = rule("length", {"of": ["C", "H"]}, ["angle:A,B,C", "perpendicular:H"])
    g = apply(f, {"ops": [{"op": "set_given", "given": "length:A,B", "value": "12"}]}, r)
    assert relabel(g, r) == "18 - 6√3"  # twice the figure, twice the height
    g = apply(f, {"ops": [{"op": "set_given", "given": "angle:B,A,C", "value": "30"}]}, r)
    assert relabel(g, r) == "3√3/2"  # 30-60-90: AC·sin30 with AC = 3√3
    g = apply(f, {"ops": [{"op": "style", "rotation": 90, "flip": True}]}, r)
    assert relabel(g, r) == relabel(f, r) and g.style.rotation == 90


@pytest.mark.parametrize("op, code", [
    ({"op": "set_given", "given": "angle:A,B,C", "value": "45"}, "contradicts_text"),  # the text states it
    ({"op": "set_given", "given": "angle:B,A,C", "value": "120"}, "degenerate_figure"),  # 120 + 60 = 180
    ({"op": "set_given", "given": "angle:B,A,C", "value": "50"}, "bad_value"),  # not a multiple of 15
    ({"op": "hide", "given": "length:A,B"}, "unstated"),  # the answer needs it
    ({"op": "relabel", "point": "C", "to": "Z"}, "named"),
    ({"op": "remove_step", "name": "H"}, "named"),
    ({"op": "set_given", "given": "length:A,Z", "value": "3"}, "not_found"),
    ({"op": "style", "font_size": 2}, "bad_value"),
    ({"op": "add_element", "element": ["segment", "A", "Q"]}, "not_found"),
])
def test_bad_edits_are_refused_with_a_code(op, code):
    f = Figure.from_dict(TRIANGLE)
    r = rule("length", {"of": ["C", "H"]}, ["angle:A,B,C", "perpendicular:H"])
    with pytest.raises(InvalidEdit) as info:
        apply(f, {"ops": [op]}, r)
    assert info.value.code == code, str(info.value)


def test_relabel_moves_the_diagram_keys_with_the_point():
    f = Figure.from_dict(TRIANGLE)
    r = rule("angle", {"at": ["A", "C", "B"]}, ["angle:A,B,C"])
    f = apply(f, {"ops": [{"op": "show", "given": "midpoint:M"}]}, r)
    g = apply(f, {"ops": [{"op": "relabel", "point": "M", "to": "N"}]}, r)
    assert "midpoint:N" in g.diagram and "N" in g.point_names() and relabel(g, r) == "75"


ops = st.fixed_dictionaries({"op": st.sampled_from(sorted(OP_FIELDS))}, optional={
    k: st.one_of(st.text(max_size=8), st.integers(-400, 400), st.floats(allow_nan=True), st.none(),
                 st.lists(st.text(max_size=3), max_size=4), st.booleans())
    for k in ("given", "value", "point", "to", "name", "element", "length", "angle", "side", "rotation", "scale",
              "font_size", "flip", "step", "draw")})


@given(st.lists(ops, min_size=1, max_size=3))
@settings(max_examples=300, deadline=None)
def test_any_edit_gives_a_figure_or_a_typed_refusal(edit):
    f = Figure.from_dict(TRIANGLE)
    r = rule("length", {"of": ["C", "H"]}, ["angle:A,B,C", "perpendicular:H"])
    try:
        g = apply(f, {"ops": edit}, r)
    except InvalidEdit as exc:
        assert exc.code and str(exc)
    else:
        assert relabel(g, r) and question_text(g, r) == r["question"] and not unstated(r, g, solve(g))


def test_sampled_edits_are_mostly_accepted():
    f = Figure.from_dict(TRIANGLE)
    r = rule("length", {"of": ["C", "H"]}, ["angle:A,B,C", "perpendicular:H"])
    rng = np.random.default_rng(0)
    accepted = 0
    for _ in range(60):
        try:
            apply(f, {"ops": [sample_op(f, r, rng)]}, r)
            accepted += 1
        except (InvalidEdit, GenerationError):
            pass
    assert accepted >= 20


def test_numbers_beyond_the_bounds_are_refused_and_nested_roots_end_in_decimals():
    from geometry_rederive import rederive

    from vicogym.structures.geometry import MAX_TERMS, TooComplex

    squarefree = [m for m in range(1, 400) if all(m % (p * p) for p in range(2, 20))]
    with pytest.raises(TooComplex):
        Surd({m: 1 for m in squarefree[:MAX_TERMS + 1]})
    # figures whose roots nest (a circumcircle of a circumcircle's centre): their answers are decimals, computed
    # at once, and a second method written separately agrees
    nested = {"steps": [{"op": "origin", "point": "A"},
                        {"op": "polar", "point": "B", "from": "A", "length": "2√3", "angle": "165", "ref": None},
                        {"op": "polar", "point": "D", "from": "B", "length": "8", "angle": "-105", "ref": "A"},
                        {"op": "polar", "point": "E", "from": "D", "length": "2√3", "angle": "165", "ref": "B"},
                        {"op": "circumcircle", "circle": "w", "center": "F", "of": ["A", "E", "D"]},
                        {"op": "polar", "point": "G", "from": "F", "length": "5", "angle": "-60", "ref": None},
                        {"op": "circumcircle", "circle": "k", "center": "H", "of": ["E", "D", "G"]}], "draw": []}
    r = {"kind": "ratio", "target": {"of": [{"kind": "length", "target": {"of": ["F", "B"]}},
                                            {"kind": "length", "target": {"of": ["G", "D"]}}]}, "text": []}
    answer = relabel(Figure.from_dict(nested), r)
    ok, mine, detail = rederive(json.dumps(nested), r, answer)
    assert ok, (answer, mine, detail)
