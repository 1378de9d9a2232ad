"""Rubric scoring, the verdict rule, the objective rubric, tool checks and the audit."""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from envelopes.declarations import Evidence, State, Status
from graders.audit import audit
from graders.criteria import GradingCriterion, GradingRubric, objective_rubric
from graders.evidence import AgentClaim
from graders.model_judge import ModelVerdict
from graders.report import GradeReport, verdict_status
from graders.scoring import CriterionOutcome, decide
from graders.tool_checks import DEFAULT_CHECK_TIMEOUT_S, ToolCheck, run_check, run_checks
from harness.enforce.authority import classify
from harness.enforce.claims import read_claims
from harness.enforce.lifecycle import Lifecycle
from harness.workspace.commands import run_shell

RESULTS = ("pass", "fail", "unknown")


def outcome(cid: str, weight: float, result: str) -> CriterionOutcome:
    via = "tool" if result != "unknown" else "none"
    cause = "no_grader" if result == "unknown" else None
    return CriterionOutcome(id=cid, weight=weight, result=result, via=via, cause=cause)  # type: ignore[arg-type]


# ------------------------------------------------------------------------- scoring
def test_all_pass_verifies() -> None:
    d = decide([outcome("a", 0.7, "pass"), outcome("b", 0.3, "pass")], 0.85)
    assert d.verdict == "verified_complete" and d.score == 1.0 and d.missing == ()


def test_score_below_threshold_needs_revision() -> None:
    d = decide([outcome("a", 0.7, "pass"), outcome("b", 0.3, "fail")], 0.85)
    assert d.verdict == "needs_revision" and d.score == 0.7 and d.missing == ("b",)


def test_a_failure_blocks_even_above_the_threshold() -> None:
    # Fail-closed reading of §5 + §7 CHEK (no_fail): a listed requirement that failed is a gap.
    d = decide([outcome("a", 0.9, "pass"), outcome("b", 0.1, "fail")], 0.85)
    assert d.score == 0.9 and d.verdict == "needs_revision" and d.failed == ("b",)


def test_unknown_never_verifies_even_at_full_threshold_room() -> None:
    d = decide([outcome("a", 0.99, "pass"), outcome("b", 0.01, "unknown")], 0.0)
    assert d.verdict == "needs_revision" and d.unknown == ("b",) and d.missing == ("b",)


def test_score_is_rounded() -> None:
    parts = [outcome(f"c{i}", 0.1, "pass") for i in range(3)]
    parts.append(outcome("rest", 0.7, "fail"))
    assert decide(parts, 0.5).score == 0.3


@st.composite
def rubric_outcomes(draw: st.DrawFn) -> tuple[list[CriterionOutcome], float]:
    n = draw(st.integers(1, 6))
    raw = draw(st.lists(st.integers(0, 10), min_size=n, max_size=n))
    total = sum(raw) or 1
    weights = [r / total for r in raw] if sum(raw) else [1 / n] * n
    results = draw(st.lists(st.sampled_from(RESULTS), min_size=n, max_size=n))
    threshold = draw(st.floats(0, 1))
    return [
        outcome(f"c{i}", w, r) for i, (w, r) in enumerate(zip(weights, results, strict=True))
    ], threshold


@given(rubric_outcomes())
def test_verdict_rule_property(case: tuple[list[CriterionOutcome], float]) -> None:
    outcomes, threshold = case
    d = decide(outcomes, threshold)
    passed = math.fsum(o.weight for o in outcomes if o.result == "pass")
    assert abs(d.score - passed) < 1e-6
    assert set(d.missing) == {o.id for o in outcomes if o.result != "pass"}
    all_pass = all(o.result == "pass" for o in outcomes)
    assert (d.verdict == "verified_complete") == (all_pass and d.score + 1e-9 >= threshold)
    if any(o.result == "unknown" for o in outcomes):
        assert d.verdict == "needs_revision"


def test_outcome_model_is_consistent() -> None:
    with pytest.raises(ValueError):
        CriterionOutcome(id="a", weight=1, result="unknown", via="tool")  # no cause
    with pytest.raises(ValueError):
        CriterionOutcome(id="a", weight=1, result="pass", via="none")


# ----------------------------------------------------------------------- criteria
def test_objective_rubric_without_rubric_is_model_judged_and_strict() -> None:
    r = objective_rubric(has_accept=True, has_done_when=True)
    assert [c.id for c in r.criteria] == ["accept", "done_when"]
    assert r.threshold == 1.0 and r.source == "objective"
    assert not any(c.tool_checked for c in r.criteria)
    assert math.isclose(sum(c.weight for c in r.criteria), 1.0)
    assert [c.id for c in objective_rubric(has_accept=False, has_done_when=False).criteria] == [
        "objective"
    ]


