"""Loaders of real data for the evidence arm: FUNSD-format folders and JSONL files, read
into tasks, and every malformed file refused with one error naming the file, the record
and the field. The fixtures are drawn here (tiny PNGs and annotations); nothing is
downloaded."""

import hashlib
import json

import numpy as np
import pytest

from vicogym.checks.evidence import check_task
from vicogym.errors import SourceError
from vicogym.renderers.evidence import EvidenceRenderer
from vicogym.sources.evidence import TaskSource
from vicogym.sources.evidence.files import CAP_PER_WORD_HEIGHT, load, load_funsd, load_jsonl
from vicogym.structures.evidence import LEGIBLE_TEXT_PX, Task, crop_view, whole_view

WIDTH, HEIGHT = 600, 400


def entity(i, box, text, label, links=()):
    """A FUNSD entity with one word box per word (widths by character count)."""
    words, x = [], box[0]
    per = (box[2] - box[0]) / max(1, len(text))
    for word in text.split():
        words.append({"box": [round(x), box[1], round(x + per * len(word)), box[3]], "text": word})
        x += per * (len(word) + 1)
    return {"id": i, "box": list(box), "text": text, "label": label, "linking": [list(p) for p in links],
            "words": words}


def page_one():
    return [
        entity(0, (20, 10, 220, 30), "REGISTRATION", "header"),
        entity(1, (20, 50, 80, 64), "Name:", "question", [(1, 2)]),
        entity(2, (90, 50, 160, 64), "Ann Lee", "answer", [(1, 2)]),
        entity(3, (20, 90, 80, 104), "Date of", "question"),
        entity(4, (20, 107, 70, 121), "birth:", "question"),
        entity(5, (90, 107, 190, 121), "01/02/1990", "answer"),
        entity(6, (20, 150, 100, 164), "Address:", "question", [(6, 7), (6, 8)]),
        entity(7, (110, 150, 200, 164), "12 Oak St", "answer", [(6, 7)]),
        entity(8, (110, 168, 250, 182), "Reno, NV 89501", "answer", [(6, 8)]),
        entity(9, (20, 230, 110, 244), "Signature:", "question"),
        entity(10, (500, 370, 580, 384), "Page 1", "other"),
    ]


def page_two():
    return [
        entity(0, (20, 20, 70, 34), "Date:", "question", [(0, 1)]),
        entity(1, (80, 20, 160, 34), "03/04/2020", "answer", [(0, 1)]),
        entity(2, (320, 20, 370, 34), "Date:", "question", [(2, 3)]),
        entity(3, (380, 20, 460, 34), "05/06/2021", "answer", [(2, 3)]),
        entity(4, (20, 80, 70, 94), "Total:", "question", [(4, 5)]),
        entity(5, (80, 80, 140, 94), "$5.00", "answer", [(4, 5)]),
    ]


def draw_png(path, records, size=(WIDTH, HEIGHT), fmt="PNG"):
    from PIL import Image, ImageDraw

    image = Image.new("RGB", size, (255, 255, 255))
    draw = ImageDraw.Draw(image)
    for r in records:
        draw.rectangle(r["box"], outline=(200, 200, 200))
        draw.text((r["box"][0] + 1, r["box"][1] + 1), r["text"], fill=(0, 0, 0))
    image.save(path, format=fmt)


def funsd_folder(root, pages):
    (root / "annotations").mkdir(parents=True)
    (root / "images").mkdir()
    for stem, records in pages.items():
        (root / "annotations" / f"{stem}.json").write_text(json.dumps({"form": records}))
        draw_png(root / "images" / f"{stem}.png", records)
    return root


@pytest.fixture
def funsd(tmp_path):
    return funsd_folder(tmp_path / "funsd", {"p1": page_one(), "p2": page_two()})


# ------------------------------------------------------------------ FUNSD


def test_a_funsd_folder_becomes_one_task_per_answered_unique_field(funsd):
    tasks = load("funsd", funsd)
    got = {t.meta["label"]: t.answer for t in tasks}
    # 'Signature' has no value; 'Date' repeats on its page, so it has no single answer
    assert got == {"Name": "Ann Lee", "Date of birth": "01/02/1990", "Address": "12 Oak St Reno, NV 89501",
                   "Total": "$5.00"}
    by = {t.meta["label"]: t for t in tasks}
    assert by["Name"].meta["how"] == "linked" and by["Date of birth"].meta["how"] == "nearest"
    assert by["Date of birth"].meta["questions"] == [3, 4]
    assert by["Date of birth"].question == "What is the value of the field 'Date of birth'?"
    task = by["Address"]
    unit = task.units[0]
    assert (unit.kind, unit.width, unit.height, unit.max_scale) == ("image", WIDTH, HEIGHT, 1.0)
    assert unit.spec["path"] == str((funsd / "images" / "p1.png").resolve())
    assert unit.spec["sha256"] == hashlib.sha256((funsd / "images" / "p1.png").read_bytes()).hexdigest()
    assert (task.contract, task.scorer, task.start, task.family) == ("text", "anls", "first", "funsd")
    (e,) = task.evidence
    assert list(e.box) == [110.0, 150.0, 250.0, 182.0]  # both lines of the value
    assert e.size == pytest.approx(CAP_PER_WORD_HEIGHT * 14) and e.legible == LEGIBLE_TEXT_PX  # font unknown
    assert "Ann Lee" in task.meta["distractors"] and task.answer not in task.meta["distractors"]
    assert len({t.id for t in tasks}) == len(tasks)
    # the family check re-derives every answer from the page's entities
    assert [check_task(t) for t in tasks] == [None] * len(tasks)
    wrong = Task.from_dict({**task.to_dict(), "answer": "12 Oak St"})
    assert "FUNSD pairing gives ['12 Oak St Reno, NV 89501']" in check_task(wrong)


