"""The ``clevr_sequence`` family (video-like): frames of one CLEVR scene under a sequence of
edits, and a question about what changed between them.

The initial scene is the CLEVR arm's procedural one (:func:`~vicogym.sources.clevr.procedural_scene`:
CLEVR's camera, lights and placement rules); each later frame is the scene after one more
edit, an op in the CLEVR editor's spelling (``move``, ``add_object``, ``remove_object``,
``set_color``; an added object is never removed again, so "added between frame i and j"
means one thing). Each frame is one unit (``Frame k``, a raster at ``max_scale`` 1.0), and
the executor starts from a sheet of all of them. Questions (one kind drawn per task, then
one of the questions of that kind the sequence answers; see
:mod:`vicogym.programs.evidence.clevr_sequence`): which object moved between frame i and j, how
many objects were added or removed between them, what colour an object became, which
frame first shows an object. The answer is derived from the initial scene and the edits
alone (``meta``: ``initial``, ``edits``, ``question``), and the evidence is every object
the answer depends on (:class:`~vicogym.programs.evidence.clevr_sequence.Derived`: for a count
of added or removed objects every object of both frames compared, for a first frame every
object of the frames before it).

Every change must be seen: each frame's objects all show (the projection screen of
:func:`vicogym.sources.evidence.clevr_detail.estimate`, then the render's mask pass in
:mod:`vicogym.checks.evidence.clevr_sequence`), and a moved object's boxes before and after do not
overlap. A question or answer that names a size (which object moved, the object of a
recolour or first-frame question) comes only from frames that all tell large from small
(:func:`~vicogym.structures.clevr.size_problem`). Frames are drawn by the renderer's
``prepare``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

import numpy as np

from vicogym.core import canonical_json
from vicogym.errors import GenerationError, InvalidEdit
from vicogym.programs.evidence import clevr_sequence as programs
from vicogym.sources.clevr import procedural_scene
from vicogym.sources.evidence.clevr_detail import ENGINE_UNSHOWN, SCREEN_MARGIN, Estimate, estimate, shown
from vicogym.structures.clevr import ATTRIBUTES, MAX_OBJECTS, MIN_OBJECTS, free_spot, size_problem
from vicogym.structures.evidence import LEGIBLE_OBJECT_PX, Task, Unit
from vicogym.validation import did_you_mean, is_int, pick

DEFAULTS: dict[str, Any] = {
    "width": 640,
    "height": 480,
    "engine": "workbench",
    "samples": 16,
    "min_frames": 4,
    "max_frames": 6,
    "min_objects": 4,
    "max_objects": 7,
    "kinds": list(programs.KINDS),
    "view_size": 768,  # the environment's view_size
    "max_tries": 24,
}
EXTRAS = ("bpy",)
MAX_FRAMES = 8
#: the op each question kind needs at least once
NEEDS = {"moved": ("move",), "added": ("add_object",), "removed": ("remove_object",), "recolor": ("set_color",),
         "first_frame": ("add_object", "set_color")}
#: the kinds whose questions or answers name sizes (full descriptions): their frames must
#: all tell large from small
SIZED_KINDS = ("moved", "recolor", "first_frame")
#: how often each op is drawn for the other steps
OP_WEIGHTS = {"move": 0.35, "add_object": 0.2, "remove_object": 0.2, "set_color": 0.25}
OP_TRIES = 20
#: CLEVR's visibility floor (``checks.clevr``: 200 visible pixels at 480 x 320, scaled with the
#: image's area), restated for the screen (a source may not import the checks)
MIN_PIXELS_AT_480x320 = 200


def check_settings(settings: Mapping[str, Any]) -> None:
    """``ValueError`` naming the setting to change."""
    unknown = sorted(set(settings) - set(DEFAULTS))
    if unknown:
        raise ValueError(f"clevr_sequence has no setting {unknown[0]!r}{did_you_mean(unknown[0], DEFAULTS)}")
    for name, low, high in (("width", 64, 1920), ("height", 48, 1080), ("samples", 1, 4096),
                            ("min_frames", 2, MAX_FRAMES), ("max_frames", 2, MAX_FRAMES),
                            ("min_objects", MIN_OBJECTS + 1, MAX_OBJECTS - 1),
                            ("max_objects", MIN_OBJECTS + 1, MAX_OBJECTS - 1), ("view_size", 64, 4096),
                            ("max_tries", 1, 1000)):
        if not is_int(settings[name], low, high):
            raise ValueError(f"expected clevr_sequence {name} as an integer in [{low}, {high}], got "
                             f"{settings[name]!r}")
    for low, high in (("min_frames", "max_frames"), ("min_objects", "max_objects")):
        if settings[low] > settings[high]:
            raise ValueError(f"expected {low} <= {high}, got {settings[low]} > {settings[high]}")
    if settings["engine"] not in ENGINE_UNSHOWN:
        raise ValueError(f"expected engine in {sorted(ENGINE_UNSHOWN)}, got {settings['engine']!r}")
    kinds = settings["kinds"]
    if isinstance(kinds, str) or not isinstance(kinds, (list, tuple)) or not kinds or not set(kinds) <= set(
            programs.KINDS):
        raise ValueError(f"expected kinds as a non-empty list from {list(programs.KINDS)}, got {kinds!r}")


def min_visible(width: int, height: int) -> float:
    """The screen's visibility floor: CLEVR's, scaled with the area, with a margin."""
    return MIN_PIXELS_AT_480x320 * width * height / (480 * 320) * SCREEN_MARGIN


def frame_shows(frame: programs.Frame, sized: bool = False) -> Estimate | None:
    """The frame's estimate when every object shows on it (and, when ``sized``, its large
    objects can be told from its small ones), else ``None``."""
    scene = frame.scene
    if sized and size_problem(scene) is not None:
        return None
    guess = estimate(scene)
    floor, extent = min_visible(scene.width, scene.height), LEGIBLE_OBJECT_PX * SCREEN_MARGIN
    return guess if all(shown(guess, k, floor, extent) for k in range(len(scene.objects))) else None


def _apart(a: list[int] | None, b: list[int] | None) -> bool:
    """Whether two boxes do not overlap (with a pixel to spare)."""
    return a is not None and b is not None and (a[2] + 1 < b[0] or b[2] + 1 < a[0] or a[3] + 1 < b[1]
                                                 or b[3] + 1 < a[1])


def sample_op(frame: programs.Frame, kind: str, originals: int, rng: np.random.Generator) -> dict[str, Any] | None:
    """One op of ``kind`` on ``frame`` (an added object is never removed: only objects
    with identities below ``originals``), or ``None`` when the frame allows none."""
    scene = frame.scene
    n = len(scene.objects)
    if kind == "move":
        k = int(rng.integers(n))
        spot = free_spot(scene, scene.objects[k].size, rng, ignore=k)
        return None if spot is None else {"op": "move", "object": k, "x": spot[0] + 0.0, "y": spot[1] + 0.0}
    if kind == "add_object":
        if n >= MAX_OBJECTS:
            return None
        size = pick(rng, ATTRIBUTES["size"])
        spot = free_spot(scene, size, rng)
        if spot is None:
            return None
        return {"op": "add_object", **{a: pick(rng, ATTRIBUTES[a]) for a in ("shape", "color", "material")},
                "size": size, "x": spot[0] + 0.0, "y": spot[1] + 0.0, "rotation": round(float(rng.uniform(0, 360)), 1)}
    if kind == "remove_object":
        removable = [k for k, identity in enumerate(frame.ids) if identity < originals]
        if n <= MIN_OBJECTS or not removable:
            return None
        return {"op": "remove_object", "object": pick(rng, removable)}
    k = int(rng.integers(n))
    return {"op": "set_color", "object": k,
            "color": pick(rng, [c for c in ATTRIBUTES["color"] if c != scene.objects[k].color])}


def sequence(rng: np.random.Generator, settings: Mapping[str, Any], needed: tuple[str, ...],
             sized: bool = False) -> tuple[list[programs.Frame], list[dict[str, Any]]] | None:
    """Frames and edits with one of ``needed`` at a drawn step, every frame screened (and,
    when ``sized``, every frame telling large from small); ``None`` when a step found no
    op that keeps every change in sight."""
    try:
        initial = procedural_scene(rng, settings["width"], settings["height"], settings["min_objects"],
                                   settings["max_objects"])
    except GenerationError:
        return None
    frames = [programs.Frame(initial, tuple(range(len(initial.objects))))]
    guesses = [frame_shows(frames[0], sized)]
    if guesses[0] is None:
        return None
    steps = int(rng.integers(settings["min_frames"], settings["max_frames"] + 1)) - 1
    forced = int(rng.integers(steps))
    kinds, weights = list(OP_WEIGHTS), np.array(list(OP_WEIGHTS.values()))
    weights = weights / weights.sum()
    edits: list[dict[str, Any]] = []
    next_id = len(initial.objects)
    for step in range(steps):
        for _ in range(OP_TRIES):
            kind = pick(rng, needed) if step == forced else kinds[int(rng.choice(len(kinds), p=weights))]
            op = sample_op(frames[-1], kind, len(initial.objects), rng)
            if op is None:
                continue
            try:
                frame = programs.apply_op(frames[-1], op, next_id)
            except InvalidEdit:
                continue
            guess = frame_shows(frame, sized)
            if guess is None:
                continue
            if op["op"] == "move" and not _apart(guesses[-1].boxes[op["object"]], guess.boxes[op["object"]]):
                continue
            break
        else:
            return None
        frames.append(frame)
        guesses.append(guess)
        edits.append(op)
        next_id += op["op"] == "add_object"
    return frames, edits


def draw(rng: np.random.Generator, settings: Mapping[str, Any]) -> Task:
    """A ``clevr_sequence`` task (seeded: the same ``rng`` state, the same task)."""
    settings = {**DEFAULTS, **settings}
    check_settings(settings)
    for _ in range(settings["max_tries"]):
        kind = pick(rng, list(settings["kinds"]))
        made = sequence(rng, settings, NEEDS[kind], kind in SIZED_KINDS)
        if made is None:
            continue
        frames, edits = made
        questions = [q for q in programs.candidates(frames, kind) if programs.size_unseen(frames, q) is None]
        if not questions:
            continue
        question = pick(rng, questions)
        return make_task(frames, edits, question, int(rng.integers(2**31)), settings)
    raise GenerationError(f"no clevr_sequence task in {settings['max_tries']} sequences (edits that all stay in "
                          "sight and a question they answer); raise max_tries or the resolution")


def make_task(frames: list[programs.Frame], edits: list[dict[str, Any]], question: Mapping[str, Any], seed: int,
              settings: Mapping[str, Any]) -> Task:
    """The task of one sequence and question (before ``prepare``: no pixels, no boxes)."""
    derived = programs.derive(frames, question)
    units = tuple(Unit("clevr", f.scene.width, f.scene.height,
                       {"scene": f.scene.to_dict(), "seed": int(seed), "engine": settings["engine"],
                        "samples": settings["samples"]}, f"Frame {k + 1}", max_scale=1.0)
                  for k, f in enumerate(frames))
    meta = {
        "initial": frames[0].scene.to_dict(),
        "edits": [dict(op) for op in edits],
        "question": dict(question),
        "kind": question["kind"],
        "engine": settings["engine"],
        "seed": int(seed),
        "view_size": settings["view_size"],
        "distractors": programs.distractors(frames, question, derived),
        "evidence_objects": [{"unit": number - 1, "object": frames[number - 1].index(identity), "what": what}
                             for number, identity, what in derived.seen],
    }
    text = programs.question_text(question)
    digest = hashlib.sha256(canonical_json([text, derived.answer, meta]).encode()).hexdigest()[:12]
    contract = {"moved": "text", "recolor": "text", "added": "count", "removed": "count",
                "first_frame": "number"}[question["kind"]]
    return Task(f"clevr_sequence-{digest}", "clevr_sequence", text, derived.answer, units, (), contract=contract,
                scorer="short", golds=derived.golds, start="sheet", meta=meta)
