"""Scoring a response against a stored row: one scorer for every trainer (verl's reward
function :mod:`vicogym.verl_reward`, TRL's reward functions :mod:`vicogym.trainers.trl`).


:func:`score_row` extracts the answer from the response (:func:`vicogym.clients.extract_answer`:
reasoning dropped, ``\\boxed{}``, ``<answer>``, an answer lead-in, else the final line, cleaned
of markdown and LaTeX; ``extractor`` may choose a strict mode) and scores it with the
scorer of the row's own environment (``data_source``), the same one that computed the
pass rates at generation.

For ``vicogym/Instruct-v0`` rows (``vicogym synthesize``) the whole response is the
answer and the reward is the constraint pass rate, computed from the stored contracts.
A row names the discovered types among its constraints by id and code SHA-256 only;
their code runs only when the run's types are loaded explicitly, once per process:
``reward_kwargs`` ``types=RUN_FOLDER`` (the run folder or its ``types.json``, checked
against its hashes; the code runs in the OS sandbox). A row naming a type or hash no
loaded registry holds raises :class:`vicogym.errors.UnknownConstraintType`: code is
never taken from a row. Judge-track constraints need a judge: ``reward_kwargs``
``judge="openai:MODEL@URL"`` (or ``"simulated"``); without one they are left out and
the rate is over the code-verified constraints.

For ``vicogym/Evidence-v0`` rows (``vicogym generate vicogym/Evidence-v0``) the reward is
the score the answer tool recorded in the trajectory (verl merges the tools' extra fields
into ``extra_info``; see :mod:`vicogym.trainers.verl_agent`), or, for a response with no tool call,
the extracted answer scored by the task's scorer.

Any solution string gets a score: a response is the policy's, and one that holds nothing
readable (no answer, a line of 100,000 characters, NUL bytes, lone surrogates, text that is
not a string) scores what its answer earns, 0.0 at worst. A row that cannot be scored
against raises :class:`RowError` (a ``ValueError``) naming the data source and the
problem: a data source that is no vicogym environment, a ground truth that is not the JSON
its data source writes (not JSON, nested too deeply, an integer of more than 4300 digits,
a missing or mistyped field), a recorded tool score that is no number in [0, 1]. A corrupt
row is a data problem to fix, not a wrong answer: a silent 0.0 would train the policy
against it. (An instruction row naming constraint types that were not loaded raises
:class:`vicogym.errors.UnknownConstraintType`, as before.)
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

from vicogym.errors import VicogymError
from vicogym.validation import as_text, brief, error_text, loads_json

_SCORERS: dict[str, Callable[[str, str], float]] = {}


class RowError(VicogymError, ValueError):
    """A row the reward cannot score a response against (its data source, ground truth or
    recorded score is not what vicogym writes); the message names the problem."""


def row_error(data_source: Any, problem: str, value: Any = None) -> RowError:
    shown = "" if value is None else f": {brief(value, 80)}"
    return RowError(f"a {brief(data_source, 60)} row's {problem}{shown}; score rows as `vicogym generate` / `vicogym "
                    "synthesize` write them (reward_model.ground_truth)")


def ground_truth_json(data_source: Any, ground_truth: Any, what: str) -> dict[str, Any]:
    """A row's ground truth read as the JSON object its data source writes (``what``
    names its fields), or :class:`RowError`."""
    if not isinstance(ground_truth, (str, bytes, bytearray)):
        raise row_error(data_source, f"ground truth is of type {type(ground_truth).__name__}, not JSON text with "
                        f"{what}", ground_truth)
    value, problem = loads_json(ground_truth)
    if problem is not None:
        raise row_error(data_source, f"ground truth is {problem}; expected JSON with {what}", ground_truth)
    if not isinstance(value, dict):
        kind = {list: "array", str: "string", int: "number", float: "number", bool: "boolean"}.get(type(value), "null")
        raise row_error(data_source, f"ground truth is a JSON {kind}, not an object with {what}", ground_truth)
    return value


def _environment(data_source: str) -> type:
    import vicogym  # noqa: F401  (registers the environments)
    from vicogym.registry import ENVIRONMENTS, env_class

    if not isinstance(data_source, str) or data_source not in ENVIRONMENTS:
        raise RowError(f"{brief(data_source, 80)} is not a vicogym data source (known: "
                       f"{', '.join(sorted(ENVIRONMENTS))})")
    return env_class(data_source)


def scorer(data_source: str) -> Callable[[str, str], float]:
    """The answer scorer of the (edit) environment ``data_source`` names."""
    if data_source not in _SCORERS:
        from vicogym.registry import make_arm

        _environment(data_source)
        _SCORERS[data_source] = make_arm(data_source).score
    return _SCORERS[data_source]


def score_row(data_source: str, solution_str: str, ground_truth: str, extra_info: Any = None,
              extractor: str = "auto", judge: Any = None, types: Any = None, **kwargs: Any) -> float:
    """The score of ``solution_str`` on a row (verl's reward signature): 1.0 for a right
    answer, 0.0 for a wrong one (partial credit where the environment's scorer gives it). A
    row of a response environment is scored by that environment's class
    (``score_response``: the constraint pass rate for instruction rows, with ``judge`` and
    ``types`` as above; the answer tool's score or the task's scorer for evidence rows)."""
    from vicogym.clients import extract_answer

    cls = _environment(data_source)
    solution = as_text(solution_str)
    if cls.kind == "agent":
        return float(cls.score_response(solution, ground_truth, extra_info=extra_info, extractor=extractor))
    if cls.kind != "edit":
        _check_instruction_truth(data_source, ground_truth)
        try:
            return float(cls.score_response(solution, ground_truth, judge=judge, types=types))
        except VicogymError:  # UnknownConstraintType, a judge's ModelError: typed already
            raise
        except (KeyError, TypeError, ValueError, RecursionError) as exc:  # its constraints' parameters
            raise row_error(data_source, f"constraints cannot be verified ({error_text(exc, 160)})") from exc
    if isinstance(ground_truth, str):
        truth = ground_truth
    elif isinstance(ground_truth, (int, float)) and not isinstance(ground_truth, bool) and (
            not isinstance(ground_truth, float) or math.isfinite(ground_truth)):
        truth = as_text(ground_truth)
        if not truth:
            raise row_error(data_source, "ground truth is a number too long to write", ground_truth)
    else:
        raise row_error(data_source, f"ground truth is of type {type(ground_truth).__name__}, not the answer's text",
                        ground_truth)
    return float(scorer(data_source)(extract_answer(solution, extractor), truth))


def _check_instruction_truth(data_source: str, ground_truth: Any) -> None:
    """An instruction row's ground truth is ``{"constraints": [{"id", "params"}, ...]}``."""
    truth = ground_truth_json(data_source, ground_truth, "constraints")
    constraints = truth.get("constraints")
    if not isinstance(constraints, list):
        raise row_error(data_source, "ground truth has no constraints list", ground_truth)
    for i, spec in enumerate(constraints):
        if (not isinstance(spec, Mapping) or not isinstance(spec.get("id"), str)
                or not isinstance(spec.get("params", {}), (Mapping, type(None)))):
            raise row_error(data_source, f"ground truth's constraint {i} is no {{id: string, params: object}}",
                            spec)
