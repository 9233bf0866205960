"""Edits of the chart arm: op schemas, pure ``apply``, replacement by diff, and a sampler.

``apply(structure, edit, rule)`` returns a new :class:`ChartStructure` or raises
:class:`InvalidEdit`; it never mutates its inputs (the structures are immutable), so a
rejected edit leaves the caller's state exactly as it was.

Rules every edit keeps, beyond the label rule's anchors:

- new row and series labels come from the structure's vocabulary, and may not read like
  a label the chart already has (:func:`~vicogym.structures.chart.label_key`) or like a
  word the question uses;
- values keep the table's precision (``decimals``): a new value with more decimals is
  refused, scaled values are rounded;
- a question from data that refers to colours, mark types, positions or the legend
  locks the style fields that would change what it refers to.

Ops (``{"op": name, ...}``):

==============  ==========================================  ===========================
op              fields                                      changes
==============  ==========================================  ===========================
set_cell        row, series, value                          one value
scale_series    series, factor (0 < factor <= 100)          every value of a series
add_row         row, values (one per series), [position]    a new category
remove_row      row                                         drops a category
rename_row      row, to                                     a category's label
reorder_rows    order (a permutation of the row labels)     the drawing order
add_series      series, values (one per row)                a new series
remove_series   series                                      drops a series
set_style       any ChartSpec fields (chart_type, title...)  style and layout only
stop            (none)                                      ends the episode
==============  ==========================================  ===========================
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

import numpy as np

from vicogym.answers import format_number
from vicogym.core import Edit, fold_ops
from vicogym.core import short_repr as _short
from vicogym.errors import InvalidEdit
from vicogym.programs.chart import (
    REFERENCE_STYLE_FIELDS,
    anchors,
    mentions,
    rule_question,
    said_by_titles,
    single_series_required,
    values_fixed,
)
from vicogym.structures.chart import (
    CHART_TYPES,
    LEGEND_POSITIONS,
    MAX_LABEL_CHARS,
    MAX_ROWS,
    MAX_SERIES,
    PALETTES,
    PERCENT_TOTAL_SLACK,
    ChartSpec,
    ChartStructure,
    Table,
    at_precision,
    chart_type_fits,
    label_key,
    reflect_into,
)
from vicogym.validation import is_int, is_number, pick

MAX_ABS_VALUE = 1e12

#: op name -> (required fields, optional fields)
OP_FIELDS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "set_cell": (("row", "series", "value"), ()),
    "scale_series": (("series", "factor"), ()),
    "add_row": (("row", "values"), ("position",)),
    "remove_row": (("row",), ()),
    "rename_row": (("row", "to"), ()),
    "reorder_rows": (("order",), ()),
    "add_series": (("series", "values"), ()),
    "remove_series": (("series",), ()),
    "set_style": ((), ChartSpec.style_fields()),
    "stop": ((), ()),
}
#: ops that change a value, a label or the drawing order (forbidden under Tier 2)
VALUE_OPS = frozenset(OP_FIELDS) - {"set_style", "stop"}
#: JSON Schemas of the ops' fields (with :data:`OP_FIELDS`, the edit schema an LLM rewriter gets)
FIELD_SCHEMAS = {
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
    "font_size": {"type": "number"},
    "figure_size": {"type": "array", "items": {"type": "number"}, "minItems": 2, "maxItems": 2},
}


# -- field checks -------------------------------------------------------------------
def _value(value: Any, field: str, table: Table) -> float:
    """A table value: a number at the table's precision within its bounds."""
    number = _number(value, field, table.decimals)
    if not table.in_bounds(number):
        low, high = table.bounds  # type: ignore[misc]
        raise InvalidEdit("bad_value", f"{field} {_short(value)} is outside what this table's values can be "
                          f"({format_number(low)} to {format_number(high)})", field=field)
    return number


def _number(value: Any, field: str, decimals: int | None = None) -> float:
    """A finite number within range and, when ``decimals`` is given, at that precision."""
    if not is_number(value, finite=False):
        raise InvalidEdit("bad_value", f"{field} must be a number, got {_short(value)}", field=field)
    # compare before converting: an int too large for a float would overflow
    if isinstance(value, float) and not math.isfinite(value) or abs(value) > MAX_ABS_VALUE:
        raise InvalidEdit("bad_value",
                          f"{field} must be finite with magnitude <= {MAX_ABS_VALUE:g}, got {_short(value)}",
                          field=field)
    if decimals is not None and not at_precision(float(value), decimals):
        raise InvalidEdit("bad_value", f"{field} {_short(value)} has more decimals than the table's values "
                          f"({decimals}); round it to {decimals} decimal{'s' if decimals != 1 else ''}", field=field)
    return float(value)


