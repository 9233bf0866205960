"""vicogym inside verl's training loop (verl 0.9): a dataset that draws fresh episodes,
the rewriter as an agent loop, and the evidence actions as tools.

- :class:`EpisodeDataset`, for ``data.custom_cls``: each entry of ``data.train_files`` /
  ``data.val_files`` is a ``vicogym generate --config`` file (TOML or JSON). Row ``j`` of
  epoch ``t`` is episode ``t * n + j`` of that run, the row ``vicogym generate`` writes
  for it (``rows = "samples"``, the default: the actor is trained on the samples), or a
  rewriter episode to play (``rows = "rewriter"``: env id, seed and settings, for
  :class:`RewriterAgentLoop`). verl's trainer calls ``on_batch_end`` after every batch,
  which is how the dataset knows the epoch: a new epoch's rows are new episodes.
- :class:`RewriterAgentLoop` (agent name ``vicogym_rewriter``): the policy is the rewriter.
  Each turn its reply is parsed as an edit and the row's environment steps it (the actor's
  K answers come from the environment's own actor, an ``openai:MODEL@URL`` server apart
  from the policy's); the new image, the pass rate and any error go back as the next user
  message (response mask 0). The trajectory's reward is the band reward of the final pass
  rate (the environment's ``invalid_penalty`` when no edit was accepted). The ``n``
  samples of a row start from the row's seed, so a GRPO group shares its seed sample.
- :class:`ZoomTool`, :class:`NoteTool`, :class:`ViewTool`, :class:`ComposeTool`,
  :class:`AnswerTool`: the actions of ``vicogym/Evidence-v0`` as verl tools, one
  :class:`EvidenceTool` class per entry of :data:`vicogym.evidence.protocol.ACTION_TABLE`
  (:data:`TOOL_CLASSES`; their YAML, :data:`TOOL_CONFIG`, is what :func:`tool_config`
  writes), for verl's ``tool_agent`` loop. verl creates and releases a tool
  instance around every call, so an episode is kept per trajectory (by verl's per-
  trajectory ``agent_data``, freed with it); the rows ``vicogym generate
  vicogym/Evidence-v0`` writes carry the ``tools_kwargs`` that name the episode (seed,
  settings, task id). New views come back as images, fitted into ``max_pixels``.

``python -m vicogym.trainers.verl_agent`` prints the overrides that point verl at all of them
(:func:`overrides`)::

    python -m verl.trainer.main_ppo $(python -m vicogym.trainers.verl_agent) data.train_files=train.toml ...
"""

from __future__ import annotations

import asyncio
import importlib.resources
import json
import weakref
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar
from uuid import uuid4

import numpy as np

from vicogym.errors import GenerationError, MissingExtra
from vicogym.install import verl_install_command

try:
    from verl.experimental.agent_loop.agent_loop import AgentLoopBase, AgentLoopOutput, register
    from verl.tools.base_tool import BaseTool
    from verl.tools.schemas import OpenAIFunctionToolSchema, ToolResponse
    from verl.utils.dataset.rl_dataset import RLHFDataset
except ImportError as exc:
    _missing = f"vicogym.trainers.verl_agent needs verl ({exc}); install it with {verl_install_command()}"
    if __name__ == "__main__":  # inside $(...) an empty output would drop the overrides without a word
        raise SystemExit(f"error: {_missing}") from None
    raise MissingExtra(_missing) from None

from vicogym.evidence.protocol import ACTION_TABLE, tool_schema_of
from vicogym.trainers.common import (
    EPISODE_OVER,
    MAX_PIXELS,
    borrow_env,
    episode_over_text,
    evidence_reply,
    feedback,
    fit_image,
    is_episode_over,
    open_evidence,
    pixels_from,
    plain,
    return_env,
    rewriter_prompt,
    rewriter_reward,
    seed_from,
    settings_from,
    step_edit,
    structure_text,
)

ASSETS = Path(str(importlib.resources.files("vicogym.assets")))
#: verl's ``agent.agent_loop_config_path``: registers ``vicogym_rewriter``
AGENT_LOOP_CONFIG = str(ASSETS / "verl_agent_loops.yaml")
#: verl's ``multi_turn.tool_config_path``: the evidence tools and their schemas
TOOL_CONFIG = str(ASSETS / "verl_evidence_tools.yaml")
REWRITER_AGENT = "vicogym_rewriter"
#: this module's import name (what verl's configs name its classes by)
MODULE = "vicogym.trainers.verl_agent"
ROW_KINDS = ("samples", "rewriter")
#: an episode that keeps no sample (its rewriter found no valid edit) is replaced by the
#: first of its spare episodes that keeps one: episode ``SPARE_BASE + e * SPARES + a``
SPARE_BASE = 1 << 40
SPARES = 16


