"""What the natural-image actor stand-in reads: difficulty features and wrong answers."""

import numpy as np
import pytest

from vicogym.envs.natural import difficulty, difficulty_features, distractors
from vicogym.renderers.natural import box_mask, replay


def _scene(background, target_colour):
    image = np.full((100, 100, 3), background, np.uint8)
    image[40:60, 40:60] = target_colour
    return image, box_mask((40, 40, 60, 60), 100, 100)


def test_a_target_that_blends_in_is_harder_than_one_that_stands_out():
    plain, targets = _scene((200, 200, 200), (200, 30, 30))
    blended, _ = _scene((190, 40, 40), (200, 30, 30))
    easy, hard = difficulty_features(plain, targets), difficulty_features(blended, targets)
    assert easy["contrast"] > 40 > 15 > hard["contrast"]
    assert hard["distractor_similarity"] > easy["distractor_similarity"]
    assert difficulty(hard) > difficulty(easy)
    assert easy["area"] == pytest.approx(0.04)


def test_edits_that_add_look_alikes_and_clutter_raise_difficulty():
    from vicogym.sources.natural import load_image

    source = load_image("skimage:coffee")
    targets = box_mask((320, 65, 425, 330), 400, 600)  # the spoon
    protected = targets.copy()
    before = difficulty(difficulty_features(source, targets))
    noisy, _ = replay(source, protected, ({"op": "noise", "sigma": 30},), seed=0)
    pasted, _ = replay(source, protected, ({"op": "paste", "source": [330, 200, 420, 320], "to": [470, 250]},), seed=0)
    assert difficulty_features(noisy, targets)["clutter"] > difficulty_features(source, targets)["clutter"]
    assert difficulty(difficulty_features(noisy, targets)) > before
    assert difficulty_features(pasted, targets)["distractor_similarity"] >= difficulty_features(source, targets)[
        "distractor_similarity"]


@pytest.mark.parametrize("answer, answer_type, expected", [
    ("yes", "yes/no", ["no"]), ("0", "number", ["1", "2"]), ("3", "number", ["4", "2", "5", "1"]),
])
def test_wrong_answers_are_of_the_answers_type(answer, answer_type, expected):
    assert distractors(answer, answer_type) == expected


def test_wrong_answers_for_words_come_from_colours_or_the_source():
    assert "orange" not in distractors("orange", "other") and "blue" in distractors("orange", "other")
    assert distractors("spoon", "other", ["spoon", "cat", "3", "yes", "rocket"]) == ["cat", "rocket"]
    assert distractors("spoon", "other") == ["something else"]


def test_features_need_a_target():
    with pytest.raises(ValueError, match="expected a non-empty target mask"):
        difficulty_features(np.zeros((10, 10, 3), np.uint8), np.zeros((10, 10), bool))
