"""Steps per second of vicogym/Chart-v0 through `vicogym serve` against in-process
``env.step``, same settings, same seeds and edits, in one run.

The server runs in a subprocess (``python -m vicogym.cli serve``); the clients are
OpenEnv's WebSocket client (:class:`vicogym.serve.VicoEnvClient`, async, one per session,
side by side on one event loop). In process, each session is its own environment stepped
in its own thread. Every session resets and takes ``--warmup`` steps untimed (they warm
the renderer's caches), then steps ``--steps`` edits, timed (a gridline toggle of the
current structure, always accepted, so each step renders and probes the actor). The script prints,
per number of concurrent sessions: steps per second both ways, their ratio, and the
server's overhead per step (latency through the server minus latency in process: the
PNG encoding, the prompt text, JSON and the WebSocket round trip).

    python benchmarks/serve.py [--steps 200] [--warmup 10] [--sessions 1,16] [--k 2] [--dpi 40]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import socket
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor


def toggle(structure: str) -> dict:
    return {"ops": [{"op": "set_style", "gridlines": not json.loads(structure)["spec"]["gridlines"]}]}


def in_process(settings: dict, sessions: int, steps: int, warmup: int) -> float:
    """Seconds for ``sessions`` environments, one thread each, to take ``steps`` steps."""
    import gymnasium as gym

    import vicogym  # noqa: F401

    envs = [gym.make("vicogym/Chart-v0", **settings).unwrapped for _ in range(sessions)]
    for i, env in enumerate(envs):
        env.reset(seed=i)

    def run(env, steps: int = steps) -> None:
        for _ in range(steps):
            result = env.step_result(toggle(env.arm.encode(env.sample.structure)[0]))
            assert result.info["valid"], result.info["error"]

    with ThreadPoolExecutor(sessions) as pool:
        list(pool.map(lambda env: run(env, warmup), envs))
        t0 = time.perf_counter()
        list(pool.map(run, envs))
        return time.perf_counter() - t0


def through_server(url: str, sessions: int, steps: int, warmup: int) -> float:
    """Seconds for ``sessions`` WebSocket sessions, side by side, to take ``steps`` steps."""
    from vicogym.serve import VicoAction, VicoEnvClient

    async def main() -> float:
        clients = [VicoEnvClient(base_url=url, message_timeout_s=600) for _ in range(sessions)]
        for client in clients:
            await client.connect()
        firsts = await asyncio.gather(*(c.reset(seed=i) for i, c in enumerate(clients)))

        structures = [first.observation.structure for first in firsts]

        async def run(k: int, steps: int) -> None:
            for _ in range(steps):
                result = await clients[k].step(VicoAction(edit=toggle(structures[k])))
                assert result.observation.error is None, result.observation.error
                structures[k] = result.observation.structure

        await asyncio.gather(*(run(k, warmup) for k in range(sessions)))
        t0 = time.perf_counter()
        await asyncio.gather(*(run(k, steps) for k in range(sessions)))
        elapsed = time.perf_counter() - t0
        for client in clients:
            await client.close()
        return elapsed

    return asyncio.run(main())


def start_server(settings: dict, max_sessions: int) -> tuple[subprocess.Popen, str, object]:
    import requests

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    log = tempfile.TemporaryFile()
    process = subprocess.Popen([sys.executable, "-m", "vicogym.cli", "serve", "vicogym/Chart-v0", "--port", str(port),
                                "--env-kwargs", json.dumps(settings), "--max-sessions", str(max_sessions)],
                               stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if process.poll() is not None:
            log.seek(0)
            raise SystemExit(f"the server exited ({process.returncode}):\n{log.read().decode(errors='replace')}")
        try:
            if requests.get(f"{url}/health", timeout=1).ok:
                return process, url, log
        except requests.RequestException:
            time.sleep(0.2)
    process.kill()
    raise SystemExit("the server did not answer /health within 120 s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=200, help="timed steps per session")
    parser.add_argument("--warmup", type=int, default=10, help="untimed steps per session first")
    parser.add_argument("--sessions", default="1,16", help="concurrent sessions, comma-separated")
    parser.add_argument("--k", type=int, default=2, help="actor answers per step (the simulated actor)")
    parser.add_argument("--dpi", type=int, default=40, help="chart resolution (40: 256 x 192 pixels)")
    args = parser.parse_args()
    counts = [int(c) for c in args.sessions.split(",")]
    settings = {"k": args.k, "dpi": args.dpi, "max_turns": args.warmup + args.steps + 1}

    process, url, log = start_server(settings, max(counts))
    try:
        print(f"vicogym/Chart-v0 {json.dumps(settings)}, {args.steps} timed steps per session")
        print(f"{'sessions':>8}{'in-process steps/s':>20}{'server steps/s':>16}{'ratio':>8}{'overhead ms/step':>18}")
        for n in counts:
            local = in_process(settings, n, args.steps, args.warmup)
            served = through_server(url, n, args.steps, args.warmup)
            total = n * args.steps
            overhead_ms = (served - local) / args.steps * 1000  # per step of one session
            print(f"{n:>8}{total / local:>20.1f}{total / served:>16.1f}{local / served:>8.2f}{overhead_ms:>18.2f}")
    finally:
        process.terminate()
        process.wait(30)
        log.close()


if __name__ == "__main__":
    main()
