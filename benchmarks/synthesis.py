"""What each part of the synthesis loop buys, measured (the VISA ablation, on the simulated
models): the same seeds with and without reflection, and with and without memory-weighted
planning, plus the loop's throughput.

- acceptance: accepted samples per image (reflection's recoveries rescue drafts that
  fail a constraint);
- coverage: the normalised entropy of constraint types over accepted samples (1.0 = every
  type equally often; memory's coverage weight pushes under-used types up);
- failure targeting: the share of accepted constraints from the types the target model
  fails most (the top quarter by the run's own probes; memory's failure weight pushes
  them up);
- difficulty: the mean failed-constraint share of the probed target.

Run: ``python benchmarks/synthesis.py [--rounds 6] [--per-round 16] [--seeds 0 1]``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import tempfile
import time
from collections import Counter
from pathlib import Path

import numpy as np

from vicogym.errors import GenerationError
from vicogym.instruct.run_folder import iter_samples, statistics
from vicogym.instruct.synthesis import SynthesizeConfig, synthesize

VARIANTS = {
    "full": {},
    "failure weight 10": {"failure_weight": 10.0},
    "no reflection": {"max_attempts": 0},
    "no memory weights": {"coverage_weight": 0.0, "failure_weight": 0.0},
}


def measure(folder: Path, images: int) -> dict[str, float]:
    rows = list(iter_samples(folder, columns=["constraints", "profile", "round", "difficulty", "attempts"]))
    types = Counter(c["id"] for row in rows for c in json.loads(row["constraints"]))
    total = sum(types.values())
    entropy = (
        -sum(n / total * math.log(n / total) for n in types.values()) / math.log(len(types)) if len(types) > 1 else 0
    )
    failed, trials = Counter(), Counter()
    for row in rows:
        for entry in json.loads(row["profile"]):
            failed[entry["id"]] += entry["failed"]
            trials[entry["id"]] += 1
    rates = sorted(((failed[t] / trials[t], t) for t in trials), reverse=True)
    hard = {t for _, t in rates[:max(1, len(rates) // 4)]}
    later = [row for row in rows if row["round"] >= 2]
    stats = statistics(folder)
    return {"acceptance": len(rows) / images, "coverage entropy": entropy,
            "hard-type share": sum(types[t] for t in hard) / total,
            "difficulty (rounds 2+)": float(np.mean([r["difficulty"] for r in later])) if later else float("nan"),
            "constraints/sample": stats["constraints_per_sample"]["mean"],
            "recovery attempts/sample": float(np.mean([r["attempts"] for r in rows]))}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--per-round", type=int, default=16)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1])
    args = parser.parse_args()
    results: dict[str, list[dict[str, float]]] = {name: [] for name in VARIANTS}
    seconds: dict[str, float] = Counter()
    images = args.rounds * args.per_round
    with tempfile.TemporaryDirectory() as tmp:
        with contextlib.suppress(GenerationError):  # warm up (imports, fonts, language profiles) untimed
            synthesize(SynthesizeConfig(out=str(Path(tmp) / "warm-up"), n=10**9, per_round=4, max_rounds=1,
                                        progress=False))
        for seed in args.seeds:
            for name, settings in VARIANTS.items():  # the variants interleaved per seed: noise hits all alike
                out = Path(tmp) / f"{name.replace(' ', '_')}-{seed}"
                # exactly `rounds` rounds, whatever they accept: n out of reach, max_rounds the budget
                config = SynthesizeConfig(out=str(out), seed=seed, per_round=args.per_round, n=10**9,
                                          max_rounds=args.rounds, progress=False, **settings)
                start = time.perf_counter()
                with contextlib.suppress(GenerationError):
                    synthesize(config)
                seconds[name] += time.perf_counter() - start
                results[name].append(measure(out, images))
    keys = list(results["full"][0])
    print(f"{len(args.seeds)} seeds x {args.rounds} rounds x {args.per_round} images, simulated models")
    print(f"{'variant':<20}" + "".join(f"{k:>26}" for k in keys) + f"{'images/s':>12}")
    for name, runs in results.items():
        cells = "".join(f"{np.mean([r[k] for r in runs]):>19.3f} ±{np.std([r[k] for r in runs]):5.3f}" for k in keys)
        print(f"{name:<20}{cells}{len(runs) * images / seconds[name]:>12.2f}")


if __name__ == "__main__":
    main()
