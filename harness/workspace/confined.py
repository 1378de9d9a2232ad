"""Paths inside the workspace, walked so that nothing in it can lead a file tool outside
(see `harness.workspace.folder` for the guarantees and why).

Everything here works on directory descriptors: `locate` walks a path component by
component from the root's descriptor (`openat` with `O_NOFOLLOW | O_DIRECTORY`), follows
symlinks itself and only while they stay inside; `walk_tree` lists a tree from a
directory descriptor, entering subdirectories the same way; `LinkIndex` counts, per inode,
the names a multiply-linked file has inside the workspace.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from types import TracebackType
from typing import Literal, NamedTuple, Self

from harness.workspace.sandbox import SANDBOX_WORKDIR

ToolErrorKind = Literal[
    "path_escape",  # the path leaves the workspace (absolute, `..`, symlink): record it
    "not_found",
    "invalid",  # the call makes no sense (bad regex, directory given for a file, ...)
    "too_large",
    "read_only",  # a write tool offered in read-only (grader) mode
    "bad_arguments",
    "unknown_tool",
    "no_time",  # run_command called with no time left to run it
    "no_sandbox",  # run_command refused: no sandbox can be made here (fail closed)
    "timeout",  # grep's pattern ran past its deadline (catastrophic backtracking)
    "os_error",
]

#: Longest path string a tool accepts; longer ones are refused before touching the disk.
#: Far above any real project's relative paths, and far below PATH_MAX once the
#: workspace's own location is put in front (other programs still open them by name).
MAX_PATH_CHARS = 1024
#: Most components (folders and the name) a path given to a tool may have.
MAX_PATH_COMPONENTS = 64
#: Longest single name, in UTF-8 bytes (NAME_MAX on Linux and macOS).
MAX_NAME_BYTES = 255
#: Most symlinks followed while resolving one path (Linux's own limit is 40).
MAX_SYMLINK_HOPS = 40
#: Directories deeper than this below a walk's start are listed but not entered.
MAX_WALK_DEPTH = 256
#: Most entries the hard-link index visits; beyond, a multiply-linked file is refused.
MAX_LINK_INDEX_ENTRIES = 50_000

#: Longest excerpt of a user-supplied path echoed back in an error message.
_SHOWN_PATH_CHARS = 200

DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC

EntryKind = Literal["file", "dir", "link", "other"]


class ToolError(Exception):
    """A tool call the workspace refuses or cannot carry out.

    The message is written for the agent: dispatch returns it as the tool result, so it
    must say what was wrong and never contain a traceback or a host path.
    """

    def __init__(self, message: str, kind: ToolErrorKind = "invalid") -> None:
        super().__init__(message)
        self.message = message
        self.kind: ToolErrorKind = kind


def show_path(rel: str) -> str:
    """A path as quoted in messages: repr (so control characters stay visible), clipped."""
    if len(rel) > _SHOWN_PATH_CHARS:
        rel = rel[:_SHOWN_PATH_CHARS] + "…"
    return repr(rel)


def escape_error(rel: str) -> ToolError:
    return ToolError(
        f"{show_path(rel)} resolves outside the workspace (through a symlink); refused",
        "path_escape",
    )


def checked_parts(rel: object) -> tuple[str, ...]:
    """The components of a tool's path argument, or a `ToolError` saying why it is refused.
    `""` and `"."` name the root (no components)."""
    if not isinstance(rel, str):
        raise ToolError("path must be a string", "invalid")
    if "\x00" in rel:
        raise ToolError("path contains a NUL byte", "invalid")
    if len(rel) > MAX_PATH_CHARS:
        raise ToolError(f"path is longer than {MAX_PATH_CHARS} characters", "invalid")
    try:
        rel.encode("utf-8")
    except UnicodeEncodeError as exc:  # a lone surrogate: the OS calls would raise
        raise ToolError("path is not valid Unicode text", "invalid") from exc
    if rel.startswith("/") or os.path.isabs(rel):
        raise ToolError(
            f"absolute path {show_path(rel)} refused; use a path relative to the workspace root",
            "path_escape",
        )
    parts = PurePosixPath(rel).parts  # also drops "." components and repeated "/"
    if ".." in parts:
        # Refused outright, even when it would stay inside: simpler to reason about
        # and it cannot combine with a symlink to step out.
        raise ToolError(f"'..' is not allowed in paths ({show_path(rel)})", "path_escape")
    if len(parts) > MAX_PATH_COMPONENTS:
        raise ToolError(
            f"path has {len(parts)} components; at most {MAX_PATH_COMPONENTS} are allowed",
            "invalid",
        )
    for part in parts:
        if len(part.encode("utf-8")) > MAX_NAME_BYTES:
            raise ToolError(
                f"a name in the path is longer than {MAX_NAME_BYTES} bytes ({show_path(part)})",
                "invalid",
            )
    return parts


# -- locating one path ------------------------------------------------------------------


@dataclass
class Located:
    """Where a path leads: the descriptor of the directory that holds it and its name in
    that directory (`name is None`: the path is that directory itself). `parts` are the
    root-relative components after internal symlinks; `rest` the components below the
    first missing directory, when the walk was asked to keep them (`missing="keep"`).

    Owns `dir_fd`: use it as a context manager."""

    dir_fd: int
    name: str | None
    parts: tuple[str, ...]
    rest: tuple[str, ...] = ()
    _closed: bool = field(default=False, repr=False)

    @property
    def rel(self) -> str:
        """POSIX root-relative path; `.` for the root."""
        return "/".join((*self.parts, *self.rest)) or "."

    def lstat(self) -> os.stat_result | None:
        """The entry's own status (a symlink is not followed), None when it does not exist."""
        try:
            if self.name is None:
                return os.fstat(self.dir_fd)
            return os.stat(self.name, dir_fd=self.dir_fd, follow_symlinks=False)
        except FileNotFoundError:
            return None

    def open(self, flags: int, mode: int = 0o644) -> int:
        """Open the entry itself, never through a symlink."""
        if self.name is None:
            return os.dup(self.dir_fd)
        return os.open(self.name, flags | os.O_NOFOLLOW | os.O_CLOEXEC, mode, dir_fd=self.dir_fd)

    def open_dir(self) -> int:
        return self.open(DIR_FLAGS)

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            os.close(self.dir_fd)

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


