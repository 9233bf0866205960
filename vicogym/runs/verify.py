"""Independent verification of a generation run's folder (``vicogym verify``).

Checks the folder against its manifest (every shard present, unchanged and of the
recorded length; no shard the manifest does not list), then every row: a unique id, its
content hash as recorded, trainer columns that agree with the label columns, the label
re-derived and the question checked by the row's own arm (dispatched on ``env_id``), the
structure rendered again and compared pixel for pixel with the stored image (which must
decode), the arm's answerability checks on that render, and the whole episode replayed:
the seed drawn again from the recorded seed (from the run's source, or from ``source``)
and every recorded edit applied again, which must give the stored seed, question, rule,
structure and answer. Shared files (``files/``) must be those the manifest lists, with
their recorded SHA-256; an arm reads them (a natural image's source and mask) only after
that check. Any problem is reported; nothing is trusted because it is stored.

The run's settings fix what a finished run holds, and verify checks the folder against
them: shards are consecutive blocks of ``episodes_per_shard`` episodes, a run short of
``n`` samples used its whole episode budget, every row's id, provenance and shard follow
from the run's seed and its episode index, rows stand in episode order, each pass rate is
the score of the K actor answers the row keeps, and each reward follows from its pass
rate. With the built-in ``random`` rewriter every episode is played again from its seed:
the rewriter proposes the same edits, so the edit trace, the turn kept and which
episodes yield rows are all re-derived, not read. Rows whose episodes cannot be replayed
(the run's source is not on this machine) are a problem unless ``allow_unreplayed``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from vicogym.arm import payload_dict
from vicogym.errors import InvalidEdit, MissingExtra, RunError, UnknownEnvironment
from vicogym.images import decode_png, row_png, same_image
from vicogym.policies import ActorName, actor_name
from vicogym.runs.kinds import Findings, code_note, guarded, read_json, shard_problem
from vicogym.runs.shards import (
    ENTRIES_DIR,
    FILES_DIR,
    MANIFEST_FILE,
    SHARD_GLOB,
    RunFolder,
    existing_folder,
    local_run,
    row_hash,
)
from vicogym.runs.trainer_columns import verl_mismatch


def read_manifest(out: Path) -> dict[str, Any]:
    existing_folder(out, "name the folder a `vicogym generate` --out wrote")
    path = out / MANIFEST_FILE
    if not path.is_file():
        hint = ("the run did not finish: run the same generate command again to resume it"
                if any(out.glob(SHARD_GLOB)) else "it holds no generation run")
        raise RunError(f"{out} has no {MANIFEST_FILE}; {hint}")
    manifest = read_json(path, "regenerate into a new --out")
    problem = manifest_problem(manifest)
    if problem:
        raise RunError(f"{path} is damaged: {problem}; regenerate into a new --out")
    return manifest


def run_actor(manifest: Mapping[str, Any]) -> ActorName:
    """Who gave a run's pass rates: its environment's actor as the manifest records it (a
    stand-in or a model; the default, the simulated actor, where a manifest names none)."""
    def part(data: Any, key: str) -> dict[str, Any]:
        value = data.get(key) if isinstance(data, Mapping) else None
        return value if isinstance(value, dict) else {}

    env_config = part(part(manifest, "env"), "env_config")
    if "actor" in env_config:
        return actor_name(env_config["actor"])
    return actor_name(part(part(manifest, "config"), "env_kwargs").get("actor"))


def manifest_problem(manifest: Any) -> str | None:
    """What makes ``manifest`` no manifest of a generation run, or ``None``."""
    from vicogym.core import short_repr
    from vicogym.validation import is_int

    if not isinstance(manifest, dict):
        return f"expected a JSON object, got {short_repr(manifest)}"
    for key, kind, name in (("config", dict, "an object"), ("counts", dict, "an object"), ("env", dict, "an object")):
        if not isinstance(manifest.get(key), kind):
            return f"{key!r} is {short_repr(manifest.get(key))}, expected {name}"
    config, counts = manifest["config"], manifest["counts"]
    if not isinstance(config.get("env_kwargs"), dict):
        return f"config.env_kwargs is {short_repr(config.get('env_kwargs'))}, expected an object of settings"
    for key in ("seed", "n", "episodes_per_shard"):
        if not is_int(config.get(key), 0):
            return f"config.{key} is {short_repr(config.get(key))}, expected a whole number"
    for key in ("samples", "requested", "episodes"):
        if not is_int(counts.get(key), 0):
            return f"counts.{key} is {short_repr(counts.get(key))}, expected a whole number"
    if not isinstance(manifest["env"].get("id"), str):
        return f"env.id is {short_repr(manifest['env'].get('id'))}, expected an environment id"
    if "shards" in manifest:  # a run from before the manifest's entries were files of their own
        if not isinstance(manifest["shards"], list):
            return f"'shards' is {short_repr(manifest['shards'])}, expected a list"
        for i, entry in enumerate(manifest["shards"]):
            problem = entry_problem(entry)
            if problem:
                return f"shards[{i}] {problem}"
    elif not is_int(counts.get("shards"), 0):
        return f"counts.shards is {short_repr(counts.get('shards'))}, expected a whole number"
    return None


def entry_problem(entry: Any) -> str | None:
    """What makes ``entry`` no shard entry of a manifest, or ``None``."""
    from vicogym.core import short_repr
    from vicogym.validation import is_int

    if not (isinstance(entry, dict) and isinstance(entry.get("name"), str) and is_int(entry.get("rows"), 0)
            and isinstance(entry.get("sha256"), str)):
        return f"is {short_repr(entry)}, expected {{name, rows, sha256, ...}}"
    episodes = entry.get("episodes")
    if episodes is not None and not (isinstance(episodes, list) and len(episodes) == 2
                                     and all(is_int(x, 0) for x in episodes)):
        return f"records episodes {short_repr(episodes)}, expected [first, end]"
    if entry.get("row_hashes") is not None and not isinstance(entry["row_hashes"], dict):
        return f"records row_hashes {short_repr(entry['row_hashes'])}, expected an object of row ids to hashes"
    return None


def _entries(out: Path, manifest: dict[str, Any], findings: Findings) -> Iterator[tuple[str, dict[str, Any] | None]]:
    """``(shard name, entry)`` of the manifest's entries in block order, read one at a time
    (an entry that cannot be read or is malformed comes with ``None``, reported)."""
    if isinstance(manifest.get("shards"), list):
        for entry in manifest["shards"]:
            yield entry["name"], entry
        return
    folder = RunFolder(out)
    for name in folder.entry_names():
        where = f"{ENTRIES_DIR}/{name[:-len('.parquet')]}.json"
        try:
            entry = folder.read_entry(name)
        except RunError as exc:
            findings.add(where, f"cannot be read ({str(exc)[:200]})")
            yield name, None
            continue
        problem = entry_problem(entry)
        if problem is None and entry["name"] != name:
            problem = f"is the entry of {entry['name']}, not of {name}"
        if problem:
            findings.add(where, problem)
            yield name, None
            continue
        yield name, entry


def _read_shard(path: Path, findings: Findings) -> list[dict[str, Any]] | None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        return pq.read_table(path).to_pylist()
    except (pa.ArrowException, OSError) as exc:
        findings.add(path.name, f"cannot be read ({type(exc).__name__}: {str(exc).splitlines()[0]}); "
                   f"delete it and run the generate command again to rewrite it")
        return None


class _Arms:
    """One arm (and, for replays, one environment) per env id, built from the run's
    settings; with ``source``, that folder replaces the run's source."""

    def __init__(self, manifest: dict[str, Any], findings: Findings, source: str | None = None,
                 files: Path | None = None):
        kwargs = dict(manifest.get("config", {}).get("env_kwargs", {}))
        # settings under which the run's episodes were in fact played (a chart run made where
        # Tesseract could not run was made without the reader check, and is replayed so)
        replay = (manifest.get("source") or {}).get("replay_settings")
        kwargs.update(replay if isinstance(replay, dict) else {})
        if source is not None:
            kwargs["source"] = str(source)
        self._kwargs = {manifest.get("env", {}).get("id"): kwargs}
        self._source, self._findings, self._files = source, findings, files
        self._arms: dict[str, Any] = {}
        self._envs: dict[str, Any] = {}
        #: env id -> whether its replays ask the run's own (simulated) actor again
        self.reprobes: dict[str, bool] = {}

    def get(self, env_id: str) -> Any:
        if env_id not in self._arms:
            from vicogym.registry import make_arm

            arm = make_arm(env_id, self._kwargs.get(env_id))
            if self._files is not None:
                arm.attach_run(self._files)
            self._arms[env_id] = arm
        return self._arms[env_id]

    def env(self, env_id: str) -> Any:
        """An environment that draws the run's seeds again, or ``None`` where its source
        cannot be opened here (noted; an error when ``source`` was given)."""
        if env_id not in self._envs:
            import gymnasium as gym

            from vicogym.errors import SourceError
            from vicogym.ocr import ReaderUnavailable

            own = dict(self._kwargs.get(env_id) or {})
            cheaper = self.get(env_id).replay_settings()
            # the simulated actor answers again as in the run when nothing about the replay is cheaper
            self.reprobes[env_id] = own.get("actor", "simulated") == "simulated" and not cheaper
            kwargs = own if self.reprobes[env_id] else dict(own, k=1, actor="simulated", **cheaper)
            try:
                self._envs[env_id] = gym.make(env_id, **kwargs).unwrapped
            except ReaderUnavailable as exc:
                self._findings.notes.append(f"{env_id}: episodes not replayed, they were played with the reader "
                                          f"check, which cannot run here ({exc})")
                self._envs[env_id] = None
            except (SourceError, OSError) as exc:
                if self._source is not None:
                    raise
                self._findings.notes.append(f"{env_id}: episodes not replayed, the run's source cannot be opened here "
                                          f"({exc}); pass --source DIR to replay them")
                self._envs[env_id] = None
        return self._envs[env_id]

    def close(self) -> None:
        for arm in self._arms.values():
            arm.close()
        for env in self._envs.values():
            if env is not None:
                env.close()


