"""Answerability checks of ``forms`` tasks: can a careful reader answer the question from
the page, and only by zooming?

:func:`problems` lists what is wrong with a drawn task (empty when it is answerable):

- the asked label names exactly one field on the page (every label is unique, compared
  as a question names it: trimmed, case-folded, without its colon), and the answer is
  that field's value;
- every field's label and value boxes, and the evidence boxes, lie inside the page;
- each evidence item is legible in a zoom onto its box that fits ``view_size`` and the
  unit's ``max_scale`` (cap height x scale >= its legible size);
- no two texts' boxes (labels, values, headings, notes) or check boxes overlap by more
  than :data:`OVERLAP_PX`, so no value hides under another's ink;
- the FUNSD pairing program, run on the page's entities, pairs the asked label with the
  answer (the same derivation a real FUNSD page gets).

A loaded FUNSD page (family ``funsd``) gets the checks that its data allows
(:func:`funsd_problems`).

:func:`needs_zoom` says whether the default view (the whole page fitted into
``view_size``) leaves the value illegible, as the family intends.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from vicogym.programs.evidence.forms import field_label, pair_fields
from vicogym.structures.evidence import Task, contains, crop_view, support, whole_view

OVERLAP_PX = 0.0


def _key(label: str) -> str:
    return field_label(label).lower()


def _overlap(a: Sequence[float], b: Sequence[float]) -> float:
    return min(min(a[2], b[2]) - max(a[0], b[0]), min(a[3], b[3]) - max(a[1], b[1]))


def overlaps(spec: Any) -> list[tuple[int, int]]:
    """Pairs of drawn items whose boxes overlap: texts by id, check boxes as ``-1 - k``."""
    items = [(t["id"], t["box"]) for t in spec.get("texts", ())]
    items += [(-1 - k, b["box"]) for k, b in enumerate(spec.get("boxes", ()))]
    items.sort(key=lambda item: item[1][1])
    out = []
    for i, (a, box_a) in enumerate(items):
        for b, box_b in items[i + 1:]:
            if box_b[1] >= box_a[3]:
                break
            if _overlap(box_a, box_b) > OVERLAP_PX:
                out.append((a, b))
    return out


def problems(task: Task, view_size: int = 768) -> list[str]:
    """What keeps ``task`` from being answerable (empty when it is): a procedural page's
    checks, or a loaded FUNSD page's (:func:`funsd_problems`)."""
    if task.family == "funsd":
        return funsd_problems(task, view_size)
    out: list[str] = []
    if len(task.units) != 1 or task.units[0].kind != "form":
        return [f"a forms task has one form unit, this one has {[u.kind for u in task.units]}"]
    unit = task.units[0]
    spec = unit.spec
    fields = spec.get("fields", [])
    asked = next((f for f in fields if f["id"] == task.meta.get("field")), None)
    if asked is None:
        return [f"meta names field {task.meta.get('field')!r}, which the page does not hold"]
    keys = [_key(f["label"]) for f in fields]
    repeated = sorted({k for k in keys if keys.count(k) > 1})
    if repeated:
        out.append(f"labels repeat on the page: {repeated}")
    if keys.count(_key(task.meta.get("label", ""))) != 1:
        out.append(f"the asked label {task.meta.get('label')!r} names {keys.count(_key(task.meta.get('label', '')))} "
                   "fields")
    if task.answer != asked["value"]:
        out.append(f"the answer {task.answer!r} is not the field's value {asked['value']!r}")
    for f in fields:
        for name in ("label_box", "value_box", "evidence_box"):
            if not contains(unit.frame, tuple(f[name]), 0.0):
                out.append(f"field {f['label']!r}: its {name} {f[name]} lies outside the page")
    out.extend(_legibility(task, view_size))
    for a, b in overlaps(spec):
        out.append(f"drawn items {a} and {b} overlap")
    pairs = [p for p in pair_fields(task.meta.get("entities", [])) if _key(p.label) == _key(asked["label"])]
    if len(pairs) != 1 or pairs[0].value != task.answer:
        out.append(f"the FUNSD pairing gives {[p.value for p in pairs]!r} for {asked['label']!r}, not "
                   f"{task.answer!r}")
    return out


def _legibility(task: Task, view_size: int) -> list[str]:
    out = []
    for e in task.evidence:
        unit = task.units[e.unit]
        view = crop_view(0, e.unit, unit, e.box, view_size)
        if not support([e], [view])["all"]:
            out.append(f"{e.what}: a zoom onto it shows {e.size * view.tiles[0].scale:.2f} px, under the legible "
                       f"{e.legible} px")
    return out


def funsd_problems(task: Task, view_size: int = 768) -> list[str]:
    """A loaded FUNSD task's checks: the pairing program, run again on the page's
    entities, gives the asked label's field the answer; no other field with a value has
    the same label; the evidence lies inside the image and a zoom makes it legible."""
    if len(task.units) != 1 or task.units[0].kind != "image":
        return [f"a FUNSD task has one image unit, this one has {[u.kind for u in task.units]}"]
    out: list[str] = []
    fields = [f for f in pair_fields(task.meta.get("entities", [])) if f.value.strip()]
    mine = [f for f in fields if list(f.questions) == list(task.meta.get("questions", []))]
    if len(mine) != 1 or mine[0].value != task.answer:
        out.append(f"the FUNSD pairing gives {[f.value for f in mine]!r} for the label's entities "
                   f"{task.meta.get('questions')}, not {task.answer!r}")
    same = [f for f in fields if _key(f.label) == _key(task.meta.get("label", ""))]
    if len(same) != 1:
        out.append(f"the label {task.meta.get('label')!r} names {len(same)} fields with a value on the page")
    for e in task.evidence:
        if not contains(task.units[e.unit].frame, e.box, 0.0):
            out.append(f"{e.what}: its box {list(e.box)} lies outside the image")
    out.extend(_legibility(task, view_size))
    return out


def check(task: Task, view_size: int = 768) -> str | None:
    """Why ``task`` is not answerable (every problem of :func:`problems`, joined), or
    ``None`` when it is: the family check :func:`vicogym.checks.evidence.check_task` runs."""
    found = problems(task, view_size)
    return "; ".join(found) if found else None


def needs_zoom(task: Task, view_size: int = 768) -> bool:
    """Whether the whole-page view leaves the asked value illegible (a zoom is needed)."""
    view = whole_view(0, 0, task.units[0], view_size)
    return not support(task.evidence[:1], [view])["all"]
