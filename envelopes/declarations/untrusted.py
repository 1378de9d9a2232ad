"""`::UNTRUSTED{}` (SPEC-v4.0-FINAL §1): the header of an isolated block of data.

This model is the header only. The payload (between `<<<DELIM` and `DELIM`) and the
closing `::END_UNTRUSTED{id:…}` are read by `envelopes.isolation`, never by a field
parser: nothing inside a block is parsed as iLang.

Fail-closed choices: `delimiter` and `payload` together are E303 (two ways to find the
content); `payload` may only be `external` (§1); a delimiter is a run of ASCII letters,
digits and `_` (a delimiter with spaces or punctuation could be mistaken for content
by a reader that trims lines); body lines are E300 (the payload is not a body).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, ClassVar, Self

from pydantic import model_validator

from envelopes.declarations.base import Declaration, Extras, Value, build, no_body
from envelopes.declarations.fields import FieldReader, check_extras, render_fields, split_fields

DELIMITER = re.compile(r"[A-Za-z0-9_]+")
EXTERNAL = "external"
_TEXT_FIELDS = ("id", "source", "role", "effects", "delimiter", "payload")
_NAMED = frozenset(_TEXT_FIELDS)


class Untrusted(Declaration):
    NAME: ClassVar[str] = "UNTRUSTED"

    id: Value | None = None
    source: Value | None = None
    role: Value | None = None
    effects: Value | None = None
    delimiter: Value | None = None
    payload: Value | None = None
    extras: Extras = ()

    @model_validator(mode="after")
    def _check(self) -> Self:
        if self.delimiter is not None and self.payload is not None:
            raise ValueError("a block has either a delimiter or payload:external, not both")
        if self.payload is not None and self.payload != EXTERNAL:
            raise ValueError(f"payload must be {EXTERNAL!r}, got {self.payload!r}")
        if self.delimiter is not None and not DELIMITER.fullmatch(self.delimiter):
            raise ValueError(f"delimiter {self.delimiter!r} is not [A-Za-z0-9_]+")
        check_extras(self.extras, _NAMED)
        return self

    @classmethod
    def from_parts(
        cls, header: str, body: Sequence[tuple[int, str]], line: int, *, col: int = 1
    ) -> Self:
        no_body(cls.NAME, body)
        reader = FieldReader(cls.NAME, split_fields(header, line=line, col=col), line, col)
        reader.no_positionals()
        values: dict[str, Any] = {name: reader.take_str(name) for name in _TEXT_FIELDS}
        values["extras"] = reader.extras()
        return build(cls, line, col, cls.NAME, **values)

    def render(self) -> str:
        segments: list[tuple[str | None, str]] = [
            (name, getattr(self, name)) for name in _TEXT_FIELDS if getattr(self, name) is not None
        ]
        segments += list(self.extras)
        return f"::{self.NAME}{{{render_fields(segments)}}}"

    def end_line(self) -> str:
        """The `::END_UNTRUSTED{id:…}` line that closes this block."""
        if self.id is None:
            return "::END_UNTRUSTED{}"
        return f"::END_UNTRUSTED{{{render_fields([('id', self.id)])}}}"
