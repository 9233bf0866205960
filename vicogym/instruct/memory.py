"""The synthesis memory of the instruction-following arm, persisted in SQLite.

What VISA's agent state carries across rounds: the accepted samples with their
constraint sets and verifier handles (type ids and parameters), the pool of accepted
instruction embeddings, per-type coverage and target-model failure rates, the types
admitted by discovery (their code and tests), and what each round did.

A round is committed in one transaction, after its shard is on disk: a run killed
mid-round finds the memory as it was before that round and redoes it from the same seed,
so a resumed run has neither duplicates nor gaps. SQLite's own locking keeps a second
process from writing the same memory at once (``busy_timeout`` then a clear error).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from vicogym.errors import RunError
from vicogym.runs.rounds import check_identity

SCHEMA_VERSION = 1
_TABLES = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS rounds (round INTEGER PRIMARY KEY, shard TEXT, sha256 TEXT, stats TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS samples (
    id TEXT PRIMARY KEY, round INTEGER NOT NULL, position INTEGER NOT NULL, instruction TEXT NOT NULL,
    constraints TEXT NOT NULL, categories TEXT NOT NULL, attempts INTEGER NOT NULL, difficulty REAL NOT NULL,
    level TEXT NOT NULL, embedding BLOB NOT NULL);
CREATE TABLE IF NOT EXISTS coverage (type_id TEXT PRIMARY KEY, accepted INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS failures (type_id TEXT PRIMARY KEY, trials INTEGER NOT NULL, failed INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS types (id TEXT PRIMARY KEY, round INTEGER NOT NULL, record TEXT NOT NULL);
"""


class Memory:
    """One synthesis run's memory (``memory.sqlite`` in the run folder)."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        try:
            self.db = sqlite3.connect(self.path, timeout=10.0, isolation_level=None)
            self.db.executescript(_TABLES)
        except sqlite3.DatabaseError as exc:
            raise RunError(f"{self.path} is not a vicogym synthesis memory ({exc}); point --out at a new folder "
                           f"or delete the file") from None
        version = self.meta("schema_version")
        if version is None:
            self.set_meta("schema_version", SCHEMA_VERSION)
        elif version != SCHEMA_VERSION:
            raise RunError(f"{self.path} has memory schema {version}, this vicogym writes {SCHEMA_VERSION}; "
                           f"use a new --out folder")

    def close(self) -> None:
        self.db.close()

    # -- meta ------------------------------------------------------------------------------
    def meta(self, key: str) -> Any:
        row = self.db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return None if row is None else json.loads(row[0])

    def set_meta(self, key: str, value: Any) -> None:
        self.db.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, json.dumps(value, sort_keys=True)))

    def check_identity(self, identity: Mapping[str, Any]) -> None:
        """Record the run's identity, or refuse a memory written by a different run."""
        known = self.meta("identity")
        if known is None or (known != json.loads(json.dumps(dict(identity))) and self.next_round() == 0):
            # a run that committed no round (its first one failed: a dead model URL) holds nothing
            # another run could clash with, so a retry with other settings takes its place
            self.set_meta("identity", dict(identity))
            return
        check_identity(known, identity, f"{self.path} belongs to a run with other settings ({{changed}} differ); "
                       f"resume with the same settings or use a new --out folder")

    # -- rounds ----------------------------------------------------------------------------
    def next_round(self) -> int:
        row = self.db.execute("SELECT MAX(round) FROM rounds").fetchone()
        return 0 if row[0] is None else int(row[0]) + 1

    def rounds(self) -> list[dict[str, Any]]:
        return [{"round": r, "shard": s, "sha256": h, "stats": json.loads(st)}
                for r, s, h, st in self.db.execute("SELECT round, shard, sha256, stats FROM rounds ORDER BY round")]

    @contextmanager
    def transaction(self) -> Iterator[None]:
        self.db.execute("BEGIN IMMEDIATE")
        try:
            yield
        except BaseException:
            self.db.execute("ROLLBACK")
            raise
        self.db.execute("COMMIT")

    def commit_round(self, round: int, shard: str | None, sha256: str | None, stats: Mapping[str, Any],
                     samples: list[Mapping[str, Any]], probes: Mapping[str, tuple[int, int]],
                     discovered: list[Mapping[str, Any]]) -> None:
        """Everything round ``round`` learnt, in one transaction."""
        if round != self.next_round():
            raise RunError(f"round {round} cannot follow round {self.next_round() - 1} in {self.path}")
        with self.transaction():
            for s in samples:
                self.db.execute("INSERT INTO samples VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", (
                    s["id"], round, s["position"], s["instruction"], json.dumps(s["constraints"], sort_keys=True),
                    json.dumps(s["categories"]), s["attempts"], s["difficulty"], s["level"],
                    np.asarray(s["embedding"], dtype=np.float32).tobytes()))
                for spec in s["constraints"]:
                    self.db.execute("INSERT INTO coverage VALUES (?, 1) ON CONFLICT(type_id) DO UPDATE SET "
                                    "accepted = accepted + 1", (spec["id"],))
            for type_id, (trials, failed) in sorted(probes.items()):
                self.db.execute("INSERT INTO failures VALUES (?, ?, ?) ON CONFLICT(type_id) DO UPDATE SET "
                                "trials = trials + excluded.trials, failed = failed + excluded.failed",
                                (type_id, trials, failed))
            for record in discovered:
                self.db.execute("INSERT INTO types VALUES (?, ?, ?)",
                                (record["id"], round, json.dumps(record, sort_keys=True)))
            self.db.execute("INSERT INTO rounds VALUES (?, ?, ?, ?)",
                            (round, shard, sha256, json.dumps(stats, sort_keys=True)))

    # -- what planning reads ---------------------------------------------------------------
    def coverage(self) -> dict[str, int]:
        return dict(self.db.execute("SELECT type_id, accepted FROM coverage"))

    def failure_rates(self) -> dict[str, tuple[int, int]]:
        return {t: (n, f) for t, n, f in self.db.execute("SELECT type_id, trials, failed FROM failures")}

    def embeddings(self) -> np.ndarray:
        rows = self.db.execute("SELECT embedding FROM samples ORDER BY round, position").fetchall()
        if not rows:
            return np.zeros((0, 0), dtype=np.float32)
        return np.stack([np.frombuffer(r[0], dtype=np.float32) for r in rows])

    def discovered(self) -> list[dict[str, Any]]:
        return [json.loads(r[0]) for r in self.db.execute("SELECT record FROM types ORDER BY round, id")]

    def samples(self) -> list[dict[str, Any]]:
        out = []
        for row in self.db.execute("SELECT id, round, position, instruction, constraints, categories, attempts, "
                                   "difficulty, level FROM samples ORDER BY round, position"):
            out.append({"id": row[0], "round": row[1], "position": row[2], "instruction": row[3],
                        "constraints": json.loads(row[4]), "categories": json.loads(row[5]), "attempts": row[6],
                        "difficulty": row[7], "level": row[8]})
        return out
