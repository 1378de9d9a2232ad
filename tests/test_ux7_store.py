"""Run references and stores a new user gets wrong (ux7).

`ilh run --resume RUN` typed in a folder with no store (the wrong folder, or before any
run) made an empty `.ilh/runs.db` there and then said the run was unknown "in the store":
every other command that reads a run (`runs show`, `view`, `correct`, `soul sync`) says
there is no store and leaves nothing. And a store `ilh run` could not open was reported
at `--store`, a flag the person never typed, rather than at the store's path."""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"


def ilh(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "harness", *args],
        cwd=cwd, capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=120,
        env={**os.environ, "PYTHONPATH": str(ROOT)}, check=False,
    )  # fmt: skip


def one_error(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert "Traceback" not in done.stderr and done.stdout == "", done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    return lines[0]


def test_resume_with_no_store_says_so_and_makes_none(tmp_path: Path) -> None:
    line = one_error(ilh(tmp_path, "run", "--resume", "20261206T1"))
    assert line == "error .ilh/runs.db: E500 no run store at .ilh/runs.db", line
    assert list(tmp_path.iterdir()) == []
    line = one_error(ilh(tmp_path, "run", "--resume", "x", "--store", "elsewhere/r.db"))
    assert line == "error elsewhere/r.db: E500 no run store at elsewhere/r.db", line
    assert list(tmp_path.iterdir()) == []


def test_a_store_run_cannot_open_is_named_by_its_path(tmp_path: Path) -> None:
    shutil.copytree(EXAMPLES / "honest", tmp_path / "ex")
    (tmp_path / ".ilh").mkdir()
    (tmp_path / ".ilh" / "runs.db").write_text("not a database\n", encoding="utf-8")
    line = one_error(ilh(tmp_path, "run", "ex/task.toml"))
    assert line.startswith("error .ilh/runs.db: E500 "), line
    assert "not a database" in line, line


def test_the_command_an_unknown_run_suggests_can_be_pasted(tmp_path: Path) -> None:
    # A store in a folder with a space: the suggested `ilh runs list --store a b/r.db`
    # was two arguments when pasted.
    shutil.copytree(EXAMPLES / "honest", tmp_path / "ex")
    done = ilh(tmp_path, "run", "ex/task.toml", "--store", "my runs/r.db", "--json")
    assert done.returncode == 0, done.stderr
    line = one_error(ilh(tmp_path, "runs", "show", "nosuch", "--store", "my runs/r.db"))
    assert "(`ilh runs list --store 'my runs/r.db'` shows its runs;" in line, line


def foreign_database(path: Path) -> bytes:
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE contacts (name TEXT)")
        conn.execute("INSERT INTO contacts VALUES ('ada')")
    return path.read_bytes()


def test_a_database_of_something_else_is_not_a_store_and_is_not_changed(tmp_path: Path) -> None:
    # `ilh runs list --store app.db` (a slip, or tab completion) added the run record's
    # tables and triggers to another program's database, switched it to WAL, and listed
    # an empty store; `ilh run --store app.db` then recorded runs into it.
    shutil.copytree(EXAMPLES / "honest", tmp_path / "ex")
    before = foreign_database(tmp_path / "app.db")
    for args in (("runs", "list"), ("runs", "show", "x"), ("run", "ex/task.toml")):
        line = one_error(ilh(tmp_path, *args, "--store", "app.db"))
        assert line.startswith("error app.db: E500 app.db is a SQLite database"), line
        assert "not a run store" in line and "contacts" in line, line
        assert (tmp_path / "app.db").read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["app.db", "ex"]


def test_the_resume_command_an_interruption_names_can_be_pasted(tmp_path: Path) -> None:
    # With --store, the message said `ilh run --resume RUN`: pasted, it looked in the
    # default store and called the run unknown.
    import shlex
    import signal
    import time

    from harness.record.store import RunStore

    shutil.copytree(EXAMPLES / "honest", tmp_path / "ex")
    (tmp_path / "ex" / "agent.jsonl").write_text(
        '{"text": "slow", "tool_calls": [{"name": "run_command", '
        '"arguments": {"command": "sleep 8"}}]}\n{"text": "done."}\n'
    )
    store = tmp_path / "my runs[1]" / "r.db"
    running = subprocess.Popen(
        [sys.executable, "-m", "harness", "run", "ex/task.toml", "--store", "my runs[1]/r.db"],
        cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        stdin=subprocess.DEVNULL, env={**os.environ, "PYTHONPATH": str(ROOT)},
        # As a terminal's Ctrl-C finds it: a test run started in the background (CI,
        # `pytest &`) would hand its ignored SIGINT down, and the run would go on.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )  # fmt: skip
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if store.exists():
            with RunStore(store, create=False) as records:
                if records.list_runs():
                    break
        time.sleep(0.1)
    time.sleep(1.5)  # into the 8-second command
    running.send_signal(signal.SIGINT)
    _, err = running.communicate(timeout=60)
    assert running.returncode == 130, err
    said = err.splitlines()[-1]
    assert said.startswith("interrupted: run ") and "`ilh run --resume " in said, err
    command = said.split("`")[1]
    assert command.endswith(" --store 'my runs[1]/r.db'"), said
    resumed = ilh(tmp_path, *shlex.split(command)[1:], "--json")
    assert resumed.returncode in (0, 3), resumed.stderr
