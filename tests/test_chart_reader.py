"""The chart arm's reader check: the printed texts an answer depends on must be read right
by Tesseract from the rendered image (``checks.chart.check_reading``), in generation and in
``vicogym verify``; where Tesseract is missing, samples say they were made without it."""

from __future__ import annotations

import json
import warnings

import gymnasium as gym
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import vicogym  # noqa: F401  (registers the environments)
from vicogym import ocr
from vicogym.checks import chart as chart_checks
from vicogym.envs.chart import ChartArm, ChartEnvConfig, ReaderCheckSkipped
from vicogym.errors import InvalidEdit
from vicogym.programs.chart import OPS, execute
from vicogym.renderers.chart import ChartRenderer
from vicogym.sources.chart import procedural_seed

MISSING = "the Tesseract binding tesserocr is not installed (simulated by the test)"
SMALL = {"ops": [{"op": "set_style", "font_size": 6, "data_labels": True}]}
LARGE = {"ops": [{"op": "set_style", "font_size": 14, "data_labels": True}]}


def _lookup_env(**kwargs):
    # seed 2 draws a horizontal bar chart with a lookup question (measured: refused at
    # font_size 6, accepted at 14)
    env = gym.make("vicogym/Chart-v0", templates=["lookup"], k=2, **kwargs).unwrapped
    env.reset(seed=2)
    return env


def test_printed_form_folds_what_a_careful_reader_cannot_tell_apart_and_nothing_else():
    same = [("\u221212.5", "-12.5"), ("Q1 \u201922", "Q1 '22"), ("Q2'22", "Q2 '22"), ("1,234,567", "1234567"),
            ("\ufb01ve", "five")]
    for read, drawn in same:
        assert chart_checks.printed_form(read) == chart_checks.printed_form(drawn), (read, drawn)
    differ = [("14,6%", "14.6%"), ("Ql '22", "Q1 '22"), ("12,34", "1234"), ("jul", "Jul"), ("13.2", "-13.2")]
    for read, drawn in differ:
        assert chart_checks.printed_form(read) != chart_checks.printed_form(drawn), (read, drawn)


def test_text_pixels_are_the_gray_image_on_white_and_ink_on_white_on_a_coloured_mark():
    from PIL import Image

    image = np.full((40, 60, 3), 255, np.uint8)
    image[10:20, 10:30] = (40, 40, 40)
    label = {"kind": "data_label", "text": "x", "box": [5.0, 5.0, 35.0, 25.0]}
    expected = np.asarray(Image.fromarray(image[4:26, 4:36]).convert("L"))
    assert np.array_equal(chart_checks.text_pixels(image, label), expected)
    image[:] = (68, 1, 84)  # text drawn black on a dark purple wedge
    image[10:20, 10:30] = (0, 0, 0)
    pixels = chart_checks.text_pixels(image, label)
    assert pixels[0, 0] == 255 and pixels[10, 10] < 255 - 20  # the wedge is paper, the ink stays ink
    # a neighbouring mark at the crop's edge is blanked, not read
    image[:] = 255
    image[:, 34:40] = (31, 119, 180)
    blanked = chart_checks.text_pixels(image, label, marks=[[34.0, 0.0, 40.0, 40.0]])
    assert (blanked[:, -2:] == 255).all()


def test_a_needed_text_tesseract_cannot_read_is_refused_and_a_clean_one_accepted(tesseract):
    env = _lookup_env()
    *_, info = env.step(SMALL)
    assert not info["valid"] and info["error"]["code"] == "unread_text", info["error"]
    assert "Tesseract reads the" in info["error"]["message"] and "raise font_size" in info["error"]["message"]
    env.reset(seed=2)
    *_, info = env.step(LARGE)
    assert info["valid"], info["error"]
    # the same chart with its one needed data label painted over by a mark is refused
    sample, facts = env.sample, env._render_out.facts
    needed = chart_checks.needed_texts(sample.structure, sample.label_rule, facts)
    assert [lab["kind"] for lab in needed] == ["data_label", "legend", "category"]  # value, series, row
    chart_checks.check_reading(sample.structure, sample.label_rule, facts, env.arm.read)
    x0, y0, x1, y1 = (int(round(v)) for v in needed[0]["box"])
    covered = np.array(facts.image)
    covered[y0:y1, x0:x1] = (31, 119, 180)
    with pytest.raises(InvalidEdit) as raised:
        chart_checks.check_reading(sample.structure, sample.label_rule, type(facts)(
            covered, facts.marks, facts.labels, facts.value_limits, facts.facts), env.arm.read)
    assert raised.value.code == "unread_text" and repr(needed[0]["text"]) in str(raised.value)
    env.close()