Missing = Literal["error", "create", "keep"]


def inherit_owner(parent_fd: int, *, name: str | None = None, fd: int | None = None) -> None:
    """Give a file or folder the harness just created the owner of its parent folder.

    A root harness hands the workspace to an unprivileged sandbox user
    (`harness.workspace.sandbox_user`); what the file tools then create must stay the
    command's to change, without a walk of the whole tree before every command."""
    if os.geteuid() != 0:
        return
    owner = os.fstat(parent_fd)
    if owner.st_uid == 0 and owner.st_gid == 0:
        return
    if fd is not None:
        os.fchown(fd, owner.st_uid, owner.st_gid)
    elif name is not None:
        os.chown(name, owner.st_uid, owner.st_gid, dir_fd=parent_fd, follow_symlinks=False)


def locate(
    root: str,
    parts: tuple[str, ...],
    shown: str,
    *,
    follow_last: bool = True,
    missing: Missing = "error",
) -> Located:
    """Walk `parts` from the workspace at `root` without letting the kernel follow any
    symlink (see the module doc).

    `follow_last=False` stops at a symlink in the last place (a writer refuses it);
    `missing`: a missing directory on the way is an error (`not_found`), is created
    (`create`, for writes), or ends the walk with the remaining components kept as
    written (`keep`, for `Workspace.resolve`). A missing *last* component is never an
    error here: the caller decides. `shown` is the path as the caller gave it, for
    messages.
    """
    fds = [os.open(root, DIR_FLAGS)]
    canon: list[str] = []
    pending = list(reversed(parts))
    hops = 0
    keep_fd = -1
    try:
        while pending:
            name = pending.pop()
            if name in ("", "."):
                continue
            if name == "..":  # only from a symlink's target; a user's ".." never gets here
                if not canon:
                    raise escape_error(shown)
                os.close(fds.pop())
                canon.pop()
                continue
            parent = fds[-1]
            last = not pending
            try:
                st = os.stat(name, dir_fd=parent, follow_symlinks=False)
            except FileNotFoundError:
                if last:
                    keep_fd = parent
                    return Located(parent, name, (*canon, name))
                if missing == "keep":
                    keep_fd = parent
                    return Located(parent, None, tuple(canon), _rest(name, pending, shown))
                if missing == "error":
                    raise ToolError(f"{show_path(shown)} does not exist", "not_found") from None
                with contextlib.suppress(FileExistsError):
                    os.mkdir(name, 0o755, dir_fd=parent)
                    inherit_owner(parent, name=name)
                st = os.stat(name, dir_fd=parent, follow_symlinks=False)
            except OSError as exc:
                if exc.errno == errno.ENAMETOOLONG:
                    raise ToolError(f"{show_path(shown)}: a name is too long", "invalid") from None
                raise
            if stat.S_ISLNK(st.st_mode):
                if last and not follow_last:
                    keep_fd = parent
                    return Located(parent, name, (*canon, name))
                hops += 1
                if hops > MAX_SYMLINK_HOPS:
                    raise ToolError(f"{show_path(shown)} is part of a symlink loop", "invalid")
                target = os.readlink(name, dir_fd=parent)
                restart, target_parts = _link_target(root, target, shown)
                if restart:
                    while len(fds) > 1:
                        os.close(fds.pop())
                    canon.clear()
                pending.extend(reversed(target_parts))
                if len(pending) + len(canon) > MAX_PATH_COMPONENTS * 4:
                    raise ToolError(f"{show_path(shown)}: symlinks make it too deep", "invalid")
                continue
            if last:
                keep_fd = parent
                return Located(parent, name, (*canon, name))
            if not stat.S_ISDIR(st.st_mode):
                raise NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR))
            try:
                fds.append(os.open(name, DIR_FLAGS, dir_fd=parent))
            except OSError as exc:
                if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                    # It was a directory a moment ago: something is swapping it.
                    raise ToolError(
                        f"{show_path(shown)} changed while it was being opened; refused",
                        "invalid",
                    ) from None
                raise
            canon.append(name)
        keep_fd = fds[-1]
        return Located(fds[-1], None, tuple(canon))
    finally:
        for fd in fds:
            if fd != keep_fd:
                os.close(fd)


