"""What the grader grades against: the rubric as the grader sees it (spec §5), and the
vocabulary of per-criterion results.

`graders` depends on `envelopes` and `budgets` only (DESIGN §2), so the harness turns a
task file into a `GradingRubric` before the grader sees it (`harness.grading.grader`).

A rubric comes from one of two places:

* the task's `[rubric]` — each criterion is a deliverable of the objective, judged by its
  tool check (`run`) or, without one, by a grader model;
* no `[rubric]` — spec §5: "Without rubric, grader evaluates against ::OBJECTIVE
  ACCEPT/DONE_WHEN directly". `objective_rubric` makes one model-judged criterion per
  condition the objective states (ACCEPT, DONE_WHEN; the objective itself when it states
  neither), equal weights, threshold 1.0. Fail-closed reading: a condition the user wrote
  is a requirement, so every one must pass; and since only a grader model can judge
  free text, such a task is never verified without one.
"""

from __future__ import annotations

import functools
import math
from typing import Literal, Self

from pydantic import BaseModel, ConfigDict, Field, model_validator

Result = Literal["pass", "fail", "unknown"]
"""Spec §5: every criterion is pass, fail or unknown."""

Via = Literal["tool", "model", "none"]
"""DESIGN §6: what decided a criterion (`none`: nothing could)."""

UnknownCause = Literal[
    "no_grader",  # model-judged, and no grader model was given
    "audit_budget",  # the audit reserve (tokens or time) could not pay for the check
    "grader_invalid",  # the grader model's answer was invalid, twice
    "grader_error",  # the grader model could not be called (or ended)
    "grader_unsure",  # the grader model looked and found the evidence insufficient
    "check_error",  # the tool check could not be started (or had no command)
    "no_evidence",  # a pass without a deciding ::EVIDENCE item of result pass (audit step 2)
]

#: Unknown causes the agent can do something about (more work, more evidence). The others
#: are the grader's own limits: no amount of agent work resolves them in this run.
AGENT_ACTIONABLE: frozenset[UnknownCause] = frozenset({"grader_unsure"})

WEIGHT_TOLERANCE = 1e-9
CRITERION_ID = r"^[A-Za-z_][A-Za-z0-9_]{0,63}$"


class GradingCriterion(BaseModel):
    """One rubric row: a deliverable and how it is checked: a free command (`run`), a
    test runner the harness runs itself (`pytest`, `unittest`: their arguments), or
    neither (model-judged). `hidden`: the check uses the task's hidden checks folder;
    the agent never sees its command, source or output."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str = Field(pattern=CRITERION_ID)
    weight: float = Field(ge=0, le=1)
    check: str = Field(min_length=1)
    run: str | None = Field(default=None, min_length=1)
    pytest: str | None = Field(default=None, min_length=1)
    unittest: str | None = Field(default=None, min_length=1)
    hidden: bool = False

    @model_validator(mode="after")
    def _one_way(self) -> Self:
        if sum(v is not None for v in (self.run, self.pytest, self.unittest)) > 1:
            raise ValueError("a criterion has at most one of run, pytest and unittest")
        return self

    @property
    def tool_checked(self) -> bool:
        return self.command is not None

    @property
    def command(self) -> str | None:
        """The check as a command line, for people (None: model-judged)."""
        if self.pytest is not None:
            return f"pytest {self.pytest}"
        if self.unittest is not None:
            return f"python -m unittest {self.unittest}"
        return self.run


class GradingRubric(BaseModel):
    """The rubric the grader applies (weighted mode, spec §5)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    threshold: float = Field(ge=0, le=1)
    criteria: tuple[GradingCriterion, ...] = Field(min_length=1)
    source: Literal["rubric", "objective"] = "rubric"

    @model_validator(mode="after")
    def _ids_and_weights(self) -> Self:
        ids = [c.id for c in self.criteria]
        if len(set(ids)) != len(ids):
            raise ValueError("criterion ids must be unique")
        total = math.fsum(c.weight for c in self.criteria)
        if abs(total - 1.0) > WEIGHT_TOLERANCE:
            raise ValueError(f"criterion weights sum to {total!r}, not 1")
        return self

    def get(self, criterion_id: str) -> GradingCriterion | None:
        return next((c for c in self.criteria if c.id == criterion_id), None)


@functools.cache  # four rubrics in all, frozen: every run of a task shares its own
def objective_rubric(*, has_accept: bool, has_done_when: bool) -> GradingRubric:
    """The rubric of a task without `[rubric]` (see the module docstring).

    The check texts point at the untrusted blocks holding the user's words, as the
    runtime's ::OBJECTIVE does: no user text is ever written into a runtime line.
    """
    rows: list[tuple[str, str]] = []
    if has_accept:
        rows.append(("accept", "the objective's ACCEPT condition (untrusted block accept) holds"))
    if has_done_when:
        rows.append(
            ("done_when", "the objective's DONE_WHEN condition (untrusted block done_when) holds")
        )
    if not rows:
        rows.append(("objective", "the objective (untrusted block objective) is fully met"))
    weights = _equal_weights(len(rows))
    return GradingRubric(
        threshold=1.0,
        source="objective",
        criteria=tuple(
            GradingCriterion(id=cid, weight=w, check=check)
            for (cid, check), w in zip(rows, weights, strict=True)
        ),
    )


def _equal_weights(n: int) -> list[float]:
    # The last weight takes the rounding remainder so that the sum is exactly 1.
    share = 1.0 / n
    return [share] * (n - 1) + [1.0 - share * (n - 1)]
