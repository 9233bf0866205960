"""Edits of the structural constraint types (see :mod:`vicogym.programs.instruct.structural`)."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from vicogym.editors.instruct.edits import count_edits, edits, holds, no_params
from vicogym.editors.instruct.text import (
    FILLER,
    VOCAB,
    as_sentence,
    chunks,
    draw_int,
    draw_relation,
    drop_words,
    insert_middle,
    material,
    other_word,
)
from vicogym.programs.instruct.structural import ARGUMENT
from vicogym.programs.instruct.text import paragraphs, words
from vicogym.validation import pick


def build_placeholders(response, k, params):
    return ' '.join(f'[{w}]' for w in material(response, k)[:k]) + '\n' + response.replace('[', '(')


edits("placeholders",
      ("Include at least {n} placeholders in square brackets, such as [address].",
       "Leave {n} or more [placeholders] in square brackets."),
      *count_edits("placeholders", build_placeholders, relation="at least"),
      draw=lambda rng: {"n": draw_int(rng, 1, 3)})


def _headers(response: str, k: int, params: Mapping[str, Any]) -> str:
    if k == 0:
        return response.replace("#", "")
    return "\n\n".join(f"# Part {i + 1}\n{chunk}" for i, chunk in enumerate(chunks(response, k)))


edits("markdown_headers",
      ("Use {relation} {n} Markdown headers (lines starting with #).",
       "Organise the answer under {relation} {n} section headings written as '# Heading'."),
      *count_edits("markdown_headers", _headers),
      draw=lambda rng: {"n": draw_int(rng, 1, 4), "relation": draw_relation(rng)})


def _word_count(response: str, k: int, params: Mapping[str, Any]) -> str:
    # too many words: drop them from the middle, keeping the opening and the ending;
    # too few: filler words in the middle
    found = list(re.finditer(r"\w+", response))
    if len(found) > k:
        if k == 0:
            return drop_words(response, lambda w: True)
        head, tail = (k + 1) // 2, k // 2
        return response[:found[head - 1].end()] + (" " + response[found[-tail].start():] if tail else "")
    if len(found) == k:
        return response
    return insert_middle(response, " ".join((FILLER * (k // len(FILLER) + 1))[:k - len(found)]))


edits("word_count", ("Answer with {relation} {n} words.", "Your response should contain {relation} {n} words."),
      *count_edits("word_count", _word_count),
      draw=lambda rng: {"n": draw_int(rng, 5, 60), "relation": draw_relation(rng)})


def build_sentence_count(response, k, params):
    return ' '.join(as_sentence(c) for c in chunks(response, k)) if k else ''


edits("sentence_count", ("Answer in {relation} {n} sentences.", "Write {relation} {n} sentences."),
      *count_edits("sentence_count", build_sentence_count),
      draw=lambda rng: {"n": draw_int(rng, 1, 6), "relation": draw_relation(rng)})


def build_paragraph_count(response, k, params):
    return '\n***\n'.join(chunks(response, k)) if k else ''


edits("paragraph_count",
      ("There should be {n} paragraphs, separated by the Markdown divider ***.",
       "Write exactly {n} paragraphs with *** between them."),
      *count_edits("paragraph_count", build_paragraph_count, relation="exactly"),
      draw=lambda rng: {"n": draw_int(rng, 2, 4)})  # "1 paragraph, separated by ***" reads as a contradiction


def _nth(response: str, k: int, params: Mapping[str, Any]) -> str:
    parts = chunks(response, k)
    parts[params["i"] - 1] = f"{params['word']} {parts[params['i'] - 1]}"
    return "\n\n".join(parts)


def _draw_nth(rng: np.random.Generator) -> dict[str, Any]:
    n = draw_int(rng, 2, 4)
    return {"n": n, "i": draw_int(rng, 1, n), "word": pick(rng, VOCAB)}


edits("nth_paragraph_first_word",
      ("Write {n} paragraphs separated by blank lines; paragraph {i} must start with the word '{word}'.",
       "Use {n} paragraphs (blank lines between); begin paragraph {i} with '{word}'."),
      *count_edits("nth_paragraph_first_word", _nth, relation="exactly"), draw=_draw_nth)


def satisfy_postscript(response, params, rng):
    return f"{response}\n{params['marker']} {' '.join(material(response)[:5])}"


def violate_postscript(response, params, rng):
    return response.replace('.', '')


edits("postscript",
      ("At the end of your response, add a postscript starting with {marker}.",
       "Close with a postscript that begins '{marker}'."), satisfy_postscript, violate_postscript,
      draw=lambda rng: {"marker": pick(rng, ("P.S.", "P.P.S"))})


def _characters(response: str, k: int, params: Mapping[str, Any]) -> str:
    """Exactly k characters, no word cut ("It is labelleor Share" was a cut): too long, whole
    words go from the middle, keeping the opening and the ending; too short, filler words go
    in the middle; spaces at the middle make up the last few characters."""
    tokens = re.findall(r"\S+\s*", response)  # each word with the whitespace after it
    while len("".join(tokens)) > k and len(tokens) > 1:
        del tokens[len(tokens) // 2]
    text = "".join(tokens)
    if len(text) > k:  # one word longer than k: only a cut fits
        return text[:k]
    words = iter(material(response) * (k // 2 + 1))
    while len(text) < k:
        word = next(words)
        if len(text) + len(word) + (2 if text else 0) > k:
            break
        text = insert_middle(text, word)
    missing = k - len(text)
    if not missing:
        return text
    spaces = [m.start() for m in re.finditer(r" ", text)]
    at = min(spaces, key=lambda i: abs(i - len(text) // 2)) if spaces else len(text)
    return text[:at] + " " * missing + text[at:]


edits("character_count",
      ("Answer in {relation} {n} characters.", "Your response must be {relation} {n} characters long."),
      *count_edits("character_count", _characters),
      draw=lambda rng: {"n": draw_int(rng, 20, 300), "relation": draw_relation(rng)})


def _each_paragraph(response: str, edit: Callable[[str], str], empty: str) -> str:
    found = paragraphs(response)
    return "\n\n".join(edit(p.strip()) for p in found) if found else empty


def satisfy_paragraph_start(response, params, rng):
    return _each_paragraph(response, lambda x: f"{params['word']} {x}", params['word'] + '.')


def violate_paragraph_start(response, params, rng):
    return f"{other_word(params['word'])} {response}"


edits("paragraph_start", ("Start every paragraph with the word '{word}'.", "Each paragraph must begin with '{word}'."),
      satisfy_paragraph_start, violate_paragraph_start, draw=lambda rng: {"word": pick(rng, VOCAB).capitalize()})


def satisfy_paragraph_end(response, params, rng):
    return _each_paragraph(response, lambda x: f"{x} {params['word']}.", params['word'] + '.')


def violate_paragraph_end(response, params, rng):
    return f"{response} {other_word(params['word'])}."


edits("paragraph_end", ("End every paragraph with the word '{word}'.", "Each paragraph must finish with '{word}'."),
      satisfy_paragraph_end, violate_paragraph_end, draw=lambda rng: {"word": pick(rng, VOCAB)})


def satisfy_max_sentence_length(response: str, params: Mapping[str, Any], rng: np.random.Generator) -> str:
    if holds("max_sentence_length", response, params):
        return response
    found, n = words(response), params["n"]
    return " ".join(" ".join(found[i:i + n]) + "." for i in range(0, len(found), n))


def violate_max_sentence_length(response, params, rng):
    return response + ' ' + ' '.join(material(response, params['n'] + 1)[:params['n'] + 1]) + '.'


edits("max_sentence_length", ("Keep every sentence to at most {n} words.", "No sentence may exceed {n} words."),
      satisfy_max_sentence_length, violate_max_sentence_length, draw=lambda rng: {"n": draw_int(rng, 5, 20)})


def satisfy_argument_structure(response: str, params: Mapping[str, Any], rng: np.random.Generator) -> str:
    return "\n".join(f"{label}: {as_sentence(chunk)}" for label, chunk in zip(ARGUMENT, chunks(response, 3)))


def violate_argument_structure(response, params, rng):
    return response.replace(':', ' -')


edits("argument_structure",
      ("Structure your answer as an argument with three labelled parts: Claim:, Evidence:, Conclusion:.",
       "Write 'Claim:', then 'Evidence:', then 'Conclusion:', each starting a line."), satisfy_argument_structure,
      violate_argument_structure, draw=no_params)


def satisfy_summary_line(response, params, rng):
    return f"{response.rstrip()}\nSummary: {' '.join(material(response)[:8])}.".lstrip()


def violate_summary_line(response, params, rng):
    return response + '\nThat is all.'


edits("summary_line",
      ("End with a line that starts with 'Summary:'.", "Finish with a one-line summary beginning 'Summary:'."),
      satisfy_summary_line, violate_summary_line, draw=no_params)


QUESTIONS = ("Why does it matter?", "What comes next?", "Which one is larger?", "How could it change?")


def build_question_count(response, k, params):
    return response.replace('?', '.') + ''.join(' ' + QUESTIONS[i % len(QUESTIONS)] for i in range(k))


edits("question_count", ("Ask {relation} {n} questions in your response.", "Include {relation} {n} questions."),
      *count_edits("question_count", build_question_count),
      draw=lambda rng: {"n": draw_int(rng, 1, 3), "relation": draw_relation(rng)})
