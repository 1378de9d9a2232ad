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


@pytest.mark.parametrize("value", ["abc", "0", "-5", "4294967295", "1000x"])
def test_a_sandbox_uid_that_is_not_taken_is_named_once(
    monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    from harness.workspace import sandbox_user as module

    monkeypatch.setenv("ILH_SANDBOX_UID", value)
    monkeypatch.setattr(module.os, "geteuid", lambda: 0)
    assert module.sandbox_user().uid == 65534  # fails closed to nobody, as before
    note = module.sandbox_uid_note()
    assert note is not None and note.startswith(f"note: ILH_SANDBOX_UID={value!r} is not")


@pytest.mark.parametrize(("value", "euid"), [("1001", 0), ("abc", 1000), (" ", 0)])
def test_a_sandbox_uid_taken_or_unused_gets_no_note(
    monkeypatch: pytest.MonkeyPatch, value: str, euid: int
) -> None:
    from harness.workspace import sandbox_user as module

    monkeypatch.setenv("ILH_SANDBOX_UID", value)
    monkeypatch.setattr(module.os, "geteuid", lambda: euid)
    assert module.sandbox_uid_note() is None


def test_the_note_reaches_the_terminal(tmp_path: Path) -> None:
    done = lint_with(tmp_path, ILH_SANDBOX_UID="nobody-please")
    assert done.returncode == 0
    if os.geteuid() == 0:
        assert "note: ILH_SANDBOX_UID='nobody-please'" in done.stderr, done.stderr
    else:  # the variable is read only by a root harness
        assert "ILH_SANDBOX_UID" not in done.stderr
