"""The workspace: fresh creation, template copying and path confinement."""

from __future__ import annotations

import os
import stat
import sys
from pathlib import Path
from types import FrameType

import pytest

from harness.workspace.folder import ToolError, Workspace, WorkspaceError


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    return Workspace.create(tmp_path / "run1" / "workspace")


# -- creation -------------------------------------------------------------------------


def test_create_makes_fresh_directory_with_parents(tmp_path: Path) -> None:
    target = tmp_path / "runs" / "abc" / "workspace"
    ws = Workspace.create(target)
    assert ws.root == target.resolve()
    assert ws.root.is_dir()
    assert list(ws.root.iterdir()) == []


def test_create_accepts_empty_existing_directory(tmp_path: Path) -> None:
    (tmp_path / "w").mkdir()
    assert Workspace.create(tmp_path / "w").root == (tmp_path / "w").resolve()


def test_create_refuses_non_empty_target(tmp_path: Path) -> None:
    (tmp_path / "w").mkdir()
    (tmp_path / "w" / "old.txt").write_text("left over")
    with pytest.raises(WorkspaceError, match="not empty"):
        Workspace.create(tmp_path / "w")


def test_create_refuses_symlink_target(tmp_path: Path) -> None:
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real")
    with pytest.raises(WorkspaceError, match="symlink"):
        Workspace.create(tmp_path / "link")


def test_open_existing_workspace_requires_directory(tmp_path: Path) -> None:
    with pytest.raises(WorkspaceError):
        Workspace(tmp_path / "missing")
    (tmp_path / "f").write_text("x")
    with pytest.raises(WorkspaceError):
        Workspace(tmp_path / "f")


# -- template copying -----------------------------------------------------------------


def _template(tmp_path: Path) -> Path:
    template = tmp_path / "template"
    (template / "pkg" / "sub").mkdir(parents=True)
    (template / "README.md").write_text("hello\n")
    (template / "pkg" / "mod.py").write_text("X = 1\n")
    (template / "pkg" / "sub" / "data.txt").write_text("data\n")
    script = template / "run.sh"
    script.write_text("#!/bin/sh\necho hi\n")
    script.chmod(0o755)
    (template / "empty").mkdir()
    return template


def test_template_is_copied(tmp_path: Path) -> None:
    template = _template(tmp_path)
    ws = Workspace.create(tmp_path / "w", template)
    assert (ws.root / "README.md").read_text() == "hello\n"
    assert (ws.root / "pkg" / "sub" / "data.txt").read_text() == "data\n"
    assert (ws.root / "empty").is_dir()
    assert os.stat(ws.root / "run.sh").st_mode & stat.S_IXUSR
    # A copy, not a link to the template: editing the workspace leaves the template alone.
    (ws.root / "README.md").write_text("changed")
    assert (template / "README.md").read_text() == "hello\n"


def test_template_internal_symlinks_are_repointed_into_the_copy(tmp_path: Path) -> None:
    template = _template(tmp_path)
    (template / "rel_link").symlink_to("pkg/mod.py")
    (template / "abs_link").symlink_to(template / "pkg" / "sub")  # absolute, but inside
    ws = Workspace.create(tmp_path / "w", template)
    for name in ("rel_link", "abs_link"):
        link = ws.root / name
        assert link.is_symlink()
        assert not os.path.isabs(os.readlink(link))
        assert link.resolve().is_relative_to(ws.root)
    assert (ws.root / "abs_link" / "data.txt").read_text() == "data\n"


def test_template_symlink_pointing_outside_is_refused(tmp_path: Path) -> None:
    template = _template(tmp_path)
    (template / "pkg" / "escape").symlink_to("/etc")
    target = tmp_path / "w"
    with pytest.raises(WorkspaceError, match="points outside the template"):
        Workspace.create(target, template)
    assert not target.exists()  # checked before anything was created


@pytest.mark.parametrize("make", ["dangling", "loop"])
def test_template_dangling_or_looping_symlink_is_refused(tmp_path: Path, make: str) -> None:
    template = _template(tmp_path)
    if make == "dangling":
        (template / "bad").symlink_to("nothing-here")
    else:
        (template / "bad").symlink_to("bad")
    with pytest.raises(WorkspaceError, match="dangles or loops"):
        Workspace.create(tmp_path / "w", template)


def test_template_special_file_is_refused(tmp_path: Path) -> None:
    template = _template(tmp_path)
    os.mkfifo(template / "pipe")
    with pytest.raises(WorkspaceError, match="not a regular file"):
        Workspace.create(tmp_path / "w", template)


def test_missing_template_is_refused(tmp_path: Path) -> None:
    with pytest.raises(WorkspaceError, match="does not exist"):
        Workspace.create(tmp_path / "w", tmp_path / "nope")


# -- resolve ----------------------------------------------------------------------------


@pytest.mark.parametrize("rel", ["", ".", "./", "a/..x", "dir/./file", "a//b"])
def test_resolve_accepts_plain_relative_paths(ws: Workspace, rel: str) -> None:
    assert ws.resolve(rel).is_relative_to(ws.root)


def test_resolve_root_and_nested(ws: Workspace) -> None:
    assert ws.resolve(".") == ws.root
    assert ws.resolve("a/b.txt") == ws.root / "a" / "b.txt"


