"""Instruction counts for the benchmarks, by valgrind's callgrind: unlike CPU time, the
number of instructions a program executes does not move with the machine's load, so a
change of a few percent shows."""

from __future__ import annotations

import re
import shutil
import subprocess
from collections.abc import Mapping
from pathlib import Path

_COLLECTED = re.compile(r"Collected : ([0-9]+)")


def instructions_of(
    argv: list[str],
    *,
    cwd: Path,
    env: Mapping[str, str],
    timeout_s: float,
    must_succeed: bool,
) -> int | None:
    """Instructions that running `argv` executed (user space, every thread); None when
    valgrind is not on PATH, it counted nothing, or (`must_succeed`) the program failed.
    A command measured as it is used may exit non-zero (`ilh lint` on a file with an
    error): then the count is still its cost."""
    valgrind = shutil.which("valgrind")
    if valgrind is None:
        return None
    done = subprocess.run(
        [valgrind, "--tool=callgrind", "--callgrind-out-file=/dev/null", *argv],
        cwd=cwd, env=dict(env), capture_output=True, text=True, check=False, timeout=timeout_s,
    )  # fmt: skip
    found = _COLLECTED.search(done.stderr)
    if found is None or (must_succeed and done.returncode != 0):
        return None
    return int(found.group(1))
