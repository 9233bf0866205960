"""Checks of the geometry arm's drawing, each on figures or facts built to fail it, and the
difficulty features."""

from dataclasses import replace

import numpy as np
import pytest

from vicogym.checks.geometry import (
    MIN_ANGLE_DEG,
    box_circle_distance,
    box_segment_distance,
    check_drawing,
    difficulty,
    difficulty_features,
)
from vicogym.errors import InvalidEdit
from vicogym.legibility import legible_px
from vicogym.renderers.geometry import GeometryRenderer, RenderSettings
from vicogym.structures.geometry import Figure, solve

RENDERER = GeometryRenderer(RenderSettings())
BASE = [{"op": "origin", "point": "A"},
        {"op": "polar", "point": "B", "from": "A", "length": "10", "angle": "0", "ref": None}]
TRIANGLE_SIDES = [["segment", "A", "B"], ["segment", "B", "C"], ["segment", "C", "A"]]
HEALTHY = {"steps": BASE + [{"op": "asa", "point": "C", "from": ["A", "B"], "angles": ["45", "60"], "side": 1}],
           "draw": TRIANGLE_SIDES, "diagram": ["length:A,B", "angle:B,A,C"]}


def _render(data, renderer=RENDERER):
    figure = Figure.from_dict(data)
    solved = solve(figure)
    image, facts = renderer.render(figure, solved)
    return figure, solved, image, facts


def _refusal(data, renderer=RENDERER, asked=frozenset(), facts_change=None, image_change=None):
    figure, solved, image, facts = _render(data, renderer)
    if facts_change is not None:
        facts = facts_change(facts)
    if image_change is not None:
        image = image_change(image)
    try:
        check_drawing(figure, solved, facts, image, asked)
    except InvalidEdit as exc:
        return exc
    return None


def test_a_healthy_triangle_passes():
    assert _refusal(HEALTHY) is None
    figure, solved, image, facts = _render(HEALTHY)
    check_drawing(figure, solved, facts)  # without the image: from the facts' canvas size
    for style in ({"rotation": 30}, {"rotation": -120, "flip": True}, {"font_size": 14}):
        assert _refusal({**HEALTHY, "style": style}) is None, style


def test_a_five_degree_angle_is_crowded_unless_the_question_asks_it():
    # AB = AC = 10, BC = 7/8: the angle at A is 2 asin(7/160), 5.0 degrees
    thin = {"steps": BASE + [{"op": "sss", "point": "C", "from": ["A", "B"], "lengths": ["10", "7/8"], "side": 1}],
            "draw": TRIANGLE_SIDES}
    exc = _refusal(thin)
    assert exc.code == "crowded" and "at A at 5.0 degrees" in exc.message and f"under {MIN_ANGLE_DEG}" in exc.message
    # asked about that very angle, its smallness is the point; the short side BC is still refused
    exc = _refusal(thin, asked=frozenset({"C,A,B"}))
    assert exc.code == "crowded" and "degrees" not in exc.message and "segment BC" in exc.message
    # at 17 degrees (BC = 3) it reads
    wider = {**thin, "steps": BASE + [{"op": "sss", "point": "C", "from": ["A", "B"], "lengths": ["10", "3"],
                                       "side": 1}]}
    assert _refusal(wider) is None


def test_a_narrow_crossing_of_two_lines_is_crowded():
    # AC leaves AB at 5 degrees (AC = 10, BC = 7/8); FG runs parallel to AB half a unit above
    # it, so it crosses AC at 5 degrees where no point is named
    data = {"steps": BASE + [{"op": "sss", "point": "C", "from": ["A", "B"], "lengths": ["10", "7/8"], "side": 1},
                             {"op": "polar", "point": "F", "from": "A", "length": "1/2", "angle": "90", "ref": "B"},
                             {"op": "parallel", "point": "G", "through": "F", "to": ["A", "B"], "length": "10"}],
            "draw": [["segment", "A", "C"], ["segment", "F", "G"]]}
    exc = _refusal(data)
    assert exc.code == "crowded" and "segment AC and segment FG cross" in exc.message and "5.0 degrees" in exc.message


