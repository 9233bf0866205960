"""The ``clevr_detail`` family: one high-resolution CLEVR scene whose asked objects are too
small to read in the default view and readable when zoomed onto.

The scene is CLEVR's (its shapes, colours, materials, sizes and spacing rules, questions
from the arm's templates and programs, :mod:`vicogym.programs.clevr`), seen from a camera
80 scene units away (far, so that an object's extent varies less with its depth; even so
large and small overlap in more than half the scenes, measured by ``apparent_sizes``, and a
question names a size only where they separate), its objects spread across the whole
picture (each centre drawn at a random pixel and put on the floor under it). The lens is
chosen from the resolution and the view size the task is made for (``view_size``, the
environment's): a small object in the middle shows inside the **detail band**, the object
extents (unit pixels) that a reader cannot read when the whole unit is fitted into
``view_size`` (extent x scale below :data:`HIDDEN_OBJECT_PX`, 8 px) and can read at full
resolution (extent at least :data:`~vicogym.structures.evidence.LEGIBLE_OBJECT_PX`, 16). At
2400 x 1800 and 768 that band is 16-25 px: the asked objects show at 5-8 px in the default
view and at their full 16-25 px in a zoom. The unit is a
raster (``max_scale`` 1.0): a zoom shows the full-resolution pixels and no more.

Every object is placed so that it shows legibly at full resolution (inside the frame,
enough visible pixels, its box at least the legible extent); a question is kept when every
object it is about (:func:`~vicogym.programs.clevr.asked_objects`: the ones it singles out
and the ones it counts) lies in the detail band, none of its relations is too close to
call, and it is not degenerate. Its evidence is every object its answer depends on
(:func:`~vicogym.programs.clevr.evidence_objects`: also each object a count rules out),
listed in a reader's sweep order (:func:`neighbour_order`). Attributes the engine does not
show (material under Workbench) and any the family setting ``unasked`` names are never
asked; a size is named only where every large object shows at least 1.4 times every small
one (:func:`~vicogym.structures.clevr.size_problem`), and never asked for
(:data:`LEFT_OUT_TEMPLATES`). These screens run on a pure projection of the scene (:func:`estimate`: the
objects' outlines projected through the camera and painted far to near), which matches
Blender's mask pass to a pixel or two; the renderer's ``prepare`` then draws the unit once
at full resolution and the evidence boxes come from its mask pass, and
:mod:`vicogym.checks.evidence.clevr_detail` decides on those exact facts.

The drawn task's unit names no pixels yet (``spec``: the scene JSON, the render seed, the
engine and its samples) and has no evidence boxes: ``prepare`` adds ``spec["png"]``, the
render's facts and the evidence (``meta["evidence_objects"]`` says which objects).
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from vicogym.core import canonical_json
from vicogym.errors import GenerationError, InvalidEdit
from vicogym.programs import clevr as clevr_programs
from vicogym.structures.clevr import (
    ATTRIBUTES,
    MAX_OBJECTS,
    MIN_OBJECTS,
    SIZES,
    Camera,
    Lights,
    Obj,
    Scene,
    convex_hull,
    outline,
    pair_problem,
    project_points,
    size_problem,
)
from vicogym.structures.evidence import LEGIBLE_OBJECT_PX, Task, Unit, fit_scale
from vicogym.validation import did_you_mean, is_int, is_number, pick

#: the extent (view pixels) under which an object is hidden in the default view: an
#: auditor told colour and shape apart at 8.6 px, so the asked objects stay under 8 there
HIDDEN_OBJECT_PX = 8.0
DEFAULTS: dict[str, Any] = {
    "width": 2400,
    "height": 1800,
    "view_size": 768,  # the environment's view_size: the default view the detail hides from
    "engine": "workbench",
    "samples": 16,
    "min_objects": 6,
    "max_objects": 10,
    "small_share": 0.7,  # the chance that an object is small
    "templates": None,  # CLEVR template ids (default: all that can have evidence)
    "unasked": [],
    "max_tries": 24,
}
EXTRAS = ("bpy",)
#: what each engine's images do not show: the CLEVR renderer's ``UNSHOWN``, restated here
#: since a source may not import a renderer (a test holds the two equal)
ENGINE_UNSHOWN: Mapping[str, frozenset[str]] = {"cycles": frozenset(), "workbench": frozenset({"material"})}
#: templates left out by default: ``zero_hop_exist``, whose "no" singles out and counts no
#: object (nothing that needs a zoom), and those that ask an object's size, since the objects
#: in the detail band are the small ones (where sizes are named at all, every large object
#: shows at least 1.4 times every small one, above the band's top): their answer would be
#: known before looking
LEFT_OUT_TEMPLATES = ("zero_hop_exist", "zero_hop_query_size", "three_hop_query_size", "comparison_size")

CAMERA_DISTANCE = 80.0  # scene units from the middle of the floor: far, so sizes vary little with depth
ELEVATION = (40.0, 50.0)  # degrees above the floor, drawn
AZIMUTH = (26.7, 66.7)  # degrees about the vertical (CLEVR's camera looks from 46.7)
#: where objects stand: their centres are drawn uniformly over this part of the picture
#: (shares of the width and of the height), so that they spread across all of it
SPREAD = ((0.04, 0.96), (0.06, 0.96))
#: where in the detail band a small object in the middle of the floor shows (on a log
#: scale: 0 its low end, 1 its high end); nearer ones show larger, farther ones smaller
BAND_POINT = 0.4
LIGHT_JITTER = 1.0
SENSOR = 32.0
PLACEMENT_TRIES = 60
QUESTION_TRIES = 12  # templates drawn per scene
INSTANCE_TRIES = 30  # questions drawn per template

# -- the screens a drawn task passes before it is rendered (the checks decide on the render) ----
#: estimate vs. render: how far inside each bound of the detail band an asked object must be
SCREEN_MARGIN = 1.1
#: CLEVR's visibility floor, 200 visible pixels at 480 x 320 (``checks.clevr``); a detail unit
#: is seen at full resolution at best, so the floor is not scaled with the image
MIN_VISIBLE_PX = 200
#: the CLEVR arm's left/right and front/behind distances (``checks.clevr``: 2% of the width,
#: 5% of the height), here with the screen's margin
RELATION_SHARE, DEPTH_SHARE = 0.02, 0.05
EDGE_PX = 2  # an object's outline stays this far inside the frame


def check_settings(settings: Mapping[str, Any]) -> None:
    """``ValueError`` naming the setting to change."""
    unknown = sorted(set(settings) - set(DEFAULTS))
    if unknown:
        raise ValueError(f"clevr_detail has no setting {unknown[0]!r}{did_you_mean(unknown[0], DEFAULTS)}")
    for name, low, high in (("width", 64, 4096), ("height", 48, 4096), ("view_size", 64, 4096),
                            ("samples", 1, 4096), ("min_objects", MIN_OBJECTS, MAX_OBJECTS),
                            ("max_objects", MIN_OBJECTS, MAX_OBJECTS), ("max_tries", 1, 1000)):
        if not is_int(settings[name], low, high):
            raise ValueError(f"expected clevr_detail {name} as an integer in [{low}, {high}], got {settings[name]!r}")
    if settings["min_objects"] > settings["max_objects"]:
        raise ValueError(f"expected min_objects <= max_objects, got {settings['min_objects']} > "
                         f"{settings['max_objects']}")
    if settings["engine"] not in ENGINE_UNSHOWN:
        raise ValueError(f"expected engine in {sorted(ENGINE_UNSHOWN)}, got {settings['engine']!r}")
    if not is_number(settings["small_share"], 0.0, 1.0):
        raise ValueError(f"expected small_share as a number in [0, 1], got {settings['small_share']!r}")
    unasked = settings["unasked"]
    if isinstance(unasked, str) or not isinstance(unasked, (list, tuple)) or not set(unasked) <= set(ATTRIBUTES):
        raise ValueError(f"expected unasked as a list of attributes from {list(ATTRIBUTES)}, got {unasked!r}")
    if {"color", "shape"} <= unasked_of(settings):
        raise ValueError("with colour and shape unasked no question can name an object; ask about one of them")
    templates = settings["templates"]
    if templates is not None:
        if isinstance(templates, str) or not isinstance(templates, (list, tuple)) or not templates:
            raise ValueError(f"expected templates as a non-empty list of CLEVR template ids, got {templates!r}")
        for t in templates:
            if t not in clevr_programs.TEMPLATE_BY_ID:
                raise ValueError(f"unknown CLEVR template {t!r}{did_you_mean(t, clevr_programs.TEMPLATE_BY_ID)}")
            if t == "zero_hop_exist":
                raise ValueError("template 'zero_hop_exist' can answer 'no' with no object to point at; leave it out")
    low, high = band(settings["width"], settings["height"], settings["view_size"])
    if high < low * SCREEN_MARGIN ** 2 * 1.2:
        raise ValueError(f"a {settings['width']}x{settings['height']} unit seen at view_size {settings['view_size']} "
                         f"leaves no detail band (objects of {low:.0f}-{high:.0f} px would need a zoom); use a "
                         f"larger unit or a smaller view_size (the unit's long side at least "
                         f"{LEGIBLE_OBJECT_PX * SCREEN_MARGIN ** 2 * 1.2 / HIDDEN_OBJECT_PX:.1f}x view_size)")


def unasked_of(settings: Mapping[str, Any]) -> frozenset[str]:
    """What no question may read: the family's ``unasked`` and what the engine does not show."""
    return frozenset(settings["unasked"]) | ENGINE_UNSHOWN[settings["engine"]]


