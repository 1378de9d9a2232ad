"""A `scripted:` (or `replay:`) file that is not there (ux6). Typed on the command line it
is looked for in the current folder, then beside the task file: the message says both
places and how to name it, at the flag that named it. Written in a task file it is read
beside the task file: the message is at the task file's line of `agent.model`. Before,
both named only a path beside the task file, which the person had never written."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"


def ilh(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}  # this tree's code, not an installed one
    return subprocess.run(
        [sys.executable, "-m", "harness", *args],
        cwd=cwd, capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=120,
        env=env, check=False,
    )  # fmt: skip


def one_error(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr and done.stdout == ""
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    return lines[0]


@pytest.fixture
def example(tmp_path: Path) -> Path:
    """`examples/grade_model_judged` copied into a sub-folder, the test's cwd above it."""
    shutil.copytree(EXAMPLES / "grade_model_judged", tmp_path / "ex")
    return tmp_path / "ex"


@pytest.mark.parametrize("command", ["run", "grade"])
def test_a_missing_grader_script_says_where_it_was_looked_for(
    example: Path, tmp_path: Path, command: str
) -> None:
    args = [command, "ex/task.toml", "--grader-model", "scripted:gone.jsonl", "--store", "s.db"]
    if command == "grade":
        args = [*args[:-2], "--workspace", "ex/workspace"]
    else:
        (example / "task.toml").write_text(
            (example / "task.toml").read_text() + '\n[agent]\nmodel = "scripted:grader.jsonl"\n'
        )
    line = one_error(ilh(tmp_path, *args))
    assert line.startswith("error --grader-model: E500 scripted:gone.jsonl: "), line
    # Both places, as the person can find them, and what to do.
    assert f"current folder ({tmp_path})" in line and f"folder ({example})" in line, line
    assert "name it from the current folder, or by an absolute path" in line, line


def test_a_grader_script_typed_from_the_current_folder_is_found(
    example: Path, tmp_path: Path
) -> None:
    done = ilh(
        tmp_path, "grade", "ex/task.toml", "--workspace", "ex/workspace",
        "--grader-model", "scripted:ex/grader.jsonl",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr


def test_a_grader_script_beside_the_task_is_still_found(example: Path, tmp_path: Path) -> None:
    done = ilh(
        tmp_path, "grade", "ex/task.toml", "--workspace", "ex/workspace",
        "--grader-model", "scripted:grader.jsonl",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize("scheme", ["scripted", "replay"])
def test_a_missing_agent_file_on_the_command_line_names_the_flag(
    tmp_path: Path, scheme: str
) -> None:
    shutil.copytree(EXAMPLES / "honest", tmp_path / "ex")
    line = one_error(ilh(tmp_path, "run", "ex/task.toml", "--model", f"{scheme}:gone.jsonl"))
    assert line.startswith(f"error --model: E500 {scheme}:gone.jsonl: no file 'gone.jsonl'"), line
    listed = ilh(tmp_path, "runs", "list", "--json")  # refused before a run was recorded
    assert listed.returncode in (0, 2) and listed.stdout.strip() in ("", "[]"), listed


def test_a_missing_absolute_script_keeps_the_path_typed(tmp_path: Path) -> None:
    shutil.copytree(EXAMPLES / "honest", tmp_path / "ex")
    gone = tmp_path / "nowhere" / "gone.jsonl"
    line = one_error(ilh(tmp_path, "run", "ex/task.toml", "--model", f"scripted:{gone}"))
    assert line == f"error {gone}: E500 cannot read the agent script: No such file or directory"


def test_a_missing_script_of_the_task_file_is_at_its_line(tmp_path: Path) -> None:
    shutil.copytree(EXAMPLES / "honest", tmp_path / "ex")
    task = tmp_path / "ex" / "task.toml"
    text = task.read_text().replace("scripted:agent.jsonl", "scripted:agnet.jsonl")
    task.write_text(text)
    number = text.splitlines().index('model = "scripted:agnet.jsonl"') + 1
    line = one_error(ilh(tmp_path, "run", "ex/task.toml"))
    assert line == (
        f"error ex/task.toml:{number}: E500 agent.model: no file 'agnet.jsonl' beside the "
        f"task file (looked for {tmp_path / 'ex' / 'agnet.jsonl'}); paths in a task file are "
        "relative to its folder"
    )
