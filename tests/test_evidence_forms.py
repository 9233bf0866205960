"""The evidence arm's ``forms`` family: procedural form pages (source), their region
renderer, the FUNSD pairing program and ANLS, and the answerability checks."""

import functools
import json
import math
import unicodedata

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vicogym.answers import SCORERS, anls, anls_normalize, levenshtein, normalize_text
from vicogym.checks.evidence import check_task
from vicogym.checks.evidence.forms import check, needs_zoom, overlaps, problems
from vicogym.legibility import legible_px
from vicogym.programs.evidence import score_answer
from vicogym.programs.evidence.forms import field_label, pair_fields
from vicogym.renderers.evidence import EvidenceRenderer, cut
from vicogym.renderers.evidence.forms import RegionRenderer
from vicogym.sources.evidence import TaskSource, forms
from vicogym.structures.evidence import Task, Unit, crop_view, support, whole_view

VIEW = 768


def drawn(seed, **changes):
    return forms.draw(np.random.default_rng(seed), {**forms.DEFAULTS, **changes})


def render(unit, crop, scale, renderer=None):
    renderer = renderer or RegionRenderer()
    size = (max(1, round((crop[2] - crop[0]) * scale)), max(1, round((crop[3] - crop[1]) * scale)))
    return renderer.draw(unit, crop, size)


# ------------------------------------------------------------------ the source


def test_same_seed_same_task_and_other_seeds_other_pages():
    a, b = drawn(7), drawn(7)
    assert json.dumps(a.to_dict(), sort_keys=True) == json.dumps(b.to_dict(), sort_keys=True)
    assert Task.from_dict(json.loads(json.dumps(a.to_dict()))).to_dict() == a.to_dict()
    others = {json.dumps(drawn(s).units[0].spec, sort_keys=True) for s in range(8)}
    assert len(others) == 8


def test_a_task_asks_one_field_and_answers_its_value_exactly():
    for seed in range(12):
        task = drawn(seed)
        spec = task.units[0].spec
        asked = next(f for f in spec["fields"] if f["id"] == task.meta["field"])
        assert f"'{asked['label']}'" in task.question and task.meta["label"] == asked["label"]
        assert task.answer == " ".join(spec["texts"][i]["text"] for i in asked["value_ids"])
        assert (task.contract, task.scorer, task.start, task.family) == ("text", "anls", "first", "forms")
        assert task.meta["layout"] == asked["layout"] and task.answer not in task.meta["distractors"]
        assert task.meta["distractors"] and len(set(task.meta["distractors"])) == len(task.meta["distractors"])
        if asked["layout"] == "checkbox":  # the unchecked options are the first distractors
            assert set(asked["options"]) - {task.answer} <= set(task.meta["distractors"])
        value, label = task.evidence
        assert list(value.box) == asked["evidence_box"] and list(label.box) == asked["label_box"]
        # each item is legible at its own font's measured size (assets/legibility.json)
        assert value.legible == max(legible_px(spec["texts"][i]["font"]) for i in asked["value_ids"])
        assert label.legible == max(legible_px(spec["texts"][i]["font"]) for i in asked["label_ids"])
        assert score_answer(task.scorer, task.answer.upper(), task.answer) == 1.0


@pytest.mark.parametrize("layout", forms.LAYOUTS)
def test_every_layout_draws_answerable_tasks_in_every_font(layout):
    seen_fonts = set()
    for seed in range(6):
        task = drawn(seed, layouts=[layout])
        assert task.meta["layout"] == layout
        assert problems(task, VIEW) == [] and check(task) is None
        seen_fonts.add(task.units[0].spec["style"]["value_font"])
    for name in forms.FONTS:
        task = drawn(3, layouts=[layout], fonts=[name])
        assert {t["font"] for t in task.units[0].spec["texts"] if t["role"] == "value"} == {name}
        assert check(task, VIEW) is None


