"""The rewriter's reward-weighted regression: the exported data weight each edit transition
by ``floor(5 * w(p))`` (re-derived here from the run's own rows), the data ask what the
rewriter policy asks, and ``python -m vicogym.trainers.rwr_rewriter`` trains a tiny
vision-language model on it with TRL, never twice for the same inputs, and names bad input."""

import json
import math
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
from helpers.tiny_models import tiny_qwen2_vl

import vicogym  # noqa: F401  (registers the environments)
from vicogym.rewards import RewardConfig, rwr_copies, weight
from vicogym.runs.generate import GenerateConfig, generate
from vicogym.runs.llamafactory import export_llamafactory
from vicogym.runs.verify import iter_rows, read_manifest

ENV = "vicogym/Chart-v0"
TRAINER = "vicogym.trainers.rwr_rewriter"


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """A small run whose rewards are a wide Gaussian, so transitions get 1 to 5 copies (pass rates
    in quarters: 0 and 1 get 1, 0.25 and 0.75 get 3, 0.5 gets 5), and its export."""
    folder = tmp_path_factory.mktemp("rwr")
    generate(GenerateConfig(ENV, n=6, out=str(folder / "run"), keep="all", episodes_per_shard=8, seed=3,
                            env_kwargs={"k": 4, "reward_shape": "gaussian", "reward_sigma": 0.3}), progress=False)
    export_llamafactory(folder / "run", folder / "lf")
    return folder


def _transitions(run_folder):
    """Every edit transition of a run, from its rows: image file name -> (pass rate after the
    edit, the edit); each (episode, turn) once."""
    out = {}
    for row in iter_rows(run_folder):
        provenance = json.loads(row["provenance"])
        episode = f"{provenance['run_seed']}-{provenance['index']}"
        for entry in json.loads(row["edit_trace"]):
            out.setdefault(f"images/{row['env_id'].split('/')[-1].lower()}-{episode}-t{entry['turn']}.png",
                           (float(entry["pass_rate"]), entry["edit"]))
    return out


def _reward(run_folder):
    """The run's reward shape, read from its manifest (defaults: the arm's config)."""
    kwargs = read_manifest(Path(run_folder))["config"]["env_kwargs"]
    defaults = gym.make(ENV).unwrapped.config
    zone = kwargs.get("sweet_zone", defaults.sweet_zone)
    return RewardConfig(kwargs.get("reward_shape", defaults.reward_shape), zone[0], zone[1],
                        kwargs.get("reward_sigma", defaults.reward_sigma)), tuple(zone)


def test_every_transition_is_repeated_as_often_as_its_weight_says(run):
    records = json.loads((run / "lf" / "rewriter.json").read_text())
    copies = Counter(record["images"][0] for record in records)
    reward, _ = _reward(run / "run")
    expected = {image: math.floor(5 * weight(p, reward)) for image, (p, _) in _transitions(run / "run").items()}
    assert reward.shape == "gaussian" and expected
    assert {i: c for i, c in expected.items() if c} == dict(copies)  # every kept one, as often as its weight
    assert len(set(expected.values())) >= 2 and set(expected.values()) - {0, 5}  # graded, not all or nothing
    for record in records:  # the copies of one transition are the same record, its edit the run's
        assert json.loads(record["messages"][1]["content"]) == _transitions(run / "run")[record["images"][0]][1]
    # the trainer's view of the file: one transition per distinct record, its copies its weight
    from vicogym.trainers.rwr_rewriter import read_records, transitions

    seen = transitions(read_records(run / "lf" / "rewriter.json"))
    assert {t["image"]: t["copies"] for t in seen} == dict(copies) and sum(t["copies"] for t in seen) == len(records)


def test_an_edit_off_the_sweet_zone_weighs_less_than_one_in_it(run):
    for shape in ("band", "triangle", "gaussian"):
        reward = RewardConfig(shape, 0.35, 0.65, 0.15)
        inside, outside = [0.4, 0.5, 0.6], [0.0, 0.1, 0.3, 0.7, 0.9, 1.0]
        assert max(weight(p, reward) for p in outside) < min(weight(p, reward) for p in inside), shape
        assert rwr_copies(0.5, reward) == 5 and rwr_copies(1.0, reward) < rwr_copies(0.5, reward)
    reward, (low, high) = _reward(run / "run")
    records = json.loads((run / "lf" / "rewriter.json").read_text())
    copies = Counter(record["images"][0] for record in records)
    by_zone = {True: [], False: []}
    for image, (p, _) in _transitions(run / "run").items():
        by_zone[low <= p <= high].append(copies.get(image, 0))
    assert by_zone[True] and by_zone[False]
    assert max(by_zone[False]) <= min(by_zone[True]) and np.mean(by_zone[False]) < np.mean(by_zone[True])


