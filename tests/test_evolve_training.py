"""The paper's loop on CPU: ``vicogym evolve`` with its built-in training backends.

``python -m vicogym.trainers.grpo_actor`` trains the actor with TRL's GRPO on a round's
rows into a checkpoint (the same seed and inputs: the same bytes; a finished one is not
trained again); evolve expands ``trl-grpo`` and ``trl-rwr`` to the trainers' commands and
refuses a model they cannot train before anything is written; and two rounds of evolve
train both models, hand the checkpoints to the next round, and resume after a kill in
either training stage to the files an uninterrupted run writes, without training a
finished stage again.

The actor is a tiny Qwen2-VL that answers Yes or No (tests/helpers/tiny_models.py), asked
only yes/no chart questions, so its GRPO groups see rewards of both kinds from the first
step and training moves its weights."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("trl", reason="the training backends need the [trainers] extra (trl)")
pytest.importorskip("torch", reason="the training backends need torch")

from conftest import REPO
from helpers.tiny_models import tiny_edit_rewriter, tiny_yes_no_qwen2_vl

from vicogym.runs.evolve import EvolveConfig, training_command
from vicogym.runs.generate import GenerateConfig, generate
from vicogym.trainers import grpo_actor

PY = sys.executable
#: yes/no chart questions, two answers per probe
SETTINGS = {"k": 2, "templates": ["greater", "less"]}
#: GRPO on CPU in seconds: one prompt's group of four one-to-two-token completions a step
GRPO = ["--lr", "0.05", "--batch-size", "4", "--num-generations", "4", "--max-completion-length", "2"]


@pytest.fixture(scope="module")
def actor(tmp_path_factory):
    return tiny_yes_no_qwen2_vl(tmp_path_factory.mktemp("models") / "actor")


@pytest.fixture(scope="module")
def round_rows(tmp_path_factory):
    out = tmp_path_factory.mktemp("round") / "round-000"
    generate(GenerateConfig("vicogym/Chart-v0", n=2, out=str(out), episodes_per_shard=2, env_kwargs=SETTINGS,
                            rewriter="random"), progress=False)
    data = out / "verl_files.txt"
    data.write_text("\n".join(str(p) for p in sorted(out.glob("part-*.parquet"))) + "\n", encoding="utf-8")
    return data


def _files(folder: Path, skip=()) -> dict[str, str]:
    return {str(p.relative_to(folder)): grpo_actor.file_sha256(p) for p in sorted(folder.rglob("*"))
            if p.is_file() and not any(part in skip for part in p.relative_to(folder).parts)}


def _train(data, model, out, next_file, *extra):
    return subprocess.run([PY, "-m", "vicogym.trainers.grpo_actor", "--data", str(data), "--model", model,
                           "--out", str(out), "--next", str(next_file), "--seed", "0", *GRPO, *extra],
                          capture_output=True, text=True, cwd=REPO)


# -- the actor's GRPO backend ---------------------------------------------------------------------
@pytest.mark.slow
def test_grpo_actor_trains_a_checkpoint_once_and_the_same_seed_gives_the_same_bytes(actor, round_rows, tmp_path):
    import transformers

    first = _train(round_rows, f"transformers:{actor}", tmp_path / "a", tmp_path / "next-a")
    assert first.returncode == 0, first.stderr[-2000:]
    assert (tmp_path / "next-a").read_text().strip() == f"transformers:{(tmp_path / 'a').resolve()}"
    assert not (tmp_path / "a.tmp").exists()
    record = json.loads((tmp_path / "a" / grpo_actor.MARKER).read_text())
    assert record["backend"] == "trl-grpo" and record["settings"]["seed"] == 0 and record["rows"] == 2
    assert list(record["inputs"]["data"].values()) == [grpo_actor.file_sha256(Path(round_rows.read_text().split()[0]))]
    assert [s["step"] for s in record["steps"]] == [1, 2]
    assert any(s["reward_std"] > 0 for s in record["steps"])  # the groups saw right and wrong answers
    model = transformers.AutoModelForImageTextToText.from_pretrained(tmp_path / "a")  # what the next round loads
    before = transformers.AutoModelForImageTextToText.from_pretrained(actor)
    moved = [n for n, p in model.state_dict().items() if not (p == before.state_dict()[n]).all()]
    assert "lm_head.weight" in moved
    transformers.AutoProcessor.from_pretrained(tmp_path / "a")

    second = _train(round_rows, str(actor), tmp_path / "b", tmp_path / "next-b")  # a plain folder is a model too
    assert second.returncode == 0, second.stderr[-2000:]
    assert _files(tmp_path / "a") == _files(tmp_path / "b")  # same seed, same inputs: the same checkpoint bytes

    stamp = (tmp_path / "a" / "model.safetensors").stat().st_mtime_ns
    (tmp_path / "next-a").unlink()
    again = _train(round_rows, f"transformers:{actor}", tmp_path / "a", tmp_path / "next-a")
    assert again.returncode == 0 and again.stdout.startswith("found"), again.stdout + again.stderr[-2000:]
    assert (tmp_path / "a" / "model.safetensors").stat().st_mtime_ns == stamp  # not trained again
    assert (tmp_path / "next-a").read_text().strip() == f"transformers:{(tmp_path / 'a').resolve()}"

    other = _train(round_rows, f"transformers:{actor}", tmp_path / "a", tmp_path / "next-a", "--max-steps", "3")
    assert other.returncode == 2 and "trained from other settings" in other.stderr


@pytest.mark.parametrize("change, message", [
    ({"--data": "missing.txt"}, "does not exist; give a round's verl_files.txt"),
    ({"--model": "simulated"}, "is not a transformers model folder"),
    ({"--num-generations": "3"}, "not a multiple of --num-generations"),
    ({"--num-generations": "1"}, "at least 2"),
])
def test_grpo_actor_names_bad_input_in_one_line(round_rows, tmp_path, capsys, actor, change, message):
    args = {"--data": str(round_rows), "--model": str(actor), "--out": str(tmp_path / "m"),
            "--next": str(tmp_path / "next"), "--batch-size": "4", "--num-generations": "2", **change}
    assert grpo_actor.main([word for pair in args.items() for word in pair]) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1 and err.startswith("error: ")
    assert not (tmp_path / "m").exists() and not (tmp_path / "next").exists()


def test_grpo_actor_names_the_extra_it_lacks(monkeypatch, capsys, tmp_path):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "trl" else real(name, *a))
    assert grpo_actor.main(["--data", "x", "--model", "y", "--out", str(tmp_path / "m")]) == 2
    err = capsys.readouterr().err
    assert "needs trl" in err and "[trainers]" in err


# -- evolve's built-in backends -------------------------------------------------------------------
def test_backend_names_expand_to_the_trainers_commands():
    actor = training_command("actor", "trl-grpo --max-steps 4")
    assert actor.startswith("{python} -m vicogym.trainers.grpo_actor --data {verl_files} --model {actor} ")
    assert actor.endswith("--out {round_dir}/actor-model --next {next_actor_file} --seed {round} --max-steps 4")
    rewriter = training_command("rewriter", "trl-rwr")
    assert rewriter == ("{python} -m vicogym.trainers.rwr_rewriter --data {rewriter_data} --model {rewriter} "
                        "--out {round_dir}/rewriter-model --next {next_rewriter_file} --seed {round}")
    assert training_command("actor", "bash train.sh {verl_files}") == "bash train.sh {verl_files}"
    with pytest.raises(ValueError, match="trl-rwr trains the rewriter; give it as train_rewriter"):
        training_command("actor", "trl-rwr")


@pytest.mark.parametrize("settings, message", [
    ({"train_actor": "trl-grpo"}, "the actor 'simulated' is not one; pass --actor transformers:DIR"),
    ({"train_rewriter": "trl-rwr"}, "the rewriter 'search' is not one; pass --rewriter transformers:DIR"),
    ({"train_actor": "trl-grpo", "actor": {"name": "simulated", "skill": 2.0}}, "pass --actor transformers:DIR"),
    ({"train_actor": "trl-grpo {nope}", "actor": "transformers:MODEL"}, "holds no config.json"),
    ({"train_rewriter": "trl-grpo"}, "trl-grpo trains the actor"),
])
def test_a_model_a_backend_cannot_train_fails_before_anything_is_written(tmp_path, settings, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(")):
        EvolveConfig(env_id="vicogym/Chart-v0", out=str(tmp_path / "evo"), **settings)
    assert not (tmp_path / "evo").exists()


def test_a_transformers_model_given_as_json_is_trained_as_its_folder(actor, tmp_path):
    spec = {"name": "transformers", "model_dir": str(actor), "max_new_tokens": 4}
    EvolveConfig(env_id="vicogym/Chart-v0", out=str(tmp_path / "evo"), actor=spec, train_actor="trl-grpo")
    from vicogym.runs.evolve import trainable_spec

    assert trainable_spec(spec, "actor", "trl-grpo") == f"transformers:{actor}"


def test_the_cli_says_what_to_pass_when_a_backend_cannot_train_the_model(tmp_path):
    from typer.testing import CliRunner

    from vicogym.cli import app

    result = CliRunner().invoke(app, ["evolve", "--out", str(tmp_path / "evo"), "--train-actor", "trl-grpo"])
    assert result.exit_code != 0 and (result.exception is None or isinstance(result.exception, SystemExit))
    assert "pass --actor transformers:DIR" in " ".join(result.output.split()), result.output
    assert not (tmp_path / "evo").exists()


# -- two rounds that train both models -------------------------------------------------------------
@pytest.fixture(scope="module")
def rewriter(tmp_path_factory):
    return tiny_edit_rewriter(tmp_path_factory.mktemp("models") / "rewriter")


def _evolve_command(out: Path, actor: Path, rewriter: Path):
    return [PY, "-m", "vicogym.cli", "evolve", "vicogym/Chart-v0", "--rounds", "2", "--n", "2", "--out", str(out),
            "--episodes-per-shard", "2", "--actor", f"transformers:{actor}", "--rewriter", f"transformers:{rewriter}",
            "--train-actor", "trl-grpo " + " ".join(GRPO), "--train-rewriter", "trl-rwr --lr 0.01",
            "--no-progress", *[w for key, value in SETTINGS.items() for w in ("--set", f"{key}={json.dumps(value)}")]]


def _run_until(command, scratch: Path, appears: str | None = None, timeout: float = 500):
    """Run ``command`` with ``scratch`` as its temporary folder; SIGKILL it and its trainer
    as soon as a path that matches ``appears`` (a glob under ``scratch``) exists (None: let
    it finish)."""
    scratch.mkdir(exist_ok=True)
    child = subprocess.Popen(command, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                             start_new_session=True, env={**os.environ, "TMPDIR": str(scratch)})
    start = time.monotonic()
    while child.poll() is None and time.monotonic() - start < timeout:
        if appears is not None and any(scratch.glob(appears)):
            os.killpg(child.pid, signal.SIGKILL)
            child.wait()
            return None
        time.sleep(0.2)
    output = child.communicate()[0]
    assert child.returncode == 0, output[-3000:]
    return output


def _replay(model: Path, out: Path) -> list[list[str]]:
    """The answers of the actor in ``model`` to round 0's samples, drawn with the same seeds."""
    import io

    import numpy as np
    from PIL import Image

    from vicogym.clients import TransformersActor
    from vicogym.runs.verify import iter_rows

    actor = TransformersActor(str(model), batch_size=16)
    answers = []
    for row in iter_rows(out / "round-000", columns=["images", "prompt"]):
        image = np.asarray(Image.open(io.BytesIO(row["images"][0]["bytes"])).convert("RGB"))
        question = row["prompt"][0]["content"].split("<image>", 1)[1].split("\n")[0]
        answers.append(actor.answer(image, question, 16, rng=np.random.default_rng(0), context={}))
    return answers


