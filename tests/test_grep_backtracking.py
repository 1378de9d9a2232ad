"""An agent's `grep` pattern cannot stall the harness (issue 9, second red team).

`re` backtracks with the interpreter lock held and no timeout: `(a|aa)+$` against a line
of sixty `a`s and a `b` froze `ilh run` in the harness process itself, past its time
budget, deaf to the rest of a batch. Run as a child process here: the old code never
returned, and would have frozen pytest too."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from harness.workspace.folder import Workspace
from harness.workspace.tools import ToolCall, dispatch

ROOT = Path(__file__).resolve().parents[1]
LINE = "a" * 60 + "b\n"
TASK = """[task]
id = "backtrack"
objective = "Find the line."

[budget.rounds]
limit = 3

[budget.time]
limit = "8s"

[agent]
model = "scripted:agent.jsonl"
"""


def test_a_backtracking_pattern_ends_at_the_deadline_in_ilh_run(tmp_path: Path) -> None:
    (tmp_path / "task.toml").write_text(TASK)
    turns = [
        {
            "text": "I look.",
            "tool_calls": [
                {"name": "write_file", "arguments": {"path": "x.txt", "content": LINE}},
                {"name": "grep", "arguments": {"pattern": "(a|aa)+$", "path": "."}},
            ],
        },
        {"text": "Nothing more to do."},
    ]
    (tmp_path / "agent.jsonl").write_text("\n".join(json.dumps(t) for t in turns) + "\n")
    argv = [sys.executable, "-m", "harness", "run", "task.toml", "--json", "--store", "runs.db"]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    started = time.monotonic()
    done = subprocess.run(argv, cwd=tmp_path, env=env, capture_output=True, timeout=120)
    assert time.monotonic() - started < 60, "the run outlived its 8 s budget"
    assert done.returncode in (0, 3), done.stderr.decode()[-2000:]
    run_id = json.loads(done.stdout)["run_id"]
    export = [*argv[:3], "runs", "export", run_id, "--store", "runs.db"]
    events = subprocess.run(export, cwd=tmp_path, env=env, capture_output=True, timeout=60)
    assert b'"error":"timeout"' in events.stdout  # the grep was cut at its deadline


def test_grep_in_a_child_process_still_finds_lines(tmp_path: Path) -> None:
    ws = Workspace.create(tmp_path / "ws")
    (ws.root / "x.txt").write_text(LINE + "plain\n")

    def grep(pattern: str, timeout_s: float) -> tuple[bool, str, dict[str, object]]:
        call = ToolCall(name="grep", arguments={"pattern": pattern, "path": "."})
        result = dispatch(ws, call, timeout_s=timeout_s)
        return result.ok, result.output, result.meta

    ok, output, meta = grep("pla.n", 10.0)
    assert ok and output == "x.txt:2:plain" and meta["matched_files"] == ["x.txt"]
    ok, output, meta = grep("^[ab]+$", 10.0)
    assert ok and output.splitlines() == [f"x.txt:1:{LINE.strip()}"]
