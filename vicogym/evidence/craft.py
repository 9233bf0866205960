"""``vicogym craft``: evolving a skill w = (θ, φ, ψ) for a frozen executor (ViewCraft's
loop), and the experiment around it.

**Splits.** The task specs are drawn into development and test items, each item a task
with its source medium (a form page, a deck, a scene, a sequence: the SHA-256 of its
units). Whole sources go to one split only (a source already in a split is never drawn
into the other), and the items are frozen in ``splits.json``; the tasks themselves are
kept under ``items/`` (their raster images under ``files/``) so that every later
evaluation plays exactly them.

**Evaluation.** A skill is played on a split's items ``repeats`` times; repetition ``r``
of an item uses episode seed ``episode_seed(item seed, r)`` for every skill, so a
candidate and its incumbent meet the same executor randomness (paired). Each item's
score and evidence support (the share of its evidence shown legibly, exact from the
views' geometry) are averaged over its repetitions. Evaluations are cached under
``evals/`` by executor and skill, so a resumed search pays for none twice.

**The search** (one per mode, in ``DIR/<mode>/``): ``rounds`` rounds of up to
``submissions`` submissions each. A submission asks the optimizer for one proposal in
the move (the kind of edit: one field, or ``joint``) UCB picks
(:func:`vicogym.evidence.optimizers.ucb_pick`) among the moves the mode allows this
round; then

1. *the replay filter*: a proposal that edits a visual field (``protocol``, ``select``,
   ``present``) is replayed on the incumbent's development traces (the same actions
   under the candidate's interface); when every sent view's pixels stay the same it is
   rejected before any evaluation (text-only edits bypass the check);
2. *the gate*: candidate and incumbent on the same development items; with ΔR the mean
   paired change in task score and ΔC the change in evidence support, the candidate is
   accepted when ΔR >= 0 and ΔC >= 0. A tie (ΔR = ΔC = 0) is accepted only when the
   candidate costs no more: no more pixels per episode and no longer text than the
   incumbent; otherwise it is rolled back, as is a candidate whose episodes fail to run
   (``exec``);
3. *interface projection*: a rejected joint candidate that changed visual fields and
   lost score (ΔR < 0) but not support (ΔC >= 0) has its (φ, ψ) retested with the
   incumbent's θ, when the round has a submission left: that takes a submission and a
   paired evaluation of its own.

Modes: ``text`` (θ only), ``interface`` (φ, ψ only), ``joint`` (both, and joint
co-edits), ``alternating`` (θ in even rounds, φ, ψ in odd ones), ``staged`` (φ, ψ for
the first half of the rounds, then θ).

**The ledger** (``<mode>/ledger.json``, written whole after every candidate): every
candidate with its round, slot, move, changed fields, diff, ΔR, ΔC, reason and whether
it was accepted (projections name the candidate they project); each round's accepted
skill is saved as ``<mode>/round-R/`` and the last as ``<mode>/skill/``. A search killed
at any point (even ``kill -9``) and started again with the same command continues from
the ledger and writes the same ledger and skill bytes (with the simulated executor and
the ``guided`` or ``random`` optimizer; a model's replies are what they are). An older
ledger, whose candidates name their move ``arm``, is read as ``move`` and continued.

**The test evaluation** (``test.json``, its ``variants``): Direct, the initial skill, each
mode's terminal skill, and the terminal crossing of the joint skill: (θ₁, φ₀, ψ₀) and (θ₀, φ₁, ψ₁).
``vicogym craft report DIR`` prints the table and writes the plots.
"""

from __future__ import annotations

import difflib
import gzip
import hashlib
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from vicogym.core import canonical_json
from vicogym.errors import RunError
from vicogym.evidence.episodes import pixels_sha256, play
from vicogym.evidence.optimizers import INTERFACE_MOVES, TEXT_MOVES, Proposal, make_optimizer, ucb_pick
from vicogym.evidence.runs import ENV_ID, episode_seed
from vicogym.evidence.skills import BUILTIN, FIELDS, TEXT_FIELDS, VISUAL_FIELDS, Skill, load_skill
from vicogym.runs.rounds import check_identity, write_bytes_atomic, write_json_atomic
from vicogym.runs.shards import FILES_DIR, RunFolder, existing_folder
from vicogym.validation import MAX_SEED, is_int

