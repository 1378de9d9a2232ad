"""What reaches a person's terminal from text nobody vetted (an agent's reply, a tool's or
a check's output, a file name in the workspace): shown, never obeyed."""

from __future__ import annotations

import re

#: Characters a terminal acts on instead of showing: C0 controls but newline and tab (ESC
#: starts the sequences that clear the screen, set the title, hide a link's target; a
#: carriage return overwrites the line shown), DEL and C1 controls, and the bidirectional
#: overrides that reorder what is displayed. Agent text, tool output and file names
#: reach the terminal through `printable`.
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def _visible(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def printable(text: str) -> str:
    """`text` with every character a terminal would act on written out as an escape
    (`\\x1b`): shown, so the reader sees it was there, never obeyed."""
    return _UNSAFE.sub(_visible, text.replace("\r\n", "\n"))


def shown(value: object) -> str:
    """Untrusted text for a rich markup string: printable, its markup escaped."""
    # Imported here: a command that writes plain text (`ilh lint` to a pipe) uses
    # `printable` alone and should not pay for rich's markup (and its text and styles).
    from rich.markup import escape

    return escape(printable(str(value)))
