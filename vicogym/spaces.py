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


class TextSpace(spaces.Text):
    """``gymnasium.spaces.Text`` over :data:`TEXT_CHARSET` that works in shared memory."""

    def __init__(self, max_length: int, *, min_length: int = 0, seed: Any = None):
        super().__init__(max_length, min_length=min_length, charset=TEXT_CHARSET, seed=seed)


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

