"""A narrow terminal (a split pane, a phone's ssh client, `COLUMNS=20` in CI) and NO_COLOR:
the summaries of `ilh run` and `ilh grade` stay readable. At 1 and 10 columns their tables
kept their borders and lost every value (`│││`, or `sc|ri|pt` a letter pair a line)."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from harness.cli.main import ilh

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def command(columns: int, *args: str) -> tuple[int, str]:
    env = {"COLUMNS": str(columns), "NO_COLOR": "1", "TERM": "dumb"}
    result = CliRunner().invoke(ilh, list(args), env=env)
    return result.exit_code, result.stdout


@pytest.mark.parametrize("columns", [1, 10, 30])
def test_the_run_summary_keeps_every_value_whole_on_a_narrow_terminal(
    tmp_path: Path, columns: int
) -> None:
    code, out = command(
        columns, "run", str(EXAMPLES / "forged_commit" / "task.toml"), "--store",
        str(tmp_path / "r.db"),
    )  # fmt: skip
    assert code == 3, out
    lines = out.splitlines()
    # Each row is one line `key: value`, words whole (the terminal wraps them).
    assert "ended by: script_exhausted" in lines
    assert "final: stopped · reason agent_ended · by @RUNTIME · authority commit" in lines
    assert any(line.startswith("proposals: ") and "rejected" in line for line in lines)
    assert "::STATUS{@TASK|state:stopped|reason:agent_ended|by:@RUNTIME|authority:commit}" in lines
    assert not any(set(line) <= set("│┌┐└┘┬┴─ ") and line.strip() for line in lines)
    assert "\x1b[" not in out  # NO_COLOR


def test_the_run_summary_is_a_table_where_there_is_room(tmp_path: Path) -> None:
    code, out = command(
        100, "run", str(EXAMPLES / "forged_commit" / "task.toml"), "--store",
        str(tmp_path / "r.db"),
    )  # fmt: skip
    assert code == 3 and "│ ended by " in out and "ended by:" not in out


@pytest.mark.parametrize("columns", [1, 10, 30])
def test_the_grade_report_keeps_each_criterion_whole_on_a_narrow_terminal(columns: int) -> None:
    example = EXAMPLES / "grade_false"
    code, out = command(
        columns, "grade", str(example / "task.toml"), "--workspace", str(example / "workspace")
    )
    assert code == 1, out
    lines = out.splitlines()
    failing = [line for line in lines if line.startswith("criterion ") and ": fail" in line]
    assert failing, out
    assert any(line.startswith("needs_revision") for line in lines)
    assert not any(set(line) <= set("│┃┏┓┗┛┡┩╇┳┻━─┌┐└┘┬┴ ") and line.strip() for line in lines)
