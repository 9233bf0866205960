"""Edits of the CLEVR arm: op schemas, pure ``apply`` with CLEVR's placement rules, and a
sampler.

Ops (``{"op": name, ...}``; objects are addressed by index):

===============  ======================================  ==================================
op               fields                                  changes
===============  ======================================  ==================================
add_object       shape, color, material, size, x, y,     a new object on the floor
                 [rotation]
remove_object    object                                  drops an object
set_color        object, color                           one attribute
set_material     object, material
set_size         object, size
set_shape        object, shape
move             object, x, y                            an object's ground position
swap             a, b                                    two objects trade positions
jitter_camera    dx, dy, dz (each within +-0.5)          the camera's position (at most
                                                         1 from CLEVR's, per axis)
jitter_lights    [key, fill, back] ([dx, dy, dz] each    the three-point rig
                 within +-2), [intensity] (0.5-1.5)
stop             (none)                                  ends the episode
===============  ======================================  ==================================

``{"replace": scene}`` replaces the whole scene (CLEVR's scene JSON), validated by the same
rules. After every edit the scene must keep CLEVR's rules: 3 to 10 objects on the floor
(``|x|, |y| <= 3``), at least 0.25 apart (surface to surface), and, along the camera's
left/right/front/behind, either not offset or offset by at least 0.4 (so relations are
never borderline). Directions, relationships and pixel coordinates are derived from the
scene, so they are recomputed by construction.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

import numpy as np

from vicogym.core import Edit, fold_ops
from vicogym.core import short_repr as _short
from vicogym.errors import InvalidEdit
from vicogym.structures.clevr import (
    ATTRIBUTES,
    FLOOR,
    MAX_OBJECTS,
    MIN_OBJECTS,
    Camera,
    ClevrRule,
    Obj,
    Scene,
    free_spot,
    placement_problem,
)
from vicogym.validation import is_int, is_number, pick

CAMERA_REACH = 1.0  # the camera stays within this of CLEVR's position, per axis
CAMERA_STEP = 0.5

OP_FIELDS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "add_object": (("shape", "color", "material", "size", "x", "y"), ("rotation",)),
    "remove_object": (("object",), ()),
    "set_color": (("object", "color"), ()),
    "set_material": (("object", "material"), ()),
    "set_size": (("object", "size"), ()),
    "set_shape": (("object", "shape"), ()),
    "move": (("object", "x", "y"), ()),
    "swap": (("a", "b"), ()),
    "jitter_camera": (("dx", "dy", "dz"), ()),
    "jitter_lights": ((), ("key", "fill", "back", "intensity")),
    "stop": ((), ()),
}
#: JSON Schemas of the ops' fields (with :data:`OP_FIELDS`, the edit schema an LLM rewriter gets)
FIELD_SCHEMAS = {
    "object": {"type": "integer", "minimum": 0, "description": "an object's index in the scene"},
    "a": {"type": "integer", "minimum": 0},
    "b": {"type": "integer", "minimum": 0},
    "shape": {"enum": list(ATTRIBUTES["shape"])},
    "color": {"enum": list(ATTRIBUTES["color"])},
    "material": {"enum": list(ATTRIBUTES["material"])},
    "size": {"enum": list(ATTRIBUTES["size"])},
    **{f: {"type": "number"} for f in ("x", "y", "rotation", "dx", "dy", "dz", "intensity")},
    **{
        f: {"type": "array", "items": {"type": "number"}, "minItems": 3, "maxItems": 3} for f in ("key", "fill", "back")
    },
}


def _number(value: Any, field: str, low: float, high: float) -> float:
    if not is_number(value, finite=False):
        raise InvalidEdit("bad_value", f"{field} must be a number, got {_short(value)}", field=field)
    if isinstance(value, float) and not math.isfinite(value) or not low <= value <= high:
        raise InvalidEdit("bad_value", f"{field} must be within [{low:g}, {high:g}], got {_short(value)}", field=field)
    return float(value)


def _choice(value: Any, field: str, allowed: tuple[str, ...]) -> str:
    if not isinstance(value, str) or value not in allowed:
        raise InvalidEdit("bad_value", f"{field} must be one of {list(allowed)}, got {_short(value)}", field=field)
    return value


def _index(scene: Scene, value: Any, field: str) -> int:
    if not is_int(value):
        raise InvalidEdit("bad_field", f"{field} must be an object index, got {_short(value)}", field=field)
    if not 0 <= value < len(scene.objects):
        held = f"objects 0-{len(scene.objects) - 1}" if scene.objects else "no objects left"
        raise InvalidEdit("not_found", f"{field} {_short(value)} is not an object; the scene has {held}", field=field)
    return value


def _set(attribute: str) -> Callable[[Scene, Mapping[str, Any]], Scene]:
    def op(scene: Scene, fields: Mapping[str, Any]) -> Scene:
        i = _index(scene, fields["object"], "object")
        value = _choice(fields[attribute], attribute, ATTRIBUTES[attribute])
        objects = list(scene.objects)
        objects[i] = replace(objects[i], **{attribute: value})
        return scene.with_objects(tuple(objects))

    return op


def _add(scene: Scene, fields: Mapping[str, Any]) -> Scene:
    obj = Obj(*(_choice(fields[a], a, ATTRIBUTES[a]) for a in ("shape", "color", "material", "size")),
              _number(fields["x"], "x", -FLOOR, FLOOR), _number(fields["y"], "y", -FLOOR, FLOOR),
              _number(fields.get("rotation", 0.0), "rotation", 0.0, 360.0))
    return scene.with_objects(scene.objects + (obj,))


def _remove(scene: Scene, fields: Mapping[str, Any]) -> Scene:
    i = _index(scene, fields["object"], "object")
    if len(scene.objects) <= MIN_OBJECTS:
        raise InvalidEdit("object_count", f"a scene holds {MIN_OBJECTS}-{MAX_OBJECTS} objects, this edit leaves "
                          f"{len(scene.objects) - 1}", field="object")
    return scene.with_objects(scene.objects[:i] + scene.objects[i + 1 :])


def _move(scene: Scene, fields: Mapping[str, Any]) -> Scene:
    i = _index(scene, fields["object"], "object")
    objects = list(scene.objects)
    objects[i] = replace(objects[i], x=_number(fields["x"], "x", -FLOOR, FLOOR),
                         y=_number(fields["y"], "y", -FLOOR, FLOOR))
    return scene.with_objects(tuple(objects))


def _swap(scene: Scene, fields: Mapping[str, Any]) -> Scene:
    a, b = _index(scene, fields["a"], "a"), _index(scene, fields["b"], "b")
    if a == b:
        raise InvalidEdit("bad_value", "swap needs two different objects", field="b")
    objects = list(scene.objects)
    oa, ob = objects[a], objects[b]
    objects[a], objects[b] = replace(oa, x=ob.x, y=ob.y), replace(ob, x=oa.x, y=oa.y)
    return scene.with_objects(tuple(objects))


def _jitter_camera(scene: Scene, fields: Mapping[str, Any]) -> Scene:
    delta = [_number(fields[k], k, -CAMERA_STEP, CAMERA_STEP) for k in ("dx", "dy", "dz")]
    location = tuple(c + d for c, d in zip(scene.camera.location, delta))
    base = Camera().location
    if any(abs(c - b) > CAMERA_REACH + 1e-9 for c, b in zip(location, base)):
        raise InvalidEdit("bad_value", f"the camera may move at most {CAMERA_REACH:g} from its place per axis; this "
                          f"jitter takes it to {[round(c, 3) for c in location]}", field="dx")
    return replace(scene, camera=replace(scene.camera, location=location))


def _jitter_lights(scene: Scene, fields: Mapping[str, Any]) -> Scene:
    changes = {k: v for k, v in fields.items() if k != "op"}
    try:
        return replace(scene, lights=replace(scene.lights, **changes))
    except (TypeError, ValueError) as exc:
        raise InvalidEdit("bad_value", str(exc), field=next(iter(changes))) from None


OPS: dict[str, Callable[[Scene, Mapping[str, Any]], Scene]] = {
    "add_object": _add, "remove_object": _remove, "move": _move, "swap": _swap,
    "jitter_camera": _jitter_camera, "jitter_lights": _jitter_lights,
    **{f"set_{a}": _set(a) for a in ATTRIBUTES},
}


def apply(scene: Scene, edit: Edit | Mapping[str, Any] | str, rule: ClevrRule) -> Scene:
    """The scene after ``edit``, or ``InvalidEdit``. Pure; the label is re-derived by the
    caller (any change is allowed as long as the question still has one answer)."""
    edit = Edit.parse(edit)
    if edit.replace is not None:
        try:
            new = Scene.from_dict(edit.replace, scene.width, scene.height)
        except (TypeError, ValueError, KeyError, IndexError) as exc:
            raise InvalidEdit("malformed", f"replacement scene: {exc}", op="replace") from None
        if new.camera != scene.camera and any(abs(c - b) > CAMERA_REACH + 1e-9
                                              for c, b in zip(new.camera.location, Camera().location)):
            raise InvalidEdit("bad_value", "the camera may move at most 1 from its place per axis", op="replace")
        if (new.camera.rotation, new.camera.lens, new.camera.sensor) != (
                scene.camera.rotation, scene.camera.lens, scene.camera.sensor):
            raise InvalidEdit("bad_value", "a replacement may move the camera, not turn it or change its lens",
                              op="replace", field="camera")
        new = replace(new, image_index=scene.image_index, image_filename=scene.image_filename, split=scene.split)
        problem = placement_problem(new)
        if problem is not None:
            raise problem.at("replace")
        return new
    def step(current: Scene, op: Mapping[str, Any]) -> Scene:
        return OPS[op["op"]](current, op)

    current, stopped = fold_ops(edit, scene, step, OP_FIELDS)
    if stopped:
        return scene
    problem = placement_problem(current)
    if problem is not None:
        raise problem.at(f"ops[{len(edit.ops) - 1}] {edit.ops[-1]['op']}")
    return current


# -- sampling the edit space ---------------------------------------------------------------------
def sample_op(scene: Scene, rng: np.random.Generator) -> dict[str, Any]:
    """One op from the arm's edit space (it may still be rejected)."""
    kinds = ["set_color", "set_color", "set_material", "set_size", "set_shape", "move", "move", "add_object",
             "remove_object", "swap", "jitter_camera", "jitter_lights"]
    kind = pick(rng, kinds)
    n = len(scene.objects)
    i = int(rng.integers(n))
    if kind.startswith("set_"):
        attribute = kind[4:]
        values = [v for v in ATTRIBUTES[attribute] if v != getattr(scene.objects[i], attribute)]
        return {"op": kind, "object": i, attribute: pick(rng, values)}
    if kind == "move":
        spot = free_spot(scene, scene.objects[i].size, rng, ignore=i)
        if spot is not None:
            return {"op": "move", "object": i, "x": spot[0], "y": spot[1]}
    if kind == "add_object" and n < MAX_OBJECTS:
        size = ("large", "small")[int(rng.integers(2))]
        spot = free_spot(scene, size, rng)
        if spot is not None:
            return {"op": "add_object", "x": spot[0], "y": spot[1], "size": size,
                    **{a: pick(rng, ATTRIBUTES[a]) for a in ("shape", "color", "material")},
                    "rotation": round(float(rng.uniform(0, 360)), 1)}
    if kind == "remove_object" and n > MIN_OBJECTS:
        return {"op": "remove_object", "object": i}
    if kind == "swap" and n >= 2:
        j = int(rng.integers(n - 1))
        return {"op": "swap", "a": i, "b": j + (j >= i)}
    if kind == "jitter_camera":
        return {"op": "jitter_camera", **{k: round(float(rng.uniform(-0.3, 0.3)), 3) for k in ("dx", "dy", "dz")}}
    if kind == "jitter_lights":
        return {"op": "jitter_lights", "key": [round(float(v), 2) for v in rng.uniform(-1, 1, 3)],
                "intensity": round(float(rng.uniform(0.8, 1.2)), 2)}
    values = [v for v in ATTRIBUTES["color"] if v != scene.objects[i].color]
    return {"op": "set_color", "object": i, "color": pick(rng, values)}
