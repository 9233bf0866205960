"""Edits of the lexical constraint types (see :mod:`vicogym.programs.instruct.lexical`)."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

import numpy as np

from vicogym.editors.instruct.edits import count_edits, edits, holds, no_params
from vicogym.editors.instruct.text import (
    VOCAB,
    as_sentence,
    draw_int,
    draw_relation,
    drop_words,
    first_passing,
    material,
    other_word,
    remove_all,
)
from vicogym.programs.instruct.lexical import CONNECTORS, connectors_used, initial_letter
from vicogym.programs.instruct.text import words
from vicogym.validation import pick


def _keywords(rng: np.random.Generator, most: int) -> list[str]:
    return [str(w) for w in rng.choice(VOCAB, draw_int(rng, 1, most), replace=False)]


def satisfy_include_keywords(response, params, rng):
    # a keyword counts as a word a reader sees: "here" inside "Therefore" passes IFEval's
    # check, not a reader's, so the writer adds it unless it stands as a word of its own
    return response + "".join(
        " " + k for k in params["keywords"] if not re.search(rf"(?<!\w){re.escape(k)}(?!\w)", response, re.I)
    )


def violate_include_keywords(response, params, rng):
    return remove_all(re.escape(params['keywords'][0]), response)


edits("include_keywords", ("Include the keywords {keywords} in the response.", "Make sure to mention: {keywords}."),
      satisfy_include_keywords, violate_include_keywords, draw=lambda rng: {"keywords": _keywords(rng, 3)})


def satisfy_exclude_keywords(response: str, params: Mapping[str, Any], rng: np.random.Generator) -> str:
    pattern = "|".join(r"\b" + re.escape(k) + r"\b" for k in params["keywords"])
    return remove_all(pattern, response)


def violate_exclude_keywords(response, params, rng):
    return response + ' ' + params['keywords'][0]


edits("exclude_keywords", ("Do not include the words {keywords} in the response.", "Avoid the words: {keywords}."),
      satisfy_exclude_keywords, violate_exclude_keywords, draw=lambda rng: {"keywords": _keywords(rng, 2)})


def build_keyword_frequency(response, k, params):
    return remove_all(re.escape(params['keyword']), response) + f" {params['keyword']}" * k


edits("keyword_frequency",
      ("Use the word '{keyword}' {relation} {n} times.", "Mention '{keyword}' {relation} {n} times."),
      *count_edits("keyword_frequency", build_keyword_frequency),
      draw=lambda rng: {"keyword": pick(rng, VOCAB), "n": draw_int(rng, 1, 4), "relation": draw_relation(rng)})


#: for each letter a word that holds it once, to add where a response has too few of it
ONE_OF = {"a": "a", "b": "big", "c": "clear", "d": "dark", "e": "the", "f": "for", "g": "great", "h": "the",
          "i": "is", "j": "just", "k": "kind", "l": "light", "m": "many", "n": "one", "o": "on", "p": "picture",
          "q": "quite", "r": "very", "s": "is", "t": "the", "u": "just", "v": "very", "w": "well", "x": "next",
          "y": "very", "z": "size"}


def _letters(response: str, k: int, params: Mapping[str, Any]) -> str:
    """The response with exactly k of the letter: words are kept while their letters fit in k
    and the rest of those that hold it are dropped whole (no word loses a letter: "whte" is
    no word), then words that hold it once make up what is missing."""
    letter = params["letter"].lower()
    kept = 0

    def drop(word: str) -> bool:
        nonlocal kept
        n = word.lower().count(letter)
        if n and kept + n <= k:
            kept += n
            return False
        return n > 0

    text = drop_words(response, drop)
    text = re.sub(r"\W", lambda m: "" if letter in m.group().lower() else m.group(), text)  # outside words
    adding = [ONE_OF.get(letter, letter)] * (k - kept)
    return text + (" " + " ".join(adding) if adding else "")


edits("letter_frequency",
      ("The letter '{letter}' should appear {relation} {n} times.",
       "Use the letter {letter} {relation} {n} times in total."), *count_edits("letter_frequency", _letters),
      draw=lambda rng: {"letter": pick(rng, "abcdefghijklmnopqrstuvwxyz"), "n": draw_int(rng, 1, 6),
                        "relation": draw_relation(rng)})


def satisfy_first_word(response, params, rng):
    return f"{params['word']} {response}"


def violate_first_word(response, params, rng):
    return f"{other_word(params['word'])}, {response}"


edits("first_word", ("Start your response with the word '{word}'.", "The very first word must be '{word}'."),
      satisfy_first_word, violate_first_word, draw=lambda rng: {"word": pick(rng, VOCAB).capitalize()})


def satisfy_last_word(response, params, rng):
    return f"{response} {params['word']}."


def violate_last_word(response, params, rng):
    return f"{response} {other_word(params['word'])}."


edits("last_word", ("End your response with the word '{word}'.", "Make '{word}' the last word of your answer."),
      satisfy_last_word, violate_last_word, draw=lambda rng: {"word": pick(rng, VOCAB)})


def satisfy_prefix(response, params, rng):
    return f"{params['text']} {response}"


def violate_prefix(response, params, rng):
    return first_passing('prefix', params, [f'{lead} {response}' for lead in ('Well,', 'Note:', 'So,')], False)


edits("prefix", ("Begin your response with: {text}", 'Your answer must start with the words "{text}".'), satisfy_prefix,
      violate_prefix,
      draw=lambda rng: {"text": pick(rng, ("Dear reader,", "In short,", "Answer:", "Looking at the image,"))})


def satisfy_suffix(response, params, rng):
    return f"{response} {params['text']}"


def violate_suffix(response, params, rng):
    return first_passing('suffix', params, [f'{response} {tail}' for tail in ('Thanks.', 'Done.', 'Bye!')], False)


edits("suffix",
      ("Finish your response with this exact phrase: {text}", 'End with the phrase "{text}"; nothing after it.'),
      satisfy_suffix, violate_suffix,
      draw=lambda rng: {"text": pick(rng,
                                     ("Is there anything else I can help with?", "That is all.",
                                      "Let me know if you have additional questions."))})


def satisfy_quotation(response, params, rng):
    return '"' + response.strip() + '"'


def violate_quotation(response, params, rng):
    return 'Note: ' + response.strip()


edits("quotation",
      ("Wrap your entire response in double quotation marks.", "Put the whole answer inside double quotes."),
      satisfy_quotation, violate_quotation, draw=no_params)


def satisfy_no_commas(response, params, rng):
    return response.replace(',', '')


def violate_no_commas(response, params, rng):
    return response + ', indeed'


edits("no_commas", ("Do not use any commas in your response.", "Write without a single comma."), satisfy_no_commas,
      violate_no_commas, draw=no_params)


def satisfy_keyword_in_first_sentence(response, params, rng):
    return f"{params['keyword'].capitalize()}: {response}"


def violate_keyword_in_first_sentence(response, params, rng):
    return first_passing("keyword_in_first_sentence", params,
                         [f"{lead} {response}" for lead in ("Here is my answer.", "Let me begin.")], False)


edits("keyword_in_first_sentence",
      ("Mention '{keyword}' in your first sentence.", "The opening sentence must contain the word '{keyword}'."),
      satisfy_keyword_in_first_sentence, violate_keyword_in_first_sentence,
      draw=lambda rng: {"keyword": pick(rng, VOCAB)})


ALLITERATIONS = ("silver snakes slide south softly", "big blue boats bob beside", "fine feathers float freely far",
                 "many merry mice march madly", "tiny turtles tiptoe toward town")


def satisfy_alliteration(response: str, params: Mapping[str, Any], rng: np.random.Generator) -> str:
    run = pick(rng, ALLITERATIONS).split()[:params["n"]]
    return as_sentence(" ".join(run)) + " " + response


def violate_alliteration(response: str, params: Mapping[str, Any], rng: np.random.Generator) -> str:
    previous = [""]

    def breaking(match: re.Match) -> str:
        # a word with the previous word's initial gets a word with another initial before it
        word, letter = match.group(), initial_letter(match.group())
        previous[0], same = letter, bool(letter) and letter == previous[0]
        return ("and " if letter == "t" else "then ") + word if same else word

    return re.sub(r"\w+", breaking, response)


edits("alliteration",
      ("Include an alliterative run of at least {n} consecutive words starting with the same letter.",
       "Use alliteration: {n} or more words in a row that begin with the same letter."), satisfy_alliteration,
      violate_alliteration, draw=lambda rng: {"n": draw_int(rng, 2, 4)})


ACRONYMS = (("CPU", "central processing unit"), ("GPS", "global positioning system"), ("RGB", "red green blue"),
            ("AI", "artificial intelligence"), ("UV", "ultraviolet"))


def satisfy_acronym_definition(response, params, rng):
    return f"{params['expansion'].capitalize()} ({params['acronym']}): {response}"


def violate_acronym_definition(response, params, rng):
    return f"{params['acronym']} first. {response}"


edits("acronym_definition",
      ("Use the acronym {acronym}, defining it at first use as '{expansion} ({acronym})'.",
       "Introduce {acronym} by writing it out first: {expansion} ({acronym})."), satisfy_acronym_definition,
      violate_acronym_definition, draw=lambda rng: dict(zip(("acronym", "expansion"), pick(rng, ACRONYMS))))


def satisfy_word_diversity(response: str, params: Mapping[str, Any], rng: np.random.Generator) -> str:
    if holds("word_diversity", response, params):
        return response
    seen: set[str] = set()

    def first_use(word: str) -> bool:
        repeated = word.lower() in seen
        seen.add(word.lower())
        return repeated

    text = drop_words(response, first_use)
    return text if seen else text + " unique"


def violate_word_diversity(response: str, params: Mapping[str, Any], rng: np.random.Generator) -> str:
    found = words(response)
    word = found[0] if found else "again"
    types = len({w.lower() for w in found} | {word.lower()})
    k = max(1, math.floor(types / params["ratio"] - len(found)) + 2)
    return response + f" {word}" * k


edits("word_diversity",
      ("Avoid repeating words: at least {ratio} of your words must be distinct.",
       "Keep your vocabulary varied (distinct words / all words of at least {ratio})."), satisfy_word_diversity,
      violate_word_diversity, draw=lambda rng: {"ratio": float(pick(rng, (0.5, 0.6, 0.7, 0.8)))})


def _mean_length(response: str, params: Mapping[str, Any], comply: bool) -> str:
    """Keep only the words on one side of n: long ones to satisfy "at least" or break "at
    most", short ones otherwise (a stock word where none is left)."""
    n, long = params["n"], (params["relation"] == "at least") == comply
    if comply:
        keep = (lambda w: len(w) >= n) if long else (lambda w: len(w) <= n)
    else:
        keep = (lambda w: len(w) > n) if long else (lambda w: len(w) < n)
    text = drop_words(response, lambda w: not keep(w))
    return text if words(text) else text + (" comprehensively" if long else " a")


