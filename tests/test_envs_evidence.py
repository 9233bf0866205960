"""The evidence environment's protocol, budgets, errors, geometry, executors, traces and
replay, on a toy family (the real families have their own test files)."""

from __future__ import annotations

import json

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env
from hypothesis import given, settings
from hypothesis import strategies as st

import vicogym  # noqa: F401
from vicogym.errors import InvalidEdit, RunError
from vicogym.evidence import runs
from vicogym.evidence.episodes import play, trace_line
from vicogym.evidence.executors import SimulatedExecutor, extract_action, make_executor, read_probability
from vicogym.evidence.protocol import ERROR_CODES, parse_action
from vicogym.evidence.skills import Skill, directives, load_skill
from vicogym.renderers.evidence import RING_COLORS, RING_RADIUS
from vicogym.structures.evidence import LEGIBLE_TEXT_PX, Note, Unit, crop_view, region_to_unit, shown_px, whole_view


@pytest.fixture
def toy(monkeypatch):
    """The toy family, registered for this test only (other test files iterate the
    package's own families)."""
    import vicogym.sources.evidence as source

    monkeypatch.setitem(source.FAMILIES, "toy", "helpers.evidence_toy")


@pytest.fixture
def make(tmp_path, toy):
    def build(units=1, **kwargs):
        kwargs.setdefault("view_size", 256)
        kwargs.setdefault("max_images", 4)
        return gym.make("vicogym/Evidence-v0", tasks="toy",
                        family_settings={"toy": {"folder": str(tmp_path), "units": units}}, **kwargs)
    return build


def _zoom_onto(env, pad=0.02):
    e = env.unwrapped.task.evidence[0]
    u = env.unwrapped.task.units[e.unit]
    box = [max(0, e.box[0] / u.width - pad), max(0, e.box[1] / u.height - pad),
           min(1, e.box[2] / u.width + pad), min(1, e.box[3] / u.height + pad)]
    return json.dumps({"action": "zoom", "image": env.unwrapped.views[-1].id, "regions": [box]})


def test_check_env_and_both_vector_modes(make):
    env = make()
    check_env(env.unwrapped, skip_render_check=True)
    for mode in ("sync", "async"):
        vec = gym.make_vec("vicogym/Evidence-v0", num_envs=2, vectorization_mode=mode, tasks="toy",
                           family_settings=env.unwrapped.config.family_settings, view_size=256, max_images=2)
        obs, _ = vec.reset(seed=3)
        assert obs["images"].shape == (2, 2, 256, 256, 3)
        assert tuple(obs["question"])[0].startswith("Which three-digit")
        obs, reward, term, trunc, _ = vec.step(['{"action": "answer", "answer": "1"}'] * 2)
        assert list(term) == [True, True] and list(reward) == [0.0, 0.0]
        vec.close()


def test_the_default_view_hides_the_number_and_a_zoom_onto_it_shows_it(make):
    env = make()
    obs, info = env.reset(seed=0)
    assert not info["support"]["all"] and info["support"]["items"][0]["shown_px"] < 7.0
    obs, _, _, _, info = env.step(_zoom_onto(env))
    assert "error" not in info and info["support"]["all"]
    assert obs["n_images"] == 2 and obs["geometry"][1][1] == 0 and obs["geometry"][1][6] == 1.0  # unit 0, scale 1
    _, reward, terminated, _, info = env.step({"action": "answer", "answer": env.unwrapped.task.answer})
    assert terminated and reward == 1.0 and info["outcome"] == "answered"


def _state(env):
    u = env.unwrapped
    return ([v.to_dict() for v in u.views], list(u.notes), u.crops, {k: v.copy() for k, v in u.pixels.items()})


