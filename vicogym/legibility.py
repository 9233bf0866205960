"""How small printed text may be and still be read: the legibility curves measured with
Tesseract (:mod:`vicogym.ocr`) by ``benchmarks/legibility.py`` and shipped as
``assets/legibility.json``.

For each font the package prints with, and each way it is drawn (``drawn``: ``forms``, a
form page's region renderer, PIL at a fractional size, supersampled below one view pixel
per unit pixel; ``slides``, a slide's title and bullets, PIL at a whole pixel size;
``charts``, matplotlib's Agg rasteriser), the benchmark drew realistic strings at cap
heights from 2 to 14 view pixels, read each with the reader's documented procedure and
counted the words read exactly. A logistic curve of word accuracy against cap height,

    p(c) = 1 / (1 + exp(-k (c - c50))),

is fitted to those counts by maximum likelihood (:func:`fit`); a font's **legible size**
is its ``c50``, the cap height at which Tesseract reads a word right half of the time. No
threshold of ours enters beyond "half".

Tesseract is a floor: a strong vision-language model reads smaller text than it does, so
"legible" here means that at least Tesseract reads it half of the time.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Any

import numpy as np

#: the ways the package draws text, each measured on its own
DRAWN = ("forms", "slides", "charts", "chart_views")
#: the font of chart text (data labels, tick labels, legends), which matplotlib draws
TEXT_FONT = "DejaVuSans.ttf"
TEXT_DRAWN = "chart_views"
ASSET = "legibility.json"


@dataclass(frozen=True)
class Size:
    """What was measured at one cap height: ``strings`` drawn, ``words`` in them and how
    many were read exactly (``right``), and the characters compared (``chars``, the longer
    of truth and reading per string) against the edits that turn the reading into the truth
    (``edits``)."""

    cap: float
    strings: int
    words: int
    right: int
    chars: int
    edits: int

    @property
    def word_accuracy(self) -> float:
        return self.right / self.words if self.words else 0.0

    @property
    def char_accuracy(self) -> float:
        return 1.0 - self.edits / self.chars if self.chars else 0.0

    def to_dict(self) -> dict[str, Any]:
        return {"cap": self.cap, "strings": self.strings, "words": self.words, "right": self.right,
                "chars": self.chars, "edits": self.edits, "word_accuracy": round(self.word_accuracy, 4),
                "char_accuracy": round(self.char_accuracy, 4)}


@dataclass(frozen=True)
class Curve:
    """One font drawn one way: the fitted slope ``k`` (per view pixel of cap height) and
    legible size ``c50`` (view pixels), and the measurements they were fitted to."""

    font: str
    drawn: str
    k: float
    c50: float
    sizes: tuple[Size, ...]

    def probability(self, cap_px: float) -> float:
        """The fitted chance that Tesseract reads a word of cap height ``cap_px`` right."""
        return logistic(self.k * (float(cap_px) - self.c50))


def logistic(z: float) -> float:
    # split by sign so exp never overflows
    if z >= 0:
        return 1.0 / (1.0 + math.exp(-z))
    e = math.exp(z)
    return e / (1.0 + e)


def fit(caps: Sequence[float], words: Sequence[int], right: Sequence[int], max_iter: int = 100) -> tuple[float, float]:
    """The maximum-likelihood ``(k, c50)`` of ``right[i]`` of ``words[i]`` words read right at
    cap height ``caps[i]``, each word read right with probability ``1/(1+exp(-k (c - c50)))``.

    Newton's method on the binomial log-likelihood of ``a + b c`` (``k = b``, ``c50 = -a/b``),
    halving a step that does not raise it, from the line through the middle of the caps; it
    converges to the optimum's last digits, so the same counts give the same fit. Raises
    ``ValueError`` when the counts do not pin a rising curve down: no word right, every word
    right, right and wrong words separated by a cap height (the slope grows without bound),
    or accuracy falling with size."""
    c = np.asarray(caps, float)
    n = np.asarray(words, float)
    r = np.asarray(right, float)
    if not (c.shape == n.shape == r.shape) or c.ndim != 1 or len(c) < 2:
        raise ValueError(f"expected caps, words and right as equal lists of at least 2 sizes, got lengths "
                         f"{len(c)}, {len(n)}, {len(r)}")
    if np.any(n < 0) or np.any(r < 0) or np.any(r > n):
        raise ValueError("expected 0 <= right <= words at every size")
    if r.sum() == 0 or r.sum() == n.sum():
        raise ValueError(f"expected some words read right and some wrong to fit a curve, got {int(r.sum())} of "
                         f"{int(n.sum())} right")
    tried = n > 0
    first_right = c[tried & (r > 0)].min()
    last_wrong = c[tried & (r < n)].max()
    if first_right >= last_wrong:
        raise ValueError(f"the counts pin no curve down: every word at {last_wrong:g} px or under is wrong and every "
                         f"word at {first_right:g} px or over right, so right and wrong words are separated by a cap "
                         "height and the slope grows without bound; measure more sizes or strings")
    x = c - c.mean()  # centred, so the two parameters are nearly independent

    def loglik(a: float, b: float) -> float:
        z = a + b * x
        return float(np.sum(r * z - n * np.logaddexp(0.0, z)))

    a, b = 0.0, 1.0
    best = loglik(a, b)
    for _ in range(max_iter):
        z = a + b * x
        p = 1.0 / (1.0 + np.exp(-z))
        g = np.array([np.sum(r - n * p), np.sum((r - n * p) * x)])
        w = n * p * (1 - p)
        h = np.array([[np.sum(w), np.sum(w * x)], [np.sum(w * x), np.sum(w * x * x)]])
        try:
            step = np.linalg.solve(h, g)
        except np.linalg.LinAlgError:
            break
        t = 1.0
        while t > 1e-10:
            na, nb = a + t * step[0], b + t * step[1]
            value = loglik(na, nb)
            if value >= best:
                break
            t /= 2
        else:
            break
        moved = abs(na - a) + abs(nb - b)
        a, b, best = na, nb, value
        if moved < 1e-13 * (1 + abs(a) + abs(b)):
            break
    if not (b > 0 and math.isfinite(a) and math.isfinite(b)):
        raise ValueError(f"the counts pin no rising curve down (slope {b:g} per px): accuracy does not rise with "
                         "size; measure more sizes or strings")
    return float(b), float(c.mean() - a / b)


def _curve(record: dict[str, Any]) -> Curve:
    sizes = tuple(Size(float(s["cap"]), int(s["strings"]), int(s["words"]), int(s["right"]), int(s["chars"]),
                       int(s["edits"])) for s in record["sizes"])
    return Curve(str(record["font"]), str(record["drawn"]), float(record["k"]), float(record["c50"]), sizes)


@lru_cache(maxsize=1)
def stored() -> dict[str, Any]:
    """``assets/legibility.json`` as stored (provenance and curves), read once."""
    text = resources.files("vicogym.assets").joinpath(ASSET).read_text(encoding="utf-8")
    return json.loads(text)


@lru_cache(maxsize=1)
def _curves() -> dict[tuple[str, str], Curve]:
    return {(c.font, c.drawn): c for c in map(_curve, stored()["curves"])}


def curves() -> list[Curve]:
    """Every stored curve."""
    return list(_curves().values())


def curve(font: str, drawn: str = "forms") -> Curve:
    """The stored curve of ``font`` (a font file name such as ``DejaVuSans.ttf``,
    ``DejaVuSerif-Bold.ttf`` or ``STIXGeneralBol.ttf``) drawn the way ``drawn`` names."""
    if drawn not in DRAWN:
        raise ValueError(f"expected drawn as one of {', '.join(DRAWN)}, got {drawn!r}")
    found = _curves().get((font, drawn))
    if found is None:
        known = sorted(f for f, d in _curves() if d == drawn)
        raise ValueError(f"no legibility curve for font {font!r} drawn by {drawn}; measured fonts: "
                         f"{', '.join(known)} (benchmarks/legibility.py measures more)")
    return found


def legible_px(font: str, drawn: str = "forms") -> float:
    """The cap height (view pixels) at which Tesseract reads a word of ``font`` right half
    of the time: the fitted ``c50`` of its curve."""
    return curve(font, drawn).c50


def read_probability(cap_px: float, font: str, acuity: float = 1.0, drawn: str = "forms") -> float:
    """The fitted chance that a word of ``font`` shown at ``cap_px`` view pixels is read
    right, for a reader that needs ``acuity`` times the pixels Tesseract needs (1.3: 30%
    more): the curve at ``cap_px / acuity``; 0 for text not shown."""
    if not (isinstance(acuity, (int, float)) and math.isfinite(acuity) and acuity > 0):
        raise ValueError(f"expected acuity as a positive number, got {acuity!r}")
    if cap_px <= 0:
        return 0.0
    return curve(font, drawn).probability(float(cap_px) / float(acuity))
