"""The evidence of a CLEVR question is complete: ``programs.clevr.evidence_objects`` lists
every object whose attributes the answer depends on (the objects ``unique`` singles out,
and every object a ``count`` or ``exist`` ranges over, counted or ruled out). Proved the
contrapositive way: no change of any attribute of any other object changes the answer."""

from dataclasses import replace

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from vicogym.errors import GenerationError, InvalidEdit
from vicogym.programs.clevr import (
    TEMPLATES,
    answer_text,
    asked_objects,
    evidence_objects,
    execute,
    generate_question,
    run,
)
from vicogym.sources.clevr import procedural_scene
from vicogym.structures.clevr import ATTRIBUTES, Obj, Scene


def node(function, inputs=(), values=()):
    return {"function": function, "inputs": list(inputs), "value_inputs": list(values)}


def changed(scene, k, attribute, value):
    return scene.with_objects(tuple(replace(o, **{attribute: value}) if i == k else o
                                    for i, o in enumerate(scene.objects)))


def every_change(scene, k):
    """Every scene that differs from ``scene`` in one attribute of object ``k``."""
    for attribute, values in ATTRIBUTES.items():
        for value in values:
            if value != getattr(scene.objects[k], attribute):
                yield attribute, value, changed(scene, k, attribute, value)


def assert_complete(scene, program):
    """No attribute of an object outside the evidence changes the answer. A change may
    leave the question without an answer (a description that now fits two objects: the
    environment refuses that edit as ``ambiguous``), never with another one."""
    answer = answer_text(execute(scene, program))
    evidence = evidence_objects(scene, program)
    for k in set(range(len(scene.objects))) - set(evidence):
        for attribute, value, other in every_change(scene, k):
            try:
                after = answer_text(execute(other, program))
            except InvalidEdit:
                continue
            assert after == answer, f"object {k}'s {attribute} set to {value} changes {answer!r} to {after!r}"
    return evidence


#: programs of CLEVR's function set beyond the templates' shapes: a same-attribute set
#: filtered further, an existence test after a relation, set operations over filters
PROGRAMS = [
    [node("scene"), node("filter_shape", [0], ["cube"]), node("unique", [1]), node("same_size", [2]),
     node("filter_color", [3], ["red"]), node("count", [4])],
    [node("scene"), node("filter_color", [0], ["blue"]), node("unique", [1]), node("relate", [2], ["behind"]),
     node("filter_shape", [3], ["sphere"]), node("exist", [4])],
    [node("scene"), node("filter_color", [0], ["red"]), node("scene"), node("filter_shape", [2], ["cylinder"]),
     node("intersect", [1, 3]), node("count", [4])],
    [node("scene"), node("filter_size", [0], ["large"]), node("scene"), node("filter_material", [2], ["metal"]),
     node("union", [1, 3]), node("filter_shape", [4], ["cube"]), node("count", [5])],
    [node("scene"), node("filter_color", [0], ["gray"]), node("count", [1]), node("scene"),
     node("filter_shape", [3], ["sphere"]), node("count", [4]), node("less_than", [2, 5])],
]


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(st.integers(0, 2**32 - 1), st.sampled_from([t.id for t in TEMPLATES]))
def test_no_attribute_of_an_object_outside_the_evidence_changes_a_generated_answer(seed, template):
    rng = np.random.default_rng(seed)
    scene = procedural_scene(rng, 320, 240)
    try:
        _question, rule, _answer = generate_question(scene, rng, [template], max_tries=4)
    except GenerationError:
        assume(False)
    evidence = assert_complete(scene, rule["program"])
    assert set(asked_objects(scene, rule["program"])) <= set(evidence)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(st.integers(0, 2**32 - 1), st.sampled_from(range(len(PROGRAMS))))
def test_no_attribute_of_an_object_outside_the_evidence_changes_other_programs_answers(seed, which):
    scene = procedural_scene(np.random.default_rng(seed), 320, 240)
    program = PROGRAMS[which]
    try:
        execute(scene, program)
    except InvalidEdit:
        assume(False)
    assert_complete(scene, program)


