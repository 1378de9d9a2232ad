"""The run record's one writer per store: a round's events committed together, off the
event loop, in order; every read sees what was written before it; a failed write stops
its run's later writes (the record stays a prefix); the record comes before each model
call; and the durability settings (WAL, synchronous=NORMAL)."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from harness.inputs.task_file import load_task
from harness.models.interface import ModelReply, ModelRequest, Usage
from harness.record.events import EventKind
from harness.record.store import RunStore, StoreError
from harness.record.writer import Writer
from harness.run.setup import run_task
from harness.workspace import sandbox as sandbox_module

# --- the store ------------------------------------------------------------------------------


def test_the_store_is_wal_with_synchronous_normal(tmp_path: Path) -> None:
    with RunStore(tmp_path / "runs.db") as store:
        store.create_run("t")
        conn = store._connection()
        assert str(conn.execute("PRAGMA journal_mode").fetchone()[0]).lower() == "wal"
        assert int(conn.execute("PRAGMA synchronous").fetchone()[0]) == 1  # NORMAL


def test_staged_events_commit_together_in_order_and_verify(tmp_path: Path) -> None:
    with RunStore(tmp_path / "runs.db") as store:
        run_id = store.create_run("t")
        staged = [store.stage(EventKind.NOTE, {"i": i}, round=1) for i in range(5)]
        written = store.commit_later(run_id, staged).result(timeout=10)
        assert [e.seq for e in written] == [2, 3, 4, 5, 6]
        assert [e.payload["i"] for e in written] == list(range(5))
        assert [e.at for e in written] == [s.at for s in staged]  # stamped when staged
        assert store.events(run_id)[1:] == written
        assert store.verify(run_id).ok


def test_a_read_sees_every_write_submitted_before_it(tmp_path: Path) -> None:
    with RunStore(tmp_path / "runs.db") as store:
        run_id = store.create_run("t", wait=False)  # not waited for
        for i in range(50):
            store.commit_later(run_id, [store.stage(EventKind.NOTE, {"i": i})])
        # No flush, no wait: the read itself waits for what came before it.
        assert len(store.events(run_id)) == 51
        assert store.verify(run_id).ok


def test_close_commits_what_is_queued(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    with RunStore(db) as store:
        run_id = store.create_run("t")
        for i in range(20):
            store.commit_later(run_id, [store.stage(EventKind.NOTE, {"i": i})])
    with RunStore(db, create=False) as reopened:
        assert len(reopened.events(run_id)) == 21
        assert reopened.verify(run_id).ok


def test_nothing_secret_is_queued(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-writer-test-0123456789abcdef")
    with RunStore(tmp_path / "runs.db") as store:
        staged = store.stage(EventKind.NOTE, {"said": "key sk-writer-test-0123456789abcdef"})
        assert "sk-writer-test" not in str(staged.payload)


def test_a_failed_deferred_write_stops_later_writes_of_that_run_only(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    with RunStore(db) as store:
        forged, other = store.create_run("t"), store.create_run("t")
        # A head whose MAC does not authenticate is never extended.
        raw = sqlite3.connect(db, isolation_level=None)
        raw.execute("UPDATE runs SET head_mac = ? WHERE run_id = ?", ("0" * 64, forged))
        raw.close()
        first = store.commit_later(forged, [store.stage(EventKind.NOTE, {"n": 1})])
        with pytest.raises(StoreError, match="not extended"):
            first.result(timeout=10)
        later = store.commit_later(forged, [store.stage(EventKind.NOTE, {"n": 2})])
        with pytest.raises(StoreError, match="an earlier event failed"):
            later.result(timeout=10)
        fine = store.commit_later(other, [store.stage(EventKind.NOTE, {"n": 3})])
        assert fine.result(timeout=10)[0].seq == 2
        assert store.verify(other).ok


# --- the writer -----------------------------------------------------------------------------


class Counting:
    """A transaction over one sqlite connection that counts commits and rollbacks."""

    def __init__(self) -> None:
        self.conn = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
        self.conn.execute("CREATE TABLE t (run TEXT, n INTEGER)")
        self.commits = 0
        self.rollbacks = 0

    @contextmanager
    def __call__(self) -> Iterator[sqlite3.Connection]:
        self.conn.execute("BEGIN")
        try:
            yield self.conn
        except BaseException:
            self.conn.execute("ROLLBACK")
            self.rollbacks += 1
            raise
        self.conn.execute("COMMIT")
        self.commits += 1

    def rows(self) -> list[tuple[str, int]]:
        return [(str(r), int(n)) for r, n in self.conn.execute("SELECT run, n FROM t ORDER BY n")]


def insert(run: str, n: int):  # type: ignore[no-untyped-def]
    def job(conn: sqlite3.Connection) -> int:
        conn.execute("INSERT INTO t VALUES (?, ?)", (run, n))
        return n

    return job


def test_what_is_queued_meanwhile_goes_in_one_transaction() -> None:
    tx = Counting()
    writer = Writer(tx, "test-writer")
    gate, holding = threading.Event(), threading.Event()

    def hold(conn: sqlite3.Connection) -> None:
        holding.set()
        gate.wait(10)

    try:
        writer.submit("hold", hold, deferred=False)
        assert holding.wait(10)
        futures = [writer.submit("a", insert("a", n), deferred=True) for n in range(10)]
        gate.set()
        assert [f.result(timeout=10) for f in futures] == list(range(10))
        assert tx.commits == 2  # the holding write, then the ten together
    finally:
        writer.stop()


def test_a_bad_write_in_a_batch_fails_alone_and_the_others_commit() -> None:
    tx = Counting()
    writer = Writer(tx, "test-writer")
    gate = threading.Event()

    def broken(conn: sqlite3.Connection) -> None:
        conn.execute("INSERT INTO t VALUES ('b', 1)")
        raise sqlite3.OperationalError("disk I/O error")

    holding = threading.Event()

    def hold(conn: sqlite3.Connection) -> None:
        holding.set()
        gate.wait(10)

    try:
        writer.submit("hold", hold, deferred=False)
        assert holding.wait(10)
        good_a = writer.submit("a", insert("a", 0), deferred=True)
        bad = writer.submit("b", broken, deferred=True)
        good_c = writer.submit("c", insert("c", 2), deferred=True)
        after_bad = writer.submit("b", insert("b", 3), deferred=True)
        gate.set()
        assert good_a.result(timeout=10) == 0 and good_c.result(timeout=10) == 2
        with pytest.raises(sqlite3.OperationalError):
            bad.result(timeout=10)
        with pytest.raises(StoreError, match="an earlier event failed"):
            after_bad.result(timeout=10)
        assert tx.rows() == [("a", 0), ("c", 2)]  # the batch's rollback undid nothing kept
        assert tx.rollbacks == 2  # the batch, then the bad write alone
    finally:
        writer.stop()


def test_wait_returns_once_earlier_writes_are_done() -> None:
    tx = Counting()
    writer = Writer(tx, "test-writer")
    try:
        for n in range(100):
            writer.submit("a", insert("a", n), deferred=True)
        writer.wait()
        assert len(tx.rows()) == 100
    finally:
        writer.stop()
    with pytest.raises(RuntimeError, match="closed"):
        writer.submit("a", insert("a", 0), deferred=True)


# --- the orchestrator -----------------------------------------------------------------------

TASK = """[task]
id = "writer"
objective = "Say hello."

