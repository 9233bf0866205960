"""Loaders of real data sets for ``vicogym/Evidence-v0``: FUNSD-format folders and
generic JSONL files, each read into :class:`~vicogym.structures.evidence.Task` s whose
units are the image files themselves (kind ``image``, ``max_scale`` 1.0: a photo or scan
holds no detail beyond its own pixels).

``load("funsd", FOLDER)``: ``FOLDER/annotations/*.json``, each ``{"form": [{"id", "box":
[x0, y0, x1, y1], "text", "label", "linking": [[a, b], ...], "words": [{"box", "text"}]},
...]}`` beside ``FOLDER/images/<same stem>.png``. One task per field of a page, paired by
:func:`vicogym.programs.evidence.forms.pair_fields` (the paper's FUNSD field-value QA):
the question names the label, the reference is the value; fields without a value, and
labels that repeat on their page (a question must have one answer), are left out. The
evidence is the value's box; its ``size`` estimates the cap height as 0.7 x the median
height of the value's word boxes (FUNSD word boxes hold the ascenders, the descenders and
a little margin, about 1.4 cap heights; the entity's own box height stands in for a word
when it lists none), the smallest over the value's entities.

``load("jsonl", FILE)``: one task per non-blank line, ``{"units": [image paths, relative
to the file's folder allowed], "question", "answer", "metric": anls | relaxed | letter |
short | exact, optional "options", "golds", "evidence": [{"unit", "box", "size",
"legible", "what"}], "id"}``. A letter question's answer is an option's letter (or its
text, read as its letter).

Every problem is one :class:`~vicogym.errors.SourceError` that names the file, the record
(line number or entity id) and the field, and says what is expected.
"""

from __future__ import annotations

import hashlib
import json
import os
import statistics
from pathlib import Path
from typing import Any, Mapping, Sequence

from vicogym.errors import SourceError
from vicogym.programs.evidence.forms import ENTITY_LABELS, Entity, field_label, pair_fields
from vicogym.structures.evidence import (
    LEGIBLE_TEXT_PX,
    SCORERS,
    Evidence,
    Task,
    Unit,
    letters,
)
from vicogym.validation import did_you_mean, is_int, is_number

KINDS = ("funsd", "jsonl")
#: the answer contract of each metric
CONTRACT_OF = {"anls": "text", "relaxed": "number", "letter": "letter", "short": "text", "exact": "text"}
JSONL_FIELDS = {"units", "question", "answer", "metric", "options", "golds", "evidence", "id"}
EVIDENCE_FIELDS = {"unit", "box", "size", "legible", "what"}
#: cap height per word-box height (see the module's note)
CAP_PER_WORD_HEIGHT = 0.7
FUNSD_QUESTION = "What is the value of the field '{label}'?"


def load(kind: str, path: str | os.PathLike) -> list[Task]:
    """The tasks of the data set at ``path``: ``kind`` is ``funsd`` (a folder) or
    ``jsonl`` (a file)."""
    if kind == "funsd":
        return load_funsd(path)
    if kind == "jsonl":
        return load_jsonl(path)
    raise SourceError(f"no loader {kind!r}{did_you_mean(kind, KINDS)}; loaders: {', '.join(KINDS)}")


# ------------------------------------------------------------------ images


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def image_unit(path: Path, where: str, title: str = "") -> Unit:
    """A raster unit of the image at ``path`` (its size read from the file's header);
    ``where`` says which record names it, for the error."""
    from PIL import Image, UnidentifiedImageError

    if path.is_dir():
        raise SourceError(f"{where}: {path} is a folder, not an image; name a PNG or JPEG file")
    if not path.is_file():
        raise SourceError(f"{where}: the image {path} does not exist")
    try:
        with Image.open(path) as image:
            width, height = image.size
            if image.format not in ("PNG", "JPEG", "BMP", "TIFF", "WEBP"):
                raise SourceError(f"{where}: {path} is a {image.format} image; use PNG or JPEG")
    except (UnidentifiedImageError, OSError) as exc:
        raise SourceError(f"{where}: {path} is not a readable image ({exc})") from None
    return Unit("image", int(width), int(height), {"path": str(path.resolve()), "sha256": _sha256(path)},
                title or path.stem, 1.0)


def _inside(box: Sequence[float], unit: Unit) -> bool:
    return box[0] >= 0 and box[1] >= 0 and box[2] <= unit.width and box[3] <= unit.height


# ------------------------------------------------------------------ FUNSD