BAD = {
    "malformed": ["not json", "[1, 2]", 42],
    "unknown_action": ['{"action": "look"}', '{"regions": []}'],
    "bad_field": ['{"action": "zoom", "image": 0}', '{"action": "view", "units": "0"}',
                  '{"action": "answer", "answer": "1", "why": 1}', '{"action": "zoom", "image": -1, "regions": []}'],
    "bad_value": ['{"action": "view", "units": [0, 0]}', '{"action": "compose", "units": [0], "cols": 99}'],
    "unknown_image": ['{"action": "zoom", "image": 7, "regions": [[0, 0, 1, 1]]}'],
    "unknown_unit": ['{"action": "view", "units": [5]}', '{"action": "compose", "units": [0, 9]}'],
    "bad_region": ['{"action": "zoom", "image": 0, "regions": [[0.5, 0.5, 0.2, 0.9]]}',
                   '{"action": "zoom", "image": 0, "regions": [[0, 0, 1.5, 1]]}',
                   '{"action": "note", "notes": [{"at": [2, 0], "image": 0}]}'],
    "too_many_regions": ['{"action": "zoom", "image": 0, "regions": [[0,0,1,1],[0,0,1,1],[0,0,1,1]]}'],
}


@pytest.mark.parametrize("code,action", [(c, a) for c, actions in BAD.items() for a in actions])
def test_an_invalid_action_uses_a_step_and_changes_nothing_else(make, code, action):
    env = make()
    env.reset(seed=1)
    before = _state(env)
    _, reward, terminated, truncated, info = env.step(action)
    assert info["error"]["code"] == code and info["error"]["message"]
    assert reward == 0.0 and not terminated and not truncated and info["step"] == 1
    after = _state(env)
    assert after[:3] == before[:3] and all(np.array_equal(after[3][k], before[3][k]) for k in before[3])


def test_budgets_refuse_what_passes_them(make):
    env = make(max_crops=1, max_notes=1, max_images=2, max_steps=12)
    env.reset(seed=2)
    whole = '{"action": "zoom", "image": 0, "regions": [[0, 0, 0.5, 0.5]]}'
    assert "error" not in env.step(whole)[4]
    assert env.step(whole)[4]["error"]["code"] == "crop_budget"
    note = '{"action": "note", "notes": [{"at": [0.5, 0.5], "image": 1, "text": "here"}]}'
    assert "error" not in env.step(note)[4]
    assert env.step(note)[4]["error"]["code"] == "note_budget"
    many = make(units=3, max_images=2)
    many.reset(seed=0)
    assert many.step('{"action": "view", "units": [0, 1, 2]}')[4]["error"]["code"] == "image_budget"
    assert "error" not in many.step('{"action": "compose", "units": [0, 1, 2], "cols": 3}')[4]
    tested = set(BAD) | {"crop_budget", "note_budget", "image_budget"}
    assert set(ERROR_CODES) <= tested


def test_running_out_of_steps_truncates_with_zero(make):
    env = make(max_steps=3)
    env.reset(seed=0)
    for _k in range(3):
        _, reward, terminated, truncated, info = env.step('{"action": "view", "units": [0]}')
    assert truncated and not terminated and reward == 0.0 and info["outcome"] == "out_of_steps"
    assert info["score"] == 0.0
    # acting after the end: a typed error that changes nothing, not even the step count
    history, steps = list(env.unwrapped.history), env.unwrapped.steps
    _, reward, terminated, truncated, info = env.step('{"action": "answer", "answer": "1"}')
    assert info["error"]["code"] == "episode_over" and reward == 0.0 and truncated and not terminated
    assert "score" not in info and env.unwrapped.history == history and env.unwrapped.steps == steps


def test_only_the_newest_images_are_sent_and_zoomable(make):
    env = make(max_images=2)
    env.reset(seed=0)
    for _ in range(3):
        env.step('{"action": "view", "units": [0]}')
    obs = env.unwrapped._observation()
    assert obs["n_images"] == 2 and list(obs["geometry"][:, 0]) == [2.0, 3.0]
    info = env.step('{"action": "zoom", "image": 0, "regions": [[0, 0, 1, 1]]}')[4]
    assert info["error"]["code"] == "unknown_image" and "[2, 3]" in info["error"]["message"]


