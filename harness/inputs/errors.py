"""Bad input a user wrote (task file, scripted agent file, command line): one message with
its location and a code, reported with exit status 2 and never a traceback."""

from __future__ import annotations

from pathlib import Path


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


def read_utf8(path: Path, what: str) -> str:
    """The text of a user's file; `what` names it in the message ("the task file")."""
    try:
        return path.read_bytes().decode("utf-8")
    except OSError as err:
        raise InputError(path, "E500", f"cannot read {what}: {err.strerror or err}") from None
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
