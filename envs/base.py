"""The base environment: reset/step plumbing shared by every arm.

:class:`VicoEnv` composes an :class:`~vicogym.arm.Arm` (Minigrid-style: the base owns
``reset``, ``step``, actor probing, the reward and the info dictionary; the arm supplies
structures, edits, labels and pixels). An arm's environment is a subclass that names its
``arm_class`` and ``config_class`` and carries the Gymnasium-style docstring.

A new state is committed only after every stage of an edit succeeded, so an invalid
edit (or any error the arm raises on it) leaves the sample, the pass rates, the trace
and the random generator exactly as they were.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields, replace
from typing import Any, ClassVar

import gymnasium as gym
import numpy as np
from gymnasium import spaces

import vicogym
from vicogym.arm import Arm, require_extras
from vicogym.core import Edit, Provenance, Render, Sample, Seed, StepInfo, StepResult, TraceEntry
from vicogym.errors import GenerationError, InvalidEdit
from vicogym.policies import Actor, make_actor
from vicogym.registry import check_settings
from vicogym.rewards import PROBE_POLICIES, RewardConfig, difficulty_reward, in_sweet_zone, probe_decided
from vicogym.spaces import TextSpace, to_charset
from vicogym.validation import MAX_SEED, check_collections, error_text, is_int, is_number

#: bounds of the integer settings: a run of 10^8 actor calls per sample or an observation
#: too short for any question is a mistake to report, not to start
LIMITS = {"k": (1, 4096), "max_turns": (1, 10_000), "max_tries": (1, 10_000), "max_question_chars": (64, 65_536),
          "max_structure_chars": (1024, 1_048_576), "probe_batch": (1, 4096)}


@dataclass(frozen=True)
class EnvConfig:
    """Settings every arm shares. JSON-serialisable; arms extend it."""

    k: int = 8
    #: edit turns per episode; every step uses one, a rejected edit too
    max_turns: int = 3
    invalid_penalty: float = -1.0
    reward_shape: str = "band"
    sweet_zone: tuple[float, float] = (0.35, 0.65)
    reward_sigma: float = 0.15
    actor: Any = "simulated"
    max_tries: int = 16
    max_question_chars: int = 1024
    max_structure_chars: int = 16384
    #: how many of the K answers a probe draws (:data:`vicogym.rewards.PROBE_POLICIES`): all K
    #: (``fixed``), or batches of ``probe_batch`` until the Beta posterior puts the pass rate
    #: in or out of the sweet zone with probability ``probe_confidence`` (``sequential``)
    probe: str = "fixed"
    probe_batch: int = 3
    probe_confidence: float = 0.8

    def __post_init__(self) -> None:
        check_collections(self)  # a list or mapping setting given as a word names the syntax it takes
        for name, (low, high) in LIMITS.items():
            v = getattr(self, name)
            if not is_int(v, low, high):
                raise ValueError(f"expected {name} to be an integer in [{low}, {high}], got {v!r}")
        if self.probe not in PROBE_POLICIES:
            raise ValueError(f"expected probe in {PROBE_POLICIES}, got {self.probe!r}")
        if not is_number(self.probe_confidence) or not 0.5 < self.probe_confidence < 1.0:
            raise ValueError(f"expected probe_confidence in (0.5, 1), got {self.probe_confidence!r}")
        if not is_number(self.invalid_penalty, finite=False):
            raise TypeError(f"expected invalid_penalty to be a number, got {self.invalid_penalty!r}")
        if not -1e6 <= self.invalid_penalty <= 0:  # NaN fails too; a reward for invalid edits would teach them
            raise ValueError(f"expected invalid_penalty in [-1e6, 0] (a penalty, finite), got {self.invalid_penalty!r}")
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


class VicoEnv(gym.Env):
    """Base class; see an arm's class (e.g. :class:`vicogym.envs.chart.ChartEnv`) for the
    Gymnasium-style documentation."""

    metadata = {"render_modes": ["rgb_array"], "render_fps": 1}
    env_id: ClassVar[str] = "vicogym/Base-v0"
    version: ClassVar[int] = 0
    #: see :data:`vicogym.registry.ENV_KINDS`: an edit environment
    kind: ClassVar[str] = "edit"
    config_class: ClassVar[type[EnvConfig]] = EnvConfig
    arm_class: ClassVar[type[Arm]]

    def __init__(self, render_mode: str | None = None, config: EnvConfig | None = None, **kwargs: Any):
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"expected render_mode in {self.metadata['render_modes']} or None, got {render_mode!r}")
        require_extras(self.arm_class, self.env_id)
        self.render_mode = render_mode
        check_settings(self.env_id, kwargs, [f.name for f in fields(self.config_class)])
        self.config = replace(config, **kwargs) if config is not None else self.config_class(**kwargs)
        self.arm: Arm = self.arm_class(self.config)
        self.arm.open()
        self.actor: Actor = make_actor(self.config.actor)
        self._reward = self.config.reward_config()
        self.image_policy = self.arm.image_policy
        self.observation_space = spaces.Dict({
            "image": spaces.Box(0, 255, shape=self.image_policy.shape, dtype=np.uint8),
            "question": TextSpace(self.config.max_question_chars),
            "structure": TextSpace(self.config.max_structure_chars),
        })
        self.action_space = TextSpace(self.config.max_structure_chars, min_length=1)
        self.sample: Sample | None = None
        self.pass_rate: float | None = None
        self.pass_rate_before: float | None = None
        self.trace: list[TraceEntry] = []
        self._trace_json: list[str] = []  # the same entries as JSON, to hand out fresh copies cheaply
        self._turn = 0
        self._done = True
        self._render_out: Render | None = None
        self._text = ""

    @property
    def id(self) -> str:
        """The id this environment was made with (a registered variant's own id)."""
        return self.spec.id if self.spec is not None else self.env_id

    # -- Gymnasium API -----------------------------------------------------------------
    def reset(self, *, seed: int | None = None,
              options: dict[str, Any] | None = None) -> tuple[dict[str, Any], StepInfo]:
        super().reset(seed=seed)
        if seed is None:
            # an unseeded episode still gets a seed of its own, so provenance can regenerate it
            seed = int(self.np_random.integers(MAX_SEED))
            super().reset(seed=seed)
        options = dict(options or {})
        index = options.get("index", 0)
        if isinstance(index, bool) or not isinstance(index, (int, np.integer)) or index < 0:
            raise ValueError(f"expected options['index'] to be a non-negative integer, got {index!r}")
        episode = options.get("episode", 0)  # the episode's index in its run: arms may balance a run by it
        if isinstance(episode, bool) or not isinstance(episode, (int, np.integer)) or episode < 0:
            raise ValueError(f"expected options['episode'] to be a non-negative integer, got {episode!r}")
        drawn, structure_text, render, rejections = self._draw_answerable_seed(options)
        provenance = Provenance(drawn.source, drawn.source_id, int(index), int(seed), self.id, self.version,
                                vicogym.__version__, tuple(sorted(self.arm.checks_run().items())), drawn.facts)
        self.sample = Sample(drawn.structure, drawn.question, drawn.answer, dict(drawn.label_rule), render.image,
                             provenance)
        self._render_out, self._text = render, structure_text
        self.pass_rate, answers = self._probe(self.sample, render)
        self.pass_rate_before = self.pass_rate
        self.trace = []
        self._trace_json = []
        self._turn = 0
        self._done = False
        info = self._info(valid=True, error=None, timings={}, answers=answers)
        info["seed_rejections"] = rejections
        return self._observation(), info

    def step(self, action: Any):
        return self.step_result(action).astuple()

    def step_result(self, action: Any) -> StepResult:
        """``step`` as one :class:`StepResult` object. Whatever ``action`` holds, it is
        accepted or rejected with a typed ``info["error"]``; a rejected edit changes nothing
        but the turn count. The turn advances only together with the step's outcome (an
        actor that fails while probing raises with the turn, sample and trace as they
        were). A step after the episode ended changes nothing and answers ``episode_over``."""
        t0 = time.perf_counter()
        timings: dict[str, float] = {}
        if self._done or self.sample is None:
            error = InvalidEdit("episode_over", "the episode has ended; call reset() before step()")
            return StepResult(self._observation(), float(self.config.invalid_penalty), True, False,
                              self._info(False, error, timings))
        turn = self._turn + 1
        truncated = turn >= self.config.max_turns
        try:
            edit = Edit.parse(action)
        except InvalidEdit as error:
            return self._rejected(turn, error, timings, truncated)
        except Exception as exc:  # a value the parser could not even name (its repr fails)
            return self._rejected(turn, InvalidEdit("malformed", f"the edit cannot be read ({error_text(exc, 120)}); "
                                                    "send JSON data"), timings, truncated)
        if edit.is_stop:
            self._turn, self._done = turn, True
            return StepResult(self._observation(), 0.0, True, False, self._info(True, None, timings, stopped=True))
        try:
            structure, answer, text, render = self._edit(self.sample, edit, timings)
            json.dumps(edit.to_dict(), allow_nan=False)  # the trace holds it as strict JSON
        except InvalidEdit as error:
            return self._rejected(turn, error, timings, truncated)
        except (TypeError, ValueError, RecursionError) as exc:
            error = InvalidEdit("bad_value", f"the edit holds a value the trace cannot record as JSON "
                                f"({error_text(exc, 120)})")
            return self._rejected(turn, error, timings, truncated)
        new_sample = replace(self.sample, structure=structure, answer=answer, image=render.image)
        t = time.perf_counter()
        pass_rate, answers = self._probe(new_sample, render)
        timings["actor"] = time.perf_counter() - t
        reward = difficulty_reward(pass_rate, self._reward)
        entry: TraceEntry = {"turn": turn, "edit": edit.to_dict(), "answer": answer, "pass_rate": pass_rate}
        entry_json = json.dumps(entry, ensure_ascii=False)
        # commit: every stage succeeded
        self._turn = turn
        self.pass_rate_before, self.pass_rate = self.pass_rate, pass_rate
        self.sample, self._render_out, self._text = new_sample, render, text
        self.trace.append(entry)
        self._trace_json.append(entry_json)
        self._done = truncated
        timings["total"] = time.perf_counter() - t0
        return StepResult(self._observation(), float(reward), False, truncated,
                          self._info(True, None, timings, answers=answers))

    def render(self):
        if self.render_mode == "rgb_array":
            return None if self.sample is None else self.image_policy.apply(self.sample.image)
        return None

    def close(self) -> None:
        self.arm.close()
        super().close()

    # -- for rewriters -------------------------------------------------------------------
    def sample_edit(self, observation: Mapping[str, Any] | None = None,
                    rng: np.random.Generator | None = None) -> dict[str, Any]:
        """A random edit of the current sample that the arm's editors and label rule
        accept (rendering checks not run); ``GenerationError`` when none is found."""
        if self.sample is None:
            raise RuntimeError("call reset() before sample_edit()")
        return self.arm.sample_edit(self.sample.structure, self.sample.label_rule,
                                    rng if rng is not None else self.np_random)

    def preview(
        self, action: Any, rng: np.random.Generator, repeats: int = 1
    ) -> tuple[float | None, InvalidEdit | None]:
        """What ``step(action)`` would give, committing nothing: the actor's pass rate on
        the edited sample (the mean of ``repeats`` probes of ``k`` answers, drawn with
        ``rng``, not the environment's generator), or the edit's rejection. For search
        rewriters. For ``stop``, the sample stays: the mean of ``repeats`` new probes of it
        and the pass rate measured when it was made."""
        if self._done or self.sample is None:
            return None, InvalidEdit("episode_over", "the episode has ended; call reset() before preview()")
        try:
            edit = Edit.parse(action)
            if edit.is_stop:
                probes = self._probes(self.sample, self._render_out, rng, repeats)
                return float(np.mean([self.pass_rate, *probes])), None
            structure, answer, _, render = self._edit(self.sample, edit, {})
        except InvalidEdit as error:
            return None, error
        except Exception as exc:  # a value the parser could not even name, as in step
            return None, InvalidEdit("malformed", f"the edit cannot be read ({error_text(exc, 120)}); send JSON "
                                     "data")
        sample = replace(self.sample, structure=structure, answer=answer, image=render.image)
        return float(np.mean(self._probes(sample, render, rng, repeats))), None

    def _probes(self, sample: Sample, render: Render, rng: np.random.Generator, repeats: int) -> list[float]:
        """A preview's pass rates: ``repeats`` probes of ``k`` answers, or with sequential
        probing one probe of at most ``repeats`` x ``k`` answers, which stops as soon as the
        zone is decided (a candidate far from the zone costs one batch)."""
        if self.config.probe == "sequential":
            return [self._probe(sample, render, rng, most=repeats * self.config.k)[0]]
        return [self._probe(sample, render, rng)[0] for _ in range(repeats)]

    # -- helpers -----------------------------------------------------------------------
    def _draw_answerable_seed(self, options: Mapping[str, Any]) -> tuple[Seed, str, Render, dict[str, int]]:
        """A seed (or one of its variants) that passes the arm's checks, within ``max_tries``
        draws; the rejections on the way, by code. A seed named by ``options["index"]`` is
        not redrawn."""
        rejections: Counter = Counter()
        last: str | None = None  # the message, not the exception: its traceback would keep this frame alive
        for _ in range(self.config.max_tries):
            drawn = self.arm.draw_seed(self.np_random, options)
            for variant in self.arm.seed_variants(drawn):
                try:
                    self.arm.screen(variant.structure, variant.label_rule)  # no render for a surely rejected seed
                except InvalidEdit as exc:
                    rejections[exc.code] += 1
                    last = str(exc)
                    continue
                text, render = self._render(variant.structure)
                try:
                    self._check_sizes(text, variant.question)
                    self.arm.validate(variant.structure, render, variant.label_rule)
                except InvalidEdit as exc:
                    rejections[exc.code] += 1
                    last = str(exc)
                    continue
                return variant, text, render, dict(sorted(rejections.items()))
            if "index" in options:
                raise GenerationError(f"seed {options['index']} ({drawn.source_id}) cannot be shown answerably: {last}")
        raise GenerationError(f"no answerable seed in {self.config.max_tries} draws ({dict(rejections)}; last: {last})")

    def _check_sizes(self, text: str, question: str) -> None:
        """Observations are never cut: a seed whose text does not fit is drawn again."""
        if len(text) > self.config.max_structure_chars:
            raise InvalidEdit("too_large", f"the structure's text has {len(text)} characters, more than "
                              f"max_structure_chars={self.config.max_structure_chars}")
        if len(question) > self.config.max_question_chars:
            raise InvalidEdit("too_large", f"the question has {len(question)} characters, more than "
                              f"max_question_chars={self.config.max_question_chars}")

    def _render(self, structure: Any) -> tuple[str, Render]:
        text, render = self.arm.encode_and_render(structure)
        image = np.array(render.image, dtype=np.uint8, copy=True)
        image.setflags(write=False)  # samples are handed out in info: nobody may change their pixels
        return text, replace(render, image=image)

    def _edit(self, sample: Sample, edit: Edit, timings: dict[str, float]) -> tuple[Any, str, str, Render]:
        """Every stage of an edit, without committing anything; ``InvalidEdit`` on failure."""
        rule = sample.label_rule
        stage = "edit"
        try:
            t = time.perf_counter()
            structure = self.arm.apply(sample.structure, edit, rule)
            timings["edit"] = time.perf_counter() - t
            stage, t = "relabel", time.perf_counter()
            answer = self.arm.relabel(structure, rule)
            timings["relabel"] = time.perf_counter() - t
            text, payloads = self.arm.encode(structure)
            if text == self._text and (not payloads or payloads == self.arm.encode(sample.structure)[1]):
                raise InvalidEdit("no_change", "the edit leaves the structure as it was; change something, or send "
                                  "{\"op\": \"stop\"} to end the episode")
            if len(text) > self.config.max_structure_chars:
                raise InvalidEdit("too_large", f"the structure's text would be {len(text)} characters, more than "
                                  f"max_structure_chars={self.config.max_structure_chars}; make the table smaller")
            stage, t = "render", time.perf_counter()
            try:
                text, render = self._render(structure)
            except InvalidEdit:
                raise
            except Exception as exc:  # any renderer failure rejects the edit, state kept
                raise InvalidEdit("render_failed", f"{type(exc).__name__}: {exc}") from None
            timings["render"] = time.perf_counter() - t
            stage, t = "validate", time.perf_counter()
            self.arm.validate(structure, render, rule)
            timings["checks"] = time.perf_counter() - t
        except InvalidEdit:
            raise
        except Exception as exc:  # an arm bug must not take the caller's episode down
            raise InvalidEdit("unhandled", f"{type(exc).__name__} in the {stage} stage: {exc}") from None
        return structure, answer, text, render

    def _rejected(self, turn: int, error: InvalidEdit, timings: dict[str, float], truncated: bool) -> StepResult:
        self._turn, self._done = turn, truncated
        return StepResult(self._observation(), float(self.config.invalid_penalty), False, truncated,
                          self._info(False, error, timings))

    def _probe(self, sample: Sample, render: Render, rng: np.random.Generator | None = None,
               most: int | None = None) -> tuple[float, list[str]]:
        """The actor's pass rate on ``sample`` and the answers it was scored from: ``k``
        answers (``most`` for a preview's repeats), or with ``probe="sequential"`` batches of
        ``probe_batch`` until the zone is decided (see :func:`vicogym.rewards.probe_decided`)."""
        context = self.arm.actor_context(sample, render)
        rng = rng if rng is not None else self.np_random
        most = self.config.k if most is None else most
        batch = most if self.config.probe == "fixed" else self.config.probe_batch
        answers: list[str] = []
        scores: list[float] = []
        while len(answers) < most:
            size = min(batch, most - len(answers))
            drawn = self.actor.answer(sample.image, sample.question, size, rng=rng, context=context)
            if len(drawn) != size:
                raise RuntimeError(f"expected {size} answers from the actor, got {len(drawn)}")
            answers.extend(str(a) for a in drawn)
            scores.extend(self.arm.score(str(a), sample.answer) for a in drawn)
            if len(answers) < most and probe_decided(scores, self.config.sweet_zone, self.config.probe_confidence):
                break
        return float(np.mean(scores)), answers

    def _observation(self) -> dict[str, Any]:
        if self.sample is None:
            return {"image": np.full(self.image_policy.shape, self.image_policy.fill, dtype=np.uint8),
                    "question": "", "structure": ""}
        return {
            "image": self.image_policy.apply(self.sample.image),
            "question": to_charset(self.sample.question)[: self.config.max_question_chars],
            "structure": to_charset(self._text)[: self.config.max_structure_chars],
        }

    def _info(self, valid: bool, error: InvalidEdit | None, timings: dict[str, float],
              answers: list[str] | None = None, stopped: bool = False) -> StepInfo:
        s = self.sample
        return {
            "valid": valid,
            "error": None if error is None else error.to_dict(),
            "answer": None if s is None else s.answer,
            "label_rule": None if s is None else s.rule_kind,
            "label": None if s is None else json.loads(json.dumps(s.label_rule)),
            "pass_rate": self.pass_rate,
            "pass_rate_before": self.pass_rate_before,
            "sweet": self.pass_rate is not None and in_sweet_zone(self.pass_rate, self._reward),
            "actor_answers": answers or [],
            "turn": self._turn,
            "stopped": stopped,
            "edit_trace": json.loads("[" + ",".join(self._trace_json) + "]"),
            "sample": s,
            "timings": dict(timings),
        }
