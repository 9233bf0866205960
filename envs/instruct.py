"""``vicogym/Instruct-v0``: multimodal instruction following with verifiable constraints."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any, ClassVar, Literal, TypedDict

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from vicogym.core import ErrorRecord
from vicogym.errors import InvalidEdit
from vicogym.images import ImagePolicy, decode_png
from vicogym.registry import check_settings
from vicogym.spaces import TextSpace, to_charset
from vicogym.validation import MAX_SEED, is_int


class Constraint(TypedDict):
    """One constraint of a sample, as rows store it and ``info["constraints"]`` lists it."""

    #: the constraint type's id in :data:`vicogym.programs.instruct.REGISTRY`
    id: str
    params: dict[str, Any]
    category: str
    #: checked by code, or by an LLM judge
    track: Literal["code", "judge"]


#: one constraint's verdict on a response (``pass`` is a Python keyword, hence this spelling)
ConstraintVerdict = TypedDict("ConstraintVerdict", {
    "id": str,
    "pass": bool,
    #: what the constraint asked for, and what the response did, in words
    "expected": str,
    "actual": str,
    "detail": str,
})


class InstructSample(TypedDict):
    """The sample of the current episode."""

    #: the stored row's id (``None`` for a freshly planned sample)
    id: str | None
    instruction: str
    constraints: list[Constraint]
    #: where the image came from: ``env_id``, ``source_id``, ``structure``
    source: dict[str, Any]


class InstructResetInfo(TypedDict):
    """The ``info`` of :meth:`InstructEnv.reset`."""

    constraints: list[Constraint]
    source: dict[str, Any]
    sample_id: str | None


class _InstructStepInfo(TypedDict):
    constraints: list[Constraint]


class InstructStepInfo(_InstructStepInfo, total=False):
    """The ``info`` of :meth:`InstructEnv.step`: ``verdicts`` and ``pass_rate`` once the
    response is read (every constraint failed when it cannot be), ``error`` when it is not
    read or the episode is over (then without verdicts)."""

    error: ErrorRecord
    verdicts: list[ConstraintVerdict]
    pass_rate: float


@dataclass(frozen=True)
class InstructConfig:
    """Settings of :class:`InstructEnv`. JSON-serialisable."""

    #: a ``vicogym synthesize`` run folder whose samples episodes replay; ``None`` plans
    #: fresh samples from ``images`` at every reset
    data: str | None = None
    #: the synthesis run (its folder or ``types.json``) whose discovered types to load, so
    #: that ``data`` rows naming them can be verified (their code runs in the OS sandbox);
    #: code is never taken from a row
    types: str | None = None
    images: tuple[str, ...] = ("vicogym/Chart-v0",)
    image_settings: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    min_constraints: int = 2
    max_constraints: int = 6
    #: the judge of judge-track constraints: ``simulated`` or ``openai:MODEL@URL``
    judge: Any = "simulated"
    height: int = 384
    width: int = 512
    max_instruction_chars: int = 4096
    max_response_chars: int = 8192

    def __post_init__(self) -> None:
        for name in ("height", "width", "max_instruction_chars", "max_response_chars"):
            v = getattr(self, name)
            if not is_int(v, 1):
                raise ValueError(f"expected {name} to be a positive integer, got {v!r}")
        for name in ("data", "types"):
            if getattr(self, name) is not None and not isinstance(getattr(self, name), str):
                raise ValueError(f"expected {name} as a synthesis run folder (a string) or None, got "
                                 f"{getattr(self, name)!r}")
        object.__setattr__(self, "images", (self.images,) if isinstance(self.images, str) else tuple(self.images))

    def to_dict(self) -> dict[str, Any]:
        return {f.name: list(v) if isinstance(v := getattr(self, f.name), tuple) else v for f in fields(self)}


class InstructEnv(gym.Env):
    """
    ## Description
    One episode is one instruction-following sample: an image and an instruction that
    carries verifiable constraints (formats, counts, keywords, ... and constraints grounded
    in the image's own structure: object counts and relations of a CLEVR scene, values and
    extremes of a chart's rows, protected targets of a natural image). The agent answers;
    every constraint is verified (code verifiers; an LLM judge for the judge track) and the
    reward is the share of constraints the answer satisfies (the VISA reward).

    ## Action Space
    The response: a string of at most ``max_response_chars`` characters.

    ## Observation Space
    ``Dict(image=Box(0, 255, (height, width, 3), uint8), instruction=Text)``; the image is
    letterboxed onto the canvas.

    ## Rewards
    The constraint pass rate in [0, 1] (1.0 when every constraint is satisfied). A
    response that is not a string (code ``malformed``) or is longer than
    ``max_response_chars`` (``too_large``) scores 0.0, every constraint failed, with
    ``info["error"]`` (``{code, message, op, field}``, as the edit arms give it).

    ## Starting State
    ``reset(seed=...)`` draws an image from ``images`` and plans a consistent constraint
    set for it (or, with ``data``, picks a stored sample; ``options={"index": i}`` picks
    sample ``i``).

    ## Episode End
    Terminates after the one response.

    ## Arguments
    See :class:`InstructConfig` (``data``, ``types``, ``images``, ``min_constraints``,
    ``max_constraints``, ``judge``, ``height``, ``width``, ...).

    ## Version History
    - v0: first version.

    ``types`` loads a run's discovered types (their code checked against the SHA-256 the
    run stored, run only in the OS sandbox); a ``data`` row naming a discovered type that
    was not loaded raises :class:`~vicogym.errors.UnknownConstraintType` at construction.

    ``info`` at reset: ``constraints`` (``[{id, params, category, track}]``) and ``source``;
    after the step: ``verdicts`` (each constraint's pass, expected, actual and diagnostic),
    ``pass_rate`` and ``constraints``.
    """

    metadata = {"render_modes": ["rgb_array"], "render_fps": 1}
    env_id: ClassVar[str] = "vicogym/Instruct-v0"
    version: ClassVar[int] = 0
    kind: ClassVar[str] = "response"
    config_class: ClassVar[type] = InstructConfig
    smoke_settings: ClassVar[dict[str, Any]] = {"height": 192, "width": 256}

    def __init__(self, render_mode: str | None = None, config: InstructConfig | None = None, **kwargs: Any):
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"expected render_mode in {self.metadata['render_modes']} or None, got {render_mode!r}")
        check_settings(self.env_id, kwargs, [f.name for f in fields(InstructConfig)])
        self.render_mode = render_mode
        self.config = replace(config, **kwargs) if config is not None else InstructConfig(**kwargs)
        self.policy = ImagePolicy("letterbox", self.config.height, self.config.width, fill=255)
        self.observation_space = spaces.Dict({
            "image": spaces.Box(0, 255, shape=self.policy.shape, dtype=np.uint8),
            "instruction": TextSpace(self.config.max_instruction_chars),
        })
        self.action_space = TextSpace(self.config.max_response_chars)
        from vicogym.instruct.judge import make_judge

        self.judge = make_judge(self.config.judge)
        self._rows: list[dict[str, Any]] | None = None
        self._synth: Any = None
        self._source: Any = None
        if self.config.types is not None:
            from vicogym.instruct.run_folder import load_types

            load_types(self.config.types, judge=self.judge)
        if self.config.data is not None:
            self._rows = load_samples(self.config.data)
            from vicogym.instruct.run_folder import check_row_types

            for row in self._rows:  # every row verifiable with what was loaded, before any episode
                check_row_types(json.loads(row["constraints"]), json.loads(row["discovered"]))
        else:
            from vicogym.instruct.synthesis import ImageSource, SynthesizeConfig, Synthesizer

            settings = SynthesizeConfig(images=self.config.images, image_settings=self.config.image_settings,
                                        min_constraints=self.config.min_constraints, candidates=1,
                                        max_constraints=self.config.max_constraints, judge=self.config.judge)
            self._synth = Synthesizer(settings)
            self._source = ImageSource(settings, self._synth.perceiver)
        self.sample: InstructSample | None = None
        self._image: np.ndarray | None = None
        self._done = True

    def reset(self, *, seed: int | None = None,
              options: dict[str, Any] | None = None) -> tuple[dict[str, Any], InstructResetInfo]:
        super().reset(seed=seed)
        options = dict(options or {})
        if self._rows is not None:
            index = options.get("index")
            if index is None:
                index = int(self.np_random.integers(len(self._rows)))
            if not is_int(index, 0, len(self._rows) - 1):
                raise ValueError(f"expected options['index'] in [0, {len(self._rows) - 1}], got {index!r}")
            row = self._rows[index]
            self.sample = {"id": row["id"], "instruction": row["instruction"],
                           "constraints": json.loads(row["constraints"]), "source": json.loads(row["image_source"])}
            image = decode_png(row["images"][0]["bytes"])
        else:
            rng = np.random.default_rng(self.np_random.integers(MAX_SEED))
            picture = self._source.draw(rng)
            plan = self._synth.plan(picture, {}, {}, np.zeros((0, 0), dtype=np.float32), rng)
            self.sample = {"id": None, "instruction": plan["instruction"], "constraints": plan["constraints"],
                           "source": picture.source}
            image = picture.image
        self._image = self.policy.apply(image)
        self._done = False
        return self._observation(), {"constraints": self.sample["constraints"], "source": self.sample["source"],
                                     "sample_id": self.sample["id"]}

    def _observation(self) -> dict[str, Any]:
        return {"image": self._image.copy(),
                "instruction": to_charset(self.sample["instruction"][: self.config.max_instruction_chars])}

    def step(self, action: Any) -> tuple[dict[str, Any], float, bool, bool, InstructStepInfo]:
        """The one response of the episode. One that is not a string, too long, or no
        Unicode text (a lone surrogate) scores 0.0 with a typed ``info["error"]``. A step
        after the response changes nothing and answers ``episode_over`` (reward 0.0);
        ``RuntimeError`` only before the first ``reset``. The episode ends only once the
        response is verified: a judge that fails raises with the episode still open."""
        if self.sample is None:
            raise RuntimeError("no sample yet; call reset() before step()")
        constraints = self.sample["constraints"]
        if self._done:
            error = InvalidEdit("episode_over", "the episode has ended (one response per episode); call reset() "
                                "before step()")
            return self._observation(), 0.0, True, False, {"error": error.to_dict(), "constraints": constraints}
        error = None
        if not isinstance(action, str):
            error = InvalidEdit("malformed", f"expected the response as a string, got {type(action).__name__}")
        elif len(action) > self.config.max_response_chars:
            error = InvalidEdit("too_large", f"the response has {len(action)} characters, more than "
                                f"max_response_chars={self.config.max_response_chars}; answer more briefly")
        elif not _is_unicode(action):
            error = InvalidEdit("bad_value", "the response holds a lone surrogate, which is not Unicode text; send "
                                "valid UTF-8")
        if error is not None:  # every constraint fails: a response that is not read follows none
            verdicts: list[ConstraintVerdict] = [
                {"id": c["id"], "pass": False, "expected": "a response", "actual": error.code,
                 "detail": error.message} for c in constraints]
            info: InstructStepInfo = {"error": error.to_dict(), "verdicts": verdicts, "pass_rate": 0.0,
                                      "constraints": constraints}
            self._done = True
            return self._observation(), 0.0, True, False, info
        from vicogym.instruct.judge import verify_sample
        from vicogym.programs.instruct import pass_rate

        verdicts = verify_sample(action, constraints, self.judge)
        rate = pass_rate(verdicts)
        self._done = True
        return self._observation(), float(rate), True, False, {"verdicts": verdicts, "pass_rate": rate,
                                                                "constraints": constraints}

    def render(self):
        return None if self._image is None else self._image.copy()

    @staticmethod
    def score_response(response: str, ground_truth: str, judge: Any = None, types: Any = None) -> float:
        """A stored row's reward for ``response`` (what the verl reward calls): the
        constraint pass rate; see :func:`vicogym.instruct.run_folder.score_row`."""
        from vicogym.instruct.run_folder import score_row

        return score_row(response, ground_truth, judge, types)

    def close(self) -> None:
        if self._source is not None:
            self._source.close()


def load_samples(folder: str | Path) -> list[dict[str, Any]]:
    """The samples of a synthesis run (the shards its memory has committed), in order."""
    from vicogym.errors import RunError
    from vicogym.instruct.run_folder import iter_samples

    rows = list(iter_samples(folder))
    if not rows:
        raise RunError(f"{folder} holds no samples yet; let `vicogym synthesize` finish a round")
    return rows


def _is_unicode(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True
