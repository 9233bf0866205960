"""The experiment statistics (``vicogym.evidence.stats``) against scipy as the independent
reference: the paired permutation test, the percentile bootstrap and the exact binomial
test, plus the clustered and stratified cases scipy reaches through cluster-level data."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
import scipy.stats
from hypothesis import given, settings
from hypothesis import strategies as st

from vicogym.evidence.stats import (
    cluster_bootstrap_ci,
    holm,
    item_means,
    paired_permutation_test,
    sign_test,
)

ALTERNATIVES = ("two-sided", "greater", "less")


def mean_difference(x, y, axis):
    return np.mean(x - y, axis=axis)


def scipy_paired(a, b, alternative, n_resamples=10_000, statistic=mean_difference, seed=12345):
    return scipy.stats.permutation_test((a, b), statistic, permutation_type="samples", vectorized=True,
                                        n_resamples=n_resamples, alternative=alternative,
                                        rng=np.random.default_rng(seed))


def scipy_percentile(x, n_resamples=20_000, seed=2024):
    result = scipy.stats.bootstrap((np.asarray(x),), np.mean, method="percentile", n_resamples=n_resamples,
                                   confidence_level=0.95, rng=np.random.default_rng(seed))
    return result.confidence_interval


# item_means


ROWS = [
    {"item": "q2", "source": "form-1", "seed": 0, "score": 1.0},
    {"item": "q1", "source": "form-0", "seed": 0, "score": 0.0},
    {"item": "q1", "source": "form-0", "seed": 0, "score": 1.0},
    {"item": "q2", "source": "form-1", "seed": 0, "score": 0.5},
    {"item": "q1", "source": "form-0", "seed": 0, "score": 1.0},
    {"item": "q3", "source": "deck-7", "seed": 1, "score": True},
]


def test_item_means_one_row_per_item():
    out = item_means(ROWS)
    assert list(out.columns) == ["item", "source", "seed", "score", "n"]
    assert out["item"].tolist() == ["q1", "q2", "q3"]
    assert out["source"].tolist() == ["form-0", "form-1", "deck-7"]
    assert out["seed"].tolist() == [0, 0, 1]
    assert out["score"].tolist() == pytest.approx([2 / 3, 0.75, 1.0], abs=1e-15)
    assert out["n"].tolist() == [3, 2, 1]


def test_item_means_takes_a_frame_and_other_column_names():
    frame = pd.DataFrame(ROWS).rename(columns={"item": "task", "source": "medium", "seed": "stratum",
                                               "score": "anls"})
    frame["extra"] = "ignored"
    out = item_means(frame, value="anls", item="task", cluster="medium", stratum="stratum")
    assert list(out.columns) == ["task", "medium", "stratum", "anls", "n"]
    pd.testing.assert_frame_equal(out.set_axis(["item", "source", "seed", "score", "n"], axis=1), item_means(ROWS))


def test_item_means_does_not_change_its_input():
    frame = pd.DataFrame(ROWS)
    before = frame.copy()
    item_means(frame)
    pd.testing.assert_frame_equal(frame, before)


@pytest.mark.parametrize(("rows", "message"), [
    ([], "at least one row"),
    (pd.DataFrame(columns=["item", "source", "seed", "score"]), "at least one row"),
    ([{"item": "q1", "source": "f", "score": 1.0}], "seed"),
    ([{"item": "q1", "source": "f", "seed": 0, "score": 1.0}, {"item": "q1", "source": "g", "seed": 0, "score": 0.0}],
     "different 'source'"),
    ([{"item": "q1", "source": "f", "seed": 0, "score": 1.0}, {"item": "q1", "source": "f", "seed": 1, "score": 0.0}],
     "different 'seed'"),
    ([{"item": "q1", "source": "f", "seed": 0, "score": "yes"}], "must hold numbers"),
    ([{"item": "q1", "source": "f", "seed": 0, "score": float("nan")}], "finite"),
    ([{"item": None, "source": "f", "seed": 0, "score": 1.0}], "missing labels"),
])
def test_item_means_refusals(rows, message):
    with pytest.raises(ValueError, match=message):
        item_means(rows)


def test_item_means_refuses_clashing_column_names():
    with pytest.raises(ValueError, match="distinct"):
        item_means(ROWS, cluster="item")
    with pytest.raises(ValueError, match="distinct"):
        item_means(ROWS, value="n")


# the paired permutation test


def fixed_pair(n, shift, seed):
    rng = np.random.default_rng(seed)
    a = rng.normal(size=n)
    return a + shift + rng.normal(scale=0.8, size=n), a


@pytest.mark.parametrize("alternative", ALTERNATIVES)
@pytest.mark.parametrize(("n", "shift", "seed"), [(13, 0.35, 1), (9, -0.2, 2), (2, 0.4, 3)])
def test_exact_permutation_matches_scipy(alternative, n, shift, seed):
    a, b = fixed_pair(n, shift, seed)
    ours = paired_permutation_test(a, b, alternative=alternative)
    reference = scipy_paired(a, b, alternative)
    assert ours["exact"] and ours["n_clusters"] == n
    assert ours["statistic"] == pytest.approx(reference.statistic, abs=1e-12)
    assert abs(ours["pvalue"] - reference.pvalue) <= 1e-12


@pytest.mark.parametrize("alternative", ALTERNATIVES)
def test_exact_permutation_matches_scipy_with_ties(alternative):
    """Per-item means of 0/1 scores over three runs: many exactly tied null values."""
    rng = np.random.default_rng(5)
    a = rng.integers(0, 4, size=12) / 3
    b = rng.integers(0, 4, size=12) / 3
    ours = paired_permutation_test(a, b, alternative=alternative)
    assert abs(ours["pvalue"] - scipy_paired(a, b, alternative).pvalue) <= 1e-12


def test_one_item_has_two_sign_patterns():
    assert paired_permutation_test([0.7], [0.2], alternative="greater")["pvalue"] == 0.5
    assert paired_permutation_test([0.7], [0.2], alternative="less")["pvalue"] == 1.0
    assert paired_permutation_test([0.7], [0.2])["pvalue"] == 1.0


@pytest.mark.parametrize("alternative", ALTERNATIVES)
def test_random_permutation_matches_scipy_within_monte_carlo_error(alternative):
    a, b = fixed_pair(40, 0.12, 7)
    ours = paired_permutation_test(a, b, alternative=alternative)
    reference = scipy_paired(a, b, alternative)
    assert not ours["exact"]
    assert 0.05 < reference.pvalue < 0.95
    assert abs(ours["pvalue"] - reference.pvalue) < 0.02


def test_random_pvalue_counts_the_observed_pattern():
    """(count + 1) / (n_resamples + 1): drawn patterns of 40 positive differences all fall
    below the observed mean, so greater is 1/100, less is 1 and two-sided 2/100."""
    a = np.linspace(1.0, 2.0, 40)
    b = np.zeros(40)
    p = {alt: paired_permutation_test(a, b, n_resamples=99, alternative=alt)["pvalue"] for alt in ALTERNATIVES}
    assert p == {"greater": 1 / 100, "less": 1.0, "two-sided": 2 / 100}
    reference = scipy_paired(a, b, "greater", n_resamples=99).pvalue
    assert reference == pytest.approx(p["greater"], abs=1e-15)


def test_exactness_threshold_is_scipys():
    a, b = fixed_pair(6, 0.3, 11)
    assert paired_permutation_test(a, b, n_resamples=64)["exact"]
    assert not paired_permutation_test(a, b, n_resamples=63)["exact"]
    assert paired_permutation_test(a, b, n_resamples=64)["pvalue"] == pytest.approx(
        scipy_paired(a, b, "two-sided", n_resamples=64).pvalue, abs=1e-12)


def clustered_fixture():
    rng = np.random.default_rng(21)
    sizes = [1, 5, 3, 4, 2, 6, 3, 2, 7, 4]
    labels = np.repeat([f"form-{i}" for i in range(len(sizes))], sizes)
    order = rng.permutation(labels.size)
    labels = labels[order]
    effect = {label: rng.normal(0.2, 0.5) for label in set(labels)}
    b = rng.normal(size=labels.size)
    a = b + np.array([effect[label] for label in labels]) + rng.normal(scale=0.3, size=labels.size)
    return a, b, labels


@pytest.mark.parametrize("alternative", ALTERNATIVES)
def test_clustered_permutation_equals_scipy_on_cluster_sums(alternative):
    a, b, labels = clustered_fixture()
    total = labels.size
    names = sorted(set(labels))
    x = np.array([a[labels == name].sum() for name in names])
    y = np.array([b[labels == name].sum() for name in names])

    def share_of_sum(u, v, axis):
        return np.sum(u - v, axis=axis) / total

    ours = paired_permutation_test(a, b, clusters=list(labels), alternative=alternative)
    reference = scipy_paired(x, y, alternative, statistic=share_of_sum)
    assert ours["exact"] and ours["n_clusters"] == len(names)
    assert ours["statistic"] == pytest.approx(np.mean(a - b), abs=1e-12)
    assert ours["statistic"] == pytest.approx(reference.statistic, abs=1e-12)
    assert abs(ours["pvalue"] - reference.pvalue) <= 1e-12


def test_singleton_clusters_are_the_item_level_test():
    a, b = fixed_pair(11, 0.25, 4)
    plain = paired_permutation_test(a, b)
    assert paired_permutation_test(a, b, clusters=[f"c{i}" for i in range(11)]) == plain
    assert paired_permutation_test(a, b, clusters=np.arange(11)) == plain


def test_whole_cluster_exchange_is_more_conservative_on_correlated_clusters():
    rng = np.random.default_rng(8)
    effects = [0.9, 0.7, 1.1, 0.8, -0.6, 0.5]
    labels = np.repeat(np.arange(len(effects)), 10)
    b = rng.normal(size=labels.size)
    a = b + np.asarray(effects)[labels] + rng.normal(scale=0.05, size=labels.size)
    items = paired_permutation_test(a, b)
    clustered = paired_permutation_test(a, b, clusters=labels)
    assert items["statistic"] == clustered["statistic"]
    assert items["pvalue"] < 0.001
    assert clustered["exact"] and clustered["n_clusters"] == 6
    assert clustered["pvalue"] > 0.05
    assert clustered["pvalue"] > 50 * items["pvalue"]


def test_permutation_is_deterministic_in_its_seed():
    a, b = fixed_pair(30, 0.1, 9)
    first = paired_permutation_test(a, b, n_resamples=2000, seed=3)
    assert paired_permutation_test(a, b, n_resamples=2000, seed=3) == first
    others = {paired_permutation_test(a, b, n_resamples=2000, seed=s)["pvalue"] for s in range(4, 9)}
    assert others != {first["pvalue"]}


def test_no_difference_gives_pvalue_one():
    a = [0.5, 0.25, 1.0, 0.0]
    for alternative in ALTERNATIVES:
        assert paired_permutation_test(a, a, alternative=alternative)["pvalue"] == 1.0


@pytest.mark.parametrize(("args", "kwargs", "message"), [
    (([1.0, 2.0], [1.0]), {}, "paired"),
    (([], []), {}, "at least one"),
    (([1.0, float("nan")], [1.0, 2.0]), {}, "finite"),
    (([1.0, 2.0], [1.0, float("inf")]), {}, "finite"),
    (([1.0, 2.0], [0.0, 1.0]), {"alternative": "bigger"}, "alternative"),
    (([1.0, 2.0], [0.0, 1.0]), {"n_resamples": 0}, "at least 1"),
    (([1.0, 2.0], [0.0, 1.0]), {"n_resamples": 1.5}, "integer"),
    (([1.0, 2.0], [0.0, 1.0]), {"clusters": ["x"]}, "labels for 2 items"),
    (([[1.0], [2.0]], [[0.0], [1.0]]), {}, "one-dimensional"),
    ((["a", "b"], [0.0, 1.0]), {}, "numbers"),
])
def test_permutation_refusals(args, kwargs, message):
    with pytest.raises(ValueError, match=message):
        paired_permutation_test(*args, **kwargs)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.floats(-1, 1), st.floats(-1, 1)), min_size=1, max_size=8))
def test_exact_pvalues_are_consistent(pairs):
    a, b = np.array(pairs).T
    p = {alt: paired_permutation_test(a, b, alternative=alt)["pvalue"] for alt in ALTERNATIVES}
    assert all(0 < value <= 1 for value in p.values())
    assert p["greater"] + p["less"] >= 1 - 1e-12
    assert p["two-sided"] == pytest.approx(min(1.0, 2 * min(p["greater"], p["less"])))
    swapped = paired_permutation_test(b, a, alternative="greater")["pvalue"]
    assert swapped == pytest.approx(p["less"])


# the cluster bootstrap


def test_singleton_bootstrap_matches_scipy_percentile():
    x = np.random.default_rng(31).gamma(2.0, 0.3, size=60)
    ours = cluster_bootstrap_ci(x, n_resamples=20_000)
    reference = scipy_percentile(x)
    spread = x.std(ddof=1) / math.sqrt(x.size)
    assert ours["estimate"] == pytest.approx(x.mean(), abs=1e-15)
    assert ours["low"] < ours["estimate"] < ours["high"]
    assert abs(ours["low"] - reference.low) < 0.1 * spread
    assert abs(ours["high"] - reference.high) < 0.1 * spread


@pytest.mark.parametrize("identical", [True, False])
def test_equal_size_clusters_bootstrap_their_means(identical):
    rng = np.random.default_rng(32)
    means = rng.normal(0.6, 0.2, size=20)
    noise = np.zeros((20, 4)) if identical else rng.normal(scale=0.1, size=(20, 4))
    values = (means[:, None] + noise).ravel()
    labels = np.repeat([f"deck-{i}" for i in range(20)], 4)
    cluster_means = values.reshape(20, 4).mean(axis=1)
    ours = cluster_bootstrap_ci(values, clusters=labels, n_resamples=20_000)
    direct = cluster_bootstrap_ci(cluster_means, n_resamples=20_000)
    assert ours == pytest.approx(direct, abs=1e-12)
    reference = scipy_percentile(cluster_means)
    spread = cluster_means.std(ddof=1) / math.sqrt(20)
    assert abs(ours["low"] - reference.low) < 0.1 * spread
    assert abs(ours["high"] - reference.high) < 0.1 * spread


def test_clusters_widen_the_interval_over_items():
    rng = np.random.default_rng(33)
    labels = np.repeat(np.arange(12), 6)
    values = rng.normal(size=12)[labels] + rng.normal(scale=0.1, size=labels.size)
    items = cluster_bootstrap_ci(values, n_resamples=4000)
    clusters = cluster_bootstrap_ci(values, clusters=labels, n_resamples=4000)
    assert clusters["high"] - clusters["low"] > 1.8 * (items["high"] - items["low"])


def test_strata_keep_their_cluster_counts():
    """Stratum A: ten clusters that vary; stratum B: five clusters fixed far away at 100.
    With each stratum's cluster count kept (and equal cluster sizes) every resampled mean
    is 2/3 of a resampled A mean plus 100/3; pooling the strata lets B's share vary."""
    rng = np.random.default_rng(34)
    a_means = rng.normal(0.0, 1.0, size=10)
    values = np.concatenate([np.repeat(a_means, 3), np.full(15, 100.0)])
    clusters = [f"A{i}" for i in range(10) for _ in range(3)] + [f"B{i}" for i in range(5) for _ in range(3)]
    strata = ["A"] * 30 + ["B"] * 15
    floor, ceiling = 2 / 3 * a_means.min() + 100 / 3, 2 / 3 * a_means.max() + 100 / 3
    stratified = cluster_bootstrap_ci(values, clusters=clusters, strata=strata, n_resamples=5000)
    assert floor <= stratified["low"] < stratified["estimate"] < stratified["high"] <= ceiling
    assert stratified["estimate"] == pytest.approx(values.mean())
    only_a = cluster_bootstrap_ci(a_means, n_resamples=5000, seed=1)
    spread = a_means.std(ddof=1) / math.sqrt(10)
    assert stratified["low"] == pytest.approx(2 / 3 * only_a["low"] + 100 / 3, abs=0.1 * spread)
    assert stratified["high"] == pytest.approx(2 / 3 * only_a["high"] + 100 / 3, abs=0.1 * spread)
    pooled = cluster_bootstrap_ci(values, clusters=clusters, n_resamples=5000)
    assert pooled["low"] < floor - 5 and pooled["high"] > ceiling + 5


