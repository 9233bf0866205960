"""Natural-image records: the embedded demo, the JSONL and COCO-style loaders, and the
record type's validation."""

import json

import cv2
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vicogym.errors import SourceError
from vicogym.sources.natural import RecordSource, demo_records, load_image
from vicogym.structures.natural import ANSWER_TYPES, Record, Target


def test_the_demo_runs_on_a_fresh_machine_and_covers_every_answer_type():
    source = RecordSource()
    assert len(source) >= 16 and len({r.id for r in source.records}) == len(source)
    assert {r.answer_type for r in source.records} == set(ANSWER_TYPES)
    for record in source.records:
        image = source.image(record.image)
        assert image.dtype == np.uint8 and image.ndim == 3 and image.shape[2] == 3
        assert not image.flags.writeable  # edits work on copies
        record.check_inside(image.shape[1], image.shape[0])
        if record.answer_type == "number":
            assert record.answer.isdigit()
    assert source.summary()["images"] == len({r.image for r in source.records})


@pytest.mark.parametrize("ref, shape", [("skimage:coins", (303, 384, 3)), ("skimage:stereo_motorcycle", (500, 741, 3)),
                                        ("matplotlib:grace_hopper.jpg", (600, 512, 3))])
def test_sample_images_load_as_rgb(ref, shape):
    image = load_image(ref)
    assert image.shape == shape and image.dtype == np.uint8


@pytest.mark.parametrize("ref, message", [("skimage:nothing_here", "scikit-image has no sample image 'nothing_here'"),
                                          ("matplotlib:missing.png", "no file"),
                                          ("missing.png", "image 'missing.png': no file")])
def test_bad_image_references_are_named(ref, message):
    with pytest.raises(SourceError, match=message):
        load_image(ref)


GOOD = {"id": "q1", "image": "a.png", "question": "How many coins?", "answer": 3, "answer_type": "number",
        "targets": [{"label": "coin", "box": [1, 2, 30, 40]}, {"label": "coin", "polygon": [[0, 0], [5, 0], [5, 5]]},
                    {"label": "coin", "points": [[10.5, 12]]}]}


def test_records_round_trip_and_normalise_answers():
    record = Record.from_dict(GOOD)
    assert record.answer == "3" and record.targets[0].bounds() == (1, 2, 30, 40)
    assert record.targets[1].bounds() == (0, 0, 6, 6) and record.targets[2].bounds() == (10, 12, 11, 13)
    assert Record.from_dict(json.loads(json.dumps(record.to_dict()))) == record
    with pytest.raises(ValueError, match=r"record q1: targets\[0\] \(coin\): box \[1, 2, 30, 40\] reaches outside the "
                                         r"20 x 20 image"):
        record.check_inside(20, 20)


@pytest.mark.parametrize(
    "change, message",
    [
        ({"answer_type": "colour"}, "record.answer_type: expected one of ['yes/no', 'number', 'other'], got 'colour'"),
        (
            {"answer": "maybe", "answer_type": "yes/no"},
            "record.answer: expected yes or no for a yes/no question, got 'maybe'",
        ),
        ({"answer": "three"}, "record.answer: expected a whole number for a number question, got 'three'"),
        ({"answer": True}, "record.answer: expected a string (or a whole number for a number question), got True"),
        ({"targets": []}, "record.targets: expected a non-empty list of targets (what the answer depends on), got []"),
        (
            {"targets": [{"label": "coin"}]},
            "record.targets[0] (coin): expected exactly one of ['box', 'points', 'polygon'], got none",
        ),
        (
            {"targets": [{"label": "coin", "box": [5, 5, 5, 9]}]},
            "record.targets[0].box: expected x1 > x0 and y1 > y0, got [5, 5, 5, 9]",
        ),
        (
            {"targets": [{"label": "coin", "box": [0, 0, 1.5, 2]}]},
            "record.targets[0].box: expected [x0, y0, x1, y1] as four whole numbers of pixels, got [0, 0, 1.5, 2]",
        ),
        (
            {"targets": [{"label": "coin", "polygon": [[0, 0], [1, 1]]}]},
            "record.targets[0].polygon: expected a list of at least 3 [x, y] pairs",
        ),
        (
            {"targets": [{"label": "coin", "box": [0, 0, 1, 1], "mask": "rle"}]},
            "record.targets[0]: unknown field 'mask'",
        ),
        ({"question": " "}, "record.question: expected a non-empty string, got ' '"),
    ],
)
def test_bad_records_name_the_field(change, message):
    with pytest.raises(ValueError) as info:
        Record.from_dict(dict(GOOD, **change))
    assert str(info.value).startswith(message)


JSONISH = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.sampled_from(sorted(GOOD) + ["extra"]), JSONISH, max_size=7))
def test_any_json_gives_a_record_or_a_value_error(data):
    try:
        record = Record.from_dict(dict(GOOD, **data))
    except ValueError:
        return
    assert Record.from_dict(record.to_dict()) == record


def test_jsonl_records_resolve_images_next_to_the_file(tmp_path):
    cv2.imwrite(str(tmp_path / "a.png"), np.full((50, 60, 3), 128, np.uint8))
    (tmp_path / "records.jsonl").write_text(json.dumps(GOOD) + "\n\n" + json.dumps(dict(GOOD, id="q2")) + "\n")
    source = RecordSource(str(tmp_path / "records.jsonl"))
    assert [r.id for r in source.records] == ["q1", "q2"] and source.image("a.png").shape == (50, 60, 3)
    (tmp_path / "bad.jsonl").write_text(json.dumps(GOOD) + "\n" + json.dumps(GOOD) + "\n{oops\n")
    with pytest.raises(SourceError, match=r"bad.jsonl:2: record id 'q1' is used twice"):
        RecordSource(str(tmp_path / "bad.jsonl"))
    (tmp_path / "far.jsonl").write_text(json.dumps(dict(GOOD, targets=[{"label": "coin", "box": [0, 0, 61, 10]}])))
    with pytest.raises(ValueError, match=r"reaches outside the 60 x 50 image"):
        RecordSource(str(tmp_path / "far.jsonl"))


