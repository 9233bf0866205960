import errno
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from vicogym.cli import app
from vicogym.errors import RunError, SourceError
from vicogym.images import decode_png
from vicogym.runs.generate import GenerateConfig, generate
from vicogym.runs.shards import run_entries
from vicogym.runs.verify import verify

runner = CliRunner()
SMALL = {"k": 4, "max_turns": 2}


def _rows(folder):
    return [row for path in sorted(folder.glob("part-*.parquet")) for row in pq.read_table(path).to_pylist()]


def _bytes(folder):
    """The shards and their manifest entries, byte for byte."""
    return [p.read_bytes() for p in [*sorted(folder.glob("part-*.parquet")), *sorted(folder.glob("entries/*.json"))]]


def _config(out, **kwargs):
    settings = {"n": 10, "out": str(out), "seed": 7, "episodes_per_shard": 4, "env_kwargs": SMALL, **kwargs}
    return GenerateConfig(**settings)


@pytest.fixture(scope="module")
def small_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("gen")
    manifest = generate(_config(out), progress=False)
    return out, manifest


@pytest.fixture
def copy_run(small_run, tmp_path):
    def make(name="copy"):
        target = tmp_path / name
        shutil.copytree(small_run[0], target)
        return target

    return make


def test_generate_writes_rows_verl_fields_and_manifest(small_run):
    out, manifest = small_run
    rows = _rows(out)
    assert len(rows) == 10 == manifest["counts"]["samples"]
    assert len({r["id"] for r in rows}) == 10
    row = rows[0]
    for key in ("id", "env_id", "source_id", "images", "question", "answer", "label_rule", "label", "structure",
                "payloads", "seed_structure", "edit_trace", "pass_rate", "pass_rate_before", "reward", "provenance",
                "data_source", "prompt", "images", "ability", "reward_model", "extra_info"):
        assert key in row
    assert row["prompt"][0]["role"] == "user"
    assert row["prompt"][0]["content"] == "<image>" + row["question"] + "\nAnswer with a single word or number."
    assert "image" not in row  # one copy of the PNG per row, in verl's images column
    assert row["images"][0]["path"] == row["id"] + ".png" and row["ability"] == "chart_reasoning"
    assert row["reward_model"] == {"style": "rule", "ground_truth": row["answer"]}
    assert decode_png(row["images"][0]["bytes"]).shape[2] == 3
    assert json.loads(row["edit_trace"]) and row["payloads"] == []
    assert row["structure"] == json.dumps(json.loads(row["structure"]), sort_keys=True, separators=(",", ":"),
                                          ensure_ascii=False)  # the canonical text
    schema = pq.read_schema(sorted(out.glob("part-*.parquet"))[0])
    assert schema.field("images").type == pa.list_(pa.struct([("bytes", pa.binary()), ("path", pa.string())]))
    m = json.loads((out / "manifest.json").read_text())
    assert m["package_version"] and m["env"]["id"] == "vicogym/Chart-v0" and m["env"]["arm"] == "chart"
    assert m["config"]["env_kwargs"] == SMALL
    assert sum(m["pass_rate_histogram"]["counts"]) == 10
    assert m["counts"]["steps"] == m["counts"]["valid_steps"] + m["counts"]["rejected_steps"]
    entries = list(run_entries(out))
    assert [s["rows"] for s in entries] == [len(pq.read_table(out / s["name"])) for s in entries]
    assert all(len(s["sha256"]) == 64 for s in entries) and m["counts"]["shards"] == len(entries)


