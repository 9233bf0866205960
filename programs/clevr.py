"""Label logic of the CLEVR arm: CLEVR's functional programs, their executor, and question
templates for CLEVR's nine families.

A program is CLEVR's node list: ``{"function", "inputs", "value_inputs"}`` per node, the last
node's output being the answer. Files spell nodes either way (``function`` in the released
question files, ``type`` in the generator's own output; ``value_inputs`` or
``side_inputs``): :func:`normalize_program` reads both and writes the released spelling,
so CLEVR's own executor can run a stored program on a stored scene.

The executor is one table of small handlers (:data:`HANDLERS`) with one signature. ``unique``
on anything but exactly one object raises ``InvalidEdit("ambiguous")``: a question whose
object is gone or doubled has no answer, never a guess.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from vicogym.errors import GenerationError, InvalidEdit
from vicogym.structures.clevr import ATTRIBUTES, RELATIONS, ClevrRule, ProgramNode, Scene, size_problem
from vicogym.validation import is_int, pick

Objects = list[int]
Handler = Callable[[Scene, list[Any], list[str], "Context"], Any]


@dataclass
class Context:
    """What handlers share while one program runs: the scene's relationships, computed once."""

    relationships: dict[str, list[list[int]]]


# -- handlers -------------------------------------------------------------------------------
def _objects(value: Any, function: str) -> Objects:
    if not isinstance(value, list):
        raise ValueError(f"{function} expects a set of objects, got {value!r}")
    return value


def _object(value: Any, function: str) -> int:
    if not is_int(value):
        raise ValueError(f"{function} expects one object (the output of unique), got {value!r}")
    return value


def _filter(attribute: str) -> Handler:
    def handler(scene: Scene, inputs: list[Any], values: list[str], ctx: Context) -> Objects:
        return [
            i for i in _objects(inputs[0], f"filter_{attribute}") if getattr(scene.objects[i], attribute) == values[0]
        ]

    return handler


def _query(attribute: str) -> Handler:
    return lambda scene, inputs, values, ctx: getattr(scene.objects[_object(inputs[0], f"query_{attribute}")],
                                                      attribute)


def _same(attribute: str) -> Handler:
    def handler(scene: Scene, inputs: list[Any], values: list[str], ctx: Context) -> Objects:
        i = _object(inputs[0], f"same_{attribute}")
        target = getattr(scene.objects[i], attribute)
        return [j for j, o in enumerate(scene.objects) if j != i and getattr(o, attribute) == target]

    return handler


def _unique(scene: Scene, inputs: list[Any], values: list[str], ctx: Context) -> int:
    objects = _objects(inputs[0], "unique")
    if len(objects) != 1:
        raise InvalidEdit("ambiguous",
                          f"the question's object is not unique: {len(objects)} objects fit its description")
    return objects[0]


def _relate(scene: Scene, inputs: list[Any], values: list[str], ctx: Context) -> Objects:
    if values[0] not in RELATIONS:
        raise ValueError(f"relate expects one of {list(RELATIONS)}, got {values[0]!r}")
    return list(ctx.relationships[values[0]][_object(inputs[0], "relate")])


def _compare(op: Callable[[Any, Any], bool]) -> Handler:
    return lambda scene, inputs, values, ctx: bool(op(inputs[0], inputs[1]))


def _integers(op: Callable[[int, int], bool]) -> Handler:
    def handler(scene: Scene, inputs: list[Any], values: list[str], ctx: Context) -> bool:
        if not all(isinstance(v, int) and not isinstance(v, bool) for v in inputs):
            raise ValueError(f"an integer comparison expects two counts, got {inputs!r}")
        return bool(op(inputs[0], inputs[1]))

    return handler


