"""The reward function verl calls for vicogym data (verl's default reward knows no
``vicogym/...`` data source and raises ``NotImplementedError``).

Point verl at this file::

    reward.custom_reward_function.path=$(python -c "import vicogym.verl_reward as m; print(m.__file__)")
    reward.custom_reward_function.name=compute_score

``compute_score`` extracts the answer from the response (``\\boxed{}``, an ``Answer:``
line, else the final line; ``reward_kwargs`` may set ``extractor``) and scores it with the
scorer of the row's own environment (``data_source``), the same one that computed the
pass rates at generation.
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


def compute_score(data_source: str, solution_str: str, ground_truth: str, extra_info: Any = None,
                  extractor: str = "auto", **kwargs: Any) -> float:
    """verl's reward signature: 1.0 for a right answer, 0.0 for a wrong one (partial
    credit where the environment's scorer gives it)."""
    from vicogym.clients import extract_answer

    return float(scorer(data_source)(extract_answer(solution_str, extractor), str(ground_truth)))
