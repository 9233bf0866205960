"""verify trusts nothing it can recompute: each corruption below is made "consistently"
(the shard's SHA-256 and the row hashes in the manifest are updated to match), so only
the re-derivation, the replay, the re-render and the checks can catch it."""

import copy
import json
import shutil

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from vicogym.runs.generate import GenerateConfig, generate
from vicogym.runs.shards import file_sha256, row_hash
from vicogym.runs.trainer_columns import verl_prompt
from vicogym.runs.verify import verify


@pytest.fixture(scope="module")
def chartqa_run(tmp_path_factory, chartqa):
    out = tmp_path_factory.mktemp("mutations") / "run"
    generate(GenerateConfig(n=40, out=str(out), seed=5, keep="all", episodes_per_shard=8,
                            env_kwargs={"k": 2, "max_turns": 3, "source": str(chartqa)}), progress=False)
    assert verify(out).ok
    kinds = {row["label_rule"] for row in _load(out)[0]}
    assert kinds == {"cell", "program", "invariant"}, f"the run should hold every rule kind, it holds {kinds}"
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
    manifest = json.loads((folder / "manifest.json").read_text())
    entries = {e["name"]: e for e in manifest["shards"]}
    for path in {where[row_id][0] for row_id in changes}:
        table = pq.read_table(path)
        rows = table.to_pylist()
        for row_id, new in changes.items():
            if where[row_id][0] == path:
                rows[where[row_id][1]] = new
        pq.write_table(pa.Table.from_pylist(rows, schema=table.schema), path)
        entries[path.name]["sha256"] = file_sha256(path)
        entries[path.name]["row_hashes"] = {r["id"]: row_hash(r) for r in rows}
    (folder / "manifest.json").write_text(json.dumps(manifest))


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
    cells = [r for r in pool["cell"] if r["source_id"] != donor["source_id"]]

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