def satisfy_average_word_length(response, params, rng):
    return response if holds('average_word_length', response, params) else _mean_length(response, params, True)


def violate_average_word_length(response, params, rng):
    return _mean_length(response, params, False)


edits("average_word_length",
      ("Use words whose average length is {relation} {n} letters.",
       "Keep the mean word length {relation} {n} characters."), satisfy_average_word_length,
      violate_average_word_length,
      draw=lambda rng: {"n": draw_int(rng, 3, 7), "relation": pick(rng, ("at least", "at most"))})


CONNECTOR_ORDER = ("therefore", "however", "moreover", "furthermore", "consequently", "thus", "hence", "nevertheless",
                   "in addition", "for example", "as a result", "because")


def satisfy_logical_connectors(response: str, params: Mapping[str, Any], rng: np.random.Generator) -> str:
    found, text = connectors_used(response), response
    for c in (c for c in CONNECTOR_ORDER if c not in found):
        if len(connectors_used(text)) >= params["n"]:
            break
        text += f" {c.capitalize()}, the point stands."
    return text


def violate_logical_connectors(response: str, params: Mapping[str, Any], rng: np.random.Generator) -> str:
    return remove_all("|".join(r"\b" + r"\s+".join(c.split()) + r"\b" for c in CONNECTORS), response)


edits("logical_connectors",
      ("Link your ideas with at least {n} different logical connectors (therefore, however, ...).",
       "Use {n} or more distinct connectives such as 'therefore', 'however', 'moreover'."), satisfy_logical_connectors,
      violate_logical_connectors, draw=lambda rng: {"n": draw_int(rng, 1, 3)})


def build_hashtags(response, k, params):
    return response.replace('#', '') + ('\n' + ' '.join('#' + w for w in material(response, k)[:k]) if k else '')


edits("hashtags", ("Add at least {n} hashtags, like #sunset.", "Use {n} or more #hashtags anywhere in your answer."),
      *count_edits("hashtags", build_hashtags, relation="at least"), draw=lambda rng: {"n": draw_int(rng, 1, 3)})
