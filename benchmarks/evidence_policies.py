"""Does each evidence task family exercise evidence reading? The simulated executor's
score and evidence support per family with Direct (every unit at once, no actions), a
fixed policy (always zoom into the largest text-like region of the first image), and an
oracle (zooms onto the evidence boxes), on the same tasks.

The oracle must clearly beat Direct where the detail is fine (forms, CLEVR fine detail);
where Direct already sees the evidence legibly the gap is small by design (multi-chart
comparison reads whole charts).

    python benchmarks/evidence_policies.py [--episodes 40] [--families forms,slides,...]
"""

from __future__ import annotations

import argparse
import importlib.util

import numpy as np

POLICIES = ("direct", "simulated:largest", "simulated:oracle")
FAMILIES = ("forms", "slides", "multichart", "clevr_detail", "clevr_sequence")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=40, help="episodes per family and policy")
    parser.add_argument("--families", default=",".join(FAMILIES), help="comma-separated task families")
    args = parser.parse_args()

    import gymnasium as gym

    import vicogym  # noqa: F401
    from vicogym.evidence.episodes import play
    from vicogym.evidence.executors import make_executor

    print(f"{'family':<16}" + "".join(f"{p + ' score':>26}{'support':>9}" for p in POLICIES))
    for family in args.families.split(","):
        if family.startswith("clevr") and importlib.util.find_spec("bpy") is None:
            print(f"{family:<16} skipped: needs bpy (pip install -e '.[clevr]')")
            continue
        cells = []
        for spec in POLICIES:
            env = gym.make("vicogym/Evidence-v0", tasks=family, executor=spec)
            traces = [play(env, make_executor(spec), seed=s) for s in range(args.episodes)]
            env.close()
            cells.append((np.mean([t["score"] for t in traces]), np.mean([t["support"]["share"] for t in traces])))
        print(f"{family:<16}" + "".join(f"{score:>26.3f}{support:>9.3f}" for score, support in cells), flush=True)


if __name__ == "__main__":
    main()
