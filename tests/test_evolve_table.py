"""The round table of `vicogym evolve` (the VICO paper's Tables 17, 18 and Fig. 3b): each
value derived again from the rounds' rows and from separate evaluations, kills between and
within stages resumed without scoring a row twice, the printed table and the report's plots."""

import json
import sys
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from vicogym.cli import app
from vicogym.runs.evaluate import EvalConfig, evaluate, rows_path
from vicogym.runs.evolve import EvolveConfig, evolve
from vicogym.runs.generate import GenerateConfig, generate
from vicogym.runs.verify import iter_rows

PY = sys.executable
STRONG = {"name": "simulated", "skill": 6.0}
WEAK = {"name": "simulated", "skill": -3.0}


def _trainer():
    """A training command that names a stronger simulated actor for the next round: skill 2.5 + round."""
    script = ("import json, sys; r, out = sys.argv[1:3]; "
              "open(out, 'w').write(json.dumps({'name': 'simulated', 'skill': 2.5 + int(r)}))")
    return f"{PY} -c \"{script}\" {{round}} {{next_actor_file}}"


def _base(out, **settings):
    return dict(env_id="vicogym/Chart-v0", n=4, out=str(out), episodes_per_shard=4, env_kwargs={"k": 4},
                rewriter="search:4", heldout_n=3, **settings)


@pytest.fixture(scope="module")
def evolved(tmp_path_factory):
    folder = tmp_path_factory.mktemp("table") / "evo"
    state = evolve(EvolveConfig(rounds=2, train_actor=_trainer(), strong_actor=STRONG, weak_actor=WEAK,
                                **_base(folder)), progress=False, on_round=lambda *a: None, on_note=lambda *a: None)
    return folder, state


def _scores(summary):
    return {json.loads(line)["id"]: json.loads(line)["score"]
            for line in rows_path(Path(summary["out"])).read_text().splitlines()}


def test_each_value_is_derived_again_from_the_rows_and_separate_evaluations(evolved, tmp_path):
    from vicogym.arm import payload_dict
    from vicogym.runs.verify import read_manifest, run_arm

    folder, state = evolved
    assert [e["stages"] for e in state["rounds"]] == [["generated", "exported", "probed", "trained_actor",
                                                        "evaluated"]] * 2
    for entry in state["rounds"]:
        r, stats = entry["round"], entry["stats"]
        run = folder / f"round-{r:03d}"
        rows = list(iter_rows(run))
        # the strong and the weak actor: a separate evaluation of each side gives the same numbers
        for name, spec in (("strong", STRONG), ("weak", WEAK)):
            after = _scores(evaluate(EvalConfig(str(run), spec, k=4, out=str(tmp_path / f"{r}{name}a.json"))))
            before = _scores(evaluate(EvalConfig(str(run), spec, k=4, seed=1, of="seed",
                                                 out=str(tmp_path / f"{r}{name}b.json"))))
            ids = sorted(after)
            assert ids == sorted(row["id"] for row in rows) == sorted(before)
            assert stats[name]["pass_rate_after"] == pytest.approx(np.mean([after[i] for i in ids]))
            assert stats[name]["pass_rate_before"] == pytest.approx(np.mean([before[i] for i in ids]))
            assert stats[name]["editing_intensity"] == pytest.approx(np.mean([abs(before[i] - after[i]) for i in ids]))
            assert stats[name]["actor"].endswith("(a stand-in, not a model)") and stats[name]["stand_in"]
        for side in ("before", "after"):  # the same samples asked of both: the strong actor passes more
            assert stats["strong"][f"pass_rate_{side}"] > stats["weak"][f"pass_rate_{side}"]
        # "before" is each row's seed: the seed structure relabelled, as the rewriter's export reads it
        arm = run_arm(run, read_manifest(run))
        seeds = {json.loads(line)["id"]: json.loads(line)["answer"]
                 for line in (run / "probes" / "strong-seed.rows.jsonl").read_text().splitlines()}
        for row in rows:
            seed = arm.decode(row["seed_structure"], payload_dict(row["seed_payloads"]))
            assert seeds[row["id"]] == arm.relabel(seed, json.loads(row["label"]))
        arm.close()
        # lengths: the edits each turn once (canonical JSON), the answers the rows keep
        edits = {(json.loads(row["provenance"])["index"], t["turn"]): json.dumps(t["edit"], sort_keys=True)
                 for row in rows for t in json.loads(row["edit_trace"])}
        assert stats["rewriter_instruction_chars"] == pytest.approx(np.mean([len(e) for e in edits.values()]))
        assert stats["rewriter_instruction_tokens"] == pytest.approx(np.mean([len(e.split()) for e in edits.values()]))
        answers = [a for row in rows for a in row["actor_answers"]]
        assert stats["actor_answer_chars"] == pytest.approx(np.mean([len(a) for a in answers]))
        # held-out accuracy: the round's actor after training, as `vicogym eval` scores it on OUT/heldout
        trained = {"name": "simulated", "skill": 2.5 + r}
        assert stats["heldout"]["identity"] == trained
        out = tmp_path / f"heldout-{r}.json"
        result = CliRunner().invoke(app, ["eval", str(folder / "heldout"), "--actor", json.dumps(trained),
                                          "--out", str(out), "--no-progress"])
        assert result.exit_code == 0, result.output
        separate = json.loads(out.read_text())
        assert stats["heldout"]["accuracy"] == separate["all"]["accuracy"] and stats["heldout"]["rows"] == 3
        responses = [x for line in rows_path(out).read_text().splitlines() for x in json.loads(line)["responses"]]
        assert stats["heldout"]["response_chars"] == pytest.approx(np.mean([len(x) for x in responses]))
    assert state["heldout"]["made"] == "generated" and state["heldout"]["n"] == 3
    base = evaluate(EvalConfig(str(folder / "heldout"), "simulated", out=str(tmp_path / "base.json")))
    assert state["heldout"]["base"]["accuracy"] == base["all"]["accuracy"]  # the first actor, before any training
    assert state["heldout"]["base"]["identity"] == {"name": "simulated"}
    manifest = json.loads((folder / "heldout" / "manifest.json").read_text())
    assert manifest["config"]["seed"] == 10_000 and manifest["counts"]["samples"] == 3  # a seed of its own