def load_funsd(folder: str | os.PathLike) -> list[Task]:
    """One task per field of every page of a FUNSD-format folder (see the module)."""
    root = Path(folder)
    annotations = root / "annotations"
    if not annotations.is_dir():
        raise SourceError(f"{root}: a FUNSD folder holds annotations/*.json and images/*.png; there is no "
                          f"{annotations}")
    files = sorted(annotations.glob("*.json"))
    if not files:
        raise SourceError(f"{annotations}: no annotation files (*.json) in the FUNSD folder")
    tasks: list[Task] = []
    for path in files:
        tasks.extend(funsd_page(path, root / "images" / f"{path.stem}.png"))
    if not tasks:
        raise SourceError(f"{root}: no page has a field with a value (no question entity pairs with an answer)")
    return tasks


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError as exc:
        raise SourceError(f"{path}: not UTF-8 text ({exc})") from None
    except json.JSONDecodeError as exc:
        raise SourceError(f"{path}: line {exc.lineno}, column {exc.colno}: malformed JSON ({exc.msg})") from None


def _box_error(value: Any) -> str | None:
    if (not isinstance(value, (list, tuple)) or len(value) != 4
            or not all(is_number(v) for v in value)):
        return f"expected [x0, y0, x1, y1] (four numbers), got {value!r}"
    if value[2] < value[0] or value[3] < value[1]:
        return f"expected x0 <= x1 and y0 <= y1, got {list(value)!r}"
    return None


def funsd_entities(path: Path, data: Any, unit: Unit) -> list[Entity]:
    """The entities of one annotation file, checked (``SourceError`` naming the entity
    and field)."""
    if not isinstance(data, Mapping) or not isinstance(data.get("form"), list):
        keys = f" with keys {sorted(data)}" if isinstance(data, Mapping) else ""
        raise SourceError(f"{path}: expected a JSON object with a 'form' list of entities, got "
                          f"{type(data).__name__}{keys}")
    out: list[Entity] = []
    seen: set[int] = set()
    for k, record in enumerate(data["form"]):
        if not isinstance(record, Mapping):
            raise SourceError(f"{path}: entity #{k}: expected an object, got {type(record).__name__}")
        ident = record.get("id")
        if not is_int(ident):
            raise SourceError(f"{path}: entity #{k}: field 'id': expected an integer, got {ident!r}")
        where = f"{path}: entity {ident}"
        if ident in seen:
            raise SourceError(f"{where}: field 'id': the id repeats in the file")
        seen.add(ident)
        for name in ("box", "text", "label"):
            if name not in record:
                raise SourceError(f"{where}: field {name!r} is missing")
        problem = _box_error(record["box"])
        if problem:
            raise SourceError(f"{where}: field 'box': {problem}")
        if not _inside(record["box"], unit):
            raise SourceError(f"{where}: field 'box': {list(record['box'])} lies outside the image "
                              f"({unit.width}x{unit.height})")
        if not isinstance(record["text"], str):
            raise SourceError(f"{where}: field 'text': expected a string, got {record['text']!r}")
        if record["label"] not in ENTITY_LABELS:
            raise SourceError(f"{where}: field 'label': expected one of {', '.join(ENTITY_LABELS)}, got "
                              f"{record['label']!r}{did_you_mean(record['label'], ENTITY_LABELS)}")
        linking = record.get("linking", [])
        if not isinstance(linking, list) or not all(
                isinstance(p, (list, tuple)) and len(p) == 2 and all(is_int(v) for v in p) for p in linking):
            raise SourceError(f"{where}: field 'linking': expected [[id, id], ...], got {linking!r}")
        words = record.get("words", [])
        if not isinstance(words, list):
            raise SourceError(f"{where}: field 'words': expected a list of {{'box', 'text'}}, got {words!r}")
        for j, word in enumerate(words):
            problem = _box_error(word.get("box")) if isinstance(word, Mapping) else "expected an object"
            if problem:
                raise SourceError(f"{where}: field 'words' #{j}: box {problem}")
            if not _inside(word["box"], unit):
                raise SourceError(f"{where}: field 'words' #{j}: box {list(word['box'])} lies outside the image "
                                  f"({unit.width}x{unit.height})")
        links = frozenset(v for p in linking for v in p if v != ident)
        out.append(Entity(ident, tuple(float(v) for v in record["box"]), record["text"], record["label"], links))
    for e in out:
        missing = sorted(e.links - seen)
        if missing:
            raise SourceError(f"{path}: entity {e.id}: field 'linking': names entity {missing[0]}, which the file "
                              "does not hold")
    return out