def default_scale(width: int, height: int, view_size: int) -> float:
    """The scale of the default view: the whole unit fitted into ``view_size`` (a raster
    is never enlarged past its own pixels)."""
    return fit_scale(width, height, view_size, view_size, 1.0)


def band(width: int, height: int, view_size: int) -> tuple[float, float]:
    """The detail band (unit pixels): extents legible at full resolution and under
    :data:`HIDDEN_OBJECT_PX` in the default view."""
    return LEGIBLE_OBJECT_PX, HIDDEN_OBJECT_PX / default_scale(width, height, view_size)


# -- pure projection of a scene (the screens' stand-in for the mask pass) ---------------------------
# the projection is the CLEVR structure's (shared with the size check); named here as before
project = project_points
_hull = convex_hull


@dataclass(frozen=True)
class Estimate:
    """What the mask pass would say of a scene, from projection alone: per object its
    visible pixels, its box ``[x0, y0, x1, y1]`` (``None`` when hidden), whether its
    outline reaches the frame's edge, and its depth."""

    visible: list[int]
    boxes: list[list[int] | None]
    at_edge: list[bool]
    depth: list[float]

    def extent(self, k: int) -> float:
        """Object ``k``'s box's shorter side (0 when hidden)."""
        box = self.boxes[k]
        return 0.0 if box is None else float(min(box[2] - box[0], box[3] - box[1]))


