"""The geometry arm's answers against a second method and against answers worked by hand.

Each hand-made figure below has answers known without a computer (a 3-4-5 right triangle,
an equilateral triangle, a 30-60-90 triangle, a tangent of a 3-4-5 configuration, ...).
Both the arm's exact engine (``relabel``) and the numeric re-derivation of
``geometry_rederive`` must give them; then the re-derivation checks fresh episodes of the
environment.
"""

from __future__ import annotations

import json
import re
from decimal import Decimal

import pytest
from geometry_rederive import episodes, half_up, listed_choices, read_number, rederive

from vicogym.programs.geometry import question_text, relabel
from vicogym.structures.geometry import Figure


def _tri345(*more: dict) -> dict:
    """A right angle at A with AB = 4 along the x axis and AC = 3: BC = 5, area 6."""
    steps = [{"op": "origin", "point": "A"},
             {"op": "polar", "point": "B", "from": "A", "length": "4", "angle": "0", "ref": None},
             {"op": "polar", "point": "C", "from": "A", "length": "3", "angle": "90", "ref": "B"}, *more]
    return {"steps": steps, "draw": [["segment", "A", "B"], ["segment", "B", "C"], ["segment", "A", "C"]],
            "diagram": ["length:A,B", "length:A,C", "angle:B,A,C"]}


def _base(length: str, third: dict) -> dict:
    steps = [{"op": "origin", "point": "A"},
             {"op": "polar", "point": "B", "from": "A", "length": length, "angle": "0", "ref": None}, third]
    return {"steps": steps, "draw": [["segment", "A", "B"], ["segment", "B", "C"], ["segment", "A", "C"]]}


EQUILATERAL = _base("2", {"op": "sss", "point": "C", "from": ["A", "B"], "lengths": ["2", "2"], "side": 1})
# angles 30 at A and 60 at B on AB = 2: the right angle is at C, AC = √3, BC = 1
HALF_EQUILATERAL = _base("2", {"op": "asa", "point": "C", "from": ["A", "B"], "angles": ["30", "60"], "side": 1})
RIGHT_ISOSCELES = _base("2", {"op": "asa", "point": "C", "from": ["A", "B"], "angles": ["45", "45"], "side": -1})
# angles 45 at A and 60 at B on AB = 6; the altitude CH = h with AH = h and HB = h/√3, so h = 9 - 3√3
SCALENE = _base("6", {"op": "asa", "point": "C", "from": ["A", "B"], "angles": ["45", "60"], "side": 1})
SCALENE["steps"].append({"op": "foot", "point": "H", "from": "C", "to": ["A", "B"]})
SCALENE["draw"].append(["segment", "C", "H"])

CIRCLE3 = {"steps": [{"op": "origin", "point": "O"},
                     {"op": "polar", "point": "A", "from": "O", "length": "3", "angle": "0", "ref": None},
                     {"op": "circle", "circle": "w", "center": "O", "through": "A"}],
           "draw": [["circle", "w"], ["segment", "O", "A"]]}
# P at distance 5 from the centre of a circle of radius 3: the tangent PT is 4
TANGENT = {"steps": [*CIRCLE3["steps"],
                     {"op": "polar", "point": "P", "from": "O", "length": "5", "angle": "90", "ref": "A"},
                     {"op": "tangent", "point": "T", "from": "P", "circle": "w", "side": 1}],
           "draw": [["circle", "w"], ["segment", "O", "P"], ["segment", "P", "T"], ["segment", "O", "T"]]}
# a circle of radius 3 and B at 60 degrees from A around it: minor arc AB = π, sector AOB = 3π/2
ARC = {"steps": [*CIRCLE3["steps"], {"op": "on_circle", "point": "B", "circle": "w", "ref": "A", "angle": "60"}],
       "draw": [["circle", "w"], ["segment", "O", "A"], ["segment", "O", "B"]]}
