"""The natural-image arm's records: an image, a question, its answer, and the targets the
answer depends on.

A :class:`Record` names its image by reference (``skimage:astronaut``, a scikit-image
sample; ``matplotlib:grace_hopper.jpg``, a matplotlib sample; or a file path, relative to
the records file), so records stay small plain data. Every answer-relevant target is a
:class:`Target`: a label (what it is: ``"coin"``, ``"helmet"``) and one of a box
``[x0, y0, x1, y1]`` (pixels, x1 and y1 exclusive), points ``[[x, y], ...]`` (prompts for a
segmenter; at least one) or a polygon ``[[x, y], ...]`` (at least three vertices).
Segmentation turns the targets into the protected masks that edits may not touch.
Everything round-trips through JSON (``to_dict`` / ``from_dict``); errors name the field.
"""

from __future__ import annotations

import hashlib
import math
import zlib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Literal, TypedDict

import numpy as np

from vicogym.errors import register_error_codes
from vicogym.validation import is_int

ERROR_CODES = {
    "protected": "an edit that reaches a target's protected region (its box grown by the margin), or a crop that "
                 "cuts a target",
    "guarded": "an edit that could change the answer for the question's type (a count, a colour)",
    "seam": "an edit that leaves the untouched protected region standing out from its edited surroundings",
    "cut": "an edit that changes what lies beyond a straight edge of the protected region (a target box's side), "
           "cutting an object or surface that runs across it along a line",
}
register_error_codes("natural", ERROR_CODES)

ANSWER_TYPES = ("yes/no", "number", "other")
GEOMETRIES = ("box", "points", "polygon")


#: how many pixels an edit fades in over from the edge of what it may change (the renderer
#: fades, and the checks measure past the fade)
FEATHER_PX = 12
#: the most pixels the renderer's and the checks' floating-point arithmetic holds at once
#: (a row band of the canvas: see :func:`row_bands`)
BAND_PIXELS = 1 << 21

#: a box of pixels ``(x0, y0, x1, y1)``, x1 and y1 exclusive
Box = tuple[int, int, int, int]


def mask_box(mask: np.ndarray) -> Box | None:
    """The smallest box ``(x0, y0, x1, y1)`` holding every pixel of ``mask`` (found from its
    row and column projections, without listing the pixels), or ``None`` when it is empty."""
    rows = np.flatnonzero(mask.any(axis=1))
    if not rows.size:
        return None
    cols = np.flatnonzero(mask.any(axis=0))
    return int(cols[0]), int(rows[0]), int(cols[-1]) + 1, int(rows[-1]) + 1


def grow(box: Box, by: int, width: int, height: int) -> Box:
    """``box`` grown by ``by`` pixels on every side, within the ``width`` x ``height`` image."""
    x0, y0, x1, y1 = box
    return max(0, x0 - by), max(0, y0 - by), min(width, x1 + by), min(height, y1 + by)


def box_slices(box: Box) -> tuple[slice, slice]:
    """``box`` as the (rows, columns) slices of an image."""
    return slice(box[1], box[3]), slice(box[0], box[2])


def within(box: Box, window: Box) -> tuple[slice, slice]:
    """Where ``box`` lies inside ``window`` (which holds it), as slices of the window."""
    return slice(box[1] - window[1], box[3] - window[1]), slice(box[0] - window[0], box[2] - window[0])


