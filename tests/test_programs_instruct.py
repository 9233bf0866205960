"""The instruction-following arm's constraint contracts: the registry admits only types
whose verifiers pass their own cases, parameters are checked against the schema, and
responses built to satisfy or to violate a constraint get the right verdict."""

import json
import string

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vicogym.programs import instruct
from vicogym.programs.instruct import CATEGORIES, REGISTRY, Case, Contract, Verdict, pass_rate, register, verify_all


def test_every_registered_type_passes_its_own_cases_and_is_well_formed():
    assert len(REGISTRY) >= 76
    for contract in REGISTRY.values():
        assert contract.category in CATEGORIES and contract.description and contract.track in ("code", "judge")
        assert {case.passed for case in contract.cases} == {True, False}, contract.id
        if contract.track == "judge":  # judged by an LLM: a rubric and cues, no code verifier to run here
            assert contract.verify is None and contract.rubric and contract.cues, contract.id
            for case in contract.cases:
                contract.check_params(case.params)
                contract.rubric.format(**case.params)
            continue
        for case in contract.cases:
            verdict = contract(case.response, **case.params)
            assert isinstance(verdict, Verdict) and verdict.passed == case.passed, (contract.id, case)
            assert set(verdict.to_dict()) == {"pass", "expected", "actual", "detail"}


#: VISA's seed registry (Appendix B, Table 4): types per category
SEED_COUNTS = {"format": 23, "lexical": 16, "structural": 13, "style": 11, "attribute": 5, "spatial": 1, "counting": 1,
               "object_grounded": 1, "ocr_grounded": 1, "causal": 2, "conditional": 2}


@pytest.mark.parametrize("category", ["format", "lexical", "structural", "style"])
def test_each_category_has_at_least_the_visa_seed_count(category):
    found = sorted(i for i, c in REGISTRY.items() if c.category == category)
    assert len(found) >= SEED_COUNTS[category], f"{category}: expected at least {SEED_COUNTS[category]}, got {found}"


def test_planning_hints_mark_whole_formats_case_rules_and_measures():
    def clash(a, b):
        return bool(set(REGISTRY[a].exclusive) & set(REGISTRY[b].exclusive))

    whole = ["json_format", "yaml_mapping", "xml_document", "choice", "quotation", "two_responses", "list_format"]
    assert all(clash(a, b) for a in whole for b in whole if a != b)
    assert clash("json_format", "bullet_list") and clash("yaml_mapping", "markdown_table")
    assert not clash("bullet_list", "markdown_table") and not clash("list_format", "bullet_list")
    assert clash("lowercase", "uppercase") and clash("lowercase", "acronym_definition")
    assert not clash("uppercase", "acronym_definition") and clash("language", "script")
    assert REGISTRY["word_count"].bounds({"n": 50, "relation": "at most"}) == (0, 50)
    assert REGISTRY["bullet_list"].bounds({"n": 3}) == (3, 3)
    assert REGISTRY["placeholders"].bounds({"n": 2}) == (2, float("inf"))
    counted = [c.id for c in REGISTRY.values() if "n" in c.params and c.category in SEED_COUNTS and c.measure is None
               and c.track == "code" and not c.needs]
    # a keyword's or a letter's frequency is a quantity of its own, one per keyword
    assert set(counted) <= {"keyword_frequency", "letter_frequency"}, counted


def test_language_detection_is_deterministic_and_follows_ifeval_on_featureless_text():
    german = "Das Bild zeigt eine ruhige Straße am Morgen, mit einem roten Auto vor einer kleinen Bäckerei."
    assert all(REGISTRY["language"](german, language="de").passed for _ in range(5))
    assert not REGISTRY["language"](german, language="en").passed
    assert REGISTRY["language"]("1234 !!", language="fr").passed  # langdetect finds no features: IFEval counts it


def test_judge_types_cannot_be_verified_by_code():
    with pytest.raises(ValueError, match="judged by an LLM judge"):
        REGISTRY["tone"]("Hello.", tone="formal")
    with pytest.raises(ValueError, match="must be one of"):
        REGISTRY["tone"].check_params({"tone": "grumpy"})


def test_the_schema_checks_patterns():
    with pytest.raises(ValueError, match="acronym must match"):
        REGISTRY["acronym_definition"]("x", acronym="cpu", expansion="central processing unit")


def _always(passed):
    return lambda response, **params: Verdict(passed, "x", "y")


def test_the_registry_refuses_a_verifier_that_gets_its_own_case_wrong():
    cases = (Case("a", {}, True), Case("b", {}, False))
    with pytest.raises(ValueError, match="gets its own case wrong: 'b'"):
        register(Contract("always_true_test", "d", "format", {}, _always(True), cases))
    with pytest.raises(ValueError, match="needs test cases that pass and cases that fail"):
        register(Contract("only_passing_test", "d", "format", {}, _always(True), (Case("a", {}, True),)))
    with pytest.raises(ValueError, match="expected category in"):
        register(Contract("bad_category_test", "d", "poetry", {}, _always(True), cases))
    with pytest.raises(ValueError, match="is registered already"):
        register(REGISTRY["json_format"])
    assert not {"always_true_test", "only_passing_test", "bad_category_test"} & set(REGISTRY)