def verify(out: str | Path, *, images: bool = True, source: str | Path | None = None,
           allow_unreplayed: bool = False) -> Findings:
    """Check every shard and row of the run in ``out``; a :class:`Findings`. ``images=False``
    skips decoding and re-rendering; ``source`` compares rows with that source folder;
    ``allow_unreplayed`` accepts rows whose episodes cannot be replayed here (a note, not a
    problem). ``out`` may be a filesystem URL (``s3://bucket/prefix``): a local copy is checked."""
    with local_run(out) as folder:
        return _verify(folder, images, source, allow_unreplayed)


def _verify(out: Path, images: bool, source: str | Path | None, allow_unreplayed: bool) -> Findings:
    manifest = read_manifest(out)
    findings = Findings()
    shape = _RunShape(manifest, findings)
    files_ok = _check_side_files(out, manifest, findings)
    arms = _Arms(manifest, findings, None if source is None else str(source), out / FILES_DIR if files_ok else None)
    replay = _Replay(manifest, arms, findings)
    seen: dict[str, str] = {}
    listed: set[str] = set()
    try:
        for block, (name, entry) in enumerate(_entries(out, manifest, findings)):
            listed.add(name)
            shape.check_entry(block, name, entry or {"name": name})
            if entry is None:
                continue
            path = out / name
            if not path.is_file():
                findings.add(name,
                             f"is missing ({entry['rows']} rows lost); run the generate command again to rewrite it")
                continue
            changed = shard_problem(path, entry["sha256"])
            if changed:
                findings.add(name, changed)
            rows = _read_shard(path, findings)
            if rows is None:
                continue
            if len(rows) != entry["rows"]:
                findings.add(name, f"holds {len(rows)} rows, the manifest recorded {entry['rows']}")
            hashes = entry.get("row_hashes") or {}
            for row in rows:
                findings.rows += 1
                recorded = hashes.get(str(row.get("id")))
                if recorded is None:
                    findings.add(str(row.get("id")), f"is not among the rows the manifest records for {name}")
                elif recorded != row_hash(row):
                    findings.add(str(row.get("id")), "content differs from the hash recorded at generation")
                guarded(row, findings, _check_row, row, name, seen, arms, findings, images)
            replay.block(shape.rows_by_episode(block, name, entry, rows), shape.episodes_of(block, entry))
    finally:
        arms.close()
    for path in sorted(out.glob(SHARD_GLOB)):
        if path.name not in listed:
            findings.add(path.name, "is not in the manifest (a shard from elsewhere, or a copy)")
    shape.check_totals(findings.rows, len(listed))
    _note_code(manifest, findings)
    for (name, status), count in sorted(findings.not_run.items()):
        findings.notes.append(f"{count} of {findings.rows} rows record that the {name} check did not run when they "
                              f"were made ({status}); it is not run on them here either")
    if findings.rows == 0:
        findings.add(str(out), "holds no rows")
    if findings.unreplayed:
        message = (f"{findings.unreplayed} of {findings.rows} rows were not replayed (their episodes cannot be played "
                   f"here: see the notes); their seeds and edits are unchecked")
        if allow_unreplayed:
            findings.notes.append(message)
        else:
            findings.add(str(out), f"{message}: make them playable as the notes say (--source DIR for a source "
                         "that is elsewhere), or pass --allow-unreplayed to accept the other checks alone")
    return findings


