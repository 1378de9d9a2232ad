"""Bad input a user wrote (task file, scripted agent file, command line): one message with
its location and a code, reported with exit status 2 and never a traceback."""

from __future__ import annotations

import json
import os
import re
import stat
from pathlib import Path
from typing import Any, BinaryIO


class InputError(Exception):
    def __init__(self, path: Path | str, code: str, message: str, line: int = 0, col: int = 0):
        self.path = str(path)
        self.code = code
        self.message = message
        self.line = line
        self.col = col
        super().__init__(self.render())

    def render(self) -> str:
        where = self.path
        if self.line:
            where += f":{self.line}"
            if self.col:
                where += f":{self.col}"
        return f"{where}: {self.code} {self.message}"


#: The most the harness reads of one file a user names (a task file, an agent script or a
#: recording, a claim, iLang text, a handoff): far above any real one, and a log, a disk
#: image or `<(cat /dev/zero)` named by mistake ends in a message instead of filling the
#: memory (a device itself is refused before a byte is read, `_not_a_file`).
MAX_INPUT_BYTES = 256 * 1024 * 1024


def read_capped(file: BinaryIO, where: Path | str, what: str) -> bytes:
    """All of `file` when it holds at most `MAX_INPUT_BYTES` (read no further than one
    byte past it); `InputError` (E500) otherwise."""
    cap = MAX_INPUT_BYTES
    data = file.read(cap + 1)
    if len(data) > cap:
        raise InputError(
            where,
            "E500",
            f"{what} is larger than {cap // (1024 * 1024)} MiB; not read (is it the file "
            "you meant?)",
        )
    return data


def _named(fd: int) -> bool:
    """Is the pipe open on `fd` a named one (a FIFO in a folder), not an anonymous pipe?"""
    try:
        return not os.readlink(f"/proc/self/fd/{fd}").startswith("pipe:[")
    except OSError:  # no /proc: assume named, the case that would hang
        return True


def _not_a_file(mode: int, fd: int) -> str | None:
    """Why a file of this mode is not read (None: read it). Only a regular file and an
    anonymous pipe are: `/dev/zero` (a character device) was read to the 256 MiB cap, as
    much memory and most of a second, before a message that it was too large; `/dev/null`
    was an empty task; a named pipe with no writer blocked in `open`. The pipe `<(cmd)`
    hands over (an anonymous pipe, its writer already there) is still read, blocking."""
    if stat.S_ISREG(mode):
        return None
    if stat.S_ISFIFO(mode):
        if not _named(fd):
            return None
        return "it is a named pipe (FIFO), not a file; save the text to a file"
    if stat.S_ISDIR(mode):
        return "it is a folder, not a file"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "it is a device, not a regular file; name the file you meant"
    return "it is not a regular file (a socket?); name the file you meant"


def read_bytes(path: Path, what: str) -> bytes:
    """The bytes of a user's file, at most `MAX_INPUT_BYTES`; `InputError` (E500) for one
    that cannot be read, is larger, or is not a regular file (see `_not_a_file`)."""
    try:
        # Opened without blocking: a named pipe (FIFO) with no writer blocked the command
        # forever in `open`, before a word was said.
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        try:
            why = _not_a_file(os.fstat(fd).st_mode, fd)
            if why is not None:
                raise InputError(path, "E500", f"cannot read {what}: {why}")
            os.set_blocking(fd, True)
        except BaseException:
            os.close(fd)
            raise
        with os.fdopen(fd, "rb") as file:
            return read_capped(file, path, what)
    except OSError as err:
        raise InputError(path, "E500", f"cannot read {what}: {err.strerror or err}") from None


def read_utf8(path: Path, what: str) -> str:
    """The text of a user's file; `what` names it in the message ("the task file")."""
    try:
        return read_bytes(path, what).decode("utf-8")
    except UnicodeDecodeError as err:
        raise InputError(path, "E300", f"not UTF-8 (byte {err.start})") from None


class InputErrors(InputError):
    """Several bad inputs found in one pass (a batch of task files): each is reported, not
    only the first, so one run of the command shows everything to fix."""

    def __init__(self, errors: list[InputError]) -> None:
        self.errors = errors
        first = errors[0]
        super().__init__(first.path, first.code, first.message, first.line, first.col)

    def render(self) -> str:
        return "\n".join(e.render() for e in getattr(self, "errors", [])) or super().render()


#: What a parser that recursed past Python's limit says (JSON and TOML arrays and tables
#: nest by recursion: `[[[[…` a hundred thousand deep is a RecursionError, not a syntax
#: error, and would be a traceback).
TOO_DEEP = "nested too deeply (arrays or tables inside one another)"


#: What a parser says of an integer longer than Python converts (`sys.int_info`'s
#: default limit): JSON and TOML parsers raise a plain ValueError for it, whose text
#: advises a Python call, and which no reader expected (a traceback).
NUMBER_TOO_LONG = "a number of more than 4300 digits"


#: Editors on Windows save "UTF-8" with a byte order mark; TOML and JSON parsers reject it
#: with a message that does not say what to do.
BOM = "\ufeff"
BOM_MESSAGE = "the file starts with a byte order mark (U+FEFF): save it as UTF-8 without BOM"


#: A `\\uD800`-`\\uDFFF` escape: half of a surrogate pair, maybe alone.
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


def parse_json(text: str, path: Path | str, line: int = 0) -> Any:
    """`text` as JSON; `InputError` (E300) with its place when it is not JSON."""
    if text.startswith(BOM) and line <= 1:
        raise InputError(path, "E300", BOM_MESSAGE, 1, 1)
    try:
        value = json.loads(text)
    except json.JSONDecodeError as err:
        raise InputError(
            path, "E300", f"not JSON: {err.msg}", line or err.lineno, err.colno
        ) from None
    except RecursionError:
        raise InputError(path, "E300", f"not JSON: {TOO_DEEP}", line) from None
    except ValueError:
        raise InputError(path, "E300", f"not JSON: {NUMBER_TOO_LONG}", line) from None
    # JSON may escape half of a surrogate pair (`"\\ud800"`); Python keeps it as a lone
    # surrogate, which no UTF-8 text can hold: the first digest or write of it (the run
    # record) raised UnicodeEncodeError, a traceback. Only text with such an escape is
    # checked, so a plain file pays nothing.
    if _SURROGATE_ESCAPE.search(text):
        try:
            json.dumps(value, ensure_ascii=False).encode("utf-8")
        except RecursionError:  # as deep as `loads` allowed: no surrogate check, no harm
            pass
        except UnicodeEncodeError:
            raise InputError(
                path, "E300", "not JSON text: a lone surrogate escape (\\ud800-\\udfff) "
                "is no character", line,
            ) from None  # fmt: skip
    return value
