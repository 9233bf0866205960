"""ChartQA records whose kept answer the drawn table does not give, or gives only to some
readers, are dropped and counted (each case below was kept before this screen)."""

import json
from dataclasses import replace

import gymnasium as gym
import pytest

import vicogym  # noqa: F401  (registers the environments)
from vicogym.editors.chart import apply, check_structure
from vicogym.envs.chart import ChartArm, ChartEnvConfig, about_the_chart
from vicogym.errors import InvalidEdit
from vicogym.programs.chart import cell_rule, invariant_rule
from vicogym.renderers.chart import ChartRenderer
from vicogym.sources.chartqa import ChartQASource
from vicogym.sources.chartqa_questions import asked_quantities, classify_record
from vicogym.sources.chartqa_tables import chartqa_vocabulary, default_spec, load_chartqa_table, record_title
from vicogym.structures.chart import ChartStructure, Table

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


# -- tables as a reader sees them, and as edits may leave them ------------------------------
def _table(tmp_path, text):
    path = tmp_path / "t.csv"
    path.write_text(text)
    return load_chartqa_table(path)


def test_a_time_axis_is_drawn_in_time_order_and_keeps_it_under_every_edit(tmp_path):
    table = _table(tmp_path, "Season,Price\n2008/09,50\n2006/07,48\n2007/08,49\n2010/11,53\n2009/10,51\n")
    assert table.rows == ("2006/07", "2007/08", "2008/09", "2009/10", "2010/11")
    assert table.column("Price") == (48.0, 49.0, 50.0, 51.0, 53.0)
    structure = ChartStructure(table, default_spec(table), chartqa_vocabulary(table))
    shuffled = ["2006/07", "2008/09", "2007/08", "2010/11", "2009/10"]
    with pytest.raises(InvalidEdit) as info:
        apply(structure, {"op": "reorder_rows", "order": shuffled}, cell_rule("2006/07", "Price"))
    assert info.value.code == "order"
    starred = _table(tmp_path, "Year,Debt\n2017,70\n2015,68\n2022*,80\n2014,66\n2019*,74\n2016,69\n")
    assert starred.rows == ("2014", "2015", "2016", "2017", "2019*", "2022*")
    assert chartqa_vocabulary(starred).ordered


def test_a_series_with_nothing_drawn_is_no_series_of_the_chart(tmp_path):
    table = _table(tmp_path, "Entity,1981,1985,1990\nBotswana,52,,61\nChile,50,nan,55\nComoros,30,-,33\n")
    assert table.series == ("1981", "1990")
    out = ChartRenderer(dpi=60).render(ChartStructure(table, default_spec(table)))
    assert [e["text"] for e in out.facts["legend_entries"]] == ["1981", "1990"]


def test_shares_of_a_whole_that_are_not_all_of_it_never_add_up_to_more_than_it(tmp_path):
    grocers = _table(tmp_path, "Characteristic,Market share\nMercadona,24.7%\nCarrefour,8.6%\nLidl,6.3%\n"
                     "Grupo Dia,5.5%\nGrupo Eroski,4.8%\nGrupo Auchan (Alcampo),3.3%\n")
    assert grocers.part_of_whole and not grocers.complete
    over = replace(grocers, values=((35.0,), (20.0,), (15.0,), (12.0,), (10.0,), (8.6,)))  # 100.6%
    with pytest.raises(InvalidEdit) as info:
        check_structure(ChartStructure(over, default_spec(over), chartqa_vocabulary(over)))
    assert info.value.code == "bad_value" and "at most 100%" in str(info.value)


def test_values_stay_within_what_the_real_quantity_does(tmp_path):
    acsi = _table(tmp_path, "Year,ACSI score\n2015,71\n2016,73\n2017,72\n2018,74\n")
    low, high = acsi.bounds
    assert 60 <= low <= 65 and 80 <= high <= 90 and not acsi.in_bounds(32.0)
    structure = ChartStructure(acsi, default_spec(acsi), chartqa_vocabulary(acsi))
    with pytest.raises(InvalidEdit):  # 73 -> 32
        apply(structure, {"op": "set_cell", "row": "2016", "series": "ACSI score", "value": 32},
              cell_rule("2018", "ACSI score"))
    households = _table(tmp_path, "Year,Households in millions\n2017,4.66\n2018,4.70\n2019,4.75\n2020,4.79\n")
    assert households.max_step is not None and households.step_problem() is None
    moved = ChartStructure(households, default_spec(households), chartqa_vocabulary(households))
    with pytest.raises(InvalidEdit) as info:  # 4.75 -> 2.50 in one year
        apply(moved, {"op": "set_cell", "row": "2019", "series": "Households in millions", "value": 2.5},
              cell_rule("2020", "Households in millions"))
    assert info.value.code in ("bad_value", "step")
    assert apply(moved, {"op": "set_cell", "row": "2019", "series": "Households in millions", "value": 4.8},
                 cell_rule("2020", "Households in millions")).table.cell("2019", "Households in millions") == 4.8


