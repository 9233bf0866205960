"""Seed records of the natural-image arm: the embedded demo, JSONL files and COCO-style
annotations.

- ``demo`` (the default): questions written for this project on the sample images that
  scikit-image and matplotlib ship (``assets/natural_demo.jsonl``), so the arm runs on a
  fresh machine with no download.
- a ``.jsonl`` file: one :class:`~vicogym.structures.natural.Record` per line (see that
  module for the fields); image paths are relative to the file.
- a COCO-style folder: ``annotations.json`` (COCO's ``images``, ``annotations`` with a
  ``bbox`` ``[x, y, w, h]`` and/or a polygon ``segmentation``, ``categories``), and
  ``questions.json``: a list of ``{"image_id", "question", "answer", "answer_type",
  "targets": [annotation ids]}``; images under ``images/`` (or where ``file_name`` says).

Every path is relative to the source's folder (the JSONL file's, or the COCO-style folder)
and resolved inside it: absolute paths, ``..`` and links out are refused. ``skimage:`` names
one of :data:`SKIMAGE_SAMPLES`, ``matplotlib:`` a file of matplotlib's ``sample_data``.

Every record's targets are checked to lie inside its image when the source opens, on the
image's header (its size on disk, format and pixel count checked before anything is
decoded); images are decoded when an episode needs them, and at most
:data:`IMAGE_CACHE_BYTES` of them are kept.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from vicogym.errors import SourceError
from vicogym.sources import (
    IMAGE_FORMATS,
    MAX_IMAGE_PIXELS,
    _safe,
    check_name,
    image_size,
    inside,
    json_lines,
    one_line,
    place,
    read_json,
    read_rgb,
    read_text,
    source_path,
)
from vicogym.structures.natural import Record, Target

DEMO = "demo"
#: the sample pictures of ``skimage.data`` a record may name: the ones scikit-image ships (no
#: download), each a grey, RGB or RGBA picture (stereo_motorcycle: its left view). Its
#: volumes, stacks, generated patterns, file names and helper functions are not images.
SKIMAGE_SAMPLES = frozenset({
    "astronaut", "brick", "camera", "cat", "cell", "checkerboard", "chelsea", "clock", "coffee", "coins", "colorwheel",
    "grass", "gravel", "horse", "hubble_deep_field", "immunohistochemistry", "logo", "microaneurysms", "moon", "page",
    "retina", "rocket", "shepp_logan_phantom", "stereo_motorcycle", "text",
})
#: the most bytes of decoded images a source keeps at once (the least recently used go first)
IMAGE_CACHE_BYTES = 512 << 20
_EXPECTED = "'demo', a .jsonl file or a COCO-style folder (annotations.json, questions.json)"


def _skimage(ref: str) -> np.ndarray:
    name = ref.split(":", 1)[1]
    if name not in SKIMAGE_SAMPLES:
        raise SourceError(f"image {_safe(ref)}: scikit-image has no sample image {_safe(name)}; name one of "
                          f"{', '.join(sorted(SKIMAGE_SAMPLES))}")
    import skimage.data

    try:
        image = getattr(skimage.data, name)()
    except Exception as exc:  # a sample missing from this installation
        raise SourceError(f"image {_safe(ref)}: scikit-image could not load it ({one_line(str(exc))[:200]})") from None
    if isinstance(image, tuple):  # stereo pairs: the left view
        image = image[0]
    return _rgb(np.asarray(image), ref)


def image_path(ref: str, base: Path | None = None) -> Path:
    """The file an image reference names (see the module notes), resolved inside ``base``
    (``None``: a path the caller gives directly, read as given)."""
    where = f"image {_safe(ref)}"
    if ref.startswith("matplotlib:"):
        import matplotlib

        samples = Path(matplotlib.get_data_path()) / "sample_data"
        path = inside(samples, ref.split(":", 1)[1], where, "sample image")
    elif base is None:
        path = Path(check_name(ref, where, "image"))
    else:
        path = inside(base, ref, where, "image")  # a source's record: inside its folder
    if not path.is_file():
        raise SourceError(f"{where}: no file {place(path)}")
    return path


def load_image(ref: str, base: Path | None = None) -> np.ndarray:
    """The RGB ``uint8`` array an image reference names (see the module notes)."""
    if not isinstance(ref, str):
        raise SourceError(f"expected an image reference as a string, got {_safe(ref)[:80]}")
    if ref.startswith("skimage:"):
        return _skimage(ref)
    return read_rgb(image_path(ref, base), f"image {_safe(ref)}")


def _rgb(image: np.ndarray, ref: str) -> np.ndarray:
    """A sample array as RGB ``uint8``: booleans to 0/255, wider unsigned integers scaled
    down by their range (16-bit: by 257), floats in [0, 1] scaled up, anything else
    clipped; grey repeated, alpha dropped."""
    if not isinstance(image, np.ndarray) or image.dtype.kind not in "buif":
        raise SourceError(f"image {_safe(ref)}: expected a picture as an array of numbers, got {type(image).__name__}")
    if image.ndim not in (2, 3) or (image.ndim == 3 and image.shape[2] not in (3, 4)) or not image.size:
        raise SourceError(f"image {_safe(ref)}: expected a grey, RGB or RGBA image, got shape {image.shape}")
    if image.shape[0] * image.shape[1] > MAX_IMAGE_PIXELS:
        raise SourceError(f"image {_safe(ref)}: {image.shape[1]} x {image.shape[0]} pixels, more than the "
                          f"{MAX_IMAGE_PIXELS / 1e6:g} MP an image may have")
    if image.ndim == 3:
        image = image[:, :, :3]
    if image.dtype == bool:
        image = image.astype(np.uint8) * 255
    elif image.dtype.kind == "u" and image.dtype.itemsize > 1:
        top = float(np.iinfo(image.dtype).max)
        image = np.round(image.astype(np.float64) * (255.0 / top)).astype(np.uint8)
    elif image.dtype != np.uint8:
        image = np.nan_to_num(image.astype(np.float64), nan=0.0, posinf=255.0, neginf=0.0)
        if image.dtype.kind == "f" and image.min() >= 0 and image.max() <= 1:
            image = np.round(image * 255)
        image = np.clip(image, 0, 255).astype(np.uint8)
    if image.ndim == 2:
        image = np.repeat(image[:, :, None], 3, axis=2)
    return np.ascontiguousarray(image)


def _parse_lines(lines: list[str], where: str) -> list[Record]:
    records, seen = [], set()
    for number, data in json_lines(lines, where):
        try:
            record = Record.from_dict(data, f"{where}:{number}")
        except ValueError as exc:
            raise SourceError(one_line(str(exc))) from None
        if record.id in seen:
            raise SourceError(f"{where}:{number}: record id {_safe(record.id)} is used twice")
        seen.add(record.id)
        records.append(record)
    if not records:
        raise SourceError(f"{where}: holds no records")
    return records


def demo_records() -> list[Record]:
    text = resources.files("vicogym.assets").joinpath("natural_demo.jsonl").read_text(encoding="utf-8")
    return _parse_lines(text.splitlines(), "natural_demo.jsonl")


def jsonl_records(path: Path) -> list[Record]:
    return _parse_lines(read_text(path).splitlines(), place(path))


def _load_json(folder: Path, name: str) -> Any:
    path = inside(folder, name, place(folder), "COCO file")
    if not path.is_file():
        raise SourceError(f"expected {name} in {place(folder)}, found none")
    return read_json(path)


def _whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _id(item: dict[str, Any], key: str, where: str) -> int:
    value = item.get(key)
    if not _whole(value):
        raise SourceError(f"{where}.{key}: expected a whole number, got {_safe(value)[:80]}")
    return value


def _coco_target(annotation: dict[str, Any], labels: dict[int, str], where: str) -> Target:
    category = annotation.get("category_id")
    if category is not None and not _whole(category):
        raise SourceError(f"{where}.category_id: expected a whole number (a category's id), got {_safe(category)[:80]}")
    label = labels.get(category, str(category) if category is not None else "object")
    polygon = annotation.get("segmentation")
    try:
        if isinstance(polygon, list) and polygon and isinstance(polygon[0], list) and len(polygon[0]) >= 6:
            flat = polygon[0]  # COCO's first polygon; further parts of one object stay in its box
            return Target.from_dict({"label": label, "polygon": [flat[i:i + 2] for i in range(0, len(flat) - 1, 2)]},
                                    f"{where}.segmentation")
        bbox = annotation.get("bbox")
        if not isinstance(bbox, list) or len(bbox) != 4:
            raise ValueError(f"{where}: expected a bbox [x, y, w, h] or a polygon segmentation, got neither")
        if not all(_number(v) for v in bbox):
            raise ValueError(f"{where}.bbox: expected [x, y, w, h] as four finite numbers, got {_safe(bbox)[:80]}")
        x, y, w, h = (float(v) for v in bbox)
        if not (w > 0 and h > 0):
            raise ValueError(f"{where}.bbox: expected [x, y, w, h] with a positive width and height, got {bbox!r}")
        if max(abs(x), abs(y), x + w, y + h) > MAX_IMAGE_PIXELS:
            raise ValueError(f"{where}.bbox: {bbox!r} reaches past any image's edge")
        box = [int(np.floor(x)), int(np.floor(y)), int(np.ceil(x + w)), int(np.ceil(y + h))]
        return Target.from_dict({"label": label, "box": box}, where)
    except (ValueError, TypeError) as exc:
        raise SourceError(one_line(str(exc))) from None


def coco_records(folder: Path) -> list[Record]:
    annotations = _load_json(folder, "annotations.json")
    questions = _load_json(folder, "questions.json")
    where, asked = place(folder / "annotations.json"), place(folder / "questions.json")
    if not isinstance(annotations, dict) or not isinstance(annotations.get("images"), list) or \
            not isinstance(annotations.get("annotations"), list):
        raise SourceError(f"{where}: expected COCO's {{\"images\": [...], \"annotations\": [...], ...}}")
    if not isinstance(questions, list):
        raise SourceError(f"{asked}: expected a list of questions")
    categories = annotations.get("categories", [])
    if not isinstance(categories, list):
        raise SourceError(f"{where}: categories: expected a list of {{\"id\", \"name\"}}, got {_safe(categories)[:80]}")
    images, by_id, labels = {}, {}, {}
    for key, table, into in (("images", annotations["images"], images),
                             ("annotations", annotations["annotations"], by_id), ("categories", categories, labels)):
        for k, item in enumerate(table):
            if not isinstance(item, dict):
                raise SourceError(f"{where}: {key}[{k}]: expected an object, got {_safe(item)[:80]}")
            into[_id(item, "id", f"{where}: {key}[{k}]")] = item
    names = {}
    for cid, category in labels.items():
        name = category.get("name")
        if not isinstance(name, str) or not name.strip():
            raise SourceError(f"{where}: category {cid}.name: expected a non-empty string, got {_safe(name)[:80]}")
        names[cid] = name
    records = []
    for k, q in enumerate(questions):
        at = f"{asked}: questions[{k}]"
        if not isinstance(q, dict) or not {"image_id", "question", "answer", "answer_type", "targets"} <= set(q):
            raise SourceError(f"{at}: needs image_id, question, answer, answer_type and targets")
        image_id = _id(q, "image_id", at)
        image = images.get(image_id)
        if image is None or not isinstance(image.get("file_name"), str):
            raise SourceError(f"{at}: image_id {image_id} is not an image of {where} with a file_name")
        targets = q["targets"]
        if not isinstance(targets, list) or not targets:
            raise SourceError(f"{at}: targets must list the ids of the annotations the answer depends on")
        for j, t in enumerate(targets):
            if not _whole(t):
                raise SourceError(f"{at}.targets[{j}]: expected an annotation id (a whole number), got {_safe(t)[:80]}")
            if t not in by_id:
                raise SourceError(f"{at}: target {t} is not an annotation id of {where}")
        record_id = q.get("id", f"{image_id}-{k}")
        if not isinstance(record_id, (str, int)) or isinstance(record_id, bool):
            raise SourceError(f"{at}.id: expected a string or a whole number, got {_safe(record_id)[:80]}")
        file = image["file_name"]
        named = f"{where}: image {image_id}.file_name"  # names the image, not the question
        path = file if inside(folder, file, named, "image").is_file() else f"images/{file}"
        data = {"id": str(record_id), "image": path, "question": q["question"],
                "answer": q["answer"], "answer_type": q["answer_type"],
                "targets": [_coco_target(by_id[t], names, f"{where}: annotation {t}").to_dict()
                            for t in targets]}
        try:
            records.append(Record.from_dict(data, at))
        except ValueError as exc:
            raise SourceError(one_line(str(exc))) from None
    if not records:
        raise SourceError(f"{asked}: holds no questions")
    return records


class RecordSource:
    """Records with their images, checked when the source opens (every image's header read,
    every target inside its image); images decoded when needed, the most recent kept."""

    def __init__(self, source: str = DEMO):
        if source == DEMO:
            self.records, base = demo_records(), None
        else:
            path, kind = source_path(source, _EXPECTED)
            if kind == "file" and path.suffix == ".jsonl":
                self.records, base = jsonl_records(path), path.parent
            elif kind == "folder":
                self.records, base = coco_records(path), path
            else:
                where = "does not exist" if kind == "none" else "is neither a .jsonl file nor a folder"
                raise SourceError(f"expected source {_EXPECTED}, got {_safe(source)}, which {where}")
        self.name, self.base = source, base
        self._refs = {record.image for record in self.records}
        self._sizes: dict[str, tuple[int, int]] = {}
        self._images: OrderedDict[str, np.ndarray] = OrderedDict()
        for record in self.records:
            try:
                width, height = self.size(record.image)
                for k, target in enumerate(record.targets):
                    target.check_inside(width, height, f"targets[{k}]")
            except (SourceError, ValueError) as exc:
                raise SourceError(one_line(f"{place(source)}: record {_safe(record.id)}: {exc}")) from None

    def size(self, ref: str) -> tuple[int, int]:
        """``(width, height)`` of a record's image, from its header (samples: decoded)."""
        if ref not in self._sizes:
            if ref.startswith("skimage:") or self.base is None:
                image = self._decoded(ref)
                self._sizes[ref] = (image.shape[1], image.shape[0])
            else:
                self._sizes[ref] = image_size(image_path(ref, self.base), f"image {_safe(ref)}", IMAGE_FORMATS)
        return self._sizes[ref]

    def image(self, ref: str) -> np.ndarray:
        """A record's source image (read-only; edits work on copies); ``SourceError`` naming
        the source and the image when it cannot be decoded."""
        if ref not in self._refs:
            raise SourceError(f"{place(self.name)}: image {_safe(ref)}: no record of this source names it")
        try:
            return self._decoded(ref)
        except SourceError as exc:
            raise SourceError(f"{place(self.name)}: {exc}") from None

    def _decoded(self, ref: str) -> np.ndarray:
        if ref in self._images:
            self._images.move_to_end(ref)
            return self._images[ref]
        image = load_image(ref, self.base)
        if ref in self._sizes and self._sizes[ref] != (image.shape[1], image.shape[0]):
            raise SourceError(f"image {_safe(ref)}: decoded as {image.shape[1]} x {image.shape[0]} pixels, its header "
                              f"says {self._sizes[ref][0]} x {self._sizes[ref][1]}; save it again")
        image.setflags(write=False)
        self._images[ref] = image
        while len(self._images) > 1 and sum(x.nbytes for x in self._images.values()) > IMAGE_CACHE_BYTES:
            self._images.popitem(last=False)
        return image

    def __len__(self) -> int:
        return len(self.records)

    def summary(self) -> dict[str, Any]:
        summary = {"records": len(self.records), "images": len(self._refs), "source": self.name}
        if self.name == DEMO:
            summary["note"] = (f"the embedded demo: {len(self.records)} questions on {len(self._refs)} sample "
                               "photos, for trying the arm, not for training; pass source=<COCO-style folder or "
                               ".jsonl>")
        return summary


__all__ = ["DEMO", "SKIMAGE_SAMPLES", "RecordSource", "coco_records", "demo_records", "jsonl_records", "load_image"]