def estimate(scene: Scene, step: int | None = None) -> Estimate:
    """The objects' visible pixels and boxes, painting each one's projected outline (its
    convex hull) far to near on a grid of ``step`` pixels (default: about 800 cells
    across). Matches Blender's mask pass within a pixel or two on boxes and a few per cent
    on pixel counts (objects are convex; a cube's bevel is left out)."""
    width, height = scene.width, scene.height
    step = step or max(1, round(width / 800))
    cols, rows = math.ceil(width / step), math.ceil(height / step)
    labels = np.full((rows, cols), -1, dtype=np.int16)
    hulls, depths, edge = [], [], []
    for obj in scene.objects:
        xy, depth = project(scene, outline(obj))
        if (depth <= 0).any():
            hulls.append(None)
            depths.append(float(depth.mean()))
            edge.append(True)
            continue
        hull = _hull(xy)
        hulls.append(hull)
        depths.append(float(depth.mean()))
        low, high = hull.min(axis=0), hull.max(axis=0)
        edge.append(bool(low[0] < EDGE_PX or low[1] < EDGE_PX or high[0] > width - EDGE_PX
                         or high[1] > height - EDGE_PX))
    for k in sorted(range(len(hulls)), key=lambda k: -depths[k]):
        hull = hulls[k]
        if hull is None or len(hull) < 3:
            continue
        x0, y0 = (int(v) for v in np.clip(np.floor(hull.min(axis=0) / step), 0, [cols, rows]))
        x1, y1 = (int(v) for v in np.clip(np.ceil(hull.max(axis=0) / step), 0, [cols, rows]))
        if x1 <= x0 or y1 <= y0:
            continue
        ys, xs = np.mgrid[y0:y1, x0:x1]
        px, py = (xs + 0.5) * step, (ys + 0.5) * step
        inside = np.ones(px.shape, dtype=bool)
        for a, b in zip(hull, np.roll(hull, -1, axis=0)):
            inside &= (b[0] - a[0]) * (py - a[1]) - (b[1] - a[1]) * (px - a[0]) >= 0
        labels[y0:y1, x0:x1][inside] = k
    visible, boxes = [], []
    for k in range(len(hulls)):
        ys, xs = np.nonzero(labels == k)
        visible.append(int(len(xs)) * step * step)
        boxes.append([int(xs.min()) * step, int(ys.min()) * step, (int(xs.max()) + 1) * step,
                      (int(ys.max()) + 1) * step] if len(xs) else None)
    return Estimate(visible, boxes, edge, depths)


