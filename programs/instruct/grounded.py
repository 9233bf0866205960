"""Visually grounded constraint types: attributes, sizes, mentions and absences of the
image's objects, their spatial relations, counts and descriptions, the main subject,
quoted text, and a chart's values, extremes and order.

Grounded types read an image's facts (see :data:`~vicogym.programs.instruct.contracts.FACT_KINDS`):
``ground`` puts the expected values into the parameters, so ``verify`` needs only the
response and the parameters (a stored constraint is checkable without the image) and
``check_ground`` re-derives them from the facts for audits. Relational checks ("the cube
is left of the sphere", "3 red cubes") read one clause at a time, so a sentence that
states two facts ("A is 12 and B is 30") is judged fact by fact.
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Mapping
from typing import Any

from vicogym.programs.instruct.contracts import Verdict, constraint, judged, only_on
from vicogym.programs.instruct.text import (
    CLAUSE,
    TEXT,
    WORD_LIST,
    clauses,
    collapse_spaces,
    coverage,
    covered,
    has,
    mentions,
    name_pattern,
    number_text,
    numbers,
    plural,
    sentences,
)
from vicogym.validation import pick

#: attribute vocabularies (CLEVR's values plus common colours) and the synonyms a reader uses
VALUES = {"color": ("gray", "red", "blue", "green", "brown", "purple", "cyan", "yellow", "black", "white", "orange",
                    "pink"), "material": ("rubber", "metal"), "size": ("large", "small")}
SYNONYMS = {"gray": ("grey",), "large": ("big",), "small": ("tiny",), "metal": ("metallic", "shiny"),
            "rubber": ("matte",)}


#: CLEVR's shapes: what a complete scene graph can say is absent
SHAPES = ("cube", "sphere", "cylinder")
REFERENT_ATTRS = ("size", "color", "material")  # adjective order in a referent: "large red metal cube"
RELATION_WORDS = {"left": ("left",), "right": ("right",), "above": ("above", "over", "higher"),
                  "below": ("below", "under", "beneath", "lower"), "larger": ("larger", "bigger", "greater"),
                  "smaller": ("smaller", "tinier"),
                  "largest": ("largest", "highest", "biggest", "greatest", "maximum", "most", "top"),
                  "smallest": ("smallest", "lowest", "least", "minimum", "fewest", "bottom")}
OPPOSITE = {"left": "right", "right": "left", "above": "below", "below": "above", "larger": "smaller",
            "smaller": "larger", "largest": "smallest", "smallest": "largest"}
POSITIONS = ("top left", "top", "top right", "left", "centre", "right", "bottom left", "bottom", "bottom right")


#: normalised distance two centres must be apart for left/right/above/below to be clear
SPATIAL_MARGIN = 0.08


def words_of(values: list[str] | tuple[str, ...]) -> list[str]:
    return [w for v in values for w in (v, *SYNONYMS.get(v, ()))]


def _objects(facts: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return [o for o in facts.get("objects") or () if isinstance(o.get("category"), str) and o["category"].strip()
            and not re.search(r"[.!?;]", o["category"])]


def _complete(facts: Mapping[str, Any]) -> bool:
    """Whether the facts list every object (a scene graph): only then can absence and counts be grounded."""
    return facts.get("source") == "clevr"


def _attrs(obj: Mapping[str, Any]) -> list[str]:
    return [a for a in REFERENT_ATTRS if isinstance(obj.get(a), str) and obj[a] in VALUES[a]]


def _phrase(obj: Mapping[str, Any], attrs: tuple[str, ...]) -> str:
    return " ".join([obj[a] for a in REFERENT_ATTRS if a in attrs] + [obj["category"]])


def denoted(objects: list[Mapping[str, Any]], phrase: str) -> list[int]:
    """The objects ``phrase`` ("red cube", "cube") describes: its category, and attribute values they have."""
    out = []
    for i, o in enumerate(objects):
        attrs = _attrs(o)
        if any(_phrase(o, sub).lower() == " ".join(phrase.lower().split())
               for k in range(len(attrs) + 1) for sub in itertools.combinations(attrs, k)):
            out.append(i)
    return out


def referent(objects: list[Mapping[str, Any]], i: int, exclude: tuple[str, ...] = ()) -> str | None:
    """The shortest phrase that denotes object ``i`` alone, not using the ``exclude``d attributes."""
    attrs = [a for a in _attrs(objects[i]) if a not in exclude]
    for k in range(len(attrs) + 1):
        for sub in itertools.combinations(attrs, k):
            phrase = _phrase(objects[i], sub)
            if denoted(objects, phrase) == [i] and not any(a in exclude for a in REFERENT_ATTRS if a in sub):
                return phrase
    return None


def _wordless(name: str | None) -> bool:
    """A referent free of relation words ("top", "left"), so they are never read inside it."""
    return bool(name) and not any(has(name, w) for ws in RELATION_WORDS.values() for w in ws)


def _apart(names: list[str]) -> bool:
    """No name is found inside another (so mentions of one never count as the other)."""
    return all(a == b or not has(b, a) for a in names for b in names) and len(set(names)) == len(names)


def relation_clauses(response: str, first: str, second: str, relation: str) -> tuple[bool, bool]:
    """(a clause names first then second with the relation's word and not its opposite's,
    a clause names them so with the opposite's word and not the relation's)."""
    good = bad = False
    right, wrong = RELATION_WORDS[relation], RELATION_WORDS[OPPOSITE[relation]]
    for clause in clauses(response, [first, second]):
        found = mentions(clause, [first, second])
        order = [n for _, _, n in found]
        if first not in order or second not in order or order.index(first) > order.index(second):
            continue
        yes, no = any(has(clause, w) for w in right), any(has(clause, w) for w in wrong)
        good, bad = good or (yes and not no), bad or (no and not yes)
    return good, bad


def _verdict_good_bad(good: bool, bad: bool, expected: str) -> Verdict:
    actual = "a contradicting statement" if bad else "stated" if good else "not stated"
    return Verdict(good and not bad, expected, actual)


def _ground_attribute(facts: Mapping[str, Any], rng: Any) -> dict[str, Any] | None:
    objects = _objects(facts)
    options = [(i, a, ref) for i, o in enumerate(objects) for a in _attrs(o)
               if (ref := referent(objects, i, exclude=(a,))) is not None]
    if not options:
        return None
    i, attribute, ref = pick(rng, options)
    value = objects[i][attribute]
    return {"object": ref, "attribute": attribute, "value": value,
            "wrong": [v for v in VALUES[attribute] if v != value]}


def _check_attribute(facts: Mapping[str, Any], params: Mapping[str, Any]) -> str | None:
    objects = _objects(facts)
    hits = denoted(objects, params["object"])
    if len(hits) != 1:
        return f"expected {params['object']!r} to denote one object, got {len(hits)}"
    actual = objects[hits[0]].get(params["attribute"])
    if actual != params["value"]:
        return f"expected {params['attribute']} {actual!r} for the {params['object']}, got {params['value']!r}"
    if sorted(params["wrong"]) != sorted(v for v in VALUES[params["attribute"]] if v != actual):
        return f"expected the wrong values to be the other {params['attribute']}s, got {params['wrong']}"
    return None


@constraint("attribute_describe", "State the colour, material or size of a named object of the image (a clause naming "
            "the object with its value and none naming it with another value).", "attribute",
            {"object": TEXT, "attribute": {"type": "string", "enum": list(VALUES)}, "value": TEXT, "wrong": WORD_LIST},
            [("The red cube is metal.",
              {"object": "red cube", "attribute": "material", "value": "metal", "wrong": ["rubber"]}, True),
             ("The red cube is rubber.",
              {"object": "red cube", "attribute": "material", "value": "metal", "wrong": ["rubber"]}, False),
             ("A red cube.", {"object": "red cube", "attribute": "material", "value": "metal", "wrong": ["rubber"]},
              False)], needs=("objects",), ground=_ground_attribute, check_ground=_check_attribute)
def _attribute_describe(response: str, object: str, attribute: str, value: str, wrong: list[str]) -> Verdict:
    good = bad = False
    for clause in clauses(response, [object]):
        if has(clause, object):
            yes, no = any(has(clause, w) for w in words_of([value])), any(has(clause, w) for w in words_of(wrong))
            good, bad = good or (yes and not no), bad or (no and not yes)
    return _verdict_good_bad(good, bad, f"the {object}'s {attribute}: {value}")


def _ground_size(facts: Mapping[str, Any], rng: Any) -> dict[str, Any] | None:
    objects = _objects(facts)
    refs = [referent(objects, i, ("size",)) for i in range(len(objects))]
    options = []
    for i, j in itertools.permutations(range(len(objects)), 2):
        a, b = objects[i].get("size"), objects[j].get("size")
        if a in VALUES["size"] and b in VALUES["size"] and a != b:
            first, second = refs[i], refs[j]
            if _wordless(first) and _wordless(second) and _apart([first, second]):
                options.append({"first": first, "second": second, "relation": "larger" if a == "large" else "smaller"})
    return pick(rng, options) if options else None


def _check_pair(facts: Mapping[str, Any], params: Mapping[str, Any]) -> tuple[Any, Any] | str:
    objects = _objects(facts)
    hits = [denoted(objects, params[k]) for k in ("first", "second")]
    if [len(h) for h in hits] != [1, 1] or hits[0] == hits[1]:
        return f"expected {params['first']!r} and {params['second']!r} to denote one object each, got {hits}"
    return objects[hits[0][0]], objects[hits[1][0]]


def _check_size(facts: Mapping[str, Any], params: Mapping[str, Any]) -> str | None:
    pair = _check_pair(facts, params)
    if isinstance(pair, str):
        return pair
    sizes = [o.get("size") for o in pair]
    want = "larger" if sizes == ["large", "small"] else "smaller" if sizes == ["small", "large"] else None
    return (
        None
        if want == params["relation"]
        else f"expected relation {want!r} (sizes {sizes}), got {params['relation']!r}"
    )


@constraint("size_compare", "Say whether one named object is larger or smaller than another (a clause naming the "
            "first, then the second, with the right comparative and not its opposite).", "attribute",
            {"first": TEXT, "second": TEXT, "relation": {"type": "string", "enum": ["larger", "smaller"]}},
            [("The cube is bigger than the sphere.", {"first": "cube", "second": "sphere", "relation": "larger"}, True),
             ("The cube is smaller than the sphere.", {"first": "cube", "second": "sphere", "relation": "larger"},
              False),
             ("The sphere is smaller than the cube.", {"first": "cube", "second": "sphere", "relation": "larger"},
              False)], needs=("objects",), ground=_ground_size, check_ground=_check_size)
def _size_compare(response: str, first: str, second: str, relation: str) -> Verdict:
    return _verdict_good_bad(*relation_clauses(response, first, second, relation),
                             f"the {first} {relation} than the {second}")


def _ground_include(facts: Mapping[str, Any], rng: Any) -> dict[str, Any] | None:
    objects = _objects(facts)
    by_category: dict[str, list[int]] = {}
    for i, o in enumerate(objects):
        by_category.setdefault(o["category"].lower(), []).append(i)
    if not by_category:
        return None
    cats = [c for c in sorted(by_category)]
    chosen = [cats[k] for k in rng.permutation(len(cats))[: int(rng.integers(1, min(3, len(cats)) + 1))]]
    names = []
    for cat in chosen:
        o = objects[pick(rng, by_category[cat])]
        attrs = _attrs(o)
        sub = tuple(a for a in attrs if rng.random() < 0.4)
        names.append(_phrase(o, sub))
    return {"names": names} if _apart(names) else None


def _check_include(facts: Mapping[str, Any], params: Mapping[str, Any]) -> str | None:
    absent = [n for n in params["names"] if not denoted(_objects(facts), n)]
    return f"expected only names of objects in the image, got absent {absent}" if absent else None


@constraint("visual_include", "Mention each of the named objects that the image shows (whole words, any case, "
            "singular or plural).", "attribute", {"names": WORD_LIST},
            [("A red cube beside two spheres.", {"names": ["red cube", "sphere"]}, True),
             ("A red cube.", {"names": ["red cube", "sphere"]}, False)],
            needs=("objects",), ground=_ground_include, check_ground=_check_include)
def _visual_include(response: str, names: list[str]) -> Verdict:
    missing = [n for n in names if not has(response, n)]
    return Verdict(not missing, f"all of {names}", f"missing {missing}" if missing else "all mentioned")


def _ground_exclude(facts: Mapping[str, Any], rng: Any) -> dict[str, Any] | None:
    objects = _objects(facts)
    if not _complete(facts) or not objects:
        return None
    categories = sorted({o["category"].lower() for o in objects} | set(SHAPES))
    candidates = [c for c in categories if not denoted(objects, c)]
    candidates += [f"{v} {c}" for c in categories for v in VALUES["color"][:8] if not denoted(objects, f"{v} {c}")]
    chosen: list[str] = []
    want = int(rng.integers(1, 3))
    for k in rng.permutation(len(candidates)):
        if len(chosen) < want and _apart(chosen + [candidates[k]]):
            chosen.append(candidates[k])
    return {"names": chosen} if chosen else None


def _check_exclude(facts: Mapping[str, Any], params: Mapping[str, Any]) -> str | None:
    if not _complete(facts):
        return f"expected facts listing every object (source 'clevr'), got source {facts.get('source')!r}"
    present = [n for n in params["names"] if denoted(_objects(facts), n)]
    return f"expected only things the image lacks, got present {present}" if present else None


@constraint(
    "visual_exclude",
    "Do not mention the named things, which the image does not show (whole words, any case, singular or plural).",
    "attribute",
    {"names": WORD_LIST},
    [
        ("A red cube.", {"names": ["green sphere"]}, True),
        ("No green spheres here.", {"names": ["green sphere"]}, False),
    ],
    needs=("objects",),
    ground=_ground_exclude,
    check_ground=_check_exclude,
)
def _visual_exclude(response: str, names: list[str]) -> Verdict:
    found = [n for n in names if has(response, n)]
    return Verdict(not found, f"none of {names}", f"found {found}" if found else "none mentioned")


#: the moods a scene_mood constraint may ask for ("any": whichever the image conveys)
MOODS = ("calm", "tense", "cheerful", "neutral", "any")
judged("scene_mood", "Describe the overall mood or atmosphere the image conveys.", "attribute",
       {"tone": {"type": "string", "enum": list(MOODS)}},
       "The response describes the mood or atmosphere the image conveys (as {tone} where the tone is not 'any'), "
       "grounded in what the image shows.",
       ("mood", "atmosphere", "feels", "feel", "calm", "tense", "cheerful", "serene", "gloomy"),
       [("The scene feels calm and orderly.", {"tone": "calm"}, True),
        ("There are three cubes.", {"tone": "calm"}, False)], fit=only_on("natural", "model"))  # no bar chart's mood


def _ground_spatial(facts: Mapping[str, Any], rng: Any) -> dict[str, Any] | None:
    objects = _objects(facts)
    refs = [referent(objects, i) for i in range(len(objects))]
    options = []
    for i, j in itertools.permutations(range(len(objects)), 2):
        if not (_wordless(refs[i]) and _wordless(refs[j]) and _apart([refs[i], refs[j]])):
            continue
        for horizontal in (True, False) if facts.get("source") != "clevr" else (True,):
            relation = spatial_relation_of(objects[i], objects[j], horizontal)
            if relation is not None:
                options.append({"first": refs[i], "second": refs[j], "relation": relation,
                                "choices": "left or right" if horizontal else "above or below"})
    return pick(rng, options) if options else None


def spatial_relation_of(a: Mapping[str, Any], b: Mapping[str, Any], horizontal: bool) -> str | None:
    """Where ``a`` is relative to ``b`` along one image axis, or ``None`` when a reader
    could not say: centres closer than ``SPATIAL_MARGIN``, or (where the facts have boxes)
    boxes that overlap along the axis -- a hat on a head, a spoon on a saucer. Above and
    below are image directions; on a CLEVR table they would mean behind and in front, so
    CLEVR facts are asked only left and right."""
    axis = "x" if horizontal else "y"
    d = float(a[axis]) - float(b[axis])
    if abs(d) < SPATIAL_MARGIN:
        return None
    if "box" in a and "box" in b:
        lo, hi = (0, 2) if horizontal else (1, 3)
        first, second = (a, b) if d < 0 else (b, a)
        if first["box"][hi] > second["box"][lo]:  # they overlap along the axis
            return None
    if horizontal:
        return "left" if d < 0 else "right"
    return "above" if d < 0 else "below"  # y runs down the image


def _check_spatial(facts: Mapping[str, Any], params: Mapping[str, Any]) -> str | None:
    pair = _check_pair(facts, params)
    if isinstance(pair, str):
        return pair
    a, b = pair
    horizontal = params["relation"] in ("left", "right")
    if not horizontal and facts.get("source") == "clevr":
        return "above and below are not asked of CLEVR scenes (on the table they mean behind and in front)"
    want = spatial_relation_of(a, b, horizontal)
    if want is None:
        return f"expected {params['first']!r} and {params['second']!r} apart along the axis, got them overlapping"
    if params["choices"] != ("left or right" if horizontal else "above or below"):
        return f"expected choices matching {params['relation']!r}, got {params['choices']!r}"
    return None if want == params["relation"] else f"expected relation {want!r}, got {params['relation']!r}"


@constraint("spatial_relation", "Say where one named object is relative to another in the image (left / right / "
            "above / below): a clause naming the first, then the second, with the right word and not its opposite.",
            "spatial",
            {"first": TEXT, "second": TEXT, "relation": {"type": "string", "enum": ["left", "right", "above", "below"]},
             "choices": {"type": "string", "enum": ["left or right", "above or below"]}},
            [("The cube is to the left of the sphere.",
              {"first": "cube", "second": "sphere", "relation": "left", "choices": "left or right"}, True),
             ("The cube is to the right of the sphere.",
              {"first": "cube", "second": "sphere", "relation": "left", "choices": "left or right"}, False),
             ("The cube is left of the sphere and right of it too.",
              {"first": "cube", "second": "sphere", "relation": "left", "choices": "left or right"}, True)],
            needs=("objects",), ground=_ground_spatial, check_ground=_check_spatial)
def _spatial_relation(response: str, first: str, second: str, relation: str, choices: str) -> Verdict:
    return _verdict_good_bad(*relation_clauses(response, first, second, relation),
                             f"the {first} {relation} of the {second}")


def _groups(objects: list[Mapping[str, Any]]) -> dict[str, int]:
    out: dict[str, int] = {}
    for o in objects:
        for sub in [()] + [(a,) for a in _attrs(o)]:
            phrase = _phrase(o, sub)
            out[phrase] = len(denoted(objects, phrase))
    return out


def _ground_count(facts: Mapping[str, Any], rng: Any) -> dict[str, Any] | None:
    groups = _groups(_objects(facts))
    if not _complete(facts) or not groups:
        return None
    noun = pick(rng, sorted(groups))
    return {"noun": noun, "count": groups[noun]}


def _check_count(facts: Mapping[str, Any], params: Mapping[str, Any]) -> str | None:
    if not _complete(facts):
        return f"expected facts listing every object (source 'clevr'), got source {facts.get('source')!r}"
    actual = len(denoted(_objects(facts), params["noun"]))
    return (
        None if actual == params["count"] else f"expected count {actual} of {params['noun']!r}, got {params['count']}"
    )


def count_stated(clause: str, noun: str) -> float | None:
    """The number a clause gives for ``noun``: the last before its first mention, else the first after."""
    spans = mentions(clause, [noun])
    if not spans:
        return None
    taken = coverage(clause, spans)
    found = [n for n in numbers(clause) if not covered(taken, n[0], n[1])]
    before = [v for s, _, v in found if s < spans[0][0]]
    after = [v for s, _, v in found if s >= spans[0][1]]
    return before[-1] if before else after[0] if after else None


@constraint("object_count", "State how many objects of a group the image shows (digits or words; the number next "
            "to the group's name in each clause that names it must be right).", "counting",
            {"noun": TEXT, "count": {"type": "integer", "minimum": 1, "maximum": 1000}},
            [("I see three red cubes.", {"noun": "red cube", "count": 3}, True),
             ("There are 3 red cubes and 2 spheres.", {"noun": "red cube", "count": 3}, True),
             ("There are 4 red cubes.", {"noun": "red cube", "count": 3}, False),
             ("Red cubes are here.", {"noun": "red cube", "count": 3}, False)],
            needs=("objects",), ground=_ground_count, check_ground=_check_count)
def _object_count(response: str, noun: str, count: int) -> Verdict:
    stated = [v for c in clauses(response, [noun]) if (v := count_stated(c, noun)) is not None]
    ok = bool(stated) and all(v == count for v in stated)
    return Verdict(ok, f"{count} {plural(noun)}", ", ".join(number_text(v) for v in stated) or "no count stated")


def _ground_describe(facts: Mapping[str, Any], rng: Any) -> dict[str, Any] | None:
    objects = _objects(facts)
    if not _complete(facts):
        return None
    options = []
    for cat in sorted({o["category"] for o in objects}):
        group = [o for o in objects if o["category"] == cat]
        for attribute in REFERENT_ATTRS:
            values = sorted({o.get(attribute) for o in group})
            if len(group) >= 2 and all(v in VALUES[attribute] for v in values):
                options.append({"group": cat, "attribute": attribute, "values": values,
                                "wrong": [v for v in VALUES[attribute] if v not in values]})
    return pick(rng, options) if options else None


def _check_describe(facts: Mapping[str, Any], params: Mapping[str, Any]) -> str | None:
    if not _complete(facts):
        return f"expected facts listing every object (source 'clevr'), got source {facts.get('source')!r}"
    group = [o for o in _objects(facts) if o["category"] == params["group"]]
    values = sorted({o.get(params["attribute"]) for o in group})
    if len(group) < 2 or values != sorted(params["values"]):
        return f"expected {params['attribute']}s {values} of {len(group)} {params['group']}s, got {params['values']}"
    wrong = [v for v in VALUES[params["attribute"]] if v not in values]
    return None if sorted(params["wrong"]) == sorted(wrong) else f"expected wrong values {wrong}, got {params['wrong']}"


def wrong_adjacent(text: str, group: str, wrong: list[str]) -> list[str]:
    """The wrong values written right before the group's name ("a blue cube", "a blue metal cube")."""
    noun = r"\s+".join(re.escape(p) for p in group.split())
    return [
        w
        for w in words_of(wrong)
        if re.search(r"(?<!\w)" + re.escape(w) + r"\s+(?:\w+\s+){0,2}?" + noun + r"(?:e?s)?(?!\w)", text, re.IGNORECASE)
    ]


