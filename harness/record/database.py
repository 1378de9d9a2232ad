"""The run record's SQLite layer: schema, connection settings, transactions' error
handling, and decoding rows (which may have been tampered with) into typed values.

`harness.record.store` builds the append-only API on top of this; nothing else opens the
database.
"""

from __future__ import annotations

import json
import random
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Final

from pydantic import ValidationError

from harness.record.events import Event, EventKind, RunSummary, StoredEvent
from harness.record.log import LazyLogger

log = LazyLogger(__name__)

SCHEMA_VERSION: Final = 2
"""1: the hash chain and its head. 2: the head's MAC (`head_mac`, `key_id`, see
`harness.record.keys`); a version-1 store is migrated on open, its runs stay without a
MAC and verify as unauthenticated (legacy)."""


class StoreError(Exception):
    """The run store cannot do what was asked; the message is meant for the user."""


class UnknownRun(StoreError, LookupError):
    """No run matches the given id or id prefix."""


class AmbiguousRun(UnknownRun):
    """An id prefix matches more than one run."""


SCHEMA: Final = (
    """
    CREATE TABLE IF NOT EXISTS runs (
        run_id     TEXT PRIMARY KEY,
        task_id    TEXT NOT NULL,
        created_at TEXT NOT NULL,
        meta       TEXT NOT NULL,
        head_seq   INTEGER NOT NULL,
        head_hash  TEXT NOT NULL,
        head_mac   TEXT,
        key_id     TEXT
    )
    """,
    """
    CREATE TABLE IF NOT EXISTS events (
        run_id    TEXT NOT NULL REFERENCES runs(run_id),
        seq       INTEGER NOT NULL,
        kind      TEXT NOT NULL,
        round     INTEGER NOT NULL,
        at        TEXT NOT NULL,
        payload   TEXT NOT NULL,
        prev_hash TEXT NOT NULL,
        hash      TEXT NOT NULL,
        PRIMARY KEY (run_id, seq)
    )
    """,
    "CREATE INDEX IF NOT EXISTS events_by_kind ON events(run_id, kind, seq)",
    # Append-only by construction: a bug (or a careless `sqlite3` session) cannot change
    # the record silently; deliberate tampering must drop these first and `verify` sees it.
    """
    CREATE TRIGGER IF NOT EXISTS events_no_update BEFORE UPDATE ON events
    BEGIN SELECT RAISE(ABORT, 'run record is append-only: events cannot be updated'); END
    """,
    """
    CREATE TRIGGER IF NOT EXISTS events_no_delete BEFORE DELETE ON events
    BEGIN SELECT RAISE(ABORT, 'run record is append-only: events cannot be deleted'); END
    """,
)

EVENT_COLUMNS: Final = "run_id, seq, kind, round, at, payload, prev_hash, hash"

#: The runs row as the head's MAC covers it (`harness.record.integrity.HeadRow`).
HEAD_COLUMNS: Final = "run_id, task_id, created_at, meta, head_seq, head_hash, head_mac, key_id"

# One query serves `list_runs` and `get_run`. `ended_by` needs to know whether a state
# change followed the last run_ended (a resumed run is not ended), hence the seqs. The
# last stored event (seq, hash) lets the summary check the authenticated head cheaply.
SUMMARY_SELECT: Final = """
    SELECT r.run_id, r.task_id, r.created_at, r.meta, r.head_seq,
        (SELECT COUNT(*) FROM events e WHERE e.run_id = r.run_id),
        (SELECT e.payload FROM events e WHERE e.run_id = r.run_id AND e.kind = 'state_change'
            ORDER BY e.seq DESC LIMIT 1),
        (SELECT e.seq FROM events e WHERE e.run_id = r.run_id AND e.kind = 'state_change'
            ORDER BY e.seq DESC LIMIT 1),
        (SELECT e.payload FROM events e WHERE e.run_id = r.run_id AND e.kind = 'run_ended'
            ORDER BY e.seq DESC LIMIT 1),
        (SELECT e.seq FROM events e WHERE e.run_id = r.run_id AND e.kind = 'run_ended'
            ORDER BY e.seq DESC LIMIT 1),
        r.head_hash, r.head_mac, r.key_id,
        (SELECT e.seq FROM events e WHERE e.run_id = r.run_id ORDER BY e.seq DESC LIMIT 1),
        (SELECT e.hash FROM events e WHERE e.run_id = r.run_id ORDER BY e.seq DESC LIMIT 1)
    FROM runs r
"""


def tables_of(path: Path) -> set[str] | None:
    """The tables of the SQLite database at `path` (SQLite's own aside), read through a
    read-only connection that changes nothing; None when it cannot be read so (not a
    database, a WAL it cannot read without writing…): the store's open then says why."""
    try:
        # No wait: a database another process holds locked is the open's to report,
        # once, within its busy timeout.
        conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, timeout=0)
    except (sqlite3.Error, OSError, ValueError):
        return None
    try:
        rows = conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall()
    except sqlite3.Error:
        return None
    finally:
        conn.close()
    return {str(row[0]) for row in rows if not str(row[0]).startswith("sqlite_")}