def test_a_sheet_labels_its_units_and_a_zoom_on_it_lands_in_the_right_unit(make):
    env = make(units=4, view_size=256)
    _, info = env.reset(seed=5)
    sheet = env.unwrapped.views[0]
    assert [t.unit for t in sheet.tiles] == [0, 1, 2, 3] and sheet.tiles[2].label.startswith("Unit 2")
    x0, y0, x1, y1 = sheet.tiles[3].rect
    region = [(x0 + 2) / sheet.width, (y0 + 2) / sheet.height, (x1 - 2) / sheet.width, (y1 - 2) / sheet.height]
    info = env.step(json.dumps({"action": "zoom", "image": 0, "regions": [region]}))[4]
    assert info["views"][-1]["tiles"][0]["unit"] == 3


# -- geometry ----------------------------------------------------------------------------------
fractions = st.tuples(st.floats(0, 0.8), st.floats(0, 0.8), st.floats(0.05, 0.2), st.floats(0.05, 0.2))


@settings(max_examples=200, deadline=None)
@given(w=st.integers(200, 3000), h=st.integers(200, 3000), side=st.integers(128, 1024), a=fractions, b=fractions)
def test_a_zoom_inside_a_zoom_maps_back_to_the_right_unit_pixels(w, h, side, a, b):
    unit = Unit("form", w, h, {}, max_scale=4.0)
    first = whole_view(0, 0, unit, side)
    r1 = (a[0], a[1], min(1.0, a[0] + a[2]), min(1.0, a[1] + a[3]))
    _, crop1 = region_to_unit(first, r1)
    assert crop1[0] == pytest.approx(r1[0] * w, abs=1e-6) and crop1[3] == pytest.approx(r1[3] * h, abs=1e-6)
    second = crop_view(1, 0, unit, crop1, side)
    snapped = second.tiles[0].crop
    assert snapped[0] <= crop1[0] + 1e-6 and snapped[2] >= crop1[2] - 1e-6 and snapped[2] - crop1[2] < 1
    r2 = (b[0], b[1], min(1.0, b[0] + b[2]), min(1.0, b[1] + b[3]))
    _, crop2 = region_to_unit(second, r2)
    sw, sh = snapped[2] - snapped[0], snapped[3] - snapped[1]
    assert crop2[0] == pytest.approx(snapped[0] + r2[0] * sw, abs=1e-6)
    assert crop2[3] == pytest.approx(snapped[1] + r2[3] * sh, abs=1e-6)
    tile = second.tiles[0]
    for x, y in ((crop2[0], crop2[1]), (crop2[2], crop2[3])):
        vx, vy = tile.to_view(x, y)
        assert tile.to_unit(vx, vy) == pytest.approx((x, y), abs=1e-6)


@settings(max_examples=100, deadline=None)
@given(fx=st.floats(0.05, 0.95), fy=st.floats(0.05, 0.95), side=st.integers(160, 512), zoom=st.floats(0.1, 0.5))
def test_notes_land_where_placed_at_every_scale(fx, fy, side, zoom):
    unit = Unit("image", 800, 600, {}, max_scale=4.0)
    first = whole_view(0, 0, unit, side)
    (_, point) = (0, first.tiles[0].to_unit(fx * first.width, fy * first.height))
    note = Note(2, 0, point, "here")
    crop = (max(0.0, point[0] - zoom * 400), max(0.0, point[1] - zoom * 300),
            min(800.0, point[0] + zoom * 400), min(600.0, point[1] + zoom * 300))
    view = crop_view(1, 0, unit, crop, side, [note])
    assert view.notes == (note,)
    x, y = view.tiles[0].to_view(*point)
    scale = view.tiles[0].scale
    assert x == pytest.approx((point[0] - view.tiles[0].crop[0]) * view.width / (view.tiles[0].crop[2] -
                                                                                    view.tiles[0].crop[0]))
    assert 0 <= x <= view.width and 0 <= y <= view.height and scale > 0
    from vicogym.renderers.evidence import burn_notes

    blank = np.full((view.height, view.width, 3), 255, np.uint8)
    burnt = burn_notes(blank, view)
    ring = np.all(burnt == RING_COLORS[2], axis=-1)
    cx, cy = int(round(x)), int(round(y))
    assert not ring[cy, cx]  # the point itself stays visible inside its ring
    for dx, dy in ((RING_RADIUS, 0), (-RING_RADIUS, 0), (0, RING_RADIUS), (0, -RING_RADIUS)):
        px, py = cx + dx, cy + dy
        if 2 <= px < view.width - 2 and 2 <= py < view.height - 2:
            assert ring[py - 2:py + 3, px - 2:px + 3].any(), (dx, dy)


