"""vicogym.make_dataset: the samples `vicogym generate` writes, in memory, and their scores."""

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import vicogym
from vicogym.errors import GenerationError, RunError, UnknownEnvironment
from vicogym.images import decode_png

CHART = {"k": 4, "max_turns": 2}


def _generated(tmp_path: Path, *args: str) -> list[dict]:
    """The rows `vicogym generate` writes with ``args``, in order."""
    from typer.testing import CliRunner

    from vicogym.cli import app

    out = tmp_path / "run"
    result = CliRunner().invoke(app, ["generate", *args, "--out", str(out), "--no-progress"])
    assert result.exit_code == 0, result.output
    rows = []
    for shard in sorted(out.glob("part-*.parquet")):
        rows.extend(pq.read_table(shard).to_pylist())
    return rows


def _pixels(entry) -> bytes:
    array = np.asarray(entry["image"])
    assert array.dtype == np.uint8 and array.ndim == 3 and array.shape[2] == 3
    return array.tobytes()


def _same(a, b) -> bool:
    return (a["question"], a["answer"], a["metadata"]) == (b["question"], b["answer"], b["metadata"]) and (
        _pixels(a) == _pixels(b))


@pytest.mark.parametrize(("keep", "n"), [("final", 4), ("all", 5)])
def test_entry_i_is_row_i_of_vicogym_generate(tmp_path, keep, n):
    rows = _generated(tmp_path, "vicogym/Chart-v0", "--n", str(n), "--seed", "3", "--keep", keep,
                      "--episodes-per-shard", "2", "--set", "k=4", "--set", "max_turns=2")
    dataset = vicogym.make_dataset("vicogym/Chart-v0", n, 3, keep=keep, **CHART)
    assert len(rows) == len(dataset) == n
    for entry, row in zip(dataset, rows, strict=True):
        assert (entry["question"], entry["answer"]) == (row["question"], row["answer"])
        assert _pixels(entry) == decode_png(row["images"][0]["bytes"]).tobytes()
        meta = entry["metadata"]
        assert meta["id"] == row["id"] and meta["env_id"] == "vicogym/Chart-v0"
        assert meta["label_rule"] == row["label_rule"] and meta["label"] == json.loads(row["label"])
        assert meta["structure"] == row["structure"] and meta["provenance"] == json.loads(row["provenance"])
        assert meta["pass_rate"] == row["pass_rate"] and meta["actor_answers"] == row["actor_answers"]
        assert meta["actor"] == "simulated" and meta["source_id"] == row["source_id"]
    if keep == "all":  # several rows of one episode keep their order
        episodes = [e["metadata"]["provenance"]["index"] for e in dataset]
        assert len(set(episodes)) < len(episodes) and episodes == sorted(episodes)


def test_same_arguments_same_entries_in_any_order_and_another_seed_differs():
    a = vicogym.make_dataset("vicogym/Chart-v0", 3, 7, **CHART)
    b = vicogym.make_dataset("vicogym/Chart-v0", 3, 7, **CHART)
    read_backwards = [b[i] for i in (2, 1, 0)][::-1]
    assert all(_same(x, y) for x, y in zip(a, read_backwards, strict=True))
    assert _same(a[1], a[1]) and a[1]["image"] is not a[1]["image"]  # each access is a fresh entry
    other = vicogym.make_dataset("vicogym/Chart-v0", 3, 8, **CHART)
    assert [e["metadata"]["id"] for e in other] != [e["metadata"]["id"] for e in a]
    assert not any(_pixels(x) == _pixels(y) for x, y in zip(a, other, strict=True))


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32), small=st.integers(1, 3), extra=st.integers(1, 3))
def test_entries_depend_on_seed_and_index_not_on_size(seed, small, extra):
    import conftest  # noqa: F401  (registers the toy arm)

    short = vicogym.make_dataset("vicogym/Toy-v0", small, seed)
    long = vicogym.make_dataset("vicogym/Toy-v0", small + extra, seed)
    assert len(long) == small + extra and len(list(long)) == small + extra
    assert all(_same(x, y) for x, y in zip(short, long[:small], strict=True))


def test_entries_are_made_when_first_asked_for(monkeypatch):
    from vicogym.runs import generate

    calls = []
    rows_of = generate.episode_rows
    monkeypatch.setattr(generate, "episode_rows", lambda config, e: calls.append(e) or rows_of(config, e))
    dataset = vicogym.make_dataset("vicogym/Chart-v0", 3, 2, **CHART)
    assert calls == []
    dataset[0]
    made = list(calls)
    assert made and made == list(range(len(made)))
    dataset[0]
    assert calls == made  # kept, not made again
    dataset[-1]
    assert calls == list(range(len(calls))) and len(calls) >= 3 and len(made) < len(calls)


