"""Generated source folders for the Chart-v0, Natural-v0 and CLEVR-v0 loaders (a ChartQA
folder, a single ChartQA CSV, a COCO-style folder, a natural-image JSONL file, a CLEVR
scenes folder), each with one thing wrong: a path that is absolute, climbs out with
``..`` or is a symlink (out: refused; to a file inside the folder: allowed), a file or
field of the wrong type, a number of thousands of digits or none a float holds, nesting
deeper than a parser follows, a byte-order mark, NUL bytes, bytes that are not UTF-8, an
image whose header claims 20000 x 20000 or 60000 x 60000 pixels, a 16-bit RGBA PNG.

Every loader answers each with a valid source or one :class:`SourceError` whose message
is one line, names the source's file and never the target of a link out, in bounded
time; the heavy cases are measured (time and peak memory) in a child process. Each
property counts the inputs it tried and prints the count (``pytest -s`` shows them)."""

import contextlib
import csv
import io
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import time
import zlib
from collections import Counter
from pathlib import Path

import cv2
import numpy as np
import pytest
from conftest import CHILD_PEAK_RSS, REPO
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vicogym.errors import GenerationError, SourceError
from vicogym.sources.chartqa import ChartQASource
from vicogym.sources.chartqa_tables import load_chartqa_table
from vicogym.sources.clevr import ReleaseSource, procedural_scene
from vicogym.sources.natural import RecordSource, load_image
from vicogym.structures.chart import MAX_ROWS, MAX_SERIES

#: the outside folder's name and its files' text: neither may ever show in an error
OUTSIDE = "outside_secret_7f3a"
SECRET = "SECRET-CONTENT-91c2"
#: generous bounds for any file under 1 MB (the loaders take well under a second on each)
#: the bounds: processor seconds (the machine may be shared: its clock gets WALL_SECONDS) and MiB
SECONDS, WALL_SECONDS, MEMORY_MB = 10.0, 60.0, 1024
#: inputs tried per loader (printed by each property)
TRIED: Counter = Counter()
FUZZ = settings(max_examples=80, deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


# -- files ------------------------------------------------------------------------------
def _chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)


def png_header(width: int, height: int, depth: int = 8, color: int = 2) -> bytes:
    """A PNG of an IHDR and nothing else: a header claiming ``width`` x ``height``."""
    return (b"\x89PNG\r\n\x1a\n" + _chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, depth, color, 0, 0, 0))
            + _chunk(b"IEND", b""))


def jpeg_header(width: int, height: int) -> bytes:
    """A JPEG of a start-of-frame claiming ``width`` x ``height`` and an empty scan."""
    sof = struct.pack(">BHHB", 8, height, width, 3) + b"".join(struct.pack(">BBB", i, 0x11, 0) for i in (1, 2, 3))
    sos = b"\x03" + b"".join(struct.pack(">BB", i, 0) for i in (1, 2, 3)) + b"\x00\x3f\x00"
    return (b"\xff\xd8\xff\xc0" + struct.pack(">H", len(sof) + 2) + sof + b"\xff\xda" + struct.pack(">H", len(sos) + 2)
            + sos + b"\x00" * 16 + b"\xff\xd9")


def png_uniform(width: int, height: int, depth: int = 16, color: int = 6, level: int = 0x1234) -> bytes:
    """A real PNG of one colour (16-bit RGBA by default), compressed row by row."""
    channels = {0: 1, 2: 3, 4: 2, 6: 4}[color]
    sample = level.to_bytes(2, "big") if depth == 16 else bytes([level & 0xFF])
    row = b"\x00" + sample * (channels * width)
    packer = zlib.compressobj(9)
    data = b"".join(packer.compress(row) for _ in range(height)) + packer.flush()
    return (b"\x89PNG\r\n\x1a\n" + _chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, depth, color, 0, 0, 0))
            + _chunk(b"IDAT", data) + _chunk(b"IEND", b""))


def _gif(width: int, height: int) -> bytes:
    from PIL import Image

    buffer = io.BytesIO()
    Image.new("RGB", (width, height), (90, 90, 90)).save(buffer, "GIF")
    return buffer.getvalue()


def _png(height: int, width: int, value: int = 90) -> bytes:
    return cv2.imencode(".png", np.full((height, width, 3), value, np.uint8))[1].tobytes()


#: image files a record may name, by what is wrong with them (None: nothing)
IMAGES = {
    "ok": lambda: _png(50, 60),
    "png_20000": lambda: png_header(20000, 20000),
    "jpeg_60000": lambda: jpeg_header(60000, 60000),
    "png_16bit_rgba": lambda: png_uniform(60, 50),
    "png_tiny": lambda: _png(1, 1),
    "png_truncated": lambda: _png(50, 60)[:60],
    "png_header_only": lambda: png_header(60, 50),
    "empty": lambda: b"",
    "text": lambda: b"not an image at all\n",
    "gif": lambda: _gif(60, 50),
    "zero_width": lambda: png_header(0, 50),
}


class Raw:
    """JSON text written as is where a value goes (``Infinity``, 5000 digits)."""

    def __init__(self, text: str):
        self.text = text

    def __repr__(self) -> str:
        return f"Raw({self.text[:20]!r})"


RAW = [Raw("Infinity"), Raw("-Infinity"), Raw("NaN"), Raw("1e999"), Raw("-1e999"), Raw("9" * 5000),
       Raw("-" + "9" * 400), Raw("[" * 3000 + "]" * 3000), Raw('"' + "\\ud800" + '"')]
#: any JSON value a field may get instead of the one it expects
VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-10**6, 10**6) | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=6) | st.sampled_from(RAW) | st.sampled_from([10**30, -1, 0, 1e300, "1e999", "Infinity"]),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
    max_leaves=6)


def dumps(value) -> str:
    """``value`` as JSON, with :class:`Raw` parts written as they are."""
    raws: list[str] = []

    def default(o):
        if isinstance(o, Raw):
            raws.append(o.text)
            return f"@@RAW{len(raws) - 1}@@"
        raise TypeError(type(o).__name__)

    text = json.dumps(value, default=default)
    for k, raw in enumerate(raws):
        text = text.replace(f'"@@RAW{k}@@"', raw)
    return text