def test_layouts_make_what_they_promise():
    multi = drawn(1, layouts=["multiline"])
    asked = next(f for f in multi.units[0].spec["fields"] if f["id"] == multi.meta["field"])
    assert 2 <= len(asked["value_ids"]) <= 3  # an address over two or three lines, joined by one space
    assert multi.answer == " ".join(multi.units[0].spec["texts"][i]["text"] for i in asked["value_ids"])
    compound = [f for s in range(10) for f in drawn(s, layouts=["grid"]).units[0].spec["fields"]
                if len(f["label_ids"]) == 2]
    assert compound  # long grid labels wrap over two lines
    box = drawn(2, layouts=["checkbox"])
    spec = box.units[0].spec
    assert sum(b["checked"] for b in spec["boxes"]) == len([f for f in spec["fields"] if f["layout"] == "checkbox"])


def test_value_print_is_small_and_in_the_requested_range():
    from vicogym.sources.evidence.forms import DEFAULTS

    lo, hi = DEFAULTS["value_cap"]
    assert hi * 768 / DEFAULTS["page"][1] < 4.5  # under 4.5 px in the default view: too small to read
    for seed in range(20):
        task = drawn(seed)
        for f in task.units[0].spec["fields"]:
            if f["layout"] != "grid":
                assert lo - 1e-6 <= f["value_cap"] <= hi + 1e-6
        assert lo - 1e-6 <= task.evidence[0].size <= hi + 1e-6


def test_labels_are_unique_on_every_page():
    for seed in range(30):
        labels = [field_label(f["label"]).lower() for f in drawn(seed).units[0].spec["fields"]]
        assert len(labels) == len(set(labels))


def test_bad_settings_name_the_setting():
    for changes, word in (({"page": [100, 100]}, "page"), ({"value_cap": [14, 9]}, "value_cap"),
                          ({"layouts": ["grids"]}, "did you mean 'grid'"), ({"fonts": []}, "fonts"),
                          ({"sections": [0, 2]}, "sections"), ({"max_scale": 0.5}, "max_scale")):
        with pytest.raises(ValueError, match=word):
            drawn(0, **changes)
    with pytest.raises(ValueError, match="no setting 'value_caps'"):
        TaskSource("forms", {"forms": {"value_caps": [9, 12]}})


def test_the_task_source_draws_forms():
    source = TaskSource("forms", {"forms": {"layouts": ["table"]}})
    task = source.draw(np.random.default_rng(0))
    assert task.family == "forms" and task.meta["layout"] == "table" and source.extras() == set()


# ------------------------------------------------------------------ legibility


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1), view=st.sampled_from([512, 768, 1024]))
def test_a_zoom_onto_the_evidence_makes_it_legible_and_the_default_view_does_not(seed, view):
    task = drawn(seed)
    unit = task.units[0]
    whole = whole_view(0, 0, unit, VIEW)
    assert not support(task.evidence[:1], [whole])["all"] and needs_zoom(task, VIEW)
    for e in task.evidence:
        zoom = crop_view(1, 0, unit, e.box, view)
        assert support([e], [zoom])["all"], (e.what, e.size, zoom.tiles[0].scale)
        assert max(zoom.width, zoom.height) <= view and zoom.tiles[0].scale <= unit.max_scale


def test_the_checks_find_what_is_wrong():
    task = drawn(4)
    assert problems(task) == []
    spec = json.loads(json.dumps(task.units[0].spec))
    # a second field with the asked label
    other = next(f for f in spec["fields"] if f["id"] != task.meta["field"])
    other["label"] = task.meta["label"] + ":"
    bad = Task.from_dict({**task.to_dict(), "units": [{**task.units[0].to_dict(), "spec": spec}]})
    assert any("repeat" in p for p in problems(bad)) and any("names 2 fields" in p for p in problems(bad))
    # two texts on top of each other
    spec = json.loads(json.dumps(task.units[0].spec))
    spec["texts"][5]["box"] = list(spec["texts"][6]["box"])
    bad = Task.from_dict({**task.to_dict(), "units": [{**task.units[0].to_dict(), "spec": spec}]})
    assert (5, 6) in overlaps(spec) and any("overlap" in p for p in problems(bad))
    # print too small to read even at the largest zoom
    tiny = Task.from_dict({**task.to_dict(), "evidence": [{**task.evidence[0].to_dict(), "size": 1.0}]})
    assert any("under the legible" in p for p in problems(tiny))
    # a wrong answer, which the pairing program does not give either
    wrong = Task.from_dict({**task.to_dict(), "answer": task.answer + " X"})
    found = problems(wrong)
    assert any("not the field's value" in p for p in found) and any("FUNSD pairing" in p for p in found)
    assert "not the field's value" in check(wrong) and check(task) is None
    assert check_task(task) is None and "FUNSD pairing" in check_task(wrong)


