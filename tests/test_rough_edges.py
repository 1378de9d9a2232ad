"""Rough edges a new user met (issue 12), each one line `error LOCATION: CODE message`,
exit 2, no traceback; and input that used to be accepted and must be refused."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from harness.cli.main import ilh
from harness.record.store import RunStore
from harness.run.progress import budget_text

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def invoke(*args: str) -> Result:
    return CliRunner().invoke(ilh, list(args))


def one_error(result: Result, location: str, code: str) -> str:
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    lines = [line for line in result.output.splitlines() if line.startswith("error ")]
    assert lines, result.output
    assert lines[-1].startswith(f"error {location}: {code} "), lines
    return lines[-1]


def at_workspace_line(task: Path) -> str:
    """`TASK:LINE` of the task file's `workspace =` (ux6: its refusals name the line)."""
    lines = task.read_text().splitlines()
    return f"{task}:{next(n for n, ln in enumerate(lines, 1) if ln.startswith('workspace ='))}"


def test_an_unusable_store_is_one_message(honest: Path) -> None:
    result = invoke("run", str(honest / "task.toml"), "--store", "/proc/nope/runs.db")
    one_error(result, "/proc/nope/runs.db", "E500")


def test_a_missing_store_is_said_once(tmp_path: Path) -> None:
    store = tmp_path / "none" / "runs.db"
    line = one_error(invoke("runs", "list", "--store", str(store)), str(store), "E500")
    assert line.count("no run store") == 1


def test_an_unknown_run_is_bad_input(tmp_path: Path, honest: Path) -> None:
    store = tmp_path / "runs.db"
    assert invoke("run", str(honest / "task.toml"), "--store", str(store)).exit_code == 0
    one_error(invoke("runs", "show", "zzz", "--store", str(store)), "RUN", "E500")
    one_error(invoke("run", "--resume", "zzz", "--store", str(store)), "zzz", "E500")


def test_a_task_with_a_run_to_resume_is_not_silently_ignored(honest: Path, tmp_path: Path) -> None:
    result = invoke(
        "run", str(honest / "task.toml"), "--resume", "zzz", "--store", str(tmp_path / "r.db")
    )
    assert "zzz" in one_error(result, "--resume", "E303")


def test_lint_names_every_unreadable_file_with_a_code(tmp_path: Path) -> None:
    result = invoke("lint", str(tmp_path / "a.ilang"), str(tmp_path / "b.ilang"))
    one_error(result, str(tmp_path / "b.ilang"), "E500")
    assert f"error {tmp_path / 'a.ilang'}: E500" in result.output
    bad = tmp_path / "latin1.ilang"
    bad.write_bytes(b"[READ: caf\xe9]\n")
    one_error(invoke("lint", str(bad)), str(bad), "E300")
    one_error(invoke("lint", "--explain", "E999"), "--explain", "E303")


def test_an_empty_agent_script_is_refused(honest: Path, tmp_path: Path) -> None:
    (honest / "agent.jsonl").write_text("\n")
    result = invoke("run", str(honest / "task.toml"), "--store", str(tmp_path / "r.db"))
    assert "no turns" in one_error(result, str(honest / "agent.jsonl"), "E303")


def test_a_task_without_a_model_names_the_missing_model(honest: Path, tmp_path: Path) -> None:
    task = honest / "task.toml"
    text = task.read_text()
    task.write_text(text.replace('[agent]\nmodel = "scripted:agent.jsonl"\n', ""))
    assert "[agent]" not in task.read_text()
    result = invoke("run", str(task), "--store", str(tmp_path / "r.db"))
    line = one_error(result, str(task), "E303")
    assert "no model" in line and "[agent] model" in line  # brackets shown verbatim


@pytest.mark.parametrize("url", ["notaurl", "ftp://host/v1", "http://"])
def test_a_base_url_that_is_not_a_url_is_refused(honest: Path, tmp_path: Path, url: str) -> None:
    result = invoke(
        "run", str(honest / "task.toml"), "--model", "openai:gpt-x", "--base-url", url,
        "--store", str(tmp_path / "r.db"),
    )  # fmt: skip
    one_error(result, "--base-url", "E303")


@pytest.mark.parametrize("where", ["../../../etc", "..", "."])
def test_a_workspace_or_checks_folder_outside_the_task_folder_is_refused(
    honest: Path, tmp_path: Path, where: str
) -> None:
    task = honest / "task.toml"
    task.write_text(task.read_text().replace('workspace = "workspace"', f'workspace = "{where}"'))
    result = invoke("run", str(task), "--store", str(tmp_path / "r.db"))
    assert "task folder" in one_error(result, at_workspace_line(task), "E303")
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())


