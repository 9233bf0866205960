"""Pure answers of the ``clevr_sequence`` family: frames of one CLEVR scene under a list of
edits, and what changed between them.

A sequence is an initial :class:`~vicogym.structures.clevr.Scene` and one edit per step,
each an op in the CLEVR arm's spelling (:mod:`vicogym.editors.clevr`): ``move``
(``object``, ``x``, ``y``), ``add_object`` (``shape``, ``color``, ``material``, ``size``,
``x``, ``y``, [``rotation``]), ``remove_object`` (``object``) and ``set_color``
(``object``, ``color``); objects are addressed by their index in the frame the op applies
to, and every frame keeps CLEVR's placement rules. Frame 1 is the initial scene, frame
``k + 1`` the scene after the first ``k`` edits. :func:`replay` follows each object through
the frames by an identity of its own, so "the object that moved" is one object whatever
its index.

A question is JSON (``{"kind": ..., ...}``, frame numbers from 1, objects named by the
attributes a reader sees: ``size``, ``color``, ``shape``; material is never used, since
a cube's faces do not show it and Workbench draws none):

=============  ==========================================  ================================
kind           fields                                      answer
=============  ==========================================  ================================
moved          frames [i, j]                               the one object whose place
                                                           differs between frame i and j
added          frames [i, j]                               how many objects frame j shows
                                                           that frame i does not
removed        frames [i, j]                               how many objects of frame i are
                                                           gone in frame j
recolor        frame i, object (a description)             the colour the object (unique in
                                                           frame i) takes at its one later
                                                           change of colour
first_frame    object (a description)                      the first frame showing an
                                                           object so described (alone)
=============  ==========================================  ================================

:func:`derive` answers a question from the frames, or raises ``InvalidEdit("ambiguous")``
when the frames do not give it one answer (two objects moved, a description that fits two
objects); :func:`answer` does it all from a task's ``meta`` (the initial scene, the edits
and the question), which is how ``verify`` re-derives a stored answer. Pure: no pixels.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from itertools import combinations
from typing import Any

from vicogym.errors import InvalidEdit
from vicogym.structures.clevr import (
    ATTRIBUTES,
    FLOOR,
    MAX_OBJECTS,
    MIN_OBJECTS,
    Obj,
    Scene,
    placement_problem,
    size_problem,
)
from vicogym.validation import is_int, is_number

#: the ops a sequence is made of (the CLEVR editor's names and fields)
OPS: Mapping[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "move": (("object", "x", "y"), ()),
    "add_object": (("shape", "color", "material", "size", "x", "y"), ("rotation",)),
    "remove_object": (("object",), ()),
    "set_color": (("object", "color"), ()),
}
#: the attributes a description names, in a phrase's order (material is not seen)
SEEN = ("size", "color", "shape")
KINDS = ("moved", "added", "removed", "recolor", "first_frame")


@dataclass(frozen=True)
class Frame:
    """One frame: the scene, and each object's identity (the same object keeps its
    identity from frame to frame; an added object gets a new one)."""

    scene: Scene
    ids: tuple[int, ...]

    def index(self, identity: int) -> int | None:
        """The object's index in this frame, ``None`` when the frame lacks it."""
        return self.ids.index(identity) if identity in self.ids else None

    def obj(self, identity: int) -> Obj | None:
        k = self.index(identity)
        return None if k is None else self.scene.objects[k]


# -- edits ----------------------------------------------------------------------------------
def _field_index(frame: Frame, op: Mapping[str, Any]) -> int:
    k = op.get("object")
    if not is_int(k) or not 0 <= k < len(frame.ids):
        raise InvalidEdit("not_found", f"{op.get('op')} names object {k!r}; the frame has objects 0-"
                          f"{len(frame.ids) - 1}", field="object")
    return k


