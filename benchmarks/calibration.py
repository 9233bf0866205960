"""Calibration of the search rewriter (best of N) against a strong and a weak simulated
actor on each arm, in one run: per round, the sweet-zone hit rate and the mean pass rate
before and after editing.

A round is ``--episodes`` rewriter trajectories of at most ``--turns`` edits each. The
search rewriter proposes ``--n`` candidates per turn (chains of up to ``--depth`` edits
from the arm's edit space, ``--pool`` drawn per candidate for its effect model to pick
from), probes each on the actor and keeps the one closest to the middle of the sweet
zone, or stops once the sample it made is the closest. The hit rate is, as in the VICO
paper (its Table 12: 53.4% for its trained rewriter in round 1), the share of
trajectories whose final sample's pass rate (``--k`` answers) is in [0.35, 0.65]; the
share of all accepted edits in the zone is printed beside it. Target: at least 60%, the
strong actor pushed down and the weak one pulled up.

    python benchmarks/calibration.py [--rounds 2] [--episodes 12] [--turns 6] [--arms chart,natural,clevr]
"""

from __future__ import annotations

import argparse

import numpy as np

#: a strong and a weak stand-in per arm (skill: the difficulty it answers half the time)
ACTORS = {"strong": {"name": "simulated", "skill": 2.2}, "weak": {"name": "simulated", "skill": 1.0}}
ENVS = {"chart": ("vicogym/Chart-v0", {}), "natural": ("vicogym/Natural-v0", {"width": 128, "height": 128}),
        "clevr": ("vicogym/CLEVR-v0", {"engine": "workbench", "width": 160, "height": 120})}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--episodes", type=int, default=12, help="trajectories per round")
    parser.add_argument("--turns", type=int, default=6, help="edits a trajectory may make")
    parser.add_argument("--n", type=int, default=8, help="candidates per edit")
    parser.add_argument("--k", type=int, default=8, help="actor probes per sample")
    parser.add_argument("--repeats", type=int, default=1, help="probes of k answers per candidate")
    parser.add_argument("--depth", type=int, default=3, help="edits a candidate may chain")
    parser.add_argument("--pool", type=int, default=4, help="chains drawn per candidate, the effect model picks one")
    parser.add_argument("--arms", default="chart,natural,clevr")
    parser.add_argument("--seed", type=int, default=0, help="added to every episode's seed (another draw of seeds)")
    args = parser.parse_args()

    import gymnasium as gym

    import vicogym  # noqa: F401
    from vicogym.errors import MissingExtra
    from vicogym.policies import SearchRewriter
    from vicogym.runs.rollout import run_episode

    hits_all, kept_all, final_all, episodes_all = 0, 0, 0, 0
    for arm in args.arms.split(","):
        env_id, settings = ENVS[arm]
        for label, actor in ACTORS.items():
            try:
                env = gym.make(env_id, k=args.k, max_turns=args.turns, actor=actor, **settings)
            except MissingExtra as exc:
                print(f"{arm}: skipped ({exc})")
                break
            rewriter = SearchRewriter.for_env(env, n=args.n, repeats=args.repeats, depth=args.depth, pool=args.pool)
            for r in range(args.rounds):
                before, after, hits, kept, finals = [], [], 0, 0, 0
                for e in range(args.episodes):
                    seed = args.seed * 1_000_000 + r * 10_000 + e
                    rng = np.random.default_rng(seed)
                    _, p0, turns, _ = run_episode(env, rewriter, seed=seed, rng=rng, keep="all")
                    before.append(p0)
                    if turns:
                        after.append(turns[-1].pass_rate)
                        hits += sum(t.sweet for t in turns)
                        kept += len(turns)
                        finals += turns[-1].sweet
                hits_all, kept_all = hits_all + hits, kept_all + kept
                final_all, episodes_all = final_all + finals, episodes_all + args.episodes  # no edit made: a miss
                print(f"{arm:8s} {label:6s} round {r}: hit rate {finals / args.episodes:5.1%} of {args.episodes} "
                      f"trajectories, {hits / max(1, kept):5.1%} of {kept} edits; pass rate "
                      f"{np.mean(before):.2f} -> {np.mean(after) if after else float('nan'):.2f}")
            env.close()
    print(f"overall hit rate {final_all / max(1, episodes_all):.1%} of {episodes_all} trajectories (target >= 60%); "
          f"{hits_all / max(1, kept_all):.1%} of {kept_all} accepted edits")


if __name__ == "__main__":
    main()
