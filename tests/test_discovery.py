"""Discovery: model-proposed constraint types are admitted only once their verifier, run in
one sandbox child, passes its cases and the adversarial responses; each flawed kind is
rejected with its reason; admitted types verify through the sandbox and survive a round
trip through their JSON record."""

import json

import numpy as np
import pytest
from test_clients import ChatServer

import vicogym.instruct.discovery as discovery
from vicogym.instruct.discovery import (
    ADVERSARIAL,
    BANK,
    GOOD,
    DiscoveredType,
    OpenAIProposer,
    Proposal,
    Rejected,
    SimulatedProposer,
    admit,
    admit_all,
    adversarial_calls,
    discovered,
    make_proposer,
)
from vicogym.instruct.judge import SimulatedJudge, verify_sample
from vicogym.programs.instruct import REGISTRY

pytestmark = pytest.mark.usefixtures("walls")


@pytest.fixture(autouse=True)
def registry():
    """Whatever a test admits leaves the registry after it."""
    before = set(REGISTRY)
    yield REGISTRY
    for name in set(REGISTRY) - before:
        del REGISTRY[name]


@pytest.fixture
def children(monkeypatch):
    """Counts the sandbox children discovery starts."""
    calls = []
    real = discovery.run_untrusted_batch

    def counted(code, entry, batch, **settings):
        calls.append(len(batch))
        return real(code, entry, batch, **settings)

    monkeypatch.setattr(discovery, "run_untrusted_batch", counted)
    return calls


def proposal(name, **changes):
    return json.dumps({**BANK[name], **changes})


@pytest.mark.parametrize("name", GOOD)
def test_good_proposals_are_admitted_in_one_sandbox_child(name, children):
    contract = admit(proposal(name))
    assert REGISTRY[name] is contract and contract.origin == "discovered" and contract.track == "code"
    assert isinstance(discovered(contract), DiscoveredType)
    # one child ran the cases and every adversarial response; registering ran no other
    assert len(children) == 1 and children[0] == len(BANK[name]["cases"]) + len(adversarial_calls(Proposal.from_json(
        proposal(name))))
    assert contract.metadata()["origin"] == "discovered"


def test_admitted_verifiers_judge_new_responses_in_the_sandbox(children):
    colors = admit(proposal("mentions_n_colors"))
    digits = admit(proposal("no_digits"))
    assert len(children) == 2
    assert colors("Green, cyan and GREY.", n=3).passed and not colors("Greenish.", n=1).passed
    assert not digits("Room 101").passed and digits("Room one-oh-one").passed
    assert len(children) == 6  # each new response is a sandbox run, never a call in this process
    with pytest.raises(ValueError, match="mentions_n_colors: n must be at least 1"):
        colors("red", n=0)


def test_verify_sample_batches_a_discovered_type_into_one_child(children):
    admit(proposal("mentions_n_colors"))
    sample = [{"id": "mentions_n_colors", "params": {"n": 1}}, {"id": "no_commas", "params": {}},
              {"id": "mentions_n_colors", "params": {"n": 3}}]
    results = verify_sample("A red cube and a blue ball", sample, judge=SimulatedJudge())
    assert [(r["id"], r["pass"]) for r in results] == [("mentions_n_colors", True), ("no_commas", True),
                                                      ("mentions_n_colors", False)]
    assert children == [children[0], 2]  # admission, then one child for both calls
    assert results[2]["actual"] == "2 colours" and results[2]["detail"] == "blue, red"


FLAWED = [("crash", "crash", "ZeroDivisionError"), ("constant", "constant", "passes every response"),
          ("unsafe_import", "unsafe", "imports 'os'"), ("network", "unsafe", "not socket"),
          ("hang", "timeout", "no answer within 0.5 s"), ("wrong_case", "wrong_case", "own case 0 wrong"),
          ("verdict", "verdict", "no well-formed verdict"), ("schema", "schema", "got 'int'")]


@pytest.mark.parametrize("name, code, words", FLAWED, ids=[f[0] for f in FLAWED])
def test_each_flawed_proposal_is_rejected_with_its_reason(name, code, words):
    with pytest.raises(Rejected) as caught:
        admit(proposal(name), call_seconds=0.5)
    assert caught.value.code == code and words in caught.value.reason, caught.value
    assert BANK[name]["id"] not in REGISTRY


GOOD_CODE = BANK["no_digits"]["code"]


