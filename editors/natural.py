"""Edits of the natural-image arm: op schemas, question-type guards and a pure ``apply``.

An edit changes only the complement of the protected region (the targets grown by the
scene's margin). ``apply`` validates ops against the current canvas and appends them to
the scene; the renderer replays them on the source image and the environment then proves,
pixel by pixel, that no protected pixel changed. Boxes are ``[x0, y0, x1, y1]`` in the
current canvas (after earlier pads and crops), x1 and y1 exclusive.

===========  =========================================  =======================================
op           fields                                     changes
===========  =========================================  =======================================
remove       box                                        inpaints the box away (clear of targets)
recolor      hue (-180..180, not 0), [box]              turns hues
desaturate   amount (0 < a <= 1), [box]                 drains colour
blur         sigma (0.5..8), [box]                      Gaussian blur
noise        sigma (1..40), [box]                       Gaussian noise (seeded)
contrast     factor (0.5..1.5, not 1), [box]            stretches or flattens contrast
brightness   delta (-60..60, not 0), [box]              lightens or darkens
jpeg         quality (10..95)                           JPEG artefacts
paste        source (box clear of targets), to [x, y]   copies a patch as a distractor
pad          top, bottom, left, right (0..256), [fill]  grows the canvas
crop         box (keeps every target whole)             shrinks the canvas
stop         (none)                                     ends the episode
===========  =========================================  =======================================

Guards by question type, so the answer cannot change: a counting question (answer type
``number``) refuses ``remove``, ``paste`` and ``crop`` (an uncounted instance could lie
anywhere); a colour question refuses colour ops (recolor, desaturate, contrast,
brightness) unless their box stays clear of every target's box grown by the margin; a
question about where things lie (left, top, corner, middle ...) refuses ``pad`` and
``crop``; a question answered "no" refuses ``paste`` (a patch could add what it asks
about).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from vicogym.core import Edit, fold_ops
from vicogym.core import short_repr as _short
from vicogym.errors import InvalidEdit
from vicogym.structures.natural import Frame, ProtectedRule, Scene, frame_of
from vicogym.validation import is_int, is_number

#: op -> (required fields, optional fields)
OP_FIELDS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "remove": (("box",), ()),
    "recolor": (("hue",), ("box",)),
    "desaturate": (("amount",), ("box",)),
    "blur": (("sigma",), ("box",)),
    "noise": (("sigma",), ("box",)),
    "contrast": (("factor",), ("box",)),
    "brightness": (("delta",), ("box",)),
    "jpeg": (("quality",), ()),
    "paste": (("source", "to"), ()),
    "pad": (("top", "bottom", "left", "right"), ("fill",)),
    "crop": (("box",), ()),
    "stop": ((), ()),
}
#: JSON Schemas of the ops' fields (with :data:`OP_FIELDS`, the edit schema an LLM rewriter gets)
FIELD_SCHEMAS = {
    "box": {"type": "array", "items": {"type": "integer"}, "minItems": 4, "maxItems": 4,
            "description": "[x0, y0, x1, y1] in the current image's pixels, clear of the targets"},
    "source": {"type": "array", "items": {"type": "integer"}, "minItems": 4, "maxItems": 4},
    "to": {"type": "array", "items": {"type": "integer"}, "minItems": 2, "maxItems": 2},
    "fill": {"type": "array", "items": {"type": "integer", "minimum": 0, "maximum": 255}, "minItems": 3,
             "maxItems": 3},
    "hue": {"type": "number", "minimum": -180, "maximum": 180},
    "amount": {"type": "number", "minimum": 0, "maximum": 1},
    "sigma": {"type": "number", "minimum": 0.5, "maximum": 40},
    "factor": {"type": "number", "minimum": 0.5, "maximum": 1.5},
    "delta": {"type": "number", "minimum": -60, "maximum": 60},
    "quality": {"type": "integer", "minimum": 10, "maximum": 95},
    **{side: {"type": "integer", "minimum": 0, "maximum": 256} for side in ("top", "bottom", "left", "right")},
}

#: field -> (low, high, value that changes nothing or None)
RANGES = {"hue": (-180, 180, 0), "amount": (0, 1, 0), "sigma_blur": (0.5, 8, None), "sigma_noise": (1, 40, None),
          "factor": (0.5, 1.5, 1), "delta": (-60, 60, 0), "quality": (10, 95, None), "pad": (0, 256, None)}
COLOUR_OPS = ("recolor", "desaturate", "contrast", "brightness")
MAX_CANVAS = 4096
MAX_OPS = 64
COLOUR_QUESTION = re.compile(r"\b(colou?rs?|hue)\b", re.IGNORECASE)
#: a question about where something lies in the picture: the frame is part of its answer
POSITION_QUESTION = re.compile(r"\b(left|right|top|bottom|upper|lower|corner|cent(er|re)|middle|edge|side|half)\b",
                               re.IGNORECASE)


def _number(value: Any, field: str, low: float, high: float, still: float | None = None) -> float:
    if not is_number(value):
        raise InvalidEdit("bad_value", f"{field} must be a number, got {_short(value)}", field=field)
    if not low <= value <= high:
        raise InvalidEdit("bad_value", f"{field} must be within [{low:g}, {high:g}], got {_short(value)}", field=field)
    if still is not None and value == still:
        raise InvalidEdit("no_change", f"{field} {value:g} changes nothing", field=field)
    return value


def _box(value: Any, field: str, frame: Frame) -> tuple[int, int, int, int]:
    if not isinstance(value, (list, tuple)) or len(value) != 4 or not all(
            isinstance(v, int) and not isinstance(v, bool) for v in value):
        raise InvalidEdit("bad_value", f"{field} must be [x0, y0, x1, y1] in whole pixels, got {_short(value)}",
                          field=field)
    x0, y0, x1, y1 = value
    if not (0 <= x0 < x1 <= frame.width and 0 <= y0 < y1 <= frame.height):
        raise InvalidEdit("bad_value", f"{field} {list(value)} must be a non-empty box inside the {frame.width} x "
                          f"{frame.height} canvas", field=field)
    return x0, y0, x1, y1


def _overlaps(a: tuple[int, int, int, int], b: tuple[int, int, int, int]) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


def guarded_boxes(scene: Scene, frame: Frame) -> list[tuple[int, int, int, int]]:
    """Every target's box grown by the margin, in canvas coordinates."""
    m = scene.margin
    return [frame.place((b[0] - m, b[1] - m, b[2] + m, b[3] + m)) for b in (t.bounds() for t in scene.record.targets)]


