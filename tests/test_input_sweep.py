"""Hostile input found by a sweep of every command (bad task values, empty paths…): each is
one `error LOCATION: CODE message` line and exit 2, never a traceback, and nothing is
recorded for a task that was refused."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from harness.cli.main import ilh

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def invoke(*args: str) -> Result:
    return CliRunner().invoke(ilh, list(args))


@dataclass
class Ended:
    exit_code: int
    output: str


def ilh_process(cwd: Path, *args: str) -> Ended:
    """`ilh ARGS` as a user runs it: bad usage is reported by `main`, not by click."""
    done = subprocess.run(
        [sys.executable, "-m", "harness", *args],
        cwd=cwd, capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=120,
    )  # fmt: skip
    return Ended(done.returncode, done.stdout + done.stderr)


def one_error(result: Result | Ended, location: str, code: str) -> str:
    assert result.exit_code == 2, result.output
    if isinstance(result, Result):
        assert result.exception is None or isinstance(result.exception, SystemExit), result
    assert "Traceback" not in result.output
    lines = [line for line in result.output.splitlines() if line.startswith("error ")]
    assert lines, result.output
    # The location may go on with `:LINE` (a task file) or be any option (`location=""`).
    assert re.match(rf"error {re.escape(location)}\S*: {code} ", lines[-1]), lines
    return lines[-1]


@pytest.fixture
def honest(tmp_path: Path) -> Path:
    folder = tmp_path / "honest"
    shutil.copytree(EXAMPLES / "honest", folder)
    return folder


@pytest.mark.parametrize(
    ("old", "new", "key"),
    [
        ('workspace = "workspace"', 'workspace = "work\\u0000space"', "task.workspace"),
        ("scripted:agent.jsonl", "scripted:agent\\u0000.jsonl", "agent.model"),
        ("[agent]\n", '[agent]\nsoul = "s\\u0000"\n', "agent.soul"),
        ('id = "fizzbuzz"', 'id = "fizz\\u0000buzz"', "task.id"),
    ],
)  # fmt: skip
def test_a_nul_character_in_a_task_value_is_bad_input(
    honest: Path, tmp_path: Path, old: str, new: str, key: str
) -> None:
    # A path holding NUL used to reach `Path.resolve()` in the run's setup: a ValueError
    # traceback, exit 1, after the run had been opened in the store.
    task = honest / "task.toml"
    text = task.read_text()
    assert old in text
    task.write_text(text.replace(old, new, 1))
    store = tmp_path / "r.db"
    line = one_error(invoke("run", str(task), "--store", str(store)), str(task), "E303")
    assert key in line and "NUL" in line
    runs = tmp_path / "runs"
    assert not runs.exists() or not any(runs.iterdir())  # refused before a run began
    graded = invoke("grade", str(task), "--workspace", str(honest / "workspace"))
    assert key in one_error(graded, str(task), "E303")


@pytest.mark.parametrize(
    "args",
    [
        ("runs", "list", "--store", ""),
        ("runs", "show", "x", "--store", ""),
        ("runs", "verify", "x", "--store", ""),
        ("soul", "show", ""),
        ("lint", ""),
        ("certify", "--check", ""),
    ],
)
def test_an_empty_path_is_bad_usage(args: tuple[str, ...], tmp_path: Path) -> None:
    # click takes "" as the current folder; the store's code then met `.` and raised.
    line = one_error(ilh_process(tmp_path, *args), "", "E303")
    assert "empty path" in line


def test_an_empty_workspace_is_not_the_current_folder(honest: Path) -> None:
    # `--workspace "$WS"` with WS unset graded whatever folder the command ran in.
    result = ilh_process(honest, "grade", "task.toml", "--workspace", "")
    assert "empty path" in one_error(result, "--workspace", "E303")
