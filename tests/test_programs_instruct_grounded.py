"""The instruction-following arm's visually grounded, causal and conditional types: on random
facts (CLEVR-like object lists, chart rows, drawn texts) ``ground`` draws parameters that
``check_ground`` accepts and tampered ones it refuses, and the writers' edits of random
responses get the verdicts they are built for."""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vicogym.editors import instruct as edits
from vicogym.programs.instruct import GROUNDED, REGISTRY
from vicogym.programs.instruct.grounded import SHAPES, VALUES, position

WORD = st.text(alphabet="bcdfghjklmnpqrstvwxz", min_size=2, max_size=7)
OBJECT = st.fixed_dictionaries({
    "category": st.sampled_from(SHAPES), "color": st.sampled_from(VALUES["color"][:8]),
    "size": st.sampled_from(VALUES["size"]), "material": st.sampled_from(VALUES["material"]),
    "x": st.floats(0, 1), "y": st.floats(0, 1)})
VALUE = st.one_of(st.integers(-50, 5000).map(float), st.integers(0, 99999).map(lambda v: v / 10))


@st.composite
def facts(draw):
    objects = draw(st.lists(OBJECT, max_size=8))
    for o in objects:
        o["name"] = f"{o['size']} {o['color']} {o['material']} {o['category']}"
    labels = draw(st.lists(st.builds(lambda a, b: f"{a} {b}".strip(), WORD, st.sampled_from(["", "", "rk", "vst"])),
                           min_size=0, max_size=7, unique_by=str.lower))
    series = draw(st.lists(WORD, min_size=1, max_size=2, unique=True))
    rows = [{"label": label, "series": s, "value": draw(VALUE)} for label in labels for s in series]
    texts = draw(st.lists(st.text(alphabet="abcXYZ 12", min_size=1, max_size=20), max_size=4))
    return {"source": draw(st.sampled_from(["clevr", "clevr", "natural"])), "objects": objects, "rows": rows,
            "texts": texts}


@st.composite
def response(draw, facts):
    """A response of filler sentences salted with the facts' names, numbers and relation words."""
    salt = [o["category"] for o in facts["objects"]] + [o["color"] for o in facts["objects"]]
    salt += [r["label"] for r in facts["rows"]] + [str(r["value"]) for r in facts["rows"]] + list(facts["texts"])
    salt += ["left", "right", "above", "larger", "smaller", "largest", "smallest", "3", "two", "and", "If", "First"]
    token = st.one_of(WORD, st.sampled_from(salt)) if salt else WORD
    sentence = st.lists(token, min_size=1, max_size=8).map(lambda ws: " ".join(ws) + ".")
    return " ".join(draw(st.lists(sentence, max_size=5)))


def _check(id, text, params):
    return REGISTRY[id](text, **params).passed


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_grounded_parameters_check_and_the_edits_get_their_verdicts(data):
    f = data.draw(facts())
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32)))
    for id in GROUNDED:
        contract = REGISTRY[id]
        params = contract.ground(f, rng)
        if params is None:
            continue
        contract.check_params(params)
        assert contract.check_ground(f, params) is None, (id, params)
        base = data.draw(response(f))
        good, bad = edits.satisfy(id, base, params, rng), edits.violate(id, base, params, rng)
        assert _check(id, good, params), (id, params, base, good)
        assert not _check(id, bad, params), (id, params, base, bad)
        assert not _check(id, edits.violate(id, good, params, rng), params), (id, params, good)
        assert _check(id, edits.satisfy(id, bad, params, rng), params), (id, params, bad)
        assert edits.phrase(id, params, rng)


