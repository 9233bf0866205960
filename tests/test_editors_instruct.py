"""The instruction-following arm's writers: every type has one, its drawn parameters fit the
schema, its phrasings fill in, and by construction its edits satisfy or violate the
constraint on any base response (empty, multi-line, any Unicode)."""

import string

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vicogym.editors.instruct import EDITS, phrase, satisfy, violate
from vicogym.instruct.judge import SimulatedJudge, check_judge_cases
from vicogym.programs.instruct import REGISTRY

MINE = ("format", "lexical", "structural", "style")
CODE = sorted(i for i, c in REGISTRY.items() if c.category in MINE and c.track == "code")
JUDGE = sorted(i for i, c in REGISTRY.items() if c.category in MINE and c.track == "judge")

PROSE = st.lists(st.sampled_from(["The", "red", "cube", "sits", "beside", "two", "spheres.", "It's", "I", "you",
                                  "3.5", "**bold**", "* item", "\n", "\n\n", "***", "# Head", "Why?", "P.S.", ",",
                                  "<<t>>", "|", "[x]", "SECTION 1", "- a", "1.", "Über", "мир", "文本", '"']),
                 max_size=40).map(" ".join)
RESPONSES = st.one_of(st.just(""), st.text(max_size=120), PROSE,
                      st.text(alphabet=string.ascii_letters + string.punctuation + " \n", max_size=200))


def test_every_seed_type_has_a_writer():
    seed = {t for t, c in REGISTRY.items() if c.origin == "seed"}  # discovered types bring examples, not writers
    missing = sorted(seed - set(EDITS))
    assert not missing, f"types without a writer: {missing}"
    assert not set(EDITS) - set(REGISTRY)


@pytest.mark.parametrize("id", CODE + JUDGE)
def test_drawn_parameters_fit_the_schema_and_fill_every_phrasing(id):
    writer, contract = EDITS[id], REGISTRY[id]
    assert writer.draw is not None and len(writer.phrases) >= 2
    rng = np.random.default_rng(0)
    for _ in range(20):
        params = writer.draw(rng)
        contract.check_params(params)
        for template in writer.phrases:
            values = {k: ", ".join(map(str, v)) if isinstance(v, list) else v for k, v in params.items()}
            text = template.format(**values)
            assert "{" not in text.replace("{}", ""), (id, text)
        assert phrase(id, params, rng)


@pytest.mark.parametrize("id", CODE)
@settings(max_examples=50, deadline=None)
@given(response=RESPONSES, seed=st.integers(0, 2**32 - 1))
def test_satisfy_passes_and_violate_fails_on_any_response(id, response, seed):
    rng = np.random.default_rng(seed)
    params = EDITS[id].draw(rng)
    good = satisfy(id, response, params, rng)
    assert REGISTRY[id](good, **params).passed, (id, params, good)
    bad = violate(id, response, params, rng)
    assert not REGISTRY[id](bad, **params).passed, (id, params, bad)


def _judged(id: str, response: str, params: dict) -> bool:
    """The simulated judge's verdict (a cue of the type, filled with the parameters, is present)."""
    return SimulatedJudge().judge(response, [(REGISTRY[id], params)])[0].passed


@pytest.mark.parametrize("id", JUDGE)
def test_the_simulated_judge_gets_the_judge_types_own_cases_right(id):
    assert check_judge_cases(SimulatedJudge(), REGISTRY[id]) == []


@pytest.mark.parametrize("id", JUDGE)
@settings(max_examples=15, deadline=None)
@given(response=RESPONSES, seed=st.integers(0, 2**32 - 1))
def test_judge_types_satisfy_by_a_cue_and_violate_by_removing_them(id, response, seed):
    rng = np.random.default_rng(seed)
    params = EDITS[id].draw(rng)
    contract = REGISTRY[id]
    assert contract.rubric.format(**params) and contract.cues
    assert _judged(id, satisfy(id, response, params, rng), params)
    assert not _judged(id, violate(id, response + " " + contract.cues[0].format(**params), params, rng), params)


@settings(max_examples=200, deadline=None)
@given(response=RESPONSES, seed=st.integers(0, 2**32 - 1))
def test_the_letter_writer_keeps_or_drops_whole_words_never_a_words_letters(response, seed):
    """Writing "at most one 'i'" by deleting every 'i' made "whte" and "pcture": every word of
    the written response must be a word of the response or one the writer adds whole."""
    import re

    from vicogym.editors.instruct.lexical import ONE_OF

    rng = np.random.default_rng(seed)
    params = EDITS["letter_frequency"].draw(rng)
    for edit in (satisfy, violate):
        written = edit("letter_frequency", response, params, rng)
        allowed = set(re.findall(r"\w+", response)) | set(ONE_OF.values())
        assert set(re.findall(r"\w+", written)) <= allowed, (params, response, written)


def test_every_added_letter_word_holds_its_letter_once():
    from vicogym.editors.instruct.lexical import ONE_OF

    assert sorted(ONE_OF) == list("abcdefghijklmnopqrstuvwxyz")
    assert all(word.count(letter) == 1 for letter, word in ONE_OF.items())


@settings(max_examples=200, deadline=None)
@given(response=RESPONSES, seed=st.integers(0, 2**32 - 1))
def test_the_writer_meets_counts_and_keywords_with_whole_words(response, seed):
    """"It is labelleor Share" (a cut to hit 49 characters) and "here" met by "Therefore":
    written text keeps its words whole, and a keyword stands as a word of its own."""
    import re

    from vicogym.editors.instruct.text import FILLER

    rng = np.random.default_rng(seed)
    params = EDITS["character_count"].draw(rng)
    written = satisfy("character_count", response, params, rng)
    allowed = {w.casefold() for w in re.findall(r"\w+", response)} | set(FILLER)
    if all(len(t) <= params["n"] for t in re.findall(r"\S+", response)):
        assert {w.casefold() for w in re.findall(r"\w+", written)} <= allowed, (params, response, written)
    words = {"keywords": ["here"]}
    assert re.search(r"(?<!\w)here(?!\w)", satisfy("include_keywords", "Therefore it rains.", words, rng), re.I)
