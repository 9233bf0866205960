"""Co-evolution rounds (``vicogym evolve``): rewriter episodes against the current actor,
round after round, with the trainers in between.

Round ``r`` generates ``n`` samples into ``OUT/round-NNN/`` (a resumable generation run,
seed ``seed + r``) with the current actor and rewriter, then exports the actor's RL data
(the shards themselves, listed in ``verl_files.txt``) and the rewriter's training data
(LlamaFactory, ``rewriter/``), records the round's statistics, and runs the user's
training commands. A command gets the round's paths as placeholders (``{round}``,
``{round_dir}``, ``{verl_files}``, ``{rewriter_data}``, ``{dataset_info}``) and may write
the next round's actor or rewriter spec (``"openai:MODEL@URL"``, a JSON actor object, a
checkpoint's server) into ``{next_actor_file}`` / ``{next_rewriter_file}``; the next
round uses it. ``OUT/evolve.json`` records every stage as it finishes, so a killed
``evolve`` resumes at the round, stage and shard where it stopped.

Two training backends are built in (:data:`BACKENDS`): ``train_actor="trl-grpo"`` runs
``python -m vicogym.trainers.grpo_actor`` (TRL's GRPO on the round's rows) and
``train_rewriter="trl-rwr"`` ``python -m vicogym.trainers.rwr_rewriter`` (reward-weighted
regression on the round's edits) from the round's ``transformers:DIR`` model (``{actor}``,
``{rewriter}``) to ``ROUND/actor-model`` and ``ROUND/rewriter-model``, the next round's
models; flags after the name go to the module (``"trl-grpo --max-steps 4"``).

Each round's statistics make the round table (the VICO paper's Tables 17 and 18, Fig. 3b):
the sweet-zone hit rate, pass rates before and after editing and editing intensity of the
run's actor, the rewriter's edit instruction length and the actor's answer length
(:func:`round_stats`); the pass rates before and after editing of a strong and a weak
actor asked the round's samples and their seeds (stage ``probed``,
:func:`actor_pass_rates`; by default simulated stand-ins); and the accuracy of the round's
actor after its training on a held-out set (stage ``evaluated``, :func:`heldout_accuracy`):
a generation run made once under ``OUT/heldout/`` with a seed of its own, or a run the
user names. Both score with ``vicogym eval``'s machinery, whose row files let a killed
stage resume without asking a row twice.
"""

from __future__ import annotations

import hashlib
import json
import re
import shlex
import shutil
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from vicogym.errors import RunError
from vicogym.rewards import sweet_share
from vicogym.runs.rounds import Ledger
from vicogym.validation import is_int

STATE_FILE = "evolve.json"
#: the stand-ins that measure what editing does to a strong and a weak actor (as in
#: benchmarks/calibration.py): simulated actors, not models
STRONG_ACTOR = {"name": "simulated", "skill": 2.2}
WEAK_ACTOR = {"name": "simulated", "skill": 1.0}
#: the generated held-out set's seed is ``seed + HELDOUT_SEED_OFFSET`` unless given: beyond
#: every round's seed ``seed + r`` (at most 10000 rounds)
HELDOUT_SEED_OFFSET = 10_000
PLACEHOLDERS = ("round", "round_dir", "verl_files", "rewriter_data", "dataset_info", "next_actor_file",
                "next_rewriter_file", "actor", "rewriter", "python")
#: the training backends known by name: what each trains, and the command its name stands for
#: (``{actor}``/``{rewriter}``: the round's model; ``{python}``: this Python)
BACKENDS = {
    "trl-grpo": ("actor", "{python} -m vicogym.trainers.grpo_actor --data {verl_files} --model {actor} "
                          "--out {round_dir}/actor-model --next {next_actor_file} --seed {round}"),
    "trl-rwr": ("rewriter", "{python} -m vicogym.trainers.rwr_rewriter --data {rewriter_data} --model {rewriter} "
                            "--out {round_dir}/rewriter-model --next {next_rewriter_file} --seed {round}"),
}


