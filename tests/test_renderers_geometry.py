"""The geometry renderer: a solved figure drawn to scale, with facts of what is where."""

import math

import numpy as np
import pytest

from vicogym.renderers.geometry import GeometryRenderer, RenderSettings, clip_to_canvas, figure_map
from vicogym.structures.geometry import Figure, solve

RENDERER = GeometryRenderer(RenderSettings())
W = H = 448

TRIANGLE = {
    "steps": [{"op": "origin", "point": "A"},
              {"op": "polar", "point": "B", "from": "A", "length": "6", "angle": "0", "ref": None},
              {"op": "asa", "point": "C", "from": ["A", "B"], "angles": ["45", "60"], "side": 1}],
    "draw": [["segment", "A", "B"], ["segment", "B", "C"], ["segment", "C", "A"]],
    "diagram": ["length:A,B", "angle:B,A,C"],
}


def _figure(style=None, **changes):
    data = {**TRIANGLE, **changes}
    if style:
        data["style"] = style
    figure = Figure.from_dict(data)
    return figure, solve(figure)


def _render(style=None, renderer=RENDERER, **changes):
    figure, solved = _figure(style, **changes)
    image, facts = renderer.render(figure, solved)
    return figure, solved, image, facts


def _expected_pixels(solved, scale_share=0.8):
    """The documented map for a figure of points only, unrotated: the points' box scaled to
    ``scale_share`` of the canvas, centred, y down."""
    pts = solved.floats()
    xs, ys = [p[0] for p in pts.values()], [p[1] for p in pts.values()]
    s = scale_share * min(W / (max(xs) - min(xs)), H / (max(ys) - min(ys)))
    mx, my = (max(xs) + min(xs)) / 2, (max(ys) + min(ys)) / 2
    return {n: (W / 2 + s * (x - mx), H / 2 - s * (y - my)) for n, (x, y) in pts.items()}, s


def test_image_is_rgb_uint8_of_the_settings_size():
    _, _, image, facts = _render()
    assert image.shape == (H, W, 3) and image.dtype == np.uint8
    assert (image[0, 0] == 255).all()  # white ground
    assert (image < 100).any()  # black ink
    other = GeometryRenderer(RenderSettings(width=300, height=200, dpi=72))
    image2, facts2 = _render(renderer=other)[2:]
    assert image2.shape == (200, 300, 3)
    assert (facts2.width, facts2.height, facts2.dpi) == (300, 200, 72)


def test_same_figure_gives_the_same_bytes():
    figure, solved, image, _ = _render()
    RENDERER.render(*_figure({"rotation": 30, "flip": True}))  # something else in between
    again, _ = RENDERER.render(figure, solved)
    fresh, _ = GeometryRenderer(RenderSettings()).render(figure, solved)
    assert again.tobytes() == image.tobytes() == fresh.tobytes()


def test_points_are_the_exact_coordinates_under_the_documented_map():
    _, solved, _, facts = _render()
    expected, s = _expected_pixels(solved)
    assert facts.scale == pytest.approx(s)
    for name, (x, y) in expected.items():
        assert facts.points[name] == pytest.approx((x, y), abs=1e-6)
    # 6 units of AB are 6 * scale pixels, drawn left to right
    assert facts.points["B"][0] - facts.points["A"][0] == pytest.approx(6 * s)
    assert facts.points["C"][1] < facts.points["A"][1]  # C above the base: y runs down in pixels


def test_every_point_is_named_inside_the_canvas_and_clear_of_other_names():
    _, solved, _, facts = _render()
    names = {lab["key"]: lab for lab in facts.labels if lab["kind"] == "point"}
    assert set(names) == set(solved.points)
    for lab in names.values():
        x0, y0, x1, y1 = lab["box"]
        assert 0 <= x0 < x1 <= W and 0 <= y0 < y1 <= H
        assert lab["text"] == lab["key"]
        assert lab["cap_px"] == pytest.approx(facts.font_px * 0.729, abs=1e-3)
        # beside its point: the box is within two text heights of it
        px, py = facts.points[lab["key"]]
        assert math.hypot(px - (x0 + x1) / 2, py - (y0 + y1) / 2) < 2 * facts.font_px


