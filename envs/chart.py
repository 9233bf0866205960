"""``vicogym/Chart-v0``: edit a chart's table and style, keep the label provably right.

:class:`ChartArm` composes the chart layers (structures, programs, editors, renderer,
sources) behind the arm interface; :class:`ChartEnv` is the Gymnasium environment.
"""

from __future__ import annotations

import hashlib
import json
import warnings
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from vicogym.answers import format_number, get_scorer
from vicogym.arm import Arm, draw_edit
from vicogym.checks import chart as chart_checks
from vicogym.core import SHORT_ANSWER, Edit, ExportHints, Render, Sample, Seed
from vicogym.editors import chart as chart_editor
from vicogym.envs.base import EnvConfig, VicoEnv
from vicogym.errors import InvalidEdit, register_error_codes
from vicogym.images import ImagePolicy
from vicogym.programs import chart as chart_programs
from vicogym.renderers.chart import ChartRenderer, value_limits
from vicogym.sources.chart import make_source
from vicogym.sources.chartqa import TIER2_POLICIES
from vicogym.sources.chartqa_questions import classify_record
from vicogym.sources.chartqa_tables import spec_variants
from vicogym.structures.chart import ChartStructure, Table
from vicogym.validation import is_int

#: settings of the reader check (see :class:`ChartEnvConfig`)
READER_CHECKS = ("auto", "required", "off")
#: what rows made from real tables (ChartQA) say of the world (see :class:`ChartEnvConfig`)
REAL_FACTS = ("chart", "style", "unmarked")
#: the words that make a question one about the chart, not the world
ABOUT_THE_CHART = "According to the chart, "
#: first words a question's framing puts in lower case ("What was ..." -> "according to the
#: chart, what was ..."); any other first word may be a name ("Mercadona ...") and is kept
_LOWER_FIRST = {"what", "which", "who", "whom", "whose", "when", "where", "why", "how", "is", "are", "was", "were",
                "do", "does", "did", "has", "have", "had", "can", "could", "will", "would", "should", "in", "on",
                "at", "for", "from", "by", "of", "during", "since", "between", "among", "find", "give", "name",
                "calculate", "compute", "deduct", "subtract", "add", "tell", "list", "identify", "the", "a", "an",
                "this", "that", "these", "those", "there", "it", "its", "as", "if", "after", "before", "until",
                "to", "with", "over", "under", "according"}


def about_the_chart(question: str) -> str:
    """``question`` asked of the chart ("According to the chart, what was ...?"): a model
    trained on an edited table learns what the chart shows, not a false fact about a real
    company or country. A question that already says so is returned as it is."""
    text = question.strip()
    if text.casefold().startswith("according to the chart"):
        return question
    first = text.split(maxsplit=1)[0] if text else ""
    if first.strip("'\"(").casefold() in _LOWER_FIRST and not first[1:2].isupper():
        text = text[:1].lower() + text[1:]
    return ABOUT_THE_CHART + text
#: readings kept, by the bytes of the pixels read (a text drawn the same way is read once)
READINGS_KEPT = 4096


