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
from dataclasses import dataclass, field, replace
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
    (:mod:`vicogym.instruct.judge`), not at registration.

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
                             "verify it through vicogym.instruct.judge")
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
    minimum, maximum, minLength, maxLength, pattern, items), or ``None``."""
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
    if "pattern" in schema and not re.search(schema["pattern"], value):
        return f"must match {schema['pattern']!r}, got {value!r}"
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


BLANK = Verdict(False, "a response", "a blank response", "a blank response follows no instruction")


def verify_all(response: str, constraints: list[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Each constraint (``{"id": ..., "params": {...}}``) judged on ``response``. A blank
    response fails every constraint, as IFEval's harness has it: "no commas" or "at most
    50 words" must not reward saying nothing."""
    out = []
    for spec in constraints:
        contract = REGISTRY.get(spec.get("id"))
        if contract is None:
            raise ValueError(f"unknown constraint id {spec.get('id')!r}")
        params = contract.check_params(dict(spec.get("params") or {}))
        verdict = BLANK if not response.strip() else contract(response, **params)
        out.append({"id": contract.id, **verdict.to_dict()})
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
    # IFEval's unfencing: strip a leading ```json, ```Json, ```JSON, ``` (in turn) and a trailing ```
    text = response.strip()
    for fence in ("```json", "```Json", "```JSON", "```"):
        text = text.removeprefix(fence)
    text = text.removesuffix("```").strip()
    try:
        json.loads(text)
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
    found = [t for t in re.findall(r"<<[^\n]+>>", response) if t.lstrip("<").rstrip(">").strip()]
    return Verdict(bool(found), "a <<title>>", found[0] if found else "no title")


@_contract("highlighted_sections", "At least n sections highlighted with Markdown, *like this*.", "format",
           {"n": COUNT}, [("*one* and *two*", {"n": 2}, True), ("*one* only", {"n": 2}, False),
                          ("**bold**", {"n": 1}, True)])
def _highlighted(response: str, n: int) -> Verdict:
    found = [h for h in re.findall(r"\*[^\n\*]*\*", response) if h.strip("*").strip()]
    found += [h for h in re.findall(r"\*\*[^\n\*]*\*\*", response) if h.removeprefix("**").removesuffix("**").strip()]
    return _counted("highlighted sections", "at least", n, len(found))


@_contract("sections", "Exactly n sections (or at least / at most n, as the relation says), each starting with the "
           "splitter and its number (e.g. 'SECTION 1').", "format", {"n": COUNT, "splitter": TEXT, "relation": RELATION},
           [("SECTION 1\na\nSECTION 2\nb", {"n": 2, "splitter": "SECTION"}, True),
            ("SECTION 1\na", {"n": 2, "splitter": "SECTION"}, False),
            ("SECTION 1\na\nSECTION 2\nb", {"n": 1, "splitter": "SECTION"}, False),
            ("SECTION 1\na\nSECTION 2\nb", {"n": 1, "splitter": "SECTION", "relation": "at least"}, True)],
           optional=("relation",))
def _sections(response: str, n: int, splitter: str, relation: str = "exactly") -> Verdict:
    # IFEval's multiple_sections is this with relation "at least"
    parts = re.split(r"\s?" + re.escape(splitter) + r"\s?\d+\s?", response)
    return _counted("sections", relation, n, len(parts) - 1)


@_contract("choice", "The response gives one of the given options, word for word (IFEval's constrained_response: "
           "the option appears in the response).", "format",
           {"options": WORD_LIST}, [("My answer is yes.", {"options": ["My answer is yes.", "My answer is no."]}, True),
                                    ("My answer is no. It rains.", {"options": ["My answer is yes.", "My answer is no."]}, True),
                                    ("Yes.", {"options": ["My answer is yes."]}, False),
                                    ("my answer is yes.", {"options": ["My answer is yes."]}, False)])
def _choice(response: str, options: list[str]) -> Verdict:
    text = response.strip()
    found = [option for option in options if option in text]
    return Verdict(bool(found), f"one of {options}", f"gives {found[0]!r}" if found else repr(text[:80]))


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
    # as IFEval: a blank part is allowed only before the first or after the last divider
    parts = [p.strip() for p in response.split("******")]
    inner_blank = any(not p for p in parts[1:-1])
    given = [p for p in parts if p]
    ok = not inner_blank and len(given) == 2 and given[0] != given[1]
    return Verdict(ok, "two different responses split by ******", f"{len(given)} parts",
                   "an empty response between dividers" if inner_blank else "")


@_contract("bullet_list", "Exactly n Markdown bullet points (lines starting with '*' or '-', counted as IFEval counts "
           "them).", "format", {"n": COUNT}, [("* a\n* b", {"n": 2}, True), ("- a\n- b\n- c", {"n": 2}, False),
                                            ("a\nb", {"n": 1}, False), ("**bold**\n* a", {"n": 1}, True)])
def _bullet_list(response: str, n: int) -> Verdict:
    # IFEval's two patterns, counted apart: '*' not followed by '*', and '-'
    stars = re.findall(r"^\s*\*[^\*].*$", response, flags=re.MULTILINE)
    dashes = re.findall(r"^\s*-.*$", response, flags=re.MULTILINE)
    return _counted("bullet points", "exactly", n, len(stars) + len(dashes))


_count_contract("numbered_list", "A numbered list of n items ('1.', '2.', ... at the start of lines).", "format",
                "numbered items", r"^\s*\d+[.)]\s", [("1. a\n2. b", {"n": 2, "relation": "exactly"}, True),
                                                      ("1. a", {"n": 2, "relation": "at least"}, False)])
_count_contract("placeholders", "At least n placeholders in square brackets, such as [address].", "structural",
                "placeholders", r"\[.*?\]", [("Send to [name] at [address].", {"n": 2}, True),
                                             ("Send to [name].", {"n": 2}, False)], relation="at least")
_count_contract("markdown_headers", "At least / at most / exactly n Markdown section headers (# ...).", "structural",
                "headers", r"^#{1,6}\s+\S", [("# A\ntext\n## B\n", {"n": 2, "relation": "exactly"}, True),
                                             ("#not a header", {"n": 1, "relation": "at least"}, False)])


# new format types (VISA's seed registry); whole-response formats and layouts carry
# ``exclusive`` groups (see _plan below), counts a ``measure``
NUMBER = r"[0-9]+(?:\.[0-9]+)?"
PUNCTUATION_RULES = {"no exclamation marks": "!", "no question marks": "?", "no semicolons": ";",
                     "every sentence ends with a period": None}


@_contract("punctuation_control", "A punctuation rule holds: no exclamation marks, no question marks, no semicolons, "
           "or every sentence ends with a period (and there is at least one sentence).", "format",
           {"rule": {"type": "string", "enum": list(PUNCTUATION_RULES)}},
           [("Calm words.", {"rule": "no exclamation marks"}, True), ("Wow!", {"rule": "no exclamation marks"}, False),
            ("Why? Because.", {"rule": "no question marks"}, False), ("a; b", {"rule": "no semicolons"}, False),
            ("One. Two.", {"rule": "every sentence ends with a period"}, True),
            ("One. Two!", {"rule": "every sentence ends with a period"}, False),
            ("", {"rule": "every sentence ends with a period"}, False)],
           exclusive=("punctuation:question",))
def _punctuation_control(response: str, rule: str) -> Verdict:
    mark = PUNCTUATION_RULES[rule]
    if mark is not None:
        return _counted(f"{mark!r} marks", "exactly", 0, response.count(mark))
    found = sentences(response)
    bad = [s for s in found if not s.endswith(".")]
    return Verdict(bool(found) and not bad, "every sentence ending with a period",
                   f"{len(bad)} of {len(found)} sentences not" if found else "no sentences", repr(bad[0][-40:]) if bad else "")


@_contract("number_precision", "Every number (digits, optionally with a decimal point) is written with exactly d "
           "decimal places, and there is at least one number.", "format",
           {"decimals": {"type": "integer", "minimum": 0, "maximum": 6}},
           [("It costs 3.50 and weighs 2.00 kg.", {"decimals": 2}, True), ("It costs 3.5.", {"decimals": 2}, False),
            ("No numbers.", {"decimals": 0}, False), ("3 cubes, 12 spheres", {"decimals": 0}, True)])
def _number_precision(response: str, decimals: int) -> Verdict:
    found = re.findall(NUMBER, response)
    bad = [x for x in found if len(x.partition(".")[2]) != decimals]
    return Verdict(bool(found) and not bad, f"every number with {decimals} decimals",
                   f"{len(bad)} of {len(found)} numbers not" if found else "no numbers", f"e.g. {bad[0]!r}" if bad else "")


def _spans(pattern: str, response: str) -> list[str]:
    return [s for s in re.findall(pattern, response) if s.strip()]


BOLD = r"\*\*([^*\n]+)\*\*"
ITALIC = r"(?<!\*)\*([^*\n]+)\*(?!\*)"


@_contract("bold_count", "At least / at most / exactly n **bold** spans (double asterisks, on one line).", "format",
           {"n": COUNT, "relation": RELATION}, [("**a** and **b**", {"n": 2, "relation": "exactly"}, True),
                                                ("**a** and *b*", {"n": 2, "relation": "at least"}, False),
                                                ("** **", {"n": 0, "relation": "exactly"}, True)],
           measure="bold spans")
def _bold_count(response: str, n: int, relation: str) -> Verdict:
    return _counted("bold spans", relation, n, len(_spans(BOLD, response)))


@_contract("italic_count", "At least / at most / exactly n *italic* spans (single asterisks, on one line; bold does "
           "not count).", "format", {"n": COUNT, "relation": RELATION},
           [("*a* and *b*", {"n": 2, "relation": "exactly"}, True), ("**a** and *b*", {"n": 2, "relation": "at least"}, False),
            ("*a*", {"n": 0, "relation": "at most"}, False)], measure="italic spans")
