"""No model-written code from rows: a synthesis run stores its discovered types once, in
``types.json`` (listed in its manifest with their SHA-256s), rows name them by id and
hash, and the verl reward, ``Instruct-v0`` and ``vicogym verify`` run only code from a
registry loaded explicitly from that file. A poisoned row (code in its ground truth, a
type no loaded registry holds, a hash that differs) is a typed error and runs nothing."""

import hashlib
import json
import shutil
from pathlib import Path

import gymnasium as gym
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from vicogym.errors import RunError, UnknownConstraintType
from vicogym.instruct import discovery
from vicogym.instruct.run_folder import iter_samples, load_types, verify_instruct
from vicogym.instruct.synthesis import TYPES_FILE, SynthesizeConfig, synthesize
from vicogym.programs.instruct import REGISTRY
from vicogym.verl_reward import RowError, compute_score

pytestmark = pytest.mark.usefixtures("walls")


#: a type the simulated writer satisfies by appending its passing case, so that accepted
#: samples use it (the bank's types mostly clash with chart responses: digits, endings)
EASY = {"id": "says_indeed", "category": "lexical", "params": {},
        "description": "The response uses the word 'indeed' somewhere.",
        "code": "import re\n\ndef verify(response):\n    found = bool(re.search(r'\\bindeed\\b', response, re.I))\n"
                "    return {'pass': found, 'expected': 'the word indeed', 'actual': 'found' if found else 'absent', "
                "'detail': ''}\n",
        "cases": [{"response": "Indeed, the bar is tall.", "params": {}, "pass": True},
                  {"response": "The bar is tall.", "params": {}, "pass": False}]}


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """A small run that discovers a type and uses it in accepted samples."""
    folder = tmp_path_factory.mktemp("types") / "run"
    config = SynthesizeConfig.from_mapping({"images": ["vicogym/Chart-v0"], "per_round": 4, "probes": 2,
                                            "candidates": 2, "progress": False, "discover": 1.0, "n": 16,
                                            "max_constraints": 4, "out": str(folder)})
    from vicogym.instruct import synthesis as synthesis_module

    weights = synthesis_module.type_weights

    def favour_the_discovered(types, *args):  # one type among 83 is drawn into few sets by chance alone
        return weights(types, *args) * np.array([20.0 if t == EASY["id"] else 1.0 for t in types])

    with pytest.MonkeyPatch.context() as patch:
        patch.setitem(discovery.BANK, EASY["id"], EASY)
        patch.setattr(discovery, "GOOD", (EASY["id"],))
        patch.setattr(synthesis_module, "type_weights", favour_the_discovered)
        manifest = synthesize(config)
    rows = list(iter_samples(folder))
    assert sum(bool(json.loads(row["discovered"])) for row in rows) >= 2, "the run used its discovered type too little"
    return folder, manifest, rows


def forget_discovered():
    """This process as a new one sees it: the seed types only."""
    for type_id in [t for t, c in REGISTRY.items() if c.origin == "discovered"]:
        del REGISTRY[type_id]


def poisoned_truth(marker: Path, sha: str | None = None) -> tuple[str, dict]:
    code = (f"import os\n\ndef verify(response):\n    os.system('touch {marker}')\n"
            f"    return {{'pass': True, 'expected': '', 'actual': '', 'detail': ''}}\n")
    proposal = {"id": "always_fine", "description": "Anything goes.", "category": "format", "params": {},
                "code": code, "cases": [{"response": "a", "params": {}, "pass": True},
                                        {"response": "b", "params": {}, "pass": False}]}
    sha = sha or hashlib.sha256(code.encode()).hexdigest()
    truth = {"constraints": [{"id": "always_fine", "params": {}, "category": "format", "track": "code"}],
             "discovered": [proposal], "types": [{"id": "always_fine", "sha256": sha}]}
    return json.dumps(truth), proposal


def test_rows_name_their_types_by_hash_and_the_code_lives_once_in_the_run(run):
    folder, manifest, rows = run
    stored = json.loads((folder / TYPES_FILE).read_text())
    by_id = {t["id"]: t for t in stored["types"]}
    assert by_id and all(hashlib.sha256(t["proposal"]["code"].encode()).hexdigest() == t["sha256"]
                         for t in by_id.values())
    listed = manifest["types"]
    assert (
        listed["file"] == TYPES_FILE
        and listed["sha256"] == hashlib.sha256((folder / TYPES_FILE).read_bytes()).hexdigest()
    )
    assert {(t["id"], t["sha256"]) for t in listed["types"]} == {(t, e["sha256"]) for t, e in by_id.items()}
    for row in rows:
        named = json.loads(row["discovered"])
        truth = json.loads(row["reward_model"]["ground_truth"])
        assert truth["types"] == named and "discovered" not in truth
        assert all(set(t) == {"id", "sha256"} and by_id[t["id"]]["sha256"] == t["sha256"] for t in named)
        for column in ("discovered", "constraints", "verdicts", "recoveries", "facts", "provenance"):
            assert "def verify" not in row[column], column
        assert "def verify" not in row["reward_model"]["ground_truth"]


