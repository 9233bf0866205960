"""The base environment: reset/step plumbing shared by every arm.

An arm subclasses :class:`VicoEnv` and provides the hooks ``_draw_seed``, ``_apply``,
``_relabel``, ``_render``, ``_actor_context``, ``_score`` and ``_structure_text``. The base
owns the episode state, the actor probing, the reward and the info dictionary, and it
commits a new state only after every stage of an edit succeeded, so an invalid edit
leaves the sample state exactly as it was.
"""

from __future__ import annotations

import abc
import string
import time
from dataclasses import asdict, dataclass, replace
from typing import Any, Mapping

import gymnasium as gym
import numpy as np
from gymnasium import spaces

import vicogym
from vicogym.core import Edit, Provenance, Sample, StepResult
from vicogym.errors import InvalidEdit
from vicogym.policies import Actor, make_actor
from vicogym.rewards import RewardConfig, difficulty_reward

#: Characters the text spaces accept: printable ASCII, tabs and newlines, and the Unicode
#: blocks from Latin-1 through Miscellaneous Symbols (so real chart text fits).
TEXT_CHARSET = "".join(
    sorted(set(string.printable) | {chr(c) for c in range(0xA0, 0x2700)} | {"\ufffd"})
)
_CHARSET_SET = frozenset(TEXT_CHARSET)


def to_charset(text: str) -> str:
    """``text`` with characters outside :data:`TEXT_CHARSET` replaced by U+FFFD."""
    return "".join(c if c in _CHARSET_SET else "\ufffd" for c in text)


@dataclass(frozen=True)
class EnvConfig:
    """Settings every arm shares. JSON-serialisable; arms extend it."""

    k: int = 8
    max_turns: int = 4
    invalid_penalty: float = -1.0
    reward_shape: str = "band"
    sweet_zone: tuple[float, float] = (0.35, 0.65)
    reward_sigma: float = 0.15
    actor: Any = "simulated"
    max_question_chars: int = 1024
    max_structure_chars: int = 16384

    def __post_init__(self) -> None:
        for name in ("k", "max_turns", "max_question_chars", "max_structure_chars"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"expected {name} to be a positive integer, got {v!r}")
        if isinstance(self.invalid_penalty, bool) or not isinstance(self.invalid_penalty, (int, float)):
            raise TypeError(f"expected invalid_penalty to be a number, got {self.invalid_penalty!r}")
        if not isinstance(self.sweet_zone, (tuple, list)) or len(self.sweet_zone) != 2:
            raise ValueError(f"expected sweet_zone as [low, high], got {self.sweet_zone!r}")
        object.__setattr__(self, "sweet_zone", tuple(float(v) for v in self.sweet_zone))
        self.reward_config()  # validates shape, zone and sigma

    def reward_config(self) -> RewardConfig:
        return RewardConfig(self.reward_shape, self.sweet_zone[0], self.sweet_zone[1], self.reward_sigma)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["sweet_zone"] = list(self.sweet_zone)
        if not isinstance(self.actor, (str, Mapping)):
            d["actor"] = type(self.actor).__name__
        return d


