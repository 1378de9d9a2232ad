"""`::PRIOR{}` (SPEC-v4.0-FINAL §8): a default judgment, lowest in precedence.

Two written forms, kept apart so that `render` gives back the form that was read:

* canonical `::PRIOR{dimension:…|default:…|authority:…|scope:…}` (authority and scope
  optional when read; other keys kept as extras);
* sugar `::PRIOR{completion:assume_incomplete}`: exactly one `key:value` field whose key
  is the dimension. It stands for the canonical form with `authority:developer|
  scope:gene_context` (§8); `canonical()` gives that expansion.

Fail-closed: a header with `dimension` or `default` is canonical and needs both (E300);
a header with neither must be the single-field sugar, anything else (`::PRIOR{}`,
`::PRIOR{x}`, two unnamed fields) is E300, because no reading of it is the spec's.
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import StrEnum
from typing import Any, ClassVar, Self

from pydantic import model_validator

from envelopes.declarations.base import Declaration, Extras, Value, build, no_body
from envelopes.declarations.fields import (
    LOWER_KEY,
    FieldReader,
    check_extras,
    render_fields,
    split_fields,
)
from envelopes.errors import IlangError

SUGAR_AUTHORITY = "developer"
SUGAR_SCOPE = "gene_context"
_NAMED = frozenset({"dimension", "default", "authority", "scope"})


class PriorForm(StrEnum):
    CANONICAL = "canonical"
    SUGAR = "sugar"


class Prior(Declaration):
    NAME: ClassVar[str] = "PRIOR"

    dimension: Value
    default: Value
    authority: Value | None = None
    scope: Value | None = None
    extras: Extras = ()
    form: PriorForm = PriorForm.CANONICAL

    @model_validator(mode="after")
    def _check(self) -> Self:
        check_extras(self.extras, _NAMED)
        if self.form is PriorForm.SUGAR:
            if not LOWER_KEY.fullmatch(self.dimension) or self.dimension in _NAMED:
                raise ValueError(f"dimension {self.dimension!r} cannot be a sugar key")
            if self.extras or (self.authority, self.scope) != (SUGAR_AUTHORITY, SUGAR_SCOPE):
                raise ValueError(
                    "sugar form means authority:developer|scope:gene_context and no extras"
                )
        return self

    def canonical(self) -> Prior:
        """The canonical long form (the sugar's expansion; a canonical prior as is)."""
        return self.model_copy(update={"form": PriorForm.CANONICAL})

    @classmethod
    def sugar(cls, dimension: str, default: str) -> Prior:
        return cls(
            dimension=dimension,
            default=default,
            authority=SUGAR_AUTHORITY,
            scope=SUGAR_SCOPE,
            form=PriorForm.SUGAR,
        )

    @classmethod
    def from_parts(
        cls, header: str, body: Sequence[tuple[int, str]], line: int, *, col: int = 1
    ) -> Self:
        no_body(cls.NAME, body)
        segments = split_fields(header, line=line, col=col)
        reader = FieldReader(cls.NAME, segments, line, col)
        reader.no_positionals()
        if "dimension" in reader.fields or "default" in reader.fields:
            values: dict[str, Any] = {
                "dimension": reader.require("dimension").value,
                "default": reader.require("default").value,
                "authority": reader.take_str("authority"),
                "scope": reader.take_str("scope"),
                "extras": reader.extras(),
            }
            return build(cls, line, col, cls.NAME, **values)
        if len(segments) != 1:
            raise IlangError(
                "E300",
                "::PRIOR is either dimension:…|default:… or one dimension:default field",
                line,
                col,
            )
        (only,) = segments
        assert only.key is not None  # no_positionals() passed
        if only.key in _NAMED:
            raise IlangError(
                "E300", f"::PRIOR{{{only.key}:…}} is neither canonical nor sugar", line, col
            )
        return build(
            cls,
            line,
            col,
            cls.NAME,
            dimension=only.key,
            default=only.value,
            authority=SUGAR_AUTHORITY,
            scope=SUGAR_SCOPE,
            form=PriorForm.SUGAR,
        )

    def render(self) -> str:
        if self.form is PriorForm.SUGAR:
            return f"::{self.NAME}{{{render_fields([(self.dimension, self.default)])}}}"
        segments: list[tuple[str | None, str]] = [
            ("dimension", self.dimension),
            ("default", self.default),
        ]
        if self.authority is not None:
            segments.append(("authority", self.authority))
        if self.scope is not None:
            segments.append(("scope", self.scope))
        segments += list(self.extras)
        return f"::{self.NAME}{{{render_fields(segments)}}}"