def test_indexing_slices_and_errors():
    dataset = vicogym.make_dataset("vicogym/Chart-v0", 2, 4, **CHART)
    assert len(dataset) == 2
    assert _same(dataset[-1], dataset[1]) and _same(dataset[np.int64(0)], dataset[0])
    assert [e["metadata"]["id"] for e in dataset[::-1]] == [dataset[1]["metadata"]["id"], dataset[0]["metadata"]["id"]]
    with pytest.raises(IndexError, match="out of range"):
        dataset[2]
    with pytest.raises(TypeError, match="integers or slices"):
        dataset["0"]
    entry = dataset[0]
    assert set(entry) == {"question", "answer", "image", "metadata"}
    assert entry["image"].mode == "RGB" and set(entry["metadata"]) >= {
        "env_id", "label_rule", "label", "structure", "provenance", "pass_rate", "actor"}
    assert 0.0 <= entry["metadata"]["pass_rate"] <= 1.0


def test_score_answer_is_the_trainers_reward():
    from vicogym.runs.datasets import score_answer
    from vicogym.scoring import RowError, score_row

    dataset = vicogym.make_dataset("vicogym/Chart-v0", 2, 1, **CHART)
    entry = dataset[0]
    assert dataset.score_answer(entry["answer"], entry) == 1.0
    assert dataset.score_answer(f"The bars show it.\n\\boxed{{{entry['answer']}}}", entry) == 1.0
    assert dataset.score_answer(f"Answer: {entry['answer']}.", entry) == 1.0
    assert dataset.score_answer("no idea", entry) == 0.0 and dataset.score_answer(None, entry) == 0.0
    for answer in entry["metadata"]["actor_answers"]:  # the actor's answers score as the row's reward scores them
        assert score_answer(answer, entry) == score_row("vicogym/Chart-v0", answer, entry["answer"])
    for bad in ({}, {"answer": "1"}, {"answer": "1", "metadata": {"env_id": "nope"}}, "entry"):
        with pytest.raises(RowError):
            score_answer("1", bad)


@pytest.fixture(scope="module")
def chart_one():
    dataset = vicogym.make_dataset("vicogym/Chart-v0", 1, 1, **CHART)
    return dataset, dataset[0]


@given(answer=st.one_of(st.text(max_size=200), st.none(), st.integers(), st.floats()))
@settings(max_examples=50, deadline=None)
def test_any_answer_scores_in_unit_interval(chart_one, answer):
    dataset, entry = chart_one
    assert 0.0 <= dataset.score_answer(answer, entry) <= 1.0


@pytest.mark.parametrize(("args", "settings_", "error", "names"), [
    (("vicogym/Chart-v1", 2, 0), {}, UnknownEnvironment, "Chart-v0"),
    (("vicogym/Chart-v0", 0, 0), {}, RunError, "size"),
    (("vicogym/Chart-v0", 2.5, 0), {}, RunError, "size"),
    (("vicogym/Chart-v0", True, 0), {}, RunError, "size"),
    (("vicogym/Chart-v0", 2, -1), {}, RunError, "seed"),
    (("vicogym/Chart-v0", 2, 0), {"kk": 4}, RunError, "'k'"),
    (("vicogym/Chart-v0", 2, 0), {"k": -1}, RunError, "expected k to be"),
    (("vicogym/Chart-v0", 2, 0), {"k": object()}, RunError, "JSON"),
    (("vicogym/Chart-v0", 2, 0), {"keep": "some"}, RunError, "keep"),
    (("vicogym/Chart-v0", 2, 0), {"max_episodes": 0}, RunError, "max_episodes"),
    (("vicogym/Instruct-v0", 2, 0), {}, RunError, "vicogym synthesize"),
    (("vicogym/Evidence-v0", 2, 0), {}, RunError, "vicogym generate vicogym/Evidence-v0"),
])
def test_bad_arguments_name_what_to_change(args, settings_, error, names):
    with pytest.raises(error) as caught:
        vicogym.make_dataset(*args, **settings_)
    assert names in str(caught.value)


def test_an_episode_budget_too_small_says_what_to_raise():
    dataset = vicogym.make_dataset("vicogym/Chart-v0", 3, 0, max_episodes=1, **CHART)
    with pytest.raises(GenerationError, match="max_episodes"):
        dataset[2]


def test_import_vicogym_stays_light():
    code = ("import sys, vicogym; assert callable(vicogym.make_dataset); "
            "print(sorted(m for m in sys.modules if m.startswith(('vicogym.runs', 'PIL'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
