"""``vicogym/Chart-v0``: edit a chart's table and style, keep the label provably right.

:class:`ChartArm` composes the chart layers (structures, programs, editors, renderer,
sources) behind the arm interface; :class:`ChartEnv` is the Gymnasium environment.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from typing import Any, Mapping

import numpy as np

from vicogym.answers import format_number, get_scorer
from vicogym.arm import Arm, draw_edit
from vicogym.core import SHORT_ANSWER, Edit, ExportHints, Render, Sample, Seed
from vicogym.editors import chart as chart_editor
from vicogym.envs.base import EnvConfig, VicoEnv
from vicogym.errors import InvalidEdit
from vicogym.images import ImagePolicy
from vicogym.programs import chart as chart_programs
from vicogym.renderers.chart import ChartRender, ChartRenderer
from vicogym.checks import chart as chart_checks
from vicogym.sources.chart import TIER2_POLICIES, make_source, spec_variants
from vicogym.structures.chart import CHART_TYPES, LEGEND_POSITIONS, PALETTES, ChartStructure, Table

#: difficulty added by the kind of reasoning a question needs
OP_COST = {
    "cell": 0.0, "lookup": 0.0, "invariant": 0.6, "max": 0.3, "min": 0.3, "argmax": 0.2, "argmin": 0.2,
    "greater": 0.2, "less": 0.2, "series_greater": 0.3, "row_argmax": 0.3, "count_rows": 0.1,
    "count_above": 0.6, "range": 0.8, "absdiff": 0.8, "ratio": 1.0, "sum": 1.0, "mean": 1.2,
    "median": 1.0, "row_sum": 0.9, "pair_sum": 0.8, "pair_mean": 1.0, "row_with_value": 0.5,
}
COMPARISON_OPS = {"max", "min", "argmax", "argmin", "greater", "less", "series_greater", "row_argmax"}


@dataclass(frozen=True)
class ChartEnvConfig(EnvConfig):
    """Chart arm settings. ``source``: ``"procedural"`` or a ChartQA-format folder."""

    source: str = "procedural"
    dpi: int = 80
    scorer: str = "relaxed"
    templates: tuple[str, ...] | None = None
    rewriter_max_ops: int = 2
    tier2: str = "drop"

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
        for name in ("dpi", "rewriter_max_ops"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"expected {name} to be a positive integer, got {v!r}")

    def to_dict(self) -> dict[str, Any]:
        d = super().to_dict()
        if self.templates is not None:
            d["templates"] = list(self.templates)
        return d


def _target_cells(rule: Mapping[str, Any]) -> list[tuple[str | None, str | None]]:
    if rule["kind"] == "cell":
        return [(rule["row"], rule["series"])]
    if rule["kind"] != "program":
        return []
    p = rule["program"]
    if p["op"] == "lookup":
        return [(p["row"], p["series"])]
    if p["op"] in ("absdiff", "ratio", "greater", "less", "pair_sum", "pair_mean"):
        return [(p["a"], p["series"]), (p["b"], p["series"])]
    if p["op"] == "series_greater":
        return [(p["row"], p["s1"]), (p["row"], p["s2"])]
    return []


def _compared_values(structure: ChartStructure, rule: Mapping[str, Any]) -> list[float]:
    t = structure.table
    if rule["kind"] != "program" or rule["program"]["op"] not in COMPARISON_OPS:
        return []
    p = rule["program"]
    if p["op"] == "row_argmax":
        return [v for v in t.values[t.rows.index(p["row"])] if v is not None]
    if p["op"] in ("greater", "less", "series_greater"):
        return [t.cell(r, s) for r, s in _target_cells(rule) if t.cell(r, s) is not None]
    return [v for v in t.column(p["series"]) if v is not None]


def difficulty_features(structure: ChartStructure, render: ChartRender, rule: Mapping[str, Any]) -> dict[str, Any]:
    """Visual difficulty features of a rendered chart question.

    - ``n_marks``: drawn bars, points or wedges; ``n_series``: series in the table;
    - ``gap``: for comparison questions, the relative gap between the two closest
      competing values (small gaps are hard to see), else ``None``;
    - ``target_px``: for questions about named cells, the smallest pixel extent (bar
      length, wedge size) of those marks, else ``None``;
    - ``label_density``: share of the image covered by text boxes;
    - ``data_labels``: whether values are printed on the marks;
    - ``op``: the question's operation (its reasoning cost is :data:`OP_COST`).
    """
    visible = [m for m in render.marks if m["box"] is not None]
    values = sorted(_compared_values(structure, rule), reverse=True)
    gap = None
    if len(values) >= 2:
        op = rule["program"]["op"]
        a, b = (values[-1], values[-2]) if op in ("min", "argmin") else (values[0], values[1])
        scale = max(abs(a), abs(b), 1e-12)
        gap = abs(a - b) / scale
    targets = set(_target_cells(rule))
    extents = []
    for m in visible:
        if (m["row"], m["series"]) in targets:
            x0, y0, x1, y1 = m["box"]
            extents.append(x1 - x0 if structure.spec.chart_type == "hbar" else y1 - y0)
    h, w = render.image.shape[:2]
    text_area = sum((b["box"][2] - b["box"][0]) * (b["box"][3] - b["box"][1]) for b in render.labels)
    op = rule["program"]["op"] if rule["kind"] == "program" else rule["kind"]
    return {
        "n_marks": len(visible),
        "n_series": len(structure.table.series),
        "gap": gap,
        "target_px": min(extents) if extents else None,
        "label_density": text_area / float(h * w),
        "data_labels": bool(structure.spec.data_labels),
        "op": op,
    }


def _value_end(box: list[float], value: float, chart_type: str) -> tuple[float, float]:
    """Where a mark shows its value: a bar's far end, a point's centre, a wedge's centre."""
    x0, y0, x1, y1 = box
    if chart_type == "hbar":
        return (x1 if value >= 0 else x0, (y0 + y1) / 2.0)
    if chart_type in ("bar", "grouped_bar", "stacked_bar"):
        return ((x0 + x1) / 2.0, y0 if value >= 0 else y1)
    return ((x0 + x1) / 2.0, (y0 + y1) / 2.0)


