"""The actor's training backend of ``vicogym evolve --train-actor trl-grpo``: TRL's
``GRPOTrainer`` on one round's rows, from the current actor's checkpoint to the next.

``python -m vicogym.trainers.grpo_actor --data ROUND/verl_files.txt --model
transformers:DIR --out ROUND/actor-model --next ROUND/next_actor --seed R`` reads the
round's Parquet shards (``verl_files.txt`` lists them, one a line) as TRL's multimodal
dataset (:func:`vicogym.trainers.trl.rows_dataset`), trains the image-text-to-text model
in ``DIR`` with GRPO for ``--max-steps`` steps (the reward is
:data:`vicogym.trainers.trl.reward_function`, the rows' own scorer; no KL term, as in
the VICO recipe), saves the model and its processor to ``--out`` and writes
``transformers:OUT`` to ``--next``: the next round's actor
(:class:`vicogym.clients.TransformersActor`).

It is safe to kill: training goes into ``OUT.tmp``, which is renamed to ``OUT`` once the
checkpoint and its record (``OUT/vicogym-train.json``: the sha256 of every input file and
the settings) are written; a rerun whose inputs and settings match the record trains
nothing and writes ``--next`` again. The same seed and inputs give the same checkpoint
bytes on CPU. Bad input exits with status 2 and one line on stderr naming what to change.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from vicogym.trainers.checkpoints import (
    MARKER,
    TrainingInputError,
    file_sha256,
    folder_sha256,
    write_next_spec,
)

BACKEND = "trl-grpo"
#: what the trainer needs beyond vicogym itself, and the extra that holds each
NEEDS = {"torch": "natural", "transformers": "trainers", "trl": "trainers", "datasets": "trainers"}


# -- what every training backend shares: inputs, the record, an atomic checkpoint ----------------
def model_dir(spec: str, flag: str = "--model") -> Path:
    """The model folder of ``spec`` (``transformers:DIR`` or ``DIR``), checked to hold a
    transformers model."""
    text = str(spec).strip()
    folder = Path(text.split(":", 1)[1] if text.startswith("transformers:") else text)
    if not (folder / "config.json").is_file():
        raise TrainingInputError(f"{flag} {spec!r} is not a transformers model folder (no config.json in {folder}); "
                                 f"give transformers:DIR of a model saved with save_pretrained")
    return folder








def finished(out: Path, record: Mapping[str, Any]) -> bool:
    """Whether ``out`` holds a complete checkpoint made from ``record``'s inputs and
    settings (``TrainingInputError`` when it holds one made from others)."""
    marker = out / MARKER
    if not out.exists():
        return False
    if not marker.is_file():
        raise TrainingInputError(f"{out} exists but holds no {MARKER} (not a checkpoint of this trainer); "
                                 f"remove it or give another --out")
    stored = json.loads(marker.read_text(encoding="utf-8"))
    differs = sorted(k for k in ("backend", "inputs", "settings") if stored.get(k) != json.loads(json.dumps(record[k])))
    if differs:
        raise TrainingInputError(f"{out} holds a checkpoint trained from other {' and '.join(differs)}; remove it or "
                                 f"give another --out to train again")
    return True


def checkpoint(out: Path, next_file: Path | None, record: dict[str, Any],
               train: Callable[[Path], dict[str, Any]]) -> bool:
    """Make the checkpoint ``out`` with ``train(tmp)`` (which saves into ``tmp`` and returns
    what to add to the record), unless it is there already; then write
    ``transformers:OUT`` to ``next_file``. Whether it trained."""
    trained = False
    if not finished(out, record):
        tmp = out.with_name(out.name + ".tmp")
        if tmp.exists():
            shutil.rmtree(tmp)  # a killed run's half
        tmp.mkdir(parents=True)
        record = {**record, **train(tmp)}
        (tmp / MARKER).write_text(json.dumps(record, indent=1, sort_keys=True) + "\n", encoding="utf-8")
        os.replace(tmp, out)
        trained = True
    if next_file is not None:
        write_next_spec(next_file, out)
    return trained


def seed_everything(seed: int) -> None:
    import random

    import numpy as np
    import torch

    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)
    os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    torch.use_deterministic_algorithms(True, warn_only=True)


def missing_extra(module: str) -> str | None:
    """The line to print when a package the trainer needs is not installed (else None)."""
    import importlib.util

    from vicogym.install import install_command

    absent = [name for name in NEEDS if importlib.util.find_spec(name) is None]
    if not absent:
        return None
    extras = sorted({NEEDS[name] for name in absent})
    return (f"python -m {module} needs {', '.join(absent)}, which {'is' if len(absent) == 1 else 'are'} not "
            f"installed: {' && '.join(install_command(extra) for extra in extras)}")


# -- the actor ----------------------------------------------------------------------------------
def shard_paths(data: Path) -> list[Path]:
    """The shards ``verl_files.txt`` lists (a path relative to the file's folder is read
    from there)."""
    if not data.is_file():
        raise TrainingInputError(f"--data {data} does not exist; give a round's verl_files.txt (one Parquet shard a "
                                 f"line)")
    lines = [line.strip() for line in data.read_text(encoding="utf-8").splitlines() if line.strip()]
    paths = [p if p.is_absolute() else data.parent / p for p in map(Path, lines)]
    if not paths:
        raise TrainingInputError(f"--data {data} lists no shards; give a round's verl_files.txt")
    for path in paths:
        if not path.is_file():
            raise TrainingInputError(f"--data {data} lists {path}, which does not exist; generate the round again")
    return paths


def read_rows(paths: Sequence[Path]) -> list[dict[str, Any]]:
    import pyarrow.parquet as pq

    from vicogym.trainers.trl import ROW_COLUMNS

    rows: list[dict[str, Any]] = []
    for path in paths:
        names = pq.read_schema(path).names
        if "prompt" not in names or "data_source" not in names:
            raise TrainingInputError(f"{path} has no prompt or data_source column; give shards of vicogym generate")
        rows.extend(pq.read_table(path, columns=[c for c in ROW_COLUMNS if c in names]).to_pylist())
    return rows


def settings(args: argparse.Namespace) -> dict[str, Any]:
    return {"seed": args.seed, "max_steps": args.max_steps, "lr": args.lr, "batch_size": args.batch_size,
            "num_generations": args.num_generations, "max_completion_length": args.max_completion_length,
            "temperature": args.temperature, "device": args.device}


def train_actor(args: argparse.Namespace) -> bool:
    """Train (or find) the checkpoint ``args`` describe; whether it trained."""
    paths = shard_paths(Path(args.data))
    source = model_dir(args.model)
    if args.batch_size % args.num_generations:
        raise TrainingInputError(f"--batch-size {args.batch_size} is not a multiple of --num-generations "
                                 f"{args.num_generations}; GRPO needs whole groups in a batch")
    record = {"backend": BACKEND, "settings": settings(args),
              "inputs": {"data": {str(p.resolve()): file_sha256(p) for p in paths},
                         "model": folder_sha256(source)}}
    rows = read_rows(paths)

    def train(tmp: Path) -> dict[str, Any]:
        import torch
        import transformers
        import trl

        from vicogym.trainers.trl import reward_function, rows_dataset

        seed_everything(args.seed)
        try:
            processor = transformers.AutoProcessor.from_pretrained(source, local_files_only=True)
            model = transformers.AutoModelForImageTextToText.from_pretrained(source, local_files_only=True,
                                                                            dtype=torch.float32)
        except (OSError, ValueError) as exc:
            raise TrainingInputError(f"--model {args.model!r} is not an image-text-to-text model folder "
                                     f"({str(exc).splitlines()[0]})") from None
        work = tmp / "trainer"
        config = trl.GRPOConfig(
            output_dir=str(work), use_cpu=args.device == "cpu", bf16=False, fp16=False, seed=args.seed,
            data_seed=args.seed, full_determinism=args.device == "cpu", per_device_train_batch_size=args.batch_size,
            num_generations=args.num_generations, max_completion_length=args.max_completion_length,
            temperature=args.temperature, max_steps=args.max_steps, learning_rate=args.lr, beta=0.0,
            logging_steps=1, report_to="none", save_strategy="no", dataloader_num_workers=0,
            disable_tqdm=True)
        trainer = trl.GRPOTrainer(model=model, reward_funcs=reward_function, args=config,
                                  train_dataset=rows_dataset(rows), processing_class=processor)
        trainer.train()
        shutil.rmtree(work, ignore_errors=True)
        trainer.model.save_pretrained(tmp)
        processor.save_pretrained(tmp)
        steps = [{k: e[k] for k in ("step", "loss", "reward", "reward_std") if k in e}
                 for e in trainer.state.log_history if "loss" in e]
        return {"rows": len(rows), "steps": steps}

    return checkpoint(Path(args.out), Path(args.next) if args.next else None, record, train)


def parser(description: str) -> argparse.ArgumentParser:
    """The flags every training backend takes (the contract ``vicogym evolve`` fills)."""
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--data", required=True, help="the round's training data")
    p.add_argument("--model", required=True, help="the current model: transformers:DIR or DIR")
    p.add_argument("--out", required=True, help="the new checkpoint's folder")
    p.add_argument("--next", default=None, help="where to write the next round's spec (transformers:OUT)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--device", default="cpu", help="cpu (the default), cuda, cuda:N")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    p = parser("Train the actor with TRL's GRPOTrainer on a round's rows (vicogym evolve --train-actor trl-grpo).")
    p.add_argument("--max-steps", type=int, default=2, help="optimizer steps [2]")
    p.add_argument("--lr", type=float, default=1e-5, help="learning rate [1e-5]")
    p.add_argument("--batch-size", type=int, default=2, help="completions per step [2]")
    p.add_argument("--num-generations", type=int, default=2, help="completions per prompt (a GRPO group) [2]")
    p.add_argument("--max-completion-length", type=int, default=32, help="tokens per completion [32]")
    p.add_argument("--temperature", type=float, default=1.0)
    args = p.parse_args(argv)
    for name in ("max_steps", "batch_size", "num_generations", "max_completion_length"):
        if getattr(args, name) < 1:
            print(f"error: --{name.replace('_', '-')} must be a positive integer, got {getattr(args, name)}",
                  file=sys.stderr)
            return 2
    if args.num_generations < 2:
        print("error: --num-generations must be at least 2 (GRPO compares completions of one prompt)", file=sys.stderr)
        return 2
    absent = missing_extra("vicogym.trainers.grpo_actor")
    if absent:
        print(f"error: {absent}", file=sys.stderr)
        return 2
    try:
        trained = train_actor(args)
    except TrainingInputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"{'trained' if trained else 'found'} {args.out}" + (f"; wrote {args.next}" if args.next else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
