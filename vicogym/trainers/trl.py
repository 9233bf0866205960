"""vicogym in TRL's ``GRPOTrainer`` (trl 1.16): offline rows with their reward, and the
evidence and rewriter episodes as environments whose methods are the model's tools.

- :func:`rows_dataset`: the rows of ``vicogym generate`` (a run folder, several, or rows in
  memory) as the ``datasets.Dataset`` TRL trains a vision-language model on: ``prompt`` as
  chat messages whose ``{"type": "image"}`` blocks stand where the rows' ``<image>``
  placeholders were, ``images`` as Image features (PIL images when read), and the rows'
  ``data_source``, ``reward_model`` and ``extra_info``.
- :data:`reward_function` (:func:`make_reward_function` for other settings): TRL's
  reward signature ``f(prompts, completions, **columns)``; each completion's last
  assistant text is scored by :func:`vicogym.scoring.score_row` against its row.
- :class:`EvidenceToolEnv`, for ``environment_factory``: the actions of
  ``vicogym/Evidence-v0`` (``zoom``, ``note``, ``view``, ``compose``, ``answer``: one tool
  method per entry of :data:`vicogym.evidence.protocol.ACTION_TABLE`). ``reset(**row)``
  plays the row's task (the ``tools_kwargs`` that rows of
  ``vicogym generate vicogym/Evidence-v0`` carry, or ``seed`` and ``settings``); new
  views come back as images; ``get_reward()`` is the score of the answer.
- :class:`RewriterToolEnv`, for ``environment_factory``: one ``edit`` tool that steps an
  edit environment (the actor answers K times) and returns the new image, the pass rate
  and what went wrong; ``get_reward()`` is the band reward of the final pass rate.
  :func:`rewriter_dataset` makes the rows it plays.

Environments are lent per rollout (:func:`vicogym.trainers.common.borrow_env`) and given back at
the next ``reset`` or when the instance goes. Nothing here imports TRL.
"""

from __future__ import annotations

import contextlib
import inspect
import io
import json
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from vicogym.evidence.protocol import ACTION_TABLE, Action
from vicogym.runs.trainer_columns import IMAGE_TOKEN
from vicogym.trainers.common import (
    EDIT_TOOL_ASK,
    EPISODE_OVER,
    MAX_PIXELS,
    borrow_env,
    describe_views,
    episode_over_text,
    evidence_reply,
    feedback,
    fit_image,
    is_episode_over,
    open_evidence,
    pixels_from,
    return_env,
    rewriter_prompt,
    rewriter_reward,
    seed_from,
    settings_from,
    step_edit,
    structure_text,
)

EVIDENCE_ENV = "vicogym/Evidence-v0"
#: the columns :func:`rows_dataset` keeps (those a row has)
ROW_COLUMNS = ("id", "data_source", "prompt", "images", "reward_model", "extra_info")


# -- rows ---------------------------------------------------------------------------------------
def rows_dataset(source: Any) -> Any:
    """A ``datasets.Dataset`` for ``GRPOTrainer`` from vicogym rows: ``source`` is the
    ``--out`` folder of a ``vicogym generate`` run (or a filesystem URL), a list of such
    folders, or rows in memory (dicts as :func:`vicogym.runs.generate.episode_rows` or a
    shard gives them). Each row's messages get an image block where their ``<image>``
    placeholders were; ``images`` holds the row's PNGs as Image features."""
    import datasets

    rows = [_trl_row(row, k) for k, row in enumerate(_source_rows(source))]
    if not rows:
        raise ValueError(f"no rows in {source!r}; give a vicogym generate --out folder or a list of rows")
    with_images = any(row["images"] for row in rows)
    for row in rows:
        if not with_images:
            row.pop("images")
    columns = [c for c in ROW_COLUMNS if c in rows[0]]
    for k, row in enumerate(rows):
        if [c for c in ROW_COLUMNS if c in row] != columns:
            raise ValueError(f"row {k} has the columns {sorted(row)}, row 0 {columns}; give rows of one kind "
                             f"(one run's rows, or rows of runs of one environment)")
    dataset = datasets.Dataset.from_list(rows)
    if with_images:
        dataset = dataset.cast_column("images", datasets.List(datasets.Image()))
    return dataset


