"""The statistics of a skill-evolution experiment: per-item means, clustered permutation
tests, seed-stratified cluster bootstrap intervals, the exact sign test and Holm's
correction.

An *item* is one task (one question on one source medium) played in several runs
(repetitions); a *cluster* is the source medium it was drawn from (a form, a deck), and a
*stratum* is the seed the medium was generated under. Every test works on per-item means
over the repetitions, never on the raw rows, so repetitions of an item are not counted as
independent evidence.

:func:`item_means`
    Groups rows (one per item and repetition) by item and returns, per item, its cluster,
    its stratum, the mean of the value over its rows and the row count ``n``. An item
    whose rows name more than one cluster or stratum is refused.

:func:`paired_permutation_test`
    For paired per-item means ``a`` and ``b`` with differences ``d = a - b``, the
    statistic is ``mean(d)`` over the ``N`` items. Under the null the labels ``a`` and
    ``b`` are exchangeable within each whole cluster: a sign pattern ``s`` (one sign per
    cluster) gives the statistic ``sum_c s_c * D_c / N`` with ``D_c`` the sum of ``d``
    over cluster ``c``. With ``k`` clusters and ``2**k <= n_resamples`` every pattern is
    enumerated (``exact``) and the p-value is the share of patterns whose statistic is
    ``>=`` the observed one (``greater``) or ``<=`` it (``less``); otherwise
    ``n_resamples`` patterns are drawn uniformly with ``numpy.random.default_rng(seed)``
    and the p-value is ``(count + 1) / (n_resamples + 1)``. ``two-sided`` is
    ``min(1, 2 * min(p_greater, p_less))``. Comparisons count values within
    ``1e-12 * mean(|d|)`` of the observed statistic as equal to it. These are the
    conventions of ``scipy.stats.permutation_test`` with ``permutation_type="samples"``;
    with one item per cluster the test is that one.

:func:`cluster_bootstrap_ci`
    The estimate is the mean of the values (per-item means, or per-item differences for
    a paired interval). One resample draws, within each stratum independently, as many
    of that stratum's clusters as it has, uniformly with replacement, takes every item of
    each drawn cluster, and computes the mean of all drawn items pooled over the strata.
    The interval is the percentile interval of the resampled means: their
    ``numpy.quantile`` (linear) at ``(1 - confidence) / 2`` and ``1 - (1 - confidence) / 2``.
    Clusters must nest in strata (a cluster label lies in one stratum).

:func:`sign_test`
    The exact sign test of the differences (one per task family, say): zeros are
    dropped, ``positive`` of the ``n`` remaining differences are ``> 0`` and under the
    null ``positive ~ Binomial(n, 1/2)``. ``greater`` is ``P(X >= positive)``, ``less``
    is ``P(X <= positive)`` and ``two-sided`` sums the probabilities of the outcomes no
    more likely than the observed one (relative tolerance ``1e-7``, as
    ``scipy.stats.binomtest``), capped at 1. Probabilities are exact (``math.comb``)
    before the final rounding to float. ``n = 0`` gives a p-value of 1.

:func:`holm`
    Holm-Bonferroni adjusted p-values: with the ``m`` p-values in ascending order
    ``p_(1) <= ... <= p_(m)``, the adjusted ``p_(i)`` is
    ``min(1, max_{j <= i} (m - j + 1) * p_(j))``, returned in the input order.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Iterable, Mapping, Sequence
from fractions import Fraction
from typing import Any

import numpy as np

ALTERNATIVES = ("two-sided", "greater", "less")

#: sign patterns or resamples evaluated per block, to bound memory
_BLOCK = 1 << 20


def item_means(rows: Iterable[Mapping[str, Any]] | Any, value: str = "score", item: str = "item",
               cluster: str = "source", stratum: str = "seed") -> Any:
    """One row per item: its ``item``, ``cluster`` and ``stratum`` labels, the mean of
    ``value`` over its rows and ``n``, the number of rows (repetitions); sorted by item.
    The columns keep the given names, in that order, followed by ``n``."""
    names = [item, cluster, stratum, value]
    if len(set(names)) != len(names) or "n" in names:
        raise ValueError(f"item, cluster, stratum and value must be four distinct column names other than 'n': "
                         f"got {names}")
    import pandas as pd

    frame = rows.copy() if isinstance(rows, pd.DataFrame) else pd.DataFrame(list(rows))
    if frame.empty:
        raise ValueError("item_means needs at least one row")
    missing = [name for name in names if name not in frame.columns]
    if missing:
        raise ValueError(f"rows lack the column(s) {missing}; they have {list(frame.columns)}")
    frame = frame[names]
    for name in (item, cluster, stratum):
        if frame[name].isna().any():
            raise ValueError(f"column {name!r} has missing labels")
    try:
        scores = frame[value].astype(object).map(_number).astype(float)
    except (TypeError, ValueError) as error:
        raise ValueError(f"column {value!r} must hold numbers: {error}") from None
    if not np.isfinite(scores.to_numpy()).all():
        raise ValueError(f"column {value!r} must hold finite numbers (found NaN or inf)")
    frame[value] = scores
    groups = frame.groupby(item, sort=False)
    for name in (cluster, stratum):
        counts = groups[name].nunique()
        split = counts[counts > 1]
        if len(split):
            shown = ", ".join(repr(label) for label in list(split.index)[:5])
            raise ValueError(f"item(s) {shown} have rows with different {name!r} values; an item lies in one "
                             f"{name}")
    out = groups.agg(**{cluster: (cluster, "first"), stratum: (stratum, "first"), value: (value, "mean"),
                        "n": (value, "size")}).reset_index()
    try:
        out = out.sort_values(item, kind="stable")
    except TypeError as error:
        raise ValueError(f"item labels must be mutually orderable: {error}") from None
    out["n"] = out["n"].astype(int)
    return out[[item, cluster, stratum, value, "n"]].reset_index(drop=True)


def _number(x: Any) -> float:
    """A score as a float: numbers and booleans pass, anything else is refused."""
    if isinstance(x, (int, float, np.bool_, np.integer, np.floating)):
        return float(x)
    raise TypeError(f"{x!r} is not a number")


def _vector(x: Any, name: str) -> np.ndarray:
    """A non-empty one-dimensional float array of finite numbers."""
    array = _numbers(x, name)
    if array.size == 0:
        raise ValueError(f"{name} must hold at least one number")
    return array


def _numbers(x: Any, name: str) -> np.ndarray:
    """A one-dimensional float array of finite numbers, possibly empty."""
    try:
        array = np.asarray(list(x) if not isinstance(x, np.ndarray) else x, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a sequence of numbers") from None
    if array.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional, got shape {array.shape}")
    if not np.isfinite(array).all():
        raise ValueError(f"{name} must hold finite numbers (found NaN or inf)")
    return array


def _codes(labels: Sequence[Hashable] | None, size: int, name: str) -> tuple[np.ndarray, list[Hashable]]:
    """Integer codes (first-appearance order) of the labels, and the distinct labels."""
    if labels is None:
        return np.arange(size), list(range(size))
    labels = list(np.asarray(labels, dtype=object)) if isinstance(labels, np.ndarray) else list(labels)
    if len(labels) != size:
        raise ValueError(f"{name} has {len(labels)} labels for {size} items")
    index: dict[Hashable, int] = {}
    try:
        codes = [index.setdefault(label, len(index)) for label in labels]
    except TypeError:
        raise ValueError(f"{name} labels must be hashable") from None
    return np.asarray(codes, dtype=np.int64), list(index)


def _check_count(n_resamples: Any) -> int:
    if isinstance(n_resamples, (bool, np.bool_)) or not isinstance(n_resamples, (int, np.integer)):
        raise ValueError(f"n_resamples must be an integer, got {n_resamples!r}")
    if n_resamples < 1:
        raise ValueError(f"n_resamples must be at least 1, got {n_resamples}")
    return int(n_resamples)


def _check_alternative(alternative: str) -> None:
    if alternative not in ALTERNATIVES:
        raise ValueError(f"alternative must be one of {ALTERNATIVES}, got {alternative!r}")


def paired_permutation_test(a: Sequence[float], b: Sequence[float], clusters: Sequence[Hashable] | None = None,
                            n_resamples: int = 10_000, seed: int | np.random.Generator | None = 0,
                            alternative: str = "two-sided") -> dict[str, Any]:
    """Paired permutation test of ``mean(a - b)`` exchanging ``a`` and ``b`` within whole
    clusters; ``{"statistic", "pvalue", "n_clusters", "exact"}``."""
    a, b = _vector(a, "a"), _vector(b, "b")
    if a.size != b.size:
        raise ValueError(f"a and b must be paired: {a.size} and {b.size} items")
    n_resamples = _check_count(n_resamples)
    _check_alternative(alternative)
    d = a - b
    codes, labels = _codes(clusters, d.size, "clusters")
    k = len(labels)
    sums = np.bincount(codes, weights=d, minlength=k)
    total = d.size
    observed = float(np.mean(d))
    tol = 1e-12 * float(np.mean(np.abs(d)))
    exact = 2**k <= n_resamples
    count = 2**k if exact else n_resamples
    ge = le = 0
    rows = max(1, _BLOCK // max(k, 1))
    bits = np.arange(k, dtype=np.int64)
    rng = None if exact else np.random.default_rng(seed)
    for start in range(0, count, rows):
        stop = min(count, start + rows)
        if exact:
            patterns = np.arange(start, stop, dtype=np.int64)[:, None] >> bits & 1
        else:
            patterns = rng.integers(0, 2, size=(stop - start, k))
        null = (1.0 - 2.0 * patterns) @ sums / total
        ge += int(np.count_nonzero(null >= observed - tol))
        le += int(np.count_nonzero(null <= observed + tol))
    adjustment = 0 if exact else 1
    p_greater = (ge + adjustment) / (count + adjustment)
    p_less = (le + adjustment) / (count + adjustment)
    if alternative == "greater":
        pvalue = p_greater
    elif alternative == "less":
        pvalue = p_less
    else:
        pvalue = 2 * min(p_greater, p_less)
    return {"statistic": observed, "pvalue": float(min(1.0, pvalue)), "n_clusters": k, "exact": exact}


def cluster_bootstrap_ci(values: Sequence[float], clusters: Sequence[Hashable] | None = None,
                         strata: Sequence[Hashable] | None = None, n_resamples: int = 10_000,
                         confidence: float = 0.95, seed: int | np.random.Generator | None = 0) -> dict[str, float]:
    """Percentile interval of the mean under seed-stratified cluster bootstrap resampling;
    ``{"estimate", "low", "high"}``."""
    x = _vector(values, "values")
    n_resamples = _check_count(n_resamples)
    numeric = isinstance(confidence, (int, float, np.integer, np.floating)) and not isinstance(confidence, bool)
    if not numeric or not 0 < confidence < 1:
        raise ValueError(f"confidence must be a number strictly between 0 and 1, got {confidence!r}")
    codes, labels = _codes(clusters, x.size, "clusters")
    layer, _ = _codes(strata if strata is not None else [0] * x.size, x.size, "strata")
    k = len(labels)
    sums = np.bincount(codes, weights=x, minlength=k)
    sizes = np.bincount(codes, minlength=k).astype(float)
    home = np.full(k, -1, dtype=np.int64)
    home[codes] = layer
    if not np.array_equal(home[codes], layer):
        split = sorted({labels[c] for c in codes[home[codes] != layer]}, key=repr)
        shown = ", ".join(repr(label) for label in split[:5])
        raise ValueError(f"cluster(s) {shown} lie in more than one stratum; clusters must nest in strata "
                         f"(give each cluster a label unique across strata)")
    members = [np.flatnonzero(home == h) for h in range(int(layer.max()) + 1)]
    rng = np.random.default_rng(seed)
    means = np.empty(n_resamples)
    rows = max(1, _BLOCK // k)
    for start in range(0, n_resamples, rows):
        stop = min(n_resamples, start + rows)
        drawn_sum = np.zeros(stop - start)
        drawn_size = np.zeros(stop - start)
        for group in members:
            picks = group[rng.integers(0, group.size, size=(stop - start, group.size))]
            drawn_sum += sums[picks].sum(axis=1)
            drawn_size += sizes[picks].sum(axis=1)
        means[start:stop] = drawn_sum / drawn_size
    tail = (1 - confidence) / 2
    low, high = np.quantile(means, [tail, 1 - tail])
    return {"estimate": float(np.mean(x)), "low": float(low), "high": float(high)}


def sign_test(differences: Sequence[float], alternative: str = "greater") -> dict[str, Any]:
    """Exact sign test of the differences (zeros dropped); ``{"n", "positive", "negative",
    "pvalue"}``."""
    _check_alternative(alternative)
    d = _numbers(differences, "differences")
    positive, negative = int(np.count_nonzero(d > 0)), int(np.count_nonzero(d < 0))
    n = positive + negative
    if n == 0:
        return {"n": 0, "positive": 0, "negative": 0, "pvalue": 1.0}
    weights = [math.comb(n, i) for i in range(n + 1)]
    if alternative == "greater":
        mass = sum(weights[positive:])
    elif alternative == "less":
        mass = sum(weights[:positive + 1])
    else:
        observed = weights[positive]
        mass = sum(w for w in weights if w * 10**7 <= observed * (10**7 + 1))
    return {"n": n, "positive": positive, "negative": negative,
            "pvalue": float(min(Fraction(1), Fraction(mass, 2**n)))}


def holm(pvalues: Sequence[float]) -> list[float]:
    """Holm-Bonferroni adjusted p-values, in the input order."""
    p = _numbers(pvalues, "p-values")
    if ((p < 0) | (p > 1)).any():
        raise ValueError("p-values must be numbers in [0, 1]")
    m = p.size
    order = np.argsort(p, kind="stable")
    scaled = (m - np.arange(m)) * p[order]
    adjusted = np.empty(m)
    adjusted[order] = np.minimum(1.0, np.maximum.accumulate(scaled))
    return [float(v) for v in adjusted]
