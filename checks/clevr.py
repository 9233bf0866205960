"""Answerability checks of the CLEVR arm: every object shows (inside the frame, with
enough visible pixels), every left/right relation the question reads is one a reader
can see (the objects far enough apart across the image, and for front/behind far enough
up or down it), the question is none CLEVR's generator would reject as degenerate, its
answer hangs on no cube's material, and it reads size only where the picture tells large
from small (every large object shows at least 1.4 times as big as every small one:
:func:`~vicogym.structures.clevr.size_problem`). And, from the same facts, the
visual difficulty features a stand-in actor's accuracy follows, and plausible wrong
answers of the answer's kind.

Pure functions of the scene, the label rule and the renderer's facts
(:class:`~vicogym.renderers.clevr.ClevrFacts`: visible pixels, boxes, edge contact).
"""

from __future__ import annotations

from typing import Any, TypedDict

from vicogym.errors import InvalidEdit
from vicogym.programs import clevr as clevr_programs
from vicogym.structures.clevr import ATTRIBUTES, MAX_OBJECTS, ClevrRule, Scene, apparent_sizes

#: CLEVR's visibility rule: 200 visible pixels at 480 x 320, scaled with the image's area
MIN_PIXELS_AT_480x320 = 200
#: every object a question reads shows at least this share of its whole silhouette (what it
#: would show with nothing in front of it): half, so that its outline, and with it its shape
#: and size, shows whatever hides the rest, and more of it shows than is hidden
MIN_VISIBLE_SHARE = 0.5
#: left/right needs this share of the image width between the objects (6 px at 320)
RELATION_SHARE = 0.02
#: front/behind needs this share of the image height up or down the image (12 px at 240)
DEPTH_SHARE = 0.05
#: colour pairs a reader confuses more easily
SIMILAR_COLORS = {frozenset(p) for p in (("red", "brown"), ("blue", "purple"), ("cyan", "blue"), ("gray", "brown"),
                                         ("green", "cyan"), ("yellow", "brown"))}


def check(scene: Scene, facts: Any, rule: ClevrRule) -> None:
    """Raise ``InvalidEdit`` for the first reason a reader could not answer from the image."""
    check_visible(scene, facts)
    check_question(scene, facts, rule["program"])


def check_question(scene: Scene, facts: Any, program: list[Any]) -> None:
    """:func:`check` less what holds for every question on the scene (every object in the
    frame and showing its floor of pixels)."""
    check_read_shown(scene, facts, program)
    problem = clevr_programs.relation_problem(scene, program, relation_px(scene.width),
                                              depth_px(scene.height))
    if problem is not None:
        raise InvalidEdit("relation_unseen", f"{problem}; move one of them")
    problem = clevr_programs.degeneracy(scene, program)
    if problem is not None:
        raise InvalidEdit("degenerate", f"{problem}; change the scene so that every step of the question counts")
    problem = clevr_programs.material_unseen(scene, program)
    if problem is not None:
        raise InvalidEdit("material_unseen", f"{problem}; make it another shape, or ask about something else")
    problem = clevr_programs.size_unseen(scene, program)
    if problem is not None:
        raise InvalidEdit("size_unseen", f"{problem}; bring the large object nearer the camera or the small one "
                          "farther, or make them one size")


def check_visible(scene: Scene, facts: Any) -> None:
    """``out_of_frame`` or ``hidden`` for the first object a reader could not see."""
    floor = min_pixels(scene.width, scene.height)
    for k, (obj, pixel) in enumerate(zip(scene.objects, scene.pixel_coords())):
        name = f"object {k} (the {obj.size} {obj.color} {obj.material} {obj.shape})"
        x, y, depth = pixel
        if facts.at_edge[k] or depth <= 0 or not (0 <= x < scene.width and 0 <= y < scene.height):
            raise InvalidEdit("out_of_frame", f"{name} is partly or wholly outside the image; move it towards the "
                              f"middle of the floor", field="object")
        if facts.visible[k] < floor:
            raise InvalidEdit("hidden", f"{name} shows {facts.visible[k]} pixels, fewer than the {floor} a "
                              f"reader needs; move it or the objects in front of it", field="object")


def visible_shares(scene: Scene, facts: Any) -> list[float]:
    """Each object's visible pixels (the mask pass) over its whole silhouette's pixels,
    at most 1. The whole silhouette is the object's outline projected through the scene's
    camera at the image's resolution (:func:`~vicogym.structures.clevr.apparent_sizes`,
    within 4% of Blender's mask pass of the object drawn alone), so it costs no render."""
    return [min(1.0, facts.visible[k] / max(1.0, size * size)) for k, size in enumerate(apparent_sizes(scene))]


def check_read_shown(scene: Scene, facts: Any, program: list[Any]) -> None:
    """``hidden`` for the first object the question reads
    (:func:`~vicogym.programs.clevr.evidence_objects`: the objects its steps single out, and
    every object a count or an existence check looks over) that shows under
    :data:`MIN_VISIBLE_SHARE` of its silhouette."""
    shares = visible_shares(scene, facts)
    for k in clevr_programs.evidence_objects(scene, program):
        if shares[k] < MIN_VISIBLE_SHARE:
            obj = scene.objects[k]
            raise InvalidEdit("hidden", f"object {k} (the {obj.size} {obj.color} {obj.material} {obj.shape}), which "
                              f"the question reads, shows {shares[k]:.0%} of its outline, under the "
                              f"{MIN_VISIBLE_SHARE:.0%} a reader needs; move it or the objects in front of it",
                              field="object")


def relation_px(width: int) -> float:
    """How far apart across the image two objects must be for a reader to call left/right."""
    return max(3.0, RELATION_SHARE * width)


def depth_px(height: int) -> float:
    """How far up or down the image two objects must be for a reader to call front/behind."""
    return max(3.0, DEPTH_SHARE * height)


def min_pixels(width: int, height: int) -> int:
    return max(1, round(MIN_PIXELS_AT_480x320 * width * height / (480 * 320)))


class DifficultyFeatures(TypedDict):
    """What :func:`difficulty_features` measures (see there); shares are in [0, 1]."""

    n_objects: int
    occluded: float
    small: float
    metal: float
    similar_colors: float
    program_length: int
    hops: int


def difficulty_features(scene: Scene, render: Any, rule: ClevrRule) -> DifficultyFeatures:
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
    share = (lambda test: sum(test(i) for i in asked) / len(asked)) if asked else (lambda test: 0.0)
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


def difficulty(features: DifficultyFeatures) -> float:
    """One number from :func:`difficulty_features` (the simulated actor is right half of
    the time at its skill, 2.0 by default)."""
    return (0.08 * features["n_objects"] + 1.2 * features["occluded"] + 0.5 * features["small"]
            + 0.3 * features["metal"] + 0.5 * features["similar_colors"] + 0.06 * features["program_length"]
            + 0.35 * features["hops"])


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
