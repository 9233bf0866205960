"""vicogym inside verl's training loop, driven through verl's own classes (verl 0.9.1,
installed with --no-deps): its config composed by Hydra from verl's own YAML with the
overrides ``python -m vicogym.verl_agent`` prints, its RL dataset machinery and
dataloader over :class:`~vicogym.verl_agent.EpisodeDataset`, its ``AgentLoopWorker``
running the rewriter's agent loop and its ``tool_agent`` loop with the evidence tools,
its reward loop scoring the trajectories, and its batch post-processing. A scripted server
stands in for the policy (no GPU); the model files are a tiny Qwen2-VL built here."""

import asyncio
import json

import numpy as np
import pytest

pytest.importorskip("verl", reason="the verl adapter needs verl: pip install --no-deps verl==0.9.1 (see the README)")
pytest.importorskip("hydra", reason="verl's agent loops need the [trainers] extra (hydra-core)")
pytest.importorskip("torchdata", reason="verl's dataloader needs the [trainers] extra (torchdata)")
pytest.importorskip("transformers", reason="the tiny vision-language model needs the [natural] extra")

from vicogym.runs.generate import GenerateConfig, episode_seed, generate  # noqa: E402

CHART = {"k": 2}


def _config_file(tmp_path, name, **settings):
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(settings), encoding="utf-8")
    return str(path)


def _data_config(tmp_path, **extra):
    from omegaconf import OmegaConf

    return OmegaConf.create({"filter_overlong_prompts": False, "cache_dir": str(tmp_path / "cache"),
                             "train_batch_size": 2, "return_raw_chat": True, **extra})


class Stub:
    """Where verl's dataset would hold a tokenizer or processor (it reads rows raw)."""


# -- the dataset -------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def chart_run(tmp_path_factory):
    """``vicogym generate`` of 6 chart episodes: what the dataset's rows must equal."""
    import pyarrow.parquet as pq

    out = tmp_path_factory.mktemp("verl-agent") / "run"
    generate(GenerateConfig("vicogym/Chart-v0", n=6, out=str(out), seed=3, episodes_per_shard=6, env_kwargs=CHART),
             progress=False)
    rows = [r for p in sorted(out.glob("part-*.parquet")) for r in pq.read_table(p).to_pylist()]
    first: dict[int, dict] = {}
    for row in rows:
        first.setdefault(row["extra_info"]["index"], row)
    return first


def test_the_dataset_gives_the_rows_generate_writes_and_new_episodes_each_epoch(chart_run, tmp_path):
    from verl.trainer.ppo.utils import create_rl_dataset

    from vicogym.verl_agent import EpisodeDataset

    path = _config_file(tmp_path, "chart", env_id="vicogym/Chart-v0", n=3, seed=3, env_kwargs=CHART)
    config = _data_config(tmp_path, custom_cls={"path": "pkg://vicogym.verl_agent", "name": "EpisodeDataset"})
    dataset = create_rl_dataset([path], config, Stub(), Stub(), is_train=True)  # verl's own loader of custom_cls
    assert type(dataset).__name__ == "EpisodeDataset" and len(dataset) == 3
    assert isinstance(dataset, EpisodeDataset)
    seen = []
    for epoch in range(2):
        dataset.set_epoch(epoch)
        for j in range(3):
            row = dataset.row(j)
            e = epoch * 3 + j
            if e in chart_run:  # the same bytes as the stored row (an episode that kept one)
                stored = chart_run[e]
                for key in ("id", "data_source", "prompt", "reward_model", "extra_info", "images"):
                    assert row[key] == stored[key], (e, key)
            seen.append(row["id"])
    assert len(set(seen)) == 6 and len([e for e in range(6) if e in chart_run]) >= 4
    item = dataset[0]  # verl's own __getitem__ over the row: messages with the PIL image
    (message,) = item["raw_prompt"]
    assert message["content"][0]["type"] == "image" and item["data_source"] == "vicogym/Chart-v0"
    assert item["extra_info"]["index"] == 3  # epoch 1, row 0 = episode 3


def test_verls_dataloader_workers_see_the_epoch_from_on_batch_end(chart_run, tmp_path):
    """verl's trainer calls ``on_batch_end`` on the dataset after every batch; its dataloader
    workers (not persistent) start from the dataset each epoch, so they draw the new rows."""
    from torchdata.stateful_dataloader import StatefulDataLoader
    from verl.utils.dataset.rl_dataset import collate_fn

    from vicogym.verl_agent import EpisodeDataset

    path = _config_file(tmp_path, "chart", env_id="vicogym/Chart-v0", n=4, seed=3, env_kwargs=CHART)
    dataset = EpisodeDataset([path], Stub(), _data_config(tmp_path), Stub())
    loader = StatefulDataLoader(dataset, batch_size=2, num_workers=2, drop_last=True, collate_fn=collate_fn,
                                shuffle=False)
    epochs = []
    for _ in range(2):
        ids = []
        for batch in loader:
            ids.extend(int(i["index"]) for i in batch["extra_info"])
            dataset.on_batch_end(batch)
        epochs.append(ids)
    assert epochs == [[0, 1, 2, 3], [4, 5, 6, 7]]


def test_rewriter_rows_name_the_episode_and_bad_files_are_named(tmp_path):
    from vicogym.verl_agent import EpisodeDataset

    path = _config_file(tmp_path, "rw", env_id="vicogym/Chart-v0", n=2, seed=5, env_kwargs=CHART, rows="rewriter")
    dataset = EpisodeDataset([path], Stub(), _data_config(tmp_path), Stub())
    row = dataset.row(1)
    assert row["agent_name"] == "vicogym_rewriter" and row["extra_info"]["seed"] == episode_seed(5, 1)
    assert json.loads(row["extra_info"]["settings"])["k"] == 2
    with pytest.raises(IndexError):
        dataset.row(2)
    bad = _config_file(tmp_path, "bad", env_id="vicogym/Chart-v0", n=2, rows="both")
    with pytest.raises(ValueError, match="expected rows in"):
        EpisodeDataset([bad], Stub(), _data_config(tmp_path), Stub())
    typo = _config_file(tmp_path, "typo", env_id="vicogym/Chart-v0", nn=2)
    with pytest.raises(ValueError, match="did you mean 'n'"):
        EpisodeDataset([typo], Stub(), _data_config(tmp_path), Stub())
    with pytest.raises(ValueError, match="at least one"):
        EpisodeDataset([], Stub(), _data_config(tmp_path), Stub())