MODES = ("text", "interface", "joint", "alternating", "staged")
MAIN_MODES = ("text", "interface", "joint")
#: the package's task families a craft run uses when given none: the base install's whose
#: start is measured to hide the answer (multichart sends every chart whole and legible:
#: no gain from reading evidence can be shown there)
DEFAULT_TASKS = ("forms", "slides")
CRAFT_FILE = "craft.json"
SPLITS_FILE = "splits.json"
TEST_FILE = "test.json"
TRANSFER_FILE = "transfer.json"
#: how far apart two means must be to count as different (the gate's ties)
TIE = 1e-12


@dataclass(frozen=True)
class CraftConfig:
    """The settings of one craft run (its identity: a run folder holds one)."""

    tasks: Sequence[str] = DEFAULT_TASKS
    executor: str = "simulated"
    optimizer: str = "guided"
    modes: Sequence[str] = MAIN_MODES
    rounds: int = 4
    submissions: int = 4
    dev: int = 6
    test: int = 8
    repeats: int = 2
    seed: int = 0
    start: str = "initial"
    env_settings: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        tasks = [self.tasks] if isinstance(self.tasks, str) else list(self.tasks)
        if not tasks or not all(isinstance(t, str) and t for t in tasks):
            raise ValueError(f"expected tasks as task family names or data specs, got {self.tasks!r}")
        object.__setattr__(self, "tasks", tuple(tasks))
        modes = [self.modes] if isinstance(self.modes, str) else list(self.modes)
        bad = [m for m in modes if m not in MODES]
        if not modes or bad:
            raise ValueError(f"expected modes among {', '.join(MODES)}, got {bad[0] if bad else modes!r}")
        object.__setattr__(self, "modes", tuple(dict.fromkeys(modes)))
        for name, low, high in (("rounds", 1, 64), ("submissions", 1, 64), ("dev", 1, 10_000), ("test", 1, 10_000),
                                ("repeats", 1, 100), ("seed", 0, MAX_SEED)):
            if not is_int(getattr(self, name), low, high):
                raise ValueError(f"expected --{name} as a whole number in [{low}, {high}], got {getattr(self, name)!r}")
        if not isinstance(self.env_settings, Mapping):
            raise ValueError(f"expected the environment settings as a mapping, got {self.env_settings!r}")
        if not isinstance(self.executor, str) or self.executor.split(",")[0].split(":")[0] not in ("simulated", "ocr",
                                                                                                  "openai"):
            raise ValueError(f"expected --executor as simulated[:POLICY][,name=value...], ocr[:POLICY][,name=value...] "
                             f"or openai:MODEL@URL, got {self.executor!r} (Direct is one of the variants a craft run "
                             "tests, not an executor)")
        from vicogym.evidence.executors import make_executor

        make_executor(self.executor)  # a spec that cannot make an executor is refused here, not mid-run
        try:
            load_skill(self.start)
        except RunError as exc:
            raise ValueError(f"--start {self.start}: {exc}".replace("or leave --skill out", "or use --start initial")
                             ) from None
        owned = sorted(set(self.env_settings) & {"tasks", "executor", "interface"})
        if owned:
            raise ValueError(f"--set {owned[0]} is the craft run's own (tasks are the TASKS argument, the executor "
                             "--executor, the interface the skill's)")

    def identity(self) -> dict[str, Any]:
        return {"env_id": ENV_ID, "tasks": list(self.tasks), "executor": self.executor, "optimizer": self.optimizer,
                "rounds": self.rounds, "submissions": self.submissions, "dev": self.dev, "test": self.test,
                "repeats": self.repeats, "seed": self.seed, "start": self.start,
                "start_skill": load_skill(self.start).digest(), "env_settings": dict(self.env_settings)}


def _digest(value: Any, n: int = 16) -> str:
    return hashlib.sha256(canonical_json(value).encode("utf-8")).hexdigest()[:n]


def source_of(task: Any) -> str:
    """The source medium of a task: the SHA-256 of its units (its pages, slides, frames)."""
    return _digest([u.to_dict() for u in task.units])