def test_a_turned_category_label_is_read_level(tesseract):
    renderer = ChartRenderer()
    rng = np.random.default_rng(7)
    for _ in range(60):
        seed = procedural_seed(rng)
        facts = renderer.render(seed.structure)
        turned = [lab for lab in facts.labels if lab.get("rotation")]
        if turned:
            break
    else:
        pytest.fail("no chart with turned category labels in 60 draws")
    read = [tesseract.text(chart_checks.text_pixels(facts.image, lab)) for lab in turned]
    right = sum(chart_checks.printed_form(r) == chart_checks.printed_form(lab["text"]) for r, lab in zip(read, turned))
    assert right >= len(turned) - 1, list(zip([lab["text"] for lab in turned], read))
    renderer.close()


_RENDERER = ChartRenderer()


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 2**32 - 1), st.booleans())
def test_what_the_answer_depends_on_includes_every_text_the_program_reads(seed, labelled):
    """Independently of how needed_texts derives it: the rows and series the program names,
    its answer when that is a label, and the printed values (or the value axis) it reads."""
    from dataclasses import replace

    drawn = procedural_seed(np.random.default_rng(seed))
    structure = replace(drawn.structure, spec=replace(drawn.structure.spec, data_labels=labelled))
    table, spec, program = structure.table, structure.spec, drawn.label_rule["program"]
    facts = _RENDERER.render(structure)
    needed = chart_checks.needed_texts(structure, drawn.label_rule, facts)
    texts = {(lab["kind"], lab["text"]) for lab in needed}
    cells = {(lab.get("row"), lab.get("series")) for lab in needed if lab["kind"] == "data_label"}
    pie, op = spec.chart_type == "pie", program["op"]
    for key in OPS[op].rows:
        assert ("legend" if pie else "category", program[key]) in texts
    if len(table.series) > 1 and not pie:
        for key in ("series", "s1", "s2"):
            if key in program:
                assert ("legend", program[key]) in texts
    answer = execute(table, program)
    if op in ("argmax", "argmin", "row_with_value"):
        assert ("legend" if pie else "category", answer) in texts
    if op == "row_argmax":
        assert ("legend", answer) in texts
    column = [(r, program["series"]) for r in table.rows] if "series" in program else []
    if labelled:
        must = {"lookup": [(program.get("row"), program.get("series"))],
                "sum": column, "mean": column, "median": column, "count_above": column, "row_with_value": column,
                "row_sum": [(program.get("row"), s) for s in table.series]}.get(op, [])
        if op in ("absdiff", "ratio", "pair_sum", "pair_mean", "greater", "less"):
            must = [(program["a"], program["series"]), (program["b"], program["series"])]
        if op in ("max", "min"):
            values = [table.cell(r, s) for r, s in column]
            must = [column[int(np.argmax(values) if op == "max" else np.argmin(values))]]
        assert set(must) <= cells, (op, must, cells)
    elif op in ("lookup", "sum", "mean", "median", "max", "min", "range", "absdiff", "ratio", "pair_sum",
                "pair_mean", "row_sum", "count_above") and not pie:
        ticks = [lab for lab in facts.labels if lab["kind"] == "value_tick"]
        assert sum(lab["kind"] == "value_tick" for lab in needed) >= min(2, len(ticks)), op


def test_same_seed_same_bytes_with_the_reader_check(tesseract):
    first, second = _lookup_env(), _lookup_env()
    for env in (first, second):
        env.step(LARGE)
    assert first.sample == second.sample  # images included
    # a warm cache of readings gives what a cold one gave
    again = first.reset(seed=2)[1]["sample"]
    assert again == second.reset(seed=2)[1]["sample"] and first.arm._readings
    assert first.sample.provenance.to_dict()["checks"] == {"reader": "ran"}
    first.close(), second.close()


def test_without_tesseract_samples_say_so_and_one_warning_does(monkeypatch):
    monkeypatch.setattr(ocr, "unavailable", lambda: MISSING)
    with pytest.warns(ReaderCheckSkipped, match="without the reader check") as caught:
        env = gym.make("vicogym/Chart-v0", k=1).unwrapped
    assert len(caught) == 1
    _, info = env.reset(seed=2)
    assert info["sample"].provenance.to_dict()["checks"] == {"reader": f"not run: {MISSING}"}
    summary = env.arm.source_summary()
    assert summary["reader_check"] == f"not run: {MISSING}" and MISSING in summary["note"]
    assert summary["replay_settings"] == {"reader_check": "off"}
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # off: on purpose, so no warning
        quiet = gym.make("vicogym/Chart-v0", k=1, reader_check="off").unwrapped
    assert quiet.reset(seed=2)[1]["sample"].provenance.to_dict()["checks"] == {"reader": "off"}
    with pytest.raises(ocr.ReaderUnavailable, match="reader_check='required'"):
        gym.make("vicogym/Chart-v0", reader_check="required")
    env.close(), quiet.close()


