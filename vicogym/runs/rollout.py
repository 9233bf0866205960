"""Rewriter episodes as data: one episode in, the samples it keeps out.

Built only from what ``reset`` and ``step`` return (the observation and the public
``info``: ``sample``, ``pass_rate``, ``sweet``, ``edit_trace`` ...) and from the
environment's arm (its structure codec), so it serves every registered arm.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from vicogym.arm import Arm, payload_list
from vicogym.core import Sample
from vicogym.errors import GenerationError
from vicogym.runs.trainer_columns import image_column, images_type, payloads_type, shard_schema

KEEP_POLICIES = ("final", "all", "sweet")


def row_fields() -> list[Any]:
    """The columns every arm's rows have (the trainer columns follow them)."""
    import pyarrow as pa

    payloads = payloads_type()
    return [
        ("id", pa.string()), ("env_id", pa.string()), ("source_id", pa.string()), ("images", images_type()),
        ("question", pa.string()), ("answer", pa.string()), ("label_rule", pa.string()), ("label", pa.string()),
        ("structure", pa.string()), ("payloads", payloads), ("seed_structure", pa.string()),
        ("seed_payloads", payloads), ("edit_trace", pa.string()), ("pass_rate", pa.float64()),
        ("pass_rate_before", pa.float64()), ("reward", pa.float64()), ("provenance", pa.string()),
        # the K answers each pass rate was scored from (the sample's, then the seed's): verify re-scores them
        ("actor_answers", pa.list_(pa.string())), ("seed_actor_answers", pa.list_(pa.string())),
    ]


def row_schema():
    """The Arrow schema of a generation run's shards."""
    return shard_schema(row_fields())


@dataclass
class EpisodeStats:
    """Counts of one or more episodes: edit steps, accepted ones, episodes whose rewriter
    found no edit, rejected edits by code, and seed draws rejected by code."""

    steps: int = 0
    valid: int = 0
    no_edit: int = 0
    rejections: Counter = field(default_factory=Counter)
    seed_rejections: Counter = field(default_factory=Counter)

    def add(self, other: EpisodeStats) -> None:
        self.steps += other.steps
        self.valid += other.valid
        self.no_edit += other.no_edit
        self.rejections.update(other.rejections)
        self.seed_rejections.update(other.seed_rejections)

    def to_dict(self) -> dict[str, Any]:
        return {"steps": self.steps, "valid": self.valid, "no_edit": self.no_edit,
                "rejections": dict(sorted(self.rejections.items())),
                "seed_rejections": dict(sorted(self.seed_rejections.items()))}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> EpisodeStats:
        return cls(data["steps"], data["valid"], data.get("no_edit", 0), Counter(data["rejections"]),
                   Counter(data.get("seed_rejections", {})))


@dataclass(frozen=True)
class Kept:
    """One accepted turn of an episode."""

    turn: int
    sample: Sample
    pass_rate: float
    reward: float
    sweet: bool
    trace: list[dict[str, Any]]
    #: the actor's K answers its pass rate was scored from, and those of the episode's seed
    answers: tuple[str, ...] = ()
    seed_answers: tuple[str, ...] = ()


def run_episode(env: Any, rewriter: Any, *, seed: int, rng: np.random.Generator,
                keep: str = "final", episode: int | None = None) -> tuple[Sample, float, list[Kept], EpisodeStats]:
    """Reset ``env`` with ``seed`` (and ``options={"episode": episode}``: the episode's index in
    its run, by which an arm may balance what a run asks) and let ``rewriter`` edit until the
    episode ends. Returns the seed sample, its pass rate, the kept turns and the statistics."""
    if keep not in KEEP_POLICIES:
        raise ValueError(f"expected keep in {KEEP_POLICIES}, got {keep!r}")
    obs, info = env.reset(seed=seed, options=None if episode is None else {"episode": int(episode)})
    seed_sample, p0, seed_answers = info["sample"], info["pass_rate"], tuple(info["actor_answers"])
    stats = EpisodeStats(seed_rejections=Counter(info.get("seed_rejections", {})))
    kept: list[Kept] = []
    while True:
        try:
            action = rewriter.propose(obs, rng)
        except GenerationError:  # the rewriter found no edit: the episode ends here
            stats.no_edit += 1
            break
        obs, reward, terminated, truncated, info = env.step(action)
        if info["stopped"]:
            break
        stats.steps += 1
        if info["valid"]:
            stats.valid += 1
            kept.append(Kept(info["turn"], info["sample"], info["pass_rate"], float(reward), info["sweet"],
                             info["edit_trace"], tuple(info["actor_answers"]), seed_answers))
        else:
            stats.rejections[info["error"]["code"]] += 1
        if terminated or truncated:
            break
    if keep == "final":
        kept = kept[-1:]
    elif keep == "sweet":
        kept = [k for k in kept if k.sweet]
    return seed_sample, float(p0), kept, stats


def sample_row(arm: Arm, env_id: str, row_id: str, kept: Kept, seed_sample: Sample, pass_rate_before: float,
               provenance: dict[str, Any]) -> dict[str, Any]:
    """The stored row of one kept sample (the columns of :func:`row_schema`)."""
    sample = kept.sample
    text, payloads = arm.encode(sample.structure)
    seed_text, seed_payloads = arm.encode(seed_sample.structure)
    return {
        "id": row_id,
        "env_id": env_id,
        "source_id": sample.provenance.source_id,
        "images": image_column(row_id, sample.image),
        "question": sample.question,
        "answer": sample.answer,
        "label_rule": sample.rule_kind,
        "label": json.dumps(sample.label_rule, ensure_ascii=False, sort_keys=True),
        "structure": text,
        "payloads": payload_list(payloads),
        "seed_structure": seed_text,
        "seed_payloads": payload_list(seed_payloads),
        "edit_trace": json.dumps(kept.trace, ensure_ascii=False, sort_keys=True),
        "pass_rate": float(kept.pass_rate),
        "pass_rate_before": float(pass_rate_before),
        "reward": float(kept.reward),
        "provenance": json.dumps(provenance, sort_keys=True),
        "actor_answers": list(kept.answers),
        "seed_actor_answers": list(kept.seed_answers),
    }
