"""Who a sandboxed command runs as on the host, and the trees handed to that user.

A user namespace alone does not make root safe: bwrap maps the sandbox's user to the
user that started it, so a command of a harness run as root creates files owned by host
root (a setuid-root program built in the workspace stays one on the host) and passes
every permission check of root-owned files that are mounted in. So when the harness runs
as root, bwrap itself is started as an unprivileged user (`ILH_SANDBOX_UID`, default
65534, "nobody"), and the trees a command must write (its workspace, a report folder)
are handed to that user before it runs. Run as any other user, the harness starts bwrap
as itself: that user is already unprivileged.

Whoever the owner, every setuid and setgid bit in a handed-over tree is cleared before
and after each command, so nothing built inside can carry an identity out.

The walks use directory descriptors and never follow a symbolic link: they run when no
command of the tree is alive (each command's whole process tree ends with it), and a
link the agent left points nowhere they would go.
"""

from __future__ import annotations

import os
import stat
import tempfile
from collections.abc import Callable
from contextlib import suppress
from pathlib import Path
from typing import NamedTuple

from harness.workspace.walk import folders

#: Override of the unprivileged user (and group) commands run as under a root harness.
UID_VARIABLE = "ILH_SANDBOX_UID"
_NOBODY = 65534
_PRIVILEGED_BITS = stat.S_ISUID | stat.S_ISGID
# linux/sched.h and linux/mount.h
_CLONE_NEWNS = 0x00020000
_MS_BIND = 0x1000
_MS_REC = 0x4000
_MS_PRIVATE = 0x40000


class SandboxUser(NamedTuple):
    """The host identity a command runs as; `switch` is False when it is the harness's."""

    uid: int
    gid: int
    switch: bool

    def become(self) -> None:
        """In a child between fork and exec: drop to this user (no-op when it is the
        harness's own). Only system calls, safe there."""
        if self.switch:
            os.setgroups([])
            os.setresgid(self.gid, self.gid, self.gid)
            os.setresuid(self.uid, self.uid, self.uid)


def _chosen_uid(raw: str) -> int | None:
    """The user id `ILH_SANDBOX_UID` names, or None: root (0) and the kernel's "no id"
    (2^32 - 1) are never taken."""
    raw = raw.strip()
    return int(raw) if raw.isdigit() and 0 < int(raw) < 2**32 - 1 else None


def sandbox_user() -> SandboxUser:
    """The harness's own user, or, for a root harness, the unprivileged sandbox user."""
    if os.geteuid() != 0:
        return SandboxUser(os.geteuid(), os.getegid(), False)
    uid = _chosen_uid(os.environ.get(UID_VARIABLE, ""))
    uid = _NOBODY if uid is None else uid
    return SandboxUser(uid, uid, True)


def sandbox_uid_note() -> str | None:
    """A note when a root harness is given an `ILH_SANDBOX_UID` it does not take: it fails
    closed to nobody, as before, but had said nothing, and the person who set it was left
    wondering why commands could not write what their user owns."""
    raw = os.environ.get(UID_VARIABLE)
    if os.geteuid() != 0 or raw is None or not raw.strip() or _chosen_uid(raw) is not None:
        return None
    return (
        f"note: {UID_VARIABLE}={raw!r} is not a user id the sandbox takes (1 to "
        f"{2**32 - 2}, never root): commands run as nobody ({_NOBODY})"
    )


