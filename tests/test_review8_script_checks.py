"""Review 8 of free `run` checks run in the harness's runner (kind `script`, attack6):
such a check must say what a plain `python check.py` exit code would say, for an honest
task author's check (an honest solution passes, a wrong one fails), through `ilh run`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.test_redteam_grading import USAGE, claim, never_complete, run, write_task

STUB = "def add(a, b):\n    raise NotImplementedError\n\n\ndef apply(f, x):\n    raise NotImplementedError\n"
HONEST = "def add(a, b):\n    return a + b\n\n\ndef apply(f, x):\n    return f(x)\n"
WRONG = "def add(a, b):\n    return 0\n\n\ndef apply(f, x):\n    return 0\n"

#: Checks an honest task author writes, each run as `python check.py`.
CHECKS = {
    "unittest.main": (
        "import unittest\nfrom calc import add\n\n\n"
        "class AddTest(unittest.TestCase):\n"
        "    def test_add(self):\n        self.assertEqual(add(1, 2), 3)\n\n\n"
        'if __name__ == "__main__":\n    unittest.main()\n'
    ),
    "callback": (
        "from calc import apply\n\n\ndef double(x):\n    return 2 * x\n\n\n"
        "assert apply(double, 3) == 6\nassert apply(lambda x: x + 1, 3) == 4\n"
    ),
    "multiprocessing": (
        "import multiprocessing\n\n\ndef square(x):\n    return x * x\n\n\n"
        'if __name__ == "__main__":\n'
        "    from calc import add\n"
        "    with multiprocessing.Pool(2) as pool:\n"
        "        assert pool.map(square, [1, 2]) == [1, 4]\n"
        "    assert add(1, 2) == 3\n"
    ),
    "main module": (
        "import sys\nfrom calc import add\n\n\ndef main():\n"
        "    me = sys.modules['__main__']\n    assert me.main is main\n"
        "    return 0 if add(1, 2) == 3 else 1\n\n\n"
        'if __name__ == "__main__":\n    sys.exit(main())\n'
    ),
}


def _task(folder: Path, check: str, calc: str) -> Path:
    turn: dict[str, Any] = {
        "text": "Writing calc.",
        "tool_calls": [{"name": "write_file", "arguments": {"path": "calc.py", "content": calc}}],
        "usage": USAGE,
    }
    files = {"calc.py": STUB, "check.py": check}
    return write_task(folder, files, 'run = "python check.py"', [turn, claim()])


@pytest.mark.parametrize("name", sorted(CHECKS))
def test_an_honest_solution_passes_a_check_script(tmp_path: Path, name: str) -> None:
    outcome = run(_task(tmp_path, CHECKS[name], HONEST))
    assert outcome["final"]["state"] == "complete", json.dumps(outcome, indent=1)[:4000]


@pytest.mark.parametrize("name", sorted(CHECKS))
def test_a_wrong_solution_fails_a_check_script(tmp_path: Path, name: str) -> None:
    never_complete(run(_task(tmp_path, CHECKS[name], WRONG)))