def _turns(trace: Any) -> list[Any] | None:
    """A trace's turns, edits and answers (pass rates are the actor's: checked from its answers)."""
    if not isinstance(trace, list):
        return None
    return [{k: t.get(k) for k in ("turn", "edit", "answer")} if isinstance(t, dict) else t for t in trace]


def _note_code(manifest: dict[str, Any], findings: Findings) -> None:
    """A note when the run was written by other code than this (its replays may differ for
    that reason alone: the seed generator, the checks, the renderers changed)."""
    recorded = manifest.get("code_sha256")
    if recorded is None:
        findings.notes.append("the run records no code_sha256 (written before runs recorded their code); if its "
                              "replays differ, regenerate it with this vicogym or verify it with the one that wrote it")
    elif code_note(recorded):
        findings.notes.append(code_note(recorded))


#: a generated row's id: the environment, the run's seed, the episode and the turn it was kept at
ROW_ID = re.compile(r"(?P<prefix>(?P<slug>[a-z0-9_.-]+)-(?P<settings>[0-9a-f]{8}))-s(?P<seed>[0-9]+)"
                    r"-e(?P<episode>[0-9]{7})-t(?P<turn>[0-9]+)")


def run_id_prefix(manifest: dict[str, Any]) -> str:
    """The id prefix the run's settings give (see :func:`~vicogym.runs.generate.id_prefix`);
    settings this version cannot read give one no row has."""
    from vicogym.runs.generate import GenerateConfig, id_prefix

    try:
        return id_prefix(GenerateConfig.from_mapping(manifest["config"]).identity())
    except (TypeError, ValueError, KeyError) as exc:
        return f"{manifest['env']['id'].split('/')[-1].lower()}-<settings this version cannot read: {exc}>"