[budget.rounds]
limit = 2
"""


class Peeking:
    """A model that, at each call, reads the record through another connection: what the
    run recorded before the call must already be committed there."""

    name = "peek:model"

    def __init__(self, db: Path) -> None:
        self.db = db
        self.seen: list[list[str]] = []

    async def complete(self, request: ModelRequest) -> ModelReply:
        with RunStore(self.db, create=False) as other:
            [run] = other.list_runs()
            self.seen.append([str(e.kind) for e in other.events(run.run_id)])
        return ModelReply(text="Hello.", usage=Usage(input_tokens=10, output_tokens=2))


def test_the_record_is_committed_before_each_model_call(tmp_path: Path) -> None:
    task_file = tmp_path / "task.toml"
    task_file.write_text(TASK)
    task = load_task(task_file)
    db = tmp_path / "runs.db"
    model = Peeking(db)
    with RunStore(db) as store:
        result = asyncio.run(run_task(task, store, client=model))  # type: ignore[arg-type]
        events = store.events(result.run_id)
        assert store.verify(result.run_id).ok
    assert len(model.seen) == 2
    first, second = model.seen
    assert first[0] == "run_started" and first[-1] == "allowance"
    # The first round's call, snapshot and the next allowance are all there for the second.
    assert second[-1] == "allowance" and "model_call" in second
    assert second == [str(e.kind) for e in events][: len(second)]
    assert str(events[-1].kind) == "run_ended"  # committed before run_task returned


# --- the sandbox lookup ---------------------------------------------------------------------


def test_bwrap_is_looked_up_again_when_path_changes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first, second = tmp_path / "one", tmp_path / "two"
    for folder in (first, second):
        folder.mkdir()
        (folder / "bwrap").write_text("#!/bin/sh\n")
        (folder / "bwrap").chmod(0o755)
    monkeypatch.setenv("PATH", str(first))
    assert sandbox_module.find_bwrap() == first / "bwrap"
    monkeypatch.setenv("PATH", str(second))
    assert sandbox_module.find_bwrap() == second / "bwrap"
    (first / "bwrap").unlink()  # remembered, but gone: looked up again
    monkeypatch.setenv("PATH", str(first))
    assert sandbox_module.find_bwrap() != first / "bwrap"
