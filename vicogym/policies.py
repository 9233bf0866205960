"""Policy protocols and the built-in policies.

- An :class:`Actor` answers a visual question ``k`` times. Real actors (a VLM behind an
  OpenAI-compatible server, a local model) see only the image and the question.
- A :class:`Rewriter` proposes an edit from an observation.

Built in:

- :class:`SimulatedActor` -- a *stand-in* for dry runs and tests, not a model. Its chance
  of answering correctly is ``sigmoid(sharpness * (skill - difficulty))``, where
  ``difficulty`` is computed by the environment from explicit visual features of the
  rendered sample (documented per arm, e.g. :func:`vicogym.checks.chart.difficulty_features`)
  and handed over in ``context``. Wrong answers are plausible strings (nearby values,
  other labels, the other polarity; with ``context["closed"]``, only the arm's
  ``distractors``, for answers from a closed set such as CLEVR's counts and colours),
  scored by the same scorer as any model's answers.
  It is deterministic given the generator it is handed.
- :class:`RandomRewriter` -- samples valid edits from the arm's edit space.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import numpy as np

from vicogym.answers import format_number, normalize_text, parse_number
from vicogym.validation import is_int, is_number, pick


@runtime_checkable
class Actor(Protocol):
    def answer(self, image: np.ndarray, question: str, k: int, *, rng: np.random.Generator,
               context: Mapping[str, Any]) -> list[str]:
        """``k`` answers to ``question`` about ``image``. ``context`` carries what the
        environment knows (for stand-ins); a real model must ignore it."""
        ...


@runtime_checkable
class Rewriter(Protocol):
    def propose(self, observation: Mapping[str, Any], rng: np.random.Generator) -> Any:
        """An edit (dict or JSON string) for the environment's ``step``."""
        ...


@dataclass(frozen=True)
class SimulatedActor:
    """A stand-in actor whose accuracy falls with the sample's visual difficulty and, where
    the answer depends on printed text, with that text's size.

    Its chance of being right is ``p_correct(difficulty)`` times, where the environment
    names the smallest cap height of the texts the answer depends on
    (``context["text_cap_px"]``, e.g. the chart arm's), the chance of reading a word of that
    size on the legibility curve fitted to Tesseract (:func:`vicogym.legibility.read_probability`,
    chart text as matplotlib draws it): a stand-in fitted to Tesseract, which is a floor: a
    strong model reads smaller text.

    Arguments:
        skill: the difficulty at which the actor is right half of the time (default 2.0).
        sharpness: slope of the logistic curve (default 1.5).
        acuity: how many times the pixels Tesseract needs the actor needs to read text
            (default 1.0: as Tesseract; 0.7 reads text 30% smaller).
    """

    skill: float = 2.0
    sharpness: float = 1.5
    acuity: float = 1.0

    def __post_init__(self) -> None:
        for name in ("skill", "sharpness", "acuity"):
            v = getattr(self, name)
            if not is_number(v):
                raise TypeError(f"expected {name} to be a finite number, got {v!r}")
        if self.sharpness <= 0:
            raise ValueError(f"expected sharpness > 0, got {self.sharpness}")
        if self.acuity <= 0:
            raise ValueError(f"expected acuity > 0, got {self.acuity}")

    def p_correct(self, difficulty: float, text_cap_px: float | None = None) -> float:
        p = 1.0 / (1.0 + math.exp(-self.sharpness * (self.skill - difficulty)))
        if text_cap_px is None:
            return p
        from vicogym.legibility import TEXT_DRAWN, TEXT_FONT, read_probability

        return p * read_probability(float(text_cap_px), TEXT_FONT, self.acuity, drawn=TEXT_DRAWN)

    def answer(self, image: np.ndarray, question: str, k: int, *, rng: np.random.Generator,
               context: Mapping[str, Any]) -> list[str]:
        if "answer" not in context or "difficulty" not in context:
            raise ValueError("SimulatedActor needs context['answer'] and context['difficulty'] from the environment")
        p = self.p_correct(float(context["difficulty"]), context.get("text_cap_px"))
        truth = str(context["answer"])
        distractors = [str(d) for d in context.get("distractors", ()) if str(d) != truth]
        if context.get("closed") and distractors:  # the answer's kind is a closed set: wrong answers come from it
            return [truth if rng.random() < p else pick(rng, distractors) for _ in range(k)]
        parsed = [(d, parse_number(d)) for d in distractors]  # once per call, not per wrong answer
        return [truth if rng.random() < p else plausible_wrong(truth, distractors, rng, parsed) for _ in range(k)]


