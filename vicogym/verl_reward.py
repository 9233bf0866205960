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
answer and the reward is the constraint pass rate, computed from the stored contracts:
the ground truth holds the constraint list and the proposals of any discovered types
(admitted again here, their code run in the sandbox). Judge-track constraints need a
judge: ``reward_kwargs`` ``judge="openai:MODEL@URL"`` (or ``"simulated"``); without one
they are left out and the rate is over the code-verified constraints.
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

    from vicogym.judge import make_judge

    key = json.dumps(spec, sort_keys=True, default=str)
    if key not in _JUDGES:
        _JUDGES[key] = make_judge(spec)
    return _JUDGES[key]


def instruct_score(response: str, ground_truth: str, judge: Any = None) -> float:
    """The constraint pass rate of ``response`` under a stored ground truth."""
    import json

    from vicogym.judge import verify_sample
    from vicogym.programs.instruct import REGISTRY, pass_rate

    truth = json.loads(ground_truth)
    missing = [r for r in truth.get("discovered", []) if r["id"] not in REGISTRY]
    if missing:
        from vicogym.discovery import admit_all

        admit_all(missing, judge=_judge(judge or "simulated"))
    constraints = [c for c in truth["constraints"] if judge is not None or REGISTRY[c["id"]].track != "judge"]
    return pass_rate(verify_sample(response, constraints, None if judge is None else _judge(judge)))


def compute_score(data_source: str, solution_str: str, ground_truth: str, extra_info: Any = None,
                  extractor: str = "auto", judge: Any = None, **kwargs: Any) -> float:
    """verl's reward signature: 1.0 for a right answer, 0.0 for a wrong one (partial
    credit where the environment's scorer gives it; the pass rate for instruction rows)."""
    from vicogym.clients import extract_answer

    if data_source == INSTRUCT:
        return float(instruct_score(solution_str, ground_truth, judge))

    return float(scorer(data_source)(extract_answer(solution_str, extractor), str(ground_truth)))
