"""The instruction-synthesis loop (VISA): planning, reflection, probing, memory, resume,
and what a run folder gives back (statistics, report, SFT export, verl reward, verify)."""

import json
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from vicogym.cli import app
from vicogym.errors import RunError
from vicogym.instruct import synthesis
from vicogym.instruct.memory import Memory
from vicogym.instruct.run_folder import export_instruct, iter_samples, statistics, verify_instruct, write_report_page
from vicogym.instruct.synthesis import (
    SynthesizeConfig,
    Synthesizer,
    choose_recovery,
    conflicts,
    synthesize,
    type_weights,
    witness,
)
from vicogym.programs.instruct import REGISTRY
from vicogym.verl_reward import compute_score

SMALL = {"images": ["vicogym/Chart-v0", "vicogym/Natural-v0"], "per_round": 4, "probes": 2, "candidates": 2,
         "progress": False}


def small(tmp_path, name="run", **more):
    return SynthesizeConfig.from_mapping({**SMALL, "out": str(tmp_path / name), "n": 8, **more})


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """One small run shared by the tests that only read it."""
    config = small(tmp_path_factory.mktemp("synth"))
    manifest = synthesize(config)
    return config, manifest


def _shard_hashes(folder):
    memory = Memory(Path(folder) / synthesis.MEMORY_FILE)
    try:
        return [(r["round"], r["shard"], r["sha256"]) for r in memory.rounds()], [s["id"] for s in memory.samples()]
    finally:
        memory.close()


def test_a_run_accepts_only_responses_that_satisfy_every_constraint(run):
    config, manifest = run
    rows = list(iter_samples(config.out))
    assert manifest["samples"] == len(rows) >= config.n
    for row in rows:
        constraints = json.loads(row["constraints"])
        assert config.min_constraints - 1 <= len(constraints) <= config.max_constraints  # a simplified set drops one
        assert all(v["pass"] for v in json.loads(row["verdicts"]))
        assert row["level"] in ("easy", "medium", "hard") and 0 <= row["difficulty"] <= 1
        assert len(row["probe_scores"]) == config.probes
        assert row["prompt"][0]["content"] == "<image>" + row["instruction"]
    categories = {c["category"] for row in rows for c in json.loads(row["constraints"])}
    assert len(categories) >= 5
    grounded = [c for row in rows for c in json.loads(row["constraints"]) if REGISTRY[c["id"]].needs]
    assert grounded, "the chart's rows and the natural images' targets ground some constraints"


def test_every_row_verifies_and_tampering_is_caught(run, tmp_path):
    config, _ = run
    rows, problems = verify_instruct(config.out)
    assert rows >= config.n and problems == []


def test_same_seed_same_bytes_and_another_seed_differs(run, tmp_path):
    config, _ = run
    again = small(tmp_path, "again")
    synthesize(again)
    assert _shard_hashes(again.out) == _shard_hashes(config.out)
    other = small(tmp_path, "other", seed=1)
    synthesize(other)
    assert _shard_hashes(other.out)[0] != _shard_hashes(config.out)[0]


def test_a_killed_run_resumes_without_duplicates_or_gaps(run, tmp_path, monkeypatch):
    config, _ = run
    crashed = small(tmp_path, "crashed")
    real = Memory.commit_round

    def crash_on_round_one(self, round, *args, **kwargs):
        if round == 1:
            raise KeyboardInterrupt  # killed after round 1's shard was written, before its commit
        return real(self, round, *args, **kwargs)

    monkeypatch.setattr(Memory, "commit_round", crash_on_round_one)
    with pytest.raises(KeyboardInterrupt):
        synthesize(crashed)
    assert (Path(crashed.out) / "part-00001.parquet").exists()  # written, not committed
    monkeypatch.setattr(Memory, "commit_round", real)
    synthesize(crashed)
    assert _shard_hashes(crashed.out) == _shard_hashes(config.out)
    ids = [row["id"] for row in iter_samples(crashed.out)]
    assert len(ids) == len(set(ids))


