"""The run record: round trips, the hash chain, tamper detection, kills and concurrency."""

from __future__ import annotations

import hashlib
import io
import json
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from harness.record.events import (
    GENESIS_HASH,
    REDACTED,
    Event,
    EventKind,
    canonical_json,
    event_hash,
    is_secret_key,
    redact,
)
from harness.record.store import AmbiguousRun, RunStore, StoreError, UnknownRun, new_run_id

# --- helpers ---------------------------------------------------------------------------


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "nested" / ".ilh" / "runs.db"


@pytest.fixture
def store(db: Path) -> Iterator[RunStore]:
    with RunStore(db) as opened:
        yield opened


def make_run(store: RunStore, extra_events: int = 5) -> str:
    """A run with run_started + `extra_events` varied events (seq 1..extra_events+1)."""
    run_id = store.create_run("fizzbuzz", {"model": "scripted:agent.jsonl"})
    kinds = [
        EventKind.STATE_CHANGE,
        EventKind.MODEL_CALL,
        EventKind.PROPOSAL,
        EventKind.TOOL_CALL,
        EventKind.BUDGET_SNAPSHOT,
    ]
    for i in range(extra_events):
        store.append(run_id, kinds[i % len(kinds)], {"i": i, "text": f"événement {i}"}, round=i)
    return run_id


def tamper(db: Path, *statements: tuple[str, tuple[Any, ...]]) -> None:
    """Edit the file behind the store's back, as an attacker with `sqlite3` would:
    drop the append-only triggers first, then run the statements."""
    conn = sqlite3.connect(db, isolation_level=None)
    try:
        for (name,) in conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'trigger' AND tbl_name = 'events'"
        ).fetchall():
            conn.execute(f"DROP TRIGGER {name}")
        for sql, params in statements:
            conn.execute(sql, params)
    finally:
        conn.close()


def verify_after_tamper(db: Path, run_id: str) -> list[str]:
    with RunStore(db) as reopened:
        result = reopened.verify(run_id)
    assert not result.ok
    assert result.problems
    return result.problems


def row(db: Path, run_id: str, seq: int) -> tuple[Any, ...]:
    conn = sqlite3.connect(db)
    try:
        found = conn.execute(
            "SELECT run_id, seq, kind, round, at, payload, prev_hash, hash FROM events"
            " WHERE run_id = ? AND seq = ?",
            (run_id, seq),
        ).fetchone()
    finally:
        conn.close()
    assert found is not None
    return tuple(found)


# --- round trip and chain ----------------------------------------------------------------


def test_append_and_read_round_trip(store: RunStore) -> None:
    run_id = store.create_run("t1", {"concurrency": 1})
    appended = store.append(
        run_id, EventKind.MODEL_CALL, {"usage": {"input_tokens": 12}, "digest": "ab"}, round=2
    )
    assert appended.seq == 2
    assert appended.kind is EventKind.MODEL_CALL
    assert appended.round == 2
    events = store.events(run_id)
    assert [e.seq for e in events] == [1, 2]
    assert events[0].kind is EventKind.RUN_STARTED
    assert events[0].payload == {"task_id": "t1", "meta": {"concurrency": 1}}
    assert events[0].prev_hash == GENESIS_HASH
    assert events[1] == appended
    assert events[1].prev_hash == events[0].hash


def test_payload_is_normalised_to_what_reads_back(store: RunStore) -> None:
    run_id = store.create_run("t1")
    appended = store.append(
        run_id, "note", {"path": Path("a/b.py"), "pair": (1, 2), "kind": EventKind.NOTE}
    )
    assert appended.payload == {"path": "a/b.py", "pair": [1, 2], "kind": "note"}
    assert store.events(run_id)[-1] == appended


def test_hash_follows_the_documented_rule(store: RunStore) -> None:
    run_id = store.create_run("t1")
    event = store.append(run_id, EventKind.NOTE, {"ü": "ß", "b": [1, 2.5, None, True]}, round=3)
    body = {
        "run_id": run_id,
        "seq": 2,
        "kind": "note",
        "round": 3,
        "at": event.at,
        "payload": {"ü": "ß", "b": [1, 2.5, None, True]},
        "prev_hash": event.prev_hash,
    }
    text = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    assert event.hash == hashlib.sha256(text.encode()).hexdigest()
    assert event.expected_hash() == event.hash
    assert event.at.endswith("Z")