@pytest.mark.parametrize("changes, code, words", [
    ({"id": "word_count"}, "duplicate", "holds 'word_count' already"),
    ({"id": "No-Digits"}, "id", "snake_case"),
    ({"id": "no__digits"}, "id", "snake_case"),
    ({"category": "vibes"}, "category", "got 'vibes'"),
    ({"params": {"n": {"type": "integer", "pattern": "x"}}}, "schema", "uses 'pattern'"),
    ({"params": {"words": {"type": "array"}}}, "schema", "items' schema"),
    ({"params": {"response": {"type": "string"}}}, "schema", "other than 'response'"),
    ({"cases": [{"response": "a", "params": {}, "pass": True}, {"response": "b", "params": {}, "pass": True}]},
     "cases", "cases that pass and cases that fail"),
    ({"cases": [{"response": "a", "params": {"n": 1}, "pass": True}, {"response": "1", "params": {}, "pass": False}]},
     "cases", "case 0: constraint no_digits takes [], got an unknown 'n'"),
    ({"cases": [{"response": "a", "pass": "yes"}]}, "malformed", "pass true or false"),
    ({"code": "def verify(response):\n    return {'pass': True"}, "malformed", "not valid Python"),
    ({"code": "def check(response):\n    return {}"}, "malformed", "top-level function verify"),
    ({"code": "from subprocess import run\n" + GOOD_CODE}, "unsafe", "imports 'subprocess'"),
    ({"code": GOOD_CODE + "\nx = print.__self__\n"}, "unsafe", "interpreter internals ('__self__')"),
    ({"code": "def verify(response):\n    return open('/etc/passwd').read()"}, "crash", "NameError"),
    ({"rationale": "because"}, "malformed", "unknown 'rationale'"),
    ({"params": []}, "malformed", "expected params as a JSON object"),
])
def test_malformed_and_ill_posed_proposals_are_named(changes, code, words):
    with pytest.raises(Rejected) as caught:
        admit(proposal("no_digits", **changes))
    assert caught.value.code == code and words in str(caught.value), caught.value


def test_malformed_json_text_is_named():
    for text, words in [("not json at all", "expected the proposal as a JSON object"),
                        ("[1, 2]", "got list"), ('{"id": "x"}', "needs the field 'description'")]:
        with pytest.raises(Rejected, match=words):
            Proposal.from_json(text)
    fenced = "Here is my proposal:\n```json\n" + proposal("no_digits") + "\n```"
    assert Proposal.from_json(fenced).id == "no_digits"


def test_a_verifier_that_breaks_on_one_adversarial_response_is_rejected_naming_it():
    code = ("def verify(response):\n    if len(response) > 100000:\n        raise ValueError('too long')\n"
            "    return {'pass': response.endswith('!'), 'expected': '!', 'actual': response[-1:]}\n")
    cases = [{"response": "Hi!", "params": {}, "pass": True}, {"response": "Hi.", "params": {}, "pass": False}]
    with pytest.raises(Rejected, match=r"on 200k characters .* ValueError: too long") as caught:
        admit(json.dumps({**BANK["no_digits"], "id": "ends_with_bang", "code": code, "cases": cases}))
    assert caught.value.code == "crash"
    assert {"empty", "whitespace", "200k characters", "unicode, RTL and emoji", "JSON-looking"} <= set(ADVERSARIAL)
    labels = {label for label, _, _ in adversarial_calls(Proposal.from_json(proposal("no_digits")))}
    assert "passing case 0 with trailing noise" in labels


def test_a_runtime_error_on_a_later_response_is_a_failed_verdict_not_a_crash():
    code = ("def verify(response):\n    if 'xyzzy' in response:\n        return open('/tmp/x', 'w')\n"
            "    return {'pass': 'please' in response.lower(), 'expected': 'please', 'actual': '', 'detail': ''}\n")
    cases = [{"response": "Please sit.", "params": {}, "pass": True}, {"response": "Sit.", "params": {}, "pass": False}]
    contract = admit(json.dumps({**BANK["no_digits"], "id": "says_please", "code": code, "cases": cases}))
    verdict = contract("please xyzzy")
    assert not verdict.passed and "the discovered verifier failed: NameError" in verdict.detail


def test_an_admitted_type_round_trips_through_its_record(children):
    contract = admit(proposal("sentences_at_most_n_words"))
    record = discovered(contract).to_json()
    assert json.loads(record)["code"] == BANK["sentences_at_most_n_words"]["code"]
    responses = ["Tiny. Also tiny.", "One two three four five six.", ""]
    before = [contract(r, n=4) for r in responses]
    del REGISTRY[contract.id]  # a later process: the registry holds only the seed types
    again = admit(record)
    assert [again(r, n=4) for r in responses] == before and again.origin == "discovered"
    assert Proposal.from_json(record) == discovered(again).proposal
    admitted, rejected = admit_all([record, proposal("no_digits"), proposal("hang")], call_seconds=0.5)
    assert [c.id for c in admitted] == ["no_digits"] and [r.code for r in rejected] == ["timeout"]


