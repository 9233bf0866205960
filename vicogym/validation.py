"""One way to do each small thing that every layer does: tell a whole number from a
bool, a number from NaN, a name from a near miss, and draw an item with a random
generator. The messages stay where the checks are (each names its setting); these are
the tests they apply."""

from __future__ import annotations

import difflib
import math
from typing import Any, Iterable, Mapping, Sequence

#: the largest seed a vicogym episode takes (NumPy's ``integers(2**63 - 1)``)
MAX_SEED = 2**63 - 1


def is_int(value: Any, low: float | None = None, high: float | None = None) -> bool:
    """``value`` is a whole number (an ``int``, never a ``bool``) within ``[low, high]``."""
    return (isinstance(value, int) and not isinstance(value, bool)
            and (low is None or value >= low) and (high is None or value <= high))


def is_number(value: Any, low: float | None = None, high: float | None = None, finite: bool = True) -> bool:
    """``value`` is an ``int`` or ``float`` (never a ``bool``), finite unless ``finite`` is
    false, within ``[low, high]``."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    if finite and isinstance(value, float) and not math.isfinite(value):  # an int is finite however long
        return False
    return (low is None or value >= low) and (high is None or value <= high)


def did_you_mean(name: Any, known: Iterable[str], cutoff: float = 0.5, n: int = 1,
                 shown: Mapping[str, str] | None = None) -> str:
    """``"; did you mean 'x'?"`` for the known names closest to ``name`` (``" or "``
    between several; ``shown`` maps a compared form to the name to print), or ``""``
    when none is close."""
    close = difflib.get_close_matches(str(name), list(known), n=n, cutoff=cutoff)
    shown = shown or {}
    return f"; did you mean {' or '.join(repr(shown.get(c, c)) for c in close)}?" if close else ""


def pick(rng: Any, items: Sequence[Any]) -> Any:
    """One of ``items``, drawn with ``rng`` (a ``numpy.random.Generator``)."""
    return items[int(rng.integers(len(items)))]
