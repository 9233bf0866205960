"""``vicogym/CLEVR-v0``: edit a CLEVR scene, re-render it with Blender, re-execute the
question's functional program.

:class:`ClevrArm` composes the CLEVR layers (scene structure, program executor and
templates, editors, Blender renderer, sources) behind the arm interface; :class:`ClevrEnv`
is the Gymnasium environment.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from vicogym.answers import exact_match
from vicogym.arm import Arm, draw_edit
from vicogym.checks import clevr as clevr_checks
from vicogym.core import SHORT_ANSWER, Edit, ExportHints, Render, Sample, Seed
from vicogym.editors import clevr as clevr_editor
from vicogym.envs.base import EnvConfig, VicoEnv
from vicogym.errors import GenerationError, InvalidEdit
from vicogym.images import ImagePolicy
from vicogym.programs import clevr as clevr_programs
from vicogym.renderers.clevr import ENGINES, UNSHOWN, ClevrRenderer, RenderFailed, RenderSettings
from vicogym.sources.clevr import make_source
from vicogym.structures.clevr import ATTRIBUTES, ERROR_CODES, ClevrRule, Scene
from vicogym.validation import is_int, is_number

#: proposals per try for an edit of a yes/no question, which must keep its answer
YES_NO_EDIT_TRIES = 4


@dataclass(frozen=True)
class ClevrEnvConfig(EnvConfig):
    """CLEVR arm settings. ``source``: ``"procedural"`` or a CLEVR release folder
    (``split`` chooses among its splits); ``engine``: ``"cycles"`` or ``"workbench"``.
    No question reads an attribute the images cannot show: material under Workbench (which
    draws metal and rubber alike), nothing under Cycles; ``unasked`` adds attributes of your
    own. ``question_engine`` (default: ``engine``) names the engine whose images the questions
    are for: ``vicogym verify`` replays a Cycles run's seeds on Workbench's fast mask pass
    and must still draw the Cycles run's questions."""

    source: str = "procedural"
    split: str | None = None
    engine: str = "cycles"
    width: int = 320
    height: int = 240
    samples: int = 16
    denoise: bool = False
    render_threads: int = 2
    render_timeout: float = 120.0
    templates: tuple[str, ...] | None = None
    min_objects: int = 3
    max_objects: int = 10
    unasked: tuple[str, ...] = ()
    question_engine: str | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        if not isinstance(self.source, str):
            raise TypeError(f"expected source to be 'procedural' or a folder path, got {self.source!r}")
        if self.source != "procedural" and Path(self.source).is_dir():
            # the run's manifest records it, and verify may run from another folder
            object.__setattr__(self, "source", str(Path(self.source).resolve()))
        if isinstance(self.unasked, str) or not isinstance(self.unasked, (list, tuple)) or \
                not set(self.unasked) <= set(ATTRIBUTES):
            raise ValueError(f"expected unasked as a list of attributes from {list(ATTRIBUTES)}, got {self.unasked!r}")
        object.__setattr__(self, "unasked", tuple(sorted(set(self.unasked))))
        if self.engine not in ENGINES:
            raise ValueError(f"expected engine in {ENGINES}, got {self.engine!r}")
        if self.question_engine is not None and self.question_engine not in ENGINES:
            raise ValueError(f"expected question_engine in {ENGINES}, got {self.question_engine!r}")
        if self.unasked_attributes() == set(ATTRIBUTES):
            raise ValueError(f"every attribute is unasked ({sorted(self.unasked_attributes())}), so no question can "
                             "name an object; leave at least one out of unasked")
        for name, low, high in (("width", 64, 1920), ("height", 48, 1080), ("min_objects", 3, 10),
                                ("max_objects", 3, 10)):
            v = getattr(self, name)
            if not is_int(v, low, high):
                raise ValueError(f"expected {name} to be an integer in [{low}, {high}], got {v!r}")
        if self.min_objects > self.max_objects:
            raise ValueError(f"expected min_objects <= max_objects, got {self.min_objects} > {self.max_objects}")
        if self.templates is not None:
            if isinstance(self.templates, str) or not isinstance(self.templates, (list, tuple)) or not self.templates:
                raise TypeError(f"expected templates as a non-empty list of template ids, got {self.templates!r}")
            unknown = [t for t in self.templates if t not in clevr_programs.TEMPLATE_BY_ID]
            if unknown:
                raise ValueError(f"expected template ids in {sorted(clevr_programs.TEMPLATE_BY_ID)}, got {unknown}")
            object.__setattr__(self, "templates", tuple(self.templates))
        if not is_number(self.render_timeout, finite=False) or self.render_timeout <= 0:
            raise ValueError(f"expected render_timeout as positive seconds, got {self.render_timeout!r}")
        self.render_settings()  # validates samples, denoise, threads

    def render_settings(self) -> RenderSettings:
        return RenderSettings(self.engine, self.samples, self.denoise, self.render_threads)

    def unasked_attributes(self) -> frozenset[str]:
        return frozenset(self.unasked) | UNSHOWN[self.question_engine or self.engine]

    def to_dict(self) -> dict[str, Any]:
        d = super().to_dict()
        d["unasked"] = list(self.unasked)
        if self.templates is not None:
            d["templates"] = list(self.templates)
        return d


