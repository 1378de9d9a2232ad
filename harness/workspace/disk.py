"""How much disk one command may take: the workspace is a folder of the host's own
filesystem (a bind mount), so without a bound a command fills the host's disk — the run
store, the record key's folder, every other user's files — through it. RLIMIT_FSIZE
bounds one file; nothing bounded the number of files.

No quota is needed: while the command runs, the runner looks at the free space of the
workspace's filesystem (`statvfs`, cheap, at every poll) and kills the command's whole
group when it took more than its allowance (`SandboxPolicy.disk`) since it started, or
when it took anything while the filesystem's last few percent (`RESERVE_FRACTION`) are
all that is left. Other processes writing at the same time count against the command:
conservative, never lenient. A poll is at most 50 ms, so a command may overshoot by
what it writes in that time.
"""

from __future__ import annotations

import os
from pathlib import Path

#: The share of the filesystem no command may eat into (capped at `RESERVE_CAP`).
RESERVE_FRACTION = 0.05
RESERVE_CAP = 8 * 1024**3
#: What a command may still write while the filesystem is inside its reserve (caches).
RESERVE_SLACK = 16 * 1024**2


def _space(folder: Path) -> tuple[int, int]:
    """(free bytes for an unprivileged user, filesystem size)."""
    info = os.statvfs(folder)
    return info.f_bavail * info.f_frsize, info.f_blocks * info.f_frsize


class DiskWatch:
    """Watches the filesystem a command writes to; `exceeded` says why to stop it."""

    def __init__(self, folder: Path, allowance: int) -> None:
        self._folder = folder
        self._allowance = allowance
        self._start, size = _space(folder)
        self._reserve = min(int(size * RESERVE_FRACTION), RESERVE_CAP)

    def exceeded(self) -> str | None:
        try:
            free, _ = _space(self._folder)
        except OSError:
            return None  # the folder is gone: nothing left to watch
        taken = self._start - free
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
        return None
