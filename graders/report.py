"""The grader's report: DESIGN §6 `ilh grade` JSON, the grader's status line, what the
runtime does with it, and the feedback the agent gets.

What the runtime does with a report (`GradeReport.action`), for `ilh run`:

* `verify` — verified_complete: the grader's verification is recorded and the runtime
  commits complete;
* `revise` — a gap the agent can close (a failed criterion, or one the grader model
  looked at and found unproven): needs_revision with `missing` and `score`, the runtime
  commits running and the agent gets the gaps as feedback;
* `stop_budget` — no gap the agent can close, but the audit budget could not pay for a
  check: the runtime commits `stopped|reason:budget` (spec §4: a pending claim is
  interrupted only by a budget stop; budget never produces any form of complete);
* `unverified` — no gap the agent can close, and the grader could not decide the rest
  (no grader model for a model-judged criterion, an invalid or failed grader): the run
  ends at claimed_complete and says why. Sending the agent back to work on a gap that
  no amount of its work can close would only burn its budget; spec §0.1 (external
  grading unsupported ⇒ no status written) is the fail-closed reading, so no grader
  status is written at all.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from envelopes.declarations import Authority, State, Status
from envelopes.declarations.base import render_float
from graders.audit import AuditReport
from graders.criteria import AGENT_ACTIONABLE
from graders.model_judge import ModelVerdict
from graders.scoring import Verdict
from graders.tool_checks import ToolCheck

Action = Literal["verify", "revise", "stop_budget", "unverified"]

GRADER = "@GRADER"
AUDIT_REPORT = "@AUDIT_REPORT"


class GraderTokens(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    input: int = 0
    output: int = 0

    def __add__(self, other: GraderTokens) -> GraderTokens:
        return GraderTokens(input=self.input + other.input, output=self.output + other.output)

    @property
    def total(self) -> int:
        return self.input + self.output


class GraderCall(BaseModel):
    """One call of the grader model (for the record)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    attempt: int
    turn: int
    input_tokens: int
    output_tokens: int
    estimated: bool
    envelope_digest: str
    stop_reason: str
    tool_calls: tuple[str, ...] = ()


def verdict_status(verdict: Verdict, missing: tuple[str, ...], score: float) -> Status:
    """The grader's ::STATUS, field for field what `Lifecycle.apply_verification` writes."""
    if verdict == "verified_complete":
        extras: tuple[tuple[str, str], ...] = (("evidence", AUDIT_REPORT),)
        state = State.VERIFIED_COMPLETE
    else:
        extras = ((("missing", ",".join(missing)),) if missing else ()) + (
            ("score", render_float(score)),
        )
        state = State.NEEDS_REVISION
    return Status(state=state, extras=extras, by=GRADER, authority=Authority.VERIFICATION)


class CriterionRow(BaseModel):
    """One criterion of DESIGN §6's `ilh grade` object."""

    model_config = ConfigDict(extra="forbid")

    id: str
    weight: float
    result: Literal["pass", "fail", "unknown"]
    via: Literal["tool", "model", "none"]
    evidence: str
    detail: str


class GradeJSON(BaseModel):
    """DESIGN §6's `ilh grade --json` object, exactly (its JSON Schema: `ilh schema grade`)."""

    model_config = ConfigDict(extra="forbid")

    verdict: Literal["verified_complete", "needs_revision"]
    score: float
    threshold: float
    criteria: list[CriterionRow]
    missing: list[str]
    status_line: str


