"""Edits of the instruction-following arm: how each constraint type is phrased in an
instruction, and local edits of a response that make it satisfy or violate a constraint.

Per constraint type (the ids of :mod:`vicogym.programs.instruct`) a :class:`Writer`
holds

- ``draw(rng) -> params``: parameters for the planner to ask (types that are not
  visually grounded; grounded ones draw theirs from the image's facts, ``Contract.ground``);
- ``phrases``: instruction templates with ``{param}`` placeholders (lists are joined
  with commas); the template composer picks one, so instructions vary in surface form;
- ``satisfy(response, params, rng) -> str``: a local edit of any response that makes it
  satisfy the constraint (the simulated executor's way of following the instruction, and
  reflection's "local response edit" recovery);
- ``violate(response, params, rng) -> str``: a local edit that makes it violate the
  constraint (the simulated target model's way of failing, and the property tests'
  counter-examples).

``satisfy`` and ``violate`` are tested by construction over random responses and
parameters: ``verify(satisfy(r))`` passes and ``verify(violate(r))`` fails for every ``r``.
Pure: text in, text out; randomness only from the ``rng`` passed in.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Mapping

import json
import math
import re
import unicodedata

import numpy as np

from vicogym.programs.instruct import (ARGUMENT, CONNECTORS, CONTRACTION, LANGUAGES, LIST_ITEM, NUMBER, PRONOUNS,
                                       PUNCTUATION_RULES, REGISTRY, RELATIONS, connectors_used, initial_letter, lines,
                                       paragraphs, words)

Edit = Callable[[str, Mapping[str, Any], np.random.Generator], str]


@dataclass(frozen=True)
class Writer:
    phrases: tuple[str, ...]
    satisfy: Edit
    violate: Edit
    draw: Callable[[np.random.Generator], dict[str, Any]] | None = None


WRITERS: dict[str, Writer] = {}


def writer(id: str, *phrases: str, draw: Callable[[np.random.Generator], dict[str, Any]] | None = None
           ) -> Callable[[Edit], "_Pending"]:
    """Decorate the ``satisfy`` edit of type ``id``; chain ``.violator`` for its ``violate``
    (``draw``: the parameter sampler of a type that is not grounded)::

        @writer("lowercase", "Write everything in lowercase letters.", draw=lambda rng: {})
        def _(response, params, rng): return response.lower()

        @_.violator
        def _(response, params, rng): return "Not " + response.lower()
    """
    def wrap(satisfy: Edit) -> _Pending:
        return _Pending(id, phrases, satisfy, draw)

    return wrap


class _Pending:
    def __init__(self, id: str, phrases: tuple[str, ...], satisfy: Edit, draw: Any):
        self.id, self.phrases, self.satisfy, self.draw = id, phrases, satisfy, draw

    def violator(self, violate: Edit) -> Edit:
        if self.id in WRITERS:
            raise ValueError(f"constraint {self.id} has a writer already")
        if not self.phrases:
            raise ValueError(f"constraint {self.id} needs at least one phrase")
        WRITERS[self.id] = Writer(self.phrases, self.satisfy, violate, self.draw)
        return violate


def phrase(id: str, params: Mapping[str, Any], rng: np.random.Generator) -> str:
    """One of the type's phrasings with ``params`` filled in, read as English: "1 words"
    becomes "1 word", "a enthusiastic" "an enthusiastic", "P.S.." "P.S."."""
    templates = WRITERS[id].phrases
    values = {k: ", ".join(map(str, v)) if isinstance(v, (list, tuple)) else v for k, v in params.items()}
    return english(templates[int(rng.integers(len(templates)))].format(**values))


def english(text: str) -> str:
    """The grammar fixes, outside quoted values (a keyword or a text to quote stays as it is)."""
    parts = re.split(r"(\"[^\"]*\"|'[^']*')", text)
    return "".join(part if i % 2 else _english(part) for i, part in enumerate(parts))


def _english(text: str) -> str:
    text = re.sub(r"\b(?<![.\d])1 ([a-z]+?[^s])s\b", r"1 \1", text)  # "1 paragraphs" (not "1 class", "1.5 words")
    text = re.sub(r"\b([Aa]) (?=[aeio](?!ne\b|nce\b)[a-z])", r"\1n ", text)  # "a enthusiastic"; "a one", "a user" stay
    return re.sub(r"(?<!\.)\.\.(?!\.)", ".", text)


def satisfy(id: str, response: str, params: Mapping[str, Any], rng: np.random.Generator) -> str:
    return WRITERS[id].satisfy(response, params, rng)


def violate(id: str, response: str, params: Mapping[str, Any], rng: np.random.Generator) -> str:
    return WRITERS[id].violate(response, params, rng)


# -- visually grounded, causal and conditional types ------------------------------------------
# Grounded types draw their parameters from the image's facts (Contract.ground): draw is None.
# The edits work sentence by sentence: satisfy drops the sentences that contradict the
# constraint and appends one that meets it; violate drops the ones that meet it and appends
# a contradicting one (or removes the mentions the constraint needs).
import re  # noqa: E402, F811

from vicogym.programs import instruct as _rules  # noqa: E402


def _append(response: str, sentence: str) -> str:
    """``sentence`` after ``response``, the response closed with a full stop if it was open."""
    text = response.rstrip()
    if text and text[-1] not in ".!?":
        text += "."
    return f"{text} {sentence}".strip()


def _drop(response: str, bad: Callable[[str], bool]) -> str:
    return " ".join(s for s in _rules.sentences(response) if not bad(s))


def _listed(items: Any) -> str:
    items = list(items)
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def _without(response: str, name: str, instead: str) -> str:
    return _rules.name_pattern(name).sub(instead, response)


def _attribute_state(sentence: str, p: Mapping[str, Any]) -> tuple[bool, bool]:
    good = bad = False
    for clause in _rules.clauses(sentence, [p["object"]]):
        if _rules.has(clause, p["object"]):
            yes = any(_rules.has(clause, w) for w in _rules._words_of([p["value"]]))
            no = any(_rules.has(clause, w) for w in _rules._words_of(p["wrong"]))
            good, bad = good or (yes and not no), bad or (no and not yes)
    return good, bad


@writer("attribute_describe", "What {attribute} is the {object}? Answer in a sentence that names the {object}.",
        "Tell me the {attribute} of the {object}.", "Mention the {attribute} of the {object} in your answer.")
def _(response, p, rng):
    return _append(_drop(response, lambda s: _attribute_state(s, p)[1]), f"The {p['object']} is {p['value']}.")


@_.violator
def _(response, p, rng):
    return _append(_drop(response, lambda s: _attribute_state(s, p)[0]), f"The {p['object']} is {p['wrong'][0]}.")


def _relation_sentence(first: str, second: str, relation: str) -> str:
    if relation in ("left", "right"):
        return f"The {first} is to the {relation} of the {second}."
    if relation in ("above", "below"):
        return f"The {first} is {relation} the {second}."
    return f"The {first} is {relation} than the {second}."


def _relation_writer(response: str, p: Mapping[str, Any], keep_good: bool) -> str:
    relation = p["relation"] if keep_good else _rules.OPPOSITE[p["relation"]]
    drop = 1 if keep_good else 0  # satisfy drops contradicting sentences, violate the agreeing ones
    kept = _drop(response, lambda s: _rules.relation_clauses(s, p["first"], p["second"], p["relation"])[drop])
    return _append(kept, _relation_sentence(p["first"], p["second"], relation))


for _id, _phrases in (("size_compare", ("Say whether the {first} is larger or smaller than the {second}, naming the "
                                        "{first} first.", "Is the {first} bigger or smaller than the {second}? "
                                        "Answer in one sentence that names both.")),
                      ("spatial_relation", ("In a sentence that names the {first} before the {second}, say whether "
                                            "the {first} is {choices} relative to the {second}.",
                                            "Is the {first} {choices} relative to the {second} in the image? Name both "
                                            "objects in your answer."))):
    writer(_id, *_phrases)(lambda r, p, rng: _relation_writer(r, p, True)).violator(
        lambda r, p, rng: _relation_writer(r, p, False))


@writer("visual_include", "Mention these things the image shows in your answer: {names}.", "Make sure your response "
        "refers to each of these things in the image: {names}.")
def _(response, p, rng):
    return _append(response, f"The image shows the {_listed(p['names'])}.")


@_.violator
def _(response, p, rng):
    return _without(response, p["names"][0], "thing")


@writer("visual_exclude", "Do not mention {names}.", "Avoid any reference to the following: {names}.")
def _(response, p, rng):
    for name in p["names"]:
        response = _without(response, name, "object")
    return response


@_.violator
def _(response, p, rng):
    return _append(response, f"There is no {p['names'][0]} here.")


def _count_sentence(noun: str, count: int) -> str:
    return f"There is 1 {noun}." if count == 1 else f"There are {count} {_rules.plural(noun)}."


def _states_count(sentence: str, noun: str) -> bool:
    return any(_rules.count_stated(c, noun) is not None for c in _rules.clauses(sentence, [noun]))


@writer("object_count", "How many {noun} objects does the image show? State the number.",
        "Count the objects that are a {noun} and give the number in your answer.")
def _(response, p, rng):
    return _append(_drop(response, lambda s: _states_count(s, p["noun"])), _count_sentence(p["noun"], p["count"]))


@_.violator
def _(response, p, rng):
    return _append(_drop(response, lambda s: _states_count(s, p["noun"])), _count_sentence(p["noun"], p["count"] + 1))


@writer("object_describe", "Describe every {group} in the image by its {attribute}.",
        "For each {group} in the image, mention its {attribute}.")
def _(response, p, rng):
    kept = _drop(response, lambda s: bool(_rules.wrong_adjacent(s, p["group"], p["wrong"])))
    return _append(kept, f"The {_rules.plural(p['group'])} are {_listed(p['values'])}.")


@_.violator
def _(response, p, rng):
    return _append(_drop(response, lambda s: _rules.has(s, p["group"])), f"There are some {_rules.plural(p['group'])}.")


@writer("target_name", "Name the main subject shown in the {where} part of the image.",
        "What is the large object in the {where} of the picture? Name it.")
def _(response, p, rng):
    return _append(response, f"It is the {p['category']}.")


@_.violator
def _(response, p, rng):
    return _without(response, p["category"], "item" if p["category"].lower() != "item" else "thing")


@writer("ocr_content", 'Quote the text "{text}" exactly as the image shows it, with the same capitalisation.',
        'Include the words "{text}" from the image, copied exactly.')
def _(response, p, rng):
    return _append(response, f'The image reads "{p["text"]}".')


@_.violator
def _(response, p, rng):
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


def _states_value(sentence: str, p: Mapping[str, Any]) -> bool:
    names = [p["label"]] + ([p["series"]] if p["series"] else [])
    return any(_rules.value_stated(c, p["label"], p["series"]) is not None for c in _rules.clauses(sentence, names))


def _value_sentence(p: Mapping[str, Any], value: float) -> str:
    said = _rules.number_text(value)
    return f"For {p['series']}, {p['label']} is {said}." if p["series"] else f"{p['label']} is {said}."


@writer("chart_value", "State the value of {label} in the chart ({series}), in a sentence that names {label}.",
        "What value does the chart show for {label} ({series})? Give the number next to the label.")
def _(response, p, rng):
    return _append(_drop(response, lambda s: _states_value(s, p)), _value_sentence(p, p["value"]))


@_.violator
def _(response, p, rng):
    wrong = p["value"] + p["tolerance"] + max(1.0, abs(p["value"]))
    return _append(_drop(response, lambda s: _states_value(s, p)), _value_sentence(p, wrong))


def _extremes(sentence: str, p: Mapping[str, Any]) -> list[str]:
    return [n for c in _rules.clauses(sentence, p["labels"])
            if (n := _rules.extreme_named(c, p["extreme"], p["labels"])) is not None]


@writer("chart_extreme", "Which row of the chart ({series}) has the {extreme} value? Name it in a sentence with the "
        "word '{extreme}'.", "Name the category with the {extreme} {series} value in the chart.")
def _(response, p, rng):
    kept = _drop(response, lambda s: any(n != p["label"] for n in _extremes(s, p)))
    return _append(kept, f"{p['label']} has the {p['extreme']} value.")


@_.violator
def _(response, p, rng):
    other = next(x for x in p["labels"] if x != p["label"])
    kept = _drop(response, lambda s: p["label"] in _extremes(s, p))
    return _append(kept, f"{other} has the {p['extreme']} value.")


@writer("chart_order", "List the chart's categories ({series}) from the largest value to the smallest, in one sentence.",
        "In a single sentence, rank every category of the chart ({series}) in descending order of value.")
def _(response, p, rng):
    return _append(response, f"In descending order: {', '.join(p['labels'])}.")


@_.violator
def _(response, p, rng):
    out, at = [], 0
    for start, end, name in _rules.mentions(response, p["labels"]):
        if name == p["labels"][0]:
            out += [response[at:start], "another"]
            at = end
    text = "".join(out) + response[at:]
    return _append(text, f"In descending order: {', '.join(reversed(p['labels']))}.")


MARKERS = (("First", "Then", "Finally"), ("First", "Next", "Finally"), ("First", "Second", "Third"))
STEPS = ("look closely at the image", "compare what stands out", "check the details", "give the answer")


@writer("temporal_sequence", "Describe the steps in order, opening sentences with {markers}.",
        "Use the markers {markers}, in that order, at the start of sentences.",
        draw=lambda rng: {"markers": list(MARKERS[int(rng.integers(len(MARKERS)))])})
def _(response, p, rng):
    steps = " ".join(f"{m}, {STEPS[min(k, len(STEPS) - 1)]}." for k, m in enumerate(p["markers"]))
    return _append(response, steps)


@_.violator
def _(response, p, rng):
    return _without(response, p["markers"][-1], "Also")


@writer("conditional_if", "Include at least one sentence of the form 'If ..., ...'.",
        "Use a conditional: one sentence starting with 'If', a condition, a comma, then what follows.",
        draw=lambda rng: {})
def _(response, p, rng):
    return _append(response, "If the light came from the other side, the shadows would fall the other way.")


@_.violator
def _(response, p, rng):
    return re.sub(r"\bif\b", lambda m: "When" if m.group()[0] == "I" else "when", response, flags=re.IGNORECASE)


def _no_cues(id: str) -> Edit:
    """Violate a judged type the way the simulated judge reads it: remove its cue phrases."""
    def edit(response: str, p: Mapping[str, Any], rng: np.random.Generator) -> str:
        for cue in _rules.REGISTRY[id].cues:
            response = _without(response, cue, "")
        return response

    return edit


TONES = ("calm", "tense", "cheerful", "neutral", "any")
TOPICS = ("what the image shows", "the layout of the scene", "the most noticeable feature of the image")
CHANGES = ("the most prominent element were removed", "the most prominent element were twice as large",
           "the image were shown in black and white")
writer("scene_mood", "Describe the mood of the image (tone: {tone}).", "What atmosphere does the image convey? "
       "Describe it ({tone}).", draw=lambda rng: {"tone": TONES[int(rng.integers(len(TONES)))]})(
    lambda r, p, rng: _append(r, f"The scene feels {p['tone'] if p['tone'] != 'any' else 'calm'}; its mood is quiet.")
).violator(_no_cues("scene_mood"))
writer("causal_explain", "Explain why {topic} looks the way it does, naming a cause.",
       "Give a cause for {topic} and say what it leads to.",
       draw=lambda rng: {"topic": TOPICS[int(rng.integers(len(TOPICS)))]})(
    lambda r, p, rng: _append(r, f"As for {p['topic']}, it looks this way because of how it was set up.")
).violator(_no_cues("causal_explain"))
writer("hypothetical", "Describe what would change if {change}.", "Imagine that {change}: what would follow?",
       draw=lambda rng: {"change": CHANGES[int(rng.integers(len(CHANGES)))]})(
    lambda r, p, rng: _append(r, f"If we imagine {p['change']}, the picture would look different.")
).violator(_no_cues("hypothetical"))


# -- format, lexical, structural and style writers ----------------------------------------
# Rebuilt text is made of the response's plain words (ASCII letters, lowercased), so that it
# keeps the response's content where it can without carrying stray symbols (asterisks,
# digits, brackets) that other rules count.
VOCAB = ("river", "garden", "lantern", "market", "forest", "harbor", "window", "signal", "meadow", "bridge")
FILLER = ("this", "is", "what", "the", "picture", "shows", "in", "plain", "words", "here")


def _pick(rng: np.random.Generator, options: Any) -> Any:
    return options[int(rng.integers(len(options)))]


def _int(rng: np.random.Generator, low: int, high: int) -> int:
    return int(rng.integers(low, high + 1))


def _relation(rng: np.random.Generator) -> str:
    return _pick(rng, RELATIONS)


def _holds(id: str, response: str, params: Mapping[str, Any]) -> bool:
    return REGISTRY[id](response, **params).passed


def _miss(n: int, relation: str) -> int:
    """A count that breaks ``relation n`` (draws keep n >= 1, so n - 1 is a count)."""
    return n - 1 if relation == "at least" else n + 1


def _plain(response: str) -> list[str]:
    return [w.lower() for w in words(response) if w.isascii() and w.isalpha()]


def _material(response: str, k: int = 1) -> list[str]:
    """At least ``k`` plain words: the response's, topped up with filler."""
    found = _plain(response) or list(FILLER)
    while len(found) < k:
        found += FILLER
    return found