def _source_rows(source: Any) -> Iterable[Mapping[str, Any]]:
    if isinstance(source, (str, Path)):
        yield from _folder_rows(source)
        return
    if isinstance(source, Mapping):
        raise TypeError("expected a run folder or a list of rows, got one row (a dict); wrap it in a list")
    for item in source:
        if isinstance(item, (str, Path)):
            yield from _folder_rows(item)
        elif isinstance(item, Mapping):
            yield item
        else:
            raise TypeError(f"expected run folders or rows (dicts), got {type(item).__name__}")


def _folder_rows(folder: str | Path) -> Iterable[dict[str, Any]]:
    import pyarrow.parquet as pq

    from vicogym.errors import RunError
    from vicogym.runs.shards import SHARD_GLOB, local_run
    from vicogym.runs.verify import iter_rows

    with local_run(folder) as path:
        shards = sorted(Path(path).glob(SHARD_GLOB))
        if not shards:
            raise RunError(f"no {SHARD_GLOB} shards in {folder}; give the --out folder of a vicogym generate run")
        names = pq.read_schema(shards[0]).names
        missing = [c for c in ("data_source", "prompt") if c not in names]
        if missing:
            raise RunError(f"the shards in {folder} have no {' or '.join(missing)} column; they are not rows of "
                           f"vicogym generate (written by another tool?)")
        yield from iter_rows(path, columns=[c for c in ROW_COLUMNS if c in names])


def _trl_row(row: Mapping[str, Any], k: int) -> dict[str, Any]:
    name = row.get("id") or f"row {k}"
    if "prompt" not in row or "data_source" not in row:
        raise ValueError(f"{name} has no {'prompt' if 'prompt' not in row else 'data_source'}; expected rows of "
                         f"vicogym generate (data_source, prompt, images, reward_model, extra_info)")
    images = [_png(image, name) for image in (row.get("images") or [])]
    prompt = [_message(m, name) for m in row["prompt"]]
    placeholders = sum(b["type"] == "image" for m in prompt for b in m["content"])
    if placeholders != len(images):
        raise ValueError(f"{name}: its prompt has {placeholders} {IMAGE_TOKEN} placeholders for {len(images)} images")
    out = {c: row[c] for c in ROW_COLUMNS if c in row and c not in ("prompt", "images")}
    out.update(prompt=prompt, images=images)
    return out


def _message(message: Mapping[str, Any], name: str) -> dict[str, Any]:
    content = message.get("content")
    if not isinstance(content, str):
        raise ValueError(f"{name}: expected each prompt message's content as text with {IMAGE_TOKEN} placeholders, "
                         f"got {type(content).__name__}")
    blocks: list[dict[str, Any]] = []
    for i, part in enumerate(content.split(IMAGE_TOKEN)):
        if i:
            blocks.append({"type": "image", "text": None})
        if part:
            blocks.append({"type": "text", "text": part})
    return {"role": message["role"], "content": blocks}


def _png(image: Any, name: str) -> dict[str, Any]:
    """A row's image as ``{bytes, path}`` (what the Image feature stores)."""
    import numpy as np

    if isinstance(image, Mapping) and image.get("bytes"):
        return {"bytes": bytes(image["bytes"]), "path": image.get("path")}
    if isinstance(image, np.ndarray):
        from PIL import Image

        image = Image.fromarray(image.astype(np.uint8))
    if hasattr(image, "save"):
        buffer = io.BytesIO()
        image.convert("RGB").save(buffer, format="PNG")
        return {"bytes": buffer.getvalue(), "path": None}
    raise ValueError(f"{name}: expected its images as PNG {{bytes, path}}, PIL images or arrays, got "
                     f"{type(image).__name__}")


