"""The arm interface: everything the core needs from one kind of verifiable structure.

An *arm* (charts, CLEVR scenes, natural images, ...) is its files in the layers
(``structures/``, ``programs/``, ``editors/``, ``renderers/``, ``sources/``, ``envs/``)
plus one subclass of :class:`Arm` and one registration. The base environment, the
generation pipeline, the exporters and ``vicogym verify`` reach an arm only through
this interface, so a new arm adds files and changes neither the core nor another arm.

Label rules are JSON objects with a ``"kind"`` (the arm's own rule kinds). Structures
follow :class:`vicogym.core.Structure`: a canonical JSON text plus named binary payloads.
"""

from __future__ import annotations

import abc
import hashlib
import importlib.util
import json
from collections.abc import Callable, Mapping
from typing import Any, ClassVar

import numpy as np

from vicogym.core import Edit, ExportHints, LabelRule, Render, Sample, Seed, canonical_json, edit_schema
from vicogym.errors import GenerationError, InvalidEdit, MissingExtra
from vicogym.images import ImagePolicy
from vicogym.install import install_command


class Arm(abc.ABC):
    """One arm, built from its environment's config (a frozen dataclass).

    Class attributes:
        name: the arm's name (``"chart"``), as in its file names.
        export: :class:`~vicogym.core.ExportHints` for trainer formats.
        error_codes: edit error codes the arm adds to the core's (code -> description);
            registered by the arm's modules on import (``register_error_codes``).
        extras: importable module -> the pip extra that installs it; checked before the
            environment is built, so a missing dependency names its extra.
    """

    name: ClassVar[str]
    export: ClassVar[ExportHints]
    error_codes: ClassVar[Mapping[str, str]] = {}
    extras: ClassVar[Mapping[str, str]] = {}
    #: the editors' op table (op -> (required, optional) fields) and JSON Schemas of fields,
    #: from which :meth:`edit_schema` is generated (for LLM rewriters)
    op_fields: ClassVar[Mapping[str, tuple[tuple[str, ...], tuple[str, ...]]] | None] = None
    field_schemas: ClassVar[Mapping[str, Any]] = {}

    def __init__(self, config: Any):
        """Cheap: an arm built only to check stored rows (``vicogym verify``) needs no source."""
        self.config = config

    def open(self) -> None:
        """Load what episodes need (source data, models) and check it; the environment calls
        this when it is built, so bad source data fails at ``gym.make``."""

    # -- structure codec ---------------------------------------------------------------
    def encode(self, structure: Any) -> tuple[str, dict[str, bytes]]:
        """The structure's canonical text and its binary payloads."""
        return canonical_json(structure.to_dict()), dict(structure.payloads())

    @abc.abstractmethod
    def decode(self, text: str, payloads: Mapping[str, bytes] | None = None) -> Any:
        """The structure that :meth:`encode` gave ``(text, payloads)`` for."""

    # -- images --------------------------------------------------------------------------
    @property
    @abc.abstractmethod
    def image_policy(self) -> ImagePolicy:
        """How native renders are put on the fixed observation canvas."""

    # -- one episode ---------------------------------------------------------------------
    @abc.abstractmethod
    def draw_seed(self, rng: np.random.Generator, options: Mapping[str, Any]) -> Seed:
        """A seed sample from the configured source (raise ``GenerationError`` after the
        configured number of tries)."""

    def seed_variants(self, seed: Seed) -> list[Seed]:
        """``seed`` and alternatives to try, in order, when it fails :meth:`validate` (for
        example plainer styles for a real record); by default the seed alone."""
        return [seed]

    def source_summary(self) -> dict[str, Any]:
        """What the source did with its data (kept, promoted, dropped ...), for manifests."""
        return {}

    @abc.abstractmethod
    def apply(self, structure: Any, edit: Edit, rule: LabelRule) -> Any:
        """The structure after ``edit`` under ``rule``, or ``InvalidEdit``. Pure."""

    @abc.abstractmethod
    def relabel(self, structure: Any, rule: LabelRule) -> str:
        """The answer ``rule`` gives on ``structure``, or ``InvalidEdit``. Pure."""

    def check_question(self, question: str, rule: LabelRule, structure: Any) -> str | None:
        """Why ``question`` is not the one ``rule`` answers on ``structure``, or ``None``."""
        return None

    @abc.abstractmethod
    def render(self, structure: Any, rng: np.random.Generator) -> Render:
        """Pixels and facts. ``rng`` is derived from the structure's canonical text, so the
        same structure gives the same bytes (per render engine)."""

    def replay_settings(self) -> dict[str, Any]:
        """Settings under which ``vicogym verify`` draws a run's seeds again: they must give
        the same seeds as the run's own, and may make drawing them cheaper."""
        return {}

    @property
    def pixel_tolerance(self) -> int:
        """How far (0-255, per channel) two renders of the same structure may differ: 0 for
        renderers that give the same bytes (the convention), more for ones that cannot (and
        then on at most ``images.DIFFERING_PIXELS`` of the pixels; see ``images.same_image``)."""
        return 0

    def screen(self, structure: Any, rule: LabelRule) -> None:
        """Raise ``InvalidEdit`` for a seed that :meth:`validate` would surely reject,
        decided from the structure alone, before it is rendered (a seed drawn and thrown
        away then costs no render); the default screens nothing. It may reject only what
        ``validate`` rejects: a seed it lets through is rendered and checked whole."""

    def validate(self, structure: Any, render: Render, rule: LabelRule) -> None:
        """Checks on a rendered edit (visibility, protection): raise ``InvalidEdit``."""

    def checks_run(self) -> dict[str, str]:
        """Checks beyond :meth:`validate`'s own that may not run everywhere (a reader that
        needs an installed engine), by name: ``"ran"``, ``"off"`` or ``"not run: why"``.
        Every sample's provenance records them; ``vicogym verify`` runs again those a row
        records as run. None by default."""
        return {}

    def actor_context(self, sample: Sample, render: Render) -> dict[str, Any]:
        """What stand-in actors may read (a real model ignores it)."""
        return {"answer": sample.answer}

    @abc.abstractmethod
    def score(self, prediction: str, target: str) -> float:
        """The arm's answer scorer, in [0, 1]."""

    def edit_schema(self) -> dict[str, Any]:
        """The JSON Schema of this arm's edits (see :func:`vicogym.core.edit_schema`)."""
        return edit_schema(self.op_fields, self.field_schemas)

    @abc.abstractmethod
    def sample_edit(self, structure: Any, rule: LabelRule, rng: np.random.Generator) -> dict[str, Any]:
        """A random edit from the arm's edit space that the editors and the label rule
        accept; ``GenerationError`` when none is found within the configured tries."""

    # -- stored rows ---------------------------------------------------------------------
    def side_files(self, structure: Any) -> Mapping[str, bytes]:
        """Files that rows of ``structure`` share and that a run folder keeps once (a source
        image, a mask), by a relative name (``arm/file.png``) that is a function of their
        content; ``vicogym generate`` writes each once under ``files/`` and records its
        SHA-256 in the manifest. None by default."""
        return {}

    def attach_run(self, folder: Any) -> None:
        """``vicogym verify`` hands the arm the ``files/`` folder of the run it checks, whose
        side files the manifest has vouched for (see :meth:`side_files`)."""

    def verify_row(self, row: Mapping[str, Any]) -> str | None:
        """Why a stored row's label does not follow from what it stores, or ``None``.

        Reads ``structure``, ``payloads``, ``label``, ``label_rule``, ``question`` and
        ``answer``: the structure is decoded, the answer re-derived from the rule and the
        question checked against the rule."""
        try:
            structure = self.decode(row["structure"], payload_dict(row.get("payloads")))
            rule = json.loads(row["label"])
            if not isinstance(rule, dict) or "kind" not in rule:
                return "the label is not a rule object with a 'kind'"
            answer = self.relabel(structure, rule)
        except (InvalidEdit, ValueError, TypeError, KeyError) as exc:
            return f"label cannot be re-derived: {exc}"
        if row.get("label_rule") != rule["kind"]:
            return f"label_rule {row.get('label_rule')!r} but the label is a {rule['kind']!r} rule"
        if answer != row["answer"]:
            return f"stored answer {row['answer']!r} but the label rule gives {answer!r}"
        mismatch = self.check_question(row["question"], rule, structure)
        if mismatch:
            return f"question {row['question']!r} does not fit its label rule: {mismatch}"
        return None

    def encode_and_render(self, structure: Any) -> tuple[str, Render]:
        """``structure``'s canonical text, and its render with its own render seed (a
        function of that text and the payloads: the same bytes every time)."""
        text, payloads = self.encode(structure)
        return text, self.render(structure, np.random.default_rng(render_seed(text, payloads)))

    def render_seeded(self, structure: Any) -> Render:
        """Render ``structure`` with its own render seed (see :meth:`encode_and_render`)."""
        return self.encode_and_render(structure)[1]

    def render_checked(self, structure: Any, rule: LabelRule) -> Render:
        """:meth:`render_seeded` and :meth:`validate` on it (what the environment does to
        every accepted sample; ``vicogym verify`` redoes it)."""
        render = self.render_seeded(structure)
        self.validate(structure, render, rule)
        return render

    def close(self) -> None:
        """Release renderer resources."""


