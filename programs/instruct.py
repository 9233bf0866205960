"""Constraint types of the instruction-following arm, each bound to its verifier by a
contract (the VISA method: constraints are verifiable the moment they are synthesised).

A :class:`Contract` carries a type's metadata (id, description, category, verifier track,
typed parameter schema), its ``verify(response, **params)`` and the test cases that must
pass before the type enters the registry: :func:`register` runs them and refuses a type
whose verifier gets any of them wrong, or whose cases do not include both a response that
satisfies it and one that violates it. Every verdict is a :class:`Verdict` (pass,
expected, actual, detail).

Pure: no I/O, no global state beyond the registry built at import. Where a type has an
IFEval counterpart its semantics follow IFEval's (word counts are ``\\w+`` tokens,
keyword existence is a case-insensitive search, forbidden words match whole words, a
paragraph ends at a ``***`` divider), so the two can be compared instruction by
instruction.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

CATEGORIES = ("format", "lexical", "structural", "style", "attribute", "spatial", "counting", "object_grounded",
              "ocr_grounded", "causal", "conditional")
TRACKS = ("code", "judge")
#: what perception knows of an image, as plain JSON data (a ``facts`` dict may hold any of
#: these keys; an absent key means the image has none of it):
#:   ``objects``: ``[{"name", "category", "color", "size", "material", "x", "y"}]`` with
#:     ``x``, ``y`` the centre in [0, 1] image coordinates (y down); ``size`` and
#:     ``material`` may be absent (natural images)
#:   ``rows``: ``[{"label", "series", "value"}]``, a chart's table (``value`` a number)
#:   ``texts``: the strings drawn legibly in the image (chart title, axis and tick labels)
#:   ``source``: ``"clevr"``, ``"chart"``, ``"natural"`` or ``"model"`` (a perception model's report)
FACT_KINDS = ("objects", "rows", "texts")
RELATIONS = ("at least", "at most", "exactly")


@dataclass(frozen=True)
class Verdict:
    """One constraint's verdict on one response."""

    passed: bool
    expected: str
    actual: str
    detail: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"pass": self.passed, "expected": self.expected, "actual": self.actual, "detail": self.detail}


@dataclass(frozen=True)
class Case:
    """A contract's test case: ``response`` under ``params`` must get ``passed``."""

    response: str
    params: Mapping[str, Any]
    passed: bool