def rewriter_dataset(env_id: str, n: int, seed: int = 0, env_kwargs: Mapping[str, Any] | None = None) -> Any:
    """``n`` rewriter episodes of ``env_id`` as rows for :class:`RewriterToolEnv`: episode
    ``e`` has the seed ``vicogym generate --seed SEED`` draws for it, and every row the
    run's settings (``extra_info``: ``env_id``, ``seed``, ``settings`` as JSON, ``index``)."""
    import datasets

    from vicogym.runs.generate import GenerateConfig, rewriter_episode_row

    config = GenerateConfig(env_id, n=n, seed=seed, out="-", env_kwargs=dict(env_kwargs or {}))  # checks them
    rows = []
    for e in range(config.n):
        row = rewriter_episode_row(config, e)
        (message,) = row["prompt"]
        rows.append({"prompt": [{"role": "user", "content": [{"type": "text", "text": message["content"]}]}],
                     "data_source": row["data_source"], "extra_info": row["extra_info"]})
    return datasets.Dataset.from_list(rows)


# -- the reward of offline rows -----------------------------------------------------------------
def make_reward_function(extractor: str = "auto", judge: Any = None, types: Any = None,
                         name: str = "vicogym") -> Callable[..., list[float]]:
    """A reward function for ``GRPOTrainer(reward_funcs=...)``: per completion, the text of
    its last assistant message scored by :func:`vicogym.scoring.score_row` with the
    row's ``data_source``, ``reward_model.ground_truth`` (or a ``ground_truth`` column) and
    ``extra_info`` (``extractor``, ``judge`` and ``types`` as there). TRL logs it as
    ``rewards/NAME``."""
    from vicogym.scoring import score_row

    def reward(prompts: list[Any], completions: list[Any], **columns: Any) -> list[float]:
        n = len(completions)
        sources = _column(columns, "data_source", n)
        truths = columns.get("ground_truth")
        if truths is None:
            models = _column(columns, "reward_model", n)
            truths = [_plain(m).get("ground_truth") if isinstance(_plain(m), Mapping) else None for m in models]
        extras = columns.get("extra_info") or [None] * n
        scores = []
        for source, completion, truth, extra in zip(sources, completions, truths, extras):
            if truth is None:
                raise ValueError("a row has no reward_model.ground_truth; expected rows of vicogym generate "
                                 "(vicogym.trainers.trl.rows_dataset reads them)")
            scores.append(float(score_row(source, completion_text(completion), str(truth), _plain(extra),
                                              extractor=extractor, judge=judge, types=types)))
        return scores

    reward.__name__ = reward.__qualname__ = name
    return reward


def _column(columns: Mapping[str, Any], key: str, n: int) -> list[Any]:
    values = columns.get(key)
    if values is None:
        raise ValueError(f"the reward needs the rows' {key} column, which the dataset lacks; train on "
                         f"rows of vicogym generate (vicogym.trainers.trl.rows_dataset keeps data_source, "
                         f"reward_model, extra_info)")
    if len(values) != n:
        raise ValueError(f"{len(values)} values of {key} for {n} completions")
    return list(values)


def _plain(value: Any) -> Any:
    if isinstance(value, str) and value.startswith("{"):
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


def completion_text(completion: Any) -> str:
    """The text a completion answers with: a standard completion itself, a conversational
    one the text of its last assistant message."""
    if isinstance(completion, str):
        return completion
    for message in reversed(list(completion)):
        if message.get("role") == "assistant":
            content = message.get("content") or ""
            if isinstance(content, str):
                return content
            return "".join(b.get("text") or "" for b in content if isinstance(b, Mapping) and b.get("type") == "text")
    return ""


#: the reward of vicogym rows with the default answer extraction, logged as ``rewards/vicogym``
reward_function = make_reward_function()


