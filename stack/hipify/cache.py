"""Per-file findings cache: a re-scan re-examines only the files whose content changed.

Keyed by (engine key, sha256 of the file's content). The engine key folds in
the engine and its version, the hipify-perl script's sha256, the perl build
and the table reader's format (:attr:`stack.hipify.tables.Tables.key`), so a
new hipify-perl or a fixed engine never serves stale findings. Findings are
path-free: a renamed or copied file is a hit.

Beside them, per engine key and file selection, the newest scan's totals
(:class:`stack.hipify.totals.Totals`): a re-scan applies what changed to them
rather than summing every file's aggregate again. They also say which findings
are still in use: when an engine key holds many more findings than its states
name, the rest are pruned, so a project's cache does not grow with every edit
(:func:`stack.hipify.scan._prune`).

One SQLite file (stdlib ``sqlite3``, imported only when a cache is used): safe
for several jobs sharing a cache folder, one file to copy or delete.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

CACHE_FILENAME = "hipify-findings-v3.sqlite3"


class FindingsCache:
    """Findings by content hash, and the newest scan's totals, for one engine key."""

    def __init__(self, folder: str | os.PathLike[str], engine_key: str) -> None:
        import sqlite3

        Path(folder).mkdir(parents=True, exist_ok=True)
        self.path = Path(folder) / CACHE_FILENAME
        self.engine_key = engine_key
        try:
            self._db = self._open()
        except sqlite3.DatabaseError:
            # a damaged cache is only lost work: set it aside and start again
            os.replace(self.path, self.path.with_suffix(f".damaged-{os.getpid()}"))
            self._db = self._open()

    def _open(self) -> Any:
        import sqlite3

        db = sqlite3.connect(self.path, timeout=30, isolation_level=None)
        db.execute("PRAGMA journal_mode=WAL")
        # A cache: losing the last write in a power cut is fine; an fsync per scan is not.
        db.execute("PRAGMA synchronous=OFF")
        db.execute(
            "CREATE TABLE IF NOT EXISTS findings ("
            " engine TEXT NOT NULL, sha256 TEXT NOT NULL,"
            " record TEXT NOT NULL, summary BLOB NOT NULL,"
            " PRIMARY KEY (engine, sha256))"
        )
        # One row per (engine, file selection): the totals of the newest scan, which the
        # next re-scan updates with what changed instead of summing every file again.
        db.execute(
            "CREATE TABLE IF NOT EXISTS scans ("
            " engine TEXT NOT NULL, selection TEXT NOT NULL, state BLOB NOT NULL,"
            " PRIMARY KEY (engine, selection))"
        )
        return db

    def records(self, hashes: Iterable[str]) -> dict[str, str]:
        """The cached records (JSON text) among ``hashes``."""
        return self._select("record", hashes)

    def aggregates(self, hashes: Iterable[str]) -> dict[str, bytes]:
        """The cached aggregates (marshalled) among ``hashes``."""
        return self._select("summary", hashes)

    def _select(self, column: str, hashes: Iterable[str]) -> dict[str, Any]:
        wanted = list(dict.fromkeys(hashes))
        found: dict[str, Any] = {}
        for start in range(0, len(wanted), 500):
            chunk = wanted[start : start + 500]
            marks = ",".join("?" * len(chunk))
            rows = self._db.execute(
                f"SELECT sha256, {column} FROM findings"  # noqa: S608 - column is ours
                f" WHERE engine = ? AND sha256 IN ({marks})",
                [self.engine_key, *chunk],
            )
            found.update(rows)
        return found

    def totals_state(self, selection: str) -> bytes | None:
        """The newest scan's totals state for this file selection (None: no scan yet)."""
        row = self._db.execute(
            "SELECT state FROM scans WHERE engine = ? AND selection = ?",
            (self.engine_key, selection),
        ).fetchone()
        return row[0] if row else None

    def put_many(
        self,
        items: dict[str, tuple[str, bytes]],
        totals: tuple[str, bytes] | None = None,
    ) -> None:
        """Store (record JSON text, marshalled aggregate) by content hash, and a scan's
        (selection, totals state), in one transaction: a state never names findings
        that are not stored."""
        if not items and totals is None:
            return
        self._db.execute("BEGIN")
        try:
            self._db.executemany(
                "INSERT OR REPLACE INTO findings (engine, sha256, record, summary)"
                " VALUES (?, ?, ?, ?)",
                [
                    (self.engine_key, sha, record, summary)
                    for sha, (record, summary) in items.items()
                ],
            )
            if totals is not None:
                self._db.execute(
                    "INSERT OR REPLACE INTO scans (engine, selection, state) VALUES (?, ?, ?)",
                    (self.engine_key, *totals),
                )
            self._db.execute("COMMIT")
        except BaseException:
            self._db.execute("ROLLBACK")
            raise

    def count(self) -> int:
        """How many findings this engine key holds."""
        (n,) = self._db.execute(
            "SELECT count(*) FROM findings WHERE engine = ?", (self.engine_key,)
        ).fetchone()
        return n

    def totals_states(self) -> list[bytes]:
        """Every file selection's newest totals state, for this engine key."""
        rows = self._db.execute("SELECT state FROM scans WHERE engine = ?", (self.engine_key,))
        return [state for (state,) in rows]

    def prune(self, keep: Iterable[str]) -> int:
        """Delete this engine key's findings outside ``keep``, and those of engine keys
        no scan state names (a replaced hipify-perl's, say). Returns how many went."""
        self._db.execute("BEGIN")
        try:
            self._db.execute("CREATE TEMP TABLE IF NOT EXISTS keep (sha256 TEXT PRIMARY KEY)")
            self._db.execute("DELETE FROM keep")
            self._db.executemany("INSERT OR IGNORE INTO keep VALUES (?)", ((sha,) for sha in keep))
            gone = self._db.execute(
                "DELETE FROM findings WHERE engine = ? AND sha256 NOT IN (SELECT sha256 FROM keep)",
                (self.engine_key,),
            ).rowcount
            gone += self._db.execute(
                "DELETE FROM findings WHERE engine NOT IN (SELECT engine FROM scans)"
                " AND engine != ?",
                (self.engine_key,),
            ).rowcount
            self._db.execute("COMMIT")
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        return gone

    def close(self) -> None:
        """Close the database."""
        self._db.close()

    def __enter__(self) -> FindingsCache:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
