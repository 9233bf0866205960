"""One entry point for ``vicogym verify`` and one for ``vicogym report``: a folder's kind is
read from what it holds and the folder goes to that kind's verifier or report; a folder of
no known kind gets one message that names the kinds and what the folder lacks."""

import json
import sqlite3

import pytest
from typer.testing import CliRunner

from vicogym import cli
from vicogym.errors import RunError
from vicogym.evidence import runs as evidence_runs
from vicogym.instruct import run_folder
from vicogym.runs import kinds, report_page
from vicogym.runs import verify as generation
from vicogym.runs.generate import GenerateConfig, generate
from vicogym.runs.kinds import Findings

runner = CliRunner()


def _folder(root, name, files):
    folder = root / name
    for path, text in files.items():
        (folder / path).parent.mkdir(parents=True, exist_ok=True)
        (folder / path).write_text(text)
    return folder


@pytest.fixture
def folders(tmp_path):
    """One folder of each kind, holding only what marks it."""
    evidence = {k: _folder(tmp_path, k, {"run.json": json.dumps({"kind": k}), "manifest.json": json.dumps({"kind": k})})
                for k in ("evidence-traces", "evidence-tasks")}
    synthesis = _folder(tmp_path, "synthesis", {"manifest.json": json.dumps({"env_id": "vicogym/Instruct-v0"}),
                                                "part-00000.parquet": ""})
    sqlite3.connect(synthesis / "memory.sqlite").close()
    return {
        **evidence,
        "synthesis": synthesis,
        "craft": _folder(tmp_path, "craft", {"craft.json": "{}"}),
        "generation": _folder(tmp_path, "generation", {"run.json": json.dumps({"env_id": "vicogym/Chart-v0"}),
                                                       "manifest.json": "{}"}),
        "unfinished": _folder(tmp_path, "unfinished", {"part-00000.parquet": ""}),
        "evolve": _folder(tmp_path, "evolve", {"round-000/manifest.json": "{}", "evolve.json": "{}"}),
    }


@pytest.fixture
def calls(monkeypatch):
    """Every kind's verifier and report replaced by one that records which was called."""
    seen = []

    def recorder(name, result):
        def call(folder, *args, **kwargs):
            seen.append((name, folder.name if hasattr(folder, "name") else folder, args, kwargs))
            return result
        return call

    monkeypatch.setattr(generation, "verify", recorder("generation", Findings(rows=1)))
    monkeypatch.setattr(run_folder, "verify_synthesis", recorder("synthesis", Findings(rows=2)))
    monkeypatch.setattr(evidence_runs, "verify_evidence", recorder("evidence", Findings(rows=3)))
    monkeypatch.setattr(report_page, "write_report_page", recorder("generation page", "page"))
    monkeypatch.setattr(run_folder, "write_report_page", recorder("synthesis page", "page"))
    monkeypatch.setattr(cli, "_craft_page", recorder("craft page", "page"))
    return seen


@pytest.mark.parametrize("name, verifier, rows", [
    ("generation", "generation", 1), ("unfinished", "generation", 1), ("synthesis", "synthesis", 2),
    ("evidence-traces", "evidence", 3), ("evidence-tasks", "evidence", 3)])
def test_each_kind_reaches_its_verifier(folders, calls, name, verifier, rows):
    findings = cli.verify_folder(folders[name], images=False, source="data", allow_unreplayed=True)
    assert [c[0] for c in calls] == [verifier] and findings.rows == rows
    expected = ({"images": False, "source": "data", "allow_unreplayed": True} if verifier == "generation"
                else {"images": False})
    assert calls[0][3] == expected  # each kind gets the options it knows


@pytest.mark.parametrize("name, report", [
    ("generation", "generation page"), ("evolve", "generation page"), ("synthesis", "synthesis page"),
    ("craft", "craft page")])
def test_each_kind_reaches_its_report(folders, calls, name, report, tmp_path):
    assert cli.report_folder(folders[name], tmp_path / "out", 7) == "page"
    assert calls == [(report, folders[name].name, (tmp_path / "out", 7), {})]


