"""The legibility curves (``vicogym.legibility``, ``assets/legibility.json``): the stored fit
follows from the stored counts, every font the package prints with has a legible size, the
curves rise, Tesseract still reads as the stored curve says, and the evidence arm uses them
(form evidence at its font's size, the simulated executor on the fitted curve)."""

from __future__ import annotations

import importlib.util
import math

import numpy as np
import pytest
from conftest import REPO
from hypothesis import given, settings
from hypothesis import strategies as st

from vicogym import legibility, ocr
from vicogym.legibility import TEXT_DRAWN, TEXT_FONT, curve, curves, fit, legible_px, read_probability


def _benchmark():
    spec = importlib.util.spec_from_file_location("legibility_benchmark", REPO / "benchmarks" / "legibility.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_stored_fit_is_reproduced_from_the_stored_counts():
    from scipy.optimize import minimize

    for c in curves():
        caps = [s.cap for s in c.sizes]
        k, c50 = fit(caps, [s.words for s in c.sizes], [s.right for s in c.sizes])
        assert c50 == pytest.approx(c.c50, abs=1e-6) and k == pytest.approx(c.k, rel=1e-6), (c.font, c.drawn)

        # scipy's optimiser on the same likelihood, an independent reference for the maximum
        n = np.array([s.words for s in c.sizes], float)
        r = np.array([s.right for s in c.sizes], float)
        x = np.array(caps)

        def nll(theta):
            z = theta[0] * (x - theta[1])
            return -float(np.sum(r * z - n * np.logaddexp(0.0, z)))

        found = minimize(nll, [1.0, float(np.median(x))], method="Nelder-Mead",
                         options={"xatol": 1e-9, "fatol": 1e-12, "maxiter": 4000})
        assert found.x[1] == pytest.approx(c.c50, abs=1e-4) and found.x[0] == pytest.approx(c.k, rel=1e-3)
        assert nll([c.k, c.c50]) <= found.fun + 1e-9


def test_every_font_the_package_prints_with_has_a_legible_size_between_2_and_14_px():
    from vicogym.sources.evidence.forms import BOLD, FONTS

    for font in (*FONTS, *BOLD.values()):
        assert 2.0 <= legible_px(font) <= 14.0, font
    for font in ("DejaVuSans.ttf", "DejaVuSans-Bold.ttf"):
        assert 2.0 <= legible_px(font, "slides") <= 14.0
    assert 2.0 <= legible_px(TEXT_FONT, "charts") <= 14.0
    assert 2.0 <= legible_px(TEXT_FONT, TEXT_DRAWN) <= 14.0


def test_the_stored_file_says_how_it_was_made():
    provenance = legibility.stored()["provenance"]
    assert provenance["script"] == "benchmarks/legibility.py" and (REPO / provenance["script"]).is_file()
    assert provenance["reader"] == {"mode": "line", "border": ocr.BORDER, "upscale": ocr.UPSCALE, "lang": ocr.LANG}
    assert provenance["tesseract"].count(".") >= 1 and provenance["date"]
    for c in curves():
        assert [s.cap for s in c.sizes] == sorted(s.cap for s in c.sizes)
        assert all(0 <= s.right <= s.words and s.edits >= 0 for s in c.sizes)
        # mostly wrong at the smallest size, mostly right at the largest: the range spans the curve
        assert c.sizes[0].word_accuracy < 0.2 and c.sizes[-1].word_accuracy > 0.8, (c.font, c.drawn)


def test_an_unknown_font_or_way_of_drawing_is_named():
    with pytest.raises(ValueError, match=r"no legibility curve for font 'Arial.ttf' drawn by forms; measured fonts: "
                                         r"DejaVuSans-Bold.ttf, .*STIXGeneralBol.ttf"):
        legible_px("Arial.ttf")
    with pytest.raises(ValueError, match="expected drawn as one of forms, slides, charts, chart_views, got 'pdf'"):
        curve("DejaVuSans.ttf", "pdf")
    with pytest.raises(ValueError, match="expected acuity as a positive number, got 0"):
        read_probability(5.0, "DejaVuSans.ttf", acuity=0)


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(sorted((c.font, c.drawn) for c in curves())), st.floats(0.0, 30.0), st.floats(0.0, 30.0),
       st.floats(0.5, 3.0))
