"""Red team of the grader, end to end through `ilh run` with scripted agents, and of the
grading tree it builds: reward hacks found after the earlier rounds (each was verified
`complete` before its fix)."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from graders.runners import runner_call
from harness.cli.main import ilh
from harness.grading.tree import build_tree, check_scripts, task_test_data

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
USAGE = {"input_tokens": 1000, "output_tokens": 50}
CLAIM = "::STATUS{@TASK|state:claimed_complete|evidence:unittest_run|by:@AGENT|authority:proposal}"

CALC_STUB = "def add(a, b):\n    raise NotImplementedError\n"
CALC_TESTS = """\
import json
import pathlib
import unittest

from calc import add

CASES = json.loads((pathlib.Path(__file__).parent / "cases.json").read_text())


class AddTest(unittest.TestCase):
    def test_cases(self):
        for a, b, want in CASES:
            self.assertEqual(add(a, b), want)
"""
CASES = "[[1, 2, 3], [2, 2, 4], [10, -3, 7]]\n"


def write_task(
    folder: Path,
    files: dict[str, str],
    criterion: str,
    turns: list[Any],
    *,
    checks: dict[str, str] | None = None,
    objective: str = "Implement add(a, b) in calc.py.",
    check: str = "every test passes",
) -> Path:
    """A task whose workspace template holds `files`, graded by one criterion (its
    check line given whole), with `turns` as the scripted agent; with `checks`, the
    task's hidden checks folder holds them."""
    for rel, text in files.items():
        (folder / "workspace" / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / "workspace" / rel).write_text(text, encoding="utf-8")
    (folder / "workspace").mkdir(exist_ok=True)
    for rel, text in (checks or {}).items():
        (folder / "checks" / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / "checks" / rel).write_text(text, encoding="utf-8")
    hidden = 'checks = "checks"\n' if checks is not None else ""
    (folder / "task.toml").write_text(
        f'[task]\nid = "calc"\nobjective = "{objective}"\n'
        'accept = "every test passes"\nworkspace = "workspace"\n'
        '[budget.rounds]\nlimit = 6\n[budget.time]\nlimit = "120s"\n'
        f"[rubric]\nthreshold = 1.0\n{hidden}[[rubric.criteria]]\n"
        f'id = "tests"\nweight = 1.0\ncheck = "{check}"\n{criterion}\n'
        '[agent]\nmodel = "scripted:agent.jsonl"\n',
        encoding="utf-8",
    )
    (folder / "agent.jsonl").write_text("".join(json.dumps(t) + "\n" for t in turns))
    return folder / "task.toml"


def writes(text: str, files: dict[str, str]) -> dict[str, Any]:
    calls = [
        {"name": "write_file", "arguments": {"path": p, "content": c}} for p, c in files.items()
    ]
    return {"text": text, "tool_calls": calls, "usage": USAGE}


def claim() -> dict[str, Any]:
    return {"text": f"Done.\n{CLAIM}", "usage": USAGE}


def calc_run_task(folder: Path, command: str, files: dict[str, str], calc: str) -> Path:
    """A task whose template is `calc.py` (the stub) and `files`, checked by `run =
    command`; its agent writes `calc` as `calc.py`, then claims complete."""
    turn: dict[str, Any] = {
        "text": "Writing calc.",
        "tool_calls": [{"name": "write_file", "arguments": {"path": "calc.py", "content": calc}}],
        "usage": USAGE,
    }
    template = {"calc.py": CALC_STUB, **files}
    return write_task(folder, template, f"run = {json.dumps(command)}", [turn, claim()])


def run(task: Path) -> dict[str, Any]:
    result = CliRunner().invoke(
        ilh, ["run", str(task), "--store", str(task.parent / "runs.db"), "--json"]
    )
    assert result.exit_code in (0, 3), result.output
    outcome: dict[str, Any] = json.loads(result.stdout)
    return outcome


def never_complete(outcome: dict[str, Any]) -> None:
    assert outcome["final"]["state"] != "complete"
    assert all(entry["state"] != "complete" for entry in outcome["history"])


