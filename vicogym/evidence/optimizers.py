"""Optimizers that propose a skill edit for ``vicogym craft``: each is asked for one
proposal at a time, for one *move* (the kind of edit: the part of the skill to edit, or
``joint``; chosen by UCB in the search), and sees the incumbent skill, its failure traces
on the development items and the proposals rejected so far.

- ``random``: an edit sampled from the same grammar (:mod:`vicogym.evidence.interface`
  for the interface, a library of reader and contract clauses for the text);
- ``guided``: rule-based repairs read from the traces, most frequent failure first: a
  missed unit adds a selection rule (or tells the reader to find the unit), an unreadable
  field adds a zoom (or crops, an upscale, a grid), a wrong format tightens the answer
  contract, confused options are noted in their own colours, confused frames get
  timestamp rows;
- ``openai:MODEL@URL``: a model behind an OpenAI-compatible server, shown the skill's
  files, the grammar (JSON Schema), the failure traces with their last views (images)
  and the fields it may edit; it replies with one JSON object of the fields it changes.

Moves: ``reader``, ``answer_contract`` (θ); ``select``, ``present``, ``protocol``,
``view_contract`` (φ, ψ); ``joint`` (a θ edit and an interface edit together).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from vicogym.evidence import interface as grammar
from vicogym.evidence.skills import FIELDS, PROTOCOL_KEYS, TEXT_FIELDS, Skill

TEXT_MOVES = ("reader", "answer_contract")
INTERFACE_MOVES = ("select", "present", "protocol", "view_contract")
MOVES = TEXT_MOVES + INTERFACE_MOVES + ("joint",)
OPTIMIZER_SPECS = ("guided", "random", "openai:MODEL@URL")

#: reader clauses the random optimizer draws from: each directive's first phrase in a
#: sentence, and clauses that direct nothing
READER_CLAUSES = (
    "Zoom into the evidence the question names before answering.",
    "Find the unit the question names on the sheet and view the unit before reading it.",
    "When the question compares frames, compose the frames before comparing them.",
    "On a multiple-choice question, note each option's region before answering.",
    "Use the grid: place zoom regions on the grid lines nearest the evidence.",
    "Read the timestamp row of each frame and order frames by their timestamps.",
    "Read the whole question twice before looking at the images.",
    "Describe what each image shows before you decide.",
    "Prefer the most specific reading of the question.",
)
ANSWER_CLAUSES = (
    "Answer in the required format: the value alone, exactly as written, with no sentence around it.",
    "Answer with the letter only on a multiple-choice question.",
    "Give a short answer.",
    "Explain your answer in one sentence.",
)
VIEW_CLAUSES = (
    "Views may carry a coordinate grid labelled in fractions of the view: use the grid to place zoom regions.",
    "Each tile may carry a timestamp row 't=i': read the timestamp to know a frame's place.",
    "Notes are numbered rings; ring colours follow the note's number.",
    "Sheets label each unit with its number and title.",
)
PROTOCOL_RANGES = {"max_steps": (4, 24), "max_images": (2, 8), "max_crops": (2, 12), "max_notes": (0, 8),
                   "max_regions": (1, 4)}


@dataclass(frozen=True)
class Proposal:
    skill: Skill
    move: str
    rationale: str
    error: str | None = None  # an invalid proposal (the optimizer's reply broke the grammar): why


def failures(traces: Sequence[Mapping[str, Any]]) -> Counter:
    """How often each (family, failure kind) occurs among the traces that scored < 1."""
    return Counter((t["task"]["family"], t.get("failure") or "wrong_answer") for t in traces if t["score"] < 1.0)


def _add_clause(text: str, clause: str) -> str:
    return (text.rstrip() + "\n" + clause).strip() if clause not in text else text


def _clauses(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.strip()]


@dataclass
class RandomOptimizer:
    """Edits sampled from the grammar and the clause libraries (the ladder's random
    same-space proposals)."""

    families: Sequence[str] = ()

    @property
    def spec(self) -> str:
        return "random"

    def propose(self, skill: Skill, move: str, traces: Sequence[Mapping[str, Any]], rng: np.random.Generator,
                rejected: set[str]) -> Proposal | None:
        for _ in range(16):
            proposal = self._one(skill, move, rng)
            if proposal is not None and proposal.skill.digest() not in rejected and move_holds(
                    move, skill.changed(proposal.skill)):
                return proposal
        return None

    def _one(self, skill: Skill, move: str, rng: np.random.Generator) -> Proposal | None:
        if move == "joint":
            first = self._one(skill, TEXT_MOVES[int(rng.integers(len(TEXT_MOVES)))], rng)
            if first is None:
                return None
            second = self._one(first.skill, INTERFACE_MOVES[int(rng.integers(len(INTERFACE_MOVES)))], rng)
            if second is None:
                return None
            return Proposal(second.skill, "joint", f"{first.rationale}; {second.rationale}")
        pick = lambda seq: seq[int(rng.integers(len(seq)))]
        if move in ("reader", "answer_contract", "view_contract"):
            library = {"reader": READER_CLAUSES, "answer_contract": ANSWER_CLAUSES, "view_contract": VIEW_CLAUSES}[move]
            text = skill.get(move)
            present = [c for c in _clauses(text) if c in library]
            if present and rng.random() < 0.3:
                clause = pick(present)
                kept = "\n".join(c for c in _clauses(text) if c != clause)
                return Proposal(skill.with_fields(**{move: kept}), move, f"{move}: drop {clause!r}")
            clause = pick(library)
            return Proposal(skill.with_fields(**{move: _add_clause(text, clause)}), move, f"{move}: add {clause!r}")
        if move == "protocol":
            key = pick(sorted(PROTOCOL_RANGES))
            low, high = PROTOCOL_RANGES[key]
            value = int(rng.integers(low, high + 1))
            return Proposal(skill.with_fields(protocol={**skill.protocol, key: value}), move,
                            f"protocol: {key}={value}")
        if move == "present":
            options: dict[str, Sequence[Any]] = {"upscale": (1.0, 1.5, 2.0, 3.0), "grid": (0, 4, 6, 8),
                                                 "timestamps": (False, True), "rings": grammar.RING_STYLES,
                                                 "labels": ("index_title", "index", "none"),
                                                 "sheet_cols": (0, 2, 3, 4, 5)}
            key = pick(sorted(options))
            value = pick(list(options[key]))
            present = {**skill.get("present"), key: value}
            return Proposal(skill.with_fields(present=present), move, f"present: {key}={value!r}")
        if move == "select":
            select = skill.get("select")
            when = {"family": [pick(list(self.families))]} if self.families and rng.random() < 0.7 else {}
            if rng.random() < 0.5:
                rule = {"pick": pick(grammar.PICKS), "count": int(rng.integers(1, 7))}
                rule = {**({"when": when} if when else {}), **rule}
                rules = [rule] + [r for r in select.get("attach", []) if r != rule]
                return Proposal(skill.with_fields(select={**select, "attach": rules[:8]}), move,
                                f"select: attach {rules[0]}")
            rule = {"rows": int(rng.integers(1, 4)), "cols": int(rng.integers(1, 4)),
                    "overlap": float(pick((0.0, 0.1, 0.2)))}
            rule = {**({"when": when} if when else {}), **rule}
            rules = [rule] + [r for r in select.get("crops", []) if r != rule]
            return Proposal(skill.with_fields(select={**select, "crops": rules[:8]}), move, f"select: crops {rules[0]}")
        raise ValueError(f"unknown move {move!r} (moves: {', '.join(MOVES)})")


def _phrase(directive: str) -> str:
    return {"zoom_evidence": READER_CLAUSES[0], "find_units": READER_CLAUSES[1], "compose_frames": READER_CLAUSES[2],
            "note_options": READER_CLAUSES[3], "grid_coordinates": READER_CLAUSES[4],
            "timestamps": READER_CLAUSES[5], "answer_format": ANSWER_CLAUSES[0]}[directive]


@dataclass
class GuidedOptimizer:
    """Rule-based repairs read from failure traces (the ladder's failure-guided
    proposals); see the module doc. A repair already in the skill, or rejected before, is
    skipped for the next one."""

    families: Sequence[str] = ()

    @property
    def spec(self) -> str:
        return "guided"

    def repairs(self, skill: Skill, family: str, failure: str, traces: Sequence[Mapping[str, Any]]
                ) -> dict[str, list[tuple[dict[str, Any], str]]]:
        """Per move, the edits (fields -> values) that repair ``failure`` on ``family``."""
        out: dict[str, list[tuple[dict[str, Any], str]]] = {move: [] for move in MOVES}
        select, present = skill.get("select"), skill.get("present")
        when = {"family": [family]}

        def first(kind: str, rule: dict[str, Any]) -> dict[str, Any]:
            """The selection with ``rule`` first among its ``kind`` rules (once)."""
            rules = [r for r in select.get(kind, []) if r != rule]
            return {"select": {**select, kind: [rule] + rules}}

        def attach(rule: dict[str, Any]) -> dict[str, Any]:
            return first("attach", {"when": when, **rule})

        def crops(rows: int, cols: int) -> dict[str, Any]:
            return first("crops", {"when": when, "rows": rows, "cols": cols, "overlap": 0.1})

        def text(name: str, directive: str) -> dict[str, Any]:
            return {name: _add_clause(skill.get(name), _phrase(directive))}

        mine = [t for t in traces if t["task"]["family"] == family]
        if failure == "missed_unit":
            many = max((len({e["unit"] for e in t["task"]["evidence"]}) for t in mine), default=1)
            pick = "spread" if family == "clevr_sequence" else "title_match"
            out["select"].append((attach({"pick": pick, "count": max(1, many)}), f"{family}: units were missed; "
                                  f"attach them first ({pick})"))
            out["reader"].append((text("reader", "find_units"), f"{family}: units were missed; tell the reader to "
                                  "find and view them"))
            out["present"].append(({"present": {**present, "labels": "index_title"}}, f"{family}: label sheets "
                                   "with titles"))
        if failure in ("unreadable", "missed_unit", "wrong_answer"):
            out["reader"].append((text("reader", "zoom_evidence"), f"{family}: evidence too small; zoom to it"))
            out["select"].append((crops(2, 2), f"{family}: evidence too small; send 2x2 crops at reset"))
            out["present"].append(({"present": {**present, "upscale": min(4.0, 2.0 * present.get("upscale", 1.0))}},
                                   f"{family}: zooms capped by max_scale; upscale"))
            out["present"].append(({"present": {**present, "grid": 6}}, f"{family}: zooms missed; a coordinate grid"))
            out["view_contract"].append((text("view_contract", "grid_coordinates"),
                                         f"{family}: say how to use the grid"))
            budget = [t for t in mine if any(s.get("error") == "crop_budget" for s in t["steps"])]
            steps = [t for t in mine if t["outcome"] == "out_of_steps"]
            if budget:
                crops_now = skill.protocol.get("max_crops", 8)
                out["protocol"].append(({"protocol": {**skill.protocol, "max_crops": min(256, crops_now + 4)}},
                                        f"{family}: {len(budget)} episodes hit the crop budget"))
            if steps:
                steps_now = skill.protocol.get("max_steps", 16)
                out["protocol"].append(({"protocol": {**skill.protocol, "max_steps": min(256, steps_now + 8)}},
                                        f"{family}: {len(steps)} episodes ran out of steps"))
            out["joint"].append(({**text("reader", "grid_coordinates"), "present": {**present, "grid": 6}},
                                 f"{family}: zooms missed; a grid and a reader that places regions by it"))
            out["joint"].append(({**text("reader", "zoom_evidence"), **crops(2, 2)},
                                 f"{family}: evidence too small; crops at reset and a reader that zooms"))
        if failure == "wrong_format":
            out["answer_contract"].append((text("answer_contract", "answer_format"), f"{family}: answers broke the "
                                           "contract; tighten it"))
        if failure == "wrong_answer" and any(t["task"]["contract"] == "letter" for t in mine):
            out["reader"].append((text("reader", "note_options"), f"{family}: options confused; note each one"))
            out["present"].append(({"present": {**present, "rings": "ordinal"}},
                                   f"{family}: one ring colour per option"))
            out["joint"].append(({**text("reader", "note_options"), "present": {**present, "rings": "ordinal"}},
                                 f"{family}: options confused; note each in its own colour"))
        if failure == "wrong_answer" and family == "clevr_sequence":
            out["present"].append(({"present": {**present, "timestamps": True}}, f"{family}: frames confused; "
                                   "timestamp rows"))
            out["reader"].append((text("reader", "timestamps"), f"{family}: frames confused; read their timestamps"))
            out["joint"].append(({**text("reader", "timestamps"), "present": {**present, "timestamps": True}},
                                 f"{family}: frames confused; timestamp rows and a reader that reads them"))
        return out

    def propose(self, skill: Skill, move: str, traces: Sequence[Mapping[str, Any]], rng: np.random.Generator,
                rejected: set[str]) -> Proposal | None:
        counts = failures(traces)
        for (family, failure), _ in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])):
            for edit, why in self.repairs(skill, family, failure, traces)[move]:
                try:
                    candidate = skill.with_fields(**edit)
                except ValueError:
                    continue
                if move_holds(move, skill.changed(candidate)) and candidate.digest() not in rejected:
                    return Proposal(candidate, move, why)
        return None


def move_holds(move: str, changed: Sequence[str]) -> bool:
    """Whether an edit that changed ``changed`` makes ``move``: that field alone, or
    for ``joint`` a θ field and an interface field together."""
    if move == "joint":
        return any(f in TEXT_FIELDS for f in changed) and any(f not in TEXT_FIELDS for f in changed)
    return list(changed) == [move]


OPTIMIZER_PROMPT = """You improve a skill for a frozen visual executor. The skill has text fields (reader: the \
reading procedure; answer_contract; view_contract) and interface fields (protocol: budgets; select and present: \
an interface expression in the grammar below). Propose ONE revision of the fields you may edit: {editable}.