def test_points_too_close_are_crowded():
    # D sits a fifth of a unit (about 6 px) from C, on no drawn line
    data = {**HEALTHY, "steps": HEALTHY["steps"] + [{"op": "polar", "point": "D", "from": "C", "length": "1/5",
                                                     "angle": "90", "ref": None}]}
    exc = _refusal(data)
    assert exc.code == "crowded" and "points C and D" in exc.message


def test_labels_on_top_of_each_other_or_over_a_line_are_crowded():
    def stack(facts):
        labels = [dict(lab) for lab in facts.labels]
        a = next(lab for lab in labels if lab["key"] == "A")
        b = next(lab for lab in labels if lab["key"] == "B")
        b["box"] = tuple(v + 2 for v in a["box"])
        return replace(facts, labels=labels)

    exc = _refusal(HEALTHY, facts_change=stack)
    assert exc.code == "crowded" and "overlap" in exc.message and "point A" in exc.message

    def on_ab(facts):
        labels = [dict(lab) for lab in facts.labels]
        value = next(lab for lab in labels if lab["key"] == "length:A,B")
        x = (facts.points["A"][0] + facts.points["B"][0]) / 2
        y = facts.points["A"][1]
        value["box"] = (x - 5, y - 4, x + 5, y + 11)  # straddles AB
        return replace(facts, labels=labels)

    exc = _refusal(HEALTHY, facts_change=on_ab)
    assert exc.code == "crowded" and "lies over the segment AB" in exc.message

    def off_canvas(facts):
        labels = [dict(lab) for lab in facts.labels]
        labels[0]["box"] = (-6.0, 10.0, 4.0, 25.0)
        return replace(facts, labels=labels)

    exc = _refusal(HEALTHY, facts_change=off_canvas)
    assert exc.code == "crowded" and "off the canvas" in exc.message


def test_text_under_the_measured_legible_size_is_crowded():
    tiny = {**HEALTHY, "style": {"font_size": 7}}
    exc = _refusal(tiny, renderer=GeometryRenderer(RenderSettings(dpi=40)))
    assert exc.code == "crowded" and "legible" in exc.message and "font_size" in exc.message
    # 7 points at 100 dpi: 7.1 px capitals, over the curve's 4.6
    assert legible_px("DejaVuSans.ttf", "chart_views") < 7 / 72 * 100 * 0.729
    assert _refusal(tiny) is None


def test_a_point_drawn_three_pixels_off_is_off_scale():
    def moved(facts):
        x, y = facts.points["A"]
        return replace(facts, points={**facts.points, "A": (x + 3.0, y)})

    exc = _refusal(HEALTHY, facts_change=moved)
    assert exc.code == "off_scale" and "point A" in exc.message and "3.0 px away" in exc.message

    def nudged(facts):  # half a pixel is within the tolerance
        x, y = facts.points["A"]
        return replace(facts, points={**facts.points, "A": (x + 0.5, y)})

    assert _refusal(HEALTHY, facts_change=nudged) is None


def test_an_image_without_ink_where_the_figure_is_is_off_scale():
    exc = _refusal(HEALTHY, image_change=lambda image: np.full_like(image, 255))
    assert exc.code == "off_scale" and "no ink" in exc.message

    def shifted(image):  # the whole drawing four pixels to the right
        out = np.full_like(image, 255)
        out[:, 4:] = image[:, :-4]
        return out

    exc = _refusal(HEALTHY, image_change=shifted)
    assert exc.code == "off_scale"


def test_distances_from_a_box():
    box = (10.0, 10.0, 20.0, 20.0)
    assert box_segment_distance(box, (0, 15), (30, 15)) == 0.0  # through it
    assert box_segment_distance(box, (0, 25), (30, 25)) == pytest.approx(5.0)
    assert box_segment_distance(box, (25, 0), (35, -10)) == pytest.approx(np.hypot(5, 10))
    assert box_segment_distance(box, (12, 12), (13, 13)) == 0.0  # inside it
    assert box_circle_distance(box, 15, 15, 20) == pytest.approx(20 - np.hypot(5, 5))  # inside the circle
    assert box_circle_distance(box, 15, 40, 10) == pytest.approx(10.0)  # outside it
    assert box_circle_distance(box, 15, 15, 6) == 0.0  # the outline crosses the box


