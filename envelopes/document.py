"""Whole iLang documents: declarations in their three block shapes, body lines, chains,
tag lines and the document marker (SPEC-v5.0.md Part III §1).

`read_document` never raises on bad text: it returns the document it could read and one
finding per problem, each with its code, line and column. `parse_document` is the strict
form that raises the first error as `IlangError`.

Text inside an `::UNTRUSTED{…|delimiter:X}` block is opaque: it is kept verbatim and never
parsed, and the block ends only at its own delimiter line.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import Literal, NamedTuple

from envelopes.chain import (
    CONTROL,
    ENTITY_NAME,
    Chain,
    every_field_compared,
    head_of,
    is_operation_head,
    parse_chain,
    position_not_compared,
    scan_chain,
)
from envelopes.errors import Finding, IlangError
from envelopes.vocabulary import (
    DOUBLE_BRACE,
    NESTABLE_DECLARATIONS,
    PROSE_BODY,
    TOLERATED_ANNOTATIONS,
    TOP_LEVEL_DECLARATIONS,
)

Shape = Literal["inline", "header_body", "brace_span"]
BodyForm = Literal["B1", "B2", "B3", "B4", "B5", "B6", "B7", "B8", "temporal", "annotation"]

_DOC_MARKER = re.compile(r"::ILANG::\S+\Z")
_DECL_HEAD = re.compile(r"::([A-Z][A-Z0-9_]*)(?:::([A-Z][A-Z0-9_]*))?(.*)\Z", re.S)
_BAD_HEAD = re.compile(r"::(\S*)")
_TEMPORAL_PREFIX = re.compile(r"(T\[[^\]]+\])\s+(::.*)\Z", re.S)
_TEMPORAL_BIND = re.compile(r"T\[[^\]]+\]=\S+")
_TEMPORAL_NOTE = re.compile(r"(T\[[^\]]+\](→T\[[^\]]+\])?|PARALLEL\{[^}]*\})(\s.*)?\Z")
_TAG = r"\[[A-Z][A-Z0-9_\-]*(?::[^\[\]]*)?\]"
_TAG_LINE = re.compile(rf"(?:{_TAG})+\Z")
_ONE_TAG = re.compile(r"\[[A-Z][A-Z0-9_\-]*\]\Z")  # `[NAME]`: no value, no text
_TAG_TEXT = re.compile(rf"{_TAG}(\s+\S.*)?\Z")
_KEY = re.compile(r"([A-Za-z_][A-Za-z0-9_]*):(.*)\Z", re.S)
# Entities count only in structural positions; `@` inside free prose is not an entity
# (Part III Appendix B).
_ENTITY_TOKEN = re.compile(r"(?<=[{:|,→=])@([A-Za-z0-9][A-Za-z0-9_\-]*)?")
_DELIMITER_FIELD = re.compile(r"(?:^|\|)\s*delimiter:([^|}\s]+)")
_ID_FIELD = re.compile(r"(?:^|\|)\s*id:([^|}\s]+)")
_LINE_PAD = " \t"
# A control character, or a carriage return (which counts mid-line but not at a line's end):
# when the whole text has none, no line needs scanning.
_SUSPECT_CHARACTER = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029]")
_DOUBLE_INLINE = re.compile(r"\{([^{}]*)\}\{(.*)\}\Z", re.S)
_DOUBLE_OPEN = re.compile(r"\{([^{}]*)\}\{([^}]*)\Z", re.S)
_STRUCTURAL_MARKS = ("::", "[", "{", "}", "|", "⇒", "=>")
INDENT = "  "
# What a declaration's header line fixes before its shape is known: name, subname, temporal
# prefix and line number.
_Base = tuple[str, str | None, str | None, int]
_TIMED = ("T[", "PARALLEL{")  # the only starts a temporal bind or note can have
# The common declaration: `::NAME{header}` alone on its line, no brace inside the header.
_SIMPLE_DECLARATION = re.compile(r"::([A-Z][A-Z0-9_]*)\{([^{}]*)\}\Z")
# Names whose simple declaration needs no more than its header's checks and its body: every
# registered one but the marker, tolerated annotations, the double-brace narratives and the
# opaque block's pair.
_PLAIN_DECLARATIONS = (
    TOP_LEVEL_DECLARATIONS
    - DOUBLE_BRACE
    - TOLERATED_ANNOTATIONS
    - {"ILANG", "UNTRUSTED", "END_UNTRUSTED"}
)


@position_not_compared
class BodyLine(NamedTuple):
    form: BodyForm
    text: str
    """The line as written, stripped; empty for B7 and B8, which carry their own node."""
    chain: Chain | None = None
    nested: Declaration | None = None
    line: int = 0
    """Not compared: position only."""

    def render(self, depth: int) -> list[str]:
        pad = INDENT * depth
        if self.nested is not None:
            return self.nested.render_lines(depth)
        if self.chain is not None:
            return [pad + self.chain.render()]
        return [pad + self.text]

    @property
    def key(self) -> str | None:
        match = _KEY.match(self.text) if self.form in ("B1", "B2", "B3", "B4") else None
        return match.group(1) if match else None

    @property
    def value(self) -> str | None:
        match = _KEY.match(self.text) if self.form in ("B1", "B2", "B3", "B4") else None
        return match.group(2).strip() if match else None


@position_not_compared
class Declaration(NamedTuple):
    name: str
    header: str
    """For inline and header_body shapes: the text between the outer braces. For a brace
    span: the text after the opening brace on the header line."""
    shape: Shape = "inline"
    subname: str | None = None
    """`::MODULE::NAME` only."""
    prefix: str | None = None
    """A temporal prefix `T[n]` binding the declaration to a timeline position."""
    content: str | None = None
    """The second brace of a narrative double-brace form `::SAY{@A→@B}{content}`."""
    body: tuple[BodyLine, ...] = ()
    span: tuple[str, ...] = ()
    """Brace-span content lines, stripped; a wrapped header's last line keeps its `}`."""
    span_closed_by_line: bool = True
    opaque: str | None = None
    """`::UNTRUSTED` payload, verbatim and never parsed."""
    delimiter: str | None = None
    line: int = 0
    """Not compared: position only."""

    @property
    def full_name(self) -> str:
        return f"{self.name}::{self.subname}" if self.subname else self.name

    def render_lines(self, depth: int = 0) -> list[str]:
        pad = INDENT * depth
        lead = f"{self.prefix} " if self.prefix else ""
        if self.shape == "brace_span":
            second = f"{{{self.content}" if self.content is not None else ""
            opening = (
                f"{pad}{lead}::{self.full_name}{{{self.header}}}{second}"
                if self.content is not None
                else f"{pad}{lead}::{self.full_name}{{{self.header}"
            )
            lines = [opening, *(pad + INDENT + s for s in self.span)]
            if self.span_closed_by_line:
                lines.append(pad + "}")
            return lines
        second = f"{{{self.content}}}" if self.content is not None else ""
        lines = [f"{pad}{lead}::{self.full_name}{{{self.header}}}{second}"]
        if self.opaque is not None and self.delimiter is not None:
            lines += [f"<<<{self.delimiter}", self.opaque, self.delimiter]
        for item in self.body:
            lines += item.render(depth + 1)
        return lines