def test_the_simulated_proposer_is_deterministic_and_proposes_what_is_new():
    proposer = SimulatedProposer(flawed=0.0)
    texts = [proposer.propose_text({}, REGISTRY, np.random.default_rng(7)) for _ in range(2)]
    assert texts[0] == texts[1] and Proposal.from_json(texts[0]) == proposer.propose(
        {}, REGISTRY, np.random.default_rng(7)
    )
    assert Proposal.from_json(texts[0]).id in GOOD
    known, admitted = set(REGISTRY), []
    rng = np.random.default_rng(0)
    while (found := proposer.propose({}, known, rng)) is not None:
        admitted.append(admit(found).id)
        known.add(admitted[-1])
    assert sorted(admitted) == sorted(GOOD)
    flawed = {SimulatedProposer(flawed=1.0).propose({}, REGISTRY, np.random.default_rng(s)).id for s in range(40)}
    assert flawed <= {BANK[k]["id"] for k in BANK if k not in GOOD} and len(flawed) > 3


def test_the_openai_proposer_shows_facts_ids_and_image_and_its_answer_is_admitted():
    server = ChatServer([("ok", ["I propose:\n```json\n" + proposal("ends_with_question") + "\n```"]),
                         ("ok", ["I cannot think of one."])])
    try:
        proposer = make_proposer(f"openai:teacher@{server.url}")
        assert isinstance(proposer, OpenAIProposer)
        facts = {"objects": [{"name": "cube", "color": "red", "x": 0.2, "y": 0.5}], "source": "clevr"}
        text = proposer.propose(facts, ["word_count", "no_commas"], np.random.default_rng(0),
                                image=np.zeros((4, 4, 3), np.uint8))
        contract = admit(text)
        assert contract.id == "ends_with_question" and len(server.requests) == 1
        image_part, text_part = server.requests[0]["body"]["messages"][-1]["content"]
        assert image_part["image_url"]["url"].startswith("data:image/png;base64,")
        prompt = text_part["text"]
        assert '"color": "red"' in prompt and "no_commas, word_count" in prompt and "def verify(response" in prompt
        assert "object_grounded" in prompt and "unicodedata" in prompt
        with pytest.raises(Rejected, match="expected the proposal as a JSON object"):
            proposer.propose(facts, [], np.random.default_rng(0))
    finally:
        server.close()


def test_judge_track_proposals_are_admitted_by_the_judge():
    judged = {"id": "mentions_weather", "description": "The response mentions the weather as given.",
              "category": "attribute", "track": "judge", "params": {"weather": {"type": "string", "minLength": 1}},
              "rubric": "The response says the weather is {weather}.", "cues": ["{weather} weather", "it is {weather}"],
              "cases": [{"response": "It is sunny today.", "params": {"weather": "sunny"}, "pass": True},
                        {"response": "A red cube.", "params": {"weather": "sunny"}, "pass": False}]}
    with pytest.raises(Rejected) as caught:
        admit(json.dumps(judged))
    assert caught.value.code == "judge" and "make_judge" in caught.value.reason
    wrong = {**judged, "cases": judged["cases"] + [{"response": "Sunny skies.", "params": {"weather": "sunny"},
                                                    "pass": True}]}
    with pytest.raises(Rejected, match="disagrees with 1 of mentions_weather's cases: case 2"):
        admit(json.dumps(wrong), judge=SimulatedJudge())
    contract = admit(json.dumps(judged), judge="simulated")
    assert contract.track == "judge" and contract.verify is None and contract.origin == "discovered"
    result = verify_sample("It is sunny.", [{"id": "mentions_weather", "params": {"weather": "sunny"}}],
                           judge="simulated")
    assert result[0]["pass"]


def test_make_proposer_reads_specs_and_names_what_to_write():
    assert make_proposer("simulated") == SimulatedProposer()
    assert make_proposer({"name": "simulated", "flawed": 0.5}).flawed == 0.5
    assert make_proposer({"name": "openai", "model": "m", "base_url": "http://x/v1"}).model == "m"
    with pytest.raises(ValueError, match="expected a proposer spec 'simulated' or 'openai:MODEL@URL'"):
        make_proposer("gpt")
    with pytest.raises(ValueError, match="flawed as a probability"):
        SimulatedProposer(flawed=2)