class _RunShape:
    """What the run's settings say its folder holds: consecutive blocks of episodes, every
    row's id, provenance and shard following from the seed and its episode, rows in
    episode order, and as many samples as asked for (or the whole episode budget used)."""

    def __init__(self, manifest: dict[str, Any], findings: Findings):
        from vicogym.runs.generate import episode_seed

        config = manifest["config"]
        self.findings, self.manifest, self.episode_seed = findings, manifest, episode_seed
        self.seed, self.n, self.per_shard = int(config["seed"]), int(config["n"]), int(config["episodes_per_shard"])
        max_episodes = config.get("max_episodes")
        self.budget = int(max_episodes) if isinstance(max_episodes, int) and max_episodes > 0 else max(4 * self.n, 32)
        self.prefix = run_id_prefix(manifest)
        self.episodes = 0
        self.last: tuple[int, int] = (-1, 0)
        self.ends_short = False

    def episodes_of(self, block: int, entry: dict[str, Any]) -> range:
        first = block * self.per_shard
        episodes = entry.get("episodes")
        return range(first, episodes[1] if episodes else min(first + self.per_shard, self.budget))

    def check_entry(self, block: int, name: str, entry: dict[str, Any]) -> None:
        expected = f"part-{block:05d}.parquet"
        if name != expected:
            self.findings.add(name, f"stands where the manifest's block {block} ({expected}) should (shards are "
                              "consecutive blocks from part-00000)")
        if self.ends_short:
            self.findings.add(name, "follows a shard that did not hold a whole block (only the last shard may)")
        span = self.episodes_of(block, entry)
        first, end = block * self.per_shard, min((block + 1) * self.per_shard, self.budget)
        if entry.get("episodes") is not None and (span.start != first or not first < span.stop <= end):
            self.findings.add(name, f"records episodes {entry['episodes']}, block {block} holds [{first}, at most "
                              f"{end}]")
        self.ends_short = span.stop < end
        self.episodes += max(0, span.stop - span.start)

    def rows_by_episode(self, block: int, name: str, entry: dict[str, Any],
                        rows: list[dict[str, Any]]) -> dict[int, list[tuple[int, dict[str, Any]]]]:
        """The shard's rows by episode, each with the turn its id names, after their ids,
        provenance, order and membership are checked (rows that fail are reported and left
        out)."""
        span = self.episodes_of(block, entry)
        out: dict[int, list[dict[str, Any]]] = {}
        for row in rows:
            row_id = str(row.get("id"))
            match = ROW_ID.fullmatch(row_id)
            if match is None or match["prefix"] != self.prefix:
                self.findings.add(row_id, f"is no id of this run ({self.prefix}-s{self.seed}-e<episode>-t<turn>: "
                                  "the environment and the settings that decide what an episode writes)")
                continue
            e, turn = int(match["episode"]), int(match["turn"])
            problem = None
            if int(match["seed"]) != self.seed:
                problem = f"names seed {match['seed']}, the run's seed is {self.seed} (a row of another run)"
            elif e not in span:
                problem = f"is episode {e}, but {name} holds episodes {span.start}-{span.stop - 1}"
            elif (e, turn) <= self.last:
                problem = f"stands after e{self.last[0]:07d}-t{self.last[1]}: rows are in episode and turn order"
            else:
                problem = self._provenance_problem(row, e, turn)
            if problem:
                self.findings.add(row_id, problem)
                continue
            self.last = (e, turn)
            out.setdefault(e, []).append((turn, row))
        return out

    def _provenance_problem(self, row: dict[str, Any], e: int, turn: int) -> str | None:
        try:
            provenance = json.loads(row["provenance"])
        except (KeyError, TypeError, ValueError, RecursionError):
            return "its provenance is not a JSON object"
        if not isinstance(provenance, dict):
            return "its provenance is not a JSON object"
        want = {"index": e, "turn": turn, "seed": self.episode_seed(self.seed, e), "run_seed": self.seed}
        wrong = [k for k, v in want.items() if provenance.get(k) != v]
        if wrong:
            return (f"its provenance {wrong[0]} is {provenance.get(wrong[0])!r}; episode {e} of seed {self.seed} has "
                    f"{want[wrong[0]]!r}")
        return None

    def check_totals(self, rows: int, shards: int) -> None:
        counts, add = self.manifest["counts"], self.findings.add
        if self.manifest.get("finished") is False:
            add(MANIFEST_FILE, "the run did not finish (interrupted); run the same generate command again to complete "
                "it")
            return
        if "shards" in counts and counts["shards"] != shards:
            add(MANIFEST_FILE, f"records {counts['shards']} shards, {ENTRIES_DIR}/ holds the entries of {shards}")
        if counts["samples"] != rows:
            add(MANIFEST_FILE, f"records {counts['samples']} samples, the shards hold {rows}")
        if counts["requested"] != self.n:
            add(MANIFEST_FILE, f"records {counts['requested']} samples requested, its config asks for {self.n}")
        if counts["episodes"] != self.episodes:
            add(MANIFEST_FILE, f"records {counts['episodes']} episodes, its shards' blocks hold {self.episodes}")
        if rows > self.n:
            add(MANIFEST_FILE, f"the shards hold {rows} rows, more than the {self.n} the run asked for")
        elif rows < self.n and self.episodes < self.budget:
            add(MANIFEST_FILE, f"the shards hold {rows} of the {self.n} samples asked for after {self.episodes} "
                f"episodes, but a run stops short only at its budget of {self.budget} episodes: shards are missing")
        if bool(self.manifest.get("complete")) != (rows >= self.n):
            add(MANIFEST_FILE, f"says complete={self.manifest.get('complete')!r} with {rows} of {self.n} samples")


