"""Training data for the rewriter, from a generation run (``vicogym export``).

LlamaFactory's multimodal ShareGPT format: one record per kept edit transition, with
``messages`` (the rewriter's prompt with one ``<image>`` token, then the edit as the
assistant's JSON) and ``images`` (the picture the rewriter looked at), plus the
``dataset_info.json`` entry that names the file. The prompt is the one
:class:`vicogym.clients.OpenAIRewriter` sends: the structure before the edit, the
question, its answer, the actor's pass rate then, the direction and the arm's edit
schema. Each transition is repeated ``floor(5 * w(p))`` times, ``w`` the difficulty
weight (:func:`vicogym.rewards.weight`, the run's reward shape and zone) of the pass rate
on the sample the edit produced: sweet-zone edits count five times, off-zone ones (under
the default band) not at all. The states before each edit are rebuilt from the row's
seed and edit trace and rendered again, so the export needs only the run folder.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np

from vicogym.errors import RunError

FORMATS = ("llamafactory",)
COPIES = 5


def export_llamafactory(run: str | Path, out: str | Path, name: str = "vicogym_rewriter", pairs: bool = False,
                        candidates: int = 8) -> dict[str, Any]:
    """Write ``rewriter.json``, ``images/`` and ``dataset_info.json`` into ``out``; counts.
    With ``pairs``, also ``rewriter_pairs.json`` (see :func:`preference_pairs`). ``run``
    may be a filesystem URL (read from a local copy)."""
    from vicogym.runs.shards import local_run

    with local_run(run) as local:
        return _export(local, Path(out), name, pairs, candidates)


def _export(run: Path, out: Path, name: str, pairs: bool, candidates: int) -> dict[str, Any]:
    from vicogym.arm import payload_dict
    from vicogym.clients import edit_prompt
    from vicogym.core import Edit
    from vicogym.images import encode_png
    from vicogym.rewards import weight
    from vicogym.runs.trainer_columns import IMAGE_TOKEN
    from vicogym.runs.verify import iter_rows, read_manifest, run_arm

    if out.exists() and not out.is_dir():
        raise RunError(f"--out {out} is a file; name a folder for the exported files")
    manifest = read_manifest(run)
    arm = run_arm(run, manifest)
    reward = arm.config.reward_config()
    zone = arm.config.sweet_zone
    schema = arm.edit_schema()
    (out / "images").mkdir(parents=True, exist_ok=True)
    records: list[dict[str, Any]] = []
    seen: set[tuple[str, int]] = set()
    counts = {"transitions": 0, "records": 0, "dropped_off_zone": 0}
    try:
        for row in iter_rows(run):
            provenance = json.loads(row["provenance"])
            episode = f"{provenance.get('run_seed')}-{provenance.get('index')}"
            rule = json.loads(row["label"])
            structure = arm.decode(row["seed_structure"], payload_dict(row.get("seed_payloads")))
            answer, pass_rate = arm.relabel(structure, rule), float(row["pass_rate_before"])
            for entry in json.loads(row["edit_trace"]):
                key = (episode, int(entry["turn"]))
                after = arm.apply(structure, Edit.parse(entry["edit"]), rule)
                if key not in seen:
                    seen.add(key)
                    counts["transitions"] += 1
                    copies = math.floor(COPIES * weight(float(entry["pass_rate"]), reward))
                    if copies == 0:
                        counts["dropped_off_zone"] += 1
                    else:
                        text = arm.encode(structure)[0]
                        image = arm.render_seeded(structure).image
                        file = f"images/{row['env_id'].split('/')[-1].lower()}-{episode}-t{entry['turn']}.png"
                        (out / file).write_bytes(encode_png(image))
                        prompt = edit_prompt(text, row["question"], answer, pass_rate, zone, schema)
                        record = {"messages": [
                            {"role": "user", "content": IMAGE_TOKEN + prompt},
                            {"role": "assistant", "content": json.dumps(entry["edit"], sort_keys=True)}],
                            "images": [file]}
                        records.extend([record] * copies)
                structure, answer, pass_rate = after, entry["answer"], float(entry["pass_rate"])
    finally:
        arm.close()
    counts["records"] = len(records)
    if not records:
        (out / "images").rmdir() if not any((out / "images").iterdir()) else None
        searched = str(manifest.get("config", {}).get("rewriter", "random")).startswith("search")
        more = "with more search candidates (--rewriter search:N)" if searched else "with --rewriter search"
        raise RunError(f"{run}: none of its {counts['transitions']} edits landed in the sweet zone (weight >= 0.2), so "
                       f"there is nothing to train the rewriter on; generate more samples, or {more}")
    (out / "rewriter.json").write_text(json.dumps(records, ensure_ascii=False, indent=1), encoding="utf-8")
    files = {name: "rewriter.json"}
    if pairs:
        ranked = preference_pairs(run, records, candidates)
        counts["pairs"] = len(ranked)
        (out / "rewriter_pairs.json").write_text(json.dumps(ranked, ensure_ascii=False, indent=1), encoding="utf-8")
        files[f"{name}_pairs"] = "rewriter_pairs.json"
    stand_in = actor_stand_in(manifest)
    write_dataset_info(out, files, ranking=(f"{name}_pairs",), stand_in=stand_in)
    return {**counts, **({"stand_in": stand_in} if stand_in else {})}


def actor_stand_in(manifest: dict[str, Any]) -> dict[str, Any] | None:
    """What the export records when a run's pass rates came from a stand-in actor (they set
    each edit's copies and which edits are kept): ``{"actor": "simulated", "note": ...}``;
    ``None`` for a model's."""
    from vicogym.policies import PLUG_IN_ACTOR
    from vicogym.runs.verify import run_actor

    actor = run_actor(manifest)
    if not actor.stand_in:
        return None
    return {"actor": "simulated",
            "note": f"the edits' pass rates, which set each edit's copies (its weight) and which edits are kept, came "
                    f"from {actor.name} (a stand-in, not a model); {PLUG_IN_ACTOR} and generate again"}


