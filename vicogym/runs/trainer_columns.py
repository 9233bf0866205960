"""Trainer formats added to every stored row.

verl's multimodal RL dataset (``RLHFDataset``) reads ``data_source``, ``prompt`` (chat
messages with an ``<image>`` placeholder), ``images`` (a list of ``{bytes, path}``: the
row's own image column, its one copy of the PNG), ``ability``, ``reward_model``
(``{style, ground_truth}``) and ``extra_info``. The arm's
:class:`~vicogym.core.ExportHints` give the ability and the prompt suffix. Shards also
carry Hugging Face ``datasets`` features metadata (:func:`hf_features`), so
``load_dataset("parquet", ...)`` shows ``images`` as Image features and vicogym files
concatenate with other multimodal datasets.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from vicogym.core import ExportHints

IMAGE_TOKEN = "<image>"
#: verl's agent loop that plays a row with tools (the rows of evidence tasks name it)
TOOL_AGENT = "tool_agent"


def verl_schema(tools: Sequence[str] = ()):
    """verl's columns; with ``tools``, also ``agent_name`` and ``extra_info.tools_kwargs``
    (per tool its ``create_kwargs``: ``seed``, ``settings`` as JSON, ``task_id``), for
    rows played by verl's tool agent loop."""
    import pyarrow as pa

    info = [("id", pa.string()), ("index", pa.int64()), ("split", pa.string()), ("question", pa.string()),
            ("answer", pa.string()), ("label_rule", pa.string())]
    agent = []
    if tools:
        create = pa.struct([("create_kwargs", pa.struct([("seed", pa.int64()), ("settings", pa.string()),
                                                         ("task_id", pa.string())]))])
        info.append(("tools_kwargs", pa.struct([(name, create) for name in tools])))
        agent = [("agent_name", pa.string())]
    return pa.schema([
        ("data_source", pa.string()),
        ("prompt", pa.list_(pa.struct([("role", pa.string()), ("content", pa.string())]))),
        ("ability", pa.string()),
        ("reward_model", pa.struct([("style", pa.string()), ("ground_truth", pa.string())])),
        *agent,
        ("extra_info", pa.struct(info)),
    ])


def images_type():
    """The Arrow type of a row's ``images`` column: verl's list of ``{bytes, path}``."""
    import pyarrow as pa

    return pa.list_(pa.struct([("bytes", pa.binary()), ("path", pa.string())]))


def payloads_type():
    """The Arrow type of a row's binary payloads: a list of ``{name, data}``."""
    import pyarrow as pa

    return pa.list_(pa.struct([("name", pa.string()), ("data", pa.binary())]))


def image_column(row_id: str, image: Any) -> list[dict[str, Any]]:
    """A row's ``images`` value: its one copy of the PNG, named by the row."""
    from vicogym.images import encode_png

    return [{"bytes": encode_png(image), "path": f"{row_id}.png"}]


def shard_schema(fields: list[Any]):
    """The schema of a shard: a kind of row's own ``fields``, then verl's columns."""
    import pyarrow as pa

    return pa.schema(list(fields) + list(verl_schema()))


def verl_prompt(question: str, hints: ExportHints) -> str:
    return IMAGE_TOKEN + question + hints.prompt_suffix


def verl_fields(row: Mapping[str, Any], hints: ExportHints, index: int, split: str = "train") -> dict[str, Any]:
    """verl's columns for a stored row (see :func:`vicogym.runs.rollout.sample_row`)."""
    return {
        "data_source": row["env_id"],
        "prompt": [{"role": "user", "content": verl_prompt(row["question"], hints)}],
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
    if hints is not None:
        prompt = row.get("prompt") or []
        checks.append(("prompt", prompt[0].get("content") if prompt else None, verl_prompt(row["question"], hints)))
        checks.append(("ability", row.get("ability"), hints.ability))
    for name, stored, expected in checks:
        if stored != expected:
            return f"{name} differs from {expected!r}"
    return None


def hf_features(schema: Any) -> dict[str, Any]:
    """Hugging Face ``datasets`` features of an Arrow schema (its ``Features.to_dict()``
    form), with ``images`` as a list of Image features."""
    import pyarrow as pa

    def feature(kind: Any) -> Any:
        if pa.types.is_struct(kind):
            return {kind.field(i).name: feature(kind.field(i).type) for i in range(kind.num_fields)}
        if pa.types.is_list(kind):
            return {"feature": feature(kind.value_type), "_type": "List"}
        return {"dtype": {"double": "float64", "float": "float32"}.get(str(kind), str(kind)), "_type": "Value"}

    features = {f.name: feature(f.type) for f in schema}
    if "images" in features:
        features["images"] = {"feature": {"_type": "Image"}, "_type": "List"}
    return features
