"""vicogym in TRL's GRPOTrainer (vicogym.trainers.trl): the reward of offline rows against
compute_score, the rows as TRL's multimodal dataset, the evidence and rewriter
environments driven as TRL drives them, and two training steps of a tiny Qwen2-VL on CPU
for each: offline Chart rows with the reward function, the evidence tools and the
rewriter's edit tool through ``environment_factory``.

A randomly initialised policy almost never writes a tool call, so the training tests
script the first turn of some rollouts (a right answer, a zoom, an edit; the rest is the
model's own text): the tool loop, the tool images in generation and in the loss, and the
environments' rewards then run for real, and the scripted rollouts' rewards differ from
the others', so the update is not zero."""

from __future__ import annotations

import json

import numpy as np
import pytest

datasets = pytest.importorskip("datasets", reason="the TRL adapter needs datasets")
trl = pytest.importorskip("trl", reason="the TRL adapter is tested with trl installed (pip install trl)")
torch = pytest.importorskip("torch", reason="the TRL training tests need torch")

from helpers.tiny_models import chat_template, tiny_qwen2_vl

from vicogym.runs.generate import GenerateConfig, generate
from vicogym.trainers.trl import (
    EvidenceToolEnv,
    RewriterToolEnv,
    completion_text,
    make_reward_function,
    reward_function,
    rewriter_dataset,
    rows_dataset,
    vision_token_ids,
)
from vicogym.verl_reward import compute_score

EVIDENCE_SETTINGS = {"view_size": 256, "max_images": 4}
#: a cheap rewriter episode: the simulated actor answers twice per probe
REWRITER_SETTINGS = {"k": 2, "max_turns": 2}


@pytest.fixture(scope="module")
def chart_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("trl") / "chart"
    generate(GenerateConfig("vicogym/Chart-v0", n=2, out=str(out), episodes_per_shard=2, env_kwargs={"k": 2}),
             progress=False)
    return out


@pytest.fixture(scope="module")
def evidence_run(tmp_path_factory):
    from vicogym.evidence.runs import generate_tasks

    out = tmp_path_factory.mktemp("trl") / "evidence"
    generate_tasks(out, n=2, seed=0, env_kwargs=EVIDENCE_SETTINGS, episodes_per_shard=2)
    return out


@pytest.fixture(scope="module")
def qwen(tmp_path_factory):
    return tiny_qwen2_vl(tmp_path_factory.mktemp("trl") / "qwen")


def _truth(row):
    return row["reward_model"]["ground_truth"]


def _evidence_answer(row):
    return json.loads(_truth(row))["answer"]


# -- the reward of offline rows -------------------------------------------------------------------
def test_the_reward_is_compute_score_of_the_last_assistant_text(chart_run):
    rows = rows_dataset(chart_run)
    row = rows[0]
    right, wrong = f"The bars say\nAnswer: {_truth(row)}", "Answer: 123456789"
    completions = [[{"role": "assistant", "content": right}],
                   [{"role": "assistant", "content": "thinking"}, {"role": "assistant", "content": wrong}]]
    columns = {k: [row[k]] * 2 for k in ("data_source", "reward_model", "extra_info")}
    scores = reward_function([row["prompt"]] * 2, completions, **columns)
    expected = [compute_score(row["data_source"], text, _truth(row), row["extra_info"]) for text in (right, wrong)]
    assert scores == expected == [1.0, 0.0]
    assert reward_function.__name__ == "vicogym"
    boxed = make_reward_function(extractor="boxed", name="boxed")
    assert boxed.__name__ == "boxed"
    assert boxed([None], [f"\\boxed{{{_truth(row)}}}"], **{k: v[:1] for k, v in columns.items()}) == [1.0]


