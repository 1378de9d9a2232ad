"""rich's consoles for the commands: a command's report (stdout) and its messages (stderr).

Apart from `harness.cli.errors` so that a command that prints no rich output (`ilh lint`
writing to a pipe or a file, `--json`) does not import rich: rich's console is a quarter
of a short command's start-up (benchmarks/startup.py)."""

from __future__ import annotations

import os
from typing import Any

from rich.console import Console

from harness.cli.errors import stdout_to_devnull


class ReportConsole(Console):
    """rich's console for a command's report: a reader that leaves early ends the output,
    not the command (rich's default exits 1, which would hide the verdict's status).
    Emoji codes are off: `FILE:100:7` was printed `FILE💯7` (`:100:` is one), and text an
    agent wrote (`:skull:`) is shown as written."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("emoji", False)
        super().__init__(*args, **plain_if_no_color(kwargs))

    def on_broken_pipe(self) -> None:
        self.quiet = True
        stdout_to_devnull()


def message_console() -> Console:
    """The console a command's progress, messages and errors go to (stderr): no
    highlighting (paths and numbers stay as written), long lines not wrapped (a path is
    copied whole), no emoji codes (as `ReportConsole`)."""
    return Console(
        **plain_if_no_color(dict(stderr=True, highlight=False, soft_wrap=True, emoji=False))
    )


def plain_if_no_color(options: dict[str, Any]) -> dict[str, Any]:
    """rich's options for a console, with no style at all when `NO_COLOR` is set (not
    empty, as no-color.org and rich read it): rich then drops colours only, and bold and
    dim still reached the terminal as escape sequences. No colour system, no sequence."""
    if os.environ.get("NO_COLOR"):
        options.setdefault("color_system", None)
    return options