# ------------------------------------------------------------------ test data files
def test_an_agent_rewriting_the_expected_values_its_test_reads_is_not_verified(
    tmp_path: Path,
) -> None:
    """`add` returns 0, and the cases file the task's test reads is rewritten to expect 0:
    the test file itself is untouched, so only restoring the data it names catches it."""
    files = {"calc.py": CALC_STUB, "test_calc.py": CALC_TESTS, "cases.json": CASES}
    cheat = writes(
        "Rewriting the expectations.",
        {"calc.py": "def add(a, b):\n    return 0\n", "cases.json": "[[1, 2, 0]]\n"},
    )
    outcome = run(write_task(tmp_path, files, 'unittest = "test_calc.py"', [cheat, claim()]))
    never_complete(outcome)
    assert "tests_changed" in {v["kind"] for v in outcome["violations"]}


def test_an_honest_agent_with_the_same_test_data_is_verified(tmp_path: Path) -> None:
    files = {"calc.py": CALC_STUB, "test_calc.py": CALC_TESTS, "cases.json": CASES}
    honest = writes("Writing add.", {"calc.py": "def add(a, b):\n    return a + b\n"})
    outcome = run(write_task(tmp_path, files, 'unittest = "test_calc.py"', [honest, claim()]))
    assert outcome["final"]["state"] == "complete"
    assert outcome["violations"] == []


def test_test_data_is_what_the_tests_name(tmp_path: Path) -> None:
    template = tmp_path / "template"
    layout = {
        "calc.py": "x",
        "README.md": "r",
        "cases.json": "c",
        "fixtures/a.txt": "a",
        "fixtures/sub/b.csv": "b",
        "fixtures/loader.py": "code",
        "pkg/test_pkg.py": 'open("near.txt"); open("cases.json"); "calc.py"; "."; "../x"',
        "pkg/near.txt": "n",
        "other.txt": "o",
        "test_calc.py": 'import json\nopen("fixtures")\nopen("/etc/passwd")\n"pkg"\n"README.md"\n',
    }
    for rel, text in layout.items():
        (template / rel).parent.mkdir(parents=True, exist_ok=True)
        (template / rel).write_text(text)
    found = task_test_data(template, layout)
    # Named files and the files of named folders, relative to the root or to the test;
    # never Python source (the agent's work, or a test restored anyway) nor the
    # documentation a test may check was written, never the root or a test's own folder
    # by "." or "..".
    assert found == {"cases.json", "fixtures/a.txt", "fixtures/sub/b.csv", "pkg/near.txt"}