def plausible_wrong(truth: str, distractors: list[str], rng: np.random.Generator,
                    parsed: list[tuple[str, float | None]] | None = None) -> str:
    """A wrong answer of the right kind: the other polarity, another label, or a nearby
    value off by 8-50% (outside the 5% relaxed tolerance)."""
    lowered = truth.strip().lower()
    if lowered in ("yes", "no"):
        return "No" if lowered == "yes" else "Yes"
    number = parse_number(truth)
    parsed = parsed if parsed is not None else [(d, parse_number(d)) for d in distractors]
    if number is None:
        labels = [d for d, v in parsed if v is None and normalize_text(d) != normalize_text(truth)]
        return pick(rng, labels) if labels else f"not {truth}"
    numeric = [d for d, v in parsed if v is not None and _far(v, number)]
    if numeric and rng.random() < 0.5:
        return pick(rng, numeric)
    if number == 0:
        return format_number(float(rng.integers(1, 10)))
    wrong = number * (1.0 + rng.choice([-1.0, 1.0]) * rng.uniform(0.08, 0.5))
    if float(number).is_integer() and abs(number) >= 10:
        wrong = round(wrong)
    return format_number(wrong if _far(wrong, number) else number * 1.5)


def _far(x: float, truth: float) -> bool:
    return truth == 0 and x != 0 or truth != 0 and abs(x - truth) / abs(truth) > 0.06


@dataclass
class RandomRewriter:
    """Proposes random edits drawn by ``sampler(observation, rng)``; see :meth:`for_env`.

    With probability ``p_stop`` it proposes ``{"op": "stop"}`` instead.
    """

    sampler: Callable[[Mapping[str, Any], np.random.Generator], Any]
    p_stop: float = 0.0

    def __post_init__(self) -> None:
        if not 0.0 <= self.p_stop <= 1.0:
            raise ValueError(f"expected p_stop in [0, 1], got {self.p_stop}")

    @classmethod
    def for_env(cls, env: Any, p_stop: float = 0.0) -> RandomRewriter:
        """A rewriter over ``env``'s edit space (``env.unwrapped.sample_edit``)."""
        return cls(sampler=env.unwrapped.sample_edit, p_stop=p_stop)

    def propose(self, observation: Mapping[str, Any], rng: np.random.Generator) -> Any:
        if self.p_stop and rng.random() < self.p_stop:
            return {"ops": [{"op": "stop"}]}
        return self.sampler(observation, rng)


