"""Edit-steps per second of vicogym/Natural-v0 with cached segmentation against
segmenting again for every edit, in one process.

One step = apply the edit, replay every edit on the source image, prove that the
protected pixels are unchanged, probe the simulated actor, encode PNG. The cached path is
the environment's own: the target masks are computed once per record (and Segment
Anything embeds each source image once) and travel with the sample. The baseline is the
same environment with ``cache_masks=False``: every render segments the targets again
(GrabCut from the boxes; Segment Anything embeds the image again). Both paths run the
same edits on the same records; for each segmenter the script prints both rates and the
ratio. Segment Anything runs a tiny randomly initialised model that the script builds
with the package's own builder and saves as a checkpoint (real weights are not
downloaded; a real ViT-H embedding costs far more, so the ratio here is a floor).

    python benchmarks/natural_step.py [--steps 8] [--seeds 3]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np

TINY_SAM = {"embed_dim": 32, "depth": 2, "num_heads": 2, "global_attn_indexes": [1], "image_size": 256}


def tiny_sam(folder: Path) -> str:
    import torch

    from vicogym.renderers.natural import SamEncoder, build_sam

    torch.manual_seed(0)
    path = folder / "tiny_sam.pth"
    torch.save(build_sam(SamEncoder(**TINY_SAM)).state_dict(), path)
    return str(path)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=8, help="edit steps per seed sample")
    parser.add_argument("--seeds", type=int, default=3, help="seed samples (episodes) per segmenter")
    args = parser.parse_args()

    import gymnasium as gym

    import vicogym  # noqa: F401
    from vicogym.images import encode_png

    folder = Path(tempfile.mkdtemp(prefix="natural-bench-"))
    setups = {"grabcut": {"segmenter": "grabcut"},
              "sam (tiny)": {"segmenter": "sam", "sam_checkpoint": tiny_sam(folder), "sam_model": TINY_SAM}}
    for name, settings in setups.items():
        cached = gym.make("vicogym/Natural-v0", k=8, max_turns=10_000, **settings).unwrapped
        fresh = gym.make("vicogym/Natural-v0", k=8, max_turns=10_000, cache_masks=False, **settings).unwrapped
        episodes = []
        for seed in range(args.seeds):  # chains of accepted edits, found before any timing
            obs, _ = cached.reset(seed=seed)
            rng, edits = np.random.default_rng(seed), []
            while len(edits) < args.steps:
                edit = cached.sample_edit(obs, rng)
                obs, _, _, _, info = cached.step(edit)
                if info["valid"]:
                    edits.append(edit)
            episodes.append((seed, edits))

        def run(env) -> float:
            start = time.perf_counter()
            for seed, edits in episodes:
                env.reset(seed=seed)
                for edit in edits:
                    info = env.step(edit)[4]
                    if not info["valid"]:
                        raise RuntimeError(f"benchmark edit rejected: {info['error']}")
                    encode_png(env.sample.image)
            return time.perf_counter() - start

        run(cached), run(fresh)  # warm up: seeds segmented once, models loaded, imports done
        cached_s, fresh_s = run(cached), run(fresh)
        steps = args.steps * args.seeds
        records = sorted({cached.reset(seed=seed)[1]["sample"].provenance.source_id for seed, _ in episodes})
        print(f"{name}: {steps} steps over {args.seeds} episodes on records {', '.join(records)}")
        print(f"  cached masks and embedding: {steps / cached_s:7.2f} edit-steps/s")
        print(f"  segmenting every edit:      {steps / fresh_s:7.2f} edit-steps/s")
        print(f"  ratio: {fresh_s / cached_s:.2f}x")
        cached.close(), fresh.close()


if __name__ == "__main__":
    main()