@pytest.mark.parametrize("params, message", [
    ({"n": 3}, "constraint word_count needs 'relation'"),
    ({"n": 3, "relation": "about"}, "relation must be one of ['at least', 'at most', 'exactly'], got 'about'"),
    ({"n": "3", "relation": "exactly"}, "n must be of type integer, got '3'"),
    ({"n": -1, "relation": "exactly"}, "n must be at least 0, got -1"),
    ({"n": 3, "relation": "exactly", "words": 2}, "takes ['n', 'relation'], got an unknown 'words'"),
])
def test_parameters_are_checked_against_the_schema(params, message):
    with pytest.raises(ValueError) as excinfo:
        REGISTRY["word_count"]("some text", **params)
    assert message in str(excinfo.value)


def test_verify_all_and_the_pass_rate_reward():
    verdicts = verify_all("hello world",
                          [{"id": "word_count", "params": {"n": 2, "relation": "exactly"}}, {"id": "uppercase"},
                           {"id": "include_keywords", "params": {"keywords": ["world"]}}])
    assert [v["pass"] for v in verdicts] == [True, False, True] and pass_rate(verdicts) == pytest.approx(2 / 3)
    assert pass_rate([]) == 1.0
    blank = verify_all(" \n", [{"id": "no_commas"}, {"id": "word_count", "params": {"n": 50, "relation": "at most"}}])
    assert [v["pass"] for v in blank] == [False, False] and blank[0]["actual"] == "a blank response"
    with pytest.raises(ValueError, match="unknown constraint id 'nope'"):
        verify_all("x", [{"id": "nope"}])
    with pytest.raises(TypeError, match="expected the response as a string"):
        REGISTRY["lowercase"](None)


FILLER = st.lists(st.text(alphabet="bcdfghjklmnpqrstvwxz", min_size=1, max_size=8), min_size=1, max_size=30)


@settings(max_examples=60, deadline=None)
@given(FILLER)
def test_word_and_character_counts_by_construction(ws):
    text = " ".join(ws)
    check = REGISTRY["word_count"]
    assert check(text, n=len(ws), relation="exactly").passed
    assert not check(text, n=len(ws) + 1, relation="at least").passed
    assert not check(text, n=len(ws) - 1, relation="at most").passed
    assert REGISTRY["character_count"](text, n=len(text), relation="exactly").passed


@settings(max_examples=60, deadline=None)
@given(FILLER, st.integers(0, 6))
def test_keywords_present_absent_and_counted_by_construction(ws, m):
    keyword = "aye"  # no filler word holds a vowel, so it appears only where put
    text = " ".join(ws + [keyword] * m)
    assert REGISTRY["include_keywords"](text, keywords=[keyword]).passed == (m > 0)
    assert REGISTRY["exclude_keywords"](text, keywords=[keyword]).passed == (m == 0)
    assert REGISTRY["keyword_frequency"](text, keyword=keyword, n=m, relation="exactly").passed
    assert not REGISTRY["keyword_frequency"](text, keyword=keyword, n=m + 1, relation="at least").passed
    assert REGISTRY["letter_frequency"](text, letter="y", n=m, relation="exactly").passed


@settings(max_examples=60, deadline=None)
@given(st.lists(st.text(alphabet=string.ascii_lowercase + " ", min_size=1, max_size=20).filter(str.strip),
                min_size=1, max_size=8))
def test_lists_paragraphs_and_placeholders_by_construction(items):
    n = len(items)
    bullets = "\n".join(f"* {item}" for item in items)
    assert REGISTRY["bullet_list"](bullets, n=n).passed and not REGISTRY["bullet_list"](bullets, n=n + 1).passed
    numbered = "\n".join(f"{i + 1}. {item}" for i, item in enumerate(items))
    assert REGISTRY["numbered_list"](numbered, n=n, relation="exactly").passed
    assert REGISTRY["paragraph_count"]("\n***\n".join(items), n=n).passed
    assert not REGISTRY["paragraph_count"]("\n***\n".join(items), n=n + 1).passed
    assert REGISTRY["placeholders"](" ".join(f"[{item}]" for item in items), n=n).passed
    assert REGISTRY["lowercase"](" ".join(items)).passed == any(c.isalpha() for c in "".join(items))
    assert REGISTRY["uppercase"](" ".join(items).upper()).passed == any(c.isalpha() for c in "".join(items))


JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=10),
                    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner, max_size=4),
                    max_leaves=12)


@settings(max_examples=60, deadline=None)
@given(JSON)
def test_json_by_construction(value):
    text = json.dumps(value)
    assert REGISTRY["json_format"](text).passed and REGISTRY["json_format"](f"```json\n{text}\n```").passed
    assert not REGISTRY["json_format"](text + " and more").passed


def test_the_package_is_pure():
    """No I/O and no state beyond the registry: no module of the constraint types opens a
    file or imports os."""
    from pathlib import Path

    modules = sorted(Path(instruct.__file__).parent.glob("*.py"))
    assert len(modules) >= 8
    for path in modules:
        source = path.read_text(encoding="utf-8")
        assert "import os" not in source and "open(" not in source, path.name
