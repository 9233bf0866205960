"""The evidence arm's scorers read what a reader would accept: an option letter in the forms
people write it (and not a word that starts with one, nor two letters), numbers in digits
or words either way, and questions about a difference that say which way it is taken."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vicogym.answers import number_from_words, short_answer
from vicogym.programs.chart import TEMPLATES
from vicogym.programs.evidence import letter_of, score_answer
from vicogym.programs.evidence.charts import derive, question
from vicogym.structures.chart import Table

# ------------------------------------------------------------------ option letters

#: the forms a reply names an option letter in ({} is the letter)
LETTER_FORMS = ("{}", "{}.", "({})", "{})", "[{}]", "{}:", "**{}**", "*{}*", "`{}`", '"{}"', "Option {}",
                "option ({})", "Choice {}", "The answer is {}", "The answer is {}.", "The answer is ({}).",
                "Answer: {}", "**Answer:** {}", "The correct answer is option {}.", "{}. 12 apples",
                "({}) 12 apples", "{}) 12 apples", "{} - 12 apples", "Final answer: {}\n\nThe chart shows it.",
                "I think the answer is {}")


@settings(max_examples=300, deadline=None)
@given(n_options=st.integers(2, 6), data=st.data())
def test_a_letter_in_any_supported_form_scores_1_and_another_letter_0(n_options, data):
    letters = "ABCDEF"[:n_options]
    letter = data.draw(st.sampled_from(letters))
    other = data.draw(st.sampled_from([x for x in letters if x != letter]))
    form = data.draw(st.sampled_from(LETTER_FORMS))
    said = form.format(data.draw(st.sampled_from([letter, letter.lower()])))
    assert score_answer("letter", said, letter, n_options=n_options) == 1.0, said
    assert score_answer("letter", said, other, n_options=n_options) == 0.0, said


def test_a_reply_naming_two_letters_or_none_scores_0():
    for said in ("A or B", "B or C", "A, B", "A/B", "B and D", "(A) or (C)", "The answer is B, not C",
                 "Option A. Option B.", "ABCD", "", "   ", "12", "The answer is 12."):
        for answer in "ABCD":
            assert score_answer("letter", said, answer, n_options=4) == 0.0, (said, answer)


def test_a_word_that_starts_with_a_letter_is_not_that_letter():
    for said, read in [("Because the bar is tallest", None), ("A bar chart", None), ("Apples", None),
                       ("the answer is a bar chart", None), ("A.M.", None), ("I think so", None), ("A", "A"),
                       ("a", "A"), ("a) 12", "A"), ("A. 12 apples", "A"), ("Bananas are B", "B"),
                       ("The answer is A because it is highest", "A"), ("Chart B", "B"), ("\uff22", "B"),
                       ("E", None), ("(E)", None), ("B", "B")]:
        assert letter_of(said, 4) == read, said


# ------------------------------------------------------------------ numbers in words

_ONES = ("zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen "
         "seventeen eighteen nineteen").split()
_TENS = "twenty thirty forty fifty sixty seventy eighty ninety".split()


def spelled(n: int, hyphen: bool, and_: bool) -> str:
    """``n`` in [0, 999,999] in English words (this test's own writer)."""
    if n < 20:
        return _ONES[n]
    if n < 100:
        tens, ones = divmod(n, 10)
        return _TENS[tens - 2] + (("-" if hyphen else " ") + _ONES[ones] if ones else "")
    if n < 1000:
        hundreds, rest = divmod(n, 100)
        return f"{_ONES[hundreds]} hundred" + ((" and " if and_ else " ") + spelled(rest, hyphen, and_) if rest else "")
    thousands, rest = divmod(n, 1000)
    return f"{spelled(thousands, hyphen, and_)} thousand" + (" " + spelled(rest, hyphen, and_) if rest else "")


@settings(max_examples=300, deadline=None)
@given(n=st.one_of(st.integers(0, 120), st.integers(0, 999_999)), hyphen=st.booleans(), and_=st.booleans(),
       upper=st.booleans())
def test_a_number_and_its_words_score_1_both_ways(n, hyphen, and_, upper):
    words = spelled(n, hyphen, and_)
    words = words.capitalize() if upper else words
    assert number_from_words(words) == n
    assert short_answer(str(n), words) == 1.0
    assert short_answer(words, str(n)) == 1.0
    assert short_answer(words + ".", f"{n}.0") == 1.0
    assert short_answer(str(n + 1), words) == 0.0 and short_answer(words, str(n + 1)) == 0.0
    assert score_answer("short", str(n), words) == 1.0


@settings(max_examples=100, deadline=None)
@given(n=st.integers(0, 999_999), hyphen=st.booleans())
def test_this_tests_number_words_agree_with_word2number(n, hyphen):
    w2n = pytest.importorskip("word2number.w2n")
    assert w2n.word_to_num(spelled(n, hyphen, False)) == n


def test_number_words_match_their_digits_and_nothing_else():
    for said, gold in [("2", "two"), ("two", "2"), ("Twenty-one", "21"), ("105", "one hundred and five"),
                       ("0", "zero"), ("zero", "0.0")]:
        assert short_answer(said, gold) == 1.0, (said, gold)
    for said, gold in [("tent", "ten"), ("ten", "tent"), ("two apples", "2"), ("2", "two apples"), ("one two", "12"),
                       ("one two", "3"), ("hundred", "100"), ("thousand", "1000"), ("and two", "2"),
                       ("twenty and one", "21"), ("none", "1"), ("someone", "1"), ("3", "two")]:
        assert short_answer(said, gold) == 0.0, (said, gold)


# ------------------------------------------------------------------ differences

def test_a_slides_difference_question_says_the_difference_is_absolute():
    low = Table("Year", ("2020", "2021"), ("Sales",), ((14.4,), (14.6,)))
    high = Table("Year", ("2020", "2021"), ("Sales",), ((14.6,), (14.4,)))
    ref = {"unit": 0, "row": "2020", "series": "Sales"}
    program = {"op": "diff", "a": ref, "b": {**ref, "unit": 1}}
    for tables in ([low, high], [high, low]):  # whichever slide holds the larger value
        assert derive(program, tables) == "0.2"
        text = question(program, ["North", "South"], tables)
        assert text.startswith("What is the absolute difference between the Sales value for 2020 in the slide "
                               "titled 'North'"), text


def test_every_chart_template_that_asks_a_difference_of_two_says_which_way():
    asked = [t for t in TEMPLATES if "difference" in t.text and "{a}" in t.text]
    assert asked
    for template in asked:
        assert "absolute difference" in template.text, template