def shown(guess: Estimate, k: int, min_visible: float, min_extent: float) -> bool:
    """Whether object ``k`` shows well enough on the estimate: inside the frame, at least
    ``min_visible`` pixels, a box at least ``min_extent`` on its shorter side."""
    return not guess.at_edge[k] and guess.visible[k] >= min_visible and guess.extent(k) >= min_extent


# -- the scene ------------------------------------------------------------------------------------
def detail_camera(rng: np.random.Generator, width: int, height: int, view_size: int) -> Camera:
    """A camera :data:`CAMERA_DISTANCE` from the middle of the floor, looking at it from a
    drawn elevation and heading, with the lens that shows a small object there at the
    middle of the detail band."""
    target = middle_extent(width, height, view_size)
    elevation = float(rng.uniform(*ELEVATION))
    heading = float(rng.uniform(*AZIMUTH))
    rotation = (round(90.0 - elevation, 4), 0.0, round(heading, 4))
    forward = Camera((0.0, 0.0, 0.0), rotation).matrix() @ np.array([0.0, 0.0, -1.0])
    focal = target * CAMERA_DISTANCE / (2 * SIZES["small"])
    lens = round(focal * SENSOR / width, 4)
    location = tuple(round(float(c), 4) for c in -forward * CAMERA_DISTANCE)
    return Camera(location, rotation, lens, SENSOR)


def middle_extent(width: int, height: int, view_size: int) -> float:
    """The extent (unit pixels) a small object shows in the middle of the floor."""
    low, high = band(width, height, view_size)
    return low ** (1.0 - BAND_POINT) * high ** BAND_POINT


def ground_point(scene: Scene, u: float, v: float, height: float) -> tuple[float, float] | None:
    """Where on the plane ``z = height`` the camera sees pixel (``u``, ``v``): a centre at
    that height there projects onto that pixel; ``None`` above the horizon."""
    camera = scene.camera
    focal = camera.lens / camera.sensor * scene.width
    ray = camera.matrix() @ np.array([(u - scene.width / 2.0) / focal, -(v - scene.height / 2.0) / focal, -1.0])
    if ray[2] >= -1e-9:
        return None
    t = (height - camera.location[2]) / ray[2]
    return (float(camera.location[0] + t * ray[0]), float(camera.location[1] + t * ray[1]))


