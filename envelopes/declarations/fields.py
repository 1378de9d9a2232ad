"""Split a declaration header into fields, and render fields back canonically.

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
from collections.abc import Iterable, Sequence
from typing import NamedTuple

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
_RESERVED_CHARACTER = re.compile('[|{}"｜]')
# A run of characters a quoted string holds as they are: printable ASCII and tab, less the
# quote and the backslash, which end or escape.
_QUOTED_RUN = re.compile(r"[\t !#-\[\]-~]+")
# Where a bare segment or value ends (or meets a reserved character): one search in C
# instead of a test per character.
_SEGMENT_END = re.compile(r'[:|"{}]')
_VALUE_END = re.compile(r'[|"{}]')
_PAD_RUN = re.compile(r"[ \t]*")
# The common field: an identifier key, its colon, then a bare value of printable ASCII (pads
# around the colon allowed). When the character after it is a stop, the careful steps below
# would accept it unchanged; anything else goes through them.
_PLAIN_FIELD = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)[ \t]*:[ \t]*([ !#-z~]*)")


class Segment(NamedTuple):
    """One `|`-separated piece of a header: positional when `key` is None.

    A named tuple, built by one C call, where a model validated each field (the scanner
    alone builds segments, from strings it has cut itself). It compares as the frozen model
    did: all four fields, and only with another segment."""

    key: str | None
    value: str
    line: int = 1
    col: int = 1

    def __eq__(self, other: object) -> bool:
        return other.__class__ is Segment and tuple.__eq__(self, other)

    def __ne__(self, other: object) -> bool:
        return not self.__eq__(other)

    def __hash__(self) -> int:
        return tuple.__hash__(self)


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
    if _PLAIN_VALUE.match(value) or value.isprintable():
        return value  # (a printable character is never a control, surrogate or separator)
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
        run = _QUOTED_RUN.match(text, i)
        if run is not None:
            out.append(run.group(0))
            i = run.end()
            if i >= len(text):
                break
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
    if value.isprintable() and _RESERVED_CHARACTER.search(value) is None:
        # `str.isprintable` refuses exactly the categories `_bare_char_ok` refuses (all
        # of C and Z but the ASCII space): with no reserved character, every one is fine.
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
    if pos < len(text) and text[pos] in _PAD:
        run = _PAD_RUN.match(text, pos)
        return run.end() if run else pos
    return pos


_new = tuple.__new__


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
        plain = _PLAIN_FIELD.match(text, pos)
        if plain is not None:
            end = plain.end()
            if end == len(text) or text[end] in self.stops:
                key, value = plain.groups()
                return _new(Segment, (key, value.rstrip(_PAD), self.line, self.col + start)), end
        if pos < len(text) and text[pos] == '"':
            value, pos = read_quoted(text, pos, line=self.line, col=self.col)
            return _new(Segment, (None, value, self.line, self.col + start)), (
                self.after_quoted(pos)
            )
        found = _SEGMENT_END.search(text, pos)
        end = found.start() if found else len(text)
        stop = text[end] if found else ""
        if stop == ":":
            return self.field(start, end)
        if stop in ('"', "{") or (stop == "}" and not self.until_brace):
            raise self.error("E303", f"reserved character {stop!r} in a bare value", end)
        raw = text[start:end].rstrip(_PAD)
        if raw == "":
            raise self.error("E300", "empty field between separators", start)
        _check_fullwidth_key(raw, start, line=self.line, col=self.col)
        _check_bare(raw, start, line=self.line, col=self.col)
        return _new(Segment, (None, raw, self.line, self.col + start)), end

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
            found = _VALUE_END.search(text, pos)
            end = found.start() if found else len(text)
            if found and text[end] not in self.stops:
                raise self.error("E303", f"reserved character {text[end]!r} in a bare value", end)
            value = text[pos:end].rstrip(_PAD)
            _check_bare(value, pos, line=self.line, col=self.col)
            pos = end
        return _new(Segment, (key, value, self.line, self.col + start)), pos

    def after_quoted(self, pos: int) -> int:
        pos = _skip_pad(self.text, pos)
        if pos < len(self.text) and self.text[pos] not in self.stops:
            raise self.error("E300", "text after a quoted value", pos)
        return pos


def split_fields(content: str, *, line: int = 1, col: int = 1) -> list[Segment]:
    """Split header content (between the braces) into ordered segments.

    `col` is the 1-based column of `content[0]` in its line, for error positions.
    """
    if _PLAIN_HEADER.match(content):
        plain = _plain_segments(content, line, col)
        if plain is not None:
            return plain
    segments, _ = _Scanner(content, line=line, col=col, until_brace=False).scan(0)
    return segments


# A header of printable ASCII without quotes, braces or tabs: its segments are its `|` pieces,
# its pads are spaces, and no character in it can be reserved, invisible or full-width.
_PLAIN_HEADER = re.compile(r"[ !#-z|~]*\Z")


def _plain_segments(content: str, line: int, col: int) -> list[Segment] | None:
    """The scanner's segments of a plain header, cut with string methods; None when a
    piece would be an error (empty, or a malformed key), which the scanner then reports."""
    segments: list[Segment] = []
    seen: dict[str, str] = {}
    offset = 0
    for piece in content.split("|"):
        body = piece.lstrip(" ")
        start = offset + len(piece) - len(body)
        offset += len(piece) + 1
        colon = body.find(":")
        if colon < 0:
            value = body.rstrip(" ")
            if not value:
                return None
            segments.append(_new(Segment, (None, value, line, col + start)))
            continue
        key = body[:colon].rstrip(" ")
        if not IDENTIFIER.fullmatch(key):
            return None
        folded = key.lower()
        if folded in seen:
            raise IlangError(
                "E303", f"repeated key {key!r} (first as {seen[folded]!r})", line, col + start
            )
        seen[folded] = key
        segments.append(_new(Segment, (key, body[colon + 1 :].strip(" "), line, col + start)))
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


# What the declaration models validate and read with, in plain Python (no pydantic): the
# linter reads a ::STATUS with them alone when the model would accept it
# (`envelopes.declarations.status_rules`).


def check_key(key: str) -> str:
    """Pydantic validator of an extra field's key: a lowercase identifier."""
    if not LOWER_KEY.fullmatch(key):
        raise ValueError(f"field key {key!r} is not a lowercase identifier")
    return key