def refuse_what_is_no_store(path: Path) -> None:
    """An existing database of something else is never made a run store by opening it:
    `--store app.db` (another program's database) had the record's tables and triggers
    added and its journal switched to WAL, by `ilh runs list` too. A database with no
    tables at all is let through: it is also what a store being created by another
    process looks like until its first commit (the schema is one transaction), and a
    reader must wait for that, not refuse it."""
    tables = tables_of(path)
    if tables and "runs" not in tables:
        held = ", ".join(sorted(tables)[:5]) + (", …" if len(tables) > 5 else "")
        raise StoreError(
            f"{path} is a SQLite database that is not a run store (its tables: {held}): "
            "name a run store file"
        )


def open_database(path: Path, busy_timeout_s: float) -> sqlite3.Connection:
    """Open (and if needed initialise) the database with the durability settings."""
    try:
        # isolation_level=None: we issue BEGIN/COMMIT ourselves (the module's implicit
        # transactions would start deferred ones, which is what BEGIN IMMEDIATE avoids).
        conn = sqlite3.connect(
            str(path), timeout=busy_timeout_s, isolation_level=None, check_same_thread=False
        )
    except sqlite3.Error as exc:
        raise StoreError(f"cannot open run store {path}: {exc}") from exc
    try:
        with sqlite_errors(path):
            conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout_s * 1000)}")
            mode = _write_ahead_log(conn, busy_timeout_s)
            if mode.lower() != "wal":
                log.warning("store.no_wal", path=str(path), journal_mode=mode)
            # NORMAL: a commit survives a killed process; a power loss may cost the last
            # ones (see `harness.record.store`). FULL fsynced every event, on the loop.
            conn.execute("PRAGMA synchronous = NORMAL")
            conn.execute("PRAGMA foreign_keys = ON")
            ensure_schema(conn, path)
    except BaseException:
        conn.close()
        raise
    return conn


#: Waits between tries of the switch to WAL while another connection holds the file.
_WAL_RETRY_S: Final = (0.002, 0.02)


def _write_ahead_log(conn: sqlite3.Connection, busy_timeout_s: float) -> str:
    """Switch to WAL (a no-op for a store already in it); the journal mode it is in after.

    SQLite answers a journal-mode switch that meets another connection's lock with
    "database is locked" at once, without its busy handler: two commands opening a new
    store together (`ilh run` while `ilh runs list` looks, two runs started at once) had
    one of them fail (E500) about once in thirty. Retried here within the same busy
    timeout every other statement of the store waits."""
    deadline = time.monotonic() + busy_timeout_s
    while True:
        try:
            return str(conn.execute("PRAGMA journal_mode = WAL").fetchone()[0])
        except sqlite3.OperationalError as err:
            # Extended codes (SQLITE_BUSY_RECOVERY, ...) are busy too: the low byte is the code.
            busy = (err.sqlite_errorcode & 0xFF) in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)
            if not busy or time.monotonic() >= deadline:
                raise
        time.sleep(random.uniform(*_WAL_RETRY_S))  # apart: two waiters do not meet again


def open_read_only(path: Path, busy_timeout_s: float) -> sqlite3.Connection:
    """Open the database for reading only, for a store that cannot be written (a
    read-only mount, a folder the user may not write). No schema set-up (it writes).

    SQLite reads a WAL database through its index file (-shm), which it creates when
    absent: `mode=ro` works when the -shm file is there (a store left by a killed writer)
    or can be made. When it cannot, and no WAL file holds events the main file lacks
    (a store closed cleanly leaves none), `immutable=1` reads the file without the index
    or any locking, which is sound because nothing can write it. A WAL with content
    and no usable index cannot be read that way (`immutable` would not see the WAL):
    that is an error, never a silently shorter record."""
    uri = path.resolve().as_uri()
    try:
        return _checked_read_only(f"{uri}?mode=ro", path, busy_timeout_s)
    except sqlite3.Error as err:
        first = err
    wal = path.with_name(path.name + "-wal")
    try:
        wal_bytes = wal.stat().st_size
    except OSError:
        wal_bytes = 0
    if wal_bytes:
        raise StoreError(
            f"cannot read the run store {path} read-only: its write-ahead log {wal.name} "
            f"holds changes that need {path.name}-shm, which cannot be created here "
            f"({first}); open it once where it can be written"
        )
    try:
        return _checked_read_only(f"{uri}?mode=ro&immutable=1", path, busy_timeout_s)
    except sqlite3.Error as err:
        raise StoreError(f"cannot open the run store {path} read-only: {err}") from None


