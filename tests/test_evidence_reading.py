"""The ocr executor's reading procedure (vicogym.evidence.reading) on words placed by hand,
and the executor itself reading real views with Tesseract."""

import gymnasium as gym
import numpy as np
import pytest

import vicogym  # noqa: F401
from vicogym.evidence.episodes import play
from vicogym.evidence.executors import OCRExecutor, make_executor
from vicogym.evidence.reading import Seen, chart_values, find_phrase, is_number, read_field, read_slide, similarity
from vicogym.ocr import Word

H = 20  # a line's height in the hand-placed pages below


def words(*placed):
    """Words from (text, x, y) with a width of 10 px a character, one line per y."""
    out = []
    for text, x, y in placed:
        out.append(Word(text, (x, y, x + 10 * len(text), y + H), 90.0, (0, 0, y)))
    return out


def seen(placed, unit=0, scale=1.0, pixels=None):
    view = {"tiles": [{"unit": unit, "crop": [0, 0, 1000, 1000], "scale": scale, "at": [0, 0], "label": ""}],
            "width": 1000, "height": 1000}
    return Seen(view, np.full((1000, 1000, 3), 255, np.uint8) if pixels is None else pixels, words(*placed))


def test_similarity_and_phrases_allow_a_misread_letter_not_another_label():
    assert similarity("Invoice date", "Invoice date") == 1.0
    assert similarity("lnvoice date", "Invoice date") >= 0.9
    line = words(("Invoice", 0, 0), ("dale:", 80, 0), ("03/04/2021", 150, 0))
    found = find_phrase(line, "Invoice date")
    assert found is not None and [w.text for w in found[0]] == ["Invoice", "dale:"]
    assert find_phrase(line, "Due date") is None
    assert is_number("$1,234.50") and is_number("-3.5%") and not is_number("Q2 '22") and not is_number("12a")


@pytest.mark.parametrize("placed, answer", [
    ([("Phone:", 0, 0), ("(555)", 80, 0), ("123-4567", 140, 0), ("Email:", 500, 0), ("a@b.com", 570, 0)],
     "(555) 123-4567"),  # beside, up to the next label
    ([("Fax:", 0, 0), ("555.123.4567", 400, 0), ("Employer:", 0, 45), ("Acme", 400, 45)], "555.123.4567"),  # a tab
    ([("Tax", 0, 0), ("ID", 40, 0), ("Due", 300, 0), ("date", 340, 0), ("12-3456789", 0, 60), ("4/5/21", 300, 60)],
     "12-3456789"),  # a grid cell: the value at the cell's foot, below its label
    ([("Ship", 0, 0), ("to:", 50, 0), ("12", 30, 40), ("Elm", 60, 40), ("St", 100, 40), ("Dayton,", 30, 70),
      ("OH", 110, 70), ("45402", 140, 70), ("Phone:", 0, 140)], "12 Elm St Dayton, OH 45402"),  # an address
])
def test_a_field_is_read_beside_or_below_its_label(placed, answer):
    label = {"(555) 123-4567": "Phone", "555.123.4567": "Fax", "12-3456789": "Tax ID",
             "12 Elm St Dayton, OH 45402": "Ship to"}[answer]
    question = f"What is the value of the field '{label}'?"
    assert read_field(question, [seen(placed)]).answer == answer


def test_a_field_is_read_where_its_label_and_value_lie_in_different_views():
    row = seen([("Permit", 100, 100), ("fee", 170, 100)], scale=2.0)
    row.view["tiles"][0]["crop"] = [0, 0, 500, 500]  # a zoom onto the row's name, at twice the unit's size
    amount = seen([("$1,598.94", 600, 100)], scale=2.0)
    amount.view["tiles"][0]["crop"] = [500, 0, 1000, 500]  # another zoom onto its amount, far right
    reading = read_field("What amount is listed for 'Permit fee'?", [row, amount])
    assert reading.answer == "$1,598.94"