# -- the dataset -------------------------------------------------------------------------
class _Spec:
    """One ``vicogym generate --config`` file as rows: the run's settings and row kind."""

    def __init__(self, path: str):
        from vicogym.registry import env_kind
        from vicogym.runs.generate import GenerateConfig
        from vicogym.validation import load_config_file

        where = f"the data.train_files / data.val_files entry {path}"
        try:
            data = load_config_file(Path(path))
        except ValueError as exc:
            raise ValueError(f"{where}: {str(exc).replace(f'--config {path}', 'it')}") from None
        self.rows = data.pop("rows", "samples")
        if self.rows not in ROW_KINDS:
            raise ValueError(f"{where}: expected rows in {ROW_KINDS}, got {self.rows!r}")
        data.setdefault("out", str(Path(path).with_suffix("")))  # never written: the rows are made in memory
        try:
            kind = env_kind(str(data.get("env_id")))
        except (ValueError, KeyError):
            kind = "edit"  # an unknown id is named by the settings' own check below
        if kind != "edit":
            raise ValueError(f"{where}: {data.get('env_id')} is not an edit environment; EpisodeDataset draws "
                             f"episodes of edit environments. Task rows of an agent environment come from "
                             f"`vicogym generate {data.get('env_id')} --out DIR` as Parquet, which verl's own "
                             f"dataset reads (leave data.custom_cls unset)")
        try:
            self.config = GenerateConfig.from_mapping(data)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"{where}: {exc}") from None
        self.path = path


