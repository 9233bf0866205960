import json

import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from vicogym.cli import app
from vicogym.pipeline import GenerateConfig, generate, verify
from vicogym.renderers.chart import decode_png

runner = CliRunner()


def _rows(folder):
    return [row for path in sorted(folder.glob("part-*.parquet")) for row in pq.read_table(path).to_pylist()]


def _bytes(folder):
    return [p.read_bytes() for p in sorted(folder.glob("part-*.parquet"))]


@pytest.fixture(scope="module")
def small_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("gen")
    manifest = generate(GenerateConfig(n=10, out=str(out), k=4, seed=7, episodes_per_shard=4, max_turns=2), progress=False)
    return out, manifest


def test_generate_writes_rows_verl_fields_and_manifest(small_run):
    out, manifest = small_run
    rows = _rows(out)
    assert len(rows) == 10 == manifest["counts"]["samples"]
    assert len({r["id"] for r in rows}) == 10
    row = rows[0]
    for key in ("id", "env_id", "source_id", "image", "question", "answer", "label_rule", "structure", "edit_trace",
                "pass_rate", "pass_rate_before", "reward", "data_source", "prompt", "images", "ability",
                "reward_model", "extra_info"):
        assert key in row
    assert row["prompt"][0]["role"] == "user" and row["prompt"][0]["content"].startswith("<image>")
    assert row["images"][0]["bytes"] == row["image"]
    assert row["reward_model"] == {"style": "rule", "ground_truth": row["answer"]}
    assert decode_png(row["image"]).shape[2] == 3
    assert json.loads(row["edit_trace"])
    m = json.loads((out / "manifest.json").read_text())
    assert m["package_version"] and m["env"]["id"] == "vicogym/Chart-v0" and m["env"]["version"] == 0
    assert sum(m["pass_rate_histogram"]["counts"]) == 10
    assert m["counts"]["steps"] == m["counts"]["valid_steps"] + m["counts"]["rejected_steps"]


def test_verify_passes_and_catches_tampering(small_run, tmp_path):
    out, _ = small_run
    assert verify(out) == (10, [])
    import shutil

    bad = tmp_path / "bad"
    shutil.copytree(out, bad)
    path = sorted(bad.glob("part-*.parquet"))[0]
    table = pq.read_table(path)
    rows = table.to_pylist()
    rows[1]["answer"] = "definitely wrong"
    rows[1]["reward_model"]["ground_truth"] = "definitely wrong"
    import pyarrow as pa

    rows[2]["question"] = rows[2]["question"] + " Round to one decimal."
    pq.write_table(pa.Table.from_pylist(rows, schema=table.schema), path)
    n, problems = verify(bad)
    assert n == 10 and [p[0] for p in problems] == [rows[1]["id"], rows[2]["id"]]
    assert "does not fit its label rule: the program asks" in problems[1][1]
    result = runner.invoke(app, ["verify", str(bad)])
    assert result.exit_code == 1 and rows[1]["id"] in result.output


def test_same_seed_same_bytes_and_resume_after_a_crash(small_run, tmp_path):
    out, _ = small_run
    again = tmp_path / "again"
    generate(GenerateConfig(n=10, out=str(again), k=4, seed=7, episodes_per_shard=4, max_turns=2), progress=False)
    assert _bytes(again) == _bytes(out)
    # a crash: the last shard is lost and a temporary file is left behind
    shards = sorted(again.glob("part-*.parquet"))
    shards[-1].unlink()
    (again / "part-00099.tmp").write_bytes(b"partial")
    generate(GenerateConfig(n=10, out=str(again), k=4, seed=7, episodes_per_shard=4, max_turns=2), progress=False)
    assert _bytes(again) == _bytes(out)
    assert not list(again.glob("*.tmp"))


def test_a_run_folder_refuses_other_settings(small_run):
    out, _ = small_run
    with pytest.raises(ValueError, match="holds a run with other settings"):
        generate(GenerateConfig(n=10, out=str(out), k=4, seed=8, episodes_per_shard=4, max_turns=2), progress=False)


@pytest.mark.slow
def test_workers_do_not_change_the_output(small_run, tmp_path):
    out, _ = small_run
    parallel = tmp_path / "parallel"
    generate(GenerateConfig(n=10, out=str(parallel), k=4, seed=7, episodes_per_shard=4, max_turns=2, workers=2),
             progress=False)
    assert _bytes(parallel) == _bytes(out)


def test_keep_policies(tmp_path):
    rows_all = tmp_path / "all"
    generate(GenerateConfig(n=12, out=str(rows_all), k=4, seed=1, keep="all", episodes_per_shard=4, max_turns=3), progress=False)
    rows = _rows(rows_all)
    assert len(rows) == 12 and len({r["extra_info"]["index"] for r in rows}) < 12
    sweet = tmp_path / "sweet"
    generate(GenerateConfig(n=4, out=str(sweet), k=4, seed=1, keep="sweet", episodes_per_shard=4, max_turns=3), progress=False)
    assert all(0.35 <= r["pass_rate"] <= 0.65 for r in _rows(sweet))


def test_chartqa_source_generation_verifies(chartqa, tmp_path):
    out = tmp_path / "chartqa"
    result = runner.invoke(app, ["generate", "vicogym/Chart-v0", "--n", "6", "--out", str(out), "--k", "4",
                                 "--source", str(chartqa), "--no-progress", "--episodes-per-shard", "4"])
    assert result.exit_code == 0, result.output
    rows = _rows(out)
    assert {r["label_rule"] for r in rows} <= {"cell", "invariant"}
    assert all(r["source_id"].split("#")[0].endswith(".png") for r in rows)
    assert runner.invoke(app, ["verify", str(out)]).exit_code == 0


def test_cli_lists_envs_and_reports_bad_input(tmp_path):
    result = runner.invoke(app, ["envs"])
    assert result.exit_code == 0 and "vicogym/Chart-v0" in result.output
    result = runner.invoke(app, ["generate", "vicogym/Chrt-v0", "--out", str(tmp_path / "x")])
    assert result.exit_code == 2 and "did you mean 'vicogym/Chart-v0'" in result.output
    result = runner.invoke(app, ["generate", "--keep", "best", "--out", str(tmp_path / "y")])
    assert result.exit_code == 2 and "expected keep in ('final', 'all', 'sweet'), got 'best'" in result.output
    result = runner.invoke(app, ["verify", str(tmp_path / "empty")])
    assert result.exit_code == 2 and "no part-*.parquet shards" in result.output
