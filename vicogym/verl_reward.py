"""The reward function verl calls for vicogym data (verl's default reward knows no
``vicogym/...`` data source and raises ``NotImplementedError``).

Point verl at this file::

    reward.custom_reward_function.path=$(python -c "import vicogym.verl_reward as m; print(m.__file__)")
    reward.custom_reward_function.name=compute_score

``compute_score`` is :func:`vicogym.scoring.score_row`, the row scorer every trainer uses
(``reward_kwargs`` are its keyword arguments: ``extractor``, ``judge``, ``types``); this
module stays at this path because verl configs name it.
"""

from vicogym.scoring import RowError, ground_truth_json, row_error, score_row, scorer

#: verl calls the function of this name in the file its config names
compute_score = score_row

__all__ = ["RowError", "compute_score", "ground_truth_json", "row_error", "score_row", "scorer"]