def test_a_resume_with_other_settings_is_refused_and_a_larger_n_extends(run, tmp_path):
    config = small(tmp_path, "extend", n=4)
    synthesize(config)
    with pytest.raises(RunError, match="other settings \\(seed differ"):
        synthesize(small(tmp_path, "extend", n=4, seed=3))
    first = _shard_hashes(config.out)[0]
    synthesize(small(tmp_path, "extend", n=8))
    assert _shard_hashes(config.out)[0][:len(first)] == first


def test_statistics_report_and_sft_export(run, tmp_path):
    config, _ = run
    stats = statistics(config.out)
    assert stats["samples"] >= config.n
    assert config.min_constraints - 1 <= stats["constraints_per_sample"]["mean"] <= config.max_constraints
    for row in stats["cooccurrence"].values():
        assert all(0 <= p <= 1 for p in row.values())
    assert 0 < stats["mean_pairwise_cosine_distance"] <= 2
    assert sum(stats["difficulty"]["levels"].values()) == stats["samples"]
    assert sum(stats["recovery_attempts"].values()) == stats["samples"]
    assert [g["round"] for g in stats["registry_growth"]] == list(range(len(stats["registry_growth"])))
    page = write_report_page(config.out, tmp_path / "report")
    for name in ("constraints_per_sample.png", "cooccurrence.png", "failure_by_category.png", "registry_growth.png",
                 "recovery_attempts.png", "difficulty.png", "statistics.json"):
        assert (page.parent / name).is_file(), name
    counts = export_instruct(config.out, tmp_path / "sft")
    records = json.loads((tmp_path / "sft" / "instruct_sft.json").read_text())
    assert counts["records"] == len(records) == stats["samples"]
    info = json.loads((tmp_path / "sft" / "dataset_info.json").read_text())
    assert info["vicogym_instruct"]["formatting"] == "sharegpt"
    assert all((tmp_path / "sft" / r["images"][0]).is_file() for r in records)


def test_the_verl_reward_is_the_constraint_pass_rate(run):
    config, _ = run
    row = next(iter_samples(config.out))
    truth = row["reward_model"]["ground_truth"]
    assert compute_score(row["data_source"], row["response"], truth, row["extra_info"]) == 1.0
    constraints = json.loads(truth)["constraints"]
    code = [c for c in constraints if REGISTRY[c["id"]].track == "code"]
    assert compute_score(row["data_source"], "  \n", truth) == 0.0  # a blank response follows nothing
    short = "Fine."
    score = compute_score(row["data_source"], short, truth)
    failing = sum(not REGISTRY[c["id"]](short, **c["params"]).passed for c in code)
    assert score == pytest.approx((len(code) - failing) / len(code))


# -- planning ------------------------------------------------------------------------------------
def test_conflicts_refuse_contradictory_sets():
    at_most = {"id": "word_count", "params": {"n": 50, "relation": "at most"}}
    at_least = {"id": "word_count", "params": {"n": 100, "relation": "at least"}}
    assert "twice" in conflicts([at_most], at_least)
    measured = [c for c in REGISTRY.values() if c.measure == "words" and c.id != "word_count"]
    for contract in measured[:1]:
        assert conflicts([at_most], {"id": contract.id, "params": {"n": 100, **(
            {"relation": "at least"} if "relation" in contract.params else {})}}) is not None
    groups = {}
    for contract in REGISTRY.values():
        for group in contract.exclusive:
            groups.setdefault(group, []).append(contract.id)
    shared = next(ids for ids in groups.values() if len(ids) > 1)
    a, b = shared[:2]
    assert conflicts([{"id": a, "params": {}}], {"id": b, "params": {}}) is not None