def _chunks(response: str, k: int) -> list[str]:
    """The response's plain words in ``k`` non-empty runs, each joined with spaces."""
    found = _material(response, k)
    q, r = divmod(len(found), k)
    bounds = [i * q + min(i, r) for i in range(k + 1)]
    return [" ".join(found[bounds[i]:bounds[i + 1]]) for i in range(k)]


def _sentence(text: str) -> str:
    return text[:1].upper() + text[1:] + "."


def _remove(pattern: str, text: str, flags: int = re.IGNORECASE) -> str:
    """``text`` without matches of ``pattern``, repeated until none is left (a removal can join
    the text around it into a new match)."""
    while re.search(pattern, text, flags=flags):
        text = re.sub(pattern, "", text, flags=flags)
    return text


def _drop_words(text: str, drop: Callable[[str], bool]) -> str:
    """``text`` without the \\w+ words ``drop`` selects; the characters between words stay, so
    no two words merge."""
    return re.sub(r"\w+", lambda m: "" if drop(m.group()) else m.group(), text)


def _first_passing(id: str, params: Mapping[str, Any], candidates: list[str], passed: bool) -> str:
    """The first candidate response whose verdict is ``passed``."""
    for text in candidates:
        if _holds(id, text, params) == passed:
            return text
    raise ValueError(f"expected a candidate that {'passes' if passed else 'fails'} {id}, got none")


