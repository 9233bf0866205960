"""The rewriter's reward-weighted regression (the paper's RWR, Table 9) with TRL's
``SFTTrainer`` (trl 1.16) on a local Hugging Face model: ``python -m
vicogym.trainers.rwr_rewriter --data ROUND/rewriter/rewriter.json --model transformers:DIR
--out NEW_DIR --next FILE --seed N``.

What it reads: a round's LlamaFactory data (:mod:`vicogym.runs.llamafactory`, ``vicogym
export`` or ``vicogym evolve``): multimodal ShareGPT records whose user turn is ``<image>``
and the rewriter's prompt (the one :class:`vicogym.clients.OpenAIRewriter` sends:
:func:`vicogym.clients.edit_prompt` of the state before the edit) and whose assistant turn
is the edit as JSON; ``images`` names the picture the rewriter looked at, relative to the
data file's folder. Each kept edit transition is in the file ``floor(5 * w(p))`` times,
``w`` = :func:`vicogym.rewards.weight` of the pass rate on the sample the edit produced.

How the weights enter: the copies stay rows. Reward-weighted regression minimises
``sum_t c_t * NLL(edit_t | prompt_t, image_t)`` with ``c_t`` the copies; a row per copy
gives that sum exactly (each copy's loss counts once per epoch), is the file LlamaFactory
trains on in the GPU recipe (so both backends fit the same objective on the same rows),
and needs no loss of its own: ``SFTTrainer`` has no per-row weight, and a collapsed row
with a weight would need a custom ``compute_loss`` that also re-normalised TRL's
per-token averaging. Within a few steps (less than an epoch), rows are drawn by a
seeded shuffle, so a transition is seen in proportion to its copies.

How it trains: prompt-completion rows (the user turn with its image as the prompt, the
edit as the completion), so the loss is on the edit only (LlamaFactory's default) and
the prompt is rendered by the processor's chat template with a generation prompt, as the
local rewriter policy asks at inference. Full fine-tuning in float32 on CPU (the GPU
recipe trains LoRA); AdamW with the paper's learning rate (5e-6), cosine schedule and
warm-up ratio 0.1, with small step and batch defaults for CPU.

What it writes: the model and its processor into ``--out`` (loadable by
``AutoModelForImageTextToText`` and ``AutoProcessor``, the local rewriter's
``transformers:DIR``), trained into ``OUT.tmp`` and renamed into place, with
``vicogym-train.json`` (the inputs' sha256, the settings, the rows, the losses); then
``transformers:OUT`` into ``--next`` (a temporary file replaced into place). A rerun
whose ``--out`` holds a finished checkpoint of the same inputs and settings does not
train again; it only writes ``--next``. The same seed and inputs give the same
checkpoint bytes on CPU.

Bad input (a missing or empty data file, an image it names missing, a folder that is no
image-text-to-text model, a missing extra) ends with exit status 2 and one line on
stderr naming what to change.
"""

from __future__ import annotations

import argparse
import copy
import hashlib
import json
import os
import shutil
import sys
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

from vicogym.install import install_command
from vicogym.trainers.checkpoints import MARKER, TrainingInputError, write_next_spec

TRAINER = "vicogym.trainers.rwr_rewriter"
IMAGE_TOKEN = "<image>"
#: the settings a checkpoint is trained with, and their defaults (learning rate, schedule and
#: warm-up are Table 9's; steps and batch are small, for CPU)
DEFAULTS = {"seed": 0, "max_steps": 8, "lr": 5e-6, "batch_size": 2, "grad_accum": 1, "scheduler": "cosine",
            "warmup_ratio": 0.1, "max_length": None, "device": "cpu"}


#: input the trainer cannot use; its message names what to change
BadInput = TrainingInputError