def detail_scene(rng: np.random.Generator, settings: Mapping[str, Any]) -> Scene | None:
    """A scene of the family (see the module notes), or ``None`` when its objects could not
    all be placed in :data:`PLACEMENT_TRIES` positions each."""
    width, height, view = settings["width"], settings["height"], settings["view_size"]
    camera = detail_camera(rng, width, height, view)
    lights = Lights(*(tuple(round(float(v), 3) for v in rng.uniform(-LIGHT_JITTER, LIGHT_JITTER, 3))
                      for _ in range(3)))
    scene = Scene((), camera, lights, width=width, height=height)
    cardinal = [np.asarray(scene.directions()[k][:2]) for k in ("left", "right", "front", "behind")]
    n = int(rng.integers(settings["min_objects"], settings["max_objects"] + 1))
    low = band(width, height, view)[0] * SCREEN_MARGIN
    min_visible = MIN_VISIBLE_PX * SCREEN_MARGIN
    while len(scene.objects) < n:
        size = "small" if rng.random() < settings["small_share"] else "large"
        shape, color, material = (pick(rng, ATTRIBUTES[a]) for a in ("shape", "color", "material"))
        for _ in range(PLACEMENT_TRIES):
            u, v = float(rng.uniform(*SPREAD[0])) * width, float(rng.uniform(*SPREAD[1])) * height
            probe = Obj(shape, color, material, size, 0.0, 0.0)
            spot = ground_point(scene, u, v, probe.scale)
            if spot is None:
                continue
            obj = Obj(shape, color, material, size, round(spot[0], 3) + 0.0, round(spot[1], 3) + 0.0,
                      round(float(rng.uniform(0, 360)), 2))
            if any(pair_problem(obj, other, cardinal, ("", "")) is not None for other in scene.objects):
                continue
            placed = scene.with_objects(scene.objects + (obj,))
            guess = estimate(placed)
            if all(shown(guess, k, min_visible, low) for k in range(len(placed.objects))):
                scene = placed
                break
        else:
            return None
    return scene


# -- the question --------------------------------------------------------------------------------
def describe(obj: Obj, unasked: frozenset[str]) -> str:
    """``small red cube``: what a reader sees of ``obj`` (material only when shown)."""
    words = [obj.size, obj.color] + ([] if "material" in unasked else [obj.material])
    return " ".join(words + [obj.shape])


def distractors(answer: str) -> list[str]:
    """Plausible wrong answers: the other polarity, a count one or two off, another value
    of the queried attribute."""
    if answer in ("yes", "no"):
        return ["no" if answer == "yes" else "yes"]
    if answer.isdigit():
        n = int(answer)
        return [str(m) for m in (n - 1, n + 1, n - 2, n + 2) if 0 <= m <= MAX_OBJECTS]
    values = next((v for v in ATTRIBUTES.values() if answer in v), ())
    return [v for v in values if v != answer]


def question_pool(settings: Mapping[str, Any]) -> list[clevr_programs.Template]:
    """The templates a question is drawn from: the chosen ones (default: every one that
    always has an object to point at), less those that read an unasked attribute."""
    unasked = unasked_of(settings)
    ids = settings["templates"] or [t.id for t in clevr_programs.TEMPLATES if t.id not in LEFT_OUT_TEMPLATES]
    pool = [clevr_programs.TEMPLATE_BY_ID[t] for t in ids]
    pool = [t for t in pool if not clevr_programs.template_reads(t, unasked)]
    if not pool:
        raise ValueError(f"every template asked for reads {sorted(unasked)}, which no question may read here; "
                         "choose other templates")
    return pool