def _count_writer(id: str, *phrases: str, draw: Callable[[np.random.Generator], dict[str, Any]],
                  build: Callable[[str, int, Mapping[str, Any]], str], relation: str | None = None) -> None:
    """A counted type's writer: ``build(response, k, params)`` makes the response hold
    exactly k of the counted thing; satisfying keeps a response that already complies."""
    def rel(params: Mapping[str, Any]) -> str:
        return relation or params.get("relation", "exactly")

    @writer(id, *phrases, draw=draw)
    def _(response: str, params: Mapping[str, Any], rng: np.random.Generator) -> str:
        return response if _holds(id, response, params) else build(response, params["n"], params)

    @_.violator
    def _(response: str, params: Mapping[str, Any], rng: np.random.Generator) -> str:
        return build(response, _miss(params["n"], rel(params)), params)


def _simple(id: str, *phrases: str, satisfy: Callable[[str, Mapping[str, Any]], str],
            violate: Callable[[str, Mapping[str, Any]], str],
            draw: Callable[[np.random.Generator], dict[str, Any]] = lambda rng: {}) -> None:
    """A writer whose edits need no randomness."""
    @writer(id, *phrases, draw=draw)
    def _(response: str, params: Mapping[str, Any], rng: np.random.Generator) -> str:
        return satisfy(response, params)

    @_.violator
    def _(response: str, params: Mapping[str, Any], rng: np.random.Generator) -> str:
        return violate(response, params)


def _other(word: str, options: tuple[str, ...] = ("Well", "Indeed", "Also")) -> str:
    return next(o for o in options if o.lower() != word.lower())


# format -----------------------------------------------------------------------------------
def _xml_text(text: str) -> str:
    # XML 1.0 refuses most control characters even when escaped
    kept = "".join(c for c in text if c in "\t\n\r" or "\x20" <= c <= "\ud7ff" or "\ue000" <= c <= "\ufffd"
                   or c >= "\U00010000")
    return kept.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _yaml_dump(response: str, params: Mapping[str, Any]) -> str:
    import yaml

    return yaml.safe_dump({"answer": response}, allow_unicode=True)


_simple("json_format", "Answer in valid JSON only.", "Format your entire response as a JSON object.",
        satisfy=lambda r, p: json.dumps({"answer": r}), violate=lambda r, p: "Answer: " + r)
_simple("yaml_mapping", "Answer as a YAML mapping (key: value pairs) and nothing else.",
        "Write the whole response as YAML with top-level keys.",
        satisfy=_yaml_dump, violate=lambda r, p: "- " + json.dumps(r))
_simple("xml_document", "Wrap the whole response in a single well-formed XML element.",
        "Answer in XML: one root element containing everything.",
        satisfy=lambda r, p: f"<response>{_xml_text(r)}</response>", violate=lambda r, p: f"<response>{_xml_text(r)}")