# the 3-4-5 triangle's incircle has radius (3 + 4 - 5) / 2 = 1, its circumcircle radius 5/2
INCIRCLE = _tri345({"op": "incircle", "circle": "i", "center": "I", "of": ["A", "B", "C"]},
                   {"op": "foot", "point": "F", "from": "I", "to": ["A", "B"]})
CIRCUMCIRCLE = _tri345({"op": "circumcircle", "circle": "k", "center": "K", "of": ["A", "B", "C"]})
# the median to the hypotenuse is half of it: AM = 5/2
MEDIAN = _tri345({"op": "midpoint", "point": "M", "of": ["B", "C"]})
MEDIAN["draw"].append(["segment", "A", "M"])
# an equilateral triangle with two medians AD and BE crossing at G: ABC, ABD, ADC, ABE, EBC, ABG,
# AGE, BGD are its 8 triangles
TWO_MEDIANS = _base("4", {"op": "sss", "point": "C", "from": ["A", "B"], "lengths": ["4", "4"], "side": 1})
TWO_MEDIANS["steps"] += [{"op": "midpoint", "point": "D", "of": ["B", "C"]},
                         {"op": "midpoint", "point": "E", "of": ["A", "C"]},
                         {"op": "intersect", "point": "G", "lines": [["A", "D"], ["B", "E"]]}]
TWO_MEDIANS["draw"] += [["segment", "A", "D"], ["segment", "B", "E"]]
# a parallelogram ABDC: AB = CD = 4, AC = BD = 2, angle BAC = 60, area 4 * 2 * sin 60 = 4√3
PARALLELOGRAM = {"steps": [{"op": "origin", "point": "A"},
                           {"op": "polar", "point": "B", "from": "A", "length": "4", "angle": "0", "ref": None},
                           {"op": "polar", "point": "C", "from": "A", "length": "2", "angle": "60", "ref": "B"},
                           {"op": "parallel", "point": "D", "through": "C", "to": ["A", "B"], "length": "4"}],
                 "draw": [["segment", "A", "B"], ["segment", "A", "C"], ["segment", "C", "D"], ["segment", "B", "D"]]}

# the choices of ∠ABC = 60 in the half-equilateral triangle: 60, double 120, half 30 and one and a half
# times 90 (the supplement 120 and complement 30 repeat), placed by order [2, 0, 3, 1]
CHOICE = {"kind": "choice", "target": {"inner": {"kind": "angle", "target": {"at": ["A", "B", "C"]}},
                                       "distractors": ["double", "half", "supplement", "complement", "plus_half"],
                                       "order": [2, 0, 3, 1]}, "text": []}
CHOICE_TEXT = "Choices: A. 30 B. 60 C. 90 D. 120."


def _q(kind: str, **target) -> dict:
    return {"kind": kind, "target": target, "text": []}


