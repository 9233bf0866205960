"""Edits of the visually grounded constraint types (see
:mod:`vicogym.programs.instruct.grounded`). Their parameters come from the image's facts
(``Contract.ground``), so they draw none. The edits work sentence by sentence: satisfying
drops the sentences that contradict the constraint and appends one that meets it;
violating drops the ones that meet it and appends a contradicting one (or removes the
mentions the constraint needs)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import numpy as np

from vicogym.editors.instruct.edits import edits, without_cues
from vicogym.editors.instruct.text import append, drop_sentences, listed, without
from vicogym.programs.instruct.grounded import (
    MOODS,
    OPPOSITE,
    count_stated,
    extreme_named,
    relation_clauses,
    value_stated,
    words_of,
    wrong_adjacent,
)
from vicogym.programs.instruct.text import clauses, has, mentions, number_text, plural
from vicogym.validation import pick


def _attribute_state(sentence: str, p: Mapping[str, Any]) -> tuple[bool, bool]:
    good = bad = False
    for clause in clauses(sentence, [p["object"]]):
        if has(clause, p["object"]):
            yes = any(has(clause, w) for w in words_of([p["value"]]))
            no = any(has(clause, w) for w in words_of(p["wrong"]))
            good, bad = good or (yes and not no), bad or (no and not yes)
    return good, bad


def satisfy_attribute_describe(response, p, rng):
    return append(drop_sentences(response, lambda s: _attribute_state(s, p)[1]), f"The {p['object']} is {p['value']}.")


def violate_attribute_describe(response, p, rng):
    return append(drop_sentences(response, lambda s: _attribute_state(s, p)[0]),
                  f"The {p['object']} is {p['wrong'][0]}.")


edits("attribute_describe",
      ("What {attribute} is the {object}? Answer in a sentence that names the {object}.",
       "Tell me the {attribute} of the {object}.", "Mention the {attribute} of the {object} in your answer."),
      satisfy_attribute_describe, violate_attribute_describe)


def _relation_sentence(first: str, second: str, relation: str) -> str:
    if relation in ("left", "right"):
        return f"The {first} is to the {relation} of the {second}."
    if relation in ("above", "below"):
        return f"The {first} is {relation} the {second}."
    return f"The {first} is {relation} than the {second}."


def _relation_writer(response: str, p: Mapping[str, Any], keep_good: bool) -> str:
    relation = p["relation"] if keep_good else OPPOSITE[p["relation"]]
    drop = 1 if keep_good else 0  # satisfy drops contradicting sentences, violate the agreeing ones
    kept = drop_sentences(response, lambda s: relation_clauses(s, p["first"], p["second"], p["relation"])[drop])
    return append(kept, _relation_sentence(p["first"], p["second"], relation))


def satisfy_relation(response: str, p: Mapping[str, Any], rng: np.random.Generator) -> str:
    return _relation_writer(response, p, True)


def violate_relation(response: str, p: Mapping[str, Any], rng: np.random.Generator) -> str:
    return _relation_writer(response, p, False)


edits("size_compare", ("Say whether the {first} is larger or smaller than the {second}, naming the {first} first.",
                       "Is the {first} bigger or smaller than the {second}? Answer in one sentence that names both."),
      satisfy_relation, violate_relation)
edits("spatial_relation", ("In a sentence that names the {first} before the {second}, say whether the {first} is "
                           "{choices} relative to the {second}.",
                           "Is the {first} {choices} relative to the {second} in the image? Name both objects in your "
                           "answer."),
      satisfy_relation, violate_relation)


def satisfy_visual_include(response, p, rng):
    return append(response, f"The image shows the {listed(p['names'])}.")


def violate_visual_include(response, p, rng):
    return without(response, p["names"][0], "thing")


edits("visual_include", ("Mention these things the image shows in your answer: {names}.", "Make sure your response "
        "refers to each of these things in the image: {names}."), satisfy_visual_include, violate_visual_include)


def satisfy_visual_exclude(response, p, rng):
    for name in p["names"]:
        response = without(response, name, "object")
    return response


def violate_visual_exclude(response, p, rng):
    return append(response, f"There is no {p['names'][0]} here.")


edits("visual_exclude", ("Do not mention {names}.", "Avoid any reference to the following: {names}."),
      satisfy_visual_exclude, violate_visual_exclude)


def _count_sentence(noun: str, count: int) -> str:
    return f"There is 1 {noun}." if count == 1 else f"There are {count} {plural(noun)}."


def _states_count(sentence: str, noun: str) -> bool:
    return any(count_stated(c, noun) is not None for c in clauses(sentence, [noun]))


def satisfy_object_count(response, p, rng):
    return append(drop_sentences(response, lambda s: _states_count(s, p["noun"])),
                  _count_sentence(p["noun"], p["count"]))


def violate_object_count(response, p, rng):
    return append(drop_sentences(response, lambda s: _states_count(s, p["noun"])),
                  _count_sentence(p["noun"], p["count"] + 1))


edits("object_count",
      ("How many {noun} objects does the image show? State the number.",
       "Count the objects that are a {noun} and give the number in your answer."), satisfy_object_count,
      violate_object_count)


def satisfy_object_describe(response, p, rng):
    kept = drop_sentences(response, lambda s: bool(wrong_adjacent(s, p["group"], p["wrong"])))
    return append(kept, f"The {plural(p['group'])} are {listed(p['values'])}.")


def violate_object_describe(response, p, rng):
    return append(drop_sentences(response, lambda s: has(s, p["group"])), f"There are some {plural(p['group'])}.")


edits("object_describe",
      ("Describe every {group} in the image by its {attribute}.",
       "For each {group} in the image, mention its {attribute}."), satisfy_object_describe, violate_object_describe)


def satisfy_target_name(response, p, rng):
    return append(response, f"It is the {p['category']}.")


def violate_target_name(response, p, rng):
    return without(response, p["category"], "item" if p["category"].lower() != "item" else "thing")


edits("target_name",
      ("Name the main subject shown in the {where} part of the image.",
       "What is the large object in the {where} of the picture? Name it."), satisfy_target_name, violate_target_name)


def satisfy_ocr_content(response, p, rng):
    return append(response, f'The image reads "{p["text"]}".')


def violate_ocr_content(response, p, rng):
    text, out = " ".join(p["text"].split()), " ".join(response.split())
    if text.upper() != text:
        changed = text.upper()
    elif text.lower() != text:
        changed = text.lower()
    else:
        changed = text[:-1] + ("x" if text[-1] != "x" else "y")
    for _attempt in range(64):  # each pass changes a copy; a copy the change rebuilt gets the next pass
        if text not in out:
            return out
        out = out.replace(text, changed)
    return re.sub(r"\S", "_", out)  # unreachable in practice: blank every character


edits("ocr_content",
      ('Quote the text "{text}" exactly as the image shows it, with the same capitalisation.',
       'Include the words "{text}" from the image, copied exactly.'), satisfy_ocr_content, violate_ocr_content)


def _states_value(sentence: str, p: Mapping[str, Any]) -> bool:
    names = [p["label"]] + ([p["series"]] if p["series"] else [])
    return any(value_stated(c, p["label"], p["series"]) is not None for c in clauses(sentence, names))


def _value_sentence(p: Mapping[str, Any], value: float) -> str:
    said = number_text(value)
    return f"For {p['series']}, {p['label']} is {said}." if p["series"] else f"{p['label']} is {said}."


def satisfy_chart_value(response, p, rng):
    return append(drop_sentences(response, lambda s: _states_value(s, p)), _value_sentence(p, p["value"]))


def violate_chart_value(response, p, rng):
    wrong = p["value"] + p["tolerance"] + max(1.0, abs(p["value"]))
    return append(drop_sentences(response, lambda s: _states_value(s, p)), _value_sentence(p, wrong))


edits("chart_value",
      ("State the value of {label} in the chart ({series}), in a sentence that names {label}.",
       "What value does the chart show for {label} ({series})? Give the number next to the label."),
      satisfy_chart_value, violate_chart_value)


def _extremes(sentence: str, p: Mapping[str, Any]) -> list[str]:
    return [n for c in clauses(sentence, p["labels"])
            if (n := extreme_named(c, p["extreme"], p["labels"])) is not None]


def satisfy_chart_extreme(response, p, rng):
    kept = drop_sentences(response, lambda s: any(n != p["label"] for n in _extremes(s, p)))
    return append(kept, f"{p['label']} has the {p['extreme']} value.")


def violate_chart_extreme(response, p, rng):
    other = next(x for x in p["labels"] if x != p["label"])
    kept = drop_sentences(response, lambda s: p["label"] in _extremes(s, p))
    return append(kept, f"{other} has the {p['extreme']} value.")


edits("chart_extreme",
      ("Which row of the chart ({series}) has the {extreme} value? Name it in a sentence with the word '{extreme}'.",
       "Name the category with the {extreme} {series} value in the chart."), satisfy_chart_extreme,
      violate_chart_extreme)


def satisfy_chart_order(response, p, rng):
    return append(response, f"In descending order: {', '.join(p['labels'])}.")


def violate_chart_order(response, p, rng):
    out, at = [], 0
    for start, end, name in mentions(response, p["labels"]):
        if name == p["labels"][0]:
            out += [response[at:start], "another"]
            at = end
    text = "".join(out) + response[at:]
    return append(text, f"In descending order: {', '.join(reversed(p['labels']))}.")


edits("chart_order",
      ("List the chart's categories ({series}) from the largest value to the smallest, in one sentence.",
       "In a single sentence, rank every category of the chart ({series}) in descending order of value."),
      satisfy_chart_order, violate_chart_order)


def satisfy_scene_mood(response: str, p: Mapping[str, Any], rng: np.random.Generator) -> str:
    return append(response, f"The scene feels {p['tone'] if p['tone'] != 'any' else 'calm'}; its mood is quiet.")


edits("scene_mood", ("Describe the mood of the image (tone: {tone}).",
                     "What atmosphere does the image convey? Describe it ({tone})."),
      satisfy_scene_mood, without_cues("scene_mood"), draw=lambda rng: {"tone": pick(rng, MOODS)})