def row_bands(height: int, width: int, context: int = 0) -> Iterator[tuple[int, int]]:
    """Row ranges ``[r0, r1)`` covering ``height`` rows, each of at most ``BAND_PIXELS``
    pixels (at least one row, and at least ``context`` rows, so that a band read with
    ``context`` rows either side is at least a third its own)."""
    step = max(1, context, BAND_PIXELS // max(1, width))
    for r0 in range(0, height, step):
        yield r0, min(height, r0 + step)


def scaled_size(width: int, height: int, most: int) -> tuple[int, int]:
    """``(width, height)`` scaled down, aspect kept, to at most ``most`` pixels (at least one a side)."""
    scale = math.sqrt(most / (width * height))
    return max(1, min(width, int(width * scale))), max(1, min(height, int(height * scale)))


def _fail(where: str, expected: str, got: Any) -> ValueError:
    text = repr(got)
    return ValueError(f"{where}: expected {expected}, got {text if len(text) <= 80 else text[:77] + '...'}")


#: the most vertices a target's points or polygon may have (COCO's polygons have tens to hundreds)
MAX_VERTICES = 4096
#: the most targets a record may protect
MAX_TARGETS = 64


def _xy_list(value: Any, where: str, least: int) -> tuple[tuple[float, float], ...]:
    if not isinstance(value, (list, tuple)) or len(value) < least:
        raise _fail(where, f"a list of at least {least} [x, y] pairs", value)
    if len(value) > MAX_VERTICES:
        raise ValueError(f"{where}: {len(value)} vertices, more than the {MAX_VERTICES} a target may have; simplify "
                         "the outline (e.g. cv2.approxPolyDP)")
    out = []
    for k, pair in enumerate(value):
        if not isinstance(pair, (list, tuple)) or len(pair) != 2 or not all(_finite(v) for v in pair):
            raise _fail(f"{where}[{k}]", "[x, y] as two finite numbers", pair)
        out.append((float(pair[0]), float(pair[1])))
    return tuple(out)


def _finite(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


@dataclass(frozen=True)
class Target:
    """One answer-relevant object: a label and exactly one geometry."""

    label: str
    box: tuple[int, int, int, int] | None = None
    points: tuple[tuple[float, float], ...] | None = None
    polygon: tuple[tuple[float, float], ...] | None = None

    @property
    def geometry(self) -> str:
        return next(g for g in GEOMETRIES if getattr(self, g) is not None)

    def bounds(self) -> tuple[int, int, int, int]:
        """The smallest box ``[x0, y0, x1, y1]`` holding the geometry (points: the box of
        the points, which a segmenter grows to the object)."""
        if self.box is not None:
            return self.box
        xy = self.points if self.points is not None else self.polygon
        xs, ys = [p[0] for p in xy], [p[1] for p in xy]
        return (math.floor(min(xs)), math.floor(min(ys)), math.floor(max(xs)) + 1, math.floor(max(ys)) + 1)

    def check_inside(self, width: int, height: int, where: str = "target") -> None:
        x0, y0, x1, y1 = self.bounds()
        if x0 < 0 or y0 < 0 or x1 > width or y1 > height:
            value = getattr(self, self.geometry)
            shown = list(value) if self.geometry == "box" else [list(p) for p in value]
            raise ValueError(f"{where} ({self.label}): {self.geometry} {shown} reaches outside the {width} x {height} "
                             "image")

    def to_dict(self) -> dict[str, Any]:
        value = getattr(self, self.geometry)
        return {"label": self.label, self.geometry: [list(v) for v in value] if self.geometry != "box" else list(value)}

    @classmethod
    def from_dict(cls, data: Any, where: str = "target") -> Target:
        if not isinstance(data, Mapping):
            raise _fail(where, "an object with a label and a box, points or polygon", data)
        label = data.get("label")
        if not isinstance(label, str) or not label.strip():
            raise _fail(f"{where}.label", "a non-empty string", label)
        given = [g for g in GEOMETRIES if data.get(g) is not None]
        unknown = sorted(set(data) - {"label", *GEOMETRIES})
        if unknown:
            raise ValueError(f"{where}: unknown field {unknown[0]!r}; a target has label and one of {list(GEOMETRIES)}")
        if len(given) != 1:
            raise ValueError(f"{where} ({label}): expected exactly one of {list(GEOMETRIES)}, got {given or 'none'}")
        geometry = given[0]
        value = data[geometry]
        if geometry == "box":
            if not isinstance(value, (list, tuple)) or len(value) != 4 or not all(_finite(v) and v == int(v)
                                                                                   for v in value):
                raise _fail(f"{where}.box", "[x0, y0, x1, y1] as four whole numbers of pixels", value)
            x0, y0, x1, y1 = (int(v) for v in value)
            if x1 <= x0 or y1 <= y0:
                raise _fail(f"{where}.box", "x1 > x0 and y1 > y0", value)
            return cls(label.strip(), box=(x0, y0, x1, y1))
        least = 1 if geometry == "points" else 3
        return cls(label.strip(), **{geometry: _xy_list(value, f"{where}.{geometry}", least)})


@dataclass(frozen=True)
class Record:
    """A question about a natural image, with the targets its answer depends on."""

    id: str
    image: str
    question: str
    answer: str
    answer_type: str
    targets: tuple[Target, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "image": self.image, "question": self.question, "answer": self.answer,
                "answer_type": self.answer_type, "targets": [t.to_dict() for t in self.targets]}

    @classmethod
    def from_dict(cls, data: Any, where: str = "record") -> Record:
        if not isinstance(data, Mapping):
            raise _fail(where, "an object with id, image, question, answer, answer_type and targets", data)
        missing = [k for k in ("id", "image", "question", "answer", "answer_type", "targets") if k not in data]
        if missing:
            raise ValueError(f"{where}: missing field {missing[0]!r}")
        for key in ("id", "image", "question"):
            if not isinstance(data[key], str) or not data[key].strip():
                raise _fail(f"{where}.{key}", "a non-empty string", data[key])
        answer_type = data["answer_type"]
        if answer_type not in ANSWER_TYPES:
            raise _fail(f"{where}.answer_type", f"one of {list(ANSWER_TYPES)}", answer_type)
        answer = data["answer"]
        if isinstance(answer, bool) or not isinstance(answer, (str, int)):
            raise _fail(f"{where}.answer", "a string (or a whole number for a number question)", answer)
        answer = str(answer).strip().lower()
        if answer_type == "yes/no" and answer not in ("yes", "no"):
            raise _fail(f"{where}.answer", "yes or no for a yes/no question", data["answer"])
        if answer_type == "number" and not answer.isdigit():
            raise _fail(f"{where}.answer", "a whole number for a number question", data["answer"])
        if not answer:
            raise _fail(f"{where}.answer", "a non-empty answer", data["answer"])
        targets = data["targets"]
        if not isinstance(targets, (list, tuple)) or not targets:
            raise _fail(f"{where}.targets", "a non-empty list of targets (what the answer depends on)", targets)
        if len(targets) > MAX_TARGETS:
            raise ValueError(f"{where}.targets: {len(targets)} targets, more than the {MAX_TARGETS} a record may "
                             "protect; ask about fewer objects")
        return cls(data["id"].strip(), data["image"].strip(), data["question"].strip(), answer, answer_type,
                   tuple(Target.from_dict(t, f"{where}.targets[{k}]") for k, t in enumerate(targets)))

    def check_inside(self, width: int, height: int) -> None:
        for k, target in enumerate(self.targets):
            target.check_inside(width, height, f"record {self.id}: targets[{k}]")


@dataclass(frozen=True)
class Frame:
    """Where the source image sits in the current canvas: the canvas is ``width`` x
    ``height`` and source pixel ``(x, y)`` is drawn at ``(x + dx, y + dy)`` (pad and crop
    move it; nothing scales it)."""

    width: int
    height: int
    dx: int = 0
    dy: int = 0

    def place(self, box: tuple[int, int, int, int]) -> tuple[int, int, int, int]:
        """A source-image box in canvas coordinates."""
        x0, y0, x1, y1 = box
        return (x0 + self.dx, y0 + self.dy, x1 + self.dx, y1 + self.dy)


def pack_mask(mask: np.ndarray) -> bytes:
    """A boolean mask as compact bytes (bits packed row by row, zlib-compressed)."""
    return zlib.compress(np.packbits(np.asarray(mask, bool), axis=None).tobytes(), 9)


def unpack_mask(data: bytes, height: int, width: int) -> np.ndarray:
    """The ``height`` x ``width`` boolean mask :func:`pack_mask` gave ``data`` for."""
    try:
        bits = np.frombuffer(zlib.decompress(data), np.uint8)
    except zlib.error as exc:
        raise ValueError(f"a mask payload does not decompress ({exc})") from None
    if bits.size != (height * width + 7) // 8:
        raise ValueError(f"a mask payload holds {bits.size * 8} bits, not a {width} x {height} mask")
    return np.unpackbits(bits, count=height * width).reshape(height, width).astype(bool)


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def pixels_sha256(image: np.ndarray) -> str:
    """The identity of a source image: SHA-256 of its shape and RGB bytes (not of a file,
    whose encoding may change while the pixels do not)."""
    image = np.ascontiguousarray(image, dtype=np.uint8)
    digest = hashlib.sha256(repr(image.shape).encode("ascii"))
    digest.update(memoryview(image).cast("B"))  # read in place: a 40 MP image is not copied to be hashed
    return digest.hexdigest()


#: payload names of the two masks a segmented scene carries
MASKS = ("targets", "protected")


@dataclass(frozen=True)
class Scene:
    """The structure of the natural-image arm: a record, its image's size, the margin that
    grows its targets into the protected region, and the edit ops applied so far (each a
    canonical JSON object; the image is the source with these ops replayed).

    A segmented scene also pins its source image (``source_sha256``, see
    :func:`pixels_sha256`) and carries two masks of the source image as payloads: the
    union of the target masks (``targets``) and the protected region (``protected``: the
    targets grown by the margin), packed with :func:`pack_mask`. Its text names each mask
    by SHA-256, so text and payloads cannot be paired wrongly; the text alone (an
    observation's ``structure``) decodes to the scene without its masks, which answers the
    question but cannot be rendered."""

    record: Record
    width: int
    height: int
    margin: int = 8
    ops: tuple[Mapping[str, Any], ...] = ()
    source_sha256: str = ""
    targets_mask: bytes = b""
    protected_mask: bytes = b""

    @property
    def segmented(self) -> bool:
        return bool(self.targets_mask and self.protected_mask)

    def mask(self, name: str) -> np.ndarray:
        """The ``targets`` or ``protected`` mask of the source image."""
        data = {"targets": self.targets_mask, "protected": self.protected_mask}[name]
        if not data:
            raise ValueError(f"the scene of record {self.record.id} carries no {name} mask (not segmented)")
        return unpack_mask(data, self.height, self.width)

    def payloads(self) -> dict[str, bytes]:
        return {f"{name}.mask": getattr(self, f"{name}_mask") for name in MASKS if getattr(self, f"{name}_mask")}

    def to_dict(self) -> dict[str, Any]:
        out = {"record": self.record.to_dict(), "size": [self.width, self.height], "margin": self.margin,
               "ops": [dict(op) for op in self.ops]}
        if self.source_sha256:
            out["source_sha256"] = self.source_sha256
        if self.segmented:
            out["masks"] = {name: sha256(getattr(self, f"{name}_mask")) for name in MASKS}
        return out

    @classmethod
    def from_dict(cls, data: Any, payloads: Mapping[str, bytes] | None = None) -> Scene:
        if not isinstance(data, Mapping) or not {"record", "size", "ops"} <= set(data):
            raise _fail("scene", "an object with record, size, margin and ops", data)
        size = data["size"]
        if not isinstance(size, (list, tuple)) or len(size) != 2 or not all(
                isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in size):
            raise _fail("scene.size", "[width, height] in pixels", size)
        margin = data.get("margin", 8)
        if not is_int(margin, 0, 256):
            raise _fail("scene.margin", "a whole number of pixels in [0, 256]", margin)
        if not isinstance(data["ops"], (list, tuple)) or not all(isinstance(op, Mapping) for op in data["ops"]):
            raise _fail("scene.ops", "a list of op objects", data["ops"])
        record = Record.from_dict(data["record"], "scene.record")
        record.check_inside(size[0], size[1])
        source = data.get("source_sha256", "")
        if not isinstance(source, str) or source and len(source) != 64:
            raise _fail("scene.source_sha256", "the SHA-256 of the source image's pixels", source)
        masks = {}
        if data.get("masks") is not None and payloads is not None:  # text alone (an observation): no masks
            named = data["masks"]
            if not isinstance(named, Mapping) or set(named) != set(MASKS):
                raise _fail("scene.masks", f"the SHA-256 of each of {list(MASKS)}", named)
            for name in MASKS:
                blob = (payloads or {}).get(f"{name}.mask")
                if blob is None:
                    raise ValueError(f"scene.masks: the {name} mask is not among the payloads")
                if sha256(blob) != named[name]:
                    raise ValueError(f"scene.masks: the {name} mask payload differs from the one the scene names")
                unpack_mask(blob, size[1], size[0])
                masks[f"{name}_mask"] = bytes(blob)
        return cls(record, size[0], size[1], margin, tuple(dict(op) for op in data["ops"]), source, **masks)


def frame_of(scene: Scene) -> Frame:
    """The canvas after the scene's pads and crops."""
    frame = Frame(scene.width, scene.height)
    for op in scene.ops:
        if op["op"] == "pad":
            frame = Frame(frame.width + op["left"] + op["right"], frame.height + op["top"] + op["bottom"],
                          frame.dx + op["left"], frame.dy + op["top"])
        elif op["op"] == "crop":
            x0, y0, x1, y1 = op["box"]
            frame = Frame(x1 - x0, y1 - y0, frame.dx - x0, frame.dy - y0)
    return frame


__all__ = ["ANSWER_TYPES", "BAND_PIXELS", "ERROR_CODES", "GEOMETRIES", "MASKS", "Box", "Frame", "Record", "Scene",
           "Target", "box_slices", "frame_of", "grow", "mask_box", "row_bands", "scaled_size", "within",
           "pack_mask", "pixels_sha256", "sha256", "unpack_mask"]



# -- JSON records -------------------------------------------------------------------------
class ProtectedRule(TypedDict):
    """A natural-image sample's label rule: the answer stays the record's while every edit
    keeps clear of the targets' protected regions and of what the answer type guards."""

    kind: Literal["protected"]
    #: one of :data:`ANSWER_TYPES`
    answer_type: Literal["yes/no", "number", "other"]