def _value(op: Mapping[str, Any], name: str) -> Any:
    value = op[name]
    if name in ATTRIBUTES:
        if value not in ATTRIBUTES[name]:
            raise InvalidEdit("bad_value", f"{name} must be one of {list(ATTRIBUTES[name])}, got {value!r}", field=name)
    elif name in ("x", "y"):
        if not is_number(value) or abs(value) > FLOOR:
            raise InvalidEdit("bad_value", f"{name} must be a number within [-{FLOOR:g}, {FLOOR:g}], got {value!r}",
                              field=name)
    elif name == "rotation" and (not is_number(value) or not 0 <= value <= 360):
        raise InvalidEdit("bad_value", f"rotation must be a number within [0, 360], got {value!r}", field=name)
    return value


def apply_op(frame: Frame, op: Mapping[str, Any], new_id: int) -> Frame:
    """The frame after ``op`` (an added object gets identity ``new_id``), or
    ``InvalidEdit`` naming what to change: an op outside :data:`OPS`, a field missing or
    out of range, or a scene that breaks CLEVR's placement rules (the editor's checks)."""
    if not isinstance(op, Mapping) or op.get("op") not in OPS:
        raise InvalidEdit("unknown_op", f"a sequence's edits are ops among {list(OPS)}, got "
                          f"{op.get('op') if isinstance(op, Mapping) else op!r}")
    required, optional = OPS[op["op"]]
    missing = [f for f in required if f not in op]
    extra = sorted(set(op) - set(required) - set(optional) - {"op"})
    if missing or extra:
        raise InvalidEdit("bad_field", f"{op['op']} takes {list(required)} (and {list(optional)}), got "
                          f"{'missing ' + str(missing) if missing else 'unknown ' + str(extra)}",
                          field=(missing or extra)[0])
    objects, ids = list(frame.scene.objects), list(frame.ids)
    kind = op["op"]
    if kind == "add_object":
        objects.append(Obj(*(_value(op, a) for a in ("shape", "color", "material", "size")), float(_value(op, "x")),
                           float(_value(op, "y")), float(_value(op, "rotation")) if "rotation" in op else 0.0))
        ids.append(new_id)
    else:
        k = _field_index(frame, op)
        if kind == "remove_object":
            if len(objects) <= MIN_OBJECTS:
                raise InvalidEdit("object_count", f"a scene holds {MIN_OBJECTS}-{MAX_OBJECTS} objects; removing one "
                                  f"leaves {len(objects) - 1}", field="object")
            del objects[k], ids[k]
        elif kind == "move":
            objects[k] = replace(objects[k], x=float(_value(op, "x")), y=float(_value(op, "y")))
        else:
            objects[k] = replace(objects[k], color=_value(op, "color"))
    scene = frame.scene.with_objects(tuple(objects))
    problem = placement_problem(scene)
    if problem is not None:
        raise problem
    return Frame(scene, tuple(ids))


def replay(initial: Scene, edits: Sequence[Mapping[str, Any]]) -> list[Frame]:
    """Every frame: the initial scene, then the scene after each edit in turn."""
    frames = [Frame(initial, tuple(range(len(initial.objects))))]
    next_id = len(initial.objects)
    for step, op in enumerate(edits):
        try:
            frames.append(apply_op(frames[-1], op, next_id))
        except InvalidEdit as exc:
            name = op.get("op") if isinstance(op, Mapping) else None
            raise exc.at(f"edits[{step}] {name}") from None
        if op["op"] == "add_object":
            next_id += 1
    return frames


# -- descriptions ---------------------------------------------------------------------------------
def description(obj: Obj) -> dict[str, str]:
    """Everything a reader sees of ``obj``: its size, colour and shape."""
    return {a: getattr(obj, a) for a in SEEN}


def phrase(described: Mapping[str, str]) -> str:
    """``small red cube``, ``red thing``: a CLEVR noun phrase of the seen attributes."""
    words = [described[a] for a in ("size", "color") if a in described]
    return " ".join(words + [described.get("shape", "thing")])


def fits(obj: Obj, described: Mapping[str, str]) -> bool:
    return all(getattr(obj, a) == v for a, v in described.items())