class ClevrArm(Arm):
    """The CLEVR arm behind the arm interface (see :class:`vicogym.arm.Arm`)."""

    name = "clevr"
    export = ExportHints(ability="visual_reasoning", prompt_suffix=SHORT_ANSWER)
    error_codes = ERROR_CODES
    op_fields = clevr_editor.OP_FIELDS
    field_schemas = clevr_editor.FIELD_SCHEMAS
    extras = {"bpy": "clevr"}

    def __init__(self, config: ClevrEnvConfig):
        super().__init__(config)
        self.renderer = ClevrRenderer(config.render_settings(), config.render_timeout)
        self.source: Any = None

    def open(self) -> None:
        if self.source is None:
            c = self.config
            self.source = make_source(c.source, c.width, c.height, c.templates, c.split, c.max_tries, c.min_objects,
                                      c.max_objects, c.unasked_attributes())

    def source_summary(self) -> dict[str, Any]:
        self.open()
        return self.source.summary()

    @property
    def image_policy(self) -> ImagePolicy:
        return ImagePolicy("fixed", self.config.height, self.config.width, fill=0)

    def decode(self, text: str, payloads: Mapping[str, bytes] | None = None) -> Scene:
        return Scene.from_dict(json.loads(text))

    def draw_seed(self, rng: np.random.Generator, options: Mapping[str, Any]) -> Seed:
        """A seed whose objects all show (checked on the mask pass before the real render)."""
        self.open()
        if "index" in options:
            if not hasattr(self.source, "seed"):
                raise ValueError("options['index'] picks a question of a CLEVR release folder; the procedural source "
                                 "has none")
            return self.source.seed(int(options["index"]), rng)
        failures: Counter = Counter()
        last: dict[str, str] = {}
        # what the question is to be is drawn once and held over the scenes drawn for it, and the
        # whole check runs here, so that no redraw trades a yes/no answer hard to find for the other
        target = self.source.target(rng, options.get("episode")) if hasattr(self.source, "target") else None
        for attempt in range(self.config.max_tries):
            if attempt == self.config.max_tries // 2 and target is not None:
                target = self.source.widened(target)  # half the draws failed: hold the answer, free the template
            if hasattr(self.source, "scene"):
                scene = self.source.scene(rng)
                try:
                    facts = self.renderer.visibility(scene)
                    clevr_checks.check_visible(scene, facts)
                    return self.source.ask(scene, rng, target=target, accept=_shown(scene, facts))
                except RenderFailed:
                    raise  # Blender itself failed: drawing again would fail again
                except (InvalidEdit, GenerationError) as exc:
                    kind = "an object did not show" if isinstance(exc, InvalidEdit) else "no question could be asked"
                    failures[kind] += 1
                    last[kind] = str(exc)
                    continue
            return self.source.sample(rng)
        reasons = "; ".join(f"{kind} in {n} (last: {last[kind]})" for kind, n in failures.most_common())
        raise GenerationError(f"no CLEVR seed in {self.config.max_tries} draws: {reasons}")

    def apply(self, structure: Scene, edit: Edit, rule: ClevrRule) -> Scene:
        return clevr_editor.apply(structure, edit, rule)

    def relabel(self, structure: Scene, rule: ClevrRule) -> str:
        return clevr_programs.relabel(structure, rule)

    def check_question(self, question: str, rule: ClevrRule, structure: Scene) -> str | None:
        if rule.get("question") != question:
            return f"the program was made for {rule.get('question')!r}"
        try:
            program = clevr_programs.normalize_program(rule["program"])
        except ValueError as exc:
            return f"the stored program is not a CLEVR program: {exc}"
        unseen = clevr_programs.attributes_read(program) & self.config.unasked_attributes()
        if unseen:
            return (f"the program reads {sorted(unseen)}, which {self.config.engine} images do not show; ask about "
                    "something else, or render with engine='cycles'")
        return None

    def render(self, structure: Scene, rng: np.random.Generator) -> Render:
        try:
            out = self.renderer.render(structure, int(rng.integers(2**31)))
        except RenderFailed as exc:
            raise InvalidEdit("render_failed", str(exc)) from None
        return Render(out.image, out)

    @property
    def pixel_tolerance(self) -> int:
        return self.renderer.settings.pixel_tolerance

    def replay_settings(self) -> dict[str, Any]:
        # which seeds are drawn depends on the mask pass alone, which every engine draws alike,
        # and on which attributes questions may read, which the run's engine decides
        return {"engine": "workbench", "question_engine": self.config.question_engine or self.config.engine}

    def validate(self, structure: Scene, render: Render, rule: ClevrRule) -> None:
        clevr_checks.check(structure, render.facts, rule)

    def actor_context(self, sample: Sample, render: Render) -> dict[str, Any]:
        features = clevr_checks.difficulty_features(sample.structure, render.facts, sample.label_rule)
        return {"answer": sample.answer, "features": features, "difficulty": clevr_checks.difficulty(features),
                "distractors": clevr_checks.distractors(sample.answer), "closed": True}

    def score(self, prediction: str, target: str) -> float:
        return exact_match(prediction, target)

    def sample_edit(self, structure: Scene, rule: ClevrRule, rng: np.random.Generator) -> dict[str, Any]:
        """A random edit; for a yes/no question one that keeps its answer (within
        :data:`YES_NO_EDIT_TRIES` x ``max_tries`` proposals): most edits turn a "yes" into a
        "no" (a changed colour breaks an equality or an existence), so edits drawn regardless
        of their answer drift a run's answers to "no", while the seeds' answers are balanced
        over the run (:func:`~vicogym.programs.clevr.draw_target`)."""
        answer = clevr_programs.relabel(structure, rule)
        wanted = answer if answer in ("yes", "no") else None

        def accept(edit: dict[str, Any]) -> bool:
            new = clevr_editor.apply(structure, edit, rule)
            answer = clevr_programs.relabel(new, rule)
            return new != structure and wanted in (None, answer)

        tries = self.config.max_tries * (YES_NO_EDIT_TRIES if wanted else 1)
        return draw_edit(lambda: {"ops": [clevr_editor.sample_op(structure, rng)]}, accept, tries,
                         "CLEVR" if wanted is None else f"CLEVR (answer {wanted!r})")