def vision_token_ids(processor: Any) -> list[int]:
    """The ids of ``processor``'s image and video placeholder tokens (``<|image_pad|>``,
    ``<|video_pad|>`` for Qwen-VL), for ``GRPOConfig(generation_kwargs={"suppress_tokens":
    ...})`` when tools return images: TRL 1.16 keeps only the image token from being
    sampled, and a sampled video token in a rollout with tool images makes the Qwen-VL
    forward pass fail."""
    tokenizer = getattr(processor, "tokenizer", processor)
    ids = []
    for name in ("image_token", "video_token"):
        token = getattr(processor, name, None)
        if token:
            ids.append(int(tokenizer.convert_tokens_to_ids(token)))
    if not ids:
        raise ValueError(f"{type(processor).__name__} names no image or video token; expected a vision-language "
                         f"model's processor (AutoProcessor.from_pretrained(MODEL))")
    return ids


# -- environments -------------------------------------------------------------------------------
def _extra(row: Mapping[str, Any]) -> dict[str, Any]:
    extra = row.get("extra_info") or {}
    if isinstance(extra, str):
        extra = settings_from(extra, "extra_info")
    return dict(extra)


def _has_images(row: Mapping[str, Any]) -> bool:
    return bool(row.get("images")) or row.get("image") is not None


def _blocks(text: str, images: list[Any]) -> list[dict[str, Any]]:
    return [{"type": "text", "text": text}] + [{"type": "image", "image": image} for image in images]


class _Lent:
    """An environment lent for one rollout, given back at the next reset or on deletion."""

    _env: Any = None
    _lent: tuple[str, dict[str, Any]] | None = None

    def _borrow(self, env_id: str, settings: dict[str, Any]) -> Any:
        self._give_back()
        env = borrow_env(env_id, settings)
        self._env, self._lent = env, (env_id, settings)
        return env

    def _give_back(self) -> None:
        if self._env is not None and self._lent is not None:
            return_env(*self._lent, self._env)
        self._env, self._lent = None, None

    def __del__(self) -> None:
        with contextlib.suppress(Exception):  # interpreter shutdown: the pools may be gone already
            self._give_back()


_JSON_TYPES = {"integer": int, "number": float, "string": str, "boolean": bool}


def _hint(schema: Mapping[str, Any]) -> Any:
    """The Python type hint TRL's schema reader turns back into JSON Schema ``schema``."""
    kind = schema.get("type")
    if kind == "array":
        return list[_hint(schema.get("items") or {})]
    if kind == "object":
        kinds = {(spec or {}).get("type") for spec in (schema.get("properties") or {}).values()}
        return dict[str, _JSON_TYPES[kinds.pop()]] if len(kinds) == 1 and kinds <= set(_JSON_TYPES) else \
            dict[str, Any]
    return _JSON_TYPES.get(kind, Any)


def _docstring(action: Action) -> str:
    """The description and argument texts of ``action``'s tool schema (what the verl tools
    send) as a Google-style docstring, the form TRL's schema reader
    (``transformers.utils.get_json_schema``) parses."""

    def text(name: str, spec: Mapping[str, Any]) -> str:
        parts = [spec.get("description") or name]
        items = spec.get("items") or {}
        if items.get("properties"):
            fields = ", ".join(items["properties"])
            parts.append(f"each {{{fields}}}" + (f": {items['description']}" if items.get("description") else ""))
        return "; ".join(parts)

    lines = [action.description, "", "Args:"]
    return "\n".join(lines + [f"    {name}: {text(name, spec)}" for name, spec in action.properties.items()])


def tool_method(action: Action) -> Callable[..., str | list]:
    """The tool method of evidence action ``action``: its arguments are the action's fields
    (the required ones first; an optional text defaults to ``""``, any other optional field
    to None, left out of the action), typed and described from its schema."""
    kind = inspect.Parameter.POSITIONAL_OR_KEYWORD
    params = [inspect.Parameter("self", kind)]
    hints: dict[str, Any] = {}
    for name in (*action.required, *action.optional):
        spec = action.properties[name]
        hint = hints[name] = _hint(spec)
        if name in action.required:
            params.append(inspect.Parameter(name, kind, annotation=hint))
        elif hint is str:
            params.append(inspect.Parameter(name, kind, default="", annotation=hint))
        else:
            hints[name] = hint | None
            params.append(inspect.Parameter(name, kind, default=None, annotation=hints[name]))
    signature = inspect.Signature(params, return_annotation=str | list)

    def method(*args: Any, **kwargs: Any) -> str | list:
        bound = signature.bind(*args, **kwargs)
        bound.apply_defaults()
        self, fields = bound.arguments.pop("self"), bound.arguments
        return self._act({"action": action.name, **{k: v for k, v in fields.items() if v is not None}})

    method.__name__ = method.__qualname__ = action.name
    method.__signature__ = signature  # type: ignore[attr-defined]
    method.__annotations__ = {**hints, "return": str | list}
    method.__doc__ = _docstring(action)
    return method