def cap_estimate(record: Mapping[str, Any]) -> float:
    """An entity's cap height: 0.7 x the median height of its word boxes (its own box's
    height when it lists no words)."""
    heights = [w["box"][3] - w["box"][1] for w in record.get("words", []) or [] if w["box"][3] > w["box"][1]]
    height = statistics.median(heights) if heights else record["box"][3] - record["box"][1]
    return max(0.5, CAP_PER_WORD_HEIGHT * float(height))


def funsd_page(path: Path, image: Path) -> list[Task]:
    """The tasks of one FUNSD page (its annotation file and image)."""
    path = Path(path)
    data = _read_json(path)
    unit = image_unit(Path(image), f"{path}: the page's image", path.stem)
    entities = funsd_entities(path, data, unit)
    records = {r["id"]: r for r in data["form"]}
    fields = [f for f in pair_fields(entities) if f.value.strip() and field_label(f.label)]
    keys = [field_label(f.label).lower() for f in fields]
    fields = [f for f, k in zip(fields, keys) if keys.count(k) == 1]
    light = [{"id": e.id, "box": list(e.box), "text": e.text, "label": e.label,
              "linking": records[e.id].get("linking", [])} for e in entities]
    tasks = []
    for f in fields:
        x0, y0, x1, y1 = f.value_box
        box = (max(0.0, min(x0, x1 - 1)), max(0.0, min(y0, y1 - 1)), min(float(unit.width), max(x1, x0 + 1)),
               min(float(unit.height), max(y1, y0 + 1)))
        size = min(cap_estimate(records[a]) for a in f.answers)
        label = field_label(f.label)
        evidence = (Evidence(0, box, size, LEGIBLE_TEXT_PX, f"the value of '{label}'"),)
        others = [g.value for g in fields if g is not f and g.value != f.value]
        meta = {"source": "funsd", "annotation": str(path.resolve()), "questions": list(f.questions),
                "answers": list(f.answers), "how": f.how, "label": label, "distractors": list(dict.fromkeys(others)),
                "program": "vicogym.programs.evidence.forms.pair_fields", "entities": light}
        tasks.append(Task(f"funsd-{path.stem}-{f.questions[0]}", "funsd", FUNSD_QUESTION.format(label=label),
                          f.value, (unit,), evidence, "text", "anls", (), (), "first", meta))
    return tasks


# ------------------------------------------------------------------ JSONL


def load_jsonl(file: str | os.PathLike) -> list[Task]:
    """One task per non-blank line of a JSONL file (see the module)."""
    path = Path(file)
    if not path.is_file():
        raise SourceError(f"{path}: no such JSONL file")
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except UnicodeDecodeError as exc:
        raise SourceError(f"{path}: not UTF-8 text ({exc})") from None
    tasks: list[Task] = []
    ids: dict[str, int] = {}
    units: dict[Path, Unit] = {}
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        where = f"{path}: line {n}"
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise SourceError(f"{where}: malformed JSON at column {exc.colno} ({exc.msg})") from None
        task = jsonl_task(record, where, path, n, units)
        if task.id in ids:
            raise SourceError(f"{where}: field 'id': {task.id!r} is already the id of line {ids[task.id]}")
        ids[task.id] = n
        tasks.append(task)
    if not tasks:
        raise SourceError(f"{path}: the file holds no records")
    return tasks


def _text(record: Mapping[str, Any], name: str, where: str, numbers: bool = False) -> str:
    value = record[name]
    if numbers and is_number(value):
        return str(value)
    if not isinstance(value, str) or not value.strip():
        kind = "a non-empty string" + (" or a number" if numbers else "")
        raise SourceError(f"{where}: field {name!r}: expected {kind}, got {value!r}")
    return value


def _strings(record: Mapping[str, Any], name: str, where: str) -> tuple[str, ...]:
    value = record.get(name, [])
    if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
        raise SourceError(f"{where}: field {name!r}: expected a list of non-empty strings, got {value!r}")
    return tuple(value)


