"""A number longer than Python converts (4300 digits) in hostile input (ux7).

`json.loads` and `tomllib.loads` raise a plain ValueError for an integer of more than
4300 digits ("Exceeds the limit … use sys.set_int_max_str_digits()"), which none of the
readers expected: a scripted agent file, a recording or a task file holding one was a
traceback (exit 1); `ilh certify --check` and `--answers` printed Python's advice at
`ilh certify`, not at the file; and an agent's `pyproject.toml` holding one stopped every
tool check ("the grading tree could not be built")."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
LONG = "9" * 5000


def ilh(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "harness", *args],
        cwd=cwd, capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=120,
        env={**os.environ, "PYTHONPATH": str(ROOT)}, check=False,
    )  # fmt: skip


def one_error(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 2, (done.stdout, done.stderr[-2000:])
    assert "Traceback" not in done.stderr and done.stdout == "", done.stderr[-2000:]
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    return lines[0]


@pytest.mark.parametrize("model", ["scripted:agent.jsonl", "replay:agent.jsonl"])
def test_a_long_number_in_a_jsonl_input_is_bad_input_at_its_line(
    tmp_path: Path, model: str
) -> None:
    shutil.copytree(EXAMPLES / "honest", tmp_path / "ex")
    (tmp_path / "ex" / "agent.jsonl").write_text(f'{{"text": "ok", "n": {LONG}}}\n')
    line = one_error(ilh(tmp_path, "run", "ex/task.toml", "--model", model))
    assert "agent.jsonl:1: E300 not JSON: a number of more than 4300 digits" in line, line


def test_a_long_number_in_a_task_file_is_bad_input(tmp_path: Path) -> None:
    (tmp_path / "t.toml").write_text(f'[task]\nid = "x"\nobjective = "o"\nn = {LONG}\n')
    line = one_error(ilh(tmp_path, "run", "t.toml"))
    assert line.startswith("error t.toml: E300 "), line
    assert "a number of more than 4300 digits" in line, line


@pytest.mark.parametrize("flag", ["--check", "--answers"])
def test_a_long_number_in_certify_json_is_bad_input_at_the_file(tmp_path: Path, flag: str) -> None:
    shutil.copytree(EXAMPLES / "certify_clean", tmp_path / "c")
    (tmp_path / "c" / "big.json").write_text(f'{{"a": {LONG}}}\n')
    args = ["certify", "--check", "big.json"] if flag == "--check" else [
        "certify", "handoff.md", "--role", "implementer", "--non-interactive",
        "--answers", "big.json",
    ]  # fmt: skip
    line = one_error(ilh(tmp_path / "c", *args))
    assert line.startswith("error big.json:"), line
    assert "a number of more than 4300 digits" in line and "set_int_max" not in line, line


def test_a_long_number_in_the_agents_pyproject_does_not_stop_the_grading(tmp_path: Path) -> None:
    shutil.copytree(EXAMPLES / "grade_true", tmp_path / "g")
    base = tmp_path / "base"
    shutil.copytree(tmp_path / "g" / "workspace", base)
    (base / "pyproject.toml").write_text('[project]\nname = "x"\n')
    (tmp_path / "g" / "workspace" / "pyproject.toml").write_text(
        f'[project]\nname = "x"\nversion = {LONG}\n'
    )
    done = ilh(
        tmp_path, "grade", "g/task.toml", "--workspace", "g/workspace", "--baseline", "base",
        "--claim", "g/claim.txt",
    )  # fmt: skip
    assert "could not be built" not in done.stdout + done.stderr, done.stdout
    assert done.returncode == 0, done.stdout + done.stderr
