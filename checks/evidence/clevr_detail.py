"""Answerability checks of the ``clevr_detail`` family, on a prepared task (its unit drawn,
the unit's ``spec["facts"]`` the render's mask pass: visible pixels, boxes, edge contact),
and what the ``clevr_sequence`` checks (:mod:`vicogym.checks.evidence.clevr_sequence`) use
of them: the shared error codes, the render facts, the evidence a render gives, the zoom
test.

The answer is what the program gives on the scene; every object shows at
full resolution (inside the frame, at least CLEVR's 200 visible pixels, not scaled with
the image since a zoom shows the unit at full resolution at most, and a box no smaller
than the legible object extent); every relation the program reads can be seen (the CLEVR
arm's distances); the question is not degenerate, reads nothing the engine does not show
and nothing the family leaves unasked, and reads size only where the picture tells large
from small; the evidence is every object the answer depends on
(:func:`~vicogym.programs.clevr.evidence_objects`: the objects singled out, and every
object a count or an existence test ranges over, counted or ruled out); none of the
objects the question singles out or counts is legible in the default view (the whole unit
fitted into ``view_size``), and each evidence item is legible in a zoom onto its box.

:func:`check` says why a task is not answerable (``None`` when it is); :func:`require`
raises it as :class:`~vicogym.errors.InvalidEdit`; :func:`rederive` re-derives the answer
from ``meta`` alone (what ``verify`` re-runs).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import SimpleNamespace
from typing import Any

from vicogym.checks import clevr as clevr_checks
from vicogym.checks.evidence import first_problem, require_family
from vicogym.core import canonical_json
from vicogym.errors import InvalidEdit, register_error_codes
from vicogym.programs import clevr as clevr_programs
from vicogym.structures.clevr import Scene
from vicogym.structures.evidence import LEGIBLE_OBJECT_PX, Evidence, Task, crop_view, support, whole_view

ERROR_CODES = {
    "answer_mismatch": "the stored answer, golds or evidence are not what the task's program or edits give",
    "unshown_attribute": "the question reads an attribute the images do not show or the family does not ask",
    "detail_shown": "an object the question reads is legible in the default view, so the task needs no zoom",
    "detail_unreadable": "an object the question reads stays too small to read even zoomed to full resolution",
    "not_prepared": "a CLEVR unit that has not been rendered yet (no pixels, no mask facts)",
}
register_error_codes("clevr_evidence", ERROR_CODES)


def rederive(task: Task) -> str:
    """The task's answer from its ``meta`` alone: the program run on the scene."""
    require_family(task, "clevr_detail")
    program = clevr_programs.normalize_program(task.meta["program"])
    return clevr_programs.answer_text(clevr_programs.execute(Scene.from_dict(task.meta["scene"]), program))


def check(task: Task) -> str | None:
    """Why a careful reader could not answer ``task`` (see the module notes), or ``None``
    (the family check :func:`vicogym.checks.evidence.check_task` calls)."""
    return first_problem(require, task)


def require(task: Task) -> None:
    """Raise ``InvalidEdit`` (with one of :data:`ERROR_CODES` or the CLEVR arm's codes)
    for the first reason a careful reader could not answer ``task``."""
    require_family(task, "clevr_detail")
    require_prepared(task)
    _check_detail(task)


def require_prepared(task: Task) -> None:
    """``InvalidEdit("not_prepared")`` unless every unit has been rendered (its pixels and
    mask facts)."""
    for k, unit in enumerate(task.units):
        if "facts" not in unit.spec or "png" not in unit.spec:
            raise InvalidEdit("not_prepared", f"unit {k} of task {task.id} has no render yet; run the renderer's "
                              "prepare first")


def unit_facts(task: Task, k: int) -> SimpleNamespace:
    """Unit ``k``'s render facts: ``visible`` pixels, ``boxes`` and ``at_edge`` per object."""
    facts = task.units[k].spec["facts"]
    return SimpleNamespace(visible=facts["visible"], boxes=facts["boxes"], at_edge=facts["at_edge"])


def expected_evidence(task: Task, items: Sequence[Mapping[str, Any]]) -> list[Evidence]:
    """The evidence the render's boxes give the listed objects (``{"unit", "object"}``)."""
    out = []
    for item in items:
        box = unit_facts(task, item["unit"]).boxes[item["object"]]
        if box is None:
            raise InvalidEdit("hidden", f"object {item['object']} of unit {item['unit']} ({item.get('what', '')}) "
                              "does not show at all")
        out.append(Evidence(item["unit"], tuple(float(v) for v in box), float(min(box[2] - box[0], box[3] - box[1])),
                            LEGIBLE_OBJECT_PX, str(item.get("what", ""))))
    return out


