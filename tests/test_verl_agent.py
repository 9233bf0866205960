"""vicogym inside verl's training loop, driven through verl's own classes (verl 0.9.1,
installed with --no-deps): its config composed by Hydra from verl's own YAML with the
overrides ``python -m vicogym.trainers.verl_agent`` prints, its RL dataset machinery and
dataloader over :class:`~vicogym.trainers.verl_agent.EpisodeDataset`, its ``AgentLoopWorker``
running the rewriter's agent loop and its ``tool_agent`` loop with the evidence tools,
its reward loop scoring the trajectories, and its batch post-processing. A scripted server
stands in for the policy (no GPU); the model files are a tiny Qwen2-VL built here."""

import asyncio
import json
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("verl", reason="the verl adapter needs verl: pip install --no-deps verl==0.9.1 (see the README)")
pytest.importorskip("hydra", reason="verl's agent loops need the [trainers] extra (hydra-core)")
pytest.importorskip("torchdata", reason="verl's dataloader needs the [trainers] extra (torchdata)")
pytest.importorskip("transformers", reason="the tiny vision-language model needs the [natural] extra")

from vicogym.runs.generate import GenerateConfig, episode_seed, generate

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

    from vicogym.trainers.verl_agent import EpisodeDataset

    path = _config_file(tmp_path, "chart", env_id="vicogym/Chart-v0", n=3, seed=3, env_kwargs=CHART)
    config = _data_config(tmp_path, custom_cls={"path": "pkg://vicogym.trainers.verl_agent", "name": "EpisodeDataset"})
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

    from vicogym.trainers.verl_agent import EpisodeDataset

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
    from vicogym.trainers.verl_agent import EpisodeDataset

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


# -- verl's agent loop worker, with a scripted policy ------------------------------------------
@pytest.fixture(scope="module")
def tiny_vlm(tmp_path_factory):
    from helpers.tiny_models import tiny_qwen2_vl

    return tiny_qwen2_vl(tmp_path_factory.mktemp("tiny-qwen2-vl"))


def verl_config(model, *overrides):
    """verl's PPO config, composed by Hydra from verl's own YAML, pointed at vicogym."""
    import os

    import verl
    from hydra import compose, initialize_config_dir

    import vicogym.verl_reward
    from vicogym.trainers.verl_agent import overrides as vicogym_overrides

    folder = os.path.join(os.path.dirname(verl.__file__), "trainer", "config")
    with initialize_config_dir(config_dir=folder, version_base=None):
        return compose(config_name="ppo_trainer", overrides=[
            *vicogym_overrides(), f"actor_rollout_ref.model.path={model}",
            "actor_rollout_ref.rollout.name=vllm", "actor_rollout_ref.rollout.prompt_length=12288",
            "actor_rollout_ref.rollout.response_length=12288",
            "actor_rollout_ref.rollout.multi_turn.enable=True", "actor_rollout_ref.rollout.multi_turn.format=hermes",
            "actor_rollout_ref.rollout.multi_turn.max_assistant_turns=4",
            f"reward.custom_reward_function.path={vicogym.verl_reward.__file__}",
            "reward.custom_reward_function.name=compute_score", *overrides])


class ScriptedPolicy:
    """Stands where verl's rollout server is: ``generate`` answers each trajectory (by its
    request id) with the next reply of ``script(prompt_text, turn)``, as token ids."""

    def __init__(self, tokenizer, script):
        self.tokenizer, self.script = tokenizer, script
        self.turns: dict[str, int] = {}
        self.replies: dict[str, list[list[int]]] = {}
        self.images: dict[str, int] = {}

    async def generate(self, request_id, *, prompt_ids, sampling_params, image_data=None, **kwargs):
        from verl.workers.rollout.replica import TokenOutput

        turn = self.turns.get(request_id, 0)
        self.turns[request_id] = turn + 1
        text = self.script(self.tokenizer.decode(prompt_ids), turn)
        ids = self.tokenizer.encode(text, add_special_tokens=False) + [self.tokenizer.convert_tokens_to_ids(
            "<|im_end|>")]
        self.replies.setdefault(request_id, []).append(ids)
        self.images[request_id] = len(image_data or [])
        return TokenOutput(token_ids=ids, stop_reason="completed")