def with_action_tools(cls: type) -> type:
    """``cls`` with one tool method per action of the protocol's table
    (:data:`vicogym.evidence.protocol.ACTION_TABLE`), made by :func:`tool_method`."""
    for name, action in ACTION_TABLE.items():
        setattr(cls, name, tool_method(action))
    return cls


@with_action_tools
class EvidenceToolEnv(_Lent):
    """One rollout's ``vicogym/Evidence-v0`` task, for ``GRPOTrainer(environment_factory=...)``:
    the public methods are the model's tools, one per action of the protocol's table
    (:func:`with_action_tools`); TRL reads their schemas from the type hints and
    docstrings. ``reset(**row)`` draws the row's task (the row's ``extra_info``
    ``tools_kwargs[...]["create_kwargs"]``, else ``extra_info`` or columns ``seed`` and
    ``settings``; a ``task_id`` there is checked) and returns what is appended to the
    prompt: the image numbers and budgets (and, for a row without images, the question
    and the start views as images). A tool returns the new views as images after their
    description, or the error text of a bad call; ``get_reward()`` is the answer's score
    (0 without one). ``max_pixels`` bounds each returned image (pass
    ``functools.partial(EvidenceToolEnv, max_pixels=...)`` as the factory)."""

    def __init__(self, max_pixels: int = MAX_PIXELS, env_id: str = EVIDENCE_ENV):
        self.max_pixels = pixels_from(max_pixels, "EvidenceToolEnv")
        self.outcome: str | None = None
        self.env_id = env_id
        self.score = 0.0
        self.done = True
        self.calls: list[dict[str, Any]] = []

    def reset(self, **row: Any) -> str | list[dict[str, Any]]:
        create = _evidence_create(row)
        env_id = row.get("data_source") if str(row.get("data_source", "")).startswith("vicogym/Evidence") \
            else self.env_id
        env = self._borrow(env_id, settings_from(create.get("settings"), "create_kwargs.settings"))
        try:
            open_evidence(env, create)
        except ValueError:
            self._give_back()
            raise
        self.score, self.done, self.calls, self.outcome = 0.0, False, [], None
        start = [v.id for v in env.visible()]
        text = (f"Act by calling the tools {', '.join(ACTION_TABLE)} (their arguments are the fields of the "
                f"actions); each call returns the new views as images. The task ends with answer.\n"
                f"{describe_views(env, start)}")
        if _has_images(row):
            return "\n\n" + text
        return _blocks(f"{env.question_text()}\n\n{text}", [fit_image(env.view_pixels(i), self.max_pixels)
                                                            for i in start])

    def _act(self, action: dict[str, Any]) -> str | list[dict[str, Any]]:
        self.calls.append(action)
        if self._env is None:
            return "error (no_episode): no task; the trainer calls reset(**row) before the tools"
        if self.done:
            return episode_over_text(self.outcome)
        env = self._env
        _, _, terminated, truncated, info = env.step(action)
        text, images = evidence_reply(env, info, terminated, truncated, self.max_pixels)
        if terminated or truncated:
            self.done = True
            if not is_episode_over(info):
                self.score, self.outcome = float(info["score"]), info["outcome"]
        return _blocks(text, images) if images else text

    def get_reward(self) -> float:
        """The task's score of the answer given (0 when none was)."""
        return float(self.score)