def _shown(scene: Scene, facts: Any) -> Any:
    """Whether the picture shows what a program on ``scene`` reads (``facts``: its mask pass)."""
    def accept(program: list[Any]) -> bool:
        try:
            clevr_checks.check_question(scene, facts, program)
        except InvalidEdit:
            return False
        return True

    return accept


class ClevrEnv(VicoEnv):
    """
    ## Description

    A CLEVR question whose label is re-derived from the scene graph. The rewriter edits
    the scene (objects' attributes and positions, the camera, the lights); the environment
    keeps CLEVR's placement rules, re-renders the scene with Blender, checks that every
    object shows enough pixels, re-executes the question's functional program, probes the
    actor ``k`` times and rewards edits that put its pass rate in the sweet zone.

    ## Action Space

    ``Text``: an edit as JSON: ``{"ops": [...]}`` or ``{"replace": scene}``. Ops:
    add_object, remove_object, set_color, set_material, set_size, set_shape, move, swap,
    jitter_camera, jitter_lights, stop (see :mod:`vicogym.editors.clevr`).

    ## Observation Space

    ``Dict(image=Box(0, 255, (height, width, 3), uint8), question=Text, structure=Text)``.
    Image policy ``fixed``: Blender renders exactly ``width`` x ``height`` (320 x 240 by
    default), which is also what ``render()`` returns and what is exported. ``structure`` is
    the scene in CLEVR's scene JSON (plus its camera and lights).

    ## Rewards

    A valid edit earns ``f(p)`` of the actor's pass rate ``p`` (band on [0.35, 0.65] by
    default); an invalid edit earns ``invalid_penalty`` (-1) and changes nothing; ``stop``
    earns 0.

    ## Starting State

    A procedural scene (3 to 10 objects, every one at least 200 visible pixels at 480 x
    320, scaled with the resolution, and every one the question reads at least half its
    silhouette) with a templated question from CLEVR's nine families, answers balanced (each
    yes/no template's answer drawn with even odds from the seed, and held); or a scene and
    question from a CLEVR release folder (``source=``).

    ## Episode End

    Terminated by a ``stop`` op; truncated after ``max_turns`` steps (3 by default), valid or
    not: a rejected edit uses a turn too.

    ## Arguments

    ``gymnasium.make("vicogym/CLEVR-v0", source="procedural", engine="cycles", width=320,
    height=240, samples=16, denoise=False, render_timeout=120, templates=None, k=8,
    max_turns=3, ...)``. ``engine="workbench"`` is a fast preview in the objects' colours.
    ``denoise=True`` gives cleaner Cycles images whose bytes may differ by 1 of 255 in a few
    pixels from one process to the next (OpenImageDenoise). Needs the ``[clevr]`` extra
    (``bpy``).

    ## Version History

    - v0: initial release.
    """

    env_id = "vicogym/CLEVR-v0"
    version = 0
    config_class = ClevrEnvConfig
    arm_class = ClevrArm
    #: settings for quick smoke runs (the registry-wide tests): the fast engine, a small image
    smoke_settings = {"engine": "workbench", "width": 160, "height": 120}