def test_kills_within_and_between_stages_resume_without_scoring_a_row_twice(tmp_path, monkeypatch):
    """A kill in the middle of the probes, then one in the held-out evaluation: each rerun
    asks only the rows not yet scored, and the round table is the one an unbroken run makes."""
    from vicogym.runs import evaluate as evaluation

    calls = []
    score_row = evaluation._Evaluation._score_row

    def counted(self, row):
        calls.append((str(self.out), row["id"]))
        if len(calls) == kill["at"]:
            raise KeyboardInterrupt
        return score_row(self, row)

    monkeypatch.setattr(evaluation._Evaluation, "_score_row", counted)
    settings = dict(rounds=1, train_actor=_trainer(), strong_actor=STRONG, weak_actor=WEAK)
    kill = {}
    # 3 held-out rows for the first actor, then 16 probes (the strong and weak actors, 4 rows before and after),
    # then 3 held-out rows for the trained actor; kill at 6: in the probes; at 22: in the trained actor's held-out rows
    for kill["at"] in (6, 22):
        with pytest.raises(KeyboardInterrupt):
            evolve(EvolveConfig(**settings, **_base(tmp_path / "evo")), progress=False, on_round=lambda *a: None,
                   on_note=lambda *a: None)
    stages = json.loads((tmp_path / "evo" / "evolve.json").read_text())["rounds"][0]["stages"]
    assert stages == ["generated", "exported", "probed", "trained_actor"]
    kill["at"] = None
    state = evolve(EvolveConfig(**settings, **_base(tmp_path / "evo")), progress=False, on_round=lambda *a: None,
                   on_note=lambda *a: None)
    scored = [c for i, c in enumerate(calls) if i not in (5, 21)]  # the killed calls scored nothing
    assert len(calls) == 3 + 16 + 3 + 2 and len(set(scored)) == len(scored) == 3 + 16 + 3
    assert "heldout-base" in calls[0][0] and "probes" in calls[5][0] and "round-000/heldout" in calls[21][0]
    calls.clear()
    again = evolve(EvolveConfig(**settings, **_base(tmp_path / "evo")), progress=False, on_round=lambda *a: None,
                   on_note=lambda *a: None)
    assert calls == [] and again["rounds"] == state["rounds"]  # all done: nothing asked again
    unbroken = evolve(EvolveConfig(**settings, **_base(tmp_path / "unbroken")), progress=False,
                      on_round=lambda *a: None, on_note=lambda *a: None)

    def table(s):
        return {k: v for k, v in s["rounds"][0]["stats"].items() if k != "heldout"} | \
            {"heldout": {k: v for k, v in s["rounds"][0]["stats"]["heldout"].items() if k != "eval"}}

    assert table(state) == table(unbroken)


