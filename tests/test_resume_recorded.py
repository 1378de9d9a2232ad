"""`ilh run --resume` uses what was recorded (issue 9, item 4): the task and the agent
script as they were when the run started, the model endpoint it was started with, and
time charged so that budgets err high after a kill. Each test failed on the code that
re-read task.toml, forgot --base-url and charged nothing for a killed round."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from harness.record.events import EventKind
from harness.record.store import RunStore
from tests.loopback_server import ChatServer, Reply, json_reply, serve

CLAIM = "Done.\n::STATUS{@TASK|state:claimed_complete|by:@AGENT|authority:proposal}"


def ilh(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "harness", *args],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )


def start(*args: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "harness", *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )


def wait_for(db: Path, proc: subprocess.Popen[bytes], kind: EventKind, payload_for: str) -> str:
    """The run id once the record holds an `allowance` (or other) event for `payload_for`."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        assert proc.poll() is None, "the run ended before it could be killed"
        if db.exists():
            with RunStore(db, create=False) as store:
                for summary in store.list_runs():
                    for event in store.events(summary.run_id, kind):
                        if event.payload.get("for") == payload_for:
                            return summary.run_id
        time.sleep(0.02)
    raise AssertionError(f"the run never reached its {payload_for}")


def kill(proc: subprocess.Popen[bytes]) -> None:
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()


def write_agent(folder: Path, turns: list[dict[str, Any]]) -> None:
    (folder / "agent.jsonl").write_text("\n".join(json.dumps(t) for t in turns) + "\n")


def command_turn(command: str) -> dict[str, Any]:
    return {
        "text": "Running it.",
        "tool_calls": [{"name": "run_command", "arguments": {"command": command}}],
    }


# --- the task as recorded ----------------------------------------------------------------

CHECKED_TASK = """[task]
id = "checked"
objective = "Create done.txt."

[budget.rounds]
limit = 6

[rubric]
threshold = 1.0

[[rubric.criteria]]
id = "done"
weight = 1.0
check = "done.txt exists"
run = "test -f done.txt"

[agent]
model = "scripted:agent.jsonl"
"""


def test_resume_after_an_edited_task_toml_does_not_use_the_edit(tmp_path: Path) -> None:
    task = tmp_path / "task.toml"
    task.write_text(CHECKED_TASK)
    write_agent(tmp_path, [command_turn("sleep 30"), {"text": CLAIM}])
    db = tmp_path / "store" / "runs.db"
    proc = start("run", str(task), "--store", str(db), "--json")
    try:
        run_id = wait_for(db, proc, EventKind.ALLOWANCE, "run_command")
    finally:
        kill(proc)

    # What the agent did in the issue: its check becomes `run = "true"`, and (for good
    # measure) the script gains a first turn that claims at once.
    task.write_text(CHECKED_TASK.replace('run = "test -f done.txt"', 'run = "true"'))
    write_agent(tmp_path, [{"text": CLAIM}, {"text": CLAIM}, {"text": CLAIM}])

    resumed = ilh("run", "--resume", run_id, "--store", str(db), "--json")
    assert resumed.returncode == 3, resumed.stderr
    result = json.loads(resumed.stdout)
    assert result["ended_by"] != "committed_complete"
    assert result["final"]["state"] != "complete"
    [check] = result["grader"]["criteria"]
    assert check["result"] == "fail"
    notes = " ".join(result["notes"])
    assert "task file" in notes and "changed on disk" in notes and "not the edit" in notes
    assert "agent script" in notes
    with RunStore(db, create=False) as store:
        assert store.verify(run_id).ok
        grades = store.events(run_id, EventKind.GRADER_RESULT)
        assert grades and all(g.payload["verdict"] != "verified_complete" for g in grades)
        resumed_notes = [
            e.payload["resumed"]["notes"]
            for e in store.events(run_id, EventKind.NOTE)
            if "resumed" in e.payload
        ]
        assert any("changed on disk" in n for n in resumed_notes[0])


