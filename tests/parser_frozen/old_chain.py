"""Frozen copy of the chain reader as it stood before the single-pass rewrite (commit
4dad602). Test data for the differential test only: never imported by the product. It builds
the frozen node types of `old_nodes`."""

from __future__ import annotations

import re

from envelopes.errors import IlangError
from envelopes.vocabulary import ALIASES, MODIFIERS, VERB_SET
from tests.parser_frozen.old_nodes import Chain, Modifier, Operation

ENTITY_NAME = re.compile(r"[A-Z][A-Z0-9_]*\Z")
_MODIFIER_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_HEAD = re.compile(r"[^\]:|\s]+")
_ESCAPES = {'"': '"', "\\": "\\", "n": "\n"}
# A bare value ends at these; `"` and `[` inside one are reserved (E303).
_BARE_STOP = frozenset("],|")
_RESERVED_IN_BARE = frozenset('"[')
# The longest run of characters a bare value may hold; the character that ends it decides
# whether the value ended well (a stop) or badly (reserved, control, whitespace).
_BARE_RUN = re.compile(r'[^\],|"\[\s\x00-\x1f\x7f-\x9f\u2028\u2029]*')


CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]")
"""The characters `is_control` accepts, for scanning whole lines at once."""


def is_control(ch: str) -> bool:
    """Characters that may never stand raw in a value: C0/C1 controls and the Unicode line
    and paragraph separators, which some readers treat as line breaks."""
    code = ord(ch)
    return code < 0x20 or 0x7F <= code <= 0x9F or ch in "\u2028\u2029"


def quote(value: str) -> str:
    escaped = value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return f'"{escaped}"'


def head_of(text: str) -> str:
    """The verb-or-tag word of the first bracket group: `[READ:@X]` → `READ`."""
    match = _HEAD.match(text, 1) if text.startswith("[") else None
    return match.group(0) if match else ""


def is_operation_head(head: str) -> bool:
    return head in VERB_SET or head in ALIASES


