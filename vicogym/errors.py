"""Typed errors of vicogym.

Every rejected edit raises :class:`InvalidEdit` with a stable code. The core defines the
codes any arm may use (:data:`CORE_ERROR_CODES`); each arm registers the codes it adds
with :func:`register_error_codes` when its modules are imported. :data:`EDIT_ERROR_CODES`
holds every code registered so far. The codes are part of the public interface:
generation manifests count rejections by code and rewriter training reads them.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

CORE_ERROR_CODES: Mapping[str, str] = MappingProxyType({
    "malformed": "the edit is not a JSON object with an 'ops' list or a 'replace' structure",
    "unknown_op": "an op name that the arm does not define",
    "bad_field": "an op lacks a required field, has an unknown one, or a field has the wrong type",
    "bad_value": "a value is out of the accepted range or not of the accepted kind",
    "not_found": "a name (row, object, region ...) that the structure does not hold",
    "ambiguous": "the question has no unique answer after the edit (a tie, a division by zero)",
    "render_failed": "the structure could not be rendered",
    "episode_over": "the episode has ended; call reset()",
    "no_change": "the edit leaves the structure exactly as it was (a re-roll of the actor earns nothing)",
    "too_large": "the structure's or question's text would not fit the observation (max_structure_chars, "
                 "max_question_chars)",
    "unhandled": "the arm raised an unexpected error on this edit (a bug worth reporting); nothing changed",
})

_CODES: dict[str, str] = dict(CORE_ERROR_CODES)
_OWNERS: dict[str, str] = {code: "core" for code in CORE_ERROR_CODES}
#: every registered code -> its description (read-only view; arms add theirs on import)
EDIT_ERROR_CODES: Mapping[str, str] = MappingProxyType(_CODES)


def register_error_codes(owner: str, codes: Mapping[str, str]) -> None:
    """Add an arm's own edit error codes. Registering the same code with the same
    description again is a no-op; taking a code another owner defined is an error."""
    for code, description in codes.items():
        if not isinstance(code, str) or not code.isidentifier() or not isinstance(description, str):
            raise TypeError(f"expected error codes as identifier -> description strings, got {code!r}: {description!r}")
        known = _OWNERS.get(code)
        if known is not None and (known != owner or _CODES[code] != description):
            raise ValueError(f"edit error code {code!r} is already registered by {known!r}; choose another name")
    for code, description in codes.items():
        _CODES[code] = description
        _OWNERS[code] = owner


def error_code_owner(code: str) -> str:
    return _OWNERS[code]


class VicogymError(Exception):
    """Base class of the package's own errors."""


class InvalidEdit(VicogymError, ValueError):
    """An edit the environment rejects; the environment state is left unchanged.

    ``code`` is one of :data:`EDIT_ERROR_CODES`; ``op`` and ``field`` name where the
    problem is (``op`` is the index and name of the op, e.g. ``"ops[2] set_cell"``).
    """

    def __init__(self, code: str, message: str, *, op: str | None = None, field: str | None = None):
        if code not in _CODES:
            raise ValueError(f"expected an edit error code in {sorted(_CODES)}, got {code!r}")
        self.code = code
        self.message = message
        self.op = op
        self.field = field
        super().__init__(self.__str__())

    def __str__(self) -> str:
        where = f"{self.op}: " if self.op else ""
        return f"[{self.code}] {where}{self.message}"

    def __reduce__(self):  # picklable across worker processes, keyword arguments included
        return _rebuild_invalid_edit, (self.code, self.message, self.op, self.field)

    def at(self, op: str) -> InvalidEdit:
        """The same error, located at ``op`` (kept if already located)."""
        if self.op is not None:
            return self
        return InvalidEdit(self.code, self.message, op=op, field=self.field)

    def to_dict(self) -> dict[str, Any]:
        return {"code": self.code, "message": self.message, "op": self.op, "field": self.field}


def _rebuild_invalid_edit(code: str, message: str, op: str | None, field: str | None) -> InvalidEdit:
    return InvalidEdit(code, message, op=op, field=field)


class GenerationError(VicogymError, RuntimeError):
    """Rejection sampling ran out of tries (``max_tries``) without a valid sample or edit."""


class UnknownEnvironment(VicogymError, KeyError):
    """An environment id that the registry does not hold (with suggestions)."""

    def __str__(self) -> str:  # KeyError quotes its message; keep it readable
        return str(self.args[0])


class MissingExtra(VicogymError, ImportError):
    """An environment needs packages of an optional extra that is not installed."""


class SourceError(VicogymError, ValueError):
    """Source data that cannot be used; the message names the file, the line and the fix."""


class RunError(VicogymError, ValueError):
    """A generation or verification run that cannot start or go on (its folder, settings)."""


class RunInterrupted(KeyboardInterrupt):
    """A run stopped by Ctrl-C: where it writes, the samples it keeps there and the samples
    asked for. Running it again with the same settings resumes it."""

    def __init__(self, out: str, samples: int, requested: int):
        super().__init__(f"{out}: {samples} of {requested} samples kept")
        self.out, self.samples, self.requested = out, samples, requested


class UnknownConstraintType(VicogymError, ValueError):
    """A row names a constraint type (or a version of its code, by SHA-256) that no registry
    this process loaded holds. Model-written code is never taken from a row: load the
    run's types explicitly (``vicogym.instruct.run_folder.load_types``)."""


class ModelError(VicogymError, RuntimeError):
    """A model server or model folder that did not answer (after its retries)."""
