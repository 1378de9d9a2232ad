"""A run killed at any moment leaves a readable record, and `--resume RUN` continues it."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from harness.cli.main import ilh
from harness.context.agent import Segment, tool_result_segment
from harness.enforce.provenance import Provenance
from harness.record.events import EventKind
from harness.record.store import RunStore
from harness.run.resume import answer_interrupted_calls
from harness.workspace.tools import ToolCall, ToolResult

SLOW_AGENT = [
    {"text": "Looking around.", "tool_calls": [{"name": "list_files", "arguments": {}}]},
    {
        "text": "This takes a while.",
        "tool_calls": [{"name": "run_command", "arguments": {"command": "sleep 30"}}],
    },
    {"text": "Done.\n::STATUS{@TASK|state:claimed_complete|by:@AGENT|authority:proposal}"},
]


def write_task(folder: Path, sleep: str = "sleep 30") -> Path:
    turns = [json.loads(json.dumps(t).replace("sleep 30", sleep)) for t in SLOW_AGENT]
    (folder / "agent.jsonl").write_text("\n".join(json.dumps(t) for t in turns) + "\n")
    task = folder / "task.toml"
    task.write_text(
        '[task]\nid = "slow"\nobjective = "Wait for the slow command."\n\n'
        '[budget.rounds]\nlimit = 5\n\n[agent]\nmodel = "scripted:agent.jsonl"\n'
    )
    return task


def wait_for_model_calls(db: Path, count: int, proc: subprocess.Popen[bytes]) -> str:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            # What the run said is the only clue to an early end (seen once in CI: exit 2).
            said = proc.stderr.read() if proc.stderr is not None else "(stderr not captured)"
            raise AssertionError(
                f"the run ended before it could be killed (exit {proc.returncode}): {said!r}"
            )
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
            "UPDATE events SET payload = replace(payload, 'Looking', 'Cooking')"
            " WHERE kind = 'model_call'"
        )
    refused = runner.invoke(ilh, ["run", "--resume", run_id, "--store", str(db)])
    assert refused.exit_code == 2
    assert "fails verification" in refused.output


def processes_running(cmdline: bytes) -> list[Path]:
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and (entry / "cmdline").read_bytes() == cmdline:
                found.append(entry)
        except OSError:
            continue
    return found


@pytest.mark.parametrize(
    ("stop", "seconds"), [(signal.SIGINT, 37), (signal.SIGTERM, 38)], ids=["ctrl-c", "sigterm"]
)
def test_ctrl_c_stops_at_once_kills_the_command_and_leaves_a_resumable_run(
    tmp_path: Path, stop: signal.Signals, seconds: int
) -> None:
    """Ctrl-C, and SIGTERM alike (a service manager's or a CI's stop)."""
    task = write_task(tmp_path, f"sleep {seconds}")  # a command no other test runs
    db = tmp_path / "store" / "runs.db"
    proc = subprocess.Popen(
        [sys.executable, "-m", "harness", "run", str(task), "--store", str(db)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        # A shell's background jobs ignore SIGINT; this one must get it as a terminal would.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    run_id = wait_for_model_calls(db, 2, proc)
    time.sleep(0.5)  # inside `sleep 37`
    interrupted_at = time.monotonic()
    proc.send_signal(stop)
    _, err = proc.communicate(timeout=20)
    assert proc.returncode == 130
    assert time.monotonic() - interrupted_at < 10, "it waited for the command"
    assert f"ilh run --resume {run_id}" in err and "Traceback" not in err
    assert not processes_running(f"sleep\x00{seconds}\x00".encode()), "the command outlived the run"
    with RunStore(db, create=False) as store:
        assert store.verify(run_id).ok
        assert store.events(run_id, EventKind.RUN_ENDED) == []

    resumed = CliRunner().invoke(ilh, ["run", "--resume", run_id, "--store", str(db), "--json"])
    assert json.loads(resumed.stdout)["ended_by"] == "unverified"


def test_a_call_the_run_was_stopped_in_gets_a_result_saying_so() -> None:
    agent = Segment(
        provenance=Provenance.AGENT,
        text="Two things.",
        tool_calls=(
            ToolCall(name="list_files", arguments={}, id="c1"),
            ToolCall(name="run_command", arguments={"command": "sleep 30"}, id="c2"),
        ),
    )
    done = tool_result_segment(ToolResult(name="list_files", ok=True, output="a.txt", id="c1"))
    history = [agent, done]
    answer_interrupted_calls(history)
    assert [s.tool_call_id for s in history[1:]] == ["c1", "c2"]
    assert "not finished" in history[-1].text and "run_command_error" in history[-1].text
    answer_interrupted_calls(history)
    assert len(history) == 3, "answered once"


SLOW_CHECK_TASK = """[task]
id = "slow-check"
objective = "Write a.txt."

[budget.rounds]
limit = 3

[rubric]
threshold = 1.0

[[rubric.criteria]]
id = "slow"
weight = 1.0
check = "takes its time"
run = "sleep 39"