def test_funsd_tasks_play_through_the_source_and_the_raster_renderer(funsd):
    source = TaskSource(f"funsd:{funsd}")
    assert source.size() == 4
    task = source.draw(np.random.default_rng(0))
    renderer = EvidenceRenderer()
    task, payloads = renderer.prepare(task)
    unit = task.units[0]
    whole = whole_view(0, 0, unit, 768)
    assert renderer.draw(whole, task.units).shape == (HEIGHT, WIDTH, 3)
    zoom = crop_view(1, 0, unit, task.evidence[0].box, 768)
    assert zoom.tiles[0].scale == 1.0  # a scan is never enlarged past its pixels
    assert renderer.draw(zoom, task.units).shape[:2] == (zoom.height, zoom.width)


def write_page(root, records, image=True, raw=None, size=(WIDTH, HEIGHT)):
    (root / "annotations").mkdir(parents=True, exist_ok=True)
    (root / "images").mkdir(exist_ok=True)
    path = root / "annotations" / "bad.json"
    path.write_text(raw if raw is not None else json.dumps({"form": records}))
    if image:
        draw_png(root / "images" / "bad.png", [], size)
    return path


def broken(change):
    records = page_one()
    change(records)
    return records



def _one_error(load, words):
    """``load()`` raises one SourceError whose message names every one of ``words``."""
    with pytest.raises(SourceError) as caught:
        load()
    for word in words:
        assert word in str(caught.value), (word, str(caught.value))

@pytest.mark.parametrize("records, raw, image, words", [
    (None, '{"form": [ {"id": 1,', True, ["bad.json:1", "not valid JSON", "column 21"]),
    (None, '[1, 2]', True, ["bad.json", "'form' list"]),
    (broken(lambda r: r[3].pop("box")), None, True, ["bad.json", "entity 3", "field 'box' is missing"]),
    (broken(lambda r: r[2].update(text=5)), None, True, ["entity 2", "field 'text'", "expected a string"]),
    (broken(lambda r: r[2].update(id="two")), None, True, ["entity #2", "field 'id'"]),
    (broken(lambda r: r[4].update(label="key")), None, True, ["entity 4", "field 'label'"]),
    (broken(lambda r: r[5].update(box=[90, 107, 190])), None, True, ["entity 5", "field 'box'", "four finite numbers"]),
    (broken(lambda r: r[5].update(box=[190, 107, 90, 121])), None, True, ["entity 5", "x0 <= x1"]),
    (broken(lambda r: r[7].update(box=[110, 150, 700, 164])), None, True, ["entity 7", "field 'box'",
                                                                           "outside the image (600x400)"]),
    (broken(lambda r: r[7]["words"][0].update(box=[-5, 150, 20, 164])), None, True,
     ["entity 7", "words[0].box", "outside"]),
    (broken(lambda r: r[1].update(linking=[[1, 99]])), None, True, ["entity 1", "field 'linking'", "entity 99"]),
    (broken(lambda r: r[1].update(linking=[1, 2])), None, True, ["entity 1", "field 'linking'"]),
    (broken(lambda r: r.append(entity(2, (1, 1, 2, 2), "x", "other"))), None, True, ["entity 2", "repeats"]),
    (page_one(), None, False, ["bad.json", "bad.png", "does not exist"]),
])
def test_malformed_funsd_files_get_one_clear_error(tmp_path, records, raw, image, words):
    write_page(tmp_path, records, image, raw)
    _one_error(lambda: load_funsd(tmp_path), words)


def test_empty_or_misnamed_funsd_folders_are_refused(tmp_path):
    with pytest.raises(SourceError, match="there is no .*annotations"):
        load_funsd(tmp_path)
    (tmp_path / "annotations").mkdir()
    with pytest.raises(SourceError, match="no annotation files"):
        load_funsd(tmp_path)
    write_page(tmp_path, [entity(0, (0, 0, 10, 10), "Hi", "header")])
    with pytest.raises(SourceError, match="no page has a field with a value"):
        load_funsd(tmp_path)
    (tmp_path / "images" / "bad.png").write_bytes(b"not a png")
    with pytest.raises(SourceError, match="bad.png is not an image file that can be read"):
        load_funsd(tmp_path)
    with pytest.raises(SourceError, match="no loader 'funds'; did you mean 'funsd'"):
        load("funds", tmp_path)


