"""Two commands opening one new run store at once (`ilh run` while `ilh runs list` looks,
two runs started together). SQLite answers a switch to WAL that meets another
connection's lock with "database is locked" at once, without waiting its busy timeout:
one of the commands failed with E500 (seen in CI as an `ilh run` that exited 2 while a
test polled its new store)."""

from __future__ import annotations

import sqlite3
import threading
import time
from pathlib import Path

from harness.record.database import open_database
from harness.record.store import RunStore


def test_opening_waits_for_a_writer_holding_a_new_store(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    holder = sqlite3.connect(db, isolation_level=None, check_same_thread=False)
    holder.execute("CREATE TABLE placeholder (x)")  # a database still in rollback mode
    holder.execute("BEGIN IMMEDIATE")  # its writer's lock: what the switch to WAL meets
    assert holder.execute("PRAGMA journal_mode").fetchone()[0] == "delete"
    released = threading.Timer(0.3, lambda: holder.execute("COMMIT"))
    released.start()
    began = time.monotonic()
    try:
        conn = open_database(db, busy_timeout_s=5.0)
    finally:
        released.join()
        holder.close()
    try:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    finally:
        conn.close()
    assert time.monotonic() - began >= 0.25, "it waited for the writer, as its timeout says"


def test_a_writer_that_keeps_the_lock_still_ends_in_an_error_after_the_timeout(
    tmp_path: Path,
) -> None:
    db = tmp_path / "runs.db"
    holder = sqlite3.connect(db, isolation_level=None)
    holder.execute("CREATE TABLE placeholder (x)")
    holder.execute("BEGIN IMMEDIATE")
    try:
        began = time.monotonic()
        try:
            open_database(db, busy_timeout_s=0.2)
        except Exception as err:  # StoreError: the store's one error type
            assert "locked" in str(err)
        else:
            raise AssertionError("opened a store another writer held past the timeout")
        assert time.monotonic() - began < 5
    finally:
        holder.close()


def test_many_openers_of_one_new_store_all_succeed(tmp_path: Path) -> None:
    failures: list[str] = []
    for number in range(150):
        db = tmp_path / f"{number}.db"
        start = threading.Barrier(4)

        def open_it(db: Path = db, start: threading.Barrier = start) -> None:
            start.wait()
            try:
                with RunStore(db):
                    pass
            except Exception as err:
                failures.append(repr(err))

        threads = [threading.Thread(target=open_it) for _ in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert failures == []
