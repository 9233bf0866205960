"""What a new user of the command line meets: a run stopped with Ctrl-C and run again, a
setting given at its default, a list setting given as a word, a folder that is not there,
the real-data tests without their data."""

import dataclasses
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from vicogym.cli import app
from vicogym.registry import ENVIRONMENTS, env_class, env_kind, make_config
from vicogym.runs.generate import GenerateConfig, id_prefix
from vicogym.runs.verify import verify

runner = CliRunner()
REPO = Path(__file__).resolve().parents[1]
SMALL = ["--set", "k=4", "--set", "max_turns=2", "--episodes-per-shard", "2", "--no-progress"]


def _said(result) -> str:
    return " ".join(result.output.split())


def _ids(folder: Path) -> list[str]:
    return [row["id"] for path in sorted(folder.glob("part-*.parquet")) for row in pq.read_table(path).to_pylist()]


def test_ctrl_c_says_what_is_kept_and_the_same_command_finishes_the_run(tmp_path):
    out = tmp_path / "stopped"
    args = ["generate", "--n", "40", "--out", str(out), *SMALL]
    # a shell's background job starts with SIGINT ignored and Python keeps that: Ctrl-C as a terminal gives it
    child = subprocess.Popen([sys.executable, "-m", "vicogym.cli", *args], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, cwd=REPO,
                             preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        deadline = time.monotonic() + 120
        while not list(out.glob("part-*.parquet")) and child.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert child.poll() is None, "the run ended before a shard appeared"
        child.send_signal(signal.SIGINT)
        _, stderr = child.communicate(timeout=60)
    finally:
        child.kill()
    said = " ".join(stderr.split())
    assert child.returncode == 130, stderr
    assert f"stopped: {out} keeps" in said and "of 40 samples; run the same command again to resume it" in said
    kept = len(_ids(out))
    assert f"keeps {kept} of 40" in said
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    assert f"resumed: {kept} samples were on disk, wrote {40 - kept} more" in _said(result)
    ids = _ids(out)
    assert len(ids) == len(set(ids)) == 40
    assert verify(out).ok


def test_a_finished_run_run_again_says_so_and_a_larger_n_says_what_it_added(tmp_path):
    out = tmp_path / "done"
    first = runner.invoke(app, ["generate", "--n", "3", "--out", str(out), *SMALL])
    assert first.exit_code == 0 and "wrote 3 samples" in _said(first), first.output
    again = runner.invoke(app, ["generate", "--n", "3", "--out", str(out), *SMALL])
    assert again.exit_code == 0, again.output
    assert f"{out} already holds all 3 samples; nothing to do" in _said(again)
    assert "run summary" in again.output and "wrote" not in again.output
    more = runner.invoke(app, ["generate", "--n", "5", "--out", str(out), *SMALL])
    assert more.exit_code == 0, more.output
    # the last shard of the smaller run is made again, whole: it may hold a sample of the 3
    resumed = re.search(r"resumed: (\d+) samples were on disk, wrote (\d+) more", _said(more))
    assert resumed and 1 <= int(resumed[1]) <= 3 and int(resumed[1]) + int(resumed[2]) == 5, more.output


def _edit_envs() -> list[str]:
    return [env_id for env_id in sorted(ENVIRONMENTS) if env_id != "vicogym/Toy-v0" and env_kind(env_id) == "edit"]


@pytest.mark.parametrize("env_id", _edit_envs())
def test_every_setting_given_at_its_default_keeps_the_row_ids(env_id):
    plain = id_prefix(GenerateConfig(env_id=env_id).identity())
    defaults = make_config(env_id).to_dict()
    names = [f.name for f in dataclasses.fields(env_class(env_id).config_class)]
    assert set(names) == set(defaults)
    for name in names:
        given = GenerateConfig(env_id=env_id, env_kwargs={name: defaults[name]})
        assert id_prefix(given.identity()) == plain, name
    both = GenerateConfig(env_id=env_id, env_kwargs={"k": 8, "max_turns": 3, "probe": "fixed"})
    assert id_prefix(both.identity()) == plain
    assert id_prefix(GenerateConfig(env_id=env_id, env_kwargs={"k": 4}).identity()) != plain
    assert id_prefix(GenerateConfig(env_id=env_id, env_kwargs={"k": 4, "max_turns": 3}).identity()) == \
        id_prefix(GenerateConfig(env_id=env_id, env_kwargs={"k": 4}).identity())


def test_k_at_its_default_on_the_command_line_writes_the_same_rows(tmp_path):
    def run(name, *flags):
        result = runner.invoke(app, ["generate", "--n", "1", "--out", str(tmp_path / name), "--no-progress", *flags])
        assert result.exit_code == 0, result.output
        return _ids(tmp_path / name)

    plain = run("plain")
    assert run("k8", "--k", "8") == plain
    assert run("set", "--set", "k=8", "--set", "sweet_zone=[0.35, 0.65]", "--set", "templates=null") == plain
    assert run("k4", "--k", "4")[0].split("-s0-")[0] != plain[0].split("-s0-")[0]


@pytest.mark.parametrize(
    "env_id, setting, syntax",
    [
        ("vicogym/Chart-v0", "templates=lookup", "--set 'templates=[\"lookup\"]'"),
        ("vicogym/Chart-v0", "templates=lookup,compare", "--set 'templates=[\"lookup\", \"compare\"]'"),
        ("vicogym/Chart-v0", "sweet_zone=0.5", "--set 'sweet_zone=[0.35, 0.65]'"),
        ("vicogym/CLEVR-v0", "unasked=size", "--set 'unasked=[\"size\"]'"),
    ],
)
def test_a_list_setting_given_as_a_word_shows_the_list_syntax(tmp_path, env_id, setting, syntax):
    result = runner.invoke(app, ["generate", env_id, "--out", str(tmp_path / "o"), "--n", "1", "--no-progress",
                                 "--set", setting])
    name = setting.split("=")[0]
    assert result.exit_code == 2 and f"expected {name} as a JSON list, such as {syntax}" in _said(result), \
        result.output
    assert "Traceback" not in result.output and not (tmp_path / "o" / "run.json").exists()


def test_a_missing_folder_is_said_not_to_exist(tmp_path):
    missing = tmp_path / "nowhere"
    (tmp_path / "file").write_text("not a run")
    for args in (["verify", str(missing)], ["report", str(missing)], ["export", str(missing), "--out", str(tmp_path)],
                 ["craft", "report", str(missing)]):
        result = runner.invoke(app, args)
        assert result.exit_code == 2 and f"{missing} does not exist; name" in _said(result), (args, result.output)
    for args in (["verify", str(tmp_path / "file")], ["export", str(tmp_path / "file"), "--out", str(tmp_path)]):
        result = runner.invoke(app, args)
        assert result.exit_code == 2 and "file is a file, not a run folder; name" in _said(result), result.output
    empty = tmp_path / "empty"
    empty.mkdir()
    result = runner.invoke(app, ["export", str(empty), "--out", str(tmp_path / "x")])
    assert result.exit_code == 2 and "has no manifest.json; it holds no generation run" in _said(result)


def test_the_real_data_skip_points_to_the_readme_section_that_says_what_it_needs(tmp_path):
    from conftest import chartqa_missing

    message = chartqa_missing(tmp_path)
    assert str(tmp_path) in message and "VICOGYM_CHARTQA" in message and "README.md, section Tests" in message
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    section = readme.split("\n## Tests\n", 1)[1].split("\n## ", 1)[0]
    for needed in ("VICOGYM_CHARTQA", "../shared/data/chartqa", "qa.jsonl", "tables/", "VICOGYM_REQUIRE_DATA",
                   "skipped"):
        assert needed in section, needed