def _label(value: Any, field: str) -> str:
    if not isinstance(value, str):
        raise InvalidEdit("bad_field", f"{field} must be a string, got {_short(value)}", field=field)
    if not value.strip() or value != value.strip() or not value.isprintable() or len(value) > MAX_LABEL_CHARS:
        raise InvalidEdit(
            "bad_value",
            f"{field} must be 1-{MAX_LABEL_CHARS} printable characters on one line without surrounding spaces, "
            f"got {_short(value)}",
            field=field,
        )
    return value


def _existing(table_labels: tuple[str, ...], value: Any, field: str, what: str) -> int:
    label = _label(value, field) if not isinstance(value, str) else value
    if label not in table_labels:
        shown = list(table_labels)[:12]
        raise InvalidEdit("not_found", f"{what} {_short(label)} is not in the table; it has {shown}", field=field)
    return table_labels.index(label)


def new_label_problem(s: ChartStructure, rule: Mapping[str, Any], label: str, axis: str,
                      replacing: str | None = None) -> InvalidEdit | None:
    """Why ``label`` may not be added as a new ``axis`` ("row" or "series") label, or ``None``."""
    t = s.table
    key = label_key(label)
    clash = next((x for x in t.rows + t.series if x != replacing and label_key(x) == key), None)
    if clash is not None:
        said = "is already in the table" if clash == label else f"reads the same as {clash!r}, which the chart has"
        return InvalidEdit("duplicate_label", f"{axis} {label!r} {said}")
    allowed = s.vocabulary.rows if axis == "row" else s.vocabulary.series
    if label not in allowed:
        free = [x for x in allowed if x not in t.rows + t.series][:10]
        hint = f"new {axis} labels come from its vocabulary, e.g. {free}" if free else f"it takes no new {axis} labels"
        return InvalidEdit("vocabulary", f"{axis} {label!r} does not belong to this table; {hint}")
    question = rule_question(rule, t)
    if question is not None and mentions(question, label):
        return InvalidEdit("ambiguous", f"the question mentions {label!r}; a new {axis} of that name would make "
                           f"it ambiguous")
    return None


def _new_label(s: ChartStructure, rule: Mapping[str, Any], value: Any, field: str, axis: str,
               replacing: str | None = None) -> str:
    label = _label(value, field)
    problem = new_label_problem(s, rule, label, axis, replacing)
    if problem is not None:
        raise InvalidEdit(problem.code, problem.message, field=field)
    return label


def _values(value: Any, n: int, field: str, table: Table) -> tuple[float, ...]:
    if not isinstance(value, list) or len(value) != n:
        raise InvalidEdit("bad_field", f"{field} must be a list of {n} numbers, got {_short(value)}", field=field)
    return tuple(_value(v, f"{field}[{i}]", table) for i, v in enumerate(value))


def series_label(table: Table, j: int) -> str:
    return repr(table.series[j])


# -- ops ------------------------------------------------------------------------------
Op = Callable[[ChartStructure, Mapping[str, Any], Mapping[str, Any]], ChartStructure]


def _set_values(table: Table, values: list[list[Any]]) -> Table:
    return replace(table, values=tuple(tuple(r) for r in values))


def _op_set_cell(s: ChartStructure, op: Mapping[str, Any], rule: Mapping[str, Any]) -> ChartStructure:
    t = s.table
    i = _existing(t.rows, op["row"], "row", "row")
    j = _existing(t.series, op["series"], "series", "series")
    values = [list(r) for r in t.values]
    values[i][j] = _value(op["value"], "value", t)
    return s.with_table(_set_values(t, values))


def _op_scale_series(s: ChartStructure, op: Mapping[str, Any], rule: Mapping[str, Any]) -> ChartStructure:
    t = s.table
    j = _existing(t.series, op["series"], "series", "series")
    factor = _number(op["factor"], "factor")
    if not 0 < factor <= 100:
        raise InvalidEdit("bad_value", f"factor must be in (0, 100], got {_short(factor)}", field="factor")
    values = [list(r) for r in t.values]
    for r in values:
        if r[j] is not None:  # scaled values keep the table's precision (no float noise)
            r[j] = round(r[j] * factor, t.decimals)
            if not t.in_bounds(r[j]):
                low, high = t.bounds  # type: ignore[misc]
                raise InvalidEdit("bad_value", f"factor {_short(op['factor'])} takes {series_label(t, j)} values to "
                                  f"{format_number(r[j])}, outside what they can be ({format_number(low)} to "
                                  f"{format_number(high)})", field="factor")
    return s.with_table(_set_values(t, values))