#: how a JSON file's text may be spoiled as a whole
FILE_SPOILS = {
    "bom": lambda b: b"\xef\xbb\xbf" + b,
    "bad_utf8": lambda b: b[: len(b) // 2] + b"\xff\xfe\xc3(" + b[len(b) // 2:],
    "nul": lambda b: b[: len(b) // 2] + b"\x00" + b[len(b) // 2:],
    "truncated": lambda b: b[: len(b) // 2],
    "deep": lambda b: b"[" * 100_000 + b"]" * 100_000,
    "empty": lambda b: b"",
    "list": lambda b: b"[]",
    "number": lambda b: b"9" * 5000,
}


# -- paths ------------------------------------------------------------------------------
#: path payloads: what a path field may hold, and for the ``link`` kinds the link made
#: inside the folder (name, target); ``{ext}`` is the field's file kind
PATHS = {
    "plain": ("a.{ext}", None),
    "dotdot": (f"../{OUTSIDE}/secret.{{ext}}", None),
    "inner_dotdot": (f"x/../../{OUTSIDE}/secret.{{ext}}", None),
    "backslash": (f"..\\{OUTSIDE}\\secret.{{ext}}", None),
    "absolute": ("{outside}/secret.{ext}", None),
    "absolute_missing": (f"/{OUTSIDE}-missing/secret.{{ext}}", None),
    "drive": ("C:/secret.{ext}", None),
    "link_out": ("link.{ext}", ("link.{ext}", "{outside}/secret.{ext}")),
    "link_out_relative": ("link.{ext}", ("link.{ext}", f"../{{up}}{OUTSIDE}/secret.{{ext}}")),
    "link_dir_out": ("d/secret.{ext}", ("d", "{outside}")),
    "link_dangling_out": ("link.{ext}", ("link.{ext}", "{outside}/missing.{ext}")),
    "link_loop": ("loop.{ext}", ("loop.{ext}", "loop.{ext}")),
    "link_in": ("link.{ext}", ("link.{ext}", "a.{ext}")),
    "link_in_absolute": ("link.{ext}", ("link.{ext}", "{here}/a.{ext}")),
    "nul": ("a\x00.{ext}", None),
    "newline": ("a\n.{ext}", None),
    "direction_override": ("a\u202e.{ext}", None),
    "long_name": ("x" * 300 + ".{ext}", None),
    "long_path": ("d/" * 2100 + "a.{ext}", None),
    "surrogate": ("\ud800.{ext}", None),
    "blank": ("", None),
    "fifo": ("fifo.{ext}", "fifo"),
}
OUT_KINDS = {"dotdot", "inner_dotdot", "backslash", "absolute", "absolute_missing", "drive", "link_out",
             "link_out_relative", "link_dir_out", "link_dangling_out"}
LINK_OUT = {"link_out", "link_out_relative", "link_dir_out", "link_dangling_out"}
NOT_STRINGS = [7, ["a.png"], {"a": 1}, None, True, 1.5]


class Case:
    """One generated source: ``root/src`` beside ``root/<OUTSIDE>`` (whose files hold
    :data:`SECRET`)."""

    def __init__(self):
        self.root = Path(tempfile.mkdtemp(prefix="fuzz-"))
        self.src = self.root / "src"
        self.src.mkdir()
        self.outside = self.root / OUTSIDE
        self.outside.mkdir()
        for ext in ("png", "jpg", "csv"):
            (self.outside / f"secret.{ext}").write_bytes(_png(50, 60) if ext != "csv" else
                                                         f"Item,{SECRET}\n{SECRET},1\nb,2\n".encode())
        for name in ("annotations.json", "questions.json", "qa.jsonl", "CLEVR_val_scenes.json"):
            (self.outside / name).write_text(json.dumps({"note": SECRET}))

    def path_ref(self, kind, ext: str, folder: str = ""):
        """The value a path field gets for payload ``kind`` (a string, or another JSON value),
        after making the link or file it needs in ``src/folder``."""
        if not isinstance(kind, str):
            return kind
        ref, make = PATHS[kind]
        here = self.src / folder
        here.mkdir(parents=True, exist_ok=True)
        up = "../" * len(Path(folder).parts)
        fill = {"ext": ext, "outside": str(self.outside), "here": str(here), "up": up}
        if make == "fifo":
            os.mkfifo(here / f"fifo.{ext}")
        elif make is not None:
            name, target = (x.format(**fill) for x in make)
            os.symlink(target, here / name)
        return ref.format(**fill)

    def write(self, relative: str, data) -> Path:
        path = self.src / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data if isinstance(data, bytes) else data.encode("utf-8", "surrogatepass"))
        return path

    def close(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)


def answer(loader: str, call, case: Case, kind=None, names=()):
    """Run ``call``; check that it gave a result or one line of :class:`SourceError` naming
    the source (and, where given, one of ``names``), never a link's outside target nor the
    outside files' text, within :data:`SECONDS`. Returns the result or ``None``."""
    TRIED[loader] += 1
    kind = kind if isinstance(kind, str) else None  # a path field given a number or a list: no path
    start, cpu = time.monotonic(), time.process_time()
    try:
        result = call()
    except SourceError as exc:
        message = str(exc)
        assert message.isprintable(), f"{loader} {kind!r}: the error is not one printable line: {message!r}"
        assert str(case.src) in message, f"{loader} {kind!r}: the error names no file of the source: {message}"
        if names:
            assert any(name in message for name in names), f"{loader} {kind!r}: expected one of {names}: {message}"
        assert SECRET not in message
        if kind in LINK_OUT:
            assert OUTSIDE not in message, f"{loader} {kind!r}: the error names the outside: {message}"
        if kind in OUT_KINDS:
            assert "outside the source folder" in message, f"{loader} {kind!r}: {message}"
            assert "exist" not in message and "no file" not in message, message
        result = None
    assert time.process_time() - cpu < SECONDS, f"{loader} {kind!r} took {time.process_time() - cpu:.1f} s"
    assert time.monotonic() - start < WALL_SECONDS, f"{loader} {kind!r} took {time.monotonic() - start:.1f} s"
    if kind in OUT_KINDS:
        assert result is None, f"{loader} {kind!r}: a path out of the folder was read"
    return result


PATH_KINDS = st.sampled_from(sorted(PATHS)) | st.sampled_from(NOT_STRINGS)


# -- ChartQA folders and CSV tables -------------------------------------------------------
CELLS = (st.integers(-10**6, 10**6).map(str) | st.floats(-1e6, 1e6).map(lambda v: f"{v:.2f}")
         | st.sampled_from(["nan", "-", "", "50%", "0.26M", "1,327.7", "9" * 5000, "1e999", "1e308", "-1e16",
                            "x", "\x00", "1\n2", '"', "\ufeff1"]))
LABELS = st.text(max_size=12) | st.sampled_from(["2019", "Total", "a,b", "x" * 200, "\x00", "\u202e"])


@st.composite
def csv_texts(draw) -> bytes:
    rows = draw(st.integers(0, MAX_ROWS + 3))
    columns = draw(st.integers(1, MAX_SERIES + 3))
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(["Item", *[draw(LABELS) for _ in range(columns)]])
    cells = draw(st.lists(CELLS, min_size=columns, max_size=columns))
    for i in range(rows):
        writer.writerow([f"r{i}", *cells])
    data = buffer.getvalue().encode("utf-8", "surrogatepass")
    spoil = draw(st.sampled_from([None, None, "bom", "bad_utf8", "nul", "truncated", "empty"]))
    return FILE_SPOILS[spoil](data) if spoil else data


def _check_table(table) -> None:
    assert 1 <= len(table.rows) <= MAX_ROWS and 1 <= len(table.series) <= MAX_SERIES
    assert all(label.isprintable() for label in (*table.rows, *table.series))
    assert all(v is None or np.isfinite(v) for row in table.values for v in row)


@FUZZ
@given(csv_texts())
def _single_csv(data):
    case = Case()
    try:
        path = case.write("t.csv", data)
        table = answer("single CSV", lambda: load_chartqa_table(path), case, names=("t.csv",))
        if table is not None:
            _check_table(table)
    finally:
        case.close()


def test_single_csv_tables():
    _single_csv()
    print(f"\nsingle CSV: {TRIED['single CSV']} inputs")
    assert TRIED["single CSV"] >= 20


#: what one generated input changes in an otherwise valid source: a path, a field, a whole file
MUTATIONS = st.sampled_from(["path", "field", "file"])
#: path payloads a valid source must load with
FINE = {"plain", "link_in", "link_in_absolute"}


@FUZZ
@given(csv_texts(), MUTATIONS, PATH_KINDS, st.sampled_from(["imgname", "tables", "qa.jsonl"]), VALUES,
       st.sampled_from(sorted(FILE_SPOILS)), st.sampled_from(["query", "label", "imgname", "line"]))
def _chartqa_folder(table, mutation, path_kind, where, value, spoil, field):
    case = Case()
    try:
        case.write("tables/a.csv", table)
        record, kind = {"imgname": "a.png", "query": "What is the value of r1?", "label": "3"}, None
        line = dumps(record)
        if mutation == "path" and where == "imgname":
            ref = case.path_ref(path_kind, "csv", "tables")
            record["imgname"] = ref[: -len(".csv")] + ".png" if isinstance(ref, str) and ref.endswith(".csv") else ref
            line, kind = dumps(record), path_kind
        elif mutation == "path" and where == "tables":  # the tables folder itself a link out
            shutil.rmtree(case.src / "tables")
            os.symlink(case.outside, case.src / "tables")
            kind = "link_dir_out"
        elif mutation == "path":  # the records a link out
            os.symlink(case.outside / "qa.jsonl", case.src / "qa.jsonl")
            kind = "link_out"
        elif mutation == "field":
            line = dumps(value) if field == "line" else dumps(dict(record, **{field: value}))
        if not (case.src / "qa.jsonl").is_symlink():
            data = (line + "\n").encode("utf-8", "surrogatepass")
            case.write("qa.jsonl", FILE_SPOILS[spoil](data) if mutation == "file" else data)
        source = answer("ChartQA folder", lambda: ChartQASource(case.src), case, kind)
        if source is not None:
            for i in source.usable:
                source.seed(i)
            for stem in source._tables:
                _check_table(source._tables[stem])
                assert SECRET not in json.dumps(source._tables[stem].to_dict())
    finally:
        case.close()


def test_chartqa_folders():
    _chartqa_folder()
    print(f"\nChartQA folder: {TRIED['ChartQA folder']} inputs")
    assert TRIED["ChartQA folder"] >= 20


# -- natural-image JSONL files and COCO-style folders ------------------------------------------
SKIMAGE_NAMES = ["skimage:" + n for n in (
    "download_all", "lbp_frontal_face_cascade_filename", "file_hash", "data_dir", "binary_blobs", "cells3d",
    "lfw_subset", "brain", "__class__", "__getattr__", "_fetch", "eagle", "coins", "logo", "horse", "camera", "")]
MATPLOTLIB_NAMES = ["matplotlib:grace_hopper.jpg", "matplotlib:msft.csv", "matplotlib:../../../../etc/passwd",
                    "matplotlib:/etc/passwd", "matplotlib:axes_grid", "matplotlib:\x00"]


def _opened(source):
    """``source`` after every record's image is decoded (where a broken one is found)."""
    for record in source.records:
        image = source.image(record.image)
        assert image.dtype == np.uint8 and image.ndim == 3 and image.shape[2] == 3
        record.check_inside(image.shape[1], image.shape[0])
    return source


@FUZZ
@given(MUTATIONS, PATH_KINDS | st.sampled_from(SKIMAGE_NAMES + MATPLOTLIB_NAMES), st.sampled_from(sorted(IMAGES)),
       st.sampled_from(["id", "question", "answer", "answer_type", "targets", "box", "line"]), VALUES,
       st.sampled_from(sorted(FILE_SPOILS)))
def _natural_jsonl(mutation, path_kind, image, field, value, spoil):
    case = Case()
    try:
        case.write("a.png", IMAGES[image]())
        ref, kind = "a.png", None
        if mutation == "path":
            named = str(path_kind).startswith(("skimage:", "matplotlib:"))
            ref, kind = (path_kind if named else case.path_ref(path_kind, "png")), str(path_kind)
        record = {"id": "q1", "image": ref, "question": "How many coins?", "answer": 1, "answer_type": "number",
                  "targets": [{"label": "coin", "box": [0, 0, 1, 1]}]}
        if mutation == "field" and field == "box":
            record["targets"][0]["box"] = value
        elif mutation == "field" and field != "line":
            record[field] = value
        data = ((dumps(value) if mutation == "field" and field == "line" else dumps(record)) + "\n").encode(
            "utf-8", "surrogatepass")
        path = case.write("records.jsonl", FILE_SPOILS[spoil](data) if mutation == "file" else data)
        source = answer("natural JSONL", lambda: _opened(RecordSource(str(path))), case, kind, ("records.jsonl",))
        fine = kind in FINE or mutation == "file" and spoil == "bom"
        if source is None and fine and image in ("ok", "png_16bit_rgba"):
            raise AssertionError(f"a valid source was refused ({kind}, {spoil})")
    finally:
        case.close()


def test_natural_jsonl_files():
    _natural_jsonl()
    print(f"\nnatural JSONL: {TRIED['natural JSONL']} inputs")
    assert TRIED["natural JSONL"] >= 20


COCO_FIELDS = ["file_name", "image.id", "annotation.id", "category_id", "category.id", "category.name", "bbox",
               "bbox[2]", "segmentation", "question.image_id", "question.targets", "question.targets[0]",
               "question.id", "question.answer", "categories", "images", "annotations", "questions"]


@FUZZ
@given(MUTATIONS, PATH_KINDS, st.sampled_from(sorted(IMAGES)), st.sampled_from(COCO_FIELDS), VALUES,
       st.sampled_from(sorted(FILE_SPOILS)), st.sampled_from(["annotations.json", "questions.json"]),
       st.sampled_from(["file_name", "images", "annotations.json"]))
def _coco_folder(mutation, path_kind, image, field, value, spoil, spoiled, linked):
    case = Case()
    try:
        case.write("images/a.png", IMAGES[image]())
        file_name, kind = "a.png", None
        if mutation == "path" and linked == "file_name":
            file_name, kind = case.path_ref(path_kind, "png", "images"), str(path_kind)
        elif mutation == "path" and linked == "images":  # the images folder a link out
            shutil.rmtree(case.src / "images")
            os.symlink(case.outside, case.src / "images")
            kind = "link_dir_out"
        elif mutation == "path":  # the annotations a link out
            os.symlink(case.outside / "annotations.json", case.src / "annotations.json")
            kind = "link_out"
        image_entry = {"id": 7, "file_name": file_name, "width": 60, "height": 50}
        annotation = {"id": 1, "image_id": 7, "category_id": 3, "bbox": [10.5, 20, 15, 10],
                      "segmentation": [[5, 5, 20, 5, 20, 20]]}
        category = {"id": 3, "name": "car"}
        question = {"id": "cars", "image_id": 7, "question": "How many cars?", "answer": "1", "answer_type": "number",
                    "targets": [1]}
        annotations = {"images": [image_entry], "annotations": [annotation], "categories": [category]}
        questions = [question]
        if mutation == "field":
            target, _, key = field.rpartition(".")
            if field in ("categories", "images", "annotations"):
                annotations[field] = value
            elif field == "questions":
                questions = value
            elif field in ("bbox", "bbox[2]"):
                annotation.pop("segmentation")
                annotation["bbox"] = value if field == "bbox" else [10.5, 20, value, 10]
            elif field in ("file_name", "category_id", "segmentation"):
                (image_entry if field == "file_name" else annotation)[field] = value
            elif field == "question.targets[0]":
                question["targets"][0] = value
            else:
                {"image": image_entry, "annotation": annotation, "category": category, "question": question}[
                    target][key] = value
        for name, content in (("annotations.json", annotations), ("questions.json", questions)):
            if not (case.src / name).is_symlink():
                data = dumps(content).encode("utf-8", "surrogatepass")
                case.write(name, FILE_SPOILS[spoil](data) if mutation == "file" and name == spoiled else data)
        source = answer("COCO folder", lambda: _opened(RecordSource(str(case.src))), case, kind)
        if source is None and kind in FINE and image in ("ok", "png_16bit_rgba"):
            raise AssertionError(f"a valid source was refused ({kind})")
    finally:
        case.close()


def test_coco_style_folders():
    _coco_folder()
    print(f"\nCOCO folder: {TRIED['COCO folder']} inputs")
    assert TRIED["COCO folder"] >= 20


# -- CLEVR scene folders ---------------------------------------------------------------------
def _scenes() -> list[dict]:
    """Two scenes as CLEVR's release stores them (directions, no camera)."""
    rng = np.random.default_rng(3)
    scenes = [json.loads(procedural_scene(rng, 480, 320).to_json()) for _ in range(2)]
    for k, scene in enumerate(scenes):
        scene.update(image_index=k, split="val")
        scene.pop("camera")
        scene.pop("lights")
    return scenes


SCENES = _scenes()
SCENE_FIELDS = ["objects", "image_index", "directions", "camera", "lights", "image_size", "object", "3d_coords",
                "shape", "rotation", "color", "size", "material", "scenes", "question", "program", "answer",
                "question.image_index", "questions"]


@FUZZ
@given(MUTATIONS, st.sampled_from(SCENE_FIELDS), VALUES, st.sampled_from(sorted(FILE_SPOILS)),
       st.sampled_from(["scenes", "questions"]),
       st.sampled_from(["scenes_dir", "scenes_file", "questions_file", "scenes_dir_in"]))
def _clevr_folder(mutation, field, value, spoil, spoiled, link):
    case = Case()
    try:
        scenes = json.loads(json.dumps(SCENES))
        question = {"image_index": 0, "question": "How many things are there?",
                    "program": [{"function": "scene", "inputs": [], "value_inputs": []},
                                {"function": "count", "inputs": [0], "value_inputs": []}],
                    "answer": str(len(scenes[0]["objects"]))}
        scenes_file, questions_file = {"info": {}, "scenes": scenes}, {"info": {}, "questions": [question]}
        if mutation == "field":
            if field in ("3d_coords", "shape", "rotation", "color", "size", "material"):
                scenes[0]["objects"][0][field] = value
            elif field == "object":
                scenes[0]["objects"][0] = value
            elif field in ("scenes", "questions"):
                (scenes_file if field == "scenes" else questions_file)[field] = value
            elif field in ("question", "program", "answer"):
                question[field] = value
            elif field == "question.image_index":
                question["image_index"] = value
            else:
                scenes[0][field] = value
        kind = None
        for name, content in (("scenes", scenes_file), ("questions", questions_file)):
            data = dumps(content).encode("utf-8", "surrogatepass")
            data = FILE_SPOILS[spoil](data) if mutation == "file" and name == spoiled else data
            file = f"{name}/CLEVR_val_{name}.json"
            if mutation == "path" and link == "scenes_dir" and name == "scenes":  # the whole folder elsewhere
                (case.outside / "scenes").mkdir()
                (case.outside / "scenes" / "CLEVR_val_scenes.json").write_bytes(data)
                os.symlink(case.outside / "scenes", case.src / "scenes")
                kind = "link_dir_out"
            elif mutation == "path" and link == "scenes_dir_in" and name == "scenes":  # a folder inside: fine
                case.write("data/CLEVR_val_scenes.json", data)
                os.symlink("data", case.src / "scenes")
                kind = "link_in"
            elif mutation == "path" and link == f"{name}_file":
                (case.outside / f"{name}.json").write_bytes(data)
                (case.src / name).mkdir()
                os.symlink(case.outside / f"{name}.json", case.src / file)
                kind = "link_out"
            else:
                case.write(file, data)
        source = answer("CLEVR folder", lambda: ReleaseSource(case.src, 64, 48), case, kind)
        if source is not None:
            # a scene no template can ask about: typed, and not the loader's
            with contextlib.suppress(GenerationError):
                source.sample(np.random.default_rng(0))
        elif kind == "link_in" or mutation == "file" and spoil == "bom":
            raise AssertionError(f"a valid source was refused ({kind}, {spoil})")
    finally:
        case.close()


def test_clevr_scene_folders():
    _clevr_folder()
    print(f"\nCLEVR folder: {TRIED['CLEVR folder']} inputs")
    assert TRIED["CLEVR folder"] >= 20


# -- each defect kind on its own ---------------------------------------------------------------
@pytest.fixture
def case():
    made = Case()
    yield made
    made.close()


def _chartqa(case, table: bytes | str = "Year,Sales\n2018,1\n2019,3\n2020,2\n", imgname="a.png") -> Path:
    case.write("tables/a.csv", table)
    case.write("qa.jsonl", json.dumps({"imgname": imgname, "query": "What is the value of 2019?", "label": "3"}))
    return case.src


def _coco(case, file_name: str) -> Path:
    case.write("annotations.json", json.dumps({
        "images": [{"id": 7, "file_name": file_name}], "categories": [{"id": 3, "name": "car"}],
        "annotations": [{"id": 1, "image_id": 7, "category_id": 3, "bbox": [1, 1, 5, 5]}]}))
    case.write("questions.json", json.dumps([{"image_id": 7, "question": "How many cars?", "answer": "1",
                                              "answer_type": "number", "targets": [1]}]))
    return case.src


@pytest.mark.parametrize("kind", sorted(OUT_KINDS | FINE))
def test_no_loader_reads_a_path_out_of_its_folder(case, kind):
    """Every path field of every format, given each payload: out of the folder refused
    (naming the file and field), a link within followed."""
    ref = case.path_ref(kind, "csv", "tables")
    case.write("tables/a.csv", "Year,Sales\n2018,1\n2019,3\n2020,2\n")
    case.write("qa.jsonl", json.dumps({"imgname": ref[:-4] + ".png", "query": "What is 2019?", "label": "3"}))
    loaded = answer("ChartQA folder", lambda: ChartQASource(case.src), case, kind, ("qa.jsonl:1: imgname",))
    case.write("a.png", _png(50, 60))
    line = {"id": "q", "image": case.path_ref(kind, "png"), "question": "How many?", "answer": 1,
            "answer_type": "number", "targets": [{"label": "a", "box": [0, 0, 5, 5]}]}
    path = case.write("records.jsonl", json.dumps(line))
    loaded = loaded and answer("natural JSONL", lambda: _opened(RecordSource(str(path))), case, kind,
                               ("records.jsonl",))
    case.write("images/a.png", _png(50, 60))
    folder = _coco(case, case.path_ref(kind, "png", "images"))
    loaded = loaded and answer("COCO folder", lambda: _opened(RecordSource(str(folder))), case, kind,
                               ("annotations.json: image 7.file_name",))
    assert bool(loaded) == (kind in FINE)


def test_links_out_are_refused_and_links_within_are_followed(case):
    folder = _chartqa(case)
    shutil.move(case.src / "tables", case.src / "data")
    os.symlink("data", case.src / "tables")  # a folder linked within the source: fine
    assert ChartQASource(folder).table("a.png").rows == ("2018", "2019", "2020")
    (case.src / "tables").unlink()
    os.symlink(case.outside, case.src / "tables")  # tables/ itself a link out
    answer("ChartQA folder", lambda: ChartQASource(folder), case, "link_dir_out", ("tables",))
    (case.src / "tables").unlink()
    os.symlink(case.src / "data", case.src / "tables")
    (case.src / "tables" / "a.csv").unlink()
    os.symlink(case.outside / "secret.csv", case.src / "data" / "a.csv")  # one table a link out
    answer("ChartQA folder", lambda: ChartQASource(folder), case, "link_out", ("qa.jsonl:1",))
    (case.src / "qa.jsonl").unlink()
    os.symlink(case.outside / "qa.jsonl", case.src / "qa.jsonl")  # the records a link out
    answer("ChartQA folder", lambda: ChartQASource(folder), case, "link_out", ("qa.jsonl",))


def test_an_outside_path_gets_the_same_answer_whether_or_not_it_exists(case):
    """The error tells nothing about the outside: not whether a path exists, nor what it is."""
    case.write("a.png", _png(50, 60))
    messages = []
    for ref in (str(case.outside / "secret.png"), str(case.outside / "missing.png"), str(case.outside)):
        line = {"id": "q", "image": ref, "question": "How many?", "answer": 1, "answer_type": "number",
                "targets": [{"label": "a", "box": [0, 0, 5, 5]}]}
        with pytest.raises(SourceError) as info:
            RecordSource(str(case.write("records.jsonl", json.dumps(line))))
        messages.append(str(info.value).replace(repr(ref), "REF"))
    assert len(set(messages)) == 1, messages
    for target in (case.outside / "secret.png", case.outside / "missing.png", case.outside / "loop"):
        (case.src / "link.png").unlink(missing_ok=True)
        os.symlink(target, case.src / "link.png")
        messages.append(_error(lambda: RecordSource(str(case.write("records.jsonl", json.dumps(dict(
            line, image="link.png")))))))
    assert len(set(messages[3:])) == 1 and OUTSIDE not in messages[3], messages


def _error(call) -> str:
    with pytest.raises(SourceError) as info:
        call()
    return str(info.value)


@pytest.mark.parametrize("name", ["download_all", "lbp_frontal_face_cascade_filename", "file_hash", "data_dir",
                                  "cells3d", "lfw_subset", "binary_blobs", "_fetchers", "lily"])
def test_skimage_references_name_sample_pictures_only(name, monkeypatch):
    import skimage.data

    def called(*args, **kwargs):
        raise AssertionError(f"skimage.data.{name} was called")

    monkeypatch.setattr(skimage.data, name, called, raising=False)
    message = _error(lambda: load_image(f"skimage:{name}"))
    assert message.startswith(f"image 'skimage:{name}': scikit-image has no sample image") and "coins" in message


def test_every_allowed_skimage_sample_is_a_picture():
    from vicogym.sources.natural import SKIMAGE_SAMPLES

    for name in sorted(SKIMAGE_SAMPLES):
        image = load_image(f"skimage:{name}")
        assert image.dtype == np.uint8 and image.ndim == 3 and image.shape[2] == 3, name


def test_a_16_bit_rgba_png_keeps_its_colour(case):
    path = case.write("deep.png", png_uniform(60, 50, level=0x8080))  # 50% grey at 16 bits, opaque alpha
    image = load_image(str(path))
    assert image.shape == (50, 60, 3) and image.dtype == np.uint8
    assert int(image.min()) == int(image.max()) == 128  # scaled by 257, not clipped to white


@pytest.mark.parametrize("image, message", [
    ("png_20000", "400 million pixels, more than the 40 MP"), ("jpeg_60000", "3600 million pixels, more than"),
    ("png_truncated", "cannot be decoded"), ("png_header_only", "cannot be decoded"), ("gif", "is a GIF image"),
])
def test_image_headers_are_checked_before_decoding(case, image, message):
    case.write("images/a.png", IMAGES[image]())
    _coco(case, "a.png")
    text = answer("COCO folder", lambda: _error(lambda: _opened(RecordSource(str(case.src)))), case)
    assert message in text and "a.png" in text


@pytest.mark.parametrize("field, value, message", [
    ("bbox", [0, 0, Raw("Infinity"), 10], "not valid JSON|Infinity is no number"),
    ("bbox", ["1e999", "0", "5", "10"], "annotation 1.bbox: expected [x, y, w, h] as four finite numbers"),
    ("bbox", [0, 0, Raw("1e999"), 10], "too large for a float"),
    ("bbox", [0, 0, True, 10], "annotation 1.bbox: expected [x, y, w, h] as four finite numbers"),
    ("bbox", [0, 0, [5], 10], "annotation 1.bbox: expected [x, y, w, h] as four finite numbers"),
    ("bbox", [0, 0, Raw("9" * 5000), 10], "a number of 5000 digits"),
    ("bbox", [0, 0, 1e300, 10], "reaches past any image's edge"),
    ("category_id", [3], "annotation 1.category_id: expected a whole number"),
    ("id", [1], "annotations[0].id: expected a whole number"),
    ("id", {"a": 1}, "annotations[0].id: expected a whole number"),
    ("image_id", [7], "questions[0].image_id: expected a whole number"),
    ("targets", [[1]], "questions[0].targets[0]: expected an annotation id"),
])
def test_coco_fields_of_the_wrong_kind_are_named(case, field, value, message):
    case.write("images/a.png", _png(50, 60))
    annotation = {"id": 1, "image_id": 7, "category_id": 3, "bbox": [1, 1, 5, 5]}
    question = {"image_id": 7, "question": "How many cars?", "answer": "1", "answer_type": "number", "targets": [1]}
    (question if field in ("image_id", "targets") else annotation)[field] = value
    case.write("annotations.json", dumps({"images": [{"id": 7, "file_name": "a.png"}], "annotations": [annotation],
                                          "categories": [{"id": 3, "name": "car"}]}))
    case.write("questions.json", dumps([question]))
    import re

    text = answer("COCO folder", lambda: _error(lambda: RecordSource(str(case.src))), case)
    assert re.search(message.replace("[", r"\[").replace("]", r"\]") if "|" not in message else message, text), text


def test_names_with_nul_bytes_or_line_breaks_are_escaped(case):
    folder = _chartqa(case, imgname="a\x00b.png")
    text = _error(lambda: ChartQASource(folder))
    assert "qa.jsonl:1" in text and "\\x00" in text and text.isprintable()
    case.write("qa.jsonl", json.dumps({"imgname": "a\u202eb\n.png", "query": "q", "label": "1"}))
    text = _error(lambda: ChartQASource(folder))
    assert "qa.jsonl:1" in text and text.isprintable()
    case.write("a.png", _png(50, 60))
    line = {"id": "q\x00\n", "image": "a.png", "question": "How many?", "answer": 1, "answer_type": "number",
            "targets": [{"label": "a\x00\n", "box": [0, 0, 61, 5]}]}
    text = _error(lambda: RecordSource(str(case.write("records.jsonl", json.dumps(line)))))
    assert "records.jsonl" in text and "reaches outside" in text and text.isprintable()


@pytest.mark.parametrize("text, message", [
    ("Item," + ",".join(f"s{i}" for i in range(MAX_SERIES + 1)) + "\na" + ",1" * (MAX_SERIES + 1) + "\n",
     f"a.csv:1: {MAX_SERIES + 1} series columns, more than the {MAX_SERIES} a chart draws (MAX_SERIES)"),
    ("Item,A\n" + "".join(f"r{i},{i}\n" for i in range(MAX_ROWS + 1)),
     f"a.csv:{MAX_ROWS + 2}: more than the {MAX_ROWS} data rows a chart draws (MAX_ROWS)"),
    ("Item,A\nr1," + "9" * 5000 + "\nr2,1\n", "a.csv:2: column 'A' holds '999"),
    ("Item,A\nr1,1e300\nr2,1\n", "a.csv:2: column 'A' holds '1e300', beyond the 1e+15"),
    ("Item,A\nr1,1\nr2,\x00\n", "a.csv:3: a NUL byte; remove it"),
    ("Item,A\nr1,1\nr2,\xff\n", "a.csv:3: not UTF-8 text"),
])
def test_tables_no_chart_can_draw_are_refused_naming_the_limit_or_the_line(case, text, message):
    case.write("tables/a.csv", text.encode("latin-1") if "\xff" in text else text)
    case.write("qa.jsonl", json.dumps({"imgname": "a.png", "query": "What is the value of r1?", "label": "1"}))
    assert message in _error(lambda: ChartQASource(case.src))


@pytest.mark.parametrize("line, message", [
    ('{"imgname": "a.png", "query": "q", "label": "1e999"}', "qa.jsonl:1: label '1e999' is a number too large"),
    ('{"imgname": "a.png", "query": "q", "label": ' + "9" * 5000 + "}", "qa.jsonl:1: a number of 5000 digits"),
    ('{"imgname": "a.png", "query": "q", "label": Infinity}', "qa.jsonl:1: Infinity is no number JSON allows"),
    ("[" * 100_000, "qa.jsonl:1: JSON nested deeper than the parser follows"),
    ('\ufeff{"imgname": "a.png", "query": "What is the value of 2019?", "label": "3"}', None),
])
def test_records_are_named_by_file_and_line(case, line, message):
    _chartqa(case)
    case.write("qa.jsonl", line + "\n")
    if message is None:
        assert len(ChartQASource(case.src).records) == 1  # a byte-order mark is no error
    else:
        assert message in _error(lambda: ChartQASource(case.src))


# -- heavy cases: time and peak memory in a child process ----------------------------------------
def _measure(code: str, timeout: int = 300) -> dict:
    """Run ``code`` (which sets ``outcome``) in a fresh interpreter: its outcome, processor
    seconds, wall seconds and peak memory (the interpreter's own included)."""
    script = ("import json, resource, sys, time\nstart = time.monotonic()\n" + code
              + "\nusage = resource.getrusage(resource.RUSAGE_SELF)\n"
                "print(json.dumps({'outcome': outcome, 'wall': time.monotonic() - start, 'seconds': usage.ru_utime + "
                "usage.ru_stime, 'peak_mb': " + CHILD_PEAK_RSS + " / 2**20}))")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=timeout,
                          cwd=REPO)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


OPEN_CHARTQA = "from vicogym.sources.chartqa import ChartQASource; ChartQASource"
CALL = """
from vicogym.errors import SourceError
try:
    {call}
    outcome = "ok"
except SourceError as exc:
    outcome = str(exc)
"""


@pytest.mark.parametrize("name, table, expected", [
    ("rows", "Year,Sales\n" + "".join(f"{i},{i}\n" for i in range(60_000)), "(MAX_ROWS)"),
    ("columns", "Item," + ",".join(f"s{i}" for i in range(90_000)) + "\n", "(MAX_SERIES)"),
])
def test_huge_tables_are_refused_before_they_are_parsed(case, name, table, expected):
    assert len(table.encode()) < 1 << 20
    _chartqa(case, table)
    result = _measure(CALL.format(call=f"{OPEN_CHARTQA}({str(case.src)!r})"))
    assert expected in result["outcome"] and "a.csv" in result["outcome"]
    assert result["seconds"] < SECONDS and result["wall"] < WALL_SECONDS and result["peak_mb"] < MEMORY_MB, result


def test_a_megabyte_of_records_on_the_largest_table_opens_in_bounded_time(case):
    header = ["Characteristic"] + [f"Series {j} " + "x" * 70 for j in range(MAX_SERIES)]
    rng = np.random.default_rng(0)
    rows = [",".join([f"Label {i} " + "y" * 80, *map(str, rng.integers(1, 1000, MAX_SERIES))]) for i in range(MAX_ROWS)]
    case.write("tables/a.csv", "\n".join([",".join(header), *rows]) + "\n")
    words = "what is the difference between highest lowest value sum average ratio median count above more".split()
    lines, size = [], 0
    while size < 1_000_000:
        line = json.dumps({"imgname": "a.png", "query": " ".join(rng.choice(words, 12)) + f" {len(lines)}",
                           "label": str(int(rng.integers(1, 1000)))})
        lines.append(line)
        size += len(line) + 1
    case.write("qa.jsonl", "\n".join(lines[:-1]) + "\n")
    result = _measure(CALL.format(call=f"{OPEN_CHARTQA}({str(case.src)!r})"))
    assert result["outcome"] == "ok", result
    assert result["seconds"] < SECONDS and result["wall"] < WALL_SECONDS and result["peak_mb"] < MEMORY_MB, result


@pytest.mark.parametrize("image, expected", [
    ("png_20000", "more than the 40 MP"), ("jpeg_60000", "more than the 40 MP"), ("png_16bit_rgba_36mp", "ok"),
])
def test_large_images_are_bounded_in_time_and_memory(case, image, expected):
    data = png_uniform(6000, 6000) if image == "png_16bit_rgba_36mp" else IMAGES[image]()
    assert len(data) < 1 << 20
    case.write("a.png", data)
    line = {"id": "q", "image": "a.png", "question": "How many?", "answer": 1, "answer_type": "number",
            "targets": [{"label": "a", "box": [0, 0, 5, 5]}]}
    path = case.write("records.jsonl", json.dumps(line))
    call = ("from vicogym.sources.natural import RecordSource; s = RecordSource({path!r}); "
            "im = s.image('a.png'); assert im.shape == (6000, 6000, 3) and im.dtype.name == 'uint8'")
    result = _measure(CALL.format(call=call.format(path=str(path))))
    assert expected in result["outcome"], result
    assert result["seconds"] < SECONDS and result["wall"] < WALL_SECONDS and result["peak_mb"] < MEMORY_MB, result


def png_bomb(width: int, height: int, inflated: int) -> bytes:
    """A PNG whose header claims ``width`` x ``height`` (8-bit RGB) and whose one IDAT chunk
    inflates to ``inflated`` bytes of zeros: a small file a decoder chews on for minutes."""
    packer, block = zlib.compressobj(9), bytes(1 << 20)
    data = b"".join(packer.compress(block) for _ in range(inflated >> 20)) + packer.flush()
    return (b"\x89PNG\r\n\x1a\n" + _chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
            + _chunk(b"IDAT", data) + _chunk(b"IEND", b""))


@pytest.mark.parametrize("width, height", [(320, 240), (1, 1), (4000, 3000)])
def test_a_png_whose_pixels_inflate_past_its_header_is_refused_before_it_is_decoded(case, width, height):
    """A 1 MB file of 1 GB of zeros: the header's size is fine, the stream is a bomb."""
    from vicogym.images import decode_png

    data = png_bomb(width, height, 1 << 30)
    assert len(data) < 2 << 20
    case.write("a.png", data)
    path = case.write("records.jsonl", json.dumps({"id": "q", "image": "a.png", "question": "How many?", "answer": 1,
                                                   "answer_type": "number",
                                                   "targets": [{"label": "a", "box": [0, 0, 1, 1]}]}))
    result = _measure(CALL.format(call=f"from vicogym.sources.natural import RecordSource; "
                                       f"RecordSource({str(path)!r}).image('a.png')"))
    assert "a decompression bomb" in result["outcome"] and "a.png" in result["outcome"], result
    assert result["seconds"] < SECONDS and result["wall"] < WALL_SECONDS and result["peak_mb"] < MEMORY_MB, result
    with pytest.raises(ValueError, match="a decompression bomb"):
        decode_png(data)


def test_pngs_as_encoders_write_them_pass_the_inflation_check():
    """Plain, interlaced (Adam7), 1- to 16-bit, grey to RGBA: what the header needs, exactly."""
    from vicogym.images import check_png_stream

    rng = np.random.default_rng(3)
    for width, height in [(1, 1), (3, 5), (17, 13), (64, 9)]:
        for depth, color, channels in [(8, 2, 3), (8, 6, 4), (16, 6, 4), (8, 0, 1), (16, 2, 3), (1, 0, 1), (4, 0, 1)]:
            row_bytes = lambda columns: -(-columns * channels * depth // 8)
            for interlace in (0, 1):
                passes = ((0, 0, 8, 8), (4, 0, 8, 8), (0, 4, 4, 8), (2, 0, 4, 4), (0, 2, 2, 4), (1, 0, 2, 2),
                          (0, 1, 1, 2)) if interlace else ((0, 0, 1, 1),)
                raw = b""
                for x0, y0, dx, dy in passes:
                    columns, rows = len(range(x0, width, dx)), len(range(y0, height, dy))
                    if columns and rows:
                        raw += b"".join(b"\x00" + rng.bytes(row_bytes(columns)) for _ in range(rows))
                data = (b"\x89PNG\r\n\x1a\n"
                        + _chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, depth, color, 0, 0, interlace))
                        + _chunk(b"IDAT", zlib.compress(raw)) + _chunk(b"IEND", b""))
                check_png_stream(data)
                assert cv2.imdecode(np.frombuffer(data, np.uint8), cv2.IMREAD_UNCHANGED) is not None