def test_fresh_chain_verifies(store: RunStore) -> None:
    run_id = make_run(store, extra_events=20)
    result = store.verify(run_id)
    assert result.ok, result.problems
    assert result.checked == 21
    assert result.problems == []


def test_events_filter_and_last_event(store: RunStore) -> None:
    run_id = make_run(store, extra_events=10)
    calls = store.events(run_id, EventKind.MODEL_CALL)
    assert calls and all(e.kind is EventKind.MODEL_CALL for e in calls)
    last_call = store.last_event(run_id, EventKind.MODEL_CALL)
    assert last_call == calls[-1]
    last_any = store.last_event(run_id)
    assert last_any is not None and last_any.seq == 11
    assert store.last_event(run_id, EventKind.GRADER_RESULT) is None


def test_unknown_kind_and_bad_payloads_are_refused(store: RunStore) -> None:
    run_id = store.create_run("t1")
    with pytest.raises(StoreError, match="unknown event kind"):
        store.append(run_id, "bogus", {})
    with pytest.raises(StoreError, match="JSON"):
        store.append(run_id, EventKind.NOTE, {"x": float("nan")})
    with pytest.raises(StoreError, match="round"):
        store.append(run_id, EventKind.NOTE, {}, round=-1)
    # Nothing half-written: the chain still holds only run_started.
    assert [e.seq for e in store.events(run_id)] == [1]
    assert store.verify(run_id).ok


def test_export_jsonl_parses_back_to_the_same_events(store: RunStore) -> None:
    run_id = make_run(store, extra_events=7)
    out = io.StringIO()
    assert store.export_jsonl(run_id, out) == 8
    lines = out.getvalue().splitlines()
    assert len(lines) == 8
    parsed = [Event.model_validate_json(line) for line in lines]
    assert parsed == store.events(run_id)
    assert all(json.loads(line)["run_id"] == run_id for line in lines)
    assert "événement" in out.getvalue()  # ensure_ascii=False: text stays readable


# --- runs: listing, lookup ---------------------------------------------------------------


def test_list_runs_summarises_state_and_end(store: RunStore) -> None:
    first = store.create_run("alpha", {"k": 1})
    store.append(first, EventKind.STATE_CHANGE, {"state": "running"})
    store.append(first, EventKind.STATE_CHANGE, {"state": "complete"}, round=3)
    store.append(first, EventKind.RUN_ENDED, {"ended_by": "committed_complete"}, round=3)
    second = store.create_run("beta")

    runs = store.list_runs()
    assert [r.run_id for r in runs] == [first, second]
    alpha, beta = runs
    assert (alpha.task_id, alpha.events, alpha.head_seq) == ("alpha", 4, 4)
    assert alpha.last_state == "complete"
    assert alpha.ended_by == "committed_complete"
    assert alpha.meta == {"k": 1}
    assert (beta.task_id, beta.events, beta.last_state, beta.ended_by) == ("beta", 1, None, None)
    assert store.get_run(first) == alpha


def test_resumed_run_is_no_longer_ended(store: RunStore) -> None:
    run_id = store.create_run("t1")
    store.append(run_id, EventKind.STATE_CHANGE, {"state": "stopped", "reason": "user_pause"})
    store.append(run_id, EventKind.RUN_ENDED, {"ended_by": "agent_proposal"})
    assert store.get_run(run_id).ended_by == "agent_proposal"
    store.append(run_id, EventKind.STATE_CHANGE, {"state": "running"})  # --resume commits
    summary = store.get_run(run_id)
    assert summary.ended_by is None
    assert summary.last_state == "running"
    assert store.verify(run_id).ok


def test_run_ids_sort_by_creation_time() -> None:
    early = new_run_id(datetime(2025, 1, 1, 12, 0, 0, 1000, tzinfo=UTC))
    late = new_run_id(datetime(2025, 1, 1, 12, 0, 0, 2000, tzinfo=UTC))
    assert early.startswith("20250101T120000001-")
    assert early < late
    assert len({new_run_id() for _ in range(200)}) == 200


