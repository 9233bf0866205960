"""What the trainers share (:mod:`vicogym.trainers.verl_agent`, :mod:`vicogym.trainers.trl`,
:mod:`vicogym.trainers.openenv`): environments lent per trajectory, settings passed as JSON,
images fitted to a vision encoder's limits, the text a rewriter reads after an edit, and
what an evidence tool call returns (the views' descriptions, the end of an episode). The
actions' tool schemas and the rows' ``tools_kwargs`` are the protocol's
(:mod:`vicogym.evidence.protocol`). Nothing here imports a trainer.
"""

from __future__ import annotations

import contextlib
import threading
from collections import defaultdict
from collections.abc import Mapping
from typing import Any

import numpy as np

from vicogym.core import canonical_json
from vicogym.validation import MAX_SEED, brief, is_int, loads_json

#: the largest image a tool or turn returns, in pixels: 768 patches of 28 x 28, the
#: default of Qwen2-VL-family processors
MAX_PIXELS = 602_112

# -- environments, one per trajectory or session ------------------------------------------------
_POOLS: dict[str, list[Any]] = defaultdict(list)
_POOL_LOCK = threading.Lock()


def _settings_key(env_id: str, env_kwargs: Mapping[str, Any]) -> str:
    return env_id + "\0" + canonical_json(dict(env_kwargs))


def borrow_env(env_id: str, env_kwargs: Mapping[str, Any]) -> Any:
    """An environment of these settings that no other trajectory is using (built once per
    process and settings, then reused)."""
    key = _settings_key(env_id, env_kwargs)
    with _POOL_LOCK:
        if _POOLS[key]:
            return _POOLS[key].pop()
    import gymnasium as gym

    import vicogym  # noqa: F401  (registers the environments)

    return gym.make(env_id, **dict(env_kwargs)).unwrapped


def return_env(env_id: str, env_kwargs: Mapping[str, Any], env: Any) -> None:
    with _POOL_LOCK:
        _POOLS[_settings_key(env_id, env_kwargs)].append(env)


def plain(value: Any) -> Any:
    """A value from verl's non-tensor batch (0-d object arrays, numpy scalars) as Python."""
    if isinstance(value, np.ndarray):
        return plain(value.item()) if value.ndim == 0 else [plain(v) for v in value.tolist()]
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, Mapping):
        return {k: plain(v) for k, v in value.items()}
    return value


def settings_from(value: Any, where: str) -> dict[str, Any]:
    if value is None or value == "":
        return {}
    if isinstance(value, str):
        text, (value, why) = value, loads_json(value)
        if why is not None:
            raise ValueError(f"{where}: expected the environment settings as a JSON object, got {brief(text, 80)}, "
                             f"which is {why}")
    if not isinstance(value, Mapping):
        raise ValueError(f"{where}: expected the environment settings as a JSON object, got {brief(value, 80)}")
    return dict(value)


def fit_image(image: np.ndarray, max_pixels: int, min_side: int = 28) -> Any:
    """An RGB PIL image of ``image``, scaled down into ``max_pixels`` (and padded on white
    to ``min_side`` pixels a side, the least a vision encoder's patch grid takes)."""
    from PIL import Image

    pil = Image.fromarray(np.asarray(image, dtype=np.uint8)).convert("RGB")
    w, h = pil.size
    if w * h > max_pixels:
        f = (max_pixels / (w * h)) ** 0.5
        pil = pil.resize((max(1, int(w * f)), max(1, int(h * f))), Image.Resampling.LANCZOS)
    if min(pil.size) < min_side:
        canvas = Image.new("RGB", (max(pil.size[0], min_side), max(pil.size[1], min_side)), "white")
        canvas.paste(pil, (0, 0))
        pil = canvas
    return pil


def seed_from(value: Any, where: str) -> int:
    """A row's episode seed as an int (a whole number, or its decimal text), or a clear error
    naming the field."""
    plain_value = plain(value)
    if isinstance(plain_value, str) and plain_value.strip().isdigit():
        plain_value = int(plain_value.strip())
    if not is_int(plain_value, 0, MAX_SEED):
        raise ValueError(f"{where}: expected the episode's seed as a whole number in [0, 2**63 - 1], got "
                         f"{str(value)[:60]!r}")
    return plain_value


def pixels_from(value: Any, where: str) -> int:
    """The largest image to return, in pixels: at least one 28 x 28 patch."""
    if not is_int(value, 28 * 28):
        raise ValueError(f"{where}: expected max_pixels as a whole number of at least 784 (one 28 x 28 patch), got "
                         f"{value!r}")
    return value


def open_evidence(env: Any, create: Mapping[str, Any]) -> None:
    """Reset evidence environment ``env`` to the task a row names (``create``: ``seed``, and a
    ``task_id`` that must be the one the seed draws)."""
    seed = seed_from(create.get("seed"), "create_kwargs.seed")
    env.reset(seed=seed)
    if create.get("task_id") and env.task.id != create["task_id"]:
        raise ValueError(f"seed {seed} draws task {env.task.id}, not the row's {create['task_id']}; the row was "
                         f"made with other settings or another version of the task families")


