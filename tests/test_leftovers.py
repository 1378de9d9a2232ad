"""Leftovers of a harness killed mid-command (its empty cgroups, its staging folders)
are removed by the next harness; a live process's never are."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from harness.workspace.leftovers import sweep


def dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_a_dead_harness_s_leftovers_go_and_a_live_one_s_stay(tmp_path: Path) -> None:
    cgroups, temp = tmp_path / "pids", tmp_path / "tmp"
    cgroups.mkdir()
    temp.mkdir()
    gone = dead_pid()
    live = os.getppid()
    for name in (f"ilh-{gone}-0-abc", f"ilh-{live}-0-def", "user-group", f"ilh-{os.getpid()}-1-x"):
        (cgroups / name).mkdir()
    stale = temp / f"ilh-stage-{gone}-q1"
    (stale / "0").mkdir(parents=True)
    (stale / "1").touch()
    kept = temp / f"ilh-stage-{live}-q2"
    kept.mkdir()
    assert sweep([cgroups], temp) == 2
    assert sorted(p.name for p in cgroups.iterdir()) == sorted(
        [f"ilh-{live}-0-def", "user-group", f"ilh-{os.getpid()}-1-x"]
    )
    assert not stale.exists() and kept.exists()


def test_a_folder_with_content_is_never_removed_recursively(tmp_path: Path) -> None:
    stale = tmp_path / f"ilh-stage-{dead_pid()}-q3" / "0"
    stale.mkdir(parents=True)
    (stale / "precious.txt").write_text("a bind that leaked would look like this")
    sweep([], tmp_path)
    assert (stale / "precious.txt").read_text().startswith("a bind")