HANDLERS: dict[str, Handler] = {
    "scene": lambda scene, inputs, values, ctx: list(range(len(scene.objects))),
    "unique": _unique,
    "relate": _relate,
    "union": lambda scene, inputs, values, ctx: sorted(
        set(_objects(inputs[0], "union")) | set(_objects(inputs[1], "union"))
    ),
    "intersect": lambda scene, inputs, values, ctx: sorted(
        set(_objects(inputs[0], "intersect")) & set(_objects(inputs[1], "intersect"))
    ),
    "count": lambda scene, inputs, values, ctx: len(_objects(inputs[0], "count")),
    "exist": lambda scene, inputs, values, ctx: len(_objects(inputs[0], "exist")) > 0,
    "equal_integer": _integers(lambda a, b: a == b),
    "less_than": _integers(lambda a, b: a < b),
    "greater_than": _integers(lambda a, b: a > b),
    **{f"filter_{a}": _filter(a) for a in ATTRIBUTES},
    **{f"query_{a}": _query(a) for a in ATTRIBUTES},
    **{f"same_{a}": _same(a) for a in ATTRIBUTES},
    **{f"equal_{a}": _compare(lambda x, y: x == y) for a in ATTRIBUTES},
}
#: how many inputs and value inputs each function takes
ARITY: dict[str, tuple[int, int]] = {
    "scene": (0, 0), "unique": (1, 0), "relate": (1, 1), "union": (2, 0), "intersect": (2, 0), "count": (1, 0),
    "exist": (1, 0), "equal_integer": (2, 0), "less_than": (2, 0), "greater_than": (2, 0),
    **{f"filter_{a}": (1, 1) for a in ATTRIBUTES}, **{f"query_{a}": (1, 0) for a in ATTRIBUTES},
    **{f"same_{a}": (1, 0) for a in ATTRIBUTES}, **{f"equal_{a}": (2, 0) for a in ATTRIBUTES},
}


# -- programs -------------------------------------------------------------------------------
def normalize_program(nodes: Any) -> list[ProgramNode]:
    """A program in the released spelling (``function``, ``inputs``, ``value_inputs``), from
    either spelling; ``ValueError`` naming the node when it is not a CLEVR program."""
    if not isinstance(nodes, list) or not nodes:
        raise ValueError(f"expected a program as a non-empty list of nodes, got {type(nodes).__name__}")
    out = []
    for k, node in enumerate(nodes):
        if not isinstance(node, Mapping):
            raise ValueError(f"program node {k} is not an object")
        function = node.get("function", node.get("type"))
        if function not in HANDLERS:
            raise ValueError(f"program node {k}: unknown function {function!r}")
        inputs = node.get("inputs", [])
        values = node.get("value_inputs", node.get("side_inputs", []))
        if not isinstance(inputs, list) or not all(isinstance(i, int) and not isinstance(i, bool) and 0 <= i < k
                                                   for i in inputs):
            raise ValueError(f"program node {k} ({function}): inputs must be indices of earlier nodes, got {inputs!r}")
        if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
            raise ValueError(f"program node {k} ({function}): value inputs must be strings, got {values!r}")
        n_inputs, n_values = ARITY[function]
        if (len(inputs), len(values)) != (n_inputs, n_values):
            raise ValueError(f"program node {k} ({function}) takes {n_inputs} inputs and {n_values} value inputs, got "
                             f"{len(inputs)} and {len(values)}")
        out.append({"function": function, "inputs": list(inputs), "value_inputs": list(values)})
    return out


def run(scene: Scene, program: Sequence[ProgramNode]) -> list[Any]:
    """Every node's output (the answer is the last). ``InvalidEdit("ambiguous")`` when a
    ``unique`` step does not find exactly one object."""
    ctx = Context(scene.relationships())
    outputs: list[Any] = []
    for node in program:
        outputs.append(HANDLERS[node["function"]](scene, [outputs[i] for i in node["inputs"]], node["value_inputs"],
                                                  ctx))
    return outputs


def execute(scene: Scene, program: Sequence[ProgramNode]) -> Any:
    return run(scene, program)[-1]