def _op_add_row(s: ChartStructure, op: Mapping[str, Any], rule: Mapping[str, Any]) -> ChartStructure:
    t = s.table
    label = _new_label(s, rule, op["row"], "row", "row")
    new = _values(op["values"], len(t.series), "values", t)
    # a row of an ordered axis (years, age groups) goes at its place unless told otherwise
    position = op.get("position", _place(s, label) if ordered_rows(s) else len(t.rows))
    if not is_int(position, 0, len(t.rows)):
        raise InvalidEdit("bad_value", f"position must be an integer in [0, {len(t.rows)}], got {_short(position)}",
                          field="position")
    rows = list(t.rows)
    values = list(t.values)
    rows.insert(position, label)
    values.insert(position, new)
    return s.with_table(replace(t, rows=tuple(rows), values=tuple(values)))


def _op_remove_row(s: ChartStructure, op: Mapping[str, Any], rule: Mapping[str, Any]) -> ChartStructure:
    t = s.table
    i = _existing(t.rows, op["row"], "row", "row")
    return s.with_table(replace(t, rows=t.rows[:i] + t.rows[i + 1 :], values=t.values[:i] + t.values[i + 1 :]))


def _op_rename_row(s: ChartStructure, op: Mapping[str, Any], rule: Mapping[str, Any]) -> ChartStructure:
    t = s.table
    i = _existing(t.rows, op["row"], "row", "row")
    label = _new_label(s, rule, op["to"], "to", "row", replacing=t.rows[i])
    return s.with_table(replace(t, rows=t.rows[:i] + (label,) + t.rows[i + 1 :]))


def _op_reorder_rows(s: ChartStructure, op: Mapping[str, Any], rule: Mapping[str, Any]) -> ChartStructure:
    t = s.table
    order = op["order"]
    if (not isinstance(order, list) or not all(isinstance(label, str) for label in order)
            or sorted(order) != sorted(t.rows)):
        raise InvalidEdit("bad_value", f"order must list every row label exactly once: {list(t.rows)}", field="order")
    index = [t.rows.index(label) for label in order]
    return s.with_table(replace(t, rows=tuple(order), values=tuple(t.values[i] for i in index)))


def _op_add_series(s: ChartStructure, op: Mapping[str, Any], rule: Mapping[str, Any]) -> ChartStructure:
    t = s.table
    label = _new_label(s, rule, op["series"], "series", "series")
    new = _values(op["values"], len(t.rows), "values", t)
    values = tuple(row + (v,) for row, v in zip(t.values, new))
    return s.with_table(replace(t, series=t.series + (label,), values=values))


def _op_remove_series(s: ChartStructure, op: Mapping[str, Any], rule: Mapping[str, Any]) -> ChartStructure:
    t = s.table
    j = _existing(t.series, op["series"], "series", "series")
    values = tuple(row[:j] + row[j + 1 :] for row in t.values)
    return s.with_table(replace(t, series=t.series[:j] + t.series[j + 1 :], values=values))


def _op_set_style(s: ChartStructure, op: Mapping[str, Any], rule: Mapping[str, Any]) -> ChartStructure:
    changes = {k: v for k, v in op.items() if k != "op"}
    try:
        new = s.with_spec(**changes)
    except (TypeError, ValueError) as exc:
        field = next(iter(changes)) if len(changes) == 1 else None
        raise InvalidEdit("bad_value", str(exc), field=field) from None
    _check_references(s.spec, new.spec, rule)
    return new


OPS: dict[str, Op] = {
    "set_cell": _op_set_cell,
    "scale_series": _op_scale_series,
    "add_row": _op_add_row,
    "remove_row": _op_remove_row,
    "rename_row": _op_rename_row,
    "reorder_rows": _op_reorder_rows,
    "add_series": _op_add_series,
    "remove_series": _op_remove_series,
    "set_style": _op_set_style,
}


# -- rule checks ----------------------------------------------------------------------
def locked_style_fields(rule: Mapping[str, Any]) -> set[str]:
    """Style fields the question's references (colour, mark, position, legend) lock."""
    return {name for kind in rule.get("refers", ()) for name in REFERENCE_STYLE_FIELDS.get(kind, ())}


def _check_references(old: ChartSpec, new: ChartSpec, rule: Mapping[str, Any]) -> None:
    locked = locked_style_fields(rule)
    changed = sorted(name for name in locked if getattr(old, name) != getattr(new, name))
    if changed:
        kinds = ", ".join(k for k in rule.get("refers", ()) if set(REFERENCE_STYLE_FIELDS.get(k, ())) & set(changed))
        raise InvalidEdit("reference", f"the question refers to the chart's {kinds}; {', '.join(changed)} must stay "
                          f"as drawn", field=changed[0])


