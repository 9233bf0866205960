"""An independent re-implementation of the chart programs with numpy, for property tests."""

import statistics

import numpy as np

from vicogym.structures.chart import Table


def reference(table: Table, program: dict):
    """The answer of ``program`` on ``table``, or ``None`` where it is ambiguous."""
    op = program["op"]
    col = lambda s: np.array(table.column(s), dtype=float)
    cell = lambda r, s: table.cell(r, s)
    if op == "lookup":
        return cell(program["row"], program["series"])
    if op in ("max", "min", "sum", "mean", "median", "range"):
        c = col(program["series"])
        return {"max": c.max(), "min": c.min(), "sum": c.sum(), "mean": c.mean(),
                "median": statistics.median(c.tolist()), "range": c.max() - c.min()}[op]
    if op in ("argmax", "argmin"):
        c = col(program["series"])
        target = c.max() if op == "argmax" else c.min()
        hits = [r for r, v in zip(table.rows, c) if v == target]
        return hits[0] if len(hits) == 1 else None
    if op in ("absdiff", "ratio", "greater", "less", "pair_sum", "pair_mean"):
        a, b = cell(program["a"], program["series"]), cell(program["b"], program["series"])
        if op == "absdiff":
            return abs(a - b)
        if op == "pair_sum":
            return a + b
        if op == "pair_mean":
            return (a + b) / 2
        if op == "ratio":
            return None if b == 0 else a / b
        if a == b:
            return None
        return "Yes" if (a > b) == (op == "greater") else "No"
    if op == "count_above":
        return float((col(program["series"]) > program["threshold"]).sum())
    if op == "count_rows":
        return float(len(table.rows))
    if op == "row_with_value":
        shown = lambda v: round(v, 2) if abs(v) >= 1 else float(f"{v:.4g}")
        hits = [r for r, v in zip(table.rows, col(program["series"])) if shown(v) == shown(program["value"])]
        return hits[0] if len(hits) == 1 else None
    row = np.array(table.values[table.rows.index(program["row"])], dtype=float)
    if op == "row_sum":
        return row.sum()
    if op == "row_argmax":
        hits = [s for s, v in zip(table.series, row) if v == row.max()]
        return hits[0] if len(hits) == 1 else None
    a, b = cell(program["row"], program["s1"]), cell(program["row"], program["s2"])
    return None if a == b else ("Yes" if a > b else "No")