# -- verify screens kept answers as the source does -------------------------------------------
def _invariant_row(table, question, answer, **settings):
    arm = ChartArm(ChartEnvConfig(reader_check="off", **settings))
    structure = ChartStructure(table, default_spec(table), chartqa_vocabulary(table)).to_json()
    rule = invariant_rule(table, answer, question)
    return arm, {"structure": structure, "seed_structure": structure, "payloads": [], "label": json.dumps(rule),
                 "label_rule": "invariant", "question": about_the_chart(question), "answer": answer,
                 "provenance": "{}"}


def test_verify_applies_the_source_screen_to_kept_answers():
    question = "Is there any difference between the male and female values?"
    arm, row = _invariant_row(SEXES, question, "No")
    assert "contradicts_table" in arm.verify_row(row)
    arm, row = _invariant_row(SEXES, question, "Yes")
    assert arm.verify_row(row) is None
    arm, row = _invariant_row(SEXES, question, "No", tier2="keep")  # kept on request: the run said so
    assert arm.verify_row(row) is None


# -- real entities: rows say what they say of the world -----------------------------------------
def test_real_tables_are_asked_of_the_chart_by_default(chartqa):
    env = gym.make("vicogym/Chart-v0", source=str(chartqa), k=1, reader_check="off").unwrapped
    index = next(i for i in env.arm.source.usable if env.arm.source.classified[i].status == "cell")
    obs, info = env.reset(seed=0, options={"index": index})
    record = env.arm.source.records[index].query
    assert obs["question"] == about_the_chart(record) and obs["question"].startswith("According to the chart, ")
    assert info["sample"].provenance.facts == "chart"
    assert env.arm.check_question(record, info["label"], info["sample"].structure) is not None  # unframed: refused
    procedural = gym.make("vicogym/Chart-v0", k=1, reader_check="off").unwrapped
    obs, info = procedural.reset(seed=0)
    assert info["sample"].provenance.to_dict()["facts"] == "invented" and not obs["question"].startswith("According")


def test_real_facts_style_keeps_real_values_as_published(chartqa):
    env = gym.make("vicogym/Chart-v0", source=str(chartqa), k=1, reader_check="off", real_facts="style").unwrapped
    index = next(i for i in env.arm.source.usable if env.arm.source.classified[i].status == "cell")
    obs, info = env.reset(seed=0, options={"index": index})
    assert obs["question"] == env.arm.source.records[index].query and info["sample"].provenance.facts == "real"
    rule, table = info["label"], info["sample"].structure.table
    before = obs["structure"]
    value = table.cell(rule["row"], rule["series"])
    _, reward, _, _, info = env.step({"op": "set_cell", "row": rule["row"], "series": rule["series"],
                                      "value": value + 10.0 ** -table.decimals})
    assert not info["valid"] and info["error"]["code"] == "real_facts" and "set_style" in info["error"]["message"]
    assert env.unwrapped._text == before
    for _ in range(5):  # the random rewriter proposes only what the setting allows
        assert all(op["op"] == "set_style" for op in env.sample_edit()["ops"])


@pytest.mark.parametrize("question, framed", [
    ("What was the revenue in 2019?", "According to the chart, what was the revenue in 2019?"),
    ("Mercadona's share in 2020?", "According to the chart, Mercadona's share in 2020?"),
    ("IS the gap larger?", "According to the chart, IS the gap larger?"),
    ("According to the chart, what is it?", "According to the chart, what is it?"),
])
def test_about_the_chart_frames_a_question_once(question, framed):
    assert about_the_chart(question) == framed


def test_a_chart_whose_table_names_no_measure_is_titled_from_its_records(tmp_path):
    (tmp_path / "tables").mkdir()
    (tmp_path / "tables" / "00795994017065.csv").write_text(
        "Entity,2005,2006,2007\nMyanmar,59.61,59.78,59.36\nZambia,27.44,27.31,26.84\nNew Zealand,13.89,13.53,13.36\n")
    (tmp_path / "tables" / "OECD_HOUSING_PRICES_JPN_RUS_000007.csv").write_text("Country,2015,2016\nJapan,1.2,"
                                                                                  "1.5\nRussia,3.1,2.2\n")
    records = [("00795994017065.png", "Which bar is yellow?", "Zambia"),
               ("00795994017065.png", "Which country recorded the highest death rates due to outdoor air pollution "
                                      "over the years?", "Myanmar"),
               ("OECD_HOUSING_PRICES_JPN_RUS_000007.png", "What was Japan's value in 2016?", "1.5")]
    (tmp_path / "qa.jsonl").write_text("".join(json.dumps({"imgname": i, "query": q, "label": a}) + "\n"
                                               for i, q, a in records))
    source = ChartQASource(tmp_path)
    assert source.seed(1).structure.spec.title == "Death rates due to outdoor air pollution"  # not "Yellow"
    assert source.seed(2).structure.spec.title == "Housing prices"
    one = Table("Year", ("2019", "2020"), ("Revenue in million euros",), ((1.0,), (2.0,)))
    assert record_title("two_col_1.png", ["Which year had the highest revenue in the region?"], one) == ""