def test_the_curves_rise_with_size_and_acuity_scales_the_size_needed(key, a, b, acuity):
    font, drawn = key
    lo, hi = sorted((a, b))
    assert read_probability(lo, font, drawn=drawn) <= read_probability(hi, font, drawn=drawn)
    # a reader of acuity 2 reads at 2 c what Tesseract reads at c
    p = read_probability(hi, font, acuity, drawn)
    assert p == pytest.approx(curve(font, drawn).probability(hi / acuity)) if hi > 0 else p == 0.0
    assert read_probability(curve(font, drawn).c50, font, drawn=drawn) == pytest.approx(0.5)


def test_fit_refuses_counts_that_pin_no_curve_down():
    with pytest.raises(ValueError, match="some words read right and some wrong"):
        fit([2, 4, 6], [10, 10, 10], [0, 0, 0])
    with pytest.raises(ValueError, match="separated by a cap height"):
        fit([2, 4, 6, 8], [10, 10, 10, 10], [0, 0, 10, 10])
    with pytest.raises(ValueError, match="0 <= right <= words"):
        fit([2, 4], [10, 10], [11, 0])
    k, c50 = fit([2, 4, 6, 8], [100, 100, 100, 100], [5, 30, 70, 95])
    assert c50 == pytest.approx(5.0, abs=1e-9) and k > 0  # symmetric counts: the middle


def test_tesseract_still_reads_as_the_stored_curve_says(tesseract):
    """Forty words of form values and labels two pixels under and over DejaVu Sans's legible
    size, drawn by the forms renderer: mostly misread under, mostly read over."""
    bench = _benchmark()
    c50 = legible_px("DejaVuSans.ttf")
    under = bench.measure("forms", "DejaVuSans.ttf", round(c50 - 2, 2), 40, (7, 1), tesseract)
    over = bench.measure("forms", "DejaVuSans.ttf", round(c50 + 2, 2), 40, (7, 2), tesseract)
    assert under["words"] >= 40 and over["words"] >= 40
    assert under["right"] / under["words"] < 0.25 < 0.75 < over["right"] / over["words"], (under, over)


def test_the_benchmark_counts_words_by_their_longest_common_subsequence():
    bench = _benchmark()
    assert bench.words_right("Brightwater Builders Inc.".split(), "Brightwater Detkiers Inc.".split()) == 2
    assert bench.words_right(["a", "b"], ["b", "a"]) == 1
    assert bench.same("\u22125 \u2013 \u201cx\u201d") == '-5 - "x"'


def test_the_simulated_executor_reads_text_on_the_stored_curve():
    from vicogym.evidence.executors import read_probability as simulated

    for c in curves():
        for shown in (0.5 * c.c50, c.c50, 1.3 * c.c50, 3.0):
            assert simulated(shown, c.c50) == pytest.approx(c.probability(shown), abs=1e-12), (c.font, c.drawn)
    assert simulated(0, legible_px("DejaVuSans.ttf")) == 0.0
    # CLEVR objects keep the stand-in (no reader of objects measured it)
    assert simulated(8.0, 16.0) == pytest.approx(1 / (1 + math.exp(-8 * (0.5 - 0.85))))
    assert simulated(24.0, 16.0) == 0.99
    # said to be text, it is read on the curve of the font whose legible size is nearest
    widest = max(curves(), key=lambda c: c.c50)
    assert simulated(8.0, 16.0, text=True) == pytest.approx(legibility.logistic(widest.k * widest.c50 * (0.5 - 1)))


def test_form_evidence_is_legible_at_its_own_fonts_size():
    from vicogym.sources.evidence.forms import draw
    from vicogym.structures.evidence import LEGIBLE_TEXT_PX

    assert legible_px(TEXT_FONT, TEXT_DRAWN) == LEGIBLE_TEXT_PX
    for seed in range(6):
        task = draw(np.random.default_rng(np.random.SeedSequence([seed, 36])))
        spec = task.units[0].spec
        asked = next(f for f in spec["fields"] if f["id"] == task.meta["field"])
        value, label = task.evidence
        assert value.legible == max(legible_px(spec["texts"][i]["font"]) for i in asked["value_ids"])
        assert label.legible == max(legible_px(spec["texts"][i]["font"]) for i in asked["label_ids"])