HAND = [
    ("hypotenuse", _tri345(), _q("length", of=["B", "C"]), "5"),
    ("area 3-4-5", _tri345(), _q("area", of=["A", "B", "C"]), "6"),
    ("perimeter 3-4-5", _tri345(), _q("perimeter", of=["A", "B", "C"]), "12"),
    ("right angle", _tri345(), _q("angle", at=["B", "A", "C"]), "90"),
    ("atan 3/4", _tri345(), _q("angle", at=["A", "B", "C"]), "36.87"),
    ("equilateral area", EQUILATERAL, _q("area", of=["A", "B", "C"]), "√3"),
    ("equilateral angle", EQUILATERAL, _q("angle", at=["A", "C", "B"]), "60"),
    ("30-60-90 long leg", HALF_EQUILATERAL, _q("length", of=["A", "C"]), "√3"),
    ("30-60-90 short leg", HALF_EQUILATERAL, _q("length", of=["B", "C"]), "1"),
    ("30-60-90 right angle", HALF_EQUILATERAL, _q("angle", at=["A", "C", "B"]), "90"),
    ("30-60-90 area", HALF_EQUILATERAL, _q("area", of=["A", "B", "C"]), "√3/2"),
    ("45-45-90 leg", RIGHT_ISOSCELES, _q("length", of=["A", "C"]), "√2"),
    ("45-45-90 area", RIGHT_ISOSCELES, _q("area", of=["A", "B", "C"]), "1"),
    ("altitude", SCALENE, _q("length", of=["C", "H"]), "9 - 3√3"),
    ("scalene area", SCALENE, _q("area", of=["A", "B", "C"]), "27 - 9√3"),
    ("circle area", CIRCLE3, _q("area", circle="w"), "9π"),
    ("tangent length", TANGENT, _q("length", of=["P", "T"]), "4"),
    ("tangent right angle", TANGENT, _q("angle", at=["O", "T", "P"]), "90"),
    ("tangent perpendicular", TANGENT, _q("relation", relation="perpendicular", a=["O", "T"], b=["T", "P"]), "Yes"),
    ("minor arc", ARC, _q("arc", circle="w", between=["A", "B"], measure="arc"), "π"),
    ("sector", ARC, _q("arc", circle="w", between=["A", "B"], measure="sector"), "3π/2"),
    ("inradius", INCIRCLE, _q("length", of=["I", "F"]), "1"),
    ("incircle area", INCIRCLE, _q("area", circle="i"), "π"),
    ("circumcircle area", CIRCUMCIRCLE, _q("area", circle="k"), "25π/4"),
    ("median", MEDIAN, _q("length", of=["A", "M"]), "5/2"),
    ("median ratio", MEDIAN, _q("ratio", of=[_q("length", of=["A", "M"]), _q("length", of=["B", "C"])]), "1/2"),
    ("one median", MEDIAN, _q("count"), "3"),
    ("two medians", TWO_MEDIANS, _q("count"), "8"),
    ("parallel", PARALLELOGRAM, _q("relation", relation="parallel", a=["C", "D"], b=["A", "B"]), "Yes"),
    ("equal sides", PARALLELOGRAM, _q("relation", relation="equal", a=["A", "C"], b=["B", "D"]), "Yes"),
    ("not perpendicular", PARALLELOGRAM, _q("relation", relation="perpendicular", a=["A", "C"], b=["A", "B"]), "No"),
    ("parallelogram area", PARALLELOGRAM, _q("area", of=["A", "B", "D", "C"]), "4√3"),
    ("choice", HALF_EQUILATERAL, CHOICE, "B"),
]


@pytest.mark.parametrize(("figure", "rule", "expected"), [h[1:] for h in HAND], ids=[h[0] for h in HAND])
def test_hand_answers(figure: dict, rule: dict, expected: str) -> None:
    assert relabel(Figure.from_dict(figure), rule) == expected
    question = CHOICE_TEXT if rule["kind"] == "choice" else None
    ok, mine, detail = rederive(json.dumps(figure), rule, expected, question)
    assert ok, (mine, detail)


def test_choice_text_lists_the_hand_choices() -> None:
    text = question_text(Figure.from_dict(HALF_EQUILATERAL), CHOICE)
    assert CHOICE_TEXT in text
    assert listed_choices(text) == ["30", "60", "90", "120"]


@pytest.mark.parametrize(("figure", "rule", "wrong"), [
    (_tri345(), _q("area", of=["A", "B", "C"]), "5"),
    (_tri345(), _q("angle", at=["A", "B", "C"]), "36.88"),
    (_tri345(), _q("angle", at=["A", "B", "C"]), "37"),
    (EQUILATERAL, _q("area", of=["A", "B", "C"]), "√2"),
    (SCALENE, _q("length", of=["C", "H"]), "9 + 3√3"),
    (CIRCLE3, _q("area", circle="w"), "9π/2"),
    (ARC, _q("arc", circle="w", between=["A", "B"], measure="sector"), "π"),
    (TWO_MEDIANS, _q("count"), "7"),
    (PARALLELOGRAM, _q("relation", relation="perpendicular", a=["A", "C"], b=["A", "B"]), "Yes"),
    (HALF_EQUILATERAL, CHOICE, "A"),
    (_tri345(), _q("length", of=["B", "C"]), "five"),
])
def test_wrong_answers_disagree(figure: dict, rule: dict, wrong: str) -> None:
    ok, mine, detail = rederive(json.dumps(figure), rule, wrong, CHOICE_TEXT)
    assert not ok, (mine, detail)


