"""`vicogym serve` measured two ways, each against a server in a subprocess
(``python -m vicogym.cli serve vicogym/Chart-v0``).

``throughput`` (the default): steps per second of vicogym/Chart-v0 through the server
against in-process ``env.step``, same settings, same seeds and edits, in one run. The
clients are OpenEnv's WebSocket client (:class:`vicogym.trainers.openenv.VicoEnvClient`, async, one
per session, side by side on one event loop). In process, each session is its own
environment stepped in its own thread. Every session resets and takes ``--warmup`` steps
untimed (they warm the renderer's caches), then steps ``--steps`` edits, timed (a
gridline toggle of the current structure, always accepted, so each step renders and
probes the actor). The script prints, per number of concurrent sessions: steps per second
both ways, their ratio, and the server's overhead per step (latency through the server
minus latency in process: the PNG encoding, the prompt text, JSON and the WebSocket round
trip).

    python benchmarks/serve.py [throughput] [--steps 200] [--warmup 10] [--sessions 1,16] [--k 2] [--dpi 40]

``burst``: what a burst above ``--max-sessions`` gets and what it costs in memory. The
server runs with ``--max-sessions`` (4) and ``--session-ttl`` (8 s); each round sends
``--resets`` (64) concurrent ``POST /reset`` twice, then opens ``--ws`` (12) WebSocket
sessions at once, each resetting, stepping once and closing, while another ``--resets``
HTTP resets arrive. The script prints per round the answers counted by kind (``ok``, the
typed ``server_full`` refusal, a WebSocket session refused with ``CAPACITY_REACHED``,
anything else by its status or code), the most environments the server held at once
(its ``GET /capacity``) and the server process's resident memory (``VmRSS`` of
``/proc/PID/status``) before and after; at the end, the memory once the server has been
idle past the TTL (its unused environments closed).

    python benchmarks/serve.py burst [--rounds 4] [--resets 64] [--ws 12] [--max-sessions 4] [--dpi 40]
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
from collections import Counter
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
    from vicogym.trainers.openenv import VicoAction, VicoEnvClient

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


def start_server(settings: dict, max_sessions: int, *extra: str) -> tuple[subprocess.Popen, str, object]:
    import requests

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    log = tempfile.TemporaryFile()
    process = subprocess.Popen([sys.executable, "-m", "vicogym.cli", "serve", "vicogym/Chart-v0", "--port", str(port),
                                "--env-kwargs", json.dumps(settings), "--max-sessions", str(max_sessions), *extra],
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


def throughput(args: argparse.Namespace) -> None:
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


# -- burst ---------------------------------------------------------------------------------------------
def rss_mib(pid: int) -> float:
    """Resident memory of process ``pid``, MiB (``VmRSS`` of ``/proc/PID/status``)."""
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise RuntimeError(f"no VmRSS in /proc/{pid}/status")


def http_answer(response) -> str:
    """One HTTP answer as a kind: ok, server_full, or its status and code."""
    try:
        body = response.json()
    except ValueError:
        return f"http {response.status_code}"
    if response.status_code == 200:
        error = (body.get("observation") or {}).get("error")
        return "ok" if error is None else f"http 200 {error['code']}"
    code = body.get("code") if isinstance(body, dict) else None
    return "server_full" if response.status_code == 503 and code == "server_full" else f"http {response.status_code}"


def http_resets(url: str, n: int, seed: int) -> Counter:
    """``n`` concurrent ``POST /reset``, their answers counted by kind."""
    import requests

    def one(i: int) -> str:
        try:
            return http_answer(requests.post(f"{url}/reset", json={"seed": seed + i}, timeout=600))
        except requests.RequestException as exc:
            return f"http {type(exc).__name__}"

    with ThreadPoolExecutor(n) as pool:
        return Counter(pool.map(one, range(n)))


def ws_sessions(url: str, n: int, seed: int) -> Counter:
    """``n`` WebSocket sessions at once, each resetting, stepping once and closing; their
    answers counted by kind (``CAPACITY_REACHED``: the session was refused)."""
    from vicogym.trainers.openenv import VicoAction, VicoEnvClient

    async def one(i: int) -> str:
        client = VicoEnvClient(base_url=url, message_timeout_s=600)
        try:
            await client.connect()
            obs = (await client.reset(seed=seed + i)).observation
            if obs.error is not None:
                return f"ws {obs.error.code}" if obs.error.code != "server_full" else "server_full"
            obs = (await client.step(VicoAction(edit=toggle(obs.structure)))).observation
            return "ok" if obs.error is None else f"ws step {obs.error.code}"
        except Exception as exc:  # a refused session is an error frame, raised by the client
            text = str(exc)
            return "CAPACITY_REACHED" if "CAPACITY_REACHED" in text else f"ws {type(exc).__name__}: {text[:80]}"
        finally:
            await client.close()

    async def main() -> list[str]:
        return await asyncio.gather(*(one(i) for i in range(n)))

    return Counter(asyncio.run(main()))


def capacity(url: str) -> dict:
    import requests

    response = requests.get(f"{url}/capacity", timeout=30)
    return response.json() if response.ok else {}


def burst(args: argparse.Namespace) -> None:
    settings = {"k": args.k, "dpi": args.dpi, "max_turns": 4, "reader_check": "off"}
    process, url, log = start_server(settings, args.max_sessions, "--session-ttl", str(args.ttl))
    pid = process.pid
    try:
        print(f"vicogym/Chart-v0 {json.dumps(settings)}, --max-sessions {args.max_sessions}, --session-ttl {args.ttl}")
        print(f"server pid {pid}: {rss_mib(pid):.0f} MiB resident at start")
        seed = 0
        for r in range(1, args.rounds + 1):
            before = rss_mib(pid)
            answers: Counter = Counter()
            for _ in range(2):
                answers += http_resets(url, args.resets, seed)
                seed += args.resets
            with ThreadPoolExecutor(1) as side:  # HTTP resets arriving while the sessions open
                extra = side.submit(http_resets, url, args.resets, seed)
                sessions = ws_sessions(url, args.ws, seed + args.resets)
                answers += extra.result()
            seed += args.resets + args.ws
            held = capacity(url)
            print(f"round {r}: {2 * args.resets} + {args.resets} HTTP resets {dict(sorted(answers.items()))}; "
                  f"{args.ws} WebSocket sessions {dict(sorted(sessions.items()))}; "
                  f"held at most {held.get('peak', '?')} of {held.get('max_sessions', '?')} "
                  f"(now {held.get('in_use', '?')} in use, {held.get('warm', '?')} warm); "
                  f"resident {before:.0f} -> {rss_mib(pid):.0f} MiB")
        wait = args.ttl + max(args.ttl / 4, 5.0) + 2
        time.sleep(wait)
        held = capacity(url)
        print(f"idle {wait:.0f} s: {held.get('in_use', '?')} in use, {held.get('warm', '?')} warm; "
              f"resident {rss_mib(pid):.0f} MiB")
    finally:
        process.terminate()
        process.wait(30)
        log.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("what", nargs="?", default="throughput", choices=("throughput", "burst"))
    parser.add_argument("--steps", type=int, default=200, help="throughput: timed steps per session")
    parser.add_argument("--warmup", type=int, default=10, help="throughput: untimed steps per session first")
    parser.add_argument("--sessions", default="1,16", help="throughput: concurrent sessions, comma-separated")
    parser.add_argument("--k", type=int, default=2, help="actor answers per step (the simulated actor)")
    parser.add_argument("--dpi", type=int, default=40, help="chart resolution (40: 256 x 192 pixels)")
    parser.add_argument("--rounds", type=int, default=4, help="burst: rounds")
    parser.add_argument("--resets", type=int, default=64, help="burst: concurrent HTTP resets per wave")
    parser.add_argument("--ws", type=int, default=12, help="burst: WebSocket sessions opened at once per round")
    parser.add_argument("--max-sessions", type=int, default=4, help="burst: the server's --max-sessions")
    parser.add_argument("--ttl", type=float, default=8.0, help="burst: the server's --session-ttl, seconds")
    args = parser.parse_args()
    (burst if args.what == "burst" else throughput)(args)


if __name__ == "__main__":
    main()