def test_difficulty_features_and_difficulty():
    data = {"steps": HEALTHY["steps"] + [{"op": "foot", "point": "H", "from": "C", "to": ["A", "B"]}],
            "draw": TRIANGLE_SIDES + [["segment", "C", "H"]],
            "diagram": ["length:A,B", "angle:B,A,C", "angle:A,B,C", "perpendicular:H"]}
    figure, _, _, facts = _render(data)
    needed = frozenset({"length:A,B", "angle:B,A,C", "angle:A,B,C"})
    features = difficulty_features(figure, facts, 3, needed, frozenset({"length:A,B"}))
    assert features["steps"] == 3
    assert features["diagram_only"] == 2  # the two angles: shown, not stated
    assert features["distractors"] == 2  # segment CH and point H
    assert features["n_points"] == 4
    assert features["font_px"] == pytest.approx(11 / 72 * 100)
    area = sum((b["box"][2] - b["box"][0]) * (b["box"][3] - b["box"][1]) for b in facts.labels)
    assert features["label_density"] == pytest.approx(area / 448**2)
    assert 0 < features["label_density"] < 0.05
    d = difficulty(features)
    assert d == pytest.approx(0.45 * 3 + 0.25 * 2 + 0.12 * 2 + 3 * features["label_density"])
    # stated in the text, the angles are easier; more reasoning steps are harder
    stated = difficulty_features(figure, facts, 3, needed, needed)
    assert stated["diagram_only"] == 0 and difficulty(stated) < d
    assert difficulty({**features, "steps": 5}) > d
    # the foot needed too: nothing drawn is a distractor
    everything = difficulty_features(figure, facts, 3, needed | {"perpendicular:H"}, frozenset())
    assert everything["distractors"] == 0


def test_marks_on_pieces_not_drawn_are_refused():
    foot = {"steps": HEALTHY["steps"] + [{"op": "foot", "point": "H", "from": "C", "to": ["A", "B"]}],
            "draw": TRIANGLE_SIDES + [["segment", "C", "H"]], "diagram": ["perpendicular:H", "length:A,B"]}
    assert _refusal(foot) is None  # H on the drawn AB, CH drawn
    exc = _refusal({**foot, "draw": TRIANGLE_SIDES})
    assert exc.code == "undrawn_mark" and "perpendicular:H" in exc.message and '["segment", "H", "C"]' in exc.message
    exc = _refusal({**foot, "draw": [["segment", "B", "C"], ["segment", "C", "A"], ["segment", "C", "H"]]})
    assert exc.code == "undrawn_mark" and "length:A,B" in exc.message
    # an angle needs both arms
    exc = _refusal({**HEALTHY, "draw": [["segment", "A", "B"], ["segment", "B", "C"]]})
    assert exc.code == "undrawn_mark" and "angle:B,A,C" in exc.message
    # a ray carries the arm as well as a segment does
    assert _refusal({**HEALTHY, "draw": [["segment", "A", "B"], ["segment", "B", "C"], ["ray", "A", "C"]]}) is None


def test_an_arc_ending_at_its_centre_is_degenerate():
    data = {"steps": HEALTHY["steps"] + [{"op": "circle", "circle": "k", "center": "A", "through": "C"}],
            "draw": TRIANGLE_SIDES + [["arc", "k", "B", "A"]], "diagram": []}
    exc = _refusal(data)
    assert exc.code == "degenerate_figure" and "A is its centre" in exc.message


# angle BAC of 75 degrees with segment AM inside it, and B's angle
CUT = {"steps": BASE + [{"op": "asa", "point": "C", "from": ["A", "B"], "angles": ["75", "45"], "side": 1},
                        {"op": "asa", "point": "M", "from": ["A", "B"], "angles": ["30", "45"], "side": 1}],
       "draw": TRIANGLE_SIDES + [["segment", "A", "M"], ["segment", "B", "M"]],
       "diagram": ["angle:B,A,C", "angle:A,B,C"]}


def _moved(key, where):
    """A change of the facts that moves the text of ``key`` so its box centre sits at ``where(facts)``."""
    def change(facts):
        labels = [dict(lab) for lab in facts.labels]
        lab = next(lab for lab in labels if lab["key"] == key)
        x0, y0, x1, y1 = lab["box"]
        x, y = where(facts)
        lab["box"] = (x - (x1 - x0) / 2, y - (y1 - y0) / 2, x + (x1 - x0) / 2, y + (y1 - y0) / 2)
        return replace(facts, labels=labels)
    return change