def answer_text(value: Any) -> str:
    """CLEVR's answer spelling: ``yes``/``no``, counts as digits, attribute values as they are."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return value
    raise ValueError(f"a program's answer is a yes/no, a count or an attribute value, got {value!r}")


def program_rule(program: Sequence[Mapping[str, Any]], question: str, template: str | None = None,
                 family: str | None = None) -> ClevrRule:
    rule: ClevrRule = {"kind": "program", "program": normalize_program(list(program)), "question": question}
    if template is not None:
        rule["template"], rule["family"] = template, family
    return rule


def relabel(scene: Scene, rule: ClevrRule) -> str:
    if rule.get("kind") != "program":
        raise ValueError(f"expected a CLEVR program rule, got kind {rule.get('kind')!r}")
    return answer_text(execute(scene, rule["program"]))


def asked_objects(scene: Scene, program: Sequence[ProgramNode]) -> list[int]:
    """The objects a reader must find: those singled out by ``unique`` and those in the sets
    the answer is read from (for difficulty features)."""
    outputs = run(scene, program)
    asked: set[int] = set()
    for node, out in zip(program, outputs):
        if node["function"] == "unique":
            asked.add(out)
        if node["function"] in ("count", "exist") and isinstance(outputs[node["inputs"][0]], list):
            asked.update(outputs[node["inputs"][0]])
    return sorted(asked)


def evidence_objects(scene: Scene, program: Sequence[ProgramNode]) -> list[int]:
    """Every object the program's answer depends on, so every object a reader must see to
    settle it: the objects ``unique`` singles out (the references), and for each ``count``
    and ``exist`` every object its set was chosen from, whether chosen or not (each must
    be seen to be ruled in or out). Comparisons are covered through their parts: an
    ``equal_<attribute>`` reads two references, an integer comparison two counts.

    The set a count ranges over is found by following its input back through the nodes
    that keep or drop each object on that object's own attributes (``filter_*``,
    ``union``, ``intersect``) to where the candidates come from: ``scene`` (every object),
    ``relate`` (the objects on that side of the reference: the others are ruled out by
    where they stand, which no attribute changes) or ``same_<attribute>`` (every object
    but the reference, each compared with it); ``union`` and ``intersect`` range over both
    their inputs' ranges.

    Complete in this sense: changing any attribute of an object outside the list either
    leaves the answer as it was or leaves the question without one (a description that
    now fits two objects, ``ambiguous``); ``tests/test_evidence_objects.py`` checks it by
    changing every attribute of every other object. :func:`asked_objects` is the narrower
    set the difficulty features read (the references and the counted objects)."""
    outputs = run(scene, program)
    everyone = set(range(len(scene.objects)))

    def ranged(k: int) -> set[int]:
        node = program[k]
        function = node["function"]
        if function == "scene":
            return set(everyone)
        if function == "relate":
            return set(outputs[k])
        if function.startswith("same_"):
            return everyone - {outputs[node["inputs"][0]]}
        if function.startswith("filter_"):
            return ranged(node["inputs"][0])
        if function in ("union", "intersect"):
            return ranged(node["inputs"][0]) | ranged(node["inputs"][1])
        raise ValueError(f"program node {k} ({function}) is no set of objects a count can range over")

    evidence: set[int] = set()
    for k, node in enumerate(program):
        if node["function"] == "unique":
            evidence.add(outputs[k])
        elif node["function"] in ("count", "exist"):
            evidence |= ranged(node["inputs"][0])
    return sorted(evidence)


# -- question templates ------------------------------------------------------------------------
RELATION_TEXT = {"left": "left of", "right": "right of", "front": "in front of", "behind": "behind"}
ANSWER_SPACE = {"count": [str(n) for n in range(0, 7)], "bool": ["yes", "no"],
                **{f"query_{a}": list(v) for a, v in ATTRIBUTES.items()}}


@dataclass(frozen=True)
class Template:
    """A question pattern. ``build(scene, rng, unasked)`` instantiates it: ``(text,
    program)``, or ``None`` when this scene offers no valid instance on this draw; its
    descriptions name no attribute in ``unasked``."""

    id: str
    family: str
    answer: str  # "count", "bool" or "query_<attribute>"
    build: Callable[[Scene, np.random.Generator, frozenset[str]], tuple[str, list[ProgramNode]] | None]


class _Program:
    """Builds a node list step by step and checks CLEVR's rules against degenerate
    instances as it goes: a filter must remove something, a relate must leave something out.
    Its descriptions name no attribute in ``unasked``."""

    def __init__(self, scene: Scene, unasked: frozenset[str] = frozenset()):
        self.scene, self.nodes, self.outputs, self.unasked = scene, [], [], unasked
        self.ctx = Context(scene.relationships())

    def add(self, function: str, inputs: list[int] = (), values: list[str] = ()) -> int:
        node = {"function": function, "inputs": list(inputs), "value_inputs": list(values)}
        out = HANDLERS[function](self.scene, [self.outputs[i] for i in inputs], node["value_inputs"], self.ctx)
        self.nodes.append(node)
        self.outputs.append(out)
        return len(self.nodes) - 1


def _describe(p: _Program, source: int, rng: np.random.Generator, unique: bool, exclude: str | None = None,
              target: int | None = None) -> tuple[int, dict[str, str]] | None:
    """Filter the set at node ``source`` by a random description: to one object (``target``
    or a random one) when ``unique``, else to a random non-empty or empty subset. Every
    filter removes something (CLEVR's rule); ``exclude`` keeps one attribute out (the one a
    query will ask for), and so do the program's ``unasked``."""
    candidates = p.outputs[source]
    if not candidates:
        return None
    attributes = [a for a in ("size", "color", "material", "shape") if a != exclude and a not in p.unasked]
    order = [attributes[i] for i in rng.permutation(len(attributes))]
    described: dict[str, str] = {}
    node = source
    if unique:
        goal = target if target is not None else pick(rng, candidates)
        for attribute in order:
            if len(p.outputs[node]) == 1:
                break
            value = getattr(p.scene.objects[goal], attribute)
            kept = [i for i in p.outputs[node] if getattr(p.scene.objects[i], attribute) == value]
            if len(kept) < len(p.outputs[node]):
                node = p.add(f"filter_{attribute}", [node], [value])
                described[attribute] = value
        return (node, described) if p.outputs[node] == [goal] else None
    for attribute in order[: int(rng.integers(1, 4))]:
        pool = sorted({getattr(p.scene.objects[i], attribute) for i in p.outputs[node]})
        values = pool if pool and rng.random() < 0.75 else list(ATTRIBUTES[attribute])
        value = pick(rng, values)
        kept = [i for i in p.outputs[node] if getattr(p.scene.objects[i], attribute) == value]
        if len(kept) == len(p.outputs[node]):
            continue  # a filter that changes nothing
        node = p.add(f"filter_{attribute}", [node], [value])
        described[attribute] = value
    return (node, described) if described else None