def _rest(name: str, pending: list[str], shown: str) -> tuple[str, ...]:
    rest = [name]
    for part in reversed(pending):
        if part == "..":
            if not rest:
                raise escape_error(shown)
            rest.pop()
        elif part not in ("", "."):
            rest.append(part)
    return tuple(rest)


def _link_target(root: str, target: str, shown: str) -> tuple[bool, tuple[str, ...]]:
    """`(from_root, parts)` for a symlink's target: relative targets continue from the
    link's folder; absolute ones only when they name the workspace (its host path, or
    `/workspace`, where commands see it), then from the root; anything else escapes."""
    path = PurePosixPath(target)
    if not path.is_absolute():
        return False, path.parts
    for base in (PurePosixPath(root), PurePosixPath(SANDBOX_WORKDIR)):
        if path == base or path.is_relative_to(base):
            return True, path.relative_to(base).parts
    raise escape_error(shown)


# -- walking a tree ---------------------------------------------------------------------


class TreeEntry(NamedTuple):
    """One entry met by `walk_tree`. `dir_fd` (the folder holding it) is valid only until
    the walk moves on; `parts` are root-relative."""

    parts: tuple[str, ...]
    name: str
    dir_fd: int
    kind: EntryKind
    depth: int


def walk_tree(dir_fd: int, parts: tuple[str, ...]) -> Iterator[TreeEntry]:
    """Every entry below the open directory `dir_fd` (at root-relative `parts`),
    depth-first with siblings sorted by name, never following a symlink (a symlinked
    folder is reported, not entered). Iterative: an agent can nest folders deeper than
    Python's recursion limit. Folders deeper than `MAX_WALK_DEPTH` are reported and not
    entered; unreadable folders are skipped rather than failing the whole walk. Does not
    close `dir_fd`."""
    frames: list[tuple[int, tuple[str, ...], list[tuple[str, EntryKind]]]] = []
    try:
        frames.append((dir_fd, parts, _children(dir_fd)))
        while frames:
            fd, where, children = frames[-1]
            if not children:
                frames.pop()
                if fd != dir_fd:
                    os.close(fd)
                continue
            name, kind = children.pop()
            depth = len(frames)
            yield TreeEntry((*where, name), name, fd, kind, depth)
            if kind == "dir" and depth < MAX_WALK_DEPTH:
                try:
                    child = os.open(name, DIR_FLAGS, dir_fd=fd)
                except OSError:
                    continue  # gone, swapped for a symlink, unreadable: not entered
                frames.append((child, (*where, name), _children(child)))
    finally:
        for fd, _, _ in frames:
            if fd != dir_fd:
                os.close(fd)


def _children(fd: int) -> list[tuple[str, EntryKind]]:
    """The entries of the open directory `fd`, sorted by name *descending* (popped)."""
    try:
        with os.scandir(fd) as it:
            found = [(entry.name, _entry_kind(entry)) for entry in it]
    except OSError:
        return []
    found.sort(reverse=True)
    return found


def _entry_kind(entry: os.DirEntry[str]) -> EntryKind:
    if entry.is_symlink():
        return "link"
    if entry.is_dir(follow_symlinks=False):
        return "dir"
    if entry.is_file(follow_symlinks=False):
        return "file"
    return "other"


# -- hard links -------------------------------------------------------------------------


class LinkIndex:
    """How many names each multiply-linked file has inside the workspace; made on first
    use (one walk, at most `MAX_LINK_INDEX_ENTRIES` entries) and kept for one tool call."""

    def __init__(self, root: str) -> None:
        self._root = root
        self._counts: dict[tuple[int, int], int] | None = None
        self._complete = False

    def all_inside(self, st: os.stat_result) -> bool:
        """True when every link of the file `st` describes is a name inside the workspace."""
        if st.st_nlink <= 1:
            return True
        if self._counts is None:
            self._build()
        assert self._counts is not None
        if not self._complete:
            return False
        return self._counts.get((st.st_dev, st.st_ino), 0) >= st.st_nlink

    def _build(self) -> None:
        counts: dict[tuple[int, int], int] = {}
        seen = 0
        complete = True
        root_fd = os.open(self._root, DIR_FLAGS)
        try:
            for entry in walk_tree(root_fd, ()):
                seen += 1
                if seen > MAX_LINK_INDEX_ENTRIES or entry.depth >= MAX_WALK_DEPTH:
                    complete = False
                    break
                if entry.kind != "file":
                    continue
                try:
                    st = os.stat(entry.name, dir_fd=entry.dir_fd, follow_symlinks=False)
                except OSError:
                    continue
                if st.st_nlink > 1 and stat.S_ISREG(st.st_mode):
                    key = (st.st_dev, st.st_ino)
                    counts[key] = counts.get(key, 0) + 1
        finally:
            os.close(root_fd)
        self._counts, self._complete = counts, complete
