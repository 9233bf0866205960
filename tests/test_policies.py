import numpy as np
import pytest

from vicogym.answers import relaxed_accuracy
from vicogym.policies import RandomRewriter, SimulatedActor, make_actor, plausible_wrong


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


class _HalfAtFour:
    """A scripted actor for the toy arm: every answer right below four squares, half of
    them at four, none above (so the pass rate of each count is known exactly)."""

    def answer(self, image, question, k, *, rng, context):
        n = int(context["answer"])
        right = k if n < 4 else k // 2 if n == 4 else 0
        return [context["answer"]] * right + ["0"] * (k - right)


def _toy_env(actor, **kwargs):
    import gymnasium as gym

    return gym.make("vicogym/Toy-v0", k=8, max_turns=6, actor=actor, **kwargs).unwrapped


def _reset_to(env, count):
    for seed in range(100):
        env.reset(seed=seed)
        if env.sample.structure.count == count:
            return
    raise AssertionError(f"no seed draws {count} squares")


def test_search_rewriter_moves_towards_the_zone_then_stays():
    from vicogym.policies import STOP, SearchRewriter

    env = _toy_env(_HalfAtFour())
    _reset_to(env, 3)
    rewriter = SearchRewriter.for_env(env, n=8, pool=1)
    rng = np.random.default_rng(0)
    edit = rewriter.propose({}, rng)
    assert edit == {"ops": [{"op": "add"}]}  # the only edit to a pass rate of 0.5
    env.step(edit)
    assert env.pass_rate == 0.5 and rewriter.propose({}, rng) == STOP
    # without a made sample to keep, or with staying switched off, it edits
    _reset_to(env, 4)
    assert rewriter.propose({}, rng) != STOP
    env.step({"ops": [{"op": "recolor", "color": "green" if env.sample.structure.color != "green" else "red"}]})
    assert SearchRewriter.for_env(env, n=8, pool=1, stay=False).propose({}, rng) != STOP


def test_preview_of_stop_probes_the_sample_again_and_commits_nothing():
    env = _toy_env({"name": "simulated", "skill": 1.6})
    _reset_to(env, 4)
    env.step({"ops": [{"op": "recolor", "color": "green" if env.sample.structure.color != "green" else "red"}]})
    state, committed = env.np_random.bit_generator.state, env.pass_rate
    rates = [env.preview({"ops": [{"op": "stop"}]}, np.random.default_rng(i), repeats=50)[0] for i in range(3)]
    assert len(set(rates)) > 1 and all(abs(r - 0.5) < 0.1 for r in rates)  # fresh probes, not the stored rate
    assert rates[0] == env.preview({"ops": [{"op": "stop"}]}, np.random.default_rng(0), repeats=50)[0]
    assert env.np_random.bit_generator.state == state and env.pass_rate == committed and not env._done


def test_the_effect_model_learns_which_edits_raise_and_lower_the_pass_rate():
    """On the toy arm, adding a square makes counting harder and removing one easier;
    recolouring changes nothing. The search's own probes teach the model so."""
    from vicogym.policies import SearchRewriter
    from vicogym.runs.rollout import run_episode

    env = _toy_env({"name": "simulated", "skill": 1.6, "sharpness": 3.0}, max_squares=8)
    rewriter = SearchRewriter.for_env(env, n=8, pool=4, stay=False)
    for seed in range(12):
        run_episode(env, rewriter, seed=seed, rng=np.random.default_rng(seed), keep="all")
    weights = dict(zip(rewriter.effects.names, rewriter.effects.posterior()[0]))
    assert weights["add"] < -0.1 and weights["remove"] > 0.1 and abs(weights["recolor"]) < 0.05, weights


def test_edit_features_count_kinds_and_switches():
    from vicogym.policies import edit_features

    ops = [{"op": "set_style", "data_labels": True, "font_size": 9.0}, {"op": "add_row", "row": "x"},
           {"op": "set_style", "data_labels": False}]
    assert edit_features(ops) == {"set_style": 2.0, "set_style.data_labels=True": 1.0, "add_row": 1.0,
                                  "set_style.data_labels=False": 1.0}


def test_effect_model_without_data_predicts_no_effect_and_draws_are_seeded():
    from vicogym.policies import EffectModel

    model = EffectModel()
    assert model.draw(np.random.default_rng(0)) == {} and model.predict({"add": 2.0}, {}) == 0.0
    model.add({"add": 1.0}, -0.3)
    model.add({"add": 2.0, "recolor": 1.0}, -0.6)
    assert model.draw(np.random.default_rng(1)) == model.draw(np.random.default_rng(1))
    assert model.draw(np.random.default_rng(1)) != model.draw(np.random.default_rng(2))


def test_the_simulated_actor_is_named_a_stand_in_and_a_model_by_its_spec():
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from vicogym.policies import actor_name

    for spec in (None, "simulated", " simulated ", "SimulatedActor", {"name": "simulated"}, SimulatedActor()):
        assert actor_name(spec).stand_in and actor_name(spec).name == "the simulated actor"
    assert actor_name({"name": "simulated", "skill": 3.0}).name == "the simulated actor (skill=3.0)"
    assert actor_name({"name": "openai", "model": "m", "base_url": "http://h/v1"}).name == "openai:m@http://h/v1"
    assert actor_name("transformers:/models/qwen") == actor_name({"name": "transformers", "model_dir": "/models/qwen"})

    @given(model=st.text(min_size=1, max_size=30), url=st.sampled_from(["http://localhost:8000/v1", "https://x.io"]))
    @settings(max_examples=50, deadline=None)
    def a_model(model, url):
        spec = f"openai:{model}@{url}"
        named = actor_name(spec)
        assert not named.stand_in and named.name == spec.strip() and named.line() == f"pass rates from {spec.strip()}"

    a_model()
    line = actor_name("simulated").line()
    assert line.startswith("pass rates from the simulated actor (a stand-in, not a model); plug in a real model with "
                           "--actor openai:MODEL@URL")
