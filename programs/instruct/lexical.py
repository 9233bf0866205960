"""Lexical constraint types: keywords and their frequency, letters, first and last
words, prefixes and suffixes, quotation, commas, alliteration, acronyms, lexical
diversity, word length, logical connectors and hashtags."""

from __future__ import annotations

import re

from vicogym.programs.instruct.contracts import WHOLE_RESPONSE, Verdict, constraint, layout
from vicogym.programs.instruct.text import COUNT, RELATION, TEXT, WORD_LIST, counted, sentences, words


@constraint("include_keywords", "Every keyword appears (case-insensitive).", "lexical",
            {"keywords": WORD_LIST}, [("The Red ball", {"keywords": ["red", "ball"]}, True),
                                      ("a ball", {"keywords": ["red", "ball"]}, False)])
def _include(response: str, keywords: list[str]) -> Verdict:
    missing = [k for k in keywords if not re.search(re.escape(k), response, flags=re.IGNORECASE)]
    return Verdict(not missing, f"all of {keywords}", f"missing {missing}" if missing else "all present")


@constraint("exclude_keywords", "None of the words appears (whole words, case-insensitive).", "lexical",
            {"keywords": WORD_LIST},
            [("a ball", {"keywords": ["red"]}, True), ("a Red ball", {"keywords": ["red"]}, False),
             ("reddish", {"keywords": ["red"]}, True)])
def _exclude(response: str, keywords: list[str]) -> Verdict:
    found = [k for k in keywords if re.search(r"\b" + re.escape(k) + r"\b", response, flags=re.IGNORECASE)]
    return Verdict(not found, f"none of {keywords}", f"found {found}" if found else "none found")


@constraint("keyword_frequency", "A keyword appears at least / at most / exactly n times (case-insensitive).",
            "lexical", {"keyword": TEXT, "n": COUNT, "relation": RELATION},
            [("red, red and red", {"keyword": "red", "n": 3, "relation": "at least"}, True),
             ("red", {"keyword": "red", "n": 2, "relation": "at least"}, False),
             ("red red", {"keyword": "red", "n": 1, "relation": "at most"}, False)])
def _keyword_frequency(response: str, keyword: str, n: int, relation: str) -> Verdict:
    count = len(re.findall(re.escape(keyword), response, flags=re.IGNORECASE))
    return counted(f"times {keyword!r}", relation, n, count)


@constraint("letter_frequency", "A letter appears at least / at most / exactly n times (case-insensitive).",
            "lexical", {"letter": {"type": "string", "minLength": 1, "maxLength": 1}, "n": COUNT, "relation": RELATION},
            [("banana", {"letter": "a", "n": 3, "relation": "exactly"}, True),
             ("banana", {"letter": "a", "n": 4, "relation": "at least"}, False)])
def _letter_frequency(response: str, letter: str, n: int, relation: str) -> Verdict:
    return counted(f"letters {letter!r}", relation, n, response.lower().count(letter.lower()))


@constraint("first_word", "The response starts with the given word (case-insensitive).", "lexical",
            {"word": TEXT}, [("Hello there", {"word": "hello"}, True), ("'Hello' there", {"word": "hello"}, True),
                             ("Hi there", {"word": "hello"}, False)])
def _first_word(response: str, word: str) -> Verdict:
    found = words(response)
    actual = found[0] if found else ""
    return Verdict(actual.lower() == word.lower(), word, actual or "no words")


@constraint("last_word", "The response ends with the given word (case-insensitive; punctuation after it is allowed).",
            "lexical", {"word": TEXT}, [("That is all.", {"word": "all"}, True), ("All done", {"word": "all"}, False)])
def _last_word(response: str, word: str) -> Verdict:
    found = words(response)
    actual = found[-1] if found else ""
    return Verdict(actual.lower() == word.lower(), word, actual or "no words")


@constraint("prefix", "The response starts with the given text (case-insensitive, as IFEval's repeat_prompt).",
            "lexical", {"text": TEXT},
            [("Dear Sir, hello", {"text": "Dear Sir"}, True), ("Sir", {"text": "Dear Sir"}, False),
             ("dear sir, hello", {"text": "Dear Sir"}, True)], exclusive=layout("prefix"))