def test_evidence_is_supported_only_whole_and_large_enough():
    from vicogym.structures.evidence import Evidence

    unit = Unit("form", 1000, 1000, {})
    e = Evidence(0, (100, 100, 200, 110), 10.0, 7.0)
    assert shown_px(e, whole_view(0, 0, unit, 500)) == pytest.approx(5.0)
    assert shown_px(e, crop_view(1, 0, unit, (90, 90, 250, 130), 500)) >= 7.0
    assert shown_px(e, crop_view(2, 0, unit, (150, 90, 250, 130), 500)) == 0.0  # half the box cut off


# -- executors, traces, replay -------------------------------------------------------------------
def test_the_simulated_reader_rises_with_the_pixels_it_was_sent():
    text = LEGIBLE_TEXT_PX  # the measured curve of chart text: half the words read at its legible size
    assert read_probability(0, text) == 0.0
    assert read_probability(0.5 * text, text) < 0.1 < read_probability(text, text) == pytest.approx(0.5)
    assert 0.5 < 0.9 < read_probability(1.5 * text, text) < read_probability(2 * text, text)


def test_the_oracle_beats_direct_on_small_print(make, tmp_path):
    scores = {}
    for spec in ("direct", "simulated:oracle", "simulated:largest"):
        env = make(executor=spec)
        scores[spec] = np.mean([play(env, make_executor(spec), seed=s)["score"] for s in range(12)])
    assert scores["simulated:oracle"] >= 0.9 > 0.3 > scores["direct"]


def test_skill_directives_change_what_the_simulated_executor_does(make):
    env = make()
    plain = play(env, make_executor("simulated"), seed=4)
    skilled = play(env, make_executor("simulated"), seed=4, skill=Skill("Zoom to the named field before answering."))
    assert [s["action"]["action"] for s in plain["steps"]] == ["answer"]
    assert [s["action"]["action"] for s in skilled["steps"]][0] == "zoom"
    assert directives("Please COMPOSE the frames, then answer in the required format.") == {"compose_frames",
                                                                                          "answer_format"}


def test_skill_folders_load_or_say_what_is_wrong(tmp_path):
    (tmp_path / "reader.md").write_text("Zoom into the evidence.")
    (tmp_path / "answer_contract.md").write_text("Note each option, then answer.")
    assert load_skill(tmp_path).directives == {"zoom_evidence", "note_options"}
    (tmp_path / "interface.json").write_text('{"select": {"attach": [{"pick": "fly"}]}}')
    with pytest.raises(RunError, match="select/attach/0/pick"):
        load_skill(tmp_path)
    (tmp_path / "interface.json").write_text('{"select": ')
    with pytest.raises(RunError, match="is not JSON"):
        load_skill(tmp_path)
    with pytest.raises(RunError, match="reader.md"):
        load_skill(tmp_path / "nowhere")


def test_a_reply_s_json_action_is_found_in_prose():
    assert json.loads(extract_action('I will zoom.\n```json\n{"action": "zoom", "image": 0, "regions": [[0,0,1,1]]}'
                                     '\n```')) ["action"] == "zoom"
    assert extract_action("no action here") == "no action here"
    with pytest.raises(InvalidEdit, match="not JSON"):
        parse_action(extract_action("no action here"))


