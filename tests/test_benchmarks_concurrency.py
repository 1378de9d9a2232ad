"""benchmarks/concurrency.py --instructions: its counted child runs (`--count`) really run
the batch (and the bare SDK) to the end, and the per-task count is the difference of the
run with the tasks and the warm-up alone, over the tasks. valgrind is stood in for by a
script that runs the child and reports a count made from the child's arguments."""

from __future__ import annotations

import os
import stat
import sys
from pathlib import Path

import pytest

from benchmarks import concurrency

# The stand-in: drops callgrind's options, runs the command (its exit code kept), then
# reports "instructions" 1000 + 7 per task (harness) or + 3 per task (post), as callgrind
# does on stderr.
FAKE_VALGRIND = """#!/bin/sh
shift 2
"$@" >/dev/null 2>&1 || exit $?
tasks=0; side=""; prev=""
for a in "$@"; do
  [ "$prev" = "--tasks" ] && tasks=$a
  [ "$prev" = "--count" ] && side=$a
  prev=$a
done
per=7; [ "$side" = post ] && per=3
echo "==1== Collected : $((1000 + per * tasks))" >&2
"""


@pytest.fixture
def fake_valgrind(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tool = tmp_path / "bin" / "valgrind"
    tool.parent.mkdir()
    tool.write_text(FAKE_VALGRIND, encoding="utf-8")
    tool.chmod(tool.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{tool.parent}{os.pathsep}{os.environ['PATH']}")


@pytest.mark.usefixtures("fake_valgrind")
@pytest.mark.parametrize(("side", "per"), [("harness", 7.0), ("post", 3.0)])
def test_per_task_is_the_difference_over_the_tasks(side: str, per: float) -> None:
    assert concurrency.per_task_instructions(side, 2, 5, 4, 1.0) == per


@pytest.mark.usefixtures("fake_valgrind")
def test_a_counted_child_that_fails_counts_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    # An interpreter that cannot run the child: no number, not a wrong one.
    monkeypatch.setattr(sys, "executable", "/bin/false")
    assert concurrency.per_task_instructions("harness", 2, 5, 4, 1.0) is None


def test_without_valgrind_nothing_is_counted(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")
    assert concurrency.instructions_of(["true"]) is None