def test_bootstrap_is_deterministic_in_its_seed():
    x = np.random.default_rng(35).normal(size=25)
    assert cluster_bootstrap_ci(x, n_resamples=3000, seed=4) == cluster_bootstrap_ci(x, n_resamples=3000, seed=4)
    assert cluster_bootstrap_ci(x, n_resamples=3000, seed=4) != cluster_bootstrap_ci(x, n_resamples=3000, seed=5)


def test_bootstrap_confidence_sets_the_quantiles():
    x = np.random.default_rng(36).normal(size=40)
    wide = cluster_bootstrap_ci(x, n_resamples=4000, confidence=0.99)
    narrow = cluster_bootstrap_ci(x, n_resamples=4000, confidence=0.5)
    assert wide["low"] < narrow["low"] < narrow["high"] < wide["high"]


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"values": []}, "at least one"),
    ({"values": [1.0, float("nan")]}, "finite"),
    ({"values": [1.0, 2.0], "clusters": ["a"]}, "labels for 2 items"),
    ({"values": [1.0, 2.0], "strata": [0, 1, 2]}, "labels for 2 items"),
    ({"values": [1.0, 2.0], "confidence": 1.0}, "confidence"),
    ({"values": [1.0, 2.0], "confidence": 0}, "confidence"),
    ({"values": [1.0, 2.0], "n_resamples": 0}, "at least 1"),
    ({"values": [1.0, 2.0, 3.0], "clusters": ["f", "f", "g"], "strata": [0, 1, 1]}, "more than one stratum"),
])
def test_bootstrap_refusals(kwargs, message):
    with pytest.raises(ValueError, match=message):
        cluster_bootstrap_ci(**kwargs)


