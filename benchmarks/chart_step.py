"""Chart rendering speed of vicogym/Chart-v0 against a naive baseline, in one process.

The headline is the generation pattern, what ``vicogym generate`` does: fresh seed charts,
each with a 3-turn episode of the random rewriter's edit mix (reset renders the seed, each
step an edited chart), against a naive loop that rebuilds each of the same charts with
pyplot and saves it as PNG (what a straightforward implementation does). The two sides
alternate in rounds on the same charts, so machine noise hits both; the per-round ratios
are reported as median and range.

Then two long chains of edits on a few charts: value edits (the path that reuses frames
and axes layers) and the random rewriter's mix. One step = apply the edit, relabel,
render, check answerability, encode PNG (``env.step`` plus ``encode_png``, with the
answerability checks timed on their own); the baseline applies the same edits with the
same pure editors and label programs and rebuilds the chart with pyplot.

Then full renders per kept sample and the renders discarded (a check failed after the
render), for a ``generate`` run with the arm's pre-render screen of seeds and without it;
and ``generate`` with the reader check (Tesseract) against ``generate`` without it.

Native thread pools are limited to one thread, as generation runs.

    python benchmarks/chart_step.py [--episodes 48] [--rounds 5] [--steps 100] [--seeds 4] [--reader-only]
"""

from __future__ import annotations

import argparse
import io
import time

import numpy as np

from vicogym.validation import pick


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


def value_edit(structure, rng) -> dict:
    """A set_cell or scale_series op: the edits that change values only."""
    t = structure.table
    series = pick(rng, t.series)
    if rng.random() < 0.25:
        return {"op": "scale_series", "series": series, "factor": float(rng.choice([0.8, 0.9, 1.1, 1.25]))}
    row = pick(rng, t.rows)
    old = t.cell(row, series) or 1.0
    return {"op": "set_cell", "row": row, "series": series, "value": round(old * float(rng.uniform(0.5, 1.5)), 1)}


def generation_pattern(env, episodes: int, rounds: int, apply, relabel, encode_png) -> None:
    """The headline: what ``vicogym generate`` does. Fresh seed charts, each with a 3-turn
    episode of the random rewriter's edit mix; the env (reset renders the seed, each step an
    edit) against the naive loop rendering the same seed and the same edits. The two sides
    alternate in rounds on the same episodes, so machine noise hits both; per-round ratios
    are reported as median and range."""
    def plan(first: int) -> list[tuple[int, object, dict, list[dict]]]:
        """Per fresh seed: its seed structure and label rule, and 3 edits the env accepts
        (found before any timing)."""
        out = []
        for seed in range(first, first + episodes):
            env.reset(seed=seed)
            structure, rule = env.sample.structure, env.sample.label_rule
            rng = np.random.default_rng(seed)
            edits = []
            for _ in range(12):  # tries, as the rewriter has
                if len(edits) == 3:
                    break
                edit = env.sample_edit(None, rng)
                if env.step(edit)[4]["valid"]:
                    edits.append(edit)
            out.append((seed, structure, rule, edits))
        return out

    def run_env(chunk) -> float:
        start = time.perf_counter()
        for seed, _, _, edits in chunk:
            env.reset(seed=seed)
            encode_png(env.sample.image)
            for edit in edits:
                env.step(edit)
                encode_png(env.sample.image)
        return time.perf_counter() - start

    def run_naive(chunk) -> float:
        start = time.perf_counter()
        for _, structure, rule, edits in chunk:
            naive_render(structure)
            for edit in edits:
                structure = apply(structure, edit, rule)
                relabel(structure.table, rule)
                naive_render(structure)
        return time.perf_counter() - start

    warm = plan(10_000)[:2]
    run_env(warm), run_naive(warm)
    ratios, renders, totals = [], 0, [0.0, 0.0]
    for r in range(rounds):
        chunk = plan(1000 * (r + 1))  # fresh charts every round
        # planning rendered them: their frames must not be warm for the timed run (evicted, as
        # generation evicts them; figures pooled by shape stay, as they do in generation)
        env.arm.renderer.evict()
        renders += sum(1 + len(edits) for *_, edits in chunk)
        if r % 2 == 0:  # alternate which side goes first
            env_s, naive_s = run_env(chunk), run_naive(chunk)
        else:
            naive_s, env_s = run_naive(chunk), run_env(chunk)
        ratios.append(naive_s / env_s)
        totals[0] += naive_s
        totals[1] += env_s
    print(f"generation pattern: {rounds} rounds x {episodes} fresh charts, 3-turn episodes of the random rewriter's "
          f"mix ({renders} renders per side)")
    print(f"  env:   {renders / totals[1]:7.1f} renders/s (reset or edit, relabel, render, PNG)")
    print(f"  naive: {renders / totals[0]:7.1f} renders/s (pyplot rebuild + savefig PNG)")
    print(f"  ratio (naive / env): median {np.median(ratios):.2f}x, range {min(ratios):.2f}-{max(ratios):.2f}x "
          f"over rounds, {totals[0] / totals[1]:.2f}x overall (target >= 4x)")


