"""A run killed while the grader works resumes with the pending claim graded first."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from click.testing import CliRunner

from harness.cli.main import ilh
from harness.record.events import EventKind
from harness.record.store import RunStore

AGENT = [
    {
        "text": "Writing.",
        "tool_calls": [{"name": "write_file", "arguments": {"path": "a.txt", "content": "a"}}],
    },
    {"text": "Done.\n::STATUS{@TASK|state:claimed_complete|by:@AGENT|authority:proposal}"},
]
# The check waits (30 s at most: it outlives the killed harness) until the test lets it
# finish; the run is killed while it waits.
TASK = """[task]
id = "slow-check"
objective = "Write a.txt."

[budget.rounds]
limit = 5

[rubric]
threshold = 1.0

[[rubric.criteria]]
id = "written"
weight = 1.0
check = "a.txt exists"
run = "WAIT; test -f a.txt"

[agent]
model = "scripted:agent.jsonl"
""".replace(
    "WAIT", "i=0; while [ ! -f release.flag ] && [ $i -lt 600 ]; do sleep 0.05; i=$((i+1)); done"
)


def wait_for_claim(db: Path, proc: subprocess.Popen[bytes]) -> str:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        assert proc.poll() is None, "the run ended before it could be killed"
        if db.exists():
            with RunStore(db, create=False) as store:
                for summary in store.list_runs():
                    changes = store.events(summary.run_id, EventKind.STATE_CHANGE)
                    if any(e.payload["state"] == "claimed_complete" for e in changes):
                        return summary.run_id
        time.sleep(0.05)
    raise AssertionError("the agent never claimed completion")


def test_run_killed_during_grading_is_graded_on_resume(tmp_path: Path) -> None:
    (tmp_path / "agent.jsonl").write_text("\n".join(json.dumps(t) for t in AGENT) + "\n")
    (tmp_path / "task.toml").write_text(TASK)
    db = tmp_path / "store" / "runs.db"
    proc = subprocess.Popen(
        [sys.executable, "-m", "harness", "run", str(tmp_path / "task.toml"), "--store", str(db)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        run_id = wait_for_claim(db, proc)
        time.sleep(0.3)  # well inside the waiting check
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    with RunStore(db, create=False) as store:
        assert store.verify(run_id).ok
        assert store.events(run_id, EventKind.GRADER_RESULT) == []
    (db.parent / "runs" / run_id / "workspace" / "release.flag").write_text("")

    resumed = CliRunner().invoke(ilh, ["run", "--resume", run_id, "--store", str(db), "--json"])
    assert resumed.exit_code == 0, resumed.output
    outcome = json.loads(resumed.stdout)
    assert outcome["ended_by"] == "committed_complete"
    assert [h["state"] for h in outcome["history"]] == [
        "running",
        "claimed_complete",
        "verified_complete",
        "complete",
    ]
    with RunStore(db, create=False) as store:
        assert store.verify(run_id).ok
        assert (
            len(store.events(run_id, EventKind.MODEL_CALL)) == 2
        )  # the agent was not called again


JUDGED = """
[[rubric.criteria]]
id = "judged"
weight = 0.5
check = "a.txt holds the letter a"
"""
# The grader may cite only files it has read.
GRADER_READS = {
    "text": "Reading a.txt.",
    "tool_calls": [{"name": "read_file", "arguments": {"path": "a.txt"}}],
}
GRADER_REPLY = {
    "text": json.dumps(
        {
            "results": [
                {
                    "id": "judged",
                    "result": "pass",
                    "rationale": "a.txt holds a",
                    "evidence": [{"kind": "file", "ref": "a.txt"}],
                }
            ]
        }
    )
}


def test_resume_grades_with_the_grader_model_the_run_started_with(tmp_path: Path) -> None:
    """The grader model is part of the run: a resumed run is graded by it again without
    --grader-model being repeated (a model-judged criterion would otherwise stay unknown
    and the run could never verify)."""
    (tmp_path / "agent.jsonl").write_text("\n".join(json.dumps(t) for t in AGENT) + "\n")
    (tmp_path / "grader.jsonl").write_text(
        "\n".join(json.dumps(t) for t in (GRADER_READS, GRADER_REPLY)) + "\n"
    )
    task = TASK.replace("weight = 1.0", "weight = 0.5").replace("[agent]", JUDGED + "\n[agent]")
    (tmp_path / "task.toml").write_text(task)
    db = tmp_path / "store" / "runs.db"
    grader = f"scripted:{tmp_path / 'grader.jsonl'}"
    command = [sys.executable, "-m", "harness", "run", str(tmp_path / "task.toml")]
    proc = subprocess.Popen(
        [*command, "--store", str(db), "--grader-model", grader],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        run_id = wait_for_claim(db, proc)
        time.sleep(0.3)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    (db.parent / "runs" / run_id / "workspace" / "release.flag").write_text("")

    resumed = CliRunner().invoke(ilh, ["run", "--resume", run_id, "--store", str(db), "--json"])
    assert resumed.exit_code == 0, resumed.output
    outcome = json.loads(resumed.stdout)
    assert outcome["ended_by"] == "committed_complete"
    judged = {c["id"]: c for c in outcome["grader"]["criteria"]}["judged"]
    assert (judged["result"], judged["via"]) == ("pass", "model")
