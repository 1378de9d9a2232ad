"""Interruptions (Ctrl-C, SIGTERM) for the command line: stop at once, once.

`immediate_interrupts`, for the commands that run things (`ilh run`, `ilh grade`):
asyncio.run's own SIGINT handling only cancels its task, which takes effect at the next
await: after a long tool command or check has finished, or, with a scripted model that
never suspends, after the whole run. It leaves alone a handler that is not Python's
default one, so this one takes over: it kills the commands running now (in any thread)
and raises KeyboardInterrupt where the main thread is. SIGTERM gets the same handler, and
keeps it where SIGINT is ignored (a background job of a shell): SIGINT stays ignored, as
the shell asked, and SIGTERM still stops the run as an interruption (its command killed:
it runs in a session of its own, which the process's default death would leave alive).

`begin_stopping`: the first interruption is the one handled. A second SIGINT or SIGTERM
while it is (a signal sent twice: to the process and to its group, by a wrapper that
forwards it, a second Ctrl-C) must not raise a second KeyboardInterrupt in the middle of
the clean-up (a traceback from whatever it hits, the "resumable" message lost) nor end
the process by the signal's default action (exit 143 after that message): within
`REPEAT_GRACE_S` it is a repeat of the first and ignored; later, the clean-up is taking
too long for whoever sent it, and the process ends at once, with the same status 130.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Final

#: A second signal this soon after the first is the same request, not an insistence.
REPEAT_GRACE_S: Final = 1.0
EXIT_INTERRUPTED: Final = 130

_stopping_since: float | None = None


def stopping() -> bool:
    """Whether an interruption was received (the process is stopping)."""
    return _stopping_since is not None


def begin_stopping() -> None:
    """Called by the first interruption's handler (in the main thread): later SIGINTs and
    SIGTERMs go to `_while_stopping`. Nothing restores the handlers after this."""
    global _stopping_since
    if _stopping_since is None:
        _stopping_since = time.monotonic()
    signal.signal(signal.SIGINT, _while_stopping)
    signal.signal(signal.SIGTERM, _while_stopping)


def _while_stopping(signum: int, frame: object) -> None:
    if _stopping_since is not None and time.monotonic() - _stopping_since < REPEAT_GRACE_S:
        return
    # Insisted on: no clean-up is worth more than the caller's word. The record is safe
    # (every event is committed when appended); 130 as for the first interruption.
    sys.stderr.write("interrupted again: stopping now\n")
    exit_now(EXIT_INTERRUPTED)


def exit_now(status: int) -> None:
    """End the process with `status` after flushing the standard streams, skipping the
    interpreter's shutdown: it restores every signal's default action (a repeated
    SIGTERM in that window ends the process with 143) and waits for worker threads."""
    for stream in (sys.stdout, sys.stderr):
        # Closed, or a broken pipe: nothing more can be said.
        with contextlib.suppress(OSError, ValueError):
            stream.flush()
    os._exit(status)


def _raise_interrupt(signum: int, frame: object) -> None:
    begin_stopping()
    # Imported here: the command line installs its SIGTERM handler from this module at
    # start-up, and `ilh lint` must not load the command runner for it. Every command
    # that uses `immediate_interrupts` has imported it already.
    from harness.workspace.commands import kill_running_commands

    kill_running_commands()
    raise KeyboardInterrupt


@contextmanager
def immediate_interrupts() -> Iterator[None]:
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous_int = signal.getsignal(signal.SIGINT)
    if previous_int is not signal.SIG_IGN:
        signal.signal(signal.SIGINT, _raise_interrupt)
    previous_term = signal.signal(signal.SIGTERM, _raise_interrupt)
    try:
        yield
    finally:
        if not stopping():  # else `begin_stopping`'s handlers stay to the end
            if previous_int is not signal.SIG_IGN:
                signal.signal(signal.SIGINT, previous_int)
            signal.signal(signal.SIGTERM, previous_term)


def terminate_as_interrupt(signum: int, frame: object) -> None:
    """SIGTERM as Ctrl-C, for every command: given to whoever handles SIGINT now
    (asyncio's runner cancels the work; `immediate_interrupts` kills a running command).
    Where SIGINT is ignored (a shell's background job), SIGTERM still interrupts: the
    process stops as after Ctrl-C, rather than by SIGTERM's default action, which would
    print nothing and leave a command it started running."""
    handler = signal.getsignal(signal.SIGINT)
    begin_stopping()
    if not callable(handler):
        raise KeyboardInterrupt
    handler(signal.SIGINT, frame)  # type: ignore[arg-type]
