"""Files outside the harness's own trees are never given to the sandbox user (issue 9,
second red team). A root harness chowns what a command mounts writable or must read to
its unprivileged user; each test here passed as an attack before its fix:

* `ilh grade` handed the task's live hidden checks folder to "nobody", and with it any
  folder a `checks` symlink named (`checks -> /` chowned the whole host);
* `hand_over` chowned (and chmodded) a file hard-linked into a tree, changing the file's
  other name outside it too;
* a command filled the host's disk (or its inodes) through the workspace (many files,
  each under the per-file limit).
"""

from __future__ import annotations

import json
import os
import shutil
import stat
from pathlib import Path

import pytest
from click.testing import CliRunner

from harness.cli.main import ilh
from harness.workspace import disk
from harness.workspace.commands import run_shell
from harness.workspace.folder import Workspace
from harness.workspace.sandbox import SandboxPolicy
from harness.workspace.sandbox_user import SandboxUser, hand_over

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "hidden_checks"
ROOT = os.geteuid() == 0
as_root = pytest.mark.skipif(not ROOT, reason="only a root harness hands trees over")


def owners(folder: Path) -> set[int]:
    found = {folder.lstat().st_uid}
    for path in folder.rglob("*"):
        found.add(path.lstat().st_uid)
    return found


def grade(task: Path, workspace: Path) -> tuple[int, str, str]:
    result = CliRunner().invoke(ilh, ["grade", str(task), "--workspace", str(workspace), "--json"])
    return result.exit_code, result.stdout, result.stderr


@as_root
def test_ilh_grade_leaves_the_task_hidden_checks_to_their_owner(tmp_path: Path) -> None:
    task = tmp_path / "task"
    shutil.copytree(EXAMPLE, task)
    code, out, _ = grade(task / "task.toml", task / "workspace")
    rows = {c["id"]: c["result"] for c in json.loads(out)["criteria"]}
    assert code == 1 and rows["rules"] == "fail"  # the hidden check did run
    assert owners(task / "checks") == {0}


@as_root
def test_a_checks_symlink_out_of_the_task_folder_is_refused(tmp_path: Path) -> None:
    """The task file says `checks = "checks"`; the folder is a link to someone's project."""
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "private.txt").write_text("mine\n")
    (victim / "private.txt").chmod(0o600)
    task = tmp_path / "task"
    shutil.copytree(EXAMPLE, task)
    shutil.rmtree(task / "checks")
    (task / "checks").symlink_to(victim)
    code, _, err = grade(task / "task.toml", task / "workspace")
    assert code == 2 and "is outside the task folder" in err
    assert owners(victim) == {0}


@as_root
def test_hand_over_leaves_a_hard_linked_outside_file_alone(tmp_path: Path) -> None:
    outside = tmp_path / "host-tool"
    outside.write_bytes(b"#!/bin/sh\n")
    outside.chmod(0o4755)
    tree = tmp_path / "tree"
    tree.mkdir()
    os.link(outside, tree / "linked")
    (tree / "own.txt").write_text("x")
    hand_over(tree, SandboxUser(65534, 65534, True))
    info = outside.stat()
    assert info.st_uid == 0 and stat.S_IMODE(info.st_mode) == 0o4755
    assert (tree / "own.txt").stat().st_uid == 65534  # the tree's own files still go


# --- the host's disk, through the workspace ------------------------------------------------


def test_a_command_cannot_fill_the_disk_through_the_workspace(tmp_path: Path) -> None:
    """Many files under the per-file limit: nothing bounded their number."""
    ws = Workspace.create(tmp_path / "ws")
    policy = SandboxPolicy(disk=32 * 1024 * 1024)
    fill = "for i in 1 2 3 4 5 6 7 8 9 10; do head -c 16M /dev/zero > f$i; sync; done; echo done"
    result = run_shell(fill, ws.root, 60.0, sandbox=policy)
    written = sum(p.stat().st_size for p in ws.root.iterdir())
    assert result.exit_code != 0 and "done" not in result.output
    assert "disk allowance" in result.output and not result.timed_out
    assert written < 100 * 1024 * 1024
    ok = run_shell("head -c 4M /dev/zero > small; echo done", ws.root, 60.0, sandbox=policy)
    assert ok.exit_code == 0 and "done" in ok.output


def test_a_command_cannot_use_up_the_filesystem_s_inodes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Empty files take no blocks: the byte allowance alone never saw them."""
    monkeypatch.setattr(disk, "INODE_ALLOWANCE", 2_000)
    ws = Workspace.create(tmp_path / "ws")
    many = "mkdir d && cd d && i=0; while [ $i -lt 20000 ]; do : > f$i; i=$((i+1)); done; echo done"
    result = run_shell(many, ws.root, 120.0)
    assert "done" not in result.output and "too many files" in result.output
    assert len(list((ws.root / "d").iterdir())) < 10_000
