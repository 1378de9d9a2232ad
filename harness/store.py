"""The run record: an embedded SQLite store of append-only, hash-chained events.

Durability: the database runs in WAL mode with ``synchronous=FULL`` and every event is its
own transaction, so once `append` returns the event survives a SIGKILL (or power loss) and
a killed run leaves a readable, verifiable record; `ilh run --resume` continues from it.

Integrity: each event carries the sha256 of its content and of the event before it (see
`harness.events`). A chain alone cannot reveal a cut-off tail, so the ``runs`` row keeps
the head (last seq + last hash), updated in the same transaction as each append;
`verify` compares the chain with it. Triggers refuse UPDATE/DELETE on events so that no
code path edits the record by accident. What this cannot catch: someone who rewrites the
whole chain from the edit onwards *and* the head with the public hash rule — there is no
secret key in the file; copy the head elsewhere if that matters.

Concurrency: several writers (threads or processes, e.g. ``--concurrency N``) may share
one file. Appends take the write lock up front (``BEGIN IMMEDIATE``) so reading the head
and writing the next event cannot interleave, and a busy timeout makes writers queue
instead of failing. Reads that combine several queries run in one read transaction so
they see one snapshot (otherwise `verify` could race an append and report a false cut).
"""

from __future__ import annotations

import json
import secrets
import sqlite3
import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType
from typing import IO, Any, Final, Self

import structlog
from pydantic import ValidationError

from harness.events import (
    GENESIS_HASH,
    Event,
    EventKind,
    RunSummary,
    StoredEvent,
    VerifyResult,
    canonical_json,
    check_chain,
    event_hash,
    normalize_payload,
    redact,
    utc_now_iso,
)

__all__ = [
    "DEFAULT_STORE_PATH",
    "AmbiguousRun",
    "Redactor",
    "RunStore",
    "StoreError",
    "UnknownRun",
    "new_run_id",
]

log = structlog.get_logger(__name__)

DEFAULT_STORE_PATH: Final = Path(".ilh") / "runs.db"
SCHEMA_VERSION: Final = 1
DEFAULT_BUSY_TIMEOUT_S: Final = 30.0

Redactor = Callable[[Mapping[str, Any]], dict[str, Any]]

