"""Every benchmark starts the way its docstring's `Run:` line says: as a script
(`python benchmarks/x.py`, whose own folder is then on the path, not the repository) or
as a module (`python -m benchmarks.x`). A shared helper imported as `benchmarks.…` had
broken the script form of one, unseen by the tests that import it as a module."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SCRIPTS = sorted(
    p for p in (REPO / "benchmarks").glob("*.py") if "\nRun:" in p.read_text(encoding="utf-8")
)


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_a_benchmark_starts_as_its_run_line_says(script: Path, tmp_path: Path) -> None:
    run = re.search(r"^Run: (.*)$", script.read_text(encoding="utf-8"), re.MULTILINE)
    assert run is not None
    as_module = f"-m benchmarks.{script.stem}" in run.group(1)
    assert as_module or f"benchmarks/{script.name}" in run.group(1), run.group(1)
    argv = ["-m", f"benchmarks.{script.stem}"] if as_module else [str(script)]
    done = subprocess.run(
        [sys.executable, *argv, "--help"],
        cwd=REPO if as_module else tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "usage" in done.stdout.lower()
