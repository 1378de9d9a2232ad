"""`::BUDGET{}` (SPEC-v4.0-FINAL §2): what the runtime measured, never what is left.

`remaining` is derived (limit − used − reserve_audit − reserve_summary, negative
allowed). It is a property here, it is never rendered, and a `remaining` field in the
text is E303, in the header or on a body line alike.

Choices where the spec is silent:

* `kind` and `limit` are required (E300 without them): no remaining can be derived.
* `used` defaults to 0 and is always rendered; the reserves default to 0 and are
  rendered only when non-zero (the spec's own time and rounds examples leave them out).
* Token and round amounts are integers (a fractional one is E301); time amounts are
  seconds as floats, written `300s` (also read: `5m`, `1h`, and plain numbers).
* Negative amounts are E303; `used` may exceed `limit`.
* `authority` and `asof` are optional and have no default: a parsed budget must not
  claim runtime authority its text did not state. `asof` must read `round_N`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from enum import StrEnum
from typing import Any, ClassVar, Self

from pydantic import model_validator

from envelopes.declarations.base import Declaration, Extras, Value, build
from envelopes.declarations.fields import (
    FieldReader,
    Segment,
    check_extras,
    render_fields,
    split_fields,
)
from envelopes.errors import IlangError


class BudgetKind(StrEnum):
    TOKENS = "tokens"
    TIME = "time"
    ROUNDS = "rounds"


Amount = int | float

_NAMED = frozenset(
    {
        "id",
        "scope",
        "kind",
        "limit",
        "used",
        "reserve_audit",
        "reserve_summary",
        "authority",
        "asof",
        "remaining",
    }
)
_AMOUNTS = ("limit", "used", "reserve_audit", "reserve_summary")
_ASOF = re.compile(r"round_([0-9]{1,18})")
_TIME = re.compile(r"([0-9]+(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?)(s|m|h)?")
_COUNT = re.compile(r"[0-9]{1,30}")
_UNIT_SECONDS = {"s": 1.0, "m": 60.0, "h": 3600.0, None: 1.0}


def parse_amount(kind: BudgetKind, segment: Segment) -> Amount:
    """Read one amount of a budget of `kind` (E301 for a malformed number)."""
    text = segment.value
    if kind is BudgetKind.TIME:
        match = _TIME.fullmatch(text)
        if match is None or len(text) > 64:
            raise IlangError(
                "E301",
                f"{segment.key} must be seconds like 300s or 5m, got {text!r}",
                segment.line,
                segment.col,
            )
        seconds = float(match.group(1)) * _UNIT_SECONDS[match.group(2)]
        if not math.isfinite(seconds):
            raise IlangError(
                "E301", f"{segment.key} is out of range: {text!r}", segment.line, segment.col
            )
        return seconds
    if not _COUNT.fullmatch(text):
        raise IlangError(
            "E301",
            f"{segment.key} must be a whole number of {kind}, got {text!r}",
            segment.line,
            segment.col,
        )
    return int(text)


def render_amount(kind: BudgetKind, amount: Amount) -> str:
    if kind is not BudgetKind.TIME:
        return str(int(amount))
    seconds = float(amount)
    if seconds.is_integer():
        return f"{int(seconds)}s"
    return f"{seconds!r}s"


class Budget(Declaration):
    NAME: ClassVar[str] = "BUDGET"

    id: Value | None = None
    scope: Value = "@TASK"
    kind: BudgetKind
    limit: Amount
    used: Amount = 0
    reserve_audit: Amount = 0
    reserve_summary: Amount = 0
    authority: Value | None = None
    asof: int | None = None
    extras: Extras = ()

    @model_validator(mode="before")
    @classmethod
    def _normalise_amounts(cls, data: Any) -> Any:
        """Token/round amounts become ints, time amounts floats, so equal budgets compare
        equal however they were written."""
        if not isinstance(data, dict):
            return data
        try:
            kind = BudgetKind(str(data.get("kind")))
        except ValueError:
            return data
        out = dict(data)
        for name in _AMOUNTS:
            value = out.get(name)
            if isinstance(value, bool) or not isinstance(value, int | float):
                continue
            if kind is BudgetKind.TIME:
                out[name] = float(value)
            elif isinstance(value, float) and value.is_integer():
                out[name] = int(value)
        return out

    @model_validator(mode="after")
    def _check(self) -> Self:
        for name in _AMOUNTS:
            value = getattr(self, name)
            if isinstance(value, float) and not math.isfinite(value):
                raise ValueError(f"{name} must be finite")
            if value < 0:
                raise ValueError(f"{name} must not be negative")
            if self.kind is not BudgetKind.TIME and not isinstance(value, int):
                raise ValueError(f"{name} of a {self.kind} budget must be a whole number")
        if self.asof is not None and self.asof < 0:
            raise ValueError("asof round must not be negative")
        check_extras(self.extras, _NAMED)
        return self

    @property
    def remaining(self) -> Amount:
        """Derived, never stored or rendered (§2): may be negative."""
        return self.limit - self.used - self.reserve_audit - self.reserve_summary

    @property
    def exhausted(self) -> bool:
        return self.remaining <= 0

    @classmethod
    def from_parts(
        cls, header: str, body: Sequence[tuple[int, str]], line: int, *, col: int = 1
    ) -> Self:
        reader = FieldReader(cls.NAME, split_fields(header, line=line, col=col), line, col)
        reader.add_body(body)
        reader.no_positionals()
        remaining = reader.take("remaining")
        if remaining is not None:
            raise IlangError(
                "E303",
                "remaining MUST NOT appear as a ::BUDGET field; it is derived "
                "(limit - used - reserve_audit - reserve_summary)",
                remaining.line,
                remaining.col,
            )
        kind_seg = reader.require("kind")
        try:
            kind = BudgetKind(kind_seg.value)
        except ValueError:
            raise IlangError(
                "E303",
                f"unknown budget kind {kind_seg.value!r} (tokens|time|rounds)",
                kind_seg.line,
                kind_seg.col,
            ) from None
        limit = parse_amount(kind, reader.require("limit"))
        values: dict[str, Any] = {"kind": kind, "limit": limit}
        for name in _AMOUNTS[1:]:
            segment = reader.take(name)
            if segment is not None:
                values[name] = parse_amount(kind, segment)
        scope = reader.take_str("scope")
        if scope is not None:
            values["scope"] = scope
        asof = reader.take("asof")
        if asof is not None:
            match = _ASOF.fullmatch(asof.value)
            if match is None:
                raise IlangError(
                    "E303", f"asof must read round_N, got {asof.value!r}", asof.line, asof.col
                )
            values["asof"] = int(match.group(1))
        values["id"] = reader.take_str("id")
        values["authority"] = reader.take_str("authority")
        values["extras"] = reader.extras()
        return build(cls, line, col, cls.NAME, **values)

    def render(self) -> str:
        segments: list[tuple[str | None, str]] = []
        if self.id is not None:
            segments.append(("id", self.id))
        segments += [
            ("scope", self.scope),
            ("kind", self.kind.value),
            ("limit", render_amount(self.kind, self.limit)),
            ("used", render_amount(self.kind, self.used)),
        ]
        for name in ("reserve_audit", "reserve_summary"):
            amount = getattr(self, name)
            if amount:
                segments.append((name, render_amount(self.kind, amount)))
        segments += list(self.extras)
        if self.authority is not None:
            segments.append(("authority", self.authority))
        if self.asof is not None:
            segments.append(("asof", f"round_{self.asof}"))
        return f"::{self.NAME}{{{render_fields(segments)}}}"
