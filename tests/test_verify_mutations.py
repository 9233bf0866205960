"""verify trusts nothing it can recompute: each corruption below is made "consistently"
(the shard's SHA-256 and the row hashes in the manifest are updated to match), so only
the re-derivation, the replay, the re-render and the checks can catch it."""

import collections
import copy
import json
import shutil

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from vicogym.runs.generate import GenerateConfig, generate
from vicogym.runs.shards import file_sha256, row_hash, run_entries
from vicogym.runs.trainer_columns import verl_prompt
from vicogym.runs.verify import verify


@pytest.fixture(scope="module")
def chartqa_run(tmp_path_factory, chartqa):
    out = tmp_path_factory.mktemp("mutations") / "run"
    generate(GenerateConfig(n=64, out=str(out), seed=5, keep="all", episodes_per_shard=8,
                            env_kwargs={"k": 2, "max_turns": 3, "source": str(chartqa)}), progress=False)
    assert verify(out).ok
    kinds = collections.Counter(row["label_rule"] for row in _load(out)[0])
    # the mutations need rows of every rule kind: five cell rows (from more than one record),
    # five program rows and two invariant ones
    assert kinds["cell"] >= 5 and kinds["program"] >= 5 and kinds["invariant"] >= 2, \
        f"the run should hold rows of every rule kind to corrupt, it holds {dict(kinds)}"
    return out


def _load(folder):
    rows, where = [], {}
    for path in sorted(folder.glob("part-*.parquet")):
        table = pq.read_table(path)
        for i, row in enumerate(table.to_pylist()):
            where[row["id"]] = (path, i)
            rows.append(row)
    return rows, where


def _rewrite(folder, changes):
    """Apply {row id: new row} and make every integrity record agree with the result."""
    _, where = _load(folder)
    entries = _read_entries(folder)
    for path in {where[row_id][0] for row_id in changes}:
        table = pq.read_table(path)
        rows = table.to_pylist()
        for row_id, new in changes.items():
            if where[row_id][0] == path:
                rows[where[row_id][1]] = new
        pq.write_table(pa.Table.from_pylist(rows, schema=table.schema), path)
        entries[path.name]["sha256"] = file_sha256(path)
        entries[path.name]["row_hashes"] = {r["id"]: row_hash(r) for r in rows}
    _write_entries(folder, entries.values())


def _read_entries(folder):
    """The run's shard entries (``entries/part-NNNNN.json``), by shard name."""
    return {e["name"]: e for e in run_entries(folder)}


def _write_entries(folder, entries):
    """Make ``entries`` the run's shard entries (the others removed)."""
    shutil.rmtree(folder / "entries")
    (folder / "entries").mkdir()
    for entry in entries:
        (folder / "entries" / entry["name"].replace(".parquet", ".json")).write_text(json.dumps(entry))


def _sync_trainer_columns(row):
    """Corrupt "consistently": the verl columns follow the label columns."""
    row["reward_model"]["ground_truth"] = row["answer"]
    row["extra_info"].update(answer=row["answer"], question=row["question"], label_rule=row["label_rule"])
    row["prompt"][0]["content"] = verl_prompt(row["question"], _hints())
    if "image" in row:  # a mutation's new PNG goes where rows keep it
        row["images"][0]["bytes"] = row.pop("image")
    return row


def _hints():
    from vicogym.envs.chart import ChartArm

    return ChartArm.export


