"""Property tests of the evidence arm's data-set loaders (``funsd:FOLDER`` and
``jsonl:FILE``) over generated folders and files: symlinks that stay inside the folder
(followed) and links out (refused, the error never naming where they lead), absolute and
``..`` paths in every path field, image headers far over the pixel cap and tiny or empty
ones, numbers no float holds, nesting deeper than the parser follows, wrong types in every
field, byte-order marks, NUL bytes and invalid UTF-8. Each loader answers each input with
valid tasks or one ``SourceError`` of one line, in bounded time and memory, and opens
nothing outside its folder (an audit hook records every file opened and folder listed).
The raster renderer draws only image files a loader checked, and the CLI refuses a
JSONL file that names an outside image with one line and writes none of its bytes."""

from __future__ import annotations

import json
import os
import struct
import subprocess
import sys
import textwrap
import time
import zlib
from collections import Counter
from itertools import count
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from conftest import CHILD_PEAK_RSS, peak_rss, start_peak_rss
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vicogym.errors import SourceError
from vicogym.images import checked_image
from vicogym.renderers.evidence import EvidenceRenderer
from vicogym.sources.evidence.files import load_funsd, load_jsonl
from vicogym.structures.evidence import Task, whole_view

#: Pillow warns of images over 89 MP before refusing those over 179 MP; the loaders refuse 40 MP
pytestmark = pytest.mark.filterwarnings("ignore:Image size")

#: the generous bounds every load stays under (a file under 1 MB): processor seconds, seconds
#: on the clock (a load that blocks, on a pipe say, uses no processor time), peak memory
SECONDS, WALL, MEMORY = 10.0, 60.0, 1 << 30
#: how many inputs each loader was given (printed when the module ends: pytest -s)
TRIED: Counter = Counter()
FUZZ = settings(max_examples=60, deadline=None, database=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
SERIAL = count()

# --------------------------------------------------------------------------- what is opened

_RECORDED: list[str] | None = None


def _audit(event: str, args: tuple) -> None:
    if _RECORDED is not None and event in ("open", "os.listdir", "os.scandir") and args:
        target = args[0]
        if isinstance(target, (str, bytes, os.PathLike)):
            _RECORDED.append(os.path.abspath(os.fsdecode(target)))


sys.addaudithook(_audit)


def attempt(name: str, load, *args) -> list[Task] | SourceError:
    """``load(*args)``: its tasks or its ``SourceError`` (any other exception fails the
    test), within the time and memory bounds, nothing outside the world's folder opened."""
    global _RECORDED
    TRIED[name] += 1
    _RECORDED = []
    resident, start, clock = start_peak_rss(), time.process_time(), time.perf_counter()
    try:
        result = load(*args)
    except SourceError as exc:
        result = exc
    finally:
        opened, _RECORDED = _RECORDED, None
    took, waited = time.process_time() - start, time.perf_counter() - clock
    assert took < SECONDS and waited < WALL, f"{name} took {took:.1f} s of processor time, {waited:.1f} s in all"
    assert peak_rss() - resident < MEMORY, f"{name} raised the peak memory by over 1 GiB"
    leaked = [p for p in opened if p.startswith(OUTSIDE_PREFIXES)]
    assert not leaked, f"{name} opened or listed outside its folder: {leaked}"
    if isinstance(result, SourceError):
        message = str(result)
        assert message and "\n" not in message and "\r" not in message, message
        assert "Traceback" not in message and HIDDEN not in message, message
    return result


@pytest.fixture(scope="module", autouse=True)
def report_counts():
    yield
    sys.stderr.write(f"\nevidence loader inputs tried: {dict(sorted(TRIED.items()))}\n")


# --------------------------------------------------------------------------- files

HIDDEN = "hidden-target"  # where links out lead: no file or error may name it
OUTSIDE_PREFIXES: tuple[str, ...] = ()


def _chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)


def png_header(width: int, height: int) -> bytes:
    """A PNG of an IHDR that claims ``width`` x ``height`` and no pixels."""
    return (b"\x89PNG\r\n\x1a\n" + _chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
            + _chunk(b"IEND", b""))


def jpeg_header(width: int, height: int) -> bytes:
    """A JPEG of a start-of-frame that claims ``width`` x ``height`` and no scan data."""
    frame = struct.pack(">HBHHB", 17, 8, height, width, 3) + b"\x01\x22\x00\x02\x11\x01\x03\x11\x01"
    scan = struct.pack(">HB", 12, 3) + b"\x01\x00\x02\x11\x03\x11" + b"\x00\x3f\x00"
    return b"\xff\xd8" + b"\xff\xc0" + frame + b"\xff\xda" + scan + b"\xff\xd9"


def zeros_png(side: int) -> bytes:
    """A real grey PNG of ``side`` x ``side`` zeros (it compresses to a few hundred KB)."""
    packer = zlib.compressobj(9)
    row = b"\x00" * (side + 1)
    data = b"".join(packer.compress(row) for _ in range(side)) + packer.flush()
    return (b"\x89PNG\r\n\x1a\n" + _chunk(b"IHDR", struct.pack(">IIBBBBB", side, side, 8, 0, 0, 0, 0))
            + _chunk(b"IDAT", data) + _chunk(b"IEND", b""))


