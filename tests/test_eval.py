"""``vicogym eval``: a model scored on every row of a generation run, against the scripted
chat server of test_clients (its answers chosen per row by the test), with the simulated
actor, resumed after a stop, and refusing bad input with a message (exit code 2)."""

import json
import signal
import threading

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

from vicogym import policies
from vicogym.cli import app
from vicogym.clients import image_data_url
from vicogym.images import decode_png, row_png
from vicogym.runs.evaluate import EvalConfig, difficulty, evaluate, summarize
from vicogym.runs.generate import GenerateConfig, generate
from vicogym.runs.verify import iter_rows

runner = CliRunner()


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """A small Chart-v0 run (pass rates from the simulated actor, k=4)."""
    folder = tmp_path_factory.mktemp("eval") / "run"
    generate(GenerateConfig("vicogym/Chart-v0", n=8, seed=3, out=str(folder), episodes_per_shard=4,
                            env_kwargs={"k": 4}), progress=False)
    return folder


def _rows(folder):
    return sorted(iter_rows(folder), key=lambda r: r["id"])


def _scripted(rows, right):
    """A function of a request that answers row i's answer where ``right(i)``, a wrong one
    otherwise (the row found by its image and question)."""
    keys = {(image_data_url(decode_png(row_png(row))), row["question"]): i for i, row in enumerate(rows)}

    def answer(body):
        image, text = body["messages"][-1]["content"]
        i = next(i for (url, question), i in keys.items()
                 if url == image["image_url"]["url"] and text["text"].startswith(question))
        return [f"Reading the chart.\nAnswer: {rows[i]['answer'] if right(i) else 'no such thing'}"]

    return answer


def _expected(rows, right):
    """The accuracy per environment, family (a chart program's template) and difficulty
    (the run's pass rate: below 0.35, 0.35-0.65, above) the script gives."""
    groups = {"by_env": {}, "by_family": {}, "by_difficulty": {}}
    for i, row in enumerate(rows):
        p = row["pass_rate"]
        keys = {"by_env": row["env_id"], "by_family": json.loads(row["label"])["program"]["template"],
                "by_difficulty": "hard" if p < 0.35 else "easy" if p > 0.65 else "sweet"}
        for name, key in keys.items():
            groups[name].setdefault(key, []).append(1.0 if right(i) else 0.0)
    return {name: {key: float(np.mean(v)) for key, v in g.items()} for name, g in groups.items()}


def _accuracies(summary):
    return {name: {key: stats["accuracy"] for key, stats in summary[name].items()}
            for name in ("by_env", "by_family", "by_difficulty")}


def test_accuracy_per_env_family_and_difficulty_is_what_the_model_answered(run, serve, tmp_path):
    rows = _rows(run)
    right = lambda i: i % 3 != 0
    server = serve(("call", _scripted(rows, right)))
    out = tmp_path / "scripted.json"
    result = runner.invoke(app, ["eval", str(run), "--actor", f"openai:scripted@{server.url}", "--out", str(out),
                                 "--no-progress"])
    assert result.exit_code == 0, result.output
    # the table's cells wrap at the console's width; the line naming the file is never broken
    assert "family:" in result.output and "difficulty:" in result.output and f"wrote {out} (" in result.output
    assert not json.loads(out.read_text())["actor_stand_in"] and "openai:scripted@" in result.output
    summary = json.loads(out.read_text())
    assert summary["finished"] and summary["rows_scored"] == summary["rows_total"] == len(rows)
    assert summary["all"]["accuracy"] == pytest.approx(np.mean([right(i) for i in range(len(rows))]))
    expected = _expected(rows, right)
    for name, groups in _accuracies(summary).items():
        assert groups == pytest.approx(expected[name]), name
    assert len(expected["by_family"]) > 1 and len(server.requests) == len(rows)  # one request a row
    records = {r["id"]: r for r in map(json.loads, out.with_suffix(".rows.jsonl").read_text().splitlines())}
    for i, row in enumerate(rows):
        record = records[row["id"]]
        assert record["answer"] == row["answer"] and record["responses"][0].startswith("Reading the chart.")
        assert record["extracted"] == [row["answer"] if right(i) else "no such thing"]
        assert record["scores"] == [1.0 if right(i) else 0.0]