def _other_valid_sample(row):
    """The row's structure with one value changed, its image rendered and its answer
    re-derived to match: a valid sample, just not the one its episode produced."""
    from vicogym.arm import render_seed
    from vicogym.images import encode_png
    from vicogym.registry import make_arm

    arm = make_arm("vicogym/Chart-v0")
    structure = json.loads(row["structure"])
    values = structure["table"]["values"]
    values[-1][-1] = (values[-1][-1] or 0) + 1
    text = json.dumps(structure, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    decoded = arm.decode(text)
    image = arm.render(decoded, __import__("numpy").random.default_rng(render_seed(text, {}))).image
    return {"structure": text, "image": encode_png(image), "answer": arm.relabel(decoded, json.loads(row["label"]))}


def _first(rows, **conditions):
    return next(r for r in rows if all(r[k] == v for k, v in conditions.items()))


def _mutations(rows):
    """One corruption per row, each on a different row of the kind it needs."""
    pool = {kind: [r for r in rows if r["label_rule"] == kind] for kind in ("cell", "program", "invariant")}
    donor = pool["cell"][-1]  # a row whose question, seed and source_id others borrow
    # records about one chart share its table: a donor's seed or question must differ to corrupt
    cells = [r for r in pool["cell"] if r["source_id"] != donor["source_id"]
             and r["seed_structure"] != donor["seed_structure"]]

    def take(kind):
        return (cells if kind == "cell" else pool[kind]).pop(0)

    def edit(row, **changes):
        new = copy.deepcopy(row)
        new.update(changes)
        return row["id"], _sync_trainer_columns(new)

    invariant = take("invariant")
    invariant_rule = json.loads(invariant["label"])
    swapped = take("program")
    other_image = next(r["images"][0]["bytes"] for r in rows if r["images"] != swapped["images"])
    program = take("program")
    return {
        "cell question switched to another row": edit(take("cell"), question=donor["question"]),
        "invariant question replaced": edit(take("invariant"), question="What is the answer?"),
        "invariant answer changed with its rule": edit(
            invariant, answer="12345", label=json.dumps(dict(invariant_rule, answer="12345"), sort_keys=True)),
        "label_rule changed alone": edit(take("program"), label_rule="cell"),
        "image swapped with another row's": edit(swapped, image=other_image),
        "answer changed": edit(program, answer="0.5" if program["answer"] != "0.5" else "0.25"),
        "structure changed, image and answer made to match": (lambda r: edit(r, **_other_valid_sample(r)))(
            take("program")),
        "edit trace dropped": edit(next(r for r in pool["program"] if json.loads(r["edit_trace"])), edit_trace="[]"),
        "reward changed": (lambda r: edit(r, reward=1.0 - r["reward"]))(take("cell")),
        "source_id changed": edit(take("cell"), source_id=donor["source_id"]),
        "seed structure changed": edit(take("cell"), seed_structure=donor["seed_structure"]),
    }


def test_every_consistent_corruption_is_caught(chartqa_run, tmp_path, chartqa):
    rows, _ = _load(chartqa_run)
    mutations = _mutations(rows)
    targets = [row_id for row_id, _ in mutations.values()]
    assert len(set(targets)) == len(targets)
    bad = tmp_path / "bad"
    shutil.copytree(chartqa_run, bad)
    _rewrite(bad, dict(mutations.values()))
    problems = dict(verify(bad, source=chartqa).problems)
    for name, (row_id, _new) in mutations.items():
        assert row_id in problems, f"{name}: not caught"
    assert set(problems) == set(targets), problems  # nothing else was disturbed
    assert len({problems[row_id] for row_id in targets}) >= 8  # caught by different checks, not one blanket failure


# -- tampering with the run as a whole: each made consistent (hashes, counts and ids recomputed) --
@pytest.fixture(scope="module")
def small_runs(tmp_path_factory):
    """Two procedural runs of 32 samples, 8 episodes a shard, differing only in their seed."""
    runs = {}
    for seed in (5, 6):
        out = tmp_path_factory.mktemp("whole") / f"run{seed}"
        generate(GenerateConfig(n=32, out=str(out), seed=seed, episodes_per_shard=8,
                                env_kwargs={"k": 3, "max_turns": 3}), progress=False)
        assert verify(out).ok
        runs[seed] = out
    return runs


def _shards(folder):
    return {p.name: pq.read_table(p).to_pylist() for p in sorted(folder.glob("part-*.parquet"))}


def _write_consistently(folder, shards):
    """Write ``{name: rows}`` as the run's shards (others deleted) and recompute every
    integrity record the manifest keeps: shard entries, hashes, counts."""
    schema = pq.read_table(next(folder.glob("part-*.parquet"))).schema
    manifest = json.loads((folder / "manifest.json").read_text())
    old = _read_entries(folder)
    for path in folder.glob("part-*.parquet"):
        path.unlink()
    entries = []
    for name, rows in shards.items():
        pq.write_table(pa.Table.from_pylist(rows, schema=schema), folder / name)
        entry = dict(old.get(name) or next(iter(old.values())), name=name, rows=len(rows),
                     sha256=file_sha256(folder / name), row_hashes={r["id"]: row_hash(r) for r in rows})
        entries.append(entry)
    _write_entries(folder, entries)
    manifest["counts"]["shards"] = len(entries)
    manifest["counts"]["samples"] = sum(len(rows) for rows in shards.values())
    manifest["counts"]["episodes"] = sum(e["episodes"][1] - e["episodes"][0] for e in entries)
    (folder / "manifest.json").write_text(json.dumps(manifest))
    return manifest


def _renamed(row, seed=None, episode=None, turn=None):
    from vicogym.runs.generate import episode_seed
    from vicogym.runs.verify import ROW_ID

    match = ROW_ID.fullmatch(row["id"])
    seed = int(match["seed"]) if seed is None else seed
    episode = int(match["episode"]) if episode is None else episode
    turn = int(match["turn"]) if turn is None else turn
    new = copy.deepcopy(row)
    new["id"] = f"{match['prefix']}-s{seed}-e{episode:07d}-t{turn}"
    provenance = dict(json.loads(row["provenance"]), index=episode, turn=turn, seed=episode_seed(seed, episode),
                      run_seed=seed)
    new["provenance"] = json.dumps(provenance, sort_keys=True)
    new["images"][0]["path"] = new["images"][0].get("path") and new["id"] + ".png"
    new["extra_info"].update(id=new["id"], index=episode)  # the verl columns follow
    return new


def _tampered(small_runs, tmp_path, change):
    bad = tmp_path / "bad"
    shutil.copytree(small_runs[5], bad)
    shards = _shards(bad)
    change(shards, bad)
    _write_consistently(bad, shards)
    return verify(bad)


def _extra_turn(shards, folder):
    """A cell change written into a row's trace as one more turn, its image re-rendered."""
    from vicogym.images import encode_png

    name, rows = next(iter(shards.items()))
    row = next(r for r in rows if r["label_rule"] == "program")
    trace = json.loads(row["edit_trace"])
    changed = _other_valid_sample(row)
    turn = trace[-1]["turn"] + 1 if trace else 1
    structure = json.loads(changed["structure"])
    table = structure["table"]
    edit = {"ops": [{"op": "set_cell", "row": table["rows"][-1], "series": table["series"][-1],
                     "value": table["values"][-1][-1]}]}
    new = _renamed(dict(row, **{k: v for k, v in changed.items() if k != "image"}), turn=turn)
    new["edit_trace"] = json.dumps(trace + [{"turn": turn, "edit": edit, "answer": changed["answer"],
                                             "pass_rate": row["pass_rate"]}], sort_keys=True)
    new["images"][0]["bytes"] = changed["image"] if isinstance(changed["image"], bytes) else encode_png(
        changed["image"])
    rows[rows.index(row)] = _sync_trainer_columns(new)


def _pass_rate_and_reward(shards, folder):
    from vicogym.rewards import RewardConfig, difficulty_reward

    rows = next(iter(shards.values()))
    row = rows[0]
    row["pass_rate"] = 0.5 if row["pass_rate"] != 0.5 else 0.0
    row["reward"] = difficulty_reward(row["pass_rate"], RewardConfig())


TAMPERING = {
    "the last shard deleted with its manifest entry": lambda shards, folder: shards.pop(sorted(shards)[-1]),
    "a row duplicated under a new id": lambda shards, folder: shards["part-00000.parquet"].insert(
        1, _renamed(shards["part-00000.parquet"][0], turn=9)),
    "a row moved to another shard": lambda shards, folder: shards["part-00001.parquet"].insert(
        0, shards["part-00000.parquet"].pop()),
    "rows reordered": lambda shards, folder: shards["part-00000.parquet"].reverse(),
    "shards swapped": lambda shards, folder: shards.update({"part-00000.parquet": shards["part-00001.parquet"],
                                                            "part-00001.parquet": shards["part-00000.parquet"]}),
    "a cell change written as an extra turn": _extra_turn,
    "pass_rate and reward changed together": _pass_rate_and_reward,
    "the rows of one episode removed": lambda shards, folder: shards["part-00000.parquet"].pop(2),
}


@pytest.mark.parametrize("kind", list(TAMPERING))
def test_tampering_with_the_run_as_a_whole_is_caught(small_runs, tmp_path, kind):
    findings = _tampered(small_runs, tmp_path, TAMPERING[kind])
    assert not findings.ok, f"{kind}: not caught ({findings.rows} rows verified)"


@pytest.mark.parametrize("rename", [False, True])
def test_a_row_of_another_seeds_run_is_caught_with_or_without_its_id_renamed(small_runs, tmp_path, rename):
    other = pq.read_table(next(small_runs[6].glob("part-*.parquet"))).to_pylist()[0]

    def insert(shards, folder):
        rows = shards["part-00000.parquet"]
        victim = rows[1]
        rows[1] = _renamed(other, seed=5, episode=int(victim["id"].split("-e")[1][:7])) if rename else other

    findings = _tampered(small_runs, tmp_path, insert)
    assert not findings.ok


@pytest.mark.parametrize("change, message", [
    (lambda m: m.update(counts=[]), "'counts' is [], expected an object"),
    (lambda m: m.update(config=None), "'config' is None, expected an object"),
    (lambda m: m["config"].update(env_kwargs=[1]), "config.env_kwargs is [1], expected an object of settings"),
    (lambda m: m.update(shards=[{"name": 3}]), "shards[0] is {'name': 3}, expected {name, rows, sha256, ...}"),
])
def test_a_malformed_manifest_is_a_message_not_a_traceback(small_runs, tmp_path, change, message):
    from vicogym.errors import RunError

    bad = tmp_path / "bad"
    shutil.copytree(small_runs[5], bad)
    manifest = json.loads((bad / "manifest.json").read_text())
    change(manifest)
    (bad / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(RunError, match="manifest.json is damaged: " + __import__("re").escape(message)):
        verify(bad)


def test_a_row_nested_too_deep_is_that_rows_problem(small_runs, tmp_path):
    def deep(shards, folder):
        shards["part-00000.parquet"][0]["label"] = "[" * 100_000 + "]" * 100_000

    findings = _tampered(small_runs, tmp_path, deep)
    row_id = _shards(small_runs[5])["part-00000.parquet"][0]["id"]
    assert row_id in dict(findings.problems) and findings.rows == 32


def test_a_run_whose_source_is_gone_fails_unless_unreplayed_rows_are_allowed(tmp_path, chartqa):
    source = tmp_path / "chartqa"
    shutil.copytree(chartqa, source)
    out = tmp_path / "run"
    generate(GenerateConfig(n=4, out=str(out), seed=1, episodes_per_shard=4,
                            env_kwargs={"k": 2, "max_turns": 2, "source": str(source)}), progress=False)
    assert verify(out).ok
    shutil.rmtree(source)
    findings = verify(out)
    assert not findings.ok and "4 of 4 rows were not replayed" in dict(findings.problems)[str(out)]
    allowed = verify(out, allow_unreplayed=True)
    assert allowed.ok and any("4 of 4 rows were not replayed" in note for note in allowed.notes)


def test_the_simulated_actor_is_asked_again_so_its_answers_cannot_be_rewritten(small_runs, tmp_path):
    """Answers, pass rate and reward rewritten together, consistently with each other: only
    asking the run's own simulated actor again shows they are not what it answered."""
    from vicogym.rewards import RewardConfig, difficulty_reward

    rows = _shards(small_runs[5])["part-00000.parquet"]
    at = next(i for i, r in enumerate(rows) if r["pass_rate"] < 1.0)  # a row the actor got wrong at least once
    row_id = rows[at]["id"]

    def rewrite(shards, folder):
        row = shards["part-00000.parquet"][at]
        truth = row["answer"]
        row["actor_answers"] = [truth] * len(row["actor_answers"])  # every answer right
        row["pass_rate"] = 1.0
        row["reward"] = difficulty_reward(1.0, RewardConfig())

    findings = _tampered(small_runs, tmp_path, rewrite)
    problems = dict(findings.problems)
    assert "the simulated actor, asked again, answers" in problems[row_id], problems


def test_verify_says_when_a_run_was_written_by_other_code(small_runs, tmp_path):
    from vicogym.runs.generate import code_sha256

    manifest = json.loads((small_runs[5] / "manifest.json").read_text())
    assert manifest["code_sha256"] == code_sha256() and len(code_sha256()) == 64
    assert not any("code_sha256" in note for note in verify(small_runs[5]).notes)
    for value, words in (("0" * 64, "written by other code"), (None, "records no code_sha256")):
        other = tmp_path / f"other-{words[:5]}"
        shutil.copytree(small_runs[5], other)
        changed = dict(manifest)
        if value is None:
            changed.pop("code_sha256")
        else:
            changed["code_sha256"] = value
        (other / "manifest.json").write_text(json.dumps(changed))
        findings = verify(other)
        assert findings.ok and any(words in note for note in findings.notes), findings.notes


def test_runs_of_one_seed_with_other_settings_share_no_row_id(tmp_path):
    """A procedural chart run and a ChartQA-seeded one of the same seed gave the same ids, so
    a merged data set had duplicate keys; a larger n keeps the ids."""
    from vicogym.runs.generate import GenerateConfig, id_prefix

    plain = GenerateConfig(env_id="vicogym/Chart-v0", n=4, seed=3, out=str(tmp_path / "a"))
    other = GenerateConfig(env_id="vicogym/Chart-v0", n=4, seed=3, out=str(tmp_path / "b"), env_kwargs={"k": 4})
    more = GenerateConfig(env_id="vicogym/Chart-v0", n=400, seed=3, out=str(tmp_path / "c"), max_episodes=2000,
                          episodes_per_shard=4)
    moved = GenerateConfig(env_id="vicogym/Chart-v0", n=4, seed=3, out=str(tmp_path / "d"), workers=2)
    assert id_prefix(plain.identity()) != id_prefix(other.identity())
    assert id_prefix(plain.identity()) == id_prefix(more.identity()) == id_prefix(moved.identity())
    assert id_prefix(plain.identity()).startswith("chart-v0-")