def test_a_run_records_the_task_and_script_it_started_from(tmp_path: Path) -> None:
    task = tmp_path / "task.toml"
    task.write_text(CHECKED_TASK)
    write_agent(tmp_path, [{"text": "Hello."}])
    db = tmp_path / "runs.db"
    done = ilh("run", str(task), "--store", str(db), "--json")
    run_id = json.loads(done.stdout)["run_id"]
    with RunStore(db, create=False) as store:
        started = store.events(run_id)[0].payload
        summary = store.get_run(run_id)
    assert started["inputs"]["task"]["content"] == CHECKED_TASK
    assert started["inputs"]["agent_script"]["turns"] == [
        {"text": "Hello.", "tool_calls": [], "usage": None}
    ]
    assert summary.meta["task_sha256"] == started["inputs"]["task"]["sha256"]
    assert "content" not in json.dumps(summary.meta), "the runs row stays small"


# --- time charged after a kill ---------------------------------------------------------------

TIMED_TASK = """[task]
id = "timed"
objective = "Wait twice."

[budget.rounds]
limit = 6

[budget.time]
limit = "120s"

[agent]
model = "scripted:agent.jsonl"
"""


def time_used(result: dict[str, Any]) -> float:
    [row] = [b for b in result["budgets"] if b["kind"] == "time"]
    return float(row["used"])


def test_after_a_kill_and_resume_the_recorded_time_is_at_least_the_wall_time(
    tmp_path: Path,
) -> None:
    task = tmp_path / "task.toml"
    task.write_text(TIMED_TASK)
    write_agent(tmp_path, [command_turn("sleep 2"), command_turn("sleep 2"), {"text": CLAIM}])
    db = tmp_path / "runs.db"

    began = time.monotonic()
    proc = start("run", str(task), "--store", str(db), "--json")
    try:
        run_id = wait_for(db, proc, EventKind.ALLOWANCE, "run_command")
        time.sleep(0.5)  # inside `sleep 2`
    finally:
        kill(proc)  # the harness itself, -9, mid-command
    resumed = ilh("run", "--resume", run_id, "--store", str(db), "--json")
    wall = time.monotonic() - began
    assert resumed.returncode == 3, resumed.stderr
    result = json.loads(resumed.stdout)
    used = time_used(result)
    assert used >= wall, f"recorded {used}s for {wall:.2f}s of wall time"
    # The cut command was charged its whole allowance (the time budget left, at most
    # the 60 s a command may take), not the 0.02 s the record's timestamps span.
    assert used >= 60
    with RunStore(db, create=False) as store:
        assert store.verify(run_id).ok
        assert len(store.events(run_id, EventKind.TOOL_CALL)) == 1  # the second sleep


def test_a_kill_during_a_model_call_is_charged_the_call_s_timeout(tmp_path: Path) -> None:
    """resumed_ledger on a record cut inside a model call: its whole timeout is charged."""
    from harness.inputs.task_file import load_task
    from harness.run.resume import resumed_ledger

    task_file = tmp_path / "task.toml"
    task_file.write_text(TIMED_TASK)
    with RunStore(tmp_path / "runs.db") as store:
        run_id = store.create_run("timed")
        store.append(run_id, EventKind.ALLOWANCE, {"for": "model_call", "allowed_s": 45.0})
        store.append(run_id, EventKind.MODEL_ATTEMPT, {"outcome": "retry"})
        cut = resumed_ledger(load_task(task_file), store.events(run_id))
        store.append(run_id, EventKind.MODEL_CALL, {"usage": {}})
        finished = resumed_ledger(load_task(task_file), store.events(run_id))
    [cut_row] = [r for r in cut.rows_json(1) if r["kind"] == "time"]
    [done_row] = [r for r in finished.rows_json(1) if r["kind"] == "time"]
    assert cut_row["used"] >= 45
    assert done_row["used"] < 5, "a call that finished is charged its time, not its allowance"


# --- the endpoint as recorded ----------------------------------------------------------------

ENDPOINT_TASK = """[task]
id = "endpoint"
objective = "Say hello."

[budget.rounds]
limit = 4
"""


def chat_reply(text: str) -> Reply:
    return json_reply(
        {
            "id": "c1",
            "object": "chat.completion",
            "model": "tiny-test",
            "choices": [
                {
                    "index": 0,
                    "finish_reason": "stop",
                    "message": {"role": "assistant", "content": text},
                }
            ],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
        }
    )


