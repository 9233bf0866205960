"""Actor generations under the probe policies: fixed K=8 (the paper's) against sequential.

For every edit arm (chart, CLEVR with Workbench at 160x120, natural images from the
embedded demo records), with the simulated actor and with a scripted OpenAI-compatible
server (answers drawn by the simulated actor's skill curve, behind a real HTTP round trip
through the package's OpenAI actor, ``n`` choices per request), and with the random and
the search rewriter: the same episodes (same seeds) are played under each policy, and
printed are the actor generations (answers drawn, search previews included) per kept
sample and per sweet-zone sample, and the agreement of every probe's zone decision (its
pass rate in the sweet zone or not) with a K=32 reference drawn independently for the same
sample. Goal: sequential at most 60% of fixed K=8's generations at an agreement no worse.

The measured agreement of a few hundred probes is noisy (about +-0.05), so beside it each
line gives the expected cost and agreement of a probe, computed exactly (binomial sums
over every way the answers can fall) for the pass rates the probed samples truly have
(the simulated skill curve at each sample's difficulty): what each policy spends and
decides on this arm's samples, free of sampling noise.

    python benchmarks/probes.py [--episodes 24] [--arms chart,clevr,natural] [--actors simulated,server]
"""

from __future__ import annotations

import argparse
import hashlib
from dataclasses import dataclass, field
from typing import Any

import numpy as np

ARMS = {"chart": ("vicogym/Chart-v0", {}),
        "clevr": ("vicogym/CLEVR-v0", {"engine": "workbench", "width": 160, "height": 120}),
        "natural": ("vicogym/Natural-v0", {})}
POLICIES = {"fixed K=8": {"probe": "fixed", "k": 8}, "sequential": {"probe": "sequential", "k": 8}}
REWRITERS = ("random", "search:4")
REFERENCE_K = 32


def pixels_key(image: Any) -> str:
    return hashlib.sha256(np.ascontiguousarray(image, dtype=np.uint8).tobytes()).hexdigest()


class ScriptedServer:
    """An OpenAI-compatible chat server whose answers follow the simulated actor's skill
    curve: the benchmark tells it what the environment knows of each image it will be
    shown (answer, difficulty, distractors), keyed by the image's pixels; a request's
    ``seed`` seeds its answers, so a run is repeatable."""

    def __init__(self) -> None:
        from chat_server import serve

        from vicogym.policies import SimulatedActor

        self.contexts: dict[str, dict] = {}
        model = SimulatedActor()

        def answers(body: dict) -> list[str]:
            import base64

            from vicogym.images import decode_png

            url = next(p["image_url"]["url"] for p in body["messages"][-1]["content"] if p["type"] == "image_url")
            image = decode_png(base64.b64decode(url.split(",", 1)[1]))
            return model.answer(image, "", int(body.get("n", 1)), rng=np.random.default_rng(body.get("seed", 0)),
                                context=self.contexts[pixels_key(image)])

        self.url = serve(answers)


@dataclass
class Tally:
    generations: int = 0
    kept: int = 0
    sweet: int = 0
    decisions: list[tuple[bool, bool]] = field(default_factory=list)
    #: the true pass rate of every probed sample (the simulated skill curve at its difficulty)
    truths: list[float] = field(default_factory=list)

    @property
    def agreement(self) -> float:
        return float(np.mean([a == b for a, b in self.decisions])) if self.decisions else float("nan")


class Counting:
    """The env's actor, counting the answers it draws."""

    def __init__(self, actor: Any, tally: Tally):
        self.actor, self.tally = actor, tally

    def answer(self, image, question, k, *, rng, context):
        self.tally.generations += k
        return self.actor.answer(image, question, k, rng=rng, context=context)


def play(env_id: str, settings: dict, rewriter: str, episodes: int, server: ScriptedServer | None) -> Tally:
    import gymnasium as gym

    from vicogym.policies import SimulatedActor, make_rewriter
    from vicogym.rewards import in_sweet_zone
    from vicogym.runs.generate import episode_seed
    from vicogym.runs.rollout import run_episode

    if server is not None:
        settings = dict(settings, actor={"name": "openai", "model": "scripted", "base_url": server.url,
                                         "max_in_flight": 4})
    env = gym.make(env_id, **settings).unwrapped
    tally, actor, reward = Tally(), env.actor, env.config.reward_config()
    env.actor = Counting(actor, tally)
    reference_rng = np.random.default_rng(12345)
    context_of, probe = env.arm.actor_context, env._probe

    def actor_context(sample, render):
        context = context_of(sample, render)
        if server is not None:
            server.contexts[pixels_key(sample.image)] = context
        return context

    def probed(sample, render, rng=None, most=None):
        rate, answers = probe(sample, render, rng, most)
        reference = actor.answer(sample.image, sample.question, REFERENCE_K, rng=reference_rng,
                                 context=actor_context(sample, render))
        truth = float(np.mean([env.arm.score(str(a), sample.answer) for a in reference]))
        tally.decisions.append((in_sweet_zone(rate, reward), in_sweet_zone(truth, reward)))
        context = context_of(sample, render)
        if "difficulty" in context:
            tally.truths.append(SimulatedActor().p_correct(float(context["difficulty"])))
        return rate, answers

    env.arm.actor_context, env._probe = actor_context, probed
    for e in range(episodes):
        rng = np.random.default_rng(np.random.SeedSequence([0, e, 1]))
        _, _, kept, _ = run_episode(env, make_rewriter(rewriter, env), seed=episode_seed(0, e), rng=rng, keep="final")
        tally.kept += len(kept)
        tally.sweet += sum(k.sweet for k in kept)
    env.close()
    return tally