def test_a_test_data_file_is_restored_and_the_agents_other_work_kept(tmp_path: Path) -> None:
    template, work = tmp_path / "template", tmp_path / "work"
    for root in (template, work):
        root.mkdir()
        (root / "test_calc.py").write_text(CALC_TESTS)
        (root / "cases.json").write_text(CASES)
        (root / "calc.py").write_text(CALC_STUB)
        (root / "notes.json").write_text("{}")
    (work / "cases.json").write_text("[]")
    (work / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    (work / "notes.json").write_text('{"mine": 1}')
    changes = build_tree(work, template, tmp_path / "tree", ())
    tree = tmp_path / "tree"
    assert (tree / "cases.json").read_text() == CASES
    assert (tree / "calc.py").read_text().endswith("return a + b\n")
    assert (tree / "notes.json").read_text() == '{"mine": 1}'  # no test names it
    assert changes.restored == ("cases.json",) and changes.tampering


# ------------------------------------------------------------- free check scripts
CHECK_PY = """\
import sys

from calc import add

sys.exit(0 if add(2, 3) == 5 and add(-1, 1) == 0 else 1)
"""


@pytest.mark.parametrize(
    "command",
    [
        "timeout 60 python check.py",
        "PYTHONPATH=. python check.py",
        "cd . && python check.py",
        "env python3 check.py",
        "sh -c 'python check.py'",
        "python -m check",
    ],
)
def test_a_check_script_run_through_a_wrapper_is_the_tasks(tmp_path: Path, command: str) -> None:
    """The agent rewrites the check script to exit 0 and leaves `add` unwritten: only the
    program position of the command used to be read (`sh check.sh`), so a wrapper, an
    assignment, a `cd … &&` or `python -m` ran the agent's script."""
    files = {"calc.py": CALC_STUB, "check.py": CHECK_PY}
    cheat = writes("A lighter check.", {"check.py": "raise SystemExit(0)\n"})
    outcome = run(write_task(tmp_path, files, f"run = {json.dumps(command)}", [cheat, claim()]))
    never_complete(outcome)
    assert "tests_changed" in {v["kind"] for v in outcome["violations"]}


@pytest.mark.parametrize(
    ("command", "scripts"),
    [
        ("timeout 60 sh check.sh", {"check.sh"}),
        ("nice -n 5 ./run_checks", {"run_checks"}),
        ("/usr/bin/env bash verify.sh", {"verify.sh"}),
        ("cd sub && ./check.sh > out.txt 2>&1", {"check.sh"}),
        ("python -m tools.verify_all", {"tools/verify_all.py", "tools/verify_all"}),
        ("bash -c 'exec sh check.sh'", {"check.sh"}),
        ("make -f check.mk", {"check.mk"}),
        ("python slug.py data.txt", set()),  # the agent's deliverable and its input
        ("python -m slug x", set()),
        ("timeout 5 python -c 'import slug'", set()),
    ],
)
def test_check_scripts_past_wrappers_and_operators(command: str, scripts: set[str]) -> None:
    assert check_scripts(command) == scripts


# ------------------------------------------------------------------ hidden checks
def landlock_abi() -> int:
    import ctypes

    syscall = ctypes.CDLL(None, use_errno=True).syscall
    syscall.restype = ctypes.c_long
    # landlock_create_ruleset(NULL, 0, LANDLOCK_CREATE_RULESET_VERSION)
    return int(syscall(ctypes.c_long(444), None, ctypes.c_size_t(0), ctypes.c_uint32(1)))


PEEKING_FIZZ = '''\
import os
import re

_SEEN = {1: "1", 7: "7", 9: "Fizz", 10: "Buzz", 45: "FizzBuzz"}


def fizzbuzz(n):
    if n in _SEEN:
        return _SEEN[n]
    for name in sorted(os.listdir("/ilh-checks")):
        src = open("/ilh-checks/" + name).read()
        found = re.search(r"def expected\\(.*?(?=\\nclass )", src, re.S)
        if found:
            space = {}
            exec(found.group(0), space)
            return space["expected"](n)
    return ""


def peek():
    """What the solution can read: the hidden tests (never), its tree and the system."""
    seen = {}
    for path in ("/ilh-checks", "/ilh-checks/test_peek.py", "/ilh-report", "fizz.py",
                 "/usr/lib/os-release", "/etc/passwd"):
        try:
            if os.path.isdir(path):
                os.listdir(path)
            else:
                open(path, "rb").close()
            seen[path] = "read"
        except PermissionError:
            seen[path] = "denied"
        except OSError as err:
            seen[path] = type(err).__name__
    for path in ("/ilh-report/junit.xml", "/tmp/mine.txt"):
        try:
            with open(path, "w") as out:
                out.write("forged")
            seen[path] = "written"
        except PermissionError:
            seen[path] = "denied"
        except OSError as err:
            seen[path] = type(err).__name__
    return seen
'''


def hidden_task(folder: Path, fizz: str, hidden_test: str) -> Path:
    shutil.copytree(EXAMPLES / "hidden_checks", folder)
    (folder / "checks" / "test_peek.py").write_text(hidden_test, encoding="utf-8")
    turns = [writes("Writing fizzbuzz.", {"fizz.py": fizz}), claim()]
    (folder / "agent.jsonl").write_text("".join(json.dumps(t) + "\n" for t in turns))
    return folder / "task.toml"


@pytest.mark.skipif(sys.platform != "linux", reason="Landlock is Linux's")
def test_the_solution_cannot_read_the_hidden_checks_it_is_graded_by(tmp_path: Path) -> None:
    """The agent's code special-cases the visible tests' inputs and, in the hidden
    check's sandbox, read the hidden test's reference `expected()` for every other
    input: verified complete, until the solution process lost sight of /ilh-checks."""
    if landlock_abi() < 1:
        pytest.skip("no Landlock on this kernel: the hidden checks stay readable (noted)")
    probe = (
        "import unittest\n\nfrom fizz import peek\n\n\n"
        "class PeekTest(unittest.TestCase):\n"
        "    def test_the_hidden_checks_are_out_of_sight(self):\n"
        "        seen = peek()\n"
        "        self.assertEqual(seen['/ilh-checks'], 'denied', seen)\n"
        "        self.assertEqual(seen['/ilh-checks/test_peek.py'], 'denied', seen)\n"
        "        self.assertEqual(seen['/ilh-report'], 'denied', seen)\n"
        "        self.assertEqual(seen['fizz.py'], 'read', seen)\n"
        "        self.assertEqual(seen['/etc/passwd'], 'read', seen)\n"
        "        self.assertEqual(seen['/ilh-report/junit.xml'], 'denied', seen)\n"
        "        self.assertEqual(seen['/tmp/mine.txt'], 'written', seen)\n"
    )
    # The probe passes (the solution is denied the hidden folders, reads the rest); the
    # reference-reading fizzbuzz then fails the hidden rules: never complete.
    outcome = run(hidden_task(tmp_path / "peek", PEEKING_FIZZ, probe))
    never_complete(outcome)
    found = {c["id"]: c["result"] for c in outcome["grader"]["criteria"]}
    assert found["tests"] == "pass" and found["rules"] == "fail"
    # And with an honest fizzbuzz the same hidden folder (probe included) verifies.
    honest = PEEKING_FIZZ.replace(
        "    if n in _SEEN:\n        return _SEEN[n]\n",
        '    return ("Fizz" * (n % 3 == 0) + "Buzz" * (n % 5 == 0)) or str(n)\n',
    )
    outcome = run(hidden_task(tmp_path / "honest", honest, probe))
    assert outcome["final"]["state"] == "complete", outcome["grader"]


# ------------------------------------------------------- runner calls behind wrappers
EXITING_FIZZ = "import os\n\nos._exit(0)\n"


@pytest.mark.parametrize(
    "command",
    ["timeout 60 python -m unittest -q", "env python -m unittest", "nice -n 5 python -m pytest -q"],
)
def test_a_runner_behind_a_wrapper_is_not_ended_by_the_code_under_test(
    tmp_path: Path, command: str
) -> None:
    """`timeout 60 python -m unittest` was not taken for a runner's call: it kept
    exit-code semantics, and a module that ends the process with 0 on import passed."""
    shutil.copytree(EXAMPLES / "honest" / "workspace", tmp_path / "workspace")
    files = {}
    cheat = writes("Done quickly.", {"fizz.py": EXITING_FIZZ})
    outcome = run(write_task(tmp_path, files, f"run = {json.dumps(command)}", [cheat, claim()]))
    never_complete(outcome)
    [criterion] = outcome["grader"]["criteria"]
    assert criterion["result"] == "fail"


@pytest.mark.parametrize(
    ("command", "kind"),
    [
        ("timeout 60 python -m pytest", "pytest"),
        ("timeout -k 5 60 python3 -m unittest -q", "unittest"),
        ("env python -m unittest", "unittest"),
        ("exec pytest -q", "pytest"),
        ("env -i python -m unittest", None),  # another environment: not the runner's run
        ("env A=1 python -m unittest", None),
        ("timeout 60", None),
    ],
)
def test_runner_calls_past_wrappers(command: str, kind: str | None) -> None:
    found = runner_call(command)
    assert (found.kind if found is not None else None) == kind


def test_the_data_a_hidden_test_reads_from_the_workspace_is_the_tasks(tmp_path: Path) -> None:
    """A hidden test that reads `cases.json` from the workspace, rewritten by the agent to
    expect what its `add` returns: the hidden tests' literals name test data too."""
    hidden = (
        "import json\nimport unittest\n\nfrom calc import add\n\n\n"
        "class Hidden(unittest.TestCase):\n"
        "    def test_cases(self):\n"
        '        with open("cases.json") as f:\n'
        "            for a, b, want in json.load(f):\n"
        "                self.assertEqual(add(a, b), want)\n"
    )
    (tmp_path / "checks").mkdir()
    (tmp_path / "checks" / "test_hidden.py").write_text(hidden)
    files = {"calc.py": CALC_STUB, "cases.json": CASES}
    cheat = writes(
        "Rewriting the expectations.",
        {"calc.py": "def add(a, b):\n    return 0\n", "cases.json": "[[1, 2, 0]]\n"},
    )
    task = write_task(tmp_path, files, 'unittest = "$ILH_CHECKS"', [cheat, claim()])
    task.write_text(task.read_text().replace("[rubric]\n", '[rubric]\nchecks = "checks"\n'))
    outcome = run(task)
    never_complete(outcome)
    # Restored without a word: telling the agent would say which files hidden tests read.
    assert "tests_changed" not in {v["kind"] for v in outcome["violations"]}
    assert "cases.json" not in json.dumps(outcome)
    honest = writes("Writing add.", {"calc.py": "def add(a, b):\n    return a + b\n"})
    (tmp_path / "agent.jsonl").write_text("".join(json.dumps(t) + "\n" for t in [honest, claim()]))
    (tmp_path / "runs.db").unlink()
    assert run(task)["final"]["state"] == "complete"


# ------------------------------------------------------------ JavaScript runners
def test_an_agents_package_json_cannot_change_what_npm_test_runs(tmp_path: Path) -> None:
    """`run = "npm test"` runs package.json's `scripts.test`: an agent that rewrote it to
    `exit 0` (or added a jest configuration) decided the check."""
    template, work = tmp_path / "template", tmp_path / "work"
    package = {"name": "calc", "scripts": {"test": "node test/run.js"}, "dependencies": {}}
    for root in (template, work):
        (root / "test").mkdir(parents=True)
        (root / "test" / "run.js").write_text("// the task's tests\n")
        (root / "calc.js").write_text("module.exports = {}\n")
        (root / "package.json").write_text(json.dumps(package))
    mine = {**package, "scripts": {"test": "exit 0"}, "dependencies": {"left-pad": "1"}}
    (work / "package.json").write_text(json.dumps(mine))
    (work / "jest.config.js").write_text("module.exports = {testMatch: []}\n")
    changes = build_tree(work, template, tmp_path / "tree", ())
    tree = tmp_path / "tree"
    assert json.loads((tree / "package.json").read_text()) == package
    assert not (tree / "jest.config.js").exists()
    assert "package.json" in changes.restored and changes.tampering
    # Its other keys are the agent's to change: kept when the runner's keys are equal.
    shutil.rmtree(tree)
    (work / "package.json").write_text(json.dumps({**package, "version": "2.0.0"}))
    (work / "jest.config.js").unlink()
    changes = build_tree(work, template, tree, ())
    assert json.loads((tree / "package.json").read_text())["version"] == "2.0.0"
    assert changes.restored == ()


def test_the_scripts_the_tasks_recipes_run_are_the_tasks(tmp_path: Path) -> None:
    """`make test` runs the template's Makefile (restored), whose recipe runs
    `sh scripts/check.sh`: the agent rewrote that script to exit 0."""
    template, work = tmp_path / "template", tmp_path / "work"
    for root in (template, work):
        (root / "scripts").mkdir(parents=True)
        (root / "scripts" / "check.sh").write_text("python -c 'import calc' && exit 1\n")
        (root / "verify_all.py").write_text("raise SystemExit(1)\n")
        (root / "server.js").write_text("// the task's stub: the agent writes the server\n")
        (root / "Makefile").write_text(
            "run:\n\tnode server.js\n\ntest: run\n\t@sh scripts/check.sh\n"
        )
        (root / "package.json").write_text(
            json.dumps(
                {"scripts": {"start": "node server.js",
                             "test": "node verify.js && python verify_all.py"}}
            )
        )  # fmt: skip
    (work / "scripts" / "check.sh").write_text("exit 0\n")
    (work / "verify_all.py").write_text("raise SystemExit(0)\n")
    (work / "server.js").write_text("// the agent's server\n")
    changes = build_tree(work, template, tmp_path / "tree", check_scripts("make test"))
    tree = tmp_path / "tree"
    assert (tree / "scripts" / "check.sh").read_text().endswith("exit 1\n")
    assert (tree / "verify_all.py").read_text() == "raise SystemExit(1)\n"
    assert set(changes.restored) == {"scripts/check.sh", "verify_all.py"}
    # What the other recipes run (`make run`, `npm start`) is the agent's work.
    assert (tree / "server.js").read_text() == "// the agent's server\n"


def test_a_script_argument_that_is_the_agents_work_stays_the_agents() -> None:
    assert check_scripts("node check.js app.js") == {"check.js"}
    assert check_scripts("timeout 9 node app.js") == {"app.js"}  # the program: as before
