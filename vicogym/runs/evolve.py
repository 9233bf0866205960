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
"""

from __future__ import annotations

import json
import re
import shlex
import subprocess
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from vicogym.errors import RunError
from vicogym.rewards import sweet_share
from vicogym.runs.rounds import Ledger
from vicogym.validation import is_int

STATE_FILE = "evolve.json"
PLACEHOLDERS = ("round", "round_dir", "verl_files", "rewriter_data", "dataset_info", "next_actor_file",
                "next_rewriter_file")


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
            if getattr(self, name):
                unknown = sorted(set(re.findall(r"\{(\w+)\}", getattr(self, name))) - set(PLACEHOLDERS))
                if unknown:
                    raise ValueError(f"{name} names {{{unknown[0]}}}; known placeholders: "
                                     f"{', '.join('{' + k + '}' for k in PLACEHOLDERS)}")
        from vicogym.policies import make_actor

        make_actor(self.actor)  # a bad actor fails here, before anything is written
        self.generate_config(0, self.actor, self.rewriter)  # checks env id, n, settings, rewriter

    def generate_config(self, r: int, actor: Any, rewriter: str) -> Any:
        from vicogym.runs.generate import GenerateConfig

        return GenerateConfig(env_id=self.env_id, n=self.n, out=str(Path(self.out) / f"round-{r:03d}"),
                              seed=self.seed + r, workers=self.workers, keep="all",
                              episodes_per_shard=self.episodes_per_shard,
                              env_kwargs={**dict(self.env_kwargs), "actor": actor}, rewriter=rewriter,
                              **dict(self.runtime))

    def identity(self) -> dict[str, Any]:
        """What fixes the rounds' data (the training commands may change on resume)."""
        d = asdict(self)
        for name in ("out", "workers", "train_actor", "train_rewriter", "runtime"):
            d.pop(name)
        d["env_kwargs"] = dict(self.env_kwargs)
        return d


def round_stats(run: Path, zone: tuple[float, float]) -> dict[str, Any]:
    """A round's statistics: sweet-zone hit rate of the kept samples, mean pass rate before
    and after editing, editing intensity |p_before - p|, rejections by code, and the
    rewriter's mean response length (characters of its edit)."""
    from vicogym.runs.verify import iter_rows, read_manifest

    rows = list(iter_rows(run, columns=["pass_rate", "pass_rate_before", "edit_trace", "provenance"]))
    after = np.array([r["pass_rate"] for r in rows])
    before = np.array([r["pass_rate_before"] for r in rows])
    edits = {(json.loads(r["provenance"]).get("index"), t["turn"]): json.dumps(t["edit"], sort_keys=True)
             for r in rows for t in json.loads(r["edit_trace"])}  # each turn once, however many rows hold it
    edits = list(edits.values())
    manifest = read_manifest(run)
    return {"samples": len(rows), "sweet_zone_hit_rate": sweet_share(after, zone),
            "pass_rate_before": float(before.mean()), "pass_rate_after": float(after.mean()),
            "editing_intensity": float(np.abs(before - after).mean()),
            "rejections": manifest.get("rejections", {}),
            "rewriter_response_chars": float(np.mean([len(e) for e in edits])) if edits else 0.0}


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
            ledger.redo(entry, ["generated"] + [s for s in entry["stages"] if s.startswith("trained")], shards=shards)
        paths = {"round": str(r), "round_dir": str(folder), "verl_files": str(folder / "verl_files.txt"),
                 "rewriter_data": str(folder / "rewriter" / "rewriter.json"),
                 "dataset_info": str(folder / "rewriter" / "dataset_info.json"),
                 "next_actor_file": str(folder / "next_actor"), "next_rewriter_file": str(folder / "next_rewriter")}
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
            on_round(r, entry["stats"])
        for what, template in (("actor", config.train_actor), ("rewriter", config.train_rewriter)):
            stage = f"trained_{what}"
            if what == "rewriter" and template and not entry.get("rewriter_records"):
                on_note(r, "no rewriter data this round: its training command is skipped")
                continue
            if template and not ledger.done(entry, stage):
                _run_command(template, paths, what, r)
                ledger.mark(entry, stage)
        actor = _next_spec(folder / "next_actor") or actor
        rewriter = _next_spec(folder / "next_rewriter") or rewriter
    worked = [r for r, e in enumerate(ledger.rounds[:config.rounds]) if r >= len(before) or e["stages"] != before[r]]
    return ledger.finish(finished_rounds=config.rounds, rounds_worked_on=worked)


__all__ = ["EvolveConfig", "evolve", "round_stats"]
