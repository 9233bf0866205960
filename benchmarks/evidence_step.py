"""Zoom views per second of vicogym/Evidence-v0 against the naive way, per task family,
in one process.

One step = draw one zoom view onto a task's evidence (the view an executor gets after a
``zoom`` action), notes burned in. The environment's way is its renderer's: a region of a
unit the package draws itself (a form, a chart, a slide) is re-drawn at the view's scale,
items outside the crop skipped; a raster unit (a CLEVR frame) is decoded once and cut.
The naive way draws the whole unit at full detail every step (re-rendering the form or
chart, decoding the CLEVR frame's PNG again), then crops and resizes. Both draw the same
views of the same tasks; both outputs are checked to agree (exactly for rasters, within
anti-aliasing for re-drawn text), and the script prints ms per step for each and the
ratio, per family.

    python benchmarks/evidence_step.py [--tasks 3] [--steps 8] [--families forms,slides,...]
"""

from __future__ import annotations

import argparse
import importlib.util
import time

import numpy as np

DEFAULT_FAMILIES = ("forms", "slides", "multichart", "clevr_detail", "clevr_sequence")


def zoom_views(env, rng, steps):
    """``steps`` zoom views of the current task: onto each evidence box in turn, with a
    random margin, from the unit's whole view."""
    from vicogym.structures.evidence import crop_view

    task, views = env.task, []
    for k in range(steps):
        e = task.evidence[k % len(task.evidence)] if task.evidence else None
        unit_index = e.unit if e is not None else 0
        unit = task.units[unit_index]
        if e is None:
            crop = (0.0, 0.0, unit.width / 2, unit.height / 2)
        else:
            pad = float(rng.uniform(0.1, 1.0))
            w, h = e.box[2] - e.box[0], e.box[3] - e.box[1]
            crop = (max(0.0, e.box[0] - pad * w), max(0.0, e.box[1] - pad * h),
                    min(unit.width, e.box[2] + pad * w), min(unit.height, e.box[3] + pad * h))
        views.append(crop_view(100 + k, unit_index, unit, crop, env.config.view_size, env.notes))
    return views


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=3, help="tasks per family")
    parser.add_argument("--steps", type=int, default=8, help="zoom views per task")
    parser.add_argument("--families", default=",".join(DEFAULT_FAMILIES), help="comma-separated task families")
    args = parser.parse_args()

    import gymnasium as gym

    import vicogym  # noqa: F401
    from vicogym.renderers.evidence import burn_notes

    print(f"{'family':<16}{'views':>7}{'renderer ms':>13}{'naive ms':>10}{'ratio':>8}")
    for family in args.families.split(","):
        if family.startswith("clevr") and importlib.util.find_spec("bpy") is None:
            print(f"{family:<16} skipped: needs bpy (pip install -e '.[clevr]')")
            continue
        env = gym.make("vicogym/Evidence-v0", tasks=family).unwrapped
        rng = np.random.default_rng(0)
        fast_s = naive_s = 0.0
        n = 0
        for seed in range(args.tasks):
            env.reset(seed=seed)
            views = zoom_views(env, rng, args.steps)
            renderer = env.renderer
            for view in views:  # the renderer's caches start warm for neither path: one untimed view each
                renderer.naive_tile(env.task.units[view.tiles[0].unit], view.tiles[0])
                renderer.draw(view, env.task.units)
                break
            for view in views:
                tile = view.tiles[0]
                unit = env.task.units[tile.unit]
                start = time.perf_counter()
                fast = renderer.draw(view, env.task.units)
                fast_s += time.perf_counter() - start
                start = time.perf_counter()
                naive = burn_notes(renderer.naive_tile(unit, tile), view)
                naive_s += time.perf_counter() - start
                if fast.shape != naive.shape:
                    raise SystemExit(f"{family}: the two ways drew views of different shapes")
                differ = np.abs(fast.astype(np.int16) - naive.astype(np.int16))
                if unit.kind in ("clevr", "image") and differ.max() > 0:
                    raise SystemExit(f"{family}: a raster crop differs between the two ways")
                if float((differ > 64).mean()) > 0.05:
                    raise SystemExit(f"{family}: the re-drawn view and the naive one disagree on "
                                     f"{float((differ > 64).mean()):.1%} of the pixels")
                n += 1
        env.close()
        fast_ms, naive_ms = 1000 * fast_s / n, 1000 * naive_s / n
        print(f"{family:<16}{n:>7}{fast_ms:>13.1f}{naive_ms:>10.1f}{naive_ms / fast_ms:>7.1f}x")


if __name__ == "__main__":
    main()