def test_a_named_heldout_run_and_measures_turned_off(tmp_path):
    real = tmp_path / "real"
    generate(GenerateConfig("vicogym/Chart-v0", n=2, seed=7, out=str(real), episodes_per_shard=2,
                            env_kwargs={"k": 2}), progress=False)
    state = evolve(EvolveConfig(rounds=1, heldout=str(real), strong_actor=None, weak_actor=None,
                                **{**_base(tmp_path / "evo"), "heldout_n": None}),
                   progress=False, on_round=lambda *a: None, on_note=lambda *a: None)
    entry = state["rounds"][0]
    assert entry["stages"] == ["generated", "exported", "evaluated"] and "strong" not in entry["stats"]
    separate = evaluate(EvalConfig(str(real), "simulated", out=str(tmp_path / "x.json")))
    assert entry["stats"]["heldout"]["accuracy"] == separate["all"]["accuracy"] == state["heldout"]["base"]["accuracy"]
    assert state["heldout"]["made"] == "given" and not (tmp_path / "evo" / "heldout").exists()
    from vicogym.runs.report_page import write_report_page

    write_report_page(tmp_path / "evo", out=tmp_path / "report", limit=1)  # what was not measured is not drawn
    assert not (tmp_path / "report" / "round_actors.png").exists()
    assert all((tmp_path / "report" / name).is_file() for name in ("round_heldout.png", "round_lengths.png"))
    result = CliRunner().invoke(app, ["eval", str(real), "--actor", "simulated", "--of", "seeds"])
    assert result.exit_code != 0 and "expected --of as sample or seed" in result.output
    with pytest.raises(Exception, match="another held-out set"):
        evolve(EvolveConfig(rounds=1, heldout="generated", **{**_base(tmp_path / "evo"), "heldout_n": None}),
               progress=False, on_round=lambda *a: None, on_note=lambda *a: None)
    with pytest.raises(ValueError, match="expected heldout as generated, none or a generation run folder"):
        EvolveConfig(heldout=str(tmp_path / "nowhere"), out=str(tmp_path / "new"))
    with pytest.raises(ValueError, match="strong_actor: "):
        EvolveConfig(strong_actor={"name": "simulated", "skil": 3}, out=str(tmp_path / "new"))
    assert not (tmp_path / "new").exists()


