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
when it lists none), the smallest over the value's entities. A page holds at most
:data:`MAX_ENTITIES` entities, :data:`MAX_PAIRED` of them questions and answers (the
pairing compares labels and values pairwise; FUNSD's pages hold about 50 entities).

``load("jsonl", FILE)``: one task per non-blank line, ``{"units": [image paths, relative
to the file's folder], "question", "answer", "metric": anls | relaxed | letter | short |
exact, optional "options", "golds", "evidence": [{"unit", "box", "size", "legible",
"what"}], "id"}``. A letter question's answer is an option's letter (or its text, read as
its letter).

Every file a loader opens lies inside the folder it was given (the JSONL file's own
folder), every symlink resolved: an absolute path, a ``..`` or a link that leads out is
refused, and the error says no more about the outside than that. Every image's size is
read from its header first (at most :data:`vicogym.images.MAX_IMAGE_PIXELS` pixels, its
file at most 64 MiB) and the file is recorded with its SHA-256 (:func:`vicogym.images.record_checked`):
the raster renderer opens only files recorded so, and only with those bytes.

Every problem is one :class:`~vicogym.errors.SourceError` that names the file, the record
(``file:line``, or the entity id) and the field, and says what is expected.
"""

from __future__ import annotations

import hashlib
import os
import statistics
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from vicogym.errors import SourceError
from vicogym.images import record_checked
from vicogym.programs.evidence.forms import ENTITY_LABELS, Entity, field_label, pair_fields
from vicogym.sources import (
    IMAGE_FORMATS,
    LIMITS,
    MiB,
    check_name,
    contained,
    decode_text,
    image_size,
    inside,
    json_lines,
    one_line,
    parse_json,
    place,
    read_bytes,
    read_text,
)
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
#: the largest FUNSD annotation file read
ANNOTATION_BYTES = 16 * MiB
#: the most entities a FUNSD page may hold, and the most of them questions and answers
#: with text (the pairing program's work grows with the cube of those on one row or column)
MAX_ENTITIES, MAX_PAIRED = 2000, 200
#: the most units, evidence items and golds (and options) a JSONL record may list
MAX_UNITS, MAX_EVIDENCE, MAX_GOLDS = 256, 256, 256
#: the largest size or legible size (pixels) an evidence item may give
MAX_SIZE_PX = 100_000.0


def load(kind: str, path: str | os.PathLike) -> list[Task]:
    """The tasks of the data set at ``path``: ``kind`` is ``funsd`` (a folder) or
    ``jsonl`` (a file)."""
    if kind == "funsd":
        return load_funsd(path)
    if kind == "jsonl":
        return load_jsonl(path)
    raise SourceError(f"no loader {_brief(kind)}{did_you_mean(kind, KINDS)}; loaders: {', '.join(KINDS)}")


def _brief(value: Any, limit: int = 80) -> str:
    """``repr(value)`` for an error: one line, cut to ``limit`` characters."""
    try:
        text = one_line(repr(value))
    except (RecursionError, ValueError, MemoryError):
        text = f"a deeply nested {type(value).__name__}"
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _unicode(value: Any, at: str) -> None:
    """``SourceError`` at ``at`` when the string ``value`` is no valid Unicode (JSON's
    escapes can write a lone surrogate, which no UTF-8 file or Parquet column holds)."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise SourceError(f"{at}: {_brief(value)} is not valid Unicode (a lone surrogate such as \\ud800); write "
                          f"the character itself") from None


def _given(path: str | os.PathLike, what: str) -> Path:
    """The path a ``tasks`` spec names (absolute or relative to the working folder),
    when it can name a file at all."""
    text = os.fspath(path) if isinstance(path, (str, os.PathLike)) else path
    check_name(text if isinstance(text, str) else None, f"{what} {_brief(text)}", what)
    return Path(text)


# ------------------------------------------------------------------ images

def _sha256(path: Path, where: str) -> str:
    digest = hashlib.sha256()
    try:
        with open(path, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                digest.update(block)
    except OSError as exc:
        raise SourceError(f"{where}: {place(path)} cannot be read ({exc.strerror or exc})") from None
    return digest.hexdigest()


def image_unit(path: Path, where: str, title: str = "") -> Unit:
    """A raster unit of the image file at ``path`` (a path found inside the data set's
    folder, resolved: see :func:`vicogym.sources.inside`), its size read from the file's
    header within the pixel cap; the file is recorded as checked. ``where`` says which
    record names it, for the error."""
    path = Path(path)
    check_name(str(path), where, "image")  # the name as resolved: no control character, valid Unicode
    if path.is_dir():
        raise SourceError(f"{where}: {place(path)} is a folder, not an image; name a PNG or JPEG file")
    if not path.exists():
        raise SourceError(f"{where}: the image {place(path)} does not exist")
    if not path.is_file():
        raise SourceError(f"{where}: {place(path)} is not a regular file (a pipe or a device); name a PNG or JPEG file")
    width, height = image_size(path, where, IMAGE_FORMATS)  # its size on disk, header and pixel cap
    sha = _sha256(path, where)
    record_checked(str(path), sha)
    return Unit("image", int(width), int(height), {"path": str(path), "sha256": sha}, title or path.stem, 1.0)


def _inside(box: Sequence[float], unit: Unit) -> bool:
    return box[0] >= 0 and box[1] >= 0 and box[2] <= unit.width and box[3] <= unit.height


def _box_error(value: Any) -> str | None:
    if (not isinstance(value, (list, tuple)) or len(value) != 4
            or not all(is_number(v) for v in value)):
        return f"expected [x0, y0, x1, y1] (four finite numbers), got {_brief(value)}"
    if value[2] < value[0] or value[3] < value[1]:
        return f"expected x0 <= x1 and y0 <= y1, got {_brief(list(value))}"
    return None


# ------------------------------------------------------------------ FUNSD


def load_funsd(folder: str | os.PathLike) -> list[Task]:
    """One task per field of every page of a FUNSD-format folder (see the module)."""
    root = _given(folder, "FUNSD folder")
    if not root.is_dir():
        raise SourceError(f"{place(root)}: no such folder; a FUNSD folder holds annotations/*.json and "
                          f"images/*.png")
    annotations = contained(root, root / "annotations", place(root), "annotations folder")
    if not annotations.is_dir():
        raise SourceError(f"{place(root)}: a FUNSD folder holds annotations/*.json and images/*.png; there is no "
                          f"{place(root / 'annotations')}")
    files = sorted(annotations.glob("*.json"))
    if not files:
        raise SourceError(f"{place(root / 'annotations')}: no annotation files (*.json) in the FUNSD folder")
    tasks: list[Task] = []
    for listed in files:
        shown = place(root / "annotations" / listed.name)
        check_name(listed.name, shown, "annotation file")
        path = contained(root, listed, shown, "annotation file")
        image = contained(root, root / "images" / f"{listed.stem}.png", f"{shown}: the page's image", "image")
        tasks.extend(funsd_page(path, image, shown))
    if not tasks:
        raise SourceError(f"{place(root)}: no page has a field with a value (no question entity pairs with an answer)")
    return tasks


# each branch refuses one malformed field of FUNSD's entity records and names it
def funsd_entities(path: Path | str, data: Any, unit: Unit) -> list[Entity]:  # noqa: C901
    """The entities of one annotation file, checked (``SourceError`` naming the entity
    and field); ``path`` is the file as errors name it."""
    path = place(path)
    if not isinstance(data, Mapping) or not isinstance(data.get("form"), list):
        keys = f" with keys {_brief(sorted(data))}" if isinstance(data, Mapping) else ""
        raise SourceError(f"{path}: expected a JSON object with a 'form' list of entities, got "
                          f"{type(data).__name__}{keys}")
    if len(data["form"]) > MAX_ENTITIES:
        raise SourceError(f"{path}: field 'form': {len(data['form'])} entities, more than the {MAX_ENTITIES} a page "
                          f"may hold; split the page")
    out: list[Entity] = []
    seen: set[int] = set()
    for k, record in enumerate(data["form"]):
        if not isinstance(record, Mapping):
            raise SourceError(f"{path}: entity #{k}: expected an object, got {type(record).__name__}")
        ident = record.get("id")
        if not is_int(ident):
            raise SourceError(f"{path}: entity #{k}: field 'id': expected an integer, got {_brief(ident)}")
        where = f"{path}: entity {_brief(ident)}"
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
            raise SourceError(f"{where}: field 'box': {_brief(list(record['box']))} lies outside the image "
                              f"({unit.width}x{unit.height})")
        if not isinstance(record["text"], str):
            raise SourceError(f"{where}: field 'text': expected a string, got {_brief(record['text'])}")
        _unicode(record["text"], f"{where}: field 'text'")
        label = record["label"]
        if not isinstance(label, str) or label not in ENTITY_LABELS:
            hint = did_you_mean(label, ENTITY_LABELS) if isinstance(label, str) else ""
            raise SourceError(f"{where}: field 'label': expected one of {', '.join(ENTITY_LABELS)}, got "
                              f"{_brief(label)}{hint}")
        linking = record.get("linking", [])
        if not isinstance(linking, list) or not all(
                isinstance(p, (list, tuple)) and len(p) == 2 and all(is_int(v) for v in p) for p in linking):
            raise SourceError(f"{where}: field 'linking': expected [[id, id], ...], got {_brief(linking)}")
        words = record.get("words", [])
        if not isinstance(words, list):
            raise SourceError(f"{where}: field 'words': expected a list of {{'box', 'text'}}, got {_brief(words)}")
        for j, word in enumerate(words):
            problem = _box_error(word.get("box")) if isinstance(word, Mapping) else "expected an object"
            if problem:
                raise SourceError(f"{where}: field words[{j}].box: {problem}")
            if not _inside(word["box"], unit):
                raise SourceError(f"{where}: field words[{j}].box: {_brief(list(word['box']))} lies outside the "
                                  f"image ({unit.width}x{unit.height})")
        links = frozenset(v for p in linking for v in p if v != ident)
        out.append(Entity(ident, tuple(float(v) for v in record["box"]), record["text"], label, links))
    for e in out:
        missing = sorted(e.links - seen)
        if missing:
            raise SourceError(f"{path}: entity {_brief(e.id)}: field 'linking': names entity {_brief(missing[0])}, "
                              "which the file does not hold")
    paired = sum(1 for e in out if e.label in ("question", "answer") and e.text.strip())
    if paired > MAX_PAIRED:
        raise SourceError(f"{path}: field 'form': {paired} question and answer entities, more than the {MAX_PAIRED} a "
                          f"page may hold; split the page")
    return out


def cap_estimate(record: Mapping[str, Any]) -> float:
    """An entity's cap height: 0.7 x the median height of its word boxes (its own box's
    height when it lists no words)."""
    heights = [w["box"][3] - w["box"][1] for w in record.get("words", []) or [] if w["box"][3] > w["box"][1]]
    height = statistics.median(heights) if heights else record["box"][3] - record["box"][1]
    return max(0.5, CAP_PER_WORD_HEIGHT * float(height))


def funsd_page(path: Path, image: Path, shown: str | None = None) -> list[Task]:
    """The tasks of one FUNSD page: its annotation file and image (both found inside the
    data set's folder and resolved); ``shown`` names the annotation file in errors."""
    path = Path(path)
    shown = shown or place(path)
    data = parse_json(decode_text(read_bytes(path, ANNOTATION_BYTES, "annotation file"), shown, "annotation file"),
                      shown, surrogates=False)  # every entity's text is checked where it is read
    unit = image_unit(Path(image), f"{shown}: the page's image", path.stem)
    entities = funsd_entities(shown, data, unit)
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
        meta = {"source": "funsd", "annotation": str(path), "questions": list(f.questions),
                "answers": list(f.answers), "how": f.how, "label": label, "distractors": list(dict.fromkeys(others)),
                "program": "vicogym.programs.evidence.forms.pair_fields", "entities": light}
        tasks.append(Task(f"funsd-{path.stem}-{f.questions[0]}", "funsd", FUNSD_QUESTION.format(label=label),
                          f.value, (unit,), evidence, "text", "anls", (), (), "first", meta))
    return tasks


# ------------------------------------------------------------------ JSONL


def load_jsonl(file: str | os.PathLike) -> list[Task]:
    """One task per non-blank line of a JSONL file (see the module)."""
    given = _given(file, "JSONL file")
    shown = place(given)
    if not given.exists():
        raise SourceError(f"{shown}: no such JSONL file")
    text = read_text(given, LIMITS["text"], "JSONL file")
    tasks: list[Task] = []
    ids: dict[str, int] = {}
    units: dict[Path, Unit] = {}
    for n, record in json_lines(text.split("\n"), shown, surrogates=False):  # its fields name their text
        where = f"{shown}:{n}"
        task = jsonl_task(record, where, given, n, units)
        if task.id in ids:
            raise SourceError(f"{where}: field 'id': {_brief(task.id)} is already the id of line {ids[task.id]}")
        ids[task.id] = n
        tasks.append(task)
    if not tasks:
        raise SourceError(f"{shown}: the file holds no records")
    return tasks


def _text(record: Mapping[str, Any], name: str, where: str, numbers: bool = False) -> str:
    value = record[name]
    if numbers and is_number(value):
        return str(value)
    if not isinstance(value, str) or not value.strip():
        kind = "a non-empty string" + (" or a finite number" if numbers else "")
        raise SourceError(f"{where}: field {name!r}: expected {kind}, got {_brief(value)}")
    _unicode(value, f"{where}: field {name!r}")
    return value


def _strings(record: Mapping[str, Any], name: str, where: str, most: int | None = None) -> tuple[str, ...]:
    value = record.get(name, [])
    if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
        raise SourceError(f"{where}: field {name!r}: expected a list of non-empty strings, got {_brief(value)}")
    if most is not None and len(value) > most:
        raise SourceError(f"{where}: field {name!r}: {len(value)} items, more than the {most} a record may list")
    for k, item in enumerate(value):
        _unicode(item, f"{where}: field {name}[{k}]")
    return tuple(value)


def jsonl_task(record: Any, where: str, file: Path, line: int, units: dict[Path, Unit] | None = None) -> Task:
    """One JSONL record (line ``line`` of ``file``) as a task (``where`` names the record
    in errors: ``file:line``); ``units`` keeps the units made so far by path, so an image
    is read once. Every unit path is taken relative to ``file``'s folder and must lie
    inside it."""
    file = Path(file)
    folder, stem = file.parent, file.stem
    units = {} if units is None else units
    if not isinstance(record, Mapping):
        raise SourceError(f"{where}: expected a JSON object, got {type(record).__name__}")
    _fields(record, JSONL_FIELDS, ("units", "question", "answer", "metric"), where, "a record")
    paths = record["units"]
    if not isinstance(paths, list) or not paths:
        raise SourceError(f"{where}: field 'units': expected a non-empty list of image paths relative to "
                          f"{place(folder)}, got {_brief(paths)}")
    if len(paths) > MAX_UNITS:
        raise SourceError(f"{where}: field 'units': {len(paths)} images, more than the {MAX_UNITS} a record may list")
    question = _text(record, "question", where)
    answer = _text(record, "answer", where, numbers=True)
    metric = record["metric"]
    if not isinstance(metric, str) or metric not in SCORERS:
        hint = did_you_mean(metric, SCORERS) if isinstance(metric, str) else ""
        raise SourceError(f"{where}: field 'metric': expected one of {', '.join(SCORERS)}, got {_brief(metric)}{hint}")
    options = _strings(record, "options", where, MAX_GOLDS)
    golds = _strings(record, "golds", where, MAX_GOLDS)
    if metric == "letter":
        if len(options) < 2:
            raise SourceError(f"{where}: field 'options': a letter question needs at least two options, got "
                              f"{_brief(list(options))}")
        if len(options) > 26:
            raise SourceError(f"{where}: field 'options': at most 26 options (A-Z), got {len(options)}")
        marks = letters(len(options))
        if answer.strip().upper() in marks and len(answer.strip()) == 1:
            answer = answer.strip().upper()
        elif answer in options:
            answer = marks[options.index(answer)]
        else:
            raise SourceError(f"{where}: field 'answer': expected an option's letter ({', '.join(marks)}) or its "
                              f"text, got {_brief(answer)}")
    ident = record.get("id", f"{stem}-{line}")
    if not isinstance(ident, str) or not ident:
        raise SourceError(f"{where}: field 'id': expected a non-empty string, got {_brief(ident)}")
    _unicode(ident, f"{where}: field 'id'")
    made = []
    for k, ref in enumerate(paths):
        at = f"{where}: field units[{k}]"
        full = inside(folder, ref, at, "image")
        if full not in units:
            units[full] = image_unit(full, at)
        made.append(units[full])
    evidence = _evidence(record.get("evidence", []), where, made)
    distractors = [m for m in letters(len(options)) if m != answer] if metric == "letter" else []
    meta = {"source": "jsonl", "file": os.path.realpath(file), "line": line, "distractors": distractors}
    try:
        return Task(ident, "jsonl", question, answer, tuple(made), evidence, CONTRACT_OF[metric], metric, golds,
                    options, "first" if len(made) == 1 else "sheet", meta)
    except ValueError as exc:  # the checks above leave none; a task's own checks still name the record
        raise SourceError(f"{where}: {one_line(str(exc))}") from None


def _fields(record: Mapping[str, Any], known: Any, required: Sequence[str], where: str, what: str) -> None:
    """``SourceError`` for a field ``record`` should not have, or one it lacks."""
    unknown = sorted(set(record) - set(known))
    if unknown:
        raise SourceError(f"{where}: field {_brief(unknown[0])} is not a field of {what}"
                          f"{did_you_mean(unknown[0], known)} (fields: {', '.join(sorted(known))})")
    for name in required:
        if name not in record:
            raise SourceError(f"{where}: field {name!r} is missing")


def _evidence(items: Any, where: str, units: Sequence[Unit]) -> tuple[Evidence, ...]:
    if not isinstance(items, list):
        raise SourceError(f"{where}: field 'evidence': expected a list of {{'unit', 'box', 'size'}}, got "
                          f"{_brief(items)}")
    if len(items) > MAX_EVIDENCE:
        raise SourceError(f"{where}: field 'evidence': {len(items)} items, more than the {MAX_EVIDENCE} a record may "
                          f"list")
    out = []
    for k, item in enumerate(items):
        at = f"{where}: field evidence[{k}]"
        if not isinstance(item, Mapping):
            raise SourceError(f"{at}: expected an object with 'unit', 'box' and 'size', got {_brief(item)}")
        _fields(item, EVIDENCE_FIELDS, ("unit", "box", "size"), at, "an evidence item")
        unit = item["unit"]
        if not is_int(unit, 0, len(units) - 1):
            raise SourceError(f"{at}.unit: expected a unit index in 0..{len(units) - 1}, got {_brief(unit)}")
        box = item["box"]
        problem = _box_error(box)
        if problem is None and not (box[0] < box[2] and box[1] < box[3]):
            problem = f"expected a box with x0 < x1 and y0 < y1, got {_brief(list(box))}"
        if problem:
            raise SourceError(f"{at}.box: {problem}")
        if not _inside(box, units[unit]):
            raise SourceError(f"{at}.box: {_brief(list(box))} lies outside unit {unit}'s image "
                              f"({units[unit].width}x{units[unit].height})")
        for name in ("size", "legible"):
            if name in item and not (is_number(item[name], 0, MAX_SIZE_PX) and item[name] > 0):
                raise SourceError(f"{at}.{name}: expected a positive number of pixels (at most {MAX_SIZE_PX:g}), "
                                  f"got {_brief(item[name])}")
        what = item.get("what", "")
        if not isinstance(what, str):
            raise SourceError(f"{at}.what: expected a string, got {_brief(what)}")
        _unicode(what, f"{at}.what")
        out.append(Evidence(unit, tuple(float(v) for v in box), float(item["size"]),
                            float(item.get("legible", LEGIBLE_TEXT_PX)), what))
    return tuple(out)
