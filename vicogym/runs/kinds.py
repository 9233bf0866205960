"""What every kind of run folder shares when it is checked (``vicogym verify``) or looked at
(``vicogym report``): which kind a folder holds, read from what it holds (the ``kind`` its
``run.json`` or ``manifest.json`` records, else the files that mark it), the record of what
a check found, a shard's check against the SHA-256 recorded for it, the note on a run
written by other code, and the report page's skeleton and images.

The kinds themselves (generation runs, synthesis runs, evidence runs, ...) live in their
rooms; the table of them is held by the command line (:func:`vicogym.cli.run_kinds`), the
one module that may import every room. :func:`verify_folder` and :func:`report_folder`
dispatch a folder to its kind's verifier and report through that table.
"""

from __future__ import annotations

import errno
import html
import json
import os
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vicogym.errors import RunError
from vicogym.runs.shards import MANIFEST_FILE, RUN_FILE, existing_folder, file_sha256, is_url


# -- what a check found -----------------------------------------------------------------------
@dataclass
class Findings:
    """What verification found: rows read, (where, reason) for each problem, and notes on
    checks that could not run (a source folder that is not on this machine)."""

    rows: int = 0
    problems: list[tuple[str, str]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    #: rows whose episodes could not be replayed here (their source is not on this machine)
    unreplayed: int = 0
    #: (check, status) -> rows whose provenance says that check did not run when they were made
    not_run: Counter = field(default_factory=Counter)
    _where: set[str] = field(default_factory=set, repr=False)

    @property
    def ok(self) -> bool:
        return not self.problems

    def add(self, where: str, reason: str) -> None:
        self.problems.append((where, reason))
        self._where.add(where)

    def has(self, where: str) -> bool:
        """Whether a problem is reported at ``where`` already (a row gets its first one)."""
        return where in self._where

    def verdict(self, folder: str | Path) -> str:
        """The check's last line: every row verified, or how many problems in how many rows."""
        if self.problems:
            count = len(self.problems)
            return f"{count} problem{'s' if count != 1 else ''} in {folder} ({self.rows} rows read)"
        return f"all {self.rows} rows verified"


def guarded(row: Any, findings: Findings, check: Callable[..., Any], *args: Any) -> None:
    """Run one row's check; whatever a damaged row makes it raise is that row's problem."""
    try:
        check(*args)
    except Exception as exc:  # a row is data: nothing it holds may stop the verification
        where = str(row.get("id")) if isinstance(row, dict) else "a row"
        findings.add(where, f"cannot be checked ({type(exc).__name__}: {str(exc)[:200]})")


def read_json(path: Path, remedy: str) -> Any:
    """The JSON a run's file holds; a :class:`~vicogym.errors.RunError` that says how it is
    damaged and ``remedy`` where it cannot be read."""
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError) as exc:
        raise RunError(f"{path} is damaged ({type(exc).__name__}: {str(exc)[:200]}); {remedy}") from None


def shard_problem(path: Path, sha256: str, recorder: str = "the manifest") -> str | None:
    """What is wrong with the shard at ``path`` that ``recorder`` recorded with ``sha256``:
    ``"is missing"``, changed since it was written, or ``None``."""
    if not path.is_file():
        return "is missing"
    if file_sha256(path) != sha256:
        return f"changed since it was written (SHA-256 differs from {recorder})"
    return None


def code_note(recorded: Any) -> str | None:
    """A note when the run records the SHA-256 of other code than this (its replays may
    differ for that reason alone: the seed generator, the checks, the renderers changed)."""
    from vicogym.runs.generate import code_sha256

    if recorded is None or recorded == code_sha256():
        return None
    return (f"the run was written by other code (code_sha256 {str(recorded)[:12]}..., this vicogym's is "
            f"{code_sha256()[:12]}...); replays that differ may differ for that reason: verify it with the vicogym "
            "that wrote it, or regenerate it")


# -- which kind a folder holds ----------------------------------------------------------------
@dataclass(frozen=True)
class VerifyOptions:
    """What ``vicogym verify`` may be asked besides the folder; a kind uses those it knows."""

    images: bool = True
    source: str | None = None
    allow_unreplayed: bool = False


@dataclass(frozen=True)
class RunKind:
    """One kind of run folder: its name, the command that writes it, what marks its folder,
    and its verifier and report (each a function, or the sentence that says why the kind
    has none and what to do instead)."""

    name: str
    command: str
    #: files (globs inside the folder) whose presence marks the kind, the first named in messages
    marks: tuple[str, ...]
    #: ``(folder, VerifyOptions) -> Findings``, or why the kind is not verified (``{folder}``: the folder)
    verify: Callable[[Any, VerifyOptions], Findings] | str
    #: ``(folder, out, limit) -> the page's path``, or why the kind has no report page (``{folder}`` as above)
    report: Callable[[Any, Path | None, int], Path] | str
    #: the ``kind`` its ``run.json`` or ``manifest.json`` records (none: it records none)
    records: tuple[str, ...] = ()
    #: whether the kind is read from a filesystem URL (a local copy)
    urls: bool = False

    def a(self) -> str:
        """The kind's name with its article: ``a craft``, ``an evolve``."""
        return f"{'an' if self.name[0] in 'aeiou' else 'a'} {self.name}"

    def described(self) -> str:
        """The kind, its command and what marks its folder, as messages name it."""
        holds = self.marks[0] if self.marks else f"{RUN_FILE} of kind {self.records[0]!r}"
        return f"{self.name} (`{self.command}`, {holds})"