[agent]
model = "scripted:agent.jsonl"
"""


def test_ctrl_c_during_a_tool_check_stops_the_check_too(tmp_path: Path) -> None:
    """The grader's checks run in a worker thread; Ctrl-C must not wait for them."""
    claim = "Done.\n\n::STATUS{@TASK|state:claimed_complete|by:@AGENT|authority:proposal}"
    (tmp_path / "agent.jsonl").write_text(json.dumps({"text": claim}) + "\n")
    (tmp_path / "task.toml").write_text(SLOW_CHECK_TASK)
    db = tmp_path / "runs.db"
    proc = subprocess.Popen(
        [sys.executable, "-m", "harness", "run", str(tmp_path / "task.toml"), "--store", str(db)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    deadline = time.monotonic() + 30
    while not processes_running(b"/bin/sh\x00-c\x00sleep 39\x00"):
        assert time.monotonic() < deadline and proc.poll() is None, "the check never started"
        time.sleep(0.05)
    interrupted_at = time.monotonic()
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    assert time.monotonic() - interrupted_at < 10, "it waited for the check"
    assert not processes_running(b"/bin/sh\x00-c\x00sleep 39\x00")
    assert not processes_running(b"sleep\x0039\x00")


def start_slow_run(
    folder: Path, seconds: int, ignore_ctrl_c: bool = False
) -> tuple[subprocess.Popen[str], Path, str]:
    folder.mkdir(exist_ok=True)
    task = write_task(folder, f"sleep {seconds}")  # a command no other test runs
    db = folder / "store" / "runs.db"
    mode = signal.SIG_IGN if ignore_ctrl_c else signal.SIG_DFL
    proc = subprocess.Popen(
        [sys.executable, "-m", "harness", "run", str(task), "--store", str(db)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, mode),
    )
    run_id = wait_for_model_calls(db, 2, proc)
    time.sleep(0.3)  # inside the command
    return proc, db, run_id


def test_sigterm_ends_a_background_job_that_ignores_ctrl_c_as_an_interruption(
    tmp_path: Path,
) -> None:
    """Where SIGINT is ignored (a shell's background job) it stays ignored, as the shell
    asked; SIGTERM still stops the run as Ctrl-C would elsewhere: its command killed (it
    runs in a session of its own: a default death would leave it running), the run
    reported resumable, exit 130."""
    proc, _, run_id = start_slow_run(tmp_path, 40, ignore_ctrl_c=True)
    proc.send_signal(signal.SIGINT)
    time.sleep(0.5)
    assert proc.poll() is None, "an ignored SIGINT stopped the run"
    assert processes_running(b"sleep\x0040\x00"), "an ignored SIGINT killed the command"
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=20)
    assert proc.returncode == 130, err
    assert f"ilh run --resume {run_id}" in err and "Traceback" not in err
    assert not processes_running(b"sleep\x0040\x00"), "the command outlived the run"


@pytest.mark.parametrize("second", [signal.SIGTERM, signal.SIGINT], ids=["sigterm", "ctrl-c"])
def test_a_signal_repeated_while_the_first_is_handled_changes_nothing(
    tmp_path: Path, second: signal.Signals
) -> None:
    """A SIGTERM sent twice (to the process and its group, or forwarded by a wrapper) or
    followed by Ctrl-C: one interruption, handled once. The second once printed tracebacks
    from the clean-up it interrupted, lost the "resumable" message or ended the process
    with 143 after it; the gaps straddle those moments."""
    for attempt, gap in enumerate((0.0, 0.02, 0.05, 0.1)):
        proc, _, run_id = start_slow_run(tmp_path / str(attempt), 36)
        proc.send_signal(signal.SIGTERM)
        time.sleep(gap)
        with contextlib.suppress(ProcessLookupError):
            proc.send_signal(second)
        _, err = proc.communicate(timeout=20)
        assert proc.returncode == 130, (gap, err)
        assert f"ilh run --resume {run_id}" in err, (gap, err)
        assert "Traceback" not in err and "Failed to detach" not in err, (gap, err)
    assert not processes_running(b"sleep\x0036\x00")


INSISTED = """
import os, signal, sys, time
from harness.workspace import interrupts
signal.signal(signal.SIGTERM, interrupts.terminate_as_interrupt)
try:
    os.kill(os.getpid(), signal.SIGTERM)
    time.sleep(30)
except KeyboardInterrupt:
    print("first handled", flush=True)
os.kill(os.getpid(), signal.SIGTERM)  # a repeat: ignored
time.sleep(0.1)
print("repeat ignored", flush=True)
interrupts._stopping_since = time.monotonic() - 2 * interrupts.REPEAT_GRACE_S
os.kill(os.getpid(), signal.SIGTERM)  # insisted on, the clean-up being slow
time.sleep(30)
print("never")
"""


def test_a_signal_insisted_on_after_the_grace_ends_the_process_with_130() -> None:
    done = subprocess.run(
        [sys.executable, "-c", INSISTED], capture_output=True, text=True, timeout=20
    )
    assert done.stdout.split() == ["first", "handled", "repeat", "ignored"]
    assert done.returncode == 130
    assert "stopping now" in done.stderr and "Traceback" not in done.stderr


def test_ilh_view_serving_a_page_ends_on_sigterm_as_every_command_does(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    with RunStore(db) as store:
        run_id = store.create_run("t")
    with socket.socket() as probe:  # a free port
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    proc = subprocess.Popen(
        [sys.executable, "-m", "harness", "view", run_id, "--store", str(db), "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 30
    while True:
        assert proc.poll() is None and time.monotonic() < deadline, "it never served"
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port)):
            break
        time.sleep(0.05)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=20)
    assert proc.returncode == 130, err
    assert "interrupted" in err and "Traceback" not in err