def write_dataset_info(out: Path, files: dict[str, str], ranking: tuple[str, ...] = (),
                       stand_in: dict[str, Any] | None = None) -> None:
    """LlamaFactory's ``dataset_info.json`` naming each multimodal ShareGPT file (``name ->
    file``); the ``ranking`` names are preference pairs (chosen / rejected). ``stand_in``
    (what in the data a simulated stand-in gave, not a model) goes into every entry, where
    whoever trains on it reads it (LlamaFactory ignores a key it does not know)."""
    tags = {"role_tag": "role", "content_tag": "content", "user_tag": "user", "assistant_tag": "assistant"}
    info: dict[str, Any] = {}
    for name, file in files.items():
        columns = {"messages": "messages", **({"chosen": "chosen", "rejected": "rejected"} if name in ranking else {}),
                   "images": "images"}
        info[name] = {"file_name": file, "formatting": "sharegpt", **({"ranking": True} if name in ranking else {}),
                      "columns": columns, "tags": tags, **({"stand_in": stand_in} if stand_in else {})}
    (out / "dataset_info.json").write_text(json.dumps(info, indent=1), encoding="utf-8")


def preference_pairs(run: Path, records: list[dict[str, Any]], candidates: int) -> list[dict[str, Any]]:
    """LlamaFactory ranking records: for each exported sweet-zone edit (``chosen``), an edit
    from the same state that the environment rejects or whose pass rate lands off the zone
    (``rejected``). The state is rebuilt by replaying the episode in the run's own
    environment (its seed, its earlier edits, its actor) and up to ``candidates`` edits of
    the arm's edit space are probed there without committing."""
    import gymnasium as gym

    from vicogym.runs.verify import iter_rows, read_manifest

    manifest = read_manifest(run)
    by_image = {}
    for record in records:  # one pair per transition, whatever its copies
        by_image.setdefault(record["images"][0], record)
    episodes: dict[str, dict[str, Any]] = {}
    for row in iter_rows(run, columns=["provenance", "edit_trace", "env_id"]):
        provenance = json.loads(row["provenance"])
        key = f"{provenance.get('run_seed')}-{provenance.get('index')}"
        trace = json.loads(row["edit_trace"])
        if key not in episodes or len(trace) > len(episodes[key]["trace"]):
            episodes[key] = {"seed": int(provenance["seed"]), "trace": trace, "env_id": row["env_id"],
                             "index": provenance.get("index")}
    pairs = []
    env = None
    try:
        for key, episode in episodes.items():
            if env is None:
                kwargs = dict(manifest["config"]["env_kwargs"], max_turns=10_000)
                env = gym.make(episode["env_id"], **kwargs).unwrapped
            index = episode["index"]  # the episode's index in its run, as generate reset it
            env.reset(seed=episode["seed"], options={"episode": index} if isinstance(index, int) else None)
            rng = np.random.default_rng(np.random.SeedSequence([episode["seed"], 7]))
            low, high = env.config.sweet_zone
            for entry in episode["trace"]:
                image = f"images/{episode['env_id'].split('/')[-1].lower()}-{key}-t{entry['turn']}.png"
                record = by_image.get(image)
                if record is not None and low <= entry["pass_rate"] <= high:
                    for _ in range(candidates):
                        edit = env.sample_edit(None, rng)
                        pass_rate, error = env.preview(edit, rng)
                        if error is not None or not low <= pass_rate <= high:
                            pairs.append({"messages": record["messages"][:1], "chosen": record["messages"][1],
                                          "rejected": {"role": "assistant",
                                                       "content": json.dumps(edit, sort_keys=True)},
                                          "images": record["images"]})
                            break
                env.step(entry["edit"])
    finally:
        if env is not None:
            env.close()
    return pairs


__all__ = ["FORMATS", "actor_stand_in", "export_llamafactory", "preference_pairs", "write_dataset_info"]
