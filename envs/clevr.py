"""``vicogym/CLEVR-v0``: edit a CLEVR scene, re-render it with Blender, re-execute the
question's functional program.

:class:`ClevrArm` composes the CLEVR layers (scene structure, program executor and
templates, editors, Blender renderer, sources) behind the arm interface; :class:`ClevrEnv`
is the Gymnasium environment.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

import numpy as np

from vicogym.answers import exact_match
from vicogym.arm import Arm, draw_edit
from vicogym.core import SHORT_ANSWER, Edit, ExportHints, Render, Sample, Seed
from vicogym.editors import clevr as clevr_editor
from vicogym.envs.base import EnvConfig, VicoEnv
from vicogym.errors import GenerationError, InvalidEdit
from vicogym.images import ImagePolicy
from vicogym.programs import clevr as clevr_programs
from vicogym.renderers.clevr import ENGINES, ClevrRender, ClevrRenderer, RenderFailed, RenderSettings
from vicogym.sources.clevr import make_source
from vicogym.structures.clevr import ATTRIBUTES, ERROR_CODES, MAX_OBJECTS, Scene

#: CLEVR's visibility rule: 200 visible pixels at 480 x 320, scaled with the image's area
MIN_PIXELS_AT_480x320 = 200
#: left/right needs this share of the image width between the objects (6 px at 320)
RELATION_SHARE = 0.02
#: what each engine's images cannot show, so that no question reads it
UNSHOWN = {"cycles": frozenset(), "workbench": frozenset({"material"})}
#: colour pairs a reader confuses more easily
SIMILAR_COLORS = {frozenset(p) for p in (("red", "brown"), ("blue", "purple"), ("cyan", "blue"), ("gray", "brown"),
                                         ("green", "cyan"), ("yellow", "brown"))}


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
            if isinstance(v, bool) or not isinstance(v, int) or not low <= v <= high:
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
        if isinstance(self.render_timeout, bool) or not isinstance(self.render_timeout, (int, float)) or \
                self.render_timeout <= 0:
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


def relation_px(width: int) -> float:
    """How far apart across the image two objects must be for a reader to call left/right."""
    return max(3.0, RELATION_SHARE * width)


def min_pixels(width: int, height: int) -> int:
    return max(1, round(MIN_PIXELS_AT_480x320 * width * height / (480 * 320)))


def difficulty_features(scene: Scene, render: ClevrRender, rule: Mapping[str, Any]) -> dict[str, Any]:
    """Visual difficulty features of a CLEVR question on a rendered scene.

    - ``n_objects``: objects in the scene;
    - ``occluded``: share of the asked objects (those the program singles out or counts)
      showing under three times the minimum visible pixels;
    - ``small``, ``metal``: shares of the asked objects that are small, or metal;
    - ``similar_colors``: asked objects whose colour is easily confused with another
      object's in the scene (red/brown, blue/purple ...);
    - ``program_length``: nodes in the program; ``hops``: its relate steps.
    """
    program = rule["program"]
    try:
        asked = clevr_programs.asked_objects(scene, program)
    except InvalidEdit:
        asked = []
    floor = min_pixels(scene.width, scene.height)
    share = (lambda test: sum(test(i) for i in asked) / len(asked)) if asked else (lambda test: 0.0)  # noqa: E731
    colors = [o.color for o in scene.objects]
    return {
        "n_objects": len(scene.objects),
        "occluded": share(lambda i: render.visible[i] < 3 * floor),
        "small": share(lambda i: scene.objects[i].size == "small"),
        "metal": share(lambda i: scene.objects[i].material == "metal"),
        "similar_colors": share(lambda i: any(frozenset((colors[i], c)) in SIMILAR_COLORS for c in colors)),
        "program_length": len(program),
        "hops": sum(node["function"] == "relate" for node in program),
    }


def difficulty(features: Mapping[str, Any]) -> float:
    """One number from :func:`difficulty_features` (the simulated actor is right half of
    the time at its skill, 2.0 by default)."""
    return (0.08 * features["n_objects"] + 1.2 * features["occluded"] + 0.5 * features["small"]
            + 0.3 * features["metal"] + 0.5 * features["similar_colors"] + 0.06 * features["program_length"]
            + 0.35 * features["hops"])


class ClevrArm(Arm):
    """The CLEVR arm behind the arm interface (see :class:`vicogym.arm.Arm`)."""

    name = "clevr"
    export = ExportHints(ability="visual_reasoning", prompt_suffix=SHORT_ANSWER)
    error_codes = ERROR_CODES
    op_fields = clevr_editor.OP_FIELDS
    field_schemas = {
        "object": {"type": "integer", "minimum": 0, "description": "an object's index in the scene"},
        "a": {"type": "integer", "minimum": 0}, "b": {"type": "integer", "minimum": 0},
        "shape": {"enum": list(ATTRIBUTES["shape"])}, "color": {"enum": list(ATTRIBUTES["color"])},
        "material": {"enum": list(ATTRIBUTES["material"])}, "size": {"enum": list(ATTRIBUTES["size"])},
        **{f: {"type": "number"} for f in ("x", "y", "rotation", "dx", "dy", "dz", "intensity")},
        **{f: {"type": "array", "items": {"type": "number"}, "minItems": 3, "maxItems": 3} for f in ("key", "fill", "back")},
    }
    extras = {"bpy": "clevr"}

    def __init__(self, config: ClevrEnvConfig):
        super().__init__(config)
        self.renderer = ClevrRenderer(config.render_settings(), config.render_timeout)
        self.source: Any = None
        self.min_pixels = min_pixels(config.width, config.height)

    def open(self) -> None:
        if self.source is None:
            c = self.config
            self.source = make_source(c.source, c.width, c.height, c.templates, c.split, c.max_tries, c.min_objects,
                                      c.max_objects, c.unasked_attributes())

    def report(self) -> dict[str, Any]:
        self.open()
        return self.source.report()

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
        for _ in range(self.config.max_tries):
            if hasattr(self.source, "scene"):
                scene = self.source.scene(rng)
                try:
                    self._check_visible(scene, self.renderer.visibility(scene))
                    return self.source.ask(scene, rng)
                except (InvalidEdit, GenerationError) as exc:
                    kind = "an object did not show" if isinstance(exc, InvalidEdit) else "no question could be asked"
                    failures[kind] += 1
                    last[kind] = str(exc)
                    continue
            return self.source.sample(rng)
        reasons = "; ".join(f"{kind} in {n} (last: {last[kind]})" for kind, n in failures.most_common())
        raise GenerationError(f"no CLEVR seed in {self.config.max_tries} draws: {reasons}")

    def apply(self, structure: Scene, edit: Edit, rule: Mapping[str, Any]) -> Scene:
        return clevr_editor.apply(structure, edit, rule)

    def relabel(self, structure: Scene, rule: Mapping[str, Any]) -> str:
        return clevr_programs.relabel(structure, rule)

    def check_question(self, question: str, rule: Mapping[str, Any], structure: Scene) -> str | None:
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

    def validate(self, structure: Scene, render: Render, rule: Mapping[str, Any]) -> None:
        self._check_visible(structure, render.facts)
        problem = clevr_programs.relation_problem(structure, rule["program"], relation_px(structure.width))
        if problem is not None:
            raise InvalidEdit("relation_unseen", f"{problem}; move one of them")

    def _check_visible(self, scene: Scene, facts: ClevrRender) -> None:
        for k, (obj, pixel) in enumerate(zip(scene.objects, scene.pixel_coords())):
            name = f"object {k} (the {obj.size} {obj.color} {obj.material} {obj.shape})"
            x, y, depth = pixel
            if facts.at_edge[k] or depth <= 0 or not (0 <= x < scene.width and 0 <= y < scene.height):
                raise InvalidEdit("out_of_frame", f"{name} is partly or wholly outside the image; move it towards the "
                                  f"middle of the floor", field="object")
            if facts.visible[k] < self.min_pixels:
                raise InvalidEdit("hidden", f"{name} shows {facts.visible[k]} pixels, fewer than the {self.min_pixels} a "
                                  f"reader needs; move it or the objects in front of it", field="object")

    def actor_context(self, sample: Sample, render: Render) -> dict[str, Any]:
        features = difficulty_features(sample.structure, render.facts, sample.label_rule)
        return {"answer": sample.answer, "features": features, "difficulty": difficulty(features),
                "distractors": distractors(sample.answer), "closed": True}

    def score(self, prediction: str, target: str) -> float:
        return exact_match(prediction, target)

    def sample_edit(self, structure: Scene, rule: Mapping[str, Any], rng: np.random.Generator) -> dict[str, Any]:
        def accept(edit: dict[str, Any]) -> bool:
            new = clevr_editor.apply(structure, edit, rule)
            clevr_programs.relabel(new, rule)
            return new != structure

        return draw_edit(lambda: {"ops": [clevr_editor.sample_op(structure, rng)]}, accept, self.config.max_tries,
                         "CLEVR")


def distractors(answer: str) -> list[str]:
    """Plausible wrong answers of the answer's kind: the other polarity, a count one or two
    off, another value of the queried attribute."""
    if answer in ("yes", "no"):
        return ["no" if answer == "yes" else "yes"]
    if answer.isdigit():
        n = int(answer)
        return [str(m) for m in (n - 2, n - 1, n + 1, n + 2) if 0 <= m <= MAX_OBJECTS]
    values = next((v for v in ATTRIBUTES.values() if answer in v), ())
    return [v for v in values if v != answer]


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
    320, scaled with the resolution) with a templated question from CLEVR's nine families,
    answers balanced; or a scene and question from a CLEVR release folder (``source=``).

    ## Episode End

    Terminated by a ``stop`` op; truncated after ``max_turns`` steps (valid or not).

    ## Arguments

    ``gymnasium.make("vicogym/CLEVR-v0", source="procedural", engine="cycles", width=320,
    height=240, samples=16, denoise=False, render_timeout=120, templates=None, k=8,
    max_turns=4, ...)``. ``engine="workbench"`` is a fast preview in the objects' colours.
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