def jsonl_task(record: Any, where: str, file: Path, line: int, units: dict[Path, Unit] | None = None) -> Task:
    """One JSONL record (line ``line`` of ``file``) as a task (``where`` names the record
    in errors); ``units`` keeps the units made so far by path, so an image is read once."""
    file = Path(file)
    folder, stem = file.parent, file.stem
    units = {} if units is None else units
    if not isinstance(record, Mapping):
        raise SourceError(f"{where}: expected a JSON object, got {type(record).__name__}")
    _fields(record, JSONL_FIELDS, ("units", "question", "answer", "metric"), where, "a record")
    paths = record["units"]
    if not isinstance(paths, list) or not paths or not all(isinstance(p, str) and p for p in paths):
        raise SourceError(f"{where}: field 'units': expected a non-empty list of image paths, got {paths!r}")
    question = _text(record, "question", where)
    answer = _text(record, "answer", where, numbers=True)
    metric = record["metric"]
    if metric not in SCORERS:
        raise SourceError(f"{where}: field 'metric': expected one of {', '.join(SCORERS)}, got {metric!r}"
                          f"{did_you_mean(metric, SCORERS)}")
    options = _strings(record, "options", where)
    golds = _strings(record, "golds", where)
    if metric == "letter":
        if len(options) < 2:
            raise SourceError(f"{where}: field 'options': a letter question needs at least two options, got "
                              f"{list(options)!r}")
        if len(options) > 26:
            raise SourceError(f"{where}: field 'options': at most 26 options (A-Z), got {len(options)}")
        marks = letters(len(options))
        if answer.strip().upper() in marks and len(answer.strip()) == 1:
            answer = answer.strip().upper()
        elif answer in options:
            answer = marks[options.index(answer)]
        else:
            raise SourceError(f"{where}: field 'answer': expected an option's letter ({', '.join(marks)}) or its "
                              f"text, got {answer!r}")
    ident = record.get("id", f"{stem}-{line}")
    if not isinstance(ident, str) or not ident:
        raise SourceError(f"{where}: field 'id': expected a non-empty string, got {ident!r}")
    made = []
    for k, p in enumerate(paths):
        full = Path(p) if os.path.isabs(p) else folder / p
        key = full.resolve()
        if key not in units:
            units[key] = image_unit(full, f"{where}: field 'units' #{k}")
        made.append(units[key])
    evidence = _evidence(record.get("evidence", []), where, made)
    if metric == "letter":
        distractors = [m for m in letters(len(options)) if m != answer]
    else:
        distractors = []
    meta = {"source": "jsonl", "file": str(file.resolve()), "line": line,
            "distractors": distractors}
    return Task(ident, "jsonl", question, answer, tuple(made), evidence, CONTRACT_OF[metric], metric, golds, options,
                "first" if len(made) == 1 else "sheet", meta)


def _fields(record: Mapping[str, Any], known: Any, required: Sequence[str], where: str, what: str) -> None:
    """``SourceError`` for a field ``record`` should not have, or one it lacks."""
    unknown = sorted(set(record) - set(known))
    if unknown:
        raise SourceError(f"{where}: field {unknown[0]!r} is not a field of {what}{did_you_mean(unknown[0], known)} "
                          f"(fields: {', '.join(sorted(known))})")
    for name in required:
        if name not in record:
            raise SourceError(f"{where}: field {name!r} is missing")


def _evidence(items: Any, where: str, units: Sequence[Unit]) -> tuple[Evidence, ...]:
    if not isinstance(items, list):
        raise SourceError(f"{where}: field 'evidence': expected a list of {{'unit', 'box', 'size'}}, got {items!r}")
    out = []
    for k, item in enumerate(items):
        at = f"{where}: field 'evidence' #{k}"
        if not isinstance(item, Mapping):
            raise SourceError(f"{at}: expected an object with 'unit', 'box' and 'size', got {item!r}")
        _fields(item, EVIDENCE_FIELDS, ("unit", "box", "size"), at, "an evidence item")
        unit = item["unit"]
        if not is_int(unit, 0, len(units) - 1):
            raise SourceError(f"{at}: field 'unit': expected a unit index in 0..{len(units) - 1}, got {unit!r}")
        box = item["box"]
        problem = _box_error(box)
        if problem is None and not (box[0] < box[2] and box[1] < box[3]):
            problem = f"expected a box with x0 < x1 and y0 < y1, got {list(box)!r}"
        if problem:
            raise SourceError(f"{at}: field 'box': {problem}")
        if not _inside(box, units[unit]):
            raise SourceError(f"{at}: field 'box': {list(box)} lies outside unit {unit}'s image "
                              f"({units[unit].width}x{units[unit].height})")
        for name in ("size", "legible"):
            if name in item and not (is_number(item[name]) and item[name] > 0):
                raise SourceError(f"{at}: field {name!r}: expected a positive number, got {item[name]!r}")
        what = item.get("what", "")
        if not isinstance(what, str):
            raise SourceError(f"{at}: field 'what': expected a string, got {what!r}")
        out.append(Evidence(unit, tuple(float(v) for v in box), float(item["size"]),
                            float(item.get("legible", LEGIBLE_TEXT_PX)), what))
    return tuple(out)
