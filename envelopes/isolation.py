"""Isolation of untrusted text in `::UNTRUSTED` blocks (SPEC-v4.0-FINAL §1, DESIGN §4).

A block, exactly as §1 shows it:

    ::UNTRUSTED{id:u_…|source:user|role:objective|effects:none|delimiter:EOF_…}
    <<<EOF_…
    content
    EOF_…
    ::END_UNTRUSTED{id:u_…}

Each block gets a fresh random id and a fresh random delimiter (`secrets`), drawn again
until neither occurs anywhere in the content. So no line of the content can be the
delimiter line, and a block ends only at its own delimiter: an `::END_UNTRUSTED` line,
a forged `EOF_x` line or a copy of the header inside the payload is content.

How content travels: the payload lines are exactly `content.split("\\n")`, and the
reader joins them back with `"\\n"`. A content ending in a newline therefore shows as an
empty last payload line; a content without a final newline has none; the empty content
is one empty payload line. `wrap_untrusted` returns the block without a trailing
newline, and `unwrap_untrusted` accepts one. Other line-break characters (`\\r`,
U+2028, …) are carried inside payload lines untouched: `unwrap_untrusted` splits on
`\\n` only, so `unwrap_untrusted(wrap_untrusted(c)) == c` for every string `c`.
"""

from __future__ import annotations

import secrets
from collections.abc import Sequence

from envelopes.declarations.untrusted import Untrusted
from envelopes.errors import IlangError

OPENER = "<<<"


def _fresh_tokens(content: str) -> tuple[str, str]:
    """A random id and delimiter, neither of which occurs in `content`."""
    while True:
        block_id = f"u_{secrets.token_hex(6)}"
        delimiter = f"EOF_{secrets.token_hex(12)}"
        if delimiter not in content and block_id not in content:
            return block_id, delimiter


def wrap_untrusted(content: str, *, source: str, role: str, effects: str = "none") -> str:
    """Wrap `content` in a fresh `::UNTRUSTED` block (no trailing newline).

    `source`, `role` and `effects` come from the harness, never from the content; a
    value no header can carry raises pydantic's ValidationError (a ValueError).
    """
    block_id, delimiter = _fresh_tokens(content)
    header = Untrusted(id=block_id, source=source, role=role, effects=effects, delimiter=delimiter)
    return "\n".join([header.render(), OPENER + delimiter, content, delimiter, header.end_line()])


def read_untrusted(
    lines: Sequence[str], start: int = 0, *, line: int = 1
) -> tuple[Untrusted, str, int]:
    """Read the block whose header is `lines[start]`.

    Returns the header, the content, and the index of the first line after the block's
    `::END_UNTRUSTED` line. `line` is the 1-based line number of `lines[0]`, for error
    positions. The payload ends at the first line that is exactly the delimiter; the
    line after it must be the matching `::END_UNTRUSTED{id:…}` (E300 otherwise: a block
    never ends anywhere else).
    """
    if start >= len(lines):
        raise IlangError("E300", "expected an ::UNTRUSTED header", line + start, 1)
    header = Untrusted.parse(lines[start], line=line + start)
    if header.delimiter is None:
        raise IlangError(
            "E300",
            "::UNTRUSTED block carries no delimiter: no inline payload to read",
            line + start,
            1,
        )
    if header.id is None:
        raise IlangError("E300", "::UNTRUSTED block needs an id", line + start, 1)
    opener_at = start + 1
    if opener_at >= len(lines) or lines[opener_at] != OPENER + header.delimiter:
        raise IlangError(
            "E300",
            f"expected {OPENER}{header.delimiter} after the header",
            line + opener_at,
            1,
        )
    close_at = opener_at + 1
    while close_at < len(lines) and lines[close_at] != header.delimiter:
        close_at += 1
    if close_at >= len(lines):
        raise IlangError(
            "E300",
            f"untrusted block {header.id} never reaches its delimiter line",
            line + start,
            1,
        )
    end_at = close_at + 1
    if end_at >= len(lines) or lines[end_at].strip(" \t") != header.end_line():
        raise IlangError(
            "E300",
            f"expected {header.end_line()} after the delimiter line",
            line + end_at,
            1,
        )
    return header, "\n".join(lines[opener_at + 1 : close_at]), end_at + 1


def unwrap_untrusted(block: str) -> tuple[Untrusted, str]:
    """Read back a whole block: its header and its content exactly as wrapped.

    Nothing may follow the `::END_UNTRUSTED` line but one optional newline.
    """
    lines = block.split("\n")
    if len(lines) > 1 and lines[-1] == "":
        lines.pop()
    header, content, after = read_untrusted(lines)
    if after != len(lines):
        raise IlangError("E300", "text after the ::END_UNTRUSTED line", after + 1, 1)
    return header, content
