"""The craft experiment at full size: per task family, Direct, the initial skill and the
evolved skills (text-only, interface-only, joint) on held-out items with 95% intervals,
whether joint beats text-only and interface-only, the terminal crossing, and the transfer
matrix between two executor settings (the paper's Table 5: a skill evolved with one
executor evaluated with another).

    python benchmarks/craft.py [--out DIR] [--optimizer guided] [--tasks forms,slides]
                               [--reader simulated|ocr] [--weak-acuity 1.4] [--rounds 4] [--submissions 4]

Two readers:

- ``--reader simulated`` (the default): the simulated executor, a stand-in whose reading is
  the legibility curve fitted to Tesseract. What it makes true by construction: it reads
  evidence by the detail it was sent (so zooms, crops, upscaling and selection raise its
  score through geometry), and a few interface features help only with the reader clause
  that names them (a grid with "use the grid", timestamp rows with "read the timestamp",
  one ring colour per note with "note each option"): joint search can make both halves of
  such a pair, text-only and interface-only search only one. The transfer matrix is
  between two legibility curves (``--weak-acuity``).
- ``--reader ocr``: the ``ocr`` executor, the same simulated policy with a real reader
  (Tesseract reads every view; forms and one-slide questions). Its scores are what can be
  read in the pixels sent, not the stand-in's curve; the transfer matrix is between the
  ocr executor and the simulated one.

What neither decides: which edits the optimizer proposes, which the gate keeps, and how
much each family gains.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="craft-benchmark", help="folder for the runs (resumable)")
    parser.add_argument("--optimizer", default="guided", help="guided | random | openai:MODEL@URL")
    parser.add_argument("--tasks", default="forms,slides", help="comma-separated task specs")
    parser.add_argument("--reader", default="simulated", choices=("simulated", "ocr"))
    parser.add_argument("--weak-acuity", type=float, default=1.4, help="the second executor's acuity")
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--submissions", type=int, default=4)
    parser.add_argument("--dev", type=int, default=6)
    parser.add_argument("--test", type=int, default=8)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    from vicogym.evidence.craft import CraftConfig, craft, transfer
    from vicogym.evidence.report import HEADER, executor_kind, rows_of, transfer_rows, write_report

    out = Path(args.out)
    executors = {"base": "simulated", "weak": f"simulated:skill,acuity={args.weak_acuity:g}"}
    settings = {}
    if args.reader == "ocr":  # the questions the real reader answers: one slide's
        executors = {"base": "ocr", "weak": "simulated"}
        settings = {"family_settings": {"slides": {"ops": ["lookup", "max", "min", "argmax", "argmin"]}}}
    runs = {}
    for name, executor in executors.items():
        start = time.perf_counter()
        config = CraftConfig(tasks=args.tasks.split(","), executor=executor, optimizer=args.optimizer,
                             rounds=args.rounds, submissions=args.submissions, dev=args.dev, test=args.test,
                             repeats=args.repeats, seed=args.seed, env_settings=settings)
        craft(out / name, config)
        runs[name] = out / name
        print(f"{executor} ({executor_kind(executor)}): searched and tested in {time.perf_counter() - start:.0f} s")
    result, page = write_report([runs["base"]])
    for family in result["families"] + ["all"]:
        print(f"\n{family}")
        print(" | ".join(HEADER))
        for row in rows_of(result, family):
            print(" | ".join(row))
        cells = result["cells"]
        joint = cells[f"{family}/joint"]["score"]
        print(f"joint beats text-only: {joint > cells[f'{family}/text']['score']}; "
              f"joint beats interface-only: {joint > cells[f'{family}/interface']['score']}")
    print("\n" + json.dumps(result["tests"], indent=1))
    if "crossing" in result:
        print("terminal crossing:", json.dumps(result["crossing"], indent=1))
    matrix = transfer([runs["base"], runs["weak"]])
    print("\ntransfer (rows: the executor the joint skill was evolved with; columns: evaluated on)")
    print(" | ".join(["", *matrix["executors"]]))
    for row in transfer_rows(matrix):
        print(" | ".join(row))
    print(f"\nreport: {page}")


if __name__ == "__main__":
    main()
