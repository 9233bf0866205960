import numpy as np
import pytest

from vicogym.policies import RandomRewriter, SimulatedActor, make_actor, plausible_wrong
from vicogym.answers import relaxed_accuracy


def _pass_rate(actor, difficulty, seed=0, k=400):
    answers = actor.answer(np.zeros((2, 2, 3), np.uint8), "q", k, rng=np.random.default_rng(seed),
                           context={"answer": "42", "difficulty": difficulty, "distractors": ["17", "Spain"]})
    return np.mean([relaxed_accuracy(a, "42") for a in answers])


def test_simulated_actor_is_deterministic_and_falls_with_difficulty():
    actor = SimulatedActor(skill=2.0)
    assert _pass_rate(actor, 1.0, seed=3) == _pass_rate(actor, 1.0, seed=3)
    rates = [_pass_rate(actor, d) for d in (0.0, 1.0, 2.0, 3.0, 4.0)]
    assert rates == sorted(rates, reverse=True)
    assert rates[2] == pytest.approx(0.5, abs=0.07)
    assert _pass_rate(SimulatedActor(skill=4.0), 2.0) > _pass_rate(actor, 2.0)


@pytest.mark.parametrize("truth", ["42", "0", "3.5", "Yes", "No", "Spain", "1327.7"])
def test_wrong_answers_are_plausible_and_scored_wrong(truth):
    rng = np.random.default_rng(0)
    for _ in range(50):
        wrong = plausible_wrong(truth, ["Spain", "Italy", "17", "42"], rng)
        assert relaxed_accuracy(wrong, truth) == 0.0
        assert wrong


def test_simulated_actor_needs_context():
    with pytest.raises(ValueError, match="needs context\\['answer'\\] and context\\['difficulty'\\]"):
        SimulatedActor().answer(np.zeros((1, 1, 3)), "q", 2, rng=np.random.default_rng(0), context={})


def test_make_actor_resolves_names_and_objects():
    assert make_actor({"name": "simulated", "skill": 1.0}) == SimulatedActor(skill=1.0)
    actor = SimulatedActor()
    assert make_actor(actor) is actor
    with pytest.raises(TypeError, match="expected an actor name"):
        make_actor(3)


def test_random_rewriter_stops_with_given_probability():
    rewriter = RandomRewriter(sampler=lambda obs, rng: {"op": "set_style", "title": "x"}, p_stop=0.5)
    rng = np.random.default_rng(0)
    stops = sum(rewriter.propose({}, rng) == {"ops": [{"op": "stop"}]} for _ in range(400))
    assert 150 < stops < 250
    with pytest.raises(ValueError, match="expected p_stop in \\[0, 1\\], got 2"):
        RandomRewriter(sampler=lambda o, r: {}, p_stop=2)
