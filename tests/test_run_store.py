"""Runs at cluster scale: workers write their shards to the run's store and hand back only
manifest entries, the manifest grows by one small entry file per shard, a finished run
extends to a larger n, and a run killed at any moment resumes to the uninterrupted bytes."""

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from vicogym.errors import RunError
from vicogym.runs.generate import GenerateConfig, generate
from vicogym.runs.shards import row_hash, run_entries
from vicogym.runs.verify import verify

SMALL = {"k": 4, "max_turns": 2}


def _config(out, **kwargs):
    settings = {"n": 10, "out": str(out), "seed": 7, "episodes_per_shard": 4, "env_kwargs": SMALL, **kwargs}
    return GenerateConfig(**settings)


def _files(folder):
    """Every file of the run but its summary and lock, by name, byte for byte."""
    folder = Path(folder)
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*"))
            if p.is_file() and p.name not in ("manifest.json", ".lock")}


def _rows(folder):
    return [row for path in sorted(Path(folder).glob("part-*.parquet")) for row in pq.read_table(path).to_pylist()]


@pytest.fixture(scope="module")
def whole_runs(tmp_path_factory):
    """Uninterrupted runs of 13 samples, keeping final and all turns."""
    root = tmp_path_factory.mktemp("whole")
    runs = {}
    for keep in ("final", "all"):
        generate(_config(root / keep, n=13, keep=keep), progress=False)
        runs[keep] = root / keep
    return runs


@pytest.mark.parametrize("keep", ["final", "all"])
def test_a_finished_run_extends_to_a_larger_n_and_its_first_rows_stay(whole_runs, tmp_path, keep):
    """``generate`` on a finished run with a larger --n adds shards after its rows: the
    first n rows are byte for byte those it held (the last shard, cut at the old n, is
    made again whole), and the folder is the one an uninterrupted run of the larger n
    writes."""
    out = tmp_path / "grown"
    generate(_config(out, n=5, keep=keep), progress=False)
    before = _rows(out)
    assert len(before) == 5
    manifest = generate(_config(out, n=13, keep=keep), progress=False)
    after = _rows(out)
    assert [row_hash(r) for r in after[:5]] == [row_hash(r) for r in before] and after[:5] == before
    assert manifest["counts"]["samples"] == 13 and manifest["finished"] and manifest["complete"]
    assert _files(out) == _files(whole_runs[keep])
    assert json.loads((out / "run.json").read_text())["n"] == 13
    assert verify(out, images=False).ok


def test_a_smaller_n_or_budget_on_a_run_is_refused_and_nothing_changes(whole_runs, tmp_path):
    out = tmp_path / "run"
    shutil.copytree(whole_runs["final"], out)
    before = _files(out)
    with pytest.raises(RunError, match="holds a run of n=13; --n 12 would drop rows it holds: use --n 13 or more"):
        generate(_config(out, n=12), progress=False)
    with pytest.raises(RunError, match="holds a run with max_episodes=None; keep it, or raise it"):
        generate(_config(out, n=13, max_episodes=40), progress=False)
    with pytest.raises(RunError, match=r"other settings \(differing: episodes_per_shard\)"):
        generate(_config(out, n=14, episodes_per_shard=5), progress=False)
    assert _files(out) == before


def test_workers_write_their_shards_and_hand_back_entries_alone(whole_runs, tmp_path):
    """With worker processes, what reaches this process for a shard is its entry (row
    hashes, statistics), not its rows: far smaller than the PNGs it holds. Blocks run
    ahead of the run's end leave nothing beside its shards."""
    heard = []
    out = tmp_path / "parallel"
    generate(_config(out, n=13, workers=2), progress=False, on_shard=heard.append)
    assert _files(out) == _files(whole_runs["final"])
    assert not (out / ".pending").exists() and verify(out, images=False).ok
    entries = list(run_entries(out))
    assert [h["block"] for h in heard] == list(range(len(entries)))
    for shard, h in zip(entries, heard):
        png = sum(len(r["images"][0]["bytes"]) for r in pq.read_table(out / shard["name"]).to_pylist())
        assert h["received_bytes"] < max(png, 1) / 3 + 4096
        assert h["manifest_bytes"] == len((out / "entries" / shard["name"].replace(".parquet", ".json")).read_bytes())


def test_what_a_shard_costs_to_record_does_not_grow_with_the_run(tmp_path):
    """One-episode shards of the toy arm: the bytes a worker hands back and the manifest
    bytes written for a shard are the same at the 400th shard as at the 10th."""
    heard = []
    generate(GenerateConfig("vicogym/Toy-v0", n=400, out=str(tmp_path / "toy"), episodes_per_shard=1,
                            max_episodes=400, env_kwargs={"k": 2}), progress=False, on_shard=heard.append)
    assert len(heard) >= 300
    early, late = heard[:50], heard[-50:]
    for key in ("received_bytes", "manifest_bytes"):
        assert max(h[key] for h in late) <= max(h[key] for h in early) + 16, key
    assert (tmp_path / "toy" / "manifest.json").stat().st_size < 8000