def test_a_length_given_prints_its_value_beside_the_segment_away_from_the_figure():
    steps = [dict(s) for s in TRIANGLE["steps"]]
    steps[1]["length"] = "2*sqrt(3)"
    _, _, _, facts = _render(steps=steps)
    [value] = [lab for lab in facts.labels if lab["key"] == "length:A,B"]
    assert value["text"] == "2√3" and value["kind"] == "given"
    x0, y0, x1, y1 = value["box"]
    mid = [(facts.points["A"][i] + facts.points["B"][i]) / 2 for i in (0, 1)]
    assert abs((x0 + x1) / 2 - mid[0]) < 0.4 * (facts.points["B"][0] - facts.points["A"][0])
    assert y0 > mid[1]  # below AB: C, and the figure, lie above it
    [angle] = [lab for lab in facts.labels if lab["key"] == "angle:B,A,C"]
    assert angle["text"] == "45°"
    assert [m["kind"] for m in facts.marks] == ["angle_arc"]


def test_marks_of_a_foot_a_midpoint_and_a_parallel():
    figure = {
        "steps": TRIANGLE["steps"] + [{"op": "foot", "point": "H", "from": "C", "to": ["A", "B"]},
                                      {"op": "midpoint", "point": "M", "of": ["B", "C"]},
                                      {"op": "parallel", "point": "D", "through": "C", "to": ["B", "A"],
                                       "length": "3"}],
        "draw": TRIANGLE["draw"] + [["segment", "C", "H"], ["segment", "A", "M"], ["segment", "C", "D"]],
        "diagram": ["perpendicular:H", "midpoint:M", "parallel:D", "angle:A,B,C"],
    }
    _, _, _, facts = _render(**{k: v for k, v in figure.items()})
    kinds = {m["key"]: m["kind"] for m in facts.marks}
    assert kinds == {"perpendicular:H": "right_angle", "midpoint:M": "ticks", "parallel:D": "arrows",
                     "angle:A,B,C": "angle_arc"}
    square = next(m for m in facts.marks if m["key"] == "perpendicular:H")["box"]
    hx, hy = facts.points["H"]
    assert square[0] - 1 <= hx <= square[2] + 1 and square[1] - 1 <= hy <= square[3] + 1  # at the foot
    assert {lab["text"] for lab in facts.labels if lab["kind"] == "given"} == {"60°"}
    assert {lab["key"] for lab in facts.labels if lab["kind"] == "point"} == {"A", "B", "C", "H", "M", "D"}


def test_rotation_turns_the_drawing_and_keeps_it_to_scale():
    _, solved, image, facts = _render()
    figure90, solved90, image90, facts90 = _render({"rotation": 90})
    assert image90.tobytes() != image.tobytes()
    matrix, offset, scale = figure_map(figure90, solved90, W, H)
    for name, p in solved90.floats().items():
        assert facts90.points[name] == pytest.approx(tuple(matrix @ np.array(p) + offset), abs=1e-6)
    # AB runs along +x in units; turned 90 degrees counter-clockwise it runs up the image
    (ax, ay), (bx, by) = facts90.points["A"], facts90.points["B"]
    assert abs(bx - ax) < 1e-6 and by < ay
    # distances keep their ratios: the map is a similarity
    units = solved.floats()
    for a, b in (("A", "B"), ("B", "C"), ("C", "A")):
        d = math.dist(units[a], units[b])
        assert math.dist(facts90.points[a], facts90.points[b]) == pytest.approx(facts90.scale * d)
    # on a square canvas a quarter turn keeps the scale; an eighth changes the box and so the scale
    assert facts90.scale == pytest.approx(facts.scale)
    assert _render({"rotation": 45})[3].scale != pytest.approx(facts.scale)


def test_flip_mirrors_across_the_vertical_axis():
    _, _, image, facts = _render()
    _, _, image_f, facts_f = _render({"flip": True})
    assert image_f.tobytes() != image.tobytes()
    for name, (x, y) in facts.points.items():
        assert facts_f.points[name] == pytest.approx((W - x, y), abs=1e-6)
    assert facts_f.points["B"][0] < facts_f.points["A"][0]