@pytest.mark.parametrize("n", [1, 2, 3, 6, 7])
def test_objective_rubric_weights_sum_to_one(n: int) -> None:
    from graders.criteria import _equal_weights

    assert abs(sum(_equal_weights(n)) - 1.0) < 1e-12


def test_grading_rubric_rejects_bad_weights_and_duplicates() -> None:
    c = GradingCriterion(id="a", weight=0.5, check="x")
    with pytest.raises(ValueError):
        GradingRubric(threshold=0.5, criteria=(c,))
    with pytest.raises(ValueError):
        GradingRubric(threshold=0.5, criteria=(c, c))


# -------------------------------------------------------------------- tool checks
@dataclass
class Done:
    exit_code: int
    output: str = ""
    timed_out: bool = False
    duration_s: float = 0.01
    truncated: bool = False


def check(run: str = "true") -> GradingCriterion:
    return GradingCriterion(id="t", weight=1.0, check="it works", run=run)


def test_exit_zero_passes_and_output_is_kept() -> None:
    found = run_check(check(), lambda cmd, t: Done(0, "all good\n"), lambda: None)
    assert (found.result, found.exit_code, found.output) == ("pass", 0, "all good\n")
    assert found.detail.startswith("exit 0")


def test_nonzero_exit_and_timeout_fail() -> None:
    assert run_check(check(), lambda c, t: Done(3), lambda: None).result == "fail"
    timed = run_check(check(), lambda c, t: Done(-9, timed_out=True), lambda: None)
    assert timed.result == "fail" and "timed out" in timed.detail


def test_check_that_cannot_start_is_unknown() -> None:
    def broken(command: str, timeout: float) -> Done:
        raise OSError("no /bin/sh")

    found = run_check(check(), broken, lambda: None)
    assert (found.result, found.cause) == ("unknown", "check_error")


def test_no_audit_time_left_is_unknown_and_nothing_runs() -> None:
    calls: list[str] = []

    def runner(command: str, timeout: float) -> Done:
        calls.append(command)
        return Done(0)

    found = run_check(check(), runner, lambda: 0.0)
    assert (found.result, found.cause) == ("unknown", "audit_budget") and calls == []


def test_timeout_is_clamped_to_the_time_left() -> None:
    seen: list[float] = []
    run_check(check(), lambda c, t: (seen.append(t), Done(0))[1], lambda: 5.0)
    run_check(check(), lambda c, t: (seen.append(t), Done(0))[1], lambda: None)
    assert seen == [5.0, DEFAULT_CHECK_TIMEOUT_S]


def test_only_tool_checked_criteria_run() -> None:
    criteria = [check(), GradingCriterion(id="m", weight=0.0, check="judged by a model")]
    assert [c.criterion for c in run_checks(criteria, lambda c, t: Done(0), lambda: None)] == ["t"]


