"""`::OBJECTIVE{}` (SPEC-v4.0-FINAL §3): the anchor of status, budget and audit.

Header: id, owner, trust, version, hash, status (lifecycle). Body: B2 narrative fields
(`ACCEPT:`, `NON_GOALS:`, `DONE_WHEN:`, and any other, e.g. `target:`), kept in order.

A body value is free text to the end of the line (SPEC-v5.0 Part III B2; OBJECTIVE
narrative fields are a declared prose body), so `|` and braces are ordinary text in it.
Fail-closed choices:

* A body value that begins with `"` must be one complete quoted string (§2.4 escapes);
  anything else beginning with a quote is E300, since it reads two ways.
* A body line that is not `KEY: value`, or a key repeated in the body (compared
  case-insensitively), is E300/E303.
* An unknown lifecycle status is E303; a version below 1 is E303.
* `hash` is any text (the spec's own example is `sha256:abc123`); `hash_matches()` tells
  whether it is the digest of the body.

The canonical body text, which `body_digest` hashes, is one line `KEY: value` per field
(value rendered as `render` writes it, no indentation), each ended by `\\n`, UTF-8.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from enum import StrEnum
from typing import Any, ClassVar, Self

from pydantic import model_validator

from envelopes.declarations.base import Declaration, Extras, Value, build, parse_int
from envelopes.declarations.fields import (
    FULLWIDTH_COLON,
    FULLWIDTH_PIPE,
    IDENTIFIER,
    FieldReader,
    check_extras,
    quote,
    read_quoted,
    render_fields,
    split_fields,
    value_char_allowed,
)
from envelopes.errors import IlangError


class ObjectiveStatus(StrEnum):
    """§3 lifecycle: created → active → paused → active → complete | abandoned."""

    CREATED = "created"
    ACTIVE = "active"
    PAUSED = "paused"
    COMPLETE = "complete"
    ABANDONED = "abandoned"


_NAMED = frozenset({"id", "owner", "trust", "version", "hash", "status"})
BodyFields = tuple[tuple[str, Value], ...]


def _plain_free(value: str) -> bool:
    """True when every character is one free text may hold, found in C: a printable
    character (`str.isprintable`: no control, format, unassigned or separator character but
    the ASCII space) is never a line break, tab or odd space, so only ｜ is left to rule out.
    False says nothing: the caller's per-character look-up decides."""
    return value.isprintable() and FULLWIDTH_PIPE not in value


def _free_char_ok(ch: str) -> bool:
    """A character unquoted free text may hold: no line breaks, tabs or odd spaces, and
    no full-width ｜ (a mistyped separator, see fields.py)."""
    if ch == " ":
        return True
    return ch != FULLWIDTH_PIPE and value_char_allowed(ch) and not ch.isspace()


def _free_text_ok(value: str) -> bool:
    """Whether a body value reads back unchanged as unquoted free text."""
    if value == "" or value[0].isspace() or value[-1].isspace() or value[0] == '"':
        return False
    return _plain_free(value) or all(_free_char_ok(ch) for ch in value)


def render_body_value(value: str) -> str:
    return value if _free_text_ok(value) else quote(value)


def _check_body(body: BodyFields) -> None:
    seen: set[str] = set()
    for key, _ in body:
        if not IDENTIFIER.fullmatch(key):
            raise ValueError(f"body key {key!r} is not an identifier")
        if key.lower() in seen:
            raise ValueError(f"body key {key!r} is repeated")
        seen.add(key.lower())


