"""The batch journal's switch to WAL mode when another connection holds the file: SQLite refuses the
switch at once ("database is locked", its busy handler does not wait there), as when a suite's members
open one journal together; the switch is tried again until the other lets go."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from harness.served.batch.journal import write_ahead_log


def _held(path: Path) -> sqlite3.Connection:
    """A connection in the default (rollback) mode holding a write lock: readers go on, a switch to WAL cannot."""
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("CREATE TABLE t (x)")
    holder.execute("BEGIN IMMEDIATE")
    holder.execute("INSERT INTO t VALUES (1)")
    return holder


def test_the_switch_is_tried_again_once_the_other_connection_lets_go(tmp_path: Path):
    holder = _held(tmp_path / "j.db")
    other = sqlite3.connect(tmp_path / "j.db", timeout=0, isolation_level=None)
    with pytest.raises(sqlite3.OperationalError, match="locked"):
        other.execute("PRAGMA journal_mode=WAL")  # what SQLite answers at once, the lock held
    waits: list[float] = []

    def sleep(seconds: float) -> None:  # the other connection commits while this one waits
        waits.append(seconds)
        holder.execute("COMMIT")

    write_ahead_log(other, wait=60, sleep=sleep)
    assert other.execute("PRAGMA journal_mode").fetchone()[0] == "wal" and waits == [0.05]
    assert holder.execute("SELECT x FROM t").fetchall() == [(1,)]  # the other's write kept


def test_a_lock_that_outlasts_the_wait_is_raised(tmp_path: Path):
    _held(tmp_path / "j.db")
    other = sqlite3.connect(tmp_path / "j.db", timeout=0, isolation_level=None)
    waits: list[float] = []
    with pytest.raises(sqlite3.OperationalError, match="locked"):
        write_ahead_log(other, wait=0, sleep=waits.append)
    assert waits == [] and other.execute("PRAGMA journal_mode").fetchone()[0] == "delete"


def test_a_journal_already_in_wal_mode_is_left_as_it_is(tmp_path: Path):
    first = sqlite3.connect(tmp_path / "j.db", isolation_level=None)
    first.execute("PRAGMA journal_mode=WAL")
    first.execute("BEGIN IMMEDIATE")  # a writer at work does not stop a new connection
    waits: list[float] = []
    write_ahead_log(sqlite3.connect(tmp_path / "j.db", timeout=0, isolation_level=None), sleep=waits.append)
    assert waits == []