def phrase(described: Mapping[str, str], plural: bool = False) -> str:
    """``large red metal cube``, ``small things``: a CLEVR noun phrase."""
    words = [described[a] for a in ("size", "color", "material") if a in described]
    noun = described.get("shape", "thing")
    return " ".join(words + [noun + ("s" if plural else "")])


def _zero_hop(function: str):
    """``count`` or ``exist`` over a described set of the whole scene."""

    def build(scene, rng, unasked=frozenset()):
        p = _Program(scene, unasked)
        d = _describe(p, p.add("scene"), rng, unique=False)
        if d is None:
            return None
        p.add(function, [d[0]])
        if function == "count":
            return f"How many {phrase(d[1], plural=True)} are there?", p.nodes
        return f"Is there a {phrase(d[1])}?", p.nodes

    return build


def _query(attribute: str):
    questions = {"color": "What color is the {x}?", "shape": "What shape is the {x}?",
                 "material": "What is the {x} made of?", "size": "How big is the {x}?"}

    def build(scene, rng, unasked=frozenset()):
        p = _Program(scene, unasked)
        d = _describe(p, p.add("scene"), rng, unique=True, exclude=attribute)
        if d is None:
            return None
        p.add(f"query_{attribute}", [p.add("unique", [d[0]])])
        return questions[attribute].format(x=phrase(d[1])), p.nodes

    return build


def _hops(p: _Program, rng: np.random.Generator, hops: int) -> tuple[int, str] | None:
    """A chain "the X1 [R1 the X2 ...]": the node of its last object set and its text."""
    d = _describe(p, p.add("scene"), rng, unique=True)
    if d is None:
        return None
    node, text = p.add("unique", [d[0]]), f"the {phrase(d[1])}"
    for _ in range(hops):
        relation = pick(rng, RELATIONS)
        related = p.add("relate", [node], [relation])
        if not p.outputs[related] or len(p.outputs[related]) == len(p.scene.objects) - 1:
            return None  # a relation that points at nothing, or at everything, says nothing
        d = _describe(p, related, rng, unique=True)
        if d is None:
            return None
        node, text = p.add("unique", [d[0]]), f"the {phrase(d[1])} that is {RELATION_TEXT[relation]} {text}"
    return node, text


def _hop_query(hops: int, attribute: str):
    def build(scene, rng, unasked=frozenset()):
        p = _Program(scene, unasked)
        chain = _hops(p, rng, hops - 1)
        if chain is None:
            return None
        relation = pick(rng, RELATIONS)
        related = p.add("relate", [chain[0]], [relation])
        d = _describe(p, related, rng, unique=True, exclude=attribute)
        if d is None:
            return None
        p.add(f"query_{attribute}", [p.add("unique", [d[0]])])
        noun = phrase(d[1])
        verb = {"color": "What color is", "shape": "What shape is", "material": "What material is",
                "size": "What size is"}[attribute]
        return f"{verb} the {noun} that is {RELATION_TEXT[relation]} {chain[1]}?", p.nodes

    return build


