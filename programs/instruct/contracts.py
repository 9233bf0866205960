"""The contract of a constraint type, the registry, and how types are registered.

A :class:`Contract` carries a type's metadata (id, description, category, verifier track,
typed parameter schema), its ``verify(response, **params)`` and the test cases that must
pass before the type enters the registry: :func:`register` runs them and refuses a type
whose verifier gets any of them wrong, or whose cases do not include both a response that
satisfies it and one that violates it. Every verdict is a :class:`Verdict` (pass,
expected, actual, detail).

Registration, one way per track: a code-verified type is its verifier decorated with
:func:`constraint`; a judge-track type is one :func:`judged` call. Both take the type's
planning hints (``exclusive`` groups, a ``measure`` and its ``relation``) with the rest of
its metadata.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

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
    judge takes as compliance, with ``evidence``: what the rubric needs that a plain
    check reads); its cases are run by the judge that is configured
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
    #: for a judged type: what the rubric needs that a plain reader can check (``(response,
    #: **params) -> str | None``, why the response fails the rubric), so that the simulated
    #: judge never passes what its own rubric rejects ("For experts, put simply:")
    evidence: Callable[..., str | None] | None = None
    needs: tuple[str, ...] = ()
    #: planning: why the type with these parameters does not fit an image (``(facts, params)
    #: -> str | None``): code in a photo's caption, three decimals where a chart prints none
    fit: Callable[..., str | None] | None = None
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
        params = self.check_params(params)
        if len(response) > MAX_RESPONSE_CHARS:
            return too_long(response, MAX_RESPONSE_CHARS)
        try:
            return self.verify(response, **params)
        except Exception as exc:  # a response no reader parses fails the constraint; it never raises
            return Verdict(False, self.description, "a response the verifier cannot read",
                           f"{type(exc).__name__}: {str(exc)[:200]}")

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
    grounded = contract.ground is not None
    if grounded != (contract.check_ground is not None) or grounded != bool(contract.needs):
        raise ValueError(f"grounded constraint {contract.id} needs ground, check_ground and needs together")
    for case in contract.cases:
        verdict = contract.verify(case.response, **contract.check_params(case.params))  # a bug raises here
        if verdict.passed != case.passed:
            raise ValueError(
                f"constraint {contract.id} gets its own case wrong: {case.response!r} with {dict(case.params)} "
                f"should {'pass' if case.passed else 'fail'} ({verdict.detail or verdict.actual})"
            )
    REGISTRY[contract.id] = contract
    return contract


BLANK = Verdict(False, "a response", "a blank response", "a blank response follows no instruction")
#: the longest response any verifier reads (every verifier is linear in it); an
#: environment's ``max_response_chars`` is usually lower
MAX_RESPONSE_CHARS = 65_536


def too_long(response: str, max_chars: int) -> Verdict:
    return Verdict(False, f"a response of at most {max_chars} characters", f"{len(response)} characters",
                   "a response over the length limit follows no instruction")


def unverifiable(response: str, max_chars: int = MAX_RESPONSE_CHARS) -> Verdict | None:
    """The verdict every constraint gets on a response no constraint reads (a blank one,
    as IFEval's harness has it, or one longer than ``max_chars``), else ``None``."""
    if len(response) > max_chars:
        return too_long(response, max_chars)
    if not response.strip():
        return BLANK
    return None


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
        verdict = unverifiable(response) or contract(response, **params)
        out.append({"id": contract.id, **verdict.to_dict()})
    return out


def pass_rate(verdicts: list[Mapping[str, Any]]) -> float:
    """The reward: the share of constraints a response satisfies (1.0 with none)."""
    return sum(bool(v["pass"]) for v in verdicts) / len(verdicts) if verdicts else 1.0


Verifier = Callable[..., Verdict]


def constraint(id: str, description: str, category: str, params: Mapping[str, Any],
               cases: list[tuple[str, dict, bool]], **fields: Any) -> Callable[[Verifier], Verifier]:
    """Register the decorated verifier as the code-verified type ``id``, with its test
    cases (``(response, params, passes)``) and its other :class:`Contract` fields
    (``optional``, planning hints such as ``exclusive``, ``measure`` and ``relation``, and
    for a visually grounded type ``needs``, ``ground`` and ``check_ground``)."""
    def wrap(verify: Verifier) -> Verifier:
        register(Contract(id, description, category, params, verify, tuple(Case(r, p, ok) for r, p, ok in cases),
                          **fields))
        return verify

    return wrap


def judged(id: str, description: str, category: str, params: Mapping[str, Any], rubric: str, cues: tuple[str, ...],
           cases: list[tuple[str, dict, bool]], **fields: Any) -> Contract:
    """Register the judge-track type ``id``: an LLM judge checks the ``rubric`` (a statement
    with ``{param}`` placeholders); ``cues`` (templates like the rubric) are the phrases the
    simulated judge takes as evidence."""
    return register(Contract(id, description, category, params, None, tuple(Case(r, p, ok) for r, p, ok in cases),
                             track="judge", rubric=rubric, cues=cues, **fields))


# -- planning hints shared by the categories ------------------------------------------------------
#: layouts: structures that a whole-response format (JSON, YAML, XML, one option, a quotation,
#: two responses, a bare list) leaves no room for; each layout has a group of its own
#: (:func:`layout`), so layouts still combine with one another
LAYOUTS = ("markdown_table", "table_columns", "bullet_list", "numbered_list", "numbered_steps", "markdown_headers",
           "sections", "paragraph_count", "nth_paragraph_first_word", "paragraph_start", "paragraph_end", "line_count",
           "blockquote", "key_value_lines", "argument_structure", "summary_line", "title", "postscript", "code_block",
           "prefix", "suffix", "end_with_question")
#: the groups of a whole-response format: every layout's
WHOLE_RESPONSE = ("whole",) + tuple(f"layout:{x}" for x in LAYOUTS)
#: a bare list: every layout's but those a list can still meet (n items on n lines)
WHOLE_LIST = ("whole",
              ) + tuple(f"layout:{x}" for x in LAYOUTS if x not in ("bullet_list", "numbered_list", "line_count"))


#: a reader's conflicts the verifiers do not see (they read paragraphs and case as IFEval
#: does): a type that asks a word at the start (end) of every paragraph, against the types
#: that put fixed text there (a heading, a label, a postscript's marker, a prefix)
EVERY_PARAGRAPH = {"start": ("paragraph_start", "nth_paragraph_first_word"), "end": ("paragraph_end",)}
FIXED_TEXT_AT = {"start": ("sections", "markdown_headers", "title", "argument_structure", "postscript", "summary_line",
                           "numbered_steps", "key_value_lines", "prefix", "blockquote"),
                 "end": ("postscript", "summary_line", "suffix", "end_with_question", "argument_structure")}
#: case rules: every letter lower, every letter upper
CASE_RULES = {"lowercase": str.islower, "uppercase": str.isupper}


def only_on(*sources: str) -> Callable[..., str | None]:
    """A ``fit`` for types that make sense only for images of these sources (``chart``,
    ``clevr``, ``natural``, ``model`` for a perceived photo)."""
    def fit(facts: Mapping[str, Any], params: Mapping[str, Any]) -> str | None:
        source = facts.get("source")
        return None if source in sources else f"fits images of {list(sources)}, not a {source} image"

    return fit


def layout(id: str) -> tuple[str, ...]:
    """The exclusive group of the layout type ``id``."""
    if id not in LAYOUTS:
        raise ValueError(f"{id} is not one of the layouts {LAYOUTS}")
    return (f"layout:{id}",)
