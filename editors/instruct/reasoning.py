"""Edits of the reasoning constraint types (see :mod:`vicogym.programs.instruct.reasoning`)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import numpy as np

from vicogym.editors.instruct.edits import edits, without_cues
from vicogym.editors.instruct.text import append, without
from vicogym.validation import pick

MARKERS = (("First", "Then", "Finally"), ("First", "Next", "Finally"), ("First", "Second", "Third"))


STEPS = ("look closely at the image", "compare what stands out", "check the details", "give the answer")


def satisfy_temporal_sequence(response, p, rng):
    steps = " ".join(f"{m}, {STEPS[min(k, len(STEPS) - 1)]}." for k, m in enumerate(p["markers"]))
    return append(response, steps)


def violate_temporal_sequence(response, p, rng):
    return without(response, p["markers"][-1], "Also")


edits("temporal_sequence",
      ("Describe the steps in order, opening sentences with {markers}.",
       "Use the markers {markers}, in that order, at the start of sentences."), satisfy_temporal_sequence,
      violate_temporal_sequence, draw=lambda rng: {"markers": list(pick(rng, MARKERS))})


def satisfy_conditional_if(response, p, rng):
    return append(response, "If the light came from the other side, the shadows would fall the other way.")


def violate_conditional_if(response, p, rng):
    return re.sub(r"\bif\b", lambda m: "When" if m.group()[0] == "I" else "when", response, flags=re.IGNORECASE)


edits("conditional_if",
      ("Include at least one sentence of the form 'If ..., ...'.",
       "Use a conditional: one sentence starting with 'If', a condition, a comma, then what follows."),
      satisfy_conditional_if, violate_conditional_if, draw=lambda rng: {})


TOPICS = ("what the image shows", "the layout of the scene", "the most noticeable feature of the image")


CHANGES = ("the most prominent element were removed", "the most prominent element were twice as large",
           "the image were shown in black and white")


def satisfy_causal_explain(response: str, p: Mapping[str, Any], rng: np.random.Generator) -> str:
    return append(response, f"As for {p['topic']}, it looks this way because of how it was set up.")


edits("causal_explain", ("Explain why {topic} looks the way it does, naming a cause.",
                         "Give a cause for {topic} and say what it leads to."),
      satisfy_causal_explain, without_cues("causal_explain"), draw=lambda rng: {"topic": pick(rng, TOPICS)})


def satisfy_hypothetical(response: str, p: Mapping[str, Any], rng: np.random.Generator) -> str:
    return append(response, f"If we imagine {p['change']}, the picture would look different.")


edits("hypothetical", ("Describe what would change if {change}.", "Imagine that {change}: what would follow?"),
      satisfy_hypothetical, without_cues("hypothetical"), draw=lambda rng: {"change": pick(rng, CHANGES)})