def same_evidence(task: Task, expected: Sequence[Evidence]) -> None:
    """``InvalidEdit("answer_mismatch")`` unless the task's evidence boxes are ``expected``'s."""
    have = sorted((e.unit, tuple(e.box)) for e in task.evidence)
    want = sorted((e.unit, tuple(e.box)) for e in expected)
    if have != want:
        raise InvalidEdit("answer_mismatch", f"the task's evidence boxes {have} are not those of the objects its "
                          f"question reads {want}")


def zoom_problem(task: Task, view_size: int) -> str | None:
    """Why an evidence item stays illegible in a zoom onto its box, or ``None``."""
    for k, e in enumerate(task.evidence):
        view = crop_view(0, e.unit, task.units[e.unit], e.box, view_size)
        if not support([e], [view])["all"]:
            return (f"evidence {k} ({e.what}) is {e.size:.0f} px across at full resolution, under the "
                    f"{e.legible:g} px a reader needs")
    return None


def _check_detail(task: Task) -> None:
    meta = task.meta
    scene = Scene.from_dict(meta["scene"])
    unit = task.units[0]
    if canonical_json(unit.spec["scene"]) != canonical_json(meta["scene"]):
        raise InvalidEdit("answer_mismatch", "the unit draws another scene than the one the question was asked of")
    program = clevr_programs.normalize_program(meta["program"])
    unseen = clevr_programs.attributes_read(program) & set(meta.get("unasked", ()))
    if unseen:
        raise InvalidEdit("unshown_attribute", f"the question reads {sorted(unseen)}, which this task's images do "
                          "not show or its family does not ask")
    try:
        answer = clevr_programs.answer_text(clevr_programs.execute(scene, program))
    except InvalidEdit as exc:
        raise InvalidEdit("ambiguous", f"the program has no answer on the scene: {exc.message}") from None
    if answer != task.answer:
        raise InvalidEdit("answer_mismatch", f"the program gives {answer!r}, the task says {task.answer!r}")
    facts = unit_facts(task, 0)
    for k, obj in enumerate(scene.objects):
        name = f"object {k} (the {obj.size} {obj.color} {obj.shape})"
        box = facts.boxes[k]
        if facts.at_edge[k] or box is None:
            raise InvalidEdit("out_of_frame" if facts.at_edge[k] else "hidden", f"{name} is "
                              f"{'cut by the frame' if facts.at_edge[k] else 'not shown at all'}")
        if facts.visible[k] < clevr_checks.MIN_PIXELS_AT_480x320:
            raise InvalidEdit("hidden", f"{name} shows {facts.visible[k]} pixels, fewer than the "
                              f"{clevr_checks.MIN_PIXELS_AT_480x320} a reader needs")
        extent = min(box[2] - box[0], box[3] - box[1])
        if extent < LEGIBLE_OBJECT_PX:
            raise InvalidEdit("detail_unreadable", f"{name} is {extent} px across at full resolution, under the "
                              f"{LEGIBLE_OBJECT_PX:g} px a reader needs to tell it")
    relation = clevr_programs.relation_problem(scene, program, clevr_checks.relation_px(scene.width),
                                               clevr_checks.depth_px(scene.height))
    if relation is not None:
        raise InvalidEdit("relation_unseen", relation)
    degenerate = clevr_programs.degeneracy(scene, program)
    if degenerate is not None:
        raise InvalidEdit("degenerate", degenerate)
    if "material" not in meta.get("unasked", ()):
        unseen_material = clevr_programs.material_unseen(scene, program)
        if unseen_material is not None:
            raise InvalidEdit("material_unseen", unseen_material)
    unseen_size = clevr_programs.size_unseen(scene, program)
    if unseen_size is not None:
        raise InvalidEdit("size_unseen", unseen_size)
    needed = clevr_programs.evidence_objects(scene, program)
    listed = sorted(item["object"] for item in meta.get("evidence_objects", ()))
    if listed != needed or not needed:
        raise InvalidEdit("answer_mismatch", f"the evidence lists objects {listed}; the answer depends on {needed}")
    same_evidence(task, expected_evidence(task, meta["evidence_objects"]))
    view_size = int(meta["view_size"])
    asked = set(clevr_programs.asked_objects(scene, program))
    if not asked:
        raise InvalidEdit("answer_mismatch", "the question singles out and counts no object, so no detail of it "
                          "needs a zoom")
    named = expected_evidence(task, [item for item in meta["evidence_objects"] if item["object"] in asked])
    shown = support(named, [whole_view(0, 0, unit, view_size)])
    legible = [item["what"] for item in shown["items"] if item["supported"]]
    if legible:
        raise InvalidEdit("detail_shown", f"{', '.join(legible)} can be read in the default {view_size} px view")
    zoom = zoom_problem(task, view_size)
    if zoom is not None:
        raise InvalidEdit("detail_unreadable", zoom)
