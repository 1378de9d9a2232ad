"""A run store on a read-only mount can be read: `ilh runs list`, `runs show`, `runs
verify`, `runs export` and `ilh view` open it read-only (SQLite's WAL index, the -shm
file, cannot be created there). Commands that write still refuse it, with a message.

The tests run as root here, and a mode bit does not stop root: the store's folder is
made read-only by a bind mount in a bubblewrap namespace (the sandbox's `bwrap`)."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from harness.record.events import EventKind
from harness.record.store import RunStore
from harness.workspace.sandbox import find_bwrap


def read_only_runner(folder: Path) -> list[str]:
    """The command prefix that runs a program with `folder` mounted read-only, or skip."""
    bwrap = find_bwrap()
    if bwrap is None:
        pytest.skip("no bwrap to make a read-only mount with")
    prefix = [str(bwrap), "--bind", "/", "/", "--ro-bind", str(folder), str(folder)]
    prefix += ["--dev", "/dev", "--proc", "/proc", "--"]
    probe = subprocess.run(
        [*prefix, "sh", "-c", f"touch '{folder}/probe' 2>/dev/null || echo read-only"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    if probe.returncode != 0 or "read-only" not in probe.stdout:
        pytest.skip(f"bwrap cannot make a read-only mount here: {probe.stderr.strip()}")
    return prefix


def ilh(prefix: list[str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*prefix, sys.executable, "-m", "harness", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "ILH_LOG": "warning"},
    )


@pytest.fixture
def store(tmp_path: Path) -> tuple[Path, str]:
    folder = tmp_path / "mounted"
    folder.mkdir()
    db = folder / "runs.db"
    with RunStore(db) as runs:
        run_id = runs.create_run("read-only-task")
        runs.append(run_id, EventKind.NOTE, {"text": "kept"})
    assert sorted(p.name for p in folder.iterdir()) == ["runs.db"], "closed cleanly: no WAL"
    return db, run_id


def test_read_commands_read_a_store_on_a_read_only_mount(
    store: tuple[Path, str], tmp_path: Path
) -> None:
    db, run_id = store
    prefix = read_only_runner(db.parent)
    key = ["--store", str(db)]
    listed = ilh(prefix, "runs", "list", *key, "--json")
    assert listed.returncode == 0, listed.stderr
    assert [r["run_id"] for r in json.loads(listed.stdout)] == [run_id]
    shown = ilh(prefix, "runs", "show", run_id, *key)
    assert shown.returncode == 0 and "2 events" in shown.stdout, shown.stderr
    verified = ilh(prefix, "runs", "verify", run_id, *key)
    assert verified.returncode == 0, verified.stdout + verified.stderr
    exported = ilh(prefix, "runs", "export", run_id, *key)
    assert exported.returncode == 0 and "kept" in exported.stdout, exported.stderr
    page = tmp_path / "page.html"
    viewed = ilh(prefix, "view", run_id, *key, "--out", str(page))
    assert viewed.returncode == 0 and "read-only-task" in page.read_text(), viewed.stderr
    assert sorted(p.name for p in db.parent.iterdir()) == ["runs.db"], "nothing was written"


def test_a_command_that_writes_refuses_a_read_only_store_with_a_message(
    store: tuple[Path, str],
) -> None:
    db, run_id = store
    prefix = read_only_runner(db.parent)
    done = ilh(
        prefix, "correct", run_id, "--class", "factual_error", "--text", "x", "--store", str(db)
    )
    assert done.returncode == 2, done.stdout + done.stderr
    assert f"error {db}: E500" in done.stderr and "Traceback" not in done.stderr


def test_a_wal_left_by_a_killed_writer_is_read_not_ignored(tmp_path: Path) -> None:
    """A store whose writer was killed keeps its -wal and -shm files: the events in the
    WAL are part of the record, and reading read-only must see them."""
    folder = tmp_path / "mounted"
    folder.mkdir()
    db = folder / "runs.db"
    code = (
        "import os, sys\n"
        "from harness.record.events import EventKind\n"
        "from harness.record.store import RunStore\n"
        f"runs = RunStore({str(db)!r})\n"
        "run_id = runs.create_run('killed')\n"
        "runs.append(run_id, EventKind.NOTE, {'text': 'in the wal'})\n"
        "print(run_id, flush=True)\n"
        "os._exit(0)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    run_id = done.stdout.split()[-1]  # after structlog's own (unconfigured) line
    assert (folder / "runs.db-wal").stat().st_size > 0, done.stderr
    prefix = read_only_runner(folder)
    exported = ilh(prefix, "runs", "export", run_id, "--store", str(db))
    assert exported.returncode == 0 and "in the wal" in exported.stdout, exported.stderr


def test_a_wal_without_its_index_is_an_error_not_a_shorter_record(tmp_path: Path) -> None:
    """Without the -shm file SQLite cannot read the WAL read-only; reading the main file
    alone (`immutable`) would silently drop the WAL's events."""
    folder = tmp_path / "mounted"
    folder.mkdir()
    db = folder / "runs.db"
    with RunStore(db) as runs:
        runs.create_run("t")
    writer = sqlite3.connect(db)
    writer.execute("PRAGMA journal_mode = WAL")
    writer.execute("PRAGMA wal_autocheckpoint = 0")
    writer.execute("CREATE TABLE later (x)")  # only in the WAL
    writer.commit()
    wal = (folder / "runs.db-wal").read_bytes()
    writer.close()  # checkpoints and removes the WAL: put one back, without its index
    (folder / "runs.db-wal").write_bytes(wal)
    (folder / "runs.db-shm").unlink(missing_ok=True)
    prefix = read_only_runner(folder)
    listed = ilh(prefix, "runs", "list", "--store", str(db))
    assert listed.returncode == 2, listed.stdout + listed.stderr
    assert "runs.db-wal" in listed.stderr and "Traceback" not in listed.stderr