def test_a_url_store_takes_shards_from_workers_directly(whole_runs, tmp_path):
    """--out as a URL (fsspec's local:// here, a store every process reaches): workers
    write to it, the dataset is the local run's; an in-process store cannot take workers."""
    url = f"local://{tmp_path / 'remote'}"
    generate(_config(url, n=13, workers=2), progress=False)
    assert _files(tmp_path / "remote") == _files(whole_runs["final"])
    assert verify(url, images=False).ok
    with pytest.raises(RunError, match="lives in this process alone, where worker processes cannot write"):
        generate(_config("memory://vicogym-test/workers", workers=2), progress=False)


def test_left_pending_work_and_half_written_files_are_cleared_on_resume(whole_runs, tmp_path):
    """What a kill leaves at any step of a commit: a shard written pending, a temporary
    file, a shard moved into place whose entry was not written, a summary that says the
    run is unfinished. The same command makes the folder whole, byte for byte."""
    out = tmp_path / "killed"
    shutil.copytree(whole_runs["final"], out)
    shards = sorted(out.glob("part-*.parquet"))
    (out / ".pending").mkdir()
    shards[-1].rename(out / ".pending" / shards[-1].name)  # killed before the last commit
    (out / "entries" / shards[-1].name.replace(".parquet", ".json")).unlink()
    (out / "entries" / shards[-2].name.replace(".parquet", ".json")).unlink()  # moved into place, not recorded
    (out / "entries" / "part-00009.json.0123abcd.tmp").write_bytes(b"{")
    summary = json.loads((out / "manifest.json").read_text())
    (out / "manifest.json").write_text(json.dumps(dict(summary, finished=False)))
    assert not verify(out, images=False).ok
    generate(_config(out, n=13), progress=False)
    assert _files(out) == _files(whole_runs["final"]) and verify(out, images=False).ok


@pytest.mark.parametrize("damage, message", [
    (lambda out: (out / "entries" / "part-00001.json").unlink(), "part-00001.parquet: is not in the manifest"),
    (lambda out: (out / "entries" / "part-00001.json").write_text("{"), "entries/part-00001.json: cannot be read"),
    (lambda out: (out / "entries" / "part-00001.json").write_bytes(
        (out / "entries" / "part-00002.json").read_bytes()), "is the entry of part-00002.parquet, not of part-00001"),
    (lambda out: (out / "entries" / "part-00001.json").write_text(json.dumps({"name": "part-00001.parquet"})),
     "expected {name, rows, sha256, ...}"),
    (lambda out: (out / "part-00001.parquet").unlink(), "part-00001.parquet: is missing"),
    (lambda out: (out / "manifest.json").write_text(json.dumps(
        dict(json.loads((out / "manifest.json").read_text()), counts=dict(
            json.loads((out / "manifest.json").read_text())["counts"], shards=9)))), "records 9 shards"),
])
def test_verify_catches_lost_and_tampered_entries(whole_runs, tmp_path, damage, message):
    out = tmp_path / "bad"
    shutil.copytree(whole_runs["final"], out)
    damage(out)
    report = verify(out, images=False)
    assert not report.ok
    assert any(message in f"{where}: {reason}" for where, reason in report.problems), report.problems


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc").is_dir(), reason="kills a run's process")
def test_a_local_run_killed_with_9_resumes_to_the_uninterrupted_bytes(whole_runs, tmp_path):
    """kill -9 of a run with two worker processes while shards are being committed; the
    same command finishes it, and every shard and entry is the uninterrupted run's."""
    out = tmp_path / "killed"
    cmd = [sys.executable, "-m", "vicogym.cli", "generate", "--n", "13", "--seed", "7", "--episodes-per-shard", "1",
           "--k", "4", "--max-turns", "2", "--workers", "2", "--no-progress", "--out", str(out)]
    whole = tmp_path / "whole"
    assert subprocess.run([*cmd[:-1], str(whole)], capture_output=True).returncode == 0
    parent = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.time() + 120
        while time.time() < deadline and len(list(out.glob("entries/*.json"))) < 4:
            time.sleep(0.05)
        os.kill(parent.pid, signal.SIGKILL)
        parent.wait(timeout=30)
    finally:
        parent.kill()
    assert 4 <= len(list(out.glob("entries/*.json"))) < len(list(whole.glob("entries/*.json"))), "killed too late"
    assert subprocess.run(cmd, capture_output=True).returncode == 0
    assert _files(out) == _files(whole) and verify(out, images=False).ok
