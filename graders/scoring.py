"""Rubric scoring (spec §5, weighted mode) and the verdict rule (spec §7 CHEK).

score = the sum of the weights of the criteria that passed. A failed or unknown criterion
adds nothing, so with unknowns the score is a lower bound, never a guess.

Verdict: `verified_complete` iff

    score ≥ threshold  AND  no criterion is unknown  AND  no criterion failed

otherwise `needs_revision`, with every criterion that did not pass in `missing`.

Why `no fail` too: spec §5 calls the threshold "the *minimum* weighted score for
verified_complete" (a necessary condition, not a sufficient one) and the spec §7 audit
checks `whr=score>=threshold,no_unknown,no_fail`. Where §5 alone would let a low-weight
failure through, we take the fail-closed reading: a criterion the rubric lists is a
requirement, and a failed requirement is a gap.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Literal, Self

from pydantic import BaseModel, ConfigDict, Field, model_validator

from graders.criteria import Result, UnknownCause, Via

Verdict = Literal["verified_complete", "needs_revision"]

#: Scores are rounded so that 0.1 + 0.2 reads 0.3 in reports and status lines.
SCORE_DIGITS = 6
SCORE_EPSILON = 1e-9  # float slack when comparing a score with the threshold


class CriterionOutcome(BaseModel):
    """One criterion's result: DESIGN §6 `criteria[]` plus why an unknown is unknown."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    weight: float = Field(ge=0, le=1)
    result: Result
    via: Via
    evidence: str = ""
    detail: str = ""
    cause: UnknownCause | None = None

    @model_validator(mode="after")
    def _consistent(self) -> Self:
        if (self.result == "unknown") != (self.cause is not None):
            raise ValueError("an unknown result carries its cause, and only an unknown one")
        if self.via == "none" and self.result != "unknown":
            raise ValueError("a criterion nothing decided can only be unknown")
        return self

    def row(self) -> dict[str, object]:
        """The DESIGN §6 `criteria[]` entry."""
        return self.model_dump(include={"id", "weight", "result", "via", "evidence", "detail"})


class Decision(BaseModel):
    """Step 4 of the audit (CHEK): the score and the verdict it allows."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    verdict: Verdict
    score: float
    threshold: float
    missing: tuple[str, ...]
    failed: tuple[str, ...]
    unknown: tuple[str, ...]
    reasons: tuple[str, ...]
    """Why the verdict is not verified_complete (empty when it is)."""


def weighted_score(outcomes: Sequence[CriterionOutcome]) -> float:
    total = math.fsum(o.weight for o in outcomes if o.result == "pass")
    return round(total, SCORE_DIGITS)


def decide(outcomes: Sequence[CriterionOutcome], threshold: float) -> Decision:
    """Score the outcomes and apply the verdict rule of the module docstring."""
    if not outcomes:
        raise ValueError("a rubric has at least one criterion")
    score = weighted_score(outcomes)
    failed = tuple(o.id for o in outcomes if o.result == "fail")
    unknown = tuple(o.id for o in outcomes if o.result == "unknown")
    reasons: list[str] = []
    if score + SCORE_EPSILON < threshold:
        reasons.append(f"score {score:g} is below the threshold {threshold:g}")
    if failed:
        reasons.append("failed: " + ", ".join(failed))
    if unknown:
        reasons.append("unknown (unknown never verifies): " + ", ".join(unknown))
    return Decision(
        verdict="needs_revision" if reasons else "verified_complete",
        score=score,
        threshold=threshold,
        missing=tuple(o.id for o in outcomes if o.result != "pass"),
        failed=failed,
        unknown=unknown,
        reasons=tuple(reasons),
    )
