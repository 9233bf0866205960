"""Evaluating a model on a generation run (``vicogym eval RUN --actor SPEC``).

Every row of the run is asked of the actor ``k`` times (one request per row by default):
the row's image and question, as the run's actor saw them. Each response's answer is read
by the actor's own extractor (``extractor`` of its spec: ``auto``, ``boxed``, ...) and
scored by the row's own scorer: the arm of the run's environment built from the run's
settings, the scorer that gave the run's pass rates (``--set scorer=exact`` runs are
scored exactly). Accuracy is the mean score of the answers; with ``k > 1`` a row also
counts for pass@k when one of its answers scores 1.

Accuracy is reported per environment, per question family (the label's ``family`` where it
names one, as CLEVR's do, else its ``template``, as Chart programs carry it, else the
label's ``answer_type``, as Natural's do, else the label rule) and per difficulty: the
row's pass rate under the run's own actor (the one named by the manifest, K answers at
generation) in three bins around the run's sweet zone ``[low, high]`` (0.35-0.65 by
default): ``hard`` below ``low``, ``sweet`` within it, ``easy`` above ``high``.

The summary is a JSON file (``RUN/eval.json`` by default, or ``out``); beside it
(``eval.rows.jsonl``: ``out`` with the suffix ``.rows.jsonl``) each row's result is a JSON
line as soon as it is scored: id, answer, the model's responses (whole: only surrounding
spaces and a final full stop dropped), the extracted answers and their scores. A stopped
evaluation keeps every row scored before the stop (only the rows in flight are lost), and
running it again asks only the rows not yet scored; the JSON file records what the evaluation is of (the run, the actor,
``k``, the seed), and an evaluation of something else is refused at that path (give it an
``out`` of its own). Requests in flight are bounded by the actor (``max_in_flight`` of an
OpenAI-compatible client, 8 by default); stand-ins and local models answer one row at a
time. A stand-in (the simulated actor) is told what the environment knows of the row (its
answer, its visual difficulty: the structure rendered again); a model sees the image and
the question only.

With ``of="seed"`` (``--of seed``) each row is asked as it was before editing: the seed
structure the row keeps, rendered again by the run's arm and relabelled by the row's label
rule (as the rewriter's export and the report draw it); its difficulty bin is then that of
the row's ``pass_rate_before``. ``vicogym evolve`` asks a strong and a weak actor both ways
to measure what editing did to each.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import math
import os
from collections.abc import Iterable, Iterator, Mapping
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from vicogym.errors import ModelError, RunError
from vicogym.policies import actor_name
from vicogym.validation import is_int

EVAL_FILE = "eval.json"
ROWS_SUFFIX = ".rows.jsonl"
DIFFICULTIES = ("hard", "sweet", "easy")
#: what the JSON file's ``kind`` says
KIND = "vicogym-eval"
#: what an evaluation asks of each row: the row's sample, or the seed it was edited from
OF = ("sample", "seed")


@dataclass(frozen=True)
class EvalConfig:
    """What an evaluation is of: the run folder (or filesystem URL), the actor spec (a name,
    ``openai:MODEL@URL``, ``transformers:DIR``, or a mapping ``{"name": ..., **settings}``),
    answers per row, where the summary goes (``None``: ``RUN/eval.json``) and the seed of
    the actor's sampling (each row's generator is drawn from it and the row's id)."""

    run: str
    actor: Any
    k: int = 1
    out: str | None = None
    seed: int = 0
    #: what each row shows the actor: ``sample`` (its image, as stored) or ``seed`` (the
    #: sample it was edited from: its seed structure rendered again and relabelled)
    of: str = "sample"

    def __post_init__(self) -> None:
        if self.of not in OF:
            raise ValueError(f"expected --of as {' or '.join(OF)} (the rows' samples or the seeds they were edited "
                             f"from), got {self.of!r}")
        if not isinstance(self.run, (str, os.PathLike)) or not str(self.run).strip():
            raise ValueError(f"expected RUN as a folder written by `vicogym generate`, got {self.run!r}")
        if not is_int(self.k, 1):
            raise ValueError(f"expected --k as a whole number >= 1 (answers per row), got {self.k!r}")
        if not is_int(self.seed, 0):
            raise ValueError(f"expected --seed as a whole number >= 0, got {self.seed!r}")


