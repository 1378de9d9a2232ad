"""A run killed at any moment leaves a readable record, and `--resume RUN` continues it."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from click.testing import CliRunner

from harness.cli import ilh
from harness.events import EventKind
from harness.store import RunStore

SLOW_AGENT = [
    {"text": "Looking around.", "tool_calls": [{"name": "list_files", "arguments": {}}]},
    {
        "text": "This takes a while.",
        "tool_calls": [{"name": "run_command", "arguments": {"command": "sleep 30"}}],
    },
    {"text": "Done.\n::STATUS{@TASK|state:claimed_complete|by:@AGENT|authority:proposal}"},
]


def write_task(folder: Path) -> Path:
    (folder / "agent.jsonl").write_text("\n".join(json.dumps(t) for t in SLOW_AGENT) + "\n")
    task = folder / "task.toml"
    task.write_text(
        '[task]\nid = "slow"\nobjective = "Wait for the slow command."\n\n'
        '[budget.rounds]\nlimit = 5\n\n[agent]\nmodel = "scripted:agent.jsonl"\n'
    )
    return task


def wait_for_model_calls(db: Path, count: int, proc: subprocess.Popen[bytes]) -> str:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        assert proc.poll() is None, "the run ended before it could be killed"
        if db.exists():
            with RunStore(db, create=False) as store:
                for summary in store.list_runs():
                    if len(store.events(summary.run_id, EventKind.MODEL_CALL)) >= count:
                        return summary.run_id
        time.sleep(0.05)
    raise AssertionError("the run never reached its second model call")


def test_killed_run_verifies_and_resumes_from_its_last_committed_state(tmp_path: Path) -> None:
    task = write_task(tmp_path)
    db = tmp_path / "store" / "runs.db"
    proc = subprocess.Popen(
        [sys.executable, "-m", "harness", "run", str(task), "--store", str(db), "--json"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        run_id = wait_for_model_calls(db, 2, proc)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()

    runner = CliRunner()
    verified = runner.invoke(ilh, ["runs", "verify", run_id, "--store", str(db)])
    assert verified.exit_code == 0, verified.output
    shown = runner.invoke(ilh, ["runs", "show", run_id, "--store", str(db)])
    assert "state:running" in shown.output

    resumed = runner.invoke(ilh, ["run", "--resume", run_id, "--store", str(db), "--json"])
    assert resumed.exit_code == 3, resumed.output
    outcome = json.loads(resumed.stdout)
    assert outcome["run_id"] == run_id
    assert outcome["ended_by"] == "unverified"
    assert [h["state"] for h in outcome["history"]] == ["running", "claimed_complete"]
    with RunStore(db, create=False) as store:
        assert store.verify(run_id).ok
        assert len(store.events(run_id, EventKind.MODEL_CALL)) == 3


def test_resume_refuses_a_tampered_record(tmp_path: Path) -> None:
    task = write_task(tmp_path)
    (tmp_path / "agent.jsonl").write_text(json.dumps(SLOW_AGENT[0]) + "\n")
    db = tmp_path / "runs.db"
    runner = CliRunner()
    first = runner.invoke(ilh, ["run", str(task), "--store", str(db), "--json"])
    run_id = json.loads(first.stdout)["run_id"]
    import sqlite3

    with sqlite3.connect(db) as conn:
        conn.execute("DROP TRIGGER IF EXISTS events_no_update")
        for (name,) in conn.execute(
            "SELECT name FROM sqlite_master WHERE type='trigger'"
        ).fetchall():
            conn.execute(f"DROP TRIGGER {name}")
        conn.execute(
            "UPDATE events SET payload = replace(payload, 'Looking', 'Cooking') WHERE seq = 3"
        )
    refused = runner.invoke(ilh, ["run", "--resume", run_id, "--store", str(db)])
    assert refused.exit_code == 2
    assert "fails verification" in refused.output