def recorded_kind(folder: Path) -> str | None:
    """The ``kind`` the folder's ``run.json`` (or else its ``manifest.json``) records."""
    for name in (RUN_FILE, MANIFEST_FILE):
        try:
            data = json.loads((folder / name).read_text(encoding="utf-8"))
        except (OSError, ValueError, RecursionError):
            continue
        if isinstance(data, dict) and isinstance(data.get("kind"), str):
            return data["kind"]
    return None


def _kinds_said(kinds: Sequence[RunKind]) -> str:
    return "; ".join(kind.described() for kind in kinds)


def recognise(folder: Any, kinds: Sequence[RunKind]) -> RunKind:
    """The kind of run ``folder`` holds, by the kind it records or else the first kind whose
    marks it holds; a :class:`~vicogym.errors.RunError` that names the kinds and what the
    folder lacks when it holds none."""
    if is_url(folder):
        for kind in kinds:
            if kind.urls:
                return kind
        raise RunError(f"{folder} is a URL; only a local folder can be read here")
    path = Path(folder)
    hint = f"name the folder a run's --out wrote, of one of these kinds: {_kinds_said(kinds)}"
    try:
        existing_folder(path, hint)
        if not os.access(path, os.R_OK | os.X_OK):
            raise PermissionError(errno.EACCES, "permission denied")
        recorded = recorded_kind(path)
        if recorded is not None:
            for kind in kinds:
                if recorded in kind.records:
                    return kind
            known = sorted(r for kind in kinds for r in kind.records)
            raise RunError(f"{folder} records kind {recorded!r}, which this vicogym does not know (it knows "
                           f"{', '.join(known)}); read it with the vicogym that wrote it")
        for kind in kinds:
            if any(next(path.glob(mark), None) is not None for mark in kind.marks):
                return kind
    except OSError as exc:
        raise RunError(f"{folder} cannot be read ({exc.strerror or type(exc).__name__}); make it readable") from None
    marks = sorted({mark for kind in kinds for mark in kind.marks} | {RUN_FILE})
    raise RunError(f"{folder} holds no run (no {', '.join(marks)}); {hint}")


def verify_folder(folder: Any, kinds: Sequence[RunKind], options: VerifyOptions | None = None) -> Findings:
    """Check the run in ``folder`` with its kind's verifier: what it found."""
    kind = recognise(folder, kinds)
    if isinstance(kind.verify, str):
        raise RunError(f"{folder} is {kind.a()} run: {kind.verify.format(folder=folder)}")
    return kind.verify(folder, options or VerifyOptions())


def report_folder(folder: Any, kinds: Sequence[RunKind], out: str | Path | None = None, limit: int = 200) -> Path:
    """Write the report of the run in ``folder`` with its kind's report: the page's path."""
    kind = recognise(folder, kinds)
    if isinstance(kind.report, str):
        raise RunError(f"{folder} is {kind.a()} run: {kind.report.format(folder=folder)}")
    return kind.report(folder, None if out is None else Path(out), limit)


# -- the report page ---------------------------------------------------------------------------
PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{title}</title>
<style>
{style}
</style></head><body>
<h1>{title}</h1>
{body}
</body></html>
"""


def report_out(folder: Path, out: str | Path | None) -> Path:
    """Where a report of ``folder`` goes (``out``, or ``folder/report``), with its
    ``images/`` folder made."""
    where = Path(out) if out is not None else Path(folder) / "report"
    (where / "images").mkdir(parents=True, exist_ok=True)
    return where


def image(src: str, alt: str) -> str:
    """An ``<img>`` of the page (``src`` relative to it)."""
    return f'<img src="{html.escape(src)}" alt="{html.escape(alt)}">'


def save_image(out: Path, name: str, data: bytes, alt: str) -> str:
    """Write the PNG ``data`` to ``out/name``; its ``<img>``."""
    (out / name).write_bytes(data)
    return image(name, alt)


def plot_images(names: Iterable[str]) -> str:
    """The plots written beside the page, as images."""
    return "".join(image(name, name) for name in names)


def options(values: Iterable[str]) -> str:
    """``<option>`` elements of a filter's ``<select>``, one per value."""
    return "".join(f'<option value="{html.escape(v)}">{html.escape(v)}</option>' for v in values)


def write_page(out: Path, title: str, style: str, body: str) -> Path:
    """Write ``out/index.html``: the page's title (also its heading), its style and body."""
    page = PAGE.format(title=html.escape(title), style=style.strip("\n"), body=body)
    (out / "index.html").write_text(page, encoding="utf-8")
    return out / "index.html"


__all__ = ["Findings", "RunKind", "VerifyOptions", "code_note", "guarded", "image", "options", "plot_images",
           "read_json", "recognise", "recorded_kind", "report_folder", "report_out", "save_image", "shard_problem",
           "verify_folder", "write_page"]
