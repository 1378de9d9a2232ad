"""Frozen copy of the node types as they stood before they became tuples (commit a4f8d26):
frozen slots dataclasses. The frozen readers build these, so the differential test compares
the product's documents with them through `repr`, which names every field, line and column
included. Test data only: never imported by the product."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Literal

Shape = Literal["inline", "header_body", "brace_span"]
BodyForm = Literal["B1", "B2", "B3", "B4", "B5", "B6", "B7", "B8", "temporal", "annotation"]
_TAG = r"\[[A-Z][A-Z0-9_\-]*(?::[^\[\]]*)?\]"
_TAG_LINE = re.compile(rf"(?:{_TAG})+\Z")
_TAG_TEXT = re.compile(rf"{_TAG}(\s+\S.*)?\Z")
_KEY = re.compile(r"([A-Za-z_][A-Za-z0-9_]*):(.*)\Z", re.S)
_HEAD = re.compile(r"[^\]:|\s]+")
INDENT = "  "


def head_of(text: str) -> str:
    match = _HEAD.match(text, 1) if text.startswith("[") else None
    return match.group(0) if match else ""


def is_flush_body_form(s: str) -> bool:
    from envelopes.vocabulary import ALIASES, VERB_SET

    if s.startswith(("T:", "A:")):
        return True
    if s.startswith("["):
        head = head_of(s)
        return bool(_TAG_LINE.match(s) or _TAG_TEXT.match(s)) and not (
            head in VERB_SET or head in ALIASES
        )
    return bool(_KEY.match(s) or (s.startswith("T[") and re.match(r"T\[[^\]]+\]=\S+", s)))


@dataclass(frozen=True, slots=True)
class Modifier:
    key: str
    value: str
    quoted: bool = False
    """A quoted value is a string even when it reads like an entity (`"@X"`)."""

    def render(self) -> str:
        return f"{self.key}={quote(self.value) if self.quoted else self.value}"


@dataclass(frozen=True, slots=True)
class Operation:
    verb: str
    """The canonical verb; an alias is resolved here and kept in `alias` for rendering."""
    alias: str | None = None
    target: str | None = None
    """An entity name without its `@`."""
    verb_ref: str | None = None
    """BATC/Π only: the verb (or alias) applied to each item."""
    modifiers: tuple[Modifier, ...] = ()
    col: int = field(default=1, compare=False)

    def render(self) -> str:
        out = ["[", self.alias or self.verb]
        if self.target is not None:
            out.append(f":@{self.target}")
        elif self.verb_ref is not None:
            out.append(f":{self.verb_ref}")
        if self.modifiers:
            out.append("|")
            out.append(",".join(m.render() for m in self.modifiers))
        out.append("]")
        return "".join(out)


@dataclass(frozen=True, slots=True)
class Chain:
    operations: tuple[Operation, ...]
    line: int = field(default=1, compare=False)

    def render(self) -> str:
        return "=>".join(op.render() for op in self.operations)


def quote(value: str) -> str:
    escaped = value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return f'"{escaped}"'


@dataclass(frozen=True, slots=True)
class BodyLine:
    form: BodyForm
    text: str
    """The line as written, stripped; empty for B7 and B8, which carry their own node."""
    chain: Chain | None = None
    nested: Declaration | None = None
    line: int = field(default=0, compare=False)

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


@dataclass(frozen=True, slots=True)
class Declaration:
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
    line: int = field(default=0, compare=False)

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


@dataclass(frozen=True, slots=True)
class ChainLine:
    chain: Chain
    line: int = field(default=0, compare=False)


@dataclass(frozen=True, slots=True)
class TextLine:
    """A top-level line that is not a declaration or chain: the document marker, a tag
    line, a temporal bind or note, an annotation (`→ …`, `<<<…`, a tolerated `::LATENCY`)
    or colophon prose in a tag-only region."""

    kind: Literal["marker", "tags", "temporal", "annotation", "colophon"]
    text: str
    line: int = field(default=0, compare=False)


Item = Declaration | ChainLine | TextLine


@dataclass(frozen=True, slots=True)
class Document:
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
