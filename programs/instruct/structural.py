"""Structural constraint types: counts of words, sentences, characters, paragraphs,
placeholders, headers and questions; paragraph openings and endings; postscripts,
sentence length, a labelled argument and a summary line."""

from __future__ import annotations

import re

from vicogym.programs.instruct.contracts import Verdict, constraint, layout
from vicogym.programs.instruct.text import (
    COUNT,
    RELATION,
    TEXT,
    count_matches,
    counted,
    lines,
    paragraphs,
    sentences,
    words,
)


def lazy_brackets(response: str) -> int:
    """How many times IFEval's ``\\[.*?\\]`` matches, in linear time (the regex rescans the
    rest of the line from every ``[`` with no ``]`` after it): per line, each ``[`` up to the
    first ``]`` after it; a line's first ``[`` with no ``]`` after it ends that line's count."""
    count = 0
    for line in response.split("\n"):
        at = line.find("[")
        while at != -1:
            close = line.find("]", at + 1)
            if close == -1:
                break
            count += 1
            at = line.find("[", close + 1)
    return count


@constraint("placeholders", "At least n placeholders in square brackets, such as [address].", "structural",
            {"n": COUNT}, [("Send to [name] at [address].", {"n": 2}, True), ("Send to [name].", {"n": 2}, False)],
            measure="placeholders", relation="at least")
def _placeholders(response: str, n: int) -> Verdict:
    return counted("placeholders", "at least", n, lazy_brackets(response))


@constraint("markdown_headers", "At least / at most / exactly n Markdown section headers (# ...).", "structural",
            {"n": COUNT, "relation": RELATION}, [("# A\ntext\n## B\n", {"n": 2, "relation": "exactly"}, True),
                                                 ("#not a header", {"n": 1, "relation": "at least"}, False)],
            exclusive=layout("markdown_headers"), measure="headers")
def _markdown_headers(response: str, n: int, relation: str) -> Verdict:
    return counted("headers", relation, n, count_matches(r"^#{1,6}\s+\S", response))


@constraint("word_count", "The response has at least / at most / exactly n words.", "structural",
            {"n": COUNT, "relation": RELATION}, [("one two three", {"n": 3, "relation": "exactly"}, True),
                                                 ("one two", {"n": 3, "relation": "at least"}, False),
                                                 ("one two three four", {"n": 3, "relation": "at most"}, False)],
            measure="words")
def _word_count(response: str, n: int, relation: str) -> Verdict:
    return counted("words", relation, n, len(words(response)))


@constraint("sentence_count", "The response has at least / at most / exactly n sentences.", "structural",
            {"n": COUNT, "relation": RELATION}, [("One. Two! Three?", {"n": 3, "relation": "exactly"}, True),
                                                 ("One. Two.", {"n": 3, "relation": "at least"}, False)],
            measure="sentences")
def _sentence_count(response: str, n: int, relation: str) -> Verdict:
    return counted("sentences", relation, n, len(sentences(response)))


@constraint("paragraph_count", "Exactly n paragraphs, separated by the Markdown divider ***.", "structural",
            {"n": COUNT},
            [("a\n***\nb", {"n": 2}, True), ("a\n***\n\n***\nb", {"n": 2}, False), ("a", {"n": 2}, False)],
            exclusive=layout("paragraph_count"), measure="paragraphs split by ***", relation="exactly")
def _paragraph_count(response: str, n: int) -> Verdict:
    parts = re.split(r"\s?\*\*\*\s?", response)
    empty = [i for i, p in enumerate(parts) if not p.strip() and 0 < i < len(parts) - 1]
    count = len([p for p in parts if p.strip()])
    return Verdict(count == n and not empty, f"{n} paragraphs split by ***", f"{count} paragraphs",
                   "an empty paragraph between dividers" if empty else "")


@constraint("nth_paragraph_first_word", "n paragraphs (split by an empty line, '\\n\\n'), paragraph i starting with "
            "the word (case-insensitive; quotes before it and punctuation after it are allowed, as in IFEval).",
            "structural", {"n": COUNT, "i": {"type": "integer", "minimum": 1}, "word": TEXT},
            [("Intro\n\nSecond para", {"n": 2, "i": 2, "word": "second"}, True),
             ("Intro\n\n\"Second,\" para", {"n": 2, "i": 2, "word": "second"}, True),
             ("Intro\n\nThird para", {"n": 2, "i": 2, "word": "second"}, False),
             ("Intro", {"n": 2, "i": 1, "word": "intro"}, False)],
            exclusive=layout("nth_paragraph_first_word"), measure="paragraphs", relation="exactly")
def _nth_paragraph(response: str, n: int, i: int, word: str) -> Verdict:
    # IFEval's reading: paragraphs split at "\n\n" (blank ones not counted); the first word is
    # the first whitespace-separated token, leading quotes dropped, cut at . , ? ! ' or "
    found = [p.strip() for p in re.split(r"\n\n", response) if p.strip()]
    if len(found) != n:
        return counted("paragraphs", "exactly", n, len(found))
    if i > len(found):
        return Verdict(False, f"paragraph {i}", f"{len(found)} paragraphs")
    token = found[i - 1].split()[0].lstrip("'").lstrip('"')
    actual = re.match(r"[^.,?!'\"]*", token).group(0).lower()
    return Verdict(actual == word.lower(), f"paragraph {i} starts with {word!r}", actual or "no word")


@constraint("postscript", "A postscript at the end, starting with the marker (P.S. or P.P.S).", "structural",
            {"marker": {"type": "string", "enum": ["P.S.", "P.P.S"]}},
            [("Body.\nP.S. more", {"marker": "P.S."}, True), ("Body.", {"marker": "P.S."}, False),
             ("Body.\nP.P.S extra", {"marker": "P.P.S"}, True)],
            exclusive=layout("postscript"))
