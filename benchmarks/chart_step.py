"""Edit-steps per second of vicogym/Chart-v0 against a naive baseline, in one process.

One step = apply the edit, relabel, render, encode PNG. The env path is ``env.step`` plus
``encode_png`` of the new image. The baseline applies the same edits with the same pure
editors and label programs, then rebuilds each chart from scratch with pyplot and saves
it as PNG (what a straightforward implementation does). Prints both rates and the ratio.

    python benchmarks/chart_step.py [--steps 200] [--seeds 4]
"""

from __future__ import annotations

import argparse
import io
import time

import numpy as np


def naive_render(structure) -> bytes:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    t, spec = structure.table, structure.spec
    values = np.array([[np.nan if v is None else v for v in row] for row in t.values], dtype=float)
    fig, ax = plt.subplots(figsize=spec.figure_size, dpi=80)
    x = np.arange(len(t.rows))
    n = len(t.series)
    if spec.chart_type == "pie":
        ax.pie(values[:, 0], labels=t.rows)
    elif spec.chart_type == "line":
        for j, s in enumerate(t.series):
            ax.plot(x, values[:, j], marker="o", label=s)
    elif spec.chart_type == "hbar":
        for j, s in enumerate(t.series):
            ax.barh(x + j * 0.8 / n, values[:, j], height=0.8 / n, label=s)
    else:
        bottom = np.zeros(len(t.rows))
        for j, s in enumerate(t.series):
            if spec.chart_type == "stacked_bar":
                ax.bar(x, values[:, j], bottom=bottom, label=s)
                bottom += np.nan_to_num(values[:, j])
            else:
                ax.bar(x + j * 0.8 / n, values[:, j], width=0.8 / n, label=s)
    if spec.chart_type != "pie":
        ax.set_xticks(x, labels=t.rows) if spec.chart_type != "hbar" else ax.set_yticks(x, labels=t.rows)
    if spec.data_labels:
        for container in ax.containers:
            ax.bar_label(container)
    if n > 1:
        ax.legend()
    ax.set_title(spec.title)
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    plt.close(fig)
    return buf.getvalue()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=200, help="edit steps per seed sample")
    parser.add_argument("--seeds", type=int, default=4, help="seed samples (episodes)")
    args = parser.parse_args()

    import gymnasium as gym

    import vicogym  # noqa: F401
    from vicogym.editors.chart import apply
    from vicogym.programs.chart import relabel
    from vicogym.renderers.chart import encode_png

    env = gym.make("vicogym/Chart-v0", k=8, max_turns=10**6).unwrapped
    episodes = []
    for seed in range(args.seeds):
        env.reset(seed=seed)
        rng = np.random.default_rng(seed)
        edits, structure, rule = [], env.sample.structure, env.sample.label_rule
        while len(edits) < args.steps:  # a chain of valid edits, found without timing
            edit = env.sample_edit(None, rng)
            env.sample = env.sample.__class__(**{**env.sample.__dict__, "structure": apply(structure, edit, rule)})
            structure = env.sample.structure
            edits.append(edit)
        episodes.append((seed, edits))

    def run_env() -> float:
        start = time.perf_counter()
        for seed, edits in episodes:
            env.reset(seed=seed)
            for edit in edits:
                _, _, _, _, info = env.step(edit)
                assert info["valid"], info["error"]
                encode_png(env.sample.image)
        return time.perf_counter() - start

    def run_naive() -> float:
        start = time.perf_counter()
        for seed, edits in episodes:
            env.reset(seed=seed)
            structure, rule = env.sample.structure, env.sample.label_rule
            for edit in edits:
                structure = apply(structure, edit, rule)
                relabel(structure.table, rule)
                naive_render(structure)
        return time.perf_counter() - start

    steps = args.steps * args.seeds
    run_env(), run_naive()  # warm up fonts, caches and imports for both
    env_s, naive_s = run_env(), run_naive()
    print(f"env:   {steps / env_s:8.1f} edit-steps/s (edit, relabel, render, PNG, k={env.config.k} simulated actor)")
    print(f"naive: {steps / naive_s:8.1f} edit-steps/s (same edits; pyplot rebuild + savefig PNG)")
    print(f"ratio: {naive_s / env_s:.2f}x  (target >= 4x)")


if __name__ == "__main__":
    main()
