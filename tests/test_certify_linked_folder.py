"""A granted source holding a link to a folder outside it (`project/lib -> ../shared_lib`):
the receiver reads that folder's files through the link, so its content is part of the
source's identity; a folder inside the source is walked as part of it already."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.certify import sources
from harness.certify.sources import source_identity
from tests.certify_helpers import certified_clean, certify, invoke


def test_a_folder_linked_from_outside_the_source_is_bound_by_its_content(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder, _ = certified_clean(tmp_path, monkeypatch)
    (folder / "shared_lib").mkdir()
    (folder / "shared_lib" / "util.py").write_text("def helper():\n    return 1\n")
    (folder / "project" / "lib").symlink_to("../shared_lib")
    code, _, result = certify(
        folder, monkeypatch, "handoff.md", "--role", "implementer", "--source", "project",
        "--certificate", "l.json",
    )  # fmt: skip
    assert code == 0, result.output
    assert invoke(folder, monkeypatch, "certify", "--check", "l.json").exit_code == 0
    (folder / "shared_lib" / "util.py").write_text("def helper():\n    return 2\n")
    checked = invoke(folder, monkeypatch, "certify", "--check", "l.json", "--json")
    assert checked.exit_code == 1
    problems = json.loads(checked.stdout)["problems"]
    assert any("source project changed" in p for p in problems), problems


def test_links_inside_the_source_and_loops_of_links_are_hashed_once(tmp_path: Path) -> None:
    source = tmp_path / "src"
    (source / "pkg").mkdir(parents=True)
    (source / "pkg" / "a.py").write_text("A = 1\n")
    (source / "alias").symlink_to("pkg")  # inside: walked as pkg already
    (source / "pkg" / "up").symlink_to("..")  # a loop back to the source
    outside = tmp_path / "out"
    outside.mkdir()
    (outside / "back").symlink_to(source)  # outside, and back in: a loop across
    (source / "ext").symlink_to(outside)
    first = source_identity(source)
    assert first is not None and first == source_identity(source)
    (source / "pkg" / "a.py").write_text("A = 2\n")
    assert source_identity(source) != first
    (outside / "new.txt").write_text("x")
    second = source_identity(source)
    (outside / "new.txt").write_text("y")
    assert source_identity(source) != second


def test_a_link_to_a_huge_folder_is_never_bound(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sources, "MAX_LINKED_ENTRIES", 3)
    source, outside = tmp_path / "src", tmp_path / "big"
    source.mkdir()
    outside.mkdir()
    for n in range(5):
        (outside / f"{n}.txt").write_text("x")
    (source / "big").symlink_to(outside)
    # Past the budget the identity matches no later walk: a check fails closed.
    assert source_identity(source) != source_identity(source)
    (outside / "3.txt").unlink()
    (outside / "4.txt").unlink()
    assert source_identity(source) == source_identity(source)
