"""`ilh lint - -` (ux7): stdin named twice was read twice; the second read (empty)
replaced the first, and text with errors was reported "ok", exit 0."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def lint(cwd: Path, *args: str, stdin: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "harness", "lint", *args],
        cwd=cwd, capture_output=True, text=True, input=stdin, timeout=120,
        env={**os.environ, "PYTHONPATH": str(ROOT)}, check=False,
    )  # fmt: skip


def test_stdin_named_twice_is_linted_once_with_its_errors(tmp_path: Path) -> None:
    done = lint(tmp_path, "-", "-", stdin="[REED]\n")
    assert done.returncode == 1, done
    assert "-:1:2: E304" in done.stdout and done.stdout.count("E304") == 1, done.stdout
    done = lint(tmp_path, "--json", "-", "-", stdin="[REED]\n")
    assert done.returncode == 1, done
    assert [row["code"] for row in json.loads(done.stdout)] == ["E304"]


def test_a_file_named_twice_is_reported_once(tmp_path: Path) -> None:
    (tmp_path / "a.ilang").write_text("[REED]\n", encoding="utf-8")
    done = lint(tmp_path, "a.ilang", "a.ilang", stdin="")
    assert done.returncode == 1 and done.stdout.count("E304") == 1, done.stdout
    assert "1 file(s): 1 error(s)" in done.stdout
