"""Reasoning constraint types: causes (judged), ordered steps, conditionals, and
hypothetical changes (judged)."""

from __future__ import annotations

import re

from vicogym.programs.instruct.contracts import Verdict, constraint, judged
from vicogym.programs.instruct.text import TEXT, WORD_LIST, name_pattern, sentences

judged("causal_explain", "Explain why something in the image is as it is: a cause and its effect.", "causal",
       {"topic": TEXT},
       "The response explains a cause of {topic}, linking cause and effect explicitly and consistently "
       "with what the image shows.",
       ("because", "due to", "as a result", "causes", "caused", "leads to", "since", "therefore"),
       [("The shadows fall left because the light comes from the right.", {"topic": "the shadows"}, True),
        ("There are shadows.", {"topic": "the shadows"}, False)])


@constraint("temporal_sequence", "Describe steps in order with the markers at the start of sentences or lines, in the "
            "given order (First ... Then ... Finally).", "causal", {"markers": WORD_LIST},
            [("First, look. Then, count. Finally, answer.", {"markers": ["First", "Then", "Finally"]}, True),
             ("Finally, go. First, look. Then, count. Finally, answer.", {"markers": ["First", "Then", "Finally"]},
              True), ("Then, count. Finally, answer. First, look.", {"markers": ["First", "Then", "Finally"]}, False),
             ("First, look and then count.", {"markers": ["First", "Then", "Finally"]}, False)])
def _temporal_sequence(response: str, markers: list[str]) -> Verdict:
    at = 0
    for marker in markers:
        for match in name_pattern(marker).finditer(response, at):
            before = response[:match.start()].rstrip(" \t*-#>\"'")
            if not before or before[-1] in ".!?:\n":  # the marker opens a sentence or a line
                at = match.end()
                break
        else:
            return Verdict(False, f"markers {markers} in order",
                           f"no {marker!r} opening a sentence after the previous marker")
    return Verdict(True, f"markers {markers} in order", "in order")


@constraint("conditional_if", "At least one conditional sentence of the form 'If ..., ...' (the condition, a comma, "
            "then the consequence).", "conditional", {},
            [("If the light were brighter, the cube would shine.", {}, True), ("The cube would shine.", {}, False),
             ("If only.", {}, False)])
def _conditional_if(response: str) -> Verdict:
    found = [s for s in sentences(response) if re.match(r"\s*if\b[^,]*\w[^,]*,\s*\w", s, re.IGNORECASE)]
    return Verdict(bool(found), "a sentence 'If ..., ...'", f"{len(found)} such sentences")


judged("hypothetical", "Consider a hypothetical change to the image and say what would follow.", "conditional",
       {"change": TEXT}, "The response imagines that {change} and states a consequence that follows from what the "
       "image shows.", ("would", "were", "suppose", "imagine", "if", "could"),
       [("If the red cube were removed, only two objects would remain.", {"change": "removing an object"}, True),
        ("There are three objects.", {"change": "removing an object"}, False)])
