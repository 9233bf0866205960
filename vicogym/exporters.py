"""Trainer formats added to every stored row.

verl's multimodal RL dataset (``RLHFDataset``) reads ``data_source``, ``prompt`` (chat
messages with an ``<image>`` placeholder), ``images`` (``{bytes, path}``), ``ability``,
``reward_model`` (``{style, ground_truth}``) and ``extra_info``. The arm's
:class:`~vicogym.core.ExportHints` give the ability and the prompt suffix.
"""

from __future__ import annotations

from typing import Any, Mapping

from vicogym.core import ExportHints

IMAGE_TOKEN = "<image>"


def verl_schema():
    import pyarrow as pa

    return pa.schema([
        ("data_source", pa.string()),
        ("prompt", pa.list_(pa.struct([("role", pa.string()), ("content", pa.string())]))),
        ("images", pa.list_(pa.struct([("bytes", pa.binary()), ("path", pa.string())]))),
        ("ability", pa.string()),
        ("reward_model", pa.struct([("style", pa.string()), ("ground_truth", pa.string())])),
        ("extra_info", pa.struct([("id", pa.string()), ("index", pa.int64()), ("split", pa.string()),
                                  ("question", pa.string()), ("answer", pa.string()), ("label_rule", pa.string())])),
    ])


def verl_prompt(question: str, hints: ExportHints) -> str:
    return IMAGE_TOKEN + question + hints.prompt_suffix


def verl_fields(row: Mapping[str, Any], hints: ExportHints, index: int, split: str = "train") -> dict[str, Any]:
    """verl's columns for a stored row (see :func:`vicogym.rollout.sample_row`)."""
    return {
        "data_source": row["env_id"],
        "prompt": [{"role": "user", "content": verl_prompt(row["question"], hints)}],
        "images": [{"bytes": row["image"], "path": None}],
        "ability": hints.ability,
        "reward_model": {"style": "rule", "ground_truth": row["answer"]},
        "extra_info": {"id": row["id"], "index": index, "split": split, "question": row["question"],
                       "answer": row["answer"], "label_rule": row["label_rule"]},
    }


def verl_mismatch(row: Mapping[str, Any], hints: ExportHints | None) -> str | None:
    """Why a row's verl columns disagree with its own label columns, or ``None``."""
    extra = row.get("extra_info") or {}
    checks = [
        ("reward_model.ground_truth", (row.get("reward_model") or {}).get("ground_truth"), row["answer"]),
        ("extra_info.answer", extra.get("answer"), row["answer"]),
        ("extra_info.question", extra.get("question"), row["question"]),
        ("extra_info.label_rule", extra.get("label_rule"), row["label_rule"]),
        ("extra_info.id", extra.get("id"), row["id"]),
        ("data_source", row.get("data_source"), row["env_id"]),
    ]
    images = row.get("images") or []
    checks.append(("images[0].bytes", images[0].get("bytes") if images else None, row["image"]))
    if hints is not None:
        prompt = row.get("prompt") or []
        checks.append(("prompt", prompt[0].get("content") if prompt else None, verl_prompt(row["question"], hints)))
        checks.append(("ability", row.get("ability"), hints.ability))
    for name, stored, expected in checks:
        if stored != expected:
            shown = "the image column" if name == "images[0].bytes" else repr(expected)
            return f"{name} differs from {shown}"
    return None