def occluded_marks(render: ChartRender, chart_type: str, max_share: float = 0.25) -> list[tuple[str, str]]:
    """Marks the legend hides: it covers the mark's value end, or over ``max_share`` of its area."""
    legend = render.facts.get("legend_box")
    if legend is None:
        return []
    lx0, ly0, lx1, ly1 = legend
    hidden = []
    for m in render.marks:
        if m["box"] is None:
            continue
        x0, y0, x1, y1 = m["box"]
        ex, ey = _value_end(m["box"], m["value"], chart_type)
        overlap = max(0.0, min(x1, lx1) - max(x0, lx0)) * max(0.0, min(y1, ly1) - max(y0, ly0))
        if lx0 <= ex <= lx1 and ly0 <= ey <= ly1 or overlap > max_share * max((x1 - x0) * (y1 - y0), 1.0):
            hidden.append((m["row"], m["series"]))
    return hidden


def difficulty(features: Mapping[str, Any]) -> float:
    """One number from :func:`difficulty_features` (0 is trivial; the default simulated
    actor is right half of the time at 2.0)."""
    d = 0.06 * features["n_marks"] + 0.35 * (features["n_series"] - 1) + OP_COST.get(features["op"], 0.5)
    if features["gap"] is not None:
        d += 1.4 * (1.0 - min(features["gap"] / 0.25, 1.0))
    if features["target_px"] is not None:
        d += 0.8 * (1.0 - min(features["target_px"] / 60.0, 1.0))
    d += 3.0 * features["label_density"]
    if features["data_labels"]:
        d -= 0.8
    return max(d, 0.0)