def _stage_times(out: Path, started: float) -> dict[str, float]:
    """When each stage's last file of each round was written, in seconds from ``started``."""
    marks = {"generated": "manifest.json", "exported": "rewriter/dataset_info.json", "probed": "probes/*",
             "trained_actor": f"actor-model/{grpo_actor.MARKER}", "trained_rewriter": "rewriter-model/*.json",
             "evaluated": "heldout/*"}
    times = {}
    for folder in sorted(out.glob("round-*")):
        for stage, pattern in marks.items():
            found = list(folder.glob(pattern))
            if found:
                times[f"{folder.name} {stage}"] = round(max(p.stat().st_mtime for p in found) - started, 1)
    return times


@pytest.mark.slow
def test_two_rounds_train_both_models_hand_checkpoints_on_and_resume_after_kills(actor, rewriter, tmp_path):
    out = tmp_path / "evo"
    command = _evolve_command(out, actor, rewriter)
    started = time.time()
    _run_until(command, tmp_path)
    print(f"two rounds: {time.time() - started:.0f} s; stages at {_stage_times(out, started)}")
    state = json.loads((out / "evolve.json").read_text())
    r0, r1 = state["rounds"]
    assert all({"trained_actor", "trained_rewriter"} <= set(e["stages"]) for e in (r0, r1)), state["rounds"]
    assert (r0["actor"], r0["rewriter"]) == (f"transformers:{actor}", f"transformers:{rewriter}")
    checkpoints = {what: f"transformers:{(out / 'round-000' / f'{what}-model').resolve()}"
                   for what in ("actor", "rewriter")}
    assert (r1["actor"], r1["rewriter"]) == (checkpoints["actor"], checkpoints["rewriter"])
    manifest = json.loads((out / "round-001" / "manifest.json").read_text())
    assert manifest["env"]["env_config"]["actor"] == checkpoints["actor"]  # round 1 ran round 0's checkpoints
    assert manifest["config"]["rewriter"] == checkpoints["rewriter"]
    for what in ("actor", "rewriter"):
        assert (out / "round-001" / f"next_{what}").read_text().strip() == \
            f"transformers:{(out / 'round-001' / f'{what}-model').resolve()}"
    # the trained actor answers round 0's samples otherwise than round 0's actor did, with the same draws
    assert _replay(out / "round-000" / "actor-model", out) != _replay(actor, out)
    expected = {str(p.relative_to(out)): p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()}

    # killed while round 0's actor trains, then while its rewriter trains: the same command ends with the same files
    import shutil

    shutil.rmtree(out)
    assert _run_until(command, tmp_path, "evo/round-000/actor-model.tmp") is None
    assert not (out / "round-000" / "actor-model").exists()
    assert _run_until(command, tmp_path, "vicogym-rwr-*") is None  # the rewriter's trainer at work
    assert not (out / "round-000" / "rewriter-model").exists()
    stamp = (out / "round-000" / "actor-model" / grpo_actor.MARKER).stat().st_mtime_ns
    _run_until(command, tmp_path)
    assert (out / "round-000" / "actor-model" / grpo_actor.MARKER).stat().st_mtime_ns == stamp  # not trained again
    found = {str(p.relative_to(out)): p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()}
    assert sorted(found) == sorted(expected)
    differing = [name for name in expected if found[name] != expected[name]]
    assert not differing, {name: (expected[name][:3000], found[name][:3000]) for name in differing[:3]}
