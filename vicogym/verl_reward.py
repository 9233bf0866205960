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
"""

from __future__ import annotations

from typing import Any, Callable

_SCORERS: dict[str, Callable[[str, str], float]] = {}


def scorer(data_source: str) -> Callable[[str, str], float]:
    """The answer scorer of the environment ``data_source`` names."""
    if data_source not in _SCORERS:
        import vicogym  # noqa: F401  (registers the environments)
        from vicogym.registry import ENVIRONMENTS, make_arm

        if data_source not in ENVIRONMENTS:
            raise ValueError(f"{data_source!r} is not a vicogym data source (known: {', '.join(sorted(ENVIRONMENTS))})")
        _SCORERS[data_source] = make_arm(data_source).score
    return _SCORERS[data_source]


INSTRUCT = "vicogym/Instruct-v0"
_JUDGES: dict[str, Any] = {}


def _judge(spec: Any) -> Any:
    """The judge a spec names, built once per process (verl calls the reward per response)."""
    import json

    from vicogym.instruct.judge import make_judge

    key = json.dumps(spec, sort_keys=True, default=str)
    if key not in _JUDGES:
        _JUDGES[key] = make_judge(spec)
    return _JUDGES[key]


_LOADED: dict[str, dict[str, str]] = {}


def load_types(path: Any, judge: Any = None) -> dict[str, str]:
    """The discovered types of a synthesis run, admitted once per process (by path; again
    if the registry no longer holds them)."""
    import os

    from vicogym.instruct.discovery import contract_sha256
    from vicogym.instruct.run_folder import load_types as load
    from vicogym.programs.instruct import REGISTRY

    key = os.path.realpath(str(path))
    held = _LOADED.get(key)
    if held is None or any(t not in REGISTRY or contract_sha256(REGISTRY[t]) != h for t, h in held.items()):
        _LOADED[key] = load(key, judge=_judge(judge or "simulated"))
    return _LOADED[key]


def instruct_score(response: str, ground_truth: str, judge: Any = None, types: Any = None) -> float:
    """The constraint pass rate of ``response`` under a stored ground truth."""
    import json

    from vicogym.instruct.run_folder import check_row_types
    from vicogym.instruct.judge import verify_sample
    from vicogym.programs.instruct import REGISTRY, pass_rate

    truth = json.loads(ground_truth)
    if types is not None:
        load_types(types, judge)
    check_row_types(truth["constraints"], truth.get("types"))
    constraints = [c for c in truth["constraints"] if judge is not None or REGISTRY[c["id"]].track != "judge"]
    return pass_rate(verify_sample(response, constraints, None if judge is None else _judge(judge)))


def compute_score(data_source: str, solution_str: str, ground_truth: str, extra_info: Any = None,
                  extractor: str = "auto", judge: Any = None, types: Any = None, **kwargs: Any) -> float:
    """verl's reward signature: 1.0 for a right answer, 0.0 for a wrong one (partial
    credit where the environment's scorer gives it; the pass rate for instruction rows,
    with ``types`` the synthesis run whose discovered types to load)."""
    from vicogym.clients import extract_answer

    if data_source == INSTRUCT:
        return float(instruct_score(solution_str, ground_truth, judge, types))

    return float(scorer(data_source)(extract_answer(solution_str, extractor), str(ground_truth)))
