"""The run record: an embedded SQLite store of append-only, hash-chained events.

Durability: the database runs in WAL mode with ``synchronous=NORMAL``. A commit reaches the
operating system before `append` returns, so a killed process (SIGKILL, OOM, a crash: the
threat the record guards against) loses nothing committed and leaves a readable,
verifiable record that `ilh run --resume` continues. What NORMAL gives up is the fsync of
each commit: after a power loss or an OS crash the last transactions before it may be
gone (SQLite rolls the WAL back to its last synced point). The record then ends earlier,
as if the run had been killed there: it still verifies (head and chain are written in the
same transaction) and resumes from that point. Checkpoints still fsync.

Writes go through one writer thread per store (`harness.record.writer`), in the order
they were made: the event loop that runs a batch's tasks never waits on the disk, and
what was submitted while a transaction ran is committed together in the next one (a
round's events cost one commit). `append` waits for its own commit; `commit_later` takes
events staged (redacted, stamped) as they happened and does not wait: the orchestrator
commits a round's events together, and awaits them before anything the record must
precede (a model call, a command, a grading: each after its allowance) and the result.
Every read first waits for the writes submitted before it, so a read never misses an
event this store was given.

Integrity: each event carries the sha256 of its content and of the event before it (see
`harness.record.events`). A chain alone cannot reveal a cut-off tail, so the ``runs`` row keeps
the head (last seq + last hash), updated in the same transaction as each append. And since
anyone can re-hash a chain with the public rule, the head is authenticated: an HMAC-SHA256
with the per-user record key (`harness.record.keys`, outside every project and sandbox)
over the head and the runs row, rewritten in that same transaction
(`harness.record.integrity`). `verify` checks the chain, that it ends at the head, and the
MAC. Triggers refuse UPDATE/DELETE on events so that no code path edits the record by
accident. What this cannot catch: a whole run deleted, or a run put back as an older copy
of itself (an old head with its old MAC) — keep a copy of the head elsewhere if that
matters; and anyone who can read the key can forge.

Concurrency: several stores (threads or processes) may share one file. Appends take the
write lock up front (``BEGIN IMMEDIATE``) so reading the head and writing the next event
cannot interleave, and a busy timeout makes writers queue instead of failing. Reads that
combine several queries run in one read transaction so they see one snapshot (otherwise
`verify` could race an append and report a false cut).
"""

from __future__ import annotations

import secrets
import shlex
import sqlite3
import threading
import weakref
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import Future
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType
from typing import IO, Any, Final, Self

from harness.record.events import (
    GENESIS_HASH,
    Event,
    EventKind,
    RunSummary,
    VerifyResult,
    canonical_json,
    check_chain,
    event_hash_of_text,
    normalize_payload,
    redact,
    utc_now_iso,
)
from harness.secrets import SecretValues, harness_secrets

__all__ = [
    "DEFAULT_STORE_PATH",
    "AmbiguousRun",
    "Redactor",
    "RunStore",
    "Staged",
    "StoreError",
    "UnknownRun",
    "new_run_id",
]

from harness.record.clean import clean_plain
from harness.record.database import (
    EVENT_COLUMNS,
    HEAD_COLUMNS,
    SUMMARY_SELECT,
    AmbiguousRun,
    StoreError,
    UnknownRun,
    as_int,
    open_database,
    open_read_only,
    refuse_what_is_no_store,
    rollback,
    row_to_event,
    row_to_stored,
    row_to_summary,
    sqlite_errors,
)
from harness.record.integrity import (
    HeadRow,
    check_head,
    check_mac,
    check_run_row,
    mac_status,
    quick_record_status,
)
from harness.record.keys import RecordKey, default_key_path, ensure_key, load_key
from harness.record.log import LazyLogger
from harness.record.writer import Writer

log = LazyLogger(__name__)

DEFAULT_STORE_PATH: Final = Path(".ilh") / "runs.db"
DEFAULT_BUSY_TIMEOUT_S: Final = 30.0

Redactor = Callable[[Mapping[str, Any]], dict[str, Any]]


def new_run_id(now: datetime | None = None) -> str:
    """A run id that sorts by creation time (ms) and is unique: `20250101T120000123-<hex>`."""
    moment = (now or datetime.now(UTC)).astimezone(UTC)
    stamp = f"{moment:%Y%m%dT%H%M%S}{moment.microsecond // 1000:03d}"
    return f"{stamp}-{secrets.token_hex(6)}"


