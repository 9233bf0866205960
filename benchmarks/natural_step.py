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

Then a large image against a normal one, in the same process: a 16-bit RGBA PNG of zeros at
the package's pixel cap (40000 x 1000, 40 MP, a few hundred KB on disk) and one of 640 x 480,
each with one box target; for each, the first reset (decode, segmentation, protection, the
proof, the actor's probe) and one step (a noise op over the whole image), their time and
peak memory (the peak of what Python and NumPy allocated in it, by ``tracemalloc``; OpenCV's
own scratch is not counted there, so the process's peak resident size is printed too), and
the large image's cost as a multiple of the normal one's next to the multiple of pixels.

    python benchmarks/natural_step.py [--steps 8] [--seeds 3] [--large 40000x1000] [--only-large]
"""

from __future__ import annotations

import argparse
import json
import resource
import struct
import tempfile
import time
import tracemalloc
import zlib
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


def zeros_png(path: Path, width: int, height: int) -> None:
    """A 16-bit RGBA PNG of zeros, written row by row (no image-sized array here)."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    packer, row = zlib.compressobj(9), bytes(1 + width * 8)
    body = b"".join(packer.compress(row) for _ in range(height)) + packer.flush()
    path.write_bytes(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 16, 6, 0, 0, 0))
                     + chunk(b"IDAT", body) + chunk(b"IEND", b""))


def large_image(folder: Path, size: tuple[int, int]) -> None:
    """Reset and one step on a large image against a normal one, in this process."""
    import gymnasium as gym

    import vicogym  # noqa: F401

    def source(name: str, width: int, height: int) -> str:
        zeros_png(folder / f"{name}.png", width, height)
        record = {"id": name, "image": f"{name}.png", "question": "Is there a box?", "answer": "yes",
                  "answer_type": "yes/no", "targets": [{"label": "box", "box": [100, 100, 400, 400]}]}
        (folder / f"{name}.jsonl").write_text(json.dumps(record) + "\n", encoding="utf-8")
        return str(folder / f"{name}.jsonl")

    def measure(path: str) -> dict[str, float]:
        out = {}
        env = gym.make("vicogym/Natural-v0", source=path, k=8, max_turns=4).unwrapped
        stages = (("reset", lambda: env.reset(seed=0)), ("step", lambda: env.step({"op": "noise", "sigma": 20})))
        for stage, act in stages:
            tracemalloc.start()
            start = time.perf_counter()
            act()
            out[f"{stage}_s"] = time.perf_counter() - start
            out[f"{stage}_peak"] = tracemalloc.get_traced_memory()[1]
            tracemalloc.stop()
        out["rss"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
        env.close()
        return out

    measure(source("warm", 500, 450))  # imports and first calls, outside the timing
    normal, large = measure(source("normal", 640, 480)), measure(source("large", *size))
    pixels = size[0] * size[1] / (640 * 480)
    print(f"large image ({size[0]} x {size[1]}, 16-bit RGBA zeros, one box) against 640 x 480, "
          f"{pixels:.0f}x the pixels:")
    for stage in ("reset", "step"):
        print(f"  {stage + ':':6} {normal[stage + '_s']:6.2f} s, {normal[stage + '_peak'] / 2**20:7.1f} MiB  ->  "
              f"{large[stage + '_s']:6.2f} s, {large[stage + '_peak'] / 2**20:7.1f} MiB  (time "
              f"{large[stage + '_s'] / normal[stage + '_s']:.0f}x, memory "
              f"{large[stage + '_peak'] / normal[stage + '_peak']:.0f}x)")
    print(f"  process peak resident size: {normal['rss'] / 2**20:.0f} MiB after the normal image, "
          f"{large['rss'] / 2**20:.0f} MiB after the large one")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=8, help="edit steps per seed sample")
    parser.add_argument("--seeds", type=int, default=3, help="seed samples (episodes) per segmenter")
    parser.add_argument("--large", default="40000x1000", help="the large image's WIDTHxHEIGHT ('' to skip it)")
    parser.add_argument("--only-large", action="store_true", help="run only the large-image case")
    args = parser.parse_args()

    import gymnasium as gym

    import vicogym  # noqa: F401
    from vicogym.images import encode_png

    folder = Path(tempfile.mkdtemp(prefix="natural-bench-"))
    if args.only_large:
        large_image(folder, tuple(int(v) for v in args.large.split("x")))
        return
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
    if args.large:
        large_image(folder, tuple(int(v) for v in args.large.split("x")))


if __name__ == "__main__":
    main()