def _table(response: str, k: int, columns: int = 2) -> str:
    """A Markdown table of ``columns`` columns and ``k`` rows from the response's words."""
    cells = _chunks(response, max(k, 1) * columns)
    head = "| " + " | ".join(f"column {j + 1}" for j in range(columns)) + " |"
    rule = "|" + "---|" * columns
    rows = ["| " + " | ".join(cells[i * columns:(i + 1) * columns]) + " |" for i in range(k)]
    return "\n".join([head, rule, *rows])


_count_writer("markdown_table", "Include a Markdown table with at least {n} rows.",
              "Present the details in a Markdown table of {n} or more data rows.",
              draw=lambda rng: {"n": _int(rng, 1, 4)}, relation="at least",
              build=lambda r, k, p: _table(r, k) + "\n\n" + r.replace("|", "/"))
_simple("title", "Give your answer a title wrapped in double angular brackets, such as <<poem of joy>>.",
        "Start with a title in double angle brackets, like <<title>>.",
        satisfy=lambda r, p: f"<<{' '.join(_material(r)[:4]).title()}>>\n" + r,
        violate=lambda r, p: r.replace("<", "(").replace(">", ")"))


def _wrap_words(response: str, k: int, mark: str) -> str:
    """The first ``k`` words wrapped in ``mark`` (all asterisks removed first), topped up
    with marked filler where the response has fewer words."""
    text = response.replace("*", "")
    found = len(re.findall(r"\w+", text))
    text = re.sub(r"\w+", lambda m: mark + m.group() + mark, text, count=k) if k else text
    return text + "".join(f" {mark}{FILLER[i % len(FILLER)]}{mark}" for i in range(max(0, k - found)))


_count_writer("highlighted_sections", "Highlight at least {n} sections with Markdown, i.e. *highlighted section*.",
              "Mark {n} or more key phrases in *italics*.", draw=lambda rng: {"n": _int(rng, 1, 3)},
              relation="at least", build=lambda r, k, p: _wrap_words(r, k, "*"))


def _sections(response: str, k: int, params: Mapping[str, Any]) -> str:
    splitter = params["splitter"]
    if k == 0:
        return _remove(re.escape(splitter), " ".join(_material(response)), flags=0)
    return "\n".join(f"{splitter} {i + 1}\n{chunk}" for i, chunk in enumerate(_chunks(response, k)))


def _draw_sections(rng: np.random.Generator) -> dict[str, Any]:
    params = {"n": _int(rng, 1, 4), "splitter": _pick(rng, ("SECTION", "Section", "PART", "Part"))}
    return {**params, "relation": _relation(rng)} if rng.random() < 0.5 else params


_count_writer("sections", "Your response must have {n} sections; mark the beginning of each with {splitter} X.",
              "Split the answer into {n} parts, each headed '{splitter} 1', '{splitter} 2', and so on.",
              draw=_draw_sections, build=_sections)

OPTIONS = (("My answer is yes.", "My answer is no.", "My answer is maybe."),
           ("I think yes.", "I think no.", "I think maybe."))


def _without_options(text: str, options: list[str]) -> str:
    while any(o in text for o in options):
        for o in options:
            text = text.replace(o, "")
    return text


_simple("choice", "Does the image show more than one thing? Answer with one of the following options: {options}.",
        "Is everything in the picture easy to make out? Choose one of: {options}.",
        draw=lambda rng: {"options": list(_pick(rng, OPTIONS))},
        satisfy=lambda r, p: p["options"][0] if not r.strip() else p["options"][len(r) % len(p["options"])],
        violate=lambda r, p: "I am not sure. " + _without_options(r, p["options"]))


def _code_block(response: str, params: Mapping[str, Any]) -> str:
    body = response.replace("`", "'")
    return f"```{params.get('language', '')}\n{body}\n```"


_simple("code_block", "Include a fenced {language} code block (```{language}).", "Put the {language} code in a ``` fenced block.",
        draw=lambda rng: {"language": _pick(rng, ("python", "json", "bash"))},
        satisfy=_code_block, violate=lambda r, p: r.replace("`", "'"))


def _two_responses(response: str, params: Mapping[str, Any]) -> str:
    first = response.replace("*", "").strip() or "Yes."
    return f"{first}\n******\nIn other words: {first}"


_simple("two_responses", "Give two different responses, separated by six asterisks: ******.",
        "Write two alternative answers split by a line of six asterisks (******).",
        satisfy=_two_responses, violate=lambda r, p: r.replace("*", ""))


def _list(response: str, k: int, marker: Callable[[int], str], strip: str) -> str:
    """``k`` list items from the response's words; with k = 0 the response without list
    marks (``strip``: the characters that could start an item)."""
    if k == 0:
        return re.sub(strip, "", response)
    return "\n".join(marker(i) + chunk for i, chunk in enumerate(_chunks(response, k)))


_count_writer("bullet_list", "Your answer must contain exactly {n} bullet points, such as:\n* point one\n* point two",
              "Use exactly {n} Markdown bullet points.", draw=lambda rng: {"n": _int(rng, 1, 5)}, relation="exactly",
              build=lambda r, k, p: _list(r, k, lambda i: "* ", r"[*-]"))
_count_writer("numbered_list", "Give {relation} {n} numbered items (1., 2., ...).",
              "Answer as a numbered list with {relation} {n} items.",
              draw=lambda rng: {"n": _int(rng, 1, 5), "relation": _relation(rng)},
              build=lambda r, k, p: _list(r, k, lambda i: f"{i + 1}. ", r"\d"))
_count_writer("placeholders", "Include at least {n} placeholders in square brackets, such as [address].",
              "Leave {n} or more [placeholders] in square brackets.", draw=lambda rng: {"n": _int(rng, 1, 3)},
              relation="at least",
              build=lambda r, k, p: " ".join(f"[{w}]" for w in _material(r, k)[:k]) + "\n" + r.replace("[", "("))


def _headers(response: str, k: int, params: Mapping[str, Any]) -> str:
    if k == 0:
        return response.replace("#", "")
    return "\n\n".join(f"# Part {i + 1}\n{chunk}" for i, chunk in enumerate(_chunks(response, k)))


_count_writer("markdown_headers", "Use {relation} {n} Markdown headers (lines starting with #).",
              "Organise the answer under {relation} {n} section headings written as '# Heading'.",
              draw=lambda rng: {"n": _int(rng, 1, 4), "relation": _relation(rng)}, build=_headers)


def _punctuate(response: str, params: Mapping[str, Any]) -> str:
    mark = PUNCTUATION_RULES[params["rule"]]
    if mark is not None:
        return response.replace(mark, "," if mark == ";" else ".")
    text = response.replace("!", ".").replace("?", ".").rstrip()
    return text if text.endswith(".") else (text + "." if text else "Noted.")


_simple("punctuation_control", "Punctuation rule: {rule}.", "Follow this punctuation rule throughout: {rule}.",
        draw=lambda rng: {"rule": _pick(rng, list(PUNCTUATION_RULES))}, satisfy=_punctuate,
        violate=lambda r, p: r + {"no exclamation marks": " Wow!", "no question marks": " Why?", "no semicolons": " yes; no",
                                  "every sentence ends with a period": " Really?"}[p["rule"]])