def test_rays_and_lines_run_to_the_canvas_edge_and_arcs_turn_the_right_way():
    data = {
        "steps": TRIANGLE["steps"] + [{"op": "circle", "circle": "k", "center": "A", "through": "C"}],
        "draw": [["segment", "A", "B"], ["ray", "A", "C"], ["line", "B", "C"], ["arc", "k", "B", "C"]],
        "diagram": [],
    }
    _, solved, _, facts = _render(**data)
    ray = next(s for s in facts.segments if s["element"] == ["ray", "A", "C"])
    assert ray["from"] == pytest.approx(facts.points["A"])
    end = ray["to"]
    assert min(end[0], end[1], W - end[0], H - end[1]) == pytest.approx(0, abs=1e-6)
    line = next(s for s in facts.segments if s["element"] == ["line", "B", "C"])
    for end in (line["from"], line["to"]):
        assert min(end[0], end[1], W - end[0], H - end[1]) == pytest.approx(0, abs=1e-6)
    cx, cy, r = facts.circles["k,B,C"]
    assert (cx, cy) == pytest.approx(facts.points["A"])
    assert r == pytest.approx(math.dist(facts.points["A"], facts.points["C"]))
    # counter-clockwise from B (0 degrees) to C (45 degrees), as seen
    assert facts.arcs["k,B,C"] == pytest.approx((0.0, 45.0), abs=1e-6)
    _, _, _, flipped = _render({"flip": True}, **data)
    assert flipped.arcs["k,B,C"] == pytest.approx((135.0, 180.0), abs=1e-6)  # mirrored: C to B


def test_clip_to_canvas():
    assert clip_to_canvas((10, 10), (20, 10), 100, 50, False) == ((10, 10), (100, 10))
    assert clip_to_canvas((10, 10), (20, 10), 100, 50, True) == ((0, 10), (100, 10))
    assert clip_to_canvas((10, 60), (20, 60), 100, 50, True) is None


def test_a_single_point_and_a_circle_draw():
    figure = Figure.from_dict({"steps": [{"op": "origin", "point": "O"},
                                         {"op": "polar", "point": "P", "from": "O", "length": "2", "angle": "0",
                                          "ref": None},
                                         {"op": "circle", "circle": "w", "center": "O", "through": "P"}],
                               "draw": [["circle", "w"]]})
    image, facts = RENDERER.render(figure, solve(figure))
    cx, cy, r = facts.circles["w"]
    assert (cx, cy) == pytest.approx((W / 2, H / 2)) and r == pytest.approx(0.8 * W / 2)
    assert image[int(cy), int(cx - r)].max() < 128  # ink on the outline


# a triangle whose side AB is split at its midpoint M, with the median CM drawn
SPLIT = {
    "steps": [{"op": "origin", "point": "A"},
              {"op": "polar", "point": "B", "from": "A", "length": "10", "angle": "0", "ref": None},
              {"op": "sss", "point": "C", "from": ["A", "B"], "lengths": ["9", "8"], "side": 1},
              {"op": "midpoint", "point": "M", "of": ["A", "B"]}],
    "draw": [["segment", "A", "B"], ["segment", "B", "C"], ["segment", "C", "A"], ["segment", "C", "M"]],
    "diagram": ["length:A,B", "length:B,C"],
}


def _box_centre(box):
    return ((box[0] + box[2]) / 2, (box[1] + box[3]) / 2)


