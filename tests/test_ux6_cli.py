"""A new user's slips on the command line (ux6): each gets one line that says what to do
next, exit 2, nothing on stdout."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"


def ilh(cwd: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    environ = {**os.environ, "PYTHONPATH": str(ROOT), **env}  # this tree's code
    return subprocess.run(
        [sys.executable, "-m", "harness", *args],
        cwd=cwd, capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=120,
        env=environ, check=False,
    )  # fmt: skip


def first_error(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr and done.stdout == ""
    return done.stderr.splitlines()[0]


@pytest.mark.parametrize(("typed", "meant"), [("rn", "run"), ("lnit", "lint"), ("grad", "grade")])
def test_a_misspelt_command_is_answered_with_the_one_meant(
    tmp_path: Path, typed: str, meant: str
) -> None:
    # Click suggests only among the commands already imported; ilh imports each on use,
    # so a misspelt top-level command had no suggestion (a sub-command of `runs` had one).
    line = first_error(ilh(tmp_path, typed))
    assert line.startswith(f"error ilh: E303 No such command '{typed}'."), line
    assert "Did you mean" in line and f"'{meant}'" in line.split("Did you mean", 1)[1], line


@pytest.mark.parametrize("command", ["run", "grade"])
def test_a_task_folder_given_as_the_task_file_names_the_file_in_it(
    tmp_path: Path, command: str
) -> None:
    shutil.copytree(EXAMPLES / "honest", tmp_path / "honest")
    args = [command, "honest"] + (["--workspace", "honest/workspace"] if command == "grade" else [])
    line = first_error(ilh(tmp_path, *args))
    assert "'honest' is a folder" in line and "honest/task.toml" in line, line


def test_a_folder_without_a_task_file_is_named_a_folder(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    line = first_error(ilh(tmp_path, "run", "empty"))
    assert "'empty' is a folder, not a task file" in line, line


def test_certify_check_with_its_arguments_swapped_says_the_order(tmp_path: Path) -> None:
    handoff = tmp_path / "handoff.md"
    handoff.write_text("# Task\n\nReturn 2 from f.\n", encoding="utf-8")
    (tmp_path / "handoff.cert.json").write_text("{}", encoding="utf-8")
    line = first_error(ilh(tmp_path, "certify", "--check", "handoff.md", "handoff.cert.json"))
    assert line.startswith("error handoff.md:1:1: E300 not JSON"), line
    assert "ilh certify --check CERT [TARGET]" in line, line


def test_soul_review_of_a_soul_that_is_nowhere_is_bad_input(tmp_path: Path) -> None:
    # Neither the SOUL nor its pending file: a typo, not "no pending GENEs" and exit 0.
    for args in (["soul", "review", "agnet.soul.ilang"], ["soul", "review", "x.ilang", "--all"]):
        line = first_error(ilh(tmp_path, *args))
        assert "no such SOUL file, and no pending GENEs for it" in line, line


def test_soul_review_of_pending_genes_without_a_soul_yet_lists_them(tmp_path: Path) -> None:
    # A first run with --soul-readonly leaves only the pending file: that is no typo.
    (tmp_path / "a.soul.ilang.pending.jsonl").write_text("", encoding="utf-8")
    done = ilh(tmp_path, "soul", "review", "a.soul.ilang")
    assert done.returncode == 0 and done.stdout == "no pending GENEs\n", done


@pytest.mark.parametrize("text", [None, "[task\n", '[task]\nidd = "x"\n'])
def test_a_task_file_that_is_refused_leaves_no_store_behind(
    tmp_path: Path, text: str | None
) -> None:
    # `ilh run nope.toml` in a fresh folder created `.ilh/runs.db` there, then refused it.
    if text is not None:
        (tmp_path / "task.toml").write_text(text, encoding="utf-8")
    first_error(ilh(tmp_path, "run", "task.toml"))
    assert not (tmp_path / ".ilh").exists()


def test_a_base_url_no_model_uses_is_bad_usage(tmp_path: Path) -> None:
    # `--base-url` points openai:/anthropic: models at a server: with a scripted agent and
    # no such grader it was silently ignored, and the person believed the run used it.
    shutil.copytree(EXAMPLES / "honest", tmp_path / "ex")
    url = "http://127.0.0.1:9/v1"
    line = first_error(ilh(tmp_path, "run", "ex/task.toml", "--base-url", url))
    assert line.startswith("error --base-url: E303 "), line
    assert "scripted:agent.jsonl" in line and "drop it" in line, line
    batch = ilh(tmp_path, "run", "ex/task.toml", "ex/task.toml", "--base-url", url)
    assert first_error(batch).startswith("error --base-url: E303 ")
    assert not (tmp_path / ".ilh").exists() or "runs" not in os.listdir(tmp_path / ".ilh")


def test_a_base_url_a_grader_model_uses_is_taken(tmp_path: Path) -> None:
    # The grader shares --base-url: an openai: grader model is what it is for. (No call is
    # made: the honest example's criteria are all tool checks.)
    shutil.copytree(EXAMPLES / "honest", tmp_path / "ex")
    done = ilh(
        tmp_path, "run", "ex/task.toml", "--base-url", "http://127.0.0.1:9/v1",
        "--grader-model", "openai:judge",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr


def test_an_unknown_run_names_the_store_it_was_looked_for_in(tmp_path: Path) -> None:
    # `ilh run --resume RUN` typed in another folder looked in that folder's default store
    # and said only "unknown run": the person could not tell which store was searched.
    shutil.copytree(EXAMPLES / "honest", tmp_path / "ex")
    assert ilh(tmp_path, "run", "ex/task.toml", "--store", "elsewhere.db").returncode == 0
    ilh(tmp_path, "run", "ex/task.toml", "--model", "scripted:ex/agent.jsonl")  # default store
    line = first_error(ilh(tmp_path, "run", "--resume", "zzz"))
    assert line == (
        "error zzz: E500 unknown run 'zzz' in the store .ilh/runs.db (`ilh runs list` shows "
        "its runs; one recorded in another store needs --store PATH)"
    )
    line = first_error(ilh(tmp_path, "runs", "show", "zzz", "--store", "elsewhere.db"))
    assert "in the store elsewhere.db (`ilh runs list --store elsewhere.db` shows" in line, line