def actor_identity(spec: Any) -> dict[str, Any]:
    """The actor spec as one mapping, the same for the forms of one actor
    (``openai:m@URL`` and ``{"name": "openai", "model": "m", "base_url": URL}``);
    ``ValueError`` naming the accepted forms for anything else."""
    if isinstance(spec, str) and spec.startswith("openai:"):
        from vicogym.clients import parse_spec

        return {"name": "openai", **parse_spec(spec)}
    if isinstance(spec, str) and spec.startswith("transformers:"):
        return {"name": "transformers", "model_dir": spec.split(":", 1)[1]}
    if isinstance(spec, str) and spec.strip():
        return {"name": spec}
    if isinstance(spec, Mapping) and isinstance(spec.get("name"), str):
        return json.loads(json.dumps(dict(spec), sort_keys=True))
    raise ValueError(f"expected --actor as simulated, openai:MODEL@URL, transformers:DIR or a JSON object with a "
                     f"name, got {spec!r}")


def question_family(row: Mapping[str, Any]) -> str:
    """The row's question family: its label's ``family``, else its ``template`` (a chart
    program's own), else its ``answer_type``, else the label rule."""
    try:
        label = json.loads(row.get("label") or "null")
    except (TypeError, ValueError, RecursionError):
        label = None
    if isinstance(label, dict):
        program = label.get("program") if isinstance(label.get("program"), dict) else {}
        for value in (label.get("family"), label.get("template"), program.get("template"), label.get("answer_type")):
            if isinstance(value, str) and value:
                return value
    return str(row.get("label_rule") or "unknown")


def difficulty(pass_rate: Any, zone: tuple[float, float]) -> str:
    """``hard``, ``sweet`` or ``easy``: the run actor's pass rate below, within or above
    the sweet zone ``[low, high]`` (``unknown`` for a row without one)."""
    if isinstance(pass_rate, bool) or not isinstance(pass_rate, (int, float)) or not math.isfinite(pass_rate):
        return "unknown"
    low, high = zone
    return "hard" if pass_rate < low else "easy" if pass_rate > high else "sweet"


def group_stats(records: Iterable[Mapping[str, Any]], k: int) -> dict[str, Any]:
    """Rows, answers, accuracy (mean score of the answers) and, for ``k > 1``, pass@k (the
    share of rows with an answer that scores 1)."""
    records = list(records)
    scores = [s for r in records for s in r["scores"]]
    stats: dict[str, Any] = {"rows": len(records), "answers": len(scores),
                             "accuracy": float(np.mean(scores)) if scores else 0.0}
    if k > 1:
        stats[f"pass@{k}"] = float(np.mean([max(r["scores"]) >= 1.0 for r in records])) if records else 0.0
    return stats


def summarize(records: Iterable[Mapping[str, Any]], k: int) -> dict[str, Any]:
    """The accuracy of all rows and per environment, question family and difficulty."""
    records = list(records)
    out: dict[str, Any] = {"all": group_stats(records, k)}
    for key, name in (("env_id", "by_env"), ("family", "by_family"), ("difficulty", "by_difficulty")):
        groups: dict[str, list[Mapping[str, Any]]] = {}
        for record in records:
            groups.setdefault(str(record[key]), []).append(record)
        order = sorted(groups, key=lambda g: (DIFFICULTIES.index(g) if g in DIFFICULTIES else 9, g)) \
            if key == "difficulty" else sorted(groups)
        out[name] = {group: group_stats(groups[group], k) for group in order}
    return out


def summary_table(summary: Mapping[str, Any]) -> Any:
    """The summary as a rich table: all rows, then each environment, family and difficulty."""
    from rich.markup import escape
    from rich.table import Table

    k = summary["k"]
    columns = ["", "rows", "accuracy"] + ([f"pass@{k}"] if k > 1 else [])
    low, high = summary["difficulty"]["sweet_zone"]
    def named(spec: str, stand_in: bool) -> str:
        return f"{spec} (a stand-in, not a model)" if stand_in else spec

    difficulty = summary["difficulty"]
    table = Table(*columns, title=escape(f"{named(summary['actor_spec'], summary.get('actor_stand_in', False))} "
                                         f"on {summary['run']}"),
                  caption=escape(f"difficulty: the row's pass rate under the run's actor "
                                 f"({named(difficulty['actor'], difficulty.get('actor_stand_in', False))}, "
                                 f"k={difficulty['k']}): hard < {low}, "
                                 f"sweet {low}-{high}, easy > {high}"))

    def add(label: str, stats: Mapping[str, Any], end: bool = False) -> None:
        cells = [escape(label), str(stats["rows"]), f"{stats['accuracy']:.3f}"]
        table.add_row(*cells, *([f"{stats[f'pass@{k}']:.3f}"] if k > 1 else []), end_section=end)

    add("all", summary["all"], end=True)
    for name, prefix in (("by_env", "env"), ("by_family", "family"), ("by_difficulty", "difficulty")):
        groups = list(summary[name].items())
        for i, (group, stats) in enumerate(groups):
            add(f"{prefix}: {group}", stats, end=i == len(groups) - 1)
    return table