def training_command(what: str, value: str | None) -> str | None:
    """The shell command of ``train_actor`` (``what="actor"``) or ``train_rewriter``: a
    backend's name (:data:`BACKENDS`, with flags for its module after it) expands to its
    command; anything else is a command already."""
    if value is None:
        return None
    name, _, flags = value.strip().partition(" ")
    if name not in BACKENDS:
        return value
    role, command = BACKENDS[name]
    if role != what:
        raise ValueError(f"{name} trains the {role}; give it as train_{role} (--train-{role} {name})")
    return f"{command} {flags.strip()}" if flags.strip() else command


def trainable_spec(spec: Any, what: str, backend: str) -> str:
    """The ``transformers:DIR`` spec a built-in backend trains (a JSON object of a
    ``transformers`` model gives its ``model_dir``), or a ``ValueError`` that says what to
    pass instead."""
    if isinstance(spec, Mapping) and spec.get("name") == "transformers" and isinstance(spec.get("model_dir"), str):
        spec = f"transformers:{spec['model_dir']}"
    text = spec.strip() if isinstance(spec, str) else None
    if text is None or not text.startswith("transformers:"):
        shown = json.dumps(spec) if isinstance(spec, Mapping) else repr(spec)
        raise ValueError(f"train_{what} {backend} trains a local transformers model, and the {what} {shown} is not "
                         f"one; pass --{what} transformers:DIR (a model folder saved with save_pretrained)")
    folder = Path(text.split(":", 1)[1])
    if not (folder / "config.json").is_file():
        raise ValueError(f"train_{what} {backend} trains the {what} {text}, and {folder} holds no config.json; pass "
                         f"--{what} transformers:DIR of a model folder saved with save_pretrained")
    return text


