"""Leftovers of harness processes that were killed mid-command (`kill -9` runs no
`finally`): their empty cgroups and staging folders. Each name carries its creator's
pid (`ilh-PID-…`, `ilh-stage-PID-…`); once per process, those of pids no longer alive are
removed. Never recursively: a staging folder is only ever empty mount points on the
host, and a cgroup with processes in it cannot be removed anyway."""

from __future__ import annotations

import os
import re
import tempfile
import threading
from contextlib import suppress
from pathlib import Path

from harness.workspace.sandbox_user import remove_stage

_GROUP = re.compile(r"^ilh-(\d+)-")
_STAGE = re.compile(r"^ilh-stage-(\d+)-")
_swept = False
_lock = threading.Lock()


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _dead_owner(name: str, pattern: re.Pattern[str]) -> bool:
    match = pattern.match(name)
    return (
        match is not None and int(match.group(1)) != os.getpid() and not alive(int(match.group(1)))
    )


def sweep(cgroup_roots: list[Path], temp: Path | None = None) -> int:
    """Remove the leftovers of dead harness processes; returns how many went."""
    removed = 0
    for root in cgroup_roots:
        with suppress(OSError):
            for entry in os.scandir(root):
                if entry.is_dir(follow_symlinks=False) and _dead_owner(entry.name, _GROUP):
                    with suppress(OSError):
                        os.rmdir(entry.path)  # fails (busy) if anything still runs in it
                        removed += 1
    folder = temp or Path(tempfile.gettempdir())
    with suppress(OSError):
        for entry in os.scandir(folder):
            if entry.is_dir(follow_symlinks=False) and _dead_owner(entry.name, _STAGE):
                remove_stage(entry.path)
                removed += not os.path.lexists(entry.path)
    return removed


def sweep_once(cgroup_roots: list[Path]) -> None:
    """`sweep`, the first time a process asks (a root harness making its first sandbox)."""
    global _swept
    with _lock:
        if _swept:
            return
        _swept = True
    sweep(cgroup_roots)
