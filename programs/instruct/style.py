"""Style constraint types: the response's language, narrative person, contractions, case,
capital words and script (code-verified), and tone, audience, persona and rhetorical
devices (judged by an LLM judge)."""

from __future__ import annotations

import re
import unicodedata

from vicogym.programs.instruct.contracts import Verdict, constraint, judged
from vicogym.programs.instruct.text import COUNT, RELATION, counted, words

# new style types (VISA's seed registry): three code-verified, four judged by an LLM judge
LANGUAGES = {"en": "English", "fr": "French", "de": "German", "es": "Spanish", "it": "Italian", "pt": "Portuguese",
             "nl": "Dutch"}


def detect_language(text: str) -> str | None:
    """The language langdetect detects (an ISO 639-1 code), ``None`` when it finds no features.
    Seeded per call: langdetect samples n-grams at random, and a verdict must not vary run to run."""
    from langdetect import LangDetectException, detector_factory

    detector_factory.init_factory()
    detector = detector_factory._factory.create()
    detector.seed = 0
    detector.append(text)
    try:
        return detector.detect()
    except LangDetectException:
        return None


@constraint("language", "The response is written in the language (langdetect's guess, an ISO 639-1 code; as in "
            "IFEval's response_language, text in which langdetect finds no features counts as compliant).", "style",
            {"language": {"type": "string", "enum": list(LANGUAGES)}},
            [("Das Wetter ist heute sehr schön und wir gehen in den Park.", {"language": "de"}, True),
             ("The weather is very nice today and we are going to the park.", {"language": "de"}, False),
             ("The weather is very nice today and we are going to the park.", {"language": "en"}, True)],
            exclusive=("language",))
def _language(response: str, language: str) -> Verdict:
    found = detect_language(response)
    return Verdict(found in (None, language), LANGUAGES[language],
                   LANGUAGES.get(found, found) if found else "undetectable")


PRONOUNS = {"first": {"i", "me", "my", "mine", "myself", "we", "us", "our", "ours", "ourselves"},
            "second": {"you", "your", "yours", "yourself", "yourselves"}}


def pronouns(text: str) -> dict[str, list[str]]:
    """First- and second-person pronouns in ``text`` (whole words, case-insensitive)."""
    return {person: [w for w in words(text) if w.lower() in found] for person, found in PRONOUNS.items()}


@constraint("perspective", "Narrative person, by a pronoun heuristic: 'first' uses a first-person pronoun (I, me, "
            "we, our, ...) and no second-person one; 'second' uses you/your and no first-person one; 'third' uses "
            "neither (and has words). Words like 'US' count as pronouns; meaning is not checked.", "style",
            {"person": {"type": "string", "enum": ["first", "second", "third"]}},
            [("I saw two cubes.", {"person": "first"}, True), ("I saw what you saw.", {"person": "first"}, False),
             ("You see two cubes.", {"person": "second"}, True), ("Two cubes stand.", {"person": "third"}, True),
             ("We see two cubes.", {"person": "third"}, False), ("", {"person": "third"}, False)])
def _perspective(response: str, person: str) -> Verdict:
    found = pronouns(response)
    if person == "third":
        ok = bool(words(response)) and not found["first"] and not found["second"]
    else:
        other = "second" if person == "first" else "first"
        ok = bool(found[person]) and not found[other]
    return Verdict(ok, f"{person}-person", f"first-person {found['first'][:3]}, second-person {found['second'][:3]}")


CONTRACTION = (r"\b\w+n['’]t\b|\b\w+['’](?:re|ve|ll|m|d)\b"
               r"|\b(?:it|that|there|here|what|who|where|he|she|let)['’]s\b")


@constraint("no_contractions", "No contractions: no word ending in n't, 're, 've, 'll, 'm or 'd, nor it's, that's, "
            "there's, let's and the like (straight or curly apostrophe; a possessive 's does not count).", "style", {},
            [("It is what we will do.", {}, True), ("It's what we'll do.", {}, False), ("The cube's colour.", {}, True),
             ("I can’t.", {}, False)])
def _no_contractions(response: str) -> Verdict:
    found = re.findall(CONTRACTION, response, flags=re.IGNORECASE)
    return counted("contractions", "exactly", 0, len(found), f"e.g. {found[:3]}" if found else "")


TONES = ["formal", "friendly", "enthusiastic", "neutral", "humorous", "persuasive"]
AUDIENCES = ["children", "experts", "beginners", "teenagers", "engineers"]
ROLES = ["tour guide", "detective", "teacher", "sports commentator", "museum curator"]
DEVICES = ["rhetorical question", "metaphor", "simile", "repetition", "contrast"]


SIMPLIFYING = re.compile(r"\b(put simply|simply put|in simple terms|in plain words|to put it simply)\b", re.IGNORECASE)
SLANG = re.compile(r"\b(lol|gonna|wanna|kinda|omg|yeah|awesome|cool)\b", re.IGNORECASE)


def _tone_evidence(response: str, tone: str) -> str | None:
    if tone == "formal" and (re.search(CONTRACTION, response, re.IGNORECASE) or SLANG.search(response)
                             or "!" in response):
        return "a formal tone has no contractions, slang or exclamation marks"
    if tone == "neutral" and "!" in response:
        return "a neutral tone has no exclamation marks"
    if tone == "enthusiastic" and "!" not in response:
        return "an enthusiastic tone shows it (an exclamation at least)"
    return None


def _audience_evidence(response: str, audience: str) -> str | None:
    if audience in ("experts", "engineers") and SIMPLIFYING.search(response):
        return f"writing for {audience} does not simplify ({SIMPLIFYING.search(response).group(0)!r})"
    ws = words(response)
    if audience == "children" and ws and sum(map(len, ws)) / len(ws) > 6.0:
        return "writing for children uses short words"
    return None