def check_extras(extras: Sequence[tuple[str, str]], reserved: frozenset[str]) -> None:
    """Extras may neither repeat a key nor shadow a named field."""
    seen: set[str] = set()
    for key, _ in extras:
        folded = key.lower()
        if folded in reserved:
            raise ValueError(f"extra field {key!r} shadows a named field")
        if folded in seen:
            raise ValueError(f"extra field {key!r} is repeated")
        seen.add(folded)


# A leading positional that stands for a declaration's id (narrative_payload grammar:
# the first segment names the declaration). Anything else there is E300, not a guess.
_POSITIONAL_ID = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.\-]*")


class FieldReader:
    """Hands out a header's segments by key; whatever is left becomes extras."""

    def __init__(self, decl: str, segments: Sequence[Segment], line: int, col: int) -> None:
        self.decl = decl
        self.line = line
        self.col = col
        self.positionals = [s for s in segments if s.key is None]
        self.fields: dict[str, Segment] = {}
        self.order: list[str] = []
        # Keys already read, taken or not: a body line may not repeat any of them.
        self.seen: set[str] = set()
        for segment in segments:
            if segment.key is not None:
                self._add(segment, segment.key)
        if self.positionals and segments[0].key is not None:
            stray = self.positionals[0]
            raise IlangError(
                "E300",
                f"::{decl} positional segment {stray.value!r} must come first",
                stray.line,
                stray.col,
            )

    def add_body(self, body: Sequence[tuple[int, str]]) -> None:
        """Merge `key:value` body lines into the header's fields.

        The spec defines no body for this declaration; a field written on a body line
        is still a field of it (a claim must not hide on the next line), so it is read
        with the header's rules, and a key repeated across header and body is E303.
        """
        for line_no, text in body:
            for segment in split_fields(text, line=line_no, col=1):
                if segment.key is None:
                    raise IlangError(
                        "E300",
                        f"::{self.decl} body line is not a key:value field",
                        line_no,
                        segment.col,
                    )
                if segment.key.lower() in self.seen:
                    raise IlangError("E303", f"repeated key {segment.key!r}", line_no, segment.col)
                self._add(segment, segment.key)

    def _add(self, segment: Segment, key: str) -> None:
        if not LOWER_KEY.fullmatch(key):
            raise IlangError(
                "E303",
                f"::{self.decl} field key {key!r} must be lowercase",
                segment.line,
                segment.col,
            )
        self.fields[key] = segment
        self.order.append(key)
        self.seen.add(key.lower())

    def take(self, key: str) -> Segment | None:
        segment = self.fields.pop(key, None)
        if segment is not None:
            self.order.remove(key)
        return segment

    def take_str(self, key: str) -> str | None:
        segment = self.take(key)
        return None if segment is None else segment.value

    def require(self, key: str) -> Segment:
        segment = self.take(key)
        if segment is None:
            raise IlangError("E300", f"::{self.decl} needs a {key} field", self.line, self.col)
        return segment

    def take_positional_id(self) -> str | None:
        """A single leading positional names the declaration (`::RUBRIC{r1|…}`)."""
        if not self.positionals:
            return None
        first = self.positionals[0]
        if len(self.positionals) > 1:
            extra = self.positionals[1]
            raise IlangError(
                "E300",
                f"::{self.decl} has more than one positional segment",
                extra.line,
                extra.col,
            )
        if not _POSITIONAL_ID.fullmatch(first.value):
            raise IlangError(
                "E300",
                f"::{self.decl} positional segment {first.value!r} is not an id",
                first.line,
                first.col,
            )
        if "id" in self.fields:
            raise IlangError("E303", f"::{self.decl} names its id twice", first.line, first.col)
        self.positionals = []
        return first.value

    def no_positionals(self) -> None:
        if self.positionals:
            stray = self.positionals[0]
            raise IlangError(
                "E300",
                f"::{self.decl} takes no positional segment, found {stray.value!r}",
                stray.line,
                stray.col,
            )

    def extras(self) -> tuple[tuple[str, str], ...]:
        return tuple((key, self.fields[key].value) for key in self.order)
