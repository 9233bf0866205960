"""Facts of the package's own images for the instruction-following arm's grounded
constraints (the ``facts`` dict of :data:`vicogym.programs.instruct.FACT_KINDS`), read
from each arm's structure and, where it knows more, from what its renderer reported.

- chart: ``rows`` from the table (every non-missing cell: label, series, value, plus the
  table's ``decimals`` and, when the renderer shows the values only through the value
  axis, a reading ``tolerance``); ``texts`` from the renderer's labels (title, axis titles,
  category tick labels, legend entries; none with glyphs the font lacks), or from the spec
  and the table when there is no render (title, axis labels, category labels).
- clevr: ``objects`` from the scene graph, complete (``source`` ``"clevr"``): shape as
  category, colour, size, material, and the centre the camera projects (the projection
  :meth:`Scene.pixel_coords` computes as CLEVR's renderer does), over the image size. With
  the render's report (``visible`` pixel counts), an object nobody can see is left out.
- natural: ``objects`` from the record's targets (the answer-relevant objects, which the
  arm protects: ``protected`` true), label as name and category, the centre of each
  target's box moved by the scene's pads and crops. The targets are not every object in
  the picture, so counts and absences are not grounded on them (``source`` ``"natural"``).

No rendering here: callers pass the renderer's report when they have it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from vicogym.programs.instruct.text import collapse_spaces
from vicogym.structures.chart import ChartStructure
from vicogym.structures.clevr import Scene as ClevrScene
from vicogym.structures.natural import Scene as NaturalScene
from vicogym.structures.natural import frame_of

#: the chart labels a reader sees as text worth quoting (value ticks and data labels are numbers)
TEXT_KINDS = ("title", "axis_title", "category", "legend")
#: a value read off the value axis, not printed: within this share of one tick step
TICK_SHARE = 0.2
#: a pie's value without data labels: within this share of the value
PIE_SHARE = 0.05


def _field(report: Any, name: str) -> Any:
    """A renderer report's field: an attribute of its dataclass, or a key of its dict form."""
    if report is None:
        return None
    return report.get(name) if isinstance(report, Mapping) else getattr(report, name, None)


def chart_facts(structure: ChartStructure, render_facts: Any = None) -> dict[str, Any]:
    """The facts of a chart (see the module notes); ``render_facts``: the renderer's
    :class:`~vicogym.renderers.chart.ChartFacts` (or its fields as a dict)."""
    if not isinstance(structure, ChartStructure):
        raise TypeError(f"expected a ChartStructure, got {type(structure).__name__}")
    table, spec = structure.table, structure.spec
    labels = _field(render_facts, "labels")
    tolerance = None
    if labels is not None:
        missing = (_field(render_facts, "facts") or {}).get("missing_glyphs") or {}
        texts = [
            collapse_spaces(lab["text"])
            for lab in labels
            if lab.get("kind") in TEXT_KINDS and lab["text"] not in missing
        ]
        if not any(lab.get("kind") == "data_label" for lab in labels):
            # values are read off the axis: as precisely as its gridlines allow
            ticks = sorted(
                {float(lab["value"]) for lab in labels if lab.get("kind") == "value_tick" and "value" in lab}
            )
            steps = [b - a for a, b in zip(ticks, ticks[1:]) if b > a]
            tolerance = TICK_SHARE * min(steps) if steps else -1.0  # -1: a pie, no axis
    else:
        texts = [collapse_spaces(t) for t in (spec.title, spec.x_label, spec.y_label,
                                              *table.rows) if collapse_spaces(t)]
    unit = 10.0 ** -table.decimals
    rows = []
    for label, values in zip(table.rows, table.values):
        for series, value in zip(table.series, values):
            if value is None:
                continue
            row = {"label": label, "series": series, "value": float(value), "decimals": table.decimals}
            if tolerance is not None:
                row["tolerance"] = max(unit, PIE_SHARE * abs(float(value)) if tolerance < 0 else tolerance)
            rows.append(row)
    return {"source": "chart", "rows": rows, "texts": list(dict.fromkeys(t for t in texts if t))}


