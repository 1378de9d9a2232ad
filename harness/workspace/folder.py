"""The run's workspace: a fresh directory that every agent (and grader) file tool is
confined to.

Confinement here is about the *file tools* (`read_file`, `write_file`, `list_files`,
`grep`); commands are confined by the sandbox (`harness.workspace.sandbox`). The file
tools run in the harness process, with its rights, so they must not be tricked by what
the agent left in the workspace (symlinks, hard links, deep trees) nor by a path being
swapped while they work:

* **No path is ever followed by the kernel.** `Workspace.locate` walks a path one
  component at a time from a descriptor of the workspace's root, opening each directory
  with `O_NOFOLLOW | O_DIRECTORY` relative to its parent's descriptor (`openat`). A
  symlink met on the way is read (`readlinkat`) and its target walked the same way, from
  the root for an absolute target inside the workspace, refused when it leads outside.
  Once a directory is open, swapping its name for a symlink changes nothing for the
  walk: it holds the directory itself. The last component is opened `O_NOFOLLOW`.
* **Writes never go through an existing file.** `write_file` creates a new file
  (`O_CREAT | O_EXCL | O_NOFOLLOW`) in the parent's descriptor and renames it over the
  target (`renameat`), which replaces a name and never follows one: a symlink planted
  or swapped in at the target is replaced, not written through.
* **Hard links.** A hard link to a file outside is indistinguishable from an ordinary
  file by its path, and an unconfined agent (`--sandbox none`) can make one (inside the
  sandbox, `link(2)` across the workspace mount fails). A regular file with more than one
  link is read only when every one of its links is found inside the workspace
  (`LinkIndex`: one walk of the workspace counting names per inode, made only when such a
  file is met, and bounded); otherwise it is a `path_escape` tool error. Chosen over
  refusing every multiply-linked file because tools like `git` or `cp -l` make them
  legitimately inside a project. Writes refuse them outright (replacing the name would
  be safe, but silently un-sharing a file the agent linked is a surprise).
* **Bounded.** Paths longer than `MAX_PATH_CHARS`, with more than
  `MAX_PATH_COMPONENTS` components or a name longer than `MAX_NAME_BYTES`, NUL bytes or
  lone surrogates are clean tool errors before anything is opened; symlink chains stop
  after `MAX_SYMLINK_HOPS`; walks (listing, grep) do not enter directories deeper than
  `MAX_WALK_DEPTH` and never recurse in Python.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path, PurePosixPath
from stat import S_ISDIR, S_ISLNK, S_ISREG
from typing import Literal, NamedTuple

from harness.workspace.confined import (
    MAX_NAME_BYTES,
    MAX_PATH_CHARS,
    MAX_PATH_COMPONENTS,
    EntryKind,
    LinkIndex,
    Located,
    Missing,
    ToolError,
    ToolErrorKind,
    checked_parts,
    locate,
    show_path,
    walk_tree,
)

__all__ = [
    "MAX_NAME_BYTES",
    "MAX_PATH_CHARS",
    "MAX_PATH_COMPONENTS",
    "EntryKind",
    "LinkIndex",
    "Located",
    "ToolError",
    "ToolErrorKind",
    "WalkEntry",
    "Workspace",
    "WorkspaceError",
    "show_path",
]

_TEMPLATE_DIR_MODE = 0o755


class WorkspaceError(ValueError):
    """The workspace cannot be set up (bad target, bad template). A setup error for the
    person running the harness, not a tool result."""


class WalkEntry(NamedTuple):
    """One entry met while walking the workspace; `rel` is POSIX-style, root-relative.
    `path` is informational (never opened by a tool); `dir_fd` and `name` open the entry
    safely, and `dir_fd` is valid only until the walk moves on."""

    rel: str
    path: Path
    kind: EntryKind
    dir_fd: int
    name: str


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

    # -- the descriptor-based API the tools use ------------------------------------------

    def locate(self, rel: str, *, follow_last: bool = True, missing: Missing = "error") -> Located:
        """Where the tool path `rel` leads, as an open parent directory and a name (see
        `harness.workspace.confined.locate`); a `ToolError` when it is refused."""
        parts = checked_parts(rel)
        return locate(str(self._root), parts, rel, follow_last=follow_last, missing=missing)

    def walk_located(self, start: Located) -> Iterator[WalkEntry]:
        """Every entry below the directory `start` names (see `walk`)."""
        fd = start.open_dir()
        try:
            for entry in walk_tree(fd, start.parts):
                rel = "/".join(entry.parts)
                yield WalkEntry(rel, self._root / rel, entry.kind, entry.dir_fd, entry.name)
        finally:
            os.close(fd)

    def link_index(self) -> LinkIndex:
        """A fresh index of the hard links inside the workspace (built when first asked)."""
        return LinkIndex(str(self._root))

    # -- path API (kept for callers that want host paths; tools use `locate`) ------------

    def resolve(self, rel: str) -> Path:
        """The real path of `rel` inside the workspace, or a `ToolError` saying why not.

        `""` and `"."` name the root. The path need not exist (a missing tail is kept as
        written), but every existing component is resolved through symlinks (by the same
        confined walk the tools use) and the result must stay inside the workspace.
        """
        with self.locate(rel, missing="keep") as found:
            return self._root.joinpath(*found.parts, *found.rest)

    def resolve_for_write(self, rel: str) -> Path:
        """Where `write_file` may write `rel`: the parent is resolved and confined like
        `resolve`, and the last component must not be a symlink (even one that points
        inside the workspace), a directory or a special file."""
        if not checked_parts(rel):
            raise ToolError("the path names the workspace root, not a file", "invalid")
        with self.locate(rel, follow_last=False, missing="keep") as found:
            if not found.rest:
                writable_target(found, rel)
            return self._root.joinpath(*found.parts, *found.rest)

    def relative(self, path: Path) -> str:
        """`path` (inside the workspace) as a POSIX root-relative string; `.` for root."""
        rel = path.relative_to(self._root).as_posix()
        return rel or "."

    def walk(self, start: Path | str = ".") -> Iterator[WalkEntry]:
        """Every entry below directory `start` (a path inside the workspace, or a tool
        path), depth-first with siblings sorted by name, never following symlinks (a
        symlinked directory is reported, not entered). Iterative on purpose: an agent can
        nest directories deeper than Python's recursion limit. Unreadable directories are
        skipped rather than failing a whole listing."""
        rel = self.relative(start) if isinstance(start, Path) else start
        with self.locate(rel) as found:
            yield from self.walk_located(found)


def writable_target(found: Located, shown: str) -> os.stat_result | None:
    """The status of the file `write_file` would replace (None: it does not exist yet), or
    a `ToolError` when it must not be written: a symlink (even one pointing inside), a
    directory, a special file, or a file with other hard links."""
    if found.name is None:
        raise ToolError("the path names the workspace root, not a file", "invalid")
    st = found.lstat()
    if st is None:
        return None
    if S_ISLNK(st.st_mode):
        raise ToolError(f"{show_path(shown)} is a symlink; refusing to write through it")
    if S_ISDIR(st.st_mode):
        raise ToolError(f"{show_path(shown)} is a directory")
    if not S_ISREG(st.st_mode):
        raise ToolError(f"{show_path(shown)} is not a regular file")
    if st.st_nlink > 1:
        # A hard link shares its inode with another name, which may lie outside the
        # workspace. The write itself would be safe (a new file is renamed over the
        # name), but it would silently un-share what the agent linked: refused, and the
        # agent can remove the name first.
        raise ToolError(
            f"{show_path(shown)} has other hard links (possibly outside the workspace); "
            "refusing to write through it",
            "invalid",
        )
    return st


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
