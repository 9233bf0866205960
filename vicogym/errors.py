"""Typed errors of vicogym.

Every rejected edit raises :class:`InvalidEdit` with one of the stable codes in
:data:`EDIT_ERROR_CODES`. The codes are part of the public interface: generation
manifests count rejections by code and rewriter training reads them.
"""

from __future__ import annotations

from typing import Any

EDIT_ERROR_CODES: dict[str, str] = {
    "malformed": "the edit is not a JSON object with an 'ops' list or a 'replace' structure",
    "unknown_op": "an op name that the arm does not define",
    "bad_field": "an op lacks a required field, has an unknown one, or a field has the wrong type",
    "bad_value": "a value is not a finite number, or is out of the accepted range",
    "not_found": "a row or series label that the table does not have",
    "duplicate_label": "a row or series label that the table already has",
    "anchor": "the edit removes or renames a row or series that the answer is anchored to",
    "invariance": "the label rule requires values that the edit would change",
    "chart_type": "the chart type does not fit the table (series count, negative or missing values)",
    "size": "the table would become too small or too large to chart",
    "ambiguous": "the question has no unique answer after the edit (a tie, a division by zero)",
    "render_failed": "the structure could not be rendered",
    "occluded": "the rendered image hides data the question may need (a legend over the marks)",
    "episode_over": "the episode has ended; call reset()",
}


class VicogymError(Exception):
    """Base class of the package's own errors."""


class InvalidEdit(VicogymError, ValueError):
    """An edit the environment rejects; the environment state is left unchanged.

    ``code`` is one of :data:`EDIT_ERROR_CODES`; ``op`` and ``field`` name where the
    problem is (``op`` is the index and name of the op, e.g. ``"ops[2] set_cell"``).
    """

    def __init__(self, code: str, message: str, *, op: str | None = None, field: str | None = None):
        if code not in EDIT_ERROR_CODES:
            raise ValueError(f"expected an edit error code in {sorted(EDIT_ERROR_CODES)}, got {code!r}")
        self.code = code
        self.message = message
        self.op = op
        self.field = field
        super().__init__(self.__str__())

    def __str__(self) -> str:
        where = f"{self.op}: " if self.op else ""
        return f"[{self.code}] {where}{self.message}"

    def at(self, op: str) -> "InvalidEdit":
        """The same error, located at ``op`` (kept if already located)."""
        if self.op is not None:
            return self
        return InvalidEdit(self.code, self.message, op=op, field=self.field)

    def to_dict(self) -> dict[str, Any]:
        return {"code": self.code, "message": self.message, "op": self.op, "field": self.field}


class GenerationError(VicogymError, RuntimeError):
    """Rejection sampling ran out of tries (``max_tries``) without a valid sample."""


class UnknownEnvironment(VicogymError, KeyError):
    """An environment id that the registry does not hold (with suggestions)."""

    def __str__(self) -> str:  # KeyError quotes its message; keep it readable
        return str(self.args[0])