def ask(scene: Scene, rng: np.random.Generator, settings: Mapping[str, Any],
        guess: Estimate | None = None) -> tuple[str, dict[str, Any], str, list[int]] | None:
    """A question whose asked objects (:func:`~vicogym.programs.clevr.asked_objects`: the
    ones it singles out and the ones it counts) all lie in the detail band, and every
    object its answer depends on (:func:`~vicogym.programs.clevr.evidence_objects`: also
    those its counts rule out) shows legibly in a zoom: ``(question, rule, answer,
    evidence)``, or ``None`` after :data:`QUESTION_TRIES` draws. The band is asked of the
    asked objects alone: asked of the whole evidence it leaves only questions about one
    or two objects (measured on 24 seeds: every count, comparison and "or" question gone,
    4.5 times the time a task). CLEVR's question family is drawn first (uniformly), then
    its template and, for a yes/no template, the answer, so that the screen's preference
    for questions about few objects decides less of what is asked."""
    guess = guess or estimate(scene)
    low, high = band(scene.width, scene.height, settings["view_size"])
    low, high = low * SCREEN_MARGIN, high / SCREEN_MARGIN
    unasked = unasked_of(settings)
    if size_problem(scene) is not None:  # once per scene, not once per question drawn
        unasked |= {"size"}
    pool = [t for t in question_pool(settings) if not clevr_programs.template_reads(t, unasked)]
    if not pool:
        return None
    relation_px = RELATION_SHARE * scene.width * SCREEN_MARGIN
    depth_px = DEPTH_SHARE * scene.height * SCREEN_MARGIN
    families = sorted({t.family for t in pool}, key=clevr_programs.FAMILIES.index)
    for _ in range(QUESTION_TRIES):
        family = pick(rng, families)
        template = pick(rng, [t for t in pool if t.family == family])
        wanted = pick(rng, ("yes", "no")) if template.answer == "bool" else None
        for _ in range(INSTANCE_TRIES):
            try:
                question, rule, answer = clevr_programs.generate_question(scene, rng, [template.id], 1, unasked)
            except GenerationError:
                continue
            if wanted is not None and answer != wanted:
                continue
            program = rule["program"]
            asked = clevr_programs.asked_objects(scene, program)
            if not asked or not all(low <= guess.extent(k) <= high for k in asked):
                continue
            evidence = clevr_programs.evidence_objects(scene, program)
            if not all(guess.extent(k) >= low for k in evidence):
                continue
            if clevr_programs.relation_problem(scene, program, relation_px, depth_px) is not None:
                continue
            return question, rule, answer, evidence
    return None


def draw(rng: np.random.Generator, settings: Mapping[str, Any]) -> Task:
    """A ``clevr_detail`` task (seeded: the same ``rng`` state, the same task)."""
    settings = {**DEFAULTS, **settings}
    check_settings(settings)
    for _ in range(settings["max_tries"]):
        scene = detail_scene(rng, settings)
        if scene is None:
            continue
        asked = ask(scene, rng, settings)
        if asked is not None:
            return make_task(scene, *asked, seed=int(rng.integers(2**31)), settings=settings)
    raise GenerationError(f"no clevr_detail task in {settings['max_tries']} scenes (objects that all show and a "
                          "question about objects in the detail band); raise max_tries or the resolution")


def neighbour_order(scene: Scene, objects: Sequence[int]) -> list[int]:
    """``objects`` in the order a reader sweeping the picture meets them: from the one
    nearest the top-left corner, each next the nearest (in the image) of those left. A
    reader zooming item by item takes neighbours in one view: measured with the simulated
    oracle's grouping on 40 tasks at 960 x 720 seen at 256, 4.95 zooms a task (at most 9)
    against 6.08 (at most 10) in index order."""
    pixels = scene.pixel_coords()
    centres = {k: np.asarray(pixels[k][:2]) for k in objects}
    left = sorted(centres)
    if not left:
        return []
    order = [min(left, key=lambda k: (float(centres[k].sum()), k))]
    left.remove(order[0])
    while left:
        nearest = min(left, key=lambda k: (float(np.linalg.norm(centres[k] - centres[order[-1]])), k))
        order.append(nearest)
        left.remove(nearest)
    return order