def test_the_exported_prompt_is_what_the_rewriter_policy_is_asked(run):
    """Each record's user turn and picture are what :class:`OpenAIRewriter` (and the local
    rewriter, which sends the same content) shows in the state before that edit, replayed
    in the run's own environment."""
    import base64
    import io

    from PIL import Image

    from vicogym.clients import OpenAIRewriter

    records = json.loads((run / "lf" / "rewriter.json").read_text())
    by_image = {record["images"][0]: record for record in records}
    kwargs = read_manifest(run / "run")["config"]["env_kwargs"]
    compared = 0
    episodes = {}
    for row in iter_rows(run / "run"):
        provenance = json.loads(row["provenance"])
        trace = json.loads(row["edit_trace"])
        key = f"{provenance['run_seed']}-{provenance['index']}"
        if len(trace) > len(episodes.get(key, (None, []))[1]):
            episodes[key] = (provenance, trace)
    env = gym.make(ENV, **dict(kwargs, max_turns=10_000)).unwrapped
    rewriter = OpenAIRewriter(model="m", base_url="http://127.0.0.1:9/v1", env=env)
    for key, (provenance, trace) in episodes.items():
        env.reset(seed=int(provenance["seed"]), options={"episode": provenance["index"]})
        for entry in trace:
            record = by_image.get(f"images/chart-v0-{key}-t{entry['turn']}.png")
            if record is not None:
                image_part, text_part = rewriter.prompt()
                assert record["messages"][0]["content"] == "<image>" + text_part["text"]
                png = base64.b64decode(image_part["image_url"]["url"].split(",")[1])
                sent = np.asarray(Image.open(io.BytesIO(png)))
                assert np.array_equal(sent, np.asarray(Image.open(run / "lf" / record["images"][0])))
                compared += 1
            env.step(entry["edit"])
    assert compared == len(by_image)


def test_the_training_prompt_is_the_chat_templates_generation_prompt(run, tmp_path):
    """TRL renders the prompt of each training row as the processor renders the local
    rewriter's question (image, then text, a generation prompt after); the completion is
    the edit and the end of the turn."""
    pytest.importorskip("trl")
    from transformers import AutoProcessor
    from trl.data_utils import apply_chat_template, prepare_multimodal_messages

    from vicogym.trainers.rwr_rewriter import read_records, training_rows

    processor = AutoProcessor.from_pretrained(tiny_qwen2_vl(tmp_path / "tiny"))
    records = read_records(run / "lf" / "rewriter.json")
    row = training_rows(records[:1], run / "lf")[0]
    rendered = apply_chat_template({"prompt": prepare_multimodal_messages(row["prompt"], images=row["images"]),
                                    "completion": prepare_multimodal_messages(row["completion"])}, processor)
    text = records[0]["messages"][0]["content"].replace("<image>", "")
    asked = processor.apply_chat_template([{"role": "user", "content": [{"type": "image"},
                                                                         {"type": "text", "text": text}]}],
                                          add_generation_prompt=True, tokenize=False)
    assert rendered["prompt"] == asked
    assert rendered["completion"].startswith(records[0]["messages"][1]["content"])


def _train(*args, env=None):
    return subprocess.run([sys.executable, "-m", TRAINER, *map(str, args)], capture_output=True, text=True,
                          timeout=900, env=env)


def _files(folder):
    return {p.name: p.read_bytes() for p in sorted(Path(folder).iterdir()) if p.is_file()}