def _italic_count(response: str, n: int, relation: str) -> Verdict:
    return _counted("italic spans", relation, n, len(_spans(ITALIC, response)))


@_contract("numbered_steps", "Exactly n steps, each on its own line starting 'Step i:' (i = 1, 2, ... in order).",
           "format", {"n": {"type": "integer", "minimum": 1, "maximum": 100}},
           [("Step 1: mix\nStep 2: bake", {"n": 2}, True), ("Step 1: mix\nStep 3: bake", {"n": 2}, False),
            ("Step 1: mix", {"n": 2}, False)], measure="steps", relation="exactly")
def _numbered_steps(response: str, n: int) -> Verdict:
    found = [int(i) for i in re.findall(r"^[ \t]*Step ([0-9]+):", response, flags=re.MULTILINE)]
    ok = found == list(range(1, n + 1))
    return Verdict(ok, f"steps 1 to {n} in order", f"steps {found}" if found else "no 'Step i:' lines")


def lines(text: str) -> list[str]:
    """Non-empty lines (split at newline characters only)."""
    return [line for line in text.split("\n") if line.strip()]


LIST_ITEM = {"bullet": r"[ \t]*[-*] \S", "numbered": r"[ \t]*[0-9]+[.)] \S"}


@_contract("list_format", "The whole response is a list: every non-empty line is an item of the given style "
           "('- ' or '* ' bullets, or '1.' numbers), and there is at least one.", "format",
           {"style": {"type": "string", "enum": list(LIST_ITEM)}},
           [("- a\n- b", {"style": "bullet"}, True), ("1. a\n\n2) b", {"style": "numbered"}, True),
            ("Intro\n- a", {"style": "bullet"}, False), ("", {"style": "bullet"}, False),
            ("- a", {"style": "numbered"}, False)])
def _list_format(response: str, style: str) -> Verdict:
    found = lines(response)
    bad = [line for line in found if not re.match(LIST_ITEM[style], line)]
    return Verdict(bool(found) and not bad, f"only {style} list items", f"{len(bad)} other lines" if found else "empty",
                   repr(bad[0][:40]) if bad else "")


@_contract("line_count", "At least / at most / exactly n non-empty lines.", "format",
           {"n": COUNT, "relation": RELATION}, [("a\n\nb\n", {"n": 2, "relation": "exactly"}, True),
                                                ("a\nb\nc", {"n": 2, "relation": "at most"}, False)], measure="lines")
def _line_count(response: str, n: int, relation: str) -> Verdict:
    return _counted("non-empty lines", relation, n, len(lines(response)))


@_contract("blockquote", "At least n quoted lines (Markdown blockquotes: '>' at the start of a line, then text).",
           "format", {"n": COUNT}, [("> to be\n> or not", {"n": 2}, True), ("to be >", {"n": 1}, False),
                                    (">", {"n": 1}, False)], measure="quoted lines", relation="at least")
def _blockquote(response: str, n: int) -> Verdict:
    return _counted("quoted lines", "at least", n, len(re.findall(r"^[ \t]*>[> \t]*[^\s>]", response, flags=re.MULTILINE)))


@_contract("key_value_lines", "Every key appears as a labelled line 'Key: value' (the key at the start of a line, "
           "case-insensitive, then a colon and a value).", "format", {"keys": WORD_LIST},
           [("Name: Ada\nAge: 36", {"keys": ["name", "age"]}, True), ("Name: Ada", {"keys": ["name", "age"]}, False),
            ("Name:", {"keys": ["name"]}, False)])
def _key_value_lines(response: str, keys: list[str]) -> Verdict:
    missing = [k for k in keys if not re.search(r"^[ \t]*" + re.escape(k) + r"[ \t]*:[ \t]*\S", response,
                                                flags=re.MULTILINE | re.IGNORECASE)]
    return Verdict(not missing, f"lines for {keys}", f"missing {missing}" if missing else "all present")


@_contract("table_columns", "A Markdown table (header row, then a --- separator row) whose header has exactly n "
           "columns.", "format", {"n": {"type": "integer", "minimum": 1, "maximum": 20}},
           [("| a | b |\n|---|---|\n| 1 | 2 |", {"n": 2}, True), ("| a | b |\n|---|---|", {"n": 3}, False),
            ("a b", {"n": 1}, False)], measure="table columns", relation="exactly")
def _table_columns(response: str, n: int) -> Verdict:
    rows = [line.strip() for line in response.splitlines()]
    for i in range(1, len(rows)):
        if re.fullmatch(r"\|?\s*:?-{3,}:?\s*(\|\s*:?-{3,}:?\s*)*\|?", rows[i]) and rows[i - 1].startswith("|"):
            header = rows[i - 1].strip("|").split("|")
            return _counted("columns", "exactly", n, len(header))
    return Verdict(False, f"a table of {n} columns", "no Markdown table")


@_contract("end_with_question", "The response ends with a question: its last character (trailing whitespace aside) "
           "is '?'.", "format", {}, [("Shall we?", {}, True), ("We shall.", {}, False), ("", {}, False)],
           exclusive=("punctuation:question",))
def _end_with_question(response: str) -> Verdict:
    text = response.rstrip()
    return Verdict(text.endswith("?"), "ends with '?'", repr(text[-20:]) if text else "empty")


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


@_contract("prefix", "The response starts with the given text (case-insensitive, as IFEval's repeat_prompt).", "lexical",
           {"text": TEXT}, [("Dear Sir, hello", {"text": "Dear Sir"}, True), ("Sir", {"text": "Dear Sir"}, False),
                            ("dear sir, hello", {"text": "Dear Sir"}, True)])
def _prefix(response: str, text: str) -> Verdict:
    ok = response.strip().lower().startswith(text.strip().lower())
    return Verdict(ok, f"starts with {text!r}", repr(response.strip()[:len(text) + 10]))


@_contract("suffix", "The response ends with the given phrase, nothing after it but a closing double quote "
           "(case-insensitive).", "lexical",
           {"text": TEXT}, [("... Is there anything else I can help with?", {"text": "Is there anything else I can help with?"},
                             True), ("Bye. Thanks", {"text": "Bye."}, False)])
def _suffix(response: str, text: str) -> Verdict:
    # as IFEval's end_checker: double quotes wrapping the response do not count
    ok = response.strip().strip('"').lower().endswith(text.strip().lower())
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


# new lexical types (VISA's seed registry)
@_contract("keyword_in_first_sentence", "The first sentence contains the keyword (a whole word, case-insensitive).",
           "lexical", {"keyword": TEXT}, [("Red is bold. Blue too.", {"keyword": "red"}, True),
                                          ("Blue is calm. Red too.", {"keyword": "red"}, False), ("", {"keyword": "red"}, False)])
def _keyword_in_first_sentence(response: str, keyword: str) -> Verdict:
    found = sentences(response)
    first = found[0] if found else ""
    ok = bool(re.search(r"\b" + re.escape(keyword) + r"\b", first, flags=re.IGNORECASE))
    return Verdict(ok, f"{keyword!r} in the first sentence", repr(first[:80]) if first else "no sentence")


def initial_letter(word: str) -> str:
    return word[0].lower() if word[0].isalpha() else ""


@_contract("alliteration", "An alliterative run: at least n consecutive words starting with the same letter "
           "(case-insensitive).", "lexical", {"n": {"type": "integer", "minimum": 2, "maximum": 20}},
           [("Silver snakes slide south.", {"n": 4}, True), ("Silver snakes never slide.", {"n": 3}, False),
            ("", {"n": 2}, False)], measure="alliterative run", relation="at least")
def _alliteration(response: str, n: int) -> Verdict:
    best = run = 0
    previous = ""
    for word in words(response):
        letter = initial_letter(word)
        run = run + 1 if letter and letter == previous else (1 if letter else 0)
        previous, best = letter, max(best, run)
    return _counted("words in the longest alliterative run", "at least", n, best)


@_contract("acronym_definition", "The acronym (whole word, case-sensitive) is introduced by its expansion, written "
           "'expansion (ACRONYM)' (expansion case-insensitive), no earlier than its first use.", "lexical",
           {"acronym": {"type": "string", "pattern": "^[A-Z][A-Z0-9]+$", "minLength": 2}, "expansion": TEXT},
           [("A central processing unit (CPU) computes. The CPU is fast.", {"acronym": "CPU", "expansion":
                                                                             "central processing unit"}, True),
            ("The CPU is a central processing unit (CPU).", {"acronym": "CPU", "expansion": "central processing unit"},
             False), ("The processor computes.", {"acronym": "CPU", "expansion": "central processing unit"}, False)])
def _acronym_definition(response: str, acronym: str, expansion: str) -> Verdict:
    definition = re.search("(?i:" + re.escape(expansion) + r")\s*\(" + re.escape(acronym) + r"\)", response)
    uses = [m.start() for m in re.finditer(r"\b" + re.escape(acronym) + r"\b", response)]
    if definition is None or not uses:
        return Verdict(False, f"{expansion} ({acronym})", "no definition")
    defined_at = definition.end() - len(acronym) - 1
    ok = uses[0] >= defined_at
    return Verdict(ok, f"{acronym} defined at its first use", "defined" if ok else "used before its definition")


@_contract("word_diversity", "Lexical diversity: distinct words / all words (case-insensitive \\w+ words) is at least "
           "the ratio, and there is at least one word.", "lexical",
           {"ratio": {"type": "number", "minimum": 0.05, "maximum": 1}},
           [("every word differs here", {"ratio": 1.0}, True), ("the the the cat", {"ratio": 0.6}, False),
            ("", {"ratio": 0.5}, False)])
