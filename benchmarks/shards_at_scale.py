"""What a shard costs the run that records it, as the run grows to 100,000 shards.

A simulated run of one-episode shards of a trivial arm (the toy arm of the tests: a row of
squares, "how many?"), on the local backend (one process; two worker processes) and on
Ray's simulated multi-node cluster (``ray.cluster_utils.Cluster``, two one-CPU nodes).
Printed per backend, at 10^3, 10^4 and 10^5 shards: the bytes this process receives per
shard (a worker's answer, pickled), the manifest bytes written per shard, this process's
bookkeeping time per shard (committing the shard, recording its entry, summing its
statistics) and its peak resident memory; and the ratio of the last decade's per-shard
numbers to the first's (flat: about 1.0).

    python benchmarks/shards_at_scale.py [--shards 100000] [--backends local,local2,ray]
"""

from __future__ import annotations

import argparse
import resource
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))  # the toy arm lives with the tests

import vicogym

# registered at import, so that worker processes (spawned: they import this file) know it too
vicogym.register("vicogym/Toy-v0", "toy_arm:ToyEnv", description="test-only arm: count the squares")

MARKS = (1_000, 10_000, 100_000)


def rss_mb() -> float:
    """This process's resident memory now (MiB)."""
    with open("/proc/self/statm") as handle:
        return int(handle.read().split()[1]) * resource.getpagesize() / 2**20


def simulate(shards: int, runtime: dict, label: str) -> None:
    from vicogym.runs.generate import GenerateConfig, generate

    heard: list[dict] = []
    peak = [rss_mb()]

    def on_shard(info: dict) -> None:
        heard.append(info)
        if len(heard) % 100 == 0:
            peak[0] = max(peak[0], rss_mb())

    folder = tempfile.mkdtemp(prefix="vicogym-shards-")
    start = time.perf_counter()
    try:
        config = GenerateConfig("vicogym/Toy-v0", n=shards, out=folder, episodes_per_shard=1, max_episodes=shards,
                                env_kwargs={"k": 2}, **runtime)
        generate(config, progress=False, on_shard=on_shard)
        summary = Path(folder, "manifest.json").stat().st_size
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    total = time.perf_counter() - start
    print(f"{label}: {len(heard)} shards in {total:.0f} s; manifest.json {summary} bytes")
    first = row = None
    for mark in [m for m in MARKS if m <= len(heard)] or [len(heard)]:
        window = heard[max(0, mark - max(100, mark // 10)):mark]  # the shards just before the mark
        row = {key: statistics.fmean(h[key] for h in window)
               for key in ("received_bytes", "manifest_bytes", "seconds")}
        first = first or row
        print(f"  at {mark:>7,} shards: received {row['received_bytes']:7.0f} B/shard, manifest "
              f"{row['manifest_bytes']:6.0f} B/shard, bookkeeping {row['seconds'] * 1e3:6.3f} ms/shard "
              f"(x{row['seconds'] / first['seconds']:.2f} of the first mark), peak RSS so far {peak[0]:.0f} MiB")
    print(f"  received bytes last/first mark: x{row['received_bytes'] / first['received_bytes']:.3f}; "
          f"manifest bytes: x{row['manifest_bytes'] / first['manifest_bytes']:.3f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shards", type=int, default=100_000)
    parser.add_argument("--backends", default="local,local2,ray")
    args = parser.parse_args()
    for backend in args.backends.split(","):
        if backend == "local":
            simulate(args.shards, {}, "local, 1 process")
        elif backend == "local2":
            simulate(args.shards, {"workers": 2}, "local, 2 worker processes")
        elif backend == "ray":
            import ray
            from ray.cluster_utils import Cluster

            cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1})
            try:
                cluster.add_node(num_cpus=1)
                cluster.wait_for_nodes()
                # the run joins this driver's Ray session; its workers import the toy arm first
                ray.init(address=cluster.address, include_dashboard=False, log_to_driver=False,
                         runtime_env={"worker_process_setup_hook": "shards_at_scale_setup.register",
                                      "env_vars": {"PYTHONPATH": ":".join([str(Path(__file__).parent),
                                                                           str(Path(__file__).parents[1] / "tests")])}})
                simulate(args.shards, {"workers": 2, "backend": "ray", "ray_address": cluster.address},
                         "ray, 2-node simulated cluster, 2 actors")
            finally:
                ray.shutdown()
                cluster.shutdown()
        else:
            raise SystemExit(f"unknown backend {backend!r}: choose from local, local2, ray")


if __name__ == "__main__":
    main()