def hand_over(top: Path, user: SandboxUser) -> int:
    """Give every entry under `top` (itself included) to `user` when it switches, and
    clear setuid/setgid bits everywhere; returns the number of entries seen."""
    top_fd = os.open(top, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        _settle(top_fd, None, user)
        seen = 1
        # Not `os.fwalk`: it recursed once per level, and a tree nested a few thousand
        # folders deep (one shell loop) ended the harness with a RecursionError.
        for dir_fd, names in folders(top_fd):
            for name in names:
                _settle(dir_fd, name, user)
                seen += 1
        return seen
    finally:
        os.close(top_fd)


def _settle(dir_fd: int, name: str | None, user: SandboxUser) -> None:
    """One entry: owner (when switching) and privileged bits; an entry that vanished or
    cannot be changed is left as it is (the command then simply lacks access)."""
    try:
        info = os.stat(name, dir_fd=dir_fd, follow_symlinks=False) if name else os.fstat(dir_fd)
        foreign = info.st_uid != user.uid or info.st_gid != user.gid
        if foreign and not stat.S_ISDIR(info.st_mode) and info.st_nlink > 1:
            # Another name shares this inode, perhaps outside the tree (a host file linked
            # in): chown or chmod would change that file too. Left as it is.
            return
        if user.switch and foreign:
            if name is None:
                os.fchown(dir_fd, user.uid, user.gid)
            else:
                os.chown(name, user.uid, user.gid, dir_fd=dir_fd, follow_symlinks=False)
        if stat.S_ISREG(info.st_mode) and info.st_mode & _PRIVILEGED_BITS and name is not None:
            # Through an O_PATH descriptor: no read permission needed (a mode-0 file), and
            # the entry changed is the one just looked at, not what a link points to.
            fd = os.open(name, os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dir_fd)
            try:
                os.chmod(f"/proc/self/fd/{fd}", stat.S_IMODE(info.st_mode) & ~_PRIVILEGED_BITS)
            finally:
                os.close(fd)
    except OSError:
        return


class Stage:
    """Where an unprivileged bwrap finds the host folders it binds.

    bwrap resolves each bind source by path, as the user it runs as: a workspace under
    root's 0700 home is out of reach of "nobody" (a descriptor does not help: bwrap turns
    it back into a path). So, for a root harness, the child process bind-mounts every
    source onto a folder of a fresh, traversable staging directory, in a mount namespace
    of its own (nothing appears on the host), before it drops to the sandbox user and
    starts bwrap, which then binds the staged paths."""

    def __init__(self, user: SandboxUser) -> None:
        self._user = user
        self._dir: Path | None = None
        self._binds: list[tuple[bytes, bytes]] = []

    def path_for(self, source: Path) -> str:
        """The path bwrap should bind `source` from."""
        if not self._user.switch:
            return str(source)
        if self._dir is None:
            self._dir = Path(tempfile.mkdtemp(prefix=f"ilh-stage-{os.getpid()}-"))
            os.chmod(self._dir, 0o711)
        target = self._dir / str(len(self._binds))
        if source.is_dir():
            target.mkdir(mode=0o755)
        else:
            target.touch(mode=0o644)
        self._binds.append((os.fsencode(source), os.fsencode(target)))
        return str(target)

    def mounter(self) -> Callable[[], None]:
        """What the child runs (as root, before switching): its own mount namespace, kept
        private, with each source bound on its staged path. Prepared before the fork."""
        if not self._binds:
            return lambda: None
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        binds = list(self._binds)
        recursive_private = ctypes.c_ulong(_MS_REC | _MS_PRIVATE)
        recursive_bind = ctypes.c_ulong(_MS_REC | _MS_BIND)

        def run() -> None:
            if libc.unshare(ctypes.c_int(_CLONE_NEWNS)) != 0:
                raise OSError(ctypes.get_errno(), "cannot make the staging mount namespace")
            if libc.mount(None, b"/", None, recursive_private, None) != 0:
                raise OSError(ctypes.get_errno(), "cannot make the staging mounts private")
            for source, target in binds:
                if libc.mount(source, target, None, recursive_bind, None) != 0:
                    raise OSError(ctypes.get_errno(), "cannot stage a folder for the sandbox")

        return run

    def close(self) -> None:
        """Remove the staging folders (their mounts ended with the child's namespace)."""
        if self._dir is None:
            return
        remove_stage(self._dir)
        self._dir = None


def remove_stage(folder: Path | str) -> None:
    """Remove a staging folder and its (empty) mount points. Never recursive: were a bind
    ever left on a staged folder, a recursive removal would delete the workspace through
    it; rmdir of a non-empty folder just fails."""
    with suppress(OSError):
        for entry in os.scandir(folder):
            with suppress(OSError):
                if entry.is_dir(follow_symlinks=False):
                    os.rmdir(entry.path)
                else:
                    os.unlink(entry.path)
        os.rmdir(folder)
