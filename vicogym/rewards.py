"""Difficulty rewards from the actor's pass rate.

The rewriter is rewarded for samples that are neither trivial nor impossible for
the actor: the reward peaks inside a "sweet zone" of pass rates (0.35-0.65 by
default). The same weight function ``w(p)`` serves reward-weighted regression of
the rewriter, where each edit transition is repeated ``floor(5 * w(p))`` times.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from typing import TypedDict

from vicogym.validation import is_number

SHAPES = ("band", "triangle", "gaussian")


class RewardConfigDict(TypedDict):
    """:class:`RewardConfig` as JSON (:meth:`RewardConfig.to_dict`)."""

    shape: str
    low: float
    high: float
    sigma: float


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

    def to_dict(self) -> RewardConfigDict:
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


# -- how many answers a probe draws -------------------------------------------------------
#: ``fixed``: every probe draws K answers (the paper's); ``sequential``: answers come in
#: batches, and a probe stops once the posterior says its pass rate is in or out of the zone
PROBE_POLICIES = ("fixed", "sequential")


#: the prior of a probe's pass rate: Jeffreys' Beta(1/2, 1/2), the uninformative prior of a
#: success rate
PROBE_PRIOR = 0.5


def zone_belief(scores: Iterable[float], zone: tuple[float, float]) -> float:
    """The posterior probability that the pass rate lies in ``zone`` after ``scores``
    (each in [0, 1]; a partial score counts as that share of a success), from Jeffreys'
    prior: ``P(low <= p <= high)`` under Beta(1/2 + s, 1/2 + n - s)."""
    from scipy.special import betainc

    scores = list(scores)
    a, b = PROBE_PRIOR + sum(scores), PROBE_PRIOR + len(scores) - sum(scores)
    return float(betainc(a, b, zone[1]) - betainc(a, b, zone[0]))


def probe_decided(scores: Iterable[float], zone: tuple[float, float], confidence: float) -> bool:
    """Whether a sequential probe may stop: the pass rate is in the zone, or out of it,
    with posterior probability at least ``confidence``."""
    belief = zone_belief(scores, zone)
    return belief >= confidence or belief <= 1.0 - confidence


def sequential_draws(scores: list[float], k: int, batch: int, zone: tuple[float, float], confidence: float) -> int:
    """How many of the answers ``scores`` (in the order drawn) a sequential probe of at
    most ``k`` answers in batches of ``batch`` draws: the first batch boundary at which
    :func:`probe_decided`, else ``k``."""
    drawn = 0
    while drawn < k:
        drawn = min(drawn + batch, k)
        if drawn < k and (drawn > len(scores) or probe_decided(scores[:drawn], zone, confidence)):
            return drawn
    return k
