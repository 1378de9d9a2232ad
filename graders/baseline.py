"""Did the agent change what the tool checks rely on?

A tool check is only as good as the tests it runs: an agent that rewrites the task's tests
to pass, deletes them, or adds a hook the test runner loads (a `conftest.py`, a
`sitecustomize.py`, a `.pth` file, a top-level `unittest.py` shadowing the runner) turns
"the tests pass" into a proxy signal that proves nothing (spec §7:
`proxy_signals⇒insufficient`; tests passing is not completion unless the tests cover
every requirement). When the task's workspace came from a template, the
grader compares the workspace with it before trusting any tool check: a test file of the
template that differs or is gone, or a runner hook the template did not have, makes every
tool check unknown until the agent restores them (`graders.criteria` cause
`tests_changed`, which the agent can act on).

What counts as a test file is a convention (the usual names of pytest, unittest, Go and
JavaScript test runners, and anything under a `test`, `tests`, `__tests__` or `spec`
folder); a task whose checks rely on other files is not protected beyond these. Files are
compared byte for byte; symlinks are never followed.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path

from pydantic import BaseModel, ConfigDict

_TEST_FILE = re.compile(
    r"(?:^|/)(?:test_[^/]*\.py|[^/]*_test\.(?:py|go)|[^/]*\.(?:test|spec)\.[cm]?[jt]sx?"
    r"|conftest\.py)$"
    r"|(?:^|/)(?:tests?|__tests__|spec)/"
)
_RUNNER_HOOK = re.compile(
    r"(?:^|/)(?:conftest\.py|sitecustomize\.py|usercustomize\.py|[^/]*\.pth)$"
)
# Modules the test runners themselves import. A check runs in the workspace, which Python
# puts first on the import path: a top-level `unittest.py` or `pytest/` the template did
# not have replaces the runner. (Only these: shadowing any standard module name would
# also flag honest work, such as a task's own `calendar.py`.)
_SHADOWED = frozenset(
    {"unittest", "doctest", "pytest", "_pytest", "pluggy", "site", "runpy", "importlib",
     "encodings", "builtins", "nose", "nose2", "hypothesis", "coverage", "tox"}
)  # fmt: skip
_TOP_LEVEL_MODULE = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)(?:\.py|/.*)$")


def is_runner_hook(relative: str) -> bool:
    if _RUNNER_HOOK.search(relative):
        return True
    module = _TOP_LEVEL_MODULE.match(relative)
    return module is not None and module.group(1) in _SHADOWED


#: How many workspace entries are looked at for added hooks. Past it nothing more is
#: known, and that counts as tampering (fail closed): the checks are not trusted.
MAX_ENTRIES = 200_000


class Tampering(BaseModel):
    """What differs from the template, as workspace-relative paths."""

    model_config = ConfigDict(frozen=True)

    changed: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()
    added_hooks: tuple[str, ...] = ()
    incomplete: bool = False

    @property
    def found(self) -> bool:
        return bool(self.changed or self.removed or self.added_hooks or self.incomplete)

    def listing(self) -> str:
        lines = [f"changed: {p}" for p in self.changed]
        lines += [f"removed: {p}" for p in self.removed]
        lines += [f"added runner hook: {p}" for p in self.added_hooks]
        if self.incomplete:
            lines.append(f"too many files: only the first {MAX_ENTRIES} were looked at")
        return "\n".join(lines)


def is_test_file(relative: str) -> bool:
    return _TEST_FILE.search(relative) is not None


def _files(root: Path, *, links: bool = False) -> Iterator[tuple[str, Path]]:
    """Every regular file below `root`, and with `links` every symlink too (never
    followed: a hook may be a link to a file elsewhere), relative with `/`."""
    for folder, dirs, names in os.walk(root, followlinks=False):
        dirs.sort()
        for name in sorted(names):
            path = Path(folder, name)
            is_link = path.is_symlink()
            if (is_link and links) or (not is_link and path.is_file()):
                yield path.relative_to(root).as_posix(), path


def _same_bytes(a: Path, b: Path) -> bool:
    try:
        if b.is_symlink() or not b.is_file():
            return False
        return a.stat().st_size == b.stat().st_size and a.read_bytes() == b.read_bytes()
    except OSError:
        return False


def tampering(template: Path, workspace: Path) -> Tampering:
    changed: list[str] = []
    removed: list[str] = []
    template_files: set[str] = set()
    for relative, path in _files(template):
        template_files.add(relative)
        if not is_test_file(relative):
            continue
        mirror = workspace / relative
        if not mirror.exists() and not mirror.is_symlink():
            removed.append(relative)
        elif not _same_bytes(path, mirror):
            changed.append(relative)
    added: list[str] = []
    incomplete = False
    for seen, (relative, _) in enumerate(_files(workspace, links=True), start=1):
        if seen > MAX_ENTRIES:
            incomplete = True
            break
        if relative not in template_files and is_runner_hook(relative):
            added.append(relative)
    return Tampering(
        changed=tuple(changed),
        removed=tuple(removed),
        added_hooks=tuple(added),
        incomplete=incomplete,
    )
