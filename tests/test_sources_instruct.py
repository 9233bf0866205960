"""Facts of the arms' own structures for the grounded instruction types: charts (with and
without the matplotlib render), CLEVR scenes (projected centres, no Blender) and natural
records (target boxes through pads and crops)."""

import numpy as np
import pytest

from vicogym.editors import instruct as edits
from vicogym.programs.instruct import GROUNDED, REGISTRY
from vicogym.programs.instruct.grounded import SPATIAL_MARGIN
from vicogym.renderers.chart import ChartRenderer
from vicogym.sources.chart import procedural_seed
from vicogym.sources.clevr import procedural_scene
from vicogym.sources.instruct import chart_facts, clevr_facts, facts_of, natural_facts
from vicogym.sources.natural import demo_records, load_image
from vicogym.structures.clevr import Obj, Scene
from vicogym.structures.natural import Scene as NaturalScene


def _grounds(facts, rng):
    """Every grounded type the facts support: its parameters, checked, and the edits' verdicts."""
    out = {}
    for id in GROUNDED:
        contract = REGISTRY[id]
        if not all(facts.get(k) for k in contract.needs):
            continue
        params = contract.ground(facts, rng)
        if params is None:
            continue
        assert contract.check_ground(facts, params) is None, (id, params)
        assert contract(edits.satisfy(id, "A picture.", params, rng), **params).passed, (id, params)
        assert not contract(edits.violate(id, "A picture.", params, rng), **params).passed, (id, params)
        out[id] = params
    return out


@pytest.fixture(scope="module")
def renderer():
    r = ChartRenderer(dpi=50)
    yield r
    r.close()


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_chart_facts_hold_the_table_and_the_drawn_texts(seed, renderer):
    structure = procedural_seed(np.random.default_rng(seed)).structure
    table, spec = structure.table, structure.spec
    render = renderer.render(structure)
    facts = chart_facts(structure, render)
    cells = [(r, s, v) for r, row in zip(table.rows, table.values) for s, v in zip(table.series, row) if v is not None]
    assert [(r["label"], r["series"], r["value"]) for r in facts["rows"]] == cells
    drawn = {" ".join(lab["text"].split()) for lab in render.labels}
    assert set(facts["texts"]) <= drawn and (not spec.title or spec.title in facts["texts"])
    if spec.chart_type != "pie":  # category tick labels are drawn (a pie lists them in its legend)
        assert any(label in facts["texts"] for label in table.rows)
    labelled = any(lab["kind"] == "data_label" for lab in render.labels)
    assert all(("tolerance" in r) != labelled for r in facts["rows"])
    assert all(r["tolerance"] >= 10.0 ** -table.decimals for r in facts["rows"] if "tolerance" in r)
    plain = chart_facts(structure)  # no render: the spec's texts and the table's precision
    assert spec.title in plain["texts"] if spec.title else True
    assert all("tolerance" not in r for r in plain["rows"])
    got = _grounds(facts, np.random.default_rng(seed))
    assert {"chart_value", "ocr_content"} <= set(got)
    assert facts_of(structure, render) == facts


def test_clevr_facts_are_the_scene_graph_with_projected_centres():
    rng = np.random.default_rng(3)
    for _ in range(4):
        scene = procedural_scene(rng, 160, 120)
        facts = clevr_facts(scene)
        assert facts["source"] == "clevr" and len(facts["objects"]) == len(scene.objects)
        for o, obj, (px, py, _) in zip(facts["objects"], scene.objects, scene.pixel_coords()):
            assert (o["category"], o["color"], o["size"], o["material"]) == (
                obj.shape,
                obj.color,
                obj.size,
                obj.material,
            )
            assert o["x"] == pytest.approx(px / 160, abs=1e-3) and o["y"] == pytest.approx(py / 120, abs=1e-3)
        got = _grounds(facts, rng)
        assert {"object_count", "visual_include", "visual_exclude"} <= set(got)
        hidden = clevr_facts(scene, {"visible": [0] + [500] * (len(scene.objects) - 1)})
        assert len(hidden["objects"]) == len(scene.objects) - 1  # a wholly hidden object is not in the picture


def test_clevr_image_left_agrees_with_clevrs_left_when_clear():
    scene = Scene((Obj("cube", "red", "metal", "large", 0.0, 0.0),
                   Obj("sphere", "blue", "rubber", "small", 1.278, 2.231),
                   Obj("cylinder", "yellow", "rubber", "large", -1.278, -2.231)), width=160, height=120)
    objects = clevr_facts(scene)["objects"]
    left = scene.relationships()["left"]
    checked = 0
    for i in range(3):
        for j in left[i]:  # j is left of i on the ground, as CLEVR's camera sees it
            if abs(objects[i]["x"] - objects[j]["x"]) >= SPATIAL_MARGIN:
                assert objects[j]["x"] < objects[i]["x"]
                checked += 1
    assert checked


def test_natural_facts_are_the_protected_targets_through_pads_and_crops():
    record = next(r for r in demo_records() if r.id == "astronaut-helmet")  # two targets, one a main subject
    height, width = load_image(record.image).shape[:2]
    plain = natural_facts(NaturalScene(record, width, height))
    assert [o["category"] for o in plain["objects"]] == [t.label for t in record.targets]
    assert all(o["protected"] and 0 <= o["x"] <= 1 and 0 <= o["y"] <= 1 for o in plain["objects"])
    x0, y0, x1, y1 = record.targets[0].bounds()
    assert plain["objects"][0]["x"] == pytest.approx((x0 + x1) / 2 / width, abs=1e-3)
    padded = natural_facts(NaturalScene(record, width, height, ops=({"op": "pad", "left": width, "right": 0, "top": 0,
                                                                      "bottom": 0, "color": [0, 0, 0]},)))
    assert padded["objects"][0]["x"] == pytest.approx((width + (x0 + x1) / 2) / (2 * width), abs=1e-3)
    got = _grounds(plain, np.random.default_rng(0))
    assert {"visual_include", "target_name"} <= set(got) and "object_count" not in got and "visual_exclude" not in got


def test_facts_refuse_other_structures():
    with pytest.raises(TypeError, match="expected a chart, CLEVR or natural-image structure, got str"):
        facts_of("scene")
    with pytest.raises(TypeError, match="expected a ChartStructure, got str"):
        chart_facts("scene")