def _check_rule_for_op(op: Mapping[str, Any], rule: Mapping[str, Any]) -> None:
    name = op["op"]
    if values_fixed(rule) and name in VALUE_OPS:
        raise InvalidEdit(
            "invariance",
            f"{name} changes the table, but this answer has no program: only set_style edits are allowed",
            field="op",
        )
    if name == "reorder_rows" and "position" in rule.get("refers", ()):
        raise InvalidEdit("reference", "the question refers to positions in the chart, so the row order must stay",
                          field="order")
    if name == "add_series" and single_series_required(rule):
        raise InvalidEdit("anchor", "the question names no series, so the chart must keep its single series",
                          field="series")
    anchor_rows, anchor_series = anchors(rule)
    row, series = op.get("row"), op.get("series")
    if name in ("remove_row", "rename_row") and isinstance(row, str) and row in anchor_rows:
        raise InvalidEdit("anchor", f"row {op['row']!r} anchors the answer and must stay", field="row")
    if name == "remove_series" and isinstance(series, str) and series in anchor_series:
        raise InvalidEdit("anchor", f"series {op['series']!r} anchors the answer and must stay", field="series")


def ordered_rows(structure: ChartStructure) -> bool:
    """Whether the rows follow the order their vocabulary has (years, months ...)."""
    return structure.vocabulary.ordered and structure.vocabulary.rows_in_order(structure.table.rows)


def check_structure(s: ChartStructure, before: ChartStructure | None = None) -> None:
    """Size and chart-type validity of a whole structure; with ``before``, rows that were in
    order (years, months) must stay in order."""
    t = s.table
    if not 2 <= len(t.rows) <= MAX_ROWS:
        raise InvalidEdit("size", f"a chart needs 2-{MAX_ROWS} rows, this edit leaves {len(t.rows)}")
    if not 1 <= len(t.series) <= MAX_SERIES:
        raise InvalidEdit("size", f"a chart needs 1-{MAX_SERIES} series, this edit leaves {len(t.series)}")
    if before is not None and ordered_rows(before) and not ordered_rows(s):
        raise InvalidEdit("order", f"the rows follow an order ({', '.join(before.table.rows[:4])} ...); keep it: "
                          f"add a row at its place, rename only to a label that keeps the order, do not reorder",
                          field="rows")
    if t.row_spread is not None:  # a row's series lie as close as the topic says
        for label, row in zip(t.rows, t.values):
            present = [v for v in row if v is not None]
            if len(present) > 1 and max(present) - min(present) > t.row_spread + 1e-9:
                gap = format_number(max(present) - min(present))
                raise InvalidEdit("bad_value", f"{label!r}'s values would lie {gap} apart, more than the "
                                  f"{format_number(t.row_spread)} this table's series can differ by", field="value")
    total = t.total_problem()
    if total is not None:  # a Total row or a NET series adds up its parts after every edit
        raise InvalidEdit("bad_value", f"{total}; change a part and its total together, in the same edit",
                          field="value")
    rank = t.rank_problem()
    if rank is not None:  # series the topic ranks in every row keep their order
        raise InvalidEdit("bad_value", f"{rank}; {', '.join(t.ranked)} keep this order in every row of this table",
                          field="value")
    relation = t.relation_problem()
    if relation is not None:  # a subgroup keeps its place against the groups it lies above or below
        pairs = ", ".join(f"{a!r} above {b!r}" for a, b in t.above)
        raise InvalidEdit("relation", f"{relation}; this table keeps {pairs} in every row (change both in the same "
                          f"edit)", field="value")
    step = t.step_problem()
    if step is not None:  # a series moves between neighbouring periods as its quantity can
        raise InvalidEdit("step", f"{step}; choose a value closer to its neighbours (or change them too, in the same "
                          f"edit)", field="value")
    wholes = ([(series, [r[j] for r in t.values]) for j, series in enumerate(t.series)] if t.complete else []) + (
        list(zip(t.rows, t.values)) if t.complete_rows else [])
    for name, line in wholes:  # every share of one whole, in a column or a row: they keep adding up to it
        total = math.fsum(v for v in line if v is not None)
        if abs(total - 100.0) > PERCENT_TOTAL_SLACK:
            raise InvalidEdit("bad_value", f"{name!r} holds every share of one whole, and they would add up to "
                              f"{format_number(total)}%; keep them at 100% (lower another share as you raise one, "
                              f"in the same edit)", field="value")
    if t.part_of_whole and t.unit == "%":  # shares of one whole: no series adds up to more than all of it
        for j, series in enumerate(t.series):
            parts = [r[j] for r in t.values if r[j] is not None]
            total = math.fsum(parts)
            # some of the parts (the leading grocers) leave the rest of the whole to others: only
            # their own rounding may take them past it; all of them (t.complete) may lie a point off
            if total > 100.0 + (PERCENT_TOTAL_SLACK if t.complete else len(parts) * 0.5 * 10.0 ** -t.decimals):
                raise InvalidEdit("bad_value", f"{series!r} holds shares of one whole, and they would add up to "
                                  f"{format_number(total)}%; keep the total at most 100% (lower another share as "
                                  f"you raise one)", field="value")
    problem = chart_type_fits(t, s.spec.chart_type)
    if problem is None and s.spec.chart_type == "line" and not ordered_rows(s):
        problem = "line joins its points in order, and these rows have no order (years, months ...)"
    if problem:
        raise InvalidEdit("chart_type", f"{problem}; change chart_type with set_style first", field="chart_type")