# -- the data ----------------------------------------------------------------------------------
def read_records(data: str | Path) -> list[dict[str, Any]]:
    """The records of a LlamaFactory rewriter file, checked: a non-empty list of
    ``{"messages": [user, assistant], "images": [file]}`` whose images exist (relative to
    the file's folder)."""
    path = Path(data)
    if not path.is_file():
        raise BadInput(f"--data {path} does not exist; give the rewriter.json that vicogym export or vicogym evolve "
                       f"wrote (ROUND/rewriter/rewriter.json)")
    try:
        records = json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as exc:
        raise BadInput(f"--data {path} is not JSON ({exc}); give the rewriter.json that vicogym export wrote") from None
    if not isinstance(records, list):
        raise BadInput(f"--data {path} holds a JSON {type(records).__name__}, not a list of records; give the "
                       f"rewriter.json that vicogym export wrote")
    if not records:
        raise BadInput(f"--data {path} has no records (no edit landed in the sweet zone); generate more samples, or "
                       f"skip the rewriter's training this round")
    for k, record in enumerate(records):
        messages = record.get("messages") if isinstance(record, dict) else None
        roles = [m.get("role") for m in messages] if isinstance(messages, list) and all(
            isinstance(m, dict) and isinstance(m.get("content"), str) for m in messages) else None
        images = record.get("images") if isinstance(record, dict) else None
        if roles != ["user", "assistant"] or not isinstance(images, list) or len(images) != 1 or not all(
                isinstance(i, str) for i in images):
            raise BadInput(f"--data {path}: record {k} is not a rewriter record (messages [user, assistant] with text, "
                           f"one image); give the rewriter.json that vicogym export wrote")
        if messages[0]["content"].count(IMAGE_TOKEN) != 1:
            raise BadInput(f"--data {path}: record {k}'s user turn has {messages[0]['content'].count(IMAGE_TOKEN)} "
                           f"{IMAGE_TOKEN} tokens, expected one; give the rewriter.json that vicogym export wrote")
        if not (path.parent / images[0]).is_file():
            raise BadInput(f"--data {path}: record {k}'s image {images[0]} is not in {path.parent}; keep the images/ "
                           f"folder beside the data file")
    return records


