"""How much disk one command may take: the workspace is a folder of the host's own
filesystem (a bind mount), so without a bound a command fills the host's disk — the run
store, the record key's folder, every other user's files — through it. RLIMIT_FSIZE
bounds one file; nothing bounded the number of files.

No quota is needed: while the command runs, the runner looks at the free space of the
workspace's filesystem (`statvfs`, cheap, at every poll) and kills the command's whole
group when it took more than its allowance (`SandboxPolicy.disk`) since it started, or
when it took anything while the filesystem's last few percent (`RESERVE_FRACTION`) are
all that is left. The same for inodes (`INODE_ALLOWANCE`): empty files take no blocks,
and a filesystem out of inodes is as full as one out of blocks. Other processes writing
at the same time count against the command: conservative, never lenient. A poll is at
most 50 ms apart, so a command may overshoot by what it writes in that time.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import NamedTuple

#: The share of the filesystem no command may eat into (capped at `RESERVE_CAP`).
RESERVE_FRACTION = 0.05
RESERVE_CAP = 8 * 1024**3
#: What a command may still write while the filesystem is inside its reserve (caches).
RESERVE_SLACK = 16 * 1024**2
#: Files (inodes) one command may create: a large `npm install` makes about 100 000.
INODE_ALLOWANCE = 1_000_000
INODE_SLACK = 1_000


class _Space(NamedTuple):
    free: int  # bytes an unprivileged user may still take
    size: int
    inodes_free: int
    inodes: int


def _space(folder: Path) -> _Space:
    info = os.statvfs(folder)
    return _Space(
        info.f_bavail * info.f_frsize, info.f_blocks * info.f_frsize, info.f_favail, info.f_files
    )


class DiskWatch:
    """Watches the filesystem a command writes to; `exceeded` says why to stop it."""

    def __init__(self, folder: Path, allowance: int) -> None:
        self._folder = folder
        self._allowance = allowance
        self._start = _space(folder)
        self._reserve = min(int(self._start.size * RESERVE_FRACTION), RESERVE_CAP)
        self._inode_reserve = int(self._start.inodes * RESERVE_FRACTION)

    def exceeded(self) -> str | None:
        try:
            now = _space(self._folder)
        except OSError:
            return None  # the folder is gone: nothing left to watch
        free = now.free
        taken = self._start.free - free
        if taken > self._allowance:
            return (
                f"the command took more than its disk allowance of {self._allowance} bytes "
                "(sandbox disk): killed"
            )
        if free < self._reserve and taken > RESERVE_SLACK:
            return (
                f"the command was filling the disk (less than {self._reserve} bytes left "
                "on the workspace's filesystem): killed"
            )
        files = self._start.inodes_free - now.inodes_free
        if self._start.inodes and (
            files > INODE_ALLOWANCE
            or (now.inodes_free < self._inode_reserve and files > INODE_SLACK)
        ):
            return (
                f"the command created too many files ({files}; at most {INODE_ALLOWANCE}, "
                "and none while the filesystem's last inodes are all that is left): killed"
            )
        return None