def matches(frame: Frame, described: Mapping[str, str]) -> list[int]:
    """The identities of the objects of ``frame`` that ``described`` fits."""
    return [i for i, o in zip(frame.ids, frame.scene.objects) if fits(o, described)]


def unique_phrases(obj: Obj, identity: int, frames: Sequence[Frame]) -> list[str]:
    """Every phrase of ``obj``'s seen attributes (any of its size, colour and shape, "thing"
    for no shape) that fits it alone in each of ``frames``: the answers a scorer accepts,
    the fullest first."""
    full = description(obj)
    out = []
    for n in range(3, 0, -1):
        for keys in combinations(SEEN, n):
            described = {k: full[k] for k in keys}
            if all(matches(f, described) == [identity] for f in frames):
                out.append(phrase(described))
    return out


def _described(value: Any, where: str) -> dict[str, str]:
    if not isinstance(value, Mapping) or not value or not set(value) <= set(SEEN) or not all(
            value[a] in ATTRIBUTES[a] for a in value):
        raise ValueError(f"expected {where} as a description: some of {list(SEEN)} with their values, got {value!r}")
    return dict(value)


def _frame_number(value: Any, frames: Sequence[Frame], where: str) -> int:
    if not is_int(value, 1, len(frames)):
        raise ValueError(f"expected {where} as a frame number in [1, {len(frames)}], got {value!r}")
    return value


def _window(question: Mapping[str, Any], frames: Sequence[Frame]) -> tuple[int, int]:
    pair = question.get("frames")
    if not isinstance(pair, (list, tuple)) or len(pair) != 2:
        raise ValueError(f"expected frames as [i, j], got {pair!r}")
    i, j = (_frame_number(v, frames, "frames") for v in pair)
    if not i < j:
        raise ValueError(f"expected frames [i, j] with i < j, got {list(pair)}")
    return i, j


# -- answers ----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Derived:
    """A question's answer, the other spellings a scorer accepts, and what a reader must
    see to settle it: ``(frame number, identity, what)`` per object.

    What a reader must see, per kind: ``moved``, the mover in both frames (the question
    says one object moved: seen in two places, it is the one); ``added`` and ``removed``,
    every object of both frames (an object is new, or gone, only when matched against every
    object of the other frame, so a count of 0 has evidence too); ``recolor``, the object
    in the frame the question names it in and in the frames either side of its change;
    ``first_frame``, the object in the frame that first shows it and every object of every
    earlier frame (each seen not to fit the description)."""

    answer: str
    golds: tuple[str, ...]
    seen: tuple[tuple[int, int, str], ...]


def moved(frames: Sequence[Frame], i: int, j: int) -> int:
    """The identity of the one object whose place differs between frames ``i`` and ``j``
    (the same objects in both, the mover looking alike in both)."""
    a, b = frames[i - 1], frames[j - 1]
    if sorted(a.ids) != sorted(b.ids):
        raise InvalidEdit("ambiguous", f"objects were added or removed between frame {i} and frame {j}, so 'which "
                          "object moved' has no single answer")
    movers = [k for k in a.ids if (a.obj(k).x, a.obj(k).y) != (b.obj(k).x, b.obj(k).y)]
    if len(movers) != 1:
        raise InvalidEdit("ambiguous", f"{len(movers)} objects moved between frame {i} and frame {j}, not one")
    if description(a.obj(movers[0])) != description(b.obj(movers[0])):
        raise InvalidEdit("ambiguous", f"the object that moved between frame {i} and frame {j} also changed its "
                          "looks, so no one description names it in both")
    return movers[0]


