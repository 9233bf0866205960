"""Throughput of `vicogym generate` as workers are added, in one run: samples per second
for the chart and CLEVR arms with 1 and 2 local worker processes and with 2 Ray actors on
this machine, the time to the first written shard, and native thread pools limited to one
thread per worker against left at the machine's core count; and one worker against a
slow scripted actor server, with 1 and 8 episodes in flight.

Printed: the scaling ratio (2 workers against 1; target >= 1.7x on 2 cores), Ray's
overhead against local processes (target < 15%), whole runs and after the first shard
(Ray's start-up of a few seconds left out), and the thread limit's gain.

    python benchmarks/scale.py [--n 160] [--arms chart,clevr]
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import threading
import time
from pathlib import Path

ENVS = {"chart": ("vicogym/Chart-v0", {}),
        "clevr": ("vicogym/CLEVR-v0", {"engine": "workbench", "width": 160, "height": 120})}


def timed_run(config) -> tuple[float, float, int]:
    """Wall time of the run, the time its first shard appeared and that shard's rows."""
    import pyarrow.parquet as pq

    from vicogym.runs.generate import generate

    first: list[float] = []
    done = threading.Event()
    start = time.perf_counter()

    def watch() -> None:
        while not done.is_set() and not first:
            if any(Path(config.out).glob("part-*.parquet")):
                first.append(time.perf_counter() - start)
            time.sleep(0.01)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    generate(config, progress=False)
    total = time.perf_counter() - start
    done.set()
    watcher.join()
    return total, first[0] if first else total, pq.read_metadata(Path(config.out) / "part-00000.parquet").num_rows


def slow_server(latency: float) -> str:
    """An in-process OpenAI-compatible chat server that answers every request after
    ``latency`` seconds (a stand-in for a busy model server); its base URL."""
    from chat_server import serve

    def answers(body: dict) -> list[str]:
        time.sleep(latency)
        return [f"Answer: {i}" for i in range(body.get("n", 1))]

    return serve(answers)


def actor_batching(n: int, latency: float) -> None:
    """Samples per second of one worker against a server that takes ``latency`` seconds a
    request, with 1 and 8 episodes in flight."""
    from vicogym.runs.generate import GenerateConfig

    actor = {"name": "openai", "model": "stand-in", "base_url": slow_server(latency), "max_in_flight": 8}
    rates = {}
    for in_flight in (1, 8):
        folder = tempfile.mkdtemp(prefix="vicogym-scale-")
        try:
            config = GenerateConfig(n=n, out=folder, episodes_per_shard=8, episodes_in_flight=in_flight,
                                    env_kwargs={"actor": actor})
            total, _, _ = timed_run(config)
        finally:
            shutil.rmtree(folder, ignore_errors=True)
        rates[in_flight] = n / total
        print(f"chart  actor server ({latency:.2f} s a request), {in_flight} episode(s) in flight: "
              f"{rates[in_flight]:6.2f} samples/s")
    print(f"chart  8 episodes in flight / 1: {rates[8] / rates[1]:.2f}x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=160, help="samples per run")
    parser.add_argument("--arms", default="chart,clevr")
    parser.add_argument("--latency", type=float, default=0.2, help="seconds the stand-in actor server takes a request")
    args = parser.parse_args()

    from vicogym.errors import MissingExtra
    from vicogym.runs.generate import GenerateConfig

    cores = os.cpu_count() or 1
    runs = {"1 worker": {"workers": 1}, "2 workers": {"workers": 2},
            "2 workers, threads unlimited": {"workers": 2, "threads": cores},
            "ray, 2 workers": {"workers": 2, "backend": "ray"}}
    for arm in args.arms.split(","):
        env_id, settings = ENVS[arm]
        rates, steady = {}, {}
        for label, runtime in runs.items():
            folder = tempfile.mkdtemp(prefix="vicogym-scale-")
            try:
                config = GenerateConfig(env_id=env_id, n=args.n, out=folder, env_kwargs=settings,
                                        episodes_per_shard=8, **runtime)
                total, first, rows = timed_run(config)
            except MissingExtra as exc:
                print(f"{arm}: skipped ({exc})")
                break
            finally:
                shutil.rmtree(folder, ignore_errors=True)
            rates[label] = args.n / total
            steady[label] = (args.n - rows) / max(total - first, 1e-9)  # start-up (pool, Ray) left out
            print(f"{arm:6s} {label:30s} {rates[label]:6.2f} samples/s ({steady[label]:6.2f} after the first shard); "
                  f"first shard after {first:5.2f} s")
        if len(rates) == len(runs):
            print(f"{arm:6s} scaling 2 workers / 1: {rates['2 workers'] / rates['1 worker']:.2f}x (target >= 1.7x); "
                  f"Ray overhead against local: {rates['2 workers'] / rates['ray, 2 workers'] - 1:+.0%} "
                  f"({steady['2 workers'] / steady['ray, 2 workers'] - 1:+.0%} after the first shard; target < 15%); "
                  f"threads limited / unlimited: {rates['2 workers'] / rates['2 workers, threads unlimited']:.2f}x")
    actor_batching(max(16, args.n // 4), args.latency)


if __name__ == "__main__":
    main()