def test_the_reward_scores_evidence_rows_and_names_a_missing_column(evidence_run):
    row = rows_dataset(evidence_run)[0]
    columns = {k: [row[k]] for k in ("data_source", "reward_model", "extra_info")}
    right = [[{"role": "assistant", "content": [{"type": "text", "text": f"Answer: {_evidence_answer(row)}"}]}]]
    assert reward_function([row["prompt"]], right, **columns) == [1.0]
    assert reward_function([row["prompt"]], [[{"role": "assistant", "content": "Answer: nothing"}]],
                           **columns) == [0.0]
    with pytest.raises(ValueError, match="data_source column"):
        reward_function([row["prompt"]], right, reward_model=columns["reward_model"])


def test_completion_text():
    assert completion_text("plain") == "plain"
    assert completion_text([{"role": "assistant", "content": "a"}, {"role": "tool", "content": "t"}]) == "a"
    assert completion_text([{"role": "tool", "content": "t"}]) == ""


# -- rows -----------------------------------------------------------------------------------------
def test_rows_dataset_puts_image_blocks_where_the_placeholders_were(chart_run, evidence_run):
    from PIL import Image

    from vicogym.runs.verify import iter_rows

    chart = rows_dataset(chart_run)
    assert len(chart) == 2 and isinstance(chart.features["images"].feature, datasets.Image)
    (message,) = chart[0]["prompt"]
    assert message["role"] == "user" and [b["type"] for b in message["content"]] == ["image", "text"]
    assert message["content"][1]["text"].endswith("Answer with a single word or number.")
    assert isinstance(chart[0]["images"][0], Image.Image) and chart[0]["data_source"] == "vicogym/Chart-v0"
    evidence = rows_dataset([evidence_run])
    blocks = evidence[0]["prompt"][0]["content"]
    assert [b["type"] for b in blocks] == ["text", "image"] and len(evidence[0]["images"]) == 1
    create = evidence[0]["extra_info"]["tools_kwargs"]["zoom"]["create_kwargs"]
    assert json.loads(create["settings"]) == EVIDENCE_SETTINGS
    # rows in memory give the same dataset
    in_memory = rows_dataset(list(iter_rows(chart_run)))
    assert in_memory[0]["prompt"] == chart[0]["prompt"]
    assert np.array_equal(np.asarray(in_memory[0]["images"][0]), np.asarray(chart[0]["images"][0]))


def test_rows_dataset_refuses_what_is_not_vicogym_rows(tmp_path):
    from vicogym.errors import RunError

    with pytest.raises(RunError, match="no part-"):
        rows_dataset(tmp_path)
    with pytest.raises(ValueError, match="no prompt"):
        rows_dataset([{"data_source": "vicogym/Chart-v0"}])
    with pytest.raises(ValueError, match="1 <image> placeholders for 0 images"):
        rows_dataset([{"data_source": "vicogym/Chart-v0", "prompt": [{"role": "user", "content": "<image>Hi"}]}])
    with pytest.raises(TypeError, match="wrap it in a list"):
        rows_dataset({"data_source": "vicogym/Chart-v0", "prompt": []})


# -- the environments, driven as TRL drives them --------------------------------------------------
def _tool_schemas(env):
    import inspect

    from transformers.utils import get_json_schema

    names = [n for n, _ in inspect.getmembers(type(env), predicate=inspect.isfunction)
             if n not in ("reset", "get_reward") and not n.startswith("_")]
    return {n: get_json_schema(getattr(env, n))["function"] for n in names}


def test_the_evidence_tools_have_the_verl_tools_schemas_texts():
    from vicogym.evidence.protocol import ACTIONS as EVIDENCE_ACTIONS
    from vicogym.evidence.protocol import tool_schema_of

    schemas = _tool_schemas(EvidenceToolEnv())
    assert sorted(schemas) == sorted(EVIDENCE_ACTIONS)
    for name, schema in schemas.items():
        verl = tool_schema_of(name)["function"]
        assert schema["description"] == verl["description"]
        assert schema["parameters"]["required"] == verl["parameters"]["required"]
        assert set(schema["parameters"]["properties"]) == set(verl["parameters"]["properties"])
    zoom = schemas["zoom"]["parameters"]["properties"]
    assert zoom["image"]["type"] == "integer" and zoom["regions"]["items"]["type"] == "object"
    assert "x0, y0, x1, y1" in zoom["regions"]["description"]


