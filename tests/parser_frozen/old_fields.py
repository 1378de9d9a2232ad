"""Frozen copy of `envelopes/declarations/fields.py` as it stood before its scanner loops
became regex searches (commit a4f8d26). Test data for the differential test only.

Split a declaration header into fields, and render fields back canonically.

A header is the text between the braces of `::DECL{…}`: segments separated by `|`. A
segment is either positional (`@TASK`, `v3_only⇒warn`) or a `key:value` field split at
the FIRST colon, so a value may itself hold colons (`hash:sha256:abc123`).

Values follow SPEC.md §2.4: a bareword, or a quoted string `"…"` whose only escapes are
`\\"`, `\\\\` and `\\n`. The canonical renderer quotes exactly the values that could not be
read back as barewords, so `split_fields(render_fields(x))` gives `x` back.

Fail-closed readings where the spec is silent (each raises `IlangError`):

* A quote may only open a value (or a positional segment); a `"`, `{` or `}` inside a
  bare value is a reserved character (E303) rather than a guess at where the value ends.
* An unknown escape (`\\t`, `\\u…`) inside quotes is E300: §2.4 lists three escapes only.
* Full-width `｜` anywhere in a bare value is E300: SPEC-v5.0 Part III §1.3 lists the
  full-width punctuation legal in values (`（）：，、`) and `｜` is not among them, so a bare
  `｜` can only be a mistyped separator. Full-width `：` is legal in values; it is E300
  only where it stands as a key separator (an identifier right before it, no ASCII colon
  earlier in the segment).
* A repeated key is E303, compared case-insensitively (`state:` and `STATE:` would
  otherwise let a second claim hide behind the first).
* An empty segment (`a||b`, a trailing `|`) is E300.
* Invisible or line-breaking characters (controls, zero-width format characters, line and
  paragraph separators, non-ASCII spaces) are E303 in a bare value; inside quotes only
  characters that would break the line are refused.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable

from pydantic import BaseModel, ConfigDict

from envelopes.errors import IlangError

IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
LOWER_KEY = re.compile(r"[a-z_][a-z0-9_]*")

FULLWIDTH_COLON = "："
FULLWIDTH_PIPE = "｜"
_ESCAPES = {'"': '"', "\\": "\\", "n": "\n"}
# Characters with a structural meaning in a header; never legal in a bare value.
_RESERVED = frozenset('|{}"')
# Unicode categories a value may never hold (even quoted): they break or hide lines.
_NEVER_IN_VALUE = frozenset({"Cs", "Zl", "Zp"})
# Categories a bare value may not hold: they are invisible, so a bare reading of them
# would be a guess. Quoting makes them explicit.
_NOT_BARE = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"})
_PAD = " \t"
# Printable ASCII is the common case and needs no per-character category look-up: any value
# (tab and newline included) may hold it, and a bare value may hold all of it but `"{|}`.
_PLAIN_VALUE = re.compile(r"[\x20-\x7e\t\n]*\Z")
_PLAIN_BARE = re.compile(r"[ !#-z~]*\Z")


class Segment(BaseModel):
    """One `|`-separated piece of a header: positional when `key` is None."""

    model_config = ConfigDict(frozen=True)

    key: str | None
    value: str
    line: int = 1
    col: int = 1


def value_char_allowed(ch: str) -> bool:
    """Whether a field value may hold `ch` at all (quoted if need be).

    `\\n` travels as an escape and a tab is harmless inside quotes; every other control
    character, surrogate, or line/paragraph separator would break the one-line header
    (Python's `str.splitlines` splits on them), so no value may carry it.
    """
    if ch in "\n\t":
        return True
    category = unicodedata.category(ch)
    return category != "Cc" and category not in _NEVER_IN_VALUE


def check_value(value: str) -> str:
    """Pydantic validator: refuse a value no canonical rendering could carry."""
    if _PLAIN_VALUE.match(value):
        return value
    for ch in value:
        if not value_char_allowed(ch):
            raise ValueError(f"value holds a character that cannot be rendered: {ch!r}")
    return value


def _bare_char_ok(ch: str) -> bool:
    if ch in _RESERVED or ch == FULLWIDTH_PIPE:
        return False
    category = unicodedata.category(ch)
    if category in _NOT_BARE:
        return False
    return not (category == "Zs" and ch != " ")


def needs_quoting(value: str, *, positional: bool = False) -> bool:
    """Whether `value` must be quoted to read back unchanged.

    A positional segment with a colon (ASCII or full-width) would read back as a key,
    so it is quoted too. Backslashes are read literally in a bare value but quoted
    anyway, so no reader has to know that.
    """
    if value == "" or value[0].isspace() or value[-1].isspace():
        return True
    if "\\" in value:
        return True
    if positional and (":" in value or FULLWIDTH_COLON in value):
        return True
    if _PLAIN_BARE.match(value):
        return False
    return not all(_bare_char_ok(ch) for ch in value)


def quote(value: str) -> str:
    escaped = value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return f'"{escaped}"'


def render_value(value: str, *, positional: bool = False) -> str:
    return quote(value) if needs_quoting(value, positional=positional) else value


def render_segment(key: str | None, value: str) -> str:
    if key is None:
        return render_value(value, positional=True)
    return f"{key}:{render_value(value)}"


def render_fields(segments: Iterable[tuple[str | None, str]]) -> str:
    """Join (key, value) pairs (key None = positional) into canonical header text."""
    return "|".join(render_segment(key, value) for key, value in segments)


def read_quoted(text: str, pos: int, *, line: int, col: int) -> tuple[str, int]:
    """Read a quoted string starting at `text[pos] == '"'`; return (value, index after)."""
    out: list[str] = []
    i = pos + 1
    while i < len(text):
        ch = text[i]
        if ch == '"':
            return "".join(out), i + 1
        if ch == "\\":
            nxt = text[i + 1] if i + 1 < len(text) else ""
            if nxt not in _ESCAPES:
                raise IlangError(
                    "E300", f"unknown escape \\{nxt} in a quoted string", line, col + i
                )
            out.append(_ESCAPES[nxt])
            i += 2
            continue
        if ch == "\n" or not value_char_allowed(ch):
            raise IlangError("E303", f"character {ch!r} in a quoted string", line, col + i)
        out.append(ch)
        i += 1
    raise IlangError("E300", "unterminated quoted string", line, col + pos)


def _check_bare(value: str, start: int, *, line: int, col: int) -> None:
    if _PLAIN_BARE.match(value):
        return
    for offset, ch in enumerate(value):
        if ch == FULLWIDTH_PIPE:
            raise IlangError(
                "E300",
                "full-width ｜ used as a field separator; use ASCII |",
                line,
                col + start + offset,
            )
        if not _bare_char_ok(ch):
            raise IlangError(
                "E303",
                f"reserved or invisible character {ch!r} in a bare value (quote it)",
                line,
                col + start + offset,
            )


def _check_fullwidth_key(text: str, start: int, *, line: int, col: int) -> None:
    """E300 when `：` stands where a key separator would (identifier right before it)."""
    idx = text.find(FULLWIDTH_COLON)
    if idx >= 0 and IDENTIFIER.fullmatch(text[:idx].strip(_PAD)):
        raise IlangError(
            "E300",
            "full-width ： used as a key separator; use ASCII :",
            line,
            col + start + idx,
        )


def _skip_pad(text: str, pos: int) -> int:
    while pos < len(text) and text[pos] in _PAD:
        pos += 1
    return pos


class _Scanner:
    """Reads segments from `text`, optionally stopping at the header's closing brace."""

    def __init__(self, text: str, *, line: int, col: int, until_brace: bool) -> None:
        self.text = text
        self.line = line
        self.col = col
        self.until_brace = until_brace
        self.stops = "|}" if until_brace else "|"

    def error(self, code: str, message: str, pos: int) -> IlangError:
        return IlangError(code, message, self.line, self.col + pos)

    def scan(self, pos: int) -> tuple[list[Segment], int]:
        segments: list[Segment] = []
        seen: dict[str, str] = {}
        start = _skip_pad(self.text, pos)
        if start >= len(self.text) and not self.until_brace:
            return segments, start
        if self.until_brace and self.text[start : start + 1] == "}":
            return segments, start
        while True:
            segment, pos = self.segment(pos)
            if segment.key is not None:
                folded = segment.key.lower()
                if folded in seen:
                    raise IlangError(
                        "E303",
                        f"repeated key {segment.key!r} (first as {seen[folded]!r})",
                        segment.line,
                        segment.col,
                    )
                seen[folded] = segment.key
            segments.append(segment)
            if pos >= len(self.text):
                if self.until_brace:
                    raise self.error("E300", "unclosed brace: header has no closing }", pos)
                return segments, pos
            if self.text[pos] == "}":
                return segments, pos
            pos += 1  # the `|`

    def segment(self, pos: int) -> tuple[Segment, int]:
        text = self.text
        pos = _skip_pad(text, pos)
        start = pos
        if pos < len(text) and text[pos] == '"':
            value, pos = read_quoted(text, pos, line=self.line, col=self.col)
            return Segment(key=None, value=value, line=self.line, col=self.col + start), (
                self.after_quoted(pos)
            )
        end = pos
        while end < len(text) and text[end] not in ':|"{}':
            end += 1
        stop = text[end] if end < len(text) else ""
        if stop == ":":
            return self.field(start, end)
        if stop in ('"', "{") or (stop == "}" and not self.until_brace):
            raise self.error("E303", f"reserved character {stop!r} in a bare value", end)
        raw = text[start:end].rstrip(_PAD)
        if raw == "":
            raise self.error("E300", "empty field between separators", start)
        _check_fullwidth_key(raw, start, line=self.line, col=self.col)
        _check_bare(raw, start, line=self.line, col=self.col)
        return Segment(key=None, value=raw, line=self.line, col=self.col + start), end

    def field(self, start: int, colon: int) -> tuple[Segment, int]:
        text = self.text
        raw_key = text[start:colon]
        _check_fullwidth_key(raw_key, start, line=self.line, col=self.col)
        key = raw_key.rstrip(_PAD)
        if not IDENTIFIER.fullmatch(key):
            raise self.error("E300", f"malformed field key {key!r}", start)
        pos = _skip_pad(text, colon + 1)
        if pos < len(text) and text[pos] == '"':
            value, pos = read_quoted(text, pos, line=self.line, col=self.col)
            pos = self.after_quoted(pos)
        else:
            end = pos
            while end < len(text) and text[end] not in self.stops:
                if text[end] in '"{}':
                    raise self.error(
                        "E303", f"reserved character {text[end]!r} in a bare value", end
                    )
                end += 1
            value = text[pos:end].rstrip(_PAD)
            _check_bare(value, pos, line=self.line, col=self.col)
            pos = end
        return Segment(key=key, value=value, line=self.line, col=self.col + start), pos

    def after_quoted(self, pos: int) -> int:
        pos = _skip_pad(self.text, pos)
        if pos < len(self.text) and self.text[pos] not in self.stops:
            raise self.error("E300", "text after a quoted value", pos)
        return pos


def split_fields(content: str, *, line: int = 1, col: int = 1) -> list[Segment]:
    """Split header content (between the braces) into ordered segments.

    `col` is the 1-based column of `content[0]` in its line, for error positions.
    """
    segments, _ = _Scanner(content, line=line, col=col, until_brace=False).scan(0)
    return segments


def scan_header(text: str, start: int, *, line: int = 1) -> tuple[list[Segment], int]:
    """Read segments from `text[start:]` up to the closing `}` of a header.

    Quotes are honoured, so a quoted `}` does not end the header. Returns the segments
    and the index of the closing brace. `text` is one line; columns count from 1.
    """
    scanner = _Scanner(text, line=line, col=1, until_brace=True)
    return scanner.scan(start)


def split_declaration(
    text: str, name: str, line: int = 1
) -> tuple[str, list[tuple[int, str]], int, int]:
    """Cut a declaration's text into (header content, body lines, header line, column).

    The header line is `::NAME{…}` (leading indentation allowed, nothing after the
    closing brace); body lines are the following non-blank lines, stripped, with their
    line numbers. Leading blank lines are skipped; the header's own line number and the
    1-based column where its content starts come back for error positions. An unclosed
    brace is E300: the v4 declarations are inline or header+body shapes, never brace
    spans.
    """
    lines = text.splitlines()
    first = 0
    while first < len(lines) and lines[first].strip() == "":
        first += 1
    if first == len(lines):
        raise IlangError("E300", f"expected ::{name}{{…}}, found no text", line, 1)
    header_line = lines[first]
    header_no = line + first
    indent = len(header_line) - len(header_line.lstrip(_PAD))
    opener = f"::{name}{{"
    if not header_line.startswith(opener, indent):
        raise IlangError("E300", f"expected a line starting {opener}", header_no, indent + 1)
    start = indent + len(opener)
    _, close = scan_header(header_line, start, line=header_no)
    if header_line[close + 1 :].strip(_PAD) != "":
        raise IlangError("E300", "text after the closing brace of the header", header_no, close + 2)
    body = [
        (header_no + offset, raw.strip())
        for offset, raw in enumerate(lines[first + 1 :], start=1)
        if raw.strip() != ""
    ]
    return header_line[start:close], body, header_no, start + 1