def derive(frames: Sequence[Frame], question: Mapping[str, Any]) -> Derived:
    """The answer to ``question`` (see the module notes) on ``frames``."""
    if not isinstance(question, Mapping) or question.get("kind") not in KINDS:
        raise ValueError(f"expected a question with kind in {list(KINDS)}, got {question!r}")
    kind = question["kind"]
    if kind == "moved":
        i, j = _window(question, frames)
        mover = moved(frames, i, j)
        obj = frames[i - 1].obj(mover)
        golds = unique_phrases(obj, mover, (frames[i - 1], frames[j - 1]))
        if phrase(description(obj)) not in golds:
            raise InvalidEdit("ambiguous", f"another {phrase(description(obj))} shows in frame {i} or frame {j}")
        what = phrase(description(obj))
        return Derived(golds[0], tuple(golds[1:]), ((i, mover, what), (j, mover, what)))
    if kind in ("added", "removed"):
        i, j = _window(question, frames)
        a, b = frames[i - 1], frames[j - 1]
        changed = [k for k in b.ids if k not in a.ids] if kind == "added" else [k for k in a.ids if k not in b.ids]
        # a reader tells an object new (or gone) only by matching every object of one frame
        # against every object of the other: all of both are evidence, not only the changed
        seen = tuple((n, k, f"{kind} {phrase(description(f.obj(k)))}" if k in changed else
                      f"{phrase(description(f.obj(k)))} in frame {n}") for n, f in ((i, a), (j, b)) for k in f.ids)
        return Derived(str(len(changed)), (), seen)
    if kind == "recolor":
        i = _frame_number(question.get("frame"), frames, "frame")
        described = _described(question.get("object"), "object")
        found = matches(frames[i - 1], described)
        if len(found) != 1:
            raise InvalidEdit("ambiguous", f"{len(found)} objects in frame {i} are a {phrase(described)}, not one")
        target = found[0]
        changes = [k for k in range(i, len(frames)) if frames[k].obj(target) is not None
                   and frames[k].obj(target).color != frames[k - 1].obj(target).color]
        if len(changes) != 1:
            raise InvalidEdit("ambiguous", f"the {phrase(described)} of frame {i} changes colour {len(changes)} times "
                              "later, not once")
        after = changes[0]  # 0-based index of the frame that first shows the new colour
        what = phrase(described)
        # the object as the question names it (in frame i), then on both sides of its change
        named = ((i, target, f"{what} in frame {i}"),) if i < after else ()
        return Derived(frames[after].obj(target).color, (),
                       named + ((after, target, f"{what} before"), (after + 1, target, f"{what} after")))
    described = _described(question.get("object"), "object")
    for k, frame in enumerate(frames):
        found = matches(frame, described)
        if found:
            if len(found) != 1:
                raise InvalidEdit("ambiguous", f"frame {k + 1}, the first to show a {phrase(described)}, shows "
                                  f"{len(found)}")
            # "first" rules out every earlier frame: each of its objects must be seen not to fit
            earlier = tuple((n + 1, ident, f"{phrase(description(f.obj(ident)))} in frame {n + 1}")
                            for n, f in enumerate(frames[:k]) for ident in f.ids)
            return Derived(str(k + 1), (f"frame {k + 1}",), ((k + 1, found[0], phrase(described)),) + earlier)
    raise InvalidEdit("ambiguous", f"no frame shows a {phrase(described)}")


def names_size(question: Mapping[str, Any]) -> bool:
    """Whether the question or its answer names an object's size: ``moved`` answers with
    a full description, ``recolor`` and ``first_frame`` name their object by one."""
    if question.get("kind") == "moved":
        return True
    described = question.get("object")
    return isinstance(described, Mapping) and "size" in described


def size_unseen(frames: Sequence[Frame], question: Mapping[str, Any]) -> str | None:
    """Why a size the question or its answer names cannot be seen, or ``None``: some frame
    whose large objects a reader cannot tell from its small ones
    (:func:`~vicogym.structures.clevr.size_problem`). Every frame counts: the sheet a
    reader starts from shows them all, and a description is read across them."""
    if not names_size(question):
        return None
    for number, frame in enumerate(frames, 1):
        problem = size_problem(frame.scene)
        if problem is not None:
            return f"the question names sizes, but in frame {number} {problem}"
    return None


