"""Constraint types of the instruction-following arm, each bound to its verifier by a
contract (the VISA method: constraints are verifiable the moment they are synthesised).

:mod:`.contracts` holds the contract, the registry and the two ways to register a type
(:func:`~.contracts.constraint` for a code verifier, :func:`~.contracts.judged` for the
LLM-judge track); :mod:`.text` the text helpers the types share; one module per category
holds its types, registered when this package is imported: :mod:`.format`,
:mod:`.lexical`, :mod:`.structural`, :mod:`.style`, :mod:`.grounded` (attribute, spatial,
counting, object and OCR grounded) and :mod:`.reasoning` (causal, conditional). A new
type is one decorated verifier in its category's module (and its edits in
``editors/instruct/<category>.py``).

Pure: no I/O, no global state beyond the registry built at import. Where a type has an
IFEval counterpart its semantics follow IFEval's (word counts are ``\\w+`` tokens,
keyword existence is a case-insensitive search, forbidden words match whole words, a
paragraph ends at a ``***`` divider), so the two can be compared instruction by
instruction.
"""

# isort: off
from vicogym.programs.instruct.contracts import (BLANK, CATEGORIES, FACT_KINDS, MAX_RESPONSE_CHARS, REGISTRY,
                                                 RELATIONS, TRACKS, Case, Contract, Verdict, pass_rate, register,
                                                 schema_problem, unverifiable, verify_all)
# the categories register their types in import order (so the imports stay unsorted)
from vicogym.programs.instruct import format, lexical, structural, style, grounded, reasoning  # noqa: F401
from vicogym.programs.instruct.grounded import GROUNDED
# isort: on

__all__ = ["BLANK", "CATEGORIES", "FACT_KINDS", "GROUNDED", "MAX_RESPONSE_CHARS", "REGISTRY", "RELATIONS", "TRACKS",
           "Case", "Contract", "Verdict", "pass_rate", "register", "schema_problem", "unverifiable", "verify_all"]
