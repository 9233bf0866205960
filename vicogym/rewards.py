"""Difficulty rewards from the actor's pass rate.

The rewriter is rewarded for samples that are neither trivial nor impossible for
the actor: the reward peaks inside a "sweet zone" of pass rates (0.35-0.65 by
default). The same weight function ``w(p)`` serves reward-weighted regression of
the rewriter, where each edit transition is repeated ``floor(5 * w(p))`` times.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Iterable

from vicogym.validation import is_number

SHAPES = ("band", "triangle", "gaussian")


@dataclass(frozen=True)
class RewardConfig:
    """Shape of the difficulty reward ``f(p)``, valued in [0, 1].

    - ``band``: 1 inside ``[low, high]``, 0 outside.
    - ``triangle``: 1 at the zone's centre, falling linearly to 0 at p=0 and p=1.
    - ``gaussian``: ``exp(-(p - centre)^2 / (2 sigma^2))`` with ``sigma`` given.
    """

    shape: str = "band"
    low: float = 0.35
    high: float = 0.65
    sigma: float = 0.15

    def __post_init__(self) -> None:
        if self.shape not in SHAPES:
            raise ValueError(f"expected shape in {SHAPES}, got {self.shape!r}")
        for name in ("low", "high", "sigma"):
            value = getattr(self, name)
            if not is_number(value):
                raise TypeError(f"expected {name} to be a finite number, got {value!r}")
        if not 0.0 <= self.low < self.high <= 1.0:
            raise ValueError(f"expected 0 <= low < high <= 1, got low={self.low}, high={self.high}")
        if self.sigma <= 0:
            raise ValueError(f"expected sigma > 0, got {self.sigma}")

    @property
    def centre(self) -> float:
        return (self.low + self.high) / 2.0

    def to_dict(self) -> dict:
        return asdict(self)


def weight(p: float, config: RewardConfig = RewardConfig()) -> float:
    """The difficulty weight ``w(p)`` in [0, 1] of a pass rate ``p`` in [0, 1]."""
    if not is_number(p, 0.0, 1.0, finite=False):
        raise ValueError(f"expected a pass rate in [0, 1], got {p!r}")
    if config.shape == "band":
        return 1.0 if config.low <= p <= config.high else 0.0
    if config.shape == "triangle":
        c = config.centre
        return p / c if p <= c else (1.0 - p) / (1.0 - c)
    return math.exp(-((p - config.centre) ** 2) / (2.0 * config.sigma**2))


def difficulty_reward(p: float, config: RewardConfig = RewardConfig()) -> float:
    """The rewriter's reward for a valid edit whose sample has actor pass rate ``p``."""
    return weight(p, config)


def rwr_copies(p: float, config: RewardConfig = RewardConfig(), scale: int = 5) -> int:
    """How many times reward-weighted regression repeats a transition: ``floor(scale * w(p))``."""
    return math.floor(scale * weight(p, config))


def in_sweet_zone(p: float, config: RewardConfig = RewardConfig()) -> bool:
    return config.low <= p <= config.high


def sweet_share(pass_rates: Iterable[float], zone: tuple[float, float]) -> float:
    """The share of ``pass_rates`` inside the sweet ``zone`` ``(low, high)`` (0 for none)."""
    rates = list(pass_rates)
    return float(sum(zone[0] <= p <= zone[1] for p in rates) / len(rates)) if rates else 0.0
