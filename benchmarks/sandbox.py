"""What the operating-system walls cost: the sandbox before them (the in-process layer in
a fresh Python, as of commit 94bec1f) against today's, in the same process, on a typical
verifier (the discovery bank's ``mentions_n_colors``: a regular expression over a
response of a few hundred characters).

- one call per child: ``run_untrusted`` (a child started, the code loaded, one call);
- a batch: ``run_untrusted_batch`` with many calls in one child (a discovered type
  verifying a round's responses);
- admission: ``discovery.admit`` of the bank's good proposals (their cases and the
  adversarial responses, 20-40 calls in one child each), the cost discovery adds to a
  synthesis round per proposal;
- the view's check (new side only): what a process pays once, before its first child,
  to compare the staged view with the host's files byte for byte.

The two sides alternate in rounds; each line prints both rates and their ratio (new /
old: above 1 is faster). The old module is read from git (``--old-commit``) or a file
(``--old-file``).

Run: ``python benchmarks/sandbox.py [--rounds 5] [--calls 30] [--batch 200]``.
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from vicogym.instruct import discovery, sandbox
from vicogym.programs.instruct import REGISTRY

ROOT = Path(__file__).resolve().parents[1]
RESPONSE = ("The chart compares red, blue and green bars across five regions; the tallest bar is the blue one for "
            "the north, and the smallest is the grey bar for the islands. Overall the colours follow the legend. ") * 2


def old_module(commit: str, file: str | None):
    """The sandbox module as it was before the walls."""
    if file is None:
        try:
            text = subprocess.run(["git", "-C", str(ROOT), "show", f"{commit}:vicogym/instruct/sandbox.py"], check=True,
                                  capture_output=True, text=True).stdout
        except (OSError, subprocess.CalledProcessError) as exc:
            raise SystemExit(f"cannot read the old sandbox from git ({exc}); pass --old-file PATH") from None
        handle = tempfile.NamedTemporaryFile("w", suffix=".py", delete=False)
        handle.write(text)
        handle.close()
        file = handle.name
    spec = importlib.util.spec_from_file_location("vicogym_old_sandbox", file)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # (its dataclasses look their module up)
    spec.loader.exec_module(module)
    return module


def per_second(fn, count: int) -> float:
    start = time.perf_counter()
    fn()
    return count / (time.perf_counter() - start)


def view_check(rounds: int) -> tuple[float, int, float]:
    """The staged view's check (``sandbox._view_problem``), median milliseconds over
    ``rounds``, with the view's file count and megabytes."""
    found = []
    stage = sandbox._stage
    sandbox._stage = lambda files, links: found.append((files, links)) or stage(files, links)
    try:
        sandbox._view.__wrapped__(sandbox.ALLOWED_MODULES)
    finally:
        sandbox._stage = stage
    files, links = found[0]
    view = Path(stage(files, links)).parent
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        problem = sandbox._view_problem(view, files, links)
        times.append((time.perf_counter() - start) * 1000)
        assert problem == "", problem
    return statistics.median(times), len(files), sum(Path(f).stat().st_size for f in files) / 1e6


def forget(ids) -> None:
    for type_id in ids:
        REGISTRY.pop(type_id, None)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--calls", type=int, default=30, help="one-call children per round and side")
    parser.add_argument("--batch", type=int, default=200, help="calls in the batched child")
    parser.add_argument("--old-commit", default="94bec1f")
    parser.add_argument("--old-file", default=None)
    args = parser.parse_args()
    old = old_module(args.old_commit, args.old_file)
    sandbox.check_sandbox()
    code = discovery.BANK["mentions_n_colors"]["code"]
    proposals = [discovery.Proposal.from_json(discovery.BANK[k]) for k in discovery.GOOD]
    ids = [p.id for p in proposals]
    sides = {"old": old, "new": sandbox}
    rates: dict[str, dict[str, list[float]]] = {m: {"old": [], "new": []} for m in ("single", "batch", "admit")}
    calls_per_admission = {}
    for p in proposals:
        calls_per_admission[p.id] = len(p.cases) + len(discovery.adversarial_calls(p))
    real_batch = discovery.run_untrusted_batch
    for round_ in range(args.rounds):
        for name in (("old", "new") if round_ % 2 == 0 else ("new", "old")):
            module = sides[name]

            def singles():
                for _ in range(args.calls):
                    result = module.run_untrusted(code, "verify", [RESPONSE, 3])
                    assert result.ok and result.value["pass"], result

            def batch():
                result = module.run_untrusted_batch(code, "verify", [([RESPONSE], {"n": 3})] * args.batch)
                assert result.ok and all(r.ok for r in result.value), result

            def admissions():
                discovery.run_untrusted_batch = module.run_untrusted_batch
                try:
                    for p in proposals:
                        discovery.admit(p)
                finally:
                    discovery.run_untrusted_batch = real_batch
                    forget(ids)

            rates["single"][name].append(per_second(singles, args.calls))
            rates["batch"][name].append(per_second(batch, args.batch))
            rates["admit"][name].append(per_second(admissions, len(proposals)))
    labels = {"single": "one call per child (calls/s)", "batch": f"{args.batch} calls in one child (calls/s)",
              "admit": "admission of the bank's good proposals (proposals/s)"}
    print(
        f"sandbox: old (in-process layer, {args.old_commit}) against new (OS walls), {args.rounds} alternating rounds"
    )
    for key, label in labels.items():
        old_rate, new_rate = statistics.median(rates[key]["old"]), statistics.median(rates[key]["new"])
        ratios = [n / o for n, o in zip(rates[key]["new"], rates[key]["old"])]
        print(f"  {label}: old {old_rate:.1f}, new {new_rate:.1f}; new/old {new_rate / old_rate:.2f} "
              f"(rounds {min(ratios):.2f}-{max(ratios):.2f})")
    new_admit = statistics.median(rates["admit"]["new"])
    print(f"  admission costs {1000 / new_admit:.0f} ms per proposal with the walls "
          f"({statistics.mean(calls_per_admission.values()):.0f} verifier calls in one child each)")
    check_ms, count, megabytes = view_check(args.rounds)
    print(f"  the staged view's check costs {check_ms:.0f} ms once per process ({count} files, {megabytes:.0f} MB "
          f"compared with the host's)")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
