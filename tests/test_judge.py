"""The LLM-judge track: the simulated judge, a batched judge (one request per sample) against
an in-process OpenAI-compatible server, strict parsing of its verdicts with one re-ask, and
verify_sample mixing code and judge constraints in order."""

import json

import numpy as np
import pytest

from vicogym.errors import ModelError
from vicogym.instruct.judge import (
    OpenAIJudge,
    SimulatedJudge,
    check_judge_cases,
    fill,
    make_judge,
    parse_verdicts,
    verify_sample,
)
from vicogym.programs.instruct import REGISTRY, Case, Contract, register

TEXT = {"type": "string", "minLength": 1}


@pytest.fixture
def judged():
    """Two judge-track types in the registry for the test (removed after it)."""
    contracts = [
        Contract("test_lighting_mood", "The response describes the lighting as the given mood.", "attribute",
                 {"mood": TEXT}, None, (Case("Soft warm light fills the room.", {"mood": "warm"}, True),
                                        Case("The room is dark.", {"mood": "warm"}, False)),
                 track="judge", rubric="The response describes the lighting as {mood}.", cues=("{mood} light",)),
        Contract("test_polite", "The response is polite.", "style", {}, None,
                 (Case("Thank you for asking!", {}, True), Case("Whatever.", {}, False)),
                 track="judge", rubric="The response is polite.", cues=("please", "thank you")),
    ]
    for contract in contracts:
        register(contract)
    yield {c.id: c for c in contracts}
    for contract in contracts:
        REGISTRY.pop(contract.id, None)


def reply(*verdicts):
    return json.dumps([{"index": i, "pass": p, "diagnostic": d} for i, p, d in verdicts])


SAMPLE = [{"id": "word_count", "params": {"n": 3, "relation": "at least"}},
          {"id": "test_lighting_mood", "params": {"mood": "warm"}},
          {"id": "no_commas", "params": {}},
          {"id": "test_polite", "params": {}}]


def test_the_simulated_judge_passes_on_a_filled_cue_and_says_which(judged):
    response = "Thank you: warm LIGHT everywhere, no commas"
    results = verify_sample(response, SAMPLE, judge=SimulatedJudge())
    assert [r["id"] for r in results] == [s["id"] for s in SAMPLE]
    assert [r["pass"] for r in results] == [True, True, False, True]
    assert (
        "'warm light'" in results[1]["detail"]
        and results[1]["expected"] == "The response describes the lighting as warm."
    )
    cold = verify_sample("Cold light.", SAMPLE[1:2], judge="simulated")[0]
    assert not cold["pass"] and "['warm light']" in cold["detail"]
    assert verify_sample(response, SAMPLE, judge=SimulatedJudge()) == results  # deterministic


def test_one_request_judges_all_judge_constraints_of_a_sample_in_order(serve, judged):
    # the server answers out of order: verdicts are matched by index, not by position
    server = serve(("ok", ["```json\n" + reply((2, False, "rude"), (1, True, "says warm light")) + "\n```"]))
    judge = OpenAIJudge(model="judge", base_url=server.url)
    image = np.full((8, 8, 3), 200, np.uint8)
    results = verify_sample("Soft warm light, one two three.", SAMPLE, judge=judge, image=image)
    assert len(server.requests) == 1
    assert [(r["id"], r["pass"]) for r in results] == [("word_count", True), ("test_lighting_mood", True),
                                                      ("no_commas", False), ("test_polite", False)]
    assert results[1]["detail"] == "says warm light" and results[3]["actual"] == "judged non-compliant"
    body = server.requests[0]["body"]
    image_part, text_part = body["messages"][-1]["content"]
    assert image_part["image_url"]["url"].startswith("data:image/png;base64,")
    text = text_part["text"]
    assert "Soft warm light, one two three." in text
    assert "1. The response describes the lighting as warm." in text and "2. The response is polite." in text
    assert "word count" not in text.lower()  # code constraints never reach the judge
    assert body["temperature"] == 0.0


def test_a_sample_without_judge_constraints_sends_nothing_and_needs_no_judge(serve, judged):
    server = serve(("ok", ["[]"]))
    results = verify_sample("a, b", [SAMPLE[0], SAMPLE[2]], judge=OpenAIJudge(model="judge", base_url=server.url))
    assert [r["pass"] for r in results] == [False, False] and server.requests == []
    assert verify_sample("a, b", [SAMPLE[2]]) == [{"id": "no_commas", **REGISTRY["no_commas"]("a, b").to_dict()}]


