"""A record the agent cannot touch and anyone can check (issue 9, item 4): the run's head is
authenticated with a per-user key, so an edit re-hashed with the project's own public hash
function, a cut tail with the head moved back, or a MAC copied from another run all fail
`ilh runs verify`. Each attack here verified ok before the head had a MAC."""

from __future__ import annotations

import json
import os
import sqlite3
import stat
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from harness.cli.main import ilh
from harness.record.events import GENESIS_HASH, EventKind, canonical_json, event_hash
from harness.record.keys import (
    KEY_FILE_ENV,
    RecordKeyError,
    default_key_path,
    ensure_key,
    load_key,
)
from harness.record.store import RunStore, StoreError

# --- helpers ---------------------------------------------------------------------------


def make_run(db: Path, events: int = 5, task_id: str = "fizzbuzz") -> str:
    with RunStore(db) as store:
        run_id = store.create_run(task_id, {"model": "scripted:agent.jsonl"})
        for i in range(events):
            kind = EventKind.STATE_CHANGE if i == events - 1 else EventKind.NOTE
            payload = {"state": "complete"} if kind is EventKind.STATE_CHANGE else {"i": i}
            store.append(run_id, kind, payload, round=i)
    return run_id


def attacker(db: Path) -> sqlite3.Connection:
    """The store file opened as an attacker would, with the append-only triggers dropped."""
    conn = sqlite3.connect(db, isolation_level=None)
    for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'"):
        conn.execute(f"DROP TRIGGER {name}")
    return conn


def rehash_from(conn: sqlite3.Connection, run_id: str, start: int) -> str:
    """Recompute every hash from seq `start` on with the project's own hash function and
    move the head to the new last hash, exactly as the issue's attacker did."""
    rows = conn.execute(
        "SELECT seq, kind, round, at, payload, prev_hash FROM events WHERE run_id = ? ORDER BY seq",
        (run_id,),
    ).fetchall()
    prev = GENESIS_HASH
    for seq, kind, round_, at, payload, stored_prev in rows:
        if seq < start:
            prev = conn.execute(
                "SELECT hash FROM events WHERE run_id = ? AND seq = ?", (run_id, seq)
            ).fetchone()[0]
            continue
        del stored_prev
        digest = event_hash(
            run_id=run_id,
            seq=seq,
            kind=kind,
            round_=round_,
            at=at,
            payload=json.loads(payload),
            prev_hash=prev,
        )
        conn.execute(
            "UPDATE events SET prev_hash = ?, hash = ? WHERE run_id = ? AND seq = ?",
            (prev, digest, run_id, seq),
        )
        prev = digest
    last_seq = rows[-1][0]
    conn.execute(
        "UPDATE runs SET head_seq = ?, head_hash = ? WHERE run_id = ?", (last_seq, prev, run_id)
    )
    return prev


def verify_cli(db: Path, run_id: str) -> tuple[int, str]:
    result = CliRunner().invoke(ilh, ["runs", "verify", run_id, "--store", str(db)])
    return result.exit_code, result.output


def chain_only_problems(problems: list[str]) -> list[str]:
    return [p for p in problems if "MAC" not in p and "key" not in p]


# --- the attacks of the issue ------------------------------------------------------------