def test_unknown_run_is_a_clear_error(store: RunStore) -> None:
    make_run(store, extra_events=1)
    for call in (
        lambda: store.get_run("nope"),
        lambda: store.verify("nope"),
        lambda: store.events("nope"),
        lambda: store.export_jsonl("nope", io.StringIO()),
        lambda: store.append("nope", EventKind.NOTE, {}),
    ):
        with pytest.raises(UnknownRun, match="nope"):
            call()
    with pytest.raises(LookupError):
        store.get_run("")


def test_unique_prefix_resolves_and_ambiguous_prefix_is_refused(store: RunStore) -> None:
    first = store.create_run("a")
    second = store.create_run("b")
    assert store.get_run(first[:-3]).run_id == first
    assert store.resolve_run_id(second[:-2]) == second
    shared = next(i for i, (a, b) in enumerate(zip(first, second, strict=True)) if a != b)
    common = first[:shared]
    with pytest.raises(AmbiguousRun, match="several runs"):
        store.get_run(common)
    # Writes never guess: append needs the exact id.
    with pytest.raises(UnknownRun):
        store.append(first[:-3], EventKind.NOTE, {})


def test_missing_store_without_create(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="no run store"):
        RunStore(tmp_path / "absent.db", create=False)
    assert not (tmp_path / "absent.db").exists()


def test_not_a_database_is_a_store_error(tmp_path: Path) -> None:
    junk = tmp_path / "junk.db"
    junk.write_bytes(b"this is not sqlite at all" * 100)
    with pytest.raises(StoreError, match=r"junk\.db"):
        RunStore(junk)


def test_closed_store_refuses_calls(db: Path) -> None:
    opened = RunStore(db)
    opened.close()
    opened.close()  # idempotent
    with pytest.raises(StoreError, match="closed"):
        opened.list_runs()


def test_store_creates_parent_dirs_and_uses_wal(db: Path) -> None:
    with RunStore(db) as opened:
        opened.create_run("t")
    assert db.is_file()
    conn = sqlite3.connect(db)
    try:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    finally:
        conn.close()


# --- append-only and tamper detection ----------------------------------------------------


def test_triggers_refuse_update_and_delete(store: RunStore, db: Path) -> None:
    run_id = make_run(store)
    conn = sqlite3.connect(db, isolation_level=None)
    try:
        with pytest.raises(sqlite3.IntegrityError, match="append-only"):
            conn.execute("UPDATE events SET payload = '{}' WHERE run_id = ?", (run_id,))
        with pytest.raises(sqlite3.IntegrityError, match="append-only"):
            conn.execute("DELETE FROM events WHERE run_id = ?", (run_id,))
    finally:
        conn.close()
    assert store.verify(run_id).ok


@pytest.mark.parametrize(
    ("column", "value"),
    [
        ("payload", '{"i":99,"text":"forged"}'),
        ("kind", "grader_result"),
        ("round", 42),
        ("at", "2000-01-01T00:00:00.000000Z"),
    ],
)
def test_edited_field_is_detected(store: RunStore, db: Path, column: str, value: Any) -> None:
    run_id = make_run(store)
    tamper(db, (f"UPDATE events SET {column} = ? WHERE run_id = ? AND seq = 3", (value, run_id)))
    problems = verify_after_tamper(db, run_id)
    assert any(p.startswith("seq 3:") and "hash" in p for p in problems), problems


def test_reformatted_payload_text_is_detected(store: RunStore, db: Path) -> None:
    run_id = make_run(store)
    payload = row(db, run_id, 3)[5]
    spaced = json.dumps(json.loads(payload), indent=2)
    tamper(db, ("UPDATE events SET payload = ? WHERE run_id = ? AND seq = 3", (spaced, run_id)))
    problems = verify_after_tamper(db, run_id)
    assert any("seq 3" in p and "canonical" in p for p in problems), problems


def test_deleted_middle_event_is_detected(store: RunStore, db: Path) -> None:
    run_id = make_run(store)
    tamper(db, ("DELETE FROM events WHERE run_id = ? AND seq = 3", (run_id,)))
    problems = verify_after_tamper(db, run_id)
    assert any("seq 4" in p and "seq 3 missing" in p for p in problems), problems


def test_deleted_tail_event_is_detected(store: RunStore, db: Path) -> None:
    run_id = make_run(store)  # seq 1..6
    tamper(db, ("DELETE FROM events WHERE run_id = ? AND seq = 6", (run_id,)))
    problems = verify_after_tamper(db, run_id)
    assert any("ends at seq 5" in p and "committed up to seq 6" in p for p in problems), problems