@writer("number_precision", "Write every number with exactly {decimals} decimal places.",
        "Give all numbers to {decimals} decimal places (e.g. 3 as 3 followed by {decimals} decimals).",
        draw=lambda rng: {"decimals": _int(rng, 0, 3)})
def _(response: str, params: Mapping[str, Any], rng: np.random.Generator) -> str:
    d = params["decimals"]

    def fix(number: str) -> str:
        whole, _, fraction = number.partition(".")
        return whole + ("." + (fraction + "0" * d)[:d] if d else "")

    text = re.sub(NUMBER, lambda m: fix(m.group()), response)
    if _holds("number_precision", text, params):
        return text
    # numbers run together (1.5.5) or none at all: keep the words, state one number cleanly
    return re.sub(r"[0-9]", "", response).rstrip() + " " + fix(str(_int(rng, 1, 99)))


@_.violator
def _(response: str, params: Mapping[str, Any], rng: np.random.Generator) -> str:
    return response + " 7." + "5" * (params["decimals"] + 1)


_count_writer("bold_count", "Put {relation} {n} key phrases in **bold**.", "Use **bold** for {relation} {n} terms.",
              draw=lambda rng: {"n": _int(rng, 1, 4), "relation": _relation(rng)},
              build=lambda r, k, p: _wrap_words(r, k, "**"))
_count_writer("italic_count", "Put {relation} {n} words in *italics* (single asterisks).",
              "Italicise {relation} {n} terms with *single asterisks*.",
              draw=lambda rng: {"n": _int(rng, 1, 4), "relation": _relation(rng)},
              build=lambda r, k, p: _wrap_words(r, k, "*"))
_count_writer("numbered_steps", "Lay out the answer as exactly {n} steps, each line starting 'Step 1:', 'Step 2:', ...",
              "Explain it in {n} steps written 'Step 1: ...', 'Step 2: ...'.", draw=lambda rng: {"n": _int(rng, 1, 5)},
              relation="exactly",
              build=lambda r, k, p: "\n".join(f"Step {i + 1}: {c}" for i, c in enumerate(_chunks(r, k))) if k else "")


def _as_list(response: str, params: Mapping[str, Any]) -> str:
    items = [line.strip() for line in lines(response)] or [" ".join(_material(response)[:8])]
    mark = (lambda i: "- ") if params["style"] == "bullet" else (lambda i: f"{i + 1}. ")
    return "\n".join(mark(i) + item for i, item in enumerate(items))


_simple("list_format", "Format the entire response as a {style} list, one item per line, nothing else.",
        "Answer only with a {style} list.", draw=lambda rng: {"style": _pick(rng, list(LIST_ITEM))},
        satisfy=_as_list, violate=lambda r, p: r + "\nIn short, that is all.")
_count_writer("line_count", "Write {relation} {n} non-empty lines.", "Your answer should span {relation} {n} lines.",
              draw=lambda rng: {"n": _int(rng, 1, 6), "relation": _relation(rng)},
              build=lambda r, k, p: "\n".join(_chunks(r, k)) if k else "")
_count_writer("blockquote", "Quote at least {n} lines as Markdown blockquotes (lines starting with '>').",
              "Include {n} or more '> ' quoted lines.", draw=lambda rng: {"n": _int(rng, 1, 3)}, relation="at least",
              build=lambda r, k, p: "".join(f"> {c}\n" for c in (_chunks(r, k) if k else [])) + "\n" + r.replace(">", ")"))


def _key_values(response: str, params: Mapping[str, Any]) -> str:
    value = " ".join(_material(response)[:3])
    missing = [k for k in params["keys"] if not _holds("key_value_lines", response, {"keys": [k]})]
    return response + "".join(f"\n{k.capitalize()}: {value}" for k in missing)


_simple("key_value_lines", "Include a line for each of {keys}, written 'Key: value'.",
        "Give these fields, one per line as 'Key: value': {keys}.",
        draw=lambda rng: {"keys": [str(k) for k in rng.choice(["name", "color", "size", "count", "place"], _int(rng, 1, 3),
                                                                 replace=False)]},
        satisfy=_key_values, violate=lambda r, p: r.replace(":", " -"))
_count_writer("table_columns", "Include a Markdown table with exactly {n} columns.",
              "Present the data in a table of {n} columns (Markdown).", draw=lambda rng: {"n": _int(rng, 2, 4)},
              relation="exactly", build=lambda r, k, p: _table(r, 1, k) + "\n\n" + r.replace("|", "/"))
_simple("end_with_question", "End your response with a question.", "Finish with a question to the reader.",
        satisfy=lambda r, p: r if r.rstrip().endswith("?") else (r.rstrip() + " What do you think?").lstrip(),
        violate=lambda r, p: r.rstrip().rstrip("?") + ".")


# lexical ----------------------------------------------------------------------------------
def _keywords(rng: np.random.Generator, most: int) -> list[str]:
    return [str(w) for w in rng.choice(VOCAB, _int(rng, 1, most), replace=False)]


_simple("include_keywords", "Include the keywords {keywords} in the response.", "Make sure to mention: {keywords}.",
        draw=lambda rng: {"keywords": _keywords(rng, 3)},
        satisfy=lambda r, p: r + "".join(" " + k for k in p["keywords"] if not _holds("include_keywords", r, {"keywords": [k]})),
        violate=lambda r, p: _remove(re.escape(p["keywords"][0]), r))


def _exclude(response: str, params: Mapping[str, Any]) -> str:
    pattern = "|".join(r"\b" + re.escape(k) + r"\b" for k in params["keywords"])
    return _remove(pattern, response)


_simple("exclude_keywords", "Do not include the words {keywords} in the response.", "Avoid the words: {keywords}.",
        draw=lambda rng: {"keywords": _keywords(rng, 2)}, satisfy=_exclude,
        violate=lambda r, p: r + " " + p["keywords"][0])
_count_writer("keyword_frequency", "Use the word '{keyword}' {relation} {n} times.",
              "Mention '{keyword}' {relation} {n} times.",
              draw=lambda rng: {"keyword": _pick(rng, VOCAB), "n": _int(rng, 1, 4), "relation": _relation(rng)},
              build=lambda r, k, p: _remove(re.escape(p["keyword"]), r) + f" {p['keyword']}" * k)


def _letters(response: str, k: int, params: Mapping[str, Any]) -> str:
    letter = params["letter"].lower()
    kept = "".join(c for c in response if letter not in c.lower())
    return kept + (" " + letter * k if k else "")


_count_writer("letter_frequency", "The letter '{letter}' should appear {relation} {n} times.",
              "Use the letter {letter} {relation} {n} times in total.",
              draw=lambda rng: {"letter": _pick(rng, "abcdefghijklmnopqrstuvwxyz"), "n": _int(rng, 1, 6),
                                "relation": _relation(rng)}, build=_letters)
_simple("first_word", "Start your response with the word '{word}'.", "The very first word must be '{word}'.",
        draw=lambda rng: {"word": _pick(rng, VOCAB).capitalize()},
        satisfy=lambda r, p: f"{p['word']} {r}", violate=lambda r, p: f"{_other(p['word'])}, {r}")