def _evidence_create(row: Mapping[str, Any]) -> dict[str, Any]:
    """The seed, settings and task id an evidence row names."""
    extra = _extra(row)
    for tool in (extra.get("tools_kwargs") or {}).values():
        create = (tool or {}).get("create_kwargs") if isinstance(tool, Mapping) else None
        if create and create.get("seed") is not None:
            return dict(create)
    for where in (extra, row):
        if where.get("seed") is not None:
            return {"seed": where["seed"], "settings": where.get("settings"), "task_id": where.get("task_id")}
    raise ValueError("this row names no evidence task: expected extra_info.tools_kwargs with create_kwargs (rows of "
                     "`vicogym generate vicogym/Evidence-v0` carry them), or a seed (and settings) in extra_info or "
                     "as columns")


class RewriterToolEnv(_Lent):
    """One rollout's rewriter episode, for ``GRPOTrainer(environment_factory=...)``: the
    policy edits the structure behind an image through one tool, ``edit``, and the
    environment's actor answers the question K times after each accepted edit.
    ``reset(**row)`` starts the row's episode (``extra_info``: ``env_id``, ``seed``,
    ``settings`` as JSON; :func:`rewriter_dataset` makes such rows) and returns the seed
    image with the rewriter's prompt. ``get_reward()``: the band reward of the final pass
    rate (:func:`vicogym.rewards.difficulty_reward`) once an edit was accepted, the
    environment's ``invalid_penalty`` otherwise."""

    def __init__(self, max_pixels: int = MAX_PIXELS):
        self.max_pixels = pixels_from(max_pixels, "RewriterToolEnv")
        self.accepted = 0
        self.done = True
        self.errors: list[str] = []

    def reset(self, **row: Any) -> list[dict[str, Any]]:
        extra = _extra(row)
        env_id = extra.get("env_id") or row.get("env_id") or row.get("data_source")
        seed = extra.get("seed", row.get("seed"))
        if not env_id or seed is None:
            raise ValueError("a rewriter row needs extra_info.env_id and extra_info.seed (and settings); "
                             "vicogym.trainers.trl.rewriter_dataset makes such rows")
        env = self._borrow(str(env_id), settings_from(extra.get("settings", row.get("settings")),
                                                      "extra_info.settings"))
        env.reset(seed=seed_from(seed, "extra_info.seed"))
        self.accepted, self.done, self.errors = 0, False, []
        text = (f"\n\n{rewriter_prompt(env)}\n\nSend each edit by calling the edit tool with the edit's JSON as its "
                f"argument; {{\"op\": \"stop\"}} keeps the sample.")
        return [{"type": "image", "image": fit_image(env.sample.image, self.max_pixels)},
                {"type": "text", "text": text}]

    def edit(self, edit: str) -> str | list:
        """Apply one edit to the structure behind the image; the actor then answers the
        question again and its pass rate comes back with the new image.

        Args:
            edit: the edit as JSON text, matching the edit schema of the prompt ({"op": "stop"} keeps the sample)
        """
        if self._env is None:
            return "error (no_episode): no episode; the trainer calls reset(**row) before the tools"
        if self.done:  # a typed error, the episode not stepped (the environment answers the same)
            return f"error ({EPISODE_OVER}): the episode is over; nothing more to edit"
        env = self._env
        step = step_edit(env, edit)
        info = step.info
        if info["stopped"]:
            self.done = True
            return f"Stopped: the sample is kept at pass rate {env.pass_rate:.2f}."
        if info["valid"]:
            self.accepted += 1
        else:
            self.errors.append(info["error"]["code"])
        self.done = bool(step.terminated or step.truncated)
        ask = f"The episode is over (max_turns={env.config.max_turns})." if self.done else EDIT_TOOL_ASK
        text = feedback(info, structure_text(env), ask=ask)
        if info["valid"]:
            return [{"type": "image", "image": fit_image(env.sample.image, self.max_pixels)},
                    {"type": "text", "text": text}]
        return text

    def get_reward(self) -> float:
        """The band reward of the final pass rate, or ``invalid_penalty`` without an
        accepted edit."""
        return 0.0 if self._env is None else rewriter_reward(self._env, self.accepted)
