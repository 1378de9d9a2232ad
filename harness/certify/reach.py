"""What the certifier can observe, and `resolves_at` (DIYLISIS Rule 21) for each locator.

Reach is the target and the granted sources (`--source`), nothing else. A locator is:

* **observed** when the certifier dereferenced it just now within that reach (a path that
  exists in a granted source, a commit object present in the local repository);
* **unobserved** when it is of a durable class (an issue, a pull request, a release, a
  web page, a revision-fixed git object, an `owner/repo#N` id) the certifier cannot reach
  (no network, another repository). It passes, and says so: never "resolved";
* **failed** when its class is temp, cache, scratch or session-scoped (`/tmp/…`,
  `~/.cache/…`, `localhost:…`), author-private (`~/…`), outside the granted sources, or
  names nothing that exists in them.

A standard system path (`/bin/sh`, `/dev/null`: the lexicon's `system_paths`) is
unobserved: the receiver's own system provides it.
"""

from __future__ import annotations

import os
import posixpath
import re
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal
from urllib.parse import urlsplit

from harness.certify.certificate import RefKind
from harness.certify.lexicon import Lexicon
from harness.certify.target import git

Status = Literal["observed", "unobserved", "failed"]

MAX_SOURCE_FILES = 2000
MAX_SOURCE_FILE_BYTES = 512 * 1024
MAX_SOURCE_TOTAL_BYTES = 8 * 1024 * 1024
SKIPPED_DIRS = frozenset({".git", ".hg", ".svn", "__pycache__", "node_modules", ".venv", ".tox"})