def test_verify_passes_and_catches_label_tampering(small_run, copy_run):
    out, _ = small_run
    report = verify(out)
    assert report.ok and report.rows == 10
    bad = copy_run()
    path = sorted(bad.glob("part-*.parquet"))[0]
    table = pq.read_table(path)
    rows = table.to_pylist()
    rows[1]["answer"] = "definitely wrong"
    rows[1]["reward_model"]["ground_truth"] = "definitely wrong"
    rows[1]["extra_info"]["answer"] = "definitely wrong"
    rows[2]["question"] = rows[2]["question"] + " Round to one decimal."
    rows[2]["extra_info"]["question"] = rows[2]["question"]
    rows[2]["prompt"][0]["content"] = "<image>" + rows[2]["question"] + "\nAnswer with a single word or number."
    rows[3]["reward_model"]["ground_truth"] = "0"
    pq.write_table(pa.Table.from_pylist(rows, schema=table.schema), path)
    problems = dict(verify(bad).problems)
    assert problems[path.name] == "changed since it was written (SHA-256 differs from the manifest)"
    assert problems[rows[1]["id"]].startswith("stored answer 'definitely wrong' but the label rule gives")
    assert "does not fit its label rule: the program asks" in problems[rows[2]["id"]]
    assert problems[rows[3]["id"]] == f"reward_model.ground_truth differs from {rows[3]['answer']!r}"
    result = runner.invoke(app, ["verify", str(bad)])
    assert result.exit_code == 1 and rows[1]["id"] in result.output


def _flip_bytes(path, n, seed=0):
    import numpy as np

    data = bytearray(path.read_bytes())
    rng = np.random.default_rng(seed)
    for i in rng.choice(len(data), size=n, replace=False):
        data[i] ^= 0xFF
    path.write_bytes(bytes(data))


@pytest.mark.parametrize("damage", ["flip", "truncate", "delete_rows", "duplicate_rows", "delete_shard", "extra_shard",
                                    "no_manifest", "empty"])
def test_verify_fails_on_any_loss_duplicate_or_damage(copy_run, damage):
    bad = copy_run()
    shards = sorted(bad.glob("part-*.parquet"))
    table = pq.read_table(shards[0])
    if damage == "flip":
        _flip_bytes(shards[0], 50)
    elif damage == "truncate":
        shards[0].write_bytes(shards[0].read_bytes()[:2000])
    elif damage == "delete_rows":
        pq.write_table(table.slice(0, 1), shards[0])
    elif damage == "duplicate_rows":
        pq.write_table(pa.concat_tables([table, table.slice(0, 2)]), shards[0])
    elif damage == "delete_shard":
        shards[-1].unlink()
    elif damage == "extra_shard":
        shutil.copy(shards[0], bad / "part-00042.parquet")
    elif damage == "no_manifest":
        (bad / "manifest.json").unlink()
    else:
        for path in shards:
            path.unlink()
        manifest = json.loads((bad / "manifest.json").read_text())
        manifest.update(shards=[], counts=dict(manifest["counts"], samples=0))
        (bad / "manifest.json").write_text(json.dumps(manifest))
    result = runner.invoke(app, ["verify", str(bad)])
    assert result.exit_code != 0, result.output
    assert "Traceback" not in result.output
    if damage == "no_manifest":
        assert result.exit_code == 2 and "has no manifest.json; the run did not finish" in result.output
        return
    problems = verify(bad).problems
    assert problems
    text = " | ".join(f"{w}: {r}" for w, r in problems)
    expected = {"flip": "SHA-256 differs", "truncate": "cannot be read", "delete_rows": "holds 1 rows, the manifest "
                "recorded", "duplicate_rows": "appears twice", "delete_shard": "is missing", "extra_shard":
                "is not in the manifest", "empty": "holds no rows"}[damage]
    assert expected in text


def test_verify_reports_undecodable_images(copy_run):
    bad = copy_run()
    path = sorted(bad.glob("part-*.parquet"))[0]
    table = pq.read_table(path)
    rows = table.to_pylist()
    rows[0]["images"][0]["bytes"] = rows[0]["images"][0]["bytes"][:100]
    pq.write_table(pa.Table.from_pylist(rows, schema=table.schema), path)
    problems = dict(verify(bad).problems)
    assert problems[rows[0]["id"]] == "image does not decode (expected PNG bytes, could not decode)"