def _word_diversity(response: str, ratio: float) -> Verdict:
    found = [w.lower() for w in words(response)]
    actual = len(set(found)) / len(found) if found else 0.0
    return Verdict(bool(found) and actual >= ratio, f"type/token ratio at least {ratio:g}", f"{actual:.3f}",
                   f"{len(set(found))} distinct of {len(found)} words")


@_contract("average_word_length", "The mean length of the \\w+ words is at least / at most n characters (and there "
           "is at least one word).", "lexical",
           {"n": {"type": "number", "minimum": 1, "maximum": 30}, "relation": {"type": "string", "enum": ["at least", "at most"]}},
           [("extraordinary vocabulary", {"n": 6, "relation": "at least"}, True),
            ("a cat sat", {"n": 3, "relation": "at least"}, False), ("a cat sat", {"n": 3, "relation": "at most"}, True),
            ("", {"n": 3, "relation": "at most"}, False)], measure="average word length")
def _average_word_length(response: str, n: float, relation: str) -> Verdict:
    found = words(response)
    mean = sum(map(len, found)) / len(found) if found else 0.0
    ok = bool(found) and (mean >= n if relation == "at least" else mean <= n)
    return Verdict(ok, f"mean word length {relation} {n:g}", f"{mean:.2f}" if found else "no words")


CONNECTORS = ("therefore", "however", "moreover", "furthermore", "consequently", "thus", "hence", "nevertheless",
              "because", "in addition", "for example", "as a result")


def connectors_used(response: str) -> list[str]:
    return [c for c in CONNECTORS if re.search(r"\b" + r"\s+".join(c.split()) + r"\b", response, flags=re.IGNORECASE)]


@_contract("logical_connectors", "At least n distinct logical connectors (whole words, case-insensitive) from: "
           + ", ".join(CONNECTORS) + ".", "lexical", {"n": {"type": "integer", "minimum": 1, "maximum": len(CONNECTORS)}},
           [("It rained; therefore we stayed. However, we read.", {"n": 2}, True),
            ("Therefore, therefore.", {"n": 2}, False), ("Thusly.", {"n": 1}, False)],
           measure="logical connectors", relation="at least")
def _logical_connectors(response: str, n: int) -> Verdict:
    found = connectors_used(response)
    return _counted("distinct connectors", "at least", n, len(found), f"found {found}")


HASHTAG = r"(?<![\w#])#[^\W\d_]\w*"


@_contract("hashtags", "At least n hashtags: '#' then a word starting with a letter, not attached to a preceding word.",
           "lexical", {"n": COUNT}, [("#sunset at the #beach", {"n": 2}, True), ("# Title\nissue#3", {"n": 1}, False)],
           measure="hashtags", relation="at least")
def _hashtags(response: str, n: int) -> Verdict:
    return _counted("hashtags", "at least", n, len(re.findall(HASHTAG, response)))


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


@_contract("nth_paragraph_first_word", "n paragraphs (split by an empty line, '\\n\\n'), paragraph i starting with "
           "the word (case-insensitive; quotes before it and punctuation after it are allowed, as in IFEval).",
           "structural", {"n": COUNT, "i": {"type": "integer", "minimum": 1}, "word": TEXT},
           [("Intro\n\nSecond para", {"n": 2, "i": 2, "word": "second"}, True),
            ("Intro\n\n\"Second,\" para", {"n": 2, "i": 2, "word": "second"}, True),
            ("Intro\n\nThird para", {"n": 2, "i": 2, "word": "second"}, False),
            ("Intro", {"n": 2, "i": 1, "word": "intro"}, False)])
def _nth_paragraph(response: str, n: int, i: int, word: str) -> Verdict:
    # IFEval's reading: paragraphs split at "\n\n" (blank ones not counted); the first word is
    # the first whitespace-separated token, leading quotes dropped, cut at . , ? ! ' or "
    found = [p.strip() for p in re.split(r"\n\n", response) if p.strip()]
    if len(found) != n:
        return _counted("paragraphs", "exactly", n, len(found))
    if i > len(found):
        return Verdict(False, f"paragraph {i}", f"{len(found)} paragraphs")
    token = found[i - 1].split()[0].lstrip("'").lstrip('"')
    actual = re.match(r"[^.,?!'\"]*", token).group(0).lower()
    return Verdict(actual == word.lower(), f"paragraph {i} starts with {word!r}", actual or "no word")


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


# new structural types (VISA's seed registry)
def _paragraph_words(response: str) -> list[list[str]]:
    return [words(p) for p in paragraphs(response)]


@_contract("paragraph_start", "Every paragraph (paragraphs split by blank lines) starts with the word "
           "(case-insensitive), and there is at least one paragraph.", "structural", {"word": TEXT},
           [("Today we rest.\n\nToday we read.", {"word": "today"}, True), ("Today we rest.\n\nWe read.", {"word": "today"},
                                                                           False), ("", {"word": "today"}, False)])
def _paragraph_start(response: str, word: str) -> Verdict:
    found = _paragraph_words(response)
    bad = [i + 1 for i, ws in enumerate(found) if not ws or ws[0].lower() != word.lower()]
    return Verdict(bool(found) and not bad, f"every paragraph starting with {word!r}",
                   f"paragraphs {bad} do not" if bad else ("all do" if found else "no paragraphs"))


@_contract("paragraph_end", "Every paragraph (paragraphs split by blank lines) ends with the word (case-insensitive; "
           "punctuation after it is allowed), and there is at least one paragraph.", "structural", {"word": TEXT},
           [("We rest, indeed.\n\nWe read indeed!", {"word": "indeed"}, True),
            ("We rest indeed.\n\nWe read.", {"word": "indeed"}, False), ("", {"word": "indeed"}, False)])
def _paragraph_end(response: str, word: str) -> Verdict:
    found = _paragraph_words(response)
    bad = [i + 1 for i, ws in enumerate(found) if not ws or ws[-1].lower() != word.lower()]
    return Verdict(bool(found) and not bad, f"every paragraph ending with {word!r}",
                   f"paragraphs {bad} do not" if bad else ("all do" if found else "no paragraphs"))


@_contract("max_sentence_length", "No sentence has more than n words (sentences end at ., ! or ?).", "structural",
           {"n": {"type": "integer", "minimum": 1, "maximum": 1000}},
           [("Short one. Another short one.", {"n": 3}, True), ("This sentence has five words.", {"n": 4}, False),
            ("", {"n": 3}, True)], measure="words in the longest sentence", relation="at most")
def _max_sentence_length(response: str, n: int) -> Verdict:
    longest = max((len(words(s)) for s in sentences(response)), default=0)
    return _counted("words in the longest sentence", "at most", n, longest)


ARGUMENT = ("Claim", "Evidence", "Conclusion")


@_contract("argument_structure", "An argument in three labelled parts, in this order, each label at the start of a "
           "line followed by text: 'Claim:', 'Evidence:', 'Conclusion:' (labels case-insensitive).", "structural", {},
           [("Claim: cubes dominate.\nEvidence: 5 of 7 are cubes.\nConclusion: mostly cubes.", {}, True),
            ("Evidence: 5 of 7.\nClaim: cubes.\nConclusion: so.", {}, False), ("Claim: x\nConclusion: y", {}, False)])
def _argument_structure(response: str) -> Verdict:
    at = [re.search(r"^[ \t]*" + label + r"[ \t]*:[ \t]*\S", response, flags=re.MULTILINE | re.IGNORECASE) for label in ARGUMENT]
    missing = [label for label, m in zip(ARGUMENT, at) if m is None]
    if missing:
        return Verdict(False, "Claim:, Evidence:, Conclusion:", f"missing {missing}")
    starts = [m.start() for m in at]
    return Verdict(starts == sorted(starts), "Claim:, Evidence:, Conclusion: in order",
                   "in order" if starts == sorted(starts) else "out of order")


@_contract("summary_line", "The last non-empty line starts with 'Summary:' (case-insensitive) followed by text.",
           "structural", {}, [("Long text.\nSummary: short.", {}, True), ("Summary: short.\nLong text.", {}, False),
                              ("Summary:", {}, False)])
def _summary_line(response: str) -> Verdict:
    found = lines(response)
    last = found[-1].strip() if found else ""
    ok = bool(re.match(r"summary[ \t]*:[ \t]*\S", last, flags=re.IGNORECASE))
    return Verdict(ok, "a last line 'Summary: ...'", repr(last[:40]) if last else "empty")


@_contract("question_count", "At least / at most / exactly n questions (sentences ending with '?').", "structural",
           {"n": COUNT, "relation": RELATION}, [("Why? Because. How?", {"n": 2, "relation": "exactly"}, True),
                                                ("Why? Because.", {"n": 2, "relation": "at least"}, False)],
           measure="questions", exclusive=("punctuation:question",))
def _question_count(response: str, n: int, relation: str) -> Verdict:
    return _counted("questions", relation, n, len([s for s in sentences(response) if s.endswith("?")]))


# -- style --------------------------------------------------------------------------------
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


@_contract("language", "The response is written in the language (langdetect's guess, an ISO 639-1 code; as in "
           "IFEval's response_language, text in which langdetect finds no features counts as compliant).", "style",
           {"language": {"type": "string", "enum": list(LANGUAGES)}},
           [("Das Wetter ist heute sehr schön und wir gehen in den Park.", {"language": "de"}, True),
            ("The weather is very nice today and we are going to the park.", {"language": "de"}, False),
            ("The weather is very nice today and we are going to the park.", {"language": "en"}, True)],
           exclusive=("language",))
def _language(response: str, language: str) -> Verdict:
    found = detect_language(response)
    return Verdict(found in (None, language), LANGUAGES[language], LANGUAGES.get(found, found) if found else "undetectable")


PRONOUNS = {"first": {"i", "me", "my", "mine", "myself", "we", "us", "our", "ours", "ourselves"},
            "second": {"you", "your", "yours", "yourself", "yourselves"}}