def _check_clear(box: tuple[int, int, int, int], field: str, guarded: list[tuple[int, int, int, int]],
                 scene: Scene) -> None:
    for target, grown in zip(scene.record.targets, guarded):
        if _overlaps(box, grown):
            raise InvalidEdit("protected", f"{field} {list(box)} reaches the {target.label} (its box grown by "
                              f"{scene.margin} px is {list(grown)}); choose a region clear of the targets", field=field)


def _guard(name: str, op: Mapping[str, Any], scene: Scene, guarded: list[tuple[int, int, int, int]]) -> None:
    record = scene.record
    if record.answer_type == "number" and name in ("remove", "paste", "crop"):
        raise InvalidEdit("guarded", f"{name} is refused for a counting question: an uncounted "
                          f"{record.targets[0].label} could lie where it reaches", field="op")
    if name in COLOUR_OPS and COLOUR_QUESTION.search(record.question) and "box" not in op:
        raise InvalidEdit("guarded", f"{name} over the whole image is refused for a colour question; give a box "
                          "clear of the targets", field="box")
    if name in ("pad", "crop") and POSITION_QUESTION.search(record.question):
        raise InvalidEdit("guarded", f"{name} is refused for a question about where things lie in the picture: moving "
                          "the frame could move the answer", field="op")
    if name == "paste" and record.answer == "no":
        raise InvalidEdit("guarded", "paste is refused when the answer is no: a pasted patch could add what the "
                          "question asks about", field="op")


