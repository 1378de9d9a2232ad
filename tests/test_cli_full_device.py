"""Output the device will not take (`ilh lint f > /dev/full`, a full disk under a
redirect) is one `error …: E500` line and exit 2, not a traceback from click or rich."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full here")


@pytest.mark.parametrize(
    "args",
    [("lint", "t.ilang"), ("lint", "--json", "t.ilang"), ("--help",), ("schema", "task")],
    ids=["lint", "lint-json", "help", "schema"],
)
def test_a_full_device_under_stdout_is_one_line_exit_2(
    tmp_path: Path, args: tuple[str, ...]
) -> None:
    (tmp_path / "t.ilang").write_text("::ILANG::4.0\n@TASK → done\n", encoding="utf-8")
    with open("/dev/full", "w", encoding="utf-8") as full:
        done = subprocess.run(
            [sys.executable, "-m", "harness", *args],
            cwd=tmp_path,
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            timeout=120,
        )
    assert "Traceback" not in done.stderr, done.stderr
    assert done.returncode == 2, done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and ": E500 cannot write its output: No space left on device" in lines[0]