def test_a_poisoned_row_runs_no_code_through_the_verl_reward(run, tmp_path):
    folder, _, rows = run
    marker = tmp_path / "pwned"
    truth, _ = poisoned_truth(marker)
    forget_discovered()
    with pytest.raises(UnknownConstraintType, match="always_fine"):
        compute_score("vicogym/Instruct-v0", "anything", truth)
    with pytest.raises(UnknownConstraintType, match="always_fine"):  # the run's own types do not hold it either
        compute_score("vicogym/Instruct-v0", "anything", truth, types=str(folder))
    assert not marker.exists() and "always_fine" not in REGISTRY
    # a real row scores once its run's types are loaded, and not before
    row = next(r for r in rows if json.loads(r["discovered"]))
    forget_discovered()
    with pytest.raises(UnknownConstraintType, match="types=RUN_FOLDER"):
        compute_score(row["data_source"], row["response"], row["reward_model"]["ground_truth"])
    assert compute_score(row["data_source"], row["response"], row["reward_model"]["ground_truth"],
                         types=str(folder)) == 1.0
    # the same id with another hash is another type
    other = json.loads(row["reward_model"]["ground_truth"])
    other["types"][0]["sha256"] = "0" * 64
    with pytest.raises(UnknownConstraintType, match="SHA-256 000000000000"):
        compute_score(row["data_source"], row["response"], json.dumps(other))
    # a malformed constraint is a typed error too (the row's), never another exception
    for constraints in ([{"id": ["x"]}], [None], "always_fine"):
        with pytest.raises(RowError, match="is no {id: string, params: object}|has no constraints list"):
            compute_score(row["data_source"], "x", json.dumps({"constraints": constraints, "types": []}))
    # a row of an older vicogym (the proposal in its ground truth, no hash) is refused too
    old = {"constraints": other["constraints"], "discovered": [{"id": other["types"][0]["id"], "code": "..."}]}
    with pytest.raises(UnknownConstraintType, match="without its code's SHA-256"):
        compute_score(row["data_source"], row["response"], json.dumps(old))


def _poison_run(folder: Path, marker: Path) -> None:
    """Rewrite the first row of the run's first shard to carry model code of its own."""
    shard = sorted(folder.glob("part-*.parquet"))[0]
    table = pq.read_table(shard)
    rows = table.to_pylist()
    truth, proposal = poisoned_truth(marker)
    rows[0]["constraints"] = json.dumps(json.loads(truth)["constraints"])
    rows[0]["discovered"] = json.dumps([proposal])
    rows[0]["reward_model"] = {"style": "rule", "ground_truth": truth}
    pq.write_table(pa.Table.from_pylist(rows, schema=table.schema), shard)


def test_a_poisoned_row_runs_no_code_through_instruct_v0(run, tmp_path):
    folder, _, rows = run
    marker = tmp_path / "pwned"
    poisoned = tmp_path / "poisoned"
    shutil.copytree(folder, poisoned)
    _poison_run(poisoned, marker)
    forget_discovered()
    with pytest.raises(UnknownConstraintType, match="always_fine"):
        gym.make("vicogym/Instruct-v0", data=str(poisoned))
    with pytest.raises(UnknownConstraintType, match="always_fine"):
        gym.make("vicogym/Instruct-v0", data=str(poisoned), types=str(poisoned))
    assert not marker.exists() and "always_fine" not in REGISTRY
    # the clean run: refused until its types are loaded, then every episode verifies
    forget_discovered()
    with pytest.raises(UnknownConstraintType, match="types=RUN_FOLDER"):
        gym.make("vicogym/Instruct-v0", data=str(folder))
    env = gym.make("vicogym/Instruct-v0", data=str(folder), types=str(folder))
    index = next(i for i, r in enumerate(rows) if json.loads(r["discovered"]))
    env.reset(options={"index": index})
    _, reward, terminated, _, info = env.step(rows[index]["response"])
    assert terminated and reward == 1.0 and info["pass_rate"] == 1.0
    env.close()


def test_a_changed_types_file_is_refused_and_verify_names_it(run, tmp_path):
    folder, _, _ = run
    copy = tmp_path / "copy"
    shutil.copytree(folder, copy)
    data = json.loads((copy / TYPES_FILE).read_text())
    data["types"][0]["proposal"]["code"] += "\n# changed\n"
    (copy / TYPES_FILE).write_text(json.dumps(data))
    forget_discovered()
    with pytest.raises(RunError, match="manifest lists"):
        load_types(copy)
    alone = tmp_path / "alone.json"  # without a manifest beside it, each record's own hash still holds
    alone.write_text(json.dumps(data))
    with pytest.raises(RunError, match="does not have the SHA-256 stored beside it"):
        load_types(alone)
    # the hash made to match: the manifest still lists the file it wrote
    data["types"][0]["sha256"] = hashlib.sha256(data["types"][0]["proposal"]["code"].encode()).hexdigest()
    (copy / TYPES_FILE).write_text(json.dumps(data))
    with pytest.raises(RunError, match="manifest lists"):
        load_types(copy / TYPES_FILE)
    forget_discovered()
    rows, problems = verify_instruct(copy, images=False)
    assert rows and any(where == TYPES_FILE for where, _ in problems), problems
    forget_discovered()
    rows, problems = verify_instruct(folder, images=False)
    assert problems == [], problems


def test_a_run_folder_without_its_types_file_says_how_to_write_it(run, tmp_path):
    with pytest.raises(RunError, match="holds no types.json"):
        load_types(tmp_path)
    with pytest.raises(RunError, match="neither a synthesis run folder"):
        load_types(tmp_path / "missing.json")