def _validate(op: Mapping[str, Any], scene: Scene, frame: Frame) -> tuple[dict[str, Any], Frame]:
    """The op in canonical form and the canvas after it, or ``InvalidEdit``."""
    name = op["op"]
    guarded = guarded_boxes(scene, frame)
    _guard(name, op, scene, guarded)
    out: dict[str, Any] = {"op": name}
    if "box" in OP_FIELDS[name][0] + OP_FIELDS[name][1] and "box" in op:
        out["box"] = list(_box(op["box"], "box", frame))
        if name != "crop":
            _check_clear(tuple(out["box"]), "box", guarded, scene)
    if name in ("recolor", "desaturate", "contrast", "brightness", "jpeg"):
        field = {"recolor": "hue", "desaturate": "amount", "contrast": "factor", "brightness": "delta",
                 "jpeg": "quality"}[name]
        low, high, still = RANGES[field]
        out[field] = _number(op[field], field, low, high, still)
        if name == "jpeg" and (isinstance(op[field], float) and not float(op[field]).is_integer()):
            raise InvalidEdit("bad_value", f"quality must be a whole number, got {_short(op[field])}", field=field)
    elif name in ("blur", "noise"):
        low, high, _ = RANGES[f"sigma_{name}"]
        out["sigma"] = _number(op["sigma"], "sigma", low, high)
    elif name == "paste":
        source = _box(op["source"], "source", frame)
        _check_clear(source, "source", guarded, scene)
        to = op["to"]
        if not isinstance(to, (list, tuple)) or len(to) != 2 or not all(isinstance(v, int) and not isinstance(v, bool)
                                                                         for v in to):
            raise InvalidEdit("bad_value", f"to must be [x, y] in whole pixels, got {_short(to)}", field="to")
        w, h = source[2] - source[0], source[3] - source[1]
        placed = _box([to[0], to[1], to[0] + w, to[1] + h], "to", frame)
        _check_clear(placed, "to", guarded, scene)
        if placed == source:
            raise InvalidEdit("no_change", "pasting a patch onto itself changes nothing", field="to")
        out.update(source=list(source), to=[to[0], to[1]])
    elif name == "pad":
        for side in ("top", "bottom", "left", "right"):
            value = op[side]
            if not is_int(value, 0, RANGES["pad"][1]):
                raise InvalidEdit("bad_value", f"{side} must be a whole number of pixels in [0, 256], got "
                                  f"{_short(value)}", field=side)
            out[side] = value
        if not any(out[s] for s in ("top", "bottom", "left", "right")):
            raise InvalidEdit("no_change", "a pad of 0 on every side changes nothing", field="op")
        fill = op.get("fill", [0, 0, 0])
        if not isinstance(fill, (list, tuple)) or len(fill) != 3 or not all(
                isinstance(v, int) and not isinstance(v, bool) and 0 <= v <= 255 for v in fill):
            raise InvalidEdit("bad_value", f"fill must be [r, g, b] with each 0-255, got {_short(fill)}", field="fill")
        out["fill"] = list(fill)
        frame = Frame(frame.width + out["left"] + out["right"], frame.height + out["top"] + out["bottom"],
                      frame.dx + out["left"], frame.dy + out["top"])
        if max(frame.width, frame.height) > MAX_CANVAS:
            raise InvalidEdit("bad_value", f"the canvas would be {frame.width} x {frame.height}, over {MAX_CANVAS} "
                              "pixels a side", field="op")
    elif name == "crop":
        x0, y0, x1, y1 = out["box"]
        if (x0, y0, x1, y1) == (0, 0, frame.width, frame.height):
            raise InvalidEdit("no_change", "cropping to the whole canvas changes nothing", field="box")
        for target, grown in zip(scene.record.targets, guarded):
            need = (max(0, grown[0]), max(0, grown[1]), min(frame.width, grown[2]), min(frame.height, grown[3]))
            if not (x0 <= need[0] and y0 <= need[1] and need[2] <= x1 and need[3] <= y1):
                raise InvalidEdit("protected", f"box {out['box']} cuts the {target.label} (its box grown by "
                                  f"{scene.margin} px is {list(grown)}); every target must stay whole", field="box")
        frame = Frame(x1 - x0, y1 - y0, frame.dx - x0, frame.dy - y0)
    return out, frame


def apply(scene: Scene, edit: Edit | Mapping[str, Any] | str, rule: ProtectedRule | None = None) -> Scene:
    """The scene with ``edit``'s ops appended, or ``InvalidEdit`` naming the op, field and
    reason. Pure; the answer is preserved by construction (the renderer's replay and the
    environment's pixel proof make it so)."""
    edit = Edit.parse(edit)
    if edit.replace is not None:
        raise InvalidEdit("malformed", "the natural-image arm edits by ops only; a replacement image cannot be proved "
                          "to keep the answer", op="replace")
    def step(state: tuple[list[dict[str, Any]], Frame], op: Mapping[str, Any]) -> tuple[list[dict[str, Any]], Frame]:
        canonical, frame = _validate(op, scene, state[1])
        return state[0] + [canonical], frame

    (ops, _frame), stopped = fold_ops(edit, (list(scene.ops), frame_of(scene)), step, OP_FIELDS)
    if stopped:
        return scene
    if len(ops) > MAX_OPS:
        raise InvalidEdit("bad_value", f"a scene holds at most {MAX_OPS} ops; this edit makes {len(ops)}", field="op")
    return replace(scene, ops=tuple(ops))


#: the smallest box side :func:`sample_op` draws (a smaller patch is no edit a reader sees)
MIN_SIDE = 8