def test_a_split_segment_gets_a_dimension_line_from_end_to_end_with_its_value_beside_it():
    figure, solved, image, facts = _render(**SPLIT)
    dims = [m for m in facts.marks if m["kind"] == "dimension"]
    assert [m["key"] for m in dims] == ["length:A,B"]  # BC has no point inside it: its value sits as before
    dim = dims[0]
    a, b, m = (np.array(facts.points[n]) for n in "ABM")
    start, end = np.array(dim["from"]), np.array(dim["to"])
    # parallel to AB, offset by the same amount at both ends, spanning exactly A to B
    assert np.allclose(start - a, end - b, atol=0.05)
    offset = float(np.hypot(*(start - a)))
    assert 0.5 * facts.font_px <= offset <= 1.5 * facts.font_px
    assert abs(float(np.dot(start - a, b - a))) < 1e-6 * float(np.dot(b - a, b - a)) + 0.05
    # on the far side from the figure (C is above AB, so the line runs below it: y grows downward)
    assert start[1] > a[1] and end[1] > b[1]
    value = next(lab for lab in facts.labels if lab["key"] == "length:A,B")
    centre = np.array(_box_centre(value["box"]))
    # by the dimension line's middle, outside it, not beside one half
    assert abs(float(np.dot(centre - (start + end) / 2, _unit_np(b - a)))) < 0.1 * float(np.hypot(*(b - a)))
    assert centre[1] > (start[1] + end[1]) / 2 and value["box"][1] > max(start[1], end[1])
    # the unsplit BC keeps no dimension line and its value sits beside BC's middle
    bc = next(lab for lab in facts.labels if lab["key"] == "length:B,C")
    mid = (np.array(facts.points["B"]) + np.array(facts.points["C"])) / 2
    assert math.dist(_box_centre(bc["box"]), mid) < 2.5 * facts.font_px
    # and ink along the dimension line, a third of the way
    x, y = start + (end - start) / 3
    assert (image[int(round(y)) - 1:int(round(y)) + 2, int(round(x)) - 1:int(round(x)) + 2] < 160).any()


def _unit_np(v):
    return v / float(np.hypot(*v))


# angle BAC of 75 degrees with segment AM running inside it (angle BAM is 30 degrees)
CUT = {
    "steps": [{"op": "origin", "point": "A"},
              {"op": "polar", "point": "B", "from": "A", "length": "10", "angle": "0", "ref": None},
              {"op": "asa", "point": "C", "from": ["A", "B"], "angles": ["75", "45"], "side": 1},
              {"op": "asa", "point": "M", "from": ["A", "B"], "angles": ["30", "45"], "side": 1}],
    "draw": [["segment", "A", "B"], ["segment", "B", "C"], ["segment", "C", "A"], ["segment", "A", "M"],
             ["segment", "B", "M"]],
    "diagram": ["angle:B,A,C", "angle:A,B,C"],
}


def test_an_angle_cut_by_a_line_from_its_vertex_gets_a_spanning_arc_and_its_value_right_outside_it():
    figure, solved, image, facts = _render(**CUT)
    arc = next(m for m in facts.marks if m["kind"] == "angle_arc" and m["key"] == "angle:B,A,C")
    a = np.array(facts.points["A"])
    assert np.allclose(arc["vertex"], a, atol=0.05)
    seen = [math.degrees(math.atan2(a[1] - facts.points[n][1], facts.points[n][0] - a[0])) % 360 for n in "BC"]
    assert sorted(round(t) % 360 for t in arc["arms"]) == sorted(round(t) % 360 for t in seen)
    radius = arc["radius"]
    # wide enough to be seen crossing AM
    assert radius >= 2.0 * facts.font_px
    value = next(lab for lab in facts.labels if lab["key"] == "angle:B,A,C")
    box = value["box"]
    nearest = math.hypot(max(box[0] - a[0], 0, a[0] - box[2]), max(box[1] - a[1], 0, a[1] - box[3]))
    assert radius <= nearest <= radius + 0.6 * facts.font_px  # right outside its own arc
    centre = _box_centre(box)
    own = math.dist(centre, a)
    assert all(math.dist(centre, p) > own for n, p in facts.points.items() if n != "A")


def test_overlapping_angles_at_one_vertex_get_nested_arcs():
    data = {**CUT, "diagram": ["angle:B,A,C", "angle:B,A,M"]}
    # BAM is part of BAC: its arc runs inside
    _, _, _, facts = _render(**data)
    arcs = {m["key"]: m for m in facts.marks if m["kind"] == "angle_arc"}
    assert arcs["angle:B,A,M"]["radius"] + facts.font_px <= arcs["angle:B,A,C"]["radius"]
