"""The grading tree (`harness.grading.tree`): the task's tests and runner configuration
restored from the template, hooks and bytecode removed, the agent's other work kept."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from graders.baseline import is_test_file
from harness.cli.main import ilh
from harness.grading.tree import build_tree, check_scripts, runner_paths
from harness.inputs.task_file import load_task
from harness.record.store import RunStore
from harness.run.setup import grading_sources

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


@pytest.mark.parametrize(
    "path",
    [
        "test_fizz.py",
        "pkg/test_a.py",
        "a_test.py",
        "main_test.go",
        "app.test.ts",
        "ui/button.spec.jsx",
        "conftest.py",
        "tests/data.json",
        "src/__tests__/x.js",
        "test/helper.rb",
    ],
)
def test_test_files_by_convention(path: str) -> None:
    assert is_test_file(path)


@pytest.mark.parametrize("path", ["fizz.py", "latest.py", "contest.py", "testing.md", "src/a.py"])
def test_other_files_are_not_tests(path: str) -> None:
    assert not is_test_file(path)


@pytest.fixture
def pair(tmp_path: Path) -> tuple[Path, Path]:
    template, work = tmp_path / "template", tmp_path / "work"
    for root in (template, work):
        (root / "tests").mkdir(parents=True)
        (root / "fizz.py").write_text("stub\n")
        (root / "test_fizz.py").write_text("real tests\n")
        (root / "tests" / "test_more.py").write_text("more\n")
        (root / "pytest.ini").write_text("[pytest]\n")
    return template, work


def tree_of(pair: tuple[Path, Path], *named: str) -> tuple[Path, Any]:
    template, work = pair
    dest = work.parent / "tree"
    changes = build_tree(work, template, dest, named)
    return dest, changes


def files(root: Path) -> set[str]:
    return {p.relative_to(root).as_posix() for p in root.rglob("*") if not p.is_dir()}


def test_the_agents_own_code_is_kept_and_its_extra_tests_left_out(
    pair: tuple[Path, Path],
) -> None:
    _, work = pair
    (work / "fizz.py").write_text("the implementation\n")
    (work / "helpers.py").write_text("def helper(): ...\n")
    (work / "test_extra.py").write_text("the agent's own tests\n")
    tree, changes = tree_of(pair)
    assert (tree / "fizz.py").read_text() == "the implementation\n"
    assert (tree / "helpers.py").exists() and not (tree / "test_extra.py").exists()
    assert not changes.tampering  # its own tests are not used, and that is no violation


def test_changed_and_removed_tests_and_configuration_are_restored(
    pair: tuple[Path, Path],
) -> None:
    _, work = pair
    (work / "test_fizz.py").write_text("def test(): pass\n")
    (work / "tests" / "test_more.py").unlink()
    (work / "pytest.ini").write_text("[pytest]\naddopts = --collect-only\n")
    tree, changes = tree_of(pair)
    assert (tree / "test_fizz.py").read_text() == "real tests\n"
    assert (tree / "tests" / "test_more.py").read_text() == "more\n"
    assert (tree / "pytest.ini").read_text() == "[pytest]\n"
    assert set(changes.restored) == {"test_fizz.py", "tests/test_more.py", "pytest.ini"}
    assert changes.tampering and "restored from the task: test_fizz.py" in changes.listing()


def test_a_test_file_replaced_by_a_folder_or_a_link_is_restored(pair: tuple[Path, Path]) -> None:
    _, work = pair
    (work / "test_fizz.py").unlink()
    (work / "test_fizz.py").mkdir()
    (work / "tests" / "test_more.py").unlink()
    os.symlink("../fizz.py", work / "tests" / "test_more.py")
    tree, _ = tree_of(pair)
    assert (tree / "test_fizz.py").read_text() == "real tests\n"
    assert not (tree / "tests" / "test_more.py").is_symlink()


@pytest.mark.parametrize(
    "hook",
    [
        "conftest.py",
        "pkg/conftest.py",
        "sitecustomize.py",
        "deep/usercustomize.py",
        "sitecustomize/__init__.py",
        "iniconfig/__init__.py",
        "unittest.py",
        "_pytest/main.py",
        "json.py",
        "tox.ini",
        "setup.cfg",
        "deep/pytest.ini",
        "evil.pth",
        "__pycache__/test_fizz.cpython-311.pyc",
        "fizz.pyc",
        ".pytest_cache/v/cache/lastfailed",
    ],
)
def test_hooks_the_template_did_not_have_are_removed(pair: tuple[Path, Path], hook: str) -> None:
    _, work = pair
    (work / hook).parent.mkdir(parents=True, exist_ok=True)
    (work / hook).write_text("import os; os._exit(0)\n")
    tree, _ = tree_of(pair)
    assert not (tree / hook).exists()


def test_a_module_named_like_a_standard_one_stays_where_the_template_had_it(
    pair: tuple[Path, Path],
) -> None:
    template, work = pair
    (template / "calendar.py").write_text("stub\n")
    (work / "calendar.py").write_text("the task's own calendar\n")
    (work / "pkg").mkdir()
    (work / "pkg" / "unittest.py").write_text("not on the import path's first entry\n")
    tree, changes = tree_of(pair)
    assert (tree / "calendar.py").read_text() == "the task's own calendar\n"
    assert (tree / "pkg" / "unittest.py").exists()
    assert not changes.tampering


@pytest.mark.parametrize(
    ("workspace_pyproject", "kept"),
    [
        ('[project]\nname = "fizz"\n', True),  # an unrelated edit: the agent's file
        ('[tool.pytest.ini_options]\naddopts = "--collect-only"\n', False),
        ("[tool.pytest\nbroken", False),
    ],
)
def test_pyproject_is_the_agents_only_while_its_runner_tables_are_the_tasks(
    pair: tuple[Path, Path], workspace_pyproject: str, kept: bool
) -> None:
    template, work = pair
    (work / "pyproject.toml").write_text(workspace_pyproject)
    tree, _ = tree_of(pair)
    assert (tree / "pyproject.toml").exists() is kept  # the template has none
    (template / "pyproject.toml").write_text('[tool.pytest.ini_options]\naddopts = "-q"\n')
    shutil.rmtree(tree)
    tree, _ = tree_of(pair)
    # Now every one of them differs from the template's runner tables: the template's.
    assert (tree / "pyproject.toml").read_text() == (template / "pyproject.toml").read_text()


def test_files_a_check_names_are_restored(pair: tuple[Path, Path]) -> None:
    template, work = pair
    (template / "check.sh").write_text("real check\n")
    (template / "verify").mkdir()
    (template / "verify" / "case.py").write_text("real case\n")
    (work / "check.sh").write_text("exit 0\n")
    (work / "verify").mkdir()
    (work / "verify" / "case.py").write_text("fake case\n")
    (work / "verify" / "extra.py").write_text("added\n")
    tree, _ = tree_of(pair, *check_scripts("sh check.sh"), *runner_paths(["-q", "verify/"]))
    assert (tree / "check.sh").read_text() == "real check\n"
    assert (tree / "verify" / "case.py").read_text() == "real case\n"
    assert not (tree / "verify" / "extra.py").exists()


def test_links_leaving_the_workspace_are_not_copied(pair: tuple[Path, Path]) -> None:
    _, work = pair
    secret = work.parent / "secret.txt"
    secret.write_text("outside\n")
    os.symlink(secret, work / "leak.txt")
    os.symlink("fizz.py", work / "alias.py")
    tree, changes = tree_of(pair)
    assert not (tree / "leak.txt").exists()
    assert (tree / "alias.py").read_text() == "stub\n" and not (tree / "alias.py").is_symlink()
    assert any("leak.txt" in s for s in changes.skipped)


def test_without_a_template_only_bytecode_and_path_files_go(tmp_path: Path) -> None:
    work = tmp_path / "work"
    (work / "__pycache__").mkdir(parents=True)
    (work / "__pycache__" / "x.pyc").write_bytes(b"\0")
    (work / "conftest.py").write_text("# the user's own\n")
    (work / "a.pth").write_text("import os\n")
    build_tree(work, None, tmp_path / "tree")
    assert files(tmp_path / "tree") == {"conftest.py"}


@pytest.mark.parametrize(
    ("command", "scripts"),
    [
        ("sh check.sh", {"check.sh"}),
        ("./run_checks", {"run_checks"}),
        ("bash -e scripts/verify.sh --strict", {"scripts/verify.sh"}),
        ("python verify_output.py", {"verify_output.py"}),
        ("node test/run.js", {"test/run.js"}),
        ("python slug.py 'Hello'", set()),  # the agent's deliverable, graded as written
        ("python -m slug x", set()),
        ("python -c 'print(1)'", set()),
        ("test -f README.md", set()),
        ("sh ../outside.sh", set()),
    ],
)
def test_check_scripts(command: str, scripts: set[str]) -> None:
    assert check_scripts(command) == scripts


def test_runner_paths() -> None:
    assert runner_paths(["-q", "tests/", "/workspace/a.py", "b.py::test_x", "../up", "/abs"]) == {
        "tests",
        "a.py",
        "b.py",
    }


def test_the_snapshot_is_taken_once_and_outlives_edits_to_the_task_folder(
    tmp_path: Path,
) -> None:
    """A resumed run grades against the snapshot of the run's start, not the template
    as it is now (an agent that reached the task folder could have rewritten it)."""
    folder = tmp_path / "task"
    shutil.copytree(EXAMPLES / "hidden_checks", folder)
    task = load_task(folder / "task.toml")
    with RunStore(tmp_path / "runs.db") as store:
        run_id = store.create_run(task.id)
        first = grading_sources(store, run_id, task)
        (folder / "workspace" / "test_fizz.py").write_text("# rewritten\n")
        (folder / "checks" / "test_hidden.py").write_text("# rewritten\n")
        again = grading_sources(store, run_id, task)
    assert first == again and first.template is not None and first.checks is not None
    assert "FizzBuzzTest" in (first.template / "test_fizz.py").read_text()
    assert "HiddenFizzBuzzTest" in (first.checks / "test_hidden.py").read_text()
    assert first.template.parent.parent.name == run_id  # in the run's folder


def run(tmp_path: Path, task: Path) -> tuple[int, dict[str, Any]]:
    result = CliRunner().invoke(
        ilh, ["run", str(task), "--json", "--store", str(tmp_path / "runs.db")]
    )
    return result.exit_code, json.loads(result.stdout)


def test_rewritten_tests_never_verify(tmp_path: Path) -> None:
    """Before the grading tree, rewritten tests made the checks unknown; now the task's
    tests are what run, and they fail on the unfinished work."""
    code, outcome = run(tmp_path, EXAMPLES / "rewritten_tests" / "task.toml")
    assert code == 3 and outcome["ended_by"] == "script_exhausted"
    states = [h["state"] for h in outcome["history"]]
    assert "complete" not in states and "verified_complete" not in states
    assert states.count("needs_revision") == 2
    grader = outcome["grader"]
    assert {c["id"]: c["result"] for c in grader["criteria"]}["tests"] == "fail"
    assert "tests_changed" in {v["kind"] for v in outcome["violations"]}


def test_restoring_the_tests_and_doing_the_work_completes(tmp_path: Path) -> None:
    folder = tmp_path / "task"
    folder.mkdir()
    source = EXAMPLES / "rewritten_tests"
    (folder / "task.toml").write_text((source / "task.toml").read_text())
    shutil.copytree(source / "workspace", folder / "workspace")
    original_tests = (source / "workspace" / "test_fizz.py").read_text()
    honest = (EXAMPLES / "honest" / "agent.jsonl").read_text().splitlines()
    cheat = (source / "agent.jsonl").read_text().splitlines()[:3]
    restore = {
        "text": "I restore the tests.",
        "tool_calls": [
            {
                "name": "write_file",
                "arguments": {"path": "test_fizz.py", "content": original_tests},
            }
        ],
    }
    turns = [*cheat, json.dumps(restore), honest[1], honest[3]]
    (folder / "agent.jsonl").write_text("\n".join(turns) + "\n")
    code, outcome = run(tmp_path, folder / "task.toml")
    assert code == 0 and outcome["ended_by"] == "committed_complete"
    states = [h["state"] for h in outcome["history"]]
    assert states[-4:] == ["running", "claimed_complete", "verified_complete", "complete"]


def test_ilh_grade_with_a_baseline(tmp_path: Path) -> None:
    folder = EXAMPLES / "grade_true"
    args = [
        "grade",
        str(folder / "task.toml"),
        "--workspace",
        str(folder / "workspace"),
        "--json",
        "--baseline",
    ]
    same = tmp_path / "same"
    shutil.copytree(folder / "workspace", same)
    assert CliRunner().invoke(ilh, [*args, str(same)]).exit_code == 0

    before = tmp_path / "before"  # the base branch's tests define no test at all
    shutil.copytree(folder / "workspace", before)
    (before / "test_slug.py").write_text("# the base branch's tests\n")
    result = CliRunner().invoke(ilh, [*args, str(before)])
    assert result.exit_code == 1
    rows = {c["id"]: c for c in json.loads(result.stdout)["criteria"]}
    assert rows["tests"]["result"] == "fail" and "no test ran" in rows["tests"]["detail"]

    missing = CliRunner().invoke(ilh, [*args, str(tmp_path / "nope")])
    assert missing.exit_code == 2 and "--baseline" in missing.output