@pytest.mark.parametrize("chosen, new", [
    ({"id": "lowercase", "params": {}}, {"id": "postscript", "params": {"marker": "P.P.S"}}),
    ({"id": "uppercase", "params": {}}, {"id": "argument_structure", "params": {}}),  # lines starting "Claim:"
    ({"id": "sections", "params": {"n": 2, "splitter": "SECTION", "relation": "exactly"}},
     {"id": "paragraph_start", "params": {"word": "Market"}}),
    ({"id": "lowercase", "params": {}}, {"id": "prefix", "params": {"text": "Dear Sir"}}),
    ({"id": "language", "params": {"language": "de"}}, {"id": "include_keywords", "params": {"keywords": ["clearly"]}}),
    ({"id": "uppercase", "params": {}},
     {"id": "temporal_sequence", "params": {"markers": ["First", "Then", "Finally"]}}),
    ({"id": "number_precision", "params": {"decimals": 1}},  # "PART 1.0" headings
     {"id": "sections", "params": {"n": 2, "splitter": "PART", "relation": "exactly"}}),
    ({"id": "sentence_count", "params": {"n": 2, "relation": "exactly"}},  # three paragraphs in two sentences
     {"id": "paragraph_count", "params": {"n": 3}}),
])
def test_sets_a_person_reads_as_contradictory_are_refused_though_a_witness_passes(chosen, new):
    assert witness([chosen, new], "A plain answer about the chart. " * 4, np.random.default_rng(0)) is not None or \
        chosen["id"] in ("sections", "language", "sentence_count")  # the verifiers' reading lets the others through
    assert conflicts([chosen], new) is not None and conflicts([new], chosen) is not None


def test_types_that_do_not_fit_an_image_are_not_planned_for_it():
    from vicogym.programs.instruct import REGISTRY as TYPES

    photo, chart = {"source": "natural"}, {"source": "chart", "rows": [{"label": "a", "value": 64.0}]}
    for type_id in ("json_format", "yaml_mapping", "xml_document", "code_block"):
        assert TYPES[type_id].fit(photo, {}) is not None and TYPES[type_id].fit(chart, {}) is None
    assert TYPES["scene_mood"].fit(chart, {}) is not None and TYPES["scene_mood"].fit(photo, {}) is None
    assert "not 3" in TYPES["number_precision"].fit(chart, {"decimals": 3})  # "64.000" for a chart printing 64
    assert TYPES["number_precision"].fit(chart, {"decimals": 0}) is None
    assert TYPES["number_precision"].fit({"source": "chart", "rows": [{"label": "a", "value": 2.25}]},
                                         {"decimals": 2}) is None
    from vicogym.editors.instruct.text import VOCAB

    assert not set(VOCAB) & {"river", "meadow", "garden", "forest"}  # no keyword asserts what an image lacks


def test_one_paragraph_is_never_asked_with_a_divider_between_paragraphs():
    from vicogym.editors.instruct import EDITS

    draws = {EDITS["paragraph_count"].draw(np.random.default_rng(seed))["n"] for seed in range(200)}
    assert min(draws) >= 2


def test_planned_sets_hold_no_contradiction_a_person_would_read(tmp_path):
    from vicogym.instruct.synthesis import read_as_a_person_would

    config = small(tmp_path)
    synth = Synthesizer(config)
    source = synthesis.ImageSource(config, synth.perceiver)
    rng = np.random.default_rng(3)
    for _ in range(40):
        picture = source.draw(rng)
        plan = synth.plan(picture, {}, {}, np.zeros((0, 0), np.float32), rng)
        constraints = plan["constraints"]
        for a in constraints:
            for b in constraints:
                if a is not b:
                    assert read_as_a_person_would(a, b) is None, (a, b)
    source.close()


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 50), min_size=3, max_size=3), st.integers(0, 2), st.integers(1, 30))
def test_weights_favour_uncovered_and_failed_types(coverage, failed_type, fails):
    types = ["a", "b", "c"]
    cover = dict(zip(types, coverage))
    plain = type_weights(types, cover, {}, 1.0, 3.0)
    order = np.argsort(coverage)
    assert plain[order[0]] >= plain[order[-1]]  # less covered, more weight
    failed = type_weights(types, cover, {types[failed_type]: (fails, fails)}, 1.0, 3.0)
    assert failed[failed_type] > plain[failed_type]
    assert np.allclose(np.delete(failed, failed_type), np.delete(plain, failed_type))


