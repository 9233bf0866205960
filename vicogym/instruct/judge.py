"""The LLM-judge verifier track of the instruction-following arm, behind the interface of
the code verifiers (the VISA method's dual-track verification).

A judge-track contract has no code but a ``rubric`` (a statement with ``{param}``
placeholders) and ``cues``. A *judge* decides such constraints for one response:
``judge.judge(response, items, image=None) -> list[Verdict]`` with ``items`` a list of
``(contract, params)``; one verdict per item, in order.

- :class:`SimulatedJudge`: deterministic; a constraint passes iff one of its cues (filled
  with the parameters) appears in the response, case-insensitively. For tests and for
  runs without a model.
- :class:`OpenAIJudge`: a model behind an OpenAI-compatible server; one chat request per
  response judges all of its judge-track constraints together (batched), and answers a
  JSON array of ``{"index", "pass", "diagnostic"}``. A malformed answer is asked again
  once, then reported as a :class:`~vicogym.errors.ModelError` naming what was wrong.

:func:`verify_sample` verifies a mixed constraint list (code-track through the registry,
discovered types through the sandbox, judge-track through one judge call) and returns the
dicts of ``verify_all``, in the input order. :func:`check_judge_cases` runs a judge
contract's own cases with a judge (how judge types are admitted when a judge is set).
:func:`make_judge` builds a judge from a spec: ``"simulated"`` or ``"openai:MODEL@URL"``.

Templates (rubrics, cues) are filled by plain ``{name}`` substitution, never by
``str.format``: a discovered type's rubric is model-written, and ``format`` would let it
reach attributes of the parameters.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

import vicogym.programs.instruct as instruct
from vicogym.clients import _ChatClient, _short, image_data_url, parse_spec
from vicogym.errors import ModelError
from vicogym.validation import is_int


def fill(template: str, params: Mapping[str, Any]) -> str:
    """``template`` with each ``{name}`` replaced by the parameter (lists joined by ", ");
    placeholders without a parameter stay as they are."""
    def value(match: re.Match) -> str:
        name = match.group(1)
        if name not in params:
            return match.group(0)
        v = params[name]
        return ", ".join(map(str, v)) if isinstance(v, (list, tuple)) else str(v)

    return re.sub(r"\{([A-Za-z_]\w*)\}", value, template)


def _items_checked(items: Sequence[tuple[Any, Mapping[str, Any]]]) -> list[tuple[Any, dict[str, Any]]]:
    out = []
    for contract, params in items:
        if getattr(contract, "track", None) != "judge":
            raise ValueError(f"expected judge-track constraints, got {getattr(contract, 'id', contract)!r} "
                             f"of track {getattr(contract, 'track', None)!r}")
        out.append((contract, contract.check_params(params)))
    return out


@dataclass(frozen=True)
class SimulatedJudge:
    """Passes a judge constraint iff one of its cues (filled with the parameters) occurs in
    the response, case-insensitively, and the response has what the rubric needs that a
    plain check can read (the contract's ``evidence``: a rhetorical question ends with a
    question mark, writing for experts does not say "put simply"). A stand-in, simple,
    but it never accepts what its own rubric rejects. Deterministic; ignores the image."""

    def judge(self, response: str, items: Sequence[tuple[Any, Mapping[str, Any]]],
              image: np.ndarray | None = None) -> list[Any]:
        Verdict = instruct.Verdict
        verdicts = []
        for contract, params in _items_checked(items):
            cues = [fill(cue, params) for cue in contract.cues]
            hit = next((cue for cue in cues if cue and cue.lower() in response.lower()), None)
            expected = fill(contract.rubric, params)
            lacking = contract.evidence(response, **params) if contract.evidence is not None and hit else None
            if lacking is not None:
                verdicts.append(Verdict(False, expected, f"cue {hit!r} found, but {lacking}",
                                        f"simulated judge: the rubric is not met: {lacking}"))
            elif hit is not None:
                verdicts.append(Verdict(True, expected, f"cue {hit!r} found",
                                        f"simulated judge: the response contains {hit!r}"))
            else:
                verdicts.append(Verdict(False, expected, "no cue found",
                                        f"simulated judge: none of {cues} occurs in the response"))
        return verdicts

    def spec(self) -> str:
        return "simulated"


JUDGE_PROMPT = """You are a strict, fair judge of instruction following. Decide, for each numbered \
constraint below, whether the RESPONSE satisfies it. Judge only the response as written{image_note}; \
do not reward intent or partial compliance.

RESPONSE (between the markers):
<<<RESPONSE
{response}
RESPONSE>>>

CONSTRAINTS:
{constraints}

Reply with only a JSON array, one object per constraint, and nothing else:
[{{"index": 1, "pass": true, "diagnostic": "one sentence: what in the response satisfies or violates it"}}, ...]
"index" is the constraint's number (1 to {n}), "pass" is true or false, "diagnostic" is a short string."""

