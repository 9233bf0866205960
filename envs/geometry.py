"""``vicogym/Geometry-v0``: edit a plane-geometry diagram, redraw it to scale, recompute its
answer exactly.

:class:`GeometryArm` composes the geometry layers (the construction and its exact
arithmetic, the question programs, the editors, the matplotlib renderer, the drawing
checks, the seed sources) behind the arm interface; :class:`GeometryEnv` is the Gymnasium
environment.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from vicogym.arm import Arm, draw_edit
from vicogym.checks import geometry as geometry_checks
from vicogym.core import Edit, ExportHints, Render, Sample, Seed
from vicogym.editors import geometry as geometry_editor
from vicogym.envs.base import EnvConfig, VicoEnv
from vicogym.errors import InvalidEdit
from vicogym.images import ImagePolicy
from vicogym.programs import geometry as geometry_programs
from vicogym.renderers.geometry import GeometryRenderer, RenderSettings
from vicogym.sources.geometry import LEVELS, PRESENTATIONS, make_source
from vicogym.structures.geometry import ERROR_CODES, Figure, GeometryRule, solve
from vicogym.validation import is_int


def _names(value: Any, name: str, allowed: tuple[Any, ...]) -> tuple[Any, ...]:
    if isinstance(value, (str, int)) or not isinstance(value, (list, tuple)) or not value or \
            not set(value) <= set(allowed):
        raise ValueError(f"expected {name} as a non-empty list of values from {list(allowed)}, got {value!r}")
    return tuple(dict.fromkeys(value))


@dataclass(frozen=True)
class GeometryEnvConfig(EnvConfig):
    """Geometry arm settings. ``source``: ``"procedural"`` or a JSON file of problems
    (docs/geometry.md); ``levels``: reasoning steps (1-5) of the procedural seeds;
    ``families``: question families (default all of
    :data:`~vicogym.programs.geometry.FAMILIES`); ``presentations``: where the givens the
    answer needs are shown (``text``, ``both``, ``diagram``); ``width`` x ``height``: the
    image."""

    source: str = "procedural"
    #: figures drawn per seed before giving up: the drawing checks refuse more figures than
    #: other arms' checks do (an angle value in a cut angle, a point near a line it is not on)
    max_tries: int = 48
    levels: tuple[int, ...] = LEVELS
    families: tuple[str, ...] | None = None
    presentations: tuple[str, ...] = PRESENTATIONS
    width: int = 448
    height: int = 448

    def __post_init__(self) -> None:
        super().__post_init__()
        if not isinstance(self.source, str) or not self.source:
            raise TypeError(f"expected source as 'procedural' or a .json file of problems, got {self.source!r}")
        if self.source != "procedural" and Path(self.source).is_file():
            object.__setattr__(self, "source", str(Path(self.source).resolve()))  # verify may run elsewhere
        object.__setattr__(self, "levels", _names(self.levels, "levels", LEVELS))
        object.__setattr__(self, "presentations", _names(self.presentations, "presentations", PRESENTATIONS))
        if self.families is not None:
            object.__setattr__(self, "families", _names(self.families, "families", geometry_programs.FAMILIES))
        for name, low, high in (("width", 192, 2048), ("height", 192, 2048)):
            v = getattr(self, name)
            if not is_int(v, low, high):
                raise ValueError(f"expected {name} to be an integer in [{low}, {high}], got {v!r}")

    def to_dict(self) -> dict[str, Any]:
        d = super().to_dict()
        for name in ("levels", "presentations", "families"):
            if d[name] is not None:
                d[name] = list(d[name])
        return d


class GeometryArm(Arm):
    """The geometry arm behind the arm interface (see :class:`vicogym.arm.Arm`)."""

    name = "geometry"
    export = ExportHints(ability="geometry")
    error_codes = ERROR_CODES
    op_fields = geometry_editor.OP_FIELDS
    field_schemas = geometry_editor.FIELD_SCHEMAS

    def __init__(self, config: GeometryEnvConfig):
        super().__init__(config)
        self.renderer = GeometryRenderer(RenderSettings(width=config.width, height=config.height))
        self.source: Any = None

    def open(self) -> None:
        if self.source is None:
            c = self.config
            self.source = make_source(c.source, c.levels, c.families, c.presentations, c.max_tries)

    @property
    def image_policy(self) -> ImagePolicy:
        return ImagePolicy("fixed", self.config.height, self.config.width, fill=255)

    def decode(self, text: str, payloads: Mapping[str, bytes] | None = None) -> Figure:
        return Figure.from_dict(json.loads(text))

    def draw_seed(self, rng: np.random.Generator, options: Mapping[str, Any]) -> Seed:
        self.open()
        if "index" in options:
            if not hasattr(self.source, "problem"):
                raise ValueError("options['index'] picks a problem of a problems file; the procedural source has none")
            problem = self.source.problem(int(options["index"]))
        else:
            problem = self.source.draw(rng, int(options.get("episode", 0)))
        rule = dict(problem.rule)
        answer = geometry_programs.relabel(problem.figure, rule)
        kind = "procedural" if self.config.source == "procedural" else "file"
        return Seed(problem.figure, rule["question"], answer, rule, kind, problem.source_id)

    def seed_variants(self, seed: Seed) -> list[Seed]:
        """The seed as drawn, then the same figure drawn plainer when it does not pass the
        drawing checks: filling more of the canvas, then also with smaller text (never under
        the legible size, which the checks hold), then turned a quarter (where names find
        room); the construction, the question and the answer stay."""
        figure = seed.structure
        out = [seed]
        for changes in ({"scale": 0.92}, {"scale": 0.92, "font_size": 9.5},
                        {"scale": 0.92, "font_size": 9.5, "rotation": (figure.style.rotation + 90 + 180) % 360 - 180}):
            style = replace(figure.style, **changes)
            if style != figure.style and all(v.structure.style != style for v in out):
                out.append(replace(seed, structure=replace(figure, style=style)))
        return out

    def apply(self, structure: Figure, edit: Edit, rule: GeometryRule) -> Figure:
        return geometry_editor.apply(structure, edit, rule)

    def relabel(self, structure: Figure, rule: GeometryRule) -> str:
        return geometry_programs.relabel(structure, rule)

    def check_question(self, question: str, rule: GeometryRule, structure: Figure) -> str | None:
        return geometry_programs.check_question(question, rule, structure)

    def screen(self, structure: Figure, rule: GeometryRule) -> None:
        missing = geometry_programs.unstated(rule, structure, solve(structure))
        if missing:
            raise InvalidEdit("unstated", f"the answer needs {missing}, which neither the text nor the diagram shows")

    def render(self, structure: Figure, rng: np.random.Generator) -> Render:
        image, facts = self.renderer.render(structure, solve(structure))
        return Render(image, facts)

    def validate(self, structure: Figure, render: Render, rule: GeometryRule) -> None:
        self.screen(structure, rule)
        geometry_checks.check_drawing(structure, solve(structure), render.facts, render.image,
                                      geometry_programs.asked_angles(rule))

    def features(self, structure: Figure, render: Render, rule: GeometryRule) -> dict[str, Any]:
        solved = solve(structure)
        return geometry_checks.difficulty_features(
            structure, render.facts, geometry_programs.reasoning_steps(rule, structure),
            geometry_programs.needed_givens(rule, structure, solved), frozenset(rule.get("text", [])))

    def actor_context(self, sample: Sample, render: Render) -> dict[str, Any]:
        features = self.features(sample.structure, render, sample.label_rule)
        rule = sample.label_rule
        if rule["kind"] in ("length", "perimeter", "area", "ratio", "arc", "angle"):
            features["answer_terms"] = geometry_programs.answer_terms(sample.answer)
        if rule["kind"] == "choice":
            distractors = [c for c in "ABCD" if c != sample.answer]
        elif rule["kind"] == "relation":
            distractors = ["No" if sample.answer == "Yes" else "Yes"]
        else:
            distractors = geometry_programs.wrong_answers(sample.structure, rule)
        return {"answer": sample.answer, "features": features, "difficulty": geometry_checks.difficulty(features),
                "distractors": distractors, "closed": bool(distractors)}

    def score(self, prediction: str, target: str) -> float:
        return geometry_programs.score(prediction, target)

    def sample_edit(self, structure: Figure, rule: GeometryRule, rng: np.random.Generator) -> dict[str, Any]:
        def accept(edit: dict[str, Any]) -> bool:
            return geometry_editor.apply(structure, edit, rule) != structure

        return draw_edit(lambda: {"ops": [geometry_editor.sample_op(structure, rule, rng)]}, accept,
                         self.config.max_tries, "geometry")

    def close(self) -> None:
        self.renderer.close()


class GeometryEnv(VicoEnv):
    """
    ## Description

    A plane-geometry question (Geometry3K / MathVerse style) whose answer is computed
    exactly from the figure's construction: points, segments, rays, lines, circles and
    arcs built from givens (lengths, angles in multiples of 15 degrees, midpoints,
    perpendiculars, parallels, tangents, inscribed and circumscribed circles), solved in the
    field of surds. The rewriter edits the figure (a given's value, where a point lies, an
    auxiliary construction, a distractor element, a point's name, which givens the diagram
    shows, the style); the environment re-solves the construction, redraws the diagram to
    scale with matplotlib, checks that a reader can read it (no label over a line or another
    label, text at least Tesseract's legible size, no angle under 10 degrees, the drawing
    agreeing with the givens within a pixel) and that every given the answer needs is in the
    text or on the diagram, recomputes the answer, probes the actor ``k`` times and rewards
    edits that put its pass rate in the sweet zone.

    ## Action Space

    ``Text``: an edit as JSON: ``{"ops": [...]}`` or ``{"replace": figure}``. Ops:
    set_given, move_point, add_step, remove_step, add_element, remove_element, relabel, show,
    hide, style, stop (see :mod:`vicogym.editors.geometry`).

    ## Observation Space

    ``Dict(image=Box(0, 255, (height, width, 3), uint8), question=Text, structure=Text)``.
    Image policy ``fixed``: the renderer draws exactly ``width`` x ``height`` (448 x 448 by
    default). ``structure`` is the figure's JSON (steps, draw, diagram, style).

    ## Rewards

    A valid edit earns ``f(p)`` of the actor's pass rate ``p`` (band on [0.35, 0.65] by
    default); an invalid edit earns ``invalid_penalty`` (-1) and changes nothing; ``stop``
    earns 0.

    ## Starting State

    A procedural problem of 1 to 5 reasoning steps (``levels``) from one of nine question
    families (angle, length, perimeter, area, ratio, arc or sector, count of triangles, a
    yes/no relation, multiple choice with computed distractors), with the givens the answer
    needs in the text, in the text and on the diagram, or on the diagram only
    (``presentations``); or a problem of a JSON file (``source=``, docs/geometry.md).

    ## Episode End

    Terminated by a ``stop`` op; truncated after ``max_turns`` steps (3 by default), valid or
    not: a rejected edit uses a turn too.

    ## Arguments

    ``gymnasium.make("vicogym/Geometry-v0", source="procedural", levels=[1, 2, 3, 4, 5],
    families=None, presentations=["text", "both", "diagram"], width=448, height=448, k=8,
    max_turns=3, ...)``.

    ## Version History

    - v0: initial release.
    """

    env_id = "vicogym/Geometry-v0"
    version = 0
    config_class = GeometryEnvConfig
    arm_class = GeometryArm
    #: settings for quick smoke runs (the registry-wide tests)
    smoke_settings = {"width": 320, "height": 320}