def pronouns(text: str) -> dict[str, list[str]]:
    """First- and second-person pronouns in ``text`` (whole words, case-insensitive)."""
    return {person: [w for w in words(text) if w.lower() in found] for person, found in PRONOUNS.items()}


@_contract("perspective", "Narrative person, by a pronoun heuristic: 'first' uses a first-person pronoun (I, me, "
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


@_contract("no_contractions", "No contractions: no word ending in n't, 're, 've, 'll, 'm or 'd, nor it's, that's, "
           "there's, let's and the like (straight or curly apostrophe; a possessive 's does not count).", "style",
           {}, [("It is what we will do.", {}, True), ("It's what we'll do.", {}, False), ("The cube's colour.", {}, True),
                ("I can’t.", {}, False)])
def _no_contractions(response: str) -> Verdict:
    found = re.findall(CONTRACTION, response, flags=re.IGNORECASE)
    return _counted("contractions", "exactly", 0, len(found), f"e.g. {found[:3]}" if found else "")


def _judge(id: str, description: str, params: Mapping[str, Any], rubric: str, cues: tuple[str, ...],
           cases: list[tuple[str, dict, bool]]) -> None:
    """Register a judge-track style type. ``cues`` are templates like the rubric: formatted with
    the parameters, they are the phrases the simulated judge accepts as evidence."""
    register(Contract(id, description, "style", params, None, tuple(Case(r, p, ok) for r, p, ok in cases),
                      track="judge", rubric=rubric, cues=cues))


TONES = ["formal", "friendly", "enthusiastic", "neutral", "humorous", "persuasive"]
AUDIENCES = ["children", "experts", "beginners", "teenagers", "engineers"]
ROLES = ["tour guide", "detective", "teacher", "sports commentator", "museum curator"]
DEVICES = ["rhetorical question", "metaphor", "simile", "repetition", "contrast"]
_judge("tone", "The response is written in the given tone (judged).", {"tone": {"type": "string", "enum": TONES}},
       "The response is written in a {tone} tone throughout.", ("Tone: {tone}.", "Keeping the tone {tone}:"),
       [("Tone: formal. The chart shows a steady rise.", {"tone": "formal"}, True),
        ("lol the chart goes up, whatever", {"tone": "formal"}, False)])
_judge("audience_adaptation", "The response is adapted to the given audience: vocabulary, detail and examples fit "
       "it (judged).", {"audience": {"type": "string", "enum": AUDIENCES}},
       "The response is adapted to {audience}: its vocabulary, level of detail and examples suit them.",
       ("Explained for {audience}:", "For {audience}, put simply:"),
       [("Explained for children: the big red ball is next to a tiny blue box.", {"audience": "children"}, True),
        ("The spatial configuration exhibits heteroscedastic dispersion.", {"audience": "children"}, False)])
_judge("persona", "The response is written in the voice of the given role (judged).",
       {"role": {"type": "string", "enum": ROLES}}, "The response is written in the voice of a {role}, consistently.",
       ("As your {role},", "Speaking as a {role},"),
       [("As your tour guide, let me point out the tower on your left.", {"role": "tour guide"}, True),
        ("The tower is on the left.", {"role": "tour guide"}, False)])
_judge("rhetorical_device", "The response uses the given rhetorical device at least once (judged).",
       {"device": {"type": "string", "enum": DEVICES}}, "The response uses at least one {device}, recognisably.",
       ("(a {device} follows)", "To use a {device}:"),
       [("To use a metaphor: the skyline is a saw blade against the dusk.", {"device": "metaphor"}, True),
        ("The skyline is jagged.", {"device": "metaphor"}, False)])


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


# -- planning hints for the format, lexical, structural and style types --------------------
#: layouts: structures that a whole-response format (JSON, YAML, XML, one option, a quotation,
#: two responses, a bare list) leaves no room for; each layout has a group of its own, so
#: layouts still combine with one another
LAYOUTS = ("markdown_table", "table_columns", "bullet_list", "numbered_list", "numbered_steps", "markdown_headers",
           "sections", "paragraph_count", "nth_paragraph_first_word", "paragraph_start", "paragraph_end", "line_count",
           "blockquote", "key_value_lines", "argument_structure", "summary_line", "title", "postscript", "code_block",
           "prefix", "suffix", "end_with_question")
_LISTS = ("bullet_list", "numbered_list", "line_count")  # a bare list can still have n items on n lines
PLAN: dict[str, dict[str, Any]] = {
    **{id: {"exclusive": ("whole",) + tuple(f"layout:{x}" for x in LAYOUTS)}
       for id in ("json_format", "yaml_mapping", "xml_document", "choice", "quotation", "two_responses")},
    "list_format": {"exclusive": ("whole",) + tuple(f"layout:{x}" for x in LAYOUTS if x not in _LISTS)},
    # lowercase excludes the other case rules and an acronym; the case rules exclude each other
    "lowercase": {"exclusive": ("case", "case:acronym")}, "uppercase": {"exclusive": ("case",)},
    "capital_words": {"exclusive": ("case",), "measure": "all-capital words"},
    "acronym_definition": {"exclusive": ("case:acronym",)}, "script": {"exclusive": ("language",)},
    "word_count": {"measure": "words"}, "sentence_count": {"measure": "sentences"},
    "character_count": {"measure": "characters"}, "numbered_list": {"measure": "numbered items"},
    "markdown_headers": {"measure": "headers"}, "sections": {"measure": "sections"},
    "bullet_list": {"measure": "bullet points", "relation": "exactly"},
    "paragraph_count": {"measure": "paragraphs split by ***", "relation": "exactly"},
    "nth_paragraph_first_word": {"measure": "paragraphs", "relation": "exactly"},
    "placeholders": {"measure": "placeholders", "relation": "at least"},
    "markdown_table": {"measure": "table rows", "relation": "at least"},
    "highlighted_sections": {"measure": "highlighted sections", "relation": "at least"},
}
for _id in LAYOUTS:
    PLAN.setdefault(_id, {}).setdefault("exclusive", ())
    PLAN[_id]["exclusive"] += (f"layout:{_id}",)
for _id, _hints in PLAN.items():
    # the contracts are frozen and carry no verdict state, so replacing one changes only its hints
    _old = REGISTRY[_id]
    REGISTRY[_id] = replace(_old, exclusive=tuple(dict.fromkeys(_old.exclusive + _hints.get("exclusive", ()))),
                            measure=_hints.get("measure", _old.measure), relation=_hints.get("relation", _old.relation))


# -- visually grounded, causal and conditional types ------------------------------------------
# Grounded types read an image's facts (see FACT_KINDS): ``ground`` puts the expected values into
# the parameters, so ``verify`` needs only the response and the parameters (a stored constraint is
# checkable without the image) and ``check_ground`` re-derives them from the facts for audits.
# Relational checks ("the cube is left of the sphere", "3 red cubes") read one clause at a time,
# so a sentence that states two facts ("A is 12 and B is 30") is judged fact by fact.
import itertools  # noqa: E402

_NUMBER_WORDS = {w: i for i, w in enumerate(
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen "
    "seventeen eighteen nineteen twenty".split())}
_NUMBER = re.compile(r"(?<![\w.,])-?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?!\w)|\b(?:" + "|".join(_NUMBER_WORDS) + r")\b",
                     re.IGNORECASE)
_CLAUSE = re.compile(r";|,\s*(?:and|but|while|whereas)\b|\b(?:and|but|while|whereas)\b", re.IGNORECASE)
#: attribute vocabularies (CLEVR's values plus common colours) and the synonyms a reader uses
VALUES = {"color": ("gray", "red", "blue", "green", "brown", "purple", "cyan", "yellow", "black", "white", "orange", "pink"),
          "material": ("rubber", "metal"), "size": ("large", "small")}
SYNONYMS = {"gray": ("grey",), "large": ("big",), "small": ("tiny",), "metal": ("metallic", "shiny"), "rubber": ("matte",)}
#: CLEVR's shapes: what a complete scene graph can say is absent
SHAPES = ("cube", "sphere", "cylinder")
REFERENT_ATTRS = ("size", "color", "material")  # adjective order in a referent: "large red metal cube"
RELATION_WORDS = {"left": ("left",), "right": ("right",), "above": ("above", "over", "higher"),
                  "below": ("below", "under", "beneath", "lower"), "larger": ("larger", "bigger", "greater"),
                  "smaller": ("smaller", "tinier"),
                  "largest": ("largest", "highest", "biggest", "greatest", "maximum", "most", "top"),
                  "smallest": ("smallest", "lowest", "least", "minimum", "fewest", "bottom")}
OPPOSITE = {"left": "right", "right": "left", "above": "below", "below": "above", "larger": "smaller", "smaller": "larger",
            "largest": "smallest", "smallest": "largest"}
POSITIONS = ("top left", "top", "top right", "left", "centre", "right", "bottom left", "bottom", "bottom right")
#: normalised distance two centres must be apart for left/right/above/below to be clear
SPATIAL_MARGIN = 0.08


def name_pattern(name: str) -> re.Pattern[str]:
    """``name`` as whole words, any case, any spacing, singular or plural ("cube", "cubes")."""
    return re.compile(r"(?<!\w)" + r"\s+".join(re.escape(p) for p in name.split()) + r"(?:e?s)?(?!\w)", re.IGNORECASE)


def mentions(text: str, names: list[str] | tuple[str, ...]) -> list[tuple[int, int, str]]:
    """Non-overlapping ``(start, end, name)`` mentions, longest names first ("red cube" wins over "cube")."""
    found = sorted(((m.start(), m.end(), n) for n in set(names) for m in name_pattern(n).finditer(text)),
                   key=lambda t: (-(t[1] - t[0]), t[0]))
    kept: list[tuple[int, int, str]] = []
    for span in found:
        if all(span[1] <= k[0] or span[0] >= k[1] for k in kept):
            kept.append(span)
    return sorted(kept)


def has(text: str, name: str) -> bool:
    return name_pattern(name).search(text) is not None


def numbers(text: str) -> list[tuple[int, int, float]]:
    """``(start, end, value)`` of numbers written as digits (1,234.5) or words (zero .. twenty)."""
    out = []
    for m in _NUMBER.finditer(text):
        token = m.group().lower()
        out.append((m.start(), m.end(), float(_NUMBER_WORDS[token]) if token in _NUMBER_WORDS else float(token.replace(",", ""))))
    return out


def clauses(text: str, names: list[str] | tuple[str, ...]) -> list[str]:
    """``text``'s sentences cut at ';' and at and / but / while / whereas, never inside a name."""
    out = []
    for sentence in sentences(text):
        spans = mentions(sentence, names)
        cuts = [m for m in _CLAUSE.finditer(sentence) if all(m.end() <= s or m.start() >= e for s, e, _ in spans)]
        start = 0
        for m in cuts:
            out.append(sentence[start:m.start()])
            start = m.end()
        out.append(sentence[start:])
    return [c for c in out if c.strip()]


def plural(noun: str) -> str:
    head, _, last = noun.rpartition(" ")
    if re.search(r"(s|x|z|ch|sh)$", last):
        last += "es"
    elif re.search(r"[^aeiou]y$", last):
        last = last[:-1] + "ies"
    else:
        last += "s"
    return f"{head} {last}".strip()


def number_text(value: float) -> str:
    """A number as a reader writes it: no trailing zeros, no exponent."""
    text = f"{value:.6f}".rstrip("0").rstrip(".")
    return "0" if text in ("-0", "") else text


def _words_of(values: list[str] | tuple[str, ...]) -> list[str]:
    return [w for v in values for w in (v, *SYNONYMS.get(v, ()))]


def _objects(facts: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return [o for o in facts.get("objects") or () if isinstance(o.get("category"), str) and o["category"].strip()
            and not re.search(r"[.!?;]", o["category"])]


def _complete(facts: Mapping[str, Any]) -> bool:
    """Whether the facts list every object (a scene graph): only then can absence and counts be grounded."""
    return facts.get("source") == "clevr"


def _attrs(obj: Mapping[str, Any]) -> list[str]:
    return [a for a in REFERENT_ATTRS if isinstance(obj.get(a), str) and obj[a] in VALUES[a]]


def _phrase(obj: Mapping[str, Any], attrs: tuple[str, ...]) -> str:
    return " ".join([obj[a] for a in REFERENT_ATTRS if a in attrs] + [obj["category"]])


def denoted(objects: list[Mapping[str, Any]], phrase: str) -> list[int]:
    """The objects ``phrase`` ("red cube", "cube") describes: its category, and attribute values they have."""
    out = []
    for i, o in enumerate(objects):
        attrs = _attrs(o)
        if any(_phrase(o, sub).lower() == " ".join(phrase.lower().split())
               for k in range(len(attrs) + 1) for sub in itertools.combinations(attrs, k)):
            out.append(i)
    return out


def referent(objects: list[Mapping[str, Any]], i: int, exclude: tuple[str, ...] = ()) -> str | None:
    """The shortest phrase that denotes object ``i`` alone, not using the ``exclude``d attributes."""
    attrs = [a for a in _attrs(objects[i]) if a not in exclude]
    for k in range(len(attrs) + 1):
        for sub in itertools.combinations(attrs, k):
            phrase = _phrase(objects[i], sub)
            if denoted(objects, phrase) == [i] and not any(a in exclude for a in REFERENT_ATTRS if a in sub):
                return phrase
    return None


def _wordless(name: str | None) -> bool:
    """A referent free of relation words ("top", "left"), so they are never read inside it."""
    return bool(name) and not any(has(name, w) for ws in RELATION_WORDS.values() for w in ws)


def _apart(names: list[str]) -> bool:
    """No name is found inside another (so mentions of one never count as the other)."""
    return all(a == b or not has(b, a) for a in names for b in names) and len(set(names)) == len(names)


def _pick(rng: Any, items: list[Any]) -> Any:
    return items[int(rng.integers(len(items)))]


def relation_clauses(response: str, first: str, second: str, relation: str) -> tuple[bool, bool]:
    """(a clause names first then second with the relation's word and not its opposite's,
    a clause names them so with the opposite's word and not the relation's)."""
    good = bad = False
    right, wrong = RELATION_WORDS[relation], RELATION_WORDS[OPPOSITE[relation]]
    for clause in clauses(response, [first, second]):
        found = mentions(clause, [first, second])
        order = [n for _, _, n in found]
        if first not in order or second not in order or order.index(first) > order.index(second):
            continue
        yes, no = any(has(clause, w) for w in right), any(has(clause, w) for w in wrong)
        good, bad = good or (yes and not no), bad or (no and not yes)
    return good, bad


def _verdict_good_bad(good: bool, bad: bool, expected: str) -> Verdict:
    actual = "a contradicting statement" if bad else "stated" if good else "not stated"
    return Verdict(good and not bad, expected, actual)


# attribute ----------------------------------------------------------------------------------
def _ground_attribute(facts: Mapping[str, Any], rng: Any) -> dict[str, Any] | None:
    objects = _objects(facts)
    options = [(i, a, ref) for i, o in enumerate(objects) for a in _attrs(o)
               if (ref := referent(objects, i, exclude=(a,))) is not None]
    if not options:
        return None
    i, attribute, ref = _pick(rng, options)
    value = objects[i][attribute]
    return {"object": ref, "attribute": attribute, "value": value, "wrong": [v for v in VALUES[attribute] if v != value]}


def _check_attribute(facts: Mapping[str, Any], params: Mapping[str, Any]) -> str | None:
    objects = _objects(facts)
    hits = denoted(objects, params["object"])
    if len(hits) != 1:
        return f"expected {params['object']!r} to denote one object, got {len(hits)}"
    actual = objects[hits[0]].get(params["attribute"])
    if actual != params["value"]:
        return f"expected {params['attribute']} {actual!r} for the {params['object']}, got {params['value']!r}"
    if sorted(params["wrong"]) != sorted(v for v in VALUES[params["attribute"]] if v != actual):
        return f"expected the wrong values to be the other {params['attribute']}s, got {params['wrong']}"
    return None


@_contract("attribute_describe", "State the colour, material or size of a named object of the image (a clause naming "
           "the object with its value and none naming it with another value).", "attribute",
           {"object": TEXT, "attribute": {"type": "string", "enum": list(VALUES)}, "value": TEXT, "wrong": WORD_LIST},
           [("The red cube is metal.", {"object": "red cube", "attribute": "material", "value": "metal",
                                        "wrong": ["rubber"]}, True),
            ("The red cube is rubber.", {"object": "red cube", "attribute": "material", "value": "metal",
                                         "wrong": ["rubber"]}, False),
            ("A red cube.", {"object": "red cube", "attribute": "material", "value": "metal", "wrong": ["rubber"]}, False)],
           needs=("objects",), ground=_ground_attribute, check_ground=_check_attribute)
def _attribute_describe(response: str, object: str, attribute: str, value: str, wrong: list[str]) -> Verdict:
    good = bad = False
    for clause in clauses(response, [object]):
        if has(clause, object):
            yes, no = any(has(clause, w) for w in _words_of([value])), any(has(clause, w) for w in _words_of(wrong))
            good, bad = good or (yes and not no), bad or (no and not yes)
    return _verdict_good_bad(good, bad, f"the {object}'s {attribute}: {value}")


def _ground_size(facts: Mapping[str, Any], rng: Any) -> dict[str, Any] | None:
    objects = _objects(facts)
    refs = [referent(objects, i, ("size",)) for i in range(len(objects))]
    options = []
    for i, j in itertools.permutations(range(len(objects)), 2):
        a, b = objects[i].get("size"), objects[j].get("size")
        if a in VALUES["size"] and b in VALUES["size"] and a != b:
            first, second = refs[i], refs[j]
            if _wordless(first) and _wordless(second) and _apart([first, second]):
                options.append({"first": first, "second": second, "relation": "larger" if a == "large" else "smaller"})
    return _pick(rng, options) if options else None


def _check_pair(facts: Mapping[str, Any], params: Mapping[str, Any]) -> tuple[Any, Any] | str:
    objects = _objects(facts)
    hits = [denoted(objects, params[k]) for k in ("first", "second")]
    if [len(h) for h in hits] != [1, 1] or hits[0] == hits[1]:
        return f"expected {params['first']!r} and {params['second']!r} to denote one object each, got {hits}"
    return objects[hits[0][0]], objects[hits[1][0]]


def _check_size(facts: Mapping[str, Any], params: Mapping[str, Any]) -> str | None:
    pair = _check_pair(facts, params)
    if isinstance(pair, str):
        return pair
    sizes = [o.get("size") for o in pair]
    want = "larger" if sizes == ["large", "small"] else "smaller" if sizes == ["small", "large"] else None
    return None if want == params["relation"] else f"expected relation {want!r} (sizes {sizes}), got {params['relation']!r}"


@_contract("size_compare", "Say whether one named object is larger or smaller than another (a clause naming the "
           "first, then the second, with the right comparative and not its opposite).", "attribute",
           {"first": TEXT, "second": TEXT, "relation": {"type": "string", "enum": ["larger", "smaller"]}},
           [("The cube is bigger than the sphere.", {"first": "cube", "second": "sphere", "relation": "larger"}, True),
            ("The cube is smaller than the sphere.", {"first": "cube", "second": "sphere", "relation": "larger"}, False),
            ("The sphere is smaller than the cube.", {"first": "cube", "second": "sphere", "relation": "larger"}, False)],
           needs=("objects",), ground=_ground_size, check_ground=_check_size)
def _size_compare(response: str, first: str, second: str, relation: str) -> Verdict:
    return _verdict_good_bad(*relation_clauses(response, first, second, relation), f"the {first} {relation} than the {second}")


def _ground_include(facts: Mapping[str, Any], rng: Any) -> dict[str, Any] | None:
    objects = _objects(facts)
    by_category: dict[str, list[int]] = {}
    for i, o in enumerate(objects):
        by_category.setdefault(o["category"].lower(), []).append(i)
    if not by_category:
        return None
    cats = [c for c in sorted(by_category)]
    chosen = [cats[k] for k in rng.permutation(len(cats))[: int(rng.integers(1, min(3, len(cats)) + 1))]]
    names = []
    for cat in chosen:
        o = objects[_pick(rng, by_category[cat])]
        attrs = _attrs(o)
        sub = tuple(a for a in attrs if rng.random() < 0.4)
        names.append(_phrase(o, sub))
    return {"names": names} if _apart(names) else None


def _check_include(facts: Mapping[str, Any], params: Mapping[str, Any]) -> str | None:
    absent = [n for n in params["names"] if not denoted(_objects(facts), n)]
    return f"expected only names of objects in the image, got absent {absent}" if absent else None


@_contract("visual_include", "Mention each of the named objects that the image shows (whole words, any case, "
           "singular or plural).", "attribute", {"names": WORD_LIST},
           [("A red cube beside two spheres.", {"names": ["red cube", "sphere"]}, True),
            ("A red cube.", {"names": ["red cube", "sphere"]}, False)],
           needs=("objects",), ground=_ground_include, check_ground=_check_include)
def _visual_include(response: str, names: list[str]) -> Verdict:
    missing = [n for n in names if not has(response, n)]
    return Verdict(not missing, f"all of {names}", f"missing {missing}" if missing else "all mentioned")


def _ground_exclude(facts: Mapping[str, Any], rng: Any) -> dict[str, Any] | None:
    objects = _objects(facts)
    if not _complete(facts) or not objects:
        return None
    categories = sorted({o["category"].lower() for o in objects} | set(SHAPES))
    candidates = [c for c in categories if not denoted(objects, c)]
    candidates += [f"{v} {c}" for c in categories for v in VALUES["color"][:8] if not denoted(objects, f"{v} {c}")]
    chosen: list[str] = []
    want = int(rng.integers(1, 3))
    for k in rng.permutation(len(candidates)):
        if len(chosen) < want and _apart(chosen + [candidates[k]]):
            chosen.append(candidates[k])
    return {"names": chosen} if chosen else None


def _check_exclude(facts: Mapping[str, Any], params: Mapping[str, Any]) -> str | None:
    if not _complete(facts):
        return f"expected facts listing every object (source 'clevr'), got source {facts.get('source')!r}"
    present = [n for n in params["names"] if denoted(_objects(facts), n)]
    return f"expected only things the image lacks, got present {present}" if present else None


@_contract("visual_exclude", "Do not mention the named things, which the image does not show (whole words, any "
           "case, singular or plural).", "attribute", {"names": WORD_LIST},
           [("A red cube.", {"names": ["green sphere"]}, True), ("No green spheres here.", {"names": ["green sphere"]}, False)],
           needs=("objects",), ground=_ground_exclude, check_ground=_check_exclude)
def _visual_exclude(response: str, names: list[str]) -> Verdict:
    found = [n for n in names if has(response, n)]
    return Verdict(not found, f"none of {names}", f"found {found}" if found else "none mentioned")


register(Contract("scene_mood", "Describe the overall mood or atmosphere the image conveys.", "attribute",
                  {"tone": {"type": "string", "enum": ["calm", "tense", "cheerful", "neutral", "any"]}}, None,
                  (Case("The scene feels calm and orderly.", {"tone": "calm"}, True),
                   Case("There are three cubes.", {"tone": "calm"}, False)), track="judge",
                  rubric="The response describes the mood or atmosphere the image conveys (as {tone} where the "
                         "tone is not 'any'), grounded in what the image shows.",
                  cues=("mood", "atmosphere", "feels", "feel", "calm", "tense", "cheerful", "serene", "gloomy")))


# spatial ------------------------------------------------------------------------------------
def _ground_spatial(facts: Mapping[str, Any], rng: Any) -> dict[str, Any] | None:
    objects = _objects(facts)
    refs = [referent(objects, i) for i in range(len(objects))]
    options = []
    for i, j in itertools.permutations(range(len(objects)), 2):
        if not (_wordless(refs[i]) and _wordless(refs[j]) and _apart([refs[i], refs[j]])):
            continue
        for horizontal in (True, False) if facts.get("source") != "clevr" else (True,):
            relation = spatial_relation_of(objects[i], objects[j], horizontal)
            if relation is not None:
                options.append({"first": refs[i], "second": refs[j], "relation": relation,
                                "choices": "left or right" if horizontal else "above or below"})
    return _pick(rng, options) if options else None


def spatial_relation_of(a: Mapping[str, Any], b: Mapping[str, Any], horizontal: bool) -> str | None:
    """Where ``a`` is relative to ``b`` along one image axis, or ``None`` when a reader
    could not say: centres closer than ``SPATIAL_MARGIN``, or (where the facts have boxes)
    boxes that overlap along the axis -- a hat on a head, a spoon on a saucer. Above and
    below are image directions; on a CLEVR table they would mean behind and in front, so
    CLEVR facts are asked only left and right."""
    axis = "x" if horizontal else "y"
    d = float(a[axis]) - float(b[axis])
    if abs(d) < SPATIAL_MARGIN:
        return None
    if "box" in a and "box" in b:
        lo, hi = (0, 2) if horizontal else (1, 3)
        first, second = (a, b) if d < 0 else (b, a)
        if first["box"][hi] > second["box"][lo]:  # they overlap along the axis
            return None
    if horizontal:
        return "left" if d < 0 else "right"
    return "above" if d < 0 else "below"  # y runs down the image


def _check_spatial(facts: Mapping[str, Any], params: Mapping[str, Any]) -> str | None:
    pair = _check_pair(facts, params)
    if isinstance(pair, str):
        return pair
    a, b = pair
    horizontal = params["relation"] in ("left", "right")
    if not horizontal and facts.get("source") == "clevr":
        return "above and below are not asked of CLEVR scenes (on the table they mean behind and in front)"
    want = spatial_relation_of(a, b, horizontal)
    if want is None:
        return f"expected {params['first']!r} and {params['second']!r} apart along the axis, got them overlapping"
    if params["choices"] != ("left or right" if horizontal else "above or below"):
        return f"expected choices matching {params['relation']!r}, got {params['choices']!r}"
    return None if want == params["relation"] else f"expected relation {want!r}, got {params['relation']!r}"


@_contract("spatial_relation", "Say where one named object is relative to another in the image (left / right / "
           "above / below): a clause naming the first, then the second, with the right word and not its opposite.",
           "spatial", {"first": TEXT, "second": TEXT, "relation": {"type": "string", "enum": ["left", "right", "above", "below"]},
                       "choices": {"type": "string", "enum": ["left or right", "above or below"]}},
           [("The cube is to the left of the sphere.", {"first": "cube", "second": "sphere", "relation": "left",
                                                        "choices": "left or right"}, True),
            ("The cube is to the right of the sphere.", {"first": "cube", "second": "sphere", "relation": "left",
                                                         "choices": "left or right"}, False),
            ("The cube is left of the sphere and right of it too.", {"first": "cube", "second": "sphere",
                                                                     "relation": "left", "choices": "left or right"}, True)],
           needs=("objects",), ground=_ground_spatial, check_ground=_check_spatial)
def _spatial_relation(response: str, first: str, second: str, relation: str, choices: str) -> Verdict:
    return _verdict_good_bad(*relation_clauses(response, first, second, relation), f"the {first} {relation} of the {second}")


# counting -----------------------------------------------------------------------------------
def _groups(objects: list[Mapping[str, Any]]) -> dict[str, int]:
    out: dict[str, int] = {}
    for o in objects:
        for sub in [()] + [(a,) for a in _attrs(o)]:
            phrase = _phrase(o, sub)
            out[phrase] = len(denoted(objects, phrase))
    return out


def _ground_count(facts: Mapping[str, Any], rng: Any) -> dict[str, Any] | None:
    groups = _groups(_objects(facts))
    if not _complete(facts) or not groups:
        return None
    noun = _pick(rng, sorted(groups))
    return {"noun": noun, "count": groups[noun]}


def _check_count(facts: Mapping[str, Any], params: Mapping[str, Any]) -> str | None:
    if not _complete(facts):
        return f"expected facts listing every object (source 'clevr'), got source {facts.get('source')!r}"
    actual = len(denoted(_objects(facts), params["noun"]))
    return None if actual == params["count"] else f"expected count {actual} of {params['noun']!r}, got {params['count']}"


def count_stated(clause: str, noun: str) -> float | None:
    """The number a clause gives for ``noun``: the last before its first mention, else the first after."""
    spans = mentions(clause, [noun])
    if not spans:
        return None
    found = [n for n in numbers(clause) if all(n[1] <= s or n[0] >= e for s, e, _ in spans)]
    before = [v for s, _, v in found if s < spans[0][0]]
    after = [v for s, _, v in found if s >= spans[0][1]]
    return before[-1] if before else after[0] if after else None


@_contract("object_count", "State how many objects of a group the image shows (digits or words; the number next "
           "to the group's name in each clause that names it must be right).", "counting",
           {"noun": TEXT, "count": {"type": "integer", "minimum": 1, "maximum": 1000}},
           [("I see three red cubes.", {"noun": "red cube", "count": 3}, True),
            ("There are 3 red cubes and 2 spheres.", {"noun": "red cube", "count": 3}, True),
            ("There are 4 red cubes.", {"noun": "red cube", "count": 3}, False),
            ("Red cubes are here.", {"noun": "red cube", "count": 3}, False)],
           needs=("objects",), ground=_ground_count, check_ground=_check_count)
def _object_count(response: str, noun: str, count: int) -> Verdict:
    stated = [v for c in clauses(response, [noun]) if (v := count_stated(c, noun)) is not None]
    ok = bool(stated) and all(v == count for v in stated)
    return Verdict(ok, f"{count} {plural(noun)}", ", ".join(number_text(v) for v in stated) or "no count stated")


# object grounded ----------------------------------------------------------------------------
def _ground_describe(facts: Mapping[str, Any], rng: Any) -> dict[str, Any] | None:
    objects = _objects(facts)
    if not _complete(facts):
        return None
    options = []
    for cat in sorted({o["category"] for o in objects}):
        group = [o for o in objects if o["category"] == cat]
        for attribute in REFERENT_ATTRS:
            values = sorted({o.get(attribute) for o in group})
            if len(group) >= 2 and all(v in VALUES[attribute] for v in values):
                options.append({"group": cat, "attribute": attribute, "values": values,
                                "wrong": [v for v in VALUES[attribute] if v not in values]})
    return _pick(rng, options) if options else None


def _check_describe(facts: Mapping[str, Any], params: Mapping[str, Any]) -> str | None:
    if not _complete(facts):
        return f"expected facts listing every object (source 'clevr'), got source {facts.get('source')!r}"
    group = [o for o in _objects(facts) if o["category"] == params["group"]]
    values = sorted({o.get(params["attribute"]) for o in group})
    if len(group) < 2 or values != sorted(params["values"]):
        return f"expected {params['attribute']}s {values} of {len(group)} {params['group']}s, got {params['values']}"
    wrong = [v for v in VALUES[params["attribute"]] if v not in values]
    return None if sorted(params["wrong"]) == sorted(wrong) else f"expected wrong values {wrong}, got {params['wrong']}"


def wrong_adjacent(text: str, group: str, wrong: list[str]) -> list[str]:
    """The wrong values written right before the group's name ("a blue cube", "a blue metal cube")."""
    noun = r"\s+".join(re.escape(p) for p in group.split())
    return [w for w in _words_of(wrong) if re.search(r"(?<!\w)" + re.escape(w) + r"\s+(?:\w+\s+){0,2}?" + noun + r"(?:e?s)?(?!\w)",
                                                     text, re.IGNORECASE)]


@_contract("object_describe", "Mention every object of a group with its attribute: each of the group's values in a "
           "sentence naming the group, and no other value written before the group's name.", "object_grounded",
           {"group": TEXT, "attribute": {"type": "string", "enum": list(VALUES)}, "values": WORD_LIST,
            "wrong": {"type": "array", "items": TEXT}},
           [("The cubes are red and blue.", {"group": "cube", "attribute": "color", "values": ["blue", "red"],
                                             "wrong": ["green"]}, True),
            ("The cubes are red.", {"group": "cube", "attribute": "color", "values": ["blue", "red"], "wrong": ["green"]}, False),
            ("A red cube, a blue cube and a green cube.", {"group": "cube", "attribute": "color", "values": ["blue", "red"],
                                                           "wrong": ["green"]}, False)],
           needs=("objects",), ground=_ground_describe, check_ground=_check_describe)
def _object_describe(response: str, group: str, attribute: str, values: list[str], wrong: list[str]) -> Verdict:
    named = [s for s in sentences(response) if has(s, group)]
    missing = [v for v in values if not any(has(s, w) for s in named for w in _words_of([v]))]
    extra = wrong_adjacent(response, group, wrong)
    actual = f"missing {missing}" if missing else f"wrong {attribute} {extra}" if extra else "all described"
    return Verdict(not missing and not extra, f"the {plural(group)}' {attribute}s {values}", actual)


#: the share of the image a protected target's box must cover to be the subject a reader
#: names for its part of the picture (an eye in a face is not what "the centre" shows)
SUBJECT_AREA = 0.15


def _subjects(facts: Mapping[str, Any]) -> list[dict[str, Any]]:
    return [o for o in _objects(facts) if o.get("protected") and "box" in o
            and (o["box"][2] - o["box"][0]) * (o["box"][3] - o["box"][1]) >= SUBJECT_AREA]


def _ground_target(facts: Mapping[str, Any], rng: Any) -> dict[str, Any] | None:
    targets = _subjects(facts)
    cells = [position(float(o["x"]), float(o["y"])) for o in targets]
    options = [{"category": o["category"], "where": cell} for o, cell in zip(targets, cells) if cells.count(cell) == 1]
    return _pick(rng, options) if options else None


def position(x: float, y: float) -> str:
    """The cell of a 3 x 3 grid a normalised point lies in ("top left" ... "bottom right")."""
    return POSITIONS[min(2, max(0, int(y * 3))) * 3 + min(2, max(0, int(x * 3)))]


def _check_target(facts: Mapping[str, Any], params: Mapping[str, Any]) -> str | None:
    targets = _subjects(facts)
    cells = [position(float(o["x"]), float(o["y"])) for o in targets]
    hits = [o for o, cell in zip(targets, cells) if cell == params["where"]]
    if len(hits) != 1:
        return f"expected one protected target at the {params['where']}, got {len(hits)}"
    return None if hits[0]["category"] == params["category"] else \
        f"expected category {hits[0]['category']!r}, got {params['category']!r}"


@_contract("target_name", "Name the main subject in a given part of the image: a protected target covering at least "
           "15% of it (its category, whole words, any case).",
           "object_grounded", {"category": TEXT, "where": {"type": "string", "enum": list(POSITIONS)}},
           [("It is the helmet.", {"category": "helmet", "where": "top left"}, True),
            ("It is a hat.", {"category": "helmet", "where": "top left"}, False)],
           needs=("objects",), ground=_ground_target, check_ground=_check_target)
def _target_name(response: str, category: str, where: str) -> Verdict:
    return Verdict(has(response, category), f"names the {category}", "named" if has(response, category) else "not named")


# OCR grounded and chart rows ----------------------------------------------------------------------
def _plain(text: str) -> str:
    return " ".join(str(text).split())


def _ground_ocr(facts: Mapping[str, Any], rng: Any) -> dict[str, Any] | None:
    texts = sorted({_plain(t) for t in facts.get("texts") or () if 3 <= len(_plain(t)) <= 80
                    and sum(c.isalpha() for c in str(t)) >= 2})
    return {"text": _pick(rng, texts)} if texts else None


def _check_ocr(facts: Mapping[str, Any], params: Mapping[str, Any]) -> str | None:
    texts = {_plain(t) for t in facts.get("texts") or ()}
    return None if _plain(params["text"]) in texts else f"expected a text drawn in the image, got {params['text']!r}"


@_contract("ocr_content", "Quote a text drawn in the image exactly (same characters and case; spacing may differ).",
           "ocr_grounded", {"text": TEXT},
           [('The title reads "Sales by Region".', {"text": "Sales by Region"}, True),
            ("The title reads sales by region.", {"text": "Sales by Region"}, False)],
           needs=("texts",), ground=_ground_ocr, check_ground=_check_ocr)
def _ocr_content(response: str, text: str) -> Verdict:
    ok = _plain(text) in _plain(response)
    return Verdict(ok, f"quotes {text!r}", "quoted" if ok else "not quoted exactly")


def _series_rows(facts: Mapping[str, Any]) -> dict[str, list[Mapping[str, Any]]]:
    """Numeric rows by series, only series whose labels are distinct, sentence-safe and apart."""
    out: dict[str, list[Mapping[str, Any]]] = {}
    for row in facts.get("rows") or ():
        value = row.get("value")
        if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
            out.setdefault(str(row.get("series") or ""), []).append(row)
    return {s: rows for s, rows in out.items()
            if _apart([str(r["label"]) for r in rows]) and all(str(r["label"]).strip() and not re.search(r"[.!?;]", str(r["label"]))
                                                              and not _CLAUSE.search(str(r["label"])) for r in rows)}


def decimals_of(value: float) -> int:
    for d in range(7):
        if abs(round(value, d) - value) <= 1e-9 * max(1.0, abs(value)):
            return d
    return 6


def _tolerance(row: Mapping[str, Any]) -> float:
    """How close a stated value must be: the row's own tolerance (how precisely the chart shows
    it), else one unit of its last decimal place."""
    given = row.get("tolerance")
    if isinstance(given, (int, float)) and not isinstance(given, bool) and given >= 0:
        return float(given)
    return 10.0 ** -int(row.get("decimals", decimals_of(float(row["value"]))))


def _ground_value(facts: Mapping[str, Any], rng: Any) -> dict[str, Any] | None:
    options = [(s, r) for s, rows in _series_rows(facts).items() for r in rows
               if not re.search(r"[.!?;]", s) and (not s or _apart([s, str(r["label"])]))]
    if not options:
        return None
    series, row = _pick(rng, options)
    return {"label": str(row["label"]), "series": series, "value": float(row["value"]), "tolerance": _tolerance(row)}


def _check_value(facts: Mapping[str, Any], params: Mapping[str, Any]) -> str | None:
    rows = [r for r in _series_rows(facts).get(params["series"], []) if str(r["label"]) == params["label"]]
    if len(rows) != 1:
        return f"expected one row {params['label']!r} in series {params['series']!r}, got {len(rows)}"
    if abs(float(rows[0]["value"]) - params["value"]) > 1e-9 or abs(_tolerance(rows[0]) - params["tolerance"]) > 1e-9:
        return f"expected value {rows[0]['value']} within {_tolerance(rows[0])}, got {params['value']} within {params['tolerance']}"
    return None


def value_stated(clause: str, label: str, series: str = "") -> float | None:
    """The number a clause gives for ``label``: the first after its mention, else the last before
    (numbers inside the label or the series name do not count)."""
    spans = mentions(clause, [label] + ([series] if series else []))
    own = [s for s in spans if s[2] == label]
    if not own:
        return None
    found = [n for n in numbers(clause) if all(n[1] <= s or n[0] >= e for s, e, _ in spans)]
    after = [v for s, _, v in found if s >= own[0][1]]
    before = [v for s, _, v in found if s < own[0][0]]
    return after[0] if after else before[-1] if before else None


@_contract("chart_value", "State the value of a chart's row (within the chart's precision): the number next to "
           "the row's label in each clause that names it.", "ocr_grounded",
           {"label": TEXT, "series": {"type": "string"}, "value": {"type": "number"}, "tolerance": {"type": "number", "minimum": 0}},
           [("Asia is 42.1 and Europe is 30.", {"label": "Asia", "series": "", "value": 42.1, "tolerance": 0.1}, True),
            ("For 2019, Q1 is 40.", {"label": "Q1", "series": "2019", "value": 40.0, "tolerance": 1.0}, True),
            ("Asia is 45.", {"label": "Asia", "series": "", "value": 42.1, "tolerance": 0.1}, False),
            ("Europe is 42.1.", {"label": "Asia", "series": "", "value": 42.1, "tolerance": 0.1}, False)],
           needs=("rows",), ground=_ground_value, check_ground=_check_value)
def _chart_value(response: str, label: str, series: str, value: float, tolerance: float) -> Verdict:
    names = [label] + ([series] if series else [])
    stated = [v for c in clauses(response, names) if (v := value_stated(c, label, series)) is not None]
    ok = bool(stated) and all(abs(v - value) <= tolerance + 1e-9 for v in stated)
    return Verdict(ok, f"{label}: {number_text(value)} (within {number_text(tolerance)})",
                   ", ".join(number_text(v) for v in stated) or "no value stated")


def _ground_extreme(facts: Mapping[str, Any], rng: Any) -> dict[str, Any] | None:
    options = []
    for series, rows in _series_rows(facts).items():
        values = sorted(float(r["value"]) for r in rows)
        labels = [str(r["label"]) for r in rows]
        if len(rows) < 2 or any(has(w, label) or has(label, w) for label in labels for ws in RELATION_WORDS.values()
                                for w in ws):
            continue
        for extreme, target, runner_up in (("largest", values[-1], values[-2]), ("smallest", values[0], values[1])):
            hits = [str(r["label"]) for r in rows if float(r["value"]) == target]
            if len(hits) == 1 and readably_apart(rows, target, runner_up):
                options.append({"series": series, "extreme": extreme, "label": hits[0], "labels": labels})
    return _pick(rng, options) if options else None


def _check_extreme(facts: Mapping[str, Any], params: Mapping[str, Any]) -> str | None:
    rows = _series_rows(facts).get(params["series"], [])
    if sorted(str(r["label"]) for r in rows) != sorted(params["labels"]):
        return f"expected the labels of series {params['series']!r}, got {params['labels']}"
    pick = max if params["extreme"] == "largest" else min
    target = pick(float(r["value"]) for r in rows)
    hits = [str(r["label"]) for r in rows if float(r["value"]) == target]
    return None if hits == [params["label"]] else f"expected the {params['extreme']} {hits}, got {params['label']!r}"


def extreme_named(clause: str, extreme: str, labels: list[str]) -> str | None:
    """The label a clause calls the extreme: the nearest one before the extreme's word, else after."""
    words_at = [m.start() for w in RELATION_WORDS[extreme] for m in name_pattern(w).finditer(clause)]
    spans = mentions(clause, labels)
    if not words_at or not spans:
        return None
    at = min(words_at)
    before = [s for s in spans if s[1] <= at]
    after = [s for s in spans if s[0] > at]
    return before[-1][2] if before else after[0][2] if after else None


@_contract("chart_extreme", "Name the chart's row with the largest (or smallest) value: the label nearest the "
           "extreme's word (largest / highest / ...) in each clause using it.", "attribute",
           {"series": {"type": "string"}, "extreme": {"type": "string", "enum": ["largest", "smallest"]}, "label": TEXT,
            "labels": WORD_LIST},
           [("Asia is the largest, Europe the smallest.", {"series": "", "extreme": "largest", "label": "Asia",
                                                           "labels": ["Asia", "Europe"]}, True),
            ("The highest value is in Europe.", {"series": "", "extreme": "largest", "label": "Asia",
                                                 "labels": ["Asia", "Europe"]}, False),
            ("Asia and Europe.", {"series": "", "extreme": "largest", "label": "Asia", "labels": ["Asia", "Europe"]}, False)],
           needs=("rows",), ground=_ground_extreme, check_ground=_check_extreme)
def _chart_extreme(response: str, series: str, extreme: str, label: str, labels: list[str]) -> Verdict:
    named = [n for c in clauses(response, labels) if (n := extreme_named(c, extreme, labels)) is not None]
    ok = bool(named) and all(n == label for n in named)
    return Verdict(ok, f"the {extreme}: {label}", ", ".join(named) or "none named")


def readably_apart(rows: list[Mapping[str, Any]], a: float, b: float) -> bool:
    """Whether a reader of the chart can tell ``a`` from ``b``: they differ by more than
    twice the rows' reading tolerance (a fifth of a tick step without data labels)."""
    tolerance = max((float(r.get("tolerance", 0.0)) for r in rows), default=0.0)
    return abs(a - b) > 2 * tolerance


def _ground_order(facts: Mapping[str, Any], rng: Any) -> dict[str, Any] | None:
    options = []
    for series, rows in _series_rows(facts).items():
        values = sorted(float(r["value"]) for r in rows)
        if 2 <= len(rows) <= 8 and all(readably_apart(rows, a, b) for a, b in zip(values, values[1:])):
            options.append({"series": series, "labels": [str(r["label"]) for r in sorted(rows, key=lambda r: -float(r["value"]))]})
    return _pick(rng, options) if options else None


def _check_order(facts: Mapping[str, Any], params: Mapping[str, Any]) -> str | None:
    rows = _series_rows(facts).get(params["series"], [])
    want = [str(r["label"]) for r in sorted(rows, key=lambda r: -float(r["value"]))]
    return None if want == params["labels"] else f"expected the order {want}, got {params['labels']}"


@_contract("chart_order", "List the chart's rows from the largest value to the smallest: one sentence naming every "
           "label, first mentions in descending order.", "attribute",
           {"series": {"type": "string"}, "labels": WORD_LIST},
           [("From top: Asia, Africa, Europe.", {"series": "", "labels": ["Asia", "Africa", "Europe"]}, True),
            ("Europe, Africa, Asia.", {"series": "", "labels": ["Asia", "Africa", "Europe"]}, False),
            ("Asia, Africa.", {"series": "", "labels": ["Asia", "Africa", "Europe"]}, False)],
           needs=("rows",), ground=_ground_order, check_ground=_check_order)
def _chart_order(response: str, series: str, labels: list[str]) -> Verdict:
    orders = []
    for s in sentences(response):
        order = list(dict.fromkeys(n for _, _, n in mentions(s, labels)))
        if set(order) == set(labels):
            orders.append(order)
    ok = labels in orders
    return Verdict(ok, f"in order {labels}", f"orders {orders}" if orders else "no sentence names every label")


# causal and conditional -------------------------------------------------------------------------
register(Contract("causal_explain", "Explain why something in the image is as it is: a cause and its effect.", "causal",
                  {"topic": TEXT}, None,
                  (Case("The shadows fall left because the light comes from the right.", {"topic": "the shadows"}, True),
                   Case("There are shadows.", {"topic": "the shadows"}, False)), track="judge",
                  rubric="The response explains a cause of {topic}, linking cause and effect explicitly and "
                         "consistently with what the image shows.",
                  cues=("because", "due to", "as a result", "causes", "caused", "leads to", "since", "therefore")))


@_contract("temporal_sequence", "Describe steps in order with the markers at the start of sentences or lines, in the "
           "given order (First ... Then ... Finally).", "causal", {"markers": WORD_LIST},
           [("First, look. Then, count. Finally, answer.", {"markers": ["First", "Then", "Finally"]}, True),
            ("Finally, go. First, look. Then, count. Finally, answer.", {"markers": ["First", "Then", "Finally"]}, True),
            ("Then, count. Finally, answer. First, look.", {"markers": ["First", "Then", "Finally"]}, False),
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
            return Verdict(False, f"markers {markers} in order", f"no {marker!r} opening a sentence after the previous marker")
    return Verdict(True, f"markers {markers} in order", "in order")


@_contract("conditional_if", "At least one conditional sentence of the form 'If ..., ...' (the condition, a comma, "
           "then the consequence).", "conditional", {},
           [("If the light were brighter, the cube would shine.", {}, True), ("The cube would shine.", {}, False),
            ("If only.", {}, False)])
def _conditional_if(response: str) -> Verdict:
    found = [s for s in sentences(response) if re.match(r"\s*if\b[^,]*\w[^,]*,\s*\w", s, re.IGNORECASE)]
    return Verdict(bool(found), "a sentence 'If ..., ...'", f"{len(found)} such sentences")


register(Contract("hypothetical", "Consider a hypothetical change to the image and say what would follow.", "conditional",
                  {"change": TEXT}, None,
                  (Case("If the red cube were removed, only two objects would remain.", {"change": "removing an object"},
                        True), Case("There are three objects.", {"change": "removing an object"}, False)), track="judge",
                  rubric="The response imagines that {change} and states a consequence that follows from what the image shows.",
                  cues=("would", "were", "suppose", "imagine", "if", "could")))

GROUNDED = ("attribute_describe", "size_compare", "visual_include", "visual_exclude", "spatial_relation", "object_count",
            "object_describe", "target_name", "ocr_content", "chart_value", "chart_extreme", "chart_order")
