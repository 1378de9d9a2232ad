"""The record under certification, read through its substrate's read channel (DIYLISIS
Phase 0): a file, or `git:REV:PATH`, a committed record read with `git show`.

A target no channel can read stops at F0: bad input, exit 2, never certified from a copy
the harness did not read. A file has a write channel (repairs land in place with
`--apply`); a committed record has none (its would-be repairs become residuals).
"""

from __future__ import annotations

import os
import stat
import subprocess
from dataclasses import dataclass
from pathlib import Path

from harness.certify.certificate import StableRef, sha256_digest
from harness.inputs.errors import InputError, read_capped

GIT_PREFIX = "git:"
GIT_TIMEOUT_S = 20.0


@dataclass(frozen=True)
class Target:
    ref: StableRef
    data: bytes
    path: Path | None
    """The file, when the target is one: where `--apply` writes."""
    revision: str | None = None

    @property
    def text(self) -> str:
        return self.data.decode("utf-8")

    @property
    def digest(self) -> str:
        return sha256_digest(self.data)

    @property
    def writable(self) -> bool:
        return self.path is not None

    @property
    def name(self) -> str:
        return self.ref.locator.rsplit("/", 1)[-1].rsplit(":", 1)[-1] or "target"


def decode(data: bytes, where: str) -> str:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise InputError(
            where, "E300", f"the target is not UTF-8 text (byte {err.start})"
        ) from None
    # An empty record passes every leg vacuously: a certificate for it would vouch for a
    # handoff that hands nothing over (a truncated file, a wrong path to an empty one).
    if not text.strip():
        raise InputError(where, "E303", "the target is empty: there is nothing to hand off")
    return text


def read_target(given: str, base: Path) -> Target:
    """`given` as the user named it; `base`: the folder relative locators start from."""
    if given.startswith(GIT_PREFIX):
        return read_git(given, base)
    path = Path(given) if Path(given).is_absolute() else base / given
    data = read_record(path, given, "the target")
    decode(data, given)
    return Target(
        ref=StableRef(kind="path", locator=relative_locator(path, base)), data=data, path=path
    )


def read_record(path: Path, where: str, what: str, *, follow_links: bool = False) -> bytes:
    """The bytes of a record file, refused (bad input) unless it is a regular file reached
    without a link that leads it elsewhere.

    A pipe named as the record hung the command for good (blocked in open, deaf to
    SIGTERM): it is opened non-blocking and refused by its type. A record that is a
    symbolic link (`handoff.md -> ~/.aws/credentials`, shipped in a repository, since git
    keeps links) was read through, and the file it named went into the certificate's
    judgments and to the refuter's model: a link is refused, naming the file it points
    to, which the person can name instead if it is the record they mean. (A linked folder
    on the way is followed: `examples -> ../repo/examples` is how people lay out work.)
    `follow_links`: for a file only hashed or checked (a certificate, `[handoff] file`),
    whose bytes go nowhere, a link is followed; its type is still checked."""
    absolute = Path(os.path.abspath(path))
    real = Path(os.path.realpath(path))
    if absolute.is_symlink() and not follow_links:
        raise InputError(
            where,
            "E303",
            f"{what} is a symbolic link to {real}: certify-side reads never follow a link; "
            "name the file itself if it is the record you mean",
        )
    try:
        # O_NOFOLLOW: a link put in its place after the check above is refused too.
        fd = os.open(real, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as err:
        raise InputError(where, "E500", f"cannot read {what}: {err.strerror or err}") from None
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        if stat.S_ISDIR(mode):
            raise InputError(where, "E500", f"{what} is a directory, not a record")
        raise InputError(
            where, "E500", f"{what} is not a regular file (a pipe, a device or a socket)"
        )
    with os.fdopen(fd, "rb") as file:
        try:
            return read_capped(file, where, what)
        except OSError as err:
            raise InputError(where, "E500", f"cannot read {what}: {err.strerror or err}") from None


def read_git(given: str, base: Path) -> Target:
    rest = given.removeprefix(GIT_PREFIX)
    rev, sep, inner = rest.partition(":")
    if not sep or not rev or not inner:
        raise InputError(given, "E303", "a committed record is git:REV:PATH")
    found = git(["rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}"], base)
    if found is None:
        raise InputError(given, "E500", f"no commit {rev!r} in the repository here")
    commit = found.decode().strip()
    data = git(["show", f"{commit}:{inner}"], base)
    if data is None:
        raise InputError(given, "E500", f"{inner!r} is not in commit {commit[:12]}")
    decode(data, given)
    # The revision-fixed form: the commit the ref named when it was read.
    locator = f"{GIT_PREFIX}{commit}:{inner}"
    return Target(ref=StableRef(kind="id", locator=locator), data=data, path=None, revision=commit)


def git(args: list[str], cwd: Path) -> bytes | None:
    """`git ARGS` output, or None when git is missing or the command fails."""
    try:
        done = subprocess.run(
            ["git", *args],
            cwd=cwd,
            capture_output=True,
            timeout=GIT_TIMEOUT_S,
            check=False,
            env={**os.environ, "GIT_TERMINAL_PROMPT": "0"},
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout if done.returncode == 0 else None


def relative_locator(path: Path, base: Path) -> str:
    """`path` as a POSIX locator relative to `base` when it can be, else absolute."""
    absolute = Path(os.path.abspath(path))
    try:
        return Path(os.path.relpath(absolute, os.path.abspath(base))).as_posix()
    except ValueError:  # another drive (Windows)
        return absolute.as_posix()