def test_the_openai_executor_sends_images_and_reads_one_action(make, serve):
    server = serve(("ok", ['Let me look closer. {"action": "zoom", "image": 0, "regions": [[0.1, 0.1, 0.5, 0.5]]}']),
                   ("ok", ['{"action": "answer", "answer": "123"}']))
    env = make(executor=f"openai:vlm@{server.url}")
    trace = env.unwrapped.play(seed=0, skill=Skill("Zoom before answering."))
    assert [s["action"]["action"] for s in trace["steps"]] == ["zoom", "answer"]
    first, second = (r["body"] for r in server.requests)
    assert first["temperature"] == 0.0
    parts = first["messages"][0]["content"]
    assert parts[0]["text"].startswith("Zoom before answering.") and "Question:" in parts[0]["text"]
    assert sum(p["type"] == "image_url" for p in parts) == 1
    assert sum(p["type"] == "image_url" for p in second["messages"][0]["content"]) == 2  # the zoom was sent
    assert "zoom" in second["messages"][0]["content"][0]["text"]  # the history


def test_a_reply_that_is_no_action_is_an_invalid_action(make, serve):
    server = serve(("ok", ["I cannot tell."]), ("ok", ['{"action": "answer", "answer": "5"}']))
    env = make(executor=f"openai:vlm@{server.url}")
    trace = env.unwrapped.play(seed=0)
    assert trace["steps"][0]["error"] == "malformed" and trace["outcome"] == "answered"


def test_same_seed_same_trace_and_a_run_resumes_with_the_same_bytes(make, tmp_path):
    env = make(executor="simulated:oracle")
    a = trace_line(play(env, make_executor("simulated:oracle"), seed=9))
    b = trace_line(play(make(executor="simulated:oracle"), make_executor("simulated:oracle"), seed=9))
    assert a == b
    kwargs = {"view_size": 256, "max_images": 2, "family_settings": {"toy": {"folder": str(tmp_path)}}}
    whole = runs.run_traces("toy", "simulated", tmp_path / "whole", n=5, seed=1, env_kwargs=kwargs,
                            episodes_per_shard=2)
    assert whole["complete"] and whole["counts"]["rows"] == 5
    cut = tmp_path / "cut"
    runs.run_traces("toy", "simulated", cut, n=5, seed=1, env_kwargs=kwargs, episodes_per_shard=2)
    (cut / "part-00001.parquet").unlink()  # as if killed while writing the second shard
    (cut / "part-00002.parquet").unlink()
    runs.run_traces("toy", "simulated", cut, n=5, seed=1, env_kwargs=kwargs, episodes_per_shard=2)
    for k in range(3):
        name = f"part-{k:05d}.parquet"
        assert (cut / name).read_bytes() == (tmp_path / "whole" / name).read_bytes()
    with pytest.raises(RunError, match="other settings"):
        runs.run_traces("toy", "simulated:oracle", cut, n=5, seed=1, env_kwargs=kwargs, episodes_per_shard=2)
    rows, problems, notes = runs.verify_run(cut)
    assert rows == 5 and problems == [] and notes == []