@dataclass(frozen=True)
class EvolveConfig:
    env_id: str = "vicogym/Chart-v0"
    rounds: int = 2
    n: int = 64
    out: str = "vicogym-evolve"
    seed: int = 0
    workers: int = 1
    episodes_per_shard: int = 16
    env_kwargs: Mapping[str, Any] = field(default_factory=dict)
    actor: Any = "simulated"
    rewriter: str = "search"
    train_actor: str | None = None
    train_rewriter: str | None = None
    #: how rounds run, not what they write: backend, ray_address, ray_cpus, ray_gpus, threads
    runtime: Mapping[str, Any] = field(default_factory=dict)
    #: the actors whose pass rates before and after editing each round measures (None: not measured)
    strong_actor: Any = field(default_factory=lambda: dict(STRONG_ACTOR))
    weak_actor: Any = field(default_factory=lambda: dict(WEAK_ACTOR))
    #: the held-out set each round's trained actor is scored on: "generated" (made once under
    #: OUT/heldout/), a generation run folder, or None
    heldout: str | None = "generated"
    heldout_n: int | None = None  # samples of the generated held-out set (None: n)
    heldout_seed: int | None = None  # its seed (None: seed + HELDOUT_SEED_OFFSET)
    heldout_k: int = 1  # answers per held-out row

    def __post_init__(self) -> None:
        from vicogym.runs.generate import RUNTIME
        from vicogym.runs.shards import is_url

        if is_url(self.out):
            raise ValueError(f"evolve --out must be a local folder (its training commands read the files), got "
                             f"{self.out!r}")
        unknown = sorted(set(self.runtime) - set(RUNTIME))
        if unknown:
            raise ValueError(f"unknown runtime setting {unknown[0]!r}; known: {', '.join(RUNTIME)}")
        if not is_int(self.rounds, 1, 10_000):
            raise ValueError(f"expected rounds to be an integer in [1, 10000], got {self.rounds!r}")
        for name in ("train_actor", "train_rewriter"):
            value = getattr(self, name)
            if value is not None and (not isinstance(value, str) or not value.strip()):
                raise ValueError(f"expected {name} as a shell command, got {value!r}")
        if "actor" in self.env_kwargs:
            raise ValueError("give the first round's actor as actor, not in env_kwargs (each round sets its own)")
        for name in ("train_actor", "train_rewriter"):
            command = training_command(name[len("train_"):], getattr(self, name))
            if command != getattr(self, name):  # a built-in backend trains the first round's transformers:DIR
                trainable_spec(getattr(self, name[len("train_"):]), name[len("train_"):],
                               getattr(self, name).split()[0])
            if command:
                unknown = sorted(set(re.findall(r"\{(\w+)\}", command)) - set(PLACEHOLDERS))
                if unknown:
                    raise ValueError(f"{name} names {{{unknown[0]}}}; known placeholders: "
                                     f"{', '.join('{' + k + '}' for k in PLACEHOLDERS)}")
        from vicogym.policies import make_actor

        make_actor(self.actor)  # a bad actor fails here, before anything is written
        for name in ("strong_actor", "weak_actor"):
            if getattr(self, name) is not None:
                try:
                    make_actor(getattr(self, name))
                except (TypeError, ValueError) as exc:
                    raise ValueError(f"{name}: {exc}") from None
        if self.heldout is not None and self.heldout != "generated" and \
                not (Path(str(self.heldout)) / "manifest.json").is_file():
            raise ValueError(f"expected heldout as generated, none or a generation run folder (with a manifest.json), "
                             f"got {self.heldout!r}")
        if self.heldout_n is not None and not is_int(self.heldout_n, 1, 1_000_000):
            raise ValueError(f"expected heldout_n as a whole number >= 1, got {self.heldout_n!r}")
        if self.heldout_seed is not None and not is_int(self.heldout_seed, 0):
            raise ValueError(f"expected heldout_seed as a whole number >= 0, got {self.heldout_seed!r}")
        if not is_int(self.heldout_k, 1, 4096):
            raise ValueError(f"expected heldout_k as a whole number >= 1, got {self.heldout_k!r}")
        self.generate_config(0, self.actor, self.rewriter)  # checks env id, n, settings, rewriter

    def generate_config(self, r: int, actor: Any, rewriter: str) -> Any:
        from vicogym.runs.generate import GenerateConfig

        return GenerateConfig(env_id=self.env_id, n=self.n, out=str(Path(self.out) / f"round-{r:03d}"),
                              seed=self.seed + r, workers=self.workers, keep="all",
                              episodes_per_shard=self.episodes_per_shard,
                              env_kwargs={**dict(self.env_kwargs), "actor": actor}, rewriter=rewriter,
                              **dict(self.runtime))

    def heldout_config(self) -> Any:
        """The generated held-out set's run: the first round's actor and rewriter, a seed of
        its own."""
        config = self.generate_config(0, self.actor, self.rewriter)
        seed = self.seed + HELDOUT_SEED_OFFSET if self.heldout_seed is None else self.heldout_seed
        return replace(config, out=str(Path(self.out) / "heldout"), seed=seed, n=self.heldout_n or self.n)

    def heldout_identity(self) -> dict[str, Any] | None:
        """What the held-out set is, as the ledger records it (None: no held-out set)."""
        if self.heldout is None:
            return None
        if self.heldout != "generated":
            return {"run": str(Path(str(self.heldout)).resolve()), "made": "given", "k": self.heldout_k}
        config = self.heldout_config()
        return {"run": str(Path(config.out).resolve()), "made": "generated", "n": config.n, "seed": config.seed,
                "k": self.heldout_k}

    def identity(self) -> dict[str, Any]:
        """What fixes the rounds' data (the training commands and the actors and held-out set
        that measure the rounds may change on resume; the ledger refuses another held-out set)."""
        d = asdict(self)
        for name in ("out", "workers", "train_actor", "train_rewriter", "runtime", "strong_actor", "weak_actor",
                     "heldout", "heldout_n", "heldout_seed", "heldout_k"):
            d.pop(name)
        d["env_kwargs"] = dict(self.env_kwargs)
        return d


