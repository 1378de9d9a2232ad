"""A run is carried on by one `ilh` process at a time (ux6).

`ilh run --resume RUN` typed while the run was still going in another terminal (or two
resumes at once) ran a second agent in the same workspace, and the record got two
endings, one after the other (`stopped|reason:agent_ended`, then `stopped|reason:budget`
with its own run_ended). Now the process that runs a run holds a lock on it (`flock`
on a file in the run's folder, released by the kernel however the process ends, so a
resume after a kill is never refused); a second one is bad input, exit 2, naming the
process that has it, and writes nothing."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

from harness.record.events import EventKind
from harness.record.store import RunStore

ROOT = Path(__file__).resolve().parents[1]
SLOW = (
    '{"text": "a slow command", "tool_calls": [{"name": "run_command", '
    '"arguments": {"command": "sleep 4"}}]}\n'
    '{"text": "done."}\n'
)


def ilh(cwd: Path, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "harness", *args],
        cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        stdin=subprocess.DEVNULL, env={**os.environ, "PYTHONPATH": str(ROOT)},
    )  # fmt: skip


def started_run(store: Path, timeout: float = 60.0) -> str:
    """The run id once the store holds the run; then a second for its first model call
    (instant, scripted) to reach the 4-second command."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if store.exists():
            with RunStore(store, create=False) as records:
                runs = records.list_runs()
            if runs:
                time.sleep(1.0)
                return runs[0].run_id
        time.sleep(0.1)
    raise AssertionError("the run did not start")


def test_a_resume_while_the_run_goes_on_is_refused_and_writes_nothing(tmp_path: Path) -> None:
    shutil.copytree(ROOT / "examples" / "honest", tmp_path / "ex")
    (tmp_path / "ex" / "agent.jsonl").write_text(SLOW, encoding="utf-8")
    first = ilh(tmp_path, "run", "ex/task.toml", "--json")
    try:
        run_id = started_run(tmp_path / ".ilh" / "runs.db")
        with RunStore(tmp_path / ".ilh" / "runs.db", create=False) as records:
            before = len(records.events(run_id))
        second = ilh(tmp_path, "run", "--resume", run_id, "--json")
        out, err = second.communicate(timeout=60)
        assert second.returncode == 2 and out == "", (out, err)
        lines = err.splitlines()
        assert len(lines) == 1 and "Traceback" not in err, err
        assert lines[0].startswith(f"error {run_id}: E500 run {run_id} is being run by ")
        assert f"(pid {first.pid})" in lines[0], lines[0]
        with RunStore(tmp_path / ".ilh" / "runs.db", create=False) as records:
            assert len(records.events(run_id)) >= before  # the first goes on, alone
    finally:
        out, err = first.communicate(timeout=120)
    result = json.loads(out)
    assert result["ended_by"] == "script_exhausted", err
    with RunStore(tmp_path / ".ilh" / "runs.db", create=False) as records:
        ended = [e for e in records.events(run_id) if e.kind is EventKind.RUN_ENDED]
    assert len(ended) == 1


def test_a_killed_runs_lock_is_gone_and_the_resume_goes_on(tmp_path: Path) -> None:
    shutil.copytree(ROOT / "examples" / "honest", tmp_path / "ex")
    (tmp_path / "ex" / "agent.jsonl").write_text(SLOW, encoding="utf-8")
    first = ilh(tmp_path, "run", "ex/task.toml")
    run_id = started_run(tmp_path / ".ilh" / "runs.db")
    first.send_signal(signal.SIGKILL)
    first.communicate(timeout=60)
    again = ilh(tmp_path, "run", "--resume", run_id, "--json")
    out, err = again.communicate(timeout=120)
    assert again.returncode == 3, err
    assert json.loads(out)["ended_by"] == "script_exhausted"
