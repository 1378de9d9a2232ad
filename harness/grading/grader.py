"""The grader stage (spec §0 L3, §5–§7; DESIGN §4): from a completion claim to a report.

`Grader.grade` runs, in order:

1. the tool checks (criteria with `run`, `pytest` or `unittest`), each in its own sandbox
   over its own grading tree (`harness.grading.checks`, `harness.grading.tree`: the
   agent's work with the task's tests restored), their time drawn from the audit reserve;
2. the model-judged criteria (no `run`): a grader model in a fresh context
   (`harness.grading.session`) when one was given, otherwise unknown, saying why. Tool
   checks run first and decide their criteria; no tool-checked criterion is ever sent to
   the model (so none a tool failed is), and the model sees their evidence;
3. the completion audit of spec §7 (`graders.audit`) over what 1 and 2 found and the
   agent's claims, which decide nothing.

Used by the orchestrator (`ilh run`, on claimed_complete) and by `ilh grade`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from pathlib import Path

from budgets.ledger import BudgetLedger, Pool
from envelopes.declarations import BudgetKind, Evidence, Objective, Rubric, State, Status
from envelopes.declarations.rubric import Criterion as RubricRow
from envelopes.errors import IlangError
from graders.audit import audit
from graders.criteria import GradingCriterion, GradingRubric, objective_rubric
from graders.evidence import AgentClaim, ClaimKind, tool_evidence
from graders.model_judge import AnswerContext, ModelVerdict, judge
from graders.report import GraderCall, GradeReport, GraderTokens
from graders.runners import runner_call, script_call
from graders.tool_checks import UNTRUSTED, ToolCheck, run_checks
from harness.context.agent import Segment
from harness.enforce.authority import Disposition, classify
from harness.enforce.claims import read_claims
from harness.grading.checks import CheckRunner
from harness.grading.context import check_output_block
from harness.grading.session import MAX_GRADER_OUTPUT, GraderSession
from harness.grading.tree import GradingSources, TreeChanges, check_scripts, relative_word
from harness.inputs.errors import InputError
from harness.inputs.task_file import Task
from harness.models.interface import ModelClient
from harness.record.results import ProposalRow
from harness.workspace.folder import Workspace
from harness.workspace.sandbox import CONFINED, SandboxPolicy

#: How many of the agent's claims (the latest) the grader sees.
MAX_CLAIMS_SHOWN = 50


# ------------------------------------------------------------------ task → rubric
def grading_rubric(task: Task) -> GradingRubric:
    """The task's `[rubric]`, or the objective's conditions when it has none (§5)."""
    spec = task.spec.rubric
    if spec is None:
        return objective_rubric(
            has_accept=bool(task.spec.task.accept), has_done_when=bool(task.spec.task.done_when)
        )
    return GradingRubric(
        threshold=spec.threshold,
        criteria=tuple(
            GradingCriterion(
                id=c.id,
                weight=c.weight,
                check=c.check,
                run=c.run,
                pytest=c.pytest,
                unittest=c.unittest,
                hidden=spec.checks is not None and c.uses_checks,
            )
            for c in spec.criteria
        ),
    )


def exit_code_notes(rubric: GradingRubric, template_known: bool = True) -> list[str]:
    """One note per tool check that trusts an exit code: a free command that is not one
    call of a known test runner, nor a check's own Python the harness's runner runs
    (`script_call`: `python -c …`, a check script the task ships). Code it imports can
    end its process with 0. A check script runs in the runner only when the template is
    known (`template_known`: the grading tree restores it); else it is the workspace's."""

    def runs_in_runner(command: str) -> bool:
        scripts = check_scripts(command) if template_known else set()
        return script_call(command, lambda word: relative_word(word) in scripts) is not None

    return [
        f"criterion {c.id}: its check is a free command, not a known test runner: it trusts "
        "an exit code (the Python it runs is the harness's runner, but any other program it "
        "runs decides its own); prefer pytest = … or unittest = …"
        for c in rubric.criteria
        if c.run is not None
        and runner_call(c.run, "/ilh-checks") is None
        and (c.hidden or not runs_in_runner(c.run))
    ]


def merged(changes: Sequence[TreeChanges]) -> TreeChanges:
    """What the checks' grading trees changed, each finding once, in order."""

    def union(parts: Sequence[tuple[str, ...]]) -> tuple[str, ...]:
        return tuple(dict.fromkeys(item for part in parts for item in part))

    return TreeChanges(
        restored=union([c.restored for c in changes]),
        removed=union([c.removed for c in changes]),
        skipped=union([c.skipped for c in changes]),
    )