REASK = """Your previous reply could not be used: {problem}.
Your previous reply began: {reply}
Reply again with only the JSON array of {n} objects {{"index", "pass", "diagnostic"}}, one per constraint, \
indices 1 to {n}, and nothing else."""


def parse_verdicts(text: str, n: int) -> list[tuple[bool, str]]:
    """``(pass, diagnostic)`` for constraints 1..n from a judge's reply: a JSON array (the
    whole reply, or the whole of one Markdown code fence) of ``{"index", "pass",
    "diagnostic"}``, each index once; ``ValueError`` saying what is wrong otherwise."""
    body = text.strip()
    fence = re.fullmatch(r"```[A-Za-z]*\s*\n?(.*?)\n?```", body, re.DOTALL)
    if fence is None:
        fences = re.findall(r"```(?:json|JSON)?\s*\n(.*?)\n?```", body, re.DOTALL)
        fence_text = fences[-1] if len(fences) == 1 else None
    else:
        fence_text = fence.group(1)
    try:
        data = json.loads(fence_text if fence_text is not None else body)
    except ValueError:
        raise ValueError(
            f"expected a JSON array (alone, or alone in one ```json fence), got {_short(body, 120)!r}"
        ) from None
    if not isinstance(data, list):
        raise ValueError(f"expected a JSON array, got a JSON {type(data).__name__}")
    if len(data) != n:
        raise ValueError(f"expected {n} verdicts, one per constraint, got {len(data)}")
    found: dict[int, tuple[bool, str]] = {}
    for i, item in enumerate(data):
        if not isinstance(item, dict):
            raise ValueError(f"expected each verdict as an object, got {_short(json.dumps(item), 80)} at position {i}")
        index, passed, diagnostic = item.get("index"), item.get("pass"), item.get("diagnostic", "")
        if not is_int(index, 1, n):
            raise ValueError(f"expected \"index\" as an integer from 1 to {n}, got {index!r} at position {i}")
        if index in found:
            raise ValueError(f"expected each index once, got index {index} twice")
        if not isinstance(passed, bool):
            raise ValueError(f"expected \"pass\" as true or false, got {passed!r} for index {index}")
        if not isinstance(diagnostic, str):
            raise ValueError(f"expected \"diagnostic\" as a string, got {diagnostic!r} for index {index}")
        found[index] = (passed, diagnostic)
    return [found[i] for i in range(1, n + 1)]


@dataclass
class OpenAIJudge(_ChatClient):
    """A structured LLM judge behind an OpenAI-compatible chat server: one request judges
    all the judge-track constraints of one response (see :data:`JUDGE_PROMPT`); a reply
    that is no valid verdict array is asked again ``reasks`` times (default once), then
    raises :class:`ModelError`. The image, when given, is attached as a PNG data URL."""

    temperature: float = 0.0
    max_tokens: int = 1024
    reasks: int = 1
    seed: int | None = 0

    def __post_init__(self) -> None:
        super().__post_init__()
        if not is_int(self.reasks, 0):
            raise ValueError(f"expected reasks as an integer >= 0, got {self.reasks!r}")

    def prompt(self, response: str, items: Sequence[tuple[Any, Mapping[str, Any]]], image: np.ndarray | None) -> str:
        lines = [f"{i}. {fill(contract.rubric, params)}" for i, (contract, params) in enumerate(items, 1)]
        note = " (and, where a constraint refers to it, the attached image)" if image is not None else ""
        return JUDGE_PROMPT.format(response=response, constraints="\n".join(lines), n=len(items), image_note=note)

    def judge(self, response: str, items: Sequence[tuple[Any, Mapping[str, Any]]],
              image: np.ndarray | None = None) -> list[Any]:
        checked = _items_checked(items)
        if not checked:
            return []
        Verdict = instruct.Verdict
        content: list[dict[str, Any]] = [{"type": "text", "text": self.prompt(response, checked, image)}]
        if image is not None:
            content.insert(0, {"type": "image_url", "image_url": {"url": image_data_url(image)}})
        problem, reply = "", ""
        for attempt in range(self.reasks + 1):
            if attempt:
                # the re-ask keeps the first request and adds what was wrong with the reply
                content = content + [{"type": "text", "text": REASK.format(problem=problem, reply=_short(reply, 300),
                                                                           n=len(checked))}]
            reply = self.chat(content, n=1, seed=self.seed)[0]
            try:
                verdicts = parse_verdicts(reply, len(checked))
            except ValueError as exc:
                problem = str(exc)
                continue
            return [
                Verdict(
                    passed,
                    fill(contract.rubric, params),
                    "judged compliant" if passed else "judged non-compliant",
                    diagnostic,
                )
                for (contract, params), (passed, diagnostic) in zip(checked, verdicts)
            ]
        raise ModelError(f"the judge {self.model!r} at {self.base_url} gave no usable verdicts in {self.reasks + 1} "
                         f"replies: {problem}")