def test_real_check_runs_scrubbed_in_the_workspace(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ILH_TEST_SECRET_KEY", "sk-secret")
    (tmp_path / "marker.txt").write_text("here")

    def runner(c: GradingCriterion, timeout: float) -> Done:
        r = run_shell(c.run or "", tmp_path, timeout)
        return Done(r.exit_code, r.output, r.timed_out, r.duration_s, r.truncated)

    scrubbed = run_check(
        check('test -z "$ILH_TEST_SECRET_KEY" && test -f marker.txt'), runner, lambda: None
    )
    assert scrubbed.result == "pass", scrubbed
    # A timeout the time budget cut short is the budget's doing: unknown, never fail or pass.
    slow = run_check(check("sleep 5"), runner, lambda: 0.3)
    assert (slow.result, slow.cause) == ("unknown", "audit_budget") and slow.timed_out
    assert os.environ["ILH_TEST_SECRET_KEY"] == "sk-secret"


# ---------------------------------------------------------------- audit and report
def rubric3() -> GradingRubric:
    return GradingRubric(
        threshold=0.9,
        criteria=(
            GradingCriterion(id="tests", weight=0.5, check="tests pass", run="x"),
            GradingCriterion(id="cli", weight=0.3, check="cli works", run="y"),
            GradingCriterion(id="docs", weight=0.2, check="docs explain it"),
        ),
    )


def tool(cid: str, result: str) -> ToolCheck:
    return ToolCheck(
        criterion=cid,
        command="c",
        result=result,
        detail="d",
        output="out",
        exit_code=0,  # type: ignore[arg-type]
    )


def self_evidence(deliverable: str, verified_by: str = "@SELF") -> AgentClaim:
    ev = Evidence(
        deliverable=deliverable, kind="test_output", ref="r", verified_by=verified_by, result="pass"
    )  # type: ignore[arg-type]
    return AgentClaim(
        kind="EVIDENCE", round=1, disposition="accepted", canonical=ev.render(), evidence=ev
    )


def test_agent_evidence_decides_nothing() -> None:
    no_model = ModelVerdict(
        criterion="docs", result="unknown", rationale="no grader", cause="no_grader"
    )
    claims = [self_evidence("docs"), self_evidence("docs", "@TOOL"), self_evidence("cli")]
    report = audit(rubric3(), [tool("tests", "pass"), tool("cli", "fail")], [no_model], claims)
    results = {o.id: (o.result, o.via) for o in report.outcomes}
    assert results == {
        "tests": ("pass", "tool"),
        "cli": ("fail", "tool"),
        "docs": ("unknown", "none"),
    }
    assert report.uncovered == ("docs",)
    agent_items = [
        i for items in report.evidence.items.values() for i in items if i.source == "agent"
    ]
    assert len(agent_items) == 3 and not any(i.decides for i in agent_items)
    vald = next(s for s in report.steps if s.step == "VALD").findings
    assert any("docs: not covered" in f and "agent's own claims" in f for f in vald)
    assert any("the agent claims cli passes" in f for f in vald)
    assert report.decision.verdict == "needs_revision"


def test_unmatched_agent_evidence_is_listed_and_ignored() -> None:
    model = ModelVerdict(
        criterion="docs",
        result="pass",
        rationale="ok",
        attempts=1,
        evidence=({"kind": "file", "ref": "README.md"},),  # type: ignore[arg-type]
    )
    report = audit(
        rubric3(), [tool("tests", "pass"), tool("cli", "pass")], [model], [self_evidence("speed")]
    )
    assert report.decision.verdict == "verified_complete"
    assert [i.deliverable for i in report.evidence.unmatched] == ["speed"]
    for line in report.evidence.lines():
        assert Evidence.parse(line).render() == line


def test_report_status_line_matches_the_lifecycle() -> None:
    for verdict, missing, score in (
        ("needs_revision", ("cli", "docs"), 0.5),
        ("verified_complete", (), 1.0),
    ):
        life = Lifecycle(State.RUNNING)
        claim = read_claims("::STATUS{@TASK|state:claimed_complete|by:@AGENT|authority:proposal}")
        life.apply_proposal(classify(claim[0], State.RUNNING, 1), 1)
        entry = life.apply_verification(
            State(verdict),
            1,
            missing=missing,
            score=None if not missing else score,
            evidence="@AUDIT_REPORT" if not missing else None,
        )
        line = verdict_status(verdict, missing, score).render()  # type: ignore[arg-type]
        if missing:
            assert line == entry.line
        else:
            assert Status.parse(line).known_state is State.VERIFIED_COMPLETE
            assert line == entry.line


def test_report_action() -> None:
    def report(*outcomes: tuple[str, str, str | None]) -> GradeReport:
        checks = [tool(cid, res) for cid, res, _ in outcomes if res != "unknown"]
        verdicts = [
            ModelVerdict(criterion=cid, result="unknown", rationale="why", cause=cause)  # type: ignore[arg-type]
            for cid, res, cause in outcomes
            if res == "unknown"
        ]
        rubric = GradingRubric(
            threshold=1.0,
            criteria=tuple(
                GradingCriterion(
                    id=cid,
                    weight=1 / len(outcomes),
                    check="c",
                    run="x" if res != "unknown" else None,
                )
                for cid, res, _ in outcomes
            ),
        )
        return GradeReport(
            audit=audit(rubric, checks, verdicts, []),
            checks=tuple(checks),
            verdicts=tuple(verdicts),
        )

    assert report(("a", "pass", None), ("b", "pass", None)).action == "verify"
    assert report(("a", "fail", None), ("b", "unknown", "no_grader")).action == "revise"
    assert report(("a", "pass", None), ("b", "unknown", "grader_unsure")).action == "revise"
    assert report(("a", "pass", None), ("b", "unknown", "audit_budget")).action == "stop_budget"
    assert report(("a", "pass", None), ("b", "unknown", "no_grader")).action == "unverified"
    assert report(("a", "pass", None), ("b", "unknown", "grader_invalid")).action == "unverified"
