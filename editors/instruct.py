"""Edits of the instruction-following arm: how each constraint type is phrased in an
instruction, and local edits of a response that make it satisfy or violate a constraint.

Per constraint type (the ids of :mod:`vicogym.programs.instruct`) a :class:`Writer`
holds

- ``draw(rng) -> params``: parameters for the planner to ask (types that are not
  visually grounded; grounded ones draw theirs from the image's facts, ``Contract.ground``);
- ``phrases``: instruction templates with ``{param}`` placeholders (lists are joined
  with commas); the template composer picks one, so instructions vary in surface form;
- ``satisfy(response, params, rng) -> str``: a local edit of any response that makes it
  satisfy the constraint (the simulated executor's way of following the instruction, and
  reflection's "local response edit" recovery);
- ``violate(response, params, rng) -> str``: a local edit that makes it violate the
  constraint (the simulated target model's way of failing, and the property tests'
  counter-examples).

``satisfy`` and ``violate`` are tested by construction over random responses and
parameters: ``verify(satisfy(r))`` passes and ``verify(violate(r))`` fails for every ``r``.
Pure: text in, text out; randomness only from the ``rng`` passed in.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Mapping

import numpy as np

Edit = Callable[[str, Mapping[str, Any], np.random.Generator], str]


@dataclass(frozen=True)
class Writer:
    phrases: tuple[str, ...]
    satisfy: Edit
    violate: Edit
    draw: Callable[[np.random.Generator], dict[str, Any]] | None = None


WRITERS: dict[str, Writer] = {}


def writer(id: str, *phrases: str, draw: Callable[[np.random.Generator], dict[str, Any]] | None = None
           ) -> Callable[[Edit], "_Pending"]:
    """Decorate the ``satisfy`` edit of type ``id``; chain ``.violator`` for its ``violate``
    (``draw``: the parameter sampler of a type that is not grounded)::

        @writer("lowercase", "Write everything in lowercase letters.", draw=lambda rng: {})
        def _(response, params, rng): return response.lower()

        @_.violator
        def _(response, params, rng): return "Not " + response.lower()
    """
    def wrap(satisfy: Edit) -> _Pending:
        return _Pending(id, phrases, satisfy, draw)

    return wrap


class _Pending:
    def __init__(self, id: str, phrases: tuple[str, ...], satisfy: Edit, draw: Any):
        self.id, self.phrases, self.satisfy, self.draw = id, phrases, satisfy, draw

    def violator(self, violate: Edit) -> Edit:
        if self.id in WRITERS:
            raise ValueError(f"constraint {self.id} has a writer already")
        if not self.phrases:
            raise ValueError(f"constraint {self.id} needs at least one phrase")
        WRITERS[self.id] = Writer(self.phrases, self.satisfy, violate, self.draw)
        return violate


def phrase(id: str, params: Mapping[str, Any], rng: np.random.Generator) -> str:
    """One of the type's phrasings with ``params`` filled in."""
    templates = WRITERS[id].phrases
    values = {k: ", ".join(map(str, v)) if isinstance(v, (list, tuple)) else v for k, v in params.items()}
    return templates[int(rng.integers(len(templates)))].format(**values)


def satisfy(id: str, response: str, params: Mapping[str, Any], rng: np.random.Generator) -> str:
    return WRITERS[id].satisfy(response, params, rng)


def violate(id: str, response: str, params: Mapping[str, Any], rng: np.random.Generator) -> str:
    return WRITERS[id].violate(response, params, rng)