def test_swapped_events_are_detected(store: RunStore, db: Path) -> None:
    run_id = make_run(store)
    tamper(
        db,
        ("UPDATE events SET seq = -1 WHERE run_id = ? AND seq = 3", (run_id,)),
        ("UPDATE events SET seq = 3 WHERE run_id = ? AND seq = 4", (run_id,)),
        ("UPDATE events SET seq = 4 WHERE run_id = ? AND seq = -1", (run_id,)),
    )
    problems = verify_after_tamper(db, run_id)
    assert any(p.startswith("seq 3:") for p in problems), problems
    assert any(p.startswith("seq 4:") for p in problems), problems


def test_edited_hash_is_detected(store: RunStore, db: Path) -> None:
    run_id = make_run(store)
    tamper(db, ("UPDATE events SET hash = ? WHERE run_id = ? AND seq = 3", ("f" * 64, run_id)))
    problems = verify_after_tamper(db, run_id)
    assert any(p.startswith("seq 3:") and "hash" in p for p in problems), problems
    assert any(p.startswith("seq 4:") and "prev_hash" in p for p in problems), problems


def test_rehashed_last_event_is_caught_by_the_head(store: RunStore, db: Path) -> None:
    """An edit of the last event with a correctly recomputed hash passes the chain but
    not the head kept in the runs row."""
    run_id = make_run(store)  # seq 1..6
    _, seq, kind, round_, at, _, prev_hash, _ = row(db, run_id, 6)
    forged_payload = {"forged": True}
    forged_hash = event_hash(
        run_id=run_id, seq=seq, kind=kind, round_=round_, at=at,
        payload=forged_payload, prev_hash=prev_hash,
    )  # fmt: skip
    tamper(
        db,
        (
            "UPDATE events SET payload = ?, hash = ? WHERE run_id = ? AND seq = 6",
            (canonical_json(forged_payload), forged_hash, run_id),
        ),
    )
    problems = verify_after_tamper(db, run_id)
    assert problems == [next(p for p in problems if "committed head hash" in p)]


def test_forged_row_appended_with_valid_hash_is_detected(store: RunStore, db: Path) -> None:
    run_id = make_run(store)  # seq 1..6
    last_hash = row(db, run_id, 6)[7]
    at = "2030-01-01T00:00:00.000000Z"
    payload = {"state": "complete"}
    forged = event_hash(
        run_id=run_id, seq=7, kind="state_change", round_=9, at=at,
        payload=payload, prev_hash=last_hash,
    )  # fmt: skip
    tamper(
        db,
        (
            "INSERT INTO events VALUES (?, 7, 'state_change', 9, ?, ?, ?, ?)",
            (run_id, at, canonical_json(payload), last_hash, forged),
        ),
    )
    problems = verify_after_tamper(db, run_id)
    assert any("seq 7" in p and "inserted" in p for p in problems), problems


def test_forged_row_inserted_in_the_middle_is_detected(store: RunStore, db: Path) -> None:
    run_id = make_run(store)  # seq 1..6
    shifts = [
        ("UPDATE events SET seq = ? WHERE run_id = ? AND seq = ?", (seq + 1, run_id, seq))
        for seq in range(6, 2, -1)
    ]
    tamper(
        db,
        *shifts,
        (
            "INSERT INTO events VALUES (?, 3, 'note', 0, '2030-01-01T00:00:00.000000Z',"
            " '{}', ?, ?)",
            (run_id, "0" * 64, "1" * 64),
        ),
    )
    problems = verify_after_tamper(db, run_id)
    assert any(p.startswith("seq 3:") for p in problems), problems
    assert any("inserted" in p for p in problems), problems


def test_edited_runs_row_is_detected(store: RunStore, db: Path) -> None:
    run_id = make_run(store)
    tamper(db, ("UPDATE runs SET task_id = 'other' WHERE run_id = ?", (run_id,)))
    problems = verify_after_tamper(db, run_id)
    assert any("runs row" in p and "task_id" in p for p in problems), problems


def test_tampered_kind_makes_events_unreadable_with_a_pointer_to_verify(
    store: RunStore, db: Path
) -> None:
    run_id = make_run(store)
    tamper(db, ("UPDATE events SET kind = 'bogus' WHERE run_id = ? AND seq = 2", (run_id,)))
    with RunStore(db) as reopened:
        with pytest.raises(StoreError, match="runs verify"):
            reopened.events(run_id)
        assert any("unknown kind 'bogus'" in p for p in reopened.verify(run_id).problems)