def test_a_figure_it_cannot_place_is_a_disagreement_not_a_crash() -> None:
    bad = _base("2", {"op": "sss", "point": "C", "from": ["A", "B"], "lengths": ["1", "5"], "side": 1})
    ok, mine, detail = rederive(json.dumps(bad), _q("length", of=["A", "C"]), "1")
    assert not ok and mine == "?" and "triangle inequality" in detail


@pytest.mark.parametrize(("text", "value"), [
    ("12", 12), ("5/2", 2.5), ("2√3", 2 * 3 ** 0.5), ("9 - 3√3", 9 - 3 * 3 ** 0.5), ("3√2/2", 3 * 2 ** 0.5 / 2),
    ("4π", 4 * 3.141592653589793), ("3π/2", 1.5 * 3.141592653589793), ("π", 3.141592653589793),
    ("√6/4 + √2/4", (6 ** 0.5 + 2 ** 0.5) / 4), ("2*sqrt(3)/3", 2 * 3 ** 0.5 / 3), ("-√3", -(3 ** 0.5)),
    ("3√2π/4", 3 * 2 ** 0.5 * 3.141592653589793 / 4), (2.5, 2.5),
])
def test_reader(text: str, value: float) -> None:
    assert abs(float(read_number(text)) - value) < 1e-12


def test_half_up() -> None:
    assert [half_up(read_number(x)) for x in ("22.5", "6.575", "6.574999", "0.005", "3")] == \
        ["22.50", "6.58", "6.57", "0.01", "3.00"]


def _perturbed(answer: str, kind: str) -> str:
    """A wrong answer next to ``answer``: the other word, the next letter, one more triangle,
    one hundredth more."""
    if answer in ("Yes", "No"):
        return "No" if answer == "Yes" else "Yes"
    if kind == "choice":
        return "ABCD"[("ABCD".index(answer) + 1) % 4]
    if kind == "count":
        return str(int(answer) + 1)
    if re.fullmatch(r"\d+\.\d\d", answer):
        return f"{Decimal(answer) + Decimal('0.01')}"
    return f"{answer} + 1/100"


@pytest.mark.slow
def test_environment_answers_rederive() -> None:
    gymnasium = pytest.importorskip("gymnasium")
    import vicogym  # noqa: F401  (registers the environments)

    if "vicogym/Geometry-v0" not in gymnasium.registry:
        pytest.skip("vicogym/Geometry-v0 is not registered in this checkout (envs/geometry.py not present)")
    try:
        gymnasium.make("vicogym/Geometry-v0").close()
    except ModuleNotFoundError as exc:
        if not (exc.name or "").startswith("vicogym."):
            raise
        pytest.skip(f"vicogym/Geometry-v0 is registered but {exc.name} is not in this checkout yet")
    drawn = list(episodes(60, 700000))
    cases = [c for c in drawn if "skipped" not in c]  # a reset that draws no sample is the source's matter
    assert len([c for c in cases if "after an edit" not in c["where"]]) >= 50, [c for c in drawn if "skipped" in c]
    disagreements, accepted_wrong, families = [], [], set()
    for case in cases:
        args = (case["structure"], case["rule"])
        ok, mine, detail = rederive(*args, case["answer"], case["question"])
        if not ok:
            disagreements.append((case["where"], case["answer"], mine, detail, case["rule"]))
        wrong = _perturbed(case["answer"], case["rule"]["kind"])
        if rederive(*args, wrong, case["question"])[0]:
            accepted_wrong.append((case["where"], case["answer"], wrong))
        families.add(case["rule"]["kind"])
    assert not disagreements
    assert not accepted_wrong  # the check can fail: an answer one step off is caught
    assert len(families) >= 6, families  # the run balances levels, so most families come up
