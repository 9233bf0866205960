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

Every record's targets are checked to lie inside its image when the source opens.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from vicogym.errors import SourceError
from vicogym.sources import inside, json_lines, read_image, read_json, read_text
from vicogym.structures.natural import Record, Target

DEMO = "demo"


def load_image(ref: str, base: Path | None = None) -> np.ndarray:
    """The RGB ``uint8`` array an image reference names (see the module notes)."""
    if ref.startswith("skimage:"):
        import skimage.data

        name = ref.split(":", 1)[1]
        loader = getattr(skimage.data, name, None)
        if loader is None or not callable(loader):
            raise SourceError(f"image {ref!r}: scikit-image has no sample image {name!r}")
        try:
            image = loader()
        except Exception as exc:  # a sample that needs a download this machine cannot make
            raise SourceError(f"image {ref!r}: scikit-image could not load it ({exc})") from None
        if isinstance(image, tuple):  # stereo pairs: the left view
            image = image[0]
        return _rgb(np.asarray(image), ref)
    if ref.startswith("matplotlib:"):
        import matplotlib

        samples = Path(matplotlib.get_data_path()) / "sample_data"
        return _read(inside(samples, ref.split(":", 1)[1], f"image {ref!r}", "sample image"), ref)
    if base is None:  # a path the caller gives directly, read as given
        return _read(Path(ref), ref)
    return _read(inside(base, ref, f"image {ref!r}", "image"), ref)  # a source's record: inside its folder


def _read(path: Path, ref: str) -> np.ndarray:
    import cv2

    if not path.is_file():
        raise SourceError(f"image {ref!r}: no file {path}")
    image = read_image(path, ref)
    if image.ndim == 3:
        image = cv2.cvtColor(image, cv2.COLOR_BGRA2RGBA if image.shape[2] == 4 else cv2.COLOR_BGR2RGB)
    return _rgb(image, ref)


def _rgb(image: np.ndarray, ref: str) -> np.ndarray:
    if image.dtype == bool:
        image = image.astype(np.uint8) * 255
    elif image.dtype != np.uint8:
        if np.issubdtype(image.dtype, np.floating) and image.size and 0 <= image.min() and image.max() <= 1:
            image = np.round(image * 255)
        image = np.clip(image, 0, 255).astype(np.uint8)
    if image.ndim == 2:
        image = np.repeat(image[:, :, None], 3, axis=2)
    if image.ndim != 3 or image.shape[2] not in (3, 4):
        raise SourceError(f"image {ref!r}: expected a grey, RGB or RGBA image, got shape {image.shape}")
    return np.ascontiguousarray(image[:, :, :3])


def _parse_lines(lines: list[str], where: str) -> list[Record]:
    records, seen = [], set()
    for number, data in json_lines(lines, where):
        try:
            record = Record.from_dict(data, f"{where}:{number}")
        except ValueError as exc:
            raise SourceError(str(exc)) from None
        if record.id in seen:
            raise SourceError(f"{where}:{number}: record id {record.id!r} is used twice")
        seen.add(record.id)
        records.append(record)
    if not records:
        raise SourceError(f"{where}: holds no records")
    return records


def demo_records() -> list[Record]:
    text = resources.files("vicogym.assets").joinpath("natural_demo.jsonl").read_text(encoding="utf-8")
    return _parse_lines(text.splitlines(), "natural_demo.jsonl")


def jsonl_records(path: Path) -> list[Record]:
    return _parse_lines(read_text(path).splitlines(), str(path))


def _load_json(path: Path) -> Any:
    if not path.is_file():
        raise SourceError(f"expected {path.name} in {path.parent}, found none")
    return read_json(path)


def _coco_target(annotation: Any, labels: dict[int, str], where: str) -> Target:
    if not isinstance(annotation, dict):
        raise SourceError(f"{where}: expected an annotation object, got {annotation!r}")
    label = labels.get(annotation.get("category_id"), str(annotation.get("category_id", "object")))
    polygon = annotation.get("segmentation")
    try:
        if isinstance(polygon, list) and polygon and isinstance(polygon[0], list) and len(polygon[0]) >= 6:
            flat = polygon[0]  # COCO's first polygon; further parts of one object stay in its box
            return Target.from_dict({"label": label, "polygon": [flat[i:i + 2] for i in range(0, len(flat) - 1, 2)]},
                                    where)
        bbox = annotation.get("bbox")
        if not isinstance(bbox, list) or len(bbox) != 4:
            raise ValueError(f"{where}: expected a bbox [x, y, w, h] or a polygon segmentation, got neither")
        x, y, w, h = (float(v) for v in bbox)
        if not (w > 0 and h > 0):
            raise ValueError(f"{where}.bbox: expected [x, y, w, h] with a positive width and height, got {bbox!r}")
        box = [int(np.floor(x)), int(np.floor(y)), int(np.ceil(x + w)), int(np.ceil(y + h))]
        return Target.from_dict({"label": label, "box": box}, where)
    except (ValueError, TypeError) as exc:
        raise SourceError(str(exc)) from None