def expected(truths: list[float], k: int, batch: int, confidence: float, zone: tuple[float, float],
             sequential: bool) -> tuple[float, float]:
    """The expected answers a probe draws and its expected agreement with a K=32 reference,
    averaged over samples of true pass rates ``truths``: exact, over every count of right
    answers at every batch boundary (the stopping rule is the package's own)."""
    from math import comb

    from vicogym.rewards import probe_decided

    def inside(s: int, n: int) -> bool:
        return zone[0] <= s / n <= zone[1]

    cost = agree = 0.0
    for p in truths:
        reference = sum(comb(REFERENCE_K, s) * p**s * (1 - p) ** (REFERENCE_K - s)
                        for s in range(REFERENCE_K + 1) if inside(s, REFERENCE_K))
        boundaries = list(range(batch, k, batch)) + [k] if sequential else [k]
        alive, drawn, says_in = {0: 1.0}, 0, 0.0
        for i, end in enumerate(boundaries):
            step, grown = end - drawn, {}
            for s, weight in alive.items():
                for j in range(step + 1):
                    grown[s + j] = grown.get(s + j, 0.0) + weight * comb(step, j) * p**j * (1 - p) ** (step - j)
            drawn, alive = end, {}
            for s, weight in grown.items():
                if i == len(boundaries) - 1 or probe_decided([1.0] * s + [0.0] * (end - s), zone, confidence):
                    cost += weight * end
                    says_in += weight * inside(s, end)
                else:
                    alive[s] = weight
        agree += says_in * reference + (1 - says_in) * (1 - reference)
    return cost / max(len(truths), 1), agree / max(len(truths), 1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=24)
    parser.add_argument("--arms", default="chart,clevr,natural")
    parser.add_argument("--actors", default="simulated,server")
    parser.add_argument("--batch", type=int, default=None, help="probe_batch of the sequential policy [its default]")
    parser.add_argument("--confidence", type=float, default=None,
                        help="probe_confidence of the sequential policy [its default]")
    args = parser.parse_args()
    for key, value in (("probe_batch", args.batch), ("probe_confidence", args.confidence)):
        if value is not None:
            POLICIES["sequential"][key] = value
    from vicogym.errors import MissingExtra

    server = ScriptedServer() if "server" in args.actors else None
    print(f"{'arm':8s} {'actor':9s} {'rewriter':9s} {'policy':11s} {'gen/kept':>9s} {'gen/sweet':>9s} "
          f"{'agreement':>9s} {'probes':>6s}")
    ratios, gaps, exact = [], [], []
    for arm in args.arms.split(","):
        env_id, settings = ARMS[arm]
        for actor in args.actors.split(","):
            for rewriter in REWRITERS:
                results = {}
                try:
                    for name, policy in POLICIES.items():
                        results[name] = play(env_id, {**settings, **policy}, rewriter, args.episodes,
                                             server if actor == "server" else None)
                except MissingExtra as exc:
                    print(f"{arm}: skipped ({exc})")
                    break
                for name, t in results.items():
                    per_sweet = t.generations / t.sweet if t.sweet else float("inf")
                    print(f"{arm:8s} {actor:9s} {rewriter:9s} {name:11s} {t.generations / max(t.kept, 1):9.1f} "
                          f"{per_sweet:9.1f} {t.agreement:9.3f} {len(t.decisions):6d}")
                fixed, seq = results["fixed K=8"], results["sequential"]
                ratio = (seq.generations / max(seq.kept, 1)) / (fixed.generations / max(fixed.kept, 1))
                ratios.append(ratio)
                gaps.append(seq.agreement - fixed.agreement)
                print(f"{arm:8s} {actor:9s} {rewriter:9s} sequential / fixed: x{ratio:.2f} generations per kept "
                      f"sample, agreement {seq.agreement - fixed.agreement:+.3f}")
                if fixed.truths:
                    import gymnasium as gym

                    config = gym.make(env_id, **settings, **POLICIES["sequential"]).unwrapped.config
                    rule = (8, config.probe_batch, config.probe_confidence, config.sweet_zone)
                    (c8, a8), (cs, a_s) = (expected(fixed.truths, *rule, sequential=False),
                                           expected(fixed.truths, *rule, sequential=True))
                    exact.append((cs / c8, a_s - a8))
                    print(f"{arm:8s} {actor:9s} {rewriter:9s} expected per probe over {len(fixed.truths)} samples: "
                          f"fixed {c8:.2f} answers, agreement {a8:.3f}; sequential {cs:.2f} (x{cs / c8:.2f}), "
                          f"agreement {a_s:.3f} ({a_s - a8:+.3f})")
    if ratios:
        print(f"all: sequential uses x{np.mean(ratios):.2f} of fixed K=8's generations per kept sample "
              f"(worst x{max(ratios):.2f}; goal <= 0.60), agreement {np.mean(gaps):+.3f} "
              f"(worst {min(gaps):+.3f}; goal >= 0)")
    if exact:
        print(f"all, expected per probe: sequential x{np.mean([r for r, _ in exact]):.2f} of fixed K=8's answers "
              f"(worst x{max(r for r, _ in exact):.2f}), agreement {np.mean([g for _, g in exact]):+.3f} "
              f"(worst {min(g for _, g in exact):+.3f})")


if __name__ == "__main__":
    main()