def _filter_chain(program, k):
    """``(base node, {attribute: value})`` when node ``k`` is filters over one set, else ``None``."""
    described = {}
    while program[k]["function"].startswith("filter_"):
        described[program[k]["function"][len("filter_"):]] = program[k]["value_inputs"][0]
        k = program[k]["inputs"][0]
    base = program[k]["function"]
    return (k, described) if described and (base in ("scene", "relate") or base.startswith("same_")) else None


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 2**32 - 1))
def test_changing_the_counted_attribute_of_an_object_in_the_evidence_changes_the_count(seed):
    """The other direction, for counts over filters: an object counted leaves the count when
    one attribute the filters read changes, and an object ruled out by one attribute joins
    it when that attribute takes the filter's value; both are in the evidence."""
    rng = np.random.default_rng(seed)
    scene = procedural_scene(rng, 320, 240)
    _question, rule, _answer = generate_question(scene, rng)
    program = rule["program"]
    outputs = run(scene, program)
    evidence = evidence_objects(scene, program)
    for c, n in enumerate(program):
        chain = _filter_chain(program, n["inputs"][0]) if n["function"] == "count" else None
        if chain is None:
            continue
        base, described = chain
        for k in outputs[base]:
            obj = scene.objects[k]
            missed = {a: v for a, v in described.items() if getattr(obj, a) != v}
            if len(missed) > 1:
                continue
            assert k in evidence
            attribute, value = next(iter(missed.items())) if missed else next(iter(described.items()))
            if not missed:  # counted: any other value of that attribute drops it
                value = next(v for v in ATTRIBUTES[attribute] if v != value)
            try:
                count = run(changed(scene, k, attribute, value), program)[c]
            except InvalidEdit:
                continue
            assert count == outputs[c] + (1 if missed else -1)


# the auditor's case (seed 7777): "How many blue things are left of the yellow thing?", 0;
# the evidence listed only the yellow cylinder
LEFT_OF_YELLOW = [node("scene"), node("filter_color", [0], ["yellow"]), node("unique", [1]),
                  node("relate", [2], ["left"]), node("filter_color", [3], ["blue"]), node("count", [4])]
SCENE = Scene((Obj("cylinder", "yellow", "rubber", "small", 0.0, 0.0),
               Obj("sphere", "red", "metal", "small", -1.278, -2.231),   # left of the cylinder
               Obj("cube", "green", "rubber", "large", -2.231, 1.278),   # left of it too
               Obj("cube", "blue", "rubber", "small", 1.278, 2.231)))    # right of it


def test_a_count_of_zero_lists_every_object_it_rules_out():
    assert SCENE.relationships()["left"][0] == [1, 2]
    assert answer_text(execute(SCENE, LEFT_OF_YELLOW)) == "0"
    assert asked_objects(SCENE, LEFT_OF_YELLOW) == [0]  # what the evidence was
    assert evidence_objects(SCENE, LEFT_OF_YELLOW) == [0, 1, 2]  # the blue cube is right of it: out by place
    assert answer_text(execute(changed(SCENE, 1, "color", "blue"), LEFT_OF_YELLOW)) == "1"
    assert answer_text(execute(changed(SCENE, 3, "color", "gray"), LEFT_OF_YELLOW)) == "0"


@pytest.mark.parametrize("program, expected", [
    ([node("scene"), node("filter_color", [0], ["blue"]), node("count", [1])], [0, 1, 2, 3]),
    ([node("scene"), node("filter_color", [0], ["blue"]), node("exist", [1])], [0, 1, 2, 3]),
    ([node("scene"), node("filter_color", [0], ["yellow"]), node("unique", [1]), node("same_size", [2]),
      node("count", [3])], [0, 1, 2, 3]),
    ([node("scene"), node("filter_color", [0], ["yellow"]), node("unique", [1]), node("query_shape", [2])], [0]),
    ([node("scene"), node("filter_color", [0], ["yellow"]), node("unique", [1]), node("query_shape", [2]),
      node("scene"), node("filter_color", [4], ["blue"]), node("unique", [5]), node("query_shape", [6]),
      node("equal_shape", [3, 7])], [0, 3]),
    ([node("scene"), node("filter_color", [0], ["yellow"]), node("unique", [1]), node("relate", [2], ["left"]),
      node("scene"), node("filter_color", [4], ["blue"]), node("unique", [5]), node("relate", [6], ["front"]),
      node("intersect", [3, 7]), node("count", [8])], [0, 1, 2, 3]),
])
def test_what_each_kind_of_question_depends_on(program, expected):
    assert evidence_objects(SCENE, program) == expected
    assert_complete(SCENE, program)
