"""A command's report written line by line to stdout: as plain text where rich would write
exactly that text, through rich (`ReportConsole`) everywhere else.

rich writes no style at all to what is not a terminal, so a line of plain words comes out
of it as those words and a newline. Importing rich's console to learn that was a quarter
of a short `ilh lint`'s start-up (benchmarks/startup.py). Byte for byte the same output
is the rule (tests/test_report_lines.py compares both writers): a line is written plainly
only when

* rich would pick no colour system: stdout is not a terminal and neither `FORCE_COLOR`
  nor `TTY_COMPATIBLE` (which rich reads to override that) is set, on POSIX;
* and the line holds nothing rich renders differently from its text: no `[` or `]`
  (markup, and rich's escaping of it), no backslash (an escape, or escape's doubling of
  one that ends a value), no tab (expanded to rich's tab stops by cell width), no control
  character (some are dropped).

Any other line goes through rich, as before, from the same markup.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING

from harness.cli.errors import stdout_to_devnull

if TYPE_CHECKING:
    from harness.cli.consoles import ReportConsole

#: What rich renders otherwise than as written (see the module's text).
_RICH_ONLY = re.compile(r"[\[\]\\\x00-\x1f\x7f]")


def rich_adds_no_style() -> bool:
    """Would rich's console for stdout pick no colour system (write bare text)? Answered
    as rich does (`Console.is_terminal`), and `False` whenever unsure."""
    if os.name != "posix" or "FORCE_COLOR" in os.environ or "TTY_COMPATIBLE" in os.environ:
        return False
    isatty = getattr(sys.stdout, "isatty", None)
    if isatty is None:
        return False
    try:
        return not isatty()
    except ValueError:  # closed: let rich meet it as it did
        return False


class ReportLines:
    """Lines of a report on stdout, each given as its rich markup (built only if rich is
    needed) and its plain text (what rich without styles makes of that markup)."""

    def __init__(self, **console_options: bool) -> None:
        self._options = console_options
        self._plain = rich_adds_no_style()
        self._console: ReportConsole | None = None
        self._gone = False  # the reader left: nothing more is written (as rich's quiet)

    def line(self, markup: Callable[[], str], plain: str) -> None:
        if self._plain and not _RICH_ONLY.search(plain):
            self._write(plain + "\n")
        else:
            self._rich().print(markup())

    def _rich(self) -> ReportConsole:
        if self._console is None:
            from harness.cli.consoles import ReportConsole

            self._console = ReportConsole(**self._options)
            self._console.quiet = self._gone
        return self._console

    def _write(self, text: str) -> None:
        if self._gone or (self._console is not None and self._console.quiet):
            return
        # As rich: written and flushed at once, a reader that left ends the output
        # (stdout then goes nowhere, so the final flush cannot fail), not the command.
        try:
            sys.stdout.write(text)
            sys.stdout.flush()
        except BrokenPipeError:
            self._gone = True
            stdout_to_devnull()