def test_the_command_line_goes_through_the_one_entry_point(folders, calls):
    result = runner.invoke(cli.app, ["verify", str(folders["synthesis"]), "--no-images"])
    assert result.exit_code == 0 and "all 2 rows verified" in result.output
    result = runner.invoke(cli.app, ["report", str(folders["craft"])])
    assert result.exit_code == 0 and "wrote page" in result.output
    assert [c[0] for c in calls] == ["synthesis", "craft page"]


def test_a_kind_without_a_verifier_or_a_report_says_what_to_do(folders, calls):
    result = runner.invoke(cli.app, ["verify", str(folders["craft"])])
    assert result.exit_code == 2 and result.output.count("is a craft run") == 1
    assert "running its `vicogym craft` command again" in result.output
    result = runner.invoke(cli.app, ["verify", str(folders["evolve"])])
    assert result.exit_code == 2 and "is an evolve run" in result.output
    assert f"`vicogym verify {folders['evolve']}/round-000`" in " ".join(result.output.split())
    for name in ("evidence-traces", "evidence-tasks"):
        result = runner.invoke(cli.app, ["report", str(folders[name])])
        assert result.exit_code == 2 and f"is an {name} run" in result.output
        assert "report pages are written for generation runs" in " ".join(result.output.split())
    assert calls == []


def _said(result):
    return " ".join(result.output.split())


@pytest.mark.parametrize("command", ["verify", "report"])
def test_a_folder_of_no_known_kind_gets_one_message(tmp_path, calls, command):
    empty = tmp_path / "empty"
    empty.mkdir()
    file = tmp_path / "a-file"
    file.write_text("x")
    unknown = _folder(tmp_path, "unknown", {"run.json": json.dumps({"kind": "elsewhere"})})
    cases = {empty: "holds no run (no craft.json, manifest.json, memory.sqlite, part-*.parquet, "
                    "round-*/manifest.json, run.json)",
             tmp_path / "missing": "does not exist", file: "is a file, not a run folder",
             unknown: "records kind 'elsewhere', which this vicogym does not know (it knows evidence-tasks, "
                      "evidence-traces)"}
    for folder, lacks in cases.items():
        result = runner.invoke(cli.app, [command, str(folder)])
        said = _said(result)
        assert result.exit_code == 2 and "Traceback" not in result.output, said
        assert said.count("error:") == 1 and f"{folder.name} {lacks}" in said, said
        if folder != unknown:
            for kind in cli.run_kinds():  # every kind named, with its command
                assert f"{kind.name} (`{kind.command}`" in said, said
    assert calls == []


def test_recognition_reads_the_recorded_kind_before_the_files(folders):
    table = cli.run_kinds()
    assert [kinds.recognise(folders[k], table).name for k in folders] == [
        "evidence-traces", "evidence-tasks", "synthesis", "craft", "generation", "generation", "evolve"]
    # an evidence run's run.json that cannot be read: its manifest's kind still names it
    (folders["evidence-traces"] / "run.json").write_text("{")
    assert kinds.recognise(folders["evidence-traces"], table).name == "evidence-traces"
    with pytest.raises(RunError, match="is a URL; only a local folder"):
        kinds.recognise("memory://run", [k for k in table if not k.urls])
    assert kinds.recognise("memory://run", table).name == "generation"


def test_a_real_run_verifies_through_the_entry_point_and_a_changed_one_does_not(tmp_path):
    out = tmp_path / "run"
    generate(GenerateConfig("vicogym/Chart-v0", n=2, out=str(out), episodes_per_shard=2, env_kwargs={"k": 4}),
             progress=False)
    findings = cli.verify_folder(out, images=False)
    assert findings.ok and findings.rows == 2 and findings.verdict(out) == "all 2 rows verified"
    shard = out / "part-00000.parquet"
    data = bytearray(shard.read_bytes())
    data[len(data) // 2] ^= 0xFF
    shard.write_bytes(bytes(data))
    findings = cli.verify_folder(out, images=False)
    assert not findings.ok and findings.verdict(out).startswith(f"{len(findings.problems)} problem")
    result = runner.invoke(cli.app, ["verify", str(out), "--no-images"])
    assert result.exit_code == 1 and "SHA-256 differs" in result.output