class EpisodeDataset(RLHFDataset):
    """verl's ``data.custom_cls``: fresh vicogym episodes as rows, ``n`` per file and epoch.

    Each of ``data_files`` is a ``vicogym generate --config`` file (TOML or JSON: ``env_id``,
    ``n``, ``seed``, ``env_kwargs``, ``rewriter`` ...) with an optional ``rows`` key:
    ``samples`` (the default) gives the row ``vicogym generate`` writes for episode
    ``t * n + j`` (row ``j`` of epoch ``t``), prompt and image as verl's dataset gives
    them; ``rewriter`` gives the episode to play (``agent_name`` ``vicogym_rewriter``,
    ``extra_info``: ``env_id``, ``seed``, ``settings``). Rows are made when they are read
    (in verl's dataloader workers), so nothing is written to disk.
    """

    def __init__(self, data_files: Any, tokenizer: Any, config: Any, processor: Any = None, max_samples: int = -1):
        files = [data_files] if isinstance(data_files, (str, Path)) else list(data_files)
        if not files:
            raise ValueError("EpisodeDataset needs at least one vicogym generate --config file in data.train_files")
        self.specs = [_Spec(str(f)) for f in files]
        self.offsets = np.cumsum([0] + [s.config.n for s in self.specs]).tolist()
        self.size = self.offsets[-1] if max_samples is None or max_samples <= 0 else min(self.offsets[-1], max_samples)
        self._batches = 0  # training batches done: the epoch follows from them
        self.batch_size = int(_get(config, "gen_batch_size", None) or _get(config, "train_batch_size", 1) or 1)
        super().__init__([], tokenizer, config, processor, max_samples=-1)

    # verl's loading steps: nothing to download or tokenise up front
    def _download(self, use_origin_parquet: bool = False) -> None:
        pass

    def _read_files_and_tokenize(self) -> None:
        self.dataframe = _Rows(self)

    def resume_dataset_state(self) -> None:
        self.dataframe = _Rows(self)

    def __getstate__(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if k != "dataframe"}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self.dataframe = _Rows(self)

    def __len__(self) -> int:
        return self.size

    @property
    def batches_per_epoch(self) -> int:
        """``len(self) // batch_size`` (verl drops the last, partial batch), at least 1."""
        return max(1, self.size // self.batch_size)

    @property
    def epoch(self) -> int:
        """The epoch whose rows are read now."""
        return self._batches // self.batches_per_epoch

    def set_epoch(self, epoch: int) -> None:
        """Rows of epoch ``epoch`` from now on."""
        self._batches = int(epoch) * self.batches_per_epoch

    def on_batch_end(self, batch: Any = None) -> None:
        """Called by verl's trainer after each training batch: the epoch advances after
        :attr:`batches_per_epoch` batches."""
        self._batches += 1

    def episode(self, item: int) -> tuple[_Spec, int]:
        """The run and episode index of row ``item`` in the current epoch."""
        if not 0 <= item < self.size:
            raise IndexError(f"row {item} of a dataset of {self.size} rows")
        k = int(np.searchsorted(self.offsets, item, side="right")) - 1
        spec = self.specs[k]
        return spec, self.epoch * spec.config.n + (item - self.offsets[k])

    def row(self, item: int) -> dict[str, Any]:
        """Row ``item`` of the current epoch as a plain dict (verl's columns)."""
        spec, episode = self.episode(item)
        if spec.rows == "rewriter":
            return rewriter_row(spec.config, episode)
        return sample_row(spec.config, episode)


def _get(config: Any, key: str, default: Any) -> Any:
    try:
        return config.get(key, default)
    except AttributeError:
        return default


class _Rows:
    """What verl's dataset reads as its data frame: row ``i`` is made when it is read."""

    def __init__(self, dataset: EpisodeDataset):
        self.dataset = dataset

    def __len__(self) -> int:
        return len(self.dataset)

    def __getitem__(self, item: int) -> dict[str, Any]:
        return self.dataset.row(int(item))


def sample_row(config: Any, episode: int) -> dict[str, Any]:
    """The row ``vicogym generate`` writes for ``episode`` of the run ``config`` (its first
    kept sample), with its PNG under ``images`` as verl's dataset reads it; an episode that
    keeps none is replaced by its first spare episode that does (see :data:`SPARES`)."""
    from vicogym.runs.generate import episode_rows

    for attempt in range(SPARES + 1):
        e = episode if attempt == 0 else SPARE_BASE + episode * SPARES + attempt - 1
        rows = episode_rows(config, e)
        if rows:
            row = rows[0]
            keep = ("id", "data_source", "prompt", "ability", "reward_model", "extra_info", "images")
            return {k: row[k] for k in keep}
    raise GenerationError(f"episode {episode} of {config.env_id} (seed {config.seed}) and its {SPARES} spare "
                          f"episodes kept no sample; check the rewriter ({config.rewriter}) and the settings "
                          f"{config.env_kwargs}")


def rewriter_row(config: Any, episode: int) -> dict[str, Any]:
    """A rewriter episode to play (:func:`vicogym.runs.generate.rewriter_episode_row`), for
    :class:`RewriterAgentLoop`."""
    from vicogym.runs.generate import rewriter_episode_row

    return dict(rewriter_episode_row(config, episode), agent_name=REWRITER_AGENT)


# -- the rewriter agent loop ----------------------------------------------------------------
@register(REWRITER_AGENT)
class RewriterAgentLoop(AgentLoopBase):
    """The rewriter's episode as a verl agent loop (see the module's docstring). The row's
    ``extra_info`` names ``env_id``, ``seed`` and ``settings`` (JSON: ``k``, ``actor``,
    ``max_turns`` ...); :func:`rewriter_row` makes such rows."""

    def __init__(self, *args: Any, max_pixels: int = MAX_PIXELS, **kwargs: Any):
        kwargs.pop("tools", None)
        super().__init__(*args, **kwargs)
        self.response_length = self.rollout_config.response_length
        self.max_pixels = pixels_from(max_pixels, f"{AGENT_LOOP_CONFIG} ({REWRITER_AGENT})")

    async def run(self, sampling_params: dict[str, Any], **kwargs: Any) -> AgentLoopOutput:
        extra = plain(kwargs.get("extra_info") or {})
        env_id = extra.get("env_id") or plain(kwargs.get("data_source"))
        if "seed" not in extra or not env_id:
            raise ValueError("a vicogym_rewriter row needs extra_info.env_id and extra_info.seed "
                             "(vicogym.trainers.verl_agent.rewriter_row makes such rows)")
        settings = settings_from(extra.get("settings"), "extra_info.settings")
        seed = seed_from(extra["seed"], "extra_info.seed")
        run = self.loop.run_in_executor
        env = await run(None, borrow_env, env_id, settings)
        try:
            await run(None, lambda: env.reset(seed=seed))
            seed_pass_rate = float(env.pass_rate)
            text = rewriter_prompt(env)
            images = [fit_image(env.sample.image, self.max_pixels)]
            messages = [{"role": "user", "content": [{"type": "image", "image": images[0]},
                                                     {"type": "text", "text": text}]}]
            self._assert_mm_supported(True)
            prompt_ids = await self.ct_build_initial_tokens(messages, images=images)
            request_id = uuid4().hex
            mask: list[int] = []
            logprobs: list[float] | None = None
            metrics: dict[str, Any] = {}
            steps, accepted, errors, turn_scores = 0, 0, [], []
            turns = 1
            while True:
                output = await self.server_manager.generate(request_id=request_id, prompt_ids=prompt_ids,
                                                            sampling_params=sampling_params, image_data=images)
                merged, mask, logprobs = await self.ct_merge_assistant_token(
                    prompt_ids, output.token_ids, mask, logprobs if (logprobs or output.log_probs) else None,
                    assistant_logprobs=output.log_probs or None)
                prompt_ids = merged.token_ids
                turns += 1
                reply = self.tokenizer.decode(output.token_ids, skip_special_tokens=True)
                messages.append({"role": "assistant", "content": reply})
                if len(mask) >= self.response_length:
                    break
                step = await run(None, step_edit, env, reply)
                steps += 1
                info = step.info
                turn_scores.append(float(step.reward))
                if info["stopped"]:
                    break
                if info["valid"]:
                    accepted += 1
                else:
                    errors.append(info["error"]["code"])
                if step.terminated or step.truncated:
                    break
                new_image = fit_image(env.sample.image, self.max_pixels)
                previous = list(messages)
                messages.append({"role": "user", "content": [
                    {"type": "image", "image": new_image},
                    {"type": "text", "text": feedback(info, structure_text(env))}]})
                merged, new_mask, new_logprobs = await self.ct_merge_context_msg(
                    previous, messages, prompt_ids, mask, logprobs or None)
                if len(new_mask) >= self.response_length:
                    break
                prompt_ids, mask, logprobs = merged.token_ids, new_mask, new_logprobs
                images.append(new_image)
                turns += 1
            reward = rewriter_reward(env, accepted)
            extra_fields = {"turn_scores": turn_scores, "tool_rewards": [],
                            "vicogym": {"env_id": env_id, "seed": seed, "steps": steps,
                                        "accepted": accepted, "errors": errors, "seed_pass_rate": seed_pass_rate,
                                        "pass_rate": float(env.pass_rate), "answer": env.sample.answer}}
        finally:
            return_env(env_id, settings, env)
        response_ids = prompt_ids[len(prompt_ids) - len(mask):] if mask else []
        return AgentLoopOutput(
            prompt_ids=prompt_ids[: len(prompt_ids) - len(mask)], response_ids=response_ids[: self.response_length],
            response_mask=mask[: self.response_length],
            response_logprobs=logprobs[: self.response_length] if logprobs else None,
            multi_modal_data={"images": images}, reward_score=float(reward), num_turns=turns, metrics=metrics,
            extra_fields=extra_fields)


# -- the evidence actions as tools -------------------------------------------------------------
class _Episode:
    """One trajectory's evidence episode: its environment and what it has scored."""

    def __init__(self, env_id: str, settings: dict[str, Any], env: Any):
        self.env_id, self.settings, self.env = env_id, settings, env
        self.lock = asyncio.Lock()
        self.score = 0.0
        self.done = False
        self.outcome: str | None = None

    def close(self) -> None:
        return_env(self.env_id, self.settings, self.env)


#: episodes (as the futures that open them) by verl's per-trajectory ``agent_data`` (freed
#: with it), and by instance id for callers that keep one tool instance per trajectory
#: (create, execute..., release)
_BY_TRAJECTORY: weakref.WeakKeyDictionary[Any, asyncio.Future] = weakref.WeakKeyDictionary()
_BY_INSTANCE: dict[str, asyncio.Future] = {}
_CREATE_KWARGS: dict[str, dict[str, Any]] = {}


def _opened(future: asyncio.Future | None) -> _Episode | None:
    """The episode a finished opening gave (None if it is still opening or failed)."""
    if future is None or not future.done() or future.cancelled() or future.exception() is not None:
        return None
    return future.result()


def _close_opened(future: asyncio.Future) -> None:
    episode = _opened(future)
    if episode is not None:
        episode.close()


def _close_when_opened(future: asyncio.Future) -> None:
    """Its trajectory is gone: close the episode now, or as soon as its opening finishes."""
    if future.done():
        _close_opened(future)
    else:
        future.add_done_callback(_close_opened)


class EvidenceTool(BaseTool):
    """One action of ``vicogym/Evidence-v0`` as a verl tool (the subclasses name it). Tool
    ``config`` (the YAML's ``config``): ``max_pixels`` (the largest image returned, in
    pixels; default 602112, 768 patches of 28 x 28), ``env_id``."""

    action: ClassVar[str] = ""

    def __init__(self, config: dict, tool_schema: OpenAIFunctionToolSchema | None = None):
        super().__init__(config, tool_schema or OpenAIFunctionToolSchema.model_validate(tool_schema_of(self.action)))
        self.max_pixels = pixels_from(config.get("max_pixels", MAX_PIXELS), f"the {self.action} tool's config")
        self.env_id = config.get("env_id", "vicogym/Evidence-v0")

    async def create(self, instance_id: str | None = None, create_kwargs: Mapping[str, Any] | None = None,
                     **kwargs: Any) -> tuple[str, ToolResponse]:
        instance_id = instance_id or uuid4().hex
        _CREATE_KWARGS[instance_id] = dict(create_kwargs or kwargs.get("create_kwargs") or {})
        return instance_id, ToolResponse()

    async def _episode(self, instance_id: str, agent_data: Any) -> _Episode:
        """The trajectory's episode, opened at its first call. Calls of one turn run
        concurrently (verl gathers them): the first one opens the episode, the others wait
        for it (the opening is stored before anything is awaited)."""
        table, key = (_BY_TRAJECTORY, agent_data) if agent_data is not None else (_BY_INSTANCE, instance_id)
        if key not in table:
            create = _CREATE_KWARGS.get(instance_id) or {}
            if agent_data is not None and not create:
                create = dict((getattr(agent_data, "tools_kwargs", {}) or {}).get(self.name, {})
                              .get("create_kwargs", {}))
            table[key] = future = asyncio.ensure_future(self._open(create, agent_data))
            if agent_data is not None:
                weakref.finalize(agent_data, _close_when_opened, future)
        return await asyncio.shield(table[key])

    async def _open(self, create: Mapping[str, Any], agent_data: Any = None) -> _Episode:
        if "seed" not in create:
            raise ValueError("this trajectory names no evidence episode: its row's extra_info.tools_kwargs need "
                             "create_kwargs with seed and settings (rows of `vicogym generate vicogym/Evidence-v0` "
                             "carry them)")
        settings = settings_from(create.get("settings"), "create_kwargs.settings")
        run = asyncio.get_running_loop().run_in_executor
        env = await run(None, borrow_env, self.env_id, settings)
        episode = _Episode(self.env_id, settings, env)
        try:
            await run(None, open_evidence, env, create)
        except BaseException:
            episode.close()
            raise
        if agent_data is not None:  # a trajectory that touched a tool is scored by the answer tool alone
            agent_data.extra_fields.setdefault("evidence_score", 0.0)
            agent_data.extra_fields.setdefault("evidence_outcome", "unanswered")
        return episode

    async def execute(self, instance_id: str, parameters: dict[str, Any], **kwargs: Any
                      ) -> tuple[ToolResponse, float, dict]:
        agent_data = kwargs.get("agent_data")
        try:
            episode = await self._episode(instance_id, agent_data)
        except (ValueError, GenerationError) as exc:
            return ToolResponse(text=f"error (no_episode): {exc}"), 0.0, {"error": "no_episode"}
        async with episode.lock:
            if episode.done:  # a typed error, the episode not stepped (its environment answers the same)
                return ToolResponse(text=episode_over_text(episode.outcome)), 0.0, {"action": self.action,
                                                                                    "error": EPISODE_OVER}
            if not isinstance(parameters, Mapping):
                return (ToolResponse(text=f"error (malformed): expected the {self.action} tool's arguments as a "
                                          f"JSON object, got {type(parameters).__name__}"), 0.0,
                        {"action": self.action, "error": "malformed"})
            action = {**parameters, "action": self.action}  # the tool is the action, whatever the arguments say
            env = episode.env
            _, reward, terminated, truncated, info = await asyncio.get_running_loop().run_in_executor(
                None, env.step, action)
            episode.done = terminated or truncated
            metrics = {"action": self.action, "step": info["step"]}
            text, images = evidence_reply(env, info, terminated, truncated, self.max_pixels)
            if (terminated or truncated) and not is_episode_over(info):
                episode.score, episode.outcome = float(info["score"]), info["outcome"]
                metrics["score"] = episode.score
                if agent_data is not None:
                    agent_data.extra_fields["evidence_score"] = episode.score
                    agent_data.extra_fields["evidence_outcome"] = info["outcome"]
            if "error" in info:
                metrics["error"] = info["error"]["code"]
                return ToolResponse(text=text), 0.0, metrics
            if terminated or truncated:
                return ToolResponse(text=text), float(reward), metrics
            return (ToolResponse(text=text, image=images) if images else ToolResponse(text=text)), 0.0, metrics

    async def calc_reward(self, instance_id: str, **kwargs: Any) -> float:
        agent_data = kwargs.get("agent_data")
        episode = _opened(_BY_TRAJECTORY.get(agent_data) if agent_data is not None else _BY_INSTANCE.get(instance_id))
        return 0.0 if episode is None else episode.score

    async def release(self, instance_id: str, **kwargs: Any) -> None:
        _CREATE_KWARGS.pop(instance_id, None)
        future = _BY_INSTANCE.pop(instance_id, None)
        if future is not None:
            _close_opened(future)


def tool_class_name(action: str) -> str:
    """The name of evidence action ``action``'s tool class (``zoom``: ``ZoomTool``)."""
    return f"{action.title()}Tool"


def tool_classes() -> dict[str, type[EvidenceTool]]:
    """One :class:`EvidenceTool` subclass per action of the protocol's table, by action."""
    return {name: type(tool_class_name(name), (EvidenceTool,),
                       {"action": name, "__module__": MODULE, "__doc__": f"The {name} action as a verl tool."})
            for name in ACTION_TABLE}


#: the tool classes by action; each is also this module's attribute (``ZoomTool`` ...), as
#: the YAML's ``class_name`` names it
TOOL_CLASSES = tool_classes()
globals().update({cls.__name__: cls for cls in TOOL_CLASSES.values()})

TOOL_CONFIG_HEADER = """\
# verl's actor_rollout_ref.rollout.multi_turn.tool_config_path: the actions of vicogym/Evidence-v0 as tools
# (for verl's tool_agent loop; rows of `vicogym generate vicogym/Evidence-v0` carry their tools_kwargs).
# config.max_pixels: the largest image a tool returns, in pixels (new views are scaled down into it).
# Written by vicogym.trainers.verl_agent.write_tool_config() from the protocol's table of actions.
"""


def tool_config() -> str:
    """The YAML of :data:`TOOL_CONFIG`: per action of the protocol's table its tool class
    (:func:`tool_class_name`), config (``max_pixels``) and schema."""
    import yaml

    tools = [{"class_name": f"{MODULE}.{tool_class_name(name)}", "config": {"type": "native", "max_pixels": MAX_PIXELS},
              "tool_schema": action.tool_schema()} for name, action in ACTION_TABLE.items()]
    plain_tools = json.loads(json.dumps(tools))  # no shared objects: no YAML anchors
    return TOOL_CONFIG_HEADER + yaml.safe_dump({"tools": plain_tools}, sort_keys=False, width=120, allow_unicode=True)


def write_tool_config(path: str | Path = TOOL_CONFIG) -> Path:
    """Write :func:`tool_config` to ``path`` (the shipped :data:`TOOL_CONFIG` by default)."""
    path = Path(path)
    path.write_text(tool_config(), encoding="utf-8")
    return path


def overrides() -> list[str]:
    """verl's command-line overrides that point it at this module: the dataset class, the
    rewriter's agent loop and the evidence tools."""
    return [f"data.custom_cls.path=pkg://{MODULE}", "data.custom_cls.name=EpisodeDataset",
            f"actor_rollout_ref.rollout.agent.agent_loop_config_path={AGENT_LOOP_CONFIG}",
            f"actor_rollout_ref.rollout.multi_turn.tool_config_path={TOOL_CONFIG}"]


if __name__ == "__main__":
    print(" ".join(overrides()))
