"""Region renderer of CLEVR units (``clevr_detail`` scenes, ``clevr_sequence`` frames): each
unit is drawn once by Blender at full resolution in :meth:`RegionRenderer.prepare`, kept as
a PNG payload, and every view cuts its crop from that raster (as
:mod:`vicogym.renderers.evidence.rasters` does for any raster).

A CLEVR unit's ``spec`` holds what draws it: ``scene`` (CLEVR's scene JSON with camera,
lights and image size), ``seed`` (Cycles' sampling seed), ``engine`` (``workbench`` or
``cycles``) and ``samples``. ``prepare`` renders every unit that names no pixels yet (or
whose payload this renderer does not hold) with the CLEVR arm's renderer
(:class:`~vicogym.renderers.clevr.ClevrRenderer`), and adds to its spec ``png`` (the
SHA-256 of the PNG bytes) and ``facts`` (the mask pass: each object's visible pixels, box
and whether it touches the frame's edge). The task's evidence is made from
``meta["evidence_objects"]`` (``{"unit", "object", "what"}`` per object a reader must see):
the object's box in that unit, its size the box's shorter side, legible at
:data:`~vicogym.structures.evidence.LEGIBLE_OBJECT_PX`. An object the render does not show
at all has no box, and ``prepare`` raises :class:`~vicogym.errors.GenerationError` (draw
another task); whether the rest is answerable is for the family's checks
(:mod:`vicogym.checks.evidence.clevr_detail`, :mod:`vicogym.checks.evidence.clevr_sequence`)
to say on these facts.

A view of a unit whose payload is missing (a stored task drawn in a new process) renders the
unit again from its spec: Workbench gives the same pixels, Cycles the same within the arm's
pixel tolerance (``RenderSettings.pixel_tolerance``).

Settings (``EvidenceRenderer(settings={"clevr": {...}})``): ``threads`` (Blender's render
threads, 2) and ``timeout`` (seconds a render may take, 300).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

import numpy as np

from vicogym.errors import GenerationError
from vicogym.renderers.clevr import ClevrRenderer, RenderFailed, RenderSettings
from vicogym.renderers.evidence import rasters
from vicogym.structures.clevr import Scene
from vicogym.structures.evidence import LEGIBLE_OBJECT_PX, Evidence, Task, Unit
from vicogym.validation import did_you_mean, is_int, is_number

SETTINGS = {"threads": 2, "timeout": 300.0}


class RegionRenderer(rasters.RegionRenderer):
    """Draws CLEVR units: renders them in ``prepare``, then cuts crops from the rasters."""

    def __init__(self, settings: Mapping[str, Any] | None = None, cache_size: int = 8):
        super().__init__(settings, cache_size)
        settings = dict(settings or {})
        unknown = sorted(set(settings) - set(SETTINGS))
        if unknown:
            raise ValueError(f"the CLEVR region renderer has no setting {unknown[0]!r}"
                             f"{did_you_mean(unknown[0], SETTINGS)} (settings: {', '.join(SETTINGS)})")
        merged = {**SETTINGS, **settings}
        if not is_int(merged["threads"], 1, 64):
            raise ValueError(f"expected threads as an integer in [1, 64], got {merged['threads']!r}")
        if not is_number(merged["timeout"]) or merged["timeout"] <= 0:
            raise ValueError(f"expected timeout as positive seconds, got {merged['timeout']!r}")
        self.threads, self.timeout = merged["threads"], float(merged["timeout"])
        self._blender: dict[RenderSettings, ClevrRenderer] = {}

    def blender(self, spec: Mapping[str, Any]) -> ClevrRenderer:
        """The CLEVR renderer for a unit's engine and samples."""
        settings = RenderSettings(engine=spec.get("engine", "workbench"), samples=spec.get("samples", 16),
                                  threads=self.threads)
        if settings not in self._blender:
            self._blender[settings] = ClevrRenderer(settings, self.timeout)
        return self._blender[settings]

    def render(self, unit: Unit) -> tuple[bytes, dict[str, Any], np.ndarray]:
        """A CLEVR unit drawn from its spec: the PNG bytes, the mask pass's facts and the
        pixels."""
        from vicogym.images import encode_png

        spec = unit.spec
        if "scene" not in spec:
            raise ValueError("a CLEVR unit's spec needs 'scene' (CLEVR's scene JSON) to be drawn")
        scene = Scene.from_dict(spec["scene"])
        if (scene.width, scene.height) != (unit.width, unit.height):
            raise ValueError(f"the unit says {unit.width}x{unit.height} but its scene is {scene.width}x{scene.height}")
        try:
            facts = self.blender(spec).render(scene, int(spec.get("seed", 0)))
        except RenderFailed as exc:
            raise GenerationError(f"Blender could not draw the CLEVR unit: {exc}") from None
        png = encode_png(facts.image)
        return png, {"visible": list(facts.visible), "boxes": [list(b) if b else None for b in facts.boxes],
                     "at_edge": list(facts.at_edge)}, facts.image

    def prepare(self, task: Task) -> tuple[Task, dict[str, bytes]]:
        """``task`` with every CLEVR unit drawn (``spec["png"]``, ``spec["facts"]``) and the
        evidence of ``meta["evidence_objects"]`` added; and the new payloads."""
        payloads: dict[str, bytes] = {}
        units = list(task.units)
        for k, unit in enumerate(units):
            if unit.kind != "clevr" or "scene" not in unit.spec:
                continue
            if unit.spec.get("png") in self.payloads and "facts" in unit.spec:
                continue
            png, facts, image = self.render(unit)
            digest = hashlib.sha256(png).hexdigest()
            payloads[digest] = png
            self.cache.get(digest, lambda image=image: image)  # the first view needs no decoding
            units[k] = replace(unit, spec={**unit.spec, "png": digest, "facts": facts})
        self.payloads.update(payloads)
        evidence = list(task.evidence)
        known = {(e.unit, tuple(e.box)) for e in evidence}
        for item in task.meta.get("evidence_objects", ()):
            made = object_evidence(units, item)
            if (made.unit, tuple(made.box)) not in known:
                evidence.append(made)
                known.add((made.unit, tuple(made.box)))
        return replace(task, units=tuple(units), evidence=tuple(evidence)), payloads

    def _decode(self, unit: Unit) -> np.ndarray:
        if unit.spec.get("png") and unit.spec["png"] not in self.payloads and "scene" in unit.spec:
            png, _, _ = self.render(unit)  # a stored task's unit, drawn again from its scene
            self.payloads[unit.spec["png"]] = png
        return super()._decode(unit)


def object_evidence(units: Any, item: Mapping[str, Any]) -> Evidence:
    """The evidence of one object a reader must see, from its unit's facts."""
    k, index = item["unit"], item["object"]
    facts = units[k].spec.get("facts")
    if facts is None:
        raise ValueError(f"unit {k} has not been drawn (no facts); prepare the task first")
    if not 0 <= index < len(facts["boxes"]):
        raise ValueError(f"evidence names object {index} of unit {k}, which holds {len(facts['boxes'])}")
    box = facts["boxes"][index]
    if box is None:
        raise GenerationError(f"object {index} ({item.get('what', '')}) does not show in unit {k}: hidden behind "
                              "others or outside the frame; draw another task")
    size = float(min(box[2] - box[0], box[3] - box[1]))
    return Evidence(k, tuple(float(v) for v in box), size, LEGIBLE_OBJECT_PX, str(item.get("what", "")))
