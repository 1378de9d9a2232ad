"""Review 7 of the WAL-switch retry (590e2ef): a store another process holds locked (an
exclusive lock it never lets go) must end a reading command (`ilh runs list`) with one
clear "locked" error within the busy timeout. It waited out the timeout, then took the
lock for "cannot be written" and retried read-only, waiting again (3 x 30 s by default)
before a wrong diagnosis (a WAL "which cannot be created here")."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.record.database import StoreError
from harness.record.store import RunStore

# The holder: takes the store's lock and keeps it until killed. `wal`: a WAL store in
# exclusive locking mode (nobody else may even read it); `rollback`: a new store in
# the middle of an exclusive transaction (what `ilh run` creating it looks like).
HOLDER = """
import sqlite3, sys, time
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
if sys.argv[2] == "wal":
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA locking_mode = EXCLUSIVE")
    conn.execute("CREATE TABLE t(x)")
    conn.execute("SELECT * FROM t").fetchall()
else:
    conn.execute("BEGIN EXCLUSIVE")
    conn.execute("CREATE TABLE t(x)")
print("held", flush=True)
time.sleep(600)
"""


@pytest.fixture(params=["wal", "rollback"])
def held_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Path]:
    path = tmp_path / "runs.db"
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(path), request.param],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        yield path
    finally:
        holder.kill()
        holder.wait()


@pytest.mark.parametrize("read_only_if_unwritable", [True, False])
def test_a_store_locked_by_another_process_fails_once_within_the_busy_timeout(
    held_store: Path, read_only_if_unwritable: bool
) -> None:
    started = time.monotonic()
    with pytest.raises(StoreError) as caught:
        RunStore(
            held_store,
            create=False,
            busy_timeout_s=1.0,
            read_only_if_unwritable=read_only_if_unwritable,
        )
    elapsed = time.monotonic() - started
    assert elapsed < 1.8, elapsed  # one busy timeout (1 s), not one per way of opening
    message = str(caught.value)
    assert "locked" in message and str(held_store) in message, message
    assert "cannot be created" not in message and "schema version" not in message, message