def real_image(path: Path, size: tuple[int, int], color, fmt: str = "PNG") -> None:
    from PIL import Image

    image = Image.new("RGB", size, color)
    image.putpixel((size[0] // 2, size[1] // 2), (1, 2, 3))
    image.save(path, format=fmt)


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    """A source folder ``data`` with images, heavy headers, damaged files and links in and
    out, beside the outside: ``hidden-target`` (where links lead, never named in a file)
    and ``named-outside`` (named by absolute and ``..`` paths)."""
    global OUTSIDE_PREFIXES
    root = Path(os.path.realpath(tmp_path_factory.mktemp("world")))
    data, hidden, named = root / "data", root / HIDDEN, root / "named-outside"
    for folder in (data / "img", data / "heavy", data / "bad", data / "links", hidden, named):
        folder.mkdir(parents=True)
    real_image(data / "img" / "a.png", (60, 40), (250, 250, 250))
    real_image(data / "img" / "b.jpg", (32, 24), (200, 220, 240), "JPEG")
    real_image(data / "img" / "tiny.png", (1, 1), (0, 0, 0))
    (data / "heavy" / "zeros.png").write_bytes(zeros_png(13000))
    (data / "heavy" / "bomb.png").write_bytes(png_header(20000, 20000))
    (data / "heavy" / "sof.jpg").write_bytes(jpeg_header(60000, 60000))
    (data / "bad" / "not.png").write_text("not an image\n")
    (data / "bad" / "zero.png").write_bytes(png_header(0, 5))
    (data / "bad" / "trunc.png").write_bytes(png_header(50, 40))
    os.mkfifo(data / "bad" / "pipe.png")
    secret = (9, 99, 199)
    real_image(hidden / "secret.png", (60, 40), secret)
    real_image(named / "secret.png", (60, 40), secret)
    links = data / "links"
    (links / "in.png").symlink_to("../img/a.png")
    (links / "in_abs.png").symlink_to(data / "img" / "a.png")
    (links / "imgdir").symlink_to("../img")
    (links / "out.png").symlink_to(hidden / "secret.png")
    (links / "out_rel.png").symlink_to(f"../../{HIDDEN}/secret.png")
    (links / "outdir").symlink_to(hidden)
    (links / "out_missing.png").symlink_to(hidden / "none.png")
    (links / "in2.png").symlink_to("out.png")
    (links / "chain.png").symlink_to("in2.png")
    (links / "loop.png").symlink_to("loop.png")
    OUTSIDE_PREFIXES = (str(hidden), str(named))
    return World(root=root, data=data, hidden=hidden, named=named,
                           secret=np.asarray(_rgb(hidden / "secret.png")),
                           zeros=(data / "heavy" / "zeros.png").read_bytes(),
                           secret_bytes=(hidden / "secret.png").read_bytes())


class World(SimpleNamespace):
    def __repr__(self) -> str:  # hypothesis prints the fixtures of a failing example
        return f"World({self.root})"


def _rgb(path: Path):
    from PIL import Image

    with Image.open(path) as image:
        return image.convert("RGB")


# --------------------------------------------------------------------------- JSONL: paths

OK, OUTSIDE, MISSING, FOLDER, NOT_IMAGE, CAP, NAME, LOOP, PIPE = (
    "ok", "lies outside the source folder", "does not exist", "is a folder", "not an image file that can be read",
    "MP an image may have", "name", "symlinks (a loop)", "not a regular file")


def unit_paths(named: Path) -> list[tuple[object, str]]:
    """Every kind of unit path, with what the loader must answer."""
    return [
        ("img/a.png", OK), ("./img/a.png", OK), ("img//a.png", OK), ("img/./a.png", OK), ("img/b.jpg", OK),
        ("img/tiny.png", OK), ("links/in.png", OK), ("links/in_abs.png", OK), ("links/imgdir/a.png", OK),
        ("bad/trunc.png", OK),  # its header is sound: the renderer refuses it when it cannot decode it
        ("links/out.png", OUTSIDE), ("links/out_rel.png", OUTSIDE), ("links/outdir/secret.png", OUTSIDE),
        ("links/out_missing.png", OUTSIDE), ("links/outdir/none.png", OUTSIDE), ("links/chain.png", OUTSIDE),
        (str(named / "secret.png"), OUTSIDE), (str(named / "none.png"), OUTSIDE), ("/etc/hostname", OUTSIDE),
        ("../named-outside/secret.png", OUTSIDE), ("img/../../named-outside/secret.png", OUTSIDE),
        ("../named-outside/none.png", OUTSIDE), ("img/..\\..\\named-outside\\secret.png", OUTSIDE),
        ("\\\\server\\share\\secret.png", OUTSIDE), ("C:\\named-outside\\secret.png", OUTSIDE),
        ("img/../img/a.png", OUTSIDE),  # no '..' at all, even one that comes back
        ("img/none.png", MISSING), ("img", FOLDER), ("bad/not.png", NOT_IMAGE), ("bad/zero.png", NOT_IMAGE),
        ("bad/pipe.png", PIPE), ("heavy/zeros.png", CAP), ("heavy/bomb.png", CAP), ("heavy/sof.jpg", CAP),
        ("links/loop.png", LOOP),
        ("", NAME), ("   ", NAME), ("img/a\x00.png", NAME), ("x" * 256 + ".png", NAME), ("img/a\nb.png", NAME),
        ("y/" * 2100 + "a.png", NAME), (5, NAME), (None, NAME), (True, NAME), (["img/a.png"], NAME), ({"p": 1}, NAME),
    ]


def write(path: Path, text: str | bytes) -> Path:
    path.write_bytes(text if isinstance(text, bytes) else text.encode("utf-8", "surrogatepass"))
    return path


def record(**changes) -> dict:
    return {"units": ["img/a.png"], "question": "What is printed?", "answer": "x", "metric": "anls", **changes}


def check_tasks(world, tasks: list[Task]) -> None:
    """Every unit of every task is a checked file inside the folder, and draws or is
    refused with one SourceError."""
    renderer = EvidenceRenderer()
    for task in tasks:
        for unit in task.units:
            path = unit.spec["path"]
            assert Path(path).is_relative_to(world.data) and checked_image(path) == unit.spec["sha256"]
        unit = task.units[0]
        try:
            pixels = renderer.draw(whole_view(0, 0, unit, 64), task.units)
        except SourceError as exc:
            assert "\n" not in str(exc) and HIDDEN not in str(exc)
        else:
            assert pixels.ndim == 3
    renderer.close()


@FUZZ
@given(data=st.data())
def test_lists_of_unit_paths_get_tasks_or_one_error_naming_the_first_bad_one(world, data):
    check_unit_paths(world, data.draw(st.lists(st.sampled_from(unit_paths(world.named)), min_size=1, max_size=4)))


@pytest.mark.parametrize("k", range(len(unit_paths(Path("/")))))
def test_each_kind_of_unit_path_gets_tasks_or_one_error_naming_its_field(world, k):
    check_unit_paths(world, [unit_paths(world.named)[k]])


def check_unit_paths(world, kinds: list[tuple[object, str]]) -> None:
    """A JSONL record whose units are ``kinds`` gets its task, or the error the first bad
    unit path must get, naming its line and field and nothing more about the outside."""
    file = write(world.data / f"paths-{next(SERIAL)}.jsonl", json.dumps(record(units=[p for p, _ in kinds])) + "\n")
    result = attempt("jsonl", load_jsonl, file)
    bad = [(k, want) for k, (_, want) in enumerate(kinds) if want != OK]
    if not bad:
        assert not isinstance(result, SourceError), result
        assert [len(t.units) for t in result] == [len(kinds)]
        check_tasks(world, result)
        return
    index, want = bad[0]
    assert isinstance(result, SourceError), (kinds, result)
    message = str(result)
    assert message.startswith(f"{file}:1: field units[{index}]"), message
    if want != NAME:
        assert want in message, message
    if want == OUTSIDE:  # nothing more about the outside: not whether it exists, nor what it is
        assert not any(word in message for word in (MISSING, NOT_IMAGE, FOLDER, CAP)), message


# --------------------------------------------------------------------------- JSONL: fields

JSON_VALUE = st.recursive(
    st.none() | st.booleans() | st.integers(-10**6, 10**6) | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=6) | st.just("\ud800") | st.just(" "),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
    max_leaves=6)


def _not(valid):
    return JSON_VALUE.filter(lambda v: not valid(v))


def _text(v) -> bool:
    return isinstance(v, str) and bool(v.strip()) and "\ud800" not in v


def _number(v) -> bool:
    return not isinstance(v, bool) and isinstance(v, (int, float))


def _texts(v) -> bool:
    return isinstance(v, list) and all(_text(x) for x in v)


GOOD_ITEM = {"unit": 0, "box": [1, 1, 20, 10], "size": 8}
#: (field, bad values, what the error names)
BAD_FIELDS = [
    ("units", _not(lambda v: isinstance(v, list) and v and all(_text(x) for x in v)), "field"),
    ("question", _not(_text), "field 'question'"),
    ("answer", _not(lambda v: _text(v) or _number(v)), "field 'answer'"),
    ("metric", _not(lambda v: v in ("anls", "relaxed", "letter", "short", "exact")), "field 'metric'"),
    ("options", _not(_texts), "field"),
    ("golds", _not(_texts), "field"),
    ("id", _not(lambda v: isinstance(v, str) and v != "" and "\ud800" not in v), "field 'id'"),
    ("evidence", _not(lambda v: isinstance(v, list)), "field 'evidence'"),
    ("evidence", st.builds(lambda v: [v], _not(lambda v: False)).filter(lambda v: not isinstance(v[0], dict)),
     "field evidence[0]"),
    ("evidence", _not(lambda v: v == 0).map(lambda v: [{**GOOD_ITEM, "unit": v}]), "field evidence[0].unit"),
    ("evidence", _not(lambda v: False).map(lambda v: [{**GOOD_ITEM, "box": v}]), "field evidence[0].box"),
    ("evidence", st.sampled_from([[0, 0, 0, 5], [5, 1, 2, 9], [0, 0, 61, 10], [-1, 0, 5, 5], [0, 0, 10**200, 5]])
     .map(lambda b: [{**GOOD_ITEM, "box": b}]), "field evidence[0].box"),
    ("evidence", _not(lambda v: _number(v) and 0 < v <= 1e5).map(lambda v: [{**GOOD_ITEM, "size": v}]),
     "field evidence[0].size"),
    ("evidence", _not(lambda v: _number(v) and 0 < v <= 1e5).map(lambda v: [{**GOOD_ITEM, "legible": v}]),
     "field evidence[0].legible"),
    ("evidence", _not(lambda v: isinstance(v, str) and "\ud800" not in v)
     .map(lambda v: [{**GOOD_ITEM, "what": v}]), "field evidence[0].what"),
    ("evidence", st.just([{**GOOD_ITEM, "colour": 1}]), "field evidence[0]: field 'colour'"),
    ("evidence", st.just([GOOD_ITEM] * 257), "field 'evidence'"),
    ("units", st.just(["img/a.png"] * 257), "field 'units'"),
    ("golds", st.just(["g"] * 257), "field 'golds'"),
    ("options", st.just(["o"] * 257), "field 'options'"),
]


@FUZZ
@given(data=st.data())
def test_a_wrong_value_in_any_jsonl_field_gets_one_error_naming_it(world, data):
    field, values, named = data.draw(st.sampled_from(BAD_FIELDS))
    value = data.draw(values)
    line = record(**{field: value})
    if field == "options" or (field == "answer" and data.draw(st.booleans())):
        line["metric"] = "letter" if field == "answer" else line["metric"]
        line.setdefault("options", ["yes", "no"])
    ascii_only = data.draw(st.booleans()) or "\\ud800" in json.dumps(line)  # a lone surrogate is no UTF-8
    text = json.dumps(line, ensure_ascii=ascii_only)
    file = write(world.data / f"fields-{next(SERIAL)}.jsonl", text + "\n")
    result = attempt("jsonl", load_jsonl, file)
    assert isinstance(result, SourceError), (line, result)
    message = str(result)
    assert message.startswith(f"{file}:1: ") and named in message, message


def test_an_unknown_field_and_a_missing_one_are_named(world):
    for line, named in ((record(anwser="x"), "field 'anwser' is not a field of a record; did you mean 'answer'"),
                        ({k: v for k, v in record().items() if k != "metric"}, "field 'metric' is missing"),
                        ([record()], "expected a JSON object")):
        file = write(world.data / f"fields-{next(SERIAL)}.jsonl", json.dumps(line))
        result = attempt("jsonl", load_jsonl, file)
        assert isinstance(result, SourceError) and named in str(result), result


# --------------------------------------------------------------------------- JSONL: bytes

GOOD_LINE = json.dumps(record(evidence=[GOOD_ITEM], golds=["x"]))
HUGE = {
    "deep list": "[" * 100_000,
    "deep object": '{"a": ' * 50_000,
    "5000 digits": GOOD_LINE.replace('"size": 8', '"size": ' + "9" * 5000),
    "a long negative": GOOD_LINE.replace('"size": 8', '"size": -' + "1" * 4400),
    "Infinity": GOOD_LINE.replace('"size": 8', '"size": Infinity'),
    "-Infinity": GOOD_LINE.replace("[1, 1, 20, 10]", "[-Infinity, 1, 20, 10]"),
    "NaN": GOOD_LINE.replace("[1, 1, 20, 10]", "[1, NaN, 20, 10]"),
    "1e999": GOOD_LINE.replace("[1, 1, 20, 10]", "[1, 1, 1e999, 10]"),
    "a long exponent": GOOD_LINE.replace('"size": 8', '"size": 1e' + "9" * 400),
    "a lone surrogate": GOOD_LINE.replace('"What is printed?"', '"What \\ud800 is printed?"'),
}
MUTATIONS = st.sampled_from(["bom", "nul", "nul in a string", "invalid utf-8", "an encoded surrogate", "crlf", "cr",
                             "truncate", "blank lines", "a line break in a string", "u2028 in a string", "control",
                             "duplicate"])


def mutate(raw: bytes, how: str, at: int) -> bytes:
    at %= len(raw) + 1
    return {
        "bom": lambda: b"\xef\xbb\xbf" + raw,
        "nul": lambda: raw[:at] + b"\x00" + raw[at:],
        "nul in a string": lambda: raw.replace(b"printed", b"pri\x00nted"),
        "invalid utf-8": lambda: raw[:at] + b"\xff\xc3\x28" + raw[at:],
        "an encoded surrogate": lambda: raw.replace(b"printed", b"pri\xed\xa0\x80nted"),
        "crlf": lambda: raw.replace(b"\n", b"\r\n"),
        "cr": lambda: raw.replace(b"\n", b"\r"),
        "truncate": lambda: raw[:at],
        "blank lines": lambda: b"\n\n  \n" + raw + b"\n\n",
        "a line break in a string": lambda: raw.replace(b"printed", b"pri\nnted"),
        "u2028 in a string": lambda: raw.replace(b"printed", "pri\u2028nted".encode()),
        "control": lambda: raw[:at] + b"\x1b[2J" + raw[at:],
        "duplicate": lambda: raw + b"\n" + raw if len(raw) < 1 << 19 else raw,  # the file stays under 1 MB
    }[how]()


@FUZZ
@given(base=st.sampled_from(["good", "two good", *HUGE]), hows=st.lists(MUTATIONS, max_size=3),
       at=st.integers(0, 10**6))
def test_raw_jsonl_bytes_get_tasks_or_one_error(world, base, hows, at):
    text = {"good": GOOD_LINE + "\n",
            "two good": GOOD_LINE + "\n" + json.dumps(record(units=["img/b.jpg", "links/in.png"])) + "\n"}.get(base)
    text = text if text is not None else HUGE[base] + "\n"
    raw = text.encode("utf-8", "surrogatepass")
    for how in hows:
        raw = mutate(raw, how, at)
    file = write(world.data / f"raw-{next(SERIAL)}.jsonl", raw)
    assert file.stat().st_size < 1 << 20
    result = attempt("jsonl", load_jsonl, file)
    if base in HUGE:
        assert isinstance(result, SourceError), (base, result)
        assert str(result).startswith(f"{file}:"), result
    if isinstance(result, SourceError):
        assert str(result).startswith(str(file)), result
    else:
        check_tasks(world, result)


@pytest.mark.parametrize("name", sorted(HUGE))
def test_numbers_and_nesting_no_float_or_parser_holds_name_the_line(world, name):
    file = write(world.data / f"huge-{next(SERIAL)}.jsonl", GOOD_LINE + "\n\n" + HUGE[name] + "\n")
    result = attempt("jsonl", load_jsonl, file)
    assert isinstance(result, SourceError) and str(result).startswith(f"{file}:3: "), result


# --------------------------------------------------------------------------- FUNSD

PAGE = [
    {"id": 0, "box": [10, 10, 60, 24], "text": "Name:", "label": "question", "linking": [[0, 1]],
     "words": [{"box": [10, 10, 60, 24], "text": "Name:"}]},
    {"id": 1, "box": [70, 10, 120, 24], "text": "Ann Lee", "label": "answer", "linking": [[0, 1]],
     "words": [{"box": [70, 10, 92, 24], "text": "Ann"}, {"box": [96, 10, 120, 24], "text": "Lee"}]},
    {"id": 2, "box": [10, 40, 90, 54], "text": "Page 1", "label": "other", "linking": [], "words": []},
]
PAGE_SIZE = (200, 100)

#: what an annotation file's text may be changed into, and whether the change is refused
#: while the file is read (``parse``), when its entities are checked (``entity``), or not
CONTENTS = {"valid": None, "bom": None, "crlf": None, "nul in a string": None, "u2028": None,
            "deep": "parse", "5000 digits": "parse", "NaN": "parse", "Infinity": "parse", "1e999": "parse",
            "a raw NUL": "parse", "invalid utf-8": "parse", "truncated": "parse", "not an object": "entity",
            "a lone surrogate": "entity", "wrong type": "entity", "too many entities": "entity",
            "too many pairs": "entity"}
ENTITY_BAD = {
    "id": _not(lambda v: isinstance(v, int) and not isinstance(v, bool)),
    "box": _not(lambda v: False),
    "text": _not(lambda v: isinstance(v, str)),
    "label": _not(lambda v: v in ("question", "answer", "header", "other")),
    "linking": _not(lambda v: isinstance(v, list) and all(
        isinstance(p, list) and len(p) == 2 and all(type(x) is int and x in (0, 1, 2) for x in p) for p in v)),
    "words": _not(lambda v: isinstance(v, list) and not v),
}


def annotation(content: str, indent: int | None = None, wrong: tuple = (0, "id", None)) -> tuple[bytes, str | None]:
    """The annotation file's bytes for ``content`` (``wrong``: the entity, field and value
    of a ``wrong type``), and what an entity-level error names."""
    page = json.loads(json.dumps(PAGE))
    named = None
    if content == "wrong type":
        k, field, value = wrong
        page[k][field] = value
        named = "words" if field == "words" else f"'{field}'"
    if content == "too many entities":
        page += [{"id": 10 + k, "box": [0, 0, 1, 1], "text": "", "label": "other"} for k in range(2001)]
        named = "2004 entities"
    if content == "too many pairs":
        page += [{"id": 10 + k, "box": [k % 190, 60, k % 190 + 5, 70], "text": "v", "label": "answer"}
                 for k in range(200)]
        named = "202 question and answer entities"
    text = json.dumps({"form": page}, indent=indent)
    if content == "not an object":
        text, named = json.dumps(page), "'form' list"
    if content == "a lone surrogate":
        text, named = text.replace("Ann Lee", "Ann \\udc80Lee"), "not valid Unicode"
    replace = {"deep": lambda t: "[" * 100_000, "5000 digits": lambda t: t.replace("70,", "7" * 5000 + ",", 1),
               "NaN": lambda t: t.replace("70,", "NaN,", 1), "Infinity": lambda t: t.replace("70,", "Infinity,", 1),
               "1e999": lambda t: t.replace("70,", "1e999,", 1), "u2028": lambda t: t.replace("Lee", "L\u2028ee"),
               "truncated": lambda t: t[: len(t) // 2], "crlf": lambda t: t.replace("\n", "\r\n")}
    text = replace.get(content, lambda t: t)(text)
    raw = text.encode("utf-8", "surrogatepass")
    if content == "bom":
        raw = b"\xef\xbb\xbf" + raw
    if content == "nul in a string":
        raw = raw.replace(b"Page 1", b"Page\\u00001")
    if content == "a raw NUL":
        raw = raw.replace(b"Page 1", b"Page\x001")
    if content == "invalid utf-8":
        raw = raw.replace(b"Page 1", b"Page \xff1")
    return raw, named


FOLDERS = ["dir", "link in", "link out", "missing", "a file"]
FILES = ["real", "link in", "link out", "link out missing", "a folder", "a pipe"]
IMAGES = ["real", "jpeg named .png", "link in", "link out", "images/ links out", "missing", "a folder",
          "not an image", "empty header", "13000 x 13000", "20000 x 20000 header", "60000 x 60000 SOF", "1 x 1",
          "header only"]


# one branch per way a folder is spoiled: the fuzz's cases read as a list
def funsd_folder(world, folder: str, file: str, image: str, raw: bytes) -> Path:  # noqa: C901
    root = world.data / f"funsd-{next(SERIAL)}"
    root.mkdir()
    hidden = world.hidden / root.name
    hidden.mkdir()
    store = {"dir": root / "annotations", "link in": root / "kept", "link out": hidden / "annotations"}.get(folder)
    if store is not None:
        store.mkdir()
    if folder in ("link in", "link out"):
        (root / "annotations").symlink_to(store)
    elif folder == "a file":
        (root / "annotations").write_text("{}")
    if store is not None:
        target = store / "p.json"
        if file == "real":
            target.write_bytes(raw)
        elif file == "link in":
            (root / "other.json").write_bytes(raw)
            target.symlink_to(root / "other.json")
        elif file in ("link out", "link out missing"):
            if file == "link out":
                (hidden / "p.json").write_bytes(raw)
            target.symlink_to(hidden / "p.json")
        elif file == "a folder":
            target.mkdir()
        else:
            os.mkfifo(target)
    images = root / "images"
    if image == "images/ links out":
        (hidden / "images").mkdir()
        real_image(hidden / "images" / "p.png", PAGE_SIZE, (250, 250, 250))
        images.symlink_to(hidden / "images")
        return root
    images.mkdir()
    page = images / "p.png"
    if image == "real":
        real_image(page, PAGE_SIZE, (250, 250, 250))
    elif image == "jpeg named .png":
        real_image(page, PAGE_SIZE, (250, 250, 250), "JPEG")
    elif image == "link in":
        real_image(root / "scan.png", PAGE_SIZE, (250, 250, 250))
        page.symlink_to("../scan.png")
    elif image == "link out":
        real_image(hidden / "p.png", PAGE_SIZE, (250, 250, 250))
        page.symlink_to(hidden / "p.png")
    elif image == "a folder":
        page.mkdir()
    elif image == "not an image":
        page.write_text("no image")
    elif image == "empty header":
        page.write_bytes(png_header(0, 0))
    elif image == "13000 x 13000":
        page.write_bytes(world.zeros)
    elif image == "20000 x 20000 header":
        page.write_bytes(png_header(20000, 20000))
    elif image == "60000 x 60000 SOF":
        page.write_bytes(jpeg_header(60000, 60000))
    elif image == "1 x 1":
        real_image(page, (1, 1), (0, 0, 0))
    elif image == "header only":
        page.write_bytes(png_header(*PAGE_SIZE))
    return root


def funsd_expected(folder: str, file: str, image: str, content: str) -> str:
    """What the loader must answer, in the order it looks."""
    parse = CONTENTS[content]
    if folder == "link out" or (folder in ("dir", "link in") and "out" in file) or (
            folder in ("dir", "link in") and "out" in image):
        return OUTSIDE
    if folder in ("missing", "a file"):
        return "there is no"
    if file in ("a folder", "a pipe"):
        return PIPE
    if parse == "parse":
        return "parse"
    if image in ("missing",):
        return MISSING
    if image == "a folder":
        return FOLDER
    if image in ("not an image", "empty header"):
        return NOT_IMAGE
    if image in ("13000 x 13000", "20000 x 20000 header", "60000 x 60000 SOF"):
        return CAP
    if image == "1 x 1" and content not in ("not an object", "too many entities"):
        return "1x1"  # the first entity's box lies outside it, unless the file is refused whole
    if parse == "entity":
        return "entity"
    return OK


WRONG = st.tuples(st.integers(0, 1), st.sampled_from(sorted(ENTITY_BAD))).flatmap(
    lambda kf: st.tuples(st.just(kf[0]), st.just(kf[1]), ENTITY_BAD[kf[1]]))


@FUZZ
@given(folder=st.sampled_from(FOLDERS), file=st.sampled_from(FILES), image=st.sampled_from(IMAGES),
       content=st.sampled_from(sorted(CONTENTS)), indent=st.sampled_from([None, 1]), wrong=WRONG)
def test_generated_funsd_folders_get_tasks_or_one_error(world, folder, file, image, content, indent, wrong):
    check_funsd(world, folder, file, image, content, indent, wrong)


@FUZZ
@given(wrong=WRONG, indent=st.sampled_from([None, 1]), image=st.sampled_from(["real", "link in", "1 x 1"]))
def test_a_wrong_value_in_any_funsd_field_gets_one_error_naming_it(world, wrong, indent, image):
    check_funsd(world, "dir", "real", image, "wrong type", indent, wrong)


ONE_AT_A_TIME = ([(folder, "real", "real", "valid") for folder in FOLDERS]
                 + [("dir", file, "real", "valid") for file in FILES[1:]]
                 + [("dir", "real", image, "valid") for image in IMAGES[1:]]
                 + [("dir", "real", "real", content) for content in sorted(CONTENTS) if content != "valid"]
                 + [("link in", "link in", "link in", "bom")])


@pytest.mark.parametrize("folder, file, image, content", ONE_AT_A_TIME)
def test_each_kind_of_funsd_folder_file_image_and_content(world, folder, file, image, content):
    check_funsd(world, folder, file, image, content, 1, (1, "box", None))


def check_funsd(world, folder: str, file: str, image: str, content: str, indent, wrong) -> None:
    """A generated FUNSD folder gets its one task, or the error its first problem must get."""
    raw, named = annotation(content, indent, wrong)
    root = funsd_folder(world, folder, file, image, raw)
    result = attempt("funsd", load_funsd, root)
    want = funsd_expected(folder, file, image, content)
    where = (folder, file, image, content)
    if want == OK:
        assert not isinstance(result, SourceError), (where, result)
        assert [t.answer for t in result] == ["Ann Lee" if content != "u2028" else "Ann L\u2028ee"], where
        check_tasks(world, result)
        return
    assert isinstance(result, SourceError), (where, result)
    message = str(result)
    if want == "parse":
        assert message.startswith(f"{root}/annotations/p.json:"), (where, message)
    elif want == "entity":
        assert message.startswith(f"{root}/annotations/p.json") and named in message, (where, message)
    elif want == "1x1":
        assert "lies outside the image (1x1)" in message or (named and named in message), (where, message)
    else:
        assert want in message, (where, message)
    if want == OUTSIDE:
        assert not any(word in message for word in (MISSING, NOT_IMAGE, FOLDER, CAP, PIPE)), message


@pytest.mark.parametrize("pairs", [100, 300])
def test_a_page_crowded_with_labels_on_one_row_loads_or_is_refused_in_bounded_time(world, pairs):
    """Labels and values on one row, each label right of the last (the pairing compares
    every label with every value and every label between them)."""
    form = []
    for i in range(pairs):
        form.append({"id": 2 * i, "box": [1000 - 3 * i, 10, 1001 - 3 * i, 20], "text": "q", "label": "question"})
        form.append({"id": 2 * i + 1, "box": [1100 + 3 * i, 10, 1101 + 3 * i, 20], "text": "a", "label": "answer"})
    root = world.data / f"crowded-{next(SERIAL)}"
    (root / "annotations").mkdir(parents=True)
    (root / "images").mkdir()
    (root / "annotations" / "p.json").write_text(json.dumps({"form": form}))
    real_image(root / "images" / "p.png", (2100, 40), (250, 250, 250))
    result = attempt("funsd", load_funsd, root)
    if 2 * pairs > 200:
        assert isinstance(result, SourceError) and "question and answer entities, more than the 200" in str(result)


# --------------------------------------------------------------------------- heavy images, measured apart

HEAVY = textwrap.dedent("""
    import json, resource, sys, time
    from pathlib import Path
    from vicogym.errors import SourceError
    from vicogym.sources.evidence.files import load_funsd, load_jsonl
    out = {}
    for name, kind, path in json.loads(sys.argv[1]):
        start = time.process_time()
        try:
            tasks = (load_jsonl if kind == "jsonl" else load_funsd)(path)
            answer = "tasks: " + str(len(tasks))
        except SourceError as exc:
            answer = "SourceError: " + str(exc)
        except BaseException as exc:
            answer = type(exc).__name__ + ": " + str(exc)
        out[name] = [answer, time.process_time() - start]
    out["peak"] = PEAK
    print(json.dumps(out))
""").replace("PEAK", CHILD_PEAK_RSS)


def test_heavy_images_are_refused_on_their_header_in_bounded_time_and_memory(world, tmp_path):
    cases = []
    for name, image in (("13000 x 13000 PNG", "zeros.png"), ("20000 x 20000 IHDR", "bomb.png"),
                        ("60000 x 60000 JPEG SOF", "sof.jpg")):
        file = write(world.data / f"heavy-{next(SERIAL)}.jsonl", json.dumps(record(units=[f"heavy/{image}"])))
        cases.append((f"jsonl, {name}", "jsonl", str(file)))
        root = world.data / f"heavy-funsd-{next(SERIAL)}"
        (root / "annotations").mkdir(parents=True)
        (root / "images").mkdir()
        (root / "annotations" / "p.json").write_text(json.dumps({"form": PAGE}))
        (root / "images" / "p.png").write_bytes((world.data / "heavy" / image).read_bytes())
        cases.append((f"funsd, {name}", "funsd", str(root)))
    done = subprocess.run([sys.executable, "-c", HEAVY, json.dumps(cases)], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    for name, _, _ in cases:
        TRIED["heavy (subprocess)"] += 1
        answer, seconds = out[name]
        assert answer.startswith("SourceError: ") and "40 MP an image may have" in answer, (name, answer)
        assert "\n" not in answer and seconds < SECONDS, (name, answer, seconds)
    assert out["peak"] < MEMORY, f"peak memory {out['peak'] / 2**20:.0f} MiB"


def test_pipes_are_refused_without_blocking(world):
    root = world.data / f"pipes-{next(SERIAL)}"
    (root / "annotations").mkdir(parents=True)
    (root / "images").mkdir()
    os.mkfifo(root / "annotations" / "p.json")
    real_image(root / "images" / "p.png", PAGE_SIZE, (250, 250, 250))
    jsonl_pipe = world.data / f"pipe-{next(SERIAL)}.jsonl"
    os.mkfifo(jsonl_pipe)
    unit_pipe = write(world.data / f"unit-pipe-{next(SERIAL)}.jsonl", json.dumps(record(units=["bad/pipe.png"])))
    cases = [("funsd", "funsd", str(root)), ("jsonl", "jsonl", str(jsonl_pipe)), ("unit", "jsonl", str(unit_pipe))]
    done = subprocess.run([sys.executable, "-c", HEAVY, json.dumps(cases)], capture_output=True, text=True,
                          timeout=60)
    out = json.loads(done.stdout)
    for name, _, _ in cases:
        TRIED["pipes (subprocess)"] += 1
        assert out[name][0].startswith("SourceError: ") and PIPE in out[name][0], (name, out[name])


# --------------------------------------------------------------------------- the renderer


def test_the_renderer_opens_only_image_files_a_loader_checked(world):
    from vicogym.structures.evidence import Unit

    renderer = EvidenceRenderer()
    secret = world.hidden / "secret.png"
    stored = Task("t", "jsonl", "What?", "x", (Unit("image", 60, 40, {"path": str(secret)}, "", 1.0),), (), "text",
                  "anls")
    global _RECORDED
    _RECORDED = []
    try:
        with pytest.raises(SourceError, match="was not checked by a data-set loader"):
            renderer.draw(whole_view(0, 0, stored.units[0], 64), stored.units)
    finally:
        opened, _RECORDED = _RECORDED, None
    assert str(secret) not in opened
    # a payload whose header claims 20000 x 20000 is refused before it is decoded
    bomb = Unit("image", 20000, 20000, {"png": "b" * 64}, "", 1.0)
    renderer.add_payloads({"b" * 64: png_header(20000, 20000)})
    with pytest.raises(SourceError, match="40 MP"):
        renderer.draw(whole_view(0, 0, bomb, 64), (bomb,))


def test_a_checked_file_that_changes_after_loading_is_not_decoded(world, tmp_path):
    folder = tmp_path / "set"
    (folder / "img").mkdir(parents=True)
    real_image(folder / "img" / "a.png", (60, 40), (250, 250, 250))
    real_image(folder / "img" / "c.png", (60, 40), (250, 250, 250))
    file = write(folder / "s.jsonl", json.dumps(record(units=["img/a.png"])) + "\n"
                 + json.dumps(record(units=["img/c.png"])) + "\n")
    first, second = load_jsonl(file)
    (folder / "img" / "a.png").write_bytes(png_header(20000, 20000))
    real_image(folder / "img" / "c.png", (60, 40), (0, 0, 0))
    renderer = EvidenceRenderer()
    with pytest.raises(SourceError, match="changed since its data set was loaded"):
        renderer.draw(whole_view(0, 0, first.units[0], 64), first.units)
    with pytest.raises(SourceError, match="changed since its data set was loaded"):
        renderer.draw(whole_view(0, 0, second.units[0], 64), second.units)


# --------------------------------------------------------------------------- end to end


@pytest.mark.parametrize("unit", ["absolute", "../", "a link out"])
def test_the_cli_refuses_an_outside_image_with_one_line_and_writes_none_of_it(world, tmp_path, unit):
    from typer.testing import CliRunner

    from vicogym.cli import app

    ref = {"absolute": str(world.named / "secret.png"), "../": "../named-outside/secret.png",
           "a link out": "links/out.png"}[unit]
    file = write(world.data / f"cli-{next(SERIAL)}.jsonl", json.dumps(record(units=[ref])) + "\n")
    out = tmp_path / "out"
    result = CliRunner().invoke(app, ["generate", "vicogym/Evidence-v0", "--set", f"tasks=jsonl:{file}", "--out",
                                      str(out), "--n", "1", "--no-progress"])
    TRIED["cli"] += 1
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert result.exit_code != 0 and len(lines) == 1, result.output
    assert lines[0].startswith("error: ") and "lies outside the source folder" in lines[0], result.output
    assert "Traceback" not in result.output and HIDDEN not in result.output
    for path in out.rglob("*") if out.exists() else ():
        if path.is_file():
            assert world.secret_bytes not in path.read_bytes(), path
            if path.suffix == ".parquet":
                import pyarrow.parquet as pq

                from vicogym.images import decode_png

                for row in pq.read_table(path).to_pylist():
                    for image in row.get("units", []) + row.get("images", []):
                        pixels = decode_png(image["bytes"])
                        assert not (pixels.shape == world.secret.shape and (pixels == world.secret).all()), path