def test_the_witness_proves_a_set_satisfiable_or_says_it_is_not():
    rng = np.random.default_rng(0)
    ok = [{"id": "word_count", "params": {"n": 30, "relation": "at most"}},
          {"id": "include_keywords", "params": {"keywords": ["blue"]}}]
    response = witness(ok, "A long description " * 20, rng)
    assert response is not None and all(REGISTRY[c["id"]](response, **c["params"]).passed for c in ok)
    contradictory = [{"id": "lowercase", "params": {}}, {"id": "uppercase", "params": {}}]
    assert witness(contradictory, "Some Text here", rng) is None


def test_recovery_moves_from_edit_to_rewrite_to_dropping_the_constraint():
    failed = [{"id": "word_count"}]
    constraints = [{"id": "word_count"}, {"id": "lowercase"}, {"id": "no_commas"}]
    assert choose_recovery(failed, [], constraints, 2) == ("response_edit", "word_count")
    history = [{"failed": failed}]
    assert choose_recovery(failed, history, constraints, 2) == ("instruction_rewrite", "word_count")
    assert choose_recovery(failed, history * 2, constraints, 2) == ("simplify", "word_count")
    assert choose_recovery(failed, history * 2, constraints[:2], 2) == ("instruction_rewrite", "word_count")


def test_reflection_is_bounded_and_recovers_a_weak_writer(tmp_path):
    config = small(tmp_path, writer={"kind": "simulated", "skill": 0.0}, n=4)
    manifest = synthesize(config)
    rows = list(iter_samples(config.out))
    assert manifest["samples"] >= 4 and all(1 <= row["attempts"] <= 3 for row in rows)
    kinds = {step["recovery"] for row in rows for step in json.loads(row["recoveries"])}
    assert "response_edit" in kinds


def test_the_kept_candidate_is_the_one_farthest_from_the_pool(tmp_path):
    config = small(tmp_path, candidates=4)
    synth = Synthesizer(config)
    source = synthesis.ImageSource(config, synth.perceiver)
    picture = source.draw(np.random.default_rng(5))
    fresh = synth.plan(picture, {}, {}, np.zeros((0, 0), np.float32), np.random.default_rng(1))
    pool = np.stack([fresh["embedding"]])
    again = synth.plan(picture, {}, {}, pool, np.random.default_rng(1))  # the same candidates, one now in the pool
    assert again["distance"] > 0 and again["instruction"] != fresh["instruction"]
    source.close()


@pytest.mark.usefixtures("walls")
def test_discovery_grows_the_registry_and_the_run_stores_its_types_once(tmp_path):
    config = small(tmp_path, discover=1.0, n=4)
    manifest = synthesize(config)
    memory = Memory(Path(config.out) / synthesis.MEMORY_FILE)
    try:
        records, rounds = memory.discovered(), memory.rounds()
    finally:
        memory.close()
    assert records and all(REGISTRY[r["id"]].origin == "discovered" for r in records)
    assert rounds[0]["stats"]["discovery"]
    stored = json.loads((Path(config.out) / "types.json").read_text())["types"]
    assert [t["id"] for t in stored] == [r["id"] for r in records] == [t["id"] for t in manifest["types"]["types"]]
    assert all(t["proposal"]["code"] == r["code"] for t, r in zip(stored, records))  # (rows: tests/test_run_types.py)


# -- command line --------------------------------------------------------------------------------
def test_the_command_runs_and_bad_settings_get_a_message(tmp_path):
    runner = CliRunner()
    out = tmp_path / "cli"
    result = runner.invoke(app, ["synthesize", "--n", "4", "--per-round", "4", "--probes", "2", "--out", str(out),
                                 "--images", "vicogym/Chart-v0"])
    assert result.exit_code == 0, result.output
    assert "samples in" in result.output and (out / "memory.sqlite").is_file()
    for args, message in [(["--per-round", "0"], "expected per_round to be an integer >= 1, got 0"),
                          (["--writer", "gpt"], "expected the writer as 'simulated', or 'openai:MODEL@URL', got 'gpt'"),
                          (["--images", "no/such/folder"], "not a folder"),
                          (["--set", "per_rond=3"], "did you mean 'per_round'?")]:
        result = runner.invoke(app, ["synthesize", "--out", str(tmp_path / "bad"), *args])
        assert result.exit_code == 2 and message in result.output, (args, result.output)