class _ChainReader:
    def __init__(self, text: str, line: int, col: int) -> None:
        self.text = text
        self.pos = 0
        self.line = line
        self.col0 = col

    def fail(self, code: str, message: str, at: int | None = None) -> IlangError:
        where = self.pos if at is None else at
        return IlangError(code, message, self.line, self.col0 + where)

    def peek(self) -> str:
        return self.text[self.pos] if self.pos < len(self.text) else ""

    def read(self) -> Chain:
        if not self.text:
            raise self.fail("E300", "empty input: expected an operation `[VERB…]`")
        if self.text[0].isspace():
            raise self.fail("E300", "leading whitespace before the chain")
        if self.text[0] == "\ufeff":
            raise self.fail("E502", "a byte order mark is not part of iLang text")
        ops = [self.operation()]
        while self.pos < len(self.text):
            rest = self.text[self.pos :]
            if rest.startswith("=>"):
                self.pos += 2
                if not self.peek():
                    raise self.fail("E300", "dangling `=>`: no operation follows")
                if self.peek().isspace():
                    raise self.fail("E300", "whitespace after `=>`")
                if self.peek() != "[":
                    raise self.fail("E300", "expected `[` after `=>`")
                ops.append(self.operation())
                continue
            if rest[0].isspace():
                tail = rest.lstrip()
                if not tail:
                    raise self.fail("E300", "trailing whitespace after the chain")
                if tail.startswith("=>"):
                    raise self.fail("E300", "whitespace before `=>`")
                if tail.startswith("["):
                    raise self.fail("E502", "two chains on one line: join them with `=>`")
            if rest[0] == "[":
                raise self.fail("E502", "two operations without a pipe: join them with `=>`")
            raise self.fail("E502", f"text after the chain: {rest[:20]!r}")
        for op in ops[:-1]:
            if op.verb == "OUT":
                raise self.fail("E502", "OUT marks the final output: it must be last", op.col - 1)
        return Chain(tuple(ops), self.line)

    def operation(self) -> Operation:
        start = self.pos
        if self.peek() != "[":
            raise self.fail("E300", "expected `[`")
        self.pos += 1
        head_match = _HEAD.match(self.text, self.pos)
        if not head_match:
            if self.peek() == "]":
                raise self.fail("E300", "empty operation `[]`")
            if not self.peek():
                raise self.fail("E300", "unterminated operation: missing `]`")
            raise self.fail("E300", "operation without a verb")
        head = head_match.group(0)
        verb, alias = self.resolve_verb(head, self.pos)
        self.pos = head_match.end()
        target: str | None = None
        verb_ref: str | None = None
        if self.peek() == ":":
            self.pos += 1
            if verb == "BATC" and self.peek() != "@":
                verb_ref = self.verb_reference()
            else:
                target = self.target()
        modifiers: tuple[Modifier, ...] = ()
        if self.peek() == "|":
            self.pos += 1
            modifiers = self.modifiers()
        if self.peek() != "]":
            if not self.peek():
                raise self.fail("E300", "unterminated operation: missing `]`")
            raise self.fail("E300", f"unexpected {self.peek()!r} in operation")
        self.pos += 1
        return Operation(verb, alias, target, verb_ref, modifiers, self.col0 + start)

    def resolve_verb(self, head: str, at: int) -> tuple[str, str | None]:
        if head in VERB_SET:
            return head, None
        if head in ALIASES:
            return ALIASES[head], head
        if len(head) == 1 and not head.isascii():
            raise self.fail("E305", f"unknown alias {head!r} (13 Greek aliases)", at)
        raise self.fail("E304", f"unknown verb {head!r} (88 verbs, upper case)", at)

    def verb_reference(self) -> str:
        at = self.pos
        match = _HEAD.match(self.text, self.pos)
        if not match:
            raise self.fail("E300", "empty verb reference after `BATC:`")
        ref = match.group(0)
        verb, _ = self.resolve_verb(ref, at)
        if verb == "OUT":
            raise self.fail("E502", "OUT cannot be applied to each item", at)
        self.pos = match.end()
        if self.peek() == ":":
            raise self.fail("E304", "a verb reference has no second `:`")
        return ref

    def target(self) -> str:
        at = self.pos
        if self.peek() != "@":
            if self.peek() in ("]", "|", ""):
                raise self.fail("E300", "empty target after `:`")
            raise self.fail(
                "E300", "a target is an @ENTITY (only BATC/Π take a verb reference)", at
            )
        match = _HEAD.match(self.text, self.pos)
        name = match.group(0)[1:] if match else ""
        check_entity_name(name, self.line, self.col0 + at)
        self.pos = at + 1 + len(name)
        return name

    def modifiers(self) -> tuple[Modifier, ...]:
        mods: list[Modifier] = []
        while True:
            key_match = _MODIFIER_KEY.match(self.text, self.pos)
            if mods and (not key_match or self.text[key_match.end() : key_match.end() + 1] != "="):
                # v4.0-FINAL §7 writes `whr=score>=threshold,no_unknown,no_fail`: a comma
                # piece without `key=` continues the value before it.
                last = mods.pop()
                if last.quoted:
                    raise self.fail("E300", "unexpected text after a quoted value")
                mods.append(Modifier(last.key, f"{last.value},{self.bare_value()}"))
            else:
                mods.append(self.modifier(key_match))
            if self.peek() == ",":
                self.pos += 1
                continue
            if self.peek() == "|":
                raise self.fail("E300", "modifiers are separated by `,`, not `|`")
            return tuple(mods)

    def modifier(self, key_match: re.Match[str] | None) -> Modifier:
        at = self.pos
        if not key_match:
            if self.peek() == "=":
                raise self.fail("E300", "empty modifier key")
            raise self.fail("E300", "expected a modifier `key=value`")
        key = key_match.group(0)
        self.pos = key_match.end()
        if self.peek() != "=":
            raise self.fail("E300", f"modifier {key!r} without `=`")
        self.pos += 1
        if key not in MODIFIERS:
            raise self.fail("E302", f"unknown modifier key {key!r}", at)
        if self.peek() == '"':
            return Modifier(key, self.quoted_value(), quoted=True)
        return Modifier(key, self.bare_value())

    def bare_value(self) -> str:
        start = self.pos
        text = self.text
        end = _BARE_RUN.match(text, start)
        self.pos = end.end() if end else start
        ch = self.peek()
        if ch and ch not in _BARE_STOP:
            if ch in _RESERVED_IN_BARE:
                raise self.fail("E303", f"{ch!r} inside a bare value: quote the value")
            if is_control(ch):
                raise self.fail("E300", f"control character U+{ord(ch):04X} in a value")
            raise self.fail("E300", "whitespace inside a bare value: quote the value")
        value = text[start : self.pos]
        if not value:
            if self.peek() == ",":
                raise self.fail("E300", "empty modifier piece (doubled or trailing comma)")
            raise self.fail("E300", "empty value")
        if value.startswith("@"):
            check_entity_name(value[1:], self.line, self.col0 + start)
        return value

    def quoted_value(self) -> str:
        self.pos += 1
        out: list[str] = []
        text = self.text
        while True:
            if self.pos >= len(text):
                raise self.fail("E300", "unterminated quoted value")
            ch = text[self.pos]
            if ch == '"':
                self.pos += 1
                break
            if ch == "\\":
                nxt = text[self.pos + 1 : self.pos + 2]
                if nxt not in _ESCAPES:
                    raise self.fail("E300", f'bad escape \\{nxt} (allowed: \\" \\\\ \\n)')
                out.append(_ESCAPES[nxt])
                self.pos += 2
                continue
            if is_control(ch) or ch == "\t":
                raise self.fail("E300", f"raw control character U+{ord(ch):04X} in a quoted value")
            out.append(ch)
            self.pos += 1
        if self.peek() not in (",", "]", "|", ""):
            raise self.fail("E300", "unexpected character after a quoted value")
        return "".join(out)


def check_entity_name(name: str, line: int, col: int) -> None:
    """Part III §2.2: `@[A-Z][A-Z0-9_]*`; anything else cannot be resolved (E200)."""
    if not ENTITY_NAME.match(name):
        shown = f"@{name}" if name else "@"
        raise IlangError("E200", f"entity {shown!r} does not match @[A-Z][A-Z0-9_]*", line, col)


def parse_chain(text: str, line: int = 1, col: int = 1) -> Chain:
    """Parse one whole chain (continuations already joined)."""
    return _ChainReader(text, line, col).read()