class GradeReport(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    audit: AuditReport
    checks: tuple[ToolCheck, ...]
    verdicts: tuple[ModelVerdict, ...]
    grader_model: str | None = None
    tokens: GraderTokens = GraderTokens()
    calls: tuple[GraderCall, ...] = ()
    notes: tuple[str, ...] = ()
    context_lines: tuple[str, ...] = ()
    """The declarations the grader model's context held (empty when no model was called)."""
    tree_changes: str = ""
    """What the grading tree restored or removed from the agent's workspace (file names
    the agent chose: untrusted, shown only in findings)."""
    tampering: bool = False
    """The agent changed the task's tests or runner configuration, or added a runner
    hook (the grading tree undid it; recorded as a violation)."""

    # ------------------------------------------------------------------ verdict
    @property
    def verdict(self) -> Verdict:
        return self.audit.decision.verdict

    @property
    def score(self) -> float:
        return self.audit.decision.score

    @property
    def threshold(self) -> float:
        return self.audit.decision.threshold

    @property
    def missing(self) -> tuple[str, ...]:
        return self.audit.decision.missing

    @property
    def status_line(self) -> str:
        return verdict_status(self.verdict, self.missing, self.score).render()

    @property
    def action(self) -> Action:
        if self.verdict == "verified_complete":
            return "verify"
        outcomes = self.audit.outcomes
        if any(
            o.result == "fail" or (o.cause is not None and o.cause in AGENT_ACTIONABLE)
            for o in outcomes
        ):
            return "revise"
        if any(o.cause == "audit_budget" for o in outcomes):
            return "stop_budget"
        return "unverified"

    def why_undecided(self) -> str:
        """The reasons behind the unknowns, one phrase per criterion."""
        return "; ".join(
            f"{o.id}: {o.detail}" for o in self.audit.outcomes if o.result == "unknown"
        )

    # ------------------------------------------------------------------- output
    def design_json(self) -> dict[str, Any]:
        """Exactly DESIGN §6's `ilh grade` object."""
        return {
            "verdict": self.verdict,
            "score": self.score,
            "threshold": self.threshold,
            "criteria": [o.row() for o in self.audit.outcomes],
            "missing": list(self.missing),
            "status_line": self.status_line,
        }

    def run_json(self, *, round: int, applied: bool) -> dict[str, Any]:
        """The `grader` object of `ilh run --json`: DESIGN §6's grade plus the audit and
        the grader's token use."""
        return {
            **self.design_json(),
            "round": round,
            "applied": applied,
            "action": self.action,
            "grader_model": self.grader_model,
            "tokens": self.tokens.model_dump(),
            "evidence": self.audit.evidence.lines(),
            "audit": [step.model_dump(mode="json") for step in self.audit.steps],
            "notes": list(self.notes),
        }

    def record_json(self, *, round: int, applied: bool) -> dict[str, Any]:
        """The run record's `grader_result` payload: everything, tool output included."""
        return {
            **self.run_json(round=round, applied=applied),
            "checks": [c.model_dump(mode="json") for c in self.checks],
            "verdicts": [v.model_dump(mode="json") for v in self.verdicts],
            "calls": [c.model_dump(mode="json") for c in self.calls],
        }

    # ----------------------------------------------------------------- feedback
    def feedback_lines(self) -> list[str]:
        """What the runtime tells the agent after needs_revision. Only facts the harness
        produced itself (ids, results, exit codes): the checks' output and the grader
        model's words are untrusted and travel in `findings_text`."""
        lines = [
            f"The independent grader did not verify your completion claim: score "
            f"{self.score:g}, threshold {self.threshold:g}. The runtime committed running: "
            "the task goes on. Criteria not met:"
        ]
        checks = {c.criterion: c for c in self.checks}
        for o in self.audit.outcomes:
            if o.result == "pass":
                continue
            if o.via == "tool" and o.id in checks and checks[o.id].hidden:
                how = f"hidden check: {o.result}"
            elif o.via == "tool" and o.id in checks:
                how = f"tool check: {checks[o.id].detail}"
            elif o.via == "model":
                how = "judged by the grader model"
            else:
                how = "nothing could decide it"
            lines.append(f"- {o.id} (weight {o.weight:g}): {o.result} ({how})")
        if self.tampering:
            lines.append(
                "The task's test files or test-runner configuration were changed, or a "
                "test-runner hook was added: the grader graded a copy of the workspace with "
                "the task's versions restored and the hooks removed (the findings list them)."
            )
        lines.append(
            "Fix the work, check it, and propose claimed_complete again only when the "
            "evidence in the workspace shows every criterion met."
        )
        return lines

    def findings_text(self) -> str:
        """The checks' output and the grader's remarks on every missing criterion."""
        checks = {c.criterion: c for c in self.checks}
        parts: list[str] = []
        for o in self.audit.outcomes:
            if o.result == "pass":
                continue
            check = checks.get(o.id)
            if check is not None and check.hidden:
                # A hidden check: never its command, its source or its output.
                parts.append(f"## {o.id}: hidden check: {o.result}")
            elif check is not None and check.exit_code is not None:
                parts.append(f"## {o.id}: $ {check.command}\n{check.evidence_tail}")
            elif check is not None and check.output:
                parts.append(f"## {o.id}: {o.detail}\n{check.evidence_tail}")
            elif o.detail:
                parts.append(f"## {o.id}: {o.detail}")
        if self.tree_changes:
            parts.append(f"## the grading tree (what the checks ran over)\n{self.tree_changes}")
        return "\n\n".join(parts)