def test_resuming_a_complete_run_adds_nothing_to_its_record(honest: Path, tmp_path: Path) -> None:
    store = tmp_path / "r.db"
    first = invoke("run", str(honest / "task.toml"), "--store", str(store), "--json")
    run_id = json.loads(first.stdout)["run_id"]
    with RunStore(store, create=False) as records:
        before = len(records.events(run_id))
    again = invoke("run", "--resume", run_id, "--store", str(store), "--json")
    assert again.exit_code == 0, again.output
    result = json.loads(again.stdout)
    assert result["ended_by"] == "committed_complete"
    assert "nothing to resume" in result["notes"][-1]
    with RunStore(store, create=False) as records:
        assert len(records.events(run_id)) == before


@pytest.mark.parametrize("as_json", [True, False])
def test_a_reader_that_leaves_early_does_not_change_the_verdict(as_json: bool) -> None:
    folder = EXAMPLES / "grade_true"
    argv = [sys.executable, "-m", "harness", "grade", str(folder / "task.toml")]
    argv += ["--workspace", str(folder / "workspace"), *(["--json"] if as_json else [])]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None
    proc.stdout.close()  # the reader is gone before anything is written
    _, errors = proc.communicate(timeout=120)
    assert proc.returncode == 0, errors.decode()
    assert b"Traceback" not in errors


def test_budget_rows_are_rounded_name_their_reserves_and_never_go_negative() -> None:
    over = {"kind": "time", "used": 101.69200000000001, "limit": 100, "remaining": -1.692}
    assert budget_text(over) == "101.69 s of 100.00 s used, 0 remaining (over by 1.69 s)"
    tokens = {
        "kind": "tokens", "used": 12345, "limit": 40000, "remaining": 22655,
        "reserve_audit": 4000, "reserve_summary": 1000,
    }  # fmt: skip
    assert budget_text(tokens) == (
        "12,345 of 40,000 used, 22,655 remaining after the reserves (audit 4,000, summary 1,000)"
    )


def test_a_template_linked_from_outside_the_task_folder_is_refused(
    honest: Path, tmp_path: Path
) -> None:
    """A symlink is the same escape as `../`: the template's real place must be inside."""
    outside = tmp_path / "elsewhere"
    (honest / "workspace").rename(outside)
    (honest / "workspace").symlink_to(outside)
    result = invoke("run", str(honest / "task.toml"), "--store", str(tmp_path / "r.db"))
    one_error(result, at_workspace_line(honest / "task.toml"), "E303")


def test_a_batch_reports_every_bad_task_file(tmp_path: Path) -> None:
    first, second = tmp_path / "a.toml", tmp_path / "b.toml"
    first.write_text("[task\n")
    second.write_text('[task]\nid = "x"\n[nonsense]\n')
    result = invoke("run", str(first), str(second), "--store", str(tmp_path / "r.db"))
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert f"error {first}" in result.output and f"error {second}" in result.output


def test_grade_shows_why_a_check_failed() -> None:
    folder = EXAMPLES / "grade_false"
    result = invoke("grade", str(folder / "task.toml"), "--workspace", str(folder / "workspace"))
    assert result.exit_code == 1
    assert "output of tests (fail)" in result.stdout
    assert "AssertionError: 'hello,-world!' != 'hello-world'" in result.stdout


def test_runs_show_has_the_model_text_and_the_tool_calls(honest: Path, tmp_path: Path) -> None:
    store = tmp_path / "r.db"
    first = invoke("run", str(honest / "task.toml"), "--store", str(store), "--json")
    run_id = json.loads(first.stdout)["run_id"]
    shown = invoke("runs", "show", run_id, "--store", str(store))
    assert shown.exit_code == 0
    assert "First I look at what the workspace holds." in shown.stdout
    assert '→ run_command {"command": "python -m unittest -q"}' in shown.stdout
    assert "tool run_command ok" in shown.stdout and "Ran 2 tests" in shown.stdout


def test_the_readme_grading_commands_work_as_written(monkeypatch: pytest.MonkeyPatch) -> None:
    """From the repository root, paths on the command line are relative to it."""
    monkeypatch.chdir(EXAMPLES.parent)
    judged = invoke(
        "grade", "examples/grade_model_judged/task.toml",
        "--workspace", "examples/grade_model_judged/workspace",
        "--grader-model", "scripted:examples/grade_model_judged/grader.jsonl",
    )  # fmt: skip
    assert judged.exit_code == 0, judged.output
    looking = invoke(
        "grade", "examples/grade_true_looking/task.toml",
        "--workspace", "examples/grade_true_looking/workspace",
        "--claim", "examples/grade_true_looking/claim.txt",
    )  # fmt: skip
    assert looking.exit_code == 1 and "needs_revision" in looking.stdout


@pytest.mark.parametrize(
    ("argv", "where"),
    [
        (["run", "--bogus"], "--bogus"),
        (["run", "--concurrency", "x"], "--concurrency"),
        (["schema", "bogus"], "NAME"),
        (["bogus"], "ilh"),
    ],
)
def test_bad_usage_is_one_line_in_the_same_format(argv: list[str], where: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "harness", *argv], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.startswith(f"error {where}: E303 "), done.stderr