def _postscript(response: str, marker: str) -> Verdict:
    # IFEval's patterns open with \s* and close with .*$, which match anywhere, so only whether
    # the marker occurs counts: searched without them (findall rescans every run of spaces)
    pattern = r"p\.\s?p\.\s?s" if marker == "P.P.S" else r"p\.\s?s\."
    found = re.search(pattern, response.lower())
    return Verdict(bool(found), f"a postscript starting {marker}", "found" if found else "none")


@constraint("character_count", "The response has at least / at most / exactly n characters.", "structural",
            {"n": COUNT, "relation": RELATION}, [("abcd", {"n": 4, "relation": "exactly"}, True),
                                                 ("abcd", {"n": 3, "relation": "at most"}, False)],
            measure="characters")
def _character_count(response: str, n: int, relation: str) -> Verdict:
    return counted("characters", relation, n, len(response))


# new structural types (VISA's seed registry)
def _every_paragraph(response: str, word: str, index: int, where: str) -> Verdict:
    """Whether every paragraph has ``word`` at ``index`` of its words (0 first, -1 last), and
    there is a paragraph at all."""
    found = [words(p) for p in paragraphs(response)]
    bad = [i + 1 for i, ws in enumerate(found) if not ws or ws[index].lower() != word.lower()]
    return Verdict(bool(found) and not bad, f"every paragraph {where} {word!r}",
                   f"paragraphs {bad} do not" if bad else ("all do" if found else "no paragraphs"))


@constraint("paragraph_start", "Every paragraph (paragraphs split by blank lines) starts with the word "
            "(case-insensitive), and there is at least one paragraph.", "structural", {"word": TEXT},
            [("Today we rest.\n\nToday we read.", {"word": "today"}, True),
             ("Today we rest.\n\nWe read.", {"word": "today"}, False), ("", {"word": "today"}, False)],
            exclusive=layout("paragraph_start"))
def _paragraph_start(response: str, word: str) -> Verdict:
    return _every_paragraph(response, word, 0, "starting with")


@constraint("paragraph_end", "Every paragraph (paragraphs split by blank lines) ends with the word (case-insensitive; "
            "punctuation after it is allowed), and there is at least one paragraph.", "structural", {"word": TEXT},
            [("We rest, indeed.\n\nWe read indeed!", {"word": "indeed"}, True),
             ("We rest indeed.\n\nWe read.", {"word": "indeed"}, False), ("", {"word": "indeed"}, False)],
            exclusive=layout("paragraph_end"))
def _paragraph_end(response: str, word: str) -> Verdict:
    return _every_paragraph(response, word, -1, "ending with")


@constraint("max_sentence_length", "No sentence has more than n words (sentences end at ., ! or ?).", "structural",
            {"n": {"type": "integer", "minimum": 1, "maximum": 1000}},
            [("Short one. Another short one.", {"n": 3}, True), ("This sentence has five words.", {"n": 4}, False),
             ("", {"n": 3}, True)],
            measure="words in the longest sentence", relation="at most")
def _max_sentence_length(response: str, n: int) -> Verdict:
    longest = max((len(words(s)) for s in sentences(response)), default=0)
    return counted("words in the longest sentence", "at most", n, longest)


ARGUMENT = ("Claim", "Evidence", "Conclusion")


@constraint("argument_structure", "An argument in three labelled parts, in this order, each label at the start of a "
            "line followed by text: 'Claim:', 'Evidence:', 'Conclusion:' (labels case-insensitive).", "structural", {},
            [("Claim: cubes dominate.\nEvidence: 5 of 7 are cubes.\nConclusion: mostly cubes.", {}, True),
             ("Evidence: 5 of 7.\nClaim: cubes.\nConclusion: so.", {}, False), ("Claim: x\nConclusion: y", {}, False)],
            exclusive=layout("argument_structure"))
def _argument_structure(response: str) -> Verdict:
    at = [re.search(r"^[ \t]*" + label + r"[ \t]*:[ \t]*\S", response,
                    flags=re.MULTILINE | re.IGNORECASE) for label in ARGUMENT]
    missing = [label for label, m in zip(ARGUMENT, at) if m is None]
    if missing:
        return Verdict(False, "Claim:, Evidence:, Conclusion:", f"missing {missing}")
    starts = [m.start() for m in at]
    return Verdict(starts == sorted(starts), "Claim:, Evidence:, Conclusion: in order",
                   "in order" if starts == sorted(starts) else "out of order")


@constraint("summary_line", "The last non-empty line starts with 'Summary:' (case-insensitive) followed by text.",
            "structural", {}, [("Long text.\nSummary: short.", {}, True), ("Summary: short.\nLong text.", {}, False),
                               ("Summary:", {}, False)],
            exclusive=layout("summary_line"))
def _summary_line(response: str) -> Verdict:
    found = lines(response)
    last = found[-1].strip() if found else ""
    ok = bool(re.match(r"summary[ \t]*:[ \t]*\S", last, flags=re.IGNORECASE))
    return Verdict(ok, "a last line 'Summary: ...'", repr(last[:40]) if last else "empty")


@constraint("question_count", "At least / at most / exactly n questions (sentences ending with '?').", "structural",
            {"n": COUNT, "relation": RELATION}, [("Why? Because. How?", {"n": 2, "relation": "exactly"}, True),
                                                 ("Why? Because.", {"n": 2, "relation": "at least"}, False)],
            exclusive=("punctuation:question",), measure="questions")
def _question_count(response: str, n: int, relation: str) -> Verdict:
    return counted("questions", relation, n, len([s for s in sentences(response) if s.endswith("?")]))
