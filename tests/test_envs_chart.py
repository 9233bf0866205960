"""Chart-specific behaviour of vicogym/Chart-v0 (the registry-wide suite covers the rest)."""

import json
from dataclasses import replace

import gymnasium as gym
import numpy as np
import pytest

import vicogym
from vicogym.answers import format_number
from vicogym.checks.chart import occluded_marks
from vicogym.errors import GenerationError, SourceError, UnknownEnvironment
from vicogym.programs.chart import program_rule
from vicogym.structures.chart import ChartSpec, ChartStructure, Table

FAST = {"k": 4, "max_turns": 3}


def test_unknown_id_suggests_the_closest():
    with pytest.raises(UnknownEnvironment) as info:
        vicogym.make("vicogym/Chrat-v0")
    assert str(info.value).startswith("no vicogym environment 'vicogym/Chrat-v0'; did you mean 'vicogym/Chart-v0'? "
                                      "(known: vicogym/CLEVR-v0, vicogym/Chart-v0")


def test_chart_step_info_and_episode_end():
    env = gym.make("vicogym/Chart-v0", k=8, max_turns=2, render_mode="rgb_array")
    obs, info = env.reset(seed=1)
    assert set(info) >= {"valid", "error", "answer", "label_rule", "pass_rate", "pass_rate_before", "timings"}
    structure = json.loads(obs["structure"])
    row, series = structure["table"]["rows"][0], structure["table"]["series"][0]
    edit = json.dumps({"ops": [{"op": "set_style", "gridlines": not structure["spec"]["gridlines"]}]})
    obs, reward, terminated, truncated, info = env.step(edit)
    assert info["valid"] and info["error"] is None and reward in (0.0, 1.0)
    assert set(info["timings"]) >= {"edit", "relabel", "render", "actor", "total"}
    assert 0.0 <= info["pass_rate"] <= 1.0 and len(info["actor_answers"]) == 8
    assert env.render().shape == (480, 640, 3) == obs["image"].shape
    obs, reward, terminated, truncated, info = env.step({"op": "set_cell", "row": row, "series": series, "value": 1e30})
    assert truncated and not terminated and info["error"]["code"] == "bad_value"
    _, _, terminated, _, info = env.step({"op": "stop"})
    assert terminated and info["error"]["code"] == "episode_over"


def test_stop_terminates_with_zero_reward():
    env = gym.make("vicogym/Chart-v0", **FAST)
    env.reset(seed=2)
    _, reward, terminated, truncated, info = env.step({"op": "stop"})
    assert (reward, terminated, truncated, info["stopped"], info["valid"]) == (0.0, True, False, True, True)


def test_tier1_chartqa_answer_follows_the_cell(chartqa):
    env = gym.make("vicogym/Chart-v0", source=str(chartqa), **FAST).unwrapped
    checked = 0
    for index in env.arm.source.usable:
        if env.arm.source.classified[index].status != "cell":
            continue
        _, info = env.reset(seed=0, options={"index": index})
        rule, table = info["label"], info["sample"].structure.table
        value = round(table.cell(rule["row"], rule["series"]) * 1.05 + 10.0 ** -table.decimals, table.decimals)
        _, _, _, _, info = env.step({"op": "set_cell", "row": rule["row"], "series": rule["series"], "value": value})
        if info["valid"]:
            assert info["answer"] == format_number(value)
            checked += 1
        elif (table.part_of_whole and ("at most 100%" in info["error"]["message"]
                                       or "keep them at 100%" in info["error"]["message"])) or (
                table.totals and "holds the sum of the others" in info["error"]["message"]):
            # shares of a whole may not add up past it, or away from it; a total follows its parts
            assert info["error"]["code"] == "bad_value"
        elif "outside what this table's values can be" in info["error"]["message"] or info["error"]["code"] == "step":
            # a real quantity stays near what it is (an ACSI score of 70-80 does not fall to 32), and a
            # time series moves from one period to the next as far as it ever does
            assert info["error"]["code"] in ("bad_value", "step")
        else:
            assert info["error"]["code"] in ("unreadable", "near_tie", "overlap", "clipped",
                                             "chart_type"), info["error"]
        if checked == 5:
            break
    assert checked == 5


def test_config_errors_say_what_to_change():
    with pytest.raises(ValueError, match=r"expected k to be an integer in \[1, 4096\], got 0"):
        gym.make("vicogym/Chart-v0", k=0)
    with pytest.raises(ValueError, match=r"expected max_question_chars to be an integer in \[64, 65536\], got 1"):
        gym.make("vicogym/Chart-v0", max_question_chars=1)
    with pytest.raises(SourceError, match="expected source 'procedural' or a ChartQA folder"):
        gym.make("vicogym/Chart-v0", source="/no/such/folder")
    expected = ("expected actor name in \\['openai', 'simulated', 'transformers'\\] or a spec 'openai:MODEL@URL', "
                "got 'gpt'")
    with pytest.raises(ValueError, match=expected):
        gym.make("vicogym/Chart-v0", actor="gpt")


def test_a_custom_actor_object_plugs_in():
    class Oracle:
        def answer(self, image, question, k, *, rng, context):
            assert image.ndim == 3 and isinstance(question, str)
            return [context["answer"]] * k

    env = gym.make("vicogym/Chart-v0", actor=Oracle(), k=3)
    _, info = env.reset(seed=0)
    assert info["pass_rate"] == 1.0


