"""Observation spaces every arm shares, and text observations in vector environments.

Gymnasium's ``AsyncVectorEnv`` (shared memory on, its default) reads ``Text`` observations
out of shared memory once, when it is built, and then keeps returning those first strings
(all tab characters, the charset's first symbol). :class:`TextSpace` is a ``Text`` space
whose shared-memory reader decodes the strings each time they are read, so the sync and
async vector environments return the same observations as single environments.
"""

from __future__ import annotations

import string
from collections.abc import Sequence
from typing import Any

import numpy as np
from gymnasium import spaces
from gymnasium.vector.utils import read_from_shared_memory

#: Characters the text spaces accept: printable ASCII, tabs and newlines, and the Unicode
#: blocks from Latin-1 through Miscellaneous Symbols (so real chart text fits).
TEXT_CHARSET = "".join(sorted(set(string.printable) | {chr(c) for c in range(0xA0, 0x2700)} | {"\ufffd"}))
_CHARSET_SET = frozenset(TEXT_CHARSET)


def to_charset(text: str) -> str:
    """``text`` with characters outside :data:`TEXT_CHARSET` replaced by U+FFFD."""
    return "".join(c if c in _CHARSET_SET else "\ufffd" for c in text)


def charset_summary(chars: Any, shown: int = 4) -> str:
    """A short description of a character set: its size, ``printable ASCII`` when it holds
    all of :data:`string.printable`, and its other runs of consecutive code points (the first
    ``shown`` of them), e.g. ``9925 characters: printable ASCII, U+00A0..U+26FF, U+FFFD``."""
    chars = set(chars)
    ascii_printable = set(string.printable) <= chars
    codes = sorted(ord(c) for c in chars - (set(string.printable) if ascii_printable else set()))
    runs: list[list[int]] = []
    for code in codes:
        if runs and code == runs[-1][1] + 1:
            runs[-1][1] = code
        else:
            runs.append([code, code])
    parts = ["printable ASCII"] if ascii_printable else []
    parts += [f"U+{a:04X}" if a == b else f"U+{a:04X}..U+{b:04X}" for a, b in runs[:shown]]
    if len(runs) > shown:
        parts.append(f"{len(runs) - shown} more runs")
    return f"{len(chars)} characters" + (f": {', '.join(parts)}" if parts else "")


class TextSpace(spaces.Text):
    """``gymnasium.spaces.Text`` over :data:`TEXT_CHARSET` that works in shared memory. Its
    ``repr`` names the character set by its size and code point runs, not character by
    character (gymnasium's would print all of them)."""

    def __init__(self, max_length: int, *, min_length: int = 0, seed: Any = None):
        super().__init__(max_length, min_length=min_length, charset=TEXT_CHARSET, seed=seed)

    def __repr__(self) -> str:
        return (f"{type(self).__name__}({self.min_length}, {self.max_length}, "
                f"charset=<{charset_summary(self.character_set)}>)")


class SharedTexts(Sequence):
    """The strings of ``n`` environments in one shared-memory block, decoded on access.

    A copy (``copy.deepcopy``, ``tuple(...)``) is a plain tuple of the current strings."""

    def __init__(self, space: spaces.Text, buffer: Any, n: int):
        self._space, self._buffer, self._n = space, buffer, n

    def _codes(self) -> np.ndarray:
        return np.frombuffer(self._buffer.get_obj(), dtype=np.int32).reshape((self._n, self._space.max_length))

    def __len__(self) -> int:
        return self._n

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            return tuple(self)[index]
        chars, limit = self._space.character_list, len(self._space.character_set)
        return "".join(chars[c] for c in self._codes()[index] if c < limit)

    def __deepcopy__(self, memo: dict) -> tuple[str, ...]:
        return tuple(self)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Sequence) and tuple(self) == tuple(other)

    def __hash__(self) -> int:
        return hash(tuple(self))

    def __repr__(self) -> str:
        return repr(tuple(self))


@read_from_shared_memory.register(TextSpace)
def _read_text_space(space: TextSpace, shared_memory: Any, n: int = 1) -> SharedTexts:
    return SharedTexts(space, shared_memory, n)