def diff(old: ChartStructure, new: ChartStructure) -> dict[str, Any]:
    """What changed between two structures, by label (rows and series are matched by name)."""
    o, n = old.table, new.table
    common_rows = [r for r in n.rows if r in o.rows]
    common_series = [c for c in n.series if c in o.series]
    changed = [[r, c] for r in common_rows for c in common_series if o.cell(r, c) != n.cell(r, c)]
    old_spec, new_spec = old.spec.to_dict(), new.spec.to_dict()
    return {
        "rows_added": [r for r in n.rows if r not in o.rows],
        "rows_removed": [r for r in o.rows if r not in n.rows],
        "series_added": [c for c in n.series if c not in o.series],
        "series_removed": [c for c in o.series if c not in n.series],
        "cells_changed": changed,
        "reordered": [r for r in o.rows if r in n.rows] != [r for r in n.rows if r in o.rows],
        "style_changed": sorted(k for k, v in new_spec.items() if old_spec[k] != v),
        "index_renamed": o.index_name != n.index_name or o.unit != n.unit,
        "table_kind_changed": _kind(o) != _kind(n),
        "vocabulary_changed": old.vocabulary != new.vocabulary,
    }


def _kind(t: Table) -> tuple:
    """What a table is (its precision, wholes, bounds and relations), which edits keep."""
    return (t.decimals, t.part_of_whole, t.stackable, t.bounds, t.row_spread, t.ranked, t.complete, t.complete_rows,
            t.totals, t.max_step, t.above)


def _apply_replace(s: ChartStructure, data: Mapping[str, Any], rule: Mapping[str, Any]) -> ChartStructure:
    try:
        new = ChartStructure.from_dict(data)
    except (TypeError, ValueError, KeyError) as exc:
        raise InvalidEdit("malformed", f"replacement structure: {exc}", op="replace") from None
    for label in new.table.rows:
        _label(label, "rows")
    for label in new.table.series:
        _label(label, "series")
    for axis, labels in (("rows", new.table.rows), ("series", new.table.series)):
        if len(set(labels)) != len(labels):
            raise InvalidEdit("duplicate_label", f"replacement {axis} repeat a label", op="replace", field=axis)
    d = diff(s, new)
    if d["index_renamed"] or d["table_kind_changed"] or d["vocabulary_changed"]:
        raise InvalidEdit("bad_value",
                          "index_name, unit, decimals, part_of_whole, stackable, bounds, row_spread, ranked, complete, "
                          "complete_rows, totals, max_step, above and the vocabulary belong to the question's table "
                          "and cannot change",
                          op="replace", field="table")
    for v in new.table.all_values():
        if v is not None:
            _value(v, "values", s.table)
    if d["series_added"] and single_series_required(rule):
        raise InvalidEdit("anchor", "the question names no series, so the chart must keep its single series",
                          op="replace")
    table_changed = any(d[k] for k in ("rows_added", "rows_removed", "series_added", "series_removed", "cells_changed",
                                       "reordered"))
    if values_fixed(rule) and table_changed:
        raise InvalidEdit("invariance", "this answer has no program: a replacement may change style fields only",
                          op="replace")
    if d["reordered"] and "position" in rule.get("refers", ()):
        raise InvalidEdit("reference", "the question refers to positions in the chart, so the row order must stay",
                          op="replace", field="rows")
    anchor_rows, anchor_series = anchors(rule)
    lost = sorted(set(d["rows_removed"]) & anchor_rows) + sorted(set(d["series_removed"]) & anchor_series)
    if lost:
        raise InvalidEdit("anchor", f"the replacement drops {lost}, which anchor the answer", op="replace")
    # each new label is judged against the labels that stay and the new ones before it
    added = d["rows_added"] + d["series_added"]
    seen = [x for x in new.table.rows + new.table.series if x not in added]
    for axis, labels in (("row", d["rows_added"]), ("series", d["series_added"])):
        for label in labels:
            problem = new_label_problem(replace(s, table=_labels_only(s.table, seen)), rule, label, axis)
            if problem is not None:
                raise InvalidEdit(problem.code, problem.message, op="replace",
                                  field="rows" if axis == "row" else "series")
            seen.append(label)
    try:
        _check_references(s.spec, new.spec, rule)
    except InvalidEdit as exc:
        raise exc.at("replace") from None
    return new