class RunStore:
    """Append-only, hash-chained run records in one SQLite file.

    One instance may be shared by threads (writes go through its one writer thread,
    reads are serialised with them by a lock); several instances or processes may also
    open the same file at once.
    """

    def __init__(
        self,
        path: Path | str = DEFAULT_STORE_PATH,
        *,
        create: bool = True,
        redactor: Redactor = redact,
        busy_timeout_s: float = DEFAULT_BUSY_TIMEOUT_S,
        secrets: Callable[[], SecretValues] = harness_secrets,
        key_path: Path | None = None,
        read_only_if_unwritable: bool = False,
    ) -> None:
        """`redactor` removes credentials by field name; `secrets` gives the secret values
        that are removed from every string (keys too) of whatever is written, whatever
        the redactor did (default: the harness's own, read at each write). `key_path`: the
        record key (default `harness.record.keys.default_key_path`, read when the store is
        opened). It is created by the first write, not by reads.
        `read_only_if_unwritable` (commands that only read): a store that cannot be
        opened for writing (a read-only mount) is opened read-only
        (`harness.record.database.open_read_only`); writing to it is then a StoreError."""
        self._path = Path(path)
        self._key_path = key_path or default_key_path()
        self._key: RecordKey | None = None
        self._redactor = redactor
        self._secrets = secrets
        self.created_run_ids: list[str] = []  # by this instance, oldest first
        self._lock = threading.RLock()
        if not self._path.exists():
            if not create:
                raise StoreError(f"no run store at {self._path}")
            try:
                self._path.parent.mkdir(parents=True, exist_ok=True)
            except OSError as err:
                raise StoreError(
                    f"cannot create the run store's folder {self._path.parent}: "
                    f"{err.strerror or err}"
                ) from None
        elif not self._path.is_file():
            # SQLite opening a named pipe waits for a writer forever; a folder or device
            # fails later with a vaguer message.
            raise StoreError(
                f"{self._path} is not a file (a folder, pipe or device): name a run store file"
            )
        else:
            refuse_what_is_no_store(self._path)
        self.read_only = False
        try:
            self._conn: sqlite3.Connection | None = open_database(self._path, busy_timeout_s)
        except (OSError, sqlite3.Error, StoreError) as err:
            if _locked(err):
                # Another process holds the store: it can be written, just not now.
                # Read-only would wait the same lock out again (or, `immutable`, read a
                # file half-way through its writer's transaction) and then blame the
                # folder: one clear error, after one busy timeout.
                raise StoreError(
                    f"run store {self._path} is locked by another process (waited "
                    f"{busy_timeout_s:g} s): try again when it is done"
                ) from None
            if not read_only_if_unwritable or not self._path.exists():
                if isinstance(err, StoreError):
                    raise
                raise StoreError(f"cannot open the run store {self._path}: {err}") from None
            # The read-only open's error, when it fails too, says what is wrong (not a
            # database, a newer schema, a WAL it cannot read without writing).
            self._conn = open_read_only(self._path, busy_timeout_s)
            self.read_only = True
        self._writer = Writer(self._write, name=f"ilh-store-writer:{self._path.name}")
        # Queued writes are committed before the interpreter exits even if nobody closes
        # the store (the thread is a daemon so that a forgotten store cannot hang exit).
        weakref.finalize(self, self._writer.stop)

    # -- lifecycle ---------------------------------------------------------------------

    @property
    def path(self) -> Path:
        return self._path

    @property
    def key_path(self) -> Path:
        return self._key_path

    def _writing_key(self) -> RecordKey:
        if self._key is None:
            self._key = ensure_key(self._key_path)
        return self._key

    def _checking_key(self) -> RecordKey | None:
        if self._key is None:
            self._key = load_key(self._key_path)
        return self._key

    def close(self) -> None:
        """Commit what is queued, then close the connection; idempotent."""
        self._writer.stop()
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

    def create_run(
        self,
        task_id: str,
        meta: Mapping[str, Any] | None = None,
        inputs: Mapping[str, Any] | None = None,
        *,
        wait: bool = True,
    ) -> str:
        """Create a run and its `run_started` event (one transaction); returns the run id.

        `wait=False`: hand it to the writer and return at once (a batch's tasks do not
        stop the event loop for it); later writes to the run follow it in order, and if
        it fails they fail too (see `commit_later`).

        `meta` (redacted like any payload) is kept on the run row and, so that it is
        covered by the chain, in the run_started payload. `inputs` (what the run was
        started from, e.g. the task file's content) go in the run_started payload only:
        they can be large, and summaries never need them.
        """
        if not task_id:
            raise StoreError("task_id must not be empty")
        clean_meta = self._clean({} if meta is None else meta)
        started: dict[str, Any] = {"task_id": task_id, "meta": clean_meta}
        if inputs is not None:
            started["inputs"] = self._clean(inputs)
        run_id = new_run_id()
        key = self._writing_key()
        at = utc_now_iso()

        def create(conn: sqlite3.Connection) -> None:
            conn.execute(
                "INSERT INTO runs (run_id, task_id, created_at, meta, head_seq, head_hash,"
                " head_mac, key_id) VALUES (?, ?, ?, ?, 0, ?, NULL, ?)",
                (run_id, task_id, at, canonical_json(clean_meta), GENESIS_HASH, key.key_id),
            )
            first = Staged(kind=EventKind.RUN_STARTED, payload=started, round=0, at=at)
            _append_locked(conn, key, run_id, [first])

        created = self._writer.submit(run_id, create, deferred=not wait)
        if wait:
            created.result()
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
        staged = self.stage(kind, payload, round)
        written = self._writer.submit(run_id, self._job(run_id, [staged]), deferred=False)
        events: list[Event] = written.result()
        return events[0]

    def stage(
        self, kind: EventKind | str, payload: Mapping[str, Any] | None = None, round: int = 0
    ) -> Staged:
        """An event made ready for `commit_later`: checked, redacted (no secret is ever
        queued) and stamped now, when it happened."""
        event_kind = _as_kind(kind)
        if round < 0:
            raise StoreError(f"round must be >= 0, got {round}")
        clean = self._clean({} if payload is None else payload)
        return Staged(kind=event_kind, payload=clean, round=round, at=utc_now_iso())

    def commit_later(self, run_id: str, staged: Sequence[Staged]) -> Future[list[Event]]:
        """Append `staged` (in order) to `run_id`'s chain in one transaction, on the
        writer thread, without waiting: the future holds the stored events or the error.
        If it fails, every later write to `run_id` through this store fails too (the
        record stays a prefix of what happened)."""
        return self._writer.submit(run_id, self._job(run_id, list(staged)), deferred=True)

    def flush(self) -> None:
        """Wait until every write submitted so far is committed (or has failed)."""
        self._writer.wait()

    def _job(self, run_id: str, staged: list[Staged]) -> Callable[[sqlite3.Connection], Any]:
        key = self._writing_key()

        def job(conn: sqlite3.Connection) -> list[Event]:
            return _append_locked(conn, key, run_id, staged)

        return job

    # -- reading -----------------------------------------------------------------------

    def resolve_run_id(self, run_ref: str) -> str:
        """The full id of the one run whose id is `run_ref` or starts with it."""
        with self._read() as conn:
            return _resolve(conn, run_ref, self.path)

    def events(self, run_id: str, kind: EventKind | str | None = None) -> list[Event]:
        """All events of a run in seq order, optionally only those of one kind."""
        with self._read() as conn:
            full_id = _resolve(conn, run_id, self.path)
            if kind is None:
                rows = conn.execute(
                    f"SELECT {EVENT_COLUMNS} FROM events WHERE run_id = ? ORDER BY seq",
                    (full_id,),
                ).fetchall()
            else:
                rows = conn.execute(
                    f"SELECT {EVENT_COLUMNS} FROM events WHERE run_id = ? AND kind = ?"
                    " ORDER BY seq",
                    (full_id, str(_as_kind(kind))),
                ).fetchall()
        return [row_to_event(row) for row in rows]

    def last_event(self, run_id: str, kind: EventKind | str | None = None) -> Event | None:
        """The most recent event of a run (of `kind`, if given); what `--resume` starts from."""
        with self._read() as conn:
            full_id = _resolve(conn, run_id, self.path)
            if kind is None:
                row = conn.execute(
                    f"SELECT {EVENT_COLUMNS} FROM events WHERE run_id = ?"
                    " ORDER BY seq DESC LIMIT 1",
                    (full_id,),
                ).fetchone()
            else:
                row = conn.execute(
                    f"SELECT {EVENT_COLUMNS} FROM events WHERE run_id = ? AND kind = ?"
                    " ORDER BY seq DESC LIMIT 1",
                    (full_id, str(_as_kind(kind))),
                ).fetchone()
        return None if row is None else row_to_event(row)

    def list_runs(self) -> list[RunSummary]:
        """Every run, oldest first, each with the cheap check of its authenticated head
        (`RunSummary.record`)."""
        with self._read() as conn:
            rows = conn.execute(SUMMARY_SELECT + " ORDER BY r.created_at, r.rowid").fetchall()
        return [self._summary(row) for row in rows]

    def get_run(self, run_ref: str) -> RunSummary:
        """The summary of one run, by full id or unique id prefix."""
        with self._read() as conn:
            full_id = _resolve(conn, run_ref, self.path)
            row = conn.execute(SUMMARY_SELECT + " WHERE r.run_id = ?", (full_id,)).fetchone()
        return self._summary(row)

    def _summary(self, row: tuple[Any, ...]) -> RunSummary:
        # Columns: see SUMMARY_SELECT (10: head_hash, head_mac, key_id, last seq, last hash).
        head = HeadRow.of((row[0], row[1], row[2], row[3], row[4], row[10], row[11], row[12]))
        record = quick_record_status(head, self._checking_key(), as_int(row[5]), row[13], row[14])
        return row_to_summary(row, record)

    def export_jsonl(self, run_id: str, out: IO[str]) -> int:
        """Write the run's events to `out`, one canonical JSON object per line; returns
        how many. Each line parses back with `Event.model_validate_json`."""
        events = self.events(run_id)
        known = self._secrets()
        for event in events:
            # Written redacted already; a record made before a secret was known (or by
            # an older harness) is redacted on the way out. Such a line's hash no longer
            # matches its payload: `ilh runs verify` reads the store, not the export.
            payload = known.redact_json(event.payload)
            if payload is not event.payload:
                event = event.model_copy(update={"payload": payload})
            out.write(event.to_json_line() + "\n")
        return len(events)

    # -- verification ------------------------------------------------------------------

    def verify(self, run_id: str) -> VerifyResult:
        """Check a run's record for any edit, deletion, insertion, reordering or cut tail.

        Raises UnknownRun if no such run; every other defect is reported in `problems`,
        each naming the seq (or the runs row) it concerns.
        """
        key = self._checking_key()
        with self._read() as conn:
            full_id = _resolve(conn, run_id, self.path)
            head = HeadRow.of(
                conn.execute(
                    f"SELECT {HEAD_COLUMNS} FROM runs WHERE run_id = ?", (full_id,)
                ).fetchone()
            )
            rows = [
                row_to_stored(row)
                for row in conn.execute(
                    f"SELECT {EVENT_COLUMNS} FROM events WHERE run_id = ? ORDER BY seq",
                    (full_id,),
                )
            ]
        problems, checked = check_chain(full_id, rows)
        problems.extend(check_head(rows, head.head_seq, head.head_hash))
        problems.extend(check_run_row(rows, head.task_id, head.created_at, head.meta_text))
        mac, unauthenticated = check_mac(head, key, self._key_path)
        problems.extend(unauthenticated)
        result = VerifyResult(
            run_id=full_id, ok=not problems, checked=checked, problems=problems, mac=mac
        )
        if not result.ok:
            log.warning("store.verify_failed", run_id=full_id, problems=len(problems))
        return result

    # -- internals ---------------------------------------------------------------------

    def _clean(self, payload: Mapping[str, Any]) -> dict[str, Any]:
        """Redact (by field name, then every known secret value wherever it is), then
        reduce to plain JSON; every payload and meta passes through here. The values go
        last, on plain JSON, so that nothing the redactor or the normalisation leaves (a
        key, a repr) can carry one into the file."""
        known = self._secrets()
        if self._redactor is redact:
            # The harness's own payloads are plain JSON: the same three steps in one walk
            # (`harness.record.clean`); anything else takes the general path below.
            fast = clean_plain(payload, known)
            if fast is not None:
                return fast
        try:
            plain = normalize_payload(self._redactor(payload))
        except (TypeError, ValueError) as exc:
            raise StoreError(f"payload cannot be stored as JSON: {exc}") from exc
        cleaned: dict[str, Any] = known.redact_json(plain)
        return cleaned

    def _connection(self) -> sqlite3.Connection:
        if self._conn is None:
            raise StoreError(f"run store {self._path} is closed")
        return self._conn

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        """One write transaction holding the database write lock from its first statement
        (run by the writer thread only)."""
        with self._lock:
            conn = self._connection()
            with sqlite_errors(self._path):
                conn.execute("BEGIN IMMEDIATE")
                try:
                    yield conn
                except BaseException:
                    rollback(conn)
                    raise
                conn.execute("COMMIT")

    @contextmanager
    def _read(self) -> Iterator[sqlite3.Connection]:
        """One read transaction: all queries inside see the same committed snapshot, which
        holds every write submitted to this store before the read."""
        self._writer.wait()
        with self._lock:
            conn = self._connection()
            with sqlite_errors(self._path):
                conn.execute("BEGIN")
                try:
                    yield conn
                finally:
                    if conn.in_transaction:
                        conn.execute("COMMIT")