def test_a_check_box_group_answers_the_option_with_the_inked_box():
    pixels = np.full((200, 1000, 3), 255, np.uint8)
    for x0, checked in ((150, False), (300, True), (450, False)):
        pixels[2:24, x0:x0 + 22] = 0
        pixels[4:22, x0 + 2:x0 + 20] = 255
        if checked:
            for d in range(18):
                pixels[4 + d, x0 + 2 + d] = pixels[4 + d, x0 + 19 - d] = 0
    page = seen([("Marital", 0, 3), ("status:", 80, 3), ("Single", 180, 3), ("Married", 330, 3), ("Widowed", 480, 3)],
                pixels=pixels)
    assert read_field("Which option is checked for 'Marital status'?", [page]).answer == "Married"


def test_questions_and_views_it_cannot_read_are_no_answer_with_the_reason():
    assert read_field("How many?", [seen([("a", 0, 0)])]).failure == "unsupported"
    assert read_field("What is the value of the field 'Fax'?", [seen([("Phone:", 0, 0)])]).failure == "unreadable"
    assert read_field("What is the value of the field 'Fax'?", [seen([("Fax:", 0, 0)], unit=3)]).failure == \
        "missed_unit"
    assert read_slide("In the slide titled 'Sales', what is the Units value for Q1?", []).failure == "missed_unit"


def test_a_column_chart_pairs_each_category_with_the_number_above_it():
    chart = words(("412", 10, 100), ("380", 110, 140), ("455", 210, 80), ("Jan", 10, 300), ("Feb", 110, 300),
                  ("Mar", 210, 300), ("0", -40, 290), ("500", -60, 40))  # ticks left of the axis
    assert dict(chart_values(chart, "Visitors")) == {"Jan": "412", "Feb": "380", "Mar": "455"}
    bars = words(("Oil", 0, 0), ("Coal", 0, 50), ("2015", 0, 100), ("91", 300, 0), ("57", 200, 50), ("63", 250, 100))
    assert dict(chart_values(bars, "Share")) == {"Oil": "91", "Coal": "57", "2015": "63"}  # a year is a category


def test_a_slide_is_found_by_its_sheet_label_and_its_value_read():
    sheet = {"tiles": [{"unit": 0, "crop": [0, 0, 1280, 720], "scale": 0.03, "at": [0, 40], "label": "Unit 0: A"},
                       {"unit": 1, "crop": [0, 0, 1280, 720], "scale": 0.03, "at": [200, 40], "label": "Unit 1: B"}],
             "width": 400, "height": 100}
    labels = words(("Unit", 0, 5), ("0:", 50, 5), ("Monthly", 80, 5), ("visitors", 160, 5),
                   ("Unit", 200, 5), ("1:", 250, 5), ("Unit", 280, 5), ("sales", 330, 5))
    chart = seen([("Jan", 10, 300), ("Feb", 110, 300), ("412", 10, 100), ("380", 110, 140)], unit=1, scale=1.2)
    views = [Seen(sheet, np.full((100, 400, 3), 255, np.uint8), labels), chart]
    question = "In the slide titled 'Unit sales', what is the Units value for Feb?"
    assert read_slide(question, views).answer == "380"
    assert read_slide("In the slide titled 'Unit sales', which month has the lowest Units value?", views).answer == \
        "Feb"
    assert read_slide("In the slide titled 'Monthly visitors', what is the X value for Feb?", views).failure == \
        "unreadable"  # found the slide, but no view of it to read


@pytest.mark.slow
def test_the_ocr_executor_reads_what_a_zoom_shows_and_not_what_a_thumbnail_hides(tesseract):
    env = gym.make("vicogym/Evidence-v0", tasks="forms", executor="ocr:oracle")
    oracle = [play(env, make_executor("ocr:oracle"), seed=s) for s in range(4)]
    direct_env = gym.make("vicogym/Evidence-v0", tasks="forms", executor="direct:ocr")
    direct = [play(direct_env, make_executor("direct:ocr"), seed=s) for s in range(4)]
    assert [t["task"]["id"] for t in oracle] == [t["task"]["id"] for t in direct]  # the same tasks
    assert np.mean([t["score"] for t in oracle]) >= 0.75
    assert np.mean([t["score"] for t in direct]) < np.mean([t["score"] for t in oracle])
    assert all(t["executor"] in ("ocr:oracle", "direct:ocr") for t in oracle + direct)
    again = play(env, make_executor("ocr:oracle"), seed=0)
    assert again["response"] == oracle[0]["response"]  # Tesseract reads the same pixels the same way
    assert isinstance(make_executor("ocr,locate=0.5"), OCRExecutor)