# ------------------------------------------------------------------ the renderer


def test_rendering_is_deterministic_and_exactly_the_size_asked():
    task = drawn(5)
    unit = task.units[0]
    e = task.evidence[0]
    zoom = crop_view(1, 0, unit, e.box, VIEW)
    crop, size = zoom.tiles[0].crop, zoom.tiles[0].size
    a, b = RegionRenderer().draw(unit, crop, size), RegionRenderer().draw(unit, crop, size)
    assert a.shape == (size[1], size[0], 3) and a.dtype == np.uint8
    assert a.tobytes() == b.tobytes()
    whole = whole_view(0, 0, unit, VIEW)
    renderer = EvidenceRenderer()
    first = renderer.draw(whole, task.units)
    assert first.shape == (whole.height, whole.width, 3)
    assert first.tobytes() == EvidenceRenderer().draw(whole, task.units).tobytes()
    assert RegionRenderer().draw(unit, (10.0, 10.0, 11.0, 12.0), (1, 2)).shape == (2, 1, 3)


def test_a_zoom_is_a_re_render_not_upsampled_pixels():
    task = drawn(6)
    unit = task.units[0]
    zoom = crop_view(1, 0, unit, task.evidence[0].box, VIEW)
    crop, size = zoom.tiles[0].crop, zoom.tiles[0].size
    assert zoom.tiles[0].scale > 1.5
    sharp = RegionRenderer().draw(unit, crop, size).astype(float)
    page = np.asarray(RegionRenderer()._render(unit.spec, unit.frame, (unit.width, unit.height)))
    blurred = cut(page, crop, size).astype(float)  # the page's own pixels, upsampled

    def edges(image):
        gray = image.mean(axis=2)
        return np.abs(np.diff(gray, axis=1)).mean() + np.abs(np.diff(gray, axis=0)).mean()

    assert edges(sharp) > 1.2 * edges(blurred)
    # the baseline draws the whole page at the zoom's detail: the same view, but for hinting
    assert np.abs(sharp - RegionRenderer().naive(unit, crop, size).astype(float)).mean() < 2.0
    # at the page's own scale the re-render and the cut of the full page agree
    crop = (100.0, 200.0, 700.0, 600.0)
    assert np.abs(RegionRenderer().draw(unit, crop, (600, 400)).astype(int)
                  - RegionRenderer().naive(unit, crop, (600, 400)).astype(int)).mean() < 1.0


def _ink_and_box(text, unit, scale, margin=8):
    crop = (max(0, math.floor(text["box"][0] - margin)), max(0, math.floor(text["box"][1] - margin)),
            min(unit.width, math.ceil(text["box"][2] + margin)), min(unit.height, math.ceil(text["box"][3] + margin)))
    alone = Unit("form", unit.width, unit.height, {"texts": [text]})
    image = render(alone, crop, scale)
    sx, sy = image.shape[1] / (crop[2] - crop[0]), image.shape[0] / (crop[3] - crop[1])
    ys, xs = np.nonzero(image.min(axis=2) < 235)
    box = ((text["box"][0] - crop[0]) * sx, (text["box"][1] - crop[1]) * sy,
           (text["box"][2] - crop[0]) * sx, (text["box"][3] - crop[1]) * sy)
    return xs, ys, box