def seed_renders(runs: int) -> None:
    """Full renders per kept sample, and those thrown away with a rejected seed, for a
    ``generate`` run of ``runs`` samples (3-turn episodes of the random rewriter, the
    simulated actor), with the arm's pre-render screen and without it (the same run: the
    kept rows come out the same)."""
    import shutil
    import tempfile
    from pathlib import Path

    import pyarrow.parquet as pq

    from vicogym.runs import generate as workflow
    from vicogym.runs.shards import row_hash

    counts = {}
    for label, screening in (("without the screen", False), ("with the screen", True)):
        folder = tempfile.mkdtemp(prefix="vicogym-screen-")
        config = workflow.GenerateConfig(n=runs, out=folder, episodes_per_shard=8)
        env = workflow._env_for(config)
        arm = type(env.arm)
        renders, kept = [0], [0]
        render, validate, screen = arm.render, arm.validate, arm.screen

        def counted(self, *args, **kwargs):
            renders[0] += 1
            return render(self, *args, **kwargs)

        def checked(self, *args, **kwargs):
            validate(self, *args, **kwargs)
            kept[0] += 1  # a render that is used: the check passed

        arm.render, arm.validate = counted, checked
        if not screening:
            arm.screen = lambda self, structure, rule: None
        start = time.perf_counter()
        try:
            manifest = workflow.generate(config, progress=False)
            seconds = time.perf_counter() - start
            shards = sorted(Path(folder).glob("part-*.parquet"))
            rows = [row_hash(r) for p in shards for r in pq.read_table(p).to_pylist()]
        finally:
            arm.render, arm.validate, arm.screen = render, validate, screen
            shutil.rmtree(folder, ignore_errors=True)
        samples = manifest["counts"]["samples"]
        rejected = sum(manifest["seed_rejections"].values())
        counts[label] = rows
        print(f"seeds {label}: {renders[0] / samples:.2f} full renders per kept sample, "
              f"{(renders[0] - kept[0]) / samples:.2f} of them discarded (a check failed), {rejected / samples:.2f} "
              f"seed variants rejected per kept sample, {runs / seconds:.1f} samples/s")
    print(f"seeds: the kept rows are the same with and without the screen: "
          f"{counts['without the screen'] == counts['with the screen']}")


