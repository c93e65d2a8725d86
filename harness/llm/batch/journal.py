"""The durable journal of batches: what was (about to be) submitted, where, and what became of it.

One SQLite file beside the reply cache (``<cache>/llm/batches.db``), safe across threads and
processes. The order of writes is what makes a crash harmless:

1. ``reserve``: the request keys and a fresh tag are written (state ``intent``) *before* anything is
   sent, in one transaction that skips keys another live batch already holds;
2. the batch is submitted with the tag attached where the provider keeps metadata;
3. ``mark_submitted`` records the provider's batch id;
4. results go into the reply cache, then ``mark_collected``;
5. (``harness batch clean``) the provider's copies are deleted, then ``mark_removed``.

A process killed between 1 and 3 leaves an ``intent`` whose owner is gone: the next run looks for a
batch carrying its tag (or its requests) at the provider and adopts it, or abandons the intent when
none was created. A request key is never in two live batches, so nothing is paid twice.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
import uuid
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.runtime.procs import process_gone, this_process

FILENAME = "batches.db"
#: states in which a batch holds its requests (no other batch may take them)
LIVE = ("intent", "submitted")
_SCHEMA = """
CREATE TABLE IF NOT EXISTS batches (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    tag TEXT UNIQUE NOT NULL,
    endpoint TEXT NOT NULL,
    provider TEXT NOT NULL,
    model TEXT NOT NULL,
    base_url TEXT,
    state TEXT NOT NULL,
    remote_id TEXT,
    created REAL NOT NULL,
    submitted REAL,
    finished REAL,
    n INTEGER NOT NULL,
    nbytes INTEGER,
    attempt INTEGER NOT NULL,
    owner_pid INTEGER NOT NULL,
    owner_host TEXT NOT NULL,
    note TEXT,
    removed REAL
);
CREATE TABLE IF NOT EXISTS requests (
    batch INTEGER NOT NULL REFERENCES batches(id),
    key TEXT NOT NULL,
    payload TEXT NOT NULL,
    PRIMARY KEY (batch, key)
);
CREATE INDEX IF NOT EXISTS requests_by_key ON requests(key);
CREATE INDEX IF NOT EXISTS batches_by_state ON batches(state, endpoint);
"""
_COLUMNS = ("id", "tag", "endpoint", "provider", "model", "base_url", "state", "remote_id", "created", "submitted",
            "finished", "n", "nbytes", "attempt", "owner_pid", "owner_host", "note", "removed")


@dataclass(frozen=True)
class BatchRecord:
    """One row of the journal (see the module docstring for the states)."""

    id: int
    tag: str
    endpoint: str
    provider: str
    model: str
    base_url: str | None
    state: str
    remote_id: str | None
    created: float
    submitted: float | None
    finished: float | None
    n: int
    nbytes: int | None
    attempt: int
    owner_pid: int
    owner_host: str
    note: str | None
    #: when the provider's copies (input, results) were deleted; None while they are kept
    removed: float | None = None

    @property
    def owner_gone(self) -> bool:
        """The process that reserved this batch no longer runs (on this host)."""
        return process_gone(self.owner_pid, self.owner_host)

    def as_dict(self) -> dict[str, Any]:
        return {c: getattr(self, c) for c in _COLUMNS}


class BatchJournal:
    """See the module docstring. ``path``: the SQLite file (created with its folder)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._local = threading.local()
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"BatchJournal({str(self.path)!r})"

    @property
    def _db(self) -> sqlite3.Connection:
        db = getattr(self._local, "db", None)
        if db is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            db = sqlite3.connect(self.path, timeout=60, isolation_level=None)
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=FULL")  # a committed row survives a power cut
            with self._lock:
                db.executescript(_SCHEMA)
                _add_removed_column(db)
            self._local.db = db
        return db

    @contextmanager
    def _tx(self) -> Iterator[sqlite3.Connection]:
        """One write transaction, taken at once (``BEGIN IMMEDIATE``) so check-then-insert is atomic
        across processes."""
        db = self._db
        db.execute("BEGIN IMMEDIATE")
        try:
            yield db
        except BaseException:
            db.execute("ROLLBACK")
            raise
        db.execute("COMMIT")

    # -- writing -------------------------------------------------------------------------------
    def reserve(self, endpoint: Mapping[str, Any], items: Iterable[tuple[str, Mapping[str, Any]]],
                attempt: int = 1) -> tuple[BatchRecord | None, dict[str, int]]:
        """Record the intent to submit ``items`` (``(key, payload)`` pairs) to ``endpoint``
        (``endpoint``, ``provider``, ``model``, ``base_url``). Keys another live batch holds are left
        out and returned as ``{key: batch id}``; the record is None when no key was left."""
        items = dict(items)
        pid, host = this_process()
        with self._tx() as db:
            held = self._holders(db, list(items))
            free = [k for k in items if k not in held]
            if not free:
                return None, held
            cur = db.execute(
                "INSERT INTO batches (tag, endpoint, provider, model, base_url, state, created, n, attempt, "
                "owner_pid, owner_host) VALUES (?, ?, ?, ?, ?, 'intent', ?, ?, ?, ?, ?)",
                (uuid.uuid4().hex, endpoint["endpoint"], endpoint["provider"], endpoint["model"],
                 endpoint.get("base_url"), time.time(), len(free), attempt, pid, host))
            bid = int(cur.lastrowid)
            db.executemany("INSERT INTO requests (batch, key, payload) VALUES (?, ?, ?)",
                           ((bid, k, json.dumps(items[k], sort_keys=True, ensure_ascii=False)) for k in free))
        return self.get(bid), held

    def mark_submitted(self, batch: int, remote_id: str, nbytes: int | None = None, note: str | None = None) -> None:
        self._set(batch, state="submitted", remote_id=remote_id, submitted=time.time(), nbytes=nbytes, note=note)

    def mark_collected(self, batch: int, note: str) -> None:
        self._set(batch, state="collected", finished=time.time(), note=note)

    def mark_abandoned(self, batch: int, note: str) -> None:
        """The batch was never created at the provider (or cannot be collected): its keys are free."""
        self._set(batch, state="abandoned", finished=time.time(), note=note)

    def mark_removed(self, batch: int, note: str) -> None:
        """The provider's copies of a collected batch were deleted (its replies stay in the cache)."""
        self._set(batch, removed=time.time(), note=note)

    def mark_cancelled(self, batch: int, note: str = "cancelled") -> None:
        self._set(batch, state="cancelled", finished=time.time(), note=note)

    def note(self, batch: int, note: str) -> None:
        self._set(batch, note=note)

    def _set(self, batch: int, **fields: Any) -> None:
        fields = {k: v for k, v in fields.items() if v is not None}
        with self._tx() as db:
            db.execute(f"UPDATE batches SET {', '.join(f'{k} = ?' for k in fields)} WHERE id = ?",
                       (*fields.values(), batch))

    # -- reading -------------------------------------------------------------------------------
    @staticmethod
    def _holders(db: sqlite3.Connection, keys: list[str]) -> dict[str, int]:
        held: dict[str, int] = {}
        for i in range(0, len(keys), 500):
            chunk = keys[i:i + 500]
            rows = db.execute(
                f"SELECT r.key, b.id FROM requests r JOIN batches b ON b.id = r.batch WHERE r.key IN "
                f"({', '.join('?' * len(chunk))}) AND b.state IN ({', '.join('?' * len(LIVE))})", (*chunk, *LIVE))
            held.update({k: int(b) for k, b in rows})
        return held

    def holders(self, keys: Iterable[str]) -> dict[str, int]:
        """``{key: batch id}`` for the keys a live batch holds."""
        return self._holders(self._db, list(keys))

    def get(self, batch: int) -> BatchRecord:
        row = self._db.execute(f"SELECT {', '.join(_COLUMNS)} FROM batches WHERE id = ?", (batch,)).fetchone()
        if row is None:
            raise KeyError(f"no batch {batch} in {self.path}")
        return BatchRecord(*row)

    def batches(self, states: Iterable[str] | None = None, endpoint: str | None = None,
                limit: int | None = None) -> list[BatchRecord]:
        """Batches, newest first, in ``states`` (None: all) and of ``endpoint`` (None: any)."""
        where, args = [], []
        if states is not None:
            states = list(states)
            where.append(f"state IN ({', '.join('?' * len(states))})")
            args += states
        if endpoint is not None:
            where.append("endpoint = ?")
            args.append(endpoint)
        sql = f"SELECT {', '.join(_COLUMNS)} FROM batches"
        sql += f" WHERE {' AND '.join(where)}" if where else ""
        sql += " ORDER BY id DESC" + (f" LIMIT {int(limit)}" if limit else "")
        return [BatchRecord(*row) for row in self._db.execute(sql, args)]

    def requests(self, batch: int) -> dict[str, dict[str, Any]]:
        """``{key: payload}`` of one batch."""
        rows = self._db.execute("SELECT key, payload FROM requests WHERE batch = ?", (batch,))
        return {k: json.loads(p) for k, p in rows}

    def remote_ids(self, endpoint: str) -> set[str]:
        rows = self._db.execute("SELECT remote_id FROM batches WHERE endpoint = ? AND remote_id IS NOT NULL",
                                (endpoint,))
        return {r for (r,) in rows}

    def close(self) -> None:
        db = getattr(self._local, "db", None)
        if db is not None:
            db.close()
            self._local.db = None


def _add_removed_column(db: sqlite3.Connection) -> None:
    """Journals written before ``removed`` existed gain the column (another process may add it first)."""
    if "removed" in {row[1] for row in db.execute("PRAGMA table_info(batches)")}:
        return
    try:
        db.execute("ALTER TABLE batches ADD COLUMN removed REAL")
    except sqlite3.OperationalError as exc:
        if "duplicate column" not in str(exc):
            raise