def _prefix(response: str, text: str) -> Verdict:
    ok = response.strip().lower().startswith(text.strip().lower())
    return Verdict(ok, f"starts with {text!r}", repr(response.strip()[:len(text) + 10]))


@constraint("suffix",
            "The response ends with the given phrase, nothing after it but a closing double quote (case-insensitive).",
            "lexical", {"text": TEXT},
            [("... Is there anything else I can help with?", {"text": "Is there anything else I can help with?"}, True),
             ("Bye. Thanks", {"text": "Bye."}, False)], exclusive=layout("suffix"))
def _suffix(response: str, text: str) -> Verdict:
    # as IFEval's end_checker: double quotes wrapping the response do not count
    ok = response.strip().strip('"').lower().endswith(text.strip().lower())
    return Verdict(ok, f"ends with {text!r}", repr(response.strip()[-(len(text) + 10):]))


@constraint("quotation", "The whole response is wrapped in double quotation marks.", "lexical",
            {}, [('"All of it."', {}, True), ("All of it.", {}, False), ('"', {}, False)],
            exclusive=WHOLE_RESPONSE)
def _quotation(response: str) -> Verdict:
    text = response.strip()
    ok = len(text) > 1 and text[0] == '"' and text[-1] == '"'
    return Verdict(ok, "wrapped in double quotes", repr(text[:1] + "..." + text[-1:]) if text else "empty")


@constraint("no_commas", "No comma anywhere in the response.", "lexical",
            {}, [("No commas here.", {}, True), ("One, two", {}, False)])
def _no_commas(response: str) -> Verdict:
    return counted("commas", "exactly", 0, response.count(","))


# new lexical types (VISA's seed registry)
@constraint("keyword_in_first_sentence", "The first sentence contains the keyword (a whole word, case-insensitive).",
            "lexical", {"keyword": TEXT},
            [("Red is bold. Blue too.", {"keyword": "red"}, True),
             ("Blue is calm. Red too.", {"keyword": "red"}, False), ("", {"keyword": "red"}, False)])
def _keyword_in_first_sentence(response: str, keyword: str) -> Verdict:
    found = sentences(response)
    first = found[0] if found else ""
    ok = bool(re.search(r"\b" + re.escape(keyword) + r"\b", first, flags=re.IGNORECASE))
    return Verdict(ok, f"{keyword!r} in the first sentence", repr(first[:80]) if first else "no sentence")


def initial_letter(word: str) -> str:
    return word[0].lower() if word[0].isalpha() else ""


@constraint("alliteration", "An alliterative run: at least n consecutive words starting with the same letter "
            "(case-insensitive).", "lexical", {"n": {"type": "integer", "minimum": 2, "maximum": 20}},
            [("Silver snakes slide south.", {"n": 4}, True), ("Silver snakes never slide.", {"n": 3}, False),
             ("", {"n": 2}, False)],
            measure="alliterative run", relation="at least")
def _alliteration(response: str, n: int) -> Verdict:
    best = run = 0
    previous = ""
    for word in words(response):
        letter = initial_letter(word)
        run = run + 1 if letter and letter == previous else (1 if letter else 0)
        previous, best = letter, max(best, run)
    return counted("words in the longest alliterative run", "at least", n, best)


@constraint("acronym_definition", "The acronym (whole word, case-sensitive) is introduced by its expansion, written "
            "'expansion (ACRONYM)' (expansion case-insensitive), no earlier than its first use.", "lexical",
            {"acronym": {"type": "string", "pattern": "^[A-Z][A-Z0-9]+$", "minLength": 2}, "expansion": TEXT},
            [("A central processing unit (CPU) computes. The CPU is fast.", {"acronym": "CPU", "expansion":
                                                                              "central processing unit"}, True),
             ("The CPU is a central processing unit (CPU).", {"acronym": "CPU", "expansion": "central processing unit"},
              False), ("The processor computes.", {"acronym": "CPU", "expansion": "central processing unit"}, False)],
            exclusive=("case:acronym",))
