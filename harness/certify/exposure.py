"""The F6 exposure scan (DIYLISIS `exposed_drops`): a dropped item must not stay readable
where the receiver is sent.

Dropping a token excises it from the target, but the receiver also dereferences the
granted sources (and the references routed into them). When a dropped item's
discriminating text is still found there, the drop did not keep it from the receiver.
Detection only: the exposing record belongs to its owner, outside the certification's
write authority, so a hit is a residual (reason `exposure`) that a person must settle at
the gate, never something the certifier edits away. A source that cannot be read cannot
certify non-exposure: it is a residual too.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from harness.certify.reach import read_regular

#: What one scan reads at most: a granted tree larger than this is reported unscannable
#: rather than half-read (a partial scan would certify non-exposure it never saw).
MAX_SCAN_BYTES = 8 * 1024 * 1024
MAX_SCAN_FILES = 5000


@dataclass(frozen=True)
class Exposure:
    """A dropped `token` still readable at `where` (a path as granted), or unscannable."""

    token: str
    where: str
    unscannable: str | None = None


def _files(root: Path) -> Iterator[Path]:
    """The regular files under `root`, in a stable order, found as the scan goes: a granted
    `/` is not walked whole before the scan's cap is reached."""
    if root.is_file():
        yield root
        return
    for folder, dirs, names in os.walk(root):
        dirs.sort()
        for name in sorted(names):
            path = Path(folder) / name
            if path.is_file() and not path.is_symlink():
                yield path


def _pattern(token: str) -> re.Pattern[str]:
    # Whole-token matches: a dropped "D3" is not exposed by "D30" or "AD3".
    return re.compile(r"(?<![\w])" + re.escape(token) + r"(?![\w])")


def exposed_drops(dropped: Sequence[str], sources: Sequence[Path], base: Path) -> list[Exposure]:
    """Every (dropped token, granted place) where the token is still readable, plus one
    entry per source that could not be scanned in full."""
    tokens = list(dict.fromkeys(t for t in dropped if t.strip()))
    if not tokens:
        return []
    patterns = {t: _pattern(t) for t in tokens}
    found: list[Exposure] = []
    for source in sources:
        shown = _shown(source, base)
        budget, files = MAX_SCAN_BYTES, 0
        problem: str | None = None
        hits: dict[str, str] = {}
        try:
            for path in _files(source):
                files += 1
                size = path.stat().st_size
                if files > MAX_SCAN_FILES or size > budget:
                    problem = f"more than {MAX_SCAN_FILES} files or {MAX_SCAN_BYTES} bytes"
                    break
                budget -= size
                data = read_regular(path, size)
                if data is None:
                    raise OSError(f"{_shown(path, base)} is not a regular file to read")
                text = data.decode("utf-8", errors="replace")
                for token, pattern in patterns.items():
                    if token not in hits and pattern.search(text):
                        hits[token] = _shown(path, base)
        except OSError as exc:
            problem = f"cannot be read: {exc.strerror or exc}"
        found += [Exposure(token, where) for token, where in hits.items()]
        if problem is not None:
            found += [Exposure(t, shown, problem) for t in tokens if t not in hits]
    return found


def _shown(path: Path, base: Path) -> str:
    try:
        return str(path.resolve().relative_to(base.resolve()))
    except ValueError:
        return str(path)