class _Replay:
    """Every episode played again from its seed. With the built-in ``random`` rewriter the
    rewriter proposes again (its randomness depends on the run's seed and the episode
    alone, and no actor answer steers it), so which turns an episode accepts, its edit
    trace and which rows it yields are re-derived; with another rewriter the recorded
    edits are applied again. Episodes whose source cannot be opened count as unreplayed."""

    def __init__(self, manifest: dict[str, Any], arms: _Arms, findings: Findings):
        from vicogym.policies import parse_rewriter

        config = manifest["config"]
        self.env_id, self.arms, self.findings = manifest["env"]["id"], arms, findings
        self.seed, self.n, self.keep = int(config["seed"]), int(config["n"]), config.get("keep", "final")
        self.rewriter = config.get("rewriter", "random")
        try:
            self.proposes_again = parse_rewriter(self.rewriter)[0] == "random"
        except ValueError:
            self.proposes_again = False
        if not self.proposes_again:
            findings.notes.append(f"rewriter {self.rewriter!r} cannot propose again here: episodes are replayed from "
                                  "their recorded edits, and rows an episode should have yielded are not counted")
        self.expected = 0  # rows the replayed episodes yield, in run order (the run stops at n)
        self.prefix = run_id_prefix(manifest)

    def _row_id(self, e: int, turn: int) -> str:
        from vicogym.runs.generate import row_id

        return row_id(self.prefix, self.seed, e, turn)

    def block(self, rows: dict[int, list[tuple[int, dict[str, Any]]]], episodes: range) -> None:
        env = self.arms.env(self.env_id)
        for e in episodes:
            mine = rows.get(e, [])
            if env is None:
                self.findings.unreplayed += len(mine)
                continue
            if not self.proposes_again:
                for _, row in mine:
                    if not self.findings.has(str(row.get("id"))):
                        guarded(row, self.findings, self._recorded, row, env)
                continue
            try:
                seed_sample, turns = self._play(env, e)
            except Exception as exc:  # an episode that cannot be played again is its rows' problem
                for _, row in mine:
                    self.findings.add(str(row.get("id")), f"its episode cannot be replayed ({type(exc).__name__}: "
                                      f"{str(exc)[:200]})")
                continue
            self._compare(e, mine, seed_sample, turns, env.arm)

    def _play(self, env: Any, e: int) -> tuple[Any, dict[int, Any]]:
        import numpy as np

        from vicogym.policies import make_rewriter
        from vicogym.runs.generate import episode_seed
        from vicogym.runs.rollout import run_episode

        rng = np.random.default_rng(np.random.SeedSequence([self.seed, e, 1]))  # as generate's episodes draw it
        seed_sample, _, kept, _ = run_episode(env, make_rewriter(self.rewriter, env), seed=episode_seed(self.seed, e),
                                              rng=rng, keep="all", episode=e)
        return seed_sample, {k.turn: k for k in kept}

    def _compare(self, e: int, rows: list[tuple[int, dict[str, Any]]], seed_sample: Any, turns: dict[int, Any],
                 arm: Any) -> None:
        if self.keep in ("final", "all"):
            yielded = sorted(turns)[-1:] if self.keep == "final" else sorted(turns)
            yielded = yielded[:max(0, self.n - self.expected)]
            self.expected += len(yielded)
            present = {turn for turn, _ in rows}
            for turn in yielded:
                if turn not in present:
                    self.findings.add(self._row_id(e, turn),
                                      f"is missing: episode {e}, replayed, yields it (keep={self.keep})")
        else:
            yielded = None
        for turn, row in rows:
            if self.findings.has(str(row["id"])):
                continue  # its first problem is reported
            if turn not in turns:
                self.findings.add(str(row["id"]), f"turn {turn} is no accepted turn of episode {e}: replayed, its "
                                  f"rewriter's edits are accepted at turns {sorted(turns) or 'none'}")
            elif yielded is not None and turn not in yielded:
                self.findings.add(str(row["id"]), f"is not a row episode {e} yields under keep={self.keep} "
                                  f"(turns {yielded})")
            else:
                guarded(row, self.findings, self._same, row, seed_sample, turns[turn], arm)

    def _same(self, row: dict[str, Any], seed_sample: Any, kept: Any, arm: Any) -> None:
        problem = _seed_problem(row, arm, seed_sample)
        if problem is None:
            stored, replayed = json.loads(row["edit_trace"]), kept.trace
            if _turns(stored) != _turns(replayed):
                count = len(stored) if isinstance(stored, list) else "no"
                problem = (f"edit_trace differs from the episode replayed ({count} recorded turns, {len(replayed)} "
                           "replayed)")
            elif arm.encode(kept.sample.structure)[0] != row["structure"]:
                problem = "structure differs from the replayed episode's"
            elif kept.sample.answer != row["answer"]:
                problem = f"answer {row['answer']!r} differs from the replayed answer {kept.sample.answer!r}"
            elif self.arms.reprobes.get(self.env_id) and "actor_answers" in row and (
                    list(kept.answers) != list(row["actor_answers"]) or kept.pass_rate != row["pass_rate"]):
                problem = (f"the simulated actor, asked again, answers {list(kept.answers)} (pass rate "
                           f"{kept.pass_rate!r}), the row keeps {row['actor_answers']} ({row['pass_rate']!r})")
        if problem:
            self.findings.add(str(row["id"]), problem)

    def _recorded(self, row: dict[str, Any], env: Any) -> None:
        problem = _replay_problem(row, env)
        if problem:
            self.findings.add(str(row["id"]), problem)