@dataclass
class SearchRewriter:
    """Best of ``n``: proposes ``n`` candidate edits (from ``proposer``, a rewriter such as
    an LLM's, or from the arm's edit space), probes the actor on each without committing
    (:meth:`vicogym.envs.base.VicoEnv.preview`) and proposes the one whose pass rate lands
    closest to the middle of the sweet zone: it pushes a strong actor's pass rate down and
    pulls a weak actor's up. ``GenerationError`` when no candidate is valid.

    - ``repeats``: probes of ``k`` answers per candidate; more make the choice less noisy
      at the cost of actor calls.
    - ``depth``: a candidate from the arm's edit space chains 1 to ``depth`` sampled edits
      (each drawn on the structure the previous ones made); every other candidate grows
      the best one so far, so one turn can walk further towards the zone.
    - ``pool``: chains drawn per candidate, of which the :class:`EffectModel` -- a
      regression of the pass-rate change on the kinds of ops, learned from this rewriter's
      own probes over its life -- picks the one it expects closest to the middle (weights
      drawn from its posterior, so that untried kinds get tried). ``pool=1`` is plain
      random search.
    - ``stay``: once the episode has made a sample, keeping it (a ``stop``) is a candidate
      too, probed again ``repeats`` times; the episode ends when nothing beats it.
    """

    env: Any
    n: int = 8
    proposer: Any = None
    repeats: int = 1
    depth: int = 1
    pool: int = 4
    stay: bool = True
    effects: EffectModel = field(default_factory=lambda: EffectModel(), init=False)

    def __post_init__(self) -> None:
        if not is_int(self.n, 1):
            raise ValueError(f"expected n to be a positive integer, got {self.n!r}")

    @classmethod
    def for_env(cls, env: Any, **settings: Any) -> SearchRewriter:
        """A search rewriter over ``env``; ``settings`` as the class takes them."""
        return cls(env=env, **settings)

    def _chain(self, env: Any, start: tuple[list, Any], rng: np.random.Generator) -> tuple[list, Any]:
        """``start`` (ops and the structure they make) extended by 1 to ``depth`` edits
        sampled from the arm's edit space, each on the structure the previous ones made."""
        from vicogym.core import Edit

        ops, structure = list(start[0]), start[1]
        for _ in range(int(rng.integers(1, self.depth + 1))):
            edit = Edit.parse(env.arm.sample_edit(structure, env.sample.label_rule, rng))
            structure = env.arm.apply(structure, edit, env.sample.label_rule)
            ops.extend(dict(op) for op in edit.ops)
        return ops, structure

    def _draw(self, env: Any, start: tuple[list, Any], current: float, middle: float,
              rng: np.random.Generator) -> tuple[list, Any]:
        """The most promising of ``pool`` chains grown from ``start``: the one whose pass
        rate, as the effect model predicts it (weights drawn from its posterior, so that
        untried kinds of edits get tried), lands closest to ``middle``."""
        chains = [self._chain(env, start, rng) for _ in range(self.pool)]
        if len(chains) == 1:
            return chains[0]
        weights = self.effects.draw(rng)
        predicted = [abs(current + self.effects.predict(edit_features(ops), weights) - middle) for ops, _ in chains]
        return chains[int(np.argmin(predicted))]

    def propose(self, observation: Mapping[str, Any], rng: np.random.Generator) -> Any:
        from vicogym.errors import GenerationError, InvalidEdit

        env = self.env.unwrapped
        low, high = env.config.sweet_zone
        middle = (low + high) / 2
        current = float(env.pass_rate)
        best, best_distance, reasons = None, math.inf, []
        here: tuple[list, Any] = ([], env.sample.structure)
        stay = math.inf  # how far the sample this episode made lands from the middle, if it may stay
        if self.stay and env.trace:
            stay = abs(env.preview(STOP, np.random.default_rng(rng.integers(2**63)), self.repeats)[0] - middle)
        for i in range(self.n):
            try:
                if self.proposer is not None:
                    edit = self.proposer.propose(observation, rng)
                else:  # every other candidate grows the best one so far: a walk towards the zone
                    ops, structure = self._draw(env, best if best is not None and i % 2 else here, current, middle, rng)
                    edit = {"ops": ops}
            except (GenerationError, InvalidEdit) as exc:
                reasons.append(str(exc))
                continue
            pass_rate, error = env.preview(edit, np.random.default_rng(rng.integers(2**63)), self.repeats)
            if error is not None:
                reasons.append(error.code)
                continue
            if self.proposer is None:
                self.effects.add(edit_features(ops), pass_rate - current)
            if abs(pass_rate - middle) < best_distance:
                best_distance = abs(pass_rate - middle)
                best = edit if self.proposer is not None else (ops, structure)
        if stay <= best_distance:
            return STOP
        if best is None:
            raise GenerationError(f"none of {self.n} candidate edits was valid ({', '.join(sorted(set(reasons)))})")
        return best if self.proposer is not None else {"ops": best[0]}


def edit_features(ops: list[Mapping[str, Any]]) -> dict[str, float]:
    """What the effect model knows of an edit: how often each kind of op occurs, and each
    switch (a field set to true or false) it sets."""
    counts: dict[str, float] = {}
    for op in ops:
        keys = [str(op.get("op"))] + [f"{op.get('op')}.{k}={v}" for k, v in op.items() if isinstance(v, bool)]
        for key in keys:
            counts[key] = counts.get(key, 0.0) + 1.0
    return counts


@dataclass
class EffectModel:
    """Bayesian linear regression of the change in pass rate an edit makes on its
    :func:`edit_features`, learned from the search's own probes (prior: no effect, with
    standard deviation ``prior``; ``noise``: the probes' standard deviation)."""

    prior: float = 0.15
    noise: float = 0.2
    names: dict[str, int] = field(default_factory=dict)
    _xtx: np.ndarray = field(default_factory=lambda: np.zeros((0, 0)))
    _xty: np.ndarray = field(default_factory=lambda: np.zeros(0))
    _fit: Any = None

    def add(self, features: Mapping[str, float], change: float) -> None:
        """One probe: an edit's features and the pass-rate change it was seen to make
        (kept as sufficient statistics, so the model's size does not grow with probes)."""
        for name in features:
            if name not in self.names:
                self.names[name] = len(self.names)
                self._xtx = np.pad(self._xtx, ((0, 1), (0, 1)))
                self._xty = np.pad(self._xty, (0, 1))
        x = np.zeros(len(self.names))
        for name, count in features.items():
            x[self.names[name]] = count
        self._xtx += np.outer(x, x)
        self._xty += x * float(change)
        self._fit = None

    def posterior(self) -> tuple[np.ndarray, np.ndarray]:
        """The weights' posterior mean and covariance, in the order of ``names``."""
        if self._fit is None:
            precision = self._xtx / self.noise**2 + np.eye(len(self.names)) / self.prior**2
            covariance = np.linalg.inv(precision)
            self._fit = (covariance @ self._xty / self.noise**2, covariance)
        return self._fit

    def draw(self, rng: np.random.Generator) -> dict[str, float]:
        """Weights drawn from the posterior (Thompson sampling); unseen features weigh 0."""
        if not self.names:
            return {}
        mean, covariance = self.posterior()
        sample = rng.multivariate_normal(mean, covariance, method="cholesky")
        return {name: float(sample[i]) for name, i in self.names.items()}

    def predict(self, features: Mapping[str, float], weights: Mapping[str, float]) -> float:
        return sum(count * weights.get(name, 0.0) for name, count in features.items())