_simple("last_word", "End your response with the word '{word}'.", "Make '{word}' the last word of your answer.",
        draw=lambda rng: {"word": _pick(rng, VOCAB)},
        satisfy=lambda r, p: f"{r} {p['word']}.", violate=lambda r, p: f"{r} {_other(p['word'])}.")
_simple("prefix", "Begin your response with: {text}", "Your answer must start with the words \"{text}\".",
        draw=lambda rng: {"text": _pick(rng, ("Dear reader,", "In short,", "Answer:", "Looking at the image,"))},
        satisfy=lambda r, p: f"{p['text']} {r}",
        violate=lambda r, p: _first_passing("prefix", p, [f"{lead} {r}" for lead in ("Well,", "Note:", "So,")], False))
_simple("suffix", "Finish your response with this exact phrase: {text}", "End with the phrase \"{text}\"; nothing after it.",
        draw=lambda rng: {"text": _pick(rng, ("Is there anything else I can help with?", "That is all.",
                                              "Let me know if you have additional questions."))},
        satisfy=lambda r, p: f"{r} {p['text']}",
        violate=lambda r, p: _first_passing("suffix", p, [f"{r} {tail}" for tail in ("Thanks.", "Done.", "Bye!")], False))
_simple("quotation", "Wrap your entire response in double quotation marks.", "Put the whole answer inside double quotes.",
        satisfy=lambda r, p: '"' + r.strip() + '"', violate=lambda r, p: "Note: " + r.strip())
_simple("no_commas", "Do not use any commas in your response.", "Write without a single comma.",
        satisfy=lambda r, p: r.replace(",", ""), violate=lambda r, p: r + ", indeed")
_simple("keyword_in_first_sentence", "Mention '{keyword}' in your first sentence.",
        "The opening sentence must contain the word '{keyword}'.", draw=lambda rng: {"keyword": _pick(rng, VOCAB)},
        satisfy=lambda r, p: f"{p['keyword'].capitalize()}: {r}",
        violate=lambda r, p: _first_passing("keyword_in_first_sentence", p,
                                            [f"{lead} {r}" for lead in ("Here is my answer.", "Let me begin.")], False))

ALLITERATIONS = ("silver snakes slide south softly", "big blue boats bob beside", "fine feathers float freely far",
                 "many merry mice march madly", "tiny turtles tiptoe toward town")


@writer("alliteration", "Include an alliterative run of at least {n} consecutive words starting with the same letter.",
        "Use alliteration: {n} or more words in a row that begin with the same letter.",
        draw=lambda rng: {"n": _int(rng, 2, 4)})
def _(response: str, params: Mapping[str, Any], rng: np.random.Generator) -> str:
    run = _pick(rng, ALLITERATIONS).split()[:params["n"]]
    return _sentence(" ".join(run)) + " " + response


@_.violator
def _(response: str, params: Mapping[str, Any], rng: np.random.Generator) -> str:
    previous = [""]

    def breaking(match: re.Match) -> str:
        # a word with the previous word's initial gets a word with another initial before it
        word, letter = match.group(), initial_letter(match.group())
        previous[0], same = letter, bool(letter) and letter == previous[0]
        return ("and " if letter == "t" else "then ") + word if same else word

    return re.sub(r"\w+", breaking, response)


ACRONYMS = (("CPU", "central processing unit"), ("GPS", "global positioning system"), ("RGB", "red green blue"),
            ("AI", "artificial intelligence"), ("UV", "ultraviolet"))
_simple("acronym_definition", "Use the acronym {acronym}, defining it at first use as '{expansion} ({acronym})'.",
        "Introduce {acronym} by writing it out first: {expansion} ({acronym}).",
        draw=lambda rng: dict(zip(("acronym", "expansion"), _pick(rng, ACRONYMS))),
        satisfy=lambda r, p: f"{p['expansion'].capitalize()} ({p['acronym']}): {r}",
        violate=lambda r, p: f"{p['acronym']} first. {r}")


def _diverse(response: str, params: Mapping[str, Any]) -> str:
    if _holds("word_diversity", response, params):
        return response
    seen: set[str] = set()

    def first_use(word: str) -> bool:
        repeated = word.lower() in seen
        seen.add(word.lower())
        return repeated

    text = _drop_words(response, first_use)
    return text if seen else text + " unique"


def _repetitive(response: str, params: Mapping[str, Any]) -> str:
    found = words(response)
    word = found[0] if found else "again"
    types = len({w.lower() for w in found} | {word.lower()})
    k = max(1, math.floor(types / params["ratio"] - len(found)) + 2)
    return response + f" {word}" * k


_simple("word_diversity", "Avoid repeating words: at least {ratio} of your words must be distinct.",
        "Keep your vocabulary varied (distinct words / all words of at least {ratio}).",
        draw=lambda rng: {"ratio": float(_pick(rng, (0.5, 0.6, 0.7, 0.8)))}, satisfy=_diverse, violate=_repetitive)


def _mean_length(response: str, params: Mapping[str, Any], comply: bool) -> str:
    """Keep only the words on one side of n: long ones to satisfy "at least" or break "at
    most", short ones otherwise (a stock word where none is left)."""
    n, long = params["n"], (params["relation"] == "at least") == comply
    if comply:
        keep = (lambda w: len(w) >= n) if long else (lambda w: len(w) <= n)
    else:
        keep = (lambda w: len(w) > n) if long else (lambda w: len(w) < n)
    text = _drop_words(response, lambda w: not keep(w))
    return text if words(text) else text + (" comprehensively" if long else " a")


_simple("average_word_length", "Use words whose average length is {relation} {n} letters.",
        "Keep the mean word length {relation} {n} characters.",
        draw=lambda rng: {"n": _int(rng, 3, 7), "relation": _pick(rng, ("at least", "at most"))},
        satisfy=lambda r, p: r if _holds("average_word_length", r, p) else _mean_length(r, p, True),
        violate=lambda r, p: _mean_length(r, p, False))

CONNECTOR_ORDER = ("therefore", "however", "moreover", "furthermore", "consequently", "thus", "hence", "nevertheless",
                   "in addition", "for example", "as a result", "because")


def _connect(response: str, params: Mapping[str, Any]) -> str:
    found, text = connectors_used(response), response
    for c in (c for c in CONNECTOR_ORDER if c not in found):
        if len(connectors_used(text)) >= params["n"]:
            break
        text += f" {c.capitalize()}, the point stands."
    return text


def _disconnect(response: str, params: Mapping[str, Any]) -> str:
    return _remove("|".join(r"\b" + r"\s+".join(c.split()) + r"\b" for c in CONNECTORS), response)


_simple("logical_connectors", "Link your ideas with at least {n} different logical connectors (therefore, however, ...).",
        "Use {n} or more distinct connectives such as 'therefore', 'however', 'moreover'.",
        draw=lambda rng: {"n": _int(rng, 1, 3)}, satisfy=_connect, violate=_disconnect)
_count_writer("hashtags", "Add at least {n} hashtags, like #sunset.", "Use {n} or more #hashtags anywhere in your answer.",
              draw=lambda rng: {"n": _int(rng, 1, 3)}, relation="at least",
              build=lambda r, k, p: r.replace("#", "") + ("\n" + " ".join("#" + w for w in _material(r, k)[:k]) if k else ""))