def make_task(scene: Scene, question: str, rule: Mapping[str, Any], answer: str, evidence: Sequence[int], seed: int,
              settings: Mapping[str, Any]) -> Task:
    """The task of one scene and question (before ``prepare``: no pixels, no boxes);
    ``evidence``: the objects its answer depends on
    (:func:`~vicogym.programs.clevr.evidence_objects`)."""
    unasked = unasked_of(settings)
    try:
        if clevr_programs.answer_text(clevr_programs.execute(scene, rule["program"])) != answer:
            raise ValueError(f"the program does not give the answer {answer!r} on this scene")
    except InvalidEdit as exc:
        raise ValueError(f"the program has no answer on this scene: {exc}") from None
    scene_json = scene.to_dict()
    spec = {"scene": scene_json, "seed": int(seed), "engine": settings["engine"], "samples": settings["samples"]}
    unit = Unit("clevr", scene.width, scene.height, spec, "Scene", max_scale=1.0)
    meta = {
        "scene": scene_json,
        "program": list(rule["program"]),
        "template": rule.get("template"),
        "clevr_family": rule.get("family"),
        "engine": settings["engine"],
        "seed": int(seed),
        "view_size": settings["view_size"],
        "unasked": sorted(unasked),
        "distractors": distractors(answer),
        "evidence_objects": [{"unit": 0, "object": int(k), "what": describe(scene.objects[k], unasked)}
                             for k in neighbour_order(scene, evidence)],
    }
    digest = hashlib.sha256(canonical_json([question, answer, meta]).encode()).hexdigest()[:12]
    return Task(f"clevr_detail-{digest}", "clevr_detail", question, answer, (unit,), (),
                contract="count" if rule.get("template") and clevr_programs.TEMPLATE_BY_ID[
                    rule["template"]].answer == "count" else "text",
                scorer="short", start="first", meta=meta)


# -- counterfactuals ------------------------------------------------------------------------------
#: the attributes a counterfactual changes, in the order tried: those a downscale hides
#: soonest first (a silhouette's corners, a surface's sheen) and colour last
COUNTERFACTUAL_ATTRIBUTES = ("shape", "material", "color")


def counterfactuals(task: Task, rng: np.random.Generator, n: int = 6) -> list[Task]:
    """Up to ``n`` tasks that differ from ``task`` in one attribute of one object its
    answer depends on (its shape, material where the engine shows it, or colour), each
    with another answer that the program gives on the changed scene (the scene drawn
    again, where it stands). What the hidden check draws the start of: whether the
    downscaled scene shows which is true."""
    from dataclasses import replace as changed

    scene = Scene.from_dict(task.meta["scene"])
    program = clevr_programs.normalize_program(task.meta["program"])
    unasked = set(task.meta.get("unasked", ()))
    objects = [item["object"] for item in task.meta["evidence_objects"]]
    candidates = [(k, a, v) for a in COUNTERFACTUAL_ATTRIBUTES if a not in unasked for k in objects
                  for v in ATTRIBUTES[a] if v != getattr(scene.objects[k], a)]
    order = sorted(rng.permutation(len(candidates)), key=lambda i: COUNTERFACTUAL_ATTRIBUTES.index(candidates[i][1]))
    out: list[Task] = []
    for i in order:
        k, attribute, value = candidates[int(i)]
        objects_ = list(scene.objects)
        objects_[k] = changed(objects_[k], **{attribute: value})
        other = scene.with_objects(tuple(objects_))
        try:
            answer = clevr_programs.answer_text(clevr_programs.execute(other, program))
        except InvalidEdit:
            continue
        if answer == task.answer:
            continue
        unit = task.units[0]
        spec = {key: v for key, v in unit.spec.items() if key not in ("png", "facts")}
        out.append(Task(task.id, task.family, task.question, answer,
                        (Unit(unit.kind, unit.width, unit.height, {**spec, "scene": other.to_dict()}, unit.title,
                              unit.max_scale),),
                        (), task.contract, task.scorer, (), task.options, task.start,
                        {**task.meta, "scene": other.to_dict(), "evidence_objects": [],
                         "counterfactual": f"object {k}'s {attribute} {getattr(scene.objects[k], attribute)} -> "
                                           f"{value}"}, task.start_scale))
        if len(out) == n:
            break
    return out