def _check_side_files(out: Path, manifest: dict[str, Any], findings: Findings) -> bool:
    """Whether every shared file is present and as the manifest recorded it (and no other)."""
    listed = manifest.get("files") or {}
    if not isinstance(listed, dict):
        findings.add(MANIFEST_FILE, "its files entry is not a mapping of names to SHA-256")
        return False
    stored, ok = RunFolder(out).side_files(), True
    for name, digest in sorted(listed.items()):
        if name not in stored:
            findings.add(f"{FILES_DIR}/{name}", "is missing; rows that share it cannot be checked")
            ok = False
        elif stored[name] != digest:
            findings.add(f"{FILES_DIR}/{name}", "changed since it was written (SHA-256 differs from the manifest)")
            ok = False
    for name in sorted(set(stored) - set(listed)):
        findings.add(f"{FILES_DIR}/{name}", "is not in the manifest")
    return ok


def run_arm(run: Path, manifest: dict[str, Any]) -> Any:
    """The arm of a run's environment, built from the run's settings, with the run's shared
    files attached (for exports and reports of a folder verify has not vouched for)."""
    from vicogym.registry import make_arm

    arm = make_arm(manifest["env"]["id"], manifest["config"]["env_kwargs"])
    if (Path(run) / FILES_DIR).is_dir():
        arm.attach_run(Path(run) / FILES_DIR)
    return arm