def test_tampering_one_run_leaves_others_valid(store: RunStore, db: Path) -> None:
    victim = make_run(store)
    bystander = make_run(store)
    tamper(db, ("DELETE FROM events WHERE run_id = ? AND seq = 2", (victim,)))
    with RunStore(db) as reopened:
        assert not reopened.verify(victim).ok
        assert reopened.verify(bystander).ok


def test_reopening_restores_the_append_only_triggers(store: RunStore, db: Path) -> None:
    run_id = make_run(store)
    tamper(db)  # drops the triggers only
    with RunStore(db):
        pass
    conn = sqlite3.connect(db, isolation_level=None)
    try:
        with pytest.raises(sqlite3.IntegrityError):
            conn.execute("DELETE FROM events WHERE run_id = ?", (run_id,))
    finally:
        conn.close()


# --- redaction ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "key",
    ["api_key", "OPENAI_API_KEY", "x-api-key", "Authorization", "password", "client_secret",
     "token", "access_token", "refresh-token", "private_key", "Cookie", "credentials"],
)  # fmt: skip
def test_secret_keys(key: str) -> None:
    assert is_secret_key(key)


@pytest.mark.parametrize(
    "key", ["input_tokens", "output_tokens", "max_tokens", "tokens", "kind", "text", "digest"]
)
def test_ordinary_keys(key: str) -> None:
    assert not is_secret_key(key)


def test_redact_is_recursive_and_leaves_the_rest_alone() -> None:
    payload = {
        "request": {"headers": {"Authorization": "Bearer sk-live", "accept": "json"}},
        "attempts": [{"api_key": "sk-1", "status": 429}],
        "usage": {"input_tokens": 10, "output_tokens": 3},
        "raw_header": "Bearer abc.def",
        "text": "Bearer in mind that the bear is big",
    }
    assert redact(payload) == {
        "request": {"headers": {"Authorization": REDACTED, "accept": "json"}},
        "attempts": [{"api_key": REDACTED, "status": 429}],
        "usage": {"input_tokens": 10, "output_tokens": 3},
        "raw_header": REDACTED,
        "text": "Bearer in mind that the bear is big",
    }


def test_store_never_writes_secrets(store: RunStore, db: Path) -> None:
    run_id = store.create_run("t", {"anthropic_api_key": "sk-ant-SECRET1"})
    event = store.append(
        run_id, EventKind.MODEL_ATTEMPT, {"headers": {"x-api-key": "sk-ant-SECRET2"}, "n": 1}
    )
    assert event.payload == {"headers": {"x-api-key": REDACTED}, "n": 1}
    assert store.get_run(run_id).meta == {"anthropic_api_key": REDACTED}
    store.close()
    for path in db.parent.iterdir():  # the db and its WAL
        assert b"SECRET" not in path.read_bytes()


def test_custom_redactor_is_used(db: Path) -> None:
    def drop_all(payload: Any) -> dict[str, Any]:
        return {"dropped": len(payload)}

    with RunStore(db, redactor=drop_all) as opened:
        run_id = opened.create_run("t", {"a": 1})
        assert opened.append(run_id, EventKind.NOTE, {"x": 1, "y": 2}).payload == {"dropped": 2}
        assert opened.verify(run_id).ok


# --- surviving a kill ------------------------------------------------------------------

_WRITER = textwrap.dedent(
    """
    import sys
    from harness.record.events import EventKind
    from harness.record.store import RunStore

    store = RunStore(sys.argv[1])
    run_id = store.create_run("kill-test", {"pid": 0})
    i = 0
    while True:
        i += 1
        store.append(run_id, EventKind.NOTE, {"i": i, "blob": "x" * (i % 7) * 500}, round=i)
    """
)


def count_events(db: Path) -> int:
    """Committed events as a separate reader sees them; 0 until the schema exists."""
    if not db.exists():
        return 0
    conn = sqlite3.connect(db, timeout=30)
    try:
        return int(conn.execute("SELECT COUNT(*) FROM events").fetchone()[0])
    except sqlite3.OperationalError:
        return 0
    finally:
        conn.close()


