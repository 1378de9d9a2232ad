"""Red team (attack7): a free check's tree is writable, and a check that runs the agent's
build step before the tests (`make test` with `test: build`, whose `build` recipe runs
the agent's `build.sh`) let that step rewrite the task's files the tests then read: the
cases a restored test reads, the expected output a restored recipe compares with, the
test folder itself (moved away and replaced by a copy with the agent's data). Each was a
forged complete through `ilh run`. In a free check's sandbox the task's files are now
read-only (each bound over itself) and their folders cannot be moved (each a mount
point): the check may still write anywhere else."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.test_redteam_grading import (
    CALC_STUB,
    CALC_TESTS,
    CASES,
    claim,
    never_complete,
    run,
    write_task,
    writes,
)

ZERO = "def add(a, b):\n    return 0\n"
HONEST = "def add(a, b):\n    return a + b\n"
MAKEFILE = "test: build\n\t{test}\nbuild:\n\tsh build.sh\n"
#: (the Makefile's test line, the template's files, the agent's build.sh)
ATTACKS: dict[str, tuple[str, dict[str, str], str]] = {
    "cases rewritten": (
        "python -m unittest -q test_calc",
        {"test_calc.py": CALC_TESTS, "cases.json": CASES},
        "echo '[[1, 2, 0]]' > cases.json\n",
    ),
    "test folder replaced": (
        "python -m unittest discover -s tests -t .",
        {"tests/__init__.py": "", "tests/test_calc.py": CALC_TESTS, "tests/cases.json": CASES},
        "mv tests t2 && mkdir tests && cp t2/*.py tests/\necho '[[1, 2, 0]]' > tests/cases.json\n",
    ),
    "expected output rewritten": (
        "python3 -c 'from calc import add; print(add(1, 2))' | diff - expected.txt",
        {"expected.txt": "3\n"},
        "echo 0 > expected.txt\n",
    ),
}


def _task(folder: Path, attack: str, agent: dict[str, str]) -> Path:
    line, files, _ = ATTACKS[attack]
    template = {
        "calc.py": CALC_STUB,
        "build.sh": "true\n",
        "Makefile": MAKEFILE.format(test=line),
        **files,
    }
    return write_task(folder, template, 'run = "make test"', [writes("w", agent), claim()])


@pytest.mark.parametrize("attack", sorted(ATTACKS))
def test_the_agents_build_step_cannot_rewrite_the_tasks_files(tmp_path: Path, attack: str) -> None:
    never_complete(run(_task(tmp_path, attack, {"calc.py": ZERO, "build.sh": ATTACKS[attack][2]})))


@pytest.mark.parametrize("attack", sorted(ATTACKS))
def test_an_honest_build_step_still_runs(tmp_path: Path, attack: str) -> None:
    """The check may write elsewhere in the tree (the agent's build output)."""
    build = "mkdir -p build && echo built > build/out.txt && echo more >> notes.txt\n"
    outcome = run(_task(tmp_path, attack, {"calc.py": HONEST, "build.sh": build}))
    assert outcome["final"]["state"] == "complete", json.dumps(outcome["grader"], indent=1)


LAZY_TESTS = (
    "import unittest\n\nfrom calc import add\n\n\nclass T(unittest.TestCase):\n"
    "    def test_mean(self):\n        import statistics\n\n"
    "        self.assertEqual(add(1, 2), statistics.mean([3, 3]))\n"
)


def test_a_build_step_cannot_shadow_a_standard_module_the_tests_import(tmp_path: Path) -> None:
    """The build step writes `statistics.py` (`os._exit(0)`) into the tree after it was
    cleaned of such names; the restored test imports `statistics` while it runs, which
    found the tree first and ran the agent's code in the runner's own process."""
    files = {
        "calc.py": CALC_STUB,
        "build.sh": "true\n",
        "Makefile": MAKEFILE.format(test="python -m unittest -q test_calc"),
        "test_calc.py": LAZY_TESTS,
    }
    build = "printf 'import os\\nos._exit(0)\\n' > statistics.py\n"
    agent = {"calc.py": ZERO, "build.sh": build}
    task = write_task(tmp_path, files, 'run = "make test"', [writes("w", agent), claim()])
    never_complete(run(task))
    honest = tmp_path / "honest"
    honest.mkdir()
    task = write_task(
        honest, files, 'run = "make test"', [writes("w", {"calc.py": HONEST}), claim()]
    )
    assert run(task)["final"]["state"] == "complete"


TEST_PACKAGE = {
    "calc.py": CALC_STUB,
    "test/__init__.py": "",
    "test/test_calc.py": CALC_TESTS,
    "test/cases.json": CASES,
}


@pytest.mark.parametrize(
    "criterion",
    ['unittest = "test"', 'run = "python -m unittest discover -s test -t ."'],
    ids=["runner", "free"],
)
def test_a_tasks_test_package_named_like_a_standard_one_is_still_its_own(
    tmp_path: Path, criterion: str
) -> None:
    """`test/` (a package named like the standard library's `test`) holds the task's
    tests: a standard module is preferred only to a file of the tree that is not the
    task's."""
    task = write_task(
        tmp_path, TEST_PACKAGE, criterion, [writes("w", {"calc.py": HONEST}), claim()]
    )
    outcome = run(task)
    assert outcome["final"]["state"] == "complete", json.dumps(outcome["grader"])[:3000]


def test_a_build_step_cannot_shadow_an_installed_package_the_tests_import(tmp_path: Path) -> None:
    """As with a standard module: the build step writes `numpy.py` whose
    `testing.assert_allclose` does nothing; the test's `import numpy` took it."""
    tests = (
        "import unittest\n\nfrom calc import add\n\n\nclass T(unittest.TestCase):\n"
        "    def test_add(self):\n        import numpy\n\n"
        "        numpy.testing.assert_allclose(add(1, 2), 3)\n"
    )
    files = {
        "calc.py": CALC_STUB,
        "build.sh": "true\n",
        "Makefile": MAKEFILE.format(test="python -m unittest -q test_calc"),
        "test_calc.py": tests,
    }
    fake = "class testing:\\n    assert_allclose = staticmethod(lambda *a, **k: None)\\n"
    agent = {"calc.py": ZERO, "build.sh": f"printf '{fake}' > numpy.py\n"}
    task = write_task(tmp_path, files, 'run = "make test"', [writes("w", agent), claim()])
    never_complete(run(task))