def _check_row(row: dict[str, Any], shard: str, seen: dict[str, str], arms: _Arms, findings: Findings,
               images: bool) -> None:
    row_id = str(row.get("id"))
    if row_id in seen:
        findings.add(row_id, f"appears twice ({seen[row_id]} and {shard})")
        return
    seen[row_id] = shard
    missing = [c for c in ("env_id", "images", "question", "answer", "label_rule", "label",
                           "structure") if c not in row]
    if missing:
        findings.add(row_id, f"lacks columns {missing}")
        return
    try:
        arm = arms.get(row["env_id"])
    except (UnknownEnvironment, MissingExtra, ValueError, TypeError, OSError) as exc:
        findings.add(row_id, f"cannot be checked: {exc}")
        return
    problem = (verl_mismatch(row, arm.export) or _reward_problem(row, arm) or arm.verify_row(row)
               or _pass_rate_problem(row, arm))
    if problem is None and images:
        problem = _image_problem(row, arm)
    if problem:
        findings.add(row_id, problem)
    for name, status in _checks_recorded(row).items():
        if status != "ran":  # a check the row never had is not run on it here either: said, not hidden
            findings.not_run[(name, status)] += 1


def _checks_recorded(row: dict[str, Any]) -> dict[str, str]:
    """The checks a row's provenance records (see ``Arm.checks_run``); none if unreadable
    (the provenance is checked elsewhere)."""
    try:
        checks = json.loads(row.get("provenance") or "{}").get("checks")
    except (ValueError, TypeError, AttributeError, RecursionError):
        return {}
    return {str(k): str(v) for k, v in checks.items()} if isinstance(checks, dict) else {}


def _reward_problem(row: dict[str, Any], arm: Any) -> str | None:
    from vicogym.rewards import difficulty_reward

    try:
        expected = difficulty_reward(float(row["pass_rate"]), arm.config.reward_config())
    except (KeyError, TypeError, ValueError) as exc:
        return f"pass_rate cannot be read ({exc})"
    if row.get("reward") != expected:
        return f"reward {row.get('reward')!r} differs from the reward {expected!r} of its pass rate"
    if not 0.0 <= float(row.get("pass_rate_before", -1)) <= 1.0:
        return f"pass_rate_before {row.get('pass_rate_before')!r} is not a pass rate"
    return None


def _pass_rate_problem(row: dict[str, Any], arm: Any) -> str | None:
    """The pass rates scored again from the actor answers the row keeps (the sample's
    against its answer, the seed's against the seed's answer): K of them, or with
    sequential probing as many as the stopping rule, applied again to the answers in the
    order drawn, lets the probe draw. Rows written before rows kept their answers have
    none to score."""
    import numpy as np

    from vicogym.rewards import sequential_draws

    if "actor_answers" not in row:
        return None
    k = arm.config.k
    rule = json.loads(row["label"])
    seed_answer = arm.relabel(arm.decode(row["seed_structure"], payload_dict(row.get("seed_payloads"))), rule)
    for column, rate_column, answer in (("actor_answers", "pass_rate", row["answer"]),
                                        ("seed_actor_answers", "pass_rate_before", seed_answer)):
        answers = row.get(column)
        if not isinstance(answers, list) or not answers:
            return f"{column} holds {len(answers) if isinstance(answers, list) else 'no'} answers, the run asked k={k}"
        scores = [arm.score(str(a), answer) for a in answers]
        if getattr(arm.config, "probe", "fixed") == "sequential":
            drawn = sequential_draws(scores, k, arm.config.probe_batch, arm.config.sweet_zone,
                                     arm.config.probe_confidence)
            if len(answers) != drawn:
                return (f"{column} holds {len(answers)} answers; a sequential probe (at most k={k}, batches of "
                        f"{arm.config.probe_batch}) stops after {drawn} of them")
        elif len(answers) != k:
            return f"{column} holds {len(answers)} answers, the run asked k={k}"
        rate = float(np.mean(scores))
        if rate != row.get(rate_column):
            return (f"{rate_column} {row.get(rate_column)!r} is not the score {rate!r} of the {len(answers)} answers "
                    f"in {column}")
    return None


