"""Does each task's start hide its answer? The hidden check on fresh-seed tasks per family:
the start drawn again for the family's counterfactuals (the same task with another answer)
and compared pixel for pixel (``EvidenceEnv.hidden_report``; hidden when one draws within
``HIDDEN_LEVELS`` of it everywhere).

For a family that promises a hidden start (forms, slides) every drawn task is measured and
one that is not hidden is drawn again: the script counts the draws and says why each was
redrawn (the counterfactual that came closest, and by how many levels). For the others it
measures the tasks the environment draws (clevr_detail renders a scene per counterfactual,
so fewer of them by default); multichart and clevr_sequence draw no counterfactuals (their
start sends every unit whole).

    python benchmarks/hidden.py [--tasks 50] [--families forms,slides,clevr_detail] [--clevr-tasks 8]
"""

from __future__ import annotations

import argparse
import collections
import importlib.util
import time

import numpy as np


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=50, help="fresh-seed tasks per family")
    parser.add_argument("--families", default="forms,slides,clevr_detail")
    parser.add_argument("--clevr-tasks", type=int, default=8, help="tasks of the CLEVR families (each renders)")
    parser.add_argument("--seed", type=int, default=90_000, help="the first fresh seed")
    args = parser.parse_args()

    import gymnasium as gym

    import vicogym  # noqa: F401
    from vicogym.sources.evidence import family_module

    for family in args.families.split(","):
        if family.startswith("clevr") and importlib.util.find_spec("bpy") is None:
            print(f"{family}: skipped, needs bpy (pip install -e '.[clevr]')")
            continue
        env = gym.make("vicogym/Evidence-v0", tasks=family).unwrapped
        promises = getattr(family_module(family), "HIDES", False)
        n = args.clevr_tasks if family.startswith("clevr") else args.tasks
        reports: list[dict] = []
        measure = env.hidden_report

        def recorded(task, seed, measure=measure, reports=reports):
            report = measure(task, seed)
            reports.append(report)
            return report

        env.hidden_report = recorded
        start = time.perf_counter()
        for k in range(n):
            env.reset(seed=args.seed + k)
            if not promises:
                recorded(env.task, args.seed + k)
        seconds = time.perf_counter() - start
        measured = [r for r in reports if r is not None]
        hidden = [r for r in measured if r["hidden"]]
        levels = collections.Counter(r["levels"] for r in measured)
        print(f"\n{family}: {n} tasks, {len(measured)} starts measured, {len(hidden)} hidden "
              f"({'each task drawn until hidden' if promises else 'measured, not redrawn'}); "
              f"{seconds / n:.2f} s a task")
        print("  largest pixel difference to the closest counterfactual (levels: starts): "
              + ", ".join(f"{k}: {v}" for k, v in sorted(levels.items(), key=lambda kv: (kv[0] is None, kv[0]))))
        if promises:
            print(f"  redrawn: {len(measured) - len(hidden)} of {len(measured)} draws")
        for r in [r for r in measured if not r["hidden"]][:12]:
            why = "no counterfactual of the same kind and length" if r["counterfactual"] is None else \
                f"{r['counterfactual']} differs by {r['levels']} levels"
            print(f"    not hidden: {why}")
        if hidden:
            print(f"  hidden starts' largest difference: median {np.median([r['levels'] for r in hidden]):.0f}, "
                  f"max {max(r['levels'] for r in hidden)} (bound {hidden[0]['bound']})")


if __name__ == "__main__":
    main()
