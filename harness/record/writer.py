"""The run store's one writer: a thread that performs every write of a `RunStore`, in the
order they were submitted, several to a transaction.

Why a thread: a commit is a system call (and, at a checkpoint, an fsync) that would
otherwise stop the event loop every tasks of a batch share. Why one: the hash chain is
built from the head inside the write transaction, so writes of one store must not race
each other (other processes still queue on SQLite's own write lock). Why batches: what
was submitted while the previous transaction ran goes into the next one, so a round's
events (and those of every other task of a batch) cost one commit, not one each.

A write that fails inside a batch rolls the batch back; each of its writes is then
retried alone, so that only the one at fault fails and its error reaches its own caller.
A deferred write that fails (`Writer.submit(..., deferred=True)`) also stops every later
write to that run through this writer: the record must stay a prefix of what happened,
never a chain with an event missing in the middle.
"""

from __future__ import annotations

import queue
import sqlite3
import threading
from collections.abc import Callable
from concurrent.futures import Future
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any, Final

from harness.record.database import StoreError
from harness.record.log import LazyLogger

log = LazyLogger(__name__)

#: At most this many writes in one transaction: a bound on how long the write lock is held
#: (other processes writing the same file wait for it).
MAX_BATCH: Final = 512

Job = Callable[[sqlite3.Connection], Any]
Transaction = Callable[[], AbstractContextManager[sqlite3.Connection]]


@dataclass(frozen=True, slots=True)
class Write:
    run_id: str
    job: Job
    future: Future[Any]
    deferred: bool


_STOP: Final = object()


class Writer:
    """Owns the thread; `transaction` opens one write transaction of the store (and
    serialises it with the store's reads)."""

    def __init__(self, transaction: Transaction, name: str) -> None:
        self._transaction = transaction
        self._queue: queue.SimpleQueue[Write | object] = queue.SimpleQueue()
        self._done = threading.Condition()
        self._submitted = 0  # guarded by _done
        self._completed = 0  # guarded by _done
        self._failed: dict[str, str] = {}  # run_id -> why (only touched by the thread)
        self._thread = threading.Thread(target=self._loop, name=name, daemon=True)
        self._started = False
        self._stopped = False

    # -- the caller's side -------------------------------------------------------------

    def submit(self, run_id: str, job: Job, *, deferred: bool) -> Future[Any]:
        """Queue `job` (run inside a write transaction on the writer thread); its result
        or error arrives in the returned future."""
        future: Future[Any] = Future()
        with self._done:
            if self._stopped:
                raise RuntimeError("the run store is closed")
            if not self._started:
                self._thread.start()
                self._started = True
            self._submitted += 1
            self._queue.put(Write(run_id, job, future, deferred))
        return future

    def wait(self) -> None:
        """Block until every write submitted before this call is committed (or failed):
        what a read must see. Later submissions (other tasks, other threads) do not hold
        it up."""
        with self._done:
            target = self._submitted
            while self._completed < target and self._thread.is_alive():
                self._done.wait()

    def stop(self) -> None:
        """Commit what is queued, then end the thread; idempotent."""
        with self._done:
            if self._stopped:
                return
            self._stopped = True
            started = self._started
        if started:
            self._queue.put(_STOP)
            self._thread.join()

    # -- the thread --------------------------------------------------------------------

    def _loop(self) -> None:
        stop = False
        while not stop:
            batch: list[Write] = []
            item = self._queue.get()
            while True:
                if item is _STOP:
                    stop = True
                    break
                assert isinstance(item, Write)
                batch.append(item)
                if len(batch) >= MAX_BATCH:
                    break
                try:
                    item = self._queue.get_nowait()
                except queue.Empty:
                    break
            if batch:
                self._commit(batch)
                with self._done:
                    self._completed += len(batch)
                    self._done.notify_all()

    def _commit(self, batch: list[Write]) -> None:
        runnable = [w for w in batch if not self._refused(w)]
        if not runnable:
            return
        try:
            with self._transaction() as conn:
                results = [w.job(conn) for w in runnable]
        except BaseException:
            # The whole batch was rolled back: each write again, alone.
            for write in runnable:
                if not self._refused(write):
                    self._one(write)
            return
        for write, result in zip(runnable, results, strict=True):
            write.future.set_result(result)

    def _one(self, write: Write) -> None:
        try:
            with self._transaction() as conn:
                result = write.job(conn)
        except BaseException as exc:  # the caller gets it, whatever it is
            if write.deferred:
                self._failed[write.run_id] = str(exc)
                log.error("store.deferred_write_failed", run_id=write.run_id, error=str(exc))
            write.future.set_exception(exc)
        else:
            write.future.set_result(result)

    def _refused(self, write: Write) -> bool:
        why = self._failed.get(write.run_id)
        if why is None:
            return False
        write.future.set_exception(
            StoreError(f"run {write.run_id}: not extended: an earlier event failed ({why})")
        )
        return True
