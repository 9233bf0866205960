"""The rewriter's training data for LlamaFactory: multimodal ShareGPT records rebuilt from
a run, weighted by where each edit landed."""

import json
import math

import pytest
from typer.testing import CliRunner

from vicogym.cli import app
from vicogym.core import Edit
from vicogym.registry import make_arm
from vicogym.rewards import weight
from vicogym.runs.generate import GenerateConfig, generate


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    out = tmp_path_factory.mktemp("export") / "run"
    generate(GenerateConfig("vicogym/Chart-v0", n=8, out=str(out), keep="all", episodes_per_shard=8,
                            env_kwargs={"k": 4}), progress=False)
    return out


def test_records_follow_sharegpt_and_repeat_by_the_weight_of_the_edit(run, tmp_path):
    result = CliRunner().invoke(app, ["export", str(run), "--out", str(tmp_path / "lf")])
    assert result.exit_code == 0, result.output
    records = json.loads((tmp_path / "lf" / "rewriter.json").read_text())
    info = json.loads((tmp_path / "lf" / "dataset_info.json").read_text())
    entry = info["vicogym_rewriter"]
    assert entry["formatting"] == "sharegpt" and entry["file_name"] == "rewriter.json"
    assert entry["columns"] == {"messages": "messages", "images": "images"}
    assert records
    arm = make_arm("vicogym/Chart-v0")
    for record in records:
        user, assistant = record["messages"]
        assert (user["role"], assistant["role"]) == ("user", "assistant")
        assert user["content"].count("<image>") == 1 == len(record["images"])
        assert (tmp_path / "lf" / record["images"][0]).is_file()
        Edit.parse(assistant["content"])  # the edit parses
    # copies: floor(5 w(p)) for every transition of the run, each transition once
    from vicogym.runs.verify import iter_rows

    expected, seen = 0, set()
    for row in iter_rows(run):
        provenance = json.loads(row["provenance"])
        for entry in json.loads(row["edit_trace"]):
            key = (provenance["index"], entry["turn"])
            if key not in seen:
                seen.add(key)
                expected += math.floor(5 * weight(entry["pass_rate"], arm.config.reward_config()))
    assert len(records) == expected


def test_an_unknown_format_and_a_missing_run_are_named(tmp_path):
    result = CliRunner().invoke(app, ["export", str(tmp_path), "--out", str(tmp_path / "x"), "--format", "alpaca"])
    assert result.exit_code != 0 and "expected --format in" in result.output
    result = CliRunner().invoke(app, ["export", str(tmp_path / "none"), "--out", str(tmp_path / "x")])
    assert result.exit_code != 0
    assert "none does not exist; name the folder a `vicogym generate` --out wrote" in result.output


def test_preference_pairs_set_a_sweet_edit_against_an_off_zone_or_rejected_one(run, tmp_path):
    result = CliRunner().invoke(app, ["export", str(run), "--out", str(tmp_path / "lf"), "--pairs"])
    assert result.exit_code == 0, result.output
    pairs = json.loads((tmp_path / "lf" / "rewriter_pairs.json").read_text())
    info = json.loads((tmp_path / "lf" / "dataset_info.json").read_text())["vicogym_rewriter_pairs"]
    assert info["ranking"] is True and set(info["columns"]) == {"messages", "chosen", "rejected", "images"}
    assert pairs, "some sweet-zone edit found an off-zone counterpart"
    for pair in pairs:
        assert [m["role"] for m in pair["messages"]] == ["user"] and pair["chosen"]["role"] == "assistant"
        assert pair["chosen"]["content"] != pair["rejected"]["content"]
        assert pair["messages"][0]["content"].count("<image>") == 1 == len(pair["images"])
        Edit.parse(pair["rejected"]["content"])


def test_an_export_of_a_simulated_actors_pass_rates_warns_and_records_the_stand_in(run, tmp_path):
    """The edits' weights and which are kept follow the actor's pass rates: from the
    simulated actor, the export says so on stderr and in every dataset_info.json entry; from
    a model, it says nothing of the kind."""
    import shutil

    result = CliRunner().invoke(app, ["export", str(run), "--out", str(tmp_path / "lf"), "--pairs"])
    assert result.exit_code == 0, result.output
    said = " ".join(result.stderr.split())
    assert said.startswith("warning: the edits' pass rates") and "came from the simulated actor (a stand-in" in said
    assert "--actor openai:MODEL@URL" in said and "recorded as stand_in in" in said
    info = json.loads((tmp_path / "lf" / "dataset_info.json").read_text())
    assert set(info) == {"vicogym_rewriter", "vicogym_rewriter_pairs"}
    for entry in info.values():
        assert entry["stand_in"]["actor"] == "simulated" and "simulated actor" in entry["stand_in"]["note"]

    copy = tmp_path / "model-run"
    shutil.copytree(run, copy)
    manifest = json.loads((copy / "manifest.json").read_text())
    manifest["env"]["env_config"]["actor"] = "openai:qwen2.5-vl@http://localhost:8000/v1"
    (copy / "manifest.json").write_text(json.dumps(manifest))
    result = CliRunner().invoke(app, ["export", str(copy), "--out", str(tmp_path / "model-lf")])
    assert result.exit_code == 0, result.output
    assert result.stderr == "" and "warning" not in result.output
    info = json.loads((tmp_path / "model-lf" / "dataset_info.json").read_text())
    assert "stand_in" not in info["vicogym_rewriter"]
