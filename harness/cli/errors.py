"""One error format for every command: `error LOCATION: CODE message`, on stderr, exit 2.

Bad input is normal input (DESIGN §7): a task file, an iLang file, a store path or a flag
gets one line that names where the problem is and its code, and never a traceback. The
line is printed as plain text: paths and keys appear verbatim (rich markup would eat
`[local]` or `ws[1]`).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from typing import IO, Any

import click
from rich.console import Console

from harness.inputs.errors import InputError

EXIT_BAD_INPUT = 2


class BadInput(click.ClickException):
    """A click exception in the project's format (click prints it and exits 2)."""

    exit_code = EXIT_BAD_INPUT

    def __init__(self, location: str, code: str, message: str) -> None:
        self.location = location
        self.code = code
        super().__init__(message)

    @classmethod
    def of(cls, err: InputError) -> BadInput:
        where = err.render().split(": ", 1)[0]
        return cls(where, err.code, err.message)

    def format_message(self) -> str:
        return f"{self.location}: {self.code} {self.message}"

    def show(self, file: IO[Any] | None = None) -> None:
        click.echo(f"error {self.format_message()}", err=True, file=file)


@contextmanager
def reader_may_leave() -> Iterator[None]:
    """Output to a pipe whose reader stopped early (`ilh grade --json | head -c 1`): the
    verdict's exit status must not turn into click's 1 for a broken pipe. What was not
    written is dropped; stdout goes to /dev/null so the final flush cannot fail either."""
    try:
        yield
    except BrokenPipeError:
        _stdout_to_devnull()


class ReportConsole(Console):
    """rich's console for a command's report: a reader that leaves early ends the output,
    not the command (rich's default exits 1, which would hide the verdict's status)."""

    def on_broken_pipe(self) -> None:
        self.quiet = True
        _stdout_to_devnull()


def _stdout_to_devnull() -> None:
    """The reader is gone: what is still written (and the final flush) goes nowhere."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    with suppress(OSError):
        os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)
