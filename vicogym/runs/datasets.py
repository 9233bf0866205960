"""Label-valid samples in memory: :func:`make_dataset`, the samples ``vicogym generate``
would write, without writing shards.

A dataset of ``size`` samples of an environment with rewriter edits (Chart, CLEVR,
Natural) runs the episodes of the generation run ``vicogym generate ENV --n size --seed
seed`` (environment settings as ``--set``) on the same machinery: episode ``e`` is reset
with the seed ``generate`` draws for it and ``options={"episode": e}``, edited by a
rewriter seeded from ``(seed, e)``, and keeps what the run keeps. Entry ``i`` is the
run's row ``i``: the same question, answer, image pixels, label and row id. Episodes run
when an entry is first asked for (in order: entry ``i`` needs the episodes before it),
and their rows are kept; each entry is rebuilt from them on every access, so entries are
the same whatever order they are read in.

An entry is a dict::

    {"question": str, "answer": str,
     "image": PIL.Image.Image,   # RGB, the sample's native size (np.asarray gives H x W x 3 uint8)
     "metadata": {"id", "env_id", "source_id", "label_rule", "label", "structure", "payloads",
                  "seed_structure", "edit_trace", "provenance", "pass_rate", "pass_rate_before",
                  "reward", "actor", "actor_answers"}}

The image is a PIL image, as Hugging Face ``datasets`` Image features, ``transformers``
processors and TRL's vision trainers take it. :func:`score_answer` scores a model's
answer against an entry with the reward every trainer gets (:func:`vicogym.scoring.score_row`).
"""

from __future__ import annotations

import json
import operator
import threading
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from vicogym.errors import GenerationError, RunError, VicogymError
from vicogym.validation import brief

#: the keys of an entry's ``metadata``
METADATA_KEYS = ("id", "env_id", "source_id", "label_rule", "label", "structure", "payloads", "seed_structure",
                 "edit_trace", "provenance", "pass_rate", "pass_rate_before", "reward", "actor", "actor_answers")


def make_dataset(env_id: str, size: int = 64, seed: int = 0, *, rewriter: str = "random", keep: str = "final",
                 max_episodes: int | None = None, **settings: Any) -> VisualDataset:
    """A dataset of ``size`` samples of ``env_id``: entry ``i`` is row ``i`` of ``vicogym
    generate ENV_ID --n SIZE --seed SEED`` with ``settings`` as its environment settings
    (``--set NAME=VALUE``; ``k=4``, ``source="chartqa"``, ``max_turns=2`` ...) and
    ``rewriter``, ``keep`` and ``max_episodes`` as its options of those names. Same
    arguments, same entries; another seed, other entries. Bad arguments raise
    :class:`~vicogym.errors.UnknownEnvironment` (an unknown id) or
    :class:`~vicogym.errors.RunError` naming what to change."""
    return VisualDataset(env_id, size, seed, rewriter=rewriter, keep=keep, max_episodes=max_episodes, **settings)


class VisualDataset(Sequence):
    """``size`` label-valid samples of one environment (see :func:`make_dataset`): indexable
    (negative indices and slices too), iterable, and made lazily, episode by episode."""

    def __init__(self, env_id: str, size: int, seed: int = 0, *, rewriter: str = "random", keep: str = "final",
                 max_episodes: int | None = None, **settings: Any) -> None:
        self.config = _run_config(env_id, size, seed, rewriter, keep, max_episodes, settings)
        self.env_id, self.size, self.seed = self.config.env_id, self.config.n, self.config.seed
        self.settings: dict[str, Any] = dict(self.config.env_kwargs)
        self._rows: list[dict[str, Any]] = []
        self._episodes = 0
        self._actor: Any = None
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return self.size

    def __repr__(self) -> str:
        return (f"VisualDataset({self.env_id!r}, size={self.size}, seed={self.seed}"
                + "".join(f", {k}={v!r}" for k, v in sorted(self.settings.items())) + ")")

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(self.size))]
        i = _whole(index)
        if i is None:
            raise TypeError(f"dataset indices must be integers or slices, not {type(index).__name__}")
        if not -self.size <= i < self.size:
            raise IndexError(f"index {i} out of range for a dataset of {self.size} samples")
        i %= self.size
        return self._entry(self._row(i))

    def __iter__(self) -> Iterator[dict[str, Any]]:
        for i in range(self.size):
            yield self[i]

    def score_answer(self, answer: Any, entry: Mapping[str, Any]) -> float:
        """The score of ``answer`` (a model's response) on ``entry``, in [0, 1] (see :func:`score_answer`)."""
        return score_answer(answer, entry)

    def _row(self, i: int) -> dict[str, Any]:
        """Row ``i`` of the run, running the episodes up to the one that makes it."""
        from vicogym.runs.generate import episode_rows

        with self._lock:
            budget = self.config.episode_budget
            while len(self._rows) <= i:
                if self._episodes >= budget:
                    raise GenerationError(
                        f"{self.env_id} kept {len(self._rows)} samples in {budget} episodes, fewer than the "
                        f"{i + 1} entry {i} needs: raise max_episodes (now {self.config.max_episodes}), or ask for "
                        f"a smaller size, or change the settings that refuse samples")
                self._rows.extend(episode_rows(self.config, self._episodes))
                self._episodes += 1
            return self._rows[i]

    def _entry(self, row: Mapping[str, Any]) -> dict[str, Any]:
        from PIL import Image

        from vicogym.arm import payload_dict
        from vicogym.images import decode_png

        if self._actor is None:
            from vicogym.registry import make_config

            self._actor = make_config(self.env_id, self.settings).to_dict()["actor"]
        image = Image.fromarray(decode_png(row["images"][0]["bytes"]))
        metadata = {
            "id": row["id"], "env_id": row["env_id"], "source_id": row["source_id"],
            "label_rule": row["label_rule"], "label": json.loads(row["label"]), "structure": row["structure"],
            "payloads": payload_dict(row["payloads"]), "seed_structure": row["seed_structure"],
            "edit_trace": json.loads(row["edit_trace"]), "provenance": json.loads(row["provenance"]),
            "pass_rate": row["pass_rate"], "pass_rate_before": row["pass_rate_before"], "reward": row["reward"],
            "actor": json.loads(json.dumps(self._actor)), "actor_answers": list(row["actor_answers"]),
        }
        return {"question": row["question"], "answer": row["answer"], "image": image, "metadata": metadata}


