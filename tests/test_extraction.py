"""The default answer reader (``extract_answer(text)``, mode ``auto``) against what
vision-language and reasoning models write: a corpus of responses in their styles
(tests/data/answer_corpus.jsonl: each with the answer to extract, a gold, the scorer that
grades it and the score the extraction earns), wrappers composed at random, and the rows'
own scorers through the reward."""

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vicogym.answers import format_number
from vicogym.extraction import extract_answer
from vicogym.programs.evidence import score_answer
from vicogym.scoring import score_row

CORPUS = [json.loads(line) for line in
          (Path(__file__).parent / "data" / "answer_corpus.jsonl").read_text(encoding="utf-8").splitlines()]


def test_the_corpus_is_read_as_written_and_scores_as_expected():
    assert len(CORPUS) >= 300
    wrong = []
    for row in CORPUS:
        got = extract_answer(row["response"])
        score = score_answer(row["scorer"], got, row["gold"], (), row["n_options"])
        if got != row["expected"] or abs(score - row["score"]) > 1e-9:
            wrong.append((row["style"], row["response"][-80:], row["expected"], got, score))
    assert not wrong, f"{len(wrong)} of {len(CORPUS)} rows read otherwise, e.g. {wrong[:5]}"
    right = sum(score_answer(r["scorer"], r["expected"], r["gold"], (), r["n_options"]) == 1 for r in CORPUS)
    assert right / len(CORPUS) > 0.9


@pytest.mark.parametrize("response", ["**0.59**", "Answer: **0.59**", "The answer is 0.59",
                                      "<think>The bar is tall.</think>0.59", "So the value is 0.59.",
                                      "<answer>0.59 million</answer>"])
def test_a_chart_reward_reads_what_models_write(response):
    assert score_row("vicogym/Chart-v0", response, "0.5891") == 1.0
    truth = json.dumps({"answer": "0.5891", "golds": [], "scorer": "relaxed", "options": []})
    assert score_row("vicogym/Evidence-v0", response, truth) == 1.0


def test_the_strict_modes_read_their_form_only_where_auto_reads_more():
    strict = [("Answer: **0.59**", "answer", "**0.59**", "0.59"),
              ("<think>Answer: 3</think>\n**4**", "answer", "3</think>", "4"),
              ("The answer is 0.59", "boxed", "", "0.59"),
              ("The answer is 0.59", "answer", "", "0.59"),
              ("**0.59**\n", "final_line", "**0.59**", "0.59"),
              ("<answer>**7**</answer>", "regex:<answer>(.*?)</answer>", "**7**", "7")]
    for text, how, expected, auto in strict:
        assert (extract_answer(text, how), extract_answer(text)) == (expected, auto), text


def test_auto_keeps_what_the_scorers_read():
    assert extract_answer("(B) 12") == "(B) 12"  # the letter scorer reads B
    assert extract_answer("Answer: 45%") == "45%"
    assert extract_answer("**$12**") == "$12"
    assert extract_answer("The answer is 1,327.7, which is the largest.") == "1,327.7"
    assert extract_answer("It is either 3 or 4.") == "either 3 or 4"  # two answers are none
    assert extract_answer("<think>\nThe answer is 5.\n</think>") == ""  # nothing said after thinking


_RESERVED = {"answer", "so", "thus", "therefore", "hence", "consequently", "overall", "in", "is", "are", "was",
             "were", "equals", "would", "will", "be", "yes", "no", "option", "choice", "approximately", "approx",
             "about", "around", "roughly", "nearly", "almost", "close", "circa", "ca", "final", "correct", "short",
             "my", "right", "best", "sum", "conclusion", "summary", "which", "because", "since", "as", "according",
             "based", "indicating", "meaning", "showing", "while", "whereas", "usd", "eur", "gbp"}
_WORD = st.from_regex(r"[a-z]{2,8}", fullmatch=True).filter(lambda w: w not in _RESERVED)
_NUMBER = st.one_of(st.integers(-10**6, 10**6).map(str),
                    st.floats(-1e6, 1e6, allow_nan=False, allow_infinity=False).map(format_number),
                    st.integers(0, 100).map(lambda n: f"{n}%"))
_BARE = st.one_of(_NUMBER, _WORD.map(str.capitalize), st.sampled_from(["Yes", "No", "yes", "no", "A", "B", "C"]),
                  st.lists(_WORD, min_size=2, max_size=3).map(" ".join))
_REASONING = st.sampled_from([
    "<think>\nThe bars: 3, 4 and 5. Answer: 5\n</think>\n\n",
    "Let me look. \\boxed{99}\n</think>\n",
    "<reasoning>So the answer is 7.</reasoning>\n",
    "<|begin_of_thought|>\nCounting... Final answer: 2\n<|end_of_thought|>\n\n",
    "◁think▷Maybe no.◁/think▷",
])
_INNER = [
    lambda s: f"**{s}**", lambda s: f"*{s}*", lambda s: f"__{s}__", lambda s: f"`{s}`", lambda s: f"${s}$",
    lambda s: f"\\({s}\\)", lambda s: f"\\[{s}\\]", lambda s: f"\\text{{{s}}}", lambda s: f"\\boxed{{{s}}}",
    lambda s: f"<answer>{s}</answer>", lambda s: f"Answer: {s}", lambda s: f"The answer is {s}.",
    lambda s: f"Final answer: {s}", lambda s: f"So the answer is {s}.", lambda s: f"Therefore, the answer is {s}.",
    lambda s: f'"{s}"', lambda s: f"“{s}”", lambda s: f"{s}.",
]
_OUTER = [
    lambda s: s, lambda s: f"Let me look at the image.\nThe labels are clear.\n{s}",
    lambda s: f"**Final Answer**\n\n{s}",
    lambda s: f"### Answer\n{s}", lambda s: f"<think>\nHmm. The answer is 4.\n</think>\n\n{s}",
    lambda s: f"The chart has two bars.\n</think>\n\n{s}", lambda s: f"<think>{s}",
]


_MATH = {4, 5, 6}  # $...$, \(...\), \[...\]: math mode does not nest


@settings(max_examples=300, deadline=None)
@given(_BARE, st.lists(st.integers(0, len(_INNER) - 1), max_size=4).filter(lambda w: sum(i in _MATH for i in w) < 2),
       st.integers(0, len(_OUTER) - 1))
def test_a_bare_answer_in_any_wrappers_reads_back_as_itself(bare, inner, outer):
    """Wrappers composed as models compose them (math mode once: it does not nest)."""
    text = bare
    for i in inner:
        text = _INNER[i](text)
    text = _OUTER[outer](text)
    assert extract_answer(text) == bare, text


@settings(max_examples=200, deadline=None)
@given(st.lists(st.lists(_WORD, min_size=1, max_size=8).map(" ".join), min_size=1, max_size=5),
       st.lists(st.sampled_from(["", " ", "\n"]), min_size=5, max_size=5), st.one_of(st.just(""), _REASONING))
def test_text_with_no_answer_form_outside_its_reasoning_gives_its_final_line(lines, gaps, reasoning):
    text = reasoning + "\n".join(line + gap for line, gap in zip(lines, gaps))
    assert extract_answer(text) == lines[-1]
