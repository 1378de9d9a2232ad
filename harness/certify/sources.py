"""The content identity of a granted source: what `ilh certify` seals beside its path and
`ilh certify --check` recomputes.

A certificate routes its judgments into the granted sources (`project/`), and the
receiver re-checks them; bound by path alone, a source rewritten after certification (its
code changed, a file added or removed) still passed the check (red team attack4). So the
certificate carries each source's identity: a SHA-256 over the sorted walk of the folder
(each entry's relative path and kind; a file's content digest and executable bit; a
link's target, with the content of the file it names, or of the folder it names when that
lies outside the source), or over a file's bytes; a source that is itself a link is the
file or folder behind it.

Left out of a folder's identity: `.git` (git rewrites its index on a mere `git status`;
committed records are checked through git itself) and bytecode caches (`__pycache__`,
`.pytest_cache`, which a receiver's own test run writes). A source that cannot be read
in full gets an identity that says so, which no readable source matches.
"""

from __future__ import annotations

import errno
import hashlib
import os
import secrets
import stat
from contextlib import suppress
from functools import cache
from pathlib import Path

from harness.certify.certificate import sha256_digest

#: Folders never part of a source's identity: the version-control store, caches, and the
#: harness's own run store (`.ilh/runs.db`: a certification is a run, recorded after the
#: identities are bound, so a source holding the store changed by its own certification).
IGNORED_FOLDERS = frozenset(
    {".git", "__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache", ".ilh"}
)
_CHUNK = 1 << 20


def _file_digest(path: Path) -> str:
    digest = hashlib.sha256()
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    try:
        # The caller saw a regular file, but it may have been swapped since (a folder on
        # its path turned into a link to /dev): a device would be read without end.
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "not a regular file", str(path))
        while chunk := os.read(fd, _CHUNK):
            digest.update(chunk)
    finally:
        os.close(fd)
    return digest.hexdigest()


def _name(rel: str) -> bytes:
    # A name that is not UTF-8 stays its own bytes (surrogateescape), never an error.
    return rel.encode("utf-8", "surrogateescape")


#: Entries of folders outside the source that its links name, hashed at most (a link to
#: `/` must not walk the whole machine). Past it the identity is one no later walk matches
#: (`--check` then fails: fail closed): grant the folder itself, or a smaller one.
MAX_LINKED_ENTRIES = 50_000