def test_k_answers_a_row_give_mean_accuracy_and_pass_at_k(run, serve, tmp_path):
    rows = _rows(run)
    # of each row's three answers, the first is right for even rows: accuracy 1/3 there, pass@3 1
    answer = _scripted(rows, lambda i: i % 2 == 0)
    server = serve(("call", lambda body: answer(body) + ["Answer: no such thing"] * 2))
    out = tmp_path / "k3.json"
    result = runner.invoke(app, ["eval", str(run), "--actor", f"openai:scripted@{server.url}", "--k", "3",
                                 "--out", str(out), "--no-progress"])
    assert result.exit_code == 0, result.output
    summary = json.loads(out.read_text())
    even = sum(i % 2 == 0 for i in range(len(rows)))
    assert summary["all"]["accuracy"] == pytest.approx(even / (3 * len(rows)))
    assert summary["all"]["pass@3"] == pytest.approx(even / len(rows))
    assert summary["all"]["answers"] == 3 * len(rows) and "pass@3" in result.output


def test_a_rerun_asks_only_the_rows_not_yet_scored(run, serve, tmp_path):
    rows = _rows(run)
    server = serve(("call", _scripted(rows, lambda i: True)))
    out = tmp_path / "resumed.json"
    args = ["eval", str(run), "--actor", f"openai:scripted@{server.url}", "--out", str(out), "--no-progress"]
    assert runner.invoke(app, args).exit_code == 0
    results = out.with_suffix(".rows.jsonl")
    lines = results.read_text().splitlines(keepends=True)
    results.write_text("".join(lines[:3]) + lines[3][:25])  # stopped while writing the fourth row
    asked = len(server.requests)
    assert runner.invoke(app, args).exit_code == 0
    assert len(server.requests) - asked == len(rows) - 3
    ids = [json.loads(line)["id"] for line in results.read_text().splitlines()]
    assert sorted(ids) == sorted(r["id"] for r in rows)  # each row once, the cut line dropped
    # the same actor given as a JSON object: nothing left to ask
    spec = json.dumps({"name": "openai", "model": "scripted", "base_url": server.url})
    result = runner.invoke(app, ["eval", str(run), "--actor", spec, "--out", str(out), "--no-progress"])
    assert result.exit_code == 0 and len(server.requests) - asked == len(rows) - 3
    assert json.loads(out.read_text())["all"]["accuracy"] == 1.0


def test_ctrl_c_keeps_the_rows_scored_and_the_same_command_goes_on(run, tmp_path, monkeypatch, request):
    # Ctrl-C as a terminal gives it, also where the test process started with SIGINT ignored (a background job)
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    request.addfinalizer(lambda: signal.signal(signal.SIGINT, previous))
    calls = []

    class Stopping:
        """Answers right; Ctrl-C is pressed while it answers its third row."""

        def answer(self, image, question, k, *, rng, context):
            calls.append(question)
            if len(calls) == 3:
                signal.pthread_kill(threading.main_thread().ident, signal.SIGINT)
            return [context["answer"]] * k

    monkeypatch.setitem(policies.ACTORS, "stopping", Stopping)
    out = tmp_path / "stopped.json"
    result = runner.invoke(app, ["eval", str(run), "--actor", "stopping", "--out", str(out), "--no-progress"])
    assert result.exit_code == 130 and "run the same command again" in result.output
    summary = json.loads(out.read_text())
    kept = len(out.with_suffix(".rows.jsonl").read_text().splitlines())
    assert not summary["finished"] and summary["rows_scored"] == kept and 2 <= kept <= 3
    before = len(calls)
    assert runner.invoke(app, ["eval", str(run), "--actor", "stopping", "--out", str(out)]).exit_code == 0
    total = len(_rows(run))
    summary = json.loads(out.read_text())
    assert summary["finished"] and summary["rows_scored"] == total and summary["all"]["accuracy"] == 1.0
    assert len(calls) - before == total - kept  # only the rows not kept are asked again


def test_the_simulated_actor_is_scored_by_the_row_scorer(run):
    rows = {r["id"]: r for r in _rows(run)}
    out = run.parent / "simulated.json"
    summary = evaluate(EvalConfig(str(run), "simulated", k=3, out=str(out)))
    records = [json.loads(line) for line in out.with_suffix(".rows.jsonl").read_text().splitlines()]
    assert sorted(r["id"] for r in records) == sorted(rows)
    assert summary["all"]["accuracy"] == pytest.approx(np.mean([s for r in records for s in r["scores"]]))
    assert 0.0 < summary["all"]["accuracy"] < 1.0 and summary["difficulty"]["actor"] == "simulated"
    assert summary["actor_stand_in"] and summary["difficulty"]["actor_stand_in"]  # a stand-in is named so
    for record in records:
        assert record["scores"] == [1.0 if a == rows[record["id"]]["answer"] else 0.0 for a in record["extracted"]]
    again = run.parent / "again.json"
    evaluate(EvalConfig(str(run), "simulated", k=3, out=str(again)))
    assert json.loads(again.read_text())["all"] == summary["all"]  # the seed fixes the answers
    # the run folder is the default place
    result = runner.invoke(app, ["eval", str(run), "--actor", "simulated", "--no-progress"])
    assert result.exit_code == 0 and (run / "eval.json").is_file() and (run / "eval.rows.jsonl").is_file()
    said = " ".join(result.output.split())
    assert "simulated (a stand-in, not a model) on" in said, result.output