STOP = {"ops": [{"op": "stop"}]}
REWRITERS = ("random", "search", "search:N", "openai:MODEL@URL", "transformers:DIR")


def parse_rewriter(spec: Any) -> tuple[str, dict[str, Any]]:
    """A rewriter spec as its kind and settings: ``"random"`` (the arm's edit space),
    ``"search"`` or ``"search:N"`` (best of N, 8 by default, N at most 256),
    ``"openai:MODEL@URL"`` (an LLM behind an OpenAI-compatible server),
    ``"transformers:DIR"`` (a local Hugging Face image-text-to-text model folder, read
    without a server), or either model as a mapping with its settings (``{"name":
    "transformers", "model_dir": DIR, "max_new_tokens": 64}``, ``{"name": "openai", "model":
    ..., "base_url": ..., "temperature": 0.7}``); ``ValueError`` naming the forms otherwise
    (for a folder that holds no model, naming the folder and what it must hold)."""
    if spec == "random":
        return "random", {}
    if isinstance(spec, Mapping):
        return _rewriter_mapping(spec)
    if isinstance(spec, str) and (spec == "search" or spec.startswith("search:")):
        n = spec.split(":", 1)[1] if ":" in spec else "8"
        if n.isdigit() and 1 <= int(n) <= 256:
            return "search", {"n": int(n)}
    elif isinstance(spec, str) and spec.startswith("openai:"):
        from vicogym.clients import parse_spec

        return "openai", parse_spec(spec)
    elif isinstance(spec, str) and spec.startswith("transformers:"):
        from pathlib import Path

        from vicogym.clients import MODEL_FOLDER

        folder = spec.split(":", 1)[1]
        if not folder or not (Path(folder) / "config.json").is_file():
            raise ValueError(f"rewriter {spec!r}: {folder!r} is no model folder (no config.json there); expected "
                             f"transformers:DIR with DIR {MODEL_FOLDER}")
        return "transformers", {"model_dir": folder}
    raise ValueError(f"expected rewriter in {list(REWRITERS)} (N in [1, 256]), got {spec!r}")