TAMPER = {
    "object_count": lambda p: {**p, "count": p["count"] + 1},
    "attribute_describe": lambda p: {**p, "value": p["wrong"][0], "wrong": [v for v in VALUES[p["attribute"]]
                                                                             if v != p["wrong"][0]]},
    "spatial_relation": lambda p: {**p, "relation": {"left": "right", "right": "left", "above": "below",
                                                     "below": "above"}[p["relation"]]},
    "size_compare": lambda p: {**p, "relation": "smaller" if p["relation"] == "larger" else "larger"},
    "chart_value": lambda p: {**p, "value": p["value"] + 1.0},
    "chart_order": lambda p: {**p, "labels": p["labels"][::-1]},
    "chart_extreme": lambda p: {**p, "extreme": "smallest" if p["extreme"] == "largest" else "largest"},
    "ocr_content": lambda p: {**p, "text": p["text"] + "zz"},
    "visual_exclude": lambda p: p,  # tampered below with a present name
    "target_name": lambda p: {**p, "category": p["category"] + "x"},
}


@settings(max_examples=80, deadline=None)
@given(st.data())
def test_check_ground_refuses_tampered_parameters(data):
    f = data.draw(facts())
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32)))
    for id, tamper in TAMPER.items():
        params = REGISTRY[id].ground(f, rng)
        if params is None:
            continue
        if id == "visual_exclude":
            params = {"names": [f["objects"][0]["category"]]}
        assert REGISTRY[id].check_ground(f, tamper(params)) is not None, (id, params)


def test_ground_returns_none_when_the_image_cannot_support_the_type():
    rng = np.random.default_rng(0)
    one = {"source": "clevr", "objects": [{"name": "x", "category": "cube", "color": "red", "size": "large",
                                           "material": "metal", "x": 0.2, "y": 0.5}]}
    assert REGISTRY["spatial_relation"].ground(one, rng) is None  # one object: no pair
    assert REGISTRY["size_compare"].ground(one, rng) is None
    assert REGISTRY["ocr_content"].ground({"texts": []}, rng) is None
    assert REGISTRY["ocr_content"].ground({"texts": ["12", "  "]}, rng) is None  # nothing worth quoting
    natural = {**one, "source": "natural"}  # targets are not every object: no counts, no absences
    assert REGISTRY["object_count"].ground(natural, rng) is None
    assert REGISTRY["visual_exclude"].ground(natural, rng) is None
    assert REGISTRY["target_name"].ground(one, rng) is None  # nothing protected
    twins = {"source": "clevr", "objects": [dict(one["objects"][0], x=0.1), dict(one["objects"][0], x=0.9)]}
    assert REGISTRY["spatial_relation"].ground(twins, rng) is None  # "the red cube" would denote two
    assert REGISTRY["attribute_describe"].ground(twins, rng) is None
    tie = {"rows": [{"label": "a b", "series": "s", "value": 1.0}, {"label": "c d", "series": "s", "value": 1.0}]}
    assert REGISTRY["chart_extreme"].ground(tie, rng) is None and REGISTRY["chart_order"].ground(tie, rng) is None
    close = {"source": "clevr", "objects": [dict(one["objects"][0]), dict(one["objects"][0], category="sphere", x=0.23,
                                                                            y=0.52)]}
    assert REGISTRY["spatial_relation"].ground(close, rng) is None  # too close to call


@pytest.mark.parametrize("id, text, params, passed",
                         [("object_count", "I count 2 spheres and three red cubes.", {"noun": "red cube", "count": 3},
                           True),
                          ("object_count", "There are 3 cubes, 2 red cubes.", {"noun": "red cube", "count": 3}, False),
                          ("chart_value", "In 2019 sales were 1,234.5 units.",
                           {"label": "2019", "series": "", "value": 1234.5, "tolerance": 0.1}, True),
                          ("chart_value", "Q1 is 40 and Q2 is 12.",
                           {"label": "Q2", "series": "", "value": 40.0, "tolerance": 1.0}, False),
                          ("chart_extreme", "Europe is small while Asia is the highest.",
                           {"series": "", "extreme": "largest", "label": "Asia", "labels": ["Asia", "Europe"]}, True),
                          ("spatial_relation", "The red cube is above the blue sphere; the blue sphere is below it.",
                           {"first": "red cube", "second": "blue sphere", "relation": "above",
                            "choices": "above or below"}, True),
                          ("spatial_relation", "The blue sphere is left of the red cube.",
                           {"first": "red cube", "second": "blue sphere", "relation": "right",
                            "choices": "left or right"}, False),
                          ("attribute_describe", "The cube is grey, and the sphere is blue.",
                           {"object": "cube", "attribute": "color", "value": "gray", "wrong": ["blue"]}, True),
                          ("visual_include", "Two Red Cubes.", {"names": ["red cube"]}, True),
                          ("visual_exclude", "A reddish cube.", {"names": ["red cube"]}, True),
                          ("ocr_content", "It says Sales  by\nRegion.", {"text": "Sales by Region"}, True),
                          ("temporal_sequence", "- First look\n- Then count\n- Finally answer",
                           {"markers": ["First", "Then", "Finally"]}, True),
                          ("conditional_if", "It would shine if it were metal.", {}, False)])