@position_not_compared
class ChainLine(NamedTuple):
    chain: Chain
    line: int = 0
    """Not compared: position only."""


@position_not_compared
class TextLine(NamedTuple):
    """A top-level line that is not a declaration or chain: the document marker, a tag
    line, a temporal bind or note, an annotation (`→ …`, `<<<…`, a tolerated `::LATENCY`)
    or colophon prose in a tag-only region."""

    kind: Literal["marker", "tags", "temporal", "annotation", "colophon"]
    text: str
    line: int = 0
    """Not compared: position only."""


Item = Declaration | ChainLine | TextLine


@every_field_compared
class Document(NamedTuple):
    items: tuple[Item, ...]

    def render(self) -> str:
        """Canonical text: two-space body indentation, chains on one line, no blank lines
        (blank lines are layout)."""
        lines: list[str] = []
        previous: Item | None = None
        for item in self.items:
            if (
                isinstance(previous, Declaration)
                and previous.shape == "inline"
                and isinstance(item, TextLine)
                and is_flush_body_form(item.text)
            ):
                # Without the blank line the reader would bind this line to the inline
                # declaration above as a flush-left body (Part III §1.1).
                lines.append("")
            if isinstance(item, Declaration):
                lines += item.render_lines()
            elif isinstance(item, ChainLine):
                lines.append(item.chain.render())
            else:
                lines.append(item.text)
            previous = item
        return "\n".join(lines) + "\n" if lines else ""

    def declarations(self, name: str | None = None) -> Iterator[Declaration]:
        """Every declaration, nested ones included, in document order."""
        for item in self.items:
            if not isinstance(item, Declaration):
                continue
            if name is None or item.name == name:
                yield item
            for body_line in item.body:
                nested = body_line.nested
                if nested is not None and (name is None or nested.name == name):
                    yield nested

    def chains(self) -> Iterator[Chain]:
        for item in self.items:
            if isinstance(item, ChainLine):
                yield item.chain
            elif isinstance(item, Declaration):
                yield from (b.chain for b in item.body if b.chain is not None)