def test_a_legend_set_over_the_marks_is_drawn_where_it_hides_none():
    table = Table("Year", ("2019", "2020", "2021"), ("North", "South"), ((10.0, 12.0), (20.0, 22.0), (45.0, 46.0)))
    env = gym.make("vicogym/Chart-v0", **FAST).unwrapped
    env.reset(seed=0)
    structure = ChartStructure(table, ChartSpec(chart_type="grouped_bar"))
    _, render = env._render(structure)
    assert occluded_marks(render.facts, "grouped_bar") == []
    env.sample = replace(env.sample, structure=structure, label_rule=program_rule({"op": "count_rows"}), answer="3",
                         image=render.image)
    _, reward, _, _, info = env.step({"op": "set_style", "legend": "upper left"})
    assert info["valid"]
    _, reward, _, _, info = env.step({"op": "set_style", "legend": "upper right"})  # over the 2021 bars
    assert info["valid"] and env.sample.structure.spec.legend == "upper right"
    _, render = env._render(env.sample.structure)
    assert render.facts.facts["legend_position"] == "upper left" and occluded_marks(render.facts, "grouped_bar") == []


def test_templates_and_max_tries_are_honoured():
    env = gym.make("vicogym/Chart-v0", templates=["lookup", "argmax"], **FAST).unwrapped
    for seed in range(12):
        _, info = env.reset(seed=seed)
        assert info["label"]["program"]["template"] in ("lookup", "argmax")
    # a single-series template that needs two series: every procedural table is tried, then a typed error
    narrow = gym.make("vicogym/Chart-v0", templates=["row_argmax"], max_tries=1, **FAST).unwrapped
    outcomes = set()
    for seed in range(8):
        try:
            narrow.reset(seed=seed)
            outcomes.add("ok")
        except GenerationError as exc:
            assert str(exc).startswith(("no procedural chart seed with an unambiguous question in 1 tries",
                                        "no answerable seed in 1 draws"))
            outcomes.add("error")
    assert outcomes == {"ok", "error"}
    with pytest.raises(ValueError, match="a ChartQA source brings its own questions"):
        gym.make("vicogym/Chart-v0", templates=["lookup"], source="/data/chartqa")
    with pytest.raises(ValueError, match=r"expected template ids in \["):
        gym.make("vicogym/Chart-v0", templates=["lookups"])


def test_sample_edit_raises_when_no_edit_is_found():
    env = gym.make("vicogym/Chart-v0", max_tries=3, **FAST).unwrapped
    _, info = env.reset(seed=0)
    structure = info["sample"].structure
    # a rule that names a row the table lacks: no edit can give it an answer
    broken = program_rule({"op": "lookup", "row": "no such row", "series": structure.table.series[0]})
    with pytest.raises(GenerationError, match=r"no valid chart edit in 3 tries \(last rejection: \["):
        env.arm.sample_edit(structure, broken, np.random.default_rng(0))


def test_chartqa_index_option_is_checked(chartqa):
    env = gym.make("vicogym/Chart-v0", source=str(chartqa), **FAST)
    with pytest.raises(ValueError, match="expected a record index in \\[0, 323\\), got 999"):
        env.reset(seed=0, options={"index": 999})
    with pytest.raises(ValueError, match="expected options\\['index'\\] to be a non-negative integer, got 'a'"):
        env.reset(seed=0, options={"index": "a"})
    with pytest.raises(ValueError, match="the procedural source has none"):
        gym.make("vicogym/Chart-v0").reset(seed=0, options={"index": 1})


def test_an_edit_that_changes_nothing_is_refused():
    env = gym.make("vicogym/Chart-v0", **FAST).unwrapped
    obs, info = env.reset(seed=2)
    spec = info["sample"].structure.spec
    for edit in ({"op": "set_style", "gridlines": spec.gridlines}, {"replace": json.loads(obs["structure"])}):
        _, reward, _, _, info = env.step(edit)
        assert reward == -1.0 and info["error"]["code"] == "no_change", info["error"]


@pytest.mark.parametrize("label", ["bad\x00label", "tab\there", "\ud800x"])
def test_unprintable_labels_are_refused_before_rendering(label):
    env = gym.make("vicogym/Chart-v0", **FAST).unwrapped
    _, info = env.reset(seed=0)
    row = info["sample"].structure.table.rows[0]
    for edit in ({"op": "set_style", "title": label}, {"op": "rename_row", "row": row, "to": label}):
        _, _, _, _, info = env.step(edit)
        assert info["error"]["code"] in ("bad_value", "anchor"), info["error"]



def test_an_edit_that_breaks_a_tables_steps_relations_or_order_leaves_the_episode_as_it_was():
    """A procedural episode over years whose table keeps one series above another: edits that
    put it below, move a year too far or shuffle the years are refused, the episode unchanged."""
    env = gym.make("vicogym/Chart-v0", **FAST)
    for seed in range(200):
        obs, _info = env.reset(seed=seed)
        table = env.unwrapped.sample.structure.table
        if table.max_step is not None and table.above:
            break
    else:
        raise AssertionError("no procedural episode over years with a series above another in 200 seeds")
    upper, lower = table.above[0]
    row = table.rows[1]
    j = table.series.index(lower)
    low_value, neighbour = table.cell(row, lower), table.values[0][j]
    too_far = round(max(table.bounds[0], neighbour - 2.5 * table.step_allowed(neighbour) - 1), table.decimals)
    for edit, code in (({"op": "set_cell", "row": row, "series": upper, "value": round(low_value * 0.5, 1)},
                        "relation"),
                       ({"op": "set_cell", "row": row, "series": lower, "value": too_far}, "step"),
                       ({"op": "reorder_rows", "order": list(reversed(table.rows))}, "order")):
        before = (obs["structure"], env.unwrapped.sample)
        obs, _reward, _terminated, _truncated, info = env.step(edit)
        assert info["error"]["code"] == code, (edit, info["error"])
        assert (obs["structure"], env.unwrapped.sample) == before
        if info.get("truncated") or _truncated:
            break
