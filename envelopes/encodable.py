"""Text every UTF-8 encoder can carry, made from untrusted text that may hold half a
surrogate pair. Imports nothing but `re`: the run record and the tools use it."""

from __future__ import annotations

import re

# Half a surrogate pair: a str can hold one (a JSON "\ud800" escape; a file name whose
# bytes are not UTF-8, kept by Python's surrogateescape as U+DC80-U+DCFF), but no UTF-8
# can carry it, so hashing, recording or sending such text would raise. Untrusted text
# (a model's reply, a tool's output, a name in the workspace) is made whole first.
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def _whole(text: str, backslash: str) -> str:
    def shown(match: re.Match[str]) -> str:
        code = ord(match.group())
        if 0xDC80 <= code <= 0xDCFF:  # an undecodable byte: shown as the byte it was
            return f"{backslash}x{code - 0xDC00:02x}"
        return "\ufffd"

    return _LONE_SURROGATE.sub(shown, text) if _LONE_SURROGATE.search(text) else text


def whole_text(text: str) -> str:
    """`text` with every lone surrogate made encodable: an undecodable byte kept by
    surrogateescape as `\\xNN`, any other half pair as U+FFFD. Text without one is
    returned as it is."""
    return _whole(text, "\\")


def whole_json_text(text: str) -> str:
    """The same for JSON text written with `ensure_ascii=False` (where a lone surrogate
    stands raw inside a string literal): the result parses to the `whole_text` of each
    string, at any depth, without walking the value."""
    return _whole(text, "\\\\")