# the sign test


@pytest.mark.parametrize("alternative", ALTERNATIVES)
def test_sign_test_matches_scipy_binomtest(alternative):
    grid = [(n, k) for n in range(1, 26) for k in range(n + 1)] + [(n, k) for n in (40, 63, 100) for k in
                                                                   range(0, n + 1, 7)]
    for n, k in grid:
        differences = [0.5] * k + [-0.25] * (n - k) + [0.0] * (n % 3)
        ours = sign_test(differences, alternative=alternative)
        assert (ours["n"], ours["positive"], ours["negative"]) == (n, k, n - k)
        reference = scipy.stats.binomtest(k, n, 0.5, alternative=alternative).pvalue
        assert abs(ours["pvalue"] - reference) <= 1e-12, (n, k)
        assert ours["pvalue"] == pytest.approx(reference, rel=1e-9), (n, k)


def test_sign_test_edges():
    assert sign_test([]) == {"n": 0, "positive": 0, "negative": 0, "pvalue": 1.0}
    assert sign_test([0.0, 0.0], alternative="two-sided")["pvalue"] == 1.0
    assert sign_test([0.1] * 6)["pvalue"] == 1 / 64
    assert sign_test([0.1] * 6, alternative="two-sided")["pvalue"] == 2 / 64
    assert sign_test([-0.1] * 6, alternative="greater")["pvalue"] == 1.0
    assert sign_test(np.array([0.3, -0.1, 0.2, 0.0]))["n"] == 3
    with pytest.raises(ValueError, match="alternative"):
        sign_test([1.0], alternative="two_sided")
    with pytest.raises(ValueError, match="finite"):
        sign_test([1.0, float("nan")])