class _Walk:
    """One identity's walk: the source's root, the folders outside it already hashed
    through links (a loop of links is hashed once), what is left of the linked budget."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.linked: set[Path] = set()
        self.left = MAX_LINKED_ENTRIES

    def folder(self, path: Path, label: bytes, *, linked: bool) -> bytes:
        """The digest of the walk of folder `path` (hex, as bytes)."""
        digest = hashlib.sha256(label)
        failures: list[bytes] = []

        def failed(err: OSError) -> None:
            failures.append(b"u " + _name(str(err.filename)) + b"\n")

        for folder, dirs, files in os.walk(path, onerror=failed, followlinks=False):
            here = Path(folder)
            dirs[:] = sorted(d for d in dirs if d not in IGNORED_FOLDERS)
            for name in sorted([*dirs, *files]):
                if linked:
                    self.left -= 1
                    if self.left < 0:
                        return b"too large to bind " + secrets.token_hex(16).encode()
                rel = (here / name).relative_to(path).as_posix()
                digest.update(self.entry(here / name, rel))
        for failure in failures:
            digest.update(failure)
        return digest.hexdigest().encode()

    def entry(self, path: Path, rel: str) -> bytes:
        try:
            info = path.lstat()
            mode = info.st_mode
            if stat.S_ISLNK(mode):
                return self._link(path, rel) + b"\n"
            if stat.S_ISDIR(mode):
                return b"d " + _name(rel) + b"\n"
            if stat.S_ISREG(mode) and info.st_dev in _kernel_devices():
                return b"k " + _name(rel) + b"\n"  # /proc mounted inside the source: not read
            if stat.S_ISREG(mode):
                executable = b"x" if mode & 0o111 else b"-"
                return (
                    b"f " + _name(rel) + b" " + executable + b" " + _file_digest(path).encode()
                    + b"\n"
                )  # fmt: skip
            return b"o " + _name(rel) + b"\n"  # a pipe, a socket, a device: never read
        except OSError as err:
            return b"u " + _name(rel) + b" " + (err.strerror or "unreadable").encode() + b"\n"
        except RuntimeError:  # a loop of links
            return b"u " + _name(rel) + b" a loop of links\n"

    def _walked(self, target: Path) -> bool:
        """Whether the source's own walk covers folder `target` (inside the root, under
        no ignored folder)."""
        if target == self.root:
            return True
        if self.root not in target.parents:
            return False
        return not IGNORED_FOLDERS.intersection(target.relative_to(self.root).parts)

    def _link(self, path: Path, rel: str) -> bytes:
        line = b"l " + _name(rel) + b" -> " + _name(os.readlink(path))
        # A link into /proc or /sys is named, never read: `pagemap` is the whole address
        # space of the process reading it, and a walk of /proc/self never ended.
        kernel = _kernel_target(path)
        if kernel:
            return line + b" kernel"
        # What a link reads is part of the source: the file or folder it names may lie
        # outside the source and change there. A folder inside the source is walked as
        # part of it already (and a loop of links would never end): its name suffices.
        # Not one inside a folder the walk leaves out (`code -> .git/payload`): that
        # content is bound by nothing else, so it is hashed like a folder outside.
        if path.is_file():
            return line + b" " + _file_digest(path.resolve()).encode()
        if path.is_dir():
            target = path.resolve(strict=True)
            if target in self.linked or self._walked(target):
                return line
            self.linked.add(target)
            return line + b" " + self.folder(target, b"linked folder\n", linked=True)
        return line


#: Kernel file systems: what they hold is the reading process's own state (its environment,
#: its memory maps), never a record, and a walk of one does not end (`/proc/self/task/…`).
#: Their files stat as regular files, so the kind alone does not refuse them.
_KERNEL_ROOTS = (Path("/proc"), Path("/sys"))


def _on_kernel_fs(path: Path, info: os.stat_result) -> bool:
    if any(path == root or root in path.parents for root in _KERNEL_ROOTS):
        return True
    # procfs or sysfs mounted elsewhere (`mount -t proc proc /mnt/p`) is the same device.
    return info.st_dev in _kernel_devices()


@cache
def _kernel_devices() -> frozenset[int]:
    found = set()
    for root in _KERNEL_ROOTS:
        with suppress(OSError):
            found.add(os.stat(root).st_dev)
    return frozenset(found)


def _kernel_target(path: Path) -> bool:
    """Whether `path` (resolved) lies on a kernel file system."""
    try:
        resolved = path.resolve(strict=True)
        return _on_kernel_fs(resolved, resolved.stat())
    except (OSError, RuntimeError):
        return False


def unusable_source(path: Path) -> str | None:
    """Why `path` cannot be a granted source, or None when it can: a source is a regular
    file or a folder (a link to one is the file or folder behind it). A device, a FIFO or
    a socket handed to a receiver is no record (`/dev/zero` certified, the refuter's
    reads hung), nor is a kernel file (`/proc/self/environ`: the certifier's own
    environment). A path that does not exist is the caller's to say."""
    try:
        resolved = path.resolve(strict=True)
        info = resolved.stat()
    except (OSError, RuntimeError):
        return None
    if not (stat.S_ISREG(info.st_mode) or stat.S_ISDIR(info.st_mode)):
        return (
            "a granted source must be a regular file or a folder, and this is a device, "
            "a pipe or a socket"
        )
    if _on_kernel_fs(resolved, info):
        return (
            "a granted source must be a regular file or a folder, and this is a kernel "
            f"file ({resolved}): the reading process's own state, not a record"
        )
    return None


def source_identity(path: Path) -> str | None:
    """The identity (`sha256:<hex>`) of the file or folder at `path`; None when nothing
    is there."""
    try:
        # The source itself is what its path names: a granted `plink -> project` is the
        # folder behind it (its own link hashed alone, the content changed unseen).
        path = path.resolve(strict=True) if path.is_symlink() else path
        info = path.lstat()
    except FileNotFoundError:
        return None
    except RuntimeError:  # a loop of links
        return sha256_digest(b"u . a loop of links")
    except OSError as err:
        return sha256_digest(b"u . " + (err.strerror or "unreadable").encode())
    if _kernel_target(path):
        # Never certified (`unusable_source`), so any identity fails the check: say what
        # it is without reading it.
        return sha256_digest(b"k . a kernel file system")
    walk = _Walk(path.resolve())
    if not stat.S_ISDIR(info.st_mode):
        return sha256_digest(walk.entry(path, "."))
    return "sha256:" + walk.folder(path, b"ilh source identity v1\n", linked=False).decode()