@dataclass(frozen=True)
class Contract:
    """A constraint type: metadata, a parameter schema (name -> JSON Schema of a scalar or
    a list), the verifier and its test cases.

    Tracks: a ``"code"`` contract's ``verify`` decides; a ``"judge"`` contract has no
    ``verify`` (``None``) but a ``rubric`` (a statement with ``{param}`` placeholders that
    a structured LLM judge checks) and ``cues`` (phrases whose presence the simulated
    judge takes as compliance); its cases are run by the judge that is configured
    (:mod:`vicogym.judge`), not at registration.

    Visually grounded contracts read the image's *facts* (see :data:`FACT_KINDS`):
    ``needs`` names the fact kinds they require (perception prunes a type whose needs an
    image lacks), ``ground(facts, rng)`` draws parameters whose expected values follow
    from the facts (``None`` when the image supports none), and ``check_ground(facts,
    params)`` says why stored parameters do not follow from the facts (``None`` when
    they do). ``verify`` then needs only the parameters, so a stored constraint is
    checkable without the image.

    Planning: contracts sharing an ``exclusive`` group cannot be asked together (two
    whole-response formats); a ``measure`` names the quantity a contract bounds through
    its ``n`` and ``relation`` parameters (or a fixed ``relation``), so the planner can
    refuse "at most 50 words" with "at least 100 words".
    """

    id: str
    description: str
    category: str
    params: Mapping[str, Mapping[str, Any]]
    verify: Callable[..., Verdict] | None
    cases: tuple[Case, ...]
    track: str = "code"
    optional: tuple[str, ...] = field(default=())
    rubric: str = ""
    cues: tuple[str, ...] = ()
    needs: tuple[str, ...] = ()
    ground: Callable[..., dict[str, Any] | None] | None = None
    check_ground: Callable[..., str | None] | None = None
    exclusive: tuple[str, ...] = ()
    measure: str | None = None
    relation: str | None = None
    #: ``"seed"`` for the package's types, ``"discovered"`` for admitted model proposals
    origin: str = "seed"

    def check_params(self, params: Mapping[str, Any]) -> dict[str, Any]:
        """``params`` checked against the schema; ``ValueError`` naming the parameter."""
        unknown = sorted(set(params) - set(self.params))
        if unknown:
            raise ValueError(f"constraint {self.id} takes {sorted(self.params)}, got an unknown {unknown[0]!r}")
        missing = sorted(set(self.params) - set(params) - set(self.optional))
        if missing:
            raise ValueError(f"constraint {self.id} needs {missing[0]!r}")
        for name, value in params.items():
            problem = schema_problem(value, self.params[name])
            if problem:
                raise ValueError(f"constraint {self.id}: {name} {problem}")
        return dict(params)

    def __call__(self, response: str, **params: Any) -> Verdict:
        if not isinstance(response, str):
            raise TypeError(f"expected the response as a string, got {type(response).__name__}")
        if self.verify is None:
            raise ValueError(f"constraint {self.id} is judged by an LLM judge (track {self.track!r}); "
                             "verify it through vicogym.judge")
        return self.verify(response, **self.check_params(params))

    def bounds(self, params: Mapping[str, Any]) -> tuple[float, float] | None:
        """The interval of :attr:`measure` that ``params`` allow, or ``None``."""
        if self.measure is None or "n" not in params:
            return None
        relation, n = self.relation or params.get("relation", "exactly"), params["n"]
        return (n, math.inf) if relation == "at least" else (0, n) if relation == "at most" else (n, n)

    def metadata(self) -> dict[str, Any]:
        """The contract as JSON-serialisable metadata (the verifier handle is its id)."""
        return {"id": self.id, "description": self.description, "category": self.category, "track": self.track,
                "params": {k: dict(v) for k, v in self.params.items()}, "optional": list(self.optional),
                "rubric": self.rubric, "needs": list(self.needs), "origin": self.origin}


def schema_problem(value: Any, schema: Mapping[str, Any]) -> str | None:
    """Why ``value`` does not fit ``schema`` (the subset the contracts use: type, enum,
    minimum, maximum, minLength, maxLength, items), or ``None``."""
    kind = schema.get("type")
    checks = {"integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
              "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
              "string": lambda v: isinstance(v, str), "boolean": lambda v: isinstance(v, bool),
              "array": lambda v: isinstance(v, list)}
    if kind is not None and not checks[kind](value):
        return f"must be of type {kind}, got {value!r}"
    if "enum" in schema and value not in schema["enum"]:
        return f"must be one of {list(schema['enum'])}, got {value!r}"
    if "minimum" in schema and value < schema["minimum"]:
        return f"must be at least {schema['minimum']}, got {value!r}"
    if "maximum" in schema and value > schema["maximum"]:
        return f"must be at most {schema['maximum']}, got {value!r}"
    if "minLength" in schema and len(value) < schema["minLength"]:
        return f"must have at least {schema['minLength']} characters or items, got {value!r}"
    if "maxLength" in schema and len(value) > schema["maxLength"]:
        return f"must have at most {schema['maxLength']} characters or items, got {value!r}"
    if kind == "array" and "items" in schema:
        for item in value:
            problem = schema_problem(item, schema["items"])
            if problem:
                return f"item {problem}"
    return None


REGISTRY: dict[str, Contract] = {}