class VicoEnv(gym.Env, abc.ABC):
    """Base class; see an arm's class (e.g. :class:`vicogym.envs.chart.ChartEnv`) for the
    Gymnasium-style documentation."""

    metadata = {"render_modes": ["rgb_array"], "render_fps": 1}
    env_id = "vicogym/Base-v0"
    version = 0
    config_class: type[EnvConfig] = EnvConfig

    def __init__(self, render_mode: str | None = None, config: EnvConfig | None = None, **kwargs: Any):
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"expected render_mode in {self.metadata['render_modes']} or None, got {render_mode!r}")
        self.render_mode = render_mode
        self.config = replace(config, **kwargs) if config is not None else self.config_class(**kwargs)
        self.actor: Actor = make_actor(self.config.actor)
        self._reward = self.config.reward_config()
        self._setup()
        h, w, c = self.image_shape
        self.observation_space = spaces.Dict({
            "image": spaces.Box(0, 255, shape=(h, w, c), dtype=np.uint8),
            "question": spaces.Text(self.config.max_question_chars, min_length=0, charset=TEXT_CHARSET),
            "structure": spaces.Text(self.config.max_structure_chars, min_length=0, charset=TEXT_CHARSET),
        })
        self.action_space = spaces.Text(self.config.max_structure_chars, min_length=1, charset=TEXT_CHARSET)
        self.sample: Sample | None = None
        self.pass_rate: float | None = None
        self.pass_rate_before: float | None = None
        self.trace: list[dict[str, Any]] = []
        self._turn = 0
        self._done = True
        self._facts: Any = None

    # -- hooks -----------------------------------------------------------------------
    image_shape: tuple[int, int, int] = (1, 1, 3)

    def _setup(self) -> None: ...

    @abc.abstractmethod
    def _draw_seed(self, rng: np.random.Generator, options: Mapping[str, Any]) -> tuple[Any, str, str, dict, str, str]:
        """Arm hook."""

    @abc.abstractmethod
    def _apply(self, structure: Any, edit: Edit, rule: Mapping[str, Any]) -> Any:
        """Arm hook."""

    @abc.abstractmethod
    def _relabel(self, structure: Any, rule: Mapping[str, Any]) -> str:
        """Arm hook."""

    @abc.abstractmethod
    def _render(self, structure: Any) -> tuple[np.ndarray, Any]:
        """Arm hook."""

    def _validate(self, structure: Any, facts: Any, rule: Mapping[str, Any]) -> None:
        """Checks on the rendered sample (visibility, protection); raise ``InvalidEdit``."""

    @abc.abstractmethod
    def _actor_context(self, structure: Any, facts: Any, question: str, answer: str, rule: Mapping[str, Any]) -> dict:
        """Arm hook."""

    @abc.abstractmethod
    def _score(self, prediction: str, target: str) -> float:
        """Arm hook."""

    @abc.abstractmethod
    def _structure_text(self, structure: Any) -> str:
        """Arm hook."""

    # -- Gymnasium API -----------------------------------------------------------------
    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        super().reset(seed=seed)
        options = dict(options or {})
        structure, question, answer, rule, source, source_id = self._draw_seed(self.np_random, options)
        image, facts = self._render(structure)
        provenance = Provenance(source, source_id, int(options.get("index", 0)), -1 if seed is None else int(seed),
                                self.env_id, self.version, vicogym.__version__)
        self.sample = Sample(structure, question, answer, rule, image, provenance)
        self._facts = facts
        self.pass_rate, answers = self._probe(self.sample, facts)
        self.pass_rate_before = self.pass_rate
        self.trace = []
        self._turn = 0
        self._done = False
        info = self._info(valid=True, error=None, timings={}, answers=answers)
        return self._observation(), info

    def step(self, action: Any):
        return self.step_result(action).astuple()

    def step_result(self, action: Any) -> StepResult:
        """``step`` as one :class:`StepResult` object."""
        t0 = time.perf_counter()
        timings: dict[str, float] = {}
        if self._done or self.sample is None:
            error = InvalidEdit("episode_over", "the episode has ended; call reset() before step()")
            return StepResult(self._observation(), float(self.config.invalid_penalty), True, False,
                              self._info(False, error, timings))
        self._turn += 1
        truncated = self._turn >= self.config.max_turns
        try:
            edit = Edit.parse(action)
        except InvalidEdit as error:
            return self._rejected(error, timings, truncated)
        if edit.is_stop:
            self._done = True
            return StepResult(self._observation(), 0.0, True, False, self._info(True, None, timings, stopped=True))
        sample = self.sample
        try:
            t = time.perf_counter()
            structure = self._apply(sample.structure, edit, sample.label_rule)
            timings["edit"] = time.perf_counter() - t
            t = time.perf_counter()
            answer = self._relabel(structure, sample.label_rule)
            timings["relabel"] = time.perf_counter() - t
            t = time.perf_counter()
            try:
                image, facts = self._render(structure)
            except InvalidEdit:
                raise
            except Exception as exc:  # any renderer failure rejects the edit, state kept
                raise InvalidEdit("render_failed", f"{type(exc).__name__}: {exc}") from None
            timings["render"] = time.perf_counter() - t
            self._validate(structure, facts, sample.label_rule)
        except InvalidEdit as error:
            return self._rejected(error, timings, truncated)
        new_sample = replace(sample, structure=structure, answer=answer, image=image)
        t = time.perf_counter()
        pass_rate, answers = self._probe(new_sample, facts)
        timings["actor"] = time.perf_counter() - t
        reward = difficulty_reward(pass_rate, self._reward)
        # commit: every stage succeeded
        self.pass_rate_before, self.pass_rate = self.pass_rate, pass_rate
        self.sample, self._facts = new_sample, facts
        self.trace.append({"turn": self._turn, "edit": edit.to_dict(), "answer": answer, "pass_rate": pass_rate})
        self._done = truncated
        timings["total"] = time.perf_counter() - t0
        return StepResult(self._observation(), float(reward), False, truncated,
                          self._info(True, None, timings, answers=answers))

    def render(self):
        if self.render_mode == "rgb_array":
            return None if self.sample is None else self.sample.image.copy()
        return None

    # -- helpers -----------------------------------------------------------------------
    def _rejected(self, error: InvalidEdit, timings: dict, truncated: bool) -> StepResult:
        self._done = truncated
        return StepResult(self._observation(), float(self.config.invalid_penalty), False, truncated,
                          self._info(False, error, timings))

    def _probe(self, sample: Sample, facts: Any) -> tuple[float, list[str]]:
        context = self._actor_context(sample.structure, facts, sample.question, sample.answer, sample.label_rule)
        answers = self.actor.answer(sample.image, sample.question, self.config.k, rng=self.np_random, context=context)
        if len(answers) != self.config.k:
            raise RuntimeError(f"expected {self.config.k} answers from the actor, got {len(answers)}")
        scores = [self._score(str(a), sample.answer) for a in answers]
        return float(np.mean(scores)), [str(a) for a in answers]

    def _observation(self) -> dict[str, Any]:
        h, w, c = self.image_shape
        canvas = np.full((h, w, c), 255, dtype=np.uint8)
        if self.sample is None:
            return {"image": canvas, "question": "", "structure": ""}
        img = self.sample.image
        canvas[: img.shape[0], : img.shape[1]] = img[:h, :w]
        return {
            "image": canvas,
            "question": to_charset(self.sample.question)[: self.config.max_question_chars],
            "structure": to_charset(self._structure_text(self.sample.structure))[: self.config.max_structure_chars],
        }

    def _info(self, valid: bool, error: InvalidEdit | None, timings: dict, answers: list[str] | None = None,
              stopped: bool = False) -> dict[str, Any]:
        s = self.sample
        return {
            "valid": valid,
            "error": None if error is None else error.to_dict(),
            "answer": None if s is None else s.answer,
            "label_rule": None if s is None else s.rule_kind,
            "pass_rate": self.pass_rate,
            "pass_rate_before": self.pass_rate_before,
            "actor_answers": answers or [],
            "turn": self._turn,
            "stopped": stopped,
            "timings": dict(timings),
        }