def _hop_count(hops: int):
    def build(scene, rng, unasked=frozenset()):
        p = _Program(scene, unasked)
        chain = _hops(p, rng, hops - 1)
        if chain is None:
            return None
        relation = pick(rng, RELATIONS)
        related = p.add("relate", [chain[0]], [relation])
        if not p.outputs[related]:
            return None
        d = _describe(p, related, rng, unique=False)
        if d is None:
            return None
        p.add("count", [d[0]])
        return f"How many {phrase(d[1], plural=True)} are {RELATION_TEXT[relation]} {chain[1]}?", p.nodes

    return build


def _single_and(scene, rng, unasked=frozenset()):
    p = _Program(scene, unasked)
    a = _hops(p, rng, 0)
    b = _hops(p, rng, 0) if a else None
    if a is None or b is None or p.outputs[a[0]] == p.outputs[b[0]]:
        return None
    r1, r2 = (pick(rng, RELATIONS) for _ in range(2))
    both = p.add("intersect", [p.add("relate", [a[0]], [r1]), p.add("relate", [b[0]], [r2])])
    p.add("count", [both])
    return (f"How many things are both {RELATION_TEXT[r1]} {a[1]} and {RELATION_TEXT[r2]} {b[1]}?", p.nodes)


def _single_or(scene, rng, unasked=frozenset()):
    p = _Program(scene, unasked)
    all_objects = p.add("scene")
    a = _describe(p, all_objects, rng, unique=False)
    b = _describe(p, all_objects, rng, unique=False)
    if a is None or b is None or p.outputs[a[0]] == p.outputs[b[0]]:
        return None
    p.add("count", [p.add("union", [a[0], b[0]])])
    return f"How many things are {phrase(a[1], plural=True)} or {phrase(b[1], plural=True)}?", p.nodes


def _same_relate(attribute: str):
    wording = {"color": "color", "shape": "shape", "material": "material", "size": "size"}[attribute]

    def build(scene, rng, unasked=frozenset()):
        p = _Program(scene, unasked)
        d = _describe(p, p.add("scene"), rng, unique=True, exclude=attribute)
        if d is None:
            return None
        p.add("count", [p.add(f"same_{attribute}", [p.add("unique", [d[0]])])])
        return f"How many other things have the same {wording} as the {phrase(d[1])}?", p.nodes

    return build


def _comparison(attribute: str):
    def build(scene, rng, unasked=frozenset()):
        p = _Program(scene, unasked)
        a = _describe(p, p.add("scene"), rng, unique=True, exclude=attribute)
        b = _describe(p, p.add("scene"), rng, unique=True, exclude=attribute)
        if a is None or b is None or p.outputs[a[0]] == p.outputs[b[0]]:
            return None
        qa = p.add(f"query_{attribute}", [p.add("unique", [a[0]])])
        qb = p.add(f"query_{attribute}", [p.add("unique", [b[0]])])
        p.add(f"equal_{attribute}", [qa, qb])
        return f"Does the {phrase(a[1])} have the same {attribute} as the {phrase(b[1])}?", p.nodes

    return build


def _compare_integer(function: str):
    wording = {"greater_than": "Are there more {a} than {b}?", "less_than": "Are there fewer {a} than {b}?",
               "equal_integer": "Are there the same number of {a} and {b}?"}[function]

    def build(scene, rng, unasked=frozenset()):
        p = _Program(scene, unasked)
        all_objects = p.add("scene")
        a = _describe(p, all_objects, rng, unique=False)
        b = _describe(p, all_objects, rng, unique=False)
        if a is None or b is None or phrase(a[1]) == phrase(b[1]):
            return None
        p.add(function, [p.add("count", [a[0]]), p.add("count", [b[0]])])
        return wording.format(a=phrase(a[1], plural=True), b=phrase(b[1], plural=True)), p.nodes

    return build


