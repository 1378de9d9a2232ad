"""`::FALLBACK{condition⇒tier}` (SPEC-v4.0-FINAL §0.1): how to degrade when a semantic
cannot be enforced.

The header is one positional segment. Only the spec's arrow `⇒` is read: an ASCII
`=>` is the operation pipe, and reading it here would be a guess (E300). The condition
is an identifier (every spec condition is one); the tier is one of ignore, warn,
safe_mode, read_only (§0.1 uses read_only in its examples although its tier table
lists three tiers).
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import StrEnum
from typing import ClassVar, Self

from pydantic import model_validator

from envelopes.declarations.base import Declaration, build, no_body
from envelopes.declarations.fields import IDENTIFIER, split_fields
from envelopes.errors import IlangError

ARROW = "⇒"


class FallbackTier(StrEnum):
    IGNORE = "ignore"
    WARN = "warn"
    SAFE_MODE = "safe_mode"
    READ_ONLY = "read_only"


class Fallback(Declaration):
    NAME: ClassVar[str] = "FALLBACK"

    condition: str
    tier: FallbackTier

    @model_validator(mode="after")
    def _check(self) -> Self:
        if not IDENTIFIER.fullmatch(self.condition):
            raise ValueError(f"condition {self.condition!r} is not an identifier")
        return self

    @classmethod
    def from_parts(
        cls, header: str, body: Sequence[tuple[int, str]], line: int, *, col: int = 1
    ) -> Self:
        no_body(cls.NAME, body)
        segments = split_fields(header, line=line, col=col)
        if len(segments) != 1 or segments[0].key is not None:
            raise IlangError("E300", "::FALLBACK takes exactly one condition⇒tier", line, col)
        text = segments[0].value
        if text.count(ARROW) != 1:
            raise IlangError(
                "E300", "::FALLBACK needs one ⇒ between condition and tier", line, segments[0].col
            )
        condition, tier = (part.strip(" ") for part in text.split(ARROW))
        try:
            tier_value = FallbackTier(tier)
        except ValueError:
            raise IlangError(
                "E303",
                f"unknown fallback tier {tier!r} (ignore|warn|safe_mode|read_only)",
                line,
                segments[0].col,
            ) from None
        if not IDENTIFIER.fullmatch(condition):
            raise IlangError(
                "E300",
                f"fallback condition {condition!r} is not an identifier",
                line,
                segments[0].col,
            )
        return build(cls, line, col, cls.NAME, condition=condition, tier=tier_value)

    def render(self) -> str:
        return f"::{self.NAME}{{{self.condition}{ARROW}{self.tier.value}}}"
