"""The `ilh` program's entry: it holds Ctrl-C and SIGTERM from its first line.

Importing the command line (click, rich, pydantic…) takes a tenth of a second or more.
A Ctrl-C in that time was a KeyboardInterrupt traceback through importlib's frames, and
a SIGTERM ended the process silently (143), before `harness.cli.main` installed the
handlers that say "interrupted" and exit 130. Nothing has started then, so nothing needs
cleaning up: the message and the status, at once. This module imports nothing else, so
its own import is the only moment left uncovered. `ready()` hands SIGINT back to Python
(a KeyboardInterrupt the commands handle) once the command line is loaded.
"""

from __future__ import annotations

import os
import signal

EXIT_INTERRUPTED = 130


def _interrupted_while_starting(signum: int, frame: object) -> None:
    os.write(2, b"interrupted\n")
    os._exit(EXIT_INTERRUPTED)


def hold_signals_while_starting() -> None:
    # A SIGINT the process was started ignoring (a background job of a shell) stays
    # ignored; only Python's default handler is replaced. SIGTERM's default is death.
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        signal.signal(signal.SIGINT, _interrupted_while_starting)
    if signal.getsignal(signal.SIGTERM) == signal.SIG_DFL:
        signal.signal(signal.SIGTERM, _interrupted_while_starting)


def ready() -> None:
    """The command line is loaded: Ctrl-C is Python's KeyboardInterrupt again (SIGTERM
    is `harness.cli.main`'s to set)."""
    if signal.getsignal(signal.SIGINT) is _interrupted_while_starting:
        signal.signal(signal.SIGINT, signal.default_int_handler)


def main() -> None:
    hold_signals_while_starting()
    from harness.cli.main import main as ilh_main  # the slow import, held

    ilh_main()