def make_judge(spec: Any) -> Any:
    """A judge from ``"simulated"``, ``"openai:MODEL@URL"``, a mapping ``{"name": "openai",
    "model", "base_url", ...}`` or ``{"name": "simulated"}``, or a judge object (kept)."""
    if hasattr(spec, "judge") and callable(spec.judge):
        return spec
    if spec == "simulated" or (isinstance(spec, Mapping) and spec.get("name") == "simulated"):
        return SimulatedJudge()
    if isinstance(spec, str) and spec.startswith("openai:"):
        return OpenAIJudge(**parse_spec(spec))
    if isinstance(spec, Mapping) and spec.get("name") == "openai":
        return OpenAIJudge(**{k: v for k, v in spec.items() if k != "name"})
    raise ValueError(f"expected a judge spec 'simulated' or 'openai:MODEL@URL' (for example "
                     f"openai:qwen2.5-72b@http://localhost:8000/v1), got {spec!r}")


_BUILT: dict[str, Any] = {}


def judge_once(spec: Any) -> Any:
    """The judge ``spec`` names, built once per process (a reward function is called per
    response)."""
    key = json.dumps(spec, sort_keys=True, default=str)
    if key not in _BUILT:
        _BUILT[key] = make_judge(spec)
    return _BUILT[key]


def verify_sample(response: str, constraints: Sequence[Mapping[str, Any]], judge: Any = None,
                  image: np.ndarray | None = None) -> list[dict[str, Any]]:
    """Each constraint (``{"id", "params"}``) verified on ``response``, as ``verify_all``'s
    dicts (``{"id", "pass", "expected", "actual", "detail"}``) in the input order:
    code-track ones by their verifier (a discovered type's calls batched into one sandbox
    child), judge-track ones together in one ``judge`` call (``image`` passed on). A blank
    response, or one over :data:`~vicogym.programs.instruct.MAX_RESPONSE_CHARS`, fails
    every constraint."""
    if not isinstance(response, str):
        raise TypeError(f"expected the response as a string, got {type(response).__name__}")
    registry = instruct.REGISTRY
    resolved = []
    for i, spec in enumerate(constraints):
        if not isinstance(spec, Mapping):
            raise ValueError(f"expected constraint {i} as {{'id', 'params'}}, got {spec!r}")
        contract = registry.get(spec.get("id"))
        if contract is None:
            raise ValueError(f"unknown constraint id {spec.get('id')!r} at position {i}")
        resolved.append((contract, contract.check_params(dict(spec.get("params") or {}))))
    refused = instruct.unverifiable(response)  # blank, or longer than any verifier reads
    if refused is not None:
        return [{"id": contract.id, **refused.to_dict()} for contract, _ in resolved]
    judged = [i for i, (contract, _) in enumerate(resolved) if contract.track == "judge"]
    if judged and judge is None:
        ids = sorted({resolved[i][0].id for i in judged})
        raise ValueError(f"constraints {ids} are judged by an LLM judge; pass judge=SimulatedJudge() or "
                         "judge=make_judge('openai:MODEL@URL')")
    verdicts: list[Any] = [None] * len(resolved)
    if judged:
        answers = make_judge(judge).judge(response, [resolved[i] for i in judged], image=image)
        if len(answers) != len(judged):
            raise ModelError(f"expected {len(judged)} verdicts from the judge, got {len(answers)}")
        for i, verdict in zip(judged, answers):
            verdicts[i] = verdict
    # a discovered type's verifier runs in the sandbox: one child for all its calls here
    batched: dict[str, list[int]] = {}
    for i, (contract, params) in enumerate(resolved):
        if contract.track == "judge":
            continue
        if hasattr(contract.verify, "verify_many"):
            batched.setdefault(contract.id, []).append(i)
        else:
            verdicts[i] = contract(response, **params)
    for indices in batched.values():
        verify = resolved[indices[0]][0].verify
        for i, verdict in zip(indices, verify.verify_many([(response, resolved[i][1]) for i in indices])):
            verdicts[i] = verdict
    return [{"id": contract.id, **verdict.to_dict()} for (contract, _), verdict in zip(resolved, verdicts)]


def check_judge_cases(judge: Any, contract: Any) -> list[str]:
    """The judge-track ``contract``'s own cases that ``judge`` gets wrong, each as a line
    (empty: the judge agrees with every case). One judge call per case."""
    if contract.track != "judge":
        raise ValueError(f"expected a judge-track contract, got {contract.id!r} of track {contract.track!r}")
    judge = make_judge(judge)
    failures = []
    for n, case in enumerate(contract.cases):
        (verdict,) = judge.judge(case.response, [(contract, dict(case.params))])
        if verdict.passed != case.passed:
            failures.append(
                f"case {n}: {_short(case.response, 80)!r} with {dict(case.params)} should "
                f"{'pass' if case.passed else 'fail'}, the judge says {'pass' if verdict.passed else 'fail'}"
                f" ({verdict.detail or verdict.actual})"
            )
    return failures