def rewriter_reward(env: Any, accepted: int) -> float:
    """A rewriter episode's reward: the band reward of the final pass rate once an edit was
    accepted, the environment's ``invalid_penalty`` otherwise."""
    from vicogym.rewards import difficulty_reward

    if not accepted:
        return float(env.config.invalid_penalty)
    return float(difficulty_reward(env.pass_rate, env.config.reward_config()))


def structure_text(env: Any) -> str:
    """The current structure of edit environment ``env`` as the rewriter reads it (JSON)."""
    return env.arm.encode(env.sample.structure)[0]


def step_edit(env: Any, edit: Any) -> Any:
    """``env.step_result`` of a rewriter's edit: text (a model's whole reply) is parsed
    leniently (:func:`vicogym.clients.parse_edit`), an object goes as it is."""
    from vicogym.clients import parse_edit

    if isinstance(edit, str):
        # JSON nested too deeply to read: the environment names what is wrong with it
        with contextlib.suppress(RecursionError):
            edit = parse_edit(edit)
    return env.step_result(edit)


def rewriter_prompt(env: Any) -> str:
    """What the rewriter reads at the start of an episode of edit environment ``env`` (after
    ``reset``): the structure, question, answer, pass rate and the edit schema."""
    from vicogym.clients import edit_prompt

    return edit_prompt(structure_text(env), env.sample.question, env.sample.answer,
                       env.pass_rate, env.config.sweet_zone, env.arm.edit_schema())


#: what a rewriter that replies with text is asked for after each edit
EDIT_ASK = 'Reply with the next edit as JSON, or {"op": "stop"} to keep this sample.'
#: ... and a rewriter that calls an ``edit`` tool
EDIT_TOOL_ASK = 'Call edit with the next edit as JSON, or with {"op": "stop"} to keep this sample.'


def feedback(info: Mapping[str, Any], structure: str, ask: str = EDIT_ASK) -> str:
    """What the rewriter reads after an edit: accepted (the new answer and pass rate) or
    rejected (why), then what to send next (``ask``)."""
    if info["valid"]:
        head = (f"The edit was accepted. Answer now: {info['answer']}. The actor's pass rate is "
                f"{info['pass_rate']:.2f} (it was {info['pass_rate_before']:.2f}).")
    else:
        error = info["error"] or {}
        head = (f"The edit was rejected ({error.get('code')}): {error.get('message')}. The structure is as it was; "
                f"the pass rate stays {info['pass_rate']:.2f}.")
    return f"{head}\n\nStructure (JSON):\n{structure}\n\n{ask}"


#: the error code of a call after the end of an episode (as the environments answer a step then)
EPISODE_OVER = "episode_over"


def episode_over_text(outcome: str | None) -> str:
    """What a tool call after the end of an evidence episode returns: a typed error, as
    every rejected call's text is (``error (CODE): message``). The trainers' tool loops
    (verl's, TRL's) may call a tool after ``answer``; the episode is not stepped again."""
    if outcome == "out_of_steps":
        return f"error ({EPISODE_OVER}): the episode is over (out of steps); nothing more to do"
    return f"error ({EPISODE_OVER}): the task has been answered; nothing more to do"


def is_episode_over(info: Mapping[str, Any]) -> bool:
    """Whether a step's ``info`` says the episode had already ended (nothing was done)."""
    return ((info.get("error") or {}).get("code") == EPISODE_OVER) if isinstance(info, Mapping) else False


def evidence_reply(env: Any, info: Mapping[str, Any], terminated: bool, truncated: bool,
                   max_pixels: int = MAX_PIXELS) -> tuple[str, list[Any]]:
    """What an evidence tool call returns after ``env.step``: the text (an error, the end of
    the episode, or the new views described) and the new views as images."""
    out = f"Out of steps: the episode ended without an answer (max_steps={env.config.max_steps})."
    if "error" in info:
        text = f"error ({info['error']['code']}): {info['error']['message']}"
        return (f"{text}\n{out}" if truncated and not is_episode_over(info) else text), []
    if terminated:
        return "Answer recorded.", []
    if truncated:
        return out, []
    new = env.history[-1].get("views", [])
    return describe_views(env, new), [fit_image(env.view_pixels(v), max_pixels) for v in new]


def describe_views(env: Any, view_ids: list[int]) -> str:
    """The text that goes with new views: each one's image number and what it shows, the
    notes, and the budget left."""
    views = {v.id: v for v in env.visible()}
    lines = []
    for i in view_ids:
        view = views.get(i)
        if view is None:
            continue
        if len(view.tiles) == 1:
            t = view.tiles[0]
            x0, y0, x1, y1 = (round(c) for c in t.crop)
            lines.append(f"image {i}: unit {t.unit} ({env.task.units[t.unit].title or 'untitled'}), pixels "
                         f"({x0}, {y0})-({x1}, {y1}) at scale {t.scale:.2f}")
        else:
            lines.append(f"image {i}: a sheet of units {[t.unit for t in view.tiles]}")
    budget = env.budget()
    if not view_ids:
        lines.append(f"{len(env.notes)} note(s) placed; they are drawn on every later view that shows their point")
    lines.append(f"left: {budget['steps']} steps, {budget['crops']} zooms, {budget['notes']} notes; the newest "
                 f"{budget['images']} images can be named")
    return "\n".join(lines)
