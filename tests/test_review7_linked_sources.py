"""Review 7 of the linked-folder identity (7672235): a link inside a granted source to a
folder inside it was bound by its name only, on the ground that the walk covers that
folder; but the walk leaves out `.git` and the caches, so a link into one of them read
content nothing bound (changed after certification, the check still passed)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from harness.certify import sources
from harness.certify.sources import source_identity


@pytest.mark.parametrize("ignored", [".git", "__pycache__", "sub/.mypy_cache"])
def test_a_link_into_an_ignored_folder_of_the_source_binds_its_content(
    tmp_path: Path, ignored: str
) -> None:
    source = tmp_path / "src"
    hidden = source / ignored / "payload"
    hidden.mkdir(parents=True)
    (hidden / "run.py").write_text("print('certified')\n")
    (source / "code").symlink_to(hidden.relative_to(source))
    before = source_identity(source)
    (hidden / "run.py").write_text("print('swapped after certification')\n")
    assert source_identity(source) != before
    # Read through the link is the swapped file: what the receiver would run.
    assert "swapped" in (source / "code" / "run.py").read_text()


def test_a_link_to_a_file_inside_an_ignored_folder_binds_its_content(tmp_path: Path) -> None:
    source = tmp_path / "src"
    (source / ".git").mkdir(parents=True)
    (source / ".git" / "hook.sh").write_text("echo one\n")
    (source / "hook.sh").symlink_to(".git/hook.sh")
    before = source_identity(source)
    (source / ".git" / "hook.sh").write_text("echo two\n")
    assert source_identity(source) != before


def test_links_through_ignored_folders_still_end_on_a_loop_of_links(tmp_path: Path) -> None:
    source = tmp_path / "src"
    (source / ".git" / "a").mkdir(parents=True)
    (source / ".git" / "a" / "back").symlink_to("../../code")
    (source / "code").symlink_to(".git/a")
    first = source_identity(source)
    assert first is not None and first == source_identity(source)


def test_an_unchanged_source_keeps_the_identity_it_had_before_linked_folders(
    tmp_path: Path,
) -> None:
    # A certificate issued before 7672235 must still check: a source with no link to a
    # folder outside it hashes as it did (digest recorded from the code before it).
    source = tmp_path / "src"
    (source / "pkg").mkdir(parents=True)
    (source / "pkg" / "a.py").write_text("A = 1\n")
    (source / "run.sh").write_text("#!/bin/sh\n")
    (source / "run.sh").chmod(0o755)
    (source / "alias").symlink_to("pkg")
    (source / "a.py").symlink_to("pkg/a.py")
    (source / "gone").symlink_to("nowhere")
    (source / ".git").mkdir()
    (source / ".git" / "index").write_text("x")
    assert source_identity(source) == (
        "sha256:56a12522ff44ff1c6043b3c1dbaed0e1e6543e0e2753688c306daf411df9a5dc"
    )


def test_a_link_to_a_fifo_or_device_is_never_opened(tmp_path: Path) -> None:
    source = tmp_path / "src"
    source.mkdir()
    outside = tmp_path / "out"
    outside.mkdir()
    os.mkfifo(outside / "pipe")
    (source / "pipe").symlink_to(outside / "pipe")
    (source / "zero").symlink_to("/dev/zero")
    (source / "out").symlink_to(outside)
    started = time.monotonic()
    assert source_identity(source) is not None
    assert time.monotonic() - started < 5


def test_a_huge_linked_tree_is_cut_at_the_budget_and_never_matches(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sources, "MAX_LINKED_ENTRIES", 20)
    source = tmp_path / "src"
    source.mkdir()
    for name in ("one", "two"):
        outside = tmp_path / name
        outside.mkdir()
        for i in range(12):
            (outside / f"f{i}").write_text(str(i))
        (source / name).symlink_to(outside)
    # 24 linked entries in two folders: the budget is shared, so the identity is cut.
    assert source_identity(source) != source_identity(source)


def test_a_file_swapped_for_a_device_after_its_check_is_never_read_to_its_end() -> None:
    # The walk checks an entry's kind (lstat, is_file) and then opens it: a file swapped
    # in between for a device (through a folder on its path turned into a link) must not
    # be read forever. `_file_digest` is the open after the check: given /dev/zero it
    # fails at once rather than hashing an endless stream.
    script = (
        "from pathlib import Path\n"
        "from harness.certify.sources import _file_digest\n"
        "try:\n    _file_digest(Path('/dev/zero'))\nexcept OSError as e:\n    print('refused')\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=20, check=False
    )
    assert done.stdout.strip() == "refused", done.stderr