@constraint("object_describe", "Mention every object of a group with its attribute: each of the group's values in a "
            "sentence naming the group, and no other value written before the group's name.", "object_grounded",
            {"group": TEXT, "attribute": {"type": "string", "enum": list(VALUES)}, "values": WORD_LIST,
             "wrong": {"type": "array", "items": TEXT}},
            [("The cubes are red and blue.",
              {"group": "cube", "attribute": "color", "values": ["blue", "red"], "wrong": ["green"]}, True),
             ("The cubes are red.",
              {"group": "cube", "attribute": "color", "values": ["blue", "red"], "wrong": ["green"]}, False),
             ("A red cube, a blue cube and a green cube.",
              {"group": "cube", "attribute": "color", "values": ["blue", "red"], "wrong": ["green"]}, False)],
            needs=("objects",), ground=_ground_describe, check_ground=_check_describe)
def _object_describe(response: str, group: str, attribute: str, values: list[str], wrong: list[str]) -> Verdict:
    named = [s for s in sentences(response) if has(s, group)]
    missing = [v for v in values if not any(has(s, w) for s in named for w in words_of([v]))]
    extra = wrong_adjacent(response, group, wrong)
    actual = f"missing {missing}" if missing else f"wrong {attribute} {extra}" if extra else "all described"
    return Verdict(not missing and not extra, f"the {plural(group)}' {attribute}s {values}", actual)


