"""The completion audit of spec §7, run by the grader, producing the audit report.

    [EXTC:@OBJECTIVE|typ=deliverables]          step 1: the deliverables
    [AUDT:@DELIVERABLES|typ=evidence_map]       step 2: each mapped to ::EVIDENCE items
    [VALD:@EVIDENCE|src=@OBJECTIVE]=>[SCOR|src=@RUBRIC]
                                                step 3: does the evidence cover every
                                                requirement? score against the rubric
    [CHEK:@AUDIT_REPORT|whr=score>=threshold,no_unknown,no_fail]
                                                step 4: the verdict

The deliverables are the rubric's criteria (the rubric is the contract between objective
and grader, spec §5); without a rubric they are the objective's own conditions
(`graders.criteria.objective_rubric`).

A deliverable's result comes only from its deciding evidence (a tool check or the grader
model, never the agent): with none, it is unknown. This is also how spec §7's proxy
rule holds — "tests pass ≠ complete, unless tests cover every requirement": a passing
check is evidence for its own deliverable and for no other, so a green test run leaves
every deliverable it does not check uncovered.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict

from graders.criteria import GradingCriterion, GradingRubric
from graders.evidence import AgentClaim, EvidenceMap, build_map
from graders.model_judge import ModelVerdict
from graders.scoring import SCORE_EPSILON, CriterionOutcome, Decision, decide
from graders.tool_checks import ToolCheck

StepName = Literal["EXTC", "AUDT", "VALD", "CHEK"]

PATTERNS: dict[StepName, str] = {
    "EXTC": "[EXTC:@OBJECTIVE|typ=deliverables]",
    "AUDT": "[AUDT:@DELIVERABLES|typ=evidence_map]",
    "VALD": "[VALD:@EVIDENCE|src=@OBJECTIVE]=>[SCOR|src=@RUBRIC]",
    "CHEK": "[CHEK:@AUDIT_REPORT|whr=score>=threshold,no_unknown,no_fail]",
}


class Deliverable(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    weight: float
    check: str
    judged_by: Literal["tool", "model"]


class AuditStep(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    step: StepName
    pattern: str
    findings: tuple[str, ...]


class AuditReport(BaseModel):
    """The @AUDIT_REPORT a verification points at."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    deliverables: tuple[Deliverable, ...]
    evidence: EvidenceMap
    outcomes: tuple[CriterionOutcome, ...]
    uncovered: tuple[str, ...]
    decision: Decision
    steps: tuple[AuditStep, ...]


def _deliverable(c: GradingCriterion) -> Deliverable:
    return Deliverable(
        id=c.id, weight=c.weight, check=c.check, judged_by="tool" if c.tool_checked else "model"
    )


#: What stands for a hidden check's output wherever a result is shown.
HIDDEN_EVIDENCE = "(a hidden check: its output is kept in the run record only)"


def _outcome(
    c: GradingCriterion, check: ToolCheck | None, verdict: ModelVerdict | None
) -> CriterionOutcome:
    if check is not None:
        return CriterionOutcome(
            id=c.id,
            weight=c.weight,
            result=check.result,
            via="tool",
            # A hidden check's output goes nowhere an agent could read it back (`--json`
            # lands in CI logs and pull requests): only the run record keeps it.
            evidence=HIDDEN_EVIDENCE if check.hidden else check.evidence_tail,
            detail=check.detail,
            cause=check.cause,
        )
    if verdict is None:
        # Defensive: the grader gives every model-judged criterion a verdict.
        return CriterionOutcome(
            id=c.id,
            weight=c.weight,
            result="unknown",
            via="none",
            detail="not judged",
            cause="no_grader",
        )
    asked = verdict.attempts > 0
    return CriterionOutcome(
        id=c.id,
        weight=c.weight,
        result=verdict.result,
        via="model" if asked else "none",
        evidence="; ".join(item.label() for item in verdict.evidence),
        detail=verdict.rationale,
        cause=verdict.cause,
    )


def _backed(outcome: CriterionOutcome, evidence: EvidenceMap) -> CriterionOutcome:
    """Step 2's own check (spec §7 AUDT: "verify each evidence exists and result=pass"): a
    pass stands only on a deciding evidence item of result pass for that deliverable.
    The tool checks and the model judge never produce one without the other; should they
    ever, the deliverable is unknown, never passed on no evidence."""
    if outcome.result != "pass":
        return outcome
    if any(item.result == "pass" for item in evidence.deciding(outcome.id)):
        return outcome
    return outcome.model_copy(
        update={
            "result": "unknown",
            "cause": "no_evidence",
            "detail": "no deciding ::EVIDENCE item of result pass backs this pass",
        }
    )