def test_the_tool_methods_come_from_the_table_of_actions(monkeypatch):
    """A new entry in the protocol's table becomes a tool method with its schema's types,
    defaults and texts; the tools are the table's actions, in its order."""
    from transformers.utils import get_json_schema

    from vicogym.evidence.protocol import ACTION_TABLE, Action
    from vicogym.trainers.trl import with_action_tools

    assert list(_tool_schemas(EvidenceToolEnv())) == sorted(ACTION_TABLE)
    mark = Action("mark", "Mark a sent image with a label.",
                  {"image": {"type": "integer", "description": "the number of a sent image"},
                   "boxes": {"type": "array", "items": {"type": "object", "properties": {"x": {"type": "number"}}}},
                   "label": {"type": "string"}}, ("image",), lambda obj, m: dict(obj), "", "", "")
    monkeypatch.setitem(ACTION_TABLE, "mark", mark)
    env = with_action_tools(type("Marking", (EvidenceToolEnv,), {}))()
    schema = _tool_schemas(env)["mark"]
    assert schema["description"] == "Mark a sent image with a label."
    assert schema["parameters"]["required"] == ["image"]
    image = {"type": "integer", "description": "the number of a sent image"}
    assert schema["parameters"]["properties"]["image"] == image
    assert schema["parameters"]["properties"]["boxes"]["items"]["type"] == "object"
    assert get_json_schema(env.mark)["function"]["name"] == "mark"
    env.calls, env.done = [], True  # no episode: the call is recorded, not stepped
    env.mark(3)
    env.mark(image=4, boxes=[{"x": 0.5}], label="L")
    assert env.calls == [{"action": "mark", "image": 3, "label": ""},
                         {"action": "mark", "image": 4, "boxes": [{"x": 0.5}], "label": "L"}]
    with pytest.raises(TypeError):
        env.mark(image=1, colour="red")  # an argument the schema does not have, as for a method written out


def test_an_evidence_episode_through_the_tools(evidence_run):
    from PIL import Image

    row = rows_dataset(evidence_run)[0]
    env = EvidenceToolEnv(max_pixels=64 * 64)
    text = env.reset(**row)
    assert isinstance(text, str) and "image 0: unit 0" in text and "left: 16 steps" in text
    result = env.zoom(image=0, regions=[{"x0": 0.0, "y0": 0.0, "x1": 0.5, "y1": 0.5}], note="the table")
    assert [b["type"] for b in result] == ["text", "image"] and result[0]["text"].startswith("image 1: unit 0")
    assert isinstance(result[1]["image"], Image.Image) and result[1]["image"].size[0] * result[1]["image"].size[1] <= \
        64 * 64
    assert env.zoom(image=7, regions=[{"x0": 0, "y0": 0, "x1": 1, "y1": 1}]).startswith("error (unknown_image)")
    assert env.view(units=[99]).startswith("error (unknown_unit)")
    assert env.note(notes=[{"image": 1, "at": [2, 2]}]).startswith("error (bad_region)")
    assert env.get_reward() == 0.0
    assert env.answer(answer=_evidence_answer(row)) == "Answer recorded."
    assert env.get_reward() == 1.0
    assert env.answer(answer="again").startswith("error (episode_over): the task has been answered")
    assert env.get_reward() == 1.0  # acting after the end changes nothing
    # a row without images: the question and the start views come from reset
    plain = env.reset(extra_info={"seed": 3, "settings": json.dumps(EVIDENCE_SETTINGS)})
    assert plain[0]["type"] == "text" and "Answer with" in plain[0]["text"] and plain[1]["type"] == "image"
    assert env.get_reward() == 0.0 and env.answer(answer="nothing like it") == "Answer recorded."