def _labels_only(table: Table, labels: list[str]) -> Table:
    """A table that holds just ``labels`` (as rows), for checking a new label against them."""
    return Table(table.index_name, tuple(labels), (), tuple(() for _ in labels), table.unit, table.decimals,
                 table.part_of_whole)


def apply(structure: ChartStructure, edit: Edit | Mapping[str, Any] | str, rule: Mapping[str, Any]) -> ChartStructure:
    """The structure after ``edit`` under label ``rule``, or ``InvalidEdit``. Pure."""
    edit = Edit.parse(edit)
    if edit.replace is not None:
        new = _apply_replace(structure, edit.replace, rule)
        try:
            check_structure(new, structure)
        except InvalidEdit as exc:
            raise exc.at("replace") from None
        return new
    def step(current: Any, op: Mapping[str, Any]) -> Any:
        _check_rule_for_op(op, rule)
        return OPS[op["op"]](current, op, rule)

    current, stopped = fold_ops(edit, structure, step, OP_FIELDS)
    if stopped:
        return structure
    try:
        check_structure(current, structure)
    except InvalidEdit as exc:
        raise exc.at(f"ops[{len(edit.ops) - 1}] {edit.ops[-1]['op']}") from None
    return current


# -- sampling the edit space -----------------------------------------------------------
def _perturb(value: float, rng: np.random.Generator, table: Table) -> float:
    """A value 5-60% away from ``value``, at the table's precision, within its bounds."""
    scale = abs(value) if value else 1.0
    new = float(value + rng.choice([-1.0, 1.0]) * scale * rng.uniform(0.05, 0.6))
    if table.bounds is not None:  # folded back inside the bounds at the table's precision, not piled on them
        unit = 10.0 ** -table.decimals
        low, high = math.ceil(table.bounds[0] / unit) * unit, math.floor(table.bounds[1] / unit) * unit
        new = min(max(reflect_into(new, low, high), low), high)
    return round(new, table.decimals)


def _fresh(structure: ChartStructure, axis: str) -> list[str]:
    taken = {label_key(x) for x in structure.table.rows + structure.table.series}
    pool = structure.vocabulary.rows if axis == "row" else structure.vocabulary.series
    return [label for label in pool if label_key(label) not in taken]


def _place(structure: ChartStructure, label: str) -> int:
    """Where ``label`` goes among rows that follow their vocabulary's order."""
    rank = {x: i for i, x in enumerate(structure.vocabulary.rows)}
    return sum(rank[r] < rank.get(label, len(rank)) for r in structure.table.rows)


def _position(structure: ChartStructure, label: str, rng: np.random.Generator) -> int:
    """Where a new row goes: its place in the order of rows that follow one (years,
    months), anywhere otherwise."""
    if ordered_rows(structure):
        return _place(structure, label)
    return int(rng.integers(len(structure.table.rows) + 1))


def _keeps_shape(table: Table) -> bool:
    """Whether ``table`` keeps its steps between periods, its ranked series and the series
    it keeps above others (what a drawn edit must keep to be worth proposing)."""
    return table.step_problem() is None and table.relation_problem() is None and table.rank_problem() is None


def _shaped(table: Table) -> bool:
    return table.max_step is not None or bool(table.above) or bool(table.ranked)


def _fitting_cell(t: Table, i: int, j: int, proposal: float) -> float:
    """``proposal`` for cell (i, j), or the first of it moved back towards the old value
    (by half, three quarters ...), on either side of it, that keeps the table's shape
    (:func:`_keeps_shape`); the old value itself when none does."""
    old = t.values[i][j]
    if old is None or not _shaped(t) or not _keeps_shape(t):
        return proposal
    for share in (1.0, -1.0, 0.5, -0.5, 0.25, -0.25, 0.1, -0.1, 0.05, -0.05):
        value = round(old + (proposal - old) * share, t.decimals)
        values = [list(r) for r in t.values]
        values[i][j] = value
        if value != old and t.in_bounds(value) and _keeps_shape(_set_values(t, values)):
            return value
    return old