def _acronym_definition(response: str, acronym: str, expansion: str) -> Verdict:
    definition = re.search("(?i:" + re.escape(expansion) + r")\s*\(" + re.escape(acronym) + r"\)", response)
    uses = [m.start() for m in re.finditer(r"\b" + re.escape(acronym) + r"\b", response)]
    if definition is None or not uses:
        return Verdict(False, f"{expansion} ({acronym})", "no definition")
    defined_at = definition.end() - len(acronym) - 1
    ok = uses[0] >= defined_at
    return Verdict(ok, f"{acronym} defined at its first use", "defined" if ok else "used before its definition")


@constraint("word_diversity", "Lexical diversity: distinct words / all words (case-insensitive \\w+ words) is at least "
            "the ratio, and there is at least one word.", "lexical",
            {"ratio": {"type": "number", "minimum": 0.05, "maximum": 1}},
            [("every word differs here", {"ratio": 1.0}, True), ("the the the cat", {"ratio": 0.6}, False),
             ("", {"ratio": 0.5}, False)])
def _word_diversity(response: str, ratio: float) -> Verdict:
    found = [w.lower() for w in words(response)]
    actual = len(set(found)) / len(found) if found else 0.0
    return Verdict(bool(found) and actual >= ratio, f"type/token ratio at least {ratio:g}", f"{actual:.3f}",
                   f"{len(set(found))} distinct of {len(found)} words")


@constraint("average_word_length",
            "The mean length of the \\w+ words is at least / at most n characters (and there is at least one word).",
            "lexical",
            {"n": {"type": "number", "minimum": 1, "maximum": 30},
             "relation": {"type": "string", "enum": ["at least", "at most"]}},
            [("extraordinary vocabulary", {"n": 6, "relation": "at least"}, True),
             ("a cat sat", {"n": 3, "relation": "at least"}, False),
             ("a cat sat", {"n": 3, "relation": "at most"}, True), ("", {"n": 3, "relation": "at most"}, False)],
            measure="average word length")
def _average_word_length(response: str, n: float, relation: str) -> Verdict:
    found = words(response)
    mean = sum(map(len, found)) / len(found) if found else 0.0
    ok = bool(found) and (mean >= n if relation == "at least" else mean <= n)
    return Verdict(ok, f"mean word length {relation} {n:g}", f"{mean:.2f}" if found else "no words")


CONNECTORS = ("therefore", "however", "moreover", "furthermore", "consequently", "thus", "hence", "nevertheless",
              "because", "in addition", "for example", "as a result")


def connectors_used(response: str) -> list[str]:
    return [c for c in CONNECTORS if re.search(r"\b" + r"\s+".join(c.split()) + r"\b", response, flags=re.IGNORECASE)]


@constraint(
    "logical_connectors",
    "At least n distinct logical connectors (whole words, case-insensitive) from: " + ", ".join(CONNECTORS) + ".",
    "lexical",
    {"n": {"type": "integer", "minimum": 1, "maximum": len(CONNECTORS)}},
    [
        ("It rained; therefore we stayed. However, we read.", {"n": 2}, True),
        ("Therefore, therefore.", {"n": 2}, False),
        ("Thusly.", {"n": 1}, False),
    ],
    measure="logical connectors",
    relation="at least",
)
def _logical_connectors(response: str, n: int) -> Verdict:
    found = connectors_used(response)
    return counted("distinct connectors", "at least", n, len(found), f"found {found}")


HASHTAG = r"(?<![\w#])#[^\W\d_]\w*"


@constraint("hashtags",
            "At least n hashtags: '#' then a word starting with a letter, not attached to a preceding word.", "lexical",
            {"n": COUNT}, [("#sunset at the #beach", {"n": 2}, True), ("# Title\nissue#3", {"n": 1}, False)],
            measure="hashtags", relation="at least")
def _hashtags(response: str, n: int) -> Verdict:
    return counted("hashtags", "at least", n, len(re.findall(HASHTAG, response)))