def allowed_moves(mode: str, round_index: int, rounds: int) -> tuple[str, ...]:
    """The moves ``mode`` allows in round ``round_index`` of ``rounds``."""
    if mode == "text":
        return TEXT_MOVES
    if mode == "interface":
        return INTERFACE_MOVES
    if mode == "joint":
        return TEXT_MOVES + INTERFACE_MOVES + ("joint",)
    if mode == "alternating":
        return TEXT_MOVES if round_index % 2 == 0 else INTERFACE_MOVES
    if mode == "staged":
        return INTERFACE_MOVES if round_index < max(1, rounds // 2) else TEXT_MOVES
    raise ValueError(f"unknown mode {mode!r} (modes: {', '.join(MODES)})")


def skill_diff(old: Skill, new: Skill) -> str:
    """A unified diff of the skill files that differ."""
    out = []
    a, b = old.files(), new.files()
    for name in a:
        if a[name] != b[name]:
            out.extend(difflib.unified_diff(a[name].decode().splitlines(), b[name].decode().splitlines(),
                                            f"a/{name}", f"b/{name}", lineterm=""))
    return "\n".join(out)


class Craft:
    """One craft run folder (see the module doc)."""

    def __init__(self, out: str | Path, config: CraftConfig, progress: Callable[[str], None] | None = None):
        self.out, self.config, self.progress = Path(out), config, progress or (lambda text: None)
        self.envs: dict[str, Any] = {}
        self.tasks: dict[str, tuple[dict[str, Any], dict[str, bytes]]] = {}
        self.results: dict[Path, dict[str, Any]] = {}  # evaluations read or made in this process
        self._items: list[dict[str, Any]] | None = None

    # -- the folder ----------------------------------------------------------------------
    def open(self) -> None:
        if self.out.exists() and not self.out.is_dir():
            raise RunError(f"--out {self.out} is an existing file; name a folder")
        if self.out.is_dir() and any(self.out.iterdir()) and not (self.out / CRAFT_FILE).is_file():
            raise RunError(f"{self.out} is not empty and holds no craft run ({CRAFT_FILE}); use a new or empty --out")
        self.folder = RunFolder(self.out)
        self.folder.lock()
        path = self.out / CRAFT_FILE
        identity = self.config.identity()
        if path.is_file():
            stored = json.loads(path.read_text(encoding="utf-8"))
            check_identity(stored.get("identity"), identity, f"{self.out} holds a craft run with other settings "
                           "(differing: {changed}); use a new --out, or the same settings to resume it")
            modes = list(dict.fromkeys(stored.get("modes", []) + list(self.config.modes)))
        else:
            modes = list(self.config.modes)
        write_json_atomic(path, {"identity": identity, "modes": modes})
        self.modes = modes  # every mode the folder ever ran: its test evaluation keeps them all

    def close(self) -> None:
        for env in self.envs.values():
            env.close()
        self.envs.clear()
        if getattr(self, "folder", None) is not None:
            self.folder.unlock()

    def env(self, spec: str, skill: Skill) -> Any:
        import gymnasium as gym

        import vicogym  # noqa: F401  (registers the environments)

        settings = {**dict(self.config.env_settings), **skill.env_settings()}
        key = canonical_json([spec, settings])
        if key not in self.envs:
            if len(self.envs) > 16:
                self.envs.pop(next(iter(self.envs))).close()
            self.envs[key] = gym.make(ENV_ID, tasks=spec, executor=self.config.executor, **settings).unwrapped
        return self.envs[key]

    # -- splits --------------------------------------------------------------------------
    def splits(self) -> list[dict[str, Any]]:
        """The frozen items (drawn on the first call, read afterwards)."""
        if self._items is not None:
            return self._items
        path = self.out / SPLITS_FILE
        if path.is_file():
            self._items = json.loads(path.read_text(encoding="utf-8"))["items"]
            return self._items
        items: list[dict[str, Any]] = []
        split_of: dict[str, str] = {}
        base = Skill()
        for k, spec in enumerate(self.config.tasks):
            env = self.env(spec, base)
            size = env.source.size()
            wanted = {"dev": self.config.dev, "test": self.config.test}
            got = {"dev": 0, "test": 0}
            order = (np.random.default_rng([self.config.seed, k]).permutation(size).tolist() if size is not None
                     else None)
            tries, limit = 0, 20 * (self.config.dev + self.config.test) + 64
            while (got["dev"] < wanted["dev"] or got["test"] < wanted["test"]) and tries < limit:
                if order is not None and tries >= len(order):
                    break
                tries += 1
                if order is not None:
                    reset = {"options": {"index": int(order[tries - 1])}}
                else:
                    reset = {"seed": episode_seed(self.config.seed, k * 1_000_003 + tries)}
                env.reset(**reset)
                task = env.task
                source = source_of(task)
                split = split_of.get(source) or ("dev" if got["dev"] < wanted["dev"] else "test")
                if got[split] >= wanted[split]:
                    continue  # its source is in a split that is full: not drawn into the other
                split_of[source] = split
                item = {"id": f"{spec.replace(':', '_').replace('/', '_')}-{len(items):05d}", "spec": spec,
                        "family": task.family, "source": source, "split": split, "reset": reset,
                        "task_id": task.id}
                self._store_task(item, env)
                items.append(item)
                got[split] += 1
            if got["dev"] < wanted["dev"] or got["test"] < wanted["test"]:
                raise RunError(f"{spec}: only {got['dev']} development and {got['test']} test items from distinct "
                               f"sources could be drawn ({wanted['dev']} and {wanted['test']} asked); ask for fewer")
        write_json_atomic(path, {"items": items, "sources": {s: v for s, v in sorted(split_of.items())}})
        self._items = items
        return items

    def item(self, item_id: str) -> dict[str, Any]:
        return next(i for i in self.splits() if i["id"] == item_id)

    def _store_task(self, item: Mapping[str, Any], env: Any) -> None:
        """The task under ``items/``, its raster payloads as the folder's shared files."""
        self.folder.write_side_files({f"{sha}.png": data for sha, data in env.payloads.items()})
        folder = self.out / "items"
        folder.mkdir(parents=True, exist_ok=True)
        write_json_atomic(folder / f"{item['id']}.json", {"task": env.task.to_dict(), "payloads": sorted(env.payloads)})

    def task_of(self, item: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, bytes]]:
        if item["id"] not in self.tasks:
            data = json.loads((self.out / "items" / f"{item['id']}.json").read_text(encoding="utf-8"))
            payloads = {sha: (self.out / FILES_DIR / f"{sha}.png").read_bytes() for sha in data["payloads"]}
            self.tasks[item["id"]] = (data["task"], payloads)
        return self.tasks[item["id"]]

    # -- evaluation ----------------------------------------------------------------------
    def evaluate(self, skill: Skill, split: str, executor: str | None = None) -> dict[str, Any]:
        """``skill`` on the items of ``split``: per item its mean score, support and pixels
        sent, and (development items) the traces; cached by executor and skill."""
        executor = executor or self.config.executor
        items = [i for i in self.splits() if i["split"] == split]
        folder = self.out / "evals" / _digest(executor, 12)
        path = folder / f"{skill.digest()[:24]}-{split}.json.gz"
        if path in self.results:
            return self.results[path]
        if path.is_file():
            self.results[path] = json.loads(gzip.decompress(path.read_bytes()))
            return self.results[path]
        from vicogym.evidence.executors import make_executor

        runner = make_executor(executor)
        rows, traces = [], []
        for item in items:
            task, payloads = self.task_of(item)
            env = self.env(item["spec"], skill)
            for r in range(self.config.repeats):
                seed = episode_seed(int(_digest([item["id"], item["source"]], 15), 16), r)
                try:
                    trace = play(env, runner, seed=seed, skill=skill, options={"task": task, "payloads": payloads})
                except (ValueError, RuntimeError) as exc:
                    raise RunError(f"the skill {skill.name!r} fails to run on {item['id']}: {exc}") from None
                rows.append({"item": item["id"], "family": item["family"], "source": item["source"], "repeat": r,
                             "score": trace["score"], "support": trace["support"]["share"],
                             "pixels": trace["pixels_sent"],
                             "tokens": sum(trace["tokens"].values()) if trace["tokens"] else None,
                             "failure": trace["failure"] if trace["score"] < 1.0 else None,
                             "steps": len(trace["steps"])})
                if split == "dev":
                    traces.append({k: v for k, v in trace.items() if k not in ("timing", "config", "payloads")}
                                  | {"item": item["id"]})
        result = {"executor": executor, "skill": skill.digest(), "split": split, "rows": rows, "traces": traces}
        folder.mkdir(parents=True, exist_ok=True)
        write_bytes_atomic(path, gzip.compress(canonical_json(result).encode("utf-8"), mtime=0))
        self.results[path] = result
        return result

    # -- the replay filter ---------------------------------------------------------------
    def replay_changes(self, candidate: Skill, traces: Sequence[Mapping[str, Any]]) -> bool:
        """Whether replaying the development traces' actions under ``candidate`` changes
        any sent view's pixels (start views included)."""
        for trace in traces:
            item = self.item(trace["item"])
            task, payloads = self.task_of(item)
            env = self.env(item["spec"], candidate)
            env.reset(seed=trace["seed"], options={"task": task, "payloads": payloads})
            now = [pixels_sha256(env.view_pixels(v.id)) for v in env.views]
            if now != [v["sha256"] for v in trace["start_views"]]:
                return True
            for step in trace["steps"]:
                if env._done:
                    return True  # the candidate's budget ended the episode before the trace did
                before = {v.id for v in env.views}
                env.step(step["reply"])
                new = [pixels_sha256(env.view_pixels(v.id)) for v in env.views if v.id not in before]
                if new != [v["sha256"] for v in step["views"]]:
                    return True
        return False

    # -- the search ----------------------------------------------------------------------
    def search(self, mode: str) -> Skill:
        """The search of ``mode`` (resumed from its ledger); its terminal skill."""
        c = self.config
        folder = self.out / mode
        folder.mkdir(parents=True, exist_ok=True)
        ledger_path = folder / "ledger.json"
        identity = {**c.identity(), "mode": mode}
        if ledger_path.is_file():
            ledger = upgraded_ledger(json.loads(ledger_path.read_text(encoding="utf-8")))
            check_identity(ledger.get("identity"), identity, f"{ledger_path} was written with other settings "
                           "(differing: {changed}); use a new --out")
        else:
            ledger = {"identity": identity, "candidates": [], "rounds": []}
        start = load_skill(c.start)
        incumbent = start
        for entry in ledger["candidates"]:
            if entry["accepted"]:
                incumbent = Skill.from_dict(entry["skill"])
        rejected = {e["skill"]["sha256"] for e in ledger["candidates"] if not e["accepted"]}
        families = sorted({i["family"] for i in self.splits()})
        optimizer = make_optimizer(c.optimizer, families, draw=self.last_view)

        def save() -> None:
            write_json_atomic(ledger_path, ledger)

        if "start" not in ledger:
            first = self.evaluate(start, "dev")
            ledger["start"] = {"skill": start.digest(), "dev_score": _mean(first, "score"),
                               "dev_support": _mean(first, "support")}
            save()
        for r in range(c.rounds):
            if r < len(ledger["rounds"]):
                continue
            moves = allowed_moves(mode, r, c.rounds)
            while True:
                slots = [e for e in ledger["candidates"] if e["round"] == r]
                used = len(slots)
                if used >= c.submissions:
                    break
                base = self.evaluate(incumbent, "dev")
                rng = np.random.default_rng([c.seed, MODES.index(mode), r, used])
                history = [e for e in ledger["candidates"] if e.get("projection_of") is None]
                if hasattr(optimizer, "rejected_texts"):  # a model is shown what was rolled back
                    optimizer.rejected_texts = [e["diff"] for e in ledger["candidates"] if not e["accepted"]
                                                and e["diff"]]
                proposal: Proposal | None = None
                for move in ucb_pick(moves, history):
                    proposal = optimizer.propose(incumbent, move, base["traces"], rng, rejected)
                    if proposal is not None:
                        break
                if proposal is None:
                    self.progress(f"{mode} round {r}: no proposal left")
                    break
                entry = self._judge(proposal, incumbent, base, r, used, mode, None)
                ledger["candidates"].append(entry)
                if not entry["accepted"]:
                    rejected.add(entry["skill"]["sha256"])
                save()
                self.progress(f"{mode} round {r} slot {used}: {entry['move']} {entry['reason']}")
                if entry["accepted"]:
                    incumbent = proposal.skill
                elif entry.get("project") and used + 1 < c.submissions:
                    projected = incumbent.with_fields(**{f: proposal.skill.get(f) for f in FIELDS
                                                         if f not in TEXT_FIELDS})
                    sub = self._judge(Proposal(projected, "projection", f"(φ, ψ) of slot {used} with the "
                                                                        "incumbent θ"),
                                      incumbent, base, r, used + 1, mode, used)
                    ledger["candidates"].append(sub)
                    if sub["accepted"]:
                        incumbent = projected
                    else:
                        rejected.add(sub["skill"]["sha256"])
                    save()
                    self.progress(f"{mode} round {r} slot {used + 1}: projection {sub['reason']}")
            dev = self.evaluate(incumbent, "dev")
            ledger["rounds"].append({"round": r, "skill": incumbent.digest(), "dev_score": _mean(dev, "score"),
                                     "dev_support": _mean(dev, "support")})
            save()
        skills = round_skills(ledger, start)
        for r, skill in enumerate(skills):  # every round's folder, also those a killed run did not write
            skill.save(folder / f"round-{r}")
        terminal = skills[-1] if skills else start
        terminal.save(folder / "skill")
        return terminal

    def _judge(self, proposal: Proposal, incumbent: Skill, base: Mapping[str, Any], r: int, slot: int, mode: str,
               projection_of: int | None) -> dict[str, Any]:
        candidate = replace(proposal.skill, name=f"{mode}-r{r}-s{slot}")
        fields = incumbent.changed(candidate)
        entry: dict[str, Any] = {"round": r, "slot": slot, "mode": mode, "move": proposal.move, "fields": fields,
                                 "rationale": proposal.rationale, "diff": skill_diff(incumbent, candidate),
                                 "skill": candidate.to_dict(), "incumbent": incumbent.digest(),
                                 "projection_of": projection_of, "dR": None, "dC": None, "accepted": False,
                                 "project": False}
        if proposal.error:
            return {**entry, "reason": f"invalid: {proposal.error}"}
        visual = [f for f in fields if f in VISUAL_FIELDS]
        if visual and projection_of is None:
            try:
                changed = self.replay_changes(candidate, base["traces"])
            except (ValueError, RuntimeError) as exc:
                return {**entry, "reason": f"exec: the candidate's interface fails to run ({exc})"}
            if not changed:
                return {**entry, "reason": "replay: no sent view changed"}
        try:
            result = self.evaluate(candidate, "dev")
        except (RunError, ValueError) as exc:
            return {**entry, "reason": f"exec: {exc}"}
        d_r, d_c = paired_delta(base, result, "score"), paired_delta(base, result, "support")
        d_px = paired_delta(base, result, "pixels")
        d_text = len(candidate.text) - len(incumbent.text)
        entry.update({"dR": round(d_r, 12), "dC": round(d_c, 12), "dPixels": round(d_px, 6), "dText": d_text,
                      "dev_score": _mean(result, "score"), "dev_support": _mean(result, "support")})
        verdict, reason = gate(d_r, d_c, d_px, d_text)
        entry.update({"accepted": verdict, "reason": reason})
        joint = any(f in TEXT_FIELDS for f in fields) and bool(visual)
        entry["project"] = bool(not verdict and joint and d_r < -TIE and d_c >= -TIE and projection_of is None)
        return entry

    def last_view(self, trace: Mapping[str, Any]) -> np.ndarray | None:
        """The last view a development trace sent, drawn again (what an optimizer model
        is shown)."""
        views = [v for s in trace["steps"] for v in s["views"]] or list(trace["start_views"])
        if "item" not in trace or not views:
            return None
        item = self.item(trace["item"])
        task, payloads = self.task_of(item)
        env = self.env(item["spec"], Skill())
        return env.draw_view(task, views[-1], payloads)

    # -- the experiment ------------------------------------------------------------------
    def run(self) -> dict[str, Any]:
        self.splits()
        terminals = {}
        for mode in getattr(self, "modes", self.config.modes):
            terminals[mode] = self.search(mode)
        return self.test(terminals)

    def variants(self, terminals: Mapping[str, Skill]) -> dict[str, Skill]:
        """The skills the test evaluation compares, by name: Direct, the initial skill,
        each mode's terminal skill and the joint skill's terminal crossing."""
        start = load_skill(self.config.start)
        variants = {"direct": BUILTIN["direct"], "initial": start}
        variants.update({mode: skill for mode, skill in terminals.items()})
        if "joint" in terminals:
            joint = terminals["joint"]
            variants["theta1_phi0"] = start.with_fields(**{f: joint.get(f) for f in TEXT_FIELDS})
            variants["theta0_phi1"] = joint.with_fields(**{f: start.get(f) for f in TEXT_FIELDS})
        return variants

    def test(self, terminals: Mapping[str, Skill], executor: str | None = None) -> dict[str, Any]:
        """The test evaluation of every variant (written to ``test.json`` for the run's own
        executor)."""
        executor = executor or self.config.executor
        out: dict[str, Any] = {"executor": executor, "variants": {}}
        for name, skill in self.variants(terminals).items():
            self.progress(f"test: {name}")
            result = self.evaluate(skill, "test", executor)
            out["variants"][name] = {"skill": skill.to_dict(), "rows": result["rows"]}
        if executor == self.config.executor:
            write_json_atomic(self.out / TEST_FILE, out)
        return out