def _fitting_row(t: Table, position: int, proposal: list[float]) -> list[float]:
    """``proposal`` as the row at ``position``, or moved towards its neighbour's values until
    the table keeps its shape (each series the topic keeps above another swapped into place)."""
    if not _shaped(t) or not _keeps_shape(t):
        return proposal
    neighbour = t.values[position - 1] if position > 0 else t.values[0]
    for share in (1.0, 0.5, 0.25, 0.1, 0.0):
        row = [p if n is None else round(n + (p - n) * share, t.decimals) for p, n in zip(proposal, neighbour)]
        for upper, lower in t.above:  # a subgroup above its group: their values swapped where drawn the other way
            if upper not in t.series or lower not in t.series:
                continue
            a, b = t.series.index(upper), t.series.index(lower)
            if row[a] is not None and row[b] is not None and row[a] < row[b]:
                row[a], row[b] = row[b], row[a]
        table = replace(t, rows=t.rows[:position] + ("new row",) + t.rows[position:],
                        values=t.values[:position] + (tuple(row),) + t.values[position:])
        if _keeps_shape(table):
            return row
    return proposal


def _fitting_series(t: Table, name: str, proposal: list[float], rng: np.random.Generator) -> list[float]:
    """Values for a new series ``name``: ``proposal``, or when that breaks the table's shape,
    a column it lies next to scaled by one factor (so it moves between periods as that one
    does): above the series the table keeps it above, below those it keeps it under."""
    def fits(values: list[Any]) -> bool:
        return _keeps_shape(replace(t, series=t.series + (name,),
                                    values=tuple(r + (v,) for r, v in zip(t.values, values))))

    if not _shaped(t) or not _keeps_shape(t) or fits(proposal):
        return proposal
    below = [t.series.index(b) for a, b in t.above if a == name and b in t.series]
    over = [t.series.index(a) for a, b in t.above if b == name and a in t.series]
    for _ in range(6):
        factor = float(rng.uniform(1.05, 1.5) if below else rng.uniform(0.6, 0.95) if over else rng.uniform(0.7, 1.3))
        lines = below or over or [int(rng.integers(len(t.series)))]
        pick_line = max if below else min
        values = []
        for row in t.values:
            present = [row[k] for k in lines if row[k] is not None]
            values.append(None if not present else round(pick_line(present) * factor, t.decimals))
        if None not in values and all(t.in_bounds(v) for v in values) and fits(values):
            return values  # type: ignore[return-value]
    return proposal


def sample_op(structure: ChartStructure, rng: np.random.Generator) -> dict[str, Any]:
    """One op drawn from the arm's edit space (it may still be rejected under a rule)."""
    t = structure.table
    kinds = ["set_cell", "set_cell", "set_cell", "scale_series", "add_row", "remove_row", "reorder_rows",
             "add_series", "remove_series", "rename_row", "set_style", "set_style"]
    if ordered_rows(structure):  # rows in order stay in order: no shuffles, no renames
        kinds = [k for k in kinds if k not in ("reorder_rows", "rename_row")]
    kind = pick(rng, kinds)
    row = pick(rng, t.rows)
    series = pick(rng, t.series)
    fresh_rows = _fresh(structure, "row")
    if kind == "set_cell":
        column = t.column(series)
        old = t.cell(row, series)
        base = old if old is not None else float(np.nanmean([v for v in column if v is not None] or [1.0]))
        value = _perturb(base, rng, t)
        return {"op": "set_cell", "row": row, "series": series,
                "value": _fitting_cell(t, t.rows.index(row), t.series.index(series), value)}
    if kind == "scale_series":
        return {"op": "scale_series", "series": series,
                "factor": float(rng.choice([0.5, 0.8, 0.9, 1.1, 1.25, 1.5, 2.0]))}
    if kind in ("add_row", "rename_row") and fresh_rows:
        label = pick(rng, fresh_rows)
        if kind == "rename_row":
            return {"op": "rename_row", "row": row, "to": label}
        values = []
        for s in t.series:
            known = [v for v in t.column(s) if v is not None] or [1.0]
            values.append(_perturb(float(pick(rng, known)), rng, t))
        position = _position(structure, label, rng)
        return {"op": "add_row", "row": label, "values": _fitting_row(t, position, values), "position": position}
    if kind == "remove_row":
        return {"op": "remove_row", "row": row}
    if kind == "reorder_rows":
        return {"op": "reorder_rows", "order": [t.rows[i] for i in rng.permutation(len(t.rows))]}
    fresh_series = _fresh(structure, "series")
    if kind == "add_series" and fresh_series:
        name = pick(rng, fresh_series)
        values = [_perturb(float(v if v is not None else 1.0), rng, t) for v in t.column(series)]
        return {"op": "add_series", "series": name, "values": _fitting_series(t, name, values, rng)}
    if kind == "remove_series" and len(t.series) > 1:
        return {"op": "remove_series", "series": series}
    return sample_style_op(structure, rng)