def _checked_read_only(uri: str, path: Path, busy_timeout_s: float) -> sqlite3.Connection:
    conn = sqlite3.connect(
        uri, uri=True, timeout=busy_timeout_s, isolation_level=None, check_same_thread=False
    )
    try:
        conn.execute("PRAGMA query_only = ON")
        # Reading the schema version opens the file (and its WAL index) for real.
        version = int(conn.execute("PRAGMA user_version").fetchone()[0])
        if version > SCHEMA_VERSION:
            raise StoreError(
                f"run store {path} has schema version {version}; this ilh understands "
                f"up to {SCHEMA_VERSION} (upgrade ilang-harness)"
            )
        if version < SCHEMA_VERSION:  # its migration writes
            raise StoreError(
                f"run store {path} has schema version {version}; read-only, this ilh "
                f"reads version {SCHEMA_VERSION} (open it once where it can be written)"
            )
    except BaseException:
        conn.close()
        raise
    return conn


def ensure_schema(conn: sqlite3.Connection, path: Path) -> None:
    conn.execute("BEGIN IMMEDIATE")
    try:
        version = int(conn.execute("PRAGMA user_version").fetchone()[0])
        if version > SCHEMA_VERSION:
            raise StoreError(
                f"run store {path} has schema version {version}; this ilh understands "
                f"up to {SCHEMA_VERSION} (upgrade ilang-harness)"
            )
        # IF NOT EXISTS on every open also restores the append-only triggers if dropped.
        for statement in SCHEMA:
            conn.execute(statement)
        columns = {str(row[1]) for row in conn.execute("PRAGMA table_info(runs)")}
        for column in ("head_mac", "key_id"):
            if column not in columns:  # a version-1 store: its runs keep NULL (legacy)
                conn.execute(f"ALTER TABLE runs ADD COLUMN {column} TEXT")
        if version < SCHEMA_VERSION:
            conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
    except BaseException:
        rollback(conn)
        raise
    conn.execute("COMMIT")


def rollback(conn: sqlite3.Connection) -> None:
    """Roll back if a transaction is still open: SQLite may already have rolled back by
    itself (disk full, I/O error), and a second failure must not hide the first."""
    if conn.in_transaction:
        conn.execute("ROLLBACK")


@contextmanager
def sqlite_errors(path: Path) -> Iterator[None]:
    """Turn SQLite failures (locked too long, not a database, disk full) into StoreError."""
    try:
        yield
    except sqlite3.Error as exc:
        raise StoreError(f"run store {path}: {exc}") from exc


def as_int(value: object) -> int:
    """SQLite columns are dynamically typed; a tampered row may hold text in a number
    column. -1 never validates, so the hash check then reports that row."""
    if isinstance(value, int):
        return value
    try:
        return int(str(value))
    except ValueError:
        return -1


def row_to_stored(row: tuple[Any, ...]) -> StoredEvent:
    return StoredEvent(
        run_id=str(row[0]),
        seq=as_int(row[1]),
        kind=str(row[2]),
        round=as_int(row[3]),
        at=str(row[4]),
        payload_text=str(row[5]),
        prev_hash=str(row[6]),
        hash=str(row[7]),
    )


def row_to_event(row: tuple[Any, ...]) -> Event:
    stored = row_to_stored(row)
    try:
        return Event(
            run_id=stored.run_id,
            seq=stored.seq,
            kind=EventKind(stored.kind),
            round=stored.round,
            at=stored.at,
            payload=json.loads(stored.payload_text),
            prev_hash=stored.prev_hash,
            hash=stored.hash,
        )
    except (ValueError, ValidationError) as exc:
        raise StoreError(
            f"run {stored.run_id}: event seq {stored.seq} is unreadable ({exc}); "
            f"`ilh runs verify {stored.run_id}` reports what was changed"
        ) from exc


def row_to_summary(row: tuple[Any, ...], record: str) -> RunSummary:
    """`record`: what the cheap check of the authenticated head found (`integrity`)."""
    state_payload, state_seq, ended_payload, ended_seq = row[6], row[7], row[8], row[9]
    ended_by: str | None = None
    # A resume commits a new state after run_ended, so only a still-final end counts.
    if ended_seq is not None and (state_seq is None or int(ended_seq) > int(state_seq)):
        ended_by = payload_str(ended_payload, "ended_by")
    return RunSummary(
        run_id=str(row[0]),
        task_id=str(row[1]),
        created_at=str(row[2]),
        meta=json_object(row[3]),
        head_seq=as_int(row[4]),
        events=int(row[5]),
        last_state=payload_str(state_payload, "state"),
        ended_by=ended_by,
        record=record,
    )


def optional_str(value: object) -> str | None:
    return None if value is None else str(value)


def json_object(text: object) -> dict[str, Any]:
    try:
        value = json.loads(str(text))
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def payload_str(text: object, key: str) -> str | None:
    if text is None:
        return None
    value = json_object(text).get(key)
    return value if isinstance(value, str) else None