# structural -------------------------------------------------------------------------------
def _insert_middle(text: str, addition: str) -> str:
    """``addition`` inserted at the whitespace nearest the middle of ``text`` (appended when
    it has none), so the opening and the ending, which other rules may fix, stay as they are."""
    spaces = [m.start() for m in re.finditer(r"\s", text)]
    if not spaces:
        return (text + " " + addition) if text else addition
    at = min(spaces, key=lambda i: abs(i - len(text) // 2))
    return text[:at] + " " + addition + text[at:]


def _word_count(response: str, k: int, params: Mapping[str, Any]) -> str:
    # too many words: drop them from the middle, keeping the opening and the ending;
    # too few: filler words in the middle
    found = list(re.finditer(r"\w+", response))
    if len(found) > k:
        if k == 0:
            return _drop_words(response, lambda w: True)
        head, tail = (k + 1) // 2, k // 2
        return response[:found[head - 1].end()] + (" " + response[found[-tail].start():] if tail else "")
    if len(found) == k:
        return response
    return _insert_middle(response, " ".join((FILLER * (k // len(FILLER) + 1))[:k - len(found)]))


_count_writer("word_count", "Answer with {relation} {n} words.", "Your response should contain {relation} {n} words.",
              draw=lambda rng: {"n": _int(rng, 5, 60), "relation": _relation(rng)}, build=_word_count)
_count_writer("sentence_count", "Answer in {relation} {n} sentences.", "Write {relation} {n} sentences.",
              draw=lambda rng: {"n": _int(rng, 1, 6), "relation": _relation(rng)},
              build=lambda r, k, p: " ".join(_sentence(c) for c in _chunks(r, k)) if k else "")
_count_writer("paragraph_count", "There should be {n} paragraphs, separated by the Markdown divider ***.",
              "Write exactly {n} paragraphs with *** between them.", draw=lambda rng: {"n": _int(rng, 1, 4)},
              relation="exactly", build=lambda r, k, p: "\n***\n".join(_chunks(r, k)) if k else "")


def _nth(response: str, k: int, params: Mapping[str, Any]) -> str:
    chunks = _chunks(response, k)
    chunks[params["i"] - 1] = f"{params['word']} {chunks[params['i'] - 1]}"
    return "\n\n".join(chunks)


def _draw_nth(rng: np.random.Generator) -> dict[str, Any]:
    n = _int(rng, 2, 4)
    return {"n": n, "i": _int(rng, 1, n), "word": _pick(rng, VOCAB)}


_count_writer("nth_paragraph_first_word", "Write {n} paragraphs separated by blank lines; paragraph {i} must start "
              "with the word '{word}'.", "Use {n} paragraphs (blank lines between); begin paragraph {i} with '{word}'.",
              draw=_draw_nth, relation="exactly", build=_nth)
_simple("postscript", "At the end of your response, add a postscript starting with {marker}.",
        "Close with a postscript that begins '{marker}'.", draw=lambda rng: {"marker": _pick(rng, ("P.S.", "P.P.S"))},
        satisfy=lambda r, p: f"{r}\n{p['marker']} {' '.join(_material(r)[:5])}", violate=lambda r, p: r.replace(".", ""))


def _characters(response: str, k: int, params: Mapping[str, Any]) -> str:
    # as for words: cut from the middle, pad in the middle
    if len(response) >= k:
        return response[:(k + 1) // 2] + (response[-(k // 2):] if k // 2 else "")
    missing = k - len(response)
    filler = (" ".join(_material(response)) + " ") * (missing // 2 + 2)
    # inserting into a non-empty text adds a separating space too
    return _insert_middle(response, filler[:missing - 1]) if response else filler[:missing]


_count_writer("character_count", "Answer in {relation} {n} characters.", "Your response must be {relation} {n} characters long.",
              draw=lambda rng: {"n": _int(rng, 20, 300), "relation": _relation(rng)}, build=_characters)


def _each_paragraph(response: str, edit: Callable[[str], str], empty: str) -> str:
    found = paragraphs(response)
    return "\n\n".join(edit(p.strip()) for p in found) if found else empty


_simple("paragraph_start", "Start every paragraph with the word '{word}'.", "Each paragraph must begin with '{word}'.",
        draw=lambda rng: {"word": _pick(rng, VOCAB).capitalize()},
        satisfy=lambda r, p: _each_paragraph(r, lambda x: f"{p['word']} {x}", p["word"] + "."),
        violate=lambda r, p: f"{_other(p['word'])} {r}")
_simple("paragraph_end", "End every paragraph with the word '{word}'.", "Each paragraph must finish with '{word}'.",
        draw=lambda rng: {"word": _pick(rng, VOCAB)},
        satisfy=lambda r, p: _each_paragraph(r, lambda x: f"{x} {p['word']}.", p["word"] + "."),
        violate=lambda r, p: f"{r} {_other(p['word'])}.")


def _short_sentences(response: str, params: Mapping[str, Any]) -> str:
    if _holds("max_sentence_length", response, params):
        return response
    found, n = words(response), params["n"]
    return " ".join(" ".join(found[i:i + n]) + "." for i in range(0, len(found), n))


_simple("max_sentence_length", "Keep every sentence to at most {n} words.", "No sentence may exceed {n} words.",
        draw=lambda rng: {"n": _int(rng, 5, 20)}, satisfy=_short_sentences,
        violate=lambda r, p: r + " " + " ".join(_material(r, p["n"] + 1)[:p["n"] + 1]) + ".")


def _argument(response: str, params: Mapping[str, Any]) -> str:
    return "\n".join(f"{label}: {_sentence(chunk)}" for label, chunk in zip(ARGUMENT, _chunks(response, 3)))


_simple("argument_structure", "Structure your answer as an argument with three labelled parts: Claim:, Evidence:, "
        "Conclusion:.", "Write 'Claim:', then 'Evidence:', then 'Conclusion:', each starting a line.",
        satisfy=_argument, violate=lambda r, p: r.replace(":", " -"))
_simple("summary_line", "End with a line that starts with 'Summary:'.", "Finish with a one-line summary beginning 'Summary:'.",
        satisfy=lambda r, p: f"{r.rstrip()}\nSummary: {' '.join(_material(r)[:8])}.".lstrip(),
        violate=lambda r, p: r + "\nThat is all.")
QUESTIONS = ("Why does it matter?", "What comes next?", "Which one is larger?", "How could it change?")
_count_writer("question_count", "Ask {relation} {n} questions in your response.", "Include {relation} {n} questions.",
              draw=lambda rng: {"n": _int(rng, 1, 3), "relation": _relation(rng)},
              build=lambda r, k, p: (r.replace("?", ".") + "".join(" " + QUESTIONS[i % len(QUESTIONS)] for i in range(k))))


# style ------------------------------------------------------------------------------------
def _lower(response: str, params: Mapping[str, Any]) -> str:
    # characters without a lowercase form are dropped; a lowercase word where no letter is left
    text = "".join(c for c in response.lower() if not (c.isupper() or unicodedata.category(c) == "Lt"))
    return text if text.islower() else text + " ok"


def _upper(response: str, params: Mapping[str, Any]) -> str:
    text = "".join(c for c in response.upper() if not (c.islower() or unicodedata.category(c) == "Lt"))
    return text if text.isupper() else text + " OK"


_simple("lowercase", "Your entire response should be in lowercase letters; no capital letters are allowed.",
        "Write everything in lowercase.", satisfy=_lower, violate=lambda r, p: r + " NOT")
_simple("uppercase", "Your entire response should be in English, and in all capital letters.",
        "Write everything in CAPITAL LETTERS.", satisfy=_upper, violate=lambda r, p: r + " not")


def _capitals(response: str, k: int, params: Mapping[str, Any]) -> str:
    text = re.sub(r"\w+", lambda m: m.group().lower() if m.group().isupper() else m.group(), response)
    text = _drop_words(text, str.isupper)
    return text + "".join(f" {w.upper()}" for w in _material(response, k)[:k])


_count_writer("capital_words", "Use {relation} {n} words in all capital letters.",
              "Write {relation} {n} words in ALL CAPS.", draw=lambda rng: {"n": _int(rng, 1, 4), "relation": _relation(rng)},
              build=_capitals)
SCRIPT_NAMES = {"latin": ("LATIN",), "cyrillic": ("CYRILLIC",), "greek": ("GREEK",),
                "cjk": ("CJK", "HIRAGANA", "KATAKANA", "HANGUL"), "arabic": ("ARABIC",), "devanagari": ("DEVANAGARI",)}
SCRIPT_WORDS = {"latin": "text", "cyrillic": "текст", "greek": "κείμενο", "cjk": "文本", "arabic": "نص", "devanagari": "पाठ"}


def _in_script(response: str, params: Mapping[str, Any]) -> str:
    names = SCRIPT_NAMES[params["script"]]
    text = "".join(c for c in response if not c.isalpha() or unicodedata.name(c, "").startswith(names))
    return text if any(c.isalpha() for c in text) else text + " " + SCRIPT_WORDS[params["script"]]


_simple("script", "Write using only the {script} script.", "Use {script} letters only.",
        draw=lambda rng: {"script": _pick(rng, list(SCRIPT_WORDS))}, satisfy=_in_script,
        violate=lambda r, p: r + (" мир" if p["script"] == "latin" else " world"))

LANGUAGE_TEXTS = {
    "en": "The picture shows a quiet street in the morning, with a red car parked next to a small bakery.",
    "fr": "L'image montre une rue calme le matin, avec une voiture rouge garée à côté d'une petite boulangerie.",
    "de": "Das Bild zeigt eine ruhige Straße am Morgen, mit einem roten Auto, das neben einer kleinen Bäckerei parkt.",
    "es": "La imagen muestra una calle tranquila por la mañana, con un coche rojo aparcado junto a una pequeña panadería.",
    "it": "L'immagine mostra una strada tranquilla al mattino, con un'auto rossa parcheggiata accanto a una piccola "
          "panetteria.",
    "pt": "A imagem mostra uma rua tranquila de manhã, com um carro vermelho estacionado ao lado de uma pequena padaria.",
    "nl": "De afbeelding toont een rustige straat in de ochtend, met een rode auto geparkeerd naast een kleine bakkerij.",
}
# the simulated executor cannot translate: it answers with a stock description in the language
_simple("language", "Your entire response must be in the language with ISO 639-1 code '{language}'; no other "
        "language is allowed.", "Answer only in language '{language}' (an ISO 639-1 code, e.g. de = German).", draw=lambda rng: {"language": _pick(rng, list(LANGUAGES))},
        satisfy=lambda r, p: r if r.strip() and _holds("language", r, p) else LANGUAGE_TEXTS[p["language"]],
        violate=lambda r, p: LANGUAGE_TEXTS["de" if p["language"] == "en" else "en"])


def _person(response: str, params: Mapping[str, Any]) -> str:
    person = params["person"]
    banned = set().union(*(found for who, found in PRONOUNS.items() if who != person))
    text = _drop_words(response, lambda w: w.lower() in banned)
    if person == "third":
        return text if words(text) else text + " It works."
    has = any(w.lower() in PRONOUNS[person] for w in words(text))
    return text if has else ("I note: " if person == "first" else "You can see that ") + text


_simple("perspective", "Write in the {person} person.", "Use a {person}-person point of view throughout.",
        draw=lambda rng: {"person": _pick(rng, ("first", "second", "third"))}, satisfy=_person,
        violate=lambda r, p: r + (" You agree." if p["person"] == "first" else " I agree."))
EXPANSIONS = {"won't": "will not", "can't": "cannot", "let's": "let us", "n't": " not", "'re": " are", "'ve": " have",
              "'ll": " will", "'m": " am", "'d": " would", "'s": " is"}


def _expand(response: str, params: Mapping[str, Any]) -> str:
    def full(match: re.Match) -> str:
        word = match.group().replace("’", "'")
        whole = EXPANSIONS.get(word.lower())
        if whole:
            return whole
        end = next((e for e in ("n't", "'re", "'ve", "'ll", "'m", "'d", "'s") if word.lower().endswith(e)), None)
        return word[:-len(end)] + EXPANSIONS[end] if end else word.replace("'", "")

    text = re.sub(CONTRACTION, full, response, flags=re.IGNORECASE)
    # what expansion cannot fix (odd Unicode case pairs) loses its apostrophe
    while re.search(CONTRACTION, text, flags=re.IGNORECASE):
        text = re.sub(CONTRACTION, lambda m: m.group().replace("'", "").replace("’", ""), text, flags=re.IGNORECASE)
    return text


_simple("no_contractions", "Do not use contractions (write 'do not', not 'don't').", "Avoid contractions entirely.",
        satisfy=_expand, violate=lambda r, p: r + " It's done.")


def _judge_writer(id: str, *phrases: str, values: Mapping[str, list[str]]) -> None:
    """A judge-track type: satisfying puts one of the type's cues first, violating removes them all."""
    def cues(params: Mapping[str, Any]) -> list[str]:
        return [cue.format(**params) for cue in REGISTRY[id].cues]

    @writer(id, *phrases, draw=lambda rng: {k: _pick(rng, v) for k, v in values.items()})
    def _(response: str, params: Mapping[str, Any], rng: np.random.Generator) -> str:
        return _pick(rng, cues(params)) + " " + response

    @_.violator
    def _(response: str, params: Mapping[str, Any], rng: np.random.Generator) -> str:
        # the judge compares lowercased text: drop the few characters whose lowercase is longer
        # (İ), so that positions in the lowercased text are positions in the text
        text = "".join(c for c in response if len(c.lower()) == 1)
        for cue in (c.lower() for c in cues(params) if c):
            while (at := text.lower().find(cue)) >= 0:
                text = text[:at] + text[at + len(cue):]
        return text


_judge_writer("tone", "Write in a {tone} tone.", "Keep the tone {tone} throughout.", values={"tone": REGISTRY["tone"].params["tone"]["enum"]})
_judge_writer("audience_adaptation", "Explain it for {audience}.", "Adapt your answer to an audience of {audience}.",
              values={"audience": REGISTRY["audience_adaptation"].params["audience"]["enum"]})
_judge_writer("persona", "Answer as a {role} would.", "Take on the role of a {role} in your answer.", values={"role": REGISTRY["persona"].params["role"]["enum"]})
_judge_writer("rhetorical_device", "Use a {device} in your answer.", "Include at least one {device}.",
              values={"device": REGISTRY["rhetorical_device"].params["device"]["enum"]})