def sample_style_op(structure: ChartStructure, rng: np.random.Generator) -> dict[str, Any]:
    t = structure.table
    fitting = [c for c in CHART_TYPES if chart_type_fits(t, c) is None and (c != "line" or ordered_rows(structure))]
    choice = int(rng.integers(6))
    if choice == 0 and fitting:
        chart_type = pick(rng, fitting)
        if chart_type == "pie" and structure.spec.legend == "none":  # a pie's legend names its slices
            return {"op": "set_style", "chart_type": chart_type, "legend": "outside"}
        return {"op": "set_style", "chart_type": chart_type}
    if choice == 1:
        return {"op": "set_style", "palette": pick(rng, PALETTES)}
    if choice == 2:
        return {"op": "set_style", "data_labels": not structure.spec.data_labels}
    if choice == 3:
        return {"op": "set_style", "gridlines": not structure.spec.gridlines}
    if choice == 4:
        return {"op": "set_style", "font_size": float(rng.choice([8.0, 9.0, 10.0, 11.0, 12.0]))}
    t = structure.table
    if len(t.series) == 1 and structure.spec.chart_type != "pie" and said_by_titles(structure.spec, t.series[0]):
        return {"op": "set_style", "palette": pick(rng, PALETTES)}  # a legend would repeat what the title says
    return {"op": "set_style", "legend": pick(rng, LEGEND_POSITIONS)}


def sample_edit(structure: ChartStructure, rng: np.random.Generator, max_ops: int = 2,
                rule: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """A random edit of 1..``max_ops`` ops, applied in sequence to the structure."""
    n = int(rng.integers(1, max_ops + 1))
    ops = []
    current = structure
    rule = rule if rule is not None else {"kind": "program", "program": {"op": "count_rows"}}
    for _ in range(n):
        op = sample_op(current, rng)
        ops.append(op)
        try:
            current = OPS[op["op"]](current, op, rule)
            if op["op"] == "set_cell" and (current.table.complete or current.table.complete_rows):
                ops.append(_compensate(current.table, op, rng))  # every share of a whole: another gives way
                current = OPS["set_cell"](current, ops[-1], rule)
            if op["op"] == "set_cell" and current.table.totals:  # a part's total follows it
                for follow in _totals_of(current.table, op):
                    ops.append(follow)
                    current = OPS["set_cell"](current, follow, rule)
            if op["op"] == "add_series" and current.spec.legend == "none":  # series to tell apart: a legend
                ops.append({"op": "set_style", "legend": "outside"})
                current = OPS["set_style"](current, ops[-1], rule)
        except InvalidEdit:
            break
    return {"ops": ops}


def _totals_of(table: Table, op: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The set_cells that bring the totals of ``op``'s cell back to the sum of their parts."""
    follows = []
    for name in table.totals:
        if name in table.rows and name != op["row"]:
            parts = [table.cell(r, op["series"]) for r in table.rows if r != name]
            row, series = name, op["series"]
        elif name in table.series and name != op["series"]:
            parts = [table.cell(op["row"], x) for x in table.series if x != name]
            row, series = op["row"], name
        else:
            continue
        if None not in parts:
            follows.append({"op": "set_cell", "row": row, "series": series,
                            "value": round(math.fsum(parts), table.decimals)})  # type: ignore[arg-type]
    return follows


def _compensate(table: Table, op: Mapping[str, Any], rng: np.random.Generator) -> dict[str, Any]:
    """The set_cell that brings ``op``'s whole back to 100% through another of its cells: in
    its column (a series of shares), else in its row (each row's shares)."""
    if table.complete:
        cells = [(r, op["series"]) for r in table.rows if r != op["row"]]
        line = table.column(op["series"])
    else:
        cells = [(op["row"], x) for x in table.series if x != op["series"]]
        line = table.values[table.rows.index(op["row"])]
    cells = [(r, x) for r, x in cells if table.cell(r, x) is not None]
    if not cells:
        raise InvalidEdit("bad_value", "no other share to lower")
    row, series = cells[int(rng.integers(len(cells)))]
    excess = math.fsum(v for v in line if v is not None) - 100.0
    return {"op": "set_cell", "row": row, "series": series,
            "value": round(max(0.0, float(table.cell(row, series)) - excess), table.decimals)}


