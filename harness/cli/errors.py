"""One error format for every command: `error LOCATION: CODE message`, on stderr, exit 2.

Bad input is normal input (DESIGN §7): a task file, an iLang file, a store path or a flag
gets one line that names where the problem is and its code, and never a traceback. The
line is printed as plain text: paths and keys appear verbatim (rich markup would eat
`[local]` or `ws[1]`).
"""

from __future__ import annotations

import json
import os
import stat
import sys
from collections.abc import Iterable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import IO, Any

import click

from harness.inputs.errors import InputError

EXIT_BAD_INPUT = 2


class BadInput(click.ClickException):
    """A click exception in the project's format (click prints it and exits 2)."""

    exit_code = EXIT_BAD_INPUT

    def __init__(self, location: str, code: str, message: str, line: int = 0, col: int = 0):
        self.location = location
        self.code = code
        self.line = line  # also in `location`; apart for a JSON row (`ilh lint --json`)
        self.col = col
        super().__init__(message)

    @classmethod
    def of(cls, err: InputError) -> BadInput:
        where = err.render().split(": ", 1)[0]
        return cls(where, err.code, err.message, err.line, err.col)

    def format_message(self) -> str:
        return f"{self.location}: {self.code} {self.message}"

    def show(self, file: IO[Any] | None = None) -> None:
        click.echo(f"error {self.format_message()}", err=True, file=file)


class UserPath(click.Path):
    """A path typed on the command line. An empty one (`--store ""`, an unset variable
    in `--store "$STORE"`) is refused: click takes it as the current folder, which then
    reached the store's code as `.` and ended in a traceback."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, (str, bytes)) and not value:
            self.fail("an empty path names no file or folder", param, ctx)
        return super().convert(value, param, ctx)


class TaskFilePath(UserPath):
    """A TASK_FILE argument. A folder is the usual slip (`ilh run examples/honest`, tab
    completion stops at the slash): click's "is a directory" said what was wrong and not
    what to give; the task file inside, when there is one, is named."""

    def __init__(self) -> None:
        super().__init__(path_type=Path, dir_okay=False)

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, str) and value and os.path.isdir(value):
            inside = os.path.join(value, "task.toml")
            if os.path.isfile(inside):
                self.fail(f"{value!r} is a folder; its task file is {inside}", param, ctx)
            self.fail(
                f"{value!r} is a folder, not a task file: name the task's TOML file",
                param,
                ctx,
            )
        return super().convert(value, param, ctx)


@contextmanager
def reader_may_leave() -> Iterator[None]:
    """Output to a pipe whose reader stopped early (`ilh grade --json | head -c 1`): the
    verdict's exit status must not turn into click's 1 for a broken pipe. What was not
    written is dropped; stdout goes to /dev/null so the final flush cannot fail either."""
    try:
        yield
    except BrokenPipeError:
        stdout_to_devnull()


def stdout_to_devnull() -> None:
    """The reader is gone: what is still written (and the final flush) goes nowhere."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    with suppress(OSError):
        os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)


#: The first bytes of every SQLite database: a run store, whatever its name.
SQLITE_MAGIC = b"SQLite format 3\x00"


def same_file(a: Path, b: Path) -> bool:
    """Do `a` and `b` name one file (through links too), or the same path if one of them
    does not exist yet?"""
    try:
        return os.path.samefile(a, b)
    except OSError:
        return os.path.abspath(a) == os.path.abspath(b)


def _regular_head(path: Path, limit: int) -> bytes | None:
    """Up to `limit` first bytes of `path` when it is a regular file, else None. Opened
    without blocking: an output named by a pipe (`--out pipe.html`) hung in this look
    before anything was written."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        return os.read(fd, limit)
    except OSError:
        return None
    finally:
        os.close(fd)


def is_run_store(path: Path) -> bool:
    return _regular_head(path, len(SQLITE_MAGIC)) == SQLITE_MAGIC


def refuse_overwriting(out: Path, what: str, keep: Iterable[tuple[Path, str]] = ()) -> None:
    """An output file that would replace something the user cannot get back: a run store
    (the append-only record: `--out .ilh/runs.db` is one slip of the finger), or one of
    `keep` ((path, what it is): the task file, the record being certified…)."""
    for path, name in keep:
        if same_file(out, path):
            raise BadInput(str(out), "E303", f"{what} would overwrite {name}; name another file")
    if is_run_store(out):
        raise BadInput(str(out), "E303", f"{what} would overwrite a run store; name another file")
    try:
        mode = out.stat().st_mode
    except OSError:  # a new file, or one the writer will say it cannot write
        return
    if not stat.S_ISREG(mode):
        # A pipe would hang the command until someone reads it; a device or folder is
        # no place for it.
        raise BadInput(
            str(out), "E303", f"{what} would be written into a pipe, device or folder: "
            "name a regular file",
        )  # fmt: skip


def refuse_replacing_other_than(out: Path, what: str, starts: tuple[bytes, ...], kind: str) -> None:
    """An output that replaces a whole file (`ilh view --out FILE`) replaces only one of
    its own kind (its first bytes, blanks aside and case folded, start with one of
    `starts`) or an empty one: `--out task.toml`, one slip of tab completion, replaced the
    task file with the page."""
    if os.path.islink(out):
        return  # never read through: the writer refuses a link, and says so
    head = _regular_head(out, 512)
    if not head or head.lstrip().lower().startswith(starts):
        return  # new, empty, of its kind, or not a file (the writer says what it is)
    raise BadInput(
        str(out),
        "E303",
        f"{what} would replace a file that is not {kind}; name another file, or remove "
        "this one first",
    )


def refuse_recording_over(record: Path, keep: Iterable[tuple[Path, str]] = ()) -> None:
    """`--record FILE` appends JSON lines: never to a task file, a run store or any file
    whose content is not already a recording (a README named by mistake would be
    corrupted, not recorded to)."""
    refuse_overwriting(record, "the recording", keep)
    head = _regular_head(record, 1 << 20)
    if head is None:  # a new file, or one that cannot be written: the recorder says so
        return
    first = head.split(b"\n", 1)[0].strip()
    if not first:
        return
    try:
        line = json.loads(first)
    except (ValueError, RecursionError):
        line = None
    if not isinstance(line, dict):
        raise BadInput(
            str(record),
            "E303",
            "the recording would be appended to a file that is not one (its first line is "
            "not a JSON object); name a new file or an earlier recording",
        )
