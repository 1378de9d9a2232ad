"""`ilh lint --json` keeps its documented shape when a file cannot be read (ux6).

A tool reads `ilh lint --json *.ilang` as one JSON array of findings (DESIGN §6). One
unreadable file among them left stdout empty: the tool's parser failed, and the findings
of every readable file were lost. Now the array holds them, plus one row per unreadable
file (its code: E500 cannot be read, E300 not UTF-8); stderr names each as before, and
the exit status is still 2."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
KEYS = ["file", "line", "col", "code", "severity", "message"]


def lint(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "harness", "lint", *args],
        cwd=cwd, capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=60,
        env={**os.environ, "PYTHONPATH": str(ROOT)}, check=False,
    )  # fmt: skip


def test_unreadable_files_are_rows_beside_the_findings_of_the_others(tmp_path: Path) -> None:
    (tmp_path / "bad.ilang").write_text("[REED]\n", encoding="utf-8")
    (tmp_path / "latin1.ilang").write_bytes(b"::FACT{key:caf\xe9}\n")
    (tmp_path / "folder.ilang").mkdir()
    done = lint(tmp_path, "--json", "bad.ilang", "missing.ilang", "latin1.ilang", "folder.ilang")
    assert done.returncode == 2, done.stderr
    rows = json.loads(done.stdout)
    assert all(list(row) == KEYS for row in rows), rows
    assert [(r["file"], r["code"], r["severity"]) for r in rows] == [
        ("bad.ilang", "E304", "error"),
        ("missing.ilang", "E500", "error"),
        ("latin1.ilang", "E300", "error"),
        ("folder.ilang", "E500", "error"),
    ]
    assert "No such file" in rows[1]["message"] and "not UTF-8" in rows[2]["message"]
    # People (stderr) are told about each, as without --json.
    named = [line.split(":")[0] for line in done.stderr.splitlines()]
    assert named == ["error missing.ilang", "error latin1.ilang", "error folder.ilang"]


def test_without_json_nothing_is_linted_when_a_file_cannot_be_read(tmp_path: Path) -> None:
    (tmp_path / "bad.ilang").write_text("[REED]\n", encoding="utf-8")
    done = lint(tmp_path, "bad.ilang", "missing.ilang")
    assert done.returncode == 2 and done.stdout == "", done
    assert done.stderr.startswith("error missing.ilang: E500 "), done.stderr
