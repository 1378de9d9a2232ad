"""Red team (attack9): an agent's program a free check runs wrote, outside the task's
files, data the check read after it. `python3 want.py > /tmp/want && python3 prog.py >
/tmp/got && diff /tmp/want /tmp/got`: the agent's `prog.py` rewrote `/tmp/want` (the
task's reference output, written by the check's earlier step) as its own wrong answer
and the check passed: a forged `complete` through `ilh run`. An agent's program the
shim runs (`harness/grading/sandboxed/ilh_python.py`) may no longer change a file of the
check's `/tmp` (its HOME) that existed when it started: the check fails."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.test_redteam_grading import USAGE, claim, never_complete, run, write_task

WANT = "print(1 + 2)\n"
LINE = "python3 want.py > /tmp/want && python3 prog.py > /tmp/got && diff /tmp/want /tmp/got"
#: The agent's wrong program, each rewriting the reference its own way.
CHEATS = {
    "rewrites": "open('/tmp/want', 'w').write('0\\n')\nprint(0)\n",
    "replaces": (
        "import os\nopen('/tmp/x', 'w').write('0\\n')\nos.replace('/tmp/x', '/tmp/want')\n"
        "print(0)\n"
    ),
    "later, from a daemon": (
        "import os, time\nif os.fork() == 0:\n    os.setsid()\n    if os.fork() == 0:\n"
        "        time.sleep(0.3)\n        open('/tmp/want', 'w').write('0\\n')\n"
        "    os._exit(0)\nprint(0)\n"
    ),
}


def _task(folder: Path, line: str, program: str) -> Path:
    turn: dict[str, Any] = {
        "text": "Writing prog.",
        "tool_calls": [
            {"name": "write_file", "arguments": {"path": "prog.py", "content": program}}
        ],
        "usage": USAGE,
    }
    template = {"want.py": WANT, "prog.py": "print(1)\n"}
    return write_task(folder, template, f"run = {json.dumps(line)}", [turn, claim()])


@pytest.mark.parametrize("cheat", sorted(CHEATS))
def test_the_agents_program_cannot_rewrite_what_the_check_wrote_before_it(
    tmp_path: Path, cheat: str
) -> None:
    line = LINE.replace("&& diff", "&& sleep 1 && diff")
    never_complete(run(_task(tmp_path, line, CHEATS[cheat])))


@pytest.mark.parametrize(
    "line",
    [LINE, 'python3 prog.py /tmp/got && test "$(cat /tmp/got)" = 3'],
    ids=["diff", "writes its own file"],
)
def test_an_honest_program_passes(tmp_path: Path, line: str) -> None:
    program = (
        "import sys\nif len(sys.argv) > 1:\n    open(sys.argv[1], 'w').write('3')\n"
        "else:\n    print(3)\n"
    )
    outcome = run(_task(tmp_path, line, program))
    assert outcome["final"]["state"] == "complete", json.dumps(outcome["grader"], indent=1)


def test_an_honest_program_may_write_into_a_folder_the_check_made(tmp_path: Path) -> None:
    program = "import sys\nopen(sys.argv[1] + '/got', 'w').write('3')\n"
    line = 'mkdir /tmp/out && python3 prog.py /tmp/out && test "$(cat /tmp/out/got)" = 3'
    outcome = run(_task(tmp_path, line, program))
    assert outcome["final"]["state"] == "complete", json.dumps(outcome["grader"], indent=1)


#: The same, the reference written into the tree by the check's earlier step.
TREE_LINE = "python3 want.py > want.txt && python3 prog.py > got.txt && diff want.txt got.txt"
#: The agent's module imported by the check's own Python (in the runner, the module in
#: the solution process): it rewrites the reference at import.
CALC_LINE = (
    "python3 want.py > /tmp/want && python3 -c 'from calc import main; main()' > /tmp/got"
    " && diff /tmp/want /tmp/got"
)
CALC_CHEAT = "open('/tmp/want', 'w').write('0\\n')\n\n\ndef main():\n    print(0)\n"


def test_the_agents_program_cannot_rewrite_what_the_check_wrote_in_the_tree(
    tmp_path: Path,
) -> None:
    cheat = "open('want.txt', 'w').write('0\\n')\nprint(0)\n"
    never_complete(run(_task(tmp_path, TREE_LINE, cheat)))


def test_the_agents_module_cannot_rewrite_what_the_check_wrote_before(tmp_path: Path) -> None:
    turn: dict[str, Any] = {
        "text": "Writing calc.",
        "tool_calls": [
            {"name": "write_file", "arguments": {"path": "calc.py", "content": CALC_CHEAT}}
        ],
        "usage": USAGE,
    }
    template = {"want.py": WANT, "calc.py": "def main():\n    raise NotImplementedError\n"}
    task = write_task(tmp_path, template, f"run = {json.dumps(CALC_LINE)}", [turn, claim()])
    never_complete(run(task))


def test_an_honest_agent_passes_the_tree_and_module_lines(tmp_path: Path) -> None:
    honest = "def main():\n    print(3)\n"
    turn: dict[str, Any] = {
        "text": "Writing.",
        "tool_calls": [
            {"name": "write_file", "arguments": {"path": "calc.py", "content": honest}},
            {"name": "write_file", "arguments": {"path": "prog.py", "content": "print(3)\n"}},
        ],
        "usage": USAGE,
    }
    template = {"want.py": WANT, "prog.py": "print(1)\n", "calc.py": "def main():\n    pass\n"}
    line = f"{TREE_LINE} && {CALC_LINE}"
    task = write_task(tmp_path, template, f"run = {json.dumps(line)}", [turn, claim()])
    outcome = run(task)
    assert outcome["final"]["state"] == "complete", json.dumps(outcome["grader"], indent=1)


@pytest.mark.parametrize(
    "line",
    [
        "test \"$(python3 -c 'from calc import main; main()')\" = 3",
        "python3 -c 'from calc import main; main()' > /tmp/got && test \"$(cat /tmp/got)\" = 3",
    ],
    ids=["substitution", "file"],
)
def test_what_the_agents_module_prints_in_a_checks_python_reaches_the_check(
    tmp_path: Path, line: str
) -> None:
    """Its module runs in the solution process, which the runner ends with SIGKILL: what
    it printed to a pipe or a file stayed in its buffer, and an honest agent failed."""
    template = {"calc.py": "def main():\n    print(3)\n"}
    turn: dict[str, Any] = {"text": "Nothing to do.", "usage": USAGE}
    task = write_task(tmp_path, template, f"run = {json.dumps(line)}", [turn, claim()])
    outcome = run(task)
    assert outcome["final"]["state"] == "complete", json.dumps(outcome["grader"], indent=1)


def test_the_agents_program_ends_with_the_python_the_check_killed(tmp_path: Path) -> None:
    """The shim stays the agent's program's parent; killed (`timeout -s KILL`), it takes
    the program with it, as when it became that program by `exec`."""
    program = "import time\ntime.sleep(3)\nopen('late.txt', 'w').write('x')\n"
    line = "timeout -s KILL 1 python3 prog.py; sleep 4; test ! -e late.txt"
    outcome = run(_task(tmp_path, line, program))
    assert outcome["final"]["state"] == "complete", json.dumps(outcome["grader"], indent=1)