TEMPLATES: tuple[Template, ...] = (
    Template("zero_hop_count", "zero_hop", "count", _zero_hop("count")),
    Template("zero_hop_exist", "zero_hop", "bool", _zero_hop("exist")),
    *(Template(f"zero_hop_query_{a}", "zero_hop", f"query_{a}", _query(a)) for a in ATTRIBUTES),
    *(Template(f"one_hop_query_{a}", "one_hop", f"query_{a}", _hop_query(1, a)) for a in ("color", "shape")),
    Template("one_hop_count", "one_hop", "count", _hop_count(1)),
    Template("two_hop_query_material", "two_hop", "query_material", _hop_query(2, "material")),
    Template("two_hop_count", "two_hop", "count", _hop_count(2)),
    Template("three_hop_query_size", "three_hop", "query_size", _hop_query(3, "size")),
    Template("three_hop_count", "three_hop", "count", _hop_count(3)),
    Template("single_and_count", "single_and", "count", _single_and),
    Template("single_or_count", "single_or", "count", _single_or),
    *(Template(f"same_relate_{a}", "same_relate", "count", _same_relate(a)) for a in ("color", "shape", "material")),
    *(Template(f"comparison_{a}", "comparison", "bool", _comparison(a)) for a in ("color", "size", "material")),
    *(Template(f"compare_integer_{f}", "compare_integer", "bool", _compare_integer(f))
      for f in ("greater_than", "less_than", "equal_integer")),
)
TEMPLATE_BY_ID = {t.id: t for t in TEMPLATES}
INSTANCE_TRIES = 24  # instances drawn per wanted answer before another template is tried
FAMILIES = tuple(dict.fromkeys(t.family for t in TEMPLATES))


def relation_problem(scene: Scene, program: Sequence[ProgramNode], min_px: float,
                     min_depth_px: float | None = None) -> str | None:
    """Why a reader could not see one of the program's relate steps, or ``None``. For every
    relate step, every other object must lie on the side of the anchor that CLEVR's ground-
    plane rule says: left/right by at least ``min_px`` across the image (perspective can put
    an object that is left on the floor straight above its anchor in the picture), and
    front/behind by the sign of its depth and at least ``min_depth_px`` up (behind) or down
    (in front) the image, where a reader sees depth (``min_px`` when not given)."""
    min_depth_px = min_px if min_depth_px is None else min_depth_px
    outputs = run(scene, program)
    pixels = scene.pixel_coords()
    relations = scene.relationships()
    for node in program:
        if node["function"] != "relate":
            continue
        anchor, relation = outputs[node["inputs"][0]], node["value_inputs"][0]
        for other in range(len(scene.objects)):
            if other == anchor:
                continue
            inside = other in relations[relation][anchor]
            if relation in ("left", "right"):
                dx = pixels[other][0] - pixels[anchor][0]
                shown = dx < 0 if relation == "left" else dx > 0
                if shown != inside or abs(dx) < min_px:
                    side = relation if inside else {"left": "right", "right": "left"}[relation]
                    return (f"object {other} is {relation if inside else 'not ' + relation} of object {anchor} on the "
                            f"floor but {abs(dx):.0f} px {'left' if dx < 0 else 'right'} of it in the image; a reader "
                            f"needs it at least {min_px:.0f} px to the {side}")
            else:
                dz = pixels[other][2] - pixels[anchor][2]
                if (dz > 0 if relation == "behind" else dz < 0) != inside:
                    return (f"object {other} is {'farther' if dz > 0 else 'nearer'} than object {anchor} but "
                            f"{'' if inside else 'not '}{relation} of it on the floor")
                dy = pixels[other][1] - pixels[anchor][1]  # behind sits higher in the picture
                if (dy < 0) != (dz > 0) or abs(dy) < min_depth_px:
                    return (f"object {other} is {'behind' if dz > 0 else 'in front of'} object {anchor} but "
                            f"{abs(dy):.1f} px {'above' if dy < 0 else 'below'} it in the image; a reader needs "
                            f"{min_depth_px:.0f} px {'up' if dz > 0 else 'down'} the image to see it")
    return None


#: shapes whose material a picture does not show: a metal cube's flat faces reflect one even
#: sky each and read as a lighter rubber cube (measured: the same surface variation as rubber)
MATERIAL_UNSEEN_ON = ("cube",)


def material_unseen(scene: Scene, program: Sequence[ProgramNode]) -> str | None:
    """Why the answer depends on a material the picture does not show, or ``None``: the
    answer changes (or is lost) when the material of some cube is flipped."""
    try:
        answer = execute(scene, program)
    except InvalidEdit:
        return None
    if "material" not in attributes_read(program):
        return None
    for k, obj in enumerate(scene.objects):
        if obj.shape not in MATERIAL_UNSEEN_ON:
            continue
        flipped = scene.with_objects(tuple(replace(o, material="rubber" if o.material == "metal" else "metal")
                                           if i == k else o for i, o in enumerate(scene.objects)))
        try:
            same = execute(flipped, program) == answer
        except InvalidEdit:
            same = False
        if not same:
            return (f"the answer depends on whether object {k} (a {obj.color} {obj.shape}) is metal or rubber, which "
                    f"a {obj.shape}'s flat faces do not show")
    return None