# ------------------------------------------------------------------ JSONL


@pytest.fixture
def jsonl(tmp_path):
    (tmp_path / "img").mkdir()
    draw_png(tmp_path / "img" / "a.png", page_one())
    draw_png(tmp_path / "img" / "b.jpg", page_two(), (320, 240), "JPEG")
    return tmp_path


def write_jsonl(folder, records, name="set.jsonl"):
    path = folder / name
    path.write_text("\n".join(r if isinstance(r, str) else json.dumps(r) for r in records) + "\n")
    return path


GOOD = {"units": ["img/a.png"], "question": "What is the name?", "answer": "Ann Lee", "metric": "anls",
        "evidence": [{"unit": 0, "box": [90, 50, 160, 64], "size": 9}]}


def test_a_jsonl_file_becomes_tasks(jsonl):
    path = write_jsonl(jsonl, [
        GOOD, "",
        {"units": ["img/a.png", "img/b.jpg"], "question": "Which image shows a total?", "answer": "the second",
         "options": ["the first", "the second"], "metric": "letter", "id": "pick-1"},
        {"units": ["./img/b.jpg"], "question": "Total?", "answer": 5,
         "metric": "relaxed", "golds": ["5.0"]},
    ])
    first, pick, number = load("jsonl", path)
    assert (first.id, first.contract, first.scorer, first.start) == ("set-1", "text", "anls", "first")
    assert first.units[0].spec["path"] == str((jsonl / "img" / "a.png").resolve())
    assert (first.units[0].width, first.units[0].height, first.units[0].max_scale) == (WIDTH, HEIGHT, 1.0)
    assert list(first.evidence[0].box) == [90.0, 50.0, 160.0, 64.0] and first.evidence[0].legible == LEGIBLE_TEXT_PX
    assert (pick.id, pick.answer, pick.contract, pick.start, pick.options) == ("pick-1", "B", "letter", "sheet",
                                                                            ("the first", "the second"))
    assert pick.meta["distractors"] == ["A"] and pick.meta["line"] == 3
    assert pick.units[1].width == 320 and pick.units[0] is first.units[0]  # an image is read once
    assert (number.answer, number.contract, number.golds) == ("5", "number", ("5.0",))


@pytest.mark.parametrize("lines, words", [
    ([GOOD, '{"units": ["img/a.png"], "question": '], ["set.jsonl:2", "not valid JSON"]),
    (['[1, 2]'], ["set.jsonl:1", "expected a JSON object"]),
    ([{k: v for k, v in GOOD.items() if k != "question"}], ["set.jsonl:1", "field 'question' is missing"]),
    ([{**GOOD, "units": "img/a.png"}], ["set.jsonl:1", "field 'units'", "list of image paths"]),
    ([{**GOOD, "question": ["What?"]}], ["field 'question'", "non-empty string"]),
    ([{**GOOD, "answer": None}], ["field 'answer'"]),
    ([{**GOOD, "metric": "anl"}], ["field 'metric'", "did you mean 'anls'"]),
    ([{**GOOD, "anwser": "x"}], ["field 'anwser'", "did you mean 'answer'"]),
    ([{**GOOD, "units": ["img/missing.png"]}], ["set.jsonl:1", "field units[0]", "missing.png does not exist"]),
    ([{**GOOD, "evidence": [{"unit": 0, "box": [90, 50, 700, 64], "size": 9}]}],
     ["field evidence[0].box", "outside unit 0's image (600x400)"]),
    ([{**GOOD, "evidence": [{"unit": 1, "box": [90, 50, 160, 64], "size": 9}]}],
     ["field evidence[0].unit", "0..0"]),
    ([{**GOOD, "evidence": [{"unit": 0, "box": [90, 50, 160, 64]}]}], ["field 'size' is missing"]),
    ([{**GOOD, "evidence": [{"unit": 0, "box": [90, 50, 160, 64], "size": -1}]}],
     ["field evidence[0].size", "positive"]),
    ([{**GOOD, "evidence": {"unit": 0}}], ["field 'evidence'", "expected a list"]),
    ([{**GOOD, "metric": "letter", "options": ["x", "y"]}], ["field 'answer'", "option's letter"]),
    ([{**GOOD, "metric": "letter"}], ["field 'options'", "at least two options"]),
    ([{**GOOD, "options": "x"}], ["field 'options'", "list of non-empty strings"]),
    ([{**GOOD, "id": "q"}, {**GOOD, "id": "q"}], ["set.jsonl:2", "field 'id'", "already the id of line 1"]),
    ([{**GOOD, "id": 3}], ["field 'id'"]),
    (["", "  "], ["set.jsonl", "holds no records"]),
])
def test_malformed_jsonl_records_get_one_clear_error(jsonl, lines, words):
    path = write_jsonl(jsonl, lines)
    _one_error(lambda: load_jsonl(path), words)


def test_a_missing_jsonl_file_is_named(tmp_path):
    with pytest.raises(SourceError, match="no.jsonl: no such JSONL file"):
        load_jsonl(tmp_path / "no.jsonl")