@pytest.mark.parametrize("scale, slack", [(0.47, 2.0), (1.0, 1.0), (1.7, 1.0), (3.3, 1.0)])
def test_the_ink_of_each_text_lies_inside_its_box(scale, slack):
    for seed in (0, 3, 11):
        for name in forms.FONTS:
            task = drawn(seed, fonts=[name])
            unit = task.units[0]
            for text in unit.spec["texts"]:
                if text["role"] not in ("value", "label"):
                    continue
                xs, ys, box = _ink_and_box(text, unit, scale)
                assert len(xs), text["text"]
                assert (xs.min() >= box[0] - slack and xs.max() + 1 <= box[2] + slack
                        and ys.min() >= box[1] - slack and ys.max() + 1 <= box[3] + slack), (text["text"], name, scale)
                if len(text["text"]) > 3 and scale >= 1:  # the box is the text's, not a loose frame
                    assert (xs.max() + 1 - xs.min()) >= 0.6 * (box[2] - box[0]), text["text"]


def test_zoomed_values_are_drawn_at_a_legible_cap_height():
    task = drawn(8, layouts=["lines"])
    unit = task.units[0]
    e = task.evidence[0]
    zoom = crop_view(1, 0, unit, e.box, VIEW)
    image = RegionRenderer().draw(unit, zoom.tiles[0].crop, zoom.tiles[0].size)
    # the drawn glyphs of the value are at least as tall as its cap height at that scale
    rows = np.nonzero((image.min(axis=2) < 128).any(axis=1))[0]
    assert rows.max() - rows.min() + 1 >= e.size * zoom.tiles[0].scale >= 7.0


# ------------------------------------------------------------------ the FUNSD pairing program


@st.composite
def synthetic_pages(draw):
    """Rows of fields (one or two columns): the label left of its value on the same line
    (``right``) or over it (``below``, the label sometimes wrapped over two entities),
    values of one to three lines; some rows are a label with no value at all. Returns
    (records, {label: value}, linked)."""
    h = draw(st.integers(10, 30))
    cols = draw(st.sampled_from([1, 2]))
    entities, expected = [], {}
    y = 20.0
    col_w = 40 * h
    for r in range(draw(st.integers(1, 5))):
        mode = draw(st.sampled_from(["right", "below", "unanswered"]))
        if mode == "unanswered":  # a signature line: a label with no value anywhere
            q = {"box": [20.0, y, 20.0 + draw(st.integers(2 * h, 8 * h)), y + h], "text": f"S{r}", "label": "question"}
            entities.append(([q], []))
            expected[q["text"]] = ""
            y += h + draw(st.floats(1.0, 2.5)) * h  # farther than a wrapped label's next line
            continue
        label_lines = [draw(st.integers(1, 2)) if mode == "below" else 1 for _ in range(cols)]
        top_lines = max(label_lines)
        bottom = y
        for c in range(cols):
            x = 20.0 + c * (col_w + 3 * h)
            qs = []
            for k in range(label_lines[c]):
                w = draw(st.integers(2 * h, 8 * h))
                qs.append({"box": [x, y + k * 1.1 * h, x + w, y + k * 1.1 * h + h], "text": f"L{r}{c}{k}",
                           "label": "question"})
            lines = draw(st.integers(1, 3))
            if mode == "right":
                vx = max(q["box"][2] for q in qs) + draw(st.integers(h // 2, 3 * h))
                vy = y
            else:
                vx, vy = x, y + top_lines * 1.1 * h + 0.3 * h
            ans = []
            for k in range(lines):
                w = draw(st.integers(2 * h, 10 * h))
                ans.append({"box": [vx, vy + k * 1.3 * h, vx + w, vy + k * 1.3 * h + h], "text": f"V{r}{c}{k}",
                            "label": "answer"})
            expected[" ".join(q["text"] for q in qs)] = " ".join(a["text"] for a in ans)
            entities.append((qs, ans))
            bottom = max(bottom, ans[-1]["box"][3])
        y = bottom + draw(st.floats(1.0, 2.5)) * h
    ids = draw(st.permutations(range(sum(len(q) + len(a) for q, a in entities))))
    records, k = [], 0
    linked = draw(st.booleans())
    for qs, ans in entities:
        for item in (*qs, *ans):
            item["id"] = ids[k]
            k += 1
        for item in (*qs, *ans):
            item["linking"] = [[q["id"], a["id"]] for q in qs for a in ans
                               if linked and item["id"] in (q["id"], a["id"])]
            records.append(item)
    order = draw(st.permutations(range(len(records))))
    return [records[i] for i in order], expected, linked


@settings(max_examples=150, deadline=None)
@given(page=synthetic_pages())
def test_the_pairing_recovers_every_field_linked_or_not(page):
    records, expected, linked = page
    fields = pair_fields(records)
    assert {f.label: f.value for f in fields} == expected
    assert {f.how for f in fields if f.value} <= {"linked" if linked else "nearest"}
    assert all(f.how == "none" for f in fields if not f.value)
    assert pair_fields(list(reversed(records))) == fields  # the order of the records does not matter


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1), linked=st.booleans())
def test_the_pairing_reads_procedural_pages_as_they_were_drawn(seed, linked):
    task = drawn(seed)
    records = task.meta["entities"] if linked else [{**e, "linking": []} for e in task.meta["entities"]]
    got = {field_label(f.label): f.value for f in pair_fields(records)}
    assert got == {f["label"]: f["value"] for f in task.units[0].spec["fields"]}
    assert got[task.meta["label"]] == task.answer


