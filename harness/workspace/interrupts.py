"""Ctrl-C for the commands that run things (`ilh run`, `ilh grade`): stop at once.

asyncio.run's own SIGINT handling only cancels its task, which takes effect at the next
await: after a long tool command or check has finished, or, with a scripted model that
never suspends, after the whole run. It leaves alone a handler that is not Python's
default one, so this one takes over: it kills the commands running now (in any thread)
and raises KeyboardInterrupt where the main thread is.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from harness.workspace.commands import kill_running_commands


def _raise_interrupt(signum: int, frame: object) -> None:
    kill_running_commands()
    raise KeyboardInterrupt


@contextmanager
def immediate_interrupts() -> Iterator[None]:
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, _raise_interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