def test_verifiers_read_numbers_words_and_clauses(id, text, params, passed):
    assert _check(id, text, params) is passed


@settings(max_examples=40, deadline=None)
@given(st.data())
def test_ungrounded_writers_draw_and_edit(data):
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32)))
    base = data.draw(response({"objects": [], "rows": [], "texts": []}))
    for id in ("temporal_sequence", "conditional_if", "causal_explain", "hypothetical", "scene_mood"):
        contract, writer = REGISTRY[id], edits.EDITS[id]
        params = writer.draw(rng)
        contract.check_params(params)
        good, bad = writer.satisfy(base, params, rng), writer.violate(base, params, rng)
        assert edits.phrase(id, params, rng)
        if contract.track == "code":
            assert _check(id, good, params) and not _check(id, bad, params), (id, base)
        else:  # the simulated judge reads cues: satisfy adds one, violate leaves none
            import re
            cue = lambda t: any(re.search(r"(?<!\w)" + re.escape(c) + r"(?!\w)", t, re.I) for c in contract.cues)
            assert contract.rubric and cue(good) and not cue(bad), (id, base, bad)


def test_every_new_type_has_a_writer_and_the_grounded_ones_need_facts():
    added = set(GROUNDED) | {"scene_mood", "causal_explain", "temporal_sequence", "conditional_if", "hypothetical"}
    assert added <= set(edits.EDITS)
    for id in added:
        contract, writer = REGISTRY[id], edits.EDITS[id]
        assert (id in GROUNDED) == bool(contract.needs) == (writer.draw is None), id
    assert {REGISTRY[i].category for i in added} >= {"attribute", "spatial", "counting", "object_grounded",
                                                     "ocr_grounded", "causal", "conditional"}
    assert position(0.1, 0.1) == "top left" and position(0.5, 0.5) == "centre" and position(1.0, 1.0) == "bottom right"


def test_spatial_relations_need_objects_apart_along_the_axis():
    from vicogym.programs.instruct import REGISTRY
    from vicogym.programs.instruct.grounded import spatial_relation_of

    hat = {"x": 0.5, "y": 0.2, "box": [0.35, 0.05, 0.65, 0.35]}
    woman = {"x": 0.5, "y": 0.6, "box": [0.1, 0.1, 0.9, 1.0]}  # wears the hat: her box holds it
    assert spatial_relation_of(hat, woman, horizontal=False) is None
    cup = {"x": 0.2, "y": 0.5, "box": [0.1, 0.4, 0.3, 0.6]}
    plate = {"x": 0.7, "y": 0.5, "box": [0.5, 0.4, 0.9, 0.6]}
    assert spatial_relation_of(cup, plate, horizontal=True) == "left"
    assert spatial_relation_of(plate, cup, horizontal=True) == "right"
    assert spatial_relation_of({"x": 0.5, "y": 0.5}, {"x": 0.55, "y": 0.5}, horizontal=True) is None  # too close
    scene = {"source": "clevr", "objects": [
        {"name": "red cube", "category": "cube", "color": "red", "x": 0.2, "y": 0.2},
        {"name": "blue sphere", "category": "sphere", "color": "blue", "x": 0.8, "y": 0.8}]}
    rng = np.random.default_rng(0)
    asked = {REGISTRY["spatial_relation"].ground(scene, rng)["relation"] for _ in range(20)}
    assert asked <= {"left", "right"}  # above and below on a CLEVR table would mean behind and in front
    why = REGISTRY["spatial_relation"].check_ground(scene, {"first": "red cube", "second": "blue sphere",
                                                            "relation": "above", "choices": "above or below"})
    assert why and "not asked of CLEVR" in why


