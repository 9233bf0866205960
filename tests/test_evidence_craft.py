"""Skills w = (θ, φ, ψ), their interface grammar, and ``vicogym craft`` (ViewCraft's loop:
proposals, UCB, the replay filter, the paired gate, interface projection, ledgers,
resumption, the report and the transfer matrix)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

import vicogym  # noqa: F401
from vicogym.cli import app
from vicogym.errors import RunError
from vicogym.evidence import interface
from vicogym.evidence.craft import Craft, CraftConfig, allowed_moves, craft, gate, read_run, transfer
from vicogym.evidence.episodes import play
from vicogym.evidence.executors import SimulatedExecutor, make_executor
from vicogym.evidence.optimizers import GuidedOptimizer, Proposal, RandomOptimizer, ucb_pick
from vicogym.evidence.report import write_report
from vicogym.evidence.skills import BUILTIN, FIELDS, Skill, load_skill
from vicogym.structures import evidence as structures

REPO = Path(__file__).resolve().parents[1]
#: the smallest craft run that still evolves: forms pages, two development and two test items
TINY = {"tasks": ["forms"], "rounds": 2, "submissions": 3, "dev": 2, "test": 2, "repeats": 1, "modes": ["joint"]}


# -- the grammar --------------------------------------------------------------------------------
def test_the_grammar_names_the_structures_own_contracts_and_label_formats():
    assert interface.CONTRACTS == structures.CONTRACTS
    assert interface.LABEL_FORMATS == structures.LABEL_FORMATS


@pytest.mark.parametrize("expression, where", [
    ({"select": {"attach": [{"pick": "fly"}]}}, "select/attach/0/pick"),
    ({"present": {"upscale": 9}}, "present/upscale"),
    ({"present": {"grid": 2.5}}, "present/grid"),
    ({"select": {"crops": [{"rows": 2}]}}, "select/crops/0"),
    ({"select": {"attach": [{"pick": "all", "when": {"colour": ["red"]}}]}}, "select/attach/0/when"),
    ({"code": "import os"}, "(the expression)"),
    ([1, 2], "(the expression)"),
])
def test_an_expression_that_breaks_the_grammar_is_refused_with_its_place(expression, where):
    with pytest.raises(ValueError, match="breaks its grammar at " + where.replace("(", r"\(").replace(")", r"\)")):
        interface.validate(expression)


def _task(question, titles, family="slides", contract="number"):
    units = tuple(structures.Unit("slide", 1280, 720, {}, t) for t in titles)
    answer, options = ("A", ("x", "y")) if contract == "letter" else ("1", ())
    return structures.Task("t", family, question, answer, units, (), contract, "relaxed", options=options)


def test_a_family_no_task_has_is_refused_where_the_environment_is_made():
    expr = {"select": {"attach": [{"when": {"family": ["slide"]}, "pick": "all"}]}}
    with pytest.raises(ValueError, match="'slide', which no task here has; did you mean 'slides'"):
        gym.make("vicogym/Evidence-v0", tasks="forms", interface=expr)
    expr["select"]["attach"][0]["when"]["family"] = ["slides"]  # a known family the tasks lack: the rule never holds
    gym.make("vicogym/Evidence-v0", tasks="forms", interface=expr)


def test_title_match_picks_the_quoted_title_before_shared_words():
    task = _task("In the slide titled 'Revenue: Western division', what is the lowest value?",
                 ["Revenue: Eastern division", "Revenue: Western division", "Costs", "Western division staff"])
    assert interface.pick_units("title_match", 1, task) == [1]
    assert interface.pick_units("title_match", 2, task)[0] in (0, 1, 3)
    assert interface.pick_units("spread", 3, _task("q", ["a"] * 9)) == [0, 4, 8]
    assert interface.pick_units("title_match", 2, _task("nothing shared", ["x", "y"])) == [0]


def test_rules_hold_by_every_key_and_the_first_that_holds_decides():
    task = _task("Which chart shows the largest VALUE?", ["a", "b", "c"], "multichart", "letter")
    assert interface.holds({}, task)
    assert interface.holds({"family": ["multichart"], "question_has": ["value"], "units_at_least": 3}, task)
    assert not interface.holds({"family": ["multichart"], "contract": ["number"]}, task)
    assert not interface.holds({"units_at_least": 4}, task)
    expr = {"select": {"attach": [{"when": {"family": ["forms"]}, "pick": "all"}, {"pick": "first"}]}}
    assert interface.start_plan(expr, task) == {"units": [0], "crops": None}
    assert interface.start_plan({"select": {"attach": [{"pick": "start"}]}}, task) is None


@given(rows=st.integers(1, 4), cols=st.integers(1, 4), overlap=st.sampled_from([0.0, 0.1, 0.5]),
       w=st.integers(10, 3000), h=st.integers(10, 3000))
def test_crop_boxes_cover_the_unit_and_stay_in_it(rows, cols, overlap, w, h):
    boxes = interface.crop_boxes(w, h, rows, cols, overlap)
    assert len(boxes) == rows * cols
    assert all(0 <= b[0] < b[2] <= w and 0 <= b[1] < b[3] <= h for b in boxes)
    grid = np.zeros((min(h, 60), min(w, 60)), bool)
    sx, sy = grid.shape[1] / w, grid.shape[0] / h
    for b in boxes:
        grid[int(b[1] * sy):int(np.ceil(b[3] * sy)), int(b[0] * sx):int(np.ceil(b[2] * sx))] = True
    assert grid.all()


WHEN = st.fixed_dictionaries({}, optional={"family": st.just(["forms"]), "contract": st.just(["text"]),
                                           "units_at_least": st.integers(1, 3)})
EXPRESSIONS = st.fixed_dictionaries({}, optional={
    "select": st.fixed_dictionaries({}, optional={
        "attach": st.lists(st.fixed_dictionaries({"pick": st.sampled_from(interface.PICKS)},
                                                 optional={"when": WHEN, "count": st.integers(1, 16)}), max_size=3),
        "crops": st.lists(st.fixed_dictionaries({"rows": st.integers(1, 4), "cols": st.integers(1, 4)},
                                                optional={"when": WHEN, "overlap": st.sampled_from([0.0, 0.2])}),
                          max_size=2)}),
    "present": st.fixed_dictionaries({}, optional={
        "upscale": st.sampled_from([1, 1.5, 4]), "grid": st.integers(0, 12), "timestamps": st.booleans(),
        "rings": st.sampled_from(interface.RING_STYLES), "labels": st.sampled_from(interface.LABEL_FORMATS),
        "sheet_cols": st.integers(0, 8)})})


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(expression=EXPRESSIONS, seed=st.integers(0, 2**31))
def test_every_expression_of_the_grammar_starts_an_episode_within_its_budgets(expression, seed):
    env = gym.make("vicogym/Evidence-v0", tasks="forms", interface=expression, view_size=256, max_images=4).unwrapped
    obs, info = env.reset(seed=seed)
    assert 1 <= obs["n_images"] <= 4 and len(env.views) <= 4
    for view in env.views:
        pixels = env.view_pixels(view.id)
        assert pixels.shape == (view.height, view.width, 3) and max(view.width, view.height) <= 256
    assert env.observation_space.contains(obs)


# -- what the interface changes in the environment ---------------------------------------------
def test_attach_rules_send_the_slide_the_question_names_at_reset():
    plain = gym.make("vicogym/Evidence-v0", tasks="slides").unwrapped
    plain.reset(seed=3)
    target = plain.task.evidence[0].unit
    assert len(plain.views) == 1 and len(plain.views[0].tiles) > 1  # the thumbnail sheet
    skill = Skill(interface={"select": {"attach": [{"when": {"family": ["slides"]}, "pick": "title_match",
                                                    "count": 1}]}})
    env = gym.make("vicogym/Evidence-v0", tasks="slides", **skill.env_settings()).unwrapped
    env.reset(seed=3)
    assert [v.units() for v in env.views] == [[target]]
    assert env.task.to_dict() == plain.task.to_dict()  # the interface never changes the task drawn


def test_crop_rules_send_zoomed_crops_and_upscale_enlarges_drawn_units_only():
    expr = {"select": {"crops": [{"rows": 2, "cols": 2}]}, "present": {"upscale": 2}}
    env = gym.make("vicogym/Evidence-v0", tasks="forms", interface=expr).unwrapped
    env.reset(seed=0)
    assert len(env.views) == 5 and [v.made_by["action"] for v in env.views] == ["start"] * 5
    whole, crop = env.views[0].tiles[0], env.views[1].tiles[0]
    assert crop.scale > 1.5 * whole.scale
    form = env.task.units[0]
    assert structures.scale_cap(form, 2.0) == 2 * form.max_scale
    photo = structures.Unit("image", 100, 100, {}, "", 1.0)
    assert structures.scale_cap(photo, 4.0) == 1.0
    small = (0, 0, 40, 40)
    assert structures.crop_view(0, 0, form, small, 768, upscale=2.0).tiles[0].scale == 2 * form.max_scale
    assert structures.crop_view(0, 0, photo, small, 768, upscale=2.0).tiles[0].scale == 1.0


def test_grid_timestamps_rings_and_labels_are_drawn_into_the_views():
    base = gym.make("vicogym/Evidence-v0", tasks="slides", view_size=512).unwrapped
    base.reset(seed=1)
    plain = base.view_pixels(0)
    for present in ({"grid": 4}, {"timestamps": True}, {"labels": "index"}, {"labels": "none"}):
        env = gym.make("vicogym/Evidence-v0", tasks="slides", view_size=512, interface={"present": present}).unwrapped
        env.reset(seed=1)
        assert not np.array_equal(env.view_pixels(0), plain), present
    env = gym.make("vicogym/Evidence-v0", tasks="slides", view_size=512, interface={"present": {"labels": "none"}}
                   ).unwrapped
    env.reset(seed=1)
    assert all(t.label == "" for t in env.views[0].tiles)
    assert env.views[0].tiles[0].at[1] == 0 < base.views[0].tiles[0].at[1]  # no label band above the thumbnails
    rings = {}
    for style in interface.RING_STYLES:
        env = gym.make("vicogym/Evidence-v0", tasks="forms", interface={"present": {"rings": style}}).unwrapped
        env.reset(seed=0)
        env.step(json.dumps({"action": "note", "notes": [{"image": 0, "at": [0.3, 0.3]}, {"image": 0,
                                                                                         "at": [0.6, 0.6]}]}))
        env.step(json.dumps({"action": "view", "units": [0]}))
        rings[style] = env.view_pixels(env.views[-1].id)
    assert not np.array_equal(rings["ordinal"], rings["mono"])


# -- skills -------------------------------------------------------------------------------------
def test_a_skill_folder_round_trips_byte_for_byte(tmp_path):
    skill = Skill("Zoom into the evidence.", "Answer in the required format.", "Views carry a grid.",
                  {"max_crops": 4, "max_steps": 12}, {"present": {"grid": 6}}, name="mine")
    skill.save(tmp_path / "a")
    again = load_skill(tmp_path / "a")
    assert again.digest() == skill.digest() and again.files() == skill.files()
    again.save(tmp_path / "b")
    assert {p.name: p.read_bytes() for p in (tmp_path / "a").iterdir()} == \
        {p.name: p.read_bytes() for p in (tmp_path / "b").iterdir()}
    assert skill.directives == {"zoom_evidence", "answer_format"}
    assert skill.env_settings() == {"max_crops": 4, "max_steps": 12, "interface": {"present": {"grid": 6}}}
    other = skill.with_fields(reader="", present={"grid": 6, "timestamps": True})
    assert skill.changed(other) == ["reader", "present"]
    assert list(FIELDS) == ["reader", "answer_contract", "view_contract", "protocol", "select", "present"]


@pytest.mark.parametrize("protocol, message", [({"max_steps": 0}, "max_steps as a whole number in"),
                                               ({"max_crop": 3}, "no budget"), ({"max_images": True}, "max_images")])
def test_a_skill_protocol_names_budgets_within_their_bounds(protocol, message):
    with pytest.raises(ValueError, match=message):
        Skill(protocol=protocol)


def test_direct_and_initial_are_skills_the_run_command_executes(tmp_path):
    assert load_skill("initial") is BUILTIN["initial"] and load_skill("direct") is BUILTIN["direct"]
    env = gym.make("vicogym/Evidence-v0", tasks="slides", **BUILTIN["direct"].env_settings()).unwrapped
    trace = play(env, make_executor("simulated"), seed=2, skill=BUILTIN["direct"])
    assert len(trace["steps"]) == 1 and trace["steps"][0]["action"]["action"] == "answer"
    assert sorted({u for v in trace["start_views"] for u in (t["unit"] for t in v["tiles"])}) == \
        list(range(len(trace["task"]["units"])))
    result = CliRunner().invoke(app, ["evidence", "run", "forms", "--skill", "direct", "--n", "2", "--out",
                                      str(tmp_path / "run"), "--no-progress"])
    assert result.exit_code == 0, result.output
    result = CliRunner().invoke(app, ["evidence", "run", "forms", "--skill", str(tmp_path / "none"), "--n", "1",
                                      "--out", str(tmp_path / "run2"), "--no-progress"])
    assert result.exit_code == 2 and "does not exist" in result.output


def test_the_simulated_executor_reads_settings_from_its_spec_and_sees_the_interface():
    runner = make_executor("simulated:skill,acuity=1.3,locate=0.8")
    assert (runner.acuity, runner.locate) == (1.3, 0.8) and runner.spec == "simulated:skill,locate=0.8,acuity=1.3"
    assert make_executor("direct,acuity=2").inner.acuity == 2.0
    for bad in ("simulated:skill,sharpness=2", "simulated:skill,acuity=x", "simulated:skill,acuity=9"):
        with pytest.raises(ValueError, match="acuity|sharpness"):
            make_executor(bad)
    ex = SimulatedExecutor()
    ex.begin({"evidence": [], "units": [], "contract": "text", "family": "forms"},
             Skill("Use the grid to place regions."), np.random.default_rng(0))
    gridded = [{"id": 0, "view": {"tiles": [{"unit": 0}], "style": {"grid": 6}}}]
    assert ex._zoom_hit(gridded, 0) == 0.98 and ex._zoom_hit([{"id": 0, "view": {"tiles": []}}], 0) == ex.zoom_hit
    ex.directives = frozenset()
    assert ex._zoom_hit(gridded, 0) == ex.zoom_hit  # a grid the reader is not told to use does nothing
    sheet = lambda labels: [{"id": 0, "view": {"tiles": [{"unit": 0, "label": labels[0]},
                                                         {"unit": 1, "label": labels[1]}]}}]
    assert ex._locate(sheet(["Unit 0: A", "Unit 1: B"])) == ex.locate
    assert ex._locate(sheet(["Unit 0", "Unit 1"])) == 0.5 and ex._locate(sheet(["", ""])) == 0.3


def test_a_weaker_reader_scores_less_on_the_same_views():
    skill = Skill("Answer in the required format.", interface={"select": {"crops": [{"rows": 2, "cols": 2}]}})
    env = gym.make("vicogym/Evidence-v0", tasks="forms", **skill.env_settings()).unwrapped
    scores = {}
    for spec in ("simulated", "simulated:skill,acuity=1.6"):
        scores[spec] = np.mean([play(env, make_executor(spec), seed=s, skill=skill)["score"] for s in range(12)])
    assert scores["simulated"] > scores["simulated:skill,acuity=1.6"]


# -- the gate, UCB and the moves -----------------------------------------------------------------
@pytest.mark.parametrize("d_r, d_c, d_px, d_text, accepted, reason", [
    (0.1, 0.0, 5.0, 30, True, "accept: dR"),
    (0.0, 0.2, 0.0, 0, True, "accept: dR"),
    (-0.05, 0.3, 0.0, 0, False, "score fell"),
    (0.2, -0.01, 0.0, 0, False, "support fell"),
    (0.0, 0.0, -10.0, -5, True, "a tie that costs no more"),
    (0.0, 0.0, 0.0, 0, True, "a tie that costs no more"),
    (0.0, 0.0, 10.0, 0, False, "a tie that sends more pixels"),
    (0.0, 0.0, 0.0, 12, False, "a tie that adds text"),
])
def test_the_gate_accepts_only_when_neither_score_nor_support_falls(d_r, d_c, d_px, d_text, accepted, reason):
    verdict, why = gate(d_r, d_c, d_px, d_text)
    assert verdict is accepted and reason in why


def test_ucb_tries_every_move_first_then_balances_reward_and_doubt():
    moves = ("a", "b", "c")
    assert ucb_pick(moves, []) == ["a", "b", "c"]
    history = [{"move": "a", "accepted": True}, {"move": "b", "accepted": False}]
    assert ucb_pick(moves, history)[0] == "c"
    history = [{"move": "a", "accepted": True}] * 3 + [{"move": "b", "accepted": False}] * 3 + \
        [{"move": "c", "accepted": False}]
    # a: 1 + sqrt(2 ln 7 / 3) = 2.61; b: 0 + 1.61; c: 0 + sqrt(2 ln 7) = 1.97
    assert ucb_pick(moves, history) == ["a", "c", "b"]
    assert ucb_pick(moves, [{"move": "z", "accepted": True}]) == ["a", "b", "c"]


def test_modes_allow_their_moves():
    assert allowed_moves("text", 0, 4) == ("reader", "answer_contract")
    assert "reader" not in allowed_moves("interface", 0, 4) and "joint" in allowed_moves("joint", 3, 4)
    assert [allowed_moves("alternating", r, 4)[0] for r in range(4)] == ["reader", "select", "reader", "select"]
    assert [allowed_moves("staged", r, 4)[0] for r in range(4)] == ["select", "select", "reader", "reader"]


def _failed(family, failure, contract="text", steps=()):
    return {"score": 0.0, "failure": failure, "outcome": "answered", "steps": list(steps),
            "task": {"family": family, "contract": contract, "evidence": [{"unit": 0}, {"unit": 3}]}}


def test_guided_repairs_follow_the_failures_and_skip_what_was_rejected():
    opt, rng, skill = GuidedOptimizer(("slides",)), np.random.default_rng(0), BUILTIN["initial"]
    traces = [_failed("slides", "missed_unit")] * 3 + [_failed("slides", "wrong_format")]
    first = opt.propose(skill, "select", traces, rng, set())
    assert first.skill.get("select")["attach"][0] == {"when": {"family": ["slides"]}, "pick": "title_match",
                                                      "count": 2}
    assert "find the unit" in opt.propose(skill, "reader", traces, rng, set()).skill.reader.lower()
    assert "required format" in opt.propose(skill, "answer_contract", traces, rng, set()).skill.answer_contract
    second = opt.propose(skill, "select", traces, rng, {first.skill.digest()})
    assert second.skill.digest() != first.skill.digest() and "crops" in second.skill.get("select")
    hit = [_failed("forms", "unreadable", steps=[{"error": "crop_budget"}])]
    protocol = opt.propose(skill, "protocol", hit, rng, set())
    assert protocol.skill.protocol == {"max_crops": 12}
    assert opt.propose(skill, "protocol", [_failed("forms", "unreadable")], rng, set()) is None


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**31), move=st.sampled_from(["reader", "answer_contract", "view_contract", "protocol",
                                                          "select", "present", "joint"]))
def test_random_proposals_are_valid_skills_that_make_their_move(seed, move):
    proposal = RandomOptimizer(("forms", "slides")).propose(BUILTIN["initial"], move, [], np.random.default_rng(seed),
                                                            set())
    assert proposal is not None and proposal.move == move
    changed = BUILTIN["initial"].changed(proposal.skill)
    assert changed and (move == "joint" or changed == [move])
    assert Skill.from_dict(proposal.skill.to_dict()).digest() == proposal.skill.digest()


# -- the loop, with scripted evaluations -----------------------------------------------------------
class Scripted(Craft):
    """A craft run whose evaluations are scripted: each skill's per-item score and support
    come from ``table`` (by a key of its fields), so every gate outcome can be staged."""

    def __init__(self, out, config, table, proposals):
        super().__init__(out, config)
        self.table, self.proposals, self.evaluated = table, list(proposals), []

    def splits(self):
        return [{"id": f"i{k}", "split": "dev", "family": "forms", "source": f"s{k}", "spec": "forms"}
                for k in range(3)]

    def evaluate(self, skill, split, executor=None):
        score, support = self.table[skill.reader, json.dumps(skill.get("present"), sort_keys=True)]
        self.evaluated.append(skill.digest())
        rows = [{"item": f"i{k}", "score": score, "support": support, "pixels": 100} for k in range(3)]
        return {"rows": rows, "traces": []}

    def replay_changes(self, candidate, traces):
        return candidate.get("present") != {"grid": 0}


class ScriptedOptimizer:
    spec = "scripted"

    def __init__(self, proposals):
        self.proposals = list(proposals)

    def propose(self, skill, move, traces, rng, rejected):
        if not self.proposals:
            return None
        edit = self.proposals.pop(0)
        return Proposal(skill.with_fields(**edit), "joint" if len(edit) > 1 else move, "scripted")


def _scripted(tmp_path, monkeypatch, table, proposals, submissions=4):
    import vicogym.evidence.craft as module

    monkeypatch.setattr(module, "make_optimizer", lambda *a, **k: ScriptedOptimizer(proposals))
    tmp_path.mkdir(parents=True, exist_ok=True)
    run = Scripted(tmp_path, CraftConfig(tasks=["forms"], rounds=1, submissions=submissions), table, proposals)
    terminal = run.search("joint")
    ledger = json.loads((tmp_path / "joint" / "ledger.json").read_text())
    return run, terminal, ledger["candidates"]


R0 = BUILTIN["initial"].reader


def test_a_joint_loss_that_kept_support_is_projected_and_its_interface_kept(tmp_path, monkeypatch):
    table = {(R0, "{}"): (0.5, 0.5), ("worse", '{"grid": 6}'): (0.3, 0.7), (R0, '{"grid": 6}'): (0.6, 0.7)}
    run, terminal, entries = _scripted(tmp_path, monkeypatch, table, [{"reader": "worse", "present": {"grid": 6}}])
    assert [e["reason"].split(":")[0] for e in entries] == ["rollback", "accept"]
    assert entries[0]["project"] and entries[1]["projection_of"] == 0 and entries[1]["move"] == "projection"
    assert entries[1]["slot"] == 1  # the projection takes a submission of its own
    assert terminal.reader == R0 and terminal.get("present") == {"grid": 6}


def test_no_projection_when_support_fell_or_no_submission_is_left(tmp_path, monkeypatch):
    table = {(R0, "{}"): (0.5, 0.5), ("worse", '{"grid": 6}'): (0.3, 0.4), (R0, '{"grid": 6}'): (0.9, 0.9)}
    _, terminal, entries = _scripted(tmp_path / "a", monkeypatch, table, [{"reader": "worse", "present": {"grid": 6}}])
    assert len(entries) == 1 and not entries[0]["project"] and entries[0]["dC"] < 0
    table[("worse", '{"grid": 6}')] = (0.3, 0.7)
    _, terminal, entries = _scripted(tmp_path / "b", monkeypatch, table,
                                     [{"reader": "worse", "present": {"grid": 6}}], submissions=1)
    assert len(entries) == 1 and entries[0]["project"] and terminal.get("present") == {}


def test_the_replay_filter_rejects_an_unseen_interface_edit_before_evaluation(tmp_path, monkeypatch):
    table = {(R0, "{}"): (0.5, 0.5), (R0, '{"grid": 0}'): (0.9, 0.9), ("better", "{}"): (0.6, 0.5)}
    run, terminal, entries = _scripted(tmp_path, monkeypatch, table, [{"present": {"grid": 0}}, {"reader": "better"}])
    assert entries[0]["reason"] == "replay: no sent view changed" and entries[0]["dR"] is None
    assert Skill().with_fields(present={"grid": 0}).digest() not in run.evaluated
    assert entries[1]["reason"].startswith("accept") and terminal.reader == "better"  # text edits bypass the filter


def test_the_replay_filter_replays_real_traces(tmp_path):
    run = Craft(tmp_path, CraftConfig(**TINY))
    run.open()
    try:
        base = run.evaluate(BUILTIN["initial"], "dev")
        unseen = BUILTIN["initial"].with_fields(select={"attach": [{"when": {"family": ["slides"]}, "pick": "all"}]})
        assert not run.replay_changes(unseen, base["traces"])
        assert run.replay_changes(BUILTIN["initial"].with_fields(present={"grid": 4}), base["traces"])
        cut = BUILTIN["initial"].with_fields(select={"crops": [{"rows": 1, "cols": 2}]})
        assert run.replay_changes(cut, base["traces"])
    finally:
        run.close()


# -- whole runs -------------------------------------------------------------------------------------
def test_splits_are_source_disjoint_and_frozen(tmp_path):
    run = Craft(tmp_path, CraftConfig(tasks=["forms", "slides"], dev=3, test=2))
    run.open()
    try:
        items = run.splits()
        again = run.splits()
    finally:
        run.close()
    assert items == again and len(items) == 10
    dev = {i["source"] for i in items if i["split"] == "dev"}
    test = {i["source"] for i in items if i["split"] == "test"}
    assert not dev & test
    frozen = json.loads((tmp_path / "splits.json").read_text())
    assert all(frozen["sources"][i["source"]] == i["split"] for i in items)
    assert all((tmp_path / "items" / f"{i['id']}.json").is_file() for i in items)


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("craft") / "run"
    result = craft(out, CraftConfig(**TINY))
    return out, result


def test_a_craft_run_evolves_a_skill_and_evaluates_every_variant(tiny_run):
    out, result = tiny_run
    assert set(result) == {"executor", "variants"}
    assert set(result["variants"]) == {"direct", "initial", "joint", "theta1_phi0", "theta0_phi1"}
    score = {a: np.mean([r["score"] for r in v["rows"]]) for a, v in result["variants"].items()}
    assert score["joint"] > score["initial"]  # form values are unreadable until a skill zooms or crops
    ledger = json.loads((out / "joint" / "ledger.json").read_text())
    assert len(ledger["rounds"]) == 2 and ledger["candidates"]
    for entry in ledger["candidates"]:
        assert "arm" not in entry
        assert {"round", "slot", "mode", "move", "fields", "diff", "dR", "dC", "reason", "accepted",
                "projection_of", "skill"} <= set(entry)
    accepted = [e for e in ledger["candidates"] if e["accepted"]]
    assert accepted and all(e["dR"] >= 0 and e["dC"] >= 0 for e in accepted)
    for r in range(2):
        assert (out / "joint" / f"round-{r}" / "reader.md").is_file()
    assert load_skill(out / "joint" / "skill").digest() == accepted[-1]["skill"]["sha256"]


def test_a_run_with_other_settings_is_refused_and_the_same_one_resumes_to_the_same_bytes(tiny_run, tmp_path):
    out, result = tiny_run
    with pytest.raises(RunError, match="differing: rounds"):
        craft(out, CraftConfig(**{**TINY, "rounds": 3}))
    before = {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file() and "report" not in p.parts}
    again = craft(out, CraftConfig(**TINY))
    after = {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file() and "report" not in p.parts}
    assert again == json.loads(json.dumps(result)) and before == after


def test_an_older_run_folder_naming_moves_and_variants_arms_is_read_and_resumed(tiny_run, tmp_path):
    """Older craft folders name a candidate's move ``arm`` in the ledger and the test
    variants ``arms`` in test.json: the report reads them, and a resumed search continues
    such a ledger (and writes it with ``move``)."""
    out, result = tiny_run
    old = tmp_path / "old"
    shutil.copytree(out, old)
    ledger_path, test_path = old / "joint" / "ledger.json", old / "test.json"
    ledger = json.loads(ledger_path.read_text())
    ledger["candidates"] = [{("arm" if k == "move" else k): v for k, v in e.items()} for e in ledger["candidates"]]
    ledger_path.write_text(json.dumps(ledger))
    test = json.loads(test_path.read_text())
    test_path.write_text(json.dumps({("arms" if k == "variants" else k): v for k, v in test.items()}))
    run = read_run(old)
    assert run["test"] == test and all("move" in e and "arm" not in e for e in run["ledgers"]["joint"]["candidates"])
    assert write_report([old], tmp_path / "report")[0]["cells"]["all/joint"] == \
        write_report([out], tmp_path / "report-new")[0]["cells"]["all/joint"]
    # one more round on the old ledger: its UCB history counts the old entries' moves
    moves = [e["move"] for e in json.loads((out / "joint" / "ledger.json").read_text())["candidates"]]
    ledger["rounds"] = ledger["rounds"][:1]
    ledger["candidates"] = [e for e in ledger["candidates"] if e["round"] == 0]
    ledger_path.write_text(json.dumps(ledger))
    test_path.unlink()
    craft(old, CraftConfig(**TINY))
    resumed = json.loads(ledger_path.read_text())["candidates"]
    assert [e["move"] for e in resumed] == moves and all("arm" not in e for e in resumed)
    assert (old / "joint" / "ledger.json").read_bytes() == (out / "joint" / "ledger.json").read_bytes()


def test_the_same_seed_gives_the_same_ledger_and_skill_bytes_after_kill_9(tiny_run, tmp_path):
    out, _ = tiny_run
    killed = tmp_path / "killed"
    code = ("import sys; from vicogym.evidence.craft import craft, CraftConfig; "
            f"craft(sys.argv[1], CraftConfig(**{TINY!r}))")
    env = {**os.environ, "PYTHONPATH": str(REPO / "tests")}
    unfinished = []
    for wait_for in (lambda: (killed / "splits.json").is_file(),
                     lambda: (killed / "joint" / "ledger.json").is_file()
                     and json.loads((killed / "joint" / "ledger.json").read_text())["candidates"]):
        proc = subprocess.Popen([sys.executable, "-c", code, str(killed)], env=env, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
        deadline = time.time() + 120
        while time.time() < deadline and proc.poll() is None:
            try:
                if wait_for():
                    break
            except (OSError, json.JSONDecodeError):
                pass
            time.sleep(0.05)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        unfinished.append(not (killed / "test.json").is_file())
    assert unfinished[0]  # killed mid-run at least once
    craft(killed, CraftConfig(**TINY))
    for name in ("joint/ledger.json", "splits.json", "test.json", "joint/skill/reader.md",
                 "joint/skill/interface.json", "joint/round-1/protocol.json"):
        assert (killed / name).read_bytes() == (out / name).read_bytes(), name


def test_the_report_prints_the_table_and_writes_its_plots(tiny_run, tmp_path):
    out, _ = tiny_run
    result, page = write_report([out], tmp_path / "report")
    assert {"direct", "initial", "joint"} <= set(result["variants"])
    cell = result["cells"]["all/joint"]
    assert cell["low"] <= cell["score"] <= cell["high"] and "crossing" in result
    assert result["cells"]["all/direct"]["p"] <= 1.0
    html = page.read_text()
    for name in ("score_per_round.png", "accepted_by_field.png", "delta_r_delta_c.png"):
        assert (tmp_path / "report" / name).stat().st_size > 1000 and name in html
    cli = CliRunner().invoke(app, ["craft", "report", str(out), "--out", str(tmp_path / "r2")])
    assert cli.exit_code == 0 and "Joint" in cli.output and "terminal crossing" in cli.output
    assert read_run(out)["identity"]["tasks"] == ["forms"]


@pytest.mark.parametrize("args, message", [
    (["craft", "report"], "needs run folders"),
    (["craft", "report", "/nonexistent/run"], "/nonexistent/run does not exist"),
    (["craft", "forms", "--modes", "sideways"], "expected modes among"),
    (["craft", "forms", "--rounds", "0"], "--rounds"),
    (["craft", "forms", "--optimizer", "clever"], "unknown optimizer"),
    (["craft", "forms", "--set", "interface={}"], "the craft run's own"),
    (["craft", "transfer", "/nonexistent/a"], "at least two"),
    (["craft", "forms", "--executor", "direct"], "Direct is one of the variants"),
    (["craft", "forms", "--executor", "simulated:skill,acuity=9"], "acuity"),
    (["craft", "forms", "--start", "nosuch"], "--start nosuch"),
    (["craft", "report", "somewhere", "--dev", "2"], "--dev sets up a craft run"),
    (["craft", "grammar", "--out", "x"], "takes no --out"),
])
def test_craft_commands_answer_bad_input_with_a_message(args, message, tmp_path):
    result = CliRunner().invoke(app, args + (["--out", str(tmp_path / "o")] if args[1] == "forms" else []))
    assert result.exit_code == 2 and message in result.output, result.output


def test_the_random_optimizer_gives_the_same_ledger_for_the_same_seed(tmp_path):
    config = CraftConfig(**{**TINY, "optimizer": "random", "rounds": 1})
    for name in ("a", "b"):
        craft(tmp_path / name, config)
    assert (tmp_path / "a/joint/ledger.json").read_bytes() == (tmp_path / "b/joint/ledger.json").read_bytes()
    assert (tmp_path / "a/joint/skill/reader.md").read_bytes() == (tmp_path / "b/joint/skill/reader.md").read_bytes()


def test_a_report_pools_only_seeds_of_one_experiment(tiny_run, tmp_path):
    out, _ = tiny_run
    with pytest.raises(RunError, match="named twice"):
        write_report([out, out])
    other = tmp_path / "seed1"
    craft(other, CraftConfig(**{**TINY, "seed": 1}))
    result, page = write_report([out, other])
    assert page.parent.name == "report-pooled" and result["cells"]["all/joint"]["items"] == 4
    assert result["cells"]["all/joint"]["tokens"] is None  # the simulated executor spends no tokens
    weak = tmp_path / "weak-seed1"
    craft(weak, CraftConfig(**{**TINY, "seed": 1, "executor": "simulated:skill,acuity=1.4"}))
    with pytest.raises(RunError, match="differs from .* in executor"):
        write_report([out, weak])
    assert CliRunner().invoke(app, ["verify", str(out)]).output.count("is a craft run") == 1


def test_asking_for_one_mode_on_a_folder_keeps_the_modes_it_ran(tiny_run, tmp_path):
    out = tmp_path / "two"
    craft(out, CraftConfig(**{**TINY, "modes": ["joint", "text"]}))
    again = craft(out, CraftConfig(**{**TINY, "modes": ["joint"]}))
    assert {"joint", "text"} <= set(again["variants"])


def test_misspelt_files_and_byte_order_marks_in_a_skill_folder(tmp_path):
    (tmp_path / "reader.md").write_text("Zoom into the evidence.")
    (tmp_path / "interface.json").write_bytes(b"\xef\xbb\xbf" + b'{"present": {"grid": 4}}')
    assert load_skill(tmp_path).get("present") == {"grid": 4}
    (tmp_path / "notes.txt").write_text("kept alone")
    assert load_skill(tmp_path).reader == "Zoom into the evidence."
    (tmp_path / "protocol.jsn").write_text("{}")
    with pytest.raises(RunError, match="did you mean protocol.json"):
        load_skill(tmp_path)


def test_craft_grammar_prints_the_schema():
    result = CliRunner().invoke(app, ["craft", "grammar"])
    assert result.exit_code == 0 and json.loads(result.output) == json.loads(json.dumps(interface.SCHEMA))


def test_a_skill_transfers_to_another_executor_as_a_matrix(tiny_run, tmp_path):
    out, _ = tiny_run
    other = tmp_path / "weak"
    craft(other, CraftConfig(**{**TINY, "executor": "simulated:skill,acuity=1.4"}))
    matrix = transfer([out, other])
    assert matrix["executors"] == ["simulated", "simulated:skill,acuity=1.4"]
    for source in matrix["executors"]:
        for target in matrix["executors"]:
            assert 0.0 <= matrix["cells"][source][target]["score"] <= 1.0
    assert json.loads((out / "transfer.json").read_text())["executors"] == matrix["executors"]
    bad = tmp_path / "bad"
    craft(bad, CraftConfig(**{**TINY, "seed": 5}))
    with pytest.raises(RunError, match="differ in their executor only"):
        transfer([out, bad])
    with pytest.raises(RunError, match="named twice"):
        transfer([out, other, out])


# -- an optimizer model behind a server -----------------------------------------------------------
def test_the_openai_optimizer_is_shown_the_skill_grammar_and_views_and_its_replies_are_judged(serve, tmp_path):
    good = json.dumps({"rationale": "values are too small", "select": {"crops": [{"rows": 2, "cols": 2}]}})
    server = serve(("ok", ["I cannot help."]), ("ok", ['{"colour": "red"}']), ("ok", [good]))
    config = CraftConfig(**{**TINY, "optimizer": f"openai:opt@{server.url}", "rounds": 1})
    craft(tmp_path / "run", config)
    ledger = json.loads((tmp_path / "run" / "joint" / "ledger.json").read_text())
    reasons = [e["reason"] for e in ledger["candidates"]]
    assert reasons[0].startswith("invalid: the optimizer's reply holds no JSON")
    assert reasons[1].startswith("invalid: the proposal names no skill field 'colour'")
    third = ledger["candidates"][2]
    assert third["move"] == "select" and third["fields"] == ["select"] and third["dR"] is not None, third["reason"]
    body = server.requests[0]["body"]
    assert body["temperature"] == 0.7 and body["model"] == "opt"
    parts = body["messages"][-1]["content"]
    text = parts[0]["text"]
    assert "JSON Schema" in text and '"select"' in text and "reader" in text and "Failure traces" in text
    assert any(p["type"] == "image_url" and p["image_url"]["url"].startswith("data:image/png;base64,")
               for p in parts)
    assert "Proposals already rejected (do not repeat them):\n(none)" in text
    from vicogym.evidence.optimizers import make_optimizer

    opt = make_optimizer(f"openai:opt@{server.url}")
    opt.rejected_texts = ["--- a/reader.md\n+++ b/reader.md\n+Describe each image."]
    shown = opt.content(BUILTIN["initial"], "reader", [])[0]["text"]
    assert "+Describe each image." in shown.split("Proposals already rejected")[1]