def stand_in(data: Path) -> dict[str, Any] | None:
    """What ``dataset_info.json`` beside ``data`` says came from a stand-in (the simulated
    actor's pass rates set the copies), ``None`` when nothing did or there is no such file."""
    try:
        info = json.loads((data.parent / "dataset_info.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    entries = [e for e in info.values() if isinstance(e, dict) and e.get("file_name") == data.name] if isinstance(
        info, dict) else []
    return next((e["stand_in"] for e in entries if isinstance(e.get("stand_in"), dict)), None)


def transitions(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The distinct edit transitions of ``records`` in order of first appearance, each
    with its ``copies`` (its weight in the regression): ``prompt`` (the user turn without
    its image token), ``edit`` (the assistant's JSON), ``image`` (the file) and ``copies``."""
    counts: Counter = Counter()
    first: dict[str, dict[str, Any]] = {}
    for record in records:
        key = json.dumps(record, sort_keys=True)
        counts[key] += 1
        if key not in first:
            user, assistant = record["messages"]
            first[key] = {"prompt": user["content"].replace(IMAGE_TOKEN, "", 1), "edit": assistant["content"],
                          "image": record["images"][0]}
    return [{**first[key], "copies": counts[key]} for key in first]


def training_rows(records: list[dict[str, Any]], base: Path) -> list[dict[str, Any]]:
    """One conversational prompt-completion row per record (copies stay rows): the user
    turn's text as the prompt (TRL puts the image block before it, where the ``<image>``
    token stood), the edit as the completion, the picture as a PIL image."""
    from PIL import Image

    images: dict[str, Any] = {}
    rows = []
    for record in records:
        user, assistant = record["messages"]
        file = record["images"][0]
        if file not in images:
            with Image.open(base / file) as picture:
                images[file] = picture.convert("RGB")
        rows.append({"prompt": [{"role": "user", "content": user["content"].replace(IMAGE_TOKEN, "", 1)}],
                     "completion": [{"role": "assistant", "content": assistant["content"]}],
                     "images": [images[file]]})
    return rows


# -- inputs, markers and the next spec ---------------------------------------------------------
def model_folder(spec: str) -> Path:
    """The folder of ``--model``: ``transformers:DIR`` or a plain ``DIR`` holding
    ``config.json``."""
    folder = Path(spec[len("transformers:"):] if spec.startswith("transformers:") else spec)
    if spec.startswith(("openai:", "search", "random")) or not folder.is_dir():
        raise BadInput(f"--model {spec} is not a model folder; give transformers:DIR (or DIR) of a local "
                       f"image-text-to-text model saved with save_pretrained")
    if not (folder / "config.json").is_file():
        raise BadInput(f"--model {folder} has no config.json, so it is not a transformers model folder; give the "
                       f"folder save_pretrained wrote")
    return folder


def _digest(paths: list[Path], root: Path) -> str:
    digest = hashlib.sha256()
    for path in paths:
        digest.update(str(path.relative_to(root)).encode("utf-8") + b"\0")
        with open(path, "rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
        digest.update(b"\0")
    return digest.hexdigest()


def inputs_digest(data: Path, records: list[dict[str, Any]], model: Path) -> dict[str, str]:
    """The sha256 of the data (the file and every image it names) and of the model folder
    (every file in it)."""
    images = sorted({data.parent / r["images"][0] for r in records})
    return {"data_sha256": _digest([data, *images], data.parent),
            "model_sha256": _digest(sorted(p for p in model.rglob("*") if p.is_file()), model)}


def finished(out: Path, inputs: dict[str, Any]) -> bool:
    """Whether ``out`` holds a complete checkpoint trained on ``inputs`` (its marker)."""
    try:
        marker = json.loads((out / MARKER).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(marker, dict) and marker.get("inputs") == inputs


def _move_into_place(tmp: Path, out: Path) -> None:
    """Rename the finished ``tmp`` to ``out``; an older ``out`` (other inputs) goes first,
    by a rename, so ``out`` is never half written."""
    if out.exists():
        old = out.with_name(out.name + ".old")
        shutil.rmtree(old, ignore_errors=True)
        os.replace(out, old)
        os.replace(tmp, out)
        shutil.rmtree(old)
    else:
        os.replace(tmp, out)


# -- training ----------------------------------------------------------------------------------
def _libraries() -> None:
    missing = []
    for module, extra in (("torch", "natural"), ("transformers", "natural"), ("trl", "trainers"),
                          ("datasets", "trainers")):
        try:
            __import__(module)
        except ImportError:
            missing.append((module, extra))
    if missing:
        names = ", ".join(m for m, _ in missing)
        extras = sorted({e for _, e in missing})
        raise BadInput(f"the rewriter's RWR training needs {names}; install them with "
                       + " and ".join(install_command(e) for e in extras))


def load(folder: Path, device: str) -> tuple[Any, Any]:
    """The model (float32 on CPU) and processor of ``folder``, local files only."""
    import torch
    from transformers import AutoModelForImageTextToText, AutoProcessor

    try:
        processor = AutoProcessor.from_pretrained(folder, local_files_only=True)
        dtype = torch.float32 if device == "cpu" else "auto"
        model = AutoModelForImageTextToText.from_pretrained(folder, local_files_only=True, dtype=dtype)
    except (OSError, ValueError, KeyError) as exc:
        raise BadInput(f"--model {folder} is not an image-text-to-text model folder with its processor "
                       f"({str(exc).splitlines()[0][:200]}); give one AutoModelForImageTextToText and AutoProcessor "
                       f"load") from None
    if not hasattr(processor, "image_processor"):
        raise BadInput(f"--model {folder} has a tokenizer but no image processor; give a vision-language model "
                       f"folder (its processor saved with save_pretrained)")
    return model, processor


def train(data: str | Path, model: str, out: str | Path, next_file: str | Path | None = None,
          **settings: Any) -> dict[str, Any]:
    """Train the rewriter on ``data`` from ``model`` into ``out`` (see the module's
    docstring) and write ``transformers:OUT`` into ``next_file``; the marker's contents,
    with ``trained`` False where a finished checkpoint of the same inputs was kept."""
    unknown = set(settings) - set(DEFAULTS)
    if unknown:
        raise TypeError(f"unknown settings {sorted(unknown)}; expected some of {sorted(DEFAULTS)}")
    settings = {**DEFAULTS, **settings}
    data, out = Path(data), Path(out)
    for name, low in (("max_steps", 1), ("batch_size", 1), ("grad_accum", 1)):
        if not isinstance(settings[name], int) or settings[name] < low:
            raise BadInput(f"--{name.replace('_', '-')} must be an integer >= {low}, got {settings[name]!r}")
    if not settings["lr"] > 0:
        raise BadInput(f"--lr must be positive, got {settings['lr']!r}")
    records = read_records(data)
    folder = model_folder(model)
    if out.resolve() == folder.resolve():
        raise BadInput(f"--out {out} is the --model folder; name a new folder for the trained checkpoint")
    if out.exists() and not out.is_dir():
        raise BadInput(f"--out {out} is a file; name a folder for the trained checkpoint")
    inputs = {**inputs_digest(data, records, folder), "settings": settings}
    if finished(out, inputs):
        marker = json.loads((out / MARKER).read_text(encoding="utf-8"))
        print(f"{out} already holds the rewriter trained on these inputs; not training again", file=sys.stderr)
        if next_file is not None:
            write_next_spec(Path(next_file), out)
        return {**marker, "trained": False}
    _libraries()
    marker = _train(data, records, folder, out, inputs)
    if next_file is not None:
        write_next_spec(Path(next_file), out)
    return {**marker, "trained": True}


def _train(data: Path, records: list[dict[str, Any]], folder: Path, out: Path, inputs: dict[str, Any]
           ) -> dict[str, Any]:
    import datasets
    import torch
    import transformers
    from trl import SFTConfig, SFTTrainer

    settings = inputs["settings"]
    tmp = out.with_name(out.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)  # a run killed before it finished
    transformers.set_seed(settings["seed"], deterministic=True)
    transformers.utils.logging.disable_progress_bar()
    model, processor = load(folder, settings["device"])
    generation = copy.deepcopy(model.generation_config)  # the trainer aligns its special tokens; keep the model's
    rows = training_rows(records, data.parent)
    dataset = datasets.Dataset.from_list(rows)
    with tempfile.TemporaryDirectory(prefix="vicogym-rwr-") as scratch:
        config = SFTConfig(
            output_dir=scratch, max_steps=settings["max_steps"], learning_rate=settings["lr"],
            per_device_train_batch_size=settings["batch_size"], gradient_accumulation_steps=settings["grad_accum"],
            lr_scheduler_type=settings["scheduler"], warmup_steps=settings["warmup_ratio"],
            max_length=settings["max_length"], seed=settings["seed"], data_seed=settings["seed"],
            full_determinism=True, use_cpu=settings["device"] == "cpu", save_strategy="no", report_to="none",
            logging_steps=1, disable_tqdm=True, dataloader_num_workers=0, remove_unused_columns=False,
            bf16=False, fp16=False)
        trainer = SFTTrainer(model=model, args=config, train_dataset=dataset, processing_class=processor)
        trainer.remove_callback(transformers.trainer_callback.PrinterCallback)  # the losses go into the marker
        trainer.train()
        losses = [round(float(entry["loss"]), 6) for entry in trainer.state.log_history if "loss" in entry]
    if not all(map(lambda x: x == x, losses)):  # NaN: nothing of the edit was left to learn
        raise BadInput("the loss is NaN: the edits were cut off; raise --max-length or leave it unset")
    tmp.mkdir(parents=True)
    trainer.model.generation_config = generation
    trainer.model.save_pretrained(tmp)
    processor.save_pretrained(tmp)
    copies = Counter(t["copies"] for t in transitions(records))
    marker = {"trainer": TRAINER, "inputs": inputs, "data": str(data.resolve()), "model": str(folder.resolve()),
              "transitions": sum(copies.values()), "rows": len(records),
              "copies": {str(k): v for k, v in sorted(copies.items())}, "steps": trainer.state.global_step,
              "losses": losses, "versions": {"torch": torch.__version__, "transformers": transformers.__version__}}
    if stand_in(data):
        marker["stand_in"] = stand_in(data)
    (tmp / MARKER).write_text(json.dumps(marker, indent=1, sort_keys=True), encoding="utf-8")
    _move_into_place(tmp, out)
    return marker


# -- the command -------------------------------------------------------------------------------
class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line, then exit 2
        self.exit(2, f"{self.prog}: {message} (see --help)\n")


def parser() -> argparse.ArgumentParser:
    p = _Parser(prog=f"python -m {TRAINER}",
                description="Train the rewriter by reward-weighted regression (TRL's SFTTrainer) on a round's "
                            "LlamaFactory rewriter data; each edit counts as often as the file repeats it.")
    p.add_argument("--data", required=True, help="the round's rewriter.json (vicogym export / vicogym evolve)")
    p.add_argument("--model", required=True, help="the current rewriter: transformers:DIR or DIR")
    p.add_argument("--out", required=True, help="the folder for the new checkpoint")
    p.add_argument("--next", dest="next_file", help="where to write the next rewriter's spec (transformers:OUT)")
    p.add_argument("--seed", type=int, default=DEFAULTS["seed"])
    p.add_argument("--max-steps", type=int, default=DEFAULTS["max_steps"])
    p.add_argument("--lr", type=float, default=DEFAULTS["lr"])
    p.add_argument("--batch-size", type=int, default=DEFAULTS["batch_size"])
    p.add_argument("--grad-accum", type=int, default=DEFAULTS["grad_accum"])
    p.add_argument("--max-length", type=int, default=None, help="truncate rows to this many tokens (unset: none)")
    p.add_argument("--device", default=DEFAULTS["device"], help="cpu (default), cuda, cuda:N")
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        marker = train(args.data, args.model, args.out, args.next_file, seed=args.seed, max_steps=args.max_steps,
                       lr=args.lr, batch_size=args.batch_size, grad_accum=args.grad_accum,
                       max_length=args.max_length, device=args.device)
    except BadInput as exc:
        print(f"{TRAINER}: {exc}", file=sys.stderr)
        return 2
    what = "trained" if marker["trained"] else "kept"
    losses = marker["losses"]
    loss = f"; loss {losses[0]:.4f} -> {losses[-1]:.4f}" if losses else ""
    print(f"rewriter {what}: {marker['transitions']} edit transitions as {marker['rows']} rows (copies "
          f"floor(5 w(p)): {marker['copies']}), {marker['steps']} steps{loss}; checkpoint {args.out}"
          + (f"; next rewriter in {args.next_file}" if args.next_file else ""))
    if marker.get("stand_in"):
        print(f"note: {marker['stand_in'].get('note', 'the copies came from a stand-in, not a model')}")
    return 0


__all__ = ["DEFAULTS", "MARKER", "BadInput", "main", "read_records", "stand_in", "train", "training_rows",
           "transitions"]

if __name__ == "__main__":
    sys.exit(main())
