"""`::EVIDENCE{}` (SPEC-v4.0-FINAL §6): one item that backs (or fails) a deliverable.

All fields are optional when read (the corpus has `::EVIDENCE{verified_by:@TOOL}` with a
`src:` body line); `key:value` body lines are fields of the declaration (see
`FieldReader.add_body`). An unknown `result` is E303: only pass, fail and unknown carry
meaning for an audit, and guessing another word's meaning could pass a deliverable.
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import StrEnum
from typing import Any, ClassVar, Self

from pydantic import model_validator

from envelopes.declarations.base import Declaration, Extras, Value, build
from envelopes.declarations.fields import FieldReader, check_extras, render_fields, split_fields
from envelopes.errors import IlangError


class EvidenceResult(StrEnum):
    PASS = "pass"
    FAIL = "fail"
    UNKNOWN = "unknown"


_TEXT_FIELDS = ("id", "deliverable", "kind", "ref", "verified_by")
_NAMED = frozenset({*_TEXT_FIELDS, "result", "gap"})


class Evidence(Declaration):
    NAME: ClassVar[str] = "EVIDENCE"

    id: Value | None = None
    deliverable: Value | None = None
    kind: Value | None = None
    ref: Value | None = None
    verified_by: Value | None = None
    result: EvidenceResult | None = None
    gap: Value | None = None
    extras: Extras = ()

    @model_validator(mode="after")
    def _check(self) -> Self:
        check_extras(self.extras, _NAMED)
        return self

    @classmethod
    def from_parts(
        cls, header: str, body: Sequence[tuple[int, str]], line: int, *, col: int = 1
    ) -> Self:
        reader = FieldReader(cls.NAME, split_fields(header, line=line, col=col), line, col)
        reader.add_body(body)
        values: dict[str, Any] = {"id": reader.take_positional_id()}
        for name in _TEXT_FIELDS:
            value = reader.take_str(name)
            if value is not None or name != "id":
                values[name] = value
        result = reader.take("result")
        if result is not None:
            try:
                values["result"] = EvidenceResult(result.value)
            except ValueError:
                raise IlangError(
                    "E303",
                    f"unknown evidence result {result.value!r} (pass|fail|unknown)",
                    result.line,
                    result.col,
                ) from None
        values["gap"] = reader.take_str("gap")
        values["extras"] = reader.extras()
        return build(cls, line, col, cls.NAME, **values)

    def render(self) -> str:
        segments: list[tuple[str | None, str]] = [
            (name, getattr(self, name)) for name in _TEXT_FIELDS if getattr(self, name) is not None
        ]
        if self.result is not None:
            segments.append(("result", self.result.value))
        if self.gap is not None:
            segments.append(("gap", self.gap))
        segments += list(self.extras)
        return f"::{self.NAME}{{{render_fields(segments)}}}"