def _coco(tmp_path, questions):
    (tmp_path / "images").mkdir()
    cv2.imwrite(str(tmp_path / "images" / "street.png"), np.full((80, 100, 3), 90, np.uint8))
    annotations = {"images": [{"id": 7, "file_name": "street.png", "width": 100, "height": 80}],
                   "annotations": [{"id": 1, "image_id": 7, "category_id": 3, "bbox": [10.5, 20, 15, 10]},
                                   {"id": 2, "image_id": 7, "category_id": 3,
                                    "segmentation": [[50, 10, 70, 10, 70, 30, 50, 30]], "bbox": [50, 10, 20, 20]}],
                   "categories": [{"id": 3, "name": "car"}]}
    (tmp_path / "annotations.json").write_text(json.dumps(annotations))
    (tmp_path / "questions.json").write_text(json.dumps(questions))
    return tmp_path


def test_coco_style_folders_load_boxes_and_polygons(tmp_path):
    folder = _coco(tmp_path, [{"id": "cars", "image_id": 7, "question": "How many cars are there?", "answer": "2",
                               "answer_type": "number", "targets": [1, 2]}])
    (record,) = RecordSource(str(folder)).records
    assert record.image == "images/street.png" and [t.label for t in record.targets] == ["car", "car"]
    assert record.targets[0] == Target("car", box=(10, 20, 26, 30))
    assert record.targets[1].geometry == "polygon" and record.targets[1].bounds() == (50, 10, 71, 31)


@pytest.mark.parametrize("question, message", [
    ({"image_id": 8, "question": "?", "answer": "1", "answer_type": "number", "targets": [1]},
     "questions[0]: image_id 8 is not an image of"),
    ({"image_id": 7, "question": "?", "answer": "1", "answer_type": "number", "targets": [9]},
     "questions[0]: target 9 is not an annotation id of"),
    ({"image_id": 7, "question": "?", "answer": "1", "answer_type": "number"},
     "questions[0]: needs image_id, question, answer, answer_type and targets"),
    ({"image_id": 7, "question": "?", "answer": "one", "answer_type": "number", "targets": [1]},
     "expected a whole number for a number question"),
])
def test_bad_coco_questions_name_the_question(tmp_path, question, message):
    with pytest.raises(SourceError, match=message.replace("[", r"\[").replace("]", r"\]")):
        RecordSource(str(_coco(tmp_path, [question])))


@pytest.mark.parametrize("source", ["", "nowhere/records.jsonl", "nowhere"])
def test_unknown_sources_say_what_is_accepted(source):
    with pytest.raises(SourceError, match="expected source 'demo', a .jsonl file or a COCO-style folder"):
        RecordSource(source)


def test_demo_records_parse_without_images():
    assert all(isinstance(r, Record) for r in demo_records())


def _one_record_file(tmp_path, **change):
    record = {"id": "q", "image": "s.png", "question": "How many?", "answer": 1, "answer_type": "number",
              "targets": [{"label": "a", "box": [0, 0, 5, 5]}], **change}
    (tmp_path / "r.jsonl").write_text(json.dumps(record) + "\n", encoding="utf-8")
    return str(tmp_path / "r.jsonl")


def test_images_and_records_are_bounded_before_decoding_and_stay_inside_their_folder(tmp_path):
    folder = tmp_path / "set"
    folder.mkdir()
    outside = tmp_path / "outside.png"
    cv2.imwrite(str(outside), np.zeros((50, 50, 3), np.uint8))
    cv2.imwrite(str(folder / "s.png"), np.zeros((50, 50, 3), np.uint8))
    cv2.imwrite(str(folder / "wide.png"), np.zeros((3000, 20000), np.uint8))  # 60 MP in about 60 KB
    bad = {
        "../outside.png": "lies outside", str(outside): "lies outside", "wide.png": "20000 x 3000 pixels, more than",
        "matplotlib:../../../../outside.png": "lies outside",
    }
    for ref, message in bad.items():
        with pytest.raises(SourceError, match=message) as info:
            RecordSource(_one_record_file(folder, image=ref))
        assert "r.jsonl" in str(info.value)
    polygon = [[i % 40, (i * 7) % 40] for i in range(5000)]
    with pytest.raises(SourceError, match="r.jsonl:1.targets\\[0\\].polygon: 5000 vertices, more than the 4096"):
        RecordSource(_one_record_file(folder, targets=[{"label": "a", "polygon": polygon}]))
    with pytest.raises(SourceError, match="deep.jsonl:1: JSON nested deeper than the parser follows"):
        (folder / "deep.jsonl").write_text('{"id": ' + "[" * 100_000 + "]" * 100_000 + "}\n", encoding="utf-8")
        RecordSource(str(folder / "deep.jsonl"))
    assert len(RecordSource(_one_record_file(folder))) == 1


def test_every_demo_question_protects_whatever_it_names_as_an_owner():
    """ "the cat's eyes" is about the cat: a patch pasted onto it (a second nose) would be a
    new feature of what the question is about, so the owner is a target too."""
    import re

    for record in demo_records():
        labels = {t.label for t in record.targets}
        for owner in re.findall(r"\bthe (\w+)'s\b", record.question):
            assert owner in labels, f"{record.id}: {record.question!r} names the {owner}, targets are {labels}"