class ChartArm(Arm):
    """The chart arm behind the arm interface (see :class:`vicogym.arm.Arm`)."""

    name = "chart"
    export = ExportHints(ability="chart_reasoning", prompt_suffix=SHORT_ANSWER)
    error_codes = chart_programs.ERROR_CODES
    op_fields = chart_editor.OP_FIELDS
    field_schemas = {
        "row": {"type": "string", "description": "a row label of the table"},
        "series": {"type": "string", "description": "a series (column) label of the table"},
        "value": {"type": ["number", "null"], "description": "with no more decimals than the table's values"},
        "factor": {"type": "number", "exclusiveMinimum": 0},
        "values": {"type": "array", "items": {"type": ["number", "null"]}},
        "position": {"type": "integer", "minimum": 0}, "to": {"type": "string"},
        "order": {"type": "array", "items": {"type": "string"}},
        "chart_type": {"enum": list(CHART_TYPES)}, "palette": {"enum": list(PALETTES)},
        "legend": {"enum": list(LEGEND_POSITIONS)}, "title": {"type": "string"}, "x_label": {"type": "string"},
        "y_label": {"type": "string"}, "data_labels": {"type": "boolean"}, "gridlines": {"type": "boolean"},
        "font_size": {"type": "number"}, "figure_size": {"type": "array", "items": {"type": "number"}, "minItems": 2,
                                                          "maxItems": 2},
    }

    def __init__(self, config: ChartEnvConfig):
        super().__init__(config)
        self.renderer = ChartRenderer(dpi=config.dpi)
        self.source: Any = None
        self._scorer = get_scorer(config.scorer)
        #: relative tolerance of the scorer, which sets how precisely values must be readable
        self.tolerance = 0.05 if config.scorer == "relaxed" else 0.0

    def open(self) -> None:
        if self.source is None:
            self.source = make_source(self.config.source, self.config.templates, self.config.max_tries,
                                      self.config.tier2)

    def report(self) -> dict[str, Any]:
        self.open()
        return self.source.report()

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
            return self.source.seed(int(options["index"]))
        return self.source.sample(rng)

    def seed_variants(self, seed: Seed) -> list[Seed]:
        """A ChartQA table comes without a chart: plainer specs are tried when a reader could
        not answer from the default one. Procedural seeds are drawn again instead."""
        if seed.source != "chartqa":
            return [seed]
        locked = chart_editor.locked_style_fields(seed.label_rule)
        return [replace(seed, structure=replace(seed.structure, spec=spec))
                for spec in spec_variants(seed.structure.spec, locked)]

    def apply(self, structure: ChartStructure, edit: Edit, rule: Mapping[str, Any]) -> ChartStructure:
        return chart_editor.apply(structure, edit, rule)

    def relabel(self, structure: ChartStructure, rule: Mapping[str, Any]) -> str:
        return chart_programs.relabel(structure.table, rule)

    def check_question(self, question: str, rule: Mapping[str, Any], structure: ChartStructure) -> str | None:
        return chart_programs.question_matches(question, rule, structure.table)

    def render(self, structure: ChartStructure, rng: np.random.Generator) -> Render:
        out = self.renderer.render(structure)  # matplotlib draws deterministically: no randomness needed
        return Render(out.image, out)

    def validate(self, structure: ChartStructure, render: Render, rule: Mapping[str, Any]) -> None:
        hidden = occluded_marks(render.facts, structure.spec.chart_type)
        if hidden:
            row, series = hidden[0]
            raise InvalidEdit("occluded", f"the legend covers the mark of {row!r} in {series!r} ({len(hidden)} marks in "
                              f"all); use set_style legend 'outside', 'top' or 'none'", field="legend")
        chart_checks.check(structure, rule, render.facts, self.tolerance)

    def actor_context(self, sample: Sample, render: Render) -> dict[str, Any]:
        structure, rule = sample.structure, sample.label_rule
        features = difficulty_features(structure, render.facts, rule)
        t = structure.table
        distractors = list(t.rows) + list(t.series) + [format_number(v) for v in t.all_values() if v is not None]
        return {"answer": sample.answer, "features": features, "difficulty": difficulty(features),
                "distractors": distractors}

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
        return None

    def sample_edit(self, structure: ChartStructure, rule: Mapping[str, Any], rng: np.random.Generator) -> dict[str, Any]:
        def propose() -> dict[str, Any]:
            if chart_programs.values_fixed(rule):
                return {"ops": [chart_editor.sample_style_op(structure, rng)]}
            return chart_editor.sample_edit(structure, rng, self.config.rewriter_max_ops, rule)

        def accept(edit: dict[str, Any]) -> bool:
            new = chart_editor.apply(structure, edit, rule)
            chart_programs.relabel(new.table, rule)
            return new != structure  # an edit that changes nothing is refused by the environment

        return draw_edit(propose, accept, self.config.max_tries, "chart")

    def close(self) -> None:
        self.renderer.close()


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

    Terminated by a ``stop`` op; truncated after ``max_turns`` steps (valid or not).

    ## Arguments

    ``gymnasium.make("vicogym/Chart-v0", k=8, max_turns=4, source="procedural",
    actor="simulated", invalid_penalty=-1.0, reward_shape="band", sweet_zone=(0.35, 0.65),
    dpi=80, scorer="relaxed", templates=None, max_tries=16, rewriter_max_ops=2)``;
    ``templates`` restricts procedural questions to the given template ids;
    ``max_tries`` bounds the procedural tables drawn per seed and the edits tried by
    ``sample_edit``; ``actor`` may also be an object with
    ``answer(image, question, k, rng=..., context=...)``.

    ## Version History

    - v0: initial release.
    """

    env_id = "vicogym/Chart-v0"
    version = 0
    config_class = ChartEnvConfig
    arm_class = ChartArm
