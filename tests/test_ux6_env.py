"""`ILH_*` variables set to nonsense (ux6). `ILH_LOG=verbose` was taken silently as the
default level: the person who asked for more saw nothing and was not told why."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def lint_with(tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    text = tmp_path / "a.ilang"
    text.write_text("[READ:@FILE|ref=a.md]\n", encoding="utf-8")
    environ = {**os.environ, "PYTHONPATH": str(ROOT), **env}
    return subprocess.run(
        [sys.executable, "-m", "harness", "lint", str(text)],
        capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=60, env=environ,
        check=False,
    )  # fmt: skip


@pytest.mark.parametrize("value", ["verbose", "3", "debug,info"])
def test_a_log_level_that_is_none_is_named_once(tmp_path: Path, value: str) -> None:
    done = lint_with(tmp_path, ILH_LOG=value)
    assert done.returncode == 0, done.stderr  # a note, not a refusal: the command runs
    notes = [line for line in done.stderr.splitlines() if "ILH_LOG" in line]
    assert notes == [
        f"note: ILH_LOG={value!r} is not a log level (debug, info, warning, error, "
        "critical): warning is used"
    ], done.stderr


@pytest.mark.parametrize("value", ["debug", "INFO", " warning ", "Error", ""])
def test_a_log_level_is_taken_without_a_note(tmp_path: Path, value: str) -> None:
    done = lint_with(tmp_path, ILH_LOG=value)
    assert done.returncode == 0 and "ILH_LOG" not in done.stderr, done.stderr


def test_the_level_is_read_as_the_note_says() -> None:
    from harness.secrets.logs import log_level

    assert log_level(" info ") == (20, None)
    level, note = log_level("loud")
    assert level == 30 and note is not None and "'loud'" in note