def refused(request: dict[str, Any]) -> Reply:
    return json_reply({"error": {"message": "bad request"}}, status=400)


@pytest.fixture
def clean_env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ANTHROPIC_"))}
    env["OPENAI_API_KEY"] = "sk-canary-resume-endpoint-0000"
    return env


def test_a_resumed_run_keeps_its_base_url(tmp_path: Path, clean_env: dict[str, str]) -> None:
    """Started against a local server, stopped by a model error, resumed with no
    --base-url: it goes back to the same server. The 'public' endpoint (the SDK's
    default, here OPENAI_BASE_URL pointing at a second loopback server, so nothing
    ever leaves the machine) is never contacted."""
    task = tmp_path / "task.toml"
    task.write_text(ENDPOINT_TASK)
    db = tmp_path / "runs.db"
    local = ChatServer([refused, lambda r: chat_reply(CLAIM)])
    public = ChatServer([lambda r: chat_reply(CLAIM)])
    with serve(local), serve(public):
        clean_env["OPENAI_BASE_URL"] = public.url
        first = ilh(
            "run", str(task), "--model", "openai:tiny-test", "--base-url", local.url,
            "--store", str(db), "--json", env=clean_env,
        )  # fmt: skip
        assert first.returncode == 3, first.stderr
        run_id = json.loads(first.stdout)["run_id"]
        assert json.loads(first.stdout)["ended_by"] == "error"
        resumed = ilh("run", "--resume", run_id, "--store", str(db), "--json", env=clean_env)
    assert resumed.returncode == 3, resumed.stderr
    assert len(local.requests) == 2, "the resumed call went to the recorded server"
    assert public.requests == [], "the resume went to another endpoint"
    result = json.loads(resumed.stdout)
    assert result["ended_by"] == "unverified"
    assert not any("endpoint changed" in n for n in result["notes"])


def test_a_resume_that_changes_the_endpoint_says_so(
    tmp_path: Path, clean_env: dict[str, str]
) -> None:
    task = tmp_path / "task.toml"
    task.write_text(ENDPOINT_TASK)
    db = tmp_path / "runs.db"
    first_server = ChatServer([refused])
    second_server = ChatServer([lambda r: chat_reply(CLAIM)])
    with serve(first_server), serve(second_server):
        first = ilh(
            "run", str(task), "--model", "openai:tiny-test", "--base-url", first_server.url,
            "--store", str(db), "--json", env=clean_env,
        )  # fmt: skip
        run_id = json.loads(first.stdout)["run_id"]
        moved = ilh(
            "run", "--resume", run_id, "--base-url", second_server.url,
            "--store", str(db), "--json", env=clean_env,
        )  # fmt: skip
        assert len(second_server.requests) == 1
        notes = json.loads(moved.stdout)["notes"]
        assert f"endpoint changed from {first_server.url} to {second_server.url}" in " ".join(notes)
    with RunStore(db, create=False) as store:
        endpoints = [e.payload["endpoint"] for e in store.events(run_id, EventKind.NOTE)
                     if "endpoint" in e.payload]  # fmt: skip
    assert endpoints[-1]["base_url"] == second_server.url


# --- confinement is never inherited ----------------------------------------------------------


def test_sandbox_none_must_be_given_again_on_resume(tmp_path: Path) -> None:
    task = tmp_path / "task.toml"
    task.write_text(ENDPOINT_TASK + '\n[agent]\nmodel = "scripted:agent.jsonl"\n')
    write_agent(tmp_path, [{"text": "Nothing to do yet."}])
    db = tmp_path / "runs.db"
    first = ilh("run", str(task), "--sandbox", "none", "--store", str(db), "--json")
    started = json.loads(first.stdout)
    assert started["sandbox"]["mode"] == "none" and started["ended_by"] == "script_exhausted"
    again = json.loads(
        ilh("run", "--resume", started["run_id"], "--store", str(db), "--json").stdout
    )
    assert again["sandbox"]["mode"] == "bwrap", "--sandbox none was carried over silently"
    unconfined = ilh(
        "run", "--resume", started["run_id"], "--sandbox", "none", "--store", str(db), "--json"
    )
    assert json.loads(unconfined.stdout)["sandbox"]["mode"] == "none"
