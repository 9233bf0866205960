"""Answerability checks of the ``clevr_sequence`` family, on a prepared task (its frames
drawn, each unit's ``spec["facts"]`` the render's mask pass: visible pixels, boxes, edge
contact), with the render facts, evidence and zoom test of the ``clevr_detail`` checks
(:mod:`vicogym.checks.evidence.clevr_detail`).

Every frame is the scene the edits give; the answer, its other spellings and the evidence
are what :mod:`vicogym.programs.evidence.clevr_sequence` derives (descriptions unique
where the question names an object); every object of every frame shows (the CLEVR arm's
visibility rule); a question or answer that names a size does so only where every frame
tells large from small; every move is seen (the object's boxes before and after do not
overlap); and every evidence item is legible in a zoom onto it.

:func:`check` says why a task is not answerable (``None`` when it is); :func:`require`
raises it as :class:`~vicogym.errors.InvalidEdit`; :func:`rederive` re-derives the answer
from ``meta`` alone (what ``verify`` re-runs).
"""

from __future__ import annotations

from vicogym.checks import clevr as clevr_checks
from vicogym.checks.evidence import first_problem, require_family
from vicogym.checks.evidence.clevr_detail import (
    expected_evidence,
    require_prepared,
    same_evidence,
    unit_facts,
    zoom_problem,
)
from vicogym.core import canonical_json
from vicogym.errors import InvalidEdit, register_error_codes
from vicogym.programs.evidence import clevr_sequence as sequence_programs
from vicogym.structures.clevr import Scene
from vicogym.structures.evidence import Task

ERROR_CODES = {
    "change_unseen": "an edit of a sequence a reader cannot see: a move that leaves the object where it was",
}
register_error_codes("clevr_evidence", ERROR_CODES)


def rederive(task: Task) -> str:
    """The task's answer from its ``meta`` alone: the question answered from the initial
    scene and the edits."""
    require_family(task, "clevr_sequence")
    return sequence_programs.answer(task.meta)


def check(task: Task) -> str | None:
    """Why a careful reader could not answer ``task`` (see the module notes), or ``None``
    (the family check :func:`vicogym.checks.evidence.check_task` calls)."""
    return first_problem(require, task)


def require(task: Task) -> None:
    """Raise ``InvalidEdit`` (with one of :data:`ERROR_CODES`, the ``clevr_detail`` checks'
    or the CLEVR arm's codes) for the first reason a careful reader could not answer
    ``task``."""
    require_family(task, "clevr_sequence")
    require_prepared(task)
    _check_sequence(task)


def _check_sequence(task: Task) -> None:
    meta = task.meta
    frames = sequence_programs.replay(Scene.from_dict(meta["initial"]), meta["edits"])
    if len(frames) != len(task.units):
        raise InvalidEdit("answer_mismatch", f"the edits make {len(frames)} frames, the task has {len(task.units)}")
    for k, (frame, unit) in enumerate(zip(frames, task.units)):
        if canonical_json(unit.spec["scene"]) != canonical_json(frame.scene.to_dict()):
            raise InvalidEdit("answer_mismatch", f"unit {k} draws another scene than frame {k + 1} of the edits")
    try:
        derived = sequence_programs.derive(frames, meta["question"])
    except InvalidEdit as exc:
        raise InvalidEdit("ambiguous", f"the question has no single answer: {exc.message}") from None
    if derived.answer != task.answer or tuple(derived.golds) != tuple(task.golds):
        raise InvalidEdit("answer_mismatch", f"the edits give {derived.answer!r} (also {list(derived.golds)}), the "
                          f"task says {task.answer!r} (also {list(task.golds)})")
    unseen_size = sequence_programs.size_unseen(frames, meta["question"])
    if unseen_size is not None:
        raise InvalidEdit("size_unseen", unseen_size)
    for k, frame in enumerate(frames):
        try:
            clevr_checks.check_visible(frame.scene, unit_facts(task, k))
        except InvalidEdit as exc:
            raise InvalidEdit(exc.code, f"frame {k + 1}: {exc.message}") from None
    for step, op in enumerate(meta["edits"]):
        if op["op"] != "move":
            continue
        before = unit_facts(task, step).boxes[op["object"]]
        identity = frames[step].ids[op["object"]]
        after = unit_facts(task, step + 1).boxes[frames[step + 1].index(identity)]
        if not (before[2] <= after[0] or after[2] <= before[0] or before[3] <= after[1] or after[3] <= before[1]):
            raise InvalidEdit("change_unseen", f"the move from frame {step + 1} to frame {step + 2} leaves object "
                              f"{op['object']} overlapping where it was ({before} -> {after}); a reader may not see "
                              "it move")
    want = [{"unit": number - 1, "object": frames[number - 1].index(identity), "what": what}
            for number, identity, what in derived.seen]
    listed = [{"unit": i["unit"], "object": i["object"], "what": i["what"]} for i in meta.get("evidence_objects", ())]
    if listed != want:
        raise InvalidEdit("answer_mismatch", f"the evidence lists {listed}, the question reads {want}")
    same_evidence(task, expected_evidence(task, want))
    zoom = zoom_problem(task, int(meta.get("view_size", 768)))
    if zoom is not None:
        raise InvalidEdit("detail_unreadable", zoom)
