"""ChartQA records whose kept answer the drawn table does not give, or gives only to some
readers, are dropped and counted (each case below was kept before this screen)."""

import pytest

from vicogym.sources.chartqa_questions import asked_quantities, classify_record
from vicogym.structures.chart import Table

CUSTOMS = Table("Year", ("2027", "2028", "2029", "2030"), ("Revenue in billion euros",),
                ((96.0,), (98.0,), (99.0,), (100.0,)), decimals=0)
CONFIDENT = Table("Characteristic", ("Use military force wisely", "Handle an international crisis"),
                  ("Very confident", "Somewhat confident", "Not too confident", "Not at all"),
                  ((25.0, 21.0, 17.0, 35.0), (27.0, 19.0, 16.0, 37.0)), unit="%", decimals=0)
SEXES = Table("Year", ("2009", "2010", "2011"), ("Female", "Male"),
              ((16.92, 16.86), (17.31, 17.23), (17.72, 17.63)), decimals=2)
COUNTRIES = Table("Entity", ("Botswana", "Chile", "Comoros"), ("1981", "1990", "2002"),
                  ((52.0, 61.0, 48.0), (50.0, 55.0, 60.0), (30.0, 33.0, 35.0)), decimals=0)


@pytest.mark.parametrize("question, label", [
    ("What is the forecast for the increase in customs duty revenue in 2030?", "100"),  # the level, not the rise
    ("How much will customs duty revenue rise in 2030?", "100"),
    ("How many are Somewhat confident that Donald Trump can handle an international crisis?", "24"),  # not drawn
])
def test_a_number_that_is_not_the_quantity_the_words_ask_for_is_dropped(question, label):
    table = CONFIDENT if "confident" in question else CUSTOMS
    result = classify_record(table, question, label)
    assert (result.status, result.reason) == ("dropped", "answer_not_derivable")
    assert classify_record(table, question, label, tier2="keep").status == "invariant"  # kept only on request


@pytest.mark.parametrize("question, label, asked", [
    ("What is the forecast for the increase in customs duty revenue in 2030?", "1", {"difference"}),
    ("By how much percentage is 2030 less than 2029?", "1", {"difference"}),
    ("What is the customs duty revenue forecast for 2030?", "100", {"level"}),
    ("What is the total revenue of 2029 and 2030?", "199", {"sum", "level"}),
])
def test_the_quantity_the_words_ask_for_is_kept(question, label, asked):
    assert asked_quantities(CUSTOMS, question) == asked
    assert classify_record(CUSTOMS, question, label).status != "dropped", question


def test_a_table_whose_labels_name_the_change_asks_for_its_drawn_level():
    growth = Table("Year", ("2018", "2019"), ("Revenue growth in %",), ((3.0,), (4.5,)), unit="%", decimals=1)
    assert asked_quantities(growth, "What was the revenue growth in 2019?") == {"level"}
    assert asked_quantities(CUSTOMS, "What was the net income of The Times Company in 2030?") == {"level"}


def test_a_yes_no_about_a_difference_is_checked_against_the_drawn_values():
    question = "Is there any difference between the male and female values?"
    assert (classify_record(SEXES, question, "No").reason) == "contradicts_table"  # 16.92 against 16.86
    assert classify_record(SEXES, question, "Yes").status == "invariant"
    same = Table("Year", ("2009", "2010"), ("Female", "Male"), ((16.9, 16.9), (17.3, 17.3)), decimals=1)
    assert classify_record(same, question, "Yes").reason == "contradicts_table"
    assert classify_record(same, "Are the male and female values the same?", "Yes").status == "invariant"


def test_which_is_higher_over_lines_that_disagree_is_dropped():
    question = "In general, what country had the higher value, Botswana or Chile?"
    result = classify_record(COUNTRIES, question, "Chile")  # Botswana is higher in 1981 and 1990
    assert (result.status, result.reason) == ("dropped", "ambiguous_extreme")
    assert classify_record(COUNTRIES, question, "Botswana").reason == "ambiguous_extreme"  # Chile in 2002
    # named in one line, or the same answer in every line: one reading
    assert classify_record(COUNTRIES, "Which country had the higher value in 1990, Botswana or Chile?",
                           "Botswana").status != "dropped"
    assert classify_record(COUNTRIES, "Which country had the lowest value over the years?",
                           "Comoros").status != "dropped"


def test_a_question_giving_values_the_chart_does_not_draw_is_dropped():
    question = "Find the country whose value is 52 and 15?"
    assert classify_record(COUNTRIES, question, "Botswana").reason == "value_not_drawn"
    assert classify_record(COUNTRIES, "Find the country whose value is 52 and 61?", "Botswana").status != "dropped"
    # a threshold or a derived difference is no drawn value
    assert classify_record(COUNTRIES, "Which country had a difference of 4 between 1981 and 1990?",
                           "Chile").reason != "value_not_drawn"


def test_a_question_with_loose_numbers_before_its_words_is_dropped():
    table = Table("Year", ("2019", "2020", "2021"), ("Sales",), ((51.0,), (55.0,), (53.0,)), decimals=0)
    assert classify_record(table, "51 55 What is the missed data?", "53").reason == "garbled_question"
    assert classify_record(table, "What was the value in 2021?", "53").status != "dropped"
