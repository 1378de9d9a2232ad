"""Walks of a tree a sandboxed command wrote, whatever its depth.

A command can nest folders as deep as it likes (`mkdir d; cd d`, three thousand times,
takes a second). Python 3.11's `os.fwalk` and `shutil.rmtree` recurse once per level: at
about a thousand levels they raise `RecursionError`, which no caller expects, and the
harness ended with a traceback after handing the workspace back to itself (attack8).
They also hold a descriptor per level. These walks hold two descriptors at most, however
deep the tree: they go down by `openat(name, O_NOFOLLOW)` and back up by `openat("..")`,
checking that the parent reached is the one they came from.

They never follow a symbolic link and run when no process of the tree is alive (a
command's whole process tree ends with it): a link an agent left is an entry, never a
way out.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Iterator
from contextlib import suppress
from pathlib import Path

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


class WalkError(OSError):
    """The tree changed under the walk (a folder's parent is no longer the one it was)."""


def _identity(fd: int) -> tuple[int, int]:
    info = os.fstat(fd)
    return info.st_dev, info.st_ino


def _entries(fd: int) -> tuple[list[str], list[str]]:
    """The names `fd` holds (sorted), and those that are real folders, not links to one
    (last first, as they are popped). The types come from the directory itself (one
    `getdents`, no `stat` per entry: a walk of 100 000 files costs what `os.fwalk`'s did)."""
    names: list[str] = []
    subfolders: list[str] = []
    try:
        with os.scandir(fd) as found:
            for entry in found:
                names.append(entry.name)
                with suppress(OSError):
                    if entry.is_dir(follow_symlinks=False):
                        subfolders.append(entry.name)
    except OSError:
        return [], []
    names.sort()
    subfolders.sort(reverse=True)
    return names, subfolders


def folders(
    top_fd: int, leaving: Callable[[int, int, str], None] | None = None
) -> Iterator[tuple[int, list[str]]]:
    """Every folder of the tree whose top folder `top_fd` is open, top-down, as (a
    descriptor of it, the names it holds). The descriptor is valid until the next item.
    A sub-folder is entered after the caller has seen its parent's names, so the caller
    may remove entries before. `leaving(parent_fd, child_fd,
    name)`: called as the walk leaves each sub-folder, its whole content seen (a
    bottom-up hook: removal). `top_fd` itself is never closed."""
    fd = os.dup(top_fd)
    try:
        names, subfolders = _entries(fd)
        yield fd, names
        # One frame per level of the current path: the folder's identity and the names
        # of its sub-folders still to enter (one the caller removed is not entered: its
        # open fails). Strings, not descriptors.
        frames: list[tuple[tuple[int, int], list[str]]] = [(_identity(fd), subfolders)]
        entered: list[str] = []
        while frames:
            pending = frames[-1][1]
            if pending:
                name = pending.pop()
                try:
                    child = os.open(name, _DIR_FLAGS, dir_fd=fd)
                except OSError:
                    continue  # gone, or swapped for a link: not entered
                os.close(fd)
                fd = child
                entered.append(name)
                names, subfolders = _entries(fd)
                yield fd, names
                frames.append((_identity(fd), subfolders))
                continue
            frames.pop()
            if not frames:
                break
            parent = os.open("..", _DIR_FLAGS, dir_fd=fd)
            if _identity(parent) != frames[-1][0]:
                os.close(parent)
                raise WalkError("a folder moved while its tree was walked")
            name = entered.pop()
            try:
                if leaving is not None:
                    leaving(parent, fd, name)
            finally:
                os.close(fd)
                fd = parent
    finally:
        os.close(fd)


def remove_tree(top: Path) -> None:
    """Remove `top` and all it holds, as `shutil.rmtree(top, ignore_errors=True)` does
    (what cannot be removed stays), at any depth. A link is removed, never followed; a
    `top` that is a link or not a folder is unlinked."""
    try:
        top_fd = os.open(top, _DIR_FLAGS)
    except OSError:
        with suppress(OSError):
            if not top.is_dir() or top.is_symlink():
                top.unlink()
        return

    def rmdir(parent: int, _child: int, name: str) -> None:
        with suppress(OSError):
            os.rmdir(name, dir_fd=parent)

    try:
        for fd, names in folders(top_fd, leaving=rmdir):
            for name in names:
                with suppress(OSError):
                    if not stat.S_ISDIR(os.stat(name, dir_fd=fd, follow_symlinks=False).st_mode):
                        os.unlink(name, dir_fd=fd)
    except OSError:
        pass
    finally:
        os.close(top_fd)
    with suppress(OSError):
        os.rmdir(top)