def test_same_seed_same_bytes_and_resume_after_a_crash(small_run, tmp_path):
    out, _ = small_run
    again = tmp_path / "again"
    generate(_config(again), progress=False)
    assert _bytes(again) == _bytes(out)
    # a crash: the last shard is lost, the manifest never written, a temporary file left behind
    shards = sorted(again.glob("part-*.parquet"))
    shards[-1].unlink()
    (again / "manifest.json").unlink()
    (again / "part-00099.tmp").write_bytes(b"partial")
    generate(_config(again), progress=False)
    assert _bytes(again) == _bytes(out)
    assert not list(again.glob("*.tmp"))
    assert verify(again).ok


def test_a_run_folder_refuses_other_settings(small_run):
    out, _ = small_run
    with pytest.raises(RunError, match="holds a run with other settings \\(differing: seed\\)"):
        generate(_config(out, seed=8), progress=False)


def test_a_failed_run_does_not_lock_its_folder(tmp_path, chartqa):
    out = tmp_path / "retry"
    with pytest.raises(SourceError):
        generate(_config(out, env_kwargs={**SMALL, "source": str(tmp_path / "nonexistent")}), progress=False)
    assert not (out / "run.json").exists()
    manifest = generate(_config(out, n=3, env_kwargs={**SMALL, "source": str(chartqa)}), progress=False)
    assert manifest["counts"]["samples"] == 3


def test_out_naming_a_file_is_refused(tmp_path):
    path = tmp_path / "file.txt"
    path.write_text("x")
    result = runner.invoke(app, ["generate", "--out", str(path), "--n", "1", "--no-progress"])
    assert result.exit_code == 2
    assert f"--out {path} is an existing file; name a folder" in result.output
    result = runner.invoke(app, ["generate", "--out", str(path / "sub"), "--n", "1", "--no-progress"])
    assert result.exit_code == 2
    assert f"cannot create or write the --out folder {path / 'sub'} (Not a directory); name a folder" in result.output


@pytest.mark.slow
def test_workers_do_not_change_the_output(small_run, tmp_path):
    out, _ = small_run
    parallel = tmp_path / "parallel"
    generate(_config(parallel, workers=2), progress=False)
    assert _bytes(parallel) == _bytes(out)


def test_episodes_in_flight_do_not_change_the_output(small_run, tmp_path):
    """Episodes side by side on their own environments (threads rendering charts at the
    same time) write the bytes of episodes run one by one."""
    side_by_side = tmp_path / "side-by-side"
    generate(_config(side_by_side, episodes_in_flight=3), progress=False)
    assert _bytes(side_by_side) == _bytes(small_run[0])


@pytest.mark.slow
def test_ray_writes_the_same_bytes_and_resumes_a_local_run(small_run, tmp_path):
    """Ray actors on a local instance write what one process writes; a run started with
    local workers finishes on Ray (runtime settings are not part of a run's identity)."""
    pytest.importorskip("ray", reason="the ray extra is not installed")
    out, _ = small_run
    on_ray = tmp_path / "ray"
    generate(_config(on_ray, workers=2, backend="ray", ray_cpus=0.5), progress=False)
    assert _bytes(on_ray) == _bytes(out)
    mixed = tmp_path / "mixed"
    generate(_config(mixed), progress=False)
    for shard in sorted(mixed.glob("part-*.parquet"))[1:]:  # a crash after the first shard
        shard.unlink()
    (mixed / "manifest.json").unlink()
    generate(_config(mixed, backend="ray", threads=2), progress=False)
    assert _bytes(mixed) == _bytes(out) and verify(mixed).ok


@pytest.mark.slow
def test_ray_on_a_two_node_cluster_writes_the_same_bytes(small_run, tmp_path):
    """A simulated cluster of two one-CPU nodes on this machine: with one CPU per worker,
    each node hosts one of the two actors; the dataset is the one-process dataset."""
    pytest.importorskip("ray", reason="the ray extra is not installed")
    from ray.cluster_utils import Cluster

    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1})
    try:
        cluster.add_node(num_cpus=1)
        cluster.wait_for_nodes()
        out = tmp_path / "cluster"
        generate(_config(out, workers=2, backend="ray", ray_address=cluster.address), progress=False)
        assert _bytes(out) == _bytes(small_run[0])
    finally:
        cluster.shutdown()