def indent_of(line: str) -> int:
    return len(line) - len(line.lstrip())


# Nodes are built in the hot path by one C call with every field given in order; the
# classes' own constructors (keyword defaults) stay for everyone else.
_new = tuple.__new__


class _DocumentReader:
    """One pass over the lines, each stripped once (`self.stripped`); a line's first
    character picks the one production it can open, and only that production's patterns
    run on it."""

    def __init__(self, text: str, first_line: int) -> None:
        self.text = text
        lines = text.split("\n")
        if lines[-1] == "":
            lines.pop()
        if "\r" in text:
            lines = [ln[:-1] if ln.endswith("\r") else ln for ln in lines]
        self.lines = lines
        self.stripped: list[str] = []
        self.offset = first_line
        self.findings: list[Finding] = []
        # Control characters found per line index; reported after reading, except on the
        # payload lines of opaque blocks, which are never read as iLang.
        self.controls: list[tuple[int, Finding]] = []
        self.opaque_lines: set[int] = set()
        # The line index right after the most recent opaque block's delimiter line: the
        # only place an ::END_UNTRUSTED line may stand.
        self.end_expected_at: int | None = None

    # ------------------------------------------------------------------ reporting
    def error(self, index: int, code: str, message: str, col: int = 1) -> None:
        self.findings.append(Finding(code, message, index + self.offset, col))

    def raised(self, err: IlangError, index: int) -> None:
        self.findings.append(Finding(err.code, err.message, index + self.offset, err.col))

    def col_of(self, index: int, needle: str) -> int:
        found = self.lines[index].find(needle)
        return found + 1 if found >= 0 else 1

    # ---------------------------------------------------------------------- lines
    def check_characters(self, text: str) -> None:
        if self.lines and self.lines[0].startswith("\ufeff"):
            self.error(0, "E502", "a byte order mark is not part of iLang text")
            self.lines[0] = self.lines[0][1:]
        if _SUSPECT_CHARACTER.search(text) is None:
            return  # one pass in C over the whole text: no line can hold a control character
        for index, line in enumerate(self.lines):
            for found in CONTROL.finditer(line):
                if found.group(0) != "\t":
                    ch = found.group(0)
                    message = f"control character U+{ord(ch):04X}"
                    finding = Finding("E300", message, index + self.offset, found.start() + 1)
                    self.controls.append((index, finding))
                    break

    def read(self) -> Document:
        self.check_characters(self.text)
        self.stripped = [ln.strip() for ln in self.lines]
        document = self.read_items()
        if self.controls:
            # Opaque payloads are content, not iLang text: a control character there (ANSI
            # escapes in tool output, a NUL) is data, never a finding.
            control_findings = [f for index, f in self.controls if index not in self.opaque_lines]
            self.findings[:0] = control_findings
        return document

    def read_items(self) -> Document:
        stripped = self.stripped
        n = len(stripped)
        off = self.offset
        items: list[Item] = []
        append = items.append
        # The first and last non-blank lines: where the document marker may stand.
        first_nb = 0
        while first_nb < n and not stripped[first_nb]:
            first_nb += 1
        last_nb = n - 1
        while last_nb >= 0 and not stripped[last_nb]:
            last_nb -= 1
        if first_nb == n:
            first_nb = -1
        in_preamble = False
        seen_construct = False
        # The chain being read: its first line's index (-1: none) and its text so far, which
        # `=>` continuation lines extend; it is parsed when a line of another kind comes.
        chain_start = -1
        chain_text = ""
        # The chain read at once by the scanner when it takes the common shape (which it only
        # ever accepts, never reports): None when a continuation extended it or the scanner
        # declined, and then the careful reader reads it when it ends.
        ready: Chain | None = None
        lines = self.lines
        i = 0
        while i < n:
            s = stripped[i]
            if not s or s == "---":
                if chain_start >= 0:
                    self.flush_chain(append, chain_start, chain_text, ready)
                    chain_start = -1
                i += 1
                continue
            first = s[0]
            if first == "=" and s.startswith("=>"):
                if chain_start < 0:
                    self.error(i, "E300", "orphan `=>`: no operation line before it")
                else:
                    chain_text += s
                    ready = None
                i += 1
                continue
            if chain_start >= 0:
                self.flush_chain(append, chain_start, chain_text, ready)
                chain_start = -1
            preamble_here, in_preamble = in_preamble, False
            timed = False
            if first == ":":
                if s.startswith("::"):
                    if s.startswith("ILANG::", 2) and _DOC_MARKER.match(s):
                        if i == first_nb:
                            in_preamble = True
                        elif i != last_nb:
                            self.error(
                                i, "E300", "the ::ILANG marker may only open or close a document"
                            )
                        append(_new(TextLine, ("marker", s, i + off)))
                        i += 1
                        continue
                    seen_construct = True
                    i = self.construct(i, s, None, append)
                    continue
            elif first == "T":
                if s.startswith("T["):
                    if _TEMPORAL_BIND.match(s):
                        append(_new(TextLine, ("temporal", s, i + off)))
                        i += 1
                        continue
                    prefixed = _TEMPORAL_PREFIX.match(s)
                    if prefixed:
                        seen_construct = True
                        i = self.construct(i, s, prefixed, append)
                        continue
                    timed = True
            elif first == "[":
                if preamble_here and _TAG_LINE.match(s) and "]=>" not in s:
                    # Part III §1.7: tags right after the marker are metadata even when a
                    # tag's name is also a verb (`[LIST:known_repos]`).
                    in_preamble = True
                    append(_new(TextLine, ("tags", s, i + off)))
                elif "]=>" in s or is_operation_head(head_of(s)) or _ONE_TAG.match(s):
                    # Outside the preamble, a bare `[NAME]` on its own line is a
                    # one-step chain (as the reference validator reads it): an unknown verb
                    # there is E304, never silently a tag. Tag rows stay tags.
                    seen_construct = True
                    chain_start = i
                    chain_text = s
                    ready = scan_chain(s, i + off, lines[i].find("[") + 1)
                elif _TAG_LINE.match(s):
                    append(_new(TextLine, ("tags", s, i + off)))
                else:
                    self.error(
                        i, "E300", f"bracket line is neither a tag nor an operation: {s[:40]}"
                    )
                i += 1
                continue
            if (timed or (first == "P" and s.startswith("PARALLEL{"))) and _TEMPORAL_NOTE.match(s):
                append(_new(TextLine, ("temporal", s, i + off)))
            elif s.startswith(("→", "<<<")):
                append(_new(TextLine, ("annotation", s, i + off)))
            elif not seen_construct and not any(m in s for m in _STRUCTURAL_MARKS):
                append(_new(TextLine, ("colophon", s, i + off)))
            else:
                self.error(i, "E300", f"line matches no iLang production: {s[:40]}")
            i += 1
        if chain_start >= 0:
            self.flush_chain(append, chain_start, chain_text, ready)
        return _new(Document, (tuple(items),))

    def flush_chain(
        self, append: Callable[[Item], None], start: int, text: str, ready: Chain | None
    ) -> None:
        """The chain that ended: the scanner's `ready` one, else read by the careful reader."""
        chain = ready if ready is not None else self.chain_at(start, text)
        if chain is not None:
            append(_new(ChainLine, (chain, start + self.offset)))

    def chain_at(self, index: int, text: str) -> Chain | None:
        # The chain's column is that of its first `[`, which its stripped text starts with.
        col = self.lines[index].find("[") + 1 or 1
        try:
            return parse_chain(text, index + self.offset, col)
        except IlangError as err:
            self.raised(err, index)
            return None

    # ----------------------------------------------------------------- constructs
    def construct(
        self,
        i: int,
        stripped: str,
        prefix_match: re.Match[str] | None,
        append: Callable[[Item], None],
    ) -> int:
        """Read the construct whose header is line i, append its node (if it reads as one)
        and return the index of the line after it."""
        if prefix_match is None:
            simple = _SIMPLE_DECLARATION.match(stripped)
            if simple is not None and simple.group(1) in _PLAIN_DECLARATIONS:
                # The general reader's steps, less those that cannot apply to this shape.
                name, header = simple.groups()
                if "｜" in header or "：" in header or "@" in header:
                    self.check_header(i, "{" + header + "}")
                j = i + 1
                if (
                    j < len(self.stripped)
                    and self.stripped[j]
                    and not self.lines[j].startswith("::")
                ):
                    line = self.lines[i]
                    j, body = self.body(i, name, len(line) - len(line.lstrip()))
                    lines = tuple(body)
                else:
                    # A blank line, the end, or a declaration at the left margin (no deeper
                    # than this header) closes the body before it opens.
                    lines = ()
                append(
                    _new(
                        Declaration,
                        (
                            name,
                            header,
                            "header_body" if lines else "inline",
                            None,
                            None,
                            None,
                            lines,
                            (),
                            True,
                            None,
                            None,
                            i + self.offset,
                        ),
                    )
                )
                return j
        end, item = self.construct_item(i, stripped, prefix_match)
        if item is not None:
            if (
                item.__class__ is Declaration
                and item[0] == "END_UNTRUSTED"
                and i != self.end_expected_at
            ):
                self.error(
                    i,
                    "E300",
                    "::END_UNTRUSTED closes an opaque block: it stands right after the "
                    "block's delimiter line",
                )
            append(item)
        return end

    def construct_item(
        self, i: int, stripped: str, prefix_match: re.Match[str] | None
    ) -> tuple[int, Item | None]:
        prefix = prefix_match.group(1) if prefix_match else None
        text = prefix_match.group(2) if prefix_match else stripped
        head = _DECL_HEAD.match(text)
        if head is None:
            bad = _BAD_HEAD.match(text)
            self.error(
                i, "E300", f"malformed declaration header: {(bad.group(0) if bad else text)[:40]}"
            )
            return i + 1, None
        name, subname, rest = head.groups()
        rest = rest.strip()
        if name == "ILANG":
            self.error(i, "E300", f"malformed ::ILANG document marker: {text[:40]}")
            return i + 1, None
        if name in TOLERATED_ANNOTATIONS:
            return i + 1, _new(TextLine, ("annotation", stripped, i + self.offset))
        if subname and name != "MODULE":
            self.error(i, "E300", f"::{name}::{subname}: only ::MODULE takes a two-segment name")
        if name not in TOP_LEVEL_DECLARATIONS:
            self.error(i, "E300", f"::{name} is not in the declaration registry")
        if not rest.startswith("{"):
            self.error(
                i, "E300", f"::{name} header lacks `{{`", self.col_of(i, "::") + 2 + len(name)
            )
            return i + 1, None
        close = find_close(rest)
        if "｜" in rest or "：" in rest or "@" in rest:
            self.check_header(i, rest[: close + 1] if close > 0 else rest)
        line = self.lines[i]
        header_indent = len(line) - len(line.lstrip())
        if name in DOUBLE_BRACE:
            return self.narrative(i, (name, subname, prefix, i + self.offset), rest, header_indent)
        if rest.count("{") > rest.count("}"):
            return self.brace_span(i, (name, subname, prefix, i + self.offset), rest[1:], None)
        if close > 0:
            header = rest[1:close]
            trailing = rest[close + 1 :].strip()
        else:
            header = rest[1:]
            trailing = ""
        if trailing.startswith("::"):
            self.error(i, "E300", "a second declaration on a header line: start a new line")
            trailing = ""
        if name == "UNTRUSTED":
            delimiter = _DELIMITER_FIELD.search(header)
            if delimiter:
                if trailing:
                    self.error(i, "E300", "text after an opaque block's header")
                return self.opaque(
                    i, (name, subname, prefix, i + self.offset), header, delimiter.group(1)
                )
        first_body: BodyLine | None = None
        if trailing:
            first_body = self.body_line(i, name, trailing)
        end, body = self.body(i, name, header_indent)
        if first_body is not None:
            body.insert(0, first_body)
        decl = _new(
            Declaration,
            (
                name,
                header,
                "header_body" if body else "inline",
                subname,
                prefix,
                None,
                tuple(body),
                (),
                True,
                None,
                None,
                i + self.offset,
            ),
        )
        return end, decl

    def check_header(self, i: int, rest: str) -> None:
        # Part III §1.3: full-width punctuation is legal inside values but never as a
        # structural separator; a pipe segment with `：` and no ASCII `:` uses it as one.
        if "｜" in rest:
            self.error(
                i, "E300", "full-width ｜ used as a separator: use ASCII `|`", self.col_of(i, "｜")
            )
        elif "：" in rest:
            for segment in rest.strip("{}").split("|"):
                if "：" in segment and ":" not in segment:
                    self.error(
                        i,
                        "E300",
                        "full-width ： used as a separator: use ASCII `:`",
                        self.col_of(i, "："),
                    )
                    break
        self.check_entities(i, rest)

    def check_entities(self, i: int, text: str) -> None:
        if "@" not in text:
            return
        for token in _ENTITY_TOKEN.finditer(text):
            name = token.group(1) or ""
            if not ENTITY_NAME.match(name) and "-" not in name:
                # A hyphenated name (`@GPT-5.5-Pro` in a tag) is a label, not an entity.
                col = self.col_of(i, token.group(0))
                self.error(i, "E300", f"entity @{name} does not match @[A-Z][A-Z0-9_]*", col)

    def narrative(
        self, i: int, base: _Base, rest: str, header_indent: int
    ) -> tuple[int, Item | None]:
        name, subname, prefix, line = base
        inline = _DOUBLE_INLINE.match(rest)
        if inline:
            end, body = self.body(i, name, header_indent)
            shape: Shape = "header_body" if body else "inline"
            decl = Declaration(
                name,
                inline.group(1),
                shape,
                subname,
                prefix,
                inline.group(2),
                tuple(body),
                line=line,
            )
            return end, decl
        opened = _DOUBLE_OPEN.match(rest)
        if opened:
            return self.brace_span(i, base, opened.group(1), opened.group(2))
        self.error(
            i,
            "E300",
            f"::{name} takes the double-brace form ::{name}{{addressing}}{{content}}",
        )
        return i + 1, None

    def brace_span(
        self, i: int, base: _Base, header: str, content: str | None
    ) -> tuple[int, Item | None]:
        # Part III §1.1: a set span (header ends with `{`) closes at a bare `}` line; a
        # wrapped field header closes at the first line ending with `}`.
        opening = content if content is not None else header
        wrapped = opening.strip() != ""
        j = i + 1
        while j < len(self.lines):
            t = self.lines[j].strip()
            if t == "}" or (wrapped and t.endswith("}")):
                span = tuple(ln.strip() for ln in self.lines[i + 1 : j] if ln.strip())
                closed_by_line = t == "}"
                if not closed_by_line:
                    span = (*span, t)
                name, subname, prefix, line = base
                decl = Declaration(
                    name,
                    header,
                    "brace_span",
                    subname,
                    prefix,
                    content,
                    span=span,
                    span_closed_by_line=closed_by_line,
                    line=line,
                )
                return j + 1, decl
            j += 1
        self.error(i, "E300", f"::{base[0]} brace span never closes")
        return len(self.lines), None

    def opaque(self, i: int, base: _Base, header: str, delimiter: str) -> tuple[int, Item | None]:
        if i + 1 >= len(self.lines) or self.lines[i + 1].strip(_LINE_PAD) != f"<<<{delimiter}":
            self.error(
                i + 1 if i + 1 < len(self.lines) else i,
                "E300",
                f"an opaque block opens with `<<<{delimiter}` on the line after its header",
            )
            return i + 1, None
        j = self.delimiter_line(i + 2, delimiter)
        if j is None:
            self.error(i, "E300", f"opaque block never reaches its delimiter line `{delimiter}`")
            return len(self.lines), None
        payload = "\n".join(self.lines[i + 2 : j])
        self.check_end_line(i, j + 1, header)
        name, subname, prefix, line = base
        decl = Declaration(
            name,
            header,
            "inline",
            subname,
            prefix,
            opaque=payload,
            delimiter=delimiter,
            line=line,
        )
        return j + 1, decl

    def delimiter_line(self, start: int, delimiter: str) -> int | None:
        """Index of the first line from `start` that is exactly `delimiter` (spaces and
        tabs aside); every line before it is payload, marked opaque."""
        for j in range(start, len(self.lines)):
            if self.lines[j].strip(_LINE_PAD) == delimiter:
                return j
            self.opaque_lines.add(j)
        return None

    def check_end_line(self, i: int, at: int, header: str) -> None:
        """SPEC-v4.0-FINAL §1: the delimiter line is followed by `::END_UNTRUSTED{id:…}`
        naming the block's own id (E300 otherwise, as `isolation.read_untrusted`)."""
        self.end_expected_at = at
        own = _ID_FIELD.search(header)
        own_id = own.group(1) if own else None
        end_line = self.lines[at].strip(_LINE_PAD) if at < len(self.lines) else ""
        end = _DECL_HEAD.match(end_line)
        if end is None or end.group(1) != "END_UNTRUSTED" or end.group(2) is not None:
            self.error(
                i,
                "E300",
                "an opaque block ends with its delimiter line followed by ::END_UNTRUSTED"
                f"{{id:{own_id or '…'}}}",
            )
            return
        closing = end.group(3).strip()
        end_id = _ID_FIELD.search(closing[1:-1]) if closing.startswith("{") else None
        if (end_id.group(1) if end_id else None) != own_id:
            self.error(at, "E300", f"::END_UNTRUSTED does not name the block's id {own_id!r}")

    # ---------------------------------------------------------------------- bodies
    def body(self, i: int, parent: str, header_indent: int) -> tuple[int, list[BodyLine]]:
        """Header-body lines: indented deeper than the header, or flush-left body forms
        B1–B5 at the header's own indent (Part III §1.1 FLUSH-LEFT-BODY)."""
        out: list[BodyLine] = []
        regime: str | None = None
        lines = self.lines
        stripped = self.stripped
        j = i + 1
        n = len(stripped)
        last_chain: int | None = None  # index into out of the chain a `=>` may extend
        while j < n:
            s = stripped[j]
            if not s:
                if regime != "indent":
                    break
                k = j + 1
                while k < n and not stripped[k]:
                    k += 1
                if k < n and indent_of(lines[k]) > header_indent:
                    j = k
                    last_chain = None
                    continue
                break
            line = lines[j]
            indent = len(line) - len(line.lstrip())
            if indent > header_indent:
                if regime == "flush":
                    break
                regime = "indent"
                if s.startswith("=>"):
                    if last_chain is None:
                        self.error(
                            j,
                            "E300",
                            f"orphan `=>` in the ::{parent} body: no operation line before it",
                        )
                    else:
                        out[last_chain] = self.extend_chain(out[last_chain], s, j)
                    j += 1
                    continue
                if s.startswith("::"):
                    j, nested = self.nested(j, indent)
                    if nested is not None:
                        out.append(nested)
                    last_chain = None
                    continue
                body_line = self.body_line(j, parent, s)
                last_chain = None
                if body_line is not None:
                    out.append(body_line)
                    if body_line.form == "B8":
                        last_chain = len(out) - 1
                j += 1
                continue
            if regime == "indent" or indent != header_indent:
                break
            if s.startswith("::") or (s.startswith("T[") and _TEMPORAL_PREFIX.match(s)):
                break
            if not is_flush_body_form(s):
                break
            regime = "flush"
            body_line = self.body_line(j, parent, s)
            if body_line is not None:
                out.append(body_line)
            j += 1
        return j, out

    def extend_chain(self, item: BodyLine, continuation: str, j: int) -> BodyLine:
        if item.chain is None:
            return item
        joined = item.chain.render() + continuation
        try:
            chain = parse_chain(joined, item.line, 1)
        except IlangError as err:
            self.raised(err, j)
            return item
        return BodyLine("B8", "", chain=chain, line=item.line)

    def nested(self, j: int, indent: int) -> tuple[int, BodyLine | None]:
        s = self.stripped[j]
        head = _DECL_HEAD.match(s)
        delimiter = _DELIMITER_FIELD.search(s) if head and head.group(1) == "UNTRUSTED" else None
        if delimiter is not None:
            # An opaque block is a top-level construct; its payload is skipped unread.
            self.error(j, "E300", "an opaque ::UNTRUSTED block cannot nest in a body")
            close = self.delimiter_line(j + 1, delimiter.group(1))
            return (len(self.lines) if close is None else close + 1), None
        end = j + 1
        own_body: list[BodyLine] = []
        name = head.group(1) if head else "?"
        while end < len(self.lines):
            t = self.stripped[end]
            if not t or indent_of(self.lines[end]) <= indent:
                break
            if t.startswith("::"):
                self.error(
                    end, "E300", "declaration nesting deeper than one level (Part III §1.2 B7)"
                )
            else:
                body_line = self.body_line(end, name, t)
                if body_line is not None:
                    own_body.append(body_line)
            end += 1
        if head is None:
            self.error(j, "E300", f"malformed nested declaration: {s[:40]}")
            return end, None
        if name in TOLERATED_ANNOTATIONS:
            return end, BodyLine("annotation", s, line=j + self.offset)
        subname = head.group(2)
        if (subname and name != "MODULE") or name not in NESTABLE_DECLARATIONS:
            self.error(
                j, "E300", f"nested ::{head.group(1)} is not a registered declaration that may nest"
            )
            return end, None
        rest = head.group(3).strip()
        self.check_header(j, rest)
        if name in DOUBLE_BRACE:
            double = _DOUBLE_INLINE.match(rest)
            if not double:
                self.error(j, "E300", f"::{name} takes the double-brace form")
                return end, None
            header, content = double.group(1), double.group(2)
        else:
            close = find_close(rest)
            if not rest.startswith("{") or close < 0 or rest[close + 1 :].strip():
                self.error(j, "E300", f"a nested ::{name} must be one closed header on its line")
                return end, None
            header, content = rest[1:close], None
        at = j + self.offset
        decl = _new(
            Declaration,
            (
                name,
                header,
                "header_body" if own_body else "inline",
                None if content is not None else subname,
                None,
                content,
                tuple(own_body),
                (),
                True,
                None,
                None,
                at,
            ),
        )
        return end, _new(BodyLine, ("B7", "", None, decl, at))

    def body_line(self, j: int, parent: str, s: str) -> BodyLine | None:
        """Part III §1.2: the form of a body line is decided by its first token."""
        at = j + self.offset
        first = s[0]
        if (
            (first == "T" or first == "P")
            and s.startswith(_TIMED)
            and (_TEMPORAL_BIND.match(s) or _TEMPORAL_NOTE.match(s))
        ):
            return _new(BodyLine, ("temporal", s, None, None, at))
        if first == "→":
            return _new(BodyLine, ("annotation", s, None, None, at))
        if s.startswith(("T:", "A:")):
            if "@" in s:
                self.check_entities(j, s)
            return _new(BodyLine, ("B1", s, None, None, at))
        if first == "=" and s.startswith("=>"):
            self.error(j, "E300", f"orphan `=>` in the ::{parent} body")
            return None
        if first == "[":
            if "]=>" in s or is_operation_head(head_of(s)):
                chain = scan_chain(s, at, self.lines[j].find("[") + 1) or self.chain_at(j, s)
                return _new(BodyLine, ("B8", "", chain, None, at)) if chain else None
            if _TAG_LINE.match(s) or _TAG_TEXT.match(s):
                return _new(BodyLine, ("B5", s, None, None, at))
            if parent in PROSE_BODY:
                return _new(BodyLine, ("B6", s, None, None, at))
            self.error(
                j, "E300", f"bracket body line is neither a B5 tag nor a B8 operation: {s[:40]}"
            )
            return None
        key = _KEY.match(s)
        if key:
            if "@" in s:
                self.check_entities(j, s)
            value = key.group(2).lstrip()
            form: BodyForm = "B4" if value.startswith("[") else "B3" if "|" in value else "B2"
            return _new(BodyLine, (form, s, None, None, at))
        if parent in PROSE_BODY:
            return _new(BodyLine, ("B6", s, None, None, at))
        self.error(j, "E300", f"prose line in the non-prose ::{parent} body: {s[:40]}")
        return None


