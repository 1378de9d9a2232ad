"""`ilh view RUN --out FILE` and `ilh runs export RUN --html --out FILE` never replace a
file that is not an HTML page (ux6): `--out task.toml` (a slip of the finger, or of tab
completion) replaced the task file with the report, silently. A page written before (a
report of this or another run) is replaced, as it always was, and so is whatever holds
the default name (`ilh-RUN.html`, the harness's own: tests/test_view.py)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def ilh(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "harness", *args],
        cwd=cwd, capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=120,
        env={**os.environ, "PYTHONPATH": str(ROOT)}, check=False,
    )  # fmt: skip


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    folder = tmp_path_factory.mktemp("view_out")
    shutil.copytree(ROOT / "examples" / "honest", folder / "ex")
    done = ilh(folder, "run", "ex/task.toml", "--json")
    assert done.returncode == 0, done.stderr
    return folder, done.stdout.split('"run_id":"', 1)[1].split('"', 1)[0]


COMMANDS = [("view", "{run}", "--out"), ("runs", "export", "{run}", "--html", "--out")]


@pytest.mark.parametrize("command", COMMANDS)
def test_a_file_that_is_not_a_page_is_not_replaced(
    recorded: tuple[Path, str], command: tuple[str, ...]
) -> None:
    folder, run = recorded
    task = folder / "ex" / "task.toml"
    before = task.read_bytes()
    done = ilh(folder, *(a.format(run=run) for a in command), "ex/task.toml")
    assert done.returncode == 2 and "Traceback" not in done.stderr, done
    assert done.stderr.splitlines() == [
        "error ex/task.toml: E303 the page would replace a file that is not an HTML page; "
        "name another file, or remove this one first"
    ]
    assert task.read_bytes() == before


@pytest.mark.parametrize("command", COMMANDS)
def test_a_page_written_before_and_an_empty_file_are_replaced(
    recorded: tuple[Path, str], command: tuple[str, ...]
) -> None:
    folder, run = recorded
    args = [a.format(run=run) for a in command]
    for name, old in (("old.html", "<!DOCTYPE html><p>an older page"), ("new.html", "")):
        (folder / name).write_text(old, encoding="utf-8")
        done = ilh(folder, *args, name)
        assert done.returncode == 0, done.stderr
        assert (folder / name).read_text(encoding="utf-8").startswith("<!doctype html>")