def _free_box(frame: Frame, guarded: list[tuple[int, int, int, int]], rng: Any,
              share: tuple[float, float] = (0.08, 0.35)) -> list[int] | None:
    """A random box of the canvas clear of every guarded box, or ``None`` (no free spot
    found): anchored at a free pixel, extending in a random direction, halved until clear."""
    for _ in range(32):
        x, y = int(rng.integers(frame.width)), int(rng.integers(frame.height))
        if any(g[0] <= x < g[2] and g[1] <= y < g[3] for g in guarded):
            continue
        w = max(MIN_SIDE, int(frame.width * rng.uniform(*share)))
        h = max(MIN_SIDE, int(frame.height * rng.uniform(*share)))
        left, up = bool(rng.integers(2)), bool(rng.integers(2))
        while True:
            x0, x1 = (max(0, x - w + 1), x + 1) if left else (x, min(frame.width, x + w))
            y0, y1 = (max(0, y - h + 1), y + 1) if up else (y, min(frame.height, y + h))
            box = (x0, y0, x1, y1)
            if x1 - x0 < MIN_SIDE or y1 - y0 < MIN_SIDE:  # clipped by the canvas's edge
                break
            if not any(_overlaps(box, g) for g in guarded):
                return list(box)
            if w <= MIN_SIDE and h <= MIN_SIDE:
                break
            w, h = max(MIN_SIDE, w // 2), max(MIN_SIDE, h // 2)
    return None


def sample_op(scene: Scene, rng: Any) -> dict[str, Any]:
    """A random op of the edit space for ``scene`` (``rng``: a NumPy generator): boxes are
    drawn clear of the targets; the guards and ranges are left to :func:`apply`, which the
    caller runs (an op may still be refused)."""
    frame = frame_of(scene)
    guarded = guarded_boxes(scene, frame)
    name = str(rng.choice(["remove", "recolor", "desaturate", "blur", "noise", "contrast", "brightness", "jpeg",
                           "paste", "pad", "crop"]))
    op: dict[str, Any] = {"op": name}
    if name in ("recolor", "desaturate", "blur", "noise", "contrast", "brightness"):
        value = {"recolor": lambda: int(rng.choice([-1, 1]) * rng.integers(20, 181)),
                 "desaturate": lambda: round(float(rng.uniform(0.3, 1.0)), 2),
                 "blur": lambda: round(float(rng.uniform(1.0, 6.0)), 1),
                 "noise": lambda: round(float(rng.uniform(5.0, 30.0)), 1),
                 "contrast": lambda: round(float(rng.choice([rng.uniform(0.5, 0.85), rng.uniform(1.15, 1.5)])), 2),
                 "brightness": lambda: int(rng.choice([-1, 1]) * rng.integers(15, 61))}[name]()
        op[{"recolor": "hue", "desaturate": "amount", "blur": "sigma", "noise": "sigma", "contrast": "factor",
            "brightness": "delta"}[name]] = value
        box = _free_box(frame, guarded, rng) if rng.random() < 0.6 else None
        if box is not None:
            op["box"] = box
    elif name == "jpeg":
        op["quality"] = int(rng.integers(10, 60))
    elif name in ("remove", "paste"):
        box = _free_box(frame, guarded, rng, (0.05, 0.25))
        spot = _free_box(frame, guarded, rng, (0.05, 0.25))
        if box is None or spot is None:  # no room beside the targets: an edit of the whole image instead
            return {"op": "jpeg", "quality": int(rng.integers(10, 60))}
        if name == "remove":
            op["box"] = box
        else:
            w, h = box[2] - box[0], box[3] - box[1]
            op.update(source=box, to=[min(spot[0], frame.width - w), min(spot[1], frame.height - h)])
    elif name == "pad":
        sides = {
            side: int(rng.integers(0, 49)) * int(rng.random() < 0.6) for side in ("top", "bottom", "left", "right")
        }
        if not any(sides.values()):
            sides[str(rng.choice(list(sides)))] = int(rng.integers(8, 49))
        grey = int(rng.choice([0, 128, 255]))
        op.update(sides, fill=[grey, grey, grey])
    else:  # crop: keep every target (grown by the margin) with some slack
        x0 = min(max(0, g[0]) for g in guarded)
        y0 = min(max(0, g[1]) for g in guarded)
        x1 = max(min(frame.width, g[2]) for g in guarded)
        y1 = max(min(frame.height, g[3]) for g in guarded)
        op["box"] = [int(rng.integers(0, x0 + 1)), int(rng.integers(0, y0 + 1)),
                     int(rng.integers(x1, frame.width + 1)), int(rng.integers(y1, frame.height + 1))]
    return op


__all__ = ["COLOUR_OPS", "OP_FIELDS", "apply", "frame_of", "guarded_boxes", "sample_op"]