def test_bad_input_is_named_with_exit_code_2(run, tmp_path):
    (tmp_path / "empty").mkdir()
    synthesis = tmp_path / "synthesis"
    synthesis.mkdir()
    (synthesis / "memory.sqlite").write_bytes(b"")
    other = tmp_path / "taken.json"
    assert runner.invoke(app, ["eval", str(run), "--actor", "simulated", "--out", str(other)]).exit_code == 0
    damaged = tmp_path / "damaged.json"
    damaged.write_text(other.read_text())
    lines = other.with_suffix(".rows.jsonl").read_text().splitlines(keepends=True)
    damaged.with_suffix(".rows.jsonl").write_text("".join(lines[:1] + ['{"id": 3}\n'] + lines[2:]))
    closed = json.dumps({"name": "openai", "model": "m", "base_url": "http://127.0.0.1:9/v1", "max_retries": 0})
    cases = [
        (["eval", str(tmp_path / "missing"), "--actor", "simulated"], "does not exist"),
        (["eval", str(tmp_path / "empty"), "--actor", "simulated"], "holds no run"),
        (["eval", str(synthesis), "--actor", "simulated"], "is a synthesis run"),
        (["eval", str(run), "--actor", "gpt4"], "expected actor name"),
        (["eval", str(run), "--actor", "openai:gpt4"], "openai:MODEL@URL"),
        (["eval", str(run), "--actor", '{"name": "simulated",'], "is not JSON"),
        (["eval", str(run), "--actor", closed, "--out", str(tmp_path / "closed.json")], "did not answer"),
        (["eval", str(run), "--actor", "simulated", "--k", "2", "--out", str(other)], "give --out PATH"),
        (["eval", str(run), "--actor", "simulated", "--out", str(tmp_path)], "name a JSON file"),
        (["eval", str(run), "--actor", "simulated", "--out", str(damaged)], "line 2 is no row result"),
    ]
    for args, message in cases:
        result = runner.invoke(app, args + ["--no-progress"])
        assert result.exit_code == 2, (args, result.output)
        assert message in " ".join(result.output.split()), (args, result.output)
        assert "Traceback" not in result.output


@given(st.lists(st.tuples(st.sampled_from(["a", "b"]), st.sampled_from(["f", "g", "h"]),
                          st.floats(0.0, 1.0), st.lists(st.sampled_from([0.0, 0.5, 1.0]), min_size=2, max_size=2)),
                min_size=1, max_size=30))
def test_the_groups_add_up_to_all_rows(rows):
    records = [{"env_id": e, "family": f, "difficulty": difficulty(p, (0.35, 0.65)), "scores": s}
               for e, f, p, s in rows]
    summary = summarize(records, k=2)
    for name in ("by_env", "by_family", "by_difficulty"):
        groups = summary[name].values()
        assert sum(g["rows"] for g in groups) == len(records)
        assert sum(g["accuracy"] * g["rows"] for g in groups) / len(records) == pytest.approx(
            summary["all"]["accuracy"])
        assert sum(g["pass@2"] * g["rows"] for g in groups) / len(records) == pytest.approx(summary["all"]["pass@2"])
    assert set(summary["by_difficulty"]) <= {"hard", "sweet", "easy"}
    assert list(summary["by_difficulty"]) == [d for d in ("hard", "sweet", "easy") if d in summary["by_difficulty"]]


def test_difficulty_bins_are_the_run_sweet_zone():
    assert [difficulty(p, (0.35, 0.65)) for p in (0.0, 0.34, 0.35, 0.5, 0.65, 0.66, 1.0)] == [
        "hard", "hard", "sweet", "sweet", "sweet", "easy", "easy"]
    assert difficulty(None, (0.35, 0.65)) == difficulty(float("nan"), (0.35, 0.65)) == "unknown"