class RewardHandle:
    """verl's reward loop worker, called in process where verl holds a Ray actor handle."""

    def __init__(self, worker):
        self.compute_score = type("Remote", (), {"remote": staticmethod(worker.compute_score)})


def run_worker(config, policy, rows, n=1):
    """verl's AgentLoopWorker over ``rows`` (dataset items), ``n`` samples each, as verl's
    trainer batches them: the DataProto of the rollout."""
    from verl import DataProto
    from verl.experimental.agent_loop.agent_loop import AgentLoopWorker
    from verl.experimental.reward_loop.reward_loop import RewardLoopWorker
    from verl.utils.dataset.rl_dataset import collate_fn

    async def main():
        worker = AgentLoopWorker(config, policy, reward_loop_worker_handles=[RewardHandle(RewardLoopWorker(config))])
        batch = DataProto.from_single_dict(collate_fn(rows))
        batch = batch.repeat(repeat_times=n, interleave=True)
        return await worker.generate_sequences(batch)

    return asyncio.run(main())


def check_alignment(output, tokenizer, policy):
    """What verl's collation expects: the response mask is 1 on exactly the policy's tokens,
    the image placeholders match the images' patch grids, positions are Qwen2-VL's."""
    image_pad = tokenizer.convert_tokens_to_ids("<|image_pad|>")
    for i in range(len(output)):
        responses, mask = output.batch["responses"][i], output.batch["response_mask"][i]
        policy_tokens = responses[mask.bool()].tolist()
        assert any(policy_tokens == sum(r, []) for r in policy.replies.values()), i
        inputs = output.non_tensor_batch["multi_modal_inputs"][i]
        merge = 4  # Qwen2-VL merges 2 x 2 patches into one token
        assert int((output.batch["input_ids"][i] == image_pad).sum()) == int(inputs["image_grid_thw"].prod(-1).sum()
                                                                            ) // merge
        assert output.batch["position_ids"].shape[-1] == output.batch["input_ids"].shape[-1]
        valid = int(output.batch["attention_mask"][i].sum())
        assert valid == int((output.batch["input_ids"][i] != tokenizer.pad_token_id).sum())


