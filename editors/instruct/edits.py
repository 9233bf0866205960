"""Each constraint type's edits: how it is phrased in an instruction, the parameters the
planner may draw for it, and local edits of a response that make it satisfy or violate
the constraint (see the package's docstring). One registration per type, :func:`edits`."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from vicogym.programs.instruct import REGISTRY
from vicogym.validation import pick

#: a local edit of a response under a type's parameters (randomness only from ``rng``)
ResponseEdit = Callable[[str, Mapping[str, Any], np.random.Generator], str]
#: parameters for the planner to ask
Draw = Callable[[np.random.Generator], dict[str, Any]]


@dataclass(frozen=True)
class TypeEdits:
    """A constraint type's phrasings, its satisfying and violating edits, and (for a type
    that is not visually grounded) its parameter sampler."""

    phrases: tuple[str, ...]
    satisfy: ResponseEdit
    violate: ResponseEdit
    draw: Draw | None = None


#: constraint type id -> its edits
EDITS: dict[str, TypeEdits] = {}


def edits(id: str, phrases: tuple[str, ...], satisfy: ResponseEdit, violate: ResponseEdit,
          draw: Draw | None = None) -> TypeEdits:
    """Register the edits of constraint type ``id`` (``draw``: the parameter sampler of a
    type that is not grounded; a grounded one draws from the image's facts)."""
    if id in EDITS:
        raise ValueError(f"constraint {id} has edits already")
    if not phrases:
        raise ValueError(f"constraint {id} needs at least one phrase")
    EDITS[id] = TypeEdits(tuple(phrases), satisfy, violate, draw)
    return EDITS[id]


def no_params(rng: np.random.Generator) -> dict[str, Any]:
    """The draw of a type that takes no parameters."""
    return {}


def draw_values(values: Mapping[str, Any]) -> Draw:
    """A draw that picks each parameter from its list of values."""
    def draw(rng: np.random.Generator) -> dict[str, Any]:
        return {k: pick(rng, v) for k, v in values.items()}

    return draw


def holds(id: str, response: str, params: Mapping[str, Any]) -> bool:
    """Whether ``response`` satisfies type ``id`` under ``params``."""
    return REGISTRY[id](response, **params).passed


def miss(n: int, relation: str) -> int:
    """A count that breaks ``relation n`` (draws keep n >= 1, so n - 1 is a count)."""
    return n - 1 if relation == "at least" else n + 1


def count_edits(id: str, build: Callable[[str, int, Mapping[str, Any]], str],
                relation: str | None = None) -> tuple[ResponseEdit, ResponseEdit]:
    """The edits of a counted type: ``build(response, k, params)`` makes the response hold
    exactly k of the counted thing; satisfying keeps a response that already complies and
    builds n otherwise, violating builds a count that misses (under the type's fixed
    ``relation`` or the one its parameters give)."""
    def satisfy_count(response: str, params: Mapping[str, Any], rng: np.random.Generator) -> str:
        return response if holds(id, response, params) else build(response, params["n"], params)

    def violate_count(response: str, params: Mapping[str, Any], rng: np.random.Generator) -> str:
        return build(response, miss(params["n"], relation or params.get("relation", "exactly")), params)

    return satisfy_count, violate_count


def cue_edits(id: str, meet: Callable[[str, Mapping[str, Any]], str] | None = None
              ) -> tuple[ResponseEdit, ResponseEdit]:
    """The edits of a judge-track style type, as the simulated judge reads it: satisfying
    puts first one of the type's cues that fits its rubric's evidence (no "put simply" for
    experts) and, with ``meet``, gives the response what that evidence needs (a question
    mark for a rhetorical question); violating removes every cue."""
    def cues(params: Mapping[str, Any]) -> list[str]:
        return [cue.format(**params) for cue in REGISTRY[id].cues]

    def satisfy_cue(response: str, params: Mapping[str, Any], rng: np.random.Generator) -> str:
        evidence = REGISTRY[id].evidence
        fitting = [c for c in cues(params) if evidence is None or evidence(c, **params) is None
                   or evidence("", **params) is not None] or cues(params)
        text = pick(rng, fitting) + " " + response
        return meet(text, params) if meet is not None else text

    def violate_cue(response: str, params: Mapping[str, Any], rng: np.random.Generator) -> str:
        # the judge compares lowercased text: drop the few characters whose lowercase is longer
        # (İ), so that positions in the lowercased text are positions in the text
        text = "".join(c for c in response if len(c.lower()) == 1)
        for cue in (c.lower() for c in cues(params) if c):
            while (at := text.lower().find(cue)) >= 0:
                text = text[:at] + text[at + len(cue):]
        return text

    return satisfy_cue, violate_cue


def without_cues(id: str) -> ResponseEdit:
    """Violate a judged type the way the simulated judge reads it: its cue phrases removed
    as whole words."""
    from vicogym.programs.instruct.text import name_pattern

    def violate_by_cues(response: str, params: Mapping[str, Any], rng: np.random.Generator) -> str:
        for cue in REGISTRY[id].cues:
            response = name_pattern(cue).sub("", response)
        return response

    return violate_by_cues


def phrase(id: str, params: Mapping[str, Any], rng: np.random.Generator) -> str:
    """One of the type's phrasings with ``params`` filled in, read as English: "1 words"
    becomes "1 word", "a enthusiastic" "an enthusiastic", "P.S.." "P.S."."""
    templates = EDITS[id].phrases
    values = {k: ", ".join(map(str, v)) if isinstance(v, (list, tuple)) else v for k, v in params.items()}
    return english(pick(rng, templates).format(**values))


def quoted(id: str, params: Mapping[str, Any]) -> list[str]:
    """The text every phrasing of the type quotes for the writer to copy ('P.P.S', 'Claim:',
    'SECTION 1'), a prefix's or suffix's text, and the markers or keys it lists: what a
    reader writes letter for letter."""
    import re

    values = {k: ", ".join(map(str, v)) if isinstance(v, (list, tuple)) else v for k, v in params.items()}
    found = []
    for template in EDITS[id].phrases if id in EDITS else ():
        try:
            text = template.format(**values)
        except (KeyError, IndexError, ValueError):
            continue
        found += [a or b for a, b in re.findall(r"'([^']*)'|\"([^\"]*)\"", text)]
    if id in ("prefix", "suffix"):
        found.append(str(params.get("text", "")))
    for key in ("markers", "keys"):  # labels to write as given: "First, Then, Finally", "Name:"
        found += [str(v) for v in params.get(key) or () if isinstance(params.get(key), (list, tuple))]
    return [f for f in dict.fromkeys(found) if f]


def english(text: str) -> str:
    """The grammar fixes, outside quoted values (a keyword or a text to quote stays as it is)."""
    import re

    parts = re.split(r"(\"[^\"]*\"|'[^']*')", text)
    return "".join(part if i % 2 else _grammar(part) for i, part in enumerate(parts))


def _grammar(text: str) -> str:
    import re

    text = re.sub(r"\b(?<![.\d])1 ([a-z]+?[^s])s\b", r"1 \1", text)  # "1 paragraphs" (not "1 class", "1.5 words")
    text = re.sub(r"\b([Aa]) (?=[aeio](?!ne\b|nce\b)[a-z])", r"\1n ", text)  # "a enthusiastic"; "a one", "a user" stay
    return re.sub(r"(?<!\.)\.\.(?!\.)", ".", text)


def satisfy(id: str, response: str, params: Mapping[str, Any], rng: np.random.Generator) -> str:
    return EDITS[id].satisfy(response, params, rng)


def violate(id: str, response: str, params: Mapping[str, Any], rng: np.random.Generator) -> str:
    return EDITS[id].violate(response, params, rng)
