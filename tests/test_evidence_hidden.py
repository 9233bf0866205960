"""Hidden, measured: a family's counterfactuals change the answer and nothing else, the
start of a task drawn for one of them is compared pixel for pixel, a start that shows the
answer is measured as such (and a family that promises a hidden start draws again), and
small views are drawn as an area-averaged full render."""

import json

import cv2
import gymnasium as gym
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import vicogym  # noqa: F401
from vicogym.errors import GenerationError
from vicogym.programs.evidence import score_task
from vicogym.programs.evidence.charts import derive, tables_of
from vicogym.renderers.evidence import EvidenceRenderer
from vicogym.renderers.evidence.forms import RegionRenderer as FormRenderer
from vicogym.sources.evidence import forms, slides
from vicogym.structures.chart import ChartStructure
from vicogym.structures.evidence import HIDDEN_LEVELS, Evidence, Tile, View, crop_view, support, whole_view

SEEDS = st.integers(0, 2**32 - 1)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(SEEDS)
def test_a_forms_counterfactual_changes_the_asked_field_and_the_answer_only(seed):
    task = forms.draw(np.random.default_rng(seed))
    spec = task.units[0].spec
    asked = next(f for f in spec["fields"] if f["id"] == task.meta["field"])
    others = forms.counterfactuals(task, np.random.default_rng(seed))
    for other in others:
        assert score_task(task, other.answer) == 0.0 and other.question == task.question
        changed = other.units[0].spec
        mine = set(asked["value_ids"]) | {t for t, _ in asked.get("choices", ())}
        for a, b in zip(spec["texts"], changed["texts"]):
            assert a == b or a["id"] in mine, f"text {a['id']} outside the asked field changed"
        assert [f for f in changed["fields"] if f["id"] != asked["id"]] == \
            [f for f in spec["fields"] if f["id"] != asked["id"]]
        assert changed["fields"][asked["id"]]["value"] == other.answer
        if asked["layout"] not in ("checkbox", "multiline"):  # same kind and length
            assert len(other.answer) == len(task.answer)


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(SEEDS)
def test_a_slides_counterfactual_relabels_or_rescales_one_read_chart(seed):
    task = slides.draw(np.random.default_rng(seed))
    for other in slides.counterfactuals(task, np.random.default_rng(seed), n=4):
        assert score_task(task, other.answer) == 0.0
        assert other.answer == derive(task.meta["program"], tables_of(other.units))
        changed = [k for k, (a, b) in enumerate(zip(task.units, other.units)) if a != b]
        assert len(changed) == 1
        before = ChartStructure.from_dict(task.units[changed[0]].spec["chart"]).table
        after = ChartStructure.from_dict(other.units[changed[0]].spec["chart"]).table
        if "traded" in other.meta["counterfactual"]:  # the marks stay: values in place, labels moved
            assert after.values == before.values and sorted(after.rows) == sorted(before.rows)
            assert sorted(after.series) == sorted(before.series)
        else:  # every value scaled by one factor
            ratios = {round(b / a, 6) for ra, rb in zip(before.values, after.values) for a, b in zip(ra, rb) if a}
            assert len(ratios) == 1 and ratios.pop() in (10.0, 0.1)


def _whole_start(env, task):
    """The task's own start, drawn as a person would check it: each tile of each start view."""
    return [(t, env.renderer.draw_tile(task.units[t.unit], t)) for v in env._start_views(task, plain=True)
            for t in v.tiles]


@pytest.mark.parametrize("family", ["forms", "slides"])
def test_the_reported_measurement_is_the_largest_pixel_difference_of_the_start(family):
    env = gym.make("vicogym/Evidence-v0", tasks=family).unwrapped
    _, info = env.reset(seed=11)
    report = info["hidden"]
    assert report["hidden"] and report["levels"] <= report["bound"] == HIDDEN_LEVELS
    assert json.loads(json.dumps(report)) == report
    task = env.task
    module = forms if family == "forms" else slides
    others = module.counterfactuals(task, np.random.default_rng([report["seed"], 1]))
    other = next(o for o in others if o.meta["counterfactual"] == report["counterfactual"])
    other, _ = EvidenceRenderer().prepare(other)
    fresh = EvidenceRenderer()
    worst = 0
    for tile, mine in _whole_start(env, task):
        theirs = fresh.draw_tile(other.units[tile.unit], tile)
        worst = max(worst, int(np.abs(mine.astype(int) - theirs.astype(int)).max()))
    assert worst == report["levels"]
    assert score_task(task, other.answer) == 0.0


def test_a_start_large_enough_to_read_is_measured_as_showing_the_answer():
    env = gym.make("vicogym/Evidence-v0", tasks="forms").unwrapped
    task = forms.draw(np.random.default_rng(3), {"start_scale": 0.6})
    report = env.hidden_report(task, 3)
    assert not report["hidden"] and report["levels"] > HIDDEN_LEVELS
    with pytest.raises(GenerationError, match="start view shows the answer"):
        gym.make("vicogym/Evidence-v0", tasks="forms", family_settings={"forms": {"start_scale": 0.6}}).reset(seed=0)


def test_a_family_without_the_promise_is_measured_only_when_asked():
    env = gym.make("vicogym/Evidence-v0", tasks="multichart").unwrapped
    _, info = env.reset(seed=0)
    assert info["hidden"] is None
    report = env.hidden_report(env.task, 0)
    assert report is None or not report["hidden"]  # every chart is sent whole and legible


def test_a_small_view_is_the_area_average_of_a_full_render():
    task = forms.draw(np.random.default_rng(5))
    unit = task.units[0]
    renderer = FormRenderer()
    view = whole_view(0, 0, unit, 768, max_scale=0.05)
    size = view.tiles[0].size
    small = renderer.draw(unit, view.tiles[0].crop, size).astype(int)
    k = 42  # the page at twice its full size, averaged down: what a scanner's pixels integrate
    full = renderer.draw(unit, unit.frame, (size[0] * k, size[1] * k))
    averaged = cv2.resize(full, size, interpolation=cv2.INTER_AREA).astype(int)
    hinted = np.asarray(renderer._render(unit.spec, view.tiles[0].crop, size)).astype(int)  # glyphs set at 0.05
    assert np.abs(small - averaged).max() <= 24 < 100 < np.abs(small - hinted).max()


def test_a_view_that_cuts_the_margin_but_shows_every_glyph_shows_the_item():
    unit = forms.draw(np.random.default_rng(1)).units[0]
    item = Evidence(0, (100.0, 100.0, 200.0, 120.0), 8.0, 4.5, "value", ink=(102.0, 103.0, 198.0, 117.0))
    cut_margin = View(0, 200, 40, (Tile(0, (101.0, 102.0, 199.0, 118.0), 2.0),))
    cut_glyph = View(1, 200, 40, (Tile(0, (104.0, 102.0, 199.0, 118.0), 2.0),))
    assert support([item], [cut_margin])["all"] and not support([item], [cut_glyph])["all"]
    with pytest.raises(ValueError, match="inside its box"):
        Evidence(0, (100.0, 100.0, 200.0, 120.0), 8.0, 4.5, "value", ink=(90.0, 103.0, 198.0, 117.0))
    assert Evidence.from_dict(item.to_dict()) == item
    zoom = crop_view(2, 0, unit, (101.0, 102.0, 199.0, 118.0), 768)
    assert support([item], [zoom])["items"][0]["shown_px"] > 0