def rubric_declaration(rubric: GradingRubric) -> str:
    """The ::RUBRIC the grader applies (for a task rubric, the same the agent sees)."""
    rows = tuple(RubricRow(id=c.id, weight=c.weight, check=c.check) for c in rubric.criteria)
    return Rubric(
        id="r1", objective="g1", threshold=rubric.threshold, mode="weighted", criteria=rows
    ).render()


# ------------------------------------------------------------- the grader's view
def grader_evidence_line(number: int, check: ToolCheck) -> str:
    """A tool check's ::EVIDENCE as the grader's runtime lines show it. Its gap is the
    check's detail, which can hold the agent's words (a failing test's name or
    parametrize id, which the agent's own test file chooses): runtime text must not carry
    them, so the gap points at the check's output block, where the detail travels as
    data. A hidden check's detail is already the harness's own ("hidden check: fail")."""
    item = tool_evidence(number, check)
    if item.gap is not None and not check.hidden:
        item = item.model_copy(update={"gap": f"see the output of check_{check.criterion}"})
    return item.line()


def shown_output(check: ToolCheck) -> str:
    """A (non-hidden) tool check's output as the grader's ::UNTRUSTED block holds it,
    its detail first."""
    return f"[grader] {check.result}: {check.detail}\n{check.output}"


# ------------------------------------------------------------------------ claims
def _claim(kind: ClaimKind, line: str, round: int, disposition: Disposition) -> AgentClaim:
    model = Status if kind == "STATUS" else Evidence
    try:
        parsed: Status | Evidence | None = model.parse(line)
    except IlangError:
        parsed = None
    return AgentClaim(
        kind=kind,
        round=round,
        disposition=disposition,
        canonical=parsed.render() if parsed is not None else None,
        state=str(parsed.state) if isinstance(parsed, Status) else None,
        evidence=parsed if isinstance(parsed, Evidence) else None,
    )


def claims_from_proposals(rows: Sequence[ProposalRow]) -> list[AgentClaim]:
    """The agent's claims of a run, as the grader may see them (never its raw text)."""
    claims: list[AgentClaim] = []
    for row in rows[-MAX_CLAIMS_SHOWN:]:
        found = read_claims(row.line)
        kind: ClaimKind = found[0].kind if found else "STATUS"
        claims.append(_claim(kind, row.line, row.round, row.disposition))
    return claims


def claims_from_text(text: str, source: Path | str) -> list[AgentClaim]:
    """The claims of a claim file (`ilh grade --claim`), read like agent text with the
    hostile reader. A claim file is user input: a claim the runtime would not accept
    from an agent (malformed, disguised, forged authority, a state an agent may not
    write) is bad input — InputError, exit 2 — never a silently ignored line."""
    claims: list[AgentClaim] = []
    for raw in read_claims(text):
        proposal = classify(raw, State.RUNNING, 0)
        if not proposal.accepted:
            kinds = {v.kind for v in proposal.violations}
            code = "E300" if kinds & {"malformed_claim", "ambiguous_claim"} else "E303"
            raise InputError(
                source,
                code,
                f"{proposal.disposition} ::{raw.kind} claim: {proposal.why}",
                raw.lineno,
            )
        claims.append(_claim(raw.kind, raw.line, 0, "accepted"))
    return claims