def question_text(question: Mapping[str, Any]) -> str:
    """The question as a reader is asked it."""
    kind = question["kind"]
    if kind == "moved":
        i, j = question["frames"]
        return (f"Exactly one object changes its position between Frame {i} and Frame {j}. Which object is it? "
                "Answer with its size, colour and shape (e.g. \"large gray cylinder\").")
    if kind in ("added", "removed"):
        i, j = question["frames"]
        if kind == "added":
            return f"How many objects were added to the scene between Frame {i} and Frame {j}?"
        return f"How many objects were removed from the scene between Frame {i} and Frame {j}?"
    if kind == "recolor":
        return (f"The {phrase(question['object'])} in Frame {question['frame']} changes its colour later in the "
                "sequence. What colour does it become?")
    return (f"Which frame is the first to show a {phrase(question['object'])}? Answer with the frame number.")


def candidates(frames: Sequence[Frame], kind: str) -> list[dict[str, Any]]:
    """Every question of ``kind`` the frames answer (and whose answer names something that
    changed: no count of zero, no first frame that is frame 1), in a fixed order."""
    out: list[dict[str, Any]] = []
    n = len(frames)
    if kind in ("moved", "added", "removed"):
        for i in range(1, n):
            for j in range(i + 1, n + 1):
                question = {"kind": kind, "frames": [i, j]}
                try:
                    derived = derive(frames, question)
                except InvalidEdit:
                    continue
                if kind == "moved" or derived.answer != "0":
                    out.append(question)
    elif kind == "recolor":
        for step in range(1, n):
            for identity in frames[step].ids:
                before = frames[step - 1].obj(identity)
                if before is None or before.color == frames[step].obj(identity).color:
                    continue
                # the frames from which this is the object's only later change of colour, earliest first
                first = step - 1
                while first > 0 and frames[first - 1].obj(identity) is not None and \
                        frames[first - 1].obj(identity).color == before.color:
                    first -= 1
                for start in range(first, step):
                    question = {"kind": "recolor", "frame": start + 1,
                                "object": description(frames[start].obj(identity))}
                    try:
                        derive(frames, question)
                    except InvalidEdit:
                        continue
                    out.append(question)
                    break
    elif kind == "first_frame":
        for step in range(1, n):
            for identity in frames[step].ids:
                before = frames[step - 1].obj(identity)
                now = frames[step].obj(identity)
                if before is not None and before.color == now.color:
                    continue  # neither added nor recoloured here
                question = {"kind": "first_frame", "object": description(now)}
                try:
                    derived = derive(frames, question)
                except InvalidEdit:
                    continue
                if derived.answer == str(step + 1) and question not in out:
                    out.append(question)
    else:
        raise ValueError(f"expected a question kind in {list(KINDS)}, got {kind!r}")
    return out


def distractors(frames: Sequence[Frame], question: Mapping[str, Any], derived: Derived) -> list[str]:
    """Plausible wrong answers: another object of the frames compared, a count one or two
    off, another colour (the old one first), a neighbouring frame."""
    kind = question["kind"]
    if kind == "moved":
        i, j = question["frames"]
        right = set((derived.answer,) + derived.golds)
        others = [phrase(description(o)) for o in frames[i - 1].scene.objects]
        return list(dict.fromkeys(p for p in others if p not in right))
    if kind in ("added", "removed"):
        n = int(derived.answer)
        return [str(m) for m in (n - 1, n + 1, n - 2, n + 2) if 0 <= m <= MAX_OBJECTS]
    if kind == "recolor":
        old = question["object"]["color"]
        return [old] + [c for c in ATTRIBUTES["color"] if c not in (old, derived.answer)]
    k = int(derived.answer)
    return [str(m) for m in (k - 1, k + 1, 1, len(frames)) if 1 <= m <= len(frames) and m != k][:3]


def answer(meta: Mapping[str, Any]) -> str:
    """A sequence task's answer from its ``meta`` alone: ``initial`` (the scene JSON),
    ``edits`` and ``question``, re-derived."""
    frames = replay(Scene.from_dict(meta["initial"]), meta["edits"])
    return derive(frames, meta["question"]).answer