def reader_check_cost(runs: int, rounds: int) -> None:
    """Generation with the reader check (Tesseract reading the texts each answer depends on)
    against generation without it (``reader_check="off"``), in this process: ``generate``
    runs of ``runs`` samples, the two alternating in rounds (each round its own seed, the
    reader's cache of readings emptied first), per-round ratios as median and range. Also:
    readings per kept sample (Tesseract calls: texts not read before), the time the check
    takes, and the share of seeds and edits it refuses."""
    import shutil
    import tempfile

    from vicogym import ocr
    from vicogym.checks import chart as chart_checks
    from vicogym.runs import generate as workflow

    reason = ocr.unavailable()
    if reason is not None:
        print(f"reader check: not measured, Tesseract cannot run here ({reason})")
        return
    spent = {"check": 0.0, "reads": 0, "ocr": 0.0}
    check_reading = chart_checks.check_reading

    def timed_check(*args, **kwargs):
        start = time.perf_counter()
        try:
            return check_reading(*args, **kwargs)
        finally:
            spent["check"] += time.perf_counter() - start

    def run(mode: str, seed: int) -> tuple[float, dict]:
        folder = tempfile.mkdtemp(prefix="vicogym-reader-")
        config = workflow.GenerateConfig(n=runs, out=folder, seed=seed, episodes_per_shard=8,
                                         env_kwargs={"reader_check": mode})
        env = workflow._env_for(config)
        env.arm._readings.clear()  # each round starts cold, as a fresh run does
        start = time.perf_counter()
        try:
            manifest = workflow.generate(config, progress=False)
        finally:
            seconds = time.perf_counter() - start
            shutil.rmtree(folder, ignore_errors=True)
        return seconds, manifest

    reader = ocr.reader()
    text = reader.text

    def counted(pixels, mode="line"):
        start = time.perf_counter()
        try:
            return text(pixels, mode)
        finally:
            spent["reads"] += 1
            spent["ocr"] += time.perf_counter() - start

    reader.text = counted
    chart_checks.check_reading = timed_check
    try:
        run("off", 10_000), run("auto", 10_000)  # warm up: fonts, frames, the engine
        spent.update(check=0.0, reads=0, ocr=0.0)
        ratios, totals, refused, steps, seeds = [], {"off": 0.0, "auto": 0.0}, [0, 0], 0, 0
        for r in range(rounds):
            order = ("off", "auto") if r % 2 == 0 else ("auto", "off")
            seconds = {}
            for mode in order:
                seconds[mode], manifest = run(mode, r)
                totals[mode] += seconds[mode]
                if mode == "auto":
                    refused[0] += manifest["seed_rejections"].get("unread_text", 0)
                    refused[1] += manifest["rejections"].get("unread_text", 0)
                    steps += manifest["counts"]["steps"]
                    seeds += manifest["counts"]["episodes"] + sum(manifest["seed_rejections"].values())
            ratios.append(seconds["auto"] / seconds["off"])
    finally:
        chart_checks.check_reading = check_reading
        reader.text = text
    kept = runs * rounds
    print(f"reader check: {rounds} rounds x generate --n {runs} (3-turn episodes of the random rewriter), with the "
          f"check and without it")
    print(f"  without: {kept / totals['off']:6.2f} samples/s; with: {kept / totals['auto']:6.2f} samples/s")
    print(f"  time with / without: median {np.median(ratios):.3f}x, range {min(ratios):.3f}-{max(ratios):.3f}x over "
          f"rounds, {totals['auto'] / totals['off']:.3f}x overall (target <= 1.15x)")
    each = 1000 * spent["ocr"] / max(spent["reads"], 1)
    print(f"  per kept sample: {spent['reads'] / kept:.1f} Tesseract readings ({each:.1f} ms each), "
          f"{1000 * spent['check'] / kept:.1f} ms in the check ({spent['check'] / totals['auto']:.1%} of the time "
          f"with it; the rest of the difference is the seeds and edits it refuses, drawn and rendered in vain)")
    print(f"  refused: {refused[0]} of {seeds} seed variants drawn, {refused[1]} of {steps} edits (unread_text)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=100, help="edit steps per seed sample")
    parser.add_argument("--seeds", type=int, default=4, help="seed samples (episodes) per stream")
    parser.add_argument("--episodes", type=int, default=48, help="fresh charts per round of the generation pattern")
    parser.add_argument("--rounds", type=int, default=5, help="interleaved rounds of the generation pattern")
    parser.add_argument("--reader-only", action="store_true",
                        help="only the reader check's cost (generate with it and without it)")
    args = parser.parse_args()

    import gymnasium as gym

    import vicogym  # noqa: F401
    from vicogym.processes import limit_threads

    limit_threads(1)  # as generation runs: idle BLAS threads spinning would tax both sides
    if args.reader_only:
        reader_check_cost(args.episodes, args.rounds)
        return
    from vicogym.editors.chart import apply
    from vicogym.images import encode_png
    from vicogym.programs.chart import relabel

    # the edit paths alone: the reader check's cost is measured on its own (reader_check_cost)
    env = gym.make("vicogym/Chart-v0", k=8, max_turns=10_000, reader_check="off").unwrapped

    def chains(kind: str) -> list[tuple[int, list[dict]]]:
        """Per seed sample, a chain of edits the env accepts (found before any timing)."""
        out = []
        for seed in range(args.seeds):
            env.reset(seed=seed)
            rng = np.random.default_rng(seed)
            edits = []
            while len(edits) < args.steps:
                structure = env.sample.structure
                edit = env.sample_edit(None, rng) if kind == "mix" else {"ops": [value_edit(structure, rng)]}
                if env.step(edit)[4]["valid"]:
                    edits.append(edit)
            out.append((seed, edits))
        return out

    checks = [0.0]

    def run_env(episodes) -> float:
        checks[0] = 0.0
        start = time.perf_counter()
        for seed, edits in episodes:
            env.reset(seed=seed)
            for edit in edits:
                _, _, _, _, info = env.step(edit)
                if not info["valid"]:
                    raise RuntimeError(f"benchmark edit rejected: {info['error']}")
                checks[0] += info["timings"]["checks"]
                encode_png(env.sample.image)
        return time.perf_counter() - start

    def run_naive(episodes) -> float:
        start = time.perf_counter()
        for seed, edits in episodes:
            env.reset(seed=seed)
            structure, rule = env.sample.structure, env.sample.label_rule
            for edit in edits:
                structure = apply(structure, edit, rule)
                relabel(structure.table, rule)
                naive_render(structure)
        return time.perf_counter() - start

    generation_pattern(env, args.episodes, args.rounds, apply, relabel, encode_png)
    seed_renders(args.episodes * 2)
    reader_check_cost(args.episodes, args.rounds)
    steps = args.steps * args.seeds
    for name, label in (("values", "value edits (set_cell, scale_series)"), ("mix", "random rewriter's edit mix")):
        episodes = chains(name)
        run_env(episodes[:1]), run_naive(episodes[:1])  # warm up fonts, caches and imports for both
        env.arm.renderer.close()
        built = env.arm.renderer.frames_built
        env_s, naive_s = run_env(episodes), run_naive(episodes)
        print(f"{label}: {steps} steps over {args.seeds} seed samples, "
              f"{env.arm.renderer.frames_built - built} frames built")
        print(
            f"  env:   {steps / env_s:7.1f} edit-steps/s (edit, relabel, render, PNG; k={env.config.k} simulated actor)"
        )
        print(f"  naive: {steps / naive_s:7.1f} edit-steps/s (same edits; pyplot rebuild + savefig PNG)")
        print(f"  ratio: {naive_s / env_s:.2f}x; answerability checks {1000 * checks[0] / steps:.2f} ms per step "
              f"({checks[0] / env_s:.1%} of the env's time)")
    print("target: >= 4x on the generation pattern (the headline); the chains show the edit paths alone")


if __name__ == "__main__":
    main()
