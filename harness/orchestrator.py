"""The round loop of `ilh run` (DESIGN §4).

Each round: check the budgets *before* the call, build the envelope, call the model with
a clamped output and timeout, charge the usage, read the agent's claims with the hostile
reader, classify them, apply only accepted proposals through the lifecycle, run the tool
calls in the confined workspace and return their output as ::UNTRUSTED blocks. Every
step is an event in the run record.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from budgets.clamp import clamp
from budgets.estimate import estimate_messages
from budgets.ledger import BudgetLedger
from envelopes.declarations import BudgetKind, Objective, Rubric, State
from envelopes.declarations.rubric import Criterion as RubricRow
from harness.authority import Proposal, classify
from harness.claims import read_claims
from harness.envelope import Segment, build_envelope, tool_result_segment, untrusted
from harness.events import EventKind
from harness.lifecycle import Lifecycle, StatusEntry
from harness.model import AgentEnded, ModelClient, ModelReply, ModelRequest
from harness.provenance import Provenance
from harness.run_result import (
    EndedBy,
    FinalRow,
    HistoryRow,
    ProposalRow,
    RunResult,
    ViolationRow,
)
from harness.store import RunStore
from harness.task import Task
from harness.tools import ToolCall, ToolResult, dispatch, tool_specs
from harness.workspace import Workspace

DEFAULT_MAX_OUTPUT = 4096
DEFAULT_CALL_TIMEOUT_S = 120.0
DEFAULT_TOOL_TIMEOUT_S = 60.0
# States in which the runtime stops calling the agent and ends the run.
AGENT_ENDS_RUN = frozenset({State.BLOCKED, State.FAILED, State.STOPPED})

Progress = Callable[[str, dict[str, Any]], None]


def no_progress(kind: str, data: dict[str, Any]) -> None:
    """The silent progress sink (used with `--json` and in tests)."""


@dataclass
class RunState:
    """What a run accumulates; also what `--resume` rebuilds from the record."""

    round: int = 0
    history: list[Segment] = field(default_factory=list)
    proposals: list[ProposalRow] = field(default_factory=list)
    violations: list[ViolationRow] = field(default_factory=list)
    runtime_lines: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    model_calls: int = 0


def objective_of(task: Task) -> Objective:
    """The runtime's ::OBJECTIVE. The user's words never enter it: its body points at the
    ::UNTRUSTED blocks that carry them, so no user text can stand in a runtime line."""
    spec = task.spec.task
    body = [("ACCEPT", "untrusted_block:accept")] if spec.accept else []
    if spec.non_goals:
        body.append(("NON_GOALS", "untrusted_block:non_goals"))
    if spec.done_when:
        body.append(("DONE_WHEN", "untrusted_block:done_when"))
    draft = Objective.create(body=body or [("ACCEPT", "untrusted_block:objective")], id="g1")
    texts = "\n".join(
        t or "" for t in (spec.objective, spec.accept, spec.non_goals, spec.done_when)
    )
    digest = "sha256:" + hashlib.sha256(texts.encode("utf-8")).hexdigest()
    return draft.model_copy(update={"hash": digest})


def rubric_of(task: Task) -> Rubric | None:
    spec = task.spec.rubric
    if spec is None:
        return None
    rows = tuple(RubricRow(id=c.id, weight=c.weight, check=c.check) for c in spec.criteria)
    return Rubric(id="r1", objective="g1", threshold=spec.threshold, mode=spec.mode, criteria=rows)


def task_blocks(task: Task) -> list[Segment]:
    spec = task.spec.task
    blocks = [untrusted(spec.objective, source="user", role="objective")]
    for role, text in (
        ("accept", spec.accept),
        ("non_goals", spec.non_goals),
        ("done_when", spec.done_when),
        ("task_data", spec.data),
    ):
        if text:
            blocks.append(untrusted(text, source="user", role=role))
    return blocks


class Orchestrator:
    def __init__(
        self,
        *,
        task: Task,
        client: ModelClient,
        store: RunStore,
        run_id: str,
        ledger: BudgetLedger,
        lifecycle: Lifecycle,
        workspace: Workspace,
        state: RunState | None = None,
        progress: Progress = no_progress,
        max_output: int = DEFAULT_MAX_OUTPUT,
    ) -> None:
        self.task = task
        self.client = client
        self.store = store
        self.run_id = run_id
        self.ledger = ledger
        self.lifecycle = lifecycle
        self.workspace = workspace
        self.state = state or RunState()
        self.progress = progress
        self.max_output = max_output
        objective = objective_of(task)
        rubric = rubric_of(task)
        self.task_declarations = [objective.render()] + ([rubric.render()] if rubric else [])
        self.blocks = task_blocks(task)

    # -------------------------------------------------------------------- records
    def record(self, kind: EventKind, payload: dict[str, Any]) -> None:
        self.store.append(self.run_id, kind, payload, round=self.state.round)
        self.progress(str(kind), payload)

    def committed(self, entry: StatusEntry) -> None:
        self.record(EventKind.STATE_CHANGE, entry.model_dump(mode="json"))

    def violation(self, kind: str, detail: str) -> None:
        row = ViolationRow(round=self.state.round, kind=kind, detail=detail)
        self.state.violations.append(row)
        self.record(EventKind.VIOLATION, row.model_dump())

    # ----------------------------------------------------------------------- loop
    async def run(self, *, resume: bool = False) -> RunResult:
        ended = self.start(resume)
        while ended is None:
            ended = await self.round()
        return self.finish(ended)

    def start(self, resume: bool) -> EndedBy | None:
        current = self.lifecycle.state
        if current is State.CREATED:
            self.committed(self.lifecycle.commit_running(self.state.round))
        elif current is State.STOPPED:
            if not resume:
                self.state.notes.append(
                    f"the task is stopped ({self.lifecycle.reason}); "
                    "run it with --resume to continue: no model was called"
                )
                return "not_running"
            self.committed(self.lifecycle.commit_running(self.state.round))
        elif current is not State.RUNNING:
            self.state.notes.append(f"the task is {current}: nothing to run")
            return "not_running"
        return None

    def stop_for_budget(self, why: str) -> EndedBy:
        self.state.notes.append(why)
        self.committed(self.lifecycle.commit_stopped(self.state.round, "budget"))
        return "budget"

    async def round(self) -> EndedBy | None:
        exhausted = self.ledger.exhausted()
        if exhausted:
            kinds = ", ".join(f"{b.kind} ({b.id})" for b in exhausted)
            return self.stop_for_budget(
                f"budget exhausted before round {self.state.round + 1}: {kinds}"
            )
        upcoming = self.state.round + 1
        round_lines = [
            *self.ledger.render_lines(upcoming),
            self.lifecycle.current_status().render(),
        ]
        asserted = ([] if self.state.runtime_lines else self.task_declarations) + round_lines
        envelope = build_envelope(
            task_declarations=self.task_declarations,
            round_lines=round_lines,
            task_blocks=self.blocks,
            history=self.state.history,
        )
        messages = envelope.messages()
        fit = clamp(self.ledger, self.max_output, estimate_messages(m.content for m in messages))
        if not fit.fits:
            return self.stop_for_budget(f"the call cannot fit in the budget: {fit.reason}")
        request = ModelRequest(
            messages=messages,
            tools=tuple(tool_specs()),
            max_output_tokens=fit.max_output,
            timeout_s=min(fit.time_left or DEFAULT_CALL_TIMEOUT_S, DEFAULT_CALL_TIMEOUT_S),
        )
        # The round's declarations count as asserted once the call is made with them.
        self.state.round = upcoming
        self.state.runtime_lines += asserted
        began = time.monotonic()
        try:
            reply = await self.client.complete(request)
        except AgentEnded as stop:
            self.state.round -= 1
            self.state.notes.append(f"the agent ended: {stop}")
            self.committed(self.lifecycle.commit_stopped(self.state.round, "agent_ended"))
            return "script_exhausted"
        self.state.model_calls += 1
        self.ledger.charge_round()
        self.ledger.charge_tokens(reply.usage.input_tokens, reply.usage.output_tokens)
        self.record(
            EventKind.MODEL_CALL,
            {
                "model": self.client.name,
                "envelope_digest": envelope.digest(),
                "max_output_tokens": request.max_output_tokens,
                "usage": reply.usage.model_dump(),
                "latency_s": round(time.monotonic() - began, 6),
                "stop_reason": reply.stop_reason,
                "text": reply.text,
                "tool_calls": [c.model_dump() for c in reply.tool_calls],
                "runtime_lines": asserted,
            },
        )
        self.state.history.append(
            Segment(provenance=Provenance.AGENT, text=reply.text, tool_calls=reply.tool_calls)
        )
        results = [self.run_tool(call) for call in reply.tool_calls]
        overrun = [b for b in self.ledger.budgets() if b.remaining < 0]
        feedback = self.read_proposals(reply, overrun_by=[f"{b.kind} ({b.id})" for b in overrun])
        self.record(EventKind.BUDGET_SNAPSHOT, {"budgets": self.ledger.rows_json(self.state.round)})
        ended = self.after_reply(overrun_by=overrun)
        if ended is None:
            self.state.history.append(self.feedback_segment(feedback, results))
        return ended

    # ---------------------------------------------------------------- proposals
    def read_proposals(self, reply: ModelReply, overrun_by: Sequence[str]) -> list[str]:
        """Classify every claim in the agent's text; apply only accepted ones. Returns
        the feedback lines the agent sees next round."""
        feedback: list[str] = []
        for claim in read_claims(reply.text):
            proposal = classify(claim, self.lifecycle.state, self.state.round)
            if overrun_by and proposal.accepted and proposal.state != State.STOPPED:
                # v4.0 §7 budget_pressure_completion⇒forbidden: a reply that overran the
                # budget cannot move the task anywhere but stopped.
                proposal = proposal.model_copy(
                    update={
                        "disposition": "rejected",
                        "why": f"made in a reply that overran the budget ({', '.join(overrun_by)})",
                        "status": None,
                    }
                )
                self.violation(
                    "budget_exhausted", f"claim {proposal.state} in an overrunning reply"
                )
            row = ProposalRow.model_validate(proposal.record())
            self.state.proposals.append(row)
            self.record(EventKind.PROPOSAL, row.model_dump())
            for v in proposal.violations:
                self.violation(v.kind, v.detail)
            if proposal.accepted:
                self.apply(proposal)
            elif proposal.disposition != "accepted":
                feedback.append(f"your claim {row.line!r} was {row.disposition}: {row.why}")
        return feedback

    def apply(self, proposal: Proposal) -> None:
        entry = self.lifecycle.apply_proposal(proposal, self.state.round)
        if entry is not None:
            self.committed(entry)

    def after_reply(self, overrun_by: Sequence[object]) -> EndedBy | None:
        current = self.lifecycle.state
        if current is State.CLAIMED_COMPLETE:
            self.state.notes.append(
                "the agent claimed completion; no grader verified it (the run ends at "
                "claimed_complete, never complete)"
            )
            return "unverified"
        if current in AGENT_ENDS_RUN:
            return "agent_proposal"
        if current is State.NEEDS_REVISION:
            self.committed(self.lifecycle.commit_running(self.state.round))
        if overrun_by:
            return self.stop_for_budget("the last reply overran the budget")
        return None

    # -------------------------------------------------------------------- tools
    def run_tool(self, call: ToolCall) -> ToolResult:
        time_left = self.ledger.room(BudgetKind.TIME)
        timeout = (
            min(DEFAULT_TOOL_TIMEOUT_S, time_left)
            if time_left is not None
            else DEFAULT_TOOL_TIMEOUT_S
        )
        result = dispatch(self.workspace, call, timeout_s=max(timeout, 0.001))
        self.record(
            EventKind.TOOL_CALL,
            {
                "call": call.model_dump(),
                "ok": result.ok,
                "output": result.output,
                "meta": result.meta,
            },
        )
        if result.meta.get("error") == "path_escape":
            self.violation("workspace_escape", f"{call.name}: {result.output}")
        self.state.history.append(tool_result_segment(result))
        return result

    def feedback_segment(self, feedback: Sequence[str], results: Sequence[ToolResult]) -> Segment:
        lines = [f"Round {self.state.round} is over."]
        lines += feedback
        if not results:
            lines.append(
                "Continue the task, or propose a status if the task is done or cannot go on."
            )
        return Segment(provenance=Provenance.RUNTIME, text="\n".join(lines))

    # -------------------------------------------------------------------- result
    def finish(self, ended: EndedBy) -> RunResult:
        final = self.lifecycle.final
        result = RunResult(
            run_id=self.run_id,
            task_id=self.task.id,
            ended_by=ended,
            final=FinalRow.model_validate(
                final.model_dump(include={"state", "reason", "by", "authority", "line"})
            )
            if final
            else None,
            history=[
                HistoryRow.model_validate(e.model_dump(mode="json")) for e in self.lifecycle.history
            ],
            proposals=self.state.proposals,
            budgets=self.ledger.rows_json(self.state.round),
            runtime_lines=self.state.runtime_lines,
            violations=self.state.violations,
            notes=self.state.notes,
            workspace=str(self.workspace.root),
            model=self.client.name,
        )
        self.record(
            EventKind.RUN_ENDED, {"ended_by": ended, "result": result.model_dump(mode="json")}
        )
        return result
