"""`::RUBRIC{}` (SPEC-v4.0-FINAL §5): the contract between objective and grader.

Header: id, objective, threshold, mode (`weighted`). Body: criterion rows
`R:<id>|weight:<w>|check:<text>` (B3), other row keys kept in order.

Fail-closed choices: every body line must be an `R:` row (a rubric body is not prose,
E300); a row needs a weight (E300), since a weighted score cannot skip one; a weight
or threshold that is not a number is E301. Range and sum problems are findings
(`rubric_findings`), so a linter can report all of them at once.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, ClassVar, Self

from pydantic import BaseModel, ConfigDict, model_validator

from envelopes.declarations.base import Declaration, Extras, Value, build, parse_float, render_float
from envelopes.declarations.fields import (
    FieldReader,
    Segment,
    check_extras,
    render_fields,
    split_fields,
)
from envelopes.errors import Finding, IlangError

WEIGHT_TOLERANCE = 1e-9
KNOWN_MODES = frozenset({"weighted"})
_NAMED = frozenset({"id", "objective", "threshold", "mode"})
_ROW_NAMED = frozenset({"r", "weight", "check"})


class Criterion(BaseModel):
    """One rubric row."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    id: Value
    weight: float
    check: Value | None = None
    extras: Extras = ()

    @model_validator(mode="after")
    def _check(self) -> Self:
        if not math.isfinite(self.weight):
            raise ValueError("weight must be finite")
        check_extras(self.extras, _ROW_NAMED)
        return self

    def render(self) -> str:
        segments: list[tuple[str | None, str]] = [
            ("R", self.id),
            ("weight", render_float(self.weight)),
        ]
        if self.check is not None:
            segments.append(("check", self.check))
        segments += list(self.extras)
        return render_fields(segments)


class Rubric(Declaration):
    NAME: ClassVar[str] = "RUBRIC"

    id: Value | None = None
    objective: Value | None = None
    threshold: float | None = None
    mode: Value | None = None
    extras: Extras = ()
    criteria: tuple[Criterion, ...] = ()

    @model_validator(mode="after")
    def _check(self) -> Self:
        if self.threshold is not None and not math.isfinite(self.threshold):
            raise ValueError("threshold must be finite")
        check_extras(self.extras, _NAMED)
        return self

    @classmethod
    def from_parts(
        cls, header: str, body: Sequence[tuple[int, str]], line: int, *, col: int = 1
    ) -> Self:
        reader = FieldReader(cls.NAME, split_fields(header, line=line, col=col), line, col)
        values: dict[str, Any] = {"id": reader.take_positional_id()}
        if values["id"] is None:
            values["id"] = reader.take_str("id")
        values["objective"] = reader.take_str("objective")
        threshold = reader.take("threshold")
        if threshold is not None:
            values["threshold"] = parse_float(threshold)
        values["mode"] = reader.take_str("mode")
        values["extras"] = reader.extras()
        values["criteria"] = tuple(_read_row(n, text) for n, text in body)
        return build(cls, line, col, cls.NAME, **values)

    def render(self) -> str:
        segments: list[tuple[str | None, str]] = []
        for name in ("id", "objective"):
            if getattr(self, name) is not None:
                segments.append((name, getattr(self, name)))
        if self.threshold is not None:
            segments.append(("threshold", render_float(self.threshold)))
        if self.mode is not None:
            segments.append(("mode", self.mode))
        segments += list(self.extras)
        lines = [f"::{self.NAME}{{{render_fields(segments)}}}"]
        lines += [f"  {row.render()}" for row in self.criteria]
        return "\n".join(lines)


def _read_row(line_no: int, text: str) -> Criterion:
    segments = split_fields(text, line=line_no, col=1)
    if not segments or segments[0].key != "R":
        raise IlangError("E300", "::RUBRIC body line is not a criterion row R:…", line_no, 1)
    by_key: dict[str, Segment] = {}
    extras: list[tuple[str, str]] = []
    for segment in segments[1:]:
        if segment.key is None:
            raise IlangError(
                "E300",
                f"positional {segment.value!r} in a criterion row",
                segment.line,
                segment.col,
            )
        if segment.key in ("weight", "check"):
            by_key[segment.key] = segment
        else:
            extras.append((segment.key, segment.value))
    if "weight" not in by_key:
        raise IlangError("E300", "criterion row needs a weight", line_no, 1)
    check = by_key.get("check")
    return build(
        Criterion,
        line_no,
        1,
        "RUBRIC",
        id=segments[0].value,
        weight=parse_float(by_key["weight"]),
        check=None if check is None else check.value,
        extras=tuple(extras),
    )


def rubric_findings(r: Rubric, line: int) -> list[Finding]:
    """Range and consistency problems of a rubric (§5), all E303 errors except an
    unknown mode (a warning: the spec shows only `weighted` but does not close the
    set)."""
    found: list[Finding] = []
    if r.threshold is not None and not 0.0 <= r.threshold <= 1.0:
        found.append(Finding("E303", f"threshold {r.threshold} is outside [0, 1]", line))
    if r.mode is not None and r.mode not in KNOWN_MODES:
        found.append(Finding("E303", f"unknown rubric mode {r.mode!r}", line, 1, "warning"))
    if not r.criteria:
        found.append(Finding("E303", "rubric has no criterion rows", line))
        return found
    seen: set[str] = set()
    for offset, row in enumerate(r.criteria, start=1):
        if row.id in seen:
            found.append(Finding("E303", f"criterion {row.id!r} is repeated", line + offset))
        seen.add(row.id)
        if not 0.0 <= row.weight <= 1.0:
            found.append(
                Finding(
                    "E303", f"weight {row.weight} of {row.id!r} is outside [0, 1]", line + offset
                )
            )
    total = math.fsum(row.weight for row in r.criteria)
    if abs(total - 1.0) > WEIGHT_TOLERANCE:
        found.append(Finding("E303", f"criterion weights sum to {total!r}, not 1", line))
    return found
