"""The reward function verl calls for vicogym data (verl's default reward knows no
``vicogym/...`` data source and raises ``NotImplementedError``).

Point verl at this file::

    reward.custom_reward_function.path=$(python -c "import vicogym.verl_reward as m; print(m.__file__)")
    reward.custom_reward_function.name=compute_score

``compute_score`` extracts the answer from the response (``\\boxed{}``, an ``Answer:``
line, else the final line; ``reward_kwargs`` may set ``extractor``) and scores it with the
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
into ``extra_info``; see :mod:`vicogym.verl_agent`), or, for a response with no tool call,
the extracted answer scored by the task's scorer.
"""

from __future__ import annotations

from typing import Any, Callable

_SCORERS: dict[str, Callable[[str, str], float]] = {}


def _environment(data_source: str) -> type:
    import vicogym  # noqa: F401  (registers the environments)
    from vicogym.registry import ENVIRONMENTS, env_class

    if data_source not in ENVIRONMENTS:
        raise ValueError(f"{data_source!r} is not a vicogym data source (known: {', '.join(sorted(ENVIRONMENTS))})")
    return env_class(data_source)


def scorer(data_source: str) -> Callable[[str, str], float]:
    """The answer scorer of the (edit) environment ``data_source`` names."""
    if data_source not in _SCORERS:
        from vicogym.registry import make_arm

        _environment(data_source)
        _SCORERS[data_source] = make_arm(data_source).score
    return _SCORERS[data_source]


def compute_score(data_source: str, solution_str: str, ground_truth: str, extra_info: Any = None,
                  extractor: str = "auto", judge: Any = None, types: Any = None, **kwargs: Any) -> float:
    """verl's reward signature: 1.0 for a right answer, 0.0 for a wrong one (partial
    credit where the environment's scorer gives it). A row of a response environment is
    scored by that environment's class (``score_response``: the constraint pass rate for
    instruction rows, with ``judge`` and ``types`` as above; the answer tool's score or the
    task's scorer for evidence rows)."""
    from vicogym.clients import extract_answer

    cls = _environment(data_source)
    if cls.kind == "agent":
        return float(cls.score_response(solution_str, ground_truth, extra_info=extra_info, extractor=extractor))
    if cls.kind != "edit":
        return float(cls.score_response(solution_str, ground_truth, judge=judge, types=types))
    return float(scorer(data_source)(extract_answer(solution_str, extractor), str(ground_truth)))