@dataclass(frozen=True)
class ChartEnvConfig(EnvConfig):
    """Chart arm settings. ``source``: ``"procedural"`` or a ChartQA-format folder.
    ``reader_check``: whether every accepted sample's printed texts that its answer depends
    on must be read right by Tesseract (:func:`vicogym.checks.chart.check_reading`):
    ``"auto"`` where Tesseract can run (elsewhere samples are made without it, each says so
    in its provenance, and one warning says so), ``"required"`` (no environment without
    it), ``"off"``.

    ``real_facts``: what rows made from real tables (a ChartQA source: real companies,
    countries, people) say of the world, recorded in each row's provenance (``facts``):
    ``"chart"`` (the default) asks every such question of the chart ("According to the
    chart, ..."), so that edited values are the chart's and no model learns them as the
    world's; ``"style"`` keeps every value and label as published (only ``set_style`` edits
    are accepted) and asks the question as written; ``"unmarked"`` edits values and asks as
    written (edited rows then state false facts about real entities). Procedural tables are
    invented: their rows say ``invented``, whatever this setting."""

    source: str = "procedural"
    dpi: int = 80
    scorer: str = "relaxed"
    templates: tuple[str, ...] | None = None
    rewriter_max_ops: int = 2
    tier2: str = "drop"
    reader_check: str = "auto"
    real_facts: str = "chart"

    def __post_init__(self) -> None:
        super().__post_init__()
        get_scorer(self.scorer)
        if not isinstance(self.source, str):
            raise TypeError(f"expected source to be 'procedural' or a folder path, got {self.source!r}")
        if self.templates is not None:
            if isinstance(self.templates, str) or not isinstance(self.templates, (list, tuple)) or not self.templates:
                raise TypeError(f"expected templates as a non-empty list of template ids, got {self.templates!r}")
            unknown = [t for t in self.templates if t not in chart_programs.TEMPLATE_BY_ID]
            if unknown:
                raise ValueError(f"expected template ids in {sorted(chart_programs.TEMPLATE_BY_ID)}, got {unknown}")
            if self.source != "procedural":
                raise ValueError("templates choose the procedural source's questions; a ChartQA source brings its own "
                                 "questions, so leave templates unset")
            object.__setattr__(self, "templates", tuple(self.templates))
        if self.tier2 not in TIER2_POLICIES:
            raise ValueError(f"expected tier2 in {TIER2_POLICIES}, got {self.tier2!r}")
        if self.reader_check not in READER_CHECKS:
            raise ValueError(f"expected reader_check in {READER_CHECKS}, got {self.reader_check!r}")
        if self.real_facts not in REAL_FACTS:
            raise ValueError(f"expected real_facts in {REAL_FACTS}, got {self.real_facts!r}")
        for name in ("dpi", "rewriter_max_ops"):
            v = getattr(self, name)
            if not is_int(v, 1):
                raise ValueError(f"expected {name} to be a positive integer, got {v!r}")

    def to_dict(self) -> dict[str, Any]:
        d = super().to_dict()
        if self.templates is not None:
            d["templates"] = list(self.templates)
        return d


REAL_FACTS_CODES = {"real_facts": "an edit that changes a value or a label of a real table while real_facts='style' "
                                   "keeps real tables as published"}
register_error_codes("chart", REAL_FACTS_CODES)