def _q(i, box, text="Q", links=()):
    return {"id": i, "box": list(box), "text": text, "label": "question", "linking": [list(p) for p in links]}


def _a(i, box, text, links=()):
    return {"id": i, "box": list(box), "text": text, "label": "answer", "linking": [list(p) for p in links]}


def test_the_tie_rule_prefers_the_horizontally_nearest_then_the_lower_id():
    # two answers on the label's row: the nearer one wins whatever the ids
    page = [_q(5, (100, 100, 160, 112)), _a(9, (170, 100, 220, 112), "near"), _a(1, (400, 101, 450, 113), "far")]
    assert pair_fields(page)[0].value == "near"
    # within a quarter line of the nearest counts as the same row: horizontal distance decides
    page = [_q(5, (100, 100, 160, 112)), _a(9, (170, 102, 220, 114), "near"), _a(1, (400, 100, 450, 112), "far")]
    assert pair_fields(page)[0].value == "near"
    # equal distances both ways: the lower id
    page = [_q(5, (100, 100, 160, 112)), _a(9, (100, 130, 160, 142), "nine"), _a(3, (100, 70, 160, 82), "three")]
    assert pair_fields(page)[0].value == "nine"  # reading order first: the one above does not follow the label
    page = [_q(5, (100, 100, 160, 112)), _a(9, (180, 100, 230, 112), "nine"), _a(3, (30, 100, 80, 112), "three")]
    assert pair_fields(page)[0].value == "nine"
    page = [_q(5, (100, 100, 160, 112)), _a(9, (50, 130, 95, 142), "nine"), _a(3, (165, 130, 210, 142), "three")]
    assert pair_fields(page)[0].value == "three"
    page = [_q(5, (100, 100, 160, 112)), _a(9, (165, 130, 210, 142), "nine"), _a(3, (165, 130, 210, 142), "three")]
    assert pair_fields(page)[0].value == "three"


def test_links_win_and_unanswered_labels_have_no_value():
    page = [_q(1, (0, 0, 50, 10), "A:", [(1, 3)]), _a(2, (60, 0, 90, 10), "near"), _a(3, (0, 200, 50, 210), "linked",
                                                                                         [(1, 3)])]
    fields = pair_fields(page)
    assert (fields[0].value, fields[0].how) == ("linked", "linked")
    alone = pair_fields([_q(1, (0, 0, 50, 10), "Signature:")])
    assert (alone[0].value, alone[0].how, alone[0].value_box) == ("", "none", None)
    # an answer linked to another question is not up for the nearest rule
    page = [_q(1, (0, 0, 50, 10), "A:"), _q(2, (0, 100, 50, 110), "B:", [(2, 3)]), _a(3, (60, 0, 90, 10), "b",
                                                                                      [(2, 3)])]
    assert [f.value for f in pair_fields(page)] == ["", "b"]