def _device_evidence(response: str, device: str) -> str | None:
    if device == "rhetorical question" and "?" not in response:
        return "a rhetorical question is a question (no question mark)"
    if device == "simile" and not re.search(r"\blike\b|\bas \w+ as\b", response, re.IGNORECASE):
        return "a simile compares with 'like' or 'as ... as'"
    if device == "contrast" and not re.search(r"\b(but|however|whereas|while|yet|unlike)\b", response, re.IGNORECASE):
        return "a contrast sets two things against each other (but, however, whereas ...)"
    if device == "repetition":
        counts = {}
        for w in (w.lower() for w in words(response) if len(w) > 3):
            counts[w] = counts.get(w, 0) + 1
        if not counts or max(counts.values()) < 3:
            return "repetition repeats a word or phrase (three times at least)"
    return None


judged("tone", "The response is written in the given tone (judged).", "style",
       {"tone": {"type": "string", "enum": TONES}}, "The response is written in a {tone} tone throughout.",
       ("Tone: {tone}.", "Keeping the tone {tone}:"),
       [("Tone: formal. The chart shows a steady rise.", {"tone": "formal"}, True),
        ("lol the chart goes up, whatever", {"tone": "formal"}, False),
        ("Tone: formal. lol it's up!", {"tone": "formal"}, False)], evidence=_tone_evidence)


judged("audience_adaptation", "The response is adapted to the given audience: vocabulary, detail and examples fit "
       "it (judged).", "style", {"audience": {"type": "string", "enum": AUDIENCES}},
       "The response is adapted to {audience}: its vocabulary, level of detail and examples suit them.",
       ("Explained for {audience}:", "For {audience}, put simply:"),
       [("Explained for children: the big red ball is next to a tiny blue box.", {"audience": "children"}, True),
        ("The spatial configuration exhibits heteroscedastic dispersion.", {"audience": "children"}, False),
        ("For experts, put simply: the line goes up.", {"audience": "experts"}, False)],
       evidence=_audience_evidence)


judged("persona", "The response is written in the voice of the given role (judged).", "style",
       {"role": {"type": "string", "enum": ROLES}}, "The response is written in the voice of a {role}, consistently.",
       ("As your {role},", "Speaking as a {role},"),
       [("As your tour guide, let me point out the tower on your left.", {"role": "tour guide"}, True),
        ("The tower is on the left.", {"role": "tour guide"}, False)])


judged("rhetorical_device", "The response uses the given rhetorical device at least once (judged).", "style",
       {"device": {"type": "string", "enum": DEVICES}}, "The response uses at least one {device}, recognisably.",
       ("(a {device} follows)", "To use a {device}:"),
       [("To use a metaphor: the skyline is a saw blade against the dusk.", {"device": "metaphor"}, True),
        ("The skyline is jagged.", {"device": "metaphor"}, False),
        ("To use a rhetorical question: the skyline is jagged.", {"device": "rhetorical question"}, False)],
       evidence=_device_evidence)


@constraint("lowercase", "Every letter is lowercase.", "style",
            {}, [("all small here.", {}, True), ("Not all", {}, False), ("123", {}, False)],
            exclusive=("case", "case:acronym"))
def _lowercase(response: str) -> Verdict:
    return Verdict(response.islower(), "all letters lowercase", "yes" if response.islower() else "an uppercase letter "
                   "or no letters")


@constraint("uppercase", "Every letter is uppercase.", "style",
            {}, [("ALL CAPS HERE.", {}, True), ("ALL Caps", {}, False)],
            exclusive=("case",))
def _uppercase(response: str) -> Verdict:
    return Verdict(response.isupper(), "all letters uppercase", "yes" if response.isupper() else "a lowercase letter "
                   "or no letters")


@constraint("capital_words", "At least / at most / exactly n words written in all capitals.", "style",
            {"n": COUNT, "relation": RELATION}, [("THE BIG dog", {"n": 2, "relation": "exactly"}, True),
                                                 ("The big DOG", {"n": 2, "relation": "at least"}, False)],
            exclusive=("case",), measure="all-capital words")
def _capital_words(response: str, n: int, relation: str) -> Verdict:
    return counted("all-capital words", relation, n, len([w for w in words(response) if w.isupper()]))


#: Unicode name prefixes of each script's letters
SCRIPTS = {"latin": ("LATIN",), "cyrillic": ("CYRILLIC",), "greek": ("GREEK",),
           "cjk": ("CJK", "HIRAGANA", "KATAKANA", "HANGUL"), "arabic": ("ARABIC",), "devanagari": ("DEVANAGARI",)}


@constraint("script", "Letters only from one script: latin, cyrillic, greek, cjk, arabic or devanagari.", "style",
            {"script": {"type": "string", "enum": list(SCRIPTS)}},
            [("plain latin text", {"script": "latin"}, True), ("привет мир", {"script": "cyrillic"}, True),
             ("hello мир", {"script": "cyrillic"}, False), ("12 34", {"script": "latin"}, False)],
            exclusive=("language",))
def _script(response: str, script: str) -> Verdict:
    letters = [c for c in response if c.isalpha()]
    other = [c for c in letters if not unicodedata.name(c, "").startswith(SCRIPTS[script])]
    ok = bool(letters) and not other
    return Verdict(ok, f"only {script} letters", f"{len(other)} other letters" if letters else "no letters",
                   f"e.g. {''.join(other[:5])!r}" if other else "")