def size_unseen(scene: Scene, program: Sequence[ProgramNode]) -> str | None:
    """Why the program reads a size the picture does not show, or ``None``: it filters,
    queries, relates or compares by size (:func:`attributes_read`) in a scene whose large
    objects a reader cannot tell from its small ones
    (:func:`~vicogym.structures.clevr.size_problem`: every large object must show at least
    1.4 times as big as every small one)."""
    if "size" not in attributes_read(program):
        return None
    problem = size_problem(scene)
    return None if problem is None else f"the question reads size, but {problem}"


def degeneracy(scene: Scene, program: Sequence[ProgramNode]) -> str | None:
    """Why CLEVR's generator would not ask this question on this scene, or ``None``: a
    relate step whose output could be the whole scene with the same answer (CLEVR's
    degeneracy test), or a count comparison of two sets one of which the wording makes a
    subset of the other ("more purple spheres than purple things")."""
    try:
        answer = execute(scene, program)
    except InvalidEdit:
        return None  # no answer: the label's own problem
    for k, node in enumerate(program):
        if node["function"] == "relate":
            variant = [dict(n) for n in program]
            variant[k] = {"function": "scene", "inputs": [], "value_inputs": []}
            try:
                same = execute(scene, variant) == answer
            except InvalidEdit:
                same = False
            if same:
                return (f"its relate step {k} ({node['value_inputs'][0]}) changes nothing: the whole scene in its "
                        f"place gives the same answer {answer_text(answer)!r}")
        if node["function"] in ("greater_than", "less_than", "equal_integer"):
            a, b = (_description(program, program[i]["inputs"][0]) for i in node["inputs"])
            if a is not None and b is not None and (a.items() <= b.items() or b.items() <= a.items()):
                return "it compares the counts of two sets its own words nest (one description contains the other)"
    return None


def _description(program: Sequence[ProgramNode], k: int) -> dict[str, str] | None:
    """The attributes a chain of filters from the whole scene describes, or ``None`` when
    node ``k`` is not such a chain."""
    described: dict[str, str] = {}
    while program[k]["function"].startswith("filter_"):
        described[program[k]["function"][len("filter_"):]] = program[k]["value_inputs"][0]
        k = program[k]["inputs"][0]
    return described if program[k]["function"] == "scene" else None


def attributes_read(nodes: Sequence[ProgramNode]) -> set[str]:
    """The object attributes a program reads: those of its filter, query, same and equal nodes."""
    read = set()
    for node in nodes:
        head, _, attribute = str(node.get("function", node.get("type", ""))).rpartition("_")
        if head in ("filter", "query", "same", "equal") and attribute in ATTRIBUTES:
            read.add(attribute)
    return read


@dataclass(frozen=True)
class Target:
    """What one sample's question is to be, decided once per sample (:func:`draw_target`)
    and held while scenes are drawn for it: the templates it may come from and, for a yes/no
    template, its answer."""

    templates: tuple[str, ...]
    answer: str | None = None


def _pool(templates: Sequence[str] | None, unasked: frozenset[str]) -> list[Template]:
    pool = [TEMPLATE_BY_ID[t] for t in templates] if templates else list(TEMPLATES)
    pool = [t for t in pool if not template_reads(t, unasked)]
    if not pool:
        raise ValueError(f"every template asked for reads {sorted(unasked)}, which these images do not show; "
                         "choose other templates")
    return pool


def draw_target(rng: np.random.Generator, templates: Sequence[str] | None = None,
                unasked: frozenset[str] = frozenset(), episode: int | None = None) -> Target:
    """One sample's :class:`Target`: a template drawn uniformly; a yes/no one is held with its
    answer, "yes" or "no" with even odds, any other stands for every template that is not
    yes/no (whose answers :func:`generate_question` draws). Held over every scene drawn for
    the sample, so that no scene on which one answer is harder to find than the other tips
    the balance: each yes/no template asks "yes" exactly as often as "no". With ``episode``
    (the sample's index in a generation run) the draw is stratified over the run
    (:func:`_stratified_target`), so a run of a few hundred rows is balanced too, not only
    on average over runs."""
    pool = _pool(templates, unasked)
    if episode is not None:
        return _stratified_target(pool, episode)
    template = pick(rng, pool)
    if template.answer == "bool":
        return Target((template.id,), pick(rng, ANSWER_SPACE["bool"]))
    return Target(tuple(t.id for t in pool if t.answer != "bool"))