def test_a_malformed_reply_is_asked_again_once_then_named(serve, judged):
    server = serve(("ok", ["Sure! Both constraints look fine to me."]),
                   ("ok", [reply((1, True, "ok"), (2, True, "ok"))]))
    judge = OpenAIJudge(model="judge", base_url=server.url)
    results = verify_sample("warm light, thank you", SAMPLE, judge=judge)
    assert [r["pass"] for r in results] == [True, True, False, True] and len(server.requests) == 2
    reask = server.requests[1]["body"]["messages"][-1]["content"][-1]["text"]
    assert "could not be used" in reask and "expected a JSON array" in reask and "Sure! Both" in reask
    bad = serve(("ok", [reply((1, True, "ok"))]))  # one verdict for two constraints, twice
    with pytest.raises(ModelError,
                       match="no usable verdicts in 2 replies: expected 2 verdicts, one per constraint, got 1"):
        verify_sample("warm light", SAMPLE, judge=OpenAIJudge(model="judge", base_url=bad.url))
    assert len(bad.requests) == 2
    none = serve(("ok", ["nope"]))
    with pytest.raises(ModelError, match="expected a JSON array"):
        verify_sample("x", SAMPLE, judge=OpenAIJudge(model="judge", base_url=none.url, reasks=0))
    assert len(none.requests) == 1


@pytest.mark.parametrize("text, problem", [
    ('{"index": 1, "pass": true}', "expected a JSON array, got a JSON dict"),
    ('[{"index": 1, "pass": "yes", "diagnostic": ""}]', '"pass" as true or false'),
    ('[{"index": 0, "pass": true, "diagnostic": ""}]', '"index" as an integer from 1 to 1'),
    ('[{"index": true, "pass": true, "diagnostic": ""}]', '"index" as an integer'),
    ('[{"index": 1, "pass": true, "diagnostic": 3}]', '"diagnostic" as a string'),
    ('[1]', "each verdict as an object"),
    ('Here: [{"index": 1, "pass": true}] hope it helps', "expected a JSON array"),
])
def test_judge_replies_are_parsed_strictly(text, problem):
    with pytest.raises(ValueError, match=problem.replace("(", r"\(").replace("[", r"\[")):
        parse_verdicts(text, 1)


def test_fenced_and_bare_replies_and_duplicate_indices():
    assert parse_verdicts('[{"index": 1, "pass": true}]', 1) == [(True, "")]
    assert parse_verdicts('Verdicts:\n```json\n[{"index": 1, "pass": false, "diagnostic": "no"}]\n```',
                          1) == [(False, "no")]
    with pytest.raises(ValueError, match="index 1 twice"):
        parse_verdicts('[{"index": 1, "pass": true}, {"index": 1, "pass": false}]', 2)


def test_verify_sample_names_a_missing_judge_and_unknown_ids(judged):
    with pytest.raises(ValueError,
                       match=r"\['test_lighting_mood', 'test_polite'\] are judged by an LLM judge; pass judge="):
        verify_sample("x", SAMPLE)
    with pytest.raises(ValueError, match="unknown constraint id 'nope' at position 1"):
        verify_sample("x", [SAMPLE[0], {"id": "nope"}], judge="simulated")
    with pytest.raises(ValueError, match="test_lighting_mood needs 'mood'"):
        verify_sample("x", [{"id": "test_lighting_mood", "params": {}}], judge="simulated")


def test_judge_cases_are_checked_with_the_configured_judge(serve, judged):
    assert check_judge_cases(SimulatedJudge(), judged["test_lighting_mood"]) == []
    server = serve(("ok", [reply((1, True, "looks fine"))]))  # a judge that passes everything
    failures = check_judge_cases(OpenAIJudge(model="judge", base_url=server.url), judged["test_polite"])
    assert len(server.requests) == 2 and len(failures) == 1
    assert failures[0].startswith("case 1: 'Whatever.' with {} should fail, the judge says pass (looks fine)")
    with pytest.raises(ValueError, match="expected a judge-track contract"):
        check_judge_cases(SimulatedJudge(), REGISTRY["no_commas"])


def test_make_judge_reads_specs_and_names_what_to_write():
    assert isinstance(make_judge("simulated"), SimulatedJudge)
    judge = make_judge("openai:qwen-judge@http://localhost:8000/v1")
    assert isinstance(judge, OpenAIJudge) and judge.model == "qwen-judge" and judge.base_url == "http://localhost:8000/v1"
    assert make_judge({"name": "openai", "model": "m", "base_url": "http://x/v1", "reasks": 2}).reasks == 2
    assert make_judge(judge) is judge
    with pytest.raises(ValueError, match="expected a judge spec 'simulated' or 'openai:MODEL@URL'"):
        make_judge("gpt4")
    with pytest.raises(ValueError, match="openai:MODEL@URL"):
        make_judge("openai:no-url")
    with pytest.raises(ValueError, match="reasks"):
        OpenAIJudge(model="m", base_url="http://x/v1", reasks=-1)


def test_templates_are_filled_by_name_only():
    assert fill("at least {n} of {words}", {"n": 2, "words": ["a", "b"]}) == "at least 2 of a, b"
    # no attribute access or indexing: a model-written rubric cannot reach into the parameters
    assert fill("{n.__class__} {0} {missing}", {"n": 2}) == "{n.__class__} {0} {missing}"