def upgraded_ledger(ledger: dict[str, Any]) -> dict[str, Any]:
    """``ledger`` with the candidates' keys of today: an older ledger's candidates name
    their move ``arm``; they are read as ``move`` (same value, same place)."""
    ledger["candidates"] = [{("move" if k == "arm" else k): v for k, v in entry.items()} if "move" not in entry
                            else entry for entry in ledger.get("candidates", [])]
    return ledger


def round_skills(ledger: Mapping[str, Any], start: Skill) -> list[Skill]:
    """The accepted skill after each recorded round of a ledger."""
    skill, out = start, []
    for record in ledger["rounds"]:
        for entry in ledger["candidates"]:
            if entry["round"] == record["round"] and entry["accepted"]:
                skill = Skill.from_dict(entry["skill"])
        if skill.digest() != record["skill"]:
            raise RunError(f"the ledger's round {record['round']} names skill {record['skill'][:12]}, its accepted "
                           f"candidates give {skill.digest()[:12]}: the ledger was edited; use a new --out")
        out.append(skill)
    return out


def _mean(result: Mapping[str, Any], key: str) -> float:
    means = _item_means(result, key)
    return round(float(np.mean(list(means.values()))), 12) if means else 0.0


def _item_means(result: Mapping[str, Any], key: str) -> dict[str, float]:
    by: dict[str, list[float]] = {}
    for row in result["rows"]:
        by.setdefault(row["item"], []).append(float(row[key]))
    return {k: float(np.mean(v)) for k, v in sorted(by.items())}