# --- module helpers ----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Staged:
    """An event not yet appended (`RunStore.stage`): redacted plain-JSON payload, stamped
    with the time it happened."""

    kind: EventKind
    payload: dict[str, Any]
    round: int
    at: str


def _append_locked(
    conn: sqlite3.Connection, key: RecordKey, run_id: str, staged: list[Staged]
) -> list[Event]:
    """Append inside an open write transaction: read and authenticate the head, insert
    each event chained to the one before, move the head and its MAC (once: only the
    head at commit can be seen).

    A head that does not authenticate is never extended: re-MACing it would make a
    forged head (or a legacy, unauthenticated run) look as if this key had written it.
    """
    found = conn.execute(f"SELECT {HEAD_COLUMNS} FROM runs WHERE run_id = ?", (run_id,)).fetchone()
    if found is None:
        raise UnknownRun(f"unknown run {run_id!r}")
    head = HeadRow.of(found)
    if head.head_seq != 0 or head.head_mac is not None:
        status = mac_status(head, key)
        if status != "ok":
            _, why = check_mac(head, key, key.path)
            raise StoreError(f"run {run_id}: not extended: {why[0]}")
    seq, prev_hash = head.head_seq, head.head_hash
    rows: list[tuple[Any, ...]] = []
    events: list[Event] = []
    for item in staged:
        seq += 1
        kind = str(item.kind)
        text = canonical_json(item.payload)
        digest = event_hash_of_text(
            run_id=run_id,
            seq=seq,
            kind=kind,
            round_=item.round,
            at=item.at,
            payload_text=text,
            prev_hash=prev_hash,
        )
        rows.append((run_id, seq, kind, item.round, item.at, text, prev_hash, digest))
        # Built from checked parts (a kind, a round >= 0, a plain-JSON payload, our own
        # hex digests): validating again would only cost the writer time.
        events.append(
            Event.model_construct(
                run_id=run_id,
                seq=seq,
                kind=item.kind,
                round=item.round,
                at=item.at,
                payload=item.payload,
                prev_hash=prev_hash,
                hash=digest,
            )
        )
        prev_hash = digest
    if not rows:
        return events
    conn.executemany(f"INSERT INTO events ({EVENT_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?)", rows)
    moved = HeadRow(
        run_id=run_id,
        task_id=head.task_id,
        created_at=head.created_at,
        meta_text=head.meta_text,
        head_seq=seq,
        head_hash=prev_hash,
        head_mac=None,
        key_id=key.key_id,
    )
    conn.execute(
        "UPDATE runs SET head_seq = ?, head_hash = ?, head_mac = ?, key_id = ? WHERE run_id = ?",
        (seq, prev_hash, key.mac(moved.message()), key.key_id, run_id),
    )
    return events


def _resolve(conn: sqlite3.Connection, run_ref: str, store: Path) -> str:
    """`store`: the store's path, for the message when no run matches (a run id typed in
    a folder whose default store is not the one that recorded it)."""
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
        # Quoted for a shell: the command is there to be pasted (a folder with a space).
        listing = "ilh runs list" + (
            "" if store == DEFAULT_STORE_PATH else f" --store {shlex.quote(str(store))}"
        )
        raise UnknownRun(
            f"unknown run {ref!r} in the store {store} (`{listing}` shows its runs; one "
            "recorded in another store needs --store PATH)"
        )
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


def _locked(err: BaseException) -> bool:
    """Whether `err` (or the SQLite error it wraps) is SQLite's busy or locked answer."""
    cause: BaseException | None = err
    while cause is not None:
        # Extended codes (SQLITE_BUSY_RECOVERY, ...) are busy too: the low byte is the code.
        code = getattr(cause, "sqlite_errorcode", 0) if isinstance(cause, sqlite3.Error) else 0
        if (code & 0xFF) in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED):
            return True
        cause = cause.__cause__
    return False
