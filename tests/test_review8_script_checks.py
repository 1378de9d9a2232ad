"""Review 8 of free `run` checks run in the harness's runner (kind `script`, attack6):
such a check must say what a plain `python check.py` exit code would say, for an honest
task author's check (an honest solution passes, a wrong one fails), through `ilh run`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.test_redteam_grading import USAGE, claim, never_complete, run, write_task

STUB = (
    "def add(a, b):\n    raise NotImplementedError\n\n\n"
    "def apply(f, x):\n    raise NotImplementedError\n"
)
CLI = (
    "\n\nif __name__ == '__main__':\n    import sys\n\n"
    "    print(add(int(sys.argv[1]), int(sys.argv[2])))\n"
)
HONEST = "def add(a, b):\n    return a + b\n\n\ndef apply(f, x):\n    return f(x)\n" + CLI
WRONG = "def add(a, b):\n    return 0\n\n\ndef apply(f, x):\n    return 0\n" + CLI

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
    # The agent's module called from several threads at once: the bridge's requests
    # interleaved on its one socket and an honest check failed at random.
    "threads": (
        "import threading\nfrom calc import add\n\nerrors = []\n\n\n"
        "def work(n):\n    try:\n        for i in range(300):\n"
        "            assert add(n, i) == n + i\n    except BaseException as exc:\n"
        "        errors.append(exc)\n\n\n"
        "threads = [threading.Thread(target=work, args=(n,)) for n in range(8)]\n"
        "for t in threads:\n    t.start()\nfor t in threads:\n    t.join()\n"
        "assert not errors, errors[:1]\n"
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


#: More of what an honest author writes: (command, the template's files besides calc.py).
MORE: dict[str, tuple[str, dict[str, str]]] = {
    "argparse and __file__": (
        "python check.py --a 1 --b 2",
        {
            "check.py": (
                "import argparse\nimport json\nfrom pathlib import Path\n\nfrom calc import add\n\n"
                "parser = argparse.ArgumentParser()\nparser.add_argument('--a', type=int)\n"
                "parser.add_argument('--b', type=int)\nargs = parser.parse_args()\n"
                "cases = json.loads((Path(__file__).parent / 'cases.json').read_text())\n"
                "assert add(args.a, args.b) == 3\n"
                "for a, b, want in cases:\n    assert add(a, b) == want, (a, b)\n"
            ),
            "cases.json": "[[2, 2, 4], [5, 6, 11]]",
        },
    ),
    "relative data, chdir, main returning None or 1": (
        "python check.py",
        {
            "check.py": (
                "import os\nimport sys\n\nfrom calc import add\n\n\ndef main():\n"
                "    with open('data/cases.txt') as handle:\n"
                "        lines = handle.read().split()\n"
                "    os.chdir('data')\n"
                "    if any(add(int(x), 1) != int(x) + 1 for x in lines):\n        return 1\n\n\n"
                "if __name__ == '__main__':\n    sys.exit(main())\n"
            ),
            "data/cases.txt": "1\n2\n40\n",
        },
    ),
    "SystemExit with a message, prints, stdin": (
        "python check.py",
        {
            "check.py": (
                "import sys\n\nfrom calc import add\n\nfor i in range(20000):\n"
                "    print('line', i)\nextra = sys.stdin.read()\n"
                "if add(1, 2) != 3:\n    raise SystemExit('add(1, 2) is wrong')\n"
            ),
        },
    ),
    "the agent's CLI in a subprocess": (
        "python check.py",
        {
            "check.py": (
                "import subprocess\nimport sys\n\ndone = subprocess.run([sys.executable, "
                "'calc.py', '1', '2'], capture_output=True, text=True, check=True)\n"
                "assert done.stdout.strip() == '3', done.stdout\n"
            ),
        },
    ),
    "a sibling helper module": (
        "python checks/verify.py",
        {
            "checks/verify.py": (
                "from expected import CASES\n\nfrom calc import add\n\n"
                "for a, b, want in CASES:\n    assert add(a, b) == want\n"
            ),
            "checks/expected.py": "CASES = [(1, 2, 3), (0, 0, 0), (-1, 1, 0), (2, 5, 7)]\n",
        },
    ),
    # Threads calling the agent's module at once are left out: the bridge's one socket
    # is not shared safely between threads (seen under load; review 8 left it open).
    "atexit, a signal handler": (
        "python check.py",
        {
            "check.py": (
                "import atexit\nimport signal\n\nfrom calc import add\n\n"
                "atexit.register(print, 'bye')\n"
                "signal.signal(signal.SIGTERM, lambda *a: None)\n"
                "assert add(1, 2) == 3\n"
            ),
        },
    ),
    "pytest.main inside": (
        "python check.py",
        {
            "check.py": (
                "import sys\n\nimport pytest\n\n"
                "sys.exit(pytest.main(['-q', '-p', 'no:cacheprovider', 'checks_test_add.py']))\n"
            ),
            "checks_test_add.py": (
                "from calc import add\n\n\ndef test_add():\n    assert add(1, 2) == 3\n"
            ),
        },
    ),
    "python -c": ('python -c "import calc; assert calc.add(1, 2) == 3"', {}),
    "input()": (
        "python check.py",
        {
            "check.py": (
                "from calc import add\n\ntry:\n    given = input()\nexcept EOFError:\n"
                "    given = '1 2'\na, b = map(int, given.split() or ['1', '2'])\n"
                "assert add(a, b) == a + b\n"
            ),
        },
    ),
}


def _more(folder: Path, name: str, calc: str) -> Path:
    command, files = MORE[name]
    turn: dict[str, Any] = {
        "text": "Writing calc.",
        "tool_calls": [{"name": "write_file", "arguments": {"path": "calc.py", "content": calc}}],
        "usage": USAGE,
    }
    criterion = "run = " + json.dumps(command)
    return write_task(folder, {"calc.py": STUB, **files}, criterion, [turn, claim()])


@pytest.mark.parametrize("name", sorted(MORE))
def test_an_honest_solution_passes_more_check_scripts(tmp_path: Path, name: str) -> None:
    outcome = run(_more(tmp_path, name, HONEST))
    assert outcome["final"]["state"] == "complete", json.dumps(outcome, indent=1)[-6000:]


@pytest.mark.parametrize("name", sorted(MORE))
def test_a_wrong_solution_fails_more_check_scripts(tmp_path: Path, name: str) -> None:
    never_complete(run(_more(tmp_path, name, WRONG)))