def paired_delta(base: Mapping[str, Any], result: Mapping[str, Any], key: str) -> float:
    """The mean over items of the per-item mean change in ``key`` (paired: the same
    items, the same episode seeds)."""
    a, b = _item_means(base, key), _item_means(result, key)
    if set(a) != set(b):
        raise RunError("the candidate and the incumbent were not evaluated on the same items")
    return float(np.mean([b[k] - a[k] for k in a])) if a else 0.0


def gate(d_r: float, d_c: float, d_pixels: float, d_text: int = 0) -> tuple[bool, str]:
    """The paired gate's verdict and its reason (see the module doc): ``d_pixels`` and
    ``d_text`` (pixels per episode, characters of the skill's text) break ties."""
    if d_r < -TIE:
        return False, f"rollback: score fell ({d_r:+.4f})"
    if d_c < -TIE:
        return False, f"rollback: support fell ({d_c:+.4f})"
    if abs(d_r) <= TIE and abs(d_c) <= TIE:
        if d_pixels > TIE:
            return False, f"rollback: a tie that sends more pixels ({d_pixels:+.0f} per episode)"
        if d_text > 0:
            return False, f"rollback: a tie that adds text ({d_text:+d} characters)"
        return True, "accept: a tie that costs no more (pixels, text)"
    return True, f"accept: dR {d_r:+.4f}, dC {d_c:+.4f}"


