"""A toy task family for the evidence environment's own tests: one or more photo-like
raster units (PNG files in ``folder``) with a small printed number at a random place.
Registered per test by the ``toy`` fixture of test_envs_evidence.py; the real families
have their own test files."""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np

from vicogym.sources.evidence.files import image_unit
from vicogym.structures.evidence import Evidence, Task

DEFAULTS = {"folder": None, "units": 1, "width": 800, "height": 600, "start": None}
EXTRAS = ()


def draw(rng: np.random.Generator, settings) -> Task:
    import cv2

    if not settings["folder"]:
        raise ValueError("the toy family writes its images to a folder: set family_settings={'toy': {'folder': ...}}")
    folder = Path(settings["folder"])
    w, h = settings["width"], settings["height"]
    units, evidence = [], []
    number = int(rng.integers(100, 999))
    holder = int(rng.integers(settings["units"]))
    for k in range(settings["units"]):
        image = np.full((h, w, 3), 250, np.uint8)
        image[:, :, 1] = (np.arange(w) % 97 + 150).astype(np.uint8)[None, :]
        x, y = int(rng.integers(10, w - 90)), int(rng.integers(30, h - 10))
        if k == holder:
            cv2.putText(image, str(number), (x, y), cv2.FONT_HERSHEY_SIMPLEX, 0.45, (0, 0, 0), 1, cv2.LINE_AA)
        ok, data = cv2.imencode(".png", image)
        sha = hashlib.sha256(data.tobytes()).hexdigest()
        path = folder / f"{sha}.png"
        path.write_bytes(data.tobytes())
        units.append(image_unit(path, "the toy family", f"photo {k}"))  # checked, so the renderer opens it
        if k == holder:
            evidence.append(Evidence(k, (x, y - 11, x + 40, y + 2), 9.0, 7.0, "the number"))
    start = settings["start"] or ("first" if settings["units"] == 1 else "sheet")
    return Task(f"toy-{number}-{holder}", "toy", "Which three-digit number is printed on the photos?", str(number),
                tuple(units), tuple(evidence), "number", "exact", start=start,
                meta={"distractors": [str(number + 111)]})
