"""Runner-aware checks (`graders/runners.py`): which commands are runner calls, which
tests a template defines, and the verdict on a runner's report."""

from __future__ import annotations

import json
import shutil
import textwrap
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from graders.runners import (
    ReportedTest,
    RunnerCall,
    RunnerReport,
    Selection,
    TemplateTest,
    judge_run,
    pytest_selection,
    runner_call,
    unittest_selection,
)
from harness.cli.main import ilh

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
ROOT = "/workspace"


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        ("pytest", RunnerCall(kind="pytest")),
        ("py.test -q tests/", RunnerCall(kind="pytest", args=("-q", "tests/"))),
        ("python -m pytest -q", RunnerCall(kind="pytest", args=("-q",))),
        ("python3 -B -m pytest", RunnerCall(kind="pytest")),
        ("/usr/bin/python3.11 -m unittest -q", RunnerCall(kind="unittest", args=("-q",))),
        (
            "python -m unittest discover -s tests",
            RunnerCall(kind="unittest", args=("discover", "-s", "tests")),
        ),
        ('python -m pytest -k "a or b"', RunnerCall(kind="pytest", args=("-k", "a or b"))),
        (
            "python -m pytest $ILH_CHECKS/t.py",
            RunnerCall(kind="pytest", args=("/ilh-checks/t.py",)),
        ),
        ("python -m pytest && echo ok", None),
        ("python -m pytest; true", None),
        ("python -m pytest | tee log", None),
        ("PYTHONPATH=. pytest", None),
        ("python -m pytest $(ls)", None),
        ("coverage run -m pytest", None),
        ("python -c 'import pytest'", None),
        ("make test", None),
    ],
)
def test_runner_calls(command: str, expected: RunnerCall | None) -> None:
    assert runner_call(command, "/ilh-checks") == expected