def test_an_evidence_row_of_other_settings_or_none_is_refused(evidence_run):
    row = dict(rows_dataset(evidence_run)[0])
    env = EvidenceToolEnv()
    with pytest.raises(ValueError, match="names no evidence task"):
        env.reset(prompt=row["prompt"])
    create = dict(row["extra_info"]["tools_kwargs"]["zoom"]["create_kwargs"], task_id="forms-0123456789abcdef")
    with pytest.raises(ValueError, match="not the row's"):
        env.reset(extra_info={"tools_kwargs": {"zoom": {"create_kwargs": create}}})
    with pytest.raises(ValueError, match="settings as a JSON object"):
        env.reset(extra_info={"seed": 1, "settings": "view_size=256"})


def _valid_edit(seed: int) -> str:
    import gymnasium as gym

    env = gym.make("vicogym/Chart-v0", **REWRITER_SETTINGS).unwrapped
    env.reset(seed=seed)
    return json.dumps(env.sample_edit(rng=np.random.default_rng(0)))


def test_a_rewriter_episode_through_the_edit_tool():
    from transformers.utils import get_json_schema

    from vicogym.rewards import difficulty_reward

    rows = rewriter_dataset("vicogym/Chart-v0", n=2, seed=0, env_kwargs=REWRITER_SETTINGS)
    assert len(rows) == 2 and rows[0]["extra_info"]["env_id"] == "vicogym/Chart-v0"
    schema = get_json_schema(RewriterToolEnv().edit)["function"]
    assert schema["parameters"]["properties"]["edit"]["type"] == "string"
    assert schema["parameters"]["required"] == ["edit"]
    env = RewriterToolEnv()
    first = env.reset(**rows[0])
    assert first[0]["type"] == "image" and "Structure (JSON)" in first[1]["text"] and "edit tool" in first[1]["text"]
    assert env.get_reward() == -1.0  # no edit accepted yet: the invalid penalty
    rejected = env.edit(edit="make it harder")
    assert isinstance(rejected, str) and rejected.startswith("The edit was rejected (")
    assert env.get_reward() == -1.0
    accepted = env.edit(edit=_valid_edit(rows[0]["extra_info"]["seed"]))
    assert accepted[0]["type"] == "image" and accepted[1]["text"].startswith("The edit was accepted.")
    assert "episode is over (max_turns=2)" in accepted[1]["text"]
    inner = env._env
    assert env.get_reward() == difficulty_reward(inner.pass_rate, inner.config.reward_config())
    assert env.edit(edit='{"op": "stop"}').startswith("error (episode_over): the episode is over")
    assert env.get_reward() == difficulty_reward(inner.pass_rate, inner.config.reward_config())
    with pytest.raises(ValueError, match="extra_info.env_id and extra_info.seed"):
        env.reset(prompt=[])
    with pytest.raises(ValueError, match="unknown generate setting|expected"):
        rewriter_dataset("vicogym/Chart-v0", n=0)


def test_environments_are_lent_and_given_back():
    from vicogym.trainers import common as adapters

    rows = rewriter_dataset("vicogym/Chart-v0", n=1, seed=5, env_kwargs=REWRITER_SETTINGS)
    key = adapters._settings_key("vicogym/Chart-v0", REWRITER_SETTINGS)
    env = RewriterToolEnv()
    env.reset(**rows[0])
    lent = env._env
    assert lent not in adapters._POOLS[key]
    env.reset(**rows[0])  # the first one came back and was lent again
    assert env._env is lent
    del env
    assert lent in adapters._POOLS[key]


# -- two GRPO steps on CPU ------------------------------------------------------------------------
def _config(tmp_path, max_completion_length, processor=None):
    # a sampled <|video_pad|> after a tool image breaks TRL's forward pass: keep it from being sampled
    generation = {"suppress_tokens": vision_token_ids(processor)} if processor is not None else None
    return trl.GRPOConfig(output_dir=str(tmp_path / "grpo"), use_cpu=True, bf16=False, fp16=False,
                          generation_kwargs=generation,
                          per_device_train_batch_size=2, num_generations=2, max_completion_length=max_completion_length,
                          max_steps=2, learning_rate=1e-3, logging_steps=1, report_to="none", save_strategy="no",
                          max_tool_calling_iterations=2, seed=0, dataloader_num_workers=0)