def round_stats(run: Path, zone: tuple[float, float]) -> dict[str, Any]:
    """A round's statistics: sweet-zone hit rate of the kept samples, mean pass rate before
    and after editing, editing intensity |p_before - p|, rejections by code, the rewriter's
    mean edit instruction length (the edit as its trace records it, canonical JSON: in
    characters and whitespace-separated tokens; each turn once) and the mean length of the
    run's actor's answers as the rows keep them (the extracted answers, not whole responses:
    in characters and whitespace-separated words)."""
    from vicogym.runs.verify import iter_rows, read_manifest

    rows = list(iter_rows(run, columns=["pass_rate", "pass_rate_before", "edit_trace", "provenance",
                                        "actor_answers"]))
    after = np.array([r["pass_rate"] for r in rows])
    before = np.array([r["pass_rate_before"] for r in rows])
    edits = {(json.loads(r["provenance"]).get("index"), t["turn"]): json.dumps(t["edit"], sort_keys=True)
             for r in rows for t in json.loads(r["edit_trace"])}  # each turn once, however many rows hold it
    edits = list(edits.values())
    answers = [str(a) for r in rows for a in (r.get("actor_answers") or [])]
    manifest = read_manifest(run)
    return {"samples": len(rows), "sweet_zone_hit_rate": sweet_share(after, zone),
            "pass_rate_before": float(before.mean()), "pass_rate_after": float(after.mean()),
            "editing_intensity": float(np.abs(before - after).mean()),
            "rejections": manifest.get("rejections", {}),
            "rewriter_instruction_chars": _mean_len(edits, len),
            "rewriter_instruction_tokens": _mean_len(edits, lambda e: len(e.split())),
            "actor_answer_chars": _mean_len(answers, len),
            "actor_answer_words": _mean_len(answers, lambda a: len(a.split()))}


def _mean_len(texts: list[str], length: Any) -> float:
    return float(np.mean([length(t) for t in texts])) if texts else 0.0