def clevr_facts(structure: ClevrScene, render_facts: Any = None, unshown: Any = ()) -> dict[str, Any]:
    """The facts of a CLEVR scene (see the module notes); ``render_facts``: the renderer's
    :class:`~vicogym.renderers.clevr.ClevrFacts` (or a dict with ``visible``), optional;
    ``unshown``: attributes the render engine cannot show (material under Workbench), left
    out of the facts and the names so no constraint asks for them."""
    if not isinstance(structure, ClevrScene):
        raise TypeError(f"expected a CLEVR Scene, got {type(structure).__name__}")
    visible = _field(render_facts, "visible")
    if visible is not None and len(visible) != len(structure.objects):
        raise ValueError(f"expected {len(structure.objects)} visible counts, got {len(visible)}")
    objects = []
    for k, (obj, (px, py, depth)) in enumerate(zip(structure.objects, structure.pixel_coords())):
        if depth <= 0 or (visible is not None and visible[k] <= 0):
            continue  # behind the camera or wholly hidden: not in the picture
        shown = {a: getattr(obj, a) for a in ("size", "color", "material") if a not in unshown}
        box = _field(render_facts, "boxes")
        drawn = box[k] if box is not None else None
        objects.append({"name": " ".join([*shown.values(), obj.shape]), "category": obj.shape, **shown,
                        "x": round(px / structure.width, 4), "y": round(py / structure.height, 4),
                        **({"box": [round(drawn[0] / structure.width, 4), round(drawn[1] / structure.height, 4),
                                    round(drawn[2] / structure.width, 4), round(drawn[3] / structure.height, 4)]}
                           if drawn is not None else {})})
    return {"source": "clevr", "objects": objects}


def natural_facts(structure: NaturalScene, render_facts: Any = None, others: Sequence[Any] = ()) -> dict[str, Any]:
    """The facts of a natural-image scene (see the module notes). The render adds nothing
    the structure lacks (its masks are the targets' union), so ``render_facts`` is unused.
    ``others``: targets other records annotate on the same photo, listed unprotected (an
    espresso cup in the centre that this record's annotation lacks is still in the
    picture, so "the main subject in the centre" is not the saucer)."""
    if not isinstance(structure, NaturalScene):
        raise TypeError(f"expected a natural-image Scene, got {type(structure).__name__}")
    frame = frame_of(structure)
    width, height, dx, dy = frame.width, frame.height, frame.dx, frame.dy
    objects = []
    def fraction(v: float, size: int) -> float:
        return round(min(1.0, max(0.0, v / size)), 4)

    seen = {(t.label, tuple(t.bounds())) for t in structure.record.targets}
    context = []
    for t in others:  # each annotated object once, however many records name it
        if (t.label, tuple(t.bounds())) not in seen:
            seen.add((t.label, tuple(t.bounds())))
            context.append(t)
    for target, protected in [(t, True) for t in structure.record.targets] + [(t, False) for t in context]:
        x0, y0, x1, y1 = target.bounds()
        objects.append({"name": target.label, "category": target.label, "protected": protected,
                        "x": fraction((x0 + x1) / 2 + dx, width), "y": fraction((y0 + y1) / 2 + dy, height),
                        "box": [fraction(x0 + dx, width), fraction(y0 + dy, height), fraction(x1 + dx, width),
                                fraction(y1 + dy, height)]})
    return {"source": "natural", "objects": objects}


def facts_of(structure: Any, render_facts: Any = None) -> dict[str, Any]:
    """The facts of any arm's structure."""
    for kind, read in ((ChartStructure, chart_facts), (ClevrScene, clevr_facts), (NaturalScene, natural_facts)):
        if isinstance(structure, kind):
            return read(structure, render_facts)
    raise TypeError(f"expected a chart, CLEVR or natural-image structure, got {type(structure).__name__}")