def _script(trainer, first_turn):
    """Replace the first turn of some rollouts by scripted text: ``first_turn(row, k)`` is
    the text for rollout ``k`` of the batch (or None: the model's own). Returns the rows
    of every batch."""
    tokenizer = trainer.processing_class.tokenizer
    batches = []
    generate_and_score = trainer._generate_and_score_completions
    generate_one_turn = trainer._generate_single_turn

    turns = []

    def record(inputs):
        batches.append(inputs)
        turns.append(0)
        return generate_and_score(inputs)

    def one_turn(prompt_ids, images, multimodal_fields, num_generations, has_tool_images=False):
        ids, logprobs = generate_one_turn(prompt_ids, images, multimodal_fields, num_generations, has_tool_images)
        turns[-1] += 1
        if turns[-1] == 1:  # the first turn of every rollout of the batch; later ones are the tool loop's
            assert len(ids) == len(batches[-1])
            for k, row in enumerate(batches[-1]):
                text = first_turn(row, k)
                if text is not None:
                    ids[k] = tokenizer.encode(text + "<|im_end|>")
        return ids, logprobs

    trainer._generate_and_score_completions = record
    trainer._generate_single_turn = one_turn
    return batches


def _loss_images(trainer):
    """Per forward pass of the loss: the images of each rollout and how many image tokens
    its sequence holds (TRL drops all images where these disagree)."""
    seen = []
    logps = trainer._get_per_token_logps_and_entropies

    def spy(model, input_ids, *args, **kwargs):
        if model.training:
            mm = kwargs.get("mm_token_type_ids")
            tokens = [int((row == 1).sum()) for row in mm] if mm is not None else None
            seen.append((kwargs.get("num_images"), tokens, kwargs.get("image_grid_thw")))
        return logps(model, input_ids, *args, **kwargs)

    trainer._get_per_token_logps_and_entropies = spy
    return seen