_SCHEMA: Final = (
    """
    CREATE TABLE IF NOT EXISTS runs (
        run_id     TEXT PRIMARY KEY,
        task_id    TEXT NOT NULL,
        created_at TEXT NOT NULL,
        meta       TEXT NOT NULL,
        head_seq   INTEGER NOT NULL,
        head_hash  TEXT NOT NULL
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

_EVENT_COLUMNS: Final = "run_id, seq, kind, round, at, payload, prev_hash, hash"

# One query serves `list_runs` and `get_run`. `ended_by` needs to know whether a state
# change followed the last run_ended (a resumed run is not ended), hence the seqs.
_SUMMARY_SELECT: Final = """
    SELECT r.run_id, r.task_id, r.created_at, r.meta, r.head_seq,
        (SELECT COUNT(*) FROM events e WHERE e.run_id = r.run_id),
        (SELECT e.payload FROM events e WHERE e.run_id = r.run_id AND e.kind = 'state_change'
            ORDER BY e.seq DESC LIMIT 1),
        (SELECT e.seq FROM events e WHERE e.run_id = r.run_id AND e.kind = 'state_change'
            ORDER BY e.seq DESC LIMIT 1),
        (SELECT e.payload FROM events e WHERE e.run_id = r.run_id AND e.kind = 'run_ended'
            ORDER BY e.seq DESC LIMIT 1),
        (SELECT e.seq FROM events e WHERE e.run_id = r.run_id AND e.kind = 'run_ended'
            ORDER BY e.seq DESC LIMIT 1)
    FROM runs r
"""


class StoreError(Exception):
    """The run store cannot do what was asked; the message is meant for the user."""


class UnknownRun(StoreError, LookupError):
    """No run matches the given id or id prefix."""


class AmbiguousRun(UnknownRun):
    """An id prefix matches more than one run."""


def new_run_id(now: datetime | None = None) -> str:
    """A run id that sorts by creation time (ms) and is unique: `20250101T120000123-<hex>`."""
    moment = (now or datetime.now(UTC)).astimezone(UTC)
    stamp = f"{moment:%Y%m%dT%H%M%S}{moment.microsecond // 1000:03d}"
    return f"{stamp}-{secrets.token_hex(6)}"


class RunStore:
    """Append-only, hash-chained run records in one SQLite file.

    One instance may be shared by threads (calls are serialised by a lock); several
    instances or processes may also open the same file at once.
    """

    def __init__(
        self,
        path: Path | str = DEFAULT_STORE_PATH,
        *,
        create: bool = True,
        redactor: Redactor = redact,
        busy_timeout_s: float = DEFAULT_BUSY_TIMEOUT_S,
    ) -> None:
        self._path = Path(path)
        self._redactor = redactor
        self.created_run_ids: list[str] = []  # by this instance, oldest first
        self._lock = threading.RLock()
        if not self._path.exists():
            if not create:
                raise StoreError(f"no run store at {self._path}")
            self._path.parent.mkdir(parents=True, exist_ok=True)
        self._conn: sqlite3.Connection | None = _open(self._path, busy_timeout_s)

    # -- lifecycle ---------------------------------------------------------------------

    @property
    def path(self) -> Path:
        return self._path

    def close(self) -> None:
        """Close the connection; idempotent. Committed events are already durable."""
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    # -- writing -----------------------------------------------------------------------

    def create_run(self, task_id: str, meta: Mapping[str, Any] | None = None) -> str:
        """Create a run and its `run_started` event (one transaction); returns the run id.

        `meta` (redacted like any payload) is kept on the run row and, so that it is
        covered by the chain, in the run_started payload.
        """
        if not task_id:
            raise StoreError("task_id must not be empty")
        clean_meta = self._clean({} if meta is None else meta)
        run_id = new_run_id()
        with self._write() as conn:
            at = utc_now_iso()
            conn.execute(
                "INSERT INTO runs (run_id, task_id, created_at, meta, head_seq, head_hash)"
                " VALUES (?, ?, ?, ?, 0, ?)",
                (run_id, task_id, at, canonical_json(clean_meta), GENESIS_HASH),
            )
            _append_locked(
                conn,
                run_id,
                EventKind.RUN_STARTED,
                {"task_id": task_id, "meta": clean_meta},
                round_=0,
                at=at,
            )
        log.info("store.run_created", run_id=run_id, task_id=task_id, path=str(self._path))
        self.created_run_ids.append(run_id)
        return run_id

    def append(
        self,
        run_id: str,
        kind: EventKind | str,
        payload: Mapping[str, Any] | None = None,
        round: int = 0,  # shadows the builtin on purpose: the field is `round`
    ) -> Event:
        """Commit one event to the end of `run_id`'s chain and return it as stored.

        `run_id` must be exact (a write never guesses from a prefix). The payload is
        redacted, then normalised to plain JSON; a payload JSON cannot carry exactly
        (NaN, arbitrary objects) is refused rather than stored unverifiably.
        """
        event_kind = _as_kind(kind)
        if round < 0:
            raise StoreError(f"round must be >= 0, got {round}")
        clean = self._clean({} if payload is None else payload)
        with self._write() as conn:
            event = _append_locked(conn, run_id, event_kind, clean, round_=round)
        log.debug("store.appended", run_id=run_id, seq=event.seq, kind=str(event_kind))
        return event

    # -- reading -----------------------------------------------------------------------

    def resolve_run_id(self, run_ref: str) -> str:
        """The full id of the one run whose id is `run_ref` or starts with it."""
        with self._read() as conn:
            return _resolve(conn, run_ref)

    def events(self, run_id: str, kind: EventKind | str | None = None) -> list[Event]:
        """All events of a run in seq order, optionally only those of one kind."""
        with self._read() as conn:
            full_id = _resolve(conn, run_id)
            if kind is None:
                rows = conn.execute(
                    f"SELECT {_EVENT_COLUMNS} FROM events WHERE run_id = ? ORDER BY seq",
                    (full_id,),
                ).fetchall()
            else:
                rows = conn.execute(
                    f"SELECT {_EVENT_COLUMNS} FROM events WHERE run_id = ? AND kind = ?"
                    " ORDER BY seq",
                    (full_id, str(_as_kind(kind))),
                ).fetchall()
        return [_row_to_event(row) for row in rows]

    def last_event(self, run_id: str, kind: EventKind | str | None = None) -> Event | None:
        """The most recent event of a run (of `kind`, if given); what `--resume` starts from."""
        with self._read() as conn:
            full_id = _resolve(conn, run_id)
            if kind is None:
                row = conn.execute(
                    f"SELECT {_EVENT_COLUMNS} FROM events WHERE run_id = ?"
                    " ORDER BY seq DESC LIMIT 1",
                    (full_id,),
                ).fetchone()
            else:
                row = conn.execute(
                    f"SELECT {_EVENT_COLUMNS} FROM events WHERE run_id = ? AND kind = ?"
                    " ORDER BY seq DESC LIMIT 1",
                    (full_id, str(_as_kind(kind))),
                ).fetchone()
        return None if row is None else _row_to_event(row)

    def list_runs(self) -> list[RunSummary]:
        """Every run, oldest first."""
        with self._read() as conn:
            rows = conn.execute(_SUMMARY_SELECT + " ORDER BY r.created_at, r.rowid").fetchall()
        return [_row_to_summary(row) for row in rows]

    def get_run(self, run_ref: str) -> RunSummary:
        """The summary of one run, by full id or unique id prefix."""
        with self._read() as conn:
            full_id = _resolve(conn, run_ref)
            row = conn.execute(_SUMMARY_SELECT + " WHERE r.run_id = ?", (full_id,)).fetchone()
        return _row_to_summary(row)

    def export_jsonl(self, run_id: str, out: IO[str]) -> int:
        """Write the run's events to `out`, one canonical JSON object per line; returns
        how many. Each line parses back with `Event.model_validate_json`."""
        events = self.events(run_id)
        for event in events:
            out.write(event.to_json_line() + "\n")
        return len(events)

    # -- verification ------------------------------------------------------------------

    def verify(self, run_id: str) -> VerifyResult:
        """Check a run's record for any edit, deletion, insertion, reordering or cut tail.

        Raises UnknownRun if no such run; every other defect is reported in `problems`,
        each naming the seq (or the runs row) it concerns.
        """
        with self._read() as conn:
            full_id = _resolve(conn, run_id)
            run_row = conn.execute(
                "SELECT task_id, created_at, meta, head_seq, head_hash FROM runs WHERE run_id = ?",
                (full_id,),
            ).fetchone()
            rows = [
                _row_to_stored(row)
                for row in conn.execute(
                    f"SELECT {_EVENT_COLUMNS} FROM events WHERE run_id = ? ORDER BY seq",
                    (full_id,),
                )
            ]
        problems, checked = check_chain(full_id, rows)
        head_seq, head_hash = _as_int(run_row[3]), str(run_row[4])
        problems.extend(_check_head(rows, head_seq, head_hash))
        problems.extend(_check_run_row(rows, str(run_row[0]), str(run_row[1]), str(run_row[2])))
        result = VerifyResult(run_id=full_id, ok=not problems, checked=checked, problems=problems)
        if not result.ok:
            log.warning("store.verify_failed", run_id=full_id, problems=len(problems))
        return result

    # -- internals ---------------------------------------------------------------------

    def _clean(self, payload: Mapping[str, Any]) -> dict[str, Any]:
        """Redact, then reduce to plain JSON; every payload and meta passes through here."""
        try:
            return normalize_payload(self._redactor(payload))
        except (TypeError, ValueError) as exc:
            raise StoreError(f"payload cannot be stored as JSON: {exc}") from exc

    def _connection(self) -> sqlite3.Connection:
        if self._conn is None:
            raise StoreError(f"run store {self._path} is closed")
        return self._conn

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        """One write transaction holding the database write lock from its first statement."""
        with self._lock:
            conn = self._connection()
            with _sqlite_errors(self._path):
                conn.execute("BEGIN IMMEDIATE")
                try:
                    yield conn
                except BaseException:
                    _rollback(conn)
                    raise
                conn.execute("COMMIT")

    @contextmanager
    def _read(self) -> Iterator[sqlite3.Connection]:
        """One read transaction: all queries inside see the same committed snapshot."""
        with self._lock:
            conn = self._connection()
            with _sqlite_errors(self._path):
                conn.execute("BEGIN")
                try:
                    yield conn
                finally:
                    if conn.in_transaction:
                        conn.execute("COMMIT")


# --- module helpers ----------------------------------------------------------------------


def _open(path: Path, busy_timeout_s: float) -> sqlite3.Connection:
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
        with _sqlite_errors(path):
            conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout_s * 1000)}")
            mode = str(conn.execute("PRAGMA journal_mode = WAL").fetchone()[0])
            if mode.lower() != "wal":
                log.warning("store.no_wal", path=str(path), journal_mode=mode)
            conn.execute("PRAGMA synchronous = FULL")
            conn.execute("PRAGMA foreign_keys = ON")
            _ensure_schema(conn, path)
    except BaseException:
        conn.close()
        raise
    return conn


def _ensure_schema(conn: sqlite3.Connection, path: Path) -> None:
    conn.execute("BEGIN IMMEDIATE")
    try:
        version = int(conn.execute("PRAGMA user_version").fetchone()[0])
        if version > SCHEMA_VERSION:
            raise StoreError(
                f"run store {path} has schema version {version}; this ilh understands "
                f"up to {SCHEMA_VERSION} (upgrade ilang-harness)"
            )
        # IF NOT EXISTS on every open also restores the append-only triggers if dropped.
        for statement in _SCHEMA:
            conn.execute(statement)
        if version < SCHEMA_VERSION:
            conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
    except BaseException:
        _rollback(conn)
        raise
    conn.execute("COMMIT")


def _rollback(conn: sqlite3.Connection) -> None:
    """Roll back if a transaction is still open: SQLite may already have rolled back by
    itself (disk full, I/O error), and a second failure must not hide the first."""
    if conn.in_transaction:
        conn.execute("ROLLBACK")


@contextmanager
def _sqlite_errors(path: Path) -> Iterator[None]:
    """Turn SQLite failures (locked too long, not a database, disk full) into StoreError."""
    try:
        yield
    except sqlite3.Error as exc:
        raise StoreError(f"run store {path}: {exc}") from exc


def _append_locked(
    conn: sqlite3.Connection,
    run_id: str,
    kind: EventKind,
    payload: dict[str, Any],
    *,
    round_: int,
    at: str | None = None,
) -> Event:
    """Append inside an open write transaction: read head, insert, move head."""
    head = conn.execute(
        "SELECT head_seq, head_hash FROM runs WHERE run_id = ?", (run_id,)
    ).fetchone()
    if head is None:
        raise UnknownRun(f"unknown run {run_id!r}")
    seq, prev_hash = int(head[0]) + 1, str(head[1])
    stamp = at or utc_now_iso()
    digest = event_hash(
        run_id=run_id,
        seq=seq,
        kind=str(kind),
        round_=round_,
        at=stamp,
        payload=payload,
        prev_hash=prev_hash,
    )
    conn.execute(
        f"INSERT INTO events ({_EVENT_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        (run_id, seq, str(kind), round_, stamp, canonical_json(payload), prev_hash, digest),
    )
    conn.execute(
        "UPDATE runs SET head_seq = ?, head_hash = ? WHERE run_id = ?", (seq, digest, run_id)
    )
    return Event(
        run_id=run_id,
        seq=seq,
        kind=kind,
        round=round_,
        at=stamp,
        payload=payload,
        prev_hash=prev_hash,
        hash=digest,
    )


def _resolve(conn: sqlite3.Connection, run_ref: str) -> str:
    ref = run_ref.strip()
    if not ref:
        raise UnknownRun("no run id given")
    if conn.execute("SELECT 1 FROM runs WHERE run_id = ?", (ref,)).fetchone():
        return ref
    # substr() rather than LIKE: ids never need escaping and `_` is not a wildcard.
    matches = [
        str(row[0])
        for row in conn.execute(
            "SELECT run_id FROM runs WHERE substr(run_id, 1, ?) = ? ORDER BY run_id LIMIT 6",
            (len(ref), ref),
        )
    ]
    if not matches:
        raise UnknownRun(f"unknown run {ref!r} (`ilh runs list` shows the stored runs)")
    if len(matches) > 1:
        shown = ", ".join(matches[:5]) + (", …" if len(matches) > 5 else "")
        raise AmbiguousRun(f"run prefix {ref!r} matches several runs: {shown}")
    return matches[0]


def _as_kind(kind: EventKind | str) -> EventKind:
    try:
        return EventKind(kind)
    except ValueError:
        known = ", ".join(k.value for k in EventKind)
        raise StoreError(f"unknown event kind {kind!r} (known: {known})") from None


def _as_int(value: object) -> int:
    """SQLite columns are dynamically typed; a tampered row may hold text in a number
    column. -1 never validates, so the hash check then reports that row."""
    if isinstance(value, int):
        return value
    try:
        return int(str(value))
    except ValueError:
        return -1


def _row_to_stored(row: tuple[Any, ...]) -> StoredEvent:
    return StoredEvent(
        run_id=str(row[0]),
        seq=_as_int(row[1]),
        kind=str(row[2]),
        round=_as_int(row[3]),
        at=str(row[4]),
        payload_text=str(row[5]),
        prev_hash=str(row[6]),
        hash=str(row[7]),
    )


def _row_to_event(row: tuple[Any, ...]) -> Event:
    stored = _row_to_stored(row)
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


def _row_to_summary(row: tuple[Any, ...]) -> RunSummary:
    state_payload, state_seq, ended_payload, ended_seq = row[6], row[7], row[8], row[9]
    ended_by: str | None = None
    # A resume commits a new state after run_ended, so only a still-final end counts.
    if ended_seq is not None and (state_seq is None or int(ended_seq) > int(state_seq)):
        ended_by = _payload_str(ended_payload, "ended_by")
    return RunSummary(
        run_id=str(row[0]),
        task_id=str(row[1]),
        created_at=str(row[2]),
        meta=_json_object(row[3]),
        head_seq=_as_int(row[4]),
        events=int(row[5]),
        last_state=_payload_str(state_payload, "state"),
        ended_by=ended_by,
    )


def _json_object(text: object) -> dict[str, Any]:
    try:
        value = json.loads(str(text))
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _payload_str(text: object, key: str) -> str | None:
    if text is None:
        return None
    value = _json_object(text).get(key)
    return value if isinstance(value, str) else None


def _check_head(rows: list[StoredEvent], head_seq: int, head_hash: str) -> list[str]:
    """Compare the stored chain with the head committed beside it in the runs row."""
    if not rows:
        return []
    last = rows[-1]
    if last.seq < head_seq:
        return [
            f"record ends at seq {last.seq} but the store committed up to seq {head_seq}: "
            f"events after seq {last.seq} were removed (tail cut)"
        ]
    if last.seq > head_seq:
        return [
            f"seq {last.seq}: events after the committed head (seq {head_seq}) were not "
            "written by the store (inserted)"
        ]
    if last.hash != head_hash:
        return [
            f"seq {last.seq}: hash {last.hash[:12]}… differs from the committed head hash "
            f"{head_hash[:12]}… (last event replaced or head edited)"
        ]
    return []


def _check_run_row(
    rows: list[StoredEvent], task_id: str, created_at: str, meta_text: str
) -> list[str]:
    """The runs row is outside the chain; tie it to the run_started event, which is in it."""
    first = rows[0] if rows else None
    if first is None or first.seq != 1 or first.kind != EventKind.RUN_STARTED:
        return []  # check_chain already reports a missing or wrong first event
    started = _json_object(first.payload_text)
    problems: list[str] = []
    if started.get("task_id") != task_id:
        problems.append(
            f"runs row: task_id {task_id!r} differs from run_started (seq 1) "
            f"{started.get('task_id')!r}"
        )
    if meta_text != canonical_json(started.get("meta")):
        problems.append("runs row: meta differs from run_started (seq 1)")
    if created_at != first.at:
        problems.append(
            f"runs row: created_at {created_at!r} differs from run_started (seq 1) {first.at!r}"
        )
    return problems