def test_the_cli_prints_the_round_table_with_its_columns_and_stand_ins(tmp_path):
    runner = CliRunner()
    args = ["evolve", "--rounds", "1", "--n", "2", "--out", str(tmp_path / "e"), "--episodes-per-shard", "2",
            "--set", "k=2", "--heldout-n", "2", "--no-progress"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    table = result.output.split("round table", 1)[1]
    header = next(line for line in table.splitlines() if "round" in line).split()
    assert header == ["round", "hit", "p", "strong", "weak", "|Δp|", "edit", "answer", "held-out"]
    text = " ".join(table.split())
    for said in ("strong: the simulated actor (skill=2.2) (a stand-in, not a model)",
                 "weak: the simulated actor (skill=1.0) (a stand-in, not a model)",
                 "held-out: the simulated actor (a stand-in, not a model)", "editing intensity |p_before - p|"):
        assert said in text, result.output
    stats = json.loads((tmp_path / "e" / "evolve.json").read_text())["rounds"][0]["stats"]
    row = next(line for line in table.splitlines() if line.split()[:1] == ["0"]).split()
    assert row[4] == f"{stats['weak']['pass_rate_before']:.2f}→{stats['weak']['pass_rate_after']:.2f}"
    assert row[8] == f"{stats['heldout']['accuracy']:.3f}"
    base = json.loads((tmp_path / "e" / "evolve.json").read_text())["heldout"]["base"]
    assert next(line for line in table.splitlines() if line.split()[:1] == ["base"]).split() == \
        ["base"] + ["-"] * 7 + [f"{base['accuracy']:.3f}"]
    result = runner.invoke(app, args)  # all done: the table again, nothing run
    assert result.exit_code == 0 and "round table" in result.output and "nothing ran" in result.output
    result = runner.invoke(app, args[:5] + ["--out", str(tmp_path / "f"), "--strong-actor", "{oops"])
    assert result.exit_code != 0 and "--strong-actor" in result.output
    result = runner.invoke(app, args[:5] + ["--out", str(tmp_path / "g"), "--heldout", str(tmp_path / "none-here")])
    assert result.exit_code != 0 and "expected heldout as" in result.output


def test_the_report_plots_the_round_table(evolved, tmp_path, monkeypatch):
    from matplotlib.patches import Rectangle

    from vicogym.runs.plots import Plots
    from vicogym.runs.report_page import write_report_page

    seen, save = {}, Plots.save

    def saving(self, fig, name):
        seen[name] = [({line.get_label(): list(line.get_ydata()) for line in ax.get_lines()},
                       sum(isinstance(p, Rectangle) for p in ax.patches), ax.get_title()) for ax in fig.axes]
        save(self, fig, name)

    monkeypatch.setattr(Plots, "save", saving)
    folder, state = evolved
    write_report_page(folder, out=tmp_path / "report", limit=1)
    stats = [e["stats"] for e in state["rounds"]]
    (lines, _, title), = seen["round_actors.png"]
    assert lines == {f"{a} {side}": [s[a][f"pass_rate_{side}"] for s in stats] for a in ("strong", "weak")
                     for side in ("before", "after")}
    assert "strong: the simulated actor (skill=6.0) (a stand-in, not a model)" in title
    (lines, _, title), = seen["round_heldout.png"]
    base = state["heldout"]["base"]["accuracy"]
    assert lines == {"held-out accuracy": [base] + [s["heldout"]["accuracy"] for s in stats]}
    assert "skill=2.5" in title and "skill=3.5" in title
    (lines, _, _), = seen["round_lengths.png"]
    assert lines["rewriter edit instruction"] == [s["rewriter_instruction_chars"] for s in stats]
    assert lines["held-out responses"] == [s["heldout"]["response_chars"] for s in stats]
    for name in ("round_actors.png", "round_heldout.png", "round_lengths.png"):
        assert (tmp_path / "report" / name).stat().st_size > 5000
    seen.clear()
    write_report_page(folder / "round-000", out=tmp_path / "one")  # a run, not an evolve folder: no round table
    assert "round_actors.png" not in seen


def test_a_run_from_before_the_round_table_resumes_and_gets_one(tmp_path):
    """A folder whose rounds were exported with fewer statistics (no strong or weak actor, the
    edit length named rewriter_response_chars, no held-out set) resumes: the missing stages
    run and the table is printed."""
    args = ["evolve", "--rounds", "1", "--n", "2", "--out", str(tmp_path / "e"), "--episodes-per-shard", "2",
            "--set", "k=2", "--heldout-n", "2", "--no-progress"]
    result = CliRunner().invoke(app, args + ["--strong-actor", "none", "--weak-actor", "none", "--heldout", "none"])
    assert result.exit_code == 0, result.output
    path = tmp_path / "e" / "evolve.json"
    state = json.loads(path.read_text())
    stats = state["rounds"][0]["stats"]
    stats["rewriter_response_chars"] = stats.pop("rewriter_instruction_chars")
    for key in ("rewriter_instruction_tokens", "actor_answer_chars", "actor_answer_words"):
        stats.pop(key)
    path.write_text(json.dumps(state))
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    entry = json.loads(path.read_text())["rounds"][0]
    assert entry["stages"] == ["generated", "exported", "probed", "evaluated"] and "strong: before -> after" in \
        result.output and "round table" in result.output


def test_round_table_titles_fit_their_figures_with_long_model_paths(tmp_path, monkeypatch):
    """Checkpoints named by long paths (transformers:/.../round-NNN/actor-model) are wrapped
    into the title, which stays inside its figure."""
    from vicogym.runs.plots import Plots
    from vicogym.runs.report_page import _round_table_plots

    model = "transformers:" + "/very/long/folder/of/checkpoints" * 3
    rounds = [{"round": r, "stats": {"strong": {"actor": f"{model}/strong", "pass_rate_before": 0.9,
                                                "pass_rate_after": 0.7},
                                     "weak": {"actor": f"{model}/weak", "pass_rate_before": 0.5,
                                              "pass_rate_after": 0.4},
                                     "heldout": {"actor": f"{model}/round-{r:03d}/actor-model",
                                                 "accuracy": 0.5 + r / 10,
                                                 "response_chars": 3.0},
                                     "rewriter_instruction_chars": 40.0, "actor_answer_chars": 2.0}}
              for r in range(4)]
    state = {"rounds": rounds, "heldout": {"base": {"actor": f"{model}/base", "accuracy": 0.4}}}
    (tmp_path / "evolve.json").write_text(json.dumps(state), encoding="utf-8")
    spans, save = {}, Plots.save

    def saving(self, fig, name):
        fig.tight_layout()
        box = fig.axes[0].title.get_window_extent(fig.canvas.get_renderer())
        spans[name] = (box.x0, box.x1, box.y1, fig.bbox.width, fig.bbox.height, fig.axes[0].get_title())
        save(self, fig, name)

    monkeypatch.setattr(Plots, "save", saving)
    (tmp_path / "report").mkdir()
    _round_table_plots(tmp_path / "report", tmp_path, [f"round-{r:03d}" for r in range(4)])
    assert {"round_actors.png", "round_heldout.png"} <= set(spans)
    for name, (x0, x1, top, width, height, title) in spans.items():
        assert x0 >= 0 and x1 <= width and top <= height, f"{name}'s title runs off its figure: {title!r}"
    assert "round-003/actor-model" in spans["round_heldout.png"][-1].replace("\n", "")
