"""Seed samples of the CLEVR arm: a procedural scene sampler and a loader of CLEVR's release.

The sampler draws scenes with CLEVR's properties (8 colours, 2 materials, 3 shapes, 2 sizes,
3 to 10 objects placed by CLEVR's spacing and margin rules, camera and lights jittered)
and asks a templated question (:mod:`vicogym.programs.clevr`). Whether every object shows
enough pixels is checked on the render by the arm.

The loader reads a folder in CLEVR's release layout: ``scenes/CLEVR_<split>_scenes.json``,
``questions/CLEVR_<split>_questions.json`` (optional: without it, the templates ask the
questions) and ``images/<split>/`` (not needed: scenes are drawn again). Programs load in
either spelling; every question's stored answer is reproduced by the executor on its scene
before the question is used, and one that does not reproduce is counted and skipped, as is
one that reads size in a scene whose picture does not tell large from small (at the
environment's resolution, through the scene's camera: ``size_unseen``).
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from vicogym.core import Seed, canonical_json
from vicogym.errors import GenerationError, InvalidEdit, SourceError
from vicogym.programs.clevr import (
    Target,
    answer_text,
    attributes_read,
    draw_target,
    execute,
    generate_question,
    normalize_program,
    program_rule,
    size_unseen,
    widened,
)
from vicogym.sources import _safe, contained, inside, one_line, parse_json, place, read_text, source_path
from vicogym.structures.clevr import ATTRIBUTES, MAX_OBJECTS, MIN_OBJECTS, Camera, Lights, Obj, Scene, free_spot
from vicogym.validation import is_int

CAMERA_JITTER = 0.5
LIGHT_JITTER = 1.0
PLACEMENT_TRIES = 50


def procedural_scene(rng: np.random.Generator, width: int, height: int, min_objects: int = 3,
                     max_objects: int = 10, max_tries: int = 16) -> Scene:
    """A random scene that keeps CLEVR's placement rules (bounded: ``max_tries`` scenes of
    up to :data:`PLACEMENT_TRIES` positions per object)."""
    for _ in range(max_tries):
        base = Camera()
        camera = Camera(tuple(round(float(c + d), 4) for c, d in zip(base.location, rng.uniform(-CAMERA_JITTER,
                                                                                                 CAMERA_JITTER, 3))),
                        base.rotation, base.lens, base.sensor)
        lights = Lights(*(tuple(round(float(v), 3) for v in rng.uniform(-LIGHT_JITTER, LIGHT_JITTER, 3))
                          for _ in range(3)))
        scene = Scene((), camera, lights, width=width, height=height)
        n = int(rng.integers(min_objects, max_objects + 1))
        while len(scene.objects) < n:
            size = ("large", "small")[int(rng.integers(2))]
            spot = free_spot(scene, size, rng, tries=PLACEMENT_TRIES)
            if spot is None:
                break
            obj = Obj(ATTRIBUTES["shape"][int(rng.integers(3))], ATTRIBUTES["color"][int(rng.integers(8))],
                      ATTRIBUTES["material"][int(rng.integers(2))], size, spot[0], spot[1],
                      round(float(rng.uniform(0, 360)), 2))
            scene = scene.with_objects(scene.objects + (obj,))
        if len(scene.objects) == n:
            return scene
    raise GenerationError(f"no CLEVR scene of {min_objects}-{max_objects} objects placed in {max_tries} tries")


def scene_id(scene: Scene, rule: Mapping[str, Any]) -> str:
    return hashlib.sha256(canonical_json([scene.to_dict(), rule]).encode()).hexdigest()[:12]


class ProceduralSource:
    """Scenes from the sampler, questions from the templates."""

    def __init__(self, width: int, height: int, templates: tuple[str, ...] | None = None, min_objects: int = 3,
                 max_objects: int = 10, max_tries: int = 16, unasked: frozenset[str] = frozenset()):
        self.width, self.height, self.templates = width, height, templates
        self.min_objects, self.max_objects, self.max_tries = min_objects, max_objects, max_tries
        self.unasked = unasked

    def scene(self, rng: np.random.Generator) -> Scene:
        return procedural_scene(rng, self.width, self.height, self.min_objects, self.max_objects, self.max_tries)

    def target(self, rng: np.random.Generator, episode: int | None = None) -> Target:
        """What one sample's question is to be (:func:`~vicogym.programs.clevr.draw_target`,
        stratified over a run by the ``episode`` index where one is given): draw it once per
        sample and hold it over the scenes drawn for it."""
        return draw_target(rng, self.templates, self.unasked, episode)

    def widened(self, target: Target) -> Target:
        """``target`` with its answer held and its template free
        (:func:`~vicogym.programs.clevr.widened`)."""
        return widened(target, self.templates, self.unasked)

    def ask(self, scene: Scene, rng: np.random.Generator, source: str = "procedural",
            source_id: str | None = None, target: Target | None = None,
            accept: Callable[[list[Any]], bool] | None = None) -> Seed:
        """A question about ``scene`` for ``target`` (drawn here when not given) whose program
        ``accept`` takes (any when not given)."""
        target = self.target(rng) if target is None else target
        question, rule, answer = generate_question(scene, rng, self.templates, self.max_tries * 2, self.unasked,
                                                   target, accept)
        return Seed(scene, question, answer, rule, source, source_id or f"procedural-{scene_id(scene, rule)}")

    def summary(self) -> dict[str, Any]:
        return {"procedural": True}


class ReleaseSource:
    """Seeds from a folder in CLEVR's release layout (see the module notes)."""

    def __init__(self, folder: str | Path, width: int, height: int, split: str | None = None,
                 templates: tuple[str, ...] | None = None, max_tries: int = 16, unasked: frozenset[str] = frozenset()):
        self.folder = Path(folder)
        scenes_dir = contained(self.folder, self.folder / "scenes", place(self.folder), "scenes folder")
        files = sorted(scenes_dir.glob("CLEVR_*_scenes.json")) if scenes_dir.is_dir() else []
        if not files:
            raise SourceError(f"expected a CLEVR folder with scenes/CLEVR_<split>_scenes.json, got "
                              f"{place(self.folder)}")
        splits = [f.name[len("CLEVR_"):-len("_scenes.json")] for f in files]
        shown = place(self.folder / "scenes")
        if split is None:
            if len(splits) > 1:
                raise SourceError(f"{shown} holds the splits {_safe(splits)}; choose one with split=...")
            split = splits[0]
        if split not in splits:
            raise SourceError(f"{shown} has no CLEVR_{_safe(split)}_scenes.json; it has the splits {_safe(splits)}")
        self.split = split
        self.unasked = unasked
        self.procedural = ProceduralSource(width, height, templates, max_tries=max_tries, unasked=unasked)
        scenes = inside(self.folder, f"CLEVR_{split}_scenes.json", shown, "scenes file", under="scenes")
        self.scenes = self._load_scenes(scenes, place(self.folder / "scenes" / f"CLEVR_{split}_scenes.json"), width,
                                        height)
        self.skipped: Counter = Counter()
        questions = inside(self.folder, f"CLEVR_{split}_questions.json", place(self.folder), "questions file",
                           under="questions")
        self.questions = self._load_questions(questions, place(self.folder / "questions" /
                                                               f"CLEVR_{split}_questions.json"))
        if not self.scenes:
            raise SourceError(f"{place(self.folder / 'scenes' / f'CLEVR_{split}_scenes.json')} holds no usable scene")

    def _load_scenes(self, file: Path, path: str, width: int, height: int) -> dict[int, Scene]:
        """The scenes of ``file`` (resolved inside the folder; ``path``: its name in errors)."""
        data = parse_json(read_text(file, what="scenes file"), path)
        if not isinstance(data, Mapping) or not isinstance(data.get("scenes"), list):
            raise SourceError(f"{path}: expected {{\"info\": ..., \"scenes\": [...]}}")
        scenes = {}
        for k, raw in enumerate(data["scenes"]):
            try:
                objects = raw.get("objects") if isinstance(raw, Mapping) else None
                if isinstance(objects, list) and not MIN_OBJECTS <= len(objects) <= MAX_OBJECTS:  # before reading any
                    raise ValueError(f"a CLEVR scene holds {MIN_OBJECTS}-{MAX_OBJECTS} objects, this one has "
                                     f"{len(objects)}")
                scene = Scene.from_dict(raw, width, height)
                index = raw.get("image_index", k)
                if not is_int(index, 0):
                    raise ValueError(f"image_index must be a whole number, got {index!r}")
            except (TypeError, ValueError, KeyError, IndexError, ArithmeticError, AttributeError) as exc:
                raise SourceError(one_line(f"{path}: scenes[{k}] is not a CLEVR scene ({str(exc)[:300]})")) from None
            scenes[int(index)] = scene
        return scenes

    def _load_questions(self, file: Path, path: str) -> list[tuple[int, str, dict[str, Any], str, int]]:
        """(image_index, question, rule, answer, position) for every question of ``file``
        (resolved inside the folder; ``path``: its name in errors) whose stored answer the
        executor reproduces on its scene."""
        if not file.exists():
            return []
        data = parse_json(read_text(file, what="questions file"), path)
        if not isinstance(data, Mapping) or not isinstance(data.get("questions"), list):
            raise SourceError(f"{path}: expected {{\"info\": ..., \"questions\": [...]}}")
        kept = []
        for k, q in enumerate(data["questions"]):
            if not isinstance(q, Mapping) or not {"question", "program", "answer", "image_index"} <= set(q):
                raise SourceError(f"{path}: questions[{k}] needs question, program, answer and image_index")
            index = q["image_index"]
            if not is_int(index):
                raise SourceError(f"{path}: questions[{k}].image_index must be an integer, got {_safe(index)[:80]}")
            if not isinstance(q["question"], str):
                raise SourceError(f"{path}: questions[{k}].question must be a string, got {_safe(q['question'])[:80]}")
            try:
                stored = answer_text(q["answer"]).strip().lower()
            except (ValueError, TypeError) as exc:
                raise SourceError(one_line(f"{path}: questions[{k}].answer: {str(exc)[:300]}")) from None
            scene = self.scenes.get(index)
            if scene is None:
                self.skipped["no_scene"] += 1
                continue
            try:
                program = normalize_program(q["program"])
                answer = answer_text(execute(scene, program))
            except (ValueError, TypeError, KeyError, IndexError, ArithmeticError, RecursionError):
                self.skipped["malformed_program"] += 1
                continue
            except InvalidEdit:
                self.skipped["no_answer"] += 1
                continue
            if answer != stored:
                self.skipped["answer_not_reproduced"] += 1
                continue
            if attributes_read(program) & self.unasked:
                self.skipped["reads_what_the_engine_does_not_show"] += 1
                continue
            if size_unseen(scene, program) is not None:
                self.skipped["size_unseen"] += 1
                continue
            kept.append((index, str(q["question"]), program_rule(program, str(q["question"])), answer, k))
        if data["questions"] and not kept:
            raise SourceError(f"{path}: none of its {len(data['questions'])} questions can be used "
                              f"(skipped: {dict(self.skipped)}); fix the file, or remove it to have the "
                              "templates ask questions about these scenes")
        return kept

    def summary(self) -> dict[str, Any]:
        return {"scenes": len(self.scenes), "questions_used": len(self.questions),
                "questions_skipped": dict(self.skipped), "split": self.split}

    def seed(self, index: int, rng: np.random.Generator) -> Seed:
        if self.questions:
            if not 0 <= index < len(self.questions):
                raise ValueError(f"expected a question index in [0, {len(self.questions)}), got {index}")
            image_index, question, rule, answer, position = self.questions[index]
            return Seed(self.scenes[image_index], question, answer, rule, "clevr",
                        f"CLEVR_{self.split}_questions.json#{position}")
        keys = sorted(self.scenes)
        if not 0 <= index < len(keys):
            raise ValueError(f"expected a scene index in [0, {len(keys)}), got {index}")
        return self.procedural.ask(self.scenes[keys[index]], rng, "clevr",
                                   f"CLEVR_{self.split}_scenes.json#{keys[index]}")

    def sample(self, rng: np.random.Generator) -> Seed:
        count = len(self.questions) if self.questions else len(self.scenes)
        return self.seed(int(rng.integers(count)), rng)


def make_source(source: str, width: int, height: int, templates: tuple[str, ...] | None = None,
                split: str | None = None, max_tries: int = 16, min_objects: int = 3, max_objects: int = 10,
                unasked: frozenset[str] = frozenset()) -> ProceduralSource | ReleaseSource:
    """The source named by ``source``. ``unasked``: attributes no question may read (the
    images do not show them)."""
    if source == "procedural":
        if split is not None:
            raise SourceError(f"split={split!r} chooses among a CLEVR folder's splits; the procedural source has "
                              "none (drop split, or pass source=<folder>)")
        return ProceduralSource(width, height, templates, min_objects, max_objects, max_tries, unasked)
    expected = "'procedural' or a CLEVR release folder (scenes/, questions/)"
    path, kind = source_path(source, expected)
    if kind == "folder":
        return ReleaseSource(path, width, height, split, templates, max_tries, unasked)
    raise SourceError(f"expected source {expected}, got {_safe(source)}"
                      + (", which does not exist" if kind == "none" else ", which is no folder"))


__all__ = ["ProceduralSource", "ReleaseSource", "make_source", "procedural_scene"]
