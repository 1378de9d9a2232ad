"""Operation chains: `[VERB:@TARGET|mod=value,mod2=value]=>[VERB2]=>[Ω]` (SPEC.md §2.2–§4).

The reader is strict: it accepts the canon's chains and reports the first departure with
its code and column. Continuation lines (`=>` at the start of a line, Part III §1.7) are
joined by the document reader before a chain reaches this module.

Two readers share the work. A single-pass scanner takes the common shape (a verb or alias,
an optional `:@TARGET` or BATC/Π verb reference, `key=value` modifiers, bare or quoted) one
compiled match per operation and per modifier, with no state object and no slicing. Whatever
it does not take (comma continuations, and every error) goes to the careful reader below,
which alone reports problems: the scanner only ever accepts, so both give the same chain or
error.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from typing import Literal, NamedTuple, TypeVar

from envelopes.errors import IlangError
from envelopes.vocabulary import ALIASES, ENTITY_TIERS, MODIFIERS, VERB_SET

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


# The scanner's tokens. An operation head with its optional `:@TARGET` or verb reference;
# then, after `|`, one modifier at a time: a bare value (what the careful reader's bare run
# holds) or a quoted value (its three escapes undone after the match), and the character
# that ends it. Anything else is the careful reader's.
#
# The patterns spell out the characters `\s` stands for (SPACE) and unroll the quoted value's
# repeated alternation (`(?:a|\\b)*` into `a*(?:\\b a*)*`): the same languages, but the
# regex engine tests a set of plain characters faster than a category, and an alternation
# under a repetition costs it a backtracking frame per character.
SPACE = " \t\n\x0b\x0c\r\x1c-\x1f\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000"
"""The characters `\\s` matches in a `str` pattern, as the body of a character set."""
_CONTROLS = "\x00-\x1f\x7f-\x9f\u2028\u2029"
_QUOTED_CHAR = f'[^"\\\\{_CONTROLS}]'
_FAST_HEAD = re.compile(
    rf"\[([^\]:|{SPACE}]+)(?::(?:@([A-Z][A-Z0-9_]*)|([^\]:|{SPACE}@][^\]:|{SPACE}]*)))?([|\]])"
)
_FAST_MOD = re.compile(
    r"([A-Za-z_][A-Za-z0-9_]*)="
    rf'(?:"({_QUOTED_CHAR}*(?:\\["\\n]{_QUOTED_CHAR}*)*)"|([^\],|"\[{SPACE}{_CONTROLS}]+))'
    r"([,\]])"
)


# The three escapes of a quoted value (SPEC.md §2.4), undone left to right.
_UNESCAPE = re.compile(r'\\(["\\n])')


def _unescape(escape: re.Match[str]) -> str:
    return _ESCAPES[escape.group(1)]


CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]")
"""The characters `is_control` accepts, for scanning whole lines at once."""


def is_control(ch: str) -> bool:
    """Characters that may never stand raw in a value: C0/C1 controls and the Unicode line
    and paragraph separators, which some readers treat as line breaks."""
    code = ord(ch)
    return code < 0x20 or 0x7F <= code <= 0x9F or ch in "\u2028\u2029"


# The nodes are named tuples: one is built in a single C call (`tuple.__new__`), where a
# frozen dataclass sets each field through `object.__setattr__`, ten times the cost. They keep
# the dataclasses' behaviour: equality and hash leave out the last field (the line or column,
# layout rather than meaning) and hold only between nodes of one type; `repr` is the same.


def same_node(a: tuple[object, ...], b: object) -> bool:
    """Dataclass equality for a node whose last field is position only."""
    return b.__class__ is a.__class__ and a[:-1] == b[:-1]


N = TypeVar("N", bound=tuple[object, ...])


def position_not_compared(cls: type[N]) -> type[N]:
    """For a node class whose last field is its position: equality, inequality and hash
    over the other fields only (as the dataclasses' `compare=False` had them)."""
    setattr(cls, "__eq__", same_node)  # noqa: B010  (methods set on a NamedTuple class)
    setattr(cls, "__ne__", _not_same_node)  # noqa: B010
    setattr(cls, "__hash__", _hash_without_position)  # noqa: B010
    return cls


def _not_same_node(a: tuple[object, ...], b: object) -> bool:
    return not same_node(a, b)


def _hash_without_position(node: tuple[object, ...]) -> int:
    return hash(node[:-1])


def same_whole(a: tuple[object, ...], b: object) -> bool:
    """Dataclass equality for a node every field of which is compared."""
    return b.__class__ is a.__class__ and tuple.__eq__(a, b)


def every_field_compared(cls: type[N]) -> type[N]:
    """For a node class with no position field: equality and inequality of its own class
    only (a tuple's would equal any tuple), the tuple's hash."""
    setattr(cls, "__eq__", same_whole)  # noqa: B010  (methods set on a NamedTuple class)
    setattr(cls, "__ne__", _not_same_whole)  # noqa: B010
    setattr(cls, "__hash__", tuple.__hash__)  # noqa: B010
    return cls


def _not_same_whole(a: tuple[object, ...], b: object) -> bool:
    return not same_whole(a, b)


@every_field_compared
class Modifier(NamedTuple):
    key: str
    value: str
    quoted: bool = False
    """A quoted value is a string even when it reads like an entity (`"@X"`)."""

    def render(self) -> str:
        return f"{self.key}={quote(self.value) if self.quoted else self.value}"


@position_not_compared
class Operation(NamedTuple):
    verb: str
    """The canonical verb; an alias is resolved here and kept in `alias` for rendering."""
    alias: str | None = None
    target: str | None = None
    """An entity name without its `@`."""
    verb_ref: str | None = None
    """BATC/Π only: the verb (or alias) applied to each item."""
    modifiers: tuple[Modifier, ...] = ()
    col: int = 1
    """Not compared: position only."""

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


@position_not_compared
class Chain(NamedTuple):
    operations: tuple[Operation, ...]
    line: int = 1
    """Not compared: position only."""

    def render(self) -> str:
        return "=>".join(op.render() for op in self.operations)


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


EntityTier = Literal["core", "external", "role", "media", "custom"]
_TIER_NAMES: dict[int, EntityTier] = {1: "core", 2: "external", 3: "role", 4: "media"}


def resolve_entity(
    name: str,
    *,
    connected: Collection[str] | None = None,
    line: int = 1,
    col: int = 1,
) -> EntityTier:
    """Resolve an entity name (without `@`) in the order of SPEC-v5.0 Part III §2.2:
    Tier 1 core → Tier 2 external → Tier 3 role → the v4.1 media tier → document custom.

    A name off `@[A-Z][A-Z0-9_]*` resolves nowhere: E200. Any conforming name is valid
    without registration, so it resolves at the latest as `custom`. `connected` names the
    external (Tier 2) services this environment has; when it is given, an external
    entity outside it is registered but unavailable: E201, which is recoverable (degrade
    per v4.0 §0.1) rather than a syntax error.
    """
    check_entity_name(name, line, col)
    tier = ENTITY_TIERS.get(name)
    if tier is None:
        return "custom"
    if tier == 2 and connected is not None and name not in connected:
        raise IlangError("E201", f"entity @{name} is not connected in this environment", line, col)
    return _TIER_NAMES[tier]


def scan_chain(text: str, line: int, col0: int) -> Chain | None:
    """The chain when every operation has the common shape; None sends the text to the
    careful reader (which also owns every error message)."""
    ops: list[Operation] = []
    pos = 0
    end = len(text)
    head_at = _FAST_HEAD.match
    mod_at = _FAST_MOD.match
    new = tuple.__new__
    while True:
        found = head_at(text, pos)
        if found is None:
            return None
        head, target, verb_ref, closer = found.groups()
        if head in VERB_SET:
            verb, alias = head, None
        else:
            verb = ALIASES.get(head)
            if verb is None:
                return None
            alias = head
        if verb_ref is not None:
            # BATC/Π alone take a verb reference, and never OUT (E502 in the careful reader).
            if verb != "BATC":
                return None
            referred = verb_ref if verb_ref in VERB_SET else ALIASES.get(verb_ref)
            if referred is None or referred == "OUT":
                return None
        modifiers: tuple[Modifier, ...] = ()
        at = found.end()
        if closer == "|":
            mods: list[Modifier] = []
            while True:
                piece = mod_at(text, at)
                if piece is None:
                    return None  # a continuation piece, an escape, an empty value, an error
                key, quoted, bare, stop = piece.groups()
                if key not in MODIFIERS:
                    return None
                if bare is None:
                    if "\\" in quoted:
                        quoted = _UNESCAPE.sub(_unescape, quoted)
                    mods.append(new(Modifier, (key, quoted, True)))
                elif bare[0] == "@" and ENTITY_NAME.match(bare, 1) is None:
                    return None
                else:
                    mods.append(new(Modifier, (key, bare, False)))
                at = piece.end()
                if stop == "]":
                    break
            modifiers = tuple(mods)
        ops.append(new(Operation, (verb, alias, target, verb_ref, modifiers, col0 + pos)))
        if at == end:
            return new(Chain, (tuple(ops), line))
        if verb == "OUT" or not text.startswith("=>[", at):
            return None  # OUT before the end (E502), or text after an operation
        pos = at + 2


def parse_chain(text: str, line: int = 1, col: int = 1) -> Chain:
    """Parse one whole chain (continuations already joined)."""
    chain = scan_chain(text, line, col)
    return chain if chain is not None else _ChainReader(text, line, col).read()