def _check_images(seen, per_rollout):
    """Every loss pass saw ``per_rollout`` images a rollout (in some order: TRL shuffles
    the rollouts after generation), each with all its image tokens."""
    assert len(seen) == 2
    for num_images, tokens, grid in seen:
        assert sorted(num_images) == sorted(per_rollout) and grid is not None and grid.shape[0] == sum(per_rollout)
        merged = (grid.prod(dim=-1) // 4).tolist()  # a 2 x 2 merge: one token per 4 patches
        assert tokens == [sum(merged[:num_images[0]]), sum(merged[num_images[0]:])]


def _tool_call(name, **arguments):
    return "<tool_call>\n" + json.dumps({"name": name, "arguments": arguments}) + "\n</tool_call>"


def _train(trainer):
    before = {n: p.detach().clone() for n, p in trainer.model.named_parameters()}
    trainer.train()
    assert trainer.state.global_step == 2
    steps = [e for e in trainer.state.log_history if "loss" in e]
    assert [e["step"] for e in steps] == [1, 2]
    changed = [n for n, p in trainer.model.named_parameters() if not torch.equal(before[n], p.detach())]
    assert changed, "no parameter changed in two steps"
    return steps


@pytest.fixture
def quiet(monkeypatch):
    monkeypatch.setenv("TRL_EXPERIMENTAL_SILENCE", "1")


def _tool_parsing():
    """TRL parses tool calls with transformers' response templates from 5.13 on, and with
    jmespath before that."""
    import importlib.util

    import transformers
    from packaging.version import Version

    if Version(transformers.__version__) < Version("5.13") and importlib.util.find_spec("jmespath") is None:
        pytest.skip(f"TRL's tool calling on transformers {transformers.__version__} needs jmespath "
                    f"(pip install jmespath)")


def test_grpo_trains_on_offline_chart_rows_with_the_reward_function(chart_run, qwen, tmp_path, quiet):
    from transformers import AutoProcessor, Qwen2VLForConditionalGeneration

    scores = []

    def vicogym(prompts, completions, **columns):
        out = reward_function(prompts, completions, **columns)
        scores.append(out)
        return out

    trainer = trl.GRPOTrainer(model=Qwen2VLForConditionalGeneration.from_pretrained(qwen), reward_funcs=vicogym,
                              args=_config(tmp_path, 16), train_dataset=rows_dataset(chart_run),
                              processing_class=AutoProcessor.from_pretrained(qwen))
    batches = _script(trainer, lambda row, k: f"Answer: {_truth(row)}" if k % 2 == 0 else None)
    steps = _train(trainer)
    assert len(scores) == 2 and all(s[0] == 1.0 for s in scores) and len(batches) == 2
    assert all("rewards/vicogym/mean" in e for e in steps)


def test_grpo_trains_the_evidence_tools_as_environment(evidence_run, qwen, tmp_path, quiet):
    _tool_parsing()
    import functools

    from transformers import AutoProcessor, Qwen2VLForConditionalGeneration

    class Evidence(EvidenceToolEnv):
        episodes: list = []

        def get_reward(self):
            reward = super().get_reward()
            Evidence.episodes.append((list(self.calls), reward))
            return reward

    processor = AutoProcessor.from_pretrained(qwen)
    assert processor.chat_template == chat_template()
    trainer = trl.GRPOTrainer(model=Qwen2VLForConditionalGeneration.from_pretrained(qwen),
                              args=_config(tmp_path, 256, processor), train_dataset=rows_dataset(evidence_run),
                              processing_class=processor,
                              environment_factory=functools.partial(Evidence, max_pixels=28 * 28 * 16))
    region = {"x0": 0.0, "y0": 0.0, "x1": 0.5, "y1": 0.5}
    _script(trainer, lambda row, k: _tool_call("zoom", image=0, regions=[region]) if k % 2 == 0
            else _tool_call("answer", answer=_evidence_answer(row)))
    seen = _loss_images(trainer)
    steps = _train(trainer)
    _check_images(seen, [2, 1])  # the zoom's rollout: its start view and the zoomed view; the answer's: the start
    assert len(Evidence.episodes) == 4
    zooms = [e for e in Evidence.episodes if e[0] and e[0][0]["action"] == "zoom"]
    answers = [e for e in Evidence.episodes if e[0] and e[0][0]["action"] == "answer"]
    assert len(zooms) == len(answers) == 2
    assert all(reward == 1.0 for _, reward in answers) and all(reward == 0.0 for _, reward in zooms)
    assert all(e["tools/call_frequency"] >= 1.0 for e in steps) and all("rewards/Evidence/mean" in e for e in steps)


def test_grpo_trains_the_rewriter_through_the_edit_tool(qwen, tmp_path, quiet):
    _tool_parsing()
    from transformers import AutoProcessor, Qwen2VLForConditionalGeneration

    class Rewriter(RewriterToolEnv):
        episodes: list = []

        def get_reward(self):
            reward = super().get_reward()
            Rewriter.episodes.append((self.accepted, list(self.errors), reward))
            return reward

    rows = rewriter_dataset("vicogym/Chart-v0", n=2, seed=0, env_kwargs=REWRITER_SETTINGS)
    processor = AutoProcessor.from_pretrained(qwen)
    trainer = trl.GRPOTrainer(model=Qwen2VLForConditionalGeneration.from_pretrained(qwen),
                              args=_config(tmp_path, 1024, processor), train_dataset=rows, processing_class=processor,
                              environment_factory=lambda: Rewriter(max_pixels=28 * 28 * 16))
    _script(trainer, lambda row, k: _tool_call("edit", edit=_valid_edit(row["extra_info"]["seed"])) if k % 2 == 0
            else _tool_call("edit", edit="make it harder"))
    seen = _loss_images(trainer)
    steps = _train(trainer)
    _check_images(seen, [2, 1])  # the seed image and the edited one; the rejected edit sends no image
    assert len(Rewriter.episodes) == 4
    accepted = [e for e in Rewriter.episodes if e[0]]
    assert len(accepted) == 2 and all(-1.0 < e[2] <= 1.0 for e in accepted)
    assert all(e[2] == -1.0 and e[1] for e in Rewriter.episodes if not e[0])
    assert all("rewards/Rewriter/mean" in e for e in steps)