def register(contract: Contract) -> Contract:
    """Admit ``contract`` to the registry once its own cases pass; ``ValueError`` naming the
    failing case otherwise (or a bad category or track, or cases that never fail or never pass)."""
    if contract.category not in CATEGORIES:
        raise ValueError(f"constraint {contract.id}: expected category in {CATEGORIES}, got {contract.category!r}")
    if contract.track not in TRACKS:
        raise ValueError(f"constraint {contract.id}: expected track in {TRACKS}, got {contract.track!r}")
    if contract.id in REGISTRY:
        raise ValueError(f"constraint {contract.id} is registered already")
    if {case.passed for case in contract.cases} != {True, False}:
        raise ValueError(f"constraint {contract.id} needs test cases that pass and cases that fail")
    if contract.track == "judge":
        if contract.verify is not None or not contract.rubric:
            raise ValueError(f"judge constraint {contract.id} needs a rubric and no code verifier")
        for case in contract.cases:
            contract.check_params(case.params)
        REGISTRY[contract.id] = contract
        return contract
    if contract.verify is None:
        raise ValueError(f"code constraint {contract.id} needs a verify function")
    if (contract.ground is None) != (contract.check_ground is None) or (contract.ground is not None) != bool(contract.needs):
        raise ValueError(f"grounded constraint {contract.id} needs ground, check_ground and needs together")
    for case in contract.cases:
        verdict = contract(case.response, **case.params)
        if verdict.passed != case.passed:
            raise ValueError(f"constraint {contract.id} gets its own case wrong: {case.response!r} with {dict(case.params)} "
                             f"should {'pass' if case.passed else 'fail'} ({verdict.detail or verdict.actual})")
    REGISTRY[contract.id] = contract
    return contract


