"""Co-evolution rounds: per round a run, both trainers' data, statistics, the user's
training commands, the next round's model, and resumption where a kill left it."""

import json
import sys

import pytest
from typer.testing import CliRunner

from vicogym.cli import app
from vicogym.runs.evolve import EvolveConfig, evolve
from vicogym.runs.shards import file_sha256

PY = sys.executable


def _trainer(log):
    """A training command: logs its inputs and names a stronger actor for the next round."""
    script = ("import json, sys; log, files, out = sys.argv[1:4]; "
              "open(log, 'a').write(json.dumps({'files': open(files).read().split()}) + '\\n'); "
              "open(out, 'w').write(json.dumps({'name': 'simulated', 'skill': 3.5}))")
    return f"{PY} -c \"{script}\" {log} {{verl_files}} {{next_actor_file}}"


def test_rounds_export_train_switch_actor_and_resume(tmp_path):
    log = tmp_path / "trainer.log"
    base = dict(env_id="vicogym/Chart-v0", n=4, out=str(tmp_path / "evo"), episodes_per_shard=4,
                env_kwargs={"k": 4}, rewriter="search:4", train_actor=_trainer(log))
    first = evolve(EvolveConfig(rounds=1, **base), progress=False, on_round=lambda *a: None)
    shard = tmp_path / "evo" / "round-000" / "part-00000.parquet"
    digest = file_sha256(shard)
    state = evolve(EvolveConfig(rounds=2, **base), progress=False, on_round=lambda *a: None)  # one more round
    assert file_sha256(shard) == digest and len(log.read_text().splitlines()) == 2  # round 0 not redone
    r0, r1 = state["rounds"]
    assert r0["actor"] == "simulated" and r1["actor"] == {"name": "simulated", "skill": 3.5}
    manifest = json.loads((tmp_path / "evo" / "round-001" / "manifest.json").read_text())
    assert manifest["env"]["env_config"]["actor"] == {"name": "simulated", "skill": 3.5}
    assert manifest["config"]["rewriter"] == "search:4"
    for entry in (r0, r1):
        stats = entry["stats"]
        assert set(stats) >= {"sweet_zone_hit_rate", "pass_rate_before", "pass_rate_after", "editing_intensity",
                              "rejections", "rewriter_instruction_chars", "rewriter_instruction_tokens",
                              "actor_answer_chars", "strong", "weak", "heldout"}
        assert 0 <= stats["sweet_zone_hit_rate"] <= 1 and stats["samples"] == 4
        assert entry["stages"] == ["generated", "exported", "probed", "trained_actor", "evaluated"]
    logged = [json.loads(line) for line in log.read_text().splitlines()]
    assert all(f.endswith(".parquet") for f in logged[1]["files"]) and "round-001" in logged[1]["files"][0]
    assert first["rounds"][0]["stats"] == r0["stats"]


def test_a_failed_training_command_stops_the_run_and_a_fixed_one_resumes_there(tmp_path):
    base = dict(env_id="vicogym/Chart-v0", n=4, out=str(tmp_path / "evo"), episodes_per_shard=4, env_kwargs={"k": 2},
                rewriter="random", rounds=1)
    with pytest.raises(Exception, match="exited with 3"):
        evolve(EvolveConfig(train_actor=f"{PY} -c \"import sys; sys.exit(3)\"", **base), progress=False,
               on_round=lambda *a: None)
    state = json.loads((tmp_path / "evo" / "evolve.json").read_text())
    assert state["rounds"][0]["stages"] == ["generated", "exported", "probed"]
    digest = file_sha256(tmp_path / "evo" / "round-000" / "part-00000.parquet")
    state = evolve(EvolveConfig(train_actor=f"{PY} -c \"print('trained')\"", **base), progress=False,
                   on_round=lambda *a: None)  # the command fixed on the command line
    assert state["rounds"][0]["stages"] == ["generated", "exported", "probed", "trained_actor", "evaluated"]
    assert file_sha256(tmp_path / "evo" / "round-000" / "part-00000.parquet") == digest


def test_a_finished_round_that_lost_a_shard_is_made_whole_again(tmp_path):
    base = dict(env_id="vicogym/Chart-v0", n=4, out=str(tmp_path / "evo"), episodes_per_shard=2, env_kwargs={"k": 2},
                rewriter="random", rounds=1)
    evolve(EvolveConfig(**base), progress=False, on_round=lambda *a: None)
    shard = tmp_path / "evo" / "round-000" / "part-00000.parquet"
    digest = file_sha256(shard)
    shard.unlink()
    evolve(EvolveConfig(**base), progress=False, on_round=lambda *a: None)
    assert file_sha256(shard) == digest


@pytest.mark.parametrize("settings, message", [
    ({"train_actor": "echo {nope}"}, "names {nope}; known placeholders"),
    ({"actor": {"name": "simulated", "skil": 3.0}}, "takes the settings"),
    ({"rewriter": "search:100000"}, "expected rewriter in"),
])
def test_bad_settings_fail_before_anything_is_written(tmp_path, settings, message):
    with pytest.raises(ValueError, match=message):
        EvolveConfig(env_id="vicogym/Chart-v0", out=str(tmp_path / "evo"), **settings)
    assert not (tmp_path / "evo").exists()


def test_the_cli_runs_rounds_and_names_bad_settings(tmp_path):
    runner = CliRunner()
    result = runner.invoke(app, ["evolve", "--rounds", "1", "--n", "2", "--out", str(tmp_path / "e"),
                                 "--episodes-per-shard", "2", "--set", "k=2", "--no-progress"])
    assert result.exit_code == 0, result.output
    assert "sweet-zone hit rate" in result.output and (tmp_path / "e" / "round-000" / "verl_files.txt").is_file()
    result = runner.invoke(app, ["evolve", "--rounds", "0", "--out", str(tmp_path / "x")])
    assert result.exit_code != 0 and "expected rounds" in result.output
    result = runner.invoke(app, ["evolve", "--rewriter", "clever", "--out", str(tmp_path / "y")])
    assert result.exit_code != 0 and "expected rewriter in" in result.output


def test_each_rounds_table_names_the_actor_that_gave_its_pass_rates(tmp_path):
    result = CliRunner().invoke(app, ["evolve", "--rounds", "1", "--n", "2", "--out", str(tmp_path / "e"),
                                      "--episodes-per-shard", "2", "--set", "k=2", "--no-progress"])
    assert result.exit_code == 0, result.output
    rows = [" ".join(line.strip("│| ").split()) for line in result.output.splitlines() if "pass rates from" in line]
    assert len(rows) == 1 and "the simulated actor (a stand-in, not a model)" in rows[0], result.output