# -- the evaluation ------------------------------------------------------------------------------
def rows_path(out: Path) -> Path:
    """Where the per-row results of the summary at ``out`` go."""
    return out.with_suffix(ROWS_SUFFIX) if out.suffix == ".json" else out.with_name(out.name + ROWS_SUFFIX)


def evaluate(config: EvalConfig, progress: bool = False) -> dict[str, Any]:
    """Evaluate ``config.actor`` on every row of the run (see the module): the summary, also
    written to the JSON file. A row's result is appended as soon as it is scored; on
    Ctrl-C the summary of the rows scored so far is written and ``KeyboardInterrupt``
    raised. :class:`~vicogym.errors.RunError` for a folder that is no generation run or an
    output path that holds another evaluation, ``ValueError`` for an actor spec that does
    not parse, :class:`~vicogym.errors.ModelError` for a model that does not answer."""
    from vicogym.policies import make_actor
    from vicogym.runs.shards import is_url, local_run

    identity = actor_identity(config.actor)
    actor, extractor = _actor(make_actor(identity))
    if is_url(config.run) and config.out is None:
        raise RunError(f"{config.run} is a URL: give --out, a local file for the evaluation's summary")
    with local_run(config.run) as folder:
        return _Evaluation(config, folder, identity, actor, extractor).run(progress)


def _actor(actor: Any) -> tuple[Any, str | None]:
    """The actor made to return its whole responses, and the extractor it reads answers
    with (``None``: an actor with no extractor answers with the answers themselves)."""
    fields = {f.name for f in dataclasses.fields(actor)} if dataclasses.is_dataclass(actor) else set()
    if "extractor" not in fields:
        return actor, None
    return dataclasses.replace(actor, extractor="full"), actor.extractor


def _is_model(actor: Any) -> bool:
    """Whether ``actor`` is a model (it sees the image and the question only): stand-ins
    get what the environment knows of the sample."""
    from vicogym.clients import OpenAIActor, TransformersActor

    return isinstance(actor, (OpenAIActor, TransformersActor))