def test_verify_report_and_export_commands_serve_synthesis_runs(run, tmp_path):
    config, _ = run
    runner = CliRunner()
    result = runner.invoke(app, ["verify", config.out])
    assert result.exit_code == 0 and "rows verified" in result.output, result.output
    result = runner.invoke(app, ["report", config.out, "--out", str(tmp_path / "page")])
    assert result.exit_code == 0 and (tmp_path / "page" / "index.html").is_file(), result.output
    result = runner.invoke(app, ["export", config.out, "--out", str(tmp_path / "sft")])
    assert result.exit_code == 0 and (tmp_path / "sft" / "instruct_sft.json").is_file(), result.output


def test_verify_catches_a_tampered_row(run, tmp_path):
    import shutil

    config, _ = run
    copy = tmp_path / "tampered"
    shutil.copytree(config.out, copy)
    shard = sorted(copy.glob("part-*.parquet"))[0]
    table = pq.read_table(shard)
    rows = table.to_pylist()
    rows[0]["response"] = ""  # the reference response no longer satisfies its constraints
    facts = json.loads(rows[1]["facts"])
    if facts.get("rows"):
        facts["rows"][0]["value"] += 1  # the facts no longer follow from the structure
    rows[1]["facts"] = json.dumps(facts, sort_keys=True)
    pq.write_table(type(table).from_pylist(rows, schema=table.schema), shard)
    _, problems = verify_instruct(copy, images=False)
    reasons = " | ".join(why for _, why in problems)
    assert "SHA-256 differs" in reasons and "the reference response fails" in reasons
    assert any(where == rows[0]["id"] for where, _ in problems)


def test_ray_actors_and_threads_give_the_same_samples(run, tmp_path):
    pytest.importorskip("ray", reason="the Ray backend needs the [ray] extra")
    config, _ = run
    on_ray = small(tmp_path, "ray", backend="ray", workers=2)
    synthesize(on_ray)
    threaded = small(tmp_path, "threads", concurrency=4)
    synthesize(threaded)
    assert _shard_hashes(on_ray.out) == _shard_hashes(threaded.out) == _shard_hashes(config.out)


def test_same_bytes_in_processes_with_other_hash_seeds(tmp_path):
    """No output may depend on set or dict-of-set iteration order, which Python's hash
    seed changes from process to process."""
    import os
    import subprocess
    import sys

    hashes = []
    for seed in ("1", "2"):
        out = tmp_path / f"hash{seed}"
        code = ("from vicogym.instruct.synthesis import SynthesizeConfig, synthesize; "
                f"synthesize(SynthesizeConfig(out={str(out)!r}, n=4, per_round=4, probes=2, candidates=2, "
                "images=('vicogym/Chart-v0', 'vicogym/Natural-v0'), progress=False))")
        subprocess.run([sys.executable, "-c", code], check=True, env={**os.environ, "PYTHONHASHSEED": seed},
                       cwd=tmp_path)
        hashes.append(_shard_hashes(out))
    assert hashes[0] == hashes[1]


def test_clevr_scenes_ground_constraints_and_the_run_verifies(tmp_path):
    pytest.importorskip("bpy", reason="CLEVR images need the [clevr] extra (Blender)")
    config = small(tmp_path, "clevr", images=["vicogym/CLEVR-v0"], n=6, per_round=6,
                   image_settings={"vicogym/CLEVR-v0": {"engine": "workbench", "width": 160, "height": 120}})
    synthesize(config)
    rows = list(iter_samples(config.out))
    grounded = [c for row in rows for c in json.loads(row["constraints"]) if REGISTRY[c["id"]].needs]
    assert len(grounded) >= len(rows)  # every set starts with one where the scene supports it
    for row in rows:
        facts = json.loads(row["facts"])
        assert facts["source"] == "clevr" and all("material" not in o for o in facts["objects"])  # Workbench
    rows_read, problems = verify_instruct(config.out)
    assert rows_read == len(rows) and problems == []


