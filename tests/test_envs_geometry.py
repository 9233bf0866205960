"""vicogym/Geometry-v0 through the package's workflows, with nothing outside the arm's files
made for it: generation (same seed, same bytes; a run killed with SIGKILL resumes to the
uninterrupted run's bytes), verify (passes, and catches a wrong answer), the report, the
trainers' columns (verl's dataset, the row scorer, TRL's reward) and the SFT export, a
problems file as the source, and the environment's checker."""

import json
import os
import re
import signal
import subprocess
import sys
import time

import gymnasium as gym
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from gymnasium.utils.env_checker import check_env

import vicogym  # noqa: F401  (registers the environments)
from vicogym.runs.generate import GenerateConfig, generate
from vicogym.runs.llamafactory import export_llamafactory
from vicogym.runs.verify import verify
from vicogym.verl_reward import compute_score

ENV = "vicogym/Geometry-v0"
SMALL = {"k": 4, "max_turns": 2, "width": 320, "height": 320}
PROBLEMS = os.path.join(os.path.dirname(__file__), "..", "docs", "geometry_problems.json")


def _bytes(folder):
    return [p.read_bytes() for p in [*sorted(folder.glob("part-*.parquet")), *sorted(folder.glob("entries/*.json"))]]


def _rows(folder):
    return [row for path in sorted(folder.glob("part-*.parquet")) for row in pq.read_table(path).to_pylist()]


def _config(out, n=12):
    return GenerateConfig(ENV, n=n, out=str(out), seed=3, episodes_per_shard=4, env_kwargs=SMALL)


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    out = tmp_path_factory.mktemp("geometry") / "run"
    generate(_config(out), progress=False)
    return out


def test_check_env_and_the_problems_file_as_source():
    env = gym.make(ENV, **SMALL)
    check_env(env.unwrapped, skip_render_check=True)
    files = gym.make(ENV, source=PROBLEMS, **SMALL)
    answers = set()
    for index in range(4):
        obs, info = files.reset(seed=0, options={"index": index})
        assert obs["question"] == info["label"]["question"] and info["answer"]
        answers.add(info["answer"])
    assert {"75", "4π"} <= answers


def test_same_seed_same_bytes_verify_and_a_wrong_answer_caught(run, tmp_path):
    again = tmp_path / "again"
    generate(_config(again), progress=False)
    assert _bytes(again) == _bytes(run)
    assert verify(run).ok
    path = sorted(again.glob("part-*.parquet"))[0]
    table = pq.read_table(path)
    rows = table.to_pylist()
    rows[0]["answer"] = rows[0]["reward_model"]["ground_truth"] = rows[0]["extra_info"]["answer"] = "12345"
    pq.write_table(pa.Table.from_pylist(rows, schema=table.schema), path)
    problems = dict(verify(again).problems)
    assert "stored answer '12345' but the label rule gives" in problems[rows[0]["id"]]


@pytest.mark.slow
def test_a_run_killed_with_sigkill_resumes_to_the_same_bytes(run, tmp_path):
    killed = tmp_path / "killed"
    command = [sys.executable, "-m", "vicogym.cli", "generate", ENV, "--n", "12", "--out", str(killed), "--seed", "3",
               "--episodes-per-shard", "4", *[a for k, v in SMALL.items() for a in ("--set", f"{k}={v}")]]
    child = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 300
    while time.time() < deadline and not list(killed.glob("part-*.parquet")) and child.poll() is None:
        time.sleep(0.05)
    if child.poll() is None:
        os.kill(child.pid, signal.SIGKILL)
    child.wait()
    done = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    assert _bytes(killed) == _bytes(run) and verify(killed).ok


def test_report_and_export(run, tmp_path):
    result = subprocess.run([sys.executable, "-m", "vicogym.cli", "report", str(run)], capture_output=True, text=True,
                            timeout=300)
    assert result.returncode == 0, result.stderr
    assert (run / "report" / "index.html").stat().st_size > 0
    info = export_llamafactory(run, tmp_path / "sft")
    assert info and (tmp_path / "sft" / "dataset_info.json").exists()


def test_the_row_scorer_reads_the_forms_models_write(run):
    rows = _rows(run)
    assert {r["data_source"] for r in rows} == {ENV}
    for row in rows:
        truth = row["reward_model"]["ground_truth"]
        assert compute_score(row["data_source"], f"Let me think.\nThe answer is {truth}.", truth,
                             row["extra_info"]) == 1.0
        assert compute_score(row["data_source"], "The answer is 123457.", truth, row["extra_info"]) == 0.0
    surds = [r for r in rows if "√" in r["reward_model"]["ground_truth"]]
    for row in surds:
        truth = row["reward_model"]["ground_truth"]
        assert compute_score(row["data_source"], f"\\boxed{{{_decimal(truth)}}}", truth, row["extra_info"]) == 1.0


def _decimal(answer: str) -> str:
    """An exact surd answer as a 2-place decimal, worked out here term by term."""
    total = 0.0
    for sign, term in re.findall(r"([+-]?)\s*([^+-]+)", answer.replace(" ", "")):
        coef, _, rest = term.partition("√")
        root, _, den = rest.partition("/") if rest else ("1", "", "")
        if not rest:
            coef, _, den = coef.partition("/")
        value = float(coef or 1) * np.sqrt(float(root or 1)) / float(den or 1)
        total += -value if sign == "-" else value
    return f"{total:.2f}"


def test_verls_dataset_reads_the_rows(run, tmp_path):
    pytest.importorskip("verl", reason="the verl check needs verl: pip install --no-deps verl==0.9.1 (see the README)")
    OmegaConf = pytest.importorskip("omegaconf").OmegaConf
    from verl.utils.dataset.rl_dataset import RLHFDataset

    class Stub:
        pass

    config = OmegaConf.create({"filter_overlong_prompts": False, "cache_dir": str(tmp_path / "cache")})
    files = sorted(str(p) for p in run.glob("part-*.parquet"))
    dataset = RLHFDataset(data_files=files, tokenizer=Stub(), config=config, processor=Stub())
    assert len(dataset.dataframe) == len(_rows(run))


def test_trls_reward_scores_the_rows(run):
    pytest.importorskip("trl", reason="the TRL check needs the [trainers] extra")
    from vicogym.trainers.trl import reward_function, rows_dataset

    rows = rows_dataset(str(run))
    row = rows[0]
    truth = row["reward_model"]["ground_truth"]
    columns = {k: [row[k]] * 2 for k in ("data_source", "reward_model", "extra_info")}
    completions = [[{"role": "assistant", "content": f"Answer: {truth}"}],
                   [{"role": "assistant", "content": "Answer: 987654"}]]
    assert reward_function([row["prompt"]] * 2, completions, **columns) == [1.0, 0.0]


def test_every_family_and_level_comes_up_and_stand_in_features_are_named():
    env = gym.make(ENV, **SMALL).unwrapped
    kinds, levels = set(), set()
    for episode in range(30):
        obs, info = env.reset(seed=episode, options={"episode": episode})
        kinds.add(info["label"]["kind"])
        context = env.arm.actor_context(env.sample, env._render_out)
        levels.add(context["features"]["steps"])
        assert context["difficulty"] >= 0 and context["distractors"]
        assert json.loads(obs["structure"])["steps"][0]["op"] == "origin"
    assert levels == {1, 2, 3, 4, 5}
    assert len(kinds) >= 6