# ------------------------------------------------------------------------ grader
class Grader:
    """Grades the workspace against the rubric; one instance per run (or `ilh grade`)."""

    def __init__(
        self,
        *,
        rubric: GradingRubric,
        objective: Objective,
        task_blocks: Sequence[Segment],
        workspace: Workspace,
        ledger: BudgetLedger,
        client: ModelClient | None = None,
        max_output: int = MAX_GRADER_OUTPUT,
        sources: GradingSources | None = None,
        sandbox: SandboxPolicy = CONFINED,
        on_check: Callable[[str], None] | None = None,
    ) -> None:
        """`sources`: the snapshot of the template the workspace was made from (or the
        user's `--baseline`) and of the hidden checks; each tool check runs over a
        grading tree with the template's tests restored (`harness.grading.tree`).
        `on_check(criterion id)`: told as each tool check starts (live progress)."""
        self.on_check = on_check
        self.sources = sources or GradingSources()
        self.changes = TreeChanges()
        self.sandbox = sandbox
        self.rubric = rubric
        self.objective = objective
        self.task_blocks = list(task_blocks)
        self.workspace = workspace
        self.ledger = ledger
        self.client = client
        self.max_output = max_output

    def _time_room(self) -> float | None:
        room = self.ledger.room(BudgetKind.TIME, Pool.AUDIT)
        return None if room is None else float(room)

    def _checks(self, criteria: Sequence[GradingCriterion]) -> list[ToolCheck]:
        # Each check over its own copy: the agent's workspace is never changed.
        runner = CheckRunner(self.workspace.root, self.sources, self.sandbox, self.on_check)
        checks = run_checks(criteria, runner, self._time_room)
        self.changes = merged(runner.changes)
        return checks

    async def grade(self, claims: Sequence[AgentClaim]) -> GradeReport:
        notes: list[str] = []
        if self.rubric.source == "objective":
            notes.append(
                "the task has no [rubric]: the grader judges the objective's ACCEPT/DONE_WHEN "
                "directly (spec §5), which only a grader model can do"
            )
        tool_criteria = [c for c in self.rubric.criteria if c.tool_checked]
        notes += exit_code_notes(self.rubric, self.sources.template is not None)
        if tool_criteria and self.sources.template is None:
            notes.append(
                "the workspace's template is not known (ilh grade without --baseline): its "
                "own tests and test-runner configuration were trusted as they are"
            )
        with self.ledger.audit_span():
            # In a worker thread: a check may take minutes, and concurrent runs (a batch)
            # share this event loop. This run's ledger is only read there, never written.
            checks = await asyncio.to_thread(self._checks, tool_criteria)
            # A check not run because it could not be trusted says why, once, in the notes.
            notes += [
                f"criterion {c.criterion}: {c.detail}"
                for c in checks
                if c.cause == "check_error" and c.detail.startswith(f"not run: {UNTRUSTED}")
            ]
            model_ids = [c.id for c in self.rubric.criteria if not c.tool_checked]
            verdicts, session = await self._judge(model_ids, checks, claims, notes)
        return GradeReport(
            audit=audit(self.rubric, checks, verdicts, claims),
            checks=tuple(checks),
            verdicts=tuple(verdicts),
            grader_model=self.client.name if self.client is not None else None,
            tokens=session.tokens if session is not None else GraderTokens(),
            calls=tuple(session.calls) if session is not None else tuple[GraderCall, ...](),
            notes=tuple(notes),
            context_lines=tuple(session.declarations)
            if session is not None and session.calls
            else (),
            tree_changes=self.changes.listing(),
            tampering=self.changes.tampering,
        )

    async def _judge(
        self,
        model_ids: list[str],
        checks: list[ToolCheck],
        claims: Sequence[AgentClaim],
        notes: list[str],
    ) -> tuple[list[ModelVerdict], GraderSession | None]:
        if not model_ids:
            return [], None
        if self.client is None:
            why = "model-judged, and no grader model was given (--grader-model URI)"
            notes.append(
                f"model-judged criteria ({', '.join(model_ids)}) are unknown: no grader model "
                "was given, so this rubric can never verify; give one with --grader-model URI"
            )
            return [
                ModelVerdict(criterion=cid, result="unknown", rationale=why, cause="no_grader")
                for cid in model_ids
            ], None
        ran = [c for c in checks if c.exit_code is not None]
        declarations = [
            self.objective.render(),
            rubric_declaration(self.rubric),
            *(grader_evidence_line(n, c) for n, c in enumerate(ran, start=1)),
        ]
        # A hidden check's command and output never reach a model whose words the agent
        # may read back: only its verdict does (in the declarations).
        shown = [(c, shown_output(c)) for c in ran if not c.hidden]
        session = GraderSession(
            client=self.client,
            workspace=self.workspace,
            ledger=self.ledger,
            declarations=declarations,
            decided=[(c.criterion, c.result) for c in checks],
            task_blocks=self.task_blocks,
            check_blocks=[check_output_block(c.criterion, c.command, out) for c, out in shown],
            claims=[claim.shown() for claim in claims],
            max_output=self.max_output,
            check_texts=[f"{c.command}\n{out}" for c, out in shown],
        )
        ctx = AnswerContext(
            inspected=session.inspected_file,
            tool_checks=frozenset(c.criterion for c in ran),
            echoed=session.echoed,
        )
        found = await judge(model_ids, session, ctx)
        return [found[cid] for cid in model_ids], session
