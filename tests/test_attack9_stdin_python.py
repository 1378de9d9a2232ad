"""Red team (attack9): Python a free check runs that still slipped past the harness's
`python` shim (`harness/grading/sandboxed/ilh_python.py`) and ran the agent's module in
the real interpreter, which ended the process with 0 (`os._exit(0)` at import): the
program on stdin (`python - < check.py`, `python < check.py`, `cat check.py | python3`,
a heredoc in a restored `check.sh`), `python -i check.py`, and a long option with a
value (`--check-hash-based-pycs never check.py`). Each forged `complete` through `ilh run`
before its fix; a program on stdin now runs in the runner as a `-c` text does, `-i` is
refused."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.test_redteam_grading import USAGE, calc_run_task, claim, never_complete, run, write_task

HONEST = "def add(a, b):\n    return a + b\n"
EXITING = "import os\n\nos._exit(0)\n"
CHECK_PY = "from calc import add\n\nassert add(1, 2) == 3, 'add(1, 2)'\nassert add(2, 2) == 4\n"
#: (the check's command, the task's files beside calc.py)
CHECKS: dict[str, tuple[str, dict[str, str]]] = {
    "python - < check.py": ("python - < check.py", {"check.py": CHECK_PY}),
    "python < check.py": ("python < check.py", {"check.py": CHECK_PY}),
    "cat | python3": ("cat check.py | python3", {"check.py": CHECK_PY}),
    "heredoc in check.sh": (
        "sh check.sh",
        {"check.sh": "set -e\npython3 - ignored <<'EOF'\n" + CHECK_PY + "EOF\n"},
    ),
    "long option": ("python --check-hash-based-pycs never check.py", {"check.py": CHECK_PY}),
}


def _task(folder: Path, command: str, files: dict[str, str], calc: str) -> Path:
    return calc_run_task(folder, command, files, calc)


@pytest.mark.parametrize("check", sorted(CHECKS))
def test_the_agents_module_cannot_end_python_reading_its_program_elsewhere(
    tmp_path: Path, check: str
) -> None:
    command, files = CHECKS[check]
    never_complete(run(_task(tmp_path, command, files, EXITING)))


@pytest.mark.parametrize("check", sorted(CHECKS))
def test_an_honest_agent_passes_those_checks(tmp_path: Path, check: str) -> None:
    command, files = CHECKS[check]
    outcome = run(_task(tmp_path, command, files, HONEST))
    assert outcome["final"]["state"] == "complete", json.dumps(outcome["grader"], indent=1)


def test_python_i_is_not_left_to_the_real_interpreter(tmp_path: Path) -> None:
    never_complete(run(_task(tmp_path, "python -i check.py", {"check.py": CHECK_PY}, EXITING)))


@pytest.mark.parametrize(
    ("args", "after_dash"),
    [
        (["-"], []),
        ([], []),
        (["-u", "-", "x"], ["x"]),
        (["-W", "ignore", "-"], []),
        (["check.py"], None),
        (["-c", "x"], None),
        (["-V"], None),  # prints the version, runs no code
        (["-h"], None),
    ],
)
def test_which_calls_read_their_program_from_stdin(
    args: list[str], after_dash: list[str] | None
) -> None:
    from harness.grading.sandboxed.ilh_python import _interactive, _stdin_program

    assert _stdin_program(args) == after_dash
    assert not _interactive(args)


@pytest.mark.parametrize("args", [["-i", "x.py"], ["-W", "ignore", "-i"], ["-ui", "-c", "x"]])
def test_interactive_calls_are_seen_past_other_options(args: list[str]) -> None:
    from harness.grading.sandboxed.ilh_python import _interactive

    assert _interactive(args)


def test_the_agents_own_program_on_stdin_is_its_own(tmp_path: Path) -> None:
    """`python3 < prog.py` with the agent's `prog.py`: its own program, run by the real
    interpreter as `python3 prog.py` is (in the runner its `os._exit(0)` would be a run
    that never ended), its output the check's to read."""
    program = "import os\n\nprint('hello-world', flush=True)\nos._exit(0)\n"
    command = (
        'test "$(python3 < prog.py)" = hello-world && test "$(cat prog.py | python)" = hello-world'
    )
    turn: dict[str, Any] = {
        "text": "Writing prog.",
        "tool_calls": [
            {"name": "write_file", "arguments": {"path": "prog.py", "content": program}}
        ],
        "usage": USAGE,
    }
    task = write_task(tmp_path, {"prog.py": "\n"}, f"run = {json.dumps(command)}", [turn, claim()])
    outcome = run(task)
    assert outcome["final"]["state"] == "complete", json.dumps(outcome["grader"], indent=1)