def test_a_rewrite_rehashed_with_the_public_function_fails_verify(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    run_id = make_run(db)
    conn = attacker(db)
    try:
        conn.execute(
            "UPDATE events SET payload = ? WHERE run_id = ? AND seq = 3",
            (canonical_json({"i": 1, "forged": "the tests passed"}), run_id),
        )
        rehash_from(conn, run_id, 3)
    finally:
        conn.close()
    with RunStore(db) as store:
        result = store.verify(run_id)
        # The chain itself is now perfect: only the MAC can tell.
        assert not result.ok and result.mac == "mismatch"
        assert chain_only_problems(result.problems) == []
        assert store.list_runs()[0].record == "TAMPERED"
    code, output = verify_cli(db, run_id)
    assert code == 1 and "TAMPERED" in output and "does not match its MAC" in output


def test_a_deleted_last_row_with_the_head_moved_back_fails_verify(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    run_id = make_run(db)  # seq 1..6, seq 6 commits complete
    conn = attacker(db)
    try:
        prev_hash = conn.execute(
            "SELECT hash FROM events WHERE run_id = ? AND seq = 5", (run_id,)
        ).fetchone()[0]
        conn.execute("DELETE FROM events WHERE run_id = ? AND seq = 6", (run_id,))
        conn.execute(
            "UPDATE runs SET head_seq = 5, head_hash = ? WHERE run_id = ?", (prev_hash, run_id)
        )
    finally:
        conn.close()
    with RunStore(db) as store:
        result = store.verify(run_id)
        assert not result.ok and result.mac == "mismatch"
        assert chain_only_problems(result.problems) == []
        [summary] = store.list_runs()
        assert summary.record == "TAMPERED"
    code, output = verify_cli(db, run_id)
    assert code == 1 and "tail cut" in output


def test_a_mac_swapped_in_from_another_run_fails_verify(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    victim = make_run(db, task_id="victim")
    donor = make_run(db, task_id="donor")
    conn = attacker(db)
    try:
        mac = conn.execute("SELECT head_mac FROM runs WHERE run_id = ?", (donor,)).fetchone()[0]
        conn.execute("UPDATE runs SET head_mac = ? WHERE run_id = ?", (mac, victim))
    finally:
        conn.close()
    with RunStore(db) as store:
        assert store.verify(victim).mac == "mismatch"
        assert store.verify(donor).ok
    assert verify_cli(db, victim)[0] == 1


def test_an_extra_row_with_the_head_moved_forward_fails_verify(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    run_id = make_run(db)
    conn = attacker(db)
    try:
        last = conn.execute(
            "SELECT hash FROM events WHERE run_id = ? AND seq = 6", (run_id,)
        ).fetchone()[0]
        at, payload = "2030-01-01T00:00:00.000000Z", {"state": "complete"}
        digest = event_hash(
            run_id=run_id, seq=7, kind="state_change", round_=9, at=at,
            payload=payload, prev_hash=last,
        )  # fmt: skip
        conn.execute(
            "INSERT INTO events VALUES (?, 7, 'state_change', 9, ?, ?, ?, ?)",
            (run_id, at, canonical_json(payload), last, digest),
        )
        conn.execute(
            "UPDATE runs SET head_seq = 7, head_hash = ? WHERE run_id = ?", (digest, run_id)
        )
    finally:
        conn.close()
    with RunStore(db) as store:
        result = store.verify(run_id)
        assert result.mac == "mismatch" and chain_only_problems(result.problems) == []


def test_an_extra_row_without_moving_the_head_is_seen_by_list(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    run_id = make_run(db)
    conn = attacker(db)
    try:
        conn.execute(
            "INSERT INTO events VALUES (?, 7, 'note', 9, 'x', '{}', ?, ?)",
            (run_id, "0" * 64, "1" * 64),
        )
    finally:
        conn.close()
    listed = CliRunner().invoke(ilh, ["runs", "list", "--store", str(db), "--json"])
    assert [r["record"] for r in json.loads(listed.output)] == ["TAMPERED"]
    table = CliRunner().invoke(ilh, ["runs", "list", "--store", str(db)], env={"COLUMNS": "200"})
    assert "TAMPERED" in table.output and "complete?" in table.output


def test_edited_meta_is_covered_by_the_mac(tmp_path: Path) -> None:
    """The runs row stands outside the chain; its meta digest is inside the MAC."""
    db = tmp_path / "runs.db"
    run_id = make_run(db)
    conn = attacker(db)
    try:
        conn.execute('UPDATE runs SET meta = \'{"model":"x"}\' WHERE run_id = ?', (run_id,))
    finally:
        conn.close()
    with RunStore(db) as store:
        assert store.verify(run_id).mac == "mismatch"


def test_the_store_never_extends_a_head_that_does_not_authenticate(tmp_path: Path) -> None:
    """Otherwise the harness's next append would launder a forged head with a fresh MAC."""
    db = tmp_path / "runs.db"
    run_id = make_run(db)
    conn = attacker(db)
    try:
        conn.execute(
            "UPDATE events SET payload = '{\"i\":7}' WHERE run_id = ? AND seq = 4", (run_id,)
        )
        rehash_from(conn, run_id, 4)
    finally:
        conn.close()
    with RunStore(db) as store, pytest.raises(StoreError, match="not extended"):
        store.append(run_id, EventKind.NOTE, {"after": "tampering"})


def test_an_untouched_record_verifies_and_lists_as_authenticated(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    run_id = make_run(db)
    code, output = verify_cli(db, run_id)
    assert code == 0 and "head authenticated" in output
    listed = CliRunner().invoke(ilh, ["runs", "list", "--store", str(db), "--verify", "--json"])
    assert [r["record"] for r in json.loads(listed.output)] == ["verified"]


# --- keys ----------------------------------------------------------------------------------


def test_a_record_written_with_another_key_says_so(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    run_id = make_run(db)
    other = tmp_path / "elsewhere" / "record.key"
    with RunStore(db, key_path=other) as store:
        assert store.verify(run_id).mac == "no_key"
        ensure_key(other)
    with RunStore(db, key_path=other) as store:
        result = store.verify(run_id)
        assert result.mac == "other_key"
        assert any("written with another key" in p for p in result.problems)
        assert store.list_runs()[0].record == "other key"
        with pytest.raises(StoreError, match="another key"):
            store.append(run_id, EventKind.NOTE, {})
    result = CliRunner().invoke(
        ilh, ["runs", "verify", run_id, "--store", str(db)], env={KEY_FILE_ENV: str(other)}
    )
    assert result.exit_code == 1 and "this record was written with another key" in result.output


def test_the_key_file_is_private_and_made_once(tmp_path: Path) -> None:
    path = tmp_path / "cfg" / "ilh" / "record.key"
    key = ensure_key(path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert stat.S_IMODE(path.parent.parent.stat().st_mode) == 0o700
    assert len(path.read_text().strip()) == 64
    assert ensure_key(path).secret == key.secret
    assert key.key_id not in repr(key.secret) and "secret" not in repr(key)
    assert [p.name for p in path.parent.iterdir()] == ["record.key"], "no temporary left"


def test_concurrent_first_uses_agree_on_one_key(tmp_path: Path) -> None:
    path = tmp_path / "fresh" / "ilh" / "record.key"
    start = tmp_path / "go"
    code = textwrap.dedent(
        """
        import sys, time
        from pathlib import Path
        from harness.record.keys import ensure_key
        go = Path(sys.argv[2])
        while not go.exists():
            time.sleep(0.001)
        print(ensure_key(Path(sys.argv[1])).secret.hex())
        """
    )
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", code, str(path), str(start)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(8)
    ]
    start.touch()
    outputs = [proc.communicate(timeout=60) for proc in procs]
    assert all(proc.returncode == 0 for proc in procs), outputs
    secrets = {out.strip() for out, _ in outputs}
    assert len(secrets) == 1
    assert secrets == {path.read_text().strip()}


def test_the_default_key_path_follows_xdg_and_the_override(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(KEY_FILE_ENV, raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    assert default_key_path() == tmp_path / "xdg" / "ilh" / "record.key"
    monkeypatch.setenv("XDG_CONFIG_HOME", "relative/ignored")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert default_key_path() == tmp_path / "home" / ".config" / "ilh" / "record.key"
    monkeypatch.setenv(KEY_FILE_ENV, str(tmp_path / "k"))
    assert default_key_path() == tmp_path / "k"


@pytest.mark.parametrize("value", ["record.key", "keys/record.key", "./k", "~user-none/k"])
def test_a_relative_key_file_is_refused_not_resolved_against_the_cwd(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    """`ILH_RECORD_KEY_FILE=record.key` named a different key in every folder ilh ran
    in, the workspace among them: refused with one message (E500, exit 2), nothing
    created in the current folder. (`~user-none/k`, an unknown user's home, was a
    traceback from `Path.expanduser`.)"""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv(KEY_FILE_ENV, value)
    with pytest.raises(RecordKeyError, match="relative path"):
        default_key_path()
    db = tmp_path / "runs.db"
    for args in (["runs", "list"], ["runs", "verify", "20250101T000000000-abcdef012345"]):
        result = CliRunner().invoke(ilh, [*args, "--store", str(db)], env={KEY_FILE_ENV: value})
        assert result.exit_code == 2, result.output
        assert "E500" in result.output and f"{KEY_FILE_ENV} is a relative path" in result.output
        assert "Traceback" not in result.output
    assert sorted(p.name for p in tmp_path.iterdir()) in ([], ["runs.db"])
    assert not (tmp_path / "record.key").exists() and not (tmp_path / "keys").exists()


def test_the_session_never_uses_the_real_key() -> None:
    real = Path.home() / ".config" / "ilh" / "record.key"
    assert default_key_path() != real
    assert os.environ[KEY_FILE_ENV].startswith(str(Path(os.environ["XDG_CONFIG_HOME"]).parent))


@pytest.mark.parametrize(
    ("content", "mode", "message"),
    [
        ("ab" * 32 + "\n", 0o644, "open to other users"),
        ("not a key\n", 0o600, "not a key"),
    ],
)
def test_a_shared_or_broken_key_is_refused(
    tmp_path: Path, content: str, mode: int, message: str
) -> None:
    path = tmp_path / "record.key"
    path.write_text(content)
    path.chmod(mode)
    with pytest.raises(RecordKeyError, match=message):
        load_key(path)
    db = tmp_path / "runs.db"
    with RunStore(db, key_path=path) as store, pytest.raises(StoreError, match=message):
        store.create_run("t")


def test_a_broken_key_is_one_clear_message_from_the_cli(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    run_id = make_run(db)
    bad = tmp_path / "record.key"
    bad.write_text("ab" * 32)
    bad.chmod(0o666)
    result = CliRunner().invoke(
        ilh, ["runs", "verify", run_id, "--store", str(db)], env={KEY_FILE_ENV: str(bad)}
    )
    assert result.exit_code == 2 and "open to other users" in result.output
    assert "Traceback" not in result.output


# --- legacy stores ---------------------------------------------------------------------------

V1_SCHEMA = (
    "CREATE TABLE runs (run_id TEXT PRIMARY KEY, task_id TEXT NOT NULL, created_at TEXT NOT "
    "NULL, meta TEXT NOT NULL, head_seq INTEGER NOT NULL, head_hash TEXT NOT NULL)",
    "CREATE TABLE events (run_id TEXT NOT NULL REFERENCES runs(run_id), seq INTEGER NOT NULL,"
    " kind TEXT NOT NULL, round INTEGER NOT NULL, at TEXT NOT NULL, payload TEXT NOT NULL, "
    "prev_hash TEXT NOT NULL, hash TEXT NOT NULL, PRIMARY KEY (run_id, seq))",
)


def write_v1_store(db: Path) -> str:
    """A store as ilh wrote it before heads had a MAC (schema version 1)."""
    run_id, at = "20250101T000000000-abcdef012345", "2025-01-01T00:00:00.000000Z"
    meta: dict[str, Any] = {"model": "scripted:agent.jsonl"}
    started = {"task_id": "old", "meta": meta}
    digest = event_hash(
        run_id=run_id, seq=1, kind="run_started", round_=0, at=at,
        payload=started, prev_hash=GENESIS_HASH,
    )  # fmt: skip
    conn = sqlite3.connect(db, isolation_level=None)
    try:
        for statement in V1_SCHEMA:
            conn.execute(statement)
        conn.execute(
            "INSERT INTO runs VALUES (?, 'old', ?, ?, 1, ?)",
            (run_id, at, canonical_json(meta), digest),
        )
        conn.execute(
            "INSERT INTO events VALUES (?, 1, 'run_started', 0, ?, ?, ?, ?)",
            (run_id, at, canonical_json(started), GENESIS_HASH, digest),
        )
        conn.execute("PRAGMA user_version = 1")
    finally:
        conn.close()
    return run_id


def test_a_legacy_store_is_migrated_and_its_runs_are_unauthenticated(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    old = write_v1_store(db)
    with RunStore(db) as store:
        result = store.verify(old)
        assert not result.ok and result.mac == "legacy"
        assert chain_only_problems(result.problems) == []
        assert store.list_runs()[0].record == "unauthenticated (legacy)"
        with pytest.raises(StoreError, match="legacy"):
            store.append(old, EventKind.NOTE, {})
        new = store.create_run("new")  # the migrated store takes new, authenticated runs
        assert store.verify(new).ok
    code, output = verify_cli(db, old)
    assert code == 1 and "UNAUTHENTICATED (legacy)" in output
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == 2


# --- out of the agent's reach ------------------------------------------------------------


def test_a_sandboxed_command_sees_neither_the_store_nor_the_key(tmp_path: Path) -> None:
    """The store, the run folder and the record key are outside every sandbox: an agent's
    command cannot read, list or change them (the default key's folder, under $HOME,
    included)."""
    db = tmp_path / "store" / "runs.db"
    key = Path(os.environ[KEY_FILE_ENV])
    default_home_key = Path.home() / ".config" / "ilh"
    probe = (
        f"cat {db} | head -c 16; ls -la {db.parent}; cat {key}; ls -la {key.parent}; "
        f"ls -la {default_home_key}; echo forged >> {db}; echo forged > {key}; echo probed"
    )
    turn = {
        "text": "Look.",
        "tool_calls": [{"name": "run_command", "arguments": {"command": probe}}],
    }
    (tmp_path / "agent.jsonl").write_text(json.dumps(turn) + "\n")
    task = tmp_path / "task.toml"
    task.write_text(
        '[task]\nid = "probe"\nobjective = "Probe."\n\n[budget.rounds]\nlimit = 2\n\n'
        '[agent]\nmodel = "scripted:agent.jsonl"\n'
    )
    done = subprocess.run(
        [sys.executable, "-m", "harness", "run", str(task), "--store", str(db), "--json"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    run_id = json.loads(done.stdout)["run_id"]
    with RunStore(db, create=False) as store:
        [call] = store.events(run_id, EventKind.TOOL_CALL)
        assert store.verify(run_id).ok
    output = call.payload["output"]
    assert "probed" in output and call.payload["meta"].get("sandbox", "bwrap") == "bwrap"
    assert "SQLite format" not in output and "runs.db" not in output.replace(str(db), "")
    assert key.read_text().strip() not in output
    assert "record.key" not in output.replace(str(key), "").replace(str(default_home_key), "")
    assert output.count("No such file or directory") >= 5


def test_the_record_key_never_reaches_the_record(tmp_path: Path) -> None:
    """Whoever reads the key can forge the record: a payload that carries the key (a tool
    output that found it somehow) is stored with the key redacted."""
    db = tmp_path / "runs.db"
    with RunStore(db) as store:
        run_id = store.create_run("fizzbuzz", {"model": "scripted:agent.jsonl"})
        key = ensure_key(default_key_path())
        store.append(run_id, EventKind.NOTE, {"output": f"found {key.secret.hex()} here"})
    raw = db.read_bytes()
    assert key.secret.hex().encode() not in raw
    with RunStore(db, create=False) as store:
        texts = json.dumps([e.payload for e in store.events(run_id)])
    assert "[REDACTED:ILH_RECORD_KEY]" in texts