def draw_edit(propose: Callable[[], dict[str, Any]], accept: Callable[[dict[str, Any]], bool], tries: int,
              what: str) -> dict[str, Any]:
    """The first edit ``propose()`` makes that ``accept`` takes (it returns ``False`` or
    raises ``InvalidEdit`` to refuse), within ``tries``; ``GenerationError`` naming the
    last refusal otherwise. The loop behind every arm's ``sample_edit``."""
    last: Any = "none was a change"
    for _ in range(tries):
        edit = propose()
        try:
            if accept(edit):
                return edit
        except InvalidEdit as exc:
            last = exc
    raise GenerationError(f"no valid {what} edit in {tries} tries (last rejection: {last})")


def payload_dict(items: Any) -> dict[str, bytes]:
    """Payloads as stored in rows (a list of ``{"name", "data"}``) as a dict."""
    if not items:
        return {}
    return {str(item["name"]): bytes(item["data"]) for item in items}


def payload_list(payloads: Mapping[str, bytes]) -> list[dict[str, Any]]:
    return [{"name": name, "data": payloads[name]} for name in sorted(payloads)]


def require_module(module: str, extra: str, what: str) -> None:
    """Raise :class:`MissingExtra` when ``module`` (which ``what`` needs) cannot be imported,
    naming the pip extra that installs it, and the command that installs it here."""
    if importlib.util.find_spec(module) is None:
        raise MissingExtra(f"{what} needs the {module!r} package, which the [{extra}] extra installs: "
                           f"{install_command(extra)} (or [all] for every arm)")


def require_extras(arm_class: type[Arm], env_id: str) -> None:
    """Raise :class:`MissingExtra` naming the pip extra of a missing dependency."""
    for module, extra in arm_class.extras.items():
        require_module(module, extra, env_id)


def render_seed(text: str, payloads: Mapping[str, bytes]) -> np.random.SeedSequence:
    """The render seed of a structure: a function of its canonical text and payloads."""
    digest = hashlib.sha256(text.encode("utf-8"))
    for name in sorted(payloads):
        digest.update(name.encode("utf-8") + b"\0" + hashlib.sha256(payloads[name]).digest())
    return np.random.SeedSequence(int.from_bytes(digest.digest()[:16], "little"))