def is_flush_body_form(s: str) -> bool:
    """B1–B5 shapes that bind flush-left; operations (B8) never do."""
    if s.startswith(("T:", "A:")):
        return True
    if s.startswith("["):
        return bool(_TAG_LINE.match(s) or _TAG_TEXT.match(s)) and not is_operation_head(head_of(s))
    return bool(_KEY.match(s) or (s.startswith("T[") and _TEMPORAL_BIND.match(s)))


def find_close(rest: str) -> int:
    """Index of the brace that closes the one opening `rest`, or -1."""
    if rest.startswith("{"):
        close = rest.find("}", 1)
        opening = rest.find("{", 1)
        if close > 0 and (opening < 0 or opening > close):
            return close  # the common header: no brace inside it
    depth = 0
    for k, ch in enumerate(rest):
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                return k
    return -1


def read_document(text: str, first_line: int = 1) -> tuple[Document, list[Finding]]:
    """Read what can be read and report every problem; never raises."""
    reader = _DocumentReader(text, first_line)
    document = reader.read()
    return document, reader.findings


def parse_document(text: str, first_line: int = 1) -> Document:
    """Strict: the first error is raised as IlangError."""
    document, findings = read_document(text, first_line)
    errors = [f for f in findings if f.severity == "error"]
    if errors:
        first = min(errors, key=lambda f: (f.line, f.col))
        raise IlangError(first.code, first.message, first.line, first.col)
    return document
