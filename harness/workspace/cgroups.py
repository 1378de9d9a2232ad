"""Control groups that bound one sandboxed command's process tree as a whole: how many
processes (`pids`) and how much memory, tmpfs pages included (`memory`), it may hold.

Only a root harness can make them (the groups live in the host's hierarchy). rlimits
still apply per process, but they cannot bound a tree: RLIMIT_NPROC counts every process
of the user on the host, and 256 processes of 4 GiB address space each are a terabyte.
Both cgroup v1 (one hierarchy per controller, as on this project's CI machine) and v2
(one unified hierarchy) are used. A group that should be made and cannot be is an error:
the command is refused rather than run unbounded.
"""

from __future__ import annotations

import itertools
import os
import threading
import uuid
from contextlib import suppress
from pathlib import Path
from typing import NamedTuple

from harness.workspace.leftovers import sweep_once

_V1 = Path("/sys/fs/cgroup")
_V2_CANDIDATES = (Path("/sys/fs/cgroup"), Path("/sys/fs/cgroup/unified"))
_names = itertools.count()
_names_lock = threading.Lock()


class CgroupError(OSError):
    """A group that must be made could not be; the message says which and why."""


class Group(NamedTuple):
    """One made group: its folder and its `cgroup.procs` file."""

    path: Path
    controllers: tuple[str, ...]

    @property
    def procs(self) -> str:
        return str(self.path / "cgroup.procs")


def _writable(root: Path) -> bool:
    return (root / "cgroup.procs").is_file() and os.access(root, os.W_OK)


def _v2_controllers(root: Path) -> set[str]:
    with suppress(OSError):
        return set((root / "cgroup.subtree_control").read_text().split())
    return set()


def _settings(controller: str, v2: bool, processes: int, memory: int) -> dict[str, str]:
    if controller == "pids":
        return {"pids.max": str(processes)}
    if v2:
        # No swap: a limit that swaps out instead of failing is not a limit.
        return {"memory.max": str(memory), "memory.swap.max": "0"}
    return {"memory.limit_in_bytes": str(memory)}


def make_groups(processes: int, memory: int) -> list[Group]:
    """The groups for one command (none when the harness is not root); `CgroupError`
    when a controller that exists cannot be used. Remove them with `remove_groups`."""
    if os.geteuid() != 0:
        return []
    sweep_once([_V1 / "pids", _V1 / "memory", *_V2_CANDIDATES])
    with _names_lock:
        name = f"ilh-{os.getpid()}-{next(_names)}-{uuid.uuid4().hex[:12]}"
    plan: list[tuple[Path, tuple[str, ...], bool]] = []
    v1 = [c for c in ("pids", "memory") if _writable(_V1 / c)]
    if v1:
        plan += [(_V1 / c, (c,), False) for c in v1]
    else:
        for root in _V2_CANDIDATES:
            wanted = tuple(c for c in ("pids", "memory") if c in _v2_controllers(root))
            if wanted and _writable(root):
                plan.append((root, wanted, True))
                break
    made: list[Group] = []
    try:
        for root, controllers, v2 in plan:
            group = Group(root / name, controllers)
            try:
                group.path.mkdir()
            except OSError as exc:
                kinds = "/".join(controllers)
                raise CgroupError(f"cannot create the {kinds} cgroup: {exc}") from None
            made.append(group)
            for controller in controllers:
                for file, value in _settings(controller, v2, processes, memory).items():
                    target = group.path / file
                    if file == "memory.swap.max" and not target.exists():
                        continue  # no swap accounting: nothing to bound
                    try:
                        target.write_text(value)
                    except OSError as exc:
                        raise CgroupError(f"cannot set {file} on {group.path}: {exc}") from None
    except BaseException:
        remove_groups(made)
        raise
    return made


def bounded(groups: list[Group], controller: str) -> bool:
    return any(controller in g.controllers for g in groups)


def remove_groups(groups: list[Group]) -> None:
    """Kill whatever is still in each group (the pid namespace should have done it), then
    remove it; a group still busy is left for the kernel to reap, never an error."""
    for group in groups:
        for _ in range(50):
            try:
                pids = [int(p) for p in Path(group.procs).read_text().split()]
            except OSError:
                break
            if not pids:
                break
            for pid in pids:
                with suppress(OSError):
                    os.kill(pid, 9)
            threading.Event().wait(0.01)
        for _ in range(20):
            try:
                group.path.rmdir()
                break
            except FileNotFoundError:
                break
            except OSError:
                threading.Event().wait(0.01)  # the last exit not yet accounted