def run_writer_until(db: Path, at_least: int) -> None:
    """Start the writer, wait until `at_least` events are committed, then SIGKILL it."""
    proc = subprocess.Popen(
        [sys.executable, "-c", _WRITER, str(db)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 120  # a hang guard, not a timing assertion
        while count_events(db) < at_least:
            if proc.poll() is not None:
                _, err = proc.communicate()
                pytest.fail(f"writer died early: {err.decode(errors='replace')}")
            if time.monotonic() > deadline:
                pytest.fail("writer made no progress")
            time.sleep(0.01)
    finally:
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        if proc.stderr is not None:
            proc.stderr.close()
    assert proc.returncode == -signal.SIGKILL


@pytest.mark.parametrize("at_least", [1, 40, 400])
def test_record_survives_sigkill(tmp_path: Path, at_least: int) -> None:
    db = tmp_path / "runs.db"
    run_writer_until(db, at_least)

    with RunStore(db) as reopened:
        [summary] = reopened.list_runs()
        result = reopened.verify(summary.run_id)
        assert result.ok, result.problems
        events = reopened.events(summary.run_id)
        assert len(events) == summary.events == summary.head_seq >= at_least
        assert [e.payload["i"] for e in events[1:]] == list(range(1, len(events)))

        # Resume: appending after the kill continues the same valid chain.
        resumed = reopened.append(summary.run_id, EventKind.STATE_CHANGE, {"state": "running"})
        assert resumed.seq == len(events) + 1
        assert resumed.prev_hash == events[-1].hash
        assert reopened.verify(summary.run_id).ok


def test_repeated_kills_on_one_file_leave_every_run_valid(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    for round_ in range(1, 4):
        run_writer_until(db, count_events(db) + 25 * round_)
    with RunStore(db) as reopened:
        runs = reopened.list_runs()
        assert len(runs) == 3
        for summary in runs:
            assert reopened.verify(summary.run_id).ok


# --- concurrency -------------------------------------------------------------------------


def _append_many(store: RunStore, run_id: str, count: int, errors: list[BaseException]) -> None:
    try:
        for i in range(count):
            store.append(run_id, EventKind.NOTE, {"i": i, "thread": threading.get_ident()})
    except BaseException as exc:  # surfaced by the test thread
        errors.append(exc)


def _run_threads(targets: list[tuple[RunStore, str]], count: int) -> None:
    errors: list[BaseException] = []
    threads = [
        threading.Thread(target=_append_many, args=(s, run_id, count, errors))
        for s, run_id in targets
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []


def test_two_threads_two_runs_own_connections(db: Path) -> None:
    with RunStore(db) as one, RunStore(db) as two:
        run_a, run_b = one.create_run("a"), two.create_run("b")
        _run_threads([(one, run_a), (two, run_b)], 150)
        for run_id in (run_a, run_b):
            result = one.verify(run_id)
            assert result.ok, result.problems
            assert result.checked == 151


def test_two_threads_two_runs_shared_store(store: RunStore) -> None:
    run_a, run_b = store.create_run("a"), store.create_run("b")
    _run_threads([(store, run_a), (store, run_b)], 150)
    for run_id in (run_a, run_b):
        assert store.verify(run_id).ok
        assert [e.seq for e in store.events(run_id)] == list(range(1, 152))


def test_two_writers_on_one_run_keep_one_contiguous_chain(db: Path) -> None:
    """BEGIN IMMEDIATE makes 'read head, write next' atomic across connections."""
    with RunStore(db) as one, RunStore(db) as two:
        run_id = one.create_run("shared")
        _run_threads([(one, run_id), (two, run_id)], 150)
        result = two.verify(run_id)
        assert result.ok, result.problems
        assert [e.seq for e in one.events(run_id)] == list(range(1, 302))


def test_verify_during_appends_sees_a_consistent_snapshot(db: Path) -> None:
    with RunStore(db) as writer, RunStore(db) as reader:
        run_id = writer.create_run("live")
        errors: list[BaseException] = []
        thread = threading.Thread(target=_append_many, args=(writer, run_id, 300, errors))
        thread.start()
        results = []
        while thread.is_alive():
            results.append(reader.verify(run_id))
        thread.join()
        assert errors == []
        assert all(r.ok for r in results), [r.problems for r in results if not r.ok]