def test_an_angle_value_nearer_another_point_than_its_vertex_is_crowded():
    assert "cuts" in _refusal(CUT).message  # the value itself sits in a cut angle (next test)

    def by_m(facts):  # inside the angle BAC and off the lines, but by M (on BC) rather than A
        a, m, c = (np.array(facts.points[n]) for n in "AMC")
        return tuple(0.6 * m + 0.2 * a + 0.2 * c)

    exc = _refusal(CUT, facts_change=_moved("angle:B,A,C", by_m))
    assert exc is not None and exc.code == "crowded"
    assert "angle:B,A,C" in exc.message and "point M" in exc.message and "vertex" in exc.message


def test_a_value_inside_a_cut_angle_is_crowded_even_beside_an_arm_to_arm_arc():
    """A careful reader takes a value inside an angle that a line from its vertex cuts for the
    part's it sits in, whatever arc is drawn (audits of drawn samples): such a value belongs
    in the text."""
    exc = _refusal(CUT)
    assert exc is not None and exc.code == "crowded" and "angle:B,A,C" in exc.message
    assert "to M cuts" in exc.message and "state the angle in the text" in exc.message

    def no_arc(facts):
        return replace(facts, marks=[m for m in facts.marks if m["kind"] != "angle_arc"])

    exc = _refusal(CUT, facts_change=no_arc)
    assert exc is not None and "no arc spanning it" in exc.message
    # an uncut angle is read as itself, arc or none: HEALTHY's angle at A has no line inside it
    assert _refusal(HEALTHY) is None and _refusal(HEALTHY, facts_change=no_arc) is None


def test_a_length_value_nearer_another_line_than_its_own_is_crowded():
    assert _refusal(HEALTHY) is None

    def value_by_bc(facts):  # the value of AB moved beside BC's middle, on the outside, clear of every line
        labels = [dict(lab) for lab in facts.labels]
        label = next(lab for lab in labels if lab.get("key") == "length:A,B")
        a, b, c = (np.array(facts.points[n]) for n in "ABC")
        middle = (b + c) / 2
        normal = np.array([-(c - b)[1], (c - b)[0]]) / np.linalg.norm(c - b)
        if np.dot(normal, middle - (a + b + c) / 3) < 0:
            normal = -normal
        x0, y0, x1, y1 = label["box"]
        w, h = x1 - x0, y1 - y0
        centre = middle + normal * (max(w, h) / 2 + 4)
        label["box"] = (centre[0] - w / 2, centre[1] - h / 2, centre[0] + w / 2, centre[1] + h / 2)
        return replace(facts, labels=labels)

    exc = _refusal(HEALTHY, facts_change=value_by_bc)
    assert exc is not None and exc.code == "crowded" and "reads as the other's length" in exc.message, exc


def test_two_texts_closer_than_half_a_text_height_are_crowded():
    def beside(facts):  # the value of AB just above A's name, 3 px between them
        name = next(lab for lab in facts.labels if lab["key"] == "A")
        value = next(lab for lab in facts.labels if lab["key"] == "length:A,B")
        h = value["box"][3] - value["box"][1]
        return ((name["box"][0] + name["box"][2]) / 2, name["box"][1] - 3 - h / 2)

    exc = _refusal(HEALTHY, facts_change=_moved("length:A,B", beside))
    assert exc is not None and exc.code == "crowded" and "apart" in exc.message and "one text" in exc.message


SPLIT = {"steps": BASE + [{"op": "sss", "point": "C", "from": ["A", "B"], "lengths": ["9", "8"], "side": 1},
                          {"op": "midpoint", "point": "M", "of": ["A", "B"]}],
         "draw": TRIANGLE_SIDES + [["segment", "C", "M"]], "diagram": ["length:A,B", "length:B,C"]}


def test_a_text_over_a_dimension_line_is_crowded():
    assert _refusal(SPLIT) is None
    _, _, _, facts = _render(SPLIT)
    dim = next(m for m in facts.marks if m["kind"] == "dimension")
    assert dim["key"] == "length:A,B"
    exc = _refusal(SPLIT, facts_change=_moved("length:A,B", lambda f: tuple(
        np.array(dim["from"]) + (np.array(dim["to"]) - np.array(dim["from"])) * 0.3)))
    assert exc is not None and exc.code == "crowded" and "dimension line of length:A,B" in exc.message