class _Evaluation:
    def __init__(self, config: EvalConfig, folder: Path, identity: dict[str, Any], actor: Any,
                 extractor: str | None):
        from vicogym.runs.verify import read_manifest, run_arm

        self.config, self.folder, self.actor, self.extractor = config, folder, actor, extractor
        self.manifest = read_manifest(folder)
        self.out = Path(config.out) if config.out is not None else folder / EVAL_FILE
        if self.out.is_dir():
            raise RunError(f"--out {self.out} is a folder; name a JSON file, such as {self.out / EVAL_FILE}")
        self.rows_file = rows_path(self.out)
        run_config = self.manifest["config"]
        env_config = self.manifest["env"].get("env_config") or {}
        self.arm = run_arm(folder, self.manifest)
        self.zone = tuple(float(x) for x in self.arm.config.sweet_zone)
        run_actor = env_config.get("actor", run_config["env_kwargs"].get("actor", "simulated"))
        self.identity = {
            "run": {"env_id": self.manifest["env"]["id"], "seed": run_config["seed"],
                    "env_kwargs": run_config["env_kwargs"]},
            "actor": identity, "k": config.k, "seed": config.seed,
            **({"of": config.of} if config.of != "sample" else {}),
        }
        self.difficulty = {"from": "pass_rate", "actor": run_actor if isinstance(run_actor, str) else
                           json.dumps(run_actor, sort_keys=True), "k": int(self.arm.config.k),
                           "actor_stand_in": actor_name(run_actor).stand_in,
                           "sweet_zone": list(self.zone),
                           "bins": {"hard": f"pass rate < {self.zone[0]}",
                                    "sweet": f"{self.zone[0]} <= pass rate <= {self.zone[1]}",
                                    "easy": f"pass rate > {self.zone[1]}"}}
        self.workers = int(getattr(actor, "max_in_flight", 1)) if _is_model(actor) else 1

    # -- the files ---------------------------------------------------------------------------
    def _previous(self) -> dict[str, dict[str, Any]]:
        """The rows an earlier evaluation of the same thing scored, by id (a last line cut
        short by a stop is dropped); :class:`RunError` when the files hold another one."""
        rows_there = self.rows_file.is_file() and self.rows_file.stat().st_size > 0
        if self.out.exists():
            try:
                held = json.loads(self.out.read_text(encoding="utf-8"))
            except (OSError, ValueError, RecursionError) as exc:
                raise RunError(f"{self.out} is not an evaluation's summary ({type(exc).__name__}); give another --out "
                               f"or delete it") from None
            if not isinstance(held, dict) or held.get("kind") != KIND:
                raise RunError(f"{self.out} is not an evaluation's summary; give another --out or delete it")
            if held.get("identity") != self.identity and rows_there:
                theirs = held.get("identity") or {}
                raise RunError(
                    f"{self.out} holds the evaluation of {_said(theirs)}, not of {_said(self.identity)}; give --out "
                    f"PATH for this one (or delete {self.out} and {self.rows_file.name} to start over)")
        elif rows_there:
            raise RunError(f"{self.rows_file} holds row results but {self.out} is missing, so what they evaluate is "
                           f"unknown; delete {self.rows_file.name} or give another --out")
        return self._read_rows() if rows_there and self.out.exists() else {}

    def _read_rows(self) -> dict[str, dict[str, Any]]:
        """The results the rows file holds; what follows its last line end (a line cut short
        when an evaluation stopped) is dropped from the file."""
        data = self.rows_file.read_bytes()
        whole = data[:data.rfind(b"\n") + 1]
        done: dict[str, dict[str, Any]] = {}
        for i, line in enumerate(whole.splitlines()):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except ValueError:
                record = None
            if not _is_result(record):
                raise RunError(f"{self.rows_file} line {i + 1} is no row result; delete the file to score every "
                               "row again")
            done[record["id"]] = record
        if len(whole) < len(data):
            with self.rows_file.open("r+b") as handle:
                handle.truncate(len(whole))
        return done

    def _write_summary(self, records: dict[str, dict[str, Any]], total: int, finished: bool) -> dict[str, Any]:
        summary = {"kind": KIND, "identity": self.identity, "run": str(self.config.run),
                   "actor_spec": _spec_text(self.identity["actor"]), "extractor": self.extractor,
                   "actor_stand_in": actor_name(self.identity["actor"]).stand_in,
                   "k": self.config.k, "rows_file": self.rows_file.name, "finished": finished,
                   "rows_scored": len(records), "rows_total": total, "difficulty": self.difficulty,
                   **summarize(records.values(), self.config.k)}
        text = json.dumps(summary, indent=1, sort_keys=True)
        tmp = self.out.with_name(self.out.name + ".tmp")
        try:
            self.out.parent.mkdir(parents=True, exist_ok=True)
            tmp.write_text(text + "\n", encoding="utf-8")
            os.replace(tmp, self.out)
        except OSError as exc:
            raise RunError(f"cannot write {self.out} ({exc.strerror or exc}); give an --out you can write to") \
                from None
        summary["out"] = str(self.out)
        return summary

    # -- asking and scoring ------------------------------------------------------------------
    def _score_row(self, row: Mapping[str, Any]) -> dict[str, Any]:
        from vicogym.clients import extract_answer

        image, answer, context = self._shown(row)
        digest = int.from_bytes(hashlib.sha256(str(row["id"]).encode("utf-8")).digest()[:8], "big")
        rng = np.random.default_rng([self.config.seed, digest])
        responses = [str(r) for r in self.actor.answer(image, row["question"], self.config.k, rng=rng,
                                                       context=context)]
        if len(responses) != self.config.k:
            raise ModelError(f"the actor gave {len(responses)} answers for k={self.config.k} on row {row['id']}")
        extracted = responses if self.extractor is None else [extract_answer(r, self.extractor) for r in responses]
        scores = [float(self.arm.score(a, answer)) for a in extracted]
        pass_rate = row.get("pass_rate_before" if self.config.of == "seed" else "pass_rate")
        return {"id": row["id"], "env_id": row["env_id"], "family": question_family(row),
                "difficulty": difficulty(pass_rate, self.zone), "pass_rate": pass_rate,
                "question": row["question"], "answer": answer, "responses": responses,
                "extracted": extracted, "scores": scores, "score": float(np.mean(scores))}

    def _shown(self, row: Mapping[str, Any]) -> tuple[np.ndarray, str, dict[str, Any]]:
        """The image the actor is shown, the answer it is scored against and what a stand-in
        is told (the answer, the visual difficulty: the structure decoded and rendered again;
        a model is told nothing). For ``of="seed"`` the row's seed structure, rendered and
        relabelled by the arm as the run's export and report do."""
        from vicogym.arm import payload_dict
        from vicogym.core import Sample
        from vicogym.images import decode_png, row_png

        label = json.loads(row["label"])
        if self.config.of == "seed":
            structure = self.arm.decode(row["seed_structure"], payload_dict(row.get("seed_payloads")))
            render = self.arm.render_seeded(structure)
            image, answer = render.image, self.arm.relabel(structure, label)
        else:
            image, answer = decode_png(row_png(row)), row["answer"]
            if _is_model(self.actor):
                return image, answer, {}
            structure = self.arm.decode(row["structure"], payload_dict(row.get("payloads")))
            render = self.arm.render_seeded(structure)
        if _is_model(self.actor):
            return image, answer, {}
        sample = Sample(structure, row["question"], answer, label, image=image)
        return image, answer, dict(self.arm.actor_context(sample, render))

    def run(self, progress: bool) -> dict[str, Any]:
        from tqdm import tqdm

        from vicogym.runs.verify import iter_rows

        try:
            done = self._previous()
            ids = [row["id"] for row in iter_rows(self.folder, columns=["id"])]
            records = {i: done[i] for i in ids if i in done}
            self._write_summary(records, len(ids), finished=False)
            todo = (row for row in iter_rows(self.folder) if row["id"] not in records)
            bar = tqdm(total=len(ids), initial=len(records), desc="eval", unit="row", disable=not progress)
            try:
                self._ask_all(todo, records, bar)
            except BaseException:
                self._write_summary(records, len(ids), finished=False)
                raise
            finally:
                bar.close()
            return self._write_summary(records, len(ids), finished=True)
        finally:
            self.arm.close()

    def _ask_all(self, rows: Iterator[dict[str, Any]], records: dict[str, dict[str, Any]], bar: Any) -> None:
        """Ask and score ``rows``, ``workers`` at a time (none waits in a queue, so a stop
        drops at most the rows in flight), each result appended to the rows file as it comes;
        the first failure stops the rest."""
        try:
            self.rows_file.parent.mkdir(parents=True, exist_ok=True)
            opened = self.rows_file.open("a", encoding="utf-8")
        except OSError as exc:
            raise RunError(f"cannot write {self.rows_file} ({exc.strerror or exc}); give an --out you can write "
                           "to") from None
        pool = ThreadPoolExecutor(max_workers=self.workers, thread_name_prefix="vicogym-eval")
        pending: set[Future] = set()
        try:
            with opened as handle:

                def collect() -> None:
                    nonlocal pending
                    finished, pending = wait(pending, return_when=FIRST_COMPLETED)
                    for future in finished:
                        record = future.result()
                        handle.write(json.dumps(record, sort_keys=True, ensure_ascii=False) + "\n")
                        handle.flush()
                        records[record["id"]] = record
                        bar.update(1)

                for row in rows:
                    pending.add(pool.submit(self._score_row, row))
                    while len(pending) >= self.workers:
                        collect()
                while pending:
                    collect()
        finally:
            for future in pending:
                future.cancel()
            pool.shutdown(wait=False, cancel_futures=True)


def _is_result(record: Any) -> bool:
    """Whether ``record`` is a row's result as :meth:`_Evaluation._score_row` writes it."""
    return (isinstance(record, dict) and all(isinstance(record.get(key), str) for key in
                                             ("id", "env_id", "family", "difficulty"))
            and isinstance(record.get("scores"), list) and len(record["scores"]) > 0
            and all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in record["scores"]))


def _spec_text(identity: Mapping[str, Any]) -> str:
    if identity.get("name") == "openai" and set(identity) == {"name", "model", "base_url"}:
        return f"openai:{identity['model']}@{identity['base_url']}"
    if set(identity) == {"name"}:
        return str(identity["name"])
    return json.dumps(dict(identity), sort_keys=True)


def _said(identity: Mapping[str, Any]) -> str:
    with contextlib.suppress(AttributeError, KeyError, TypeError):
        run = identity["run"]
        return (f"{_spec_text(identity['actor'])} (k={identity['k']}, seed={identity['seed']}) on {run['env_id']} "
                f"seed {run['seed']}")
    return "something else"


__all__ = ["DIFFICULTIES", "EVAL_FILE", "OF", "EvalConfig", "actor_identity", "difficulty", "evaluate",
           "question_family", "rows_path", "summarize", "summary_table"]