class ChartArm(Arm):
    """The chart arm behind the arm interface (see :class:`vicogym.arm.Arm`)."""

    name = "chart"
    export = ExportHints(ability="chart_reasoning", prompt_suffix=SHORT_ANSWER)
    error_codes = {**chart_programs.ERROR_CODES, **chart_checks.ERROR_CODES, **REAL_FACTS_CODES}
    op_fields = chart_editor.OP_FIELDS
    field_schemas = chart_editor.FIELD_SCHEMAS

    def __init__(self, config: ChartEnvConfig):
        super().__init__(config)
        self.renderer = ChartRenderer(dpi=config.dpi)
        self.source: Any = None
        self._scorer = get_scorer(config.scorer)
        #: relative tolerance of the scorer, which sets how precisely values must be readable
        self.tolerance = 0.05 if config.scorer == "relaxed" else 0.0
        #: whether :meth:`validate` runs the reader check: once :meth:`open` found it can (an
        #: arm built only to check stored rows reads where a row says it was read:
        #: :meth:`verify_row`)
        self.reading = False
        self.reader_status: str | None = None
        self._reader: Any = None
        self._readings: OrderedDict[tuple, str] = OrderedDict()

    def open(self) -> None:
        if self.source is None:
            self.source = make_source(self.config.source, self.config.templates, self.config.max_tries,
                                      self.config.tier2)
        if self.reader_status is None:
            self.reader_status = self._open_reader()

    def _open_reader(self) -> str:
        """``ran`` when the reader check runs on every accepted sample, ``off``, or ``not
        run: why``; ``required`` without Tesseract raises, naming what to install."""
        from vicogym import ocr

        if self.config.reader_check == "off":
            return "off"
        reason = ocr.unavailable()
        if reason is None:
            self.reading = True
            return "ran"
        if self.config.reader_check == "required":
            raise ocr.ReaderUnavailable(f"reader_check='required', but {reason}")
        warnings.warn(f"vicogym/Chart-v0 makes samples without the reader check (Tesseract reading the texts each "
                      f"answer depends on), and each sample's provenance says so: {reason} (reader_check='off' makes "
                      f"them so on purpose, without this warning)", ReaderCheckSkipped, stacklevel=2)
        return f"not run: {reason}"

    def checks_run(self) -> dict[str, str]:
        self.open()
        return {"reader": str(self.reader_status)}

    def source_summary(self) -> dict[str, Any]:
        self.open()
        # verify replays the run's episodes under the reader check as it ran: required where
        # it ran (a replay without it could keep seeds the run refused), off where it did not
        summary = dict(self.source.summary(), reader_check=self.reader_status,
                       replay_settings={"reader_check": "required" if self.reader_status == "ran" else "off"})
        if self.reader_status not in ("ran", "off"):
            why = self.reader_status.removeprefix("not run: ")
            summary["note"] = f"no sample was checked by the reader (Tesseract): {why}; their provenance says so"
        return summary

    @property
    def image_policy(self) -> ImagePolicy:
        h, w, _ = self.renderer.max_image_shape()
        return ImagePolicy("pad", h, w, fill=255)

    def decode(self, text: str, payloads: Mapping[str, bytes] | None = None) -> ChartStructure:
        return ChartStructure.from_json(text)

    def draw_seed(self, rng: np.random.Generator, options: Mapping[str, Any]) -> Seed:
        self.open()
        if "index" in options:
            if not hasattr(self.source, "seed"):
                raise ValueError("options['index'] picks a record of a ChartQA source; the procedural source has none")
            return self._as_configured(self.source.seed(int(options["index"])))
        return self._as_configured(self.source.sample(rng))

    def _as_configured(self, seed: Seed) -> Seed:
        """A seed as ``real_facts`` says: a real table's question asked of the chart
        (``chart``), or as written; its provenance says which."""
        if seed.source != "chartqa":
            return replace(seed, facts="invented")
        if self.config.real_facts == "chart":
            return replace(seed, question=about_the_chart(seed.question), facts="chart")
        return replace(seed, facts="real" if self.config.real_facts == "style" else "unmarked")

    def _real(self, rule: Mapping[str, Any]) -> bool:
        """Whether a rule's table is real and kept as published (``real_facts="style"``): a
        rule made from a record stores its question, a procedural one its template."""
        return self.config.real_facts == "style" and "question" in rule

    def seed_variants(self, seed: Seed) -> list[Seed]:
        """A ChartQA table comes without a chart: plainer specs are tried when a reader could
        not answer from the default one. A procedural seed is tried as drawn, then with its
        values printed (data labels), before it is drawn again."""
        if seed.source != "chartqa":
            spec = seed.structure.spec
            labelled = replace(seed, structure=replace(seed.structure, spec=replace(spec, data_labels=True)))
            return [seed] if spec.data_labels else [seed, labelled]
        locked = chart_editor.locked_style_fields(seed.label_rule)
        return [replace(seed, structure=replace(seed.structure, spec=spec))
                for spec in spec_variants(seed.structure.spec, locked)]

    def apply(self, structure: ChartStructure, edit: Edit, rule: Mapping[str, Any]) -> ChartStructure:
        new = chart_editor.apply(structure, edit, rule)
        if self._real(rule) and new.table != structure.table:
            raise InvalidEdit("real_facts", "this table holds real facts about named companies, countries or people, "
                              "kept as published (real_facts='style'): edit only its style (set_style), or make the "
                              "environment with real_facts='chart' to edit values and ask the question of the chart")
        return new

    def relabel(self, structure: ChartStructure, rule: Mapping[str, Any]) -> str:
        return chart_programs.relabel(structure.table, rule)

    def check_question(self, question: str, rule: Mapping[str, Any], structure: ChartStructure) -> str | None:
        """:func:`~vicogym.programs.chart.question_matches`; a question from a real record
        must be asked of the chart where ``real_facts="chart"``."""
        if "question" in rule and self.config.real_facts == "chart":
            framed = about_the_chart(rule["question"])
            if question != framed:
                return f"real_facts='chart' asks {framed!r}"
            question = rule["question"]
        return chart_programs.question_matches(question, rule, structure.table)

    def render(self, structure: ChartStructure, rng: np.random.Generator) -> Render:
        out = self.renderer.render(structure)  # matplotlib draws deterministically: no randomness needed
        return Render(out.image, out)

    def screen(self, structure: ChartStructure, rule: Mapping[str, Any]) -> None:
        spec = structure.spec
        inches = float(spec.figure_size[0 if spec.chart_type == "hbar" else 1])
        # matplotlib's tick space along the value axis of the shortest plot check_room lets
        # through: its length in points over the tick labels' size (2x on y, 3x on x)
        label_pt = spec.font_size * 0.9 * (3.0 if spec.chart_type == "hbar" else 2.0)
        chart_checks.screen(structure, rule, value_limits(structure.table, spec.chart_type), inches * self.renderer.dpi,
                            int(chart_checks.MIN_PLOT_SHARE * inches * 72.0 // label_pt), self.tolerance)

    def validate(self, structure: ChartStructure, render: Render, rule: Mapping[str, Any]) -> None:
        chart_checks.check(structure, rule, render.facts, self.tolerance)
        if self.reading:  # last: a sample the cheaper checks reject costs no reading
            chart_checks.check_reading(structure, rule, render.facts, self.read)

    def read(self, pixels: np.ndarray) -> str:
        """What Tesseract reads in ``pixels`` (one line of text), read once per distinct
        pixels: a text an edit did not redraw, or drawn the same way in another chart, is
        not read again (Tesseract gives the same pixels the same reading)."""
        key = (pixels.shape, hashlib.blake2b(pixels.tobytes(), digest_size=16).digest())
        text = self._readings.get(key)
        if text is None:
            if self._reader is None:
                from vicogym import ocr

                self._reader = ocr.reader()
            text = self._reader.text(pixels, mode="line")
            self._readings[key] = text
            if len(self._readings) > READINGS_KEPT:
                self._readings.popitem(last=False)
        else:
            self._readings.move_to_end(key)
        return text

    def actor_context(self, sample: Sample, render: Render) -> dict[str, Any]:
        structure, rule = sample.structure, sample.label_rule
        features = chart_checks.difficulty_features(structure, render.facts, rule)
        t = structure.table
        distractors = list(t.rows) + list(t.series) + [format_number(v) for v in t.all_values() if v is not None]
        return {"answer": sample.answer, "features": features, "difficulty": chart_checks.difficulty(features),
                "distractors": distractors, "text_cap_px": features["text_cap_px"]}

    def score(self, prediction: str, target: str) -> float:
        return self._scorer(prediction, target)

    def verify_row(self, row: Mapping[str, Any]) -> str | None:
        """The generic checks, then: the seed structure answers the same rule, keeps the
        sample's vocabulary and precision, and an invariant rule's source table is the one
        both the seed and the sample draw."""
        problem = super().verify_row(row)
        if problem is not None:
            return problem
        structure, rule = ChartStructure.from_json(row["structure"]), json.loads(row["label"])
        try:
            seed = ChartStructure.from_json(row["seed_structure"])
            chart_programs.relabel(seed.table, rule)
        except (InvalidEdit, ValueError, TypeError, KeyError) as exc:
            return f"the seed structure does not answer the rule: {exc}"
        if seed.vocabulary != structure.vocabulary or seed.table.decimals != structure.table.decimals:
            return "the sample's vocabulary or precision differs from its seed's (edits cannot change them)"
        if rule["kind"] == "invariant":
            source = Table.from_dict(rule["table"])
            for name, table in (("seed", seed.table), ("sample", structure.table)):
                if (table.rows, table.series, table.values) != (source.rows, source.series, source.values):
                    return f"the {name} table differs from the table the invariant answer was read from"
            if self.config.tier2 == "drop":  # the screen the source ran: a kept answer is what the table gives
                screened = classify_record(source, rule.get("question", ""), rule["answer"])
                if screened.status == "dropped":
                    return f"the kept answer fails the source's screen ({screened.reason}): the drawn table does " \
                           f"not give {rule['answer']!r} for {rule.get('question', '')!r}"
        if self._real(rule) and structure.table != seed.table:
            return "real_facts='style' keeps real tables as published, but this row's table differs from its seed's"
        return self._reading_problem(row, structure, rule)

    def _reading_problem(self, row: Mapping[str, Any], structure: ChartStructure,
                         rule: Mapping[str, Any]) -> str | None:
        """A row whose provenance says the reader check ran is read again; one that says it
        did not is not (verify notes how many)."""
        try:
            recorded = json.loads(row.get("provenance") or "{}").get("checks") or {}
        except (ValueError, TypeError, AttributeError):
            return "its provenance is not a JSON object"
        if not isinstance(recorded, dict) or recorded.get("reader") != "ran":
            return None
        from vicogym import ocr

        reason = ocr.unavailable()
        if reason is not None:
            return (f"its provenance says Tesseract read the texts its answer depends on, which cannot be checked "
                    f"here: {reason}")
        render = self.render_seeded(structure)
        try:
            chart_checks.check_reading(structure, rule, render.facts, self.read)
        except InvalidEdit as exc:
            return f"a reader could not answer from this image: {exc}"
        return None

    def sample_edit(
        self, structure: ChartStructure, rule: Mapping[str, Any], rng: np.random.Generator
    ) -> dict[str, Any]:
        def propose() -> dict[str, Any]:
            if chart_programs.values_fixed(rule) or self._real(rule):
                return {"ops": [chart_editor.sample_style_op(structure, rng)]}
            return chart_editor.sample_edit(structure, rng, self.config.rewriter_max_ops, rule)

        def accept(edit: dict[str, Any]) -> bool:
            new = chart_editor.apply(structure, edit, rule)
            chart_programs.relabel(new.table, rule)
            return new != structure  # an edit that changes nothing is refused by the environment

        return draw_edit(propose, accept, self.config.max_tries, "chart")

    def close(self) -> None:
        self.renderer.close()


class ReaderCheckSkipped(UserWarning):
    """Samples are being made without the reader check (Tesseract cannot run here)."""


class ChartEnv(VicoEnv):
    """
    ## Description

    A chart question whose label is provable from the chart's table. The rewriter edits
    the table (values, rows, series) or the chart's style; the environment re-renders the
    chart with matplotlib, recomputes the answer with the sample's label rule, probes the
    actor ``k`` times and rewards edits that put the actor's pass rate in the sweet zone.

    ## Action Space

    ``Text``: an edit as JSON (a ``dict`` is accepted too): ``{"ops": [{"op": ...}, ...]}``
    or ``{"replace": structure}``. Ops: set_cell, scale_series, add_row, remove_row,
    rename_row, reorder_rows, add_series, remove_series, set_style, stop (see
    :mod:`vicogym.editors.chart`).

    ## Observation Space

    ``Dict(image=Box(0, 255, (H, W, 3), uint8), question=Text, structure=Text)``. Image
    policy ``pad``: the chart, drawn at its own figure size, is centred without scaling
    on a white canvas of the largest figure size (8 x 6 inches at ``dpi``; 480 x 640 at
    the default 80 dpi); ``render()`` returns the same canvas. The sample's own image
    (what the actor sees and what generation exports) is the chart at its native size.
    ``structure`` is the table and spec as canonical JSON.

    ## Rewards

    A valid edit earns ``f(p)`` where ``p`` is the actor's pass rate on the new sample
    and ``f`` the configured shape (band on [0.35, 0.65] by default, or triangle,
    gaussian); an invalid edit earns ``invalid_penalty`` (-1) and changes nothing;
    ``stop`` earns 0.

    ## Starting State

    A seed sample from ``source``: a procedural table with a template question (label
    rule ``program``), or a ChartQA record (``cell`` for Tier 1, ``invariant`` for Tier 2).
    ``reset(options={"index": i})`` picks ChartQA record ``i``.

    ## Episode End

    Terminated by a ``stop`` op; truncated after ``max_turns`` steps (3 by default), valid or
    not: a rejected edit uses a turn too.

    ## Arguments

    ``gymnasium.make("vicogym/Chart-v0", k=8, max_turns=3, source="procedural",
    actor="simulated", invalid_penalty=-1.0, reward_shape="band", sweet_zone=(0.35, 0.65),
    dpi=80, scorer="relaxed", templates=None, max_tries=16, rewriter_max_ops=2,
    reader_check="auto")``; ``templates`` restricts procedural questions to the given
    template ids; ``max_tries`` bounds the procedural tables drawn per seed and the edits
    tried by ``sample_edit``; ``actor`` may also be an object with
    ``answer(image, question, k, rng=..., context=...)``; ``reader_check`` (``auto``,
    ``required``, ``off``): whether Tesseract must read the printed texts each answer
    depends on (``auto``: where it can run; every sample records whether it ran).

    ## Version History

    - v0: initial release; the reader check (``unread_text``) added within v0.
    """

    env_id = "vicogym/Chart-v0"
    version = 0
    config_class = ChartEnvConfig
    arm_class = ChartArm