def _eval_rows(summary: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The row results beside an evaluation's summary."""
    from vicogym.runs.evaluate import rows_path

    text = rows_path(Path(summary["out"])).read_text(encoding="utf-8")
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def actor_pass_rates(run: Path, actors: Mapping[str, Any], out: Path, zone: tuple[float, float],
                     progress: bool = False) -> dict[str, dict[str, Any]]:
    """Each of ``actors`` (``{"strong": spec, "weak": spec}``) asked the run's samples as
    they were before editing (each row's seed, rendered again) and after (the row's image),
    ``k`` answers each, as the run's actor was (the paper's Table 17; the answers before and
    after are drawn with seeds of their own, as the run's probes are): mean pass rate
    before and after, editing intensity |p_before - p| and sweet-zone hit rate after, and
    who answered (a stand-in is named so). Scored by ``vicogym eval`` (``of="seed"`` and
    ``"sample"``) into ``out/NAME-seed.json`` and ``out/NAME-sample.json``, which a
    killed call resumes."""
    from vicogym.policies import actor_name
    from vicogym.runs.evaluate import EvalConfig, evaluate
    from vicogym.runs.verify import read_manifest

    manifest = read_manifest(run)
    k = int((manifest["env"].get("env_config") or {}).get("k", 8))
    table: dict[str, dict[str, Any]] = {}
    for name, spec in actors.items():
        scores = {}
        for of, seed in (("seed", 1), ("sample", 0)):  # draws of their own before and after, as the run's probes
            summary = evaluate(EvalConfig(str(run), spec, k=k, out=str(out / f"{name}-{of}.json"), of=of, seed=seed),
                               progress=progress)
            scores[of] = {record["id"]: record["score"] for record in _eval_rows(summary)}
        ids = sorted(scores["sample"])
        before = np.array([scores["seed"][i] for i in ids])
        after = np.array([scores["sample"][i] for i in ids])
        who = actor_name(spec)
        table[name] = {"actor": who.short(), "stand_in": who.stand_in, "spec": spec, "samples": len(ids), "k": k,
                       "pass_rate_before": float(before.mean()) if ids else 0.0,
                       "pass_rate_after": float(after.mean()) if ids else 0.0,
                       "editing_intensity": float(np.abs(before - after).mean()) if ids else 0.0,
                       "sweet_zone_hit_rate": sweet_share(after, zone)}
    return table


def heldout_accuracy(run: str | Path, actor: Any, k: int, out: Path, progress: bool = False) -> dict[str, Any]:
    """``actor``'s accuracy on the held-out run (``vicogym eval``: mean score of its ``k``
    answers per row) and the mean length of its whole responses there (characters and
    whitespace-separated words; a stand-in's responses are its answers), evaluated into
    ``out`` (resumable)."""
    from vicogym.policies import actor_name
    from vicogym.runs.evaluate import EvalConfig, actor_identity, evaluate

    summary = evaluate(EvalConfig(str(run), actor, k=k, out=str(out)), progress=progress)
    responses = [str(r) for record in _eval_rows(summary) for r in record["responses"]]
    who = actor_name(actor)
    return {"actor": who.short(), "stand_in": who.stand_in, "identity": actor_identity(actor),
            "accuracy": summary["all"]["accuracy"], "rows": summary["all"]["rows"], "k": k, "eval": str(out),
            "response_chars": _mean_len(responses, len),
            "response_words": _mean_len(responses, lambda a: len(a.split()))}


def _eval_name(actor: Any) -> str:
    """A file name of the actor's own, so that another actor's evaluation never meets it."""
    from vicogym.runs.evaluate import actor_identity

    digest = hashlib.sha256(json.dumps(actor_identity(actor), sort_keys=True).encode("utf-8")).hexdigest()[:12]
    return f"eval-{digest}.json"


def _heldout_run(config: EvolveConfig, ledger: Ledger, progress: bool) -> Path | None:
    """The held-out run (generated once under OUT/heldout/, or the user's), recorded in the
    ledger with the first actor's accuracy on it before any training (``base``, into
    ``OUT/heldout-base/``); another held-out set than the ledger's is refused."""
    from vicogym.runs.generate import generate

    identity = config.heldout_identity()
    if identity is None:
        return None
    held = ledger.state.get("heldout")
    if held is not None and any(held.get(key) != value for key, value in identity.items()):
        raise RunError(f"{config.out} scores its rounds on another held-out set ({json.dumps(held, sort_keys=True)}); "
                       "give the same heldout settings, or a new --out")
    if identity["made"] == "generated":
        manifest = generate(config.heldout_config(), progress=progress)
        if not manifest["complete"]:
            raise RunError(f"the held-out set made {manifest['counts']['samples']} of {identity['n']} samples within "
                           "its episode budget; raise its budget, or name a run with heldout")
    if held is None:
        ledger.state["heldout"] = held = identity
        ledger.save()
    from vicogym.runs.evaluate import actor_identity

    if (held.get("base") or {}).get("identity") != actor_identity(config.actor):  # the first actor, untrained
        held["base"] = heldout_accuracy(identity["run"], config.actor, config.heldout_k,
                                        Path(config.out) / "heldout-base" / _eval_name(config.actor), progress=progress)
        ledger.save()
    return Path(identity["run"])


def _pair(stats: Mapping[str, Any] | None) -> str:
    if not stats:
        return "-"
    return f"{stats['pass_rate_before']:.2f}→{stats['pass_rate_after']:.2f}"


def round_table(state: Mapping[str, Any]) -> Any:
    """The rounds of an evolve state as a rich table, a round a row: sweet-zone hit rate,
    pass rate before -> after editing of the run's actor, of the strong and of the weak
    actor, editing intensity, the rewriter's edit instruction length, the actor's answer
    length, and the held-out accuracy of the round's actor after training (a ``base`` row
    first: the first actor's, before any); its caption names who answered (stand-ins said
    so)."""
    from rich import box
    from rich.markup import escape
    from rich.table import Table

    table = Table("round", "hit", "p", "strong", "weak", "|Δp|", "edit", "answer", "held-out", box=box.SIMPLE_HEAD,
                  padding=(0, 1), collapse_padding=True, pad_edge=False, title="round table")
    from vicogym.policies import actor_name

    named: dict[str, set[str]] = {"p": set(), "strong": set(), "weak": set(), "held-out": set()}
    base = (state.get("heldout") or {}).get("base")
    if base and any((e.get("stats") or {}).get("heldout") for e in state.get("rounds", [])):
        named["held-out"].add(base["actor"])
        table.add_row("base", *["-"] * 7, f"{base['accuracy']:.3f}", end_section=True)
    for entry in state.get("rounds", []):
        stats = entry.get("stats")
        if not stats:
            continue
        named["p"].add(actor_name(entry.get("actor")).short())
        heldout = stats.get("heldout")
        for key, column in (("strong", "strong"), ("weak", "weak"), ("heldout", "held-out")):
            if stats.get(key):
                named[column].add(stats[key]["actor"])
        chars = stats.get("rewriter_instruction_chars", stats.get("rewriter_response_chars", 0.0))
        table.add_row(str(entry["round"]), f"{stats['sweet_zone_hit_rate']:.0%}", _pair(stats),
                      _pair(stats.get("strong")), _pair(stats.get("weak")), f"{stats['editing_intensity']:.2f}",
                      f"{chars:.0f}", f"{stats.get('actor_answer_chars', 0.0):.1f}",
                      f"{heldout['accuracy']:.3f}" if heldout else "-")
    who = "; ".join(f"{column}: {', '.join(sorted(names))}" for column, names in named.items() if names)
    table.caption = escape(
        "hit: sweet-zone hit rate; p, strong, weak: pass rate before→after editing of the run's actor, the strong "
        "and the weak actor; |Δp|: editing intensity |p_before - p| of the run's actor; edit: the rewriter's edit "
        "instruction (characters); answer: the run's actor's answers as the rows keep them (characters); held-out: "
        "accuracy of the round's actor after training (base: the first actor before any)" +
        (f" ({who})" if who else ""))
    return table


def _run_command(template: str, paths: dict[str, str], what: str, r: int) -> None:
    def fill(match: re.Match) -> str:
        if match.group(1) not in paths:
            raise RunError(f"the {what} training command names {{{match.group(1)}}}; known placeholders: "
                           f"{', '.join('{' + k + '}' for k in paths)}")
        return shlex.quote(paths[match.group(1)])

    command = re.sub(r"\{(\w+)\}", fill, template)
    result = subprocess.run(command, shell=True)
    if result.returncode != 0:
        raise RunError(f"the {what} training command of round {r} exited with {result.returncode}: {command}; fix it "
                       f"and run the same evolve command again to resume there")


def _spec_text(spec: Any) -> str:
    """A spec as a placeholder gives it: a string as it is, anything else as JSON."""
    return spec if isinstance(spec, str) else json.dumps(spec, sort_keys=True)


def _next_spec(path: Path) -> Any:
    if not path.is_file() or not path.read_text(encoding="utf-8").strip():
        return None
    text = path.read_text(encoding="utf-8").strip()
    try:
        return json.loads(text)
    except ValueError:
        return text  # a plain spec such as openai:MODEL@URL


def evolve(config: EvolveConfig, progress: bool = True, on_round: Any = print,
           on_note: Any = lambda r, note: print(f"round {r}: {note}")) -> dict[str, Any]:
    """Run (or resume) the rounds of ``config``; the state with every round's statistics
    and ``rounds_worked_on``, the rounds this call did something for (``on_round(r, stats)``
    is called as each round's statistics come, ``on_note(r, text)`` with what a round could
    not do)."""
    from vicogym.registry import make_config
    from vicogym.runs.generate import generate
    from vicogym.runs.llamafactory import export_llamafactory
    from vicogym.runs.shards import run_entries

    out = Path(config.out)
    out.mkdir(parents=True, exist_ok=True)
    if not (out / STATE_FILE).is_file() and any(out.iterdir()):
        raise RunError(f"{out} is not empty and holds no {STATE_FILE}; use a new or empty --out")
    ledger = Ledger(out / STATE_FILE, config.identity(), f"{out} holds an evolve run with other settings (differing: "
                    "{changed}); use a new --out, or the same settings (more --rounds may be added) to resume it",
                    growable=("rounds",))
    zone = make_config(config.env_id, dict(config.env_kwargs)).sweet_zone
    ledger.save()  # a kill while the held-out set is made leaves a folder this call resumes
    heldout = _heldout_run(config, ledger, progress)
    probes = {name: spec for name, spec in (("strong", config.strong_actor), ("weak", config.weak_actor))
              if spec is not None}
    actor, rewriter = config.actor, config.rewriter
    before = [list(e["stages"]) for e in ledger.rounds]
    for r in range(config.rounds):
        entry = ledger.entry(r, actor=actor, rewriter=rewriter)
        actor, rewriter = entry["actor"], entry["rewriter"]
        folder = out / f"round-{r:03d}"
        # generation resumes, and a finished round whose shards went missing is made whole again
        manifest = generate(config.generate_config(r, actor, rewriter), progress=progress)
        if not manifest["complete"]:
            raise RunError(f"round {r} made {manifest['counts']['samples']} of {config.n} samples within its "
                           "episode budget; raise n's budget or check the rejections in its manifest")
        shards = {s["name"]: s["sha256"] for s in run_entries(folder, manifest)}
        if entry.get("shards") != shards:  # new shards: export them again; the training stages done stand
            shutil.rmtree(folder / "probes", ignore_errors=True)  # the strong and weak actors ask the new samples
            kept = [s for s in entry["stages"] if s.startswith("trained") or s == "evaluated"]
            ledger.redo(entry, ["generated"] + kept, shards=shards)
        paths = {"round": str(r), "round_dir": str(folder), "verl_files": str(folder / "verl_files.txt"),
                 "rewriter_data": str(folder / "rewriter" / "rewriter.json"),
                 "dataset_info": str(folder / "rewriter" / "dataset_info.json"),
                 "next_actor_file": str(folder / "next_actor"), "next_rewriter_file": str(folder / "next_rewriter"),
                 "actor": _spec_text(actor), "rewriter": _spec_text(rewriter), "python": sys.executable}
        fresh = False
        if not ledger.done(entry, "exported"):
            shards = sorted(str(p.resolve()) for p in folder.glob("part-*.parquet"))
            (folder / "verl_files.txt").write_text("\n".join(shards) + "\n", encoding="utf-8")
            try:
                entry["rewriter_records"] = export_llamafactory(folder, folder / "rewriter")["records"]
            except RunError as exc:  # no edit landed in the zone: nothing for the rewriter this round
                entry["rewriter_records"] = 0
                entry["note"] = str(exc)
                on_note(r, str(exc))
            ledger.mark(entry, "exported", stats=round_stats(folder, zone))
            fresh = True
        if probes and not ledger.done(entry, "probed"):
            table = actor_pass_rates(folder, probes, folder / "probes", zone, progress=progress)
            ledger.mark(entry, "probed", stats={**entry["stats"], **table})
            fresh = True
        if fresh:
            on_round(r, entry["stats"])
        for what, template in (("actor", config.train_actor), ("rewriter", config.train_rewriter)):
            stage = f"trained_{what}"
            if what == "rewriter" and template and not entry.get("rewriter_records"):
                on_note(r, "no rewriter data this round: its training command is skipped")
                continue
            if template and not ledger.done(entry, stage):
                command = training_command(what, template)
                if command != template:  # a built-in backend: this round's model must be one it trains
                    try:
                        model = trainable_spec(actor if what == "actor" else rewriter, what, template.split()[0])
                    except ValueError as exc:
                        raise RunError(f"round {r}: {exc}") from None
                    paths = {**paths, what: model}
                _run_command(command, paths, what, r)
                ledger.mark(entry, stage)
        actor = _next_spec(folder / "next_actor") or actor
        rewriter = _next_spec(folder / "next_rewriter") or rewriter
        if heldout is not None:  # the round's actor after its training, on the held-out set
            from vicogym.runs.evaluate import actor_identity

            held = entry["stats"].get("heldout") or {}
            if not ledger.done(entry, "evaluated") or held.get("identity") != actor_identity(actor):
                scored = heldout_accuracy(heldout, actor, config.heldout_k, folder / "heldout" / _eval_name(actor),
                                          progress=progress)
                ledger.mark(entry, "evaluated", stats={**entry["stats"], "heldout": scored})
                on_note(r, f"held-out accuracy of {scored['actor']}: {scored['accuracy']:.3f} "
                           f"({scored['rows']} rows of {heldout})")
    worked = [r for r, e in enumerate(ledger.rounds[:config.rounds]) if r >= len(before) or e["stages"] != before[r]]
    return ledger.finish(finished_rounds=config.rounds, rounds_worked_on=worked)


__all__ = ["HELDOUT_SEED_OFFSET", "STRONG_ACTOR", "WEAK_ACTOR", "EvolveConfig", "actor_pass_rates", "evolve",
           "heldout_accuracy", "round_stats", "round_table"]