RAY_RUN = ["--n", "48", "--episodes-per-shard", "4", "--set", "k=4", "--no-progress"]
#: long enough that Ray's workers start (seconds) before this process has run every block itself
LONG_RAY_RUN = ["--n", "200", *RAY_RUN[2:]]


def _ray_command(out, args=RAY_RUN):
    """A small `vicogym generate` on 2 Ray workers, as a command line."""
    return [sys.executable, "-m", "vicogym.cli", "generate", *args, "--workers", "2", "--backend", "ray",
            "--out", str(out)]


def _marked(owner):
    """Processes that carry the mark of ``owner`` (see vicogym.processes.reap_with_this_process)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if f"VICOGYM_OWNER={owner}".encode() in (entry / "environ").read_bytes().split(b"\0"):
                    found.append(int(entry.name))
            except OSError:
                continue
    return [p for p in found if _alive(p)]


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc").is_dir(), reason="needs /proc to find Ray's processes")
def test_a_local_ray_instance_dies_with_the_run_on_kill_9_and_the_run_resumes(tmp_path):
    """kill -9 in the middle of a Ray run leaves no Ray process; the same command then
    finishes the run, and the dataset is the uninterrupted one."""
    pytest.importorskip("ray", reason="the ray extra is not installed")
    args, cmd = RAY_RUN, _ray_command(tmp_path / "killed")
    parent = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.time() + 90
        while time.time() < deadline and not list((tmp_path / "killed").glob("part-*.parquet")):
            time.sleep(0.5)
        ray_processes = _marked(parent.pid)
        assert len(ray_processes) >= 3, "Ray did not start"  # GCS, raylet, the actors
        os.kill(parent.pid, signal.SIGKILL)
        parent.wait(timeout=30)
        deadline = time.time() + 20
        while time.time() < deadline and _marked(parent.pid):
            time.sleep(0.2)
        assert not _marked(parent.pid)
        assert len(list((tmp_path / "killed").glob("part-*.parquet"))) < 12, "the run ended before the kill"
    finally:
        parent.kill()
        for p in _marked(parent.pid):
            os.kill(p, signal.SIGKILL)
    assert subprocess.run(cmd, capture_output=True).returncode == 0
    assert runner.invoke(app, ["generate", *args, "--out", str(tmp_path / "whole")]).exit_code == 0
    assert _bytes(tmp_path / "killed") == _bytes(tmp_path / "whole") and verify(tmp_path / "killed").ok


def test_a_run_at_a_filesystem_url_is_the_local_run_and_resumes(small_run, tmp_path):
    """--out as an fsspec URL (here the in-memory filesystem): the same shards, written
    whole; a crash (a lost shard, no manifest, a temporary upload left behind) resumes to
    the same bytes; verify, export and report read the URL."""
    import fsspec

    fs = fsspec.filesystem("memory")
    url = "memory://vicogym-test/run"
    try:
        generate(_config(url), progress=False)
        local = sorted(small_run[0].glob("part-*.parquet"))
        remote = sorted(fs.glob("/vicogym-test/run/part-*.parquet"))
        assert [fs.cat(p) for p in remote] == _bytes(small_run[0])[:len(local)] and len(remote) == len(local)
        assert fs.exists("/vicogym-test/run/run.json") and not fs.glob("/vicogym-test/run/*.tmp")
        fs.rm(remote[-1])
        fs.rm("/vicogym-test/run/manifest.json")
        fs.pipe("/vicogym-test/run/part-00099.parquet.tmp", b"partial")
        generate(_config(url), progress=False)
        remote = sorted(fs.glob("/vicogym-test/run/part-*.parquet"))
        assert [fs.cat(p) for p in remote] == _bytes(small_run[0])[:len(local)]
        assert verify(url).ok
        with pytest.raises(RunError, match="holds a run with other settings \\(differing: seed\\)"):
            generate(_config(url, seed=8), progress=False)
        result = runner.invoke(app, ["report", url])
        assert result.exit_code == 2 and "give --out, a local folder for the report" in result.output
        result = runner.invoke(app, ["report", url, "--out", str(tmp_path / "rep")])
        assert result.exit_code == 0 and (tmp_path / "rep" / "index.html").is_file(), result.output
        result = runner.invoke(app, ["verify", url, "--no-images"])
        assert result.exit_code == 0 and "rows verified" in result.output, result.output
    finally:
        if fs.exists("/vicogym-test"):
            fs.rm("/vicogym-test", recursive=True)


def test_a_url_out_without_its_filesystem_says_what_to_install(tmp_path):
    result = runner.invoke(app, ["generate", "--out", "nosuchscheme://bucket/run", "--n", "1", "--no-progress"])
    assert result.exit_code == 2 and "--out nosuchscheme://bucket/run" in result.output
    assert "or give a local folder" in " ".join(result.output.split())


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc").is_dir(), reason="needs /proc to find Ray's processes")
def test_a_ray_worker_killed_mid_run_is_replaced_and_its_shard_retried(tmp_path):
    pytest.importorskip("ray", reason="the ray extra is not installed")
    args, cmd = LONG_RAY_RUN, _ray_command(tmp_path / "chaos", LONG_RAY_RUN)
    parent = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline, workers = time.time() + 90, []
        while time.time() < deadline and not workers:
            time.sleep(0.2)
            workers = [p for p in _marked(parent.pid) if b"_RayBlockWorker" in Path(f"/proc/{p}/cmdline").read_bytes()]
        assert workers, "no Ray worker found"
        time.sleep(1.0)  # let it take a block
        os.kill(workers[0], signal.SIGKILL)
        _, err = parent.communicate(timeout=240)
        assert parent.returncode == 0, err.decode()[-2000:]
    finally:
        parent.kill()
    assert runner.invoke(app, ["generate", *args, "--out", str(tmp_path / "whole")]).exit_code == 0
    assert _bytes(tmp_path / "chaos") == _bytes(tmp_path / "whole")


def test_threads_of_native_pools_are_limited_and_restored():
    from threadpoolctl import threadpool_info

    from vicogym.processes import limit_threads

    before = [pool["num_threads"] for pool in threadpool_info()]
    with limit_threads(1):
        assert all(pool["num_threads"] == 1 for pool in threadpool_info())
        assert os.environ["OPENBLAS_NUM_THREADS"] == "1"
    assert [pool["num_threads"] for pool in threadpool_info()] == before


def _children(pid):
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(entry.name))
    return found


def _alive(pid):
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc").is_dir(), reason="needs /proc to find worker processes")
@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM])
def test_workers_die_with_their_parent(tmp_path, sig):
    cmd = [sys.executable, "-m", "vicogym.cli", "generate", "--n", "400", "--workers", "2", "--out",
           str(tmp_path / "killed"), "--no-progress"]
    parent = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.time() + 60
        workers = []
        while time.time() < deadline and len(workers) < 2:
            time.sleep(0.5)
            workers = [p for p in _children(parent.pid) if "spawn_main" in Path(f"/proc/{p}/cmdline").read_text()]
        assert len(workers) == 2, "the workers did not start"
        os.kill(parent.pid, sig)
        parent.wait(timeout=30)
        deadline = time.time() + 20
        while time.time() < deadline and any(_alive(p) for p in workers):
            time.sleep(0.2)
        assert not any(_alive(p) for p in workers)
    finally:
        parent.kill()
        for p in _children(parent.pid):
            os.kill(p, signal.SIGKILL)


def test_keep_policies(tmp_path):
    rows_all = tmp_path / "all"
    generate(_config(rows_all, n=12, seed=1, keep="all", env_kwargs={"k": 4, "max_turns": 3}), progress=False)
    rows = _rows(rows_all)
    assert len(rows) == 12 and len({r["extra_info"]["index"] for r in rows}) < 12
    sweet = tmp_path / "sweet"
    generate(_config(sweet, n=4, seed=1, keep="sweet", env_kwargs={"k": 4, "max_turns": 3}), progress=False)
    assert all(0.35 <= r["pass_rate"] <= 0.65 for r in _rows(sweet))


def test_chartqa_source_generation_verifies(chartqa, tmp_path):
    out = tmp_path / "chartqa"
    result = runner.invoke(app, ["generate", "vicogym/Chart-v0", "--n", "6", "--out", str(out), "--k", "4",
                                 "--source", str(chartqa), "--no-progress", "--episodes-per-shard", "4"])
    assert result.exit_code == 0, result.output
    rows = _rows(out)
    assert {r["label_rule"] for r in rows} <= {"cell", "program", "invariant"}
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
    assert result.exit_code == 2 and "empty does not exist; name the folder a run's --out wrote" in result.output
    assert not (tmp_path / "x").exists() and not (tmp_path / "y").exists()


@pytest.mark.parametrize(
    "args, message",
    [
        (["--set", "temlates=[\"lookup\"]"], "vicogym/Chart-v0 has no setting 'temlates'; did you mean 'templates'?"),
        (["--set", "k"], "expected --set KEY=VALUE, got 'k'"),
        (["--set", "k=0"], "expected k to be an integer in [1, 4096], got 0"),
        (["--set", "templates=[\"nope\"]"], "expected template ids in"),
        (["--source", "/no/such/folder"], "expected source 'procedural' or a ChartQA folder"),
        (["--backend", "dask"], "expected backend in ['local', 'ray'], got 'dask'"),
        (["--ray-cpus", "-1"], "expected ray_cpus to be a non-negative number (resources per Ray worker), got -1.0"),
        (["--threads", "0"], "expected threads to be a positive integer, got 0"),
    ],
)
def test_cli_settings_are_checked_with_suggestions(tmp_path, args, message):
    result = runner.invoke(app, ["generate", "--out", str(tmp_path / "o"), "--n", "1", "--no-progress", *args])
    assert result.exit_code == 2 and message in " ".join(result.output.split()), result.output
    assert not (tmp_path / "o" / "run.json").exists()


def test_cli_config_files_and_set_reach_the_env(tmp_path):
    toml = tmp_path / "run.toml"
    toml.write_text('n = 2\nseed = 3\nepisodes_per_shard = 2\n[env_kwargs]\nk = 2\ntemplates = ["lookup"]\n')
    out = tmp_path / "toml"
    result = runner.invoke(app, ["generate", "--config", str(toml), "--out", str(out), "--no-progress",
                                 "--set", "max_turns=1"])
    assert result.exit_code == 0, result.output
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["config"]["env_kwargs"] == {"k": 2, "max_turns": 1, "templates": ["lookup"]}
    assert manifest["env"]["env_config"]["templates"] == ["lookup"]
    assert all(json.loads(r["label"])["program"]["template"] == "lookup" for r in _rows(out))
    bad = tmp_path / "bad.json"
    bad.write_text('{"n": 2, "sed": 1}')
    result = runner.invoke(app, ["generate", "--config", str(bad), "--out", str(tmp_path / "j")])
    assert result.exit_code == 2 and "unknown generate setting 'sed'; did you mean 'seed'?" in result.output
    bad.write_text('{"n": 2,')
    result = runner.invoke(app, ["generate", "--config", str(bad)])
    assert result.exit_code == 2 and "not valid JSON" in result.output


def test_resume_refuses_a_shard_changed_after_it_was_written(copy_run):
    bad = copy_run()
    path = sorted(bad.glob("part-*.parquet"))[0]
    table = pq.read_table(path)
    rows = table.to_pylist()
    rows[0]["reward"] = 0.5
    pq.write_table(pa.Table.from_pylist(rows, schema=table.schema).replace_schema_metadata(table.schema.metadata), path)
    result = runner.invoke(app, ["generate", "--out", str(bad), "--n", "10", "--seed", "7", "--episodes-per-shard", "4",
                                 "--k", "4", "--max-turns", "2", "--no-progress"])
    assert result.exit_code == 2, result.output
    assert f"shard {path} changed since it was written" in " ".join(result.output.split())
    assert not verify(bad).ok  # and nothing re-approved it


def test_resume_names_a_shard_without_statistics(copy_run):
    bad = copy_run()
    path = sorted(bad.glob("part-*.parquet"))[-1]
    (bad / "entries" / path.name.replace(".parquet", ".json")).unlink()  # moved into place, not yet recorded
    pq.write_table(pq.read_table(path).replace_schema_metadata(None), path)
    result = runner.invoke(app, ["generate", "--out", str(bad), "--n", "10", "--seed", "7", "--episodes-per-shard", "4",
                                 "--k", "4", "--max-turns", "2", "--no-progress"])
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert "carries no vicogym statistics" in " ".join(result.output.split())


@pytest.mark.parametrize("files, message", [
    ({"notes.txt": "mine"}, "is not empty (notes.txt); use a new or empty --out"),
    ({"run.json": '{"my": "config"}'}, "run.json is not a vicogym run file"),
    ({"manifest.json": "{}"}, "holds manifest.json but no run.json: not a vicogym run"),
])
def test_generate_leaves_folders_that_are_not_runs_alone(tmp_path, files, message):
    folder = tmp_path / "project"
    folder.mkdir()
    for name, text in files.items():
        (folder / name).write_text(text)
    with pytest.raises(RunError, match=message.replace("(", r"\(").replace(")", r"\)")):
        generate(_config(folder, n=2), progress=False)
    assert {p.name: p.read_text() for p in folder.iterdir() if p.name != ".lock"} == files
    with pytest.raises(RunError, match="--out is empty"):
        generate(_config("", n=2), progress=False)


def test_a_second_writer_is_refused(tmp_path):
    from vicogym.runs.shards import RunFolder

    holder = RunFolder(tmp_path / "busy")
    holder.lock()
    try:
        with pytest.raises(RunError, match="another vicogym run is writing to"):
            generate(_config(tmp_path / "busy", n=2), progress=False)
    finally:
        holder.unlock()
    assert generate(_config(tmp_path / "busy", n=2), progress=False)["finished"]


def test_an_interrupted_run_is_reported_by_verify_and_finished_by_the_same_command(small_run, tmp_path):
    out, _ = small_run
    partial = tmp_path / "partial"
    generate(_config(partial), progress=False)
    manifest = json.loads((partial / "manifest.json").read_text())
    manifest["finished"] = False  # as the manifest written after each shard reads mid-run
    (partial / "manifest.json").write_text(json.dumps(manifest))
    assert "the run did not finish" in " ".join(p[1] for p in verify(partial).problems)
    generate(_config(partial), progress=False)
    assert verify(partial).ok and _bytes(partial) == _bytes(out)


def test_a_small_n_runs_only_the_episodes_it_needs(tmp_path):
    """A run stops with the episode that makes its n-th sample, inside a shard's block:
    ``--n 1`` runs episodes until one keeps a sample, not a whole 16-episode block."""
    from vicogym.runs.generate import run_block

    config = _config(tmp_path / "one", n=1, episodes_per_shard=16)
    whole = run_block(config, 0)  # all 16 episodes of the first block
    first = next(i for i, (rows, _, _) in enumerate(whole) if rows)
    manifest = generate(config, progress=False)
    assert manifest["counts"]["samples"] == 1
    assert manifest["counts"]["episodes"] == first + 1 < 16
    assert next(run_entries(config.out))["episodes"] == [0, first + 1]
    assert len(run_block(config, 0, needed=1)) == first + 1


@pytest.mark.parametrize("in_flight", [1, 3])
def test_a_shard_is_the_same_whether_its_block_stopped_early_or_ran_whole(tmp_path, in_flight):
    """The last shard keeps the episodes up to the n-th sample: one worker stops its block
    there (episodes run one by one or side by side), workers running blocks ahead run them
    whole; both write the same shard."""
    from vicogym.runs.generate import run_block, shard_contents

    config = _config(tmp_path / "x", n=5, episodes_per_shard=8, episodes_in_flight=in_flight)
    whole = run_block(config, 0)
    made = sum(len(rows) for rows, _, _ in whole)
    assert made >= 3
    for needed in range(1, made + 1):
        early = run_block(config, 0, needed=needed)
        assert sum(len(rows) for rows, _, _ in early) >= needed
        assert shard_contents(early, needed) == shard_contents(whole, needed)
        rows, stats, _ = shard_contents(whole, needed)
        assert len(rows) == needed and stats["episodes"] == len(early)


def test_a_write_the_machine_refuses_names_the_file_and_what_to_do(tmp_path):
    """A file-size limit (``ulimit -f``) makes every write past it fail with EFBIG, as a full
    disk fails with ENOSPC: the command exits 2 with one line naming the file, no traceback."""
    import resource

    def limited():
        resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))

    cmd = [sys.executable, "-m", "vicogym.cli", "generate", "--n", "8", "--out",
           str(tmp_path / "run"), "--no-progress"]
    done = subprocess.run(cmd, capture_output=True, text=True, preexec_fn=limited, timeout=300)
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr and "cannot write" in done.stderr, done.stderr
    assert str(tmp_path / "run") in " ".join(done.stderr.split()) and "ulimit -f" in done.stderr, done.stderr
    from vicogym.runs.rounds import writing

    with pytest.raises(RunError, match=r"cannot write /x/y.parquet \(No space left on device\); free some space"), \
            writing(Path("/x/y.parquet")):
            raise OSError(errno.ENOSPC, "No space left on device")


@pytest.mark.parametrize("flags, expected", [
    (["--set", "k=" + "[" * 100_000], "--set k: the value is nested too deeply to read"),
    (["--set", "k=" + "7" * 5000], "--set k: the value is JSON with an integer too long to read"),
    (["--actor", '{"name": ' + "[" * 100_000 + "}"], "is nested too deeply to read"),
    (["--config", "deep.json"], "deep.json: nested too deeply to read; flatten it"),
    (["--config", "deep.toml"], "deep.toml: nested too deeply to read; flatten it"),
    (["--config", "long.json"], "long.json: a value Python will not read"),
])
def test_settings_nested_too_deeply_or_too_long_are_one_line_not_a_traceback(tmp_path, monkeypatch, flags, expected):
    monkeypatch.chdir(tmp_path)
    Path("deep.json").write_text('{"env_kwargs": {"k": ' + "[" * 100_000 + "]" * 100_000 + "}}")
    Path("deep.toml").write_text("k = " + "[" * 100_000 + "]" * 100_000)
    Path("long.json").write_text('{"env_kwargs": {"k": ' + "7" * 5000 + "}}")
    result = runner.invoke(app, ["generate", "vicogym/Chart-v0", *flags, "--n", "1", "--out", "out"])
    assert result.exit_code != 0 and (result.exception is None or isinstance(result.exception, SystemExit))
    assert expected in result.output and "Traceback" not in result.output
    assert len([line for line in result.output.splitlines() if line.startswith("error:")]) == 1


def test_the_run_summary_names_the_actor_that_gave_the_pass_rates(tmp_path, capsys):
    """A run with the simulated actor says that its pass rates are a stand-in's and how to
    plug a model in; a run whose manifest records a model names the model instead."""
    from vicogym.cli import _summary

    out = tmp_path / "run"
    result = runner.invoke(app, ["generate", "--n", "2", "--k", "2", "--max-turns", "1", "--out", str(out),
                                 "--no-progress"])
    assert result.exit_code == 0, result.output
    said = " ".join(result.output.split())
    assert ("note: pass rates from the simulated actor (a stand-in, not a model); plug in a real model with --actor "
            "openai:MODEL@URL") in said
    assert said.count("the simulated actor (a stand-in, not a model)") == 2  # the table's row and the note
    manifest = json.loads((out / "manifest.json").read_text())
    manifest["env"]["env_config"]["actor"] = "openai:qwen2.5-vl@http://localhost:8000/v1"
    capsys.readouterr()
    _summary(manifest)
    said = " ".join(capsys.readouterr().out.split())
    assert "pass rates from openai:qwen2.5-vl@http://localhost:8000/v1" in said
    assert "stand-in" not in said and "note:" not in said