def test_the_trainer_writes_a_checkpoint_once_that_the_local_rewriter_loads(run, tmp_path):
    pytest.importorskip("trl")
    model = tiny_qwen2_vl(tmp_path / "tiny")
    data = run / "lf" / "rewriter.json"
    knobs = ["--max-steps", 2, "--batch-size", 1, "--lr", 1e-3]
    first = _train("--data", data, "--model", f"transformers:{model}", "--out", tmp_path / "r1", "--next",
                   tmp_path / "next", "--seed", 0, *knobs)
    assert first.returncode == 0, first.stderr
    out = tmp_path / "r1"
    assert (tmp_path / "next").read_text().strip() == f"transformers:{out.resolve()}"
    assert not (tmp_path / "r1.tmp").exists() and "rewriter trained" in first.stdout
    assert "note: the edits' pass rates" in first.stdout and "stand-in, not a model" in first.stdout
    marker = json.loads((out / "vicogym-train.json").read_text())
    records = json.loads(data.read_text())
    assert marker["rows"] == len(records) and marker["steps"] == 2 and marker["stand_in"]["actor"] == "simulated"
    assert marker["transitions"] == len({json.dumps(r, sort_keys=True) for r in records})
    trained = _files(out)
    assert trained["model.safetensors"] != _files(model)["model.safetensors"]  # it learned something
    # the same seed and inputs: the same bytes
    second = _train("--data", data, "--model", model, "--out", tmp_path / "r2", "--seed", 0, *knobs)
    assert second.returncode == 0, second.stderr
    assert _files(tmp_path / "r2") == {**trained, "vicogym-train.json": _files(tmp_path / "r2")["vicogym-train.json"]}
    assert json.loads((tmp_path / "r2" / "vicogym-train.json").read_text())["inputs"] == marker["inputs"]
    # again into the finished folder: not trained again, --next written again
    (tmp_path / "next").unlink()
    stamp = (out / "model.safetensors").stat().st_mtime_ns
    again = _train("--data", data, "--model", f"transformers:{model}", "--out", out, "--next", tmp_path / "next",
                   "--seed", 0, *knobs)
    assert again.returncode == 0, again.stderr
    assert "not training again" in again.stderr and "rewriter kept" in again.stdout
    assert (out / "model.safetensors").stat().st_mtime_ns == stamp and _files(out) == trained
    assert (tmp_path / "next").read_text().strip() == f"transformers:{out.resolve()}"
    # other inputs (the seed) train again, into the same folder; a killed run's leftovers go
    (tmp_path / "r1.tmp").mkdir()
    (tmp_path / "r1.tmp" / "model.safetensors").write_bytes(b"half written")
    other = _train("--data", data, "--model", model, "--out", out, "--seed", 1, *knobs)
    assert other.returncode == 0, other.stderr
    assert "rewriter trained" in other.stdout
    assert _files(out)["model.safetensors"] != trained["model.safetensors"]
    assert json.loads((out / "vicogym-train.json").read_text())["inputs"]["settings"]["seed"] == 1
    assert not any(p.name.endswith((".tmp", ".old")) for p in tmp_path.iterdir())
    # the checkpoint is a rewriter: it loads and proposes an edit for an environment's sample
    from transformers import AutoModelForImageTextToText, AutoProcessor

    AutoProcessor.from_pretrained(out, local_files_only=True)
    AutoModelForImageTextToText.from_pretrained(out, local_files_only=True)
    from vicogym.clients import TransformersRewriter
    from vicogym.policies import make_rewriter

    env = gym.make(ENV, k=2).unwrapped
    env.reset(seed=0)
    rewriter = make_rewriter({"name": "transformers", "model_dir": str(out), "max_new_tokens": 8}, env)
    assert isinstance(rewriter, TransformersRewriter) and rewriter.model_dir == str(out)
    rewriter.propose({}, np.random.default_rng(0))
    assert isinstance(rewriter.last_response, str)


@pytest.mark.parametrize("case", ["missing data", "empty data", "not a model folder", "missing extra"])
def test_bad_input_exits_with_one_line_naming_what_to_change(run, tmp_path, case):
    data, model = run / "lf" / "rewriter.json", tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text("{}")
    env = None
    if case == "missing data":
        data, expected = tmp_path / "nothing.json", "nothing.json does not exist; give the rewriter.json"
    elif case == "empty data":
        data = tmp_path / "empty.json"
        data.write_text("[]")
        expected = "has no records"
    elif case == "not a model folder":
        (model / "config.json").unlink()
        expected = "has no config.json, so it is not a transformers model folder"
    else:  # trl hidden: the install line for the trainers extra
        hide = tmp_path / "hide"
        hide.mkdir()
        (hide / "trl.py").write_text("raise ImportError('hidden')\n")
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(hide), os.environ.get("PYTHONPATH", "")])}
        expected = "needs trl; install them with pip install"
    result = _train("--data", data, "--model", model, "--out", tmp_path / "out", env=env)
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"{TRAINER}: ") and expected in lines[0], result.stderr
    assert "[trainers]" in lines[0] if case == "missing extra" else True
    assert not (tmp_path / "out").exists()
