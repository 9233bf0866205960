"""Edit-and-re-render frames per second of the CLEVR renderer, live scene against rebuild.

One frame = an edit of a procedural scene (an object moved, recoloured, added or removed,
drawn by the arm's own edit sampler), then a render of the edited scene with its masks.
The live path updates the one Blender scene the worker keeps; the baseline rebuilds the
whole Blender scene (factory reset, ground, camera, lights, meshes, materials, objects)
for every image, with the same engine and settings, in the same run. Prints both rates,
the ratio, and the frame times of Workbench and of Cycles (16 samples, denoised).

    python benchmarks/clevr_render.py [--frames 20] [--width 320] [--height 240]
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=20, help="edited frames per measurement")
    parser.add_argument("--width", type=int, default=320)
    parser.add_argument("--height", type=int, default=240)
    args = parser.parse_args()

    from vicogym.editors.clevr import apply, sample_op
    from vicogym.renderers.clevr import ClevrRenderer, RenderSettings, stop_workers
    from vicogym.sources.clevr import procedural_scene

    rng = np.random.default_rng(0)
    scene = procedural_scene(rng, args.width, args.height, min_objects=6, max_objects=8)
    rule = {"kind": "program", "program": [{"function": "scene", "inputs": [], "value_inputs": []},
                                           {"function": "count", "inputs": [0], "value_inputs": []}]}
    frames = [scene]
    while len(frames) < args.frames + 1:  # a chain of edits, found before any timing
        try:
            frames.append(apply(frames[-1], {"ops": [sample_op(frames[-1], rng)]}, rule))
        except ValueError:
            continue

    def run(settings: RenderSettings, rebuild: bool) -> list[float]:
        renderer = ClevrRenderer(settings, timeout=600)
        renderer.render(frames[0], seed=0)  # start the worker and build the scene once, untimed
        times = []
        for k, frame in enumerate(frames[1:]):
            start = time.perf_counter()
            renderer.render(frame, seed=k, rebuild=rebuild)
            times.append(time.perf_counter() - start)
        return times

    print(f"{args.frames} edited frames of a {len(scene.objects)}-object scene at {args.width}x{args.height}")
    for name, settings in (("workbench", RenderSettings(engine="workbench")),
                           ("cycles, 16 samples, denoised", RenderSettings(engine="cycles", samples=16, denoise=True))):
        live, rebuilt = run(settings, False), run(settings, True)
        print(f"{name}:")
        print(f"  live scene: {len(live) / sum(live):6.2f} frames/s (median frame {statistics.median(live):.3f} s)")
        print(f"  rebuilt:    {len(rebuilt) / sum(rebuilt):6.2f} frames/s "
              f"(median frame {statistics.median(rebuilt):.3f} s)")
        print(f"  ratio: {sum(rebuilt) / sum(live):.2f}x")
        stop_workers()
    print("targets: ratio >= 2x; Workbench frame < 0.15 s; Cycles (16 samples, denoised) frame < 2 s, at 320x240")


if __name__ == "__main__":
    main()
