"""Step speed of vicogym/Geometry-v0 against a naive pyplot redraw, in one process.

One step of the arm = apply the edit, re-solve the construction exactly, relabel, redraw
the diagram, check it (to scale, legible, answerable) and encode the PNG (``env.step`` plus
``encode_png``). The baseline applies the same edit with the same pure editors and label
program, then draws the same figure the straightforward way: a new pyplot figure with the
segments, circles, point names and given values, saved as PNG (no label placement, no
checks). Both sides take the same edits of the same episodes, alternating in rounds, so
machine noise hits both; the per-round ratios (baseline time / arm time) are reported as
median and range. Native thread pools are limited to one thread, as generation runs.

    python benchmarks/geometry_step.py [--episodes 24] [--steps 3] [--rounds 5]
"""

from __future__ import annotations

import argparse
import io
import time

import numpy as np


def naive_render(figure, width: int, height: int) -> bytes:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from vicogym.structures.geometry import givens, solve

    solved = solve(figure)
    pts = solved.floats()
    fig, ax = plt.subplots(figsize=(width / 100, height / 100), dpi=100)
    for element in figure.draw:
        if element[0] in ("segment", "ray", "line"):
            (x0, y0), (x1, y1) = pts[element[1]], pts[element[2]]
            ax.plot([x0, x1], [y0, y1], color="black")
        elif element[0] in ("circle", "arc"):
            center, r2 = solved.circles[element[1]]
            ax.add_patch(plt.Circle(pts[center], r2.to_float() ** 0.5, fill=False))
    for name, (x, y) in pts.items():
        ax.plot([x], [y], "ko", markersize=3)
        ax.text(x, y, name)
    for g in givens(figure):
        if g.key in figure.diagram and g.value is not None:
            xs, ys = zip(*(pts[n] for n in g.names))
            ax.text(sum(xs) / len(xs), sum(ys) / len(ys), g.value)
    ax.set_aspect("equal")
    ax.axis("off")
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    plt.close(fig)
    return buf.getvalue()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--episodes", type=int, default=24)
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()

    from threadpoolctl import threadpool_limits

    import vicogym
    from vicogym.editors.geometry import apply
    from vicogym.images import encode_png
    from vicogym.programs.geometry import relabel

    threadpool_limits(1)
    env = vicogym.make("vicogym/Geometry-v0", k=1)
    geo = env.unwrapped
    width, height = geo.config.width, geo.config.height
    # the episodes and their edits, drawn once: both sides take the same ones
    episodes = []
    for e in range(args.episodes):
        geo.reset(seed=1000 + e, options={"episode": e})
        start = geo.sample
        edits = []
        for _ in range(args.steps):
            try:
                edits.append(geo.sample_edit())
            except Exception:
                break
            geo.step(edits[-1])
        episodes.append((e, start, edits))

    def ours() -> tuple[float, int]:
        n, t0 = 0, time.perf_counter()
        for e, _, edits in episodes:
            geo.reset(seed=1000 + e, options={"episode": e})
            for edit in edits:
                geo.step(edit)
                encode_png(geo.sample.image)
                n += 1
        return time.perf_counter() - t0, n

    def naive() -> tuple[float, int]:
        n, t0 = 0, time.perf_counter()
        for _, start, edits in episodes:
            figure, rule = start.structure, start.label_rule
            for edit in edits:
                try:
                    figure = apply(figure, edit, rule)
                except Exception:
                    continue
                relabel(figure, rule)
                naive_render(figure, width, height)
                n += 1
        return time.perf_counter() - t0, n

    ours()  # warm the caches of both sides once
    naive()
    ratios = []
    for r in range(args.rounds):
        (t_ours, n_ours), (t_naive, n_naive) = (ours(), naive()) if r % 2 == 0 else tuple(reversed((naive(), ours())))
        ratio = (t_naive / max(n_naive, 1)) / (t_ours / max(n_ours, 1))
        ratios.append(ratio)
        print(f"round {r}: arm {1000 * t_ours / max(n_ours, 1):.1f} ms/step ({n_ours} steps), naive pyplot "
              f"{1000 * t_naive / max(n_naive, 1):.1f} ms/step ({n_naive}): ratio {ratio:.2f}x")
    print(f"geometry step vs naive pyplot redraw: median {np.median(ratios):.2f}x "
          f"(range {min(ratios):.2f}-{max(ratios):.2f}x over {args.rounds} rounds; >1 means the arm is faster, "
          "and it also checks every drawing)")


if __name__ == "__main__":
    main()
