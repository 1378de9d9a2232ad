"""The run's workspace: a fresh directory that every agent (and grader) file tool is
confined to.

Confinement here is about the *file tools* (`read_file`, `write_file`, `list_files`,
`grep`): every path they receive goes through `Workspace.resolve` (or
`resolve_for_write`), which refuses absolute paths, `..`, NUL bytes and anything whose
real path (after following every symlink, including ones the agent made with
`run_command`) lies outside the workspace. It is not an operating-system sandbox:
`run_command` runs with the harness user's rights (see `harness.workspace.commands`), so real
isolation from the host needs a container or VM around the whole harness.

Residual race: a process the agent started in the background and that escaped its
process group could swap a path for a symlink between the check and the open. The final
path component is opened with `O_NOFOLLOW` to close the common case; intermediate
directories are not re-checked.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path, PurePosixPath
from typing import Literal, NamedTuple

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
    "os_error",
]

#: Longest path string a tool accepts; longer ones are refused before touching the disk.
MAX_PATH_CHARS = 4096

#: Longest excerpt of a user-supplied path echoed back in an error message.
_SHOWN_PATH_CHARS = 200

_TEMPLATE_DIR_MODE = 0o755


class ToolError(Exception):
    """A tool call the workspace refuses or cannot carry out.

    The message is written for the agent: dispatch returns it as the tool result, so it
    must say what was wrong and never contain a traceback or a host path.
    """

    def __init__(self, message: str, kind: ToolErrorKind = "invalid") -> None:
        super().__init__(message)
        self.message = message
        self.kind: ToolErrorKind = kind


class WorkspaceError(ValueError):
    """The workspace cannot be set up (bad target, bad template). A setup error for the
    person running the harness, not a tool result."""


EntryKind = Literal["file", "dir", "link", "other"]


class WalkEntry(NamedTuple):
    """One entry met while walking the workspace; `rel` is POSIX-style, root-relative."""

    rel: str
    path: Path
    kind: EntryKind


def show_path(rel: str) -> str:
    """A path as quoted in messages: repr (so control characters stay visible), clipped."""
    if len(rel) > _SHOWN_PATH_CHARS:
        rel = rel[:_SHOWN_PATH_CHARS] + "…"
    return repr(rel)


class Workspace:
    """A directory all file tools are confined to. `root` is its real (resolved) path."""

    def __init__(self, root: Path) -> None:
        try:
            real = root.resolve(strict=True)
        except (OSError, RuntimeError) as exc:
            raise WorkspaceError(f"workspace {root} does not exist or cannot be resolved") from exc
        if not real.is_dir():
            raise WorkspaceError(f"workspace {root} is not a directory")
        self._root = real

    @property
    def root(self) -> Path:
        return self._root

    @classmethod
    def create(cls, target: Path, template: Path | None = None) -> Workspace:
        """Make `target` a fresh workspace, optionally filled with a copy of `template`.

        `target` (e.g. `<runs>/<run_id>/workspace`) must not exist or be an empty
        directory, so a run never inherits another run's files. Template symlinks are
        copied as relative links only when they point to something inside the template;
        a symlink that points outside it, dangles, or loops is refused (fail closed) and
        so are special files (FIFOs, sockets, devices). The template is checked in full
        before anything is copied, so a refused template leaves no partial workspace.
        """
        try:
            plan = _plan_template_copy(template) if template is not None else []
        except OSError as exc:  # e.g. an unreadable folder inside the template
            raise WorkspaceError(f"cannot read template {template}: {exc}") from exc
        if target.is_symlink():
            raise WorkspaceError(f"workspace target {target} is a symlink; refused")
        if target.exists():
            if not target.is_dir() or any(target.iterdir()):
                raise WorkspaceError(f"workspace target {target} exists and is not empty")
        else:
            target.mkdir(parents=True)
        workspace = cls(target)
        if template is not None:
            try:
                _apply_template_copy(plan, template.resolve(strict=True), workspace.root)
            except OSError as exc:
                raise WorkspaceError(f"cannot copy template {template}: {exc}") from exc
        return workspace

    def resolve(self, rel: str) -> Path:
        """The real path of `rel` inside the workspace, or a `ToolError` saying why not.

        `""` and `"."` name the root. The path need not exist (a missing tail is kept as
        written), but every existing component is resolved through symlinks and the
        result must stay inside the workspace.
        """
        parts = self._checked_parts(rel)
        return self._confined(self._root.joinpath(*parts), rel)

    def resolve_for_write(self, rel: str) -> Path:
        """Where `write_file` may write `rel`: the parent is resolved and confined like
        `resolve`, and the last component must not be a symlink (even one that points
        inside the workspace), a directory or a special file."""
        parts = self._checked_parts(rel)
        if not parts:
            raise ToolError("the path names the workspace root, not a file", "invalid")
        parent = self._confined(self._root.joinpath(*parts[:-1]), rel)
        target = parent / parts[-1]
        if target.is_symlink():
            raise ToolError(f"{show_path(rel)} is a symlink; refusing to write through it")
        if target.is_dir():
            raise ToolError(f"{show_path(rel)} is a directory")
        if target.exists() and not target.is_file():
            raise ToolError(f"{show_path(rel)} is not a regular file")
        return target

    def relative(self, path: Path) -> str:
        """`path` (inside the workspace) as a POSIX root-relative string; `.` for root."""
        rel = path.relative_to(self._root).as_posix()
        return rel or "."

    def walk(self, start: Path) -> Iterator[WalkEntry]:
        """Every entry below directory `start`, depth-first with siblings sorted by name,
        never following symlinks (a symlinked directory is reported, not entered).

        Iterative on purpose: an agent can nest directories deeper than Python's
        recursion limit. Unreadable directories are skipped rather than failing a whole
        listing.
        """
        stack = list(reversed(self._sorted_children(start)))
        while stack:
            entry = stack.pop()
            yield entry
            if entry.kind == "dir":
                stack.extend(reversed(self._sorted_children(entry.path)))

    # -- internals ---------------------------------------------------------------

    def _checked_parts(self, rel: str) -> tuple[str, ...]:
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
                f"absolute path {show_path(rel)} refused; use a path relative to the "
                "workspace root",
                "path_escape",
            )
        parts = PurePosixPath(rel).parts  # also drops "." components and repeated "/"
        if ".." in parts:
            # Refused outright, even when it would stay inside: simpler to reason about
            # and it cannot combine with a symlink to step out.
            raise ToolError(f"'..' is not allowed in paths ({show_path(rel)})", "path_escape")
        return parts

    def _confined(self, candidate: Path, rel: str) -> Path:
        try:
            real = candidate.resolve()
        except RuntimeError as exc:  # Python 3.11 reports symlink loops this way
            raise ToolError(f"{show_path(rel)} is part of a symlink loop", "invalid") from exc
        except OSError as exc:
            reason = exc.strerror or "cannot be resolved"
            raise ToolError(f"{show_path(rel)}: {reason}", "invalid") from exc
        if real != self._root and not real.is_relative_to(self._root):
            raise ToolError(
                f"{show_path(rel)} resolves outside the workspace (through a symlink); refused",
                "path_escape",
            )
        return real

    def _sorted_children(self, directory: Path) -> list[WalkEntry]:
        try:
            with os.scandir(directory) as it:
                found = [(entry.name, _entry_kind(entry)) for entry in it]
        except OSError:
            return []
        found.sort()
        return [
            WalkEntry(self.relative(directory / name), directory / name, kind)
            for name, kind in found
        ]


def _entry_kind(entry: os.DirEntry[str]) -> EntryKind:
    if entry.is_symlink():
        return "link"
    if entry.is_dir(follow_symlinks=False):
        return "dir"
    if entry.is_file(follow_symlinks=False):
        return "file"
    return "other"


# -- template copying ---------------------------------------------------------------

_TemplateStep = tuple[Literal["dir", "file", "link"], PurePosixPath, PurePosixPath | None]


def _plan_template_copy(template: Path) -> list[_TemplateStep]:
    """Check the whole template and list what to copy; raise `WorkspaceError` on the
    first entry that cannot be copied safely."""
    try:
        root = template.resolve(strict=True)
    except (OSError, RuntimeError) as exc:
        raise WorkspaceError(f"template folder {template} does not exist") from exc
    if not root.is_dir():
        raise WorkspaceError(f"template {template} is not a directory")
    plan: list[_TemplateStep] = []
    pending = [root]
    while pending:
        directory = pending.pop()
        with os.scandir(directory) as it:
            entries = sorted(it, key=lambda e: e.name)
        for entry in entries:
            path = Path(entry.path)
            rel = PurePosixPath(path.relative_to(root).as_posix())
            if entry.is_symlink():
                plan.append(("link", rel, _internal_link_target(path, root, rel, template)))
            elif entry.is_dir(follow_symlinks=False):
                plan.append(("dir", rel, None))
                pending.append(path)
            elif entry.is_file(follow_symlinks=False):
                plan.append(("file", rel, None))
            else:
                raise WorkspaceError(
                    f"template {template} holds {rel}, which is not a regular file, "
                    "directory or symlink; refused"
                )
    return plan


def _internal_link_target(
    link: Path, root: Path, rel: PurePosixPath, template: Path
) -> PurePosixPath:
    try:
        target = link.resolve(strict=True)
    except (OSError, RuntimeError) as exc:
        raise WorkspaceError(
            f"template {template}: symlink {rel} dangles or loops; refused"
        ) from exc
    if target != root and not target.is_relative_to(root):
        raise WorkspaceError(
            f"template {template}: symlink {rel} points outside the template "
            f"({os.readlink(link)}); refused"
        )
    return PurePosixPath(target.relative_to(root).as_posix())


def _apply_template_copy(plan: list[_TemplateStep], src_root: Path, dst_root: Path) -> None:
    # Directories first, so files and links always have their parent.
    for kind, rel, _ in plan:
        if kind == "dir":
            (dst_root / rel).mkdir(mode=_TEMPLATE_DIR_MODE, parents=True, exist_ok=True)
    for kind, rel, target in plan:
        destination = dst_root / rel
        if kind == "file":
            shutil.copy2(src_root / rel, destination, follow_symlinks=False)
        elif kind == "link" and target is not None:
            # Re-pointed relative to the copy: an absolute link into the template would
            # otherwise keep pointing at the template, outside the new workspace.
            relative_target = os.path.relpath(dst_root / target, destination.parent)
            os.symlink(relative_target, destination)