def _rewriter_mapping(spec: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
    """A model rewriter given as ``{"name": "transformers" | "openai", **settings}``: its
    kind and settings, the spec's own checks applied and unknown settings named."""
    from dataclasses import fields

    from vicogym.clients import OpenAIRewriter, TransformersRewriter

    settings = {k: v for k, v in spec.items() if k != "name"}
    name = spec.get("name")
    classes = {"transformers": (TransformersRewriter, "model_dir"), "openai": (OpenAIRewriter, "model")}
    if name not in classes:
        raise ValueError(f"expected a rewriter object's name as 'transformers' or 'openai', got {name!r}")
    cls, required = classes[name]
    known = sorted(f.name for f in fields(cls) if f.init and f.name != "env" and not f.name.startswith("_"))
    unknown = sorted(set(settings) - set(known))
    if unknown or required not in settings:
        raise ValueError(f"rewriter {name!r} takes the settings {known} ({required} required), got {sorted(settings)}")
    if name == "transformers":
        parse_rewriter(f"transformers:{settings['model_dir']}")  # checks the folder
    else:
        parse_rewriter(f"openai:{settings['model']}@{settings.get('base_url')}")  # checks model and URL
    return name, settings


def make_rewriter(spec: Any, env: Any) -> Rewriter:
    """A rewriter for ``env`` from a spec (see :func:`parse_rewriter`) or an object that
    already has ``propose``."""
    if isinstance(spec, Rewriter):
        return spec
    kind, settings = parse_rewriter(spec)
    if kind == "random":
        return RandomRewriter.for_env(env)
    if kind == "search":
        return SearchRewriter.for_env(env, **settings)
    if kind == "transformers":
        from vicogym.clients import TransformersRewriter

        return TransformersRewriter.for_env(env, **settings)
    from vicogym.clients import OpenAIRewriter

    return OpenAIRewriter.for_env(env, **settings)


ACTORS: dict[str, Callable[..., Actor]] = {"simulated": SimulatedActor}


def _openai_actor(**settings: Any) -> Actor:
    from vicogym.clients import OpenAIActor

    return OpenAIActor(**settings)


def _transformers_actor(**settings: Any) -> Actor:
    from vicogym.clients import TransformersActor

    return TransformersActor(**settings)


ACTORS["openai"] = _openai_actor
ACTORS["transformers"] = _transformers_actor


def make_actor(spec: Any) -> Actor:
    """An actor from a name (``"simulated"``), a model spec (``"openai:MODEL@URL"``,
    ``"transformers:/path/to/model"``), a JSON
    object (``{"name": ..., **kwargs}``) or an object that already has ``answer``."""
    if isinstance(spec, str) and spec.startswith("openai:"):
        from vicogym.clients import parse_spec

        spec = {"name": "openai", **parse_spec(spec)}
    elif isinstance(spec, str) and spec.startswith("transformers:"):
        spec = {"name": "transformers", "model_dir": spec.split(":", 1)[1]}
    if isinstance(spec, str):
        spec = {"name": spec}
    if isinstance(spec, Mapping):
        kwargs = dict(spec)
        name = kwargs.pop("name", None)
        if name not in ACTORS:
            raise ValueError(f"expected actor name in {sorted(ACTORS)} or a spec 'openai:MODEL@URL', got {name!r}")
        try:
            return ACTORS[name](**kwargs)
        except TypeError as exc:
            import inspect

            target = ACTORS[name]
            known = [p for p in inspect.signature(target).parameters if not p.startswith("_")]
            raise ValueError(f"actor {name!r} takes the settings {known}, got {sorted(kwargs)} ({exc})") from None
    if isinstance(spec, Actor):
        return spec
    raise TypeError(f"expected an actor name, a JSON object or an object with answer(), got {type(spec).__name__}")


#: actor names whose answers are a stand-in's: the spec's name, and the class name a run
#: records for an actor object
STAND_IN_ACTORS = ("simulated", "SimulatedActor")
#: how to replace the stand-in, said wherever its pass rates are shown or exported
PLUG_IN_ACTOR = "plug in a real model with --actor openai:MODEL@URL (docs/evolve.md)"


@dataclass(frozen=True)
class ActorName:
    """Who gave a run's pass rates, as a reader should see it: ``name`` (``the simulated
    actor``, ``openai:MODEL@URL``), and whether it is a stand-in rather than a model."""

    name: str
    stand_in: bool

    def line(self) -> str:
        """The line that says where pass rates came from (with how to plug a model in, for
        a stand-in)."""
        if self.stand_in:
            return f"pass rates from {self.name} (a stand-in, not a model); {PLUG_IN_ACTOR}"
        return f"pass rates from {self.name}"

    def short(self) -> str:
        """The name, with ``(stand-in)`` after a stand-in's."""
        return f"{self.name} (a stand-in, not a model)" if self.stand_in else self.name


def actor_name(spec: Any) -> ActorName:
    """The :class:`ActorName` of an actor spec as :func:`make_actor` takes it, as a run
    records it (an object as its class name), or of an actor object; ``None`` is the
    default, the simulated actor."""
    if spec is None:
        spec = "simulated"
    if isinstance(spec, SimulatedActor):
        spec = type(spec).__name__
    if isinstance(spec, str):
        text = spec.strip()
        if text in STAND_IN_ACTORS:
            return ActorName("the simulated actor", True)
        return ActorName(text if ":" in text else f"the actor {text}", False)
    if isinstance(spec, Mapping):
        settings = {k: v for k, v in spec.items() if k != "name"}
        name = str(spec.get("name"))
        if name in STAND_IN_ACTORS:
            shown = ", ".join(f"{k}={v}" for k, v in sorted(settings.items()))
            return ActorName("the simulated actor" + (f" ({shown})" if shown else ""), True)
        if name == "openai" and settings.get("model"):
            return ActorName(f"openai:{settings['model']}@{settings.get('base_url', '')}", False)
        if name == "transformers" and settings.get("model_dir"):
            return ActorName(f"transformers:{settings['model_dir']}", False)
        return ActorName(f"the actor {name}", False)
    return ActorName(f"the actor {type(spec).__name__}", False)