def test_replay_finds_a_view_or_a_score_that_was_changed(make, tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    kwargs = {"view_size": 256, "max_images": 2, "family_settings": {"toy": {"folder": str(tmp_path)}}}
    out = tmp_path / "run"
    runs.run_traces("toy", "simulated:oracle", out, n=2, seed=0, env_kwargs=kwargs, episodes_per_shard=2)
    path = out / "part-00000.parquet"
    rows = pq.read_table(path).to_pylist()
    trace = json.loads(rows[0]["trace"])
    trace["steps"][0]["views"][0]["tiles"][0]["crop"][0] += 3  # a view that was not the one sent
    rows[0]["trace"] = json.dumps(trace)
    trace = json.loads(rows[1]["trace"])
    trace["response"] = "not the answer"
    rows[1]["trace"] = json.dumps(trace)
    pq.write_table(pa.Table.from_pylist(rows, schema=pq.read_schema(path)), path)
    _, problems, _ = runs.verify_run(out)
    reasons = " | ".join(p for _, p in problems)
    assert "changed since it was written" in reasons and "rebuilt from the trace differs" in reasons
    assert "scores 0.0, the trace says 1.0" in reasons


def test_the_simulated_executor_fails_the_paper_s_ways(make):
    env = make(units=3, max_steps=12)
    env.unwrapped.source._families["toy"][1]["start"] = "first"  # the other units are not sent at the start
    kinds = set()
    for s in range(30):
        trace = play(env, SimulatedExecutor("skill"), seed=s)
        kinds.add(trace["failure"])
    assert {"missed_unit", "wrong_format"} <= kinds


# -- the command line ------------------------------------------------------------------------------
def test_the_command_line_runs_verifies_and_generates(tmp_path, toy):
    from typer.testing import CliRunner

    from vicogym.cli import app

    runner = CliRunner()
    family = json.dumps({"toy": {"folder": str(tmp_path)}})
    out = tmp_path / "traces"
    result = runner.invoke(app, ["evidence", "run", "toy", "--executor", "simulated:oracle", "--out", str(out),
                                 "--n", "3", "--set", f"family_settings={family}", "--set", "view_size=256",
                                 "--no-progress"])
    assert result.exit_code == 0, result.output
    assert "toy" in result.output and "1.000" in result.output
    result = runner.invoke(app, ["verify", str(out)])
    assert result.exit_code == 0 and "all 3 rows verified" in result.output, result.output
    tasks = tmp_path / "tasks"
    result = runner.invoke(app, ["generate", "vicogym/Evidence-v0", "--out", str(tasks), "--n", "2", "--set",
                                 "tasks=toy", "--set", f"family_settings={family}", "--no-progress"])
    assert result.exit_code == 0, result.output
    import pyarrow.parquet as pq

    rows = pq.read_table(tasks / "part-00000.parquet").to_pylist()
    assert len(rows) == 2 and rows[0]["units"][0]["bytes"][:4] == b"\x89PNG" and rows[0]["prompt"][0]["content"]
    assert json.loads(rows[0]["task"])["answer"] == rows[0]["answer"]
    result = runner.invoke(app, ["verify", str(tasks)])
    assert result.exit_code == 0 and "all 2 rows verified" in result.output, result.output
    for bad, message in ((["evidence", "run", "nosuch", "--out", str(tmp_path / "x")], "unknown task family"),
                         (["evidence", "run", "toy", "--executor", "gpt", "--out", str(tmp_path / "y"),
                           "--set", f"family_settings={family}"], "unknown executor"),
                         (["evidence", "run", "toy", "--n", "0", "--out", str(tmp_path / "z")], "--n"),
                         (["evidence", "run", "toy", "--skill", str(tmp_path), "--out", str(tmp_path / "w")],
                          "reader.md")):
        result = runner.invoke(app, bad)
        assert result.exit_code == 2 and message in result.output and "Traceback" not in result.output, result.output


@pytest.mark.parametrize("action", [
    '{"action": "zoom", "image": 0, "regions": [[0, 0, 1' + "0" * 400 + ', 1]]}',
    '{"action": "note", "notes": [{"at": [1' + "0" * 400 + ', 0.5], "image": 0}]}',
    '{"action": "zoom", "image": 1' + "0" * 400 + ', "regions": [[0, 0, 1, 1]]}',
    '{"action": "view", "units": [1' + "0" * 400 + ']}',
    '{"action": "zoom", "image": 0, "regions": [[0.2, 0.2, 0.2000000001, 0.6]]}',
])
def test_huge_numbers_and_slivers_get_a_short_error(make, action):
    env = make()
    env.reset(seed=0)
    info = env.step(action)[4]
    assert info["error"]["code"] in ("bad_region", "bad_field", "unknown_image", "unknown_unit")
    assert len(info["error"]["message"]) < 300 and len(env.unwrapped.views) == 1
