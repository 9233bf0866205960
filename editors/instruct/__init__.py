"""Edits of the instruction-following arm: how each constraint type is phrased in an
instruction, and local edits of a response that make it satisfy or violate a constraint.

Per constraint type (the ids of :mod:`vicogym.programs.instruct`) a
:class:`~.edits.TypeEdits` holds

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

One module per category registers its types' edits with :func:`~.edits.edits`, as
:mod:`vicogym.programs.instruct` is laid out; :mod:`.text` holds the editing helpers they
share. ``satisfy`` and ``violate`` are tested by construction over random responses and
parameters: ``verify(satisfy(r))`` passes and ``verify(violate(r))`` fails for every ``r``.
Pure: text in, text out; randomness only from the ``rng`` passed in.
"""

# isort: off
from vicogym.editors.instruct.edits import (EDITS, ResponseEdit, TypeEdits, edits, english, phrase, quoted, satisfy,
                                           violate)
# the categories register their types' edits in import order (so the imports stay unsorted)
from vicogym.editors.instruct import format, lexical, structural, style, grounded, reasoning  # noqa: F401
# isort: on

__all__ = ["EDITS", "ResponseEdit", "TypeEdits", "edits", "english", "phrase", "quoted", "satisfy", "violate"]
