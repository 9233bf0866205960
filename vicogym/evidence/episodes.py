"""One episode of ``vicogym/Evidence-v0`` played by an executor, as a trace.

A trace holds everything needed to replay the episode without the executor: the task
(units, evidence, answer; its raster payloads by SHA-256), the views sent at the start and
after every action (geometry and provenance, and the SHA-256 of their pixels), every
reply and the action read from it, errors, the score, the evidence support, and what was
sent (pixels, tokens where the server reported them). Wall-clock latency is kept apart
(:data:`TIMING_KEYS`), so that the same seed gives the same trace bytes.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

import numpy as np

from vicogym.evidence.executors import timed
from vicogym.evidence.skills import Skill

#: what a trace keeps apart from its deterministic part
TIMING_KEYS = ("latency_s", "step_latency_s")


def pixels_sha256(pixels: np.ndarray) -> str:
    """The SHA-256 of a view's pixels (shape and bytes)."""
    array = np.ascontiguousarray(pixels, dtype=np.uint8)
    digest = hashlib.sha256(repr(array.shape).encode("ascii"))
    digest.update(array.tobytes())
    return digest.hexdigest()


def _views(env: Any, ids: list[int]) -> list[dict[str, Any]]:
    by_id = {v.id: v for v in env.views}
    return [{**by_id[i].to_dict(), "sha256": pixels_sha256(env.view_pixels(i))} for i in ids]


def play(env: Any, executor: Any, seed: int | None = None, skill: Skill | None = None,
         options: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Play one episode of ``env`` (an ``EvidenceEnv`` or a wrapper of one) with
    ``executor``; the trace, with ``timing`` (latencies) as its only non-deterministic
    part."""
    base = getattr(env, "unwrapped", env)
    skill = skill or Skill()
    obs, info = env.reset(seed=seed, options=dict(options or {}))
    task = base.task
    rng = np.random.default_rng([0 if seed is None else int(seed), 0x5EED])
    executor.begin(task.to_dict(), skill, rng)
    trace: dict[str, Any] = {
        "seed": seed, "executor": executor.spec, "skill": {"name": skill.name, "sha256": skill.digest()},
        "task": task.to_dict(), "payloads": sorted(base.payloads), "config": base.config.to_dict(),
        "start_views": _views(base, [v.id for v in base.views]), "steps": [],
    }
    latencies: list[float] = []
    pixels_sent, tokens = 0, {"prompt_tokens": 0, "completion_tokens": 0}
    done = False
    while not done:
        request = base.request()
        pixels_sent += sum(int(i["pixels"].shape[0] * i["pixels"].shape[1]) for i in request["images"])
        reply, seconds = timed(executor.act, request, info)
        latencies.append(round(seconds, 6))
        for key, value in (getattr(executor, "usage", None) or {}).items():
            if isinstance(value, int) and key in tokens:
                tokens[key] += value
        before = {v.id for v in base.views}
        obs, reward, terminated, truncated, info = env.step(reply)
        done = terminated or truncated
        step = {"step": info["step"], "sent": [i["id"] for i in request["images"]],
                "reply": getattr(executor, "last_reply", reply), "action": base.history[-1]["action"],
                "error": (info.get("error") or {}).get("code"),
                "views": _views(base, [v.id for v in base.views if v.id not in before])}
        trace["steps"].append(step)
    trace.update({"score": float(info["score"]), "outcome": info["outcome"], "response": info.get("response"),
                  "answer": task.answer, "support": info["support"], "failure": getattr(executor, "failure", None),
                  "pixels_sent": pixels_sent, "tokens": tokens if any(tokens.values()) else None,
                  "timing": {"step_latency_s": latencies, "latency_s": round(sum(latencies), 6)}})
    if trace["score"] >= 1.0:
        trace["failure"] = None
    return trace


def trace_line(trace: Mapping[str, Any]) -> str:
    """The trace's deterministic part as one canonical JSON line."""
    return json.dumps({k: v for k, v in trace.items() if k != "timing"}, sort_keys=True, ensure_ascii=False,
                      separators=(",", ":"))