def read_regular(path: Path, cap: int) -> bytes | None:
    """The bytes of `path` when it is a regular file of at most `cap` bytes, else None.
    A granted folder (`--source ~`, `--source /`) holds pipes, sockets and devices:
    `/dev/zero` never ends and a pipe with no writer blocks its reader, so the file is
    opened without blocking and read only once `fstat` says it is a regular file."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size > cap:
            return None
        with os.fdopen(fd, "rb", closefd=False) as file:
            data = file.read(cap + 1)
    except OSError:  # a kernel file that would block (`/proc/kmsg`): not text to read
        return None
    finally:
        os.close(fd)
    return data if len(data) <= cap else None


_ISSUE_PATH = re.compile(
    r"^/[^/]+/[^/]+/(?:-/)?(issues|pull|pulls|merge_requests|releases|commit|blob|tree|tag|tags)(?:/|$)"
)
_DURABLE_CLASS = {
    "issues": "an issue",
    "pull": "a pull request",
    "pulls": "a pull request",
    "merge_requests": "a merge request",
    "releases": "a release",
    "commit": "a commit",
    "blob": "a file in a repository",
    "tree": "a folder in a repository",
    "tag": "a tag",
    "tags": "a tag",
}


@dataclass(frozen=True)
class Resolution:
    status: Status
    why: str
    kind: RefKind
    found: Path | None = None
    #: Failed only because nothing by that name exists in the reach (no tethered root, not
    #: outside it): the one failure a word shaped like a path also produces, so the scan
    #: may still decide the token was never a reference (`harness.certify.scan`).
    missing: bool = False


@dataclass
class Reach:
    """The granted sources (files or folders, resolved) and the target's own file."""

    sources: list[Path]
    cwd: Path
    lexicon: Lexicon
    target_path: Path | None = None
    _texts: list[tuple[str, str]] | None = field(default=None, repr=False)
    _joined: str | None = field(default=None, repr=False)
    definitions: dict[object, str | None] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        self.sources = [Path(os.path.realpath(s)) for s in self.sources]
        self._target_real = (
            None if self.target_path is None else Path(os.path.realpath(self.target_path))
        )

    # -- inside the reach ------------------------------------------------------------

    def within(self, path: Path) -> bool:
        real = Path(os.path.realpath(path))
        if real == self._target_real:
            return True
        return any(real == s or (s.is_dir() and real.is_relative_to(s)) for s in self.sources)

    def label(self, path: Path) -> str:
        """`path` as the receiver would name it: relative to the current folder when it
        lies below it, else absolute."""
        real = Path(os.path.realpath(path))
        cwd = Path(os.path.realpath(self.cwd))
        if real.is_relative_to(cwd):
            return real.relative_to(cwd).as_posix() or "."
        return real.as_posix()

    def source_texts(self) -> list[tuple[str, str]]:
        """(label, text) of the granted sources' text files, capped (see the constants)."""
        if self._texts is not None:
            return self._texts
        texts: list[tuple[str, str]] = []
        total = 0
        for path in self._source_files():
            data = read_regular(path, MAX_SOURCE_FILE_BYTES)
            if data is None:
                continue
            if b"\x00" in data[:8192]:
                continue
            total += len(data)
            if total > MAX_SOURCE_TOTAL_BYTES:
                break
            texts.append((self.label(path), data.decode("utf-8", errors="replace")))
        self._texts = texts
        return texts

    def joined_sources(self) -> str:
        """Every granted text at once: a quick test before looking file by file."""
        if self._joined is None:
            self._joined = "\n\0\n".join(text for _, text in self.source_texts())
        return self._joined

    def _source_files(self) -> list[Path]:
        files: list[Path] = []
        for source in self.sources:
            if source.is_file():
                files.append(source)
                continue
            for root, dirs, names in os.walk(source):
                dirs[:] = sorted(d for d in dirs if d not in SKIPPED_DIRS)
                for name in sorted(names):
                    files.append(Path(root) / name)
                    if len(files) >= MAX_SOURCE_FILES:
                        return files
        return files

    # -- resolves_at -----------------------------------------------------------------

    def ephemeral_root(self, locator: str) -> str | None:
        # `//tmp/x` and `/var/./tmp/x` are `/tmp/x` and `/var/tmp/x` to the system.
        plain = posixpath.normpath(locator) + ("/" if locator.endswith("/") else "")
        for given in dict.fromkeys((locator, plain)):
            for root in self.lexicon.ephemeral_roots:
                if given.startswith(root) or given.rstrip("/") + "/" == root:
                    return root
        return None

    def resolve_path(self, locator: str) -> Resolution:
        root = self.ephemeral_root(locator)
        if root is not None:
            return Resolution(
                "failed",
                f"under {root}: a temp, cache or scratch location that does not outlive the "
                "author's session",
                "path",
            )
        if locator.startswith(("~", "$HOME", "${HOME}", "%USERPROFILE%")):
            return Resolution(
                "failed",
                "in the author's home folder: a receiver's home is not the author's",
                "path",
            )
        if locator.startswith("$"):
            return Resolution(
                "failed", "rooted in an environment variable of the author's session", "path"
            )
        if posixpath.normpath(locator) in self.lexicon.system_paths:
            # `/bin/sh -c`, `> /dev/null`: an interface of every receiver's own system, not
            # a file of the author's the record would have to grant.
            return Resolution(
                "unobserved",
                "a standard system path: the receiver's own system provides it",
                "path",
            )
        if not self.sources and self.target_path is None:
            return Resolution(
                "failed", "no source is granted (--source), so nothing resolves", "path"
            )
        given = Path(locator)
        candidates = [given] if given.is_absolute() else [self.cwd / given]
        if not given.is_absolute():
            candidates += [s / given for s in self.sources if s.is_dir()]
            if self.target_path is not None:
                candidates.append(self.target_path.parent / given)
        outside: Path | None = None
        for candidate in candidates:
            if not os.path.lexists(candidate):
                continue
            if self.within(candidate):
                return Resolution(
                    "observed",
                    f"exists within the granted sources ({self.label(candidate)})",
                    "path",
                    candidate,
                )
            outside = outside or candidate
        if outside is not None:
            return Resolution(
                "failed",
                "exists here, but outside the granted sources: the receiver is not given it",
                "path",
            )
        return Resolution(
            "failed", "names nothing that exists in the granted sources", "path", missing=True
        )

    def resolve_url(self, locator: str) -> Resolution:
        try:
            parts = urlsplit(locator)
            host = (parts.hostname or "").lower()
        except ValueError:
            return Resolution("failed", "not a well-formed URL", "url")
        if parts.scheme == "file":
            return self.resolve_path(parts.path)
        if host in self.lexicon.ephemeral_hosts or host.endswith((".local", ".localhost")):
            return Resolution(
                "failed", f"on {host}: a host that exists only on the author's machine", "url"
            )
        if re.fullmatch(r"(?:10|192\.168|172\.(?:1[6-9]|2\d|3[01]))(?:\.\d+){2,3}", host or "-"):
            return Resolution("failed", f"on {host}: a private network address", "url")
        match = _ISSUE_PATH.match(parts.path)
        if host in self.lexicon.durable_hosts and match:
            what = _DURABLE_CLASS[match.group(1)]
            return Resolution(
                "unobserved",
                f"durable class ({what} on {host}); beyond the certifier's reach (no network): "
                "unobserved, the receiver dereferences it",
                "url",
            )
        return Resolution(
            "unobserved",
            f"a web page on {host}; beyond the certifier's reach (no network): unobserved, "
            "the receiver dereferences it",
            "url",
        )

    def resolve_git(self, locator: str) -> Resolution:
        rev, _, path = locator.removeprefix("git:").partition(":")
        for base in [self.cwd, *(s if s.is_dir() else s.parent for s in self.sources)]:
            if git(["cat-file", "-e", f"{rev}:{path}"], base) is not None:
                return Resolution(
                    "observed", "a committed record present in the local repository", "id"
                )
        return Resolution(
            "unobserved",
            "revision-fixed git record not present here; beyond the certifier's reach: "
            "unobserved, the receiver dereferences it",
            "id",
        )

    def resolve_id(self, locator: str) -> Resolution:
        return Resolution(
            "unobserved",
            "durable id (an issue or pull request of a named repository); beyond the "
            "certifier's reach: unobserved, the receiver dereferences it",
            "id",
        )
