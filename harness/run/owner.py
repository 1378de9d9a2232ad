"""One process carries a run on at a time.

`ilh run --resume RUN` typed while the run was still going in another terminal, or two
resumes at once, ran a second agent in the same workspace, and the record got two
endings one after the other (a store takes appends from any process in order: it
cannot know two of them continue the same history). The process that runs or resumes a
run holds an exclusive `flock` on `runs/RUN/owner.lock` (beside its workspace) until the
run ends; another is refused as bad input, naming the holder.

The kernel releases the lock however the holder ends (Ctrl-C, SIGKILL, out of memory),
so a resume after a kill is never refused. The descriptor is close-on-exec: a command the
agent runs (its sandbox is a new program) never inherits it, so nothing left behind by a
killed harness can keep the run locked.
"""

from __future__ import annotations

import errno
import fcntl
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from harness.inputs.errors import InputError
from harness.record.store import RunStore

LOCK_NAME = "owner.lock"

#: What a file system that offers no `flock` answers (NFS without a lock manager, some
#: FUSE and SMB mounts): the run goes on unlocked, with a note. Why not refuse: the lock
#: guards against an honest slip (a second terminal), not an adversary (the agent never
#: reaches the runs folder), and refusing made every run and resume of such a store
#: impossible, for good (review 8).
_NO_LOCKS = frozenset({errno.ENOLCK, errno.EOPNOTSUPP, errno.ENOTSUP, errno.ENOSYS})


def run_folder(store: RunStore, run_id: str) -> Path:
    return store.path.parent / "runs" / run_id


@contextmanager
def owning(store: RunStore, run_id: str, run_ref: str | None = None) -> Iterator[None]:
    """Hold run `run_id` for this process while the block runs; `InputError` (E500, at
    `run_ref` as the person typed it) when another process holds it."""
    where = run_ref or run_id
    folder = run_folder(store, run_id)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd = os.open(
            folder / LOCK_NAME, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600
        )
    except OSError as err:
        raise InputError(
            where, "E500", f"cannot lock run {run_id} for this process: {err.strerror or err}"
        ) from None
    try:
        unlockable = _lock(fd, run_id, where)
        if unlockable is not None:
            print(
                f"note: run {run_id} cannot be locked for this process (the store's folder "
                f"takes no lock: {unlockable}); it goes on unlocked: do not run or resume "
                "it from two terminals at once",
                file=sys.stderr,
            )
        else:
            # Who holds it, for the message below (read only while the lock is held).
            os.ftruncate(fd, 0)
            os.pwrite(fd, str(os.getpid()).encode("ascii"), 0)
        yield
    finally:
        os.close(fd)  # releases the lock


def _lock(fd: int, run_id: str, where: str) -> str | None:
    """Lock `fd` for this process; the system's words when its folder takes no lock
    (`_NO_LOCKS`); `InputError` when another process holds it."""
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as err:
        if err.errno in _NO_LOCKS:
            return str(err.strerror or err)
        if err.errno not in (errno.EWOULDBLOCK, errno.EAGAIN):
            raise InputError(
                where, "E500", f"cannot lock run {run_id}: {err.strerror or err}"
            ) from None
        holder = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
        named = f" (pid {holder})" if holder.isdigit() else ""
        raise InputError(
            where,
            "E500",
            f"run {run_id} is being run by another ilh process{named}: one process "
            "carries a run on at a time; wait for it to end, or stop it (Ctrl-C) and "
            "resume the run then",
        ) from None
    return None


@contextmanager
def owning_recorded(store: RunStore, run_ref: str) -> Iterator[str]:
    """Hold the recorded run `run_ref` (an id or its prefix) while the block changes what
    its run decides from (`ilh correct`, `ilh soul sync`: its agent's SOUL); yields the
    full id. Either of them while `ilh run` carried the run on wrote the SOUL under it,
    and the run then wrote its own GENEs from what it had read before. A run with no
    folder (a certification) has no process to wait for: nothing is made for it."""
    run_id = store.resolve_run_id(run_ref)
    if not run_folder(store, run_id).is_dir():
        yield run_id
        return
    with owning(store, run_id, run_ref):
        yield run_id