def test_an_answer_goes_to_one_label_the_nearer():
    # 'Signature' (no value of its own) finds only B's value, which B holds by being nearer
    page = [_q(1, (0, 0, 80, 10), "Signature:"), _q(2, (0, 40, 30, 50), "B:"), _a(3, (40, 40, 90, 50), "b")]
    assert {f.label: (f.value, f.how) for f in pair_fields(page)} == {"Signature:": ("", "none"),
                                                                      "B:": ("b", "nearest")}
    # with a second free answer, the bumped label takes that one
    page.append(_a(4, (0, 80, 60, 90), "other"))
    assert {f.label: f.value for f in pair_fields(page)} == {"Signature:": "other", "B:": "b"}


def test_stacked_questions_with_own_answers_stay_apart():
    page = [_q(1, (0, 0, 50, 10), "Name:"), _a(2, (60, 0, 120, 10), "Ann"), _q(3, (0, 12, 50, 22), "Phone:"),
            _a(4, (60, 12, 120, 22), "555")]
    assert {f.label: f.value for f in pair_fields(page)} == {"Name:": "Ann", "Phone:": "555"}
    page = [_q(1, (0, 0, 50, 10), "Date of"), _q(3, (0, 12, 40, 22), "birth:"), _a(4, (60, 12, 120, 22), "1990")]
    assert {f.label: f.value for f in pair_fields(page)} == {"Date of birth:": "1990"}


def test_malformed_entities_are_named():
    with pytest.raises(ValueError, match="entity 4: expected 'box'"):
        pair_fields([{"id": 4, "box": [0, 0, -1, 5], "text": "x", "label": "question"}])
    with pytest.raises(ValueError, match="'label' in"):
        pair_fields([{"id": 4, "box": [0, 0, 1, 5], "text": "x", "label": "key"}])


# ------------------------------------------------------------------ ANLS


def test_anls_on_the_published_examples():
    golds = ["Coca Cola", "Coca Cola Company"]
    assert anls("The Coca", golds) == 0.0
    assert anls("CocaCola", golds) == pytest.approx(1 - 1 / 9)
    assert round(anls("CocaCola", golds), 2) == 0.89
    assert anls("Coca cola", golds) == 1.0
    assert anls("Cola", golds) == 0.0 and anls("Cat", golds) == 0.0
    assert anls("  coca   COLA ", "Coca Cola") == 1.0
    assert anls("abcd", "abef") == 0.0  # NL = 0.5 is not under the threshold
    assert anls("abcde", "abcdf") == pytest.approx(0.8)
    assert anls("", "") == 1.0 and anls("x", "") == 0.0
    assert levenshtein("kitten", "sitting") == 3
    with pytest.raises(ValueError, match="at least one gold"):
        anls("x", [])


TEXT = st.text(alphabet=st.sampled_from(list("abcAB C\t\n12.,-ßİéÉ$")), max_size=12)


@settings(max_examples=400, deadline=None)
@given(prediction=TEXT, golds=st.lists(TEXT, min_size=1, max_size=3),
       threshold=st.sampled_from([0.5, 0.3, 0.75, 1.0]))
def test_anls_agrees_with_the_reference_package(prediction, golds, threshold):
    reference = pytest.importorskip("anls.metrics.score", reason="the conformance test needs anls==0.0.2 "
                                    "(pip install -e '.[test]')")
    assert anls(prediction, golds, threshold) == reference.anls_score(prediction, golds, threshold)


@settings(max_examples=200, deadline=None)
@given(prediction=st.text(alphabet=st.characters(max_codepoint=127), max_size=10),
       gold=st.text(alphabet=st.characters(max_codepoint=127), max_size=10))