def test_a_pipe_named_as_a_file_is_refused_not_waited_on(case):
    """A FIFO inside the folder (a table, an image, a scenes file) would block a reader forever."""
    _chartqa(case)
    (case.src / "tables" / "a.csv").unlink()
    os.mkfifo(case.src / "tables" / "a.csv")
    case.write("scenes/x.txt", "")
    os.mkfifo(case.src / "scenes" / "CLEVR_val_scenes.json")
    code = CALL.format(call=f"{OPEN_CHARTQA}({str(case.src)!r})") + "\nfirst = outcome\n" + CALL.format(
        call=f"from vicogym.sources.clevr import ReleaseSource; ReleaseSource({str(case.src)!r}, 64, 48)") + \
        "\noutcome = [first, outcome]"
    result = _measure(code, timeout=60)
    assert "a.csv" in result["outcome"][0] and "CLEVR_val_scenes.json: not a regular file" in result["outcome"][1]


def test_decoded_pngs_are_bounded_by_their_header_too():
    from vicogym.images import decode_png

    for data in (png_header(20000, 20000), png_header(8000, 6000), jpeg_header(60000, 60000)):
        with pytest.raises(ValueError, match="expected an image of at most 40 MP"):
            decode_png(data)
    assert decode_png(png_uniform(60, 50)).shape == (50, 60, 3)


@pytest.mark.parametrize("escape, pair", [("\\ud800", False), ("\\udfff", False), ("\\ud83d\\ude00", True),
                                          ("\\ude00\\ud83d", False)])
def test_a_half_surrogate_escape_is_refused_at_its_line_a_pair_is_a_character(escape, pair):
    """JSON allows ``\\ud800`` alone; no UTF-8 text (a Parquet shard, a terminal) can hold it."""
    from vicogym.sources import parse_json

    text = '{"a": 1}\n' + '{"query": "What is ' + escape + '?", "' + escape + '": 2}'
    if pair:
        assert parse_json(text.splitlines()[1], "f.jsonl:2")["query"] == "What is \U0001F600?"
        return
    with pytest.raises(SourceError, match=r"f\.jsonl:2: a string holds \\ud[89a-f]..? .*half of a surrogate pair"):
        parse_json(text.splitlines()[1], "f.jsonl:2")
    with pytest.raises(SourceError, match=r"^f\.json:2: a string holds"):
        parse_json("[" + text.replace("\n", ",\n") + "]", "f.json")