def test_reader_check_setting_is_validated():
    with pytest.raises(ValueError, match=r"expected reader_check in \('auto', 'required', 'off'\), got 'yes'"):
        ChartEnvConfig(reader_check="yes")


@pytest.fixture(scope="module")
def read_run(tmp_path_factory, tesseract):
    from vicogym.runs import generate as workflow

    out = tmp_path_factory.mktemp("reader-run")
    workflow.generate(workflow.GenerateConfig(n=2, out=str(out), seed=3, max_episodes=8,
                                              env_kwargs={"k": 2, "templates": ["lookup", "pair_sum"]}),
                      progress=False)
    return out


def _rows(out):
    import pyarrow.parquet as pq

    return [row for path in sorted(out.glob("part-*.parquet")) for row in pq.read_table(path).to_pylist()]


@pytest.mark.slow
def test_verify_reads_again_what_rows_say_was_read(read_run, tesseract, monkeypatch):
    from vicogym.runs.verify import verify

    rows = _rows(read_run)
    assert {json.loads(r["provenance"])["checks"]["reader"] for r in rows} == {"ran"}
    assert verify(read_run).ok
    # a row whose needed text has become unreadable (the stored structure drawn at the smallest
    # font) is caught by the arm's row check, which reads it again
    arm = ChartArm(ChartEnvConfig(k=2))
    structure = json.loads(rows[0]["structure"])
    structure["spec"]["font_size"] = 6.0
    problem = arm._reading_problem(rows[0], arm.decode(json.dumps(structure)), json.loads(rows[0]["label"]))
    assert problem.startswith("a reader could not answer from this image: [unread_text] Tesseract reads the")
    # a reader that reads nothing right: every row is refused
    monkeypatch.setattr(ChartArm, "read", lambda self, pixels: "")
    findings = verify(read_run)
    assert not findings.ok and all("[unread_text]" in reason for _, reason in findings.problems[:len(rows)])
    # where Tesseract is missing, verify says it cannot check, and fails
    monkeypatch.setattr(ocr, "unavailable", lambda: MISSING)
    findings = verify(read_run)
    assert not findings.ok
    assert any("which cannot be checked here" in reason and MISSING in reason for _, reason in findings.problems)
    assert any("played with the reader check, which cannot run here" in note for note in findings.notes)


def test_the_simulated_actor_reads_the_smallest_needed_text_on_the_fitted_curve():
    from vicogym.legibility import TEXT_DRAWN, TEXT_FONT, read_probability
    from vicogym.policies import SimulatedActor
    from vicogym.sources.evidence.forms import cap_ratio

    assert pytest.approx(cap_ratio(TEXT_FONT), abs=1e-3) == chart_checks.CAP_RATIO
    env = _lookup_env(reader_check="off")
    for step in (SMALL, LARGE):
        env.reset(seed=2)
        env.step(step)  # refused at 6 pt by the reader check only: here it is off
        sample, facts = env.sample, env._render_out.facts
        features = chart_checks.difficulty_features(sample.structure, facts, sample.label_rule)
        needed = chart_checks.needed_texts(sample.structure, sample.label_rule, facts)
        sizes = {lab["kind"]: lab["size_pt"] for lab in needed}
        assert features["text_cap_px"] == pytest.approx(sizes["data_label"] / 72 * 80 * chart_checks.CAP_RATIO,
                                                        abs=1e-3)  # data labels print smallest
        assert env.arm.actor_context(sample, env._render_out)["text_cap_px"] == features["text_cap_px"]
    env.close()
    actor, sharp = SimulatedActor(), SimulatedActor(acuity=0.7)
    plain = actor.p_correct(1.0)
    assert actor.p_correct(1.0, None) == plain
    assert actor.p_correct(1.0, 3.5) < actor.p_correct(1.0, 5.0) < actor.p_correct(1.0, 8.0) <= plain
    assert actor.p_correct(1.0, 5.0) == pytest.approx(plain * read_probability(5.0, TEXT_FONT, drawn=TEXT_DRAWN))
    assert sharp.p_correct(1.0, 5.0) > actor.p_correct(1.0, 5.0)
    with pytest.raises(ValueError, match="expected acuity > 0, got 0"):
        SimulatedActor(acuity=0)