def coco_records(folder: Path) -> list[Record]:
    annotations = _load_json(folder / "annotations.json")
    questions = _load_json(folder / "questions.json")
    where = folder / "annotations.json"
    if not isinstance(annotations, dict) or not isinstance(annotations.get("images"), list) or \
            not isinstance(annotations.get("annotations"), list):
        raise SourceError(f"{where}: expected COCO's {{\"images\": [...], \"annotations\": [...], ...}}")
    if not isinstance(questions, list):
        raise SourceError(f"{folder / 'questions.json'}: expected a list of questions")
    images = {im.get("id"): im for im in annotations["images"] if isinstance(im, dict)}
    by_id = {a.get("id"): a for a in annotations["annotations"] if isinstance(a, dict)}
    labels = {c.get("id"): str(c.get("name")) for c in annotations.get("categories", []) if isinstance(c, dict)}
    records = []
    for k, q in enumerate(questions):
        at = f"{folder / 'questions.json'}: questions[{k}]"
        if not isinstance(q, dict) or not {"image_id", "question", "answer", "answer_type", "targets"} <= set(q):
            raise SourceError(f"{at}: needs image_id, question, answer, answer_type and targets")
        image = images.get(q["image_id"])
        if image is None or not isinstance(image.get("file_name"), str):
            raise SourceError(f"{at}: image_id {q['image_id']!r} is not an image of {where} with a file_name")
        if not isinstance(q["targets"], list) or not q["targets"]:
            raise SourceError(f"{at}: targets must list the ids of the annotations the answer depends on")
        missing = [t for t in q["targets"] if t not in by_id]
        if missing:
            raise SourceError(f"{at}: target {missing[0]!r} is not an annotation id of {where}")
        file = image["file_name"]
        inside(folder, file, f"{where}: image {q['image_id']!r}", "image")  # names the image, not the question
        path = file if (folder / file).is_file() else f"images/{file}"
        data = {"id": str(q.get("id", f"{q['image_id']}-{k}")), "image": str(path), "question": q["question"],
                "answer": q["answer"], "answer_type": q["answer_type"],
                "targets": [_coco_target(by_id[t], labels, f"{at}.targets[{j}]").to_dict()
                            for j, t in enumerate(q["targets"])]}
        try:
            records.append(Record.from_dict(data, at))
        except ValueError as exc:
            raise SourceError(str(exc)) from None
    if not records:
        raise SourceError(f"{folder / 'questions.json'}: holds no questions")
    return records


class RecordSource:
    """Records with their images, loaded once and checked (targets inside their image)."""

    def __init__(self, source: str = DEMO):
        if not isinstance(source, str) or not source:
            raise SourceError(f"expected source 'demo', a .jsonl file or a COCO-style folder, got {source!r}")
        path = Path(source)
        if source == DEMO:
            self.records, base = demo_records(), None
        elif path.is_file() and path.suffix == ".jsonl":
            self.records, base = jsonl_records(path), path.parent
        elif path.is_dir():
            self.records, base = coco_records(path), path
        else:
            where = "does not exist" if not path.exists() else "is neither a .jsonl file nor a folder"
            raise SourceError(f"expected source 'demo', a .jsonl file or a COCO-style folder (annotations.json, "
                              f"questions.json), got {source!r}, which {where}")
        self.name, self.base = source, base
        self._images: dict[str, np.ndarray] = {}
        for record in self.records:
            try:
                image = self.image(record.image)
                record.check_inside(image.shape[1], image.shape[0])
            except (SourceError, ValueError) as exc:
                raise SourceError(f"{source}: record {record.id}: {exc}") from None

    def image(self, ref: str) -> np.ndarray:
        """The source image (read-only; edits work on copies)."""
        if ref not in self._images:
            image = load_image(ref, self.base)
            image.setflags(write=False)
            self._images[ref] = image
        return self._images[ref]

    def __len__(self) -> int:
        return len(self.records)

    def summary(self) -> dict[str, Any]:
        summary = {"records": len(self.records), "images": len(self._images), "source": self.name}
        if self.name == DEMO:
            summary["note"] = (f"the embedded demo: {len(self.records)} questions on {len(self._images)} sample "
                               "photos, for trying the arm, not for training; pass source=<COCO-style folder or "
                               ".jsonl>")
        return summary


__all__ = ["DEMO", "RecordSource", "coco_records", "demo_records", "jsonl_records", "load_image"]