#: the share of the image a protected target's box must cover to be the subject a reader
#: names for its part of the picture (an eye in a face is not what "the centre" shows)
SUBJECT_AREA = 0.15


def _subjects(facts: Mapping[str, Any], protected_only: bool = True) -> list[dict[str, Any]]:
    return [o for o in _objects(facts) if (o.get("protected") or not protected_only) and "box" in o
            and (o["box"][2] - o["box"][0]) * (o["box"][3] - o["box"][1]) >= SUBJECT_AREA]


def _unique_subjects(facts: Mapping[str, Any]) -> list[tuple[dict[str, Any], str]]:
    """The protected subjects, each with its cell, that no other large object of the picture
    (protected or not) shares a cell with: "the main subject in the centre" must be the one
    a reader sees there, not the one an annotation happens to list."""
    every = _subjects(facts, protected_only=False)
    cells = [position(float(o["x"]), float(o["y"])) for o in every]
    return [(o, cell) for o, cell in zip(every, cells) if o.get("protected") and cells.count(cell) == 1
            and _dominates(o, [p for p in every if p is not o], cell)]


def _dominates(subject: Mapping[str, Any], others: list[Mapping[str, Any]], cell: str) -> bool:
    """Whether ``subject`` covers at least twice as much of its grid cell as any other large
    object does (an equally large helmet beside the suit makes "the main subject" a guess)."""
    k = POSITIONS.index(cell)
    x0, y0 = (k % 3) / 3, (k // 3) / 3

    def covered(o: Mapping[str, Any]) -> float:
        bx0, by0, bx1, by1 = (float(v) for v in o["box"])
        return max(0.0, min(bx1, x0 + 1 / 3) - max(bx0, x0)) * max(0.0, min(by1, y0 + 1 / 3) - max(by0, y0))

    mine = covered(subject)
    return all(covered(o) * 2 <= mine for o in others)


def _ground_target(facts: Mapping[str, Any], rng: Any) -> dict[str, Any] | None:
    options = [{"category": o["category"], "where": cell} for o, cell in _unique_subjects(facts)]
    return pick(rng, options) if options else None


def position(x: float, y: float) -> str:
    """The cell of a 3 x 3 grid a normalised point lies in ("top left" ... "bottom right")."""
    return POSITIONS[min(2, max(0, int(y * 3))) * 3 + min(2, max(0, int(x * 3)))]


def _check_target(facts: Mapping[str, Any], params: Mapping[str, Any]) -> str | None:
    every = _subjects(facts, protected_only=False)
    hits = [o for o in every if position(float(o["x"]), float(o["y"])) == params["where"]]
    if len(hits) != 1 or not hits[0].get("protected"):
        return f"expected one large object, a protected target, at the {params['where']}, got {len(hits)}"
    if not _dominates(hits[0], [o for o in every if o is not hits[0]], params["where"]):
        return f"another large object covers as much of the {params['where']} as the {hits[0]['category']}"
    return None if hits[0]["category"] == params["category"] else \
        f"expected category {hits[0]['category']!r}, got {params['category']!r}"


@constraint("target_name", "Name the main subject in a given part of the image: a protected target covering at least "
            "15% of it (its category, whole words, any case).",
            "object_grounded", {"category": TEXT, "where": {"type": "string", "enum": list(POSITIONS)}},
            [("It is the helmet.", {"category": "helmet", "where": "top left"}, True),
             ("It is a hat.", {"category": "helmet", "where": "top left"}, False)],
            needs=("objects",), ground=_ground_target, check_ground=_check_target)
def _target_name(response: str, category: str, where: str) -> Verdict:
    return Verdict(has(response, category), f"names the {category}",
                   "named" if has(response, category) else "not named")


def _ground_ocr(facts: Mapping[str, Any], rng: Any) -> dict[str, Any] | None:
    texts = sorted({collapse_spaces(t) for t in facts.get("texts") or () if 3 <= len(collapse_spaces(t)) <= 80
                    and sum(c.isalpha() for c in str(t)) >= 2})
    return {"text": pick(rng, texts)} if texts else None


def _check_ocr(facts: Mapping[str, Any], params: Mapping[str, Any]) -> str | None:
    texts = {collapse_spaces(t) for t in facts.get("texts") or ()}
    return (
        None
        if collapse_spaces(params["text"]) in texts
        else f"expected a text drawn in the image, got {params['text']!r}"
    )


@constraint("ocr_content", "Quote a text drawn in the image exactly (same characters and case; spacing may differ).",
            "ocr_grounded", {"text": TEXT},
            [('The title reads "Sales by Region".', {"text": "Sales by Region"}, True),
             ("The title reads sales by region.", {"text": "Sales by Region"}, False)],
            needs=("texts",), ground=_ground_ocr, check_ground=_check_ocr)
def _ocr_content(response: str, text: str) -> Verdict:
    ok = collapse_spaces(text) in collapse_spaces(response)
    return Verdict(ok, f"quotes {text!r}", "quoted" if ok else "not quoted exactly")


def _series_rows(facts: Mapping[str, Any]) -> dict[str, list[Mapping[str, Any]]]:
    """Numeric rows by series, only series whose labels are distinct, sentence-safe and apart."""
    out: dict[str, list[Mapping[str, Any]]] = {}
    for row in facts.get("rows") or ():
        value = row.get("value")
        if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
            out.setdefault(str(row.get("series") or ""), []).append(row)
    return {
        s: rows
        for s, rows in out.items()
        if _apart([str(r["label"]) for r in rows])
        and all(
            str(r["label"]).strip() and not re.search(r"[.!?;]", str(r["label"])) and not CLAUSE.search(str(r["label"]))
            for r in rows
        )
    }


def decimals_of(value: float) -> int:
    for d in range(7):
        if abs(round(value, d) - value) <= 1e-9 * max(1.0, abs(value)):
            return d
    return 6


def _tolerance(row: Mapping[str, Any]) -> float:
    """How close a stated value must be: the row's own tolerance (how precisely the chart shows
    it), else one unit of its last decimal place."""
    given = row.get("tolerance")
    if isinstance(given, (int, float)) and not isinstance(given, bool) and given >= 0:
        return float(given)
    return 10.0 ** -int(row.get("decimals", decimals_of(float(row["value"]))))


def _ground_value(facts: Mapping[str, Any], rng: Any) -> dict[str, Any] | None:
    options = [(s, r) for s, rows in _series_rows(facts).items() for r in rows
               if not re.search(r"[.!?;]", s) and (not s or _apart([s, str(r["label"])]))]
    if not options:
        return None
    series, row = pick(rng, options)
    return {"label": str(row["label"]), "series": series, "value": float(row["value"]), "tolerance": _tolerance(row)}


def _check_value(facts: Mapping[str, Any], params: Mapping[str, Any]) -> str | None:
    rows = [r for r in _series_rows(facts).get(params["series"], []) if str(r["label"]) == params["label"]]
    if len(rows) != 1:
        return f"expected one row {params['label']!r} in series {params['series']!r}, got {len(rows)}"
    if abs(float(rows[0]["value"]) - params["value"]) > 1e-9 or abs(_tolerance(rows[0]) - params["tolerance"]) > 1e-9:
        return (f"expected value {rows[0]['value']} within {_tolerance(rows[0])}, "
                f"got {params['value']} within {params['tolerance']}")
    return None


def value_stated(clause: str, label: str, series: str = "") -> float | None:
    """The number a clause gives for ``label``: the first after its mention, else the last before
    (numbers inside the label or the series name do not count)."""
    spans = mentions(clause, [label] + ([series] if series else []))
    own = [s for s in spans if s[2] == label]
    if not own:
        return None
    taken = coverage(clause, spans)
    found = [n for n in numbers(clause) if not covered(taken, n[0], n[1])]
    after = [v for s, _, v in found if s >= own[0][1]]
    before = [v for s, _, v in found if s < own[0][0]]
    return after[0] if after else before[-1] if before else None


@constraint("chart_value", "State the value of a chart's row (within the chart's precision): the number next to "
            "the row's label in each clause that names it.", "ocr_grounded",
            {"label": TEXT, "series": {"type": "string"}, "value": {"type": "number"},
             "tolerance": {"type": "number", "minimum": 0}},
            [("Asia is 42.1 and Europe is 30.", {"label": "Asia", "series": "", "value": 42.1, "tolerance": 0.1}, True),
             ("For 2019, Q1 is 40.", {"label": "Q1", "series": "2019", "value": 40.0, "tolerance": 1.0}, True),
             ("Asia is 45.", {"label": "Asia", "series": "", "value": 42.1, "tolerance": 0.1}, False),
             ("Europe is 42.1.", {"label": "Asia", "series": "", "value": 42.1, "tolerance": 0.1}, False)],
            needs=("rows",), ground=_ground_value, check_ground=_check_value)
def _chart_value(response: str, label: str, series: str, value: float, tolerance: float) -> Verdict:
    names = [label] + ([series] if series else [])
    stated = [v for c in clauses(response, names) if (v := value_stated(c, label, series)) is not None]
    ok = bool(stated) and all(abs(v - value) <= tolerance + 1e-9 for v in stated)
    return Verdict(ok, f"{label}: {number_text(value)} (within {number_text(tolerance)})",
                   ", ".join(number_text(v) for v in stated) or "no value stated")


def _ground_extreme(facts: Mapping[str, Any], rng: Any) -> dict[str, Any] | None:
    options = []
    for series, rows in _series_rows(facts).items():
        values = sorted(float(r["value"]) for r in rows)
        labels = [str(r["label"]) for r in rows]
        if len(rows) < 2 or any(has(w, label) or has(label, w) for label in labels for ws in RELATION_WORDS.values()
                                for w in ws):
            continue
        for extreme, target, runner_up in (("largest", values[-1], values[-2]), ("smallest", values[0], values[1])):
            hits = [str(r["label"]) for r in rows if float(r["value"]) == target]
            if len(hits) == 1 and readably_apart(rows, target, runner_up):
                options.append({"series": series, "extreme": extreme, "label": hits[0], "labels": labels})
    return pick(rng, options) if options else None


def _check_extreme(facts: Mapping[str, Any], params: Mapping[str, Any]) -> str | None:
    rows = _series_rows(facts).get(params["series"], [])
    if sorted(str(r["label"]) for r in rows) != sorted(params["labels"]):
        return f"expected the labels of series {params['series']!r}, got {params['labels']}"
    pick = max if params["extreme"] == "largest" else min
    target = pick(float(r["value"]) for r in rows)
    hits = [str(r["label"]) for r in rows if float(r["value"]) == target]
    return None if hits == [params["label"]] else f"expected the {params['extreme']} {hits}, got {params['label']!r}"


def extreme_named(clause: str, extreme: str, labels: list[str]) -> str | None:
    """The label a clause calls the extreme: the nearest one before the extreme's word, else after."""
    words_at = [m.start() for w in RELATION_WORDS[extreme] for m in name_pattern(w).finditer(clause)]
    spans = mentions(clause, labels)
    if not words_at or not spans:
        return None
    at = min(words_at)
    before = [s for s in spans if s[1] <= at]
    after = [s for s in spans if s[0] > at]
    return before[-1][2] if before else after[0][2] if after else None


@constraint("chart_extreme", "Name the chart's row with the largest (or smallest) value: the label nearest the "
            "extreme's word (largest / highest / ...) in each clause using it.", "attribute",
            {"series": {"type": "string"}, "extreme": {"type": "string", "enum": ["largest", "smallest"]},
             "label": TEXT, "labels": WORD_LIST},
            [("Asia is the largest, Europe the smallest.",
              {"series": "", "extreme": "largest", "label": "Asia", "labels": ["Asia", "Europe"]}, True),
             ("The highest value is in Europe.",
              {"series": "", "extreme": "largest", "label": "Asia", "labels": ["Asia", "Europe"]}, False),
             ("Asia and Europe.", {"series": "", "extreme": "largest", "label": "Asia", "labels": ["Asia", "Europe"]},
              False)], needs=("rows",), ground=_ground_extreme, check_ground=_check_extreme)
def _chart_extreme(response: str, series: str, extreme: str, label: str, labels: list[str]) -> Verdict:
    named = [n for c in clauses(response, labels) if (n := extreme_named(c, extreme, labels)) is not None]
    ok = bool(named) and all(n == label for n in named)
    return Verdict(ok, f"the {extreme}: {label}", ", ".join(named) or "none named")


def readably_apart(rows: list[Mapping[str, Any]], a: float, b: float) -> bool:
    """Whether a reader of the chart can tell ``a`` from ``b``: they differ by more than
    twice the rows' reading tolerance (a fifth of a tick step without data labels)."""
    tolerance = max((float(r.get("tolerance", 0.0)) for r in rows), default=0.0)
    return abs(a - b) > 2 * tolerance


def _ground_order(facts: Mapping[str, Any], rng: Any) -> dict[str, Any] | None:
    options = []
    for series, rows in _series_rows(facts).items():
        values = sorted(float(r["value"]) for r in rows)
        if 2 <= len(rows) <= 8 and all(readably_apart(rows, a, b) for a, b in zip(values, values[1:])):
            options.append({"series": series,
                            "labels": [str(r["label"]) for r in sorted(rows, key=lambda r: -float(r["value"]))]})
    return pick(rng, options) if options else None


def _check_order(facts: Mapping[str, Any], params: Mapping[str, Any]) -> str | None:
    rows = _series_rows(facts).get(params["series"], [])
    want = [str(r["label"]) for r in sorted(rows, key=lambda r: -float(r["value"]))]
    return None if want == params["labels"] else f"expected the order {want}, got {params['labels']}"


@constraint("chart_order", "List the chart's rows from the largest value to the smallest: one sentence naming every "
            "label, first mentions in descending order.", "attribute",
            {"series": {"type": "string"}, "labels": WORD_LIST},
            [("From top: Asia, Africa, Europe.", {"series": "", "labels": ["Asia", "Africa", "Europe"]}, True),
             ("Europe, Africa, Asia.", {"series": "", "labels": ["Asia", "Africa", "Europe"]}, False),
             ("Asia, Africa.", {"series": "", "labels": ["Asia", "Africa", "Europe"]}, False)],
            needs=("rows",), ground=_ground_order, check_ground=_check_order)
def _chart_order(response: str, series: str, labels: list[str]) -> Verdict:
    orders = []
    for s in sentences(response):
        order = list(dict.fromkeys(n for _, _, n in mentions(s, labels)))
        if set(order) == set(labels):
            orders.append(order)
    ok = labels in orders
    return Verdict(ok, f"in order {labels}", f"orders {orders}" if orders else "no sentence names every label")


GROUNDED = ("attribute_describe", "size_compare", "visual_include", "visual_exclude", "spatial_relation",
            "object_count", "object_describe", "target_name", "ocr_content", "chart_value", "chart_extreme",
            "chart_order")