def audit(
    rubric: GradingRubric,
    checks: Sequence[ToolCheck],
    verdicts: Sequence[ModelVerdict],
    claims: Sequence[AgentClaim],
) -> AuditReport:
    """Run the four steps over what the tool checks and the grader model found."""
    by_check = {c.criterion: c for c in checks}
    by_verdict = {v.criterion: v for v in verdicts}
    deliverables = tuple(_deliverable(c) for c in rubric.criteria)
    # Only what really looked at the work is evidence: a check that never ran and a
    # model that was never asked are not.
    ran = [c for c in checks if c.exit_code is not None]
    asked = [v for v in verdicts if v.attempts > 0]
    evidence = build_map([d.id for d in deliverables], ran, asked, claims)
    outcomes = tuple(
        _backed(_outcome(c, by_check.get(c.id), by_verdict.get(c.id)), evidence)
        for c in rubric.criteria
    )
    decision = decide(outcomes, rubric.threshold)
    uncovered = tuple(d.id for d in deliverables if not evidence.deciding(d.id))
    steps = (
        AuditStep(step="EXTC", pattern=PATTERNS["EXTC"], findings=_extc(rubric, deliverables)),
        AuditStep(step="AUDT", pattern=PATTERNS["AUDT"], findings=_audt(deliverables, evidence)),
        AuditStep(
            step="VALD",
            pattern=PATTERNS["VALD"],
            findings=_vald(deliverables, evidence, outcomes, uncovered),
        ),
        AuditStep(step="CHEK", pattern=PATTERNS["CHEK"], findings=_chek(decision)),
    )
    return AuditReport(
        deliverables=deliverables,
        evidence=evidence,
        outcomes=outcomes,
        uncovered=uncovered,
        decision=decision,
        steps=steps,
    )


def _extc(rubric: GradingRubric, deliverables: Sequence[Deliverable]) -> tuple[str, ...]:
    origin = (
        "the rubric's criteria"
        if rubric.source == "rubric"
        else "the objective's conditions (no rubric: spec §5, judged by a grader model)"
    )
    listed = ", ".join(f"{d.id} ({d.judged_by})" for d in deliverables)
    return (f"{len(deliverables)} deliverable(s) from {origin}: {listed}",)


def _audt(deliverables: Sequence[Deliverable], evidence: EvidenceMap) -> tuple[str, ...]:
    found: list[str] = []
    for d in deliverables:
        items = evidence.items.get(d.id, [])
        shown = ", ".join(
            f"{i.id} {i.verified_by} {i.result or '-'}{'' if i.decides else ' (decides nothing)'}"
            for i in items
        )
        found.append(f"{d.id} ← {shown or 'no evidence'}")
    for item in evidence.unmatched:
        found.append(
            f"{item.id} (agent) names deliverable {item.deliverable!r}, which the rubric "
            "does not list: ignored"
        )
    return tuple(found)


def _vald(
    deliverables: Sequence[Deliverable],
    evidence: EvidenceMap,
    outcomes: Sequence[CriterionOutcome],
    uncovered: Sequence[str],
) -> tuple[str, ...]:
    found: list[str] = []
    for d in deliverables:
        if d.id in uncovered:
            own = [i for i in evidence.items.get(d.id, []) if not i.decides]
            why = "only the agent's own claims" if own else "nothing"
            found.append(f"{d.id}: not covered (no evidence from a tool or the grader; {why})")
    results = {o.id: o.result for o in outcomes}
    for items in evidence.items.values():
        for item in items:
            actual = results.get(item.deliverable)
            if item.source == "agent" and item.result == "pass" and actual != "pass":
                found.append(
                    f"{item.id}: the agent claims {item.deliverable} passes; the grader "
                    f"finds it {actual}"
                )
    passed = [o.id for o in outcomes if o.result == "pass"]
    missing = [o.id for o in outcomes if o.result != "pass"]
    if passed and missing:
        found.append(
            f"proxy_signals⇒insufficient: passing checks ({', '.join(passed)}) are evidence "
            f"for their own deliverables only; they do not cover {', '.join(missing)}"
        )
    if not found:
        found.append("every deliverable is covered by evidence from a tool or the grader")
    return tuple(found)


def _chek(decision: Decision) -> tuple[str, ...]:
    relation = "<" if decision.score + SCORE_EPSILON < decision.threshold else "≥"
    found = [f"score {decision.score:g} {relation} threshold {decision.threshold:g}"]
    found += [r for r in decision.reasons if not r.startswith("score ")]
    found.append(f"verdict: {decision.verdict}")
    return tuple(found)
