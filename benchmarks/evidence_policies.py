"""Does each evidence task family exercise evidence reading? Score and evidence support per
family with Direct (every unit at once, no actions), a fixed policy (always zoom into the
largest text-like region of the first image), and an oracle (zooms onto the evidence
boxes), on the same tasks, with either reader:

- ``--reader ocr`` (the default): the answers are what Tesseract reads in the pixels sent
  (:mod:`vicogym.evidence.reading`'s procedure; forms and one-slide questions), a real
  reader and a floor (a strong model reads smaller text);
- ``--reader simulated``: the simulated executor, a stand-in whose reading is the
  legibility curve fitted to Tesseract's measurement.

Which views each policy asks for is the simulated policy either way (a stand-in). Slides
are asked their one-slide questions only with the ``ocr`` reader (what it reads).

    python benchmarks/evidence_policies.py [--episodes 40] [--families forms,slides] [--reader ocr]
"""

from __future__ import annotations

import argparse
import importlib.util
import time

import numpy as np

FAMILIES = ("forms", "slides", "multichart", "clevr_detail", "clevr_sequence")
ONE_SLIDE = {"slides": {"ops": ["lookup", "max", "min", "argmax", "argmin"]}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=40, help="episodes per family and policy")
    parser.add_argument("--families", default="forms,slides", help="comma-separated task families")
    parser.add_argument("--reader", default="ocr", choices=("ocr", "simulated"))
    args = parser.parse_args()

    import gymnasium as gym

    import vicogym  # noqa: F401
    from vicogym.evidence.episodes import play
    from vicogym.evidence.executors import make_executor

    reader = args.reader
    policies = (f"direct:{reader}" if reader == "ocr" else "direct", f"{reader}:largest", f"{reader}:oracle")
    print(f"reader: {reader} ({'Tesseract' if reader == 'ocr' else 'the simulated stand-in'}); "
          f"{args.episodes} episodes per cell, the same seeds for every policy")
    print(f"{'family':<16}" + "".join(f"{p + ' score':>26}{'support':>9}" for p in policies))
    for family in args.families.split(","):
        if family.startswith("clevr") and importlib.util.find_spec("bpy") is None:
            print(f"{family:<16} skipped: needs bpy (pip install -e '.[clevr]')")
            continue
        settings = ONE_SLIDE if reader == "ocr" else {}
        cells, start = [], time.perf_counter()
        for spec in policies:
            env = gym.make("vicogym/Evidence-v0", tasks=family, executor=spec, family_settings=settings)
            traces = [play(env, make_executor(spec), seed=s) for s in range(args.episodes)]
            env.close()
            cells.append((np.mean([t["score"] for t in traces]), np.mean([t["support"]["share"] for t in traces])))
        print(f"{family:<16}" + "".join(f"{score:>26.3f}{support:>9.3f}" for score, support in cells)
              + f"   ({time.perf_counter() - start:.0f} s)", flush=True)


if __name__ == "__main__":
    main()