def test_chart_orders_and_extremes_only_where_a_reader_can_tell_the_values_apart():
    from vicogym.programs.instruct import REGISTRY

    rng = np.random.default_rng(0)
    close = {"source": "chart", "rows": [{"label": "A", "series": "s", "value": 16.1, "tolerance": 0.5},
                                          {"label": "B", "series": "s", "value": 15.7, "tolerance": 0.5},
                                          {"label": "C", "series": "s", "value": 5.0, "tolerance": 0.5}]}
    assert REGISTRY["chart_order"].ground(close, rng) is None
    extremes = [REGISTRY["chart_extreme"].ground(close, rng) for _ in range(20)]
    assert {e["extreme"] for e in extremes} == {"smallest"}  # the largest is a near-tie
    labelled = {"source": "chart", "rows": [{k: v for k, v in r.items() if k != "tolerance"} for r in close["rows"]]}
    assert REGISTRY["chart_order"].ground(labelled, rng)["labels"] == ["A", "B", "C"]  # data labels show them


def test_the_target_named_is_the_main_subject_of_its_part_of_the_image():
    from vicogym.programs.instruct import REGISTRY

    facts = {"source": "natural", "objects": [
        {"name": "cat", "category": "cat", "protected": True, "x": 0.5, "y": 0.5, "box": [0.1, 0.1, 0.9, 0.9]},
        {"name": "eye", "category": "eye", "protected": True, "x": 0.45, "y": 0.4, "box": [0.4, 0.35, 0.5, 0.45]}]}
    rng = np.random.default_rng(0)
    assert {REGISTRY["target_name"].ground(facts, rng)["category"] for _ in range(10)} == {"cat"}
    assert REGISTRY["target_name"].check_ground(facts, {"category": "eye", "where": "centre"})


def test_the_main_subject_of_a_part_is_the_one_a_reader_sees_there_not_only_the_annotated_one():
    """The coffee photo: one record annotates the spoon and saucer, another the cup. With
    the photo's other annotations in the facts, the centre holds the cup and the saucer, so
    no record asks for "the main subject in the centre"."""
    from vicogym.programs.instruct import REGISTRY
    from vicogym.sources.instruct import natural_facts
    from vicogym.sources.natural import demo_records
    from vicogym.structures.natural import Scene as NaturalScene

    records = [r for r in demo_records() if r.image == "skimage:coffee"]
    target_name = REGISTRY["target_name"]
    for record in records:
        scene = NaturalScene(record, 600, 400)
        others = [t for r in records if r.id != record.id for t in r.targets]
        facts = natural_facts(scene, others=others)
        for _ in range(20):
            params = target_name.ground(facts, np.random.default_rng(_))
            if params is not None:
                assert params["where"] != "centre", (record.id, params)
        centre = target_name.check_ground(facts, {"category": "saucer", "where": "centre"})
        assert centre is not None  # with the cup in the facts, the saucer is no unique centre subject
    spoon = next(r for r in records if r.id == "coffee-spoon")
    assert target_name.check_ground(natural_facts(NaturalScene(spoon, 600, 400)),
                                    {"category": "saucer", "where": "centre"}) is None  # what the audit found


def test_a_subject_that_another_object_as_large_crowds_is_no_main_subject():
    from vicogym.programs.instruct import REGISTRY
    from vicogym.sources.instruct import natural_facts
    from vicogym.sources.natural import demo_records
    from vicogym.structures.natural import Scene as NaturalScene

    records = [r for r in demo_records() if r.image == "skimage:astronaut"]
    suit = next(r for r in records if r.id == "astronaut-suit-color")
    facts = natural_facts(NaturalScene(suit, 512, 512), others=[t for r in records if r is not suit for t in r.targets])
    for seed in range(20):
        params = REGISTRY["target_name"].ground(facts, np.random.default_rng(seed))
        assert params is None or params["category"] != "suit", params