def _seed_problem(row: dict[str, Any], arm: Any, seed: Any) -> str | None:
    """Whether the row's seed columns are those of the seed its episode draws."""
    if arm.encode(seed.structure)[0] != row.get("seed_structure"):
        return "seed_structure differs from the seed its provenance draws"
    if seed.question != row["question"]:
        return f"question differs from the seed's question {seed.question!r}"
    if json.loads(row["label"]) != seed.label_rule:
        return "label differs from the seed's label rule"
    if seed.provenance.source_id != row.get("source_id"):
        return f"source_id differs from the seed's {seed.provenance.source_id!r}"
    return None


def _replay_problem(row: dict[str, Any], env: Any) -> str | None:
    """Draw the row's seed again and apply its recorded edits (for a rewriter that cannot
    propose again): every stored label-bearing column must come out the same."""
    from vicogym.core import Edit
    from vicogym.errors import GenerationError

    arm = env.arm
    try:
        provenance = json.loads(row["provenance"])
        trace = json.loads(row["edit_trace"])
        index = provenance.get("index")  # the episode's index in its run, as generate reset it
        options = {"episode": int(index)} if isinstance(index, int) and not isinstance(index, bool) else None
        _, info = env.reset(seed=int(provenance["seed"]), options=options)
    except (ValueError, TypeError, KeyError, GenerationError) as exc:
        return f"the episode cannot be replayed from its provenance ({type(exc).__name__}: {exc})"
    seed = info["sample"]
    problem = _seed_problem(row, arm, seed)
    if problem:
        return problem
    structure, answer = seed.structure, seed.answer
    try:
        for entry in trace:
            structure = arm.apply(structure, Edit.parse(entry["edit"]), seed.label_rule)
            answer = arm.relabel(structure, seed.label_rule)
            if answer != entry.get("answer"):
                return (f"edit of turn {entry.get('turn')} gives the answer {answer!r}, "
                        f"the trace says {entry.get('answer')!r}")
    except (InvalidEdit, ValueError, TypeError, KeyError) as exc:
        return f"the recorded edits do not apply again: {exc}"
    if arm.encode(structure)[0] != row["structure"]:
        return "structure differs from the seed with the recorded edits applied"
    if answer != row["answer"]:
        return f"answer {row['answer']!r} differs from the replayed answer {answer!r}"
    return None


def _image_problem(row: dict[str, Any], arm: Any) -> str | None:
    """Decode the stored image, render the stored structure again, compare, and re-run the
    arm's answerability checks on the render."""
    try:
        stored = decode_png(row_png(row))
    except ValueError as exc:
        return f"image does not decode ({exc})"
    try:
        structure = arm.decode(row["structure"], payload_dict(row.get("payloads")))
        render = arm.render_checked(structure, json.loads(row["label"]))
    except InvalidEdit as exc:
        return f"a reader could not answer from this image: {exc}"
    except (ValueError, TypeError, KeyError) as exc:
        return f"structure cannot be rendered again: {exc}"
    if not same_image(stored, render.image, arm.pixel_tolerance):
        return "image differs from a fresh render of the stored structure (swapped or edited pixels)"
    return None


def iter_rows(out: str | Path, columns: list[str] | None = None) -> Iterator[dict[str, Any]]:
    """Every row of the shards in ``out`` (for reading results, not for verification)."""
    import pyarrow.parquet as pq

    shards = sorted(Path(out).glob(SHARD_GLOB))
    if not shards:
        raise RunError(f"no {SHARD_GLOB} shards in {out}")
    for path in shards:
        yield from pq.read_table(path, columns=columns).to_pylist()
