"""The geometry arm's seed source: procedural problems at the level and presentation drawn,
with every answer computed and every needed given shown; problems files checked at load."""

from __future__ import annotations

import itertools
import json
import math
from pathlib import Path

import numpy as np
import pytest

from vicogym.errors import GenerationError
from vicogym.programs.geometry import (
    FAMILIES,
    needed_givens,
    question_text,
    reasoning_steps,
    relabel,
    unstated,
)
from vicogym.sources.geometry import (
    LEVELS,
    PRESENTATIONS,
    FileSource,
    ProceduralSource,
    make_source,
)
from vicogym.structures.geometry import Figure, givens, solve

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = REPO / "docs" / "geometry_problems.json"
RUN = 300


@pytest.fixture(scope="module")
def run():
    """A run of procedural problems: (episode, level drawn, presentation drawn, problem)."""
    source = ProceduralSource()
    rng = np.random.default_rng(2026)
    out = []
    for episode in range(RUN):
        level = LEVELS[episode % len(LEVELS)]
        presentation = PRESENTATIONS[(episode // len(LEVELS)) % len(PRESENTATIONS)]
        out.append((episode, level, presentation, source.draw(rng, episode)))
    return out


def test_every_problem_keeps_its_level_and_shows_what_it_needs(run):
    seen = set()
    for episode, level, presentation, problem in run[:200]:
        figure, rule = problem.figure, problem.rule
        seen.add((level, presentation))
        where = f"episode {episode} ({problem.source_id})"
        answer = relabel(figure, rule)
        assert answer, where
        assert reasoning_steps(rule, figure) == level, where
        assert problem.level == level and problem.presentation == presentation, where
        assert problem.source_id.startswith(f"geometry-L{level}-{rule['kind']}-"), where
        solved = solve(figure)
        assert unstated(rule, figure, solved) == [], where
        assert question_text(figure, rule) == rule["question"], where
        assert len(rule["question"]) <= 900, where
        needed = needed_givens(rule, figure, solved)
        order = [g.key for g in givens(figure)]
        if presentation == "diagram":
            assert rule["text"] == [], where
            assert needed <= set(figure.diagram), where
        elif presentation == "text":
            assert not needed & set(figure.diagram), where
            assert rule["text"] == [k for k in order if k in needed], where
        else:
            assert rule["text"] == [k for k in order if k in needed], where
            assert needed <= set(figure.diagram), where
        # the figure is valid as JSON gives it back
        assert Figure.from_dict(json.loads(json.dumps(figure.to_dict()))) == figure, where
        assert "." not in answer, f"{where}: the answer {answer} has no short exact form"
    assert seen == set(itertools.product(LEVELS, PRESENTATIONS))


def test_figures_are_legible(run):
    """No two points closer than 1/12 of the figure's extent, none nearer a drawn segment it
    is not on than 1/24; no angle under 10 degrees between two drawn segments that share an
    endpoint."""
    for episode, _, _, problem in run[:200]:
        solved = solve(problem.figure)
        pts = solved.floats()
        xs = [p[0] for p in pts.values()]
        ys = [p[1] for p in pts.values()]
        for centre, r2 in solved.circles.values():
            r = math.sqrt(r2.to_float())
            xs += [pts[centre][0] - r, pts[centre][0] + r]
            ys += [pts[centre][1] - r, pts[centre][1] + r]
        extent = max(max(xs) - min(xs), max(ys) - min(ys))
        for p, q in itertools.combinations(pts, 2):
            assert math.dist(pts[p], pts[q]) >= extent / 12, f"episode {episode}: {p} and {q}"
        segments = [e[1:] for e in problem.figure.draw if e[0] == "segment"]
        for (a, b), n in itertools.product(segments, pts):  # no label sits on a line it is not on
            ax, ay, bx, by = (*pts[a], *pts[b])
            t = ((pts[n][0] - ax) * (bx - ax) + (pts[n][1] - ay) * (by - ay)) / ((bx - ax) ** 2 + (by - ay) ** 2)
            gap = math.dist(pts[n], (ax + min(1, max(0, t)) * (bx - ax), ay + min(1, max(0, t)) * (by - ay)))
            assert gap < 1e-9 * extent or gap >= extent / 24, f"episode {episode}: {n} by {a}{b}"
        for s, t in itertools.combinations(segments, 2):
            shared = set(s) & set(t)
            if len(shared) != 1:
                continue
            (y,) = shared
            x, z = (n for n in (*s, *t) if n != y)
            a = math.atan2(pts[x][1] - pts[y][1], pts[x][0] - pts[y][0])
            b = math.atan2(pts[z][1] - pts[y][1], pts[z][0] - pts[y][0])
            turn = abs(math.degrees((a - b + math.pi) % (2 * math.pi) - math.pi))
            assert turn >= 10, f"episode {episode}: angle {x}{y}{z} is {turn:.1f} degrees"


def test_every_family_appears_and_relations_answer_both_ways(run):
    kinds = {problem.rule["kind"] for *_, problem in run}
    assert kinds == set(FAMILIES)
    relations = {relabel(p.figure, p.rule) for *_, p in run if p.rule["kind"] == "relation"}
    assert relations == {"Yes", "No"}
    names = {n for *_, p in run for n in p.figure.point_names()}
    assert len(names) > 15  # not always A, B, C


def test_same_seed_same_problem():
    source = ProceduralSource()
    first, second = np.random.default_rng(7), np.random.default_rng(7)
    for episode in range(12):
        a, b = source.draw(first, episode), source.draw(second, episode)
        assert a.figure.to_dict() == b.figure.to_dict()
        assert a.rule == b.rule and a.source_id == b.source_id
    other = source.draw(np.random.default_rng(8), 0)
    again = source.draw(np.random.default_rng(7), 0)
    assert (other.figure.to_dict(), other.rule) != (again.figure.to_dict(), again.rule)


def test_families_and_levels_are_kept():
    source = ProceduralSource(levels=(3,), families=("arc", "count"), presentations=("diagram",))
    rng = np.random.default_rng(3)
    for episode in range(6):
        problem = source.draw(rng, episode)
        assert problem.rule["kind"] in ("arc", "count")
        assert reasoning_steps(problem.rule, problem.figure) == 3
        assert problem.rule["text"] == []


def test_bad_settings_say_what_to_change():
    with pytest.raises(ValueError, match="level 1"):
        ProceduralSource(levels=(1,), families=("arc",))
    with pytest.raises(ValueError, match="levels"):
        ProceduralSource(levels=(6,))
    with pytest.raises(ValueError, match="families"):
        ProceduralSource(families=("volume",))
    with pytest.raises(ValueError, match="presentations"):
        ProceduralSource(presentations=("audio",))


def test_running_out_of_tries_names_level_and_family():
    source = ProceduralSource(levels=(5,), families=("arc",), max_tries=1)
    errors = []
    for seed in range(12):
        try:
            source.draw(np.random.default_rng(seed), 0)
        except GenerationError as exc:
            errors.append(str(exc))
    assert errors and all("level 5" in e and "arc" in e for e in errors)


# -- files ------------------------------------------------------------------------------------
def _entry(problem) -> dict:
    rule = problem.rule
    return {"figure": problem.figure.to_dict(), "question": {"kind": rule["kind"], "target": rule["target"],
                                                             "text": rule["text"]}}


def test_a_file_round_trips(run, tmp_path):
    problems = [p for *_, p in run[:12]]
    path = tmp_path / "mine.json"
    path.write_text(json.dumps({"problems": [_entry(p) for p in problems]}), encoding="utf-8")
    source = make_source(str(path), LEVELS, None, PRESENTATIONS, 64)
    assert isinstance(source, FileSource) and len(source) == 12
    for i, p in enumerate(problems):
        loaded = source.problem(i)
        assert loaded.figure == p.figure and loaded.rule == p.rule
        assert loaded.source_id == f"mine:{i}"
    drawn = source.draw(np.random.default_rng(0))
    assert drawn in source.problems


def test_a_file_never_takes_the_question_text(run, tmp_path):
    entry = _entry(run[0][3])
    entry["question"]["question"] = "What is the answer? It is 7."
    path = tmp_path / "worded.json"
    path.write_text(json.dumps({"problems": [entry]}), encoding="utf-8")
    assert FileSource(path).problem(0).rule["question"] == run[0][3].rule["question"]


def test_a_hidden_given_is_refused_with_its_index(run, tmp_path):
    good = [_entry(p) for *_, p in run[:3]]
    bad = next(_entry(p) for *_, p in run if p.rule["text"])
    bad["question"]["text"] = []
    bad["figure"]["diagram"] = []
    path = tmp_path / "hidden.json"
    path.write_text(json.dumps({"problems": [*good, bad]}), encoding="utf-8")
    with pytest.raises(ValueError, match=r"problems\[3\].*needs"):
        FileSource(path)


def test_a_text_key_that_is_no_given_is_refused(run, tmp_path):
    entries = [_entry(p) for *_, p in run[:2]]
    entries[1]["question"]["text"] = ["length:Q,Q"]
    path = tmp_path / "stray.json"
    path.write_text(json.dumps({"problems": entries}), encoding="utf-8")
    with pytest.raises(ValueError, match=r"problems\[1\].*length:Q,Q.*not givens"):
        FileSource(path)


def test_a_malformed_step_is_refused_with_its_index(run, tmp_path):
    entries = [_entry(p) for *_, p in run[:2]]
    entries[1]["figure"]["steps"][1]["length"] = "-4"
    path = tmp_path / "malformed.json"
    path.write_text(json.dumps({"problems": entries}), encoding="utf-8")
    with pytest.raises(ValueError, match=r"problems\[1\].*steps\[1\]"):
        FileSource(path)
    entries[1]["figure"]["steps"][1] = {"op": "polar", "point": "B"}
    path.write_text(json.dumps({"problems": entries}), encoding="utf-8")
    with pytest.raises(ValueError, match=r"problems\[1\].*missing"):
        FileSource(path)


def _circle_entry() -> dict:
    return {"figure": {"steps": [{"op": "origin", "point": "O"},
                                 {"op": "polar", "point": "A", "from": "O", "length": "3", "angle": "0", "ref": None},
                                 {"op": "circle", "circle": "w", "center": "O", "through": "A"},
                                 {"op": "on_circle", "point": "B", "circle": "w", "ref": "A", "angle": "60"}],
                       "draw": [["circle", "w"], ["segment", "A", "B"]], "diagram": []},
            "question": {"kind": "length", "target": {"of": ["A", "B"]},
                         "text": ["length:O,A", "angle:A,O,B"]}}


@pytest.mark.parametrize("spoil", ["entry", "kind", "target", "order", "ref", "text"])
def test_every_malformed_problem_is_a_value_error_naming_it(tmp_path, spoil):
    entry = _circle_entry()
    if spoil == "entry":
        entry = [entry]
    elif spoil == "kind":
        entry["question"]["kind"] = "volume"
    elif spoil == "target":
        entry["question"]["target"] = {"of": 5}
    elif spoil == "order":
        entry["question"] = {"kind": "choice", "target": {"inner": entry["question"], "distractors": ["double"],
                                                          "order": 1.5}, "text": entry["question"]["text"]}
    elif spoil == "ref":
        del entry["figure"]["steps"][3]["ref"]
    else:
        entry["question"]["text"] = "length:O,A"
    path = tmp_path / "spoilt.json"
    path.write_text(json.dumps({"problems": [_circle_entry(), entry]}), encoding="utf-8")
    with pytest.raises(ValueError, match=r"problems\[1\]"):
        FileSource(path)


def test_the_unspoilt_problem_loads(tmp_path):
    path = tmp_path / "circle.json"
    path.write_text(json.dumps({"problems": [_circle_entry()]}), encoding="utf-8")
    problem = FileSource(path).problem(0)
    assert relabel(problem.figure, problem.rule) == "3"
    assert problem.source_id == "circle:0"
    for index in (1, -1):
        with pytest.raises(ValueError, match="problems 0 to 0"):
            FileSource(path).problem(index)


def test_a_missing_file_is_named(tmp_path):
    missing = tmp_path / "nowhere.json"
    with pytest.raises(FileNotFoundError, match="nowhere.json"):
        make_source(str(missing), LEVELS, None, PRESENTATIONS, 64)
    with pytest.raises(FileNotFoundError, match="nowhere.json"):
        FileSource(missing)
    assert isinstance(make_source("procedural", (1, 2), ("angle",), ("text",), 8), ProceduralSource)


def test_the_example_file_loads():
    source = FileSource(EXAMPLES)
    answers = [relabel(p.figure, p.rule) for p in source.problems]
    assert answers == ["75", "12", "6", "4π"]
    kinds = [p.rule["kind"] for p in source.problems]
    assert kinds[:3] == ["angle", "length", "count"]
    assert "tangent" in source.problem(1).rule["question"]