def score_answer(answer: Any, entry: Mapping[str, Any]) -> float:
    """The score of ``answer`` on ``entry`` (an entry of :func:`make_dataset`), in [0, 1]:
    the answer is read from the response as trainers read it (``\\boxed{}``, an ``Answer:``
    line, else the final line: :func:`vicogym.clients.extract_answer`'s ``auto``) and
    scored by the entry's environment's scorer against the entry's answer, the reward
    :func:`vicogym.scoring.score_row` gives verl and TRL. ``None`` or an answer with
    nothing readable scores 0.0; an entry that is no entry of a vicogym dataset raises
    :class:`~vicogym.scoring.RowError`."""
    from vicogym.scoring import RowError, score_row

    metadata = entry.get("metadata") if isinstance(entry, Mapping) else None
    env_id = metadata.get("env_id") if isinstance(metadata, Mapping) else None
    truth = entry.get("answer") if isinstance(entry, Mapping) else None
    if not isinstance(env_id, str) or not isinstance(truth, str):
        raise RowError(f"expected an entry of vicogym.make_dataset (a dict with 'answer' and 'metadata' holding "
                       f"'env_id'), got {brief(entry, 120)}")
    return score_row(env_id, answer, truth)


def _run_config(env_id: Any, size: Any, seed: Any, rewriter: Any, keep: Any, max_episodes: Any,
                settings: Mapping[str, Any]) -> Any:
    """The generation run a dataset reads, its arguments checked (:class:`RunError` naming
    what to change; an unknown id raises :class:`~vicogym.errors.UnknownEnvironment`)."""
    from vicogym.core import canonical_json
    from vicogym.registry import check_id, env_kind
    from vicogym.runs.generate import GenerateConfig

    check_id(env_id)
    kind = env_kind(env_id)
    if kind != "edit":
        where = ("`vicogym synthesize`" if kind == "response" else
                 f"`vicogym generate {env_id}` (tasks to play, not samples with answers)")
        raise RunError(f"make_dataset makes samples of environments with rewriter edits (Chart, CLEVR, Natural); "
                       f"{env_id}'s data come from {where}")
    if _whole(size) is None or size < 1:
        raise RunError(f"expected size to be a positive integer (the number of samples), got {brief(size, 60)}")
    if _whole(seed) is None or seed < 0:
        raise RunError(f"expected seed to be a non-negative integer, got {brief(seed, 60)}")
    try:
        canonical_json(dict(settings))
    except (TypeError, ValueError):
        raise RunError(f"expected environment settings with JSON values (numbers, strings, lists, objects), got "
                       f"{brief(dict(settings), 160)}") from None
    try:
        return GenerateConfig(env_id=env_id, n=_whole(size), seed=_whole(seed), rewriter=rewriter, keep=keep,
                              max_episodes=max_episodes, env_kwargs=dict(settings))
    except VicogymError:
        raise
    except (ValueError, TypeError) as exc:
        raise RunError(f"make_dataset({env_id!r}, ...): {exc}") from None


def _whole(value: Any) -> int | None:
    """``value`` as an ``int`` when it is a whole number (a Python or NumPy integer, never a
    ``bool``), else ``None``."""
    if isinstance(value, bool):
        return None
    try:
        return operator.index(value)
    except TypeError:
        return None
