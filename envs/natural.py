"""``vicogym/Natural-v0`` (in progress): what the simulated actor reads from an edited
natural image.

:func:`difficulty_features` measures what makes the question harder to answer from the
picture: how little of it the targets cover, how little they stand out from the edited
surroundings, how much the surroundings look like them (pasted distractors), and how
cluttered the surroundings are. :func:`difficulty` folds them into one number in [0, 1];
:func:`distractors` gives wrong answers of the answer's type.
"""

from __future__ import annotations

from typing import Any

import numpy as np

#: a ring this many pixels wide around the targets is their "surroundings" for contrast
RING = 24
#: CIE76 colour distance at which a target stands out completely
STANDS_OUT = 40.0
COLOURS = ("red", "orange", "yellow", "green", "blue", "purple", "pink", "brown", "black", "white", "gray")
WEIGHTS = {"small": 0.3, "low_contrast": 0.3, "distractor_similarity": 0.25, "clutter": 0.15}


def _lab(image: np.ndarray) -> np.ndarray:
    import cv2

    lab = cv2.cvtColor(image, cv2.COLOR_RGB2LAB).astype(float)
    lab[:, :, 0] *= 100 / 255  # OpenCV's 8-bit Lab: L in 0-255, a and b offset by 128
    lab[:, :, 1:] -= 128
    return lab


def _histogram(lab: np.ndarray, mask: np.ndarray) -> np.ndarray:
    pixels = lab[mask][:, 1:]
    hist, _, _ = np.histogram2d(pixels[:, 0], pixels[:, 1], bins=8, range=[[-128, 128], [-128, 128]])
    total = hist.sum()
    return hist / total if total else hist


def difficulty_features(image: np.ndarray, targets: np.ndarray) -> dict[str, float]:
    """Features of an image whose answer-relevant pixels are ``targets`` (a boolean mask of
    the image): ``area`` (the targets' share of the image), ``contrast`` (CIE76 distance of
    the targets' mean colour from a ring around them), ``distractor_similarity`` (how much
    the rest of the image's colours overlap the targets', Bhattacharyya coefficient) and
    ``clutter`` (edge density outside the targets)."""
    import cv2

    if targets.shape != image.shape[:2] or not targets.any():
        raise ValueError("expected a non-empty target mask of the image's size")
    lab = _lab(image)
    kernel = cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (2 * RING + 1, 2 * RING + 1))
    ring = cv2.dilate(targets.astype(np.uint8), kernel).astype(bool) & ~targets
    rest = ~targets
    contrast = float(np.linalg.norm(lab[targets].mean(axis=0) - lab[ring].mean(axis=0))) if ring.any() else STANDS_OUT
    similarity = float(np.sqrt(_histogram(lab, targets) * _histogram(lab, rest)).sum()) if rest.any() else 0.0
    edges = cv2.Canny(cv2.cvtColor(image, cv2.COLOR_RGB2GRAY), 100, 200) > 0
    clutter = float(edges[rest].mean()) if rest.any() else 0.0
    return {"area": float(targets.mean()), "contrast": contrast, "distractor_similarity": similarity,
            "clutter": clutter}


def difficulty(features: dict[str, float]) -> float:
    """0 (easy) to 1 (hard): small targets, low contrast, look-alike surroundings, clutter."""
    small = 1.0 - min(1.0, np.sqrt(features["area"] / 0.25))  # a quarter of the image is plainly visible
    low_contrast = 1.0 - min(1.0, features["contrast"] / STANDS_OUT)
    clutter = min(1.0, features["clutter"] / 0.2)
    score = (WEIGHTS["small"] * small + WEIGHTS["low_contrast"] * low_contrast
             + WEIGHTS["distractor_similarity"] * features["distractor_similarity"] + WEIGHTS["clutter"] * clutter)
    return float(min(1.0, max(0.0, score)))


def distractors(answer: str, answer_type: str, known: Any = ()) -> list[str]:
    """Plausible wrong answers of ``answer``'s type: the other of yes/no; counts one or two
    away; another colour for a colour; otherwise other answers of the same source."""
    if answer_type == "yes/no":
        return ["no" if answer == "yes" else "yes"]
    if answer_type == "number":
        n = int(answer)
        return [str(v) for v in (n + 1, n - 1, n + 2, n - 2) if v >= 0]
    if answer in COLOURS:
        return [c for c in COLOURS if c != answer]
    others = sorted({str(a) for a in known if str(a) != answer and str(a) not in ("yes", "no") and not str(a).isdigit()})
    return others or ["something else"]


__all__ = ["difficulty", "difficulty_features", "distractors"]