Reply with one JSON object: {{"rationale": "why", FIELD: NEW_VALUE, ...}} holding only the fields you change \
(texts as strings, protocol as an object of budgets, select and present as objects of the grammar).

Protocol budgets: {budgets}.
Interface grammar (JSON Schema):
{schema}

The current skill:
{skill}

Failure traces on the development items (question, answer given, gold, failure kind, evidence support, actions; \
the last view each was sent follows as an image):
{traces}

Proposals already rejected (do not repeat them):
{rejected}
"""


@dataclass
class OpenAIOptimizer:
    """An optimizer model behind an OpenAI-compatible server (see the module doc);
    temperature 0.7 by default, as the paper's."""

    client: Any
    draw: Callable[[Mapping[str, Any]], np.ndarray | None] | None = None
    max_traces: int = 4
    #: the diffs of the proposals rejected so far (the search sets them from its ledger)
    rejected_texts: list[str] = field(default_factory=list)

    @property
    def spec(self) -> str:
        return f"openai:{self.client.model}@{self.client.base_url}"

    def content(self, skill: Skill, move: str, traces: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
        from vicogym.clients import image_data_url

        editable = list(TEXT_FIELDS) + [f for f in FIELDS if f not in TEXT_FIELDS] if move == "joint" else [move]
        failed = [t for t in traces if t["score"] < 1.0][: self.max_traces]
        lines = []
        for t in failed:
            actions = [s["action"] for s in t["steps"]]
            lines.append(json.dumps({"question": t["task"]["question"], "response": t.get("response"),
                                     "gold": t["task"]["answer"], "failure": t.get("failure"),
                                     "support": t["support"]["share"], "actions": actions}, sort_keys=True,
                                    ensure_ascii=False))
        fields_now = {f: skill.get(f) for f in FIELDS}
        text = OPTIMIZER_PROMPT.format(
            editable=", ".join(editable), budgets=json.dumps({k: list(v) for k, v in PROTOCOL_KEYS.items()}),
            schema=json.dumps(grammar.SCHEMA, sort_keys=True), skill=json.dumps(fields_now, indent=1, sort_keys=True),
            traces="\n".join(lines) or "(none failed)", rejected="\n".join(self.rejected_texts[-8:]) or "(none)")
        content: list[dict[str, Any]] = [{"type": "text", "text": text}]
        for k, t in enumerate(failed):
            pixels = self.draw(t) if self.draw is not None else None
            if pixels is not None:
                content.append({"type": "text", "text": f"Trace {k}, its last view:"})
                content.append({"type": "image_url", "image_url": {"url": image_data_url(pixels)}})
        return content

    def propose(self, skill: Skill, move: str, traces: Sequence[Mapping[str, Any]], rng: np.random.Generator,
                rejected: set[str]) -> Proposal | None:
        from vicogym.evidence.executors import extract_action

        reply = self.client.chat(self.content(skill, move, traces), n=1, seed=int(rng.integers(2**31)))[0]
        allowed = set(FIELDS) if move == "joint" else {move}
        try:
            data = json.loads(extract_action(reply))
        except json.JSONDecodeError:
            return Proposal(skill, move, "", error=f"the optimizer's reply holds no JSON object: {reply[:160]!r}")
        if not isinstance(data, dict):
            return Proposal(skill, move, "", error="the optimizer's reply is no JSON object")
        rationale = str(data.pop("rationale", ""))[:500]
        unknown = sorted(set(data) - set(FIELDS))
        outside = sorted(set(data) - allowed - set(unknown))
        if unknown or outside:
            what = f"names no skill field {unknown[0]!r}" if unknown else f"edits {outside[0]!r}, outside move {move!r}"
            return Proposal(skill, move, rationale, error=f"the proposal {what}")
        try:
            candidate = skill.with_fields(**data)
        except (ValueError, TypeError) as exc:
            return Proposal(skill, move, rationale, error=f"the proposal breaks the skill format: {exc}")
        if not candidate.changed(skill) or candidate.digest() in rejected:
            return Proposal(skill, move, rationale, error="the proposal changes nothing new")
        return Proposal(candidate, move, rationale)


def make_optimizer(spec: Any, families: Sequence[str] = (), draw: Any = None, **settings: Any) -> Any:
    if not isinstance(spec, str):
        raise ValueError(f"expected an optimizer spec ({', '.join(OPTIMIZER_SPECS)}), got {spec!r}")
    if spec == "guided":
        return GuidedOptimizer(tuple(families))
    if spec == "random":
        return RandomOptimizer(tuple(families))
    if spec.startswith("openai:"):
        from vicogym.clients import _ChatClient, parse_spec

        client = _ChatClient(**parse_spec(spec), temperature=settings.pop("temperature", 0.7),
                             max_tokens=settings.pop("max_tokens", 2048), **settings)
        return OpenAIOptimizer(client, draw)
    raise ValueError(f"unknown optimizer {spec!r}; use one of {', '.join(OPTIMIZER_SPECS)}")


def ucb_pick(moves: Sequence[str], history: Sequence[Mapping[str, Any]], c: float = 1.0) -> list[str]:
    """``moves`` ordered by UCB1 on the ledger's ``history`` (entries with ``move`` and
    ``accepted``; a submission's reward is 1 when accepted, else 0): untried moves first in
    their given order, then by mean + c * sqrt(2 ln N / n), ties in the given order."""
    pulls = {a: 0 for a in moves}
    wins = {a: 0.0 for a in moves}
    for entry in history:
        if entry.get("move") in pulls:
            pulls[entry["move"]] += 1
            wins[entry["move"]] += 1.0 if entry.get("accepted") else 0.0
    total = sum(pulls.values())
    untried = [a for a in moves if pulls[a] == 0]
    tried = [a for a in moves if pulls[a] > 0]
    score = {a: wins[a] / pulls[a] + c * float(np.sqrt(2.0 * np.log(max(total, 1)) / pulls[a])) for a in tried}
    return untried + sorted(tried, key=lambda a: (-score[a], moves.index(a)))