def verify_all(response: str, constraints: list[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Each constraint (``{"id": ..., "params": {...}}``) judged on ``response``."""
    out = []
    for spec in constraints:
        contract = REGISTRY.get(spec.get("id"))
        if contract is None:
            raise ValueError(f"unknown constraint id {spec.get('id')!r}")
        out.append({"id": contract.id, **contract(response, **dict(spec.get("params") or {})).to_dict()})
    return out


def pass_rate(verdicts: list[Mapping[str, Any]]) -> float:
    """The reward: the share of constraints a response satisfies (1.0 with none)."""
    return sum(bool(v["pass"]) for v in verdicts) / len(verdicts) if verdicts else 1.0


# -- helpers ------------------------------------------------------------------------------
def compare(actual: int, relation: str, n: int) -> bool:
    return actual >= n if relation == "at least" else actual <= n if relation == "at most" else actual == n


def _counted(what: str, relation: str, n: int, actual: int, detail: str = "") -> Verdict:
    return Verdict(compare(actual, relation, n), f"{relation} {n} {what}", f"{actual} {what}", detail)


def words(text: str) -> list[str]:
    """Words as IFEval counts them: runs of word characters."""
    return re.findall(r"\w+", text)


def sentences(text: str) -> list[str]:
    """Sentences: text ending at ., ! or ? followed by space or the end (abbreviations are not recognised)."""
    return [s for s in re.split(r"(?<=[.!?])\s+", text.strip()) if s.strip()]


def paragraphs(text: str) -> list[str]:
    """Paragraphs separated by blank lines."""
    return [p for p in re.split(r"\n\s*\n", text.strip()) if p.strip()]


def _strip_fence(text: str) -> str:
    text = text.strip()
    match = re.fullmatch(r"```[a-zA-Z]*\n?(.*?)\n?```", text, re.DOTALL)
    return match.group(1) if match else text


COUNT = {"type": "integer", "minimum": 0, "maximum": 100_000}
RELATION = {"type": "string", "enum": list(RELATIONS)}
TEXT = {"type": "string", "minLength": 1}
WORD_LIST = {"type": "array", "items": TEXT, "minLength": 1}


def _contract(id: str, description: str, category: str, params: Mapping[str, Any], cases: list[tuple[str, dict, bool]],
              optional: tuple[str, ...] = (), **more: Any) -> Callable[[Callable[..., Verdict]], Callable[..., Verdict]]:
    """Register the decorated verifier under a contract with these metadata and cases
    (``more``: the contract's other fields, such as ``measure`` or ``exclusive``)."""
    def wrap(verify: Callable[..., Verdict]) -> Callable[..., Verdict]:
        register(Contract(id, description, category, params, verify, tuple(Case(r, p, ok) for r, p, ok in cases),
                          optional=optional, **more))
        return verify

    return wrap


def _count_contract(id: str, description: str, category: str, what: str, pattern: str,
                    cases: list[tuple[str, dict, bool]], relation: str | None = None) -> None:
    """A type that counts the matches of ``pattern`` (multi-line) against ``n``: under a
    fixed ``relation``, or one the parameters give."""
    params = {"n": COUNT} if relation else {"n": COUNT, "relation": RELATION}

    def verify(response: str, n: int, **given: str) -> Verdict:
        return _counted(what, relation or given["relation"], n, len(re.findall(pattern, response, flags=re.MULTILINE)))

    _contract(id, description, category, params, cases)(verify)


# -- format -------------------------------------------------------------------------------
@_contract("json_format", "The whole response is valid JSON (a Markdown code fence around it is allowed).", "format",
           {}, [('{"a": 1}', {}, True), ('```json\n[1, 2]\n```', {}, True), ("a: 1", {}, False), ("", {}, False)])
def _json_format(response: str) -> Verdict:
    try:
        json.loads(_strip_fence(response))
        return Verdict(True, "valid JSON", "valid JSON")
    except ValueError as exc:
        return Verdict(False, "valid JSON", "not JSON", str(exc))


@_contract("yaml_mapping", "The whole response is a YAML mapping (a fence around it is allowed).", "format",
           {}, [("a: 1\nb: [2, 3]", {}, True), ("just words", {}, False), ("a: [1", {}, False)])
def _yaml_mapping(response: str) -> Verdict:
    import yaml

    try:
        data = yaml.safe_load(_strip_fence(response))
    except yaml.YAMLError as exc:
        return Verdict(False, "a YAML mapping", "not YAML", str(exc).splitlines()[0])
    return Verdict(isinstance(data, dict), "a YAML mapping", type(data).__name__)


@_contract("xml_document", "The whole response is one well-formed XML element.", "format",
           {}, [("<a><b>1</b></a>", {}, True), ("<a><b></a>", {}, False), ("plain", {}, False)])
def _xml_document(response: str) -> Verdict:
    import xml.etree.ElementTree as ElementTree

    try:
        ElementTree.fromstring(_strip_fence(response))
        return Verdict(True, "well-formed XML", "well-formed XML")
    except ElementTree.ParseError as exc:
        return Verdict(False, "well-formed XML", "not XML", str(exc))


@_contract("markdown_table", "A Markdown table with at least n data rows.", "format",
           {"n": COUNT}, [("| a | b |\n|---|---|\n| 1 | 2 |", {"n": 1}, True), ("| a |\n|---|", {"n": 1}, False),
                          ("no table", {"n": 1}, False)])
def _markdown_table(response: str, n: int) -> Verdict:
    lines = [line.strip() for line in response.splitlines()]
    for i in range(1, len(lines)):
        if re.fullmatch(r"\|?\s*:?-{3,}:?\s*(\|\s*:?-{3,}:?\s*)*\|?", lines[i]) and lines[i - 1].startswith("|"):
            rows = 0
            for line in lines[i + 1:]:
                if not line.startswith("|"):
                    break
                rows += 1
            return _counted("table rows", "at least", n, rows)
    return Verdict(False, f"a table of at least {n} rows", "no Markdown table")


@_contract("title", "A title wrapped in double angular brackets, such as <<poem of joy>>.", "format",
           {}, [("<<A day>>\ntext", {}, True), ("A day", {}, False), ("<<>> x", {}, False)])
def _title(response: str) -> Verdict:
    found = [t for t in re.findall(r"<<[^\n]+?>>", response) if t.lstrip("<").rstrip(">").strip()]
    return Verdict(bool(found), "a <<title>>", found[0] if found else "no title")


@_contract("highlighted_sections", "At least n sections highlighted with Markdown, *like this*.", "format",
           {"n": COUNT}, [("*one* and *two*", {"n": 2}, True), ("*one* only", {"n": 2}, False),
                          ("**bold**", {"n": 1}, True)])
def _highlighted(response: str, n: int) -> Verdict:
    found = [h for h in re.findall(r"\*[^\n\*]*\*", response) if h.strip("*").strip()]
    found += [h for h in re.findall(r"\*\*[^\n\*]*\*\*", response) if h.removeprefix("**").removesuffix("**").strip()]
    return _counted("highlighted sections", "at least", n, len(found))


@_contract("sections", "Exactly n sections, each starting with the splitter and its number (e.g. 'SECTION 1').",
           "format", {"n": COUNT, "splitter": TEXT},
           [("SECTION 1\na\nSECTION 2\nb", {"n": 2, "splitter": "SECTION"}, True),
            ("SECTION 1\na", {"n": 2, "splitter": "SECTION"}, False)])
def _sections(response: str, n: int, splitter: str) -> Verdict:
    parts = re.split(r"\s?" + re.escape(splitter) + r"\s?\d+\s?", response)
    return _counted("sections", "exactly", n, len(parts) - 1)


@_contract("choice", "The response is exactly one of the given options.", "format",
           {"options": WORD_LIST}, [("My answer is yes.", {"options": ["My answer is yes.", "My answer is no."]}, True),
                                    ("Yes.", {"options": ["My answer is yes."]}, False)])
def _choice(response: str, options: list[str]) -> Verdict:
    text = response.strip()
    return Verdict(text in options, f"one of {options}", text[:80])


@_contract("code_block", "At least one fenced code block (```), optionally in a given language.", "format",
           {"language": TEXT}, [("```python\nx = 1\n```", {"language": "python"}, True), ("x = 1", {}, False),
                                ("```\nx\n```", {"language": "python"}, False), ("```\nx\n```", {}, True)],
           optional=("language",))
def _code_block(response: str, language: str | None = None) -> Verdict:
    fences = re.findall(r"```([\w+-]*)\n.*?```", response, re.DOTALL)
    ok = any(language is None or lang.lower() == language.lower() for lang in fences)
    want = f"a {language} code block" if language else "a code block"
    return Verdict(ok, want, f"code blocks in {fences}" if fences else "no code block")


@_contract("two_responses", "Two different responses separated by six asterisks (******).", "format",
           {}, [("one\n******\ntwo", {}, True), ("one\n******\none", {}, False), ("one", {}, False)])
def _two_responses(response: str) -> Verdict:
    parts = [p.strip() for p in response.split("******")]
    ok = len(parts) == 2 and all(parts) and parts[0] != parts[1]
    return Verdict(ok, "two different responses split by ******", f"{len(parts)} parts")


_count_contract("bullet_list", "Exactly n Markdown bullet points ('* ' or '- ' at the start of a line).", "format",
                "bullet points", r"^\s*[*-]\s", [("* a\n* b", {"n": 2}, True), ("- a\n- b\n- c", {"n": 2}, False),
                                                  ("a\nb", {"n": 1}, False)], relation="exactly")
_count_contract("numbered_list", "A numbered list of n items ('1.', '2.', ... at the start of lines).", "format",
                "numbered items", r"^\s*\d+[.)]\s", [("1. a\n2. b", {"n": 2, "relation": "exactly"}, True),
                                                      ("1. a", {"n": 2, "relation": "at least"}, False)])
_count_contract("placeholders", "At least n placeholders in square brackets, such as [address].", "structural",
                "placeholders", r"\[.*?\]", [("Send to [name] at [address].", {"n": 2}, True),
                                             ("Send to [name].", {"n": 2}, False)], relation="at least")
_count_contract("markdown_headers", "At least / at most / exactly n Markdown section headers (# ...).", "structural",
                "headers", r"^#{1,6}\s+\S", [("# A\ntext\n## B\n", {"n": 2, "relation": "exactly"}, True),
                                             ("#not a header", {"n": 1, "relation": "at least"}, False)])


# -- lexical ------------------------------------------------------------------------------
@_contract("include_keywords", "Every keyword appears (case-insensitive).", "lexical",
           {"keywords": WORD_LIST}, [("The Red ball", {"keywords": ["red", "ball"]}, True),
                                     ("a ball", {"keywords": ["red", "ball"]}, False)])
def _include(response: str, keywords: list[str]) -> Verdict:
    missing = [k for k in keywords if not re.search(re.escape(k), response, flags=re.IGNORECASE)]
    return Verdict(not missing, f"all of {keywords}", f"missing {missing}" if missing else "all present")


@_contract("exclude_keywords", "None of the words appears (whole words, case-insensitive).", "lexical",
           {"keywords": WORD_LIST}, [("a ball", {"keywords": ["red"]}, True), ("a Red ball", {"keywords": ["red"]}, False),
                                     ("reddish", {"keywords": ["red"]}, True)])
def _exclude(response: str, keywords: list[str]) -> Verdict:
    found = [k for k in keywords if re.search(r"\b" + re.escape(k) + r"\b", response, flags=re.IGNORECASE)]
    return Verdict(not found, f"none of {keywords}", f"found {found}" if found else "none found")


@_contract("keyword_frequency", "A keyword appears at least / at most / exactly n times (case-insensitive).",
           "lexical", {"keyword": TEXT, "n": COUNT, "relation": RELATION},
           [("red, red and red", {"keyword": "red", "n": 3, "relation": "at least"}, True),
            ("red", {"keyword": "red", "n": 2, "relation": "at least"}, False),
            ("red red", {"keyword": "red", "n": 1, "relation": "at most"}, False)])
def _keyword_frequency(response: str, keyword: str, n: int, relation: str) -> Verdict:
    count = len(re.findall(re.escape(keyword), response, flags=re.IGNORECASE))
    return _counted(f"times {keyword!r}", relation, n, count)


@_contract("letter_frequency", "A letter appears at least / at most / exactly n times (case-insensitive).",
           "lexical", {"letter": {"type": "string", "minLength": 1, "maxLength": 1}, "n": COUNT, "relation": RELATION},
           [("banana", {"letter": "a", "n": 3, "relation": "exactly"}, True),
            ("banana", {"letter": "a", "n": 4, "relation": "at least"}, False)])
def _letter_frequency(response: str, letter: str, n: int, relation: str) -> Verdict:
    return _counted(f"letters {letter!r}", relation, n, response.lower().count(letter.lower()))


@_contract("first_word", "The response starts with the given word (case-insensitive).", "lexical",
           {"word": TEXT}, [("Hello there", {"word": "hello"}, True), ("'Hello' there", {"word": "hello"}, True),
                            ("Hi there", {"word": "hello"}, False)])
def _first_word(response: str, word: str) -> Verdict:
    found = words(response)
    actual = found[0] if found else ""
    return Verdict(actual.lower() == word.lower(), word, actual or "no words")


@_contract("last_word", "The response ends with the given word (case-insensitive; punctuation after it is allowed).",
           "lexical", {"word": TEXT}, [("That is all.", {"word": "all"}, True), ("All done", {"word": "all"}, False)])
def _last_word(response: str, word: str) -> Verdict:
    found = words(response)
    actual = found[-1] if found else ""
    return Verdict(actual.lower() == word.lower(), word, actual or "no words")


@_contract("prefix", "The response starts with the given text.", "lexical",
           {"text": TEXT}, [("Dear Sir, hello", {"text": "Dear Sir"}, True), ("Sir", {"text": "Dear Sir"}, False)])
def _prefix(response: str, text: str) -> Verdict:
    return Verdict(response.strip().startswith(text.strip()), f"starts with {text!r}", repr(response.strip()[:len(text) + 10]))


@_contract("suffix", "The response ends with the given phrase, nothing after it (case-insensitive).", "lexical",
           {"text": TEXT}, [("... Is there anything else I can help with?", {"text": "Is there anything else I can help with?"},
                             True), ("Bye. Thanks", {"text": "Bye."}, False)])
def _suffix(response: str, text: str) -> Verdict:
    ok = response.strip().lower().endswith(text.strip().lower())
    return Verdict(ok, f"ends with {text!r}", repr(response.strip()[-(len(text) + 10):]))


@_contract("quotation", "The whole response is wrapped in double quotation marks.", "lexical",
           {}, [('"All of it."', {}, True), ("All of it.", {}, False), ('"', {}, False)])
def _quotation(response: str) -> Verdict:
    text = response.strip()
    ok = len(text) > 1 and text[0] == '"' and text[-1] == '"'
    return Verdict(ok, "wrapped in double quotes", repr(text[:1] + "..." + text[-1:]) if text else "empty")


@_contract("no_commas", "No comma anywhere in the response.", "lexical",
           {}, [("No commas here.", {}, True), ("One, two", {}, False)])
def _no_commas(response: str) -> Verdict:
    return _counted("commas", "exactly", 0, response.count(","))


# -- structural ---------------------------------------------------------------------------
@_contract("word_count", "The response has at least / at most / exactly n words.", "structural",
           {"n": COUNT, "relation": RELATION}, [("one two three", {"n": 3, "relation": "exactly"}, True),
                                                ("one two", {"n": 3, "relation": "at least"}, False),
                                                ("one two three four", {"n": 3, "relation": "at most"}, False)])
def _word_count(response: str, n: int, relation: str) -> Verdict:
    return _counted("words", relation, n, len(words(response)))


@_contract("sentence_count", "The response has at least / at most / exactly n sentences.", "structural",
           {"n": COUNT, "relation": RELATION}, [("One. Two! Three?", {"n": 3, "relation": "exactly"}, True),
                                                ("One. Two.", {"n": 3, "relation": "at least"}, False)])
def _sentence_count(response: str, n: int, relation: str) -> Verdict:
    return _counted("sentences", relation, n, len(sentences(response)))


@_contract("paragraph_count", "Exactly n paragraphs, separated by the Markdown divider ***.", "structural",
           {"n": COUNT}, [("a\n***\nb", {"n": 2}, True), ("a\n***\n\n***\nb", {"n": 2}, False), ("a", {"n": 2}, False)])
def _paragraph_count(response: str, n: int) -> Verdict:
    parts = re.split(r"\s?\*\*\*\s?", response)
    empty = [i for i, p in enumerate(parts) if not p.strip() and 0 < i < len(parts) - 1]
    count = len([p for p in parts if p.strip()])
    return Verdict(count == n and not empty, f"{n} paragraphs split by ***", f"{count} paragraphs",
                   "an empty paragraph between dividers" if empty else "")


@_contract("nth_paragraph_first_word", "n paragraphs (split by blank lines), paragraph i starting with the word.",
           "structural", {"n": COUNT, "i": {"type": "integer", "minimum": 1}, "word": TEXT},
           [("Intro\n\nSecond para", {"n": 2, "i": 2, "word": "second"}, True),
            ("Intro\n\nThird para", {"n": 2, "i": 2, "word": "second"}, False),
            ("Intro", {"n": 2, "i": 1, "word": "intro"}, False)])
def _nth_paragraph(response: str, n: int, i: int, word: str) -> Verdict:
    found = paragraphs(response)
    if len(found) != n:
        return _counted("paragraphs", "exactly", n, len(found))
    if i > len(found):
        return Verdict(False, f"paragraph {i}", f"{len(found)} paragraphs")
    first = words(found[i - 1])
    actual = first[0] if first else ""
    return Verdict(actual.lower() == word.lower(), f"paragraph {i} starts with {word!r}", actual or "no words")


@_contract("postscript", "A postscript at the end, starting with the marker (P.S. or P.P.S).", "structural",
           {"marker": {"type": "string", "enum": ["P.S.", "P.P.S"]}},
           [("Body.\nP.S. more", {"marker": "P.S."}, True), ("Body.", {"marker": "P.S."}, False),
            ("Body.\nP.P.S extra", {"marker": "P.P.S"}, True)])
def _postscript(response: str, marker: str) -> Verdict:
    pattern = r"\s*p\.\s?p\.\s?s.*$" if marker == "P.P.S" else r"\s*p\.\s?s\..*$"
    found = re.findall(pattern, response.lower(), flags=re.MULTILINE)
    return Verdict(bool(found), f"a postscript starting {marker}", "found" if found else "none")


@_contract("character_count", "The response has at least / at most / exactly n characters.", "structural",
           {"n": COUNT, "relation": RELATION}, [("abcd", {"n": 4, "relation": "exactly"}, True),
                                                ("abcd", {"n": 3, "relation": "at most"}, False)])
def _character_count(response: str, n: int, relation: str) -> Verdict:
    return _counted("characters", relation, n, len(response))


# -- style --------------------------------------------------------------------------------
@_contract("lowercase", "Every letter is lowercase.", "style",
           {}, [("all small here.", {}, True), ("Not all", {}, False), ("123", {}, False)])
def _lowercase(response: str) -> Verdict:
    return Verdict(response.islower(), "all letters lowercase", "yes" if response.islower() else "an uppercase letter "
                   "or no letters")


@_contract("uppercase", "Every letter is uppercase.", "style",
           {}, [("ALL CAPS HERE.", {}, True), ("ALL Caps", {}, False)])
def _uppercase(response: str) -> Verdict:
    return Verdict(response.isupper(), "all letters uppercase", "yes" if response.isupper() else "a lowercase letter "
                   "or no letters")


@_contract("capital_words", "At least / at most / exactly n words written in all capitals.", "style",
           {"n": COUNT, "relation": RELATION}, [("THE BIG dog", {"n": 2, "relation": "exactly"}, True),
                                                ("The big DOG", {"n": 2, "relation": "at least"}, False)])
def _capital_words(response: str, n: int, relation: str) -> Verdict:
    return _counted("all-capital words", relation, n, len([w for w in words(response) if w.isupper()]))


@_contract("script", "Letters only from one script: latin, cyrillic, greek, cjk, arabic or devanagari.", "style",
           {"script": {"type": "string", "enum": ["latin", "cyrillic", "greek", "cjk", "arabic", "devanagari"]}},
           [("plain latin text", {"script": "latin"}, True), ("привет мир", {"script": "cyrillic"}, True),
            ("hello мир", {"script": "cyrillic"}, False), ("12 34", {"script": "latin"}, False)])
def _script(response: str, script: str) -> Verdict:
    import unicodedata

    names = {"latin": "LATIN", "cyrillic": "CYRILLIC", "greek": "GREEK", "cjk": "CJK", "arabic": "ARABIC",
             "devanagari": "DEVANAGARI"}
    letters = [c for c in response if c.isalpha()]
    other = [c for c in letters if not unicodedata.name(c, "").startswith(names[script])
             and not (script == "cjk" and unicodedata.name(c, "").startswith(("HIRAGANA", "KATAKANA", "HANGUL")))]
    ok = bool(letters) and not other
    return Verdict(ok, f"only {script} letters", f"{len(other)} other letters" if letters else "no letters",
                   f"e.g. {''.join(other[:5])!r}" if other else "")