class Objective(Declaration):
    NAME: ClassVar[str] = "OBJECTIVE"

    id: Value | None = None
    owner: Value | None = None
    trust: Value | None = None
    version: int | None = None
    hash: Value | None = None
    status: ObjectiveStatus | None = None
    extras: Extras = ()
    body: BodyFields = ()

    @model_validator(mode="after")
    def _check(self) -> Self:
        if self.version is not None and self.version < 1:
            raise ValueError("version starts at 1")
        check_extras(self.extras, _NAMED)
        _check_body(self.body)
        return self

    @classmethod
    def create(
        cls,
        *,
        body: Sequence[tuple[str, str]],
        id: str | None = None,
        owner: str | None = "user",
        trust: str | None = "untrusted",
        version: int = 1,
        status: ObjectiveStatus | None = ObjectiveStatus.ACTIVE,
        extras: Sequence[tuple[str, str]] = (),
    ) -> Objective:
        """An objective whose `hash` is the digest of its body."""
        draft = cls(
            id=id,
            owner=owner,
            trust=trust,
            version=version,
            status=status,
            extras=tuple(extras),
            body=tuple(body),
        )
        return draft.model_copy(update={"hash": draft.body_digest()})

    def field(self, key: str) -> str | None:
        """A body field by key, compared case-insensitively."""
        return next((v for k, v in self.body if k.lower() == key.lower()), None)

    @property
    def accept(self) -> str | None:
        return self.field("ACCEPT")

    @property
    def non_goals(self) -> str | None:
        return self.field("NON_GOALS")

    @property
    def done_when(self) -> str | None:
        return self.field("DONE_WHEN")

    def body_text(self) -> str:
        return "".join(f"{key}: {render_body_value(value)}\n" for key, value in self.body)

    def body_digest(self) -> str:
        return "sha256:" + hashlib.sha256(self.body_text().encode("utf-8")).hexdigest()

    def hash_matches(self) -> bool:
        return self.hash == self.body_digest()

    @classmethod
    def from_parts(
        cls, header: str, body: Sequence[tuple[int, str]], line: int, *, col: int = 1
    ) -> Self:
        reader = FieldReader(cls.NAME, split_fields(header, line=line, col=col), line, col)
        values: dict[str, Any] = {"id": reader.take_positional_id()}
        if values["id"] is None:
            values["id"] = reader.take_str("id")
        for name in ("owner", "trust", "hash"):
            values[name] = reader.take_str(name)
        version = reader.take("version")
        if version is not None:
            values["version"] = parse_int(version)
        status = reader.take("status")
        if status is not None:
            try:
                values["status"] = ObjectiveStatus(status.value)
            except ValueError:
                raise IlangError(
                    "E303",
                    f"unknown objective status {status.value!r} "
                    "(created|active|paused|complete|abandoned)",
                    status.line,
                    status.col,
                ) from None
        values["extras"] = reader.extras()
        values["body"] = _read_body(body)
        return build(cls, line, col, cls.NAME, **values)

    def render(self) -> str:
        segments: list[tuple[str | None, str]] = []
        for name in ("id", "owner", "trust"):
            if getattr(self, name) is not None:
                segments.append((name, getattr(self, name)))
        if self.version is not None:
            segments.append(("version", str(self.version)))
        if self.hash is not None:
            segments.append(("hash", self.hash))
        if self.status is not None:
            segments.append(("status", self.status.value))
        segments += list(self.extras)
        lines = [f"::{self.NAME}{{{render_fields(segments)}}}"]
        lines += [f"  {key}: {render_body_value(value)}" for key, value in self.body]
        return "\n".join(lines)


def _read_body(body: Sequence[tuple[int, str]]) -> BodyFields:
    fields: list[tuple[str, str]] = []
    seen: set[str] = set()
    for line_no, text in body:
        key, value = _read_body_line(line_no, text)
        if key.lower() in seen:
            raise IlangError("E303", f"repeated body key {key!r}", line_no, 1)
        seen.add(key.lower())
        fields.append((key, value))
    return tuple(fields)


def _read_body_line(line_no: int, text: str) -> tuple[str, str]:
    colon = text.find(":")
    wide = text.find(FULLWIDTH_COLON)
    if wide >= 0 and (colon < 0 or wide < colon) and IDENTIFIER.fullmatch(text[:wide].strip()):
        raise IlangError("E300", "full-width ： used as a key separator", line_no, wide + 1)
    if colon < 0 or not IDENTIFIER.fullmatch(text[:colon].strip(" \t")):
        raise IlangError("E300", "::OBJECTIVE body line is not KEY: value", line_no, 1)
    key = text[:colon].strip(" \t")
    raw = text[colon + 1 :].strip(" \t")
    start = colon + 1 + (len(text[colon + 1 :]) - len(text[colon + 1 :].lstrip(" \t")))
    if raw.startswith('"'):
        value, end = read_quoted(raw, 0, line=line_no, col=start + 1)
        if raw[end:].strip(" \t"):
            raise IlangError(
                "E300",
                "text after a quoted body value (quote the whole value)",
                line_no,
                start + end + 1,
            )
        return key, value
    if _plain_free(raw):
        return key, raw
    for offset, ch in enumerate(raw):
        if ch == FULLWIDTH_PIPE:
            raise IlangError("E300", "full-width ｜ in a body value", line_no, start + offset + 1)
        if not _free_char_ok(ch):
            raise IlangError(
                "E303",
                f"character {ch!r} in an unquoted body value (quote it)",
                line_no,
                start + offset + 1,
            )
    return key, raw
