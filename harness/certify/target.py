"""The record under certification, read through its substrate's read channel (DIYLISIS
Phase 0): a file, or `git:REV:PATH`, a committed record read with `git show`.

A target no channel can read stops at F0: bad input, exit 2, never certified from a copy
the harness did not read. A file has a write channel (repairs land in place with
`--apply`); a committed record has none (its would-be repairs become residuals).
"""

from __future__ import annotations

import os
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
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise InputError(
            where, "E300", f"the target is not UTF-8 text (byte {err.start})"
        ) from None


def read_target(given: str, base: Path) -> Target:
    """`given` as the user named it; `base`: the folder relative locators start from."""
    if given.startswith(GIT_PREFIX):
        return read_git(given, base)
    path = Path(given) if Path(given).is_absolute() else base / given
    try:
        with path.open("rb") as file:
            data = read_capped(file, given, "the target")
    except IsADirectoryError:
        raise InputError(given, "E500", "the target is a directory, not a record") from None
    except OSError as err:
        raise InputError(given, "E500", f"cannot read the target: {err.strerror or err}") from None
    decode(data, given)
    return Target(
        ref=StableRef(kind="path", locator=relative_locator(path, base)), data=data, path=path
    )


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