def test_a_second_writer_is_refused_and_loses_nothing(tmp_path):
    from vicogym.runs.shards import RunFolder

    config = small(tmp_path, "busy", n=4)
    holder = RunFolder(config.out)
    holder.lock()
    try:
        with pytest.raises(RunError, match="another vicogym run is writing to"):
            synthesize(config)
    finally:
        holder.unlock()
    assert synthesize(config)["samples"] >= 4


def test_a_run_that_failed_before_its_first_round_does_not_block_a_retry_with_other_settings(tmp_path):
    import socket

    with socket.socket() as s:  # a port nothing listens on: the writer's server is down
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    dead = small(tmp_path, writer=f"openai:writer@http://127.0.0.1:{port}/v1", n=4)
    with pytest.raises(Exception) as info:
        synthesize(dead)
    assert "writer" in str(info.value).lower() or "connect" in str(info.value).lower(), info.value
    manifest = synthesize(small(tmp_path, n=4))  # the same --out, the writer fixed
    assert manifest["samples"] >= 4
    with pytest.raises(RunError, match="writer"):  # once a round is committed, other settings are refused again
        synthesize(small(tmp_path, writer={"kind": "simulated", "skill": 0.5}, n=8))


def test_an_export_of_stand_in_text_warns_and_records_the_stand_ins(run, tmp_path):
    """The simulated writer's responses are placeholders and the simulated target sets the
    difficulty: `vicogym export` says so on stderr and in the dataset_info.json entry, and
    the report page says so at its top; where models did it all, neither says anything."""
    import shutil

    config, _ = run
    result = CliRunner().invoke(app, ["export", config.out, "--out", str(tmp_path / "sft")])
    assert result.exit_code == 0, result.output
    said = " ".join(result.stderr.split())
    assert said.startswith("warning: the responses are the simulated writer's placeholders"), said
    assert "--writer openai:MODEL@URL" in said and "recorded as stand_in in" in said
    stand_in = json.loads((tmp_path / "sft" / "dataset_info.json").read_text())["vicogym_instruct"]["stand_in"]
    assert {k: v for k, v in stand_in.items() if k != "note"} == dict.fromkeys(("writer", "target", "judge"),
                                                                                "simulated")
    assert "placeholders" in stand_in["note"] and "simulated target's pass rates" in stand_in["note"]
    page = write_report_page(config.out, tmp_path / "page").read_text()
    assert '<p class="stand-in">the responses are the simulated writer' in page

    copy = tmp_path / "models"
    shutil.copytree(config.out, copy, ignore=shutil.ignore_patterns("report"))
    memory = Memory(copy / synthesis.MEMORY_FILE)
    try:
        memory.set_meta("identity", {**memory.meta("identity"), "writer": "openai:w@http://localhost:8000/v1",
                                     "target": "openai:t@http://localhost:8000/v1",
                                     "judge": "openai:j@http://localhost:8000/v1"})
    finally:
        memory.close()
    result = CliRunner().invoke(app, ["export", str(copy), "--out", str(tmp_path / "models-sft")])
    assert result.exit_code == 0, result.output
    assert result.stderr == ""
    assert "stand_in" not in json.loads((tmp_path / "models-sft" / "dataset_info.json").read_text())["vicogym_instruct"]
    assert '<p class="stand-in">' not in write_report_page(copy, tmp_path / "models-page").read_text()


@given(role=st.sampled_from(["writer", "target", "judge"]), model=st.text(min_size=1, max_size=20))
@settings(max_examples=50, deadline=None)
def test_a_role_given_a_model_is_no_stand_in_and_the_others_stay_named(role, model):
    from vicogym.instruct.models import stand_ins

    identity = {"images": ["vicogym/Chart-v0"], "discover": 0.0, role: f"openai:{model}@http://localhost:8000/v1"}
    found = stand_ins(identity)
    assert role not in found and set(found) == {"writer", "target", "judge", "note"} - {role}
    assert f"--{role} " not in found["note"]
    with_folders = stand_ins({**identity, "images": ["path/to/photos"], "discover": 0.5})
    assert {"perceiver", "proposer"} <= set(with_folders)