@pytest.mark.parametrize("rel", ["..", "../x", "a/../../x", "a/../b", "a/.."])
def test_resolve_refuses_dotdot(ws: Workspace, rel: str) -> None:
    with pytest.raises(ToolError) as info:
        ws.resolve(rel)
    assert info.value.kind == "path_escape"
    assert "'..'" in info.value.message


@pytest.mark.parametrize("rel", ["/etc/passwd", "/", "//etc"])
def test_resolve_refuses_absolute_paths(ws: Workspace, rel: str) -> None:
    with pytest.raises(ToolError, match="absolute path") as info:
        ws.resolve(rel)
    assert info.value.kind == "path_escape"


def test_resolve_refuses_nul_and_lone_surrogates(ws: Workspace) -> None:
    with pytest.raises(ToolError, match="NUL"):
        ws.resolve("a\x00b")
    with pytest.raises(ToolError, match="Unicode"):
        ws.resolve("a\ud800")


def test_resolve_refuses_overlong_path(ws: Workspace) -> None:
    with pytest.raises(ToolError, match="longer than"):
        ws.resolve("a" * 5000)


def test_resolve_refuses_symlink_leading_outside(ws: Workspace, tmp_path: Path) -> None:
    outside = tmp_path / "secret"
    outside.mkdir()
    (outside / "key.txt").write_text("s3cret")
    (ws.root / "innocent").symlink_to(outside)
    for rel in ("innocent", "innocent/key.txt", "innocent/new.txt"):
        with pytest.raises(ToolError, match="outside the workspace") as info:
            ws.resolve(rel)
        assert info.value.kind == "path_escape"


def test_resolve_refuses_dangling_symlink_outside(ws: Workspace) -> None:
    (ws.root / "d").symlink_to("/nonexistent/place")
    with pytest.raises(ToolError, match="outside the workspace"):
        ws.resolve("d")


def test_resolve_follows_internal_symlinks(ws: Workspace) -> None:
    (ws.root / "real").mkdir()
    (ws.root / "alias").symlink_to("real")
    assert ws.resolve("alias/f.txt") == ws.root / "real" / "f.txt"


def test_resolve_reports_symlink_loop(ws: Workspace) -> None:
    (ws.root / "loop").symlink_to("loop")
    with pytest.raises(ToolError):
        ws.resolve("loop/x")


def test_workspace_root_behind_symlink_still_confines(tmp_path: Path) -> None:
    (tmp_path / "real").mkdir()
    (tmp_path / "alias").symlink_to(tmp_path / "real")
    ws = Workspace(tmp_path / "alias")
    assert ws.root == (tmp_path / "real").resolve()
    assert ws.resolve("x") == ws.root / "x"


# -- resolve_for_write -------------------------------------------------------------------


def test_resolve_for_write_refuses_any_symlink_as_last_component(ws: Workspace) -> None:
    (ws.root / "target.txt").write_text("x")
    (ws.root / "link.txt").symlink_to("target.txt")  # inside, but still refused
    with pytest.raises(ToolError, match="symlink"):
        ws.resolve_for_write("link.txt")


def test_resolve_for_write_refuses_root_and_directories(ws: Workspace) -> None:
    (ws.root / "d").mkdir()
    with pytest.raises(ToolError, match="root"):
        ws.resolve_for_write(".")
    with pytest.raises(ToolError, match="directory"):
        ws.resolve_for_write("d")


def test_resolve_for_write_refuses_parent_outside(ws: Workspace, tmp_path: Path) -> None:
    (tmp_path / "out").mkdir()
    (ws.root / "door").symlink_to(tmp_path / "out")
    with pytest.raises(ToolError, match="outside the workspace"):
        ws.resolve_for_write("door/new.txt")


# -- walk -------------------------------------------------------------------------------


def test_walk_is_depth_first_sorted_and_does_not_follow_links(ws: Workspace) -> None:
    (ws.root / "b").mkdir()
    (ws.root / "b" / "z.txt").write_text("")
    (ws.root / "b" / "a.txt").write_text("")
    (ws.root / "a.txt").write_text("")
    (ws.root / "etc").symlink_to("/etc")
    entries = [(e.rel, e.kind) for e in ws.walk(ws.root)]
    assert entries == [
        ("a.txt", "file"),
        ("b", "dir"),
        ("b/a.txt", "file"),
        ("b/z.txt", "file"),
        ("etc", "link"),
    ]


def test_walk_handles_nesting_deeper_than_recursion_limit(ws: Workspace) -> None:
    # An agent can nest folders deeper than Python's recursion limit. Rather than build a
    # 1000-level tree (which breaks Python 3.11's recursive shutil.rmtree, used by pytest's
    # tmp cleanup), lower the limit just above the current stack depth.
    current = ws.root
    for _ in range(150):
        current = current / "d"
        current.mkdir()
    depth = 0
    frame: FrameType | None = sys._getframe()
    while frame is not None:
        depth, frame = depth + 1, frame.f_back
    old_limit = sys.getrecursionlimit()
    sys.setrecursionlimit(depth + 50)
    try:
        count = sum(1 for _ in ws.walk(ws.root))
    finally:
        sys.setrecursionlimit(old_limit)
    assert count == 150