def widened(target: Target, templates: Sequence[str] | None = None,
            unasked: frozenset[str] = frozenset()) -> Target:
    """``target`` with its answer held and its template free among every yes/no template:
    for a sample whose scenes keep failing to give one template's answer ("yes, they are the
    same colour" on scenes of few colours), the balance is in the answer, not the template."""
    if target.answer is None:
        return target
    return Target(tuple(t.id for t in _pool(templates, unasked) if t.answer == "bool"), target.answer)


#: the golden ratio's fractional part: episode ``e`` of a run takes the point ``e * GOLDEN mod 1``
#: (a Weyl sequence), which spreads any run's episodes evenly over the unit interval
GOLDEN = 0.6180339887498949


def _stratified_target(pool: Sequence[Template], episode: int) -> Target:
    """Episode ``episode``'s :class:`Target` in a run, as CLEVR's generator balances answers
    over its data set: the unit interval is laid out as the yes/no templates asked "yes", the
    same templates asked "no" (each template a share of 1 / len(pool), half in each), then the
    rest, and the episode takes the point ``episode * GOLDEN mod 1``. Any run of consecutive
    episodes lands in each part in proportion to its length within a few episodes, so a run's
    yes/no questions are asked "yes" as often as "no", template by template."""
    point = (episode * GOLDEN) % 1.0
    yes_no = [t for t in pool if t.answer == "bool"]
    half = 0.5 / len(pool)
    if point < 2 * half * len(yes_no):
        k = int(point / half)  # the first len(yes_no) slots ask "yes", the next ones "no"
        return Target((yes_no[k % len(yes_no)].id,), "yes" if k < len(yes_no) else "no")
    return Target(tuple(t.id for t in pool if t.answer != "bool"))


def generate_question(scene: Scene, rng: np.random.Generator, templates: Sequence[str] | None = None,
                      max_tries: int = 32, unasked: frozenset[str] = frozenset(), target: Target | None = None,
                      accept: Callable[[list[ProgramNode]], bool] | None = None) -> tuple[str, ClevrRule, str]:
    """A question with a valid, non-degenerate program and a balanced answer: the answer is
    drawn first (uniformly from the template's answer space) and instances are drawn until
    one gives it, within ``max_tries``. With ``target`` (:func:`draw_target`) the template
    comes from its templates and a yes/no answer is its answer, tried ``max_tries`` x
    :data:`INSTANCE_TRIES` times and never traded for another (``GenerationError`` when this
    scene does not give it: draw another scene for the same target). Without it, a wanted
    answer not found moves on to another template and answer, which favours whichever answer
    this scene gives more easily. ``accept(nodes)`` refuses instances on grounds of the
    caller's (what the picture shows). No program reads an attribute in ``unasked`` (one the
    images do not show), nor size where this scene's picture does not tell large from small
    (:func:`~vicogym.structures.clevr.size_problem`). Returns ``(question, rule, answer)``."""
    pool = _pool(target.templates if target is not None else templates, unasked)
    if "size" not in unasked and size_problem(scene) is not None:
        unasked = unasked | {"size"}
        pool = [t for t in pool if not template_reads(t, {"size"})]
        if not pool:
            raise GenerationError("every template asked for reads size, which this scene's picture does not show "
                                  f"({size_problem(scene)})")
    held = target is not None and target.answer is not None
    for _ in range(max_tries):
        template = pick(rng, pool)
        wanted = target.answer if held else pick(rng, ANSWER_SPACE[template.answer])
        for _ in range(INSTANCE_TRIES):
            try:
                built = template.build(scene, rng, unasked)
            except InvalidEdit:
                built = None
            if built is None or attributes_read(built[1]) & unasked:
                continue
            text, nodes = built
            answer = answer_text(execute(scene, nodes))
            if answer == wanted and degeneracy(scene, nodes) is None and material_unseen(scene, nodes) is None \
                    and (accept is None or accept(nodes)):
                return text, program_rule(nodes, text, template.id, template.family), answer
    wanted_text = f"answer {target.answer!r} of {target.templates[0]}" if held else "balanced question"
    raise GenerationError(f"no valid {wanted_text} for this scene in {max_tries} tries")


def template_reads(template: Template, attributes: Any) -> bool:
    """Whether every instance of ``template`` reads one of ``attributes`` (it asks for one, or
    compares or relates by one)."""
    return any(template.answer == f"query_{a}" or template.id.endswith(f"_{a}") for a in attributes)