def test_anls_agrees_with_the_reference_on_any_ascii_text(prediction, gold):
    reference = pytest.importorskip("anls.metrics.score", reason="the conformance test needs anls==0.0.2")
    assert anls(prediction, [gold]) == reference.anls_score(prediction, [gold])


#: text with compatibility forms NFKC rewrites (ligatures, full-width, super- and subscripts,
#: circled digits, spaces, the long s, a combining accent) among any characters
COMPATIBLE = st.text(alphabet=st.one_of(st.characters(), st.sampled_from(list(
    "\ufb01\ufb02\uff21\uff41\uff11\u00b2\u2082\u2460\u00a0\u2003\u017f\u0301e\u2126\u212b"))), max_size=10)


@settings(max_examples=300, deadline=None)
@given(prediction=COMPATIBLE, other=COMPATIBLE, kin=st.sampled_from(["other", "nfkc", "nfkc+other"]))
def test_anls_is_the_reference_on_any_text_after_nfkc(prediction, other, kin):
    reference = pytest.importorskip("anls.metrics.score", reason="the conformance test needs anls==0.0.2")
    nfkc = functools.partial(unicodedata.normalize, "NFKC")
    # a gold unrelated to the prediction, or the prediction's NFKC form (and more)
    gold = {"other": other, "nfkc": nfkc(prediction), "nfkc+other": nfkc(prediction) + other[:2]}[kin]
    assert anls(prediction, [gold]) == reference.anls_score(nfkc(prediction), [nfkc(gold)])


def test_anls_reads_compatibility_forms_as_the_letters_they_stand_for():
    for prediction, gold in [("\ufb01le", "file"), ("file", "\ufb01le"), ("\uff21\uff11", "a1"), ("x\u00b2", "x2"),
                             ("ACME\u00a0Corp", "acme corp"), ("Caf\u0065\u0301", "caf\u00e9"), ("\u2460", "1")]:
        assert anls(prediction, gold) == 1.0, (prediction, gold)
        assert score_answer("anls", prediction, gold) == 1.0
        assert anls_normalize(prediction) == anls_normalize(gold)


def test_anls_is_the_one_every_scorer_uses_and_keeps_punctuation():
    assert SCORERS["anls"] is anls
    assert anls("ACME corp", "Acme Corp.") == pytest.approx(0.9)  # the period is one edit in ten characters
    assert score_answer("anls", "ACME corp", "Acme Corp.") == pytest.approx(0.9)
    assert score_answer("anls", "ACME corp", "Acme Corp.", golds=["acme  CORP"]) == 1.0
    assert anls_normalize("  Acme\tCorp. ") == "acme corp." and normalize_text("  Acme\tCorp. ") == "acme corp"
    with pytest.raises(ValueError, match="threshold"):
        anls("x", "x", threshold=0)


@settings(max_examples=100, deadline=None)
@given(prediction=st.text(alphabet="ab ß.", max_size=40), gold=st.text(alphabet="ab ß.", max_size=6))
def test_anls_skips_hopeless_lengths_without_changing_a_score(prediction, gold):
    reference = pytest.importorskip("anls.metrics.score", reason="the conformance test needs anls==0.0.2")
    assert anls(prediction, [gold]) == reference.anls_score(prediction, [gold])
    assert anls(prediction, [gold, prediction]) == 1.0


@pytest.mark.parametrize("name", ["../../../../etc/passwd", "/etc/fonts/x.ttf", "ttf/../DejaVuSans.ttf",
                                  "..\\DejaVuSans.ttf", 7, None])
def test_a_stored_font_name_is_a_file_name_in_matplotlibs_font_folder_never_a_path(name):
    from vicogym.renderers.evidence import font_path

    assert font_path("DejaVuSans.ttf").endswith("DejaVuSans.ttf")
    with pytest.raises(ValueError, match="the file name of a font matplotlib ships"):
        font_path(name)