def test_the_rewriter_plays_through_verls_agent_loop_worker(tiny_vlm, tmp_path, serve):
    import gymnasium as gym
    from transformers import AutoTokenizer

    from vicogym.rewards import difficulty_reward
    from vicogym.trainers.verl_agent import EpisodeDataset

    actor = serve(("ok", ["Answer: 7"]))  # the actor's server, apart from the policy's
    settings = {"k": 2, "actor": f"openai:vlm@{actor.url}", "max_turns": 3}
    path = _config_file(tmp_path, "rw", env_id="vicogym/Chart-v0", n=2, seed=11, env_kwargs=settings,
                        rows="rewriter")
    config = verl_config(tiny_vlm)
    tokenizer = AutoTokenizer.from_pretrained(tiny_vlm)
    dataset = EpisodeDataset([path], tokenizer, config.data, None)
    rows = [dataset[0], dataset[1]]
    edits = {}
    for row in rows:  # a valid edit of each episode, found on an env of the same seed, by its question
        env = gym.make("vicogym/Chart-v0", **settings)
        obs, _ = env.reset(seed=int(row["extra_info"]["seed"]))
        edits[obs["question"]] = json.dumps(env.unwrapped.sample_edit(obs, np.random.default_rng(0)))
        reward_config = env.unwrapped.config.reward_config()
        env.close()
    assert len(edits) == 2

    def script(prompt, turn):
        if turn == 0:
            return "I think the chart should change."  # not an edit: rejected, malformed
        if turn == 1:
            (edit,) = [e for q, e in edits.items() if q in prompt]
            return edit
        return '{"op": "stop"}'

    policy = ScriptedPolicy(tokenizer, script)
    output = run_worker(config, policy, rows, n=2)
    assert len(output) == 4
    check_alignment(output, tokenizer, policy)
    fields = output.non_tensor_batch["vicogym"]
    for i, info in enumerate(fields):
        assert info["errors"] == ["malformed"] and info["steps"] == 3 and info["accepted"] == 1, info
        assert info["seed"] == rows[i // 2]["extra_info"]["seed"]  # the n samples of a row share its seed
        assert float(output.batch["rm_scores"][i].sum()) == pytest.approx(
            difficulty_reward(info["pass_rate"], reward_config))
    assert fields[0]["seed_pass_rate"] == fields[1]["seed_pass_rate"]
    text = tokenizer.decode(output.batch["responses"][0], skip_special_tokens=True)
    assert "The edit was rejected (malformed)" in text and "The edit was accepted" in text
    assert all(n == 3 for n in policy.images.values())  # the seed image and one per answered edit


def test_the_evidence_tools_play_through_verls_tool_agent_loop(tiny_vlm, tmp_path):
    """Rows of ``vicogym generate vicogym/Evidence-v0`` through verl's own dataset and tool
    agent loop: a zoom returns a new view as an image (the trajectory's images grow), the
    answer is scored by the task's scorer, and verl's reward loop hands that score on."""
    import pyarrow.parquet as pq
    from transformers import AutoProcessor, AutoTokenizer
    from verl.utils.dataset.rl_dataset import RLHFDataset

    from vicogym.evidence.runs import generate_tasks

    settings = {"view_size": 256, "max_images": 4}
    generate_tasks(tmp_path / "tasks", n=2, seed=4, env_kwargs=settings)
    files = sorted(str(p) for p in (tmp_path / "tasks").glob("part-*.parquet"))
    stored = [r for f in files for r in pq.read_table(f).to_pylist()]
    assert {r["agent_name"] for r in stored} == {"tool_agent"}
    config = verl_config(tiny_vlm, "actor_rollout_ref.rollout.agent.default_agent_loop=tool_agent",
                         "actor_rollout_ref.rollout.multi_turn.max_parallel_calls=2")
    tokenizer, processor = AutoTokenizer.from_pretrained(tiny_vlm), AutoProcessor.from_pretrained(tiny_vlm)
    dataset = RLHFDataset(files, tokenizer, config.data, processor)
    rows = [dataset[0], dataset[1]]
    assert rows[0]["tools_kwargs"]["zoom"]["create_kwargs"]["task_id"] == stored[0]["task_id"]
    answers = {r["question"]: (r["answer"] if i == 0 else "no such answer") for i, r in enumerate(stored)}

    def script(prompt, turn):
        if turn == 0:  # two calls in one turn: verl runs them side by side on the trajectory's episode
            call = {"name": "zoom", "arguments": {"image": 0, "regions": [{"x0": 0, "y0": 0, "x1": 0.5, "y1": 0.5}]}}
            return f"<tool_call>\n{json.dumps(call)}\n</tool_call>\n<tool_call>\n" + json.dumps(
                {"name": "zoom", "arguments": {"image": 9, "regions": []}}) + "\n</tool_call>"
        if turn > 1:
            return "Done."  # no tool call: verl's loop ends the trajectory
        (answer,) = [a for q, a in answers.items() if q in prompt]
        return "<tool_call>\n" + json.dumps({"name": "answer", "arguments": {"answer": answer}}) + "\n</tool_call>"

    policy = ScriptedPolicy(tokenizer, script)
    output = run_worker(config, policy, rows, n=2)
    check_alignment(output, tokenizer, policy)
    scores = output.batch["rm_scores"].sum(-1).tolist()
    assert scores == [1.0, 1.0, 0.0, 0.0]  # the right answer, then a wrong one, for both samples of each row
    assert list(output.non_tensor_batch["evidence_outcome"]) == ["answered"] * 4
    assert all(n == 2 for n in policy.images.values())  # the start view, then the zoom's new view
    text = tokenizer.decode(output.batch["responses"][0], skip_special_tokens=True)
    assert "image 1: unit" in text and "error (bad_field): expected regions" in text and "Answer recorded." in text


def test_the_tool_schemas_file_is_what_the_tools_declare():
    import yaml

    from vicogym.evidence.protocol import ACTIONS as EVIDENCE_ACTIONS
    from vicogym.evidence.protocol import tool_schema_of
    from vicogym.trainers import verl_agent
    from vicogym.trainers.verl_agent import TOOL_CONFIG, overrides, tool_config

    text = Path(TOOL_CONFIG).read_text(encoding="utf-8")
    assert text == tool_config(), "the shipped YAML is stale: run vicogym.trainers.verl_agent.write_tool_config()"
    tools = yaml.safe_load(text)["tools"]
    assert [t["tool_schema"] for t in tools] == [tool_schema_of(a) for a in EVIDENCE_ACTIONS]
    names = ["ZoomTool", "NoteTool", "ViewTool", "ComposeTool", "AnswerTool"]  # what users' verl configs may name
    assert [t["class_name"] for t in tools] == [f"vicogym.trainers.verl_agent.{n}" for n in names]
    assert [getattr(verl_agent, n).action for n in names] == list(EVIDENCE_ACTIONS)
    assert any(o.startswith("data.custom_cls.path=pkg://vicogym.trainers.verl_agent") for o in overrides())


def test_a_new_action_in_the_table_gets_a_tool_class_and_its_yaml_entry(monkeypatch, tmp_path):
    """The tool classes and the YAML are derived from the protocol's table: a new entry
    becomes a class verl's loader instantiates with the entry's schema."""
    from verl.tools.tool_registry import initialize_tools_from_config

    from vicogym.evidence.protocol import ACTION_TABLE, Action
    from vicogym.trainers import verl_agent
    from vicogym.trainers.verl_agent import TOOL_CLASSES, tool_classes, tool_config, write_tool_config

    assert list(TOOL_CLASSES) == list(ACTION_TABLE)
    mark = Action("mark", "Mark a sent image with a label.", {"image": {"type": "integer"}}, ("image",),
                  lambda obj, m: dict(obj), "", "", "")
    monkeypatch.setitem(ACTION_TABLE, "mark", mark)
    classes = tool_classes()
    assert list(classes) == ["zoom", "note", "view", "compose", "answer", "mark"]
    assert classes["mark"].__name__ == "MarkTool" and classes["mark"].action == "mark"
    assert "class_name: vicogym.trainers.verl_agent.MarkTool" in tool_config()
    monkeypatch.setattr(verl_agent, "MarkTool", classes["mark"], raising=False)  # as the module's import would set it
    tools = initialize_tools_from_config(str(write_tool_config(tmp_path / "tools.yaml")))  # verl's own loader
    assert [t.name for t in tools] == list(ACTION_TABLE) and type(tools[-1]).__name__ == "MarkTool"
    assert tools[-1].tool_schema.function.parameters.required == ["image"]


def test_a_trajectory_without_an_episode_gets_an_error_text_not_an_exception():
    from vicogym.trainers.verl_agent import ZoomTool, tool_schema_of

    async def main():
        tool = ZoomTool({}, None)
        instance, _ = await tool.create(create_kwargs={})
        try:
            return await tool.execute(instance, {"image": 0, "regions": []})
        finally:
            await tool.release(instance)

    response, reward, metrics = asyncio.run(main())
    assert response.text.startswith("error (no_episode): this trajectory names no evidence episode") and reward == 0.0
    assert tool_schema_of("zoom")["function"]["name"] == "zoom"


class Trajectory:
    """What verl's tool agent loop hands a tool as ``agent_data``: the row's tools_kwargs and
    the trajectory's extra fields."""

    def __init__(self, tools_kwargs):
        self.tools_kwargs, self.extra_fields = tools_kwargs, {}


def _evidence_row_kwargs(seed, settings):
    import gymnasium as gym

    from vicogym.evidence.protocol import episode_tools_kwargs

    env = gym.make("vicogym/Evidence-v0", **settings).unwrapped
    env.reset(seed=seed)
    return episode_tools_kwargs(seed, settings, env.task.id), env.task


def test_a_tool_runs_its_own_action_and_the_last_step_ends_the_episode_even_when_rejected():
    from vicogym.trainers.verl_agent import AnswerTool, ViewTool, ZoomTool
    from vicogym.verl_reward import compute_score

    settings = {"view_size": 256, "max_steps": 2}
    kwargs, task = _evidence_row_kwargs(7, settings)
    trajectory = Trajectory(kwargs)

    async def main():
        view, zoom, answer = ViewTool({}), ZoomTool({}), AnswerTool({})
        smuggled = await view.execute("v", {"action": "answer", "answer": task.answer, "units": [0]},
                                      agent_data=trajectory)
        last = await zoom.execute("z", {"image": 99, "regions": [{"x0": 0, "y0": 0, "x1": 1, "y1": 1}]},
                                  agent_data=trajectory)
        after = await answer.execute("a", {"answer": task.answer}, agent_data=trajectory)
        not_object = await ZoomTool({}).execute("x", ["not", "an", "object"], agent_data=Trajectory(kwargs))
        return smuggled, last, after, not_object

    smuggled, last, after, not_object = asyncio.run(main())
    assert smuggled[2]["action"] == "view" and "Answer recorded" not in smuggled[0].text
    assert "error (unknown_image)" in last[0].text and "Out of steps" in last[0].text
    assert trajectory.extra_fields == {"evidence_score": 0.0, "evidence_outcome": "out_of_steps"}
    assert after[0].text.startswith("error (episode_over)") and "out of steps" in after[0].text
    assert after[2]["error"] == "episode_over" and after[1] == 0.0  # typed, and the episode was not stepped
    assert not_object[0].text.startswith("error (malformed)")
    truth = json.dumps({"answer": task.answer, "golds": list(task.golds), "scorer": task.scorer,
                        "options": list(task.options)})
    # a trajectory that used the tools is scored by them; an answer in the text alone counts only without tools
    assert compute_score("vicogym/Evidence-v0", f"Answer: {task.answer}", truth,
                         extra_info=dict(trajectory.extra_fields)) == 0.0
    assert compute_score("vicogym/Evidence-v0", f"Answer: {task.answer}", truth, extra_info={}) == 1.0


@pytest.mark.parametrize("create, message", [
    ({"seed": "abc", "settings": "{}"}, "create_kwargs.seed: expected the episode's seed"),
    ({"seed": 3, "settings": "[1, 2]"}, "create_kwargs.settings: expected the environment settings"),
    ({"seed": 3, "settings": "{}", "task_id": "forms-0000"}, "not the row's forms-0000"),
    ({"settings": "{}"}, "names no evidence episode"),
])
def test_a_row_that_names_no_episode_gets_an_error_text(create, message):
    from vicogym.trainers.verl_agent import ZoomTool

    async def main():
        return await ZoomTool({}).execute("i", {"image": 0, "regions": []},
                                          agent_data=Trajectory({"zoom": {"create_kwargs": create}}))

    response, reward, metrics = asyncio.run(main())
    assert message in response.text and reward == 0.0 and metrics == {"error": "no_episode"}


def test_tool_and_loop_settings_are_checked():
    from vicogym.trainers.verl_agent import ZoomTool

    for bad in (0, "big", 100):
        with pytest.raises(ValueError, match="max_pixels as a whole number of at least 784"):
            ZoomTool({"max_pixels": bad})


def _documented_verl_commands():
    from test_docs import PAGES, blocks

    for page in PAGES:
        for block in blocks(page):
            if "verl.trainer.main_ppo" in block.code and "vicogym.trainers.verl_agent" in block.code:  # the adapter's
                yield pytest.param(block.code, id=block.name)


@pytest.mark.parametrize("code", list(_documented_verl_commands()))
def test_the_documented_verl_commands_pass_verls_config_checks(code, tmp_path):
    """Each ``python -m verl.trainer.main_ppo ...`` of the README and docs, its arguments
    expanded by bash as printed, composes into verl's config and passes verl's own checks."""
    import os
    import subprocess
    import sys

    import verl
    from hydra import compose, initialize_config_dir
    from verl.trainer.ppo.utils import need_critic, need_reference_policy
    from verl.utils.config import validate_config

    script = code.replace("python -m verl.trainer.main_ppo", "printf '%s\\n'", 1)
    env = dict(os.environ, PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"])
    done = subprocess.run(["bash", "-c", script], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    arguments = [a for a in done.stdout.splitlines() if a]
    assert any(a.startswith("actor_rollout_ref.model.path=") for a in arguments)
    folder = os.path.join(os.path.dirname(verl.__file__), "trainer", "config")
    with initialize_config_dir(config_dir=folder, version_base=None):
        config = compose(config_name="ppo_trainer", overrides=arguments)
    validate_config(config, use_reference_policy=need_reference_policy(config), use_critic=need_critic(config))
    if config.reward.custom_reward_function.path:
        assert os.path.isfile(config.reward.custom_reward_function.path)
    for path in (config.actor_rollout_ref.rollout.multi_turn.tool_config_path,
                 config.actor_rollout_ref.rollout.agent.agent_loop_config_path):
        assert path is None or os.path.isfile(path)