def craft(out: str | Path, config: CraftConfig, progress: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Run (or resume) the craft experiment into ``out``; the test evaluation."""
    run = Craft(out, config, progress)
    try:
        run.open()
        return run.run()
    finally:
        run.close()


def read_run(out: str | Path) -> dict[str, Any]:
    """What a craft run folder holds: its identity, splits, ledgers and test evaluation."""
    path = existing_folder(out, f"name a folder a `vicogym craft` --out wrote ({CRAFT_FILE})")
    if not (path / CRAFT_FILE).is_file():
        raise RunError(f"{path} holds no craft run ({CRAFT_FILE}); run `vicogym craft ... --out {path}` first")
    meta = json.loads((path / CRAFT_FILE).read_text(encoding="utf-8"))
    ledgers = {}
    for mode in meta.get("modes", []):
        ledger = path / mode / "ledger.json"
        if ledger.is_file():
            ledgers[mode] = upgraded_ledger(json.loads(ledger.read_text(encoding="utf-8")))
    test = json.loads((path / TEST_FILE).read_text(encoding="utf-8")) if (path / TEST_FILE).is_file() else None
    if test is not None and "variants" not in test and "arms" in test:  # an older run's name
        test = {("variants" if k == "arms" else k): v for k, v in test.items()}
    splits = json.loads((path / SPLITS_FILE).read_text(encoding="utf-8")) if (path / SPLITS_FILE).is_file() else None
    return {"identity": meta["identity"], "modes": meta.get("modes", []), "ledgers": ledgers, "test": test,
            "splits": splits}


def transfer(runs: Sequence[str | Path], progress: Callable[[str], None] | None = None) -> dict[str, Any]:
    """The transfer matrix (the paper's Table 5): the joint terminal skill of each run
    (evolved with its executor) evaluated on every run's executor, on the test items,
    with each executor's Direct baseline. The runs must share their tasks and splits
    (the same settings but the executor)."""
    if len(runs) < 2:
        raise RunError("a transfer matrix needs at least two craft runs (each evolved with its own executor)")
    if len({Path(r).resolve() for r in runs}) < len(runs):
        raise RunError("a run folder is named twice; name each run once")
    metas = [read_run(r) for r in runs]
    keys = {k for m in metas for k in m["identity"]} - {"executor"}
    for m, r in zip(metas[1:], runs[1:]):
        differing = sorted(k for k in keys if m["identity"].get(k) != metas[0]["identity"].get(k))
        if differing:
            raise RunError(f"{r} differs from {runs[0]} in {', '.join(differing)}: the runs of a transfer matrix "
                           "differ in their executor only")
        if m["splits"] != metas[0]["splits"]:
            raise RunError(f"{r} holds other splits than {runs[0]}")
    executors = [m["identity"]["executor"] for m in metas]
    if len(set(executors)) < len(executors):
        raise RunError(f"two runs share an executor ({executors}); a transfer matrix needs one run per executor")
    skills = {}
    for m, r in zip(metas, runs):
        if not (Path(r) / "joint" / "skill").is_dir():
            raise RunError(f"{r} has no joint skill; run its craft with the joint mode first")
        skills[m["identity"]["executor"]] = load_skill(Path(r) / "joint" / "skill")
    first = Craft(runs[0], CraftConfig(**_config_of(metas[0]["identity"])), progress)
    try:
        first.open()
        cells: dict[str, dict[str, Any]] = {}
        direct: dict[str, Any] = {}
        for target in skills:
            rows = first.evaluate(BUILTIN["direct"], "test", target)["rows"]
            direct[target] = {"score": _mean({"rows": rows}, "score"), "rows": rows}
            for source, skill in skills.items():
                rows = first.evaluate(skill, "test", target)["rows"]
                cells.setdefault(source, {})[target] = {"score": _mean({"rows": rows}, "score"), "rows": rows}
    finally:
        first.close()
    matrix = {"executors": list(skills), "runs": [str(r) for r in runs], "cells": cells, "direct": direct}
    write_json_atomic(Path(runs[0]) / TRANSFER_FILE, matrix)
    return matrix


def _config_of(identity: Mapping[str, Any]) -> dict[str, Any]:
    names = ("tasks", "executor", "optimizer", "rounds", "submissions", "dev", "test", "repeats", "seed", "start",
             "env_settings")
    return {k: identity[k] for k in names}