# Holm


def test_holm_hand_worked():
    """Sorted 0.01, 0.03, 0.04, 0.5 scale by 4, 3, 2, 1 to 0.04, 0.09, 0.08, 0.5; the
    running maximum lifts the third to 0.09."""
    assert holm([0.01, 0.04, 0.03, 0.5]) == pytest.approx([0.04, 0.09, 0.09, 0.5], abs=1e-15)
    assert holm([0.2, 0.6, 0.01]) == pytest.approx([0.4, 0.6, 0.03], abs=1e-15)
    assert holm([0.3, 0.9]) == [0.6, 0.9]
    assert holm([0.7, 0.8]) == [1.0, 1.0]
    assert holm([]) == []
    assert holm([0.05]) == [0.05]


def test_holm_refusals():
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        holm([0.1, 1.5])
    with pytest.raises(ValueError, match="finite"):
        holm([0.1, float("nan")])


@settings(max_examples=100, deadline=None)
@given(st.lists(st.floats(0, 1), min_size=1, max_size=12))
def test_holm_properties(p):
    adjusted = holm(p)
    m = len(p)
    assert len(adjusted) == m
    assert all(raw <= adj + 1e-15 and adj <= 1 for raw, adj in zip(p, adjusted))
    order = sorted(range(m), key=lambda i: p[i])
    ranked = [adjusted[i] for i in order]
    assert all(x <= y for x, y in zip(ranked, ranked[1:]))
    assert ranked[0] == pytest.approx(min(1.0, m * p[order[0]]))
    assert all(adj <= min(1.0, m * raw) + 1e-15 for raw, adj in zip(p, adjusted))
    reverse = holm(p[::-1])
    assert reverse == pytest.approx(adjusted[::-1])