def write(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(textwrap.dedent(text))
    return root


PYTEST_FILES = {
    "test_a.py": """
        import pytest
        import unittest

        def test_one(): ...
        def helper(): ...

        @pytest.mark.parametrize("x", [1, 2])
        def test_param(x): ...

        @pytest.mark.skip(reason="the task's own skip")
        def test_skipped(): ...

        class TestGroup:
            def test_in_class(self): ...
            class TestInner:
                def test_nested(self): ...

        class TestWithInit:
            def __init__(self): ...
            def test_never(self): ...

        class NotCollected:
            __test__ = False
            def test_no(self): ...

        class Base(unittest.TestCase):
            def test_base(self): ...

        class Child(Base):
            def test_child(self): ...
    """,
    "tests/test_b.py": "def test_b(): ...\n",
    "tests/helpers.py": "def test_not_a_test_file(): ...\n",
    "build/test_c.py": "def test_ignored(): ...\n",
    "fizz.py": "def test_in_source(): ...\n",
}


def labels(selection: Selection) -> set[str]:
    assert selection.required is not None
    return {t.label() for t in selection.required}


def test_pytest_selection_reads_what_pytest_would_collect(tmp_path: Path) -> None:
    root = write(tmp_path, PYTEST_FILES)
    found = pytest_selection(["-q"], {ROOT: root}, ROOT)
    assert labels(found) == {
        "test_a.py::test_one",
        "test_a.py::test_param",
        "test_a.py::test_skipped",
        "test_a.py::TestGroup::test_in_class",
        "test_a.py::TestGroup.TestInner::test_nested",
        "test_a.py::Base::test_base",
        "test_a.py::Child::test_base",
        "test_a.py::Child::test_child",
        "tests/test_b.py::test_b",
    }
    skips = {t.label() for t in found.required or () if t.may_skip}
    assert skips == {"test_a.py::test_skipped"}
    assert labels(pytest_selection(["tests/"], {ROOT: root}, ROOT)) == {"tests/test_b.py::test_b"}
    unmodeled = pytest_selection(["-k", "one"], {ROOT: root}, ROOT)
    assert unmodeled.required is None and "-k" in unmodeled.why_unmodeled


def test_pytest_selection_follows_the_templates_configuration(tmp_path: Path) -> None:
    root = write(
        tmp_path,
        {
            "pyproject.toml": '[tool.pytest.ini_options]\ntestpaths = ["checks"]\n'
            'python_files = ["check_*.py"]\npython_functions = ["check"]\n',
            "checks/check_x.py": "def check_it(): ...\ndef test_not(): ...\n",
            "test_root.py": "def test_elsewhere(): ...\n",
        },
    )
    assert labels(pytest_selection([], {ROOT: root}, ROOT)) == {"checks/check_x.py::check_it"}


def test_unittest_selection(tmp_path: Path) -> None:
    root = write(
        tmp_path,
        {
            "test_a.py": """
                import unittest
                class A(unittest.TestCase):
                    def test_x(self): ...
                    @unittest.skipIf(True, "platform")
                    def test_y(self): ...
                    def helper(self): ...
                def test_function_is_not_unittest(): ...
            """,
            "nopkg/test_b.py": "import unittest\nclass B(unittest.TestCase):\n    def test_b(self): ...\n",  # noqa: E501
            "pkg/__init__.py": "",
            "pkg/test_c.py": "from unittest import TestCase\nclass C(TestCase):\n    def test_c(self): ...\n",  # noqa: E501
        },
    )
    roots = {ROOT: root}
    # Discovery enters packages only (since 3.11 no namespace packages).
    assert labels(unittest_selection(["-q"], roots, ROOT)) == {
        "test_a.py::A::test_x",
        "test_a.py::A::test_y",
        "pkg/test_c.py::C::test_c",
    }
    assert labels(unittest_selection(["discover", "-s", "nopkg"], roots, ROOT)) == {
        "nopkg/test_b.py::B::test_b"
    }
    assert labels(unittest_selection(["test_a.A.test_x"], roots, ROOT)) == {"test_a.py::A::test_x"}
    assert labels(unittest_selection(["pkg.test_c"], roots, ROOT)) == {"pkg/test_c.py::C::test_c"}
    assert unittest_selection(["-k", "x"], roots, ROOT).required is None


REQUIRED = (
    TemplateTest(root=ROOT, file="test_a.py", cls="A", name="test_x"),
    TemplateTest(root=ROOT, file="test_a.py", cls="A", name="test_y", may_skip=True),
)


def report(*tests: tuple[str, str], **extra: Any) -> RunnerReport:
    rows = [
        ReportedTest(file=f"{ROOT}/test_a.py", cls="A", name=name, outcome=outcome)  # type: ignore[arg-type]
        for name, outcome in tests
    ]
    fields: dict[str, Any] = {
        "nonce": "n",
        "kind": "unittest",
        "finished": True,
        "exit_code": 0,
        "tests": rows,
        **extra,
    }
    return RunnerReport.model_validate(fields)


def verdict(found: RunnerReport | None, exit_code: int = 0, required: Any = REQUIRED) -> Any:
    chosen = Selection(required=required, known=REQUIRED)
    return judge_run(found, nonce="n", exit_code=exit_code, chosen=chosen, roots=[ROOT])


def test_a_complete_green_report_passes() -> None:
    assert verdict(report(("test_x", "passed"), ("test_y", "skipped"))).passed
    assert verdict(report(("test_x", "passed"), ("test_y", "passed"))).passed


@pytest.mark.parametrize(
    ("found", "exit_code", "why"),
    [
        (None, 0, "without the runner's complete report"),
        (report(("test_x", "passed")).model_copy(update={"nonce": "forged"}), 0, "complete report"),
        (report(("test_x", "passed")).model_copy(update={"finished": False}), 0, "complete report"),
        (
            report(("test_x", "passed"), tampered=("unittest.case.TestCase.assertEqual",)),
            0,
            "tampered",
        ),
        (report(("test_x", "failed"), ("test_y", "passed")), 1, "1 of 2 tests failed"),
        (report(("test_x", "passed"), ("test_y", "passed")), 1, "exited 1"),
        (report(), 0, "no test ran"),
        (report(("test_y", "passed")), 0, "did not run: test_a.py::A::test_x"),
        (report(("test_x", "skipped"), ("test_y", "passed")), 0, "skipped that the task"),
    ],
)
def test_anything_less_fails(found: RunnerReport | None, exit_code: int, why: str) -> None:
    result = verdict(found, exit_code)
    assert not result.passed and why in result.detail


def test_an_unmodeled_selection_still_needs_green_runs_and_lawful_skips() -> None:
    assert verdict(report(("test_x", "passed")), required=None).passed
    assert not verdict(report(("test_x", "skipped")), required=None).passed


def test_a_pytest_criterion_in_a_subfolder_verifies_and_notes_exit_code_checks(
    tmp_path: Path,
) -> None:
    """`pytest = "tests/"` with tests in a folder importing the solution from the root,
    parametrized and in a class; the free `cli` check is noted as trusting exit codes."""
    folder = tmp_path / "task"
    shutil.copytree(EXAMPLES / "grade_true", folder)
    tests = folder / "workspace" / "tests"
    tests.mkdir()
    (tests / "test_more.py").write_text(
        "import pytest\nfrom slug import slugify\n\n\n"
        '@pytest.mark.parametrize(("text", "slug"), [("A b", "a-b"), ("x", "x")])\n'
        "def test_slugs(text, slug):\n    assert slugify(text) == slug\n\n\n"
        "class TestEdges:\n    def test_empty(self):\n        assert slugify('') == ''\n"
    )
    toml = (
        (folder / "task.toml")
        .read_text()
        .replace('run = "python -m unittest -q"', 'pytest = "tests/"')
    )
    (folder / "task.toml").write_text(toml)
    base = ["grade", str(folder / "task.toml"), "--workspace", str(folder / "workspace")]
    result = CliRunner().invoke(ilh, [*base, "--baseline", str(folder / "workspace"), "--json"])
    rows = {c["id"]: c for c in json.loads(result.stdout)["criteria"]}
    assert result.exit_code == 0, rows
    assert "3 tests ran and passed" in rows["tests"]["detail"]
    shown = CliRunner().invoke(ilh, base)
    assert "trusts an exit code" in shown.stdout and "criterion cli" in shown.stdout


def test_a_matcher_of_the_tasks_own_tests_is_no_tampering(tmp_path: Path) -> None:
    """The guard flags classes that equal anything only when the code under test made
    them: a matcher the task's tests define is theirs to use."""
    folder = tmp_path / "task"
    shutil.copytree(EXAMPLES / "grade_true", folder)
    tests = folder / "workspace" / "test_slug.py"
    tests.write_text(
        tests.read_text()
        + "\n\nclass Anything:\n    def __eq__(self, other):\n        return True\n\n\n"
        "class MatcherTest(unittest.TestCase):\n"
        "    def test_matcher(self):\n        self.assertEqual(slugify('A'), Anything())\n"
    )
    workspace = str(folder / "workspace")
    args = ["grade", str(folder / "task.toml"), "--workspace", workspace, "--json"]
    result = CliRunner().invoke(ilh, [*args, "--baseline", workspace])
    assert result.exit_code == 0, result.stdout
