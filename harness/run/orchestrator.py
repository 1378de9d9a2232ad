"""The round loop of `ilh run` (DESIGN §4).

Each round: check the budgets *before* the call, build the envelope, call the model with
a clamped output and timeout, charge the usage, read the agent's claims with the hostile
reader, classify them, apply only accepted proposals through the lifecycle, run the tool
calls in the confined workspace and return their output as ::UNTRUSTED blocks. Every
step is an event in the run record.
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

from budgets.clamp import clamp
from budgets.ledger import BudgetLedger, Pool
from envelopes.declarations import BudgetKind, Objective, Rubric, State
from envelopes.declarations.rubric import Criterion as RubricRow
from envelopes.isolation import wrap_untrusted
from graders.report import AUDIT_REPORT, GradeReport, GraderTokens
from harness.context.agent import DEVELOPER_GENES, Segment, tool_result_segment, untrusted
from harness.context.growing import GrowingEnvelope
from harness.enforce.authority import Proposal, classify
from harness.enforce.claims import issued_blocks, read_claims, runtime_declarations
from harness.enforce.lifecycle import Lifecycle, StatusEntry
from harness.enforce.provenance import Provenance
from harness.enforce.transitions import REPEATED_ERROR_REASON
from harness.grading.grader import Grader, claims_from_proposals, grading_rubric
from harness.grading.tree import GradingSources
from harness.inputs.task_file import Task
from harness.models.call_record import call_payload
from harness.models.clients.estimate import ConversationEstimate
from harness.models.interface import (
    AgentEnded,
    ModelAttempt,
    ModelCallError,
    ModelClient,
    ModelReply,
    ModelRequest,
    reports_attempts,
)
from harness.models.secrecy import RequestRedactor, redact_reply
from harness.record.events import Event, EventKind
from harness.record.results import (
    EndedBy,
    FinalRow,
    HistoryRow,
    ProposalRow,
    RunResult,
    ViolationRow,
)
from harness.record.store import RunStore, Staged
from harness.secrets import harness_secrets
from harness.soul.session import SoulSession
from harness.soul.sync import OBSERVATION, STEP, persisted_payload
from harness.telemetry import AttributeValue, provider_system, span
from harness.workspace.folder import Workspace
from harness.workspace.sandbox import CONFINED, SandboxPolicy, sandbox_report
from harness.workspace.tools import ToolCall, ToolResult, dispatch, tool_specs

DEFAULT_MAX_OUTPUT = 4096
DEFAULT_CALL_TIMEOUT_S = 120.0
DEFAULT_TOOL_TIMEOUT_S = 60.0
# States in which the runtime stops calling the agent and ends the run.
AGENT_ENDS_RUN = frozenset({State.BLOCKED, State.FAILED, State.STOPPED})

Progress = Callable[[str, dict[str, Any]], None]
#: The progress kind (never a record event) of a tool call or grader check that starts:
#: `{"what": "tool"|"check", "name": …}`. May come from a worker thread (a check).
STARTED = "started"


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
    return _objective(task)[0]


def _objective(task: Task) -> tuple[Objective, str]:
    """The ::OBJECTIVE and its text."""
    spec = task.spec.task
    return _objective_of_texts(spec.objective, spec.accept, spec.non_goals, spec.done_when)


# Every run of a batch's task makes the same ::OBJECTIVE: made and rendered once per
# distinct texts (a function of them alone, so another task, or the same one edited, gets
# its own). The declaration is frozen, so runs may share it.
@functools.lru_cache(maxsize=256)
def _objective_of_texts(
    objective: str, accept: str | None, non_goals: str | None, done_when: str | None
) -> tuple[Objective, str]:
    body = [("ACCEPT", "untrusted_block:accept")] if accept else []
    if non_goals:
        body.append(("NON_GOALS", "untrusted_block:non_goals"))
    if done_when:
        body.append(("DONE_WHEN", "untrusted_block:done_when"))
    draft = Objective.create(body=body or [("ACCEPT", "untrusted_block:objective")], id="g1")
    texts = "\n".join(t or "" for t in (objective, accept, non_goals, done_when))
    digest = "sha256:" + hashlib.sha256(texts.encode("utf-8")).hexdigest()
    declared = draft.model_copy(update={"hash": digest})
    return declared, declared.render()


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


#: More ::STATUS / ::EVIDENCE claims than this in one reply is a flood, not a proposal: an
#: honest reply makes one status claim and a handful of evidence lines.
MAX_CLAIMS_PER_REPLY = 64

#: What the agent is told when it writes a declaration only the runtime writes.
RUNTIME_ONLY = (
    "budgets, the rubric and the objective are set by the runtime and the task; "
    "propose only ::STATUS and ::EVIDENCE"
)


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
        grader_client: ModelClient | None = None,
        sandbox: SandboxPolicy = CONFINED,
        grading: GradingSources | None = None,
        soul: SoulSession | None = None,
    ) -> None:
        """`grading`: the snapshots the grader restores from (taken when the run
        started: `harness.run.setup.grading_sources`); none, for a task without a
        template or hidden checks. `soul`: the agent's SOUL and its GENE cycle (none:
        the run corrects nothing across runs)."""
        self.soul = soul
        self.task = task
        self.sandbox = sandbox
        self.client = client
        self.store = store
        self.run_id = run_id
        self.ledger = ledger
        self.lifecycle = lifecycle
        self.workspace = workspace
        self.state = state or RunState()
        self.progress = progress
        self.max_output = max_output
        objective, objective_line = _objective(task)
        rubric = rubric_of(task)
        self.task_declarations = [objective_line] + ([rubric.render()] if rubric else [])
        self.blocks = task_blocks(task)
        self._issued: dict[int, tuple[Segment, dict[str, frozenset[str]]]] = {}
        # Each round renders only what the last one did not: the history is rendered,
        # digested and checked for secrets once per segment, not once per round.
        self.envelopes = GrowingEnvelope(
            task_declarations=self.task_declarations,
            task_blocks=self.blocks,
            developer=soul.developer_text(DEVELOPER_GENES) if soul else DEVELOPER_GENES,
        )
        self.redact_request = RequestRedactor()
        self.estimate_input = ConversationEstimate(client)
        # Every attempt, retries too, the agent's and the grader's, is recorded.
        if reports_attempts(client):
            client.on_attempt = self.attempt_made
        if reports_attempts(grader_client):
            grader_client.on_attempt = self.grader_attempt_made
        # The grader stage (DESIGN §4): without a grader client, tool checks only.
        self.grader = Grader(
            rubric=grading_rubric(task),
            objective=objective,
            task_blocks=self.blocks,
            workspace=workspace,
            ledger=ledger,
            client=grader_client,
            sources=grading,
            sandbox=sandbox,
            on_check=self.check_started,
        )
        self.grades: list[tuple[int, GradeReport, bool]] = []  # (round, report, applied)
        self.grader_feedback: list[str] = []
        self.grader_findings: list[Segment] = []
        self.staged: list[Staged] = []  # recorded, not yet handed to the store

    # -------------------------------------------------------------------- records
    def record(self, kind: EventKind, payload: dict[str, Any]) -> None:
        # The store redacts what it writes; the live progress shows it too, so the
        # harness's secrets are taken out here, once, for both.
        # Staged (redacted and stamped) now; committed with the rest of the round by
        # `durable`, which runs where the record must come first. The live progress shows
        # what the store will write: redacted once, for both.
        staged = self.store.stage(kind, payload, round=self.state.round)
        self.staged.append(staged)
        self.progress(str(kind), staged.payload)

    def submit_staged(self) -> Future[list[Event]] | None:
        """Hand the staged events to the store's writer (one transaction), not waiting."""
        staged, self.staged = self.staged, []
        return self.store.commit_later(self.run_id, staged) if staged else None

    async def durable(self) -> None:
        """Commit every event recorded so far and wait for it (off the event loop); raise
        if the write failed. Called before what the record must precede (a model call, a
        command, a grading: each after its allowance) and before the result is returned.
        Between two calls only the runtime's own work happens, nothing the record could
        miss that a kill a moment earlier would not also have cut."""
        written = self.submit_staged()
        if written is not None:
            await asyncio.wrap_future(written)

    async def allow(self, what: str, allowed_s: float | None, **detail: Any) -> None:
        """Record, before a call, command or grading starts, how long it may take, and
        wait until that (and everything before it) is committed. If the process dies
        inside it, the record ends here and a resume charges the whole allowance (the
        wall time actually spent cannot be known after a kill)."""
        allowed = None if allowed_s is None else round(float(allowed_s), 6)
        self.record(EventKind.ALLOWANCE, {"for": what, "allowed_s": allowed, **detail})
        await self.durable()

    # Progress only, never recorded: what is running now, for the live panel's ticking
    # elapsed time (the record has the allowance before, and the result after).
    def check_started(self, criterion: str) -> None:
        self.progress(STARTED, {"what": "check", "name": criterion})

    def committed(self, entry: StatusEntry) -> None:
        self.record(EventKind.STATE_CHANGE, entry.model_dump(mode="json"))

    def attempt_made(self, attempt: ModelAttempt) -> None:
        self.record(EventKind.MODEL_ATTEMPT, attempt.model_dump())

    def grader_attempt_made(self, attempt: ModelAttempt) -> None:
        self.record(EventKind.MODEL_ATTEMPT, {**attempt.model_dump(), "caller": "grader"})

    def violation(self, kind: str, detail: str, *, an_error: bool = True) -> None:
        """Record a violation; unless it is not `an_error` of the agent's (a quoted
        example), it is also a finding of the GENE cycle."""
        row = ViolationRow(round=self.state.round, kind=kind, detail=detail)
        self.state.violations.append(row)
        self.record(EventKind.VIOLATION, row.model_dump())
        if an_error:
            self.gene_finding(kind)

    # ---------------------------------------------------------------- GENE cycle
    def gene_finding(self, finding: str) -> None:
        """A runtime finding the GENE cycle corrects (SPEC-v5.0 Part IV): one occurrence,
        recorded as its step. The SOUL the agent is governed by changes from the next
        round's envelope on (this round's call is made)."""
        if self.soul is None:
            return
        observed = self.soul.observe(finding, self.state.round)
        if observed is None:
            return
        seen, step = observed
        reply = next(
            (h.text for h in reversed(self.state.history) if h.provenance is Provenance.AGENT), ""
        )
        payload = {
            STEP: step,
            OBSERVATION: seen.model_dump(mode="json"),
            "soul": str(self.soul.path),
            # The rule the agent says it followed, recorded with the error (counted all
            # the same: `SoulSession.followed`).
            "followed": self.soul.followed(reply),
        }
        self.record(EventKind.GENE, payload)
        self.envelopes.set_developer(self.soul.developer_text(DEVELOPER_GENES))
        gene = seen.correction.gene
        if step == "promoted":
            # STEP-3: the person is told the agent struggles with this behaviour.
            self.state.notes.append(
                f"GENE {gene} promoted (second occurrence of its error): this agent is "
                "struggling with this behaviour"
            )
        elif step == "terminated":
            self.state.notes.append(
                f"GENE {gene}: its error happened a third time; the runtime ends the session "
                f"(stopped, reason:{REPEATED_ERROR_REASON})"
            )

    def persist_genes(self, how: str) -> None:
        """L2: the session's GENEs to the SOUL before the run ends, whichever way."""
        if self.soul is None:
            return
        done = self.soul.persist()
        if done is None:
            return
        self.record(EventKind.GENE, persisted_payload(self.soul.path, done, how))
        if done.why:
            self.state.notes.append(done.why)

    def gene_stop(self) -> EndedBy:
        """The third occurrence of one error ends the session with a lawful runtime stop
        (running → stopped, authority:commit, reason `REPEATED_ERROR_REASON`)."""
        self.committed(self.lifecycle.commit_stopped(self.state.round, REPEATED_ERROR_REASON))
        return "repeated_error"

    # ----------------------------------------------------------------------- loop
    async def run(self, *, resume: bool = False) -> RunResult:
        try:
            return await self.run_rounds(resume)
        finally:
            # Interrupted (Ctrl-C, an error): the GENEs are persisted all the same, and
            # what was recorded still goes to the store, whose close commits it.
            try:
                self.persist_genes("interrupted")
            finally:
                self.submit_staged()

    async def run_rounds(self, resume: bool) -> RunResult:
        attributes: dict[str, AttributeValue | None] = {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": self.task.id,
            "ilh.run.id": self.run_id,
            "ilh.resumed": resume,
        }
        with span(f"invoke_agent {self.task.id}", attributes) as current:
            result = await self.rounds_of(resume)
            current.set_attribute("ilh.ended_by", result.ended_by)
            return result

    async def rounds_of(self, resume: bool) -> RunResult:
        ended = self.start(resume)
        if ended is None and self.lifecycle.state is State.CLAIMED_COMPLETE:
            # Resumed with a claim the grader never answered (killed in between): grade it.
            ended = await self.grade_claim()
            if ended is None:
                text = "\n".join(self.grader_feedback)
                self.state.history += [Segment(provenance=Provenance.RUNTIME, text=text)]
                self.state.history += self.grader_findings
                self.grader_feedback, self.grader_findings = [], []
        while ended is None:
            ended = await self.round()
        self.persist_genes(ended)
        result = self.finish(ended)
        await self.durable()
        return result

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
        elif current is State.CLAIMED_COMPLETE and resume:
            return None  # the pending claim goes to the grader first (see `run`)
        elif current is not State.RUNNING:
            self.state.notes.append(f"the task is {current}: nothing to run")
            return "not_running"
        return None

    def model_failed(self, failure: ModelCallError) -> EndedBy:
        """A call that gave no usable reply (retries exhausted, refused, malformed): the
        run survives it. The round is spent, usage the provider reported is charged, the
        failure is recorded, and the runtime stops the task with reason:model_error so
        the record stays complete (and `ilh run --resume RUN` can go on later)."""
        self.ledger.charge_round()
        if failure.usage is not None:
            self.ledger.charge_tokens(failure.usage.input_tokens, failure.usage.output_tokens)
        self.state.notes.append(f"the model call failed: {failure}")
        self.record(EventKind.NOTE, {"model_error": failure.record()})
        self.record(EventKind.BUDGET_SNAPSHOT, {"budgets": self.ledger.rows_json(self.state.round)})
        self.committed(self.lifecycle.commit_stopped(self.state.round, "model_error"))
        return "error"

    def stop_for_budget(self, why: str) -> EndedBy:
        self.state.notes.append(why)
        self.committed(self.lifecycle.commit_stopped(self.state.round, "budget"))
        return "budget"

    async def round(self) -> EndedBy | None:
        with span("ilh.round", {"ilh.round": self.state.round + 1, "ilh.run.id": self.run_id}):
            return await self.one_round()

    async def one_round(self) -> EndedBy | None:
        # A cancellation point: Ctrl-C (asyncio cancels the run's task) takes effect
        # between rounds even when nothing else in the round awaits (a scripted model).
        await asyncio.sleep(0)
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
        envelope = self.envelopes.build(round_lines, self.state.history)
        messages = envelope.messages()
        tools = tuple(tool_specs())
        # The client's own estimate when it has one: it knows what its provider sends
        # besides the messages (tool definitions, hidden prompts).
        estimate = self.estimate_input(messages, tools)
        fit = clamp(self.ledger, self.max_output, estimate)
        if not fit.fits:
            return self.stop_for_budget(f"the call cannot fit in the budget: {fit.reason}")
        request = ModelRequest(
            messages=messages,
            tools=tools,
            max_output_tokens=fit.max_output,
            timeout_s=min(fit.time_left or DEFAULT_CALL_TIMEOUT_S, DEFAULT_CALL_TIMEOUT_S),
        )
        # Recorded under the round before (a call that never happens, e.g. the scripted
        # agent has ended, leaves the round unasserted; rounds in the record never go back).
        await self.allow("model_call", request.timeout_s, for_round=upcoming)
        # The round's declarations count as asserted once the call is made with them.
        self.state.round = upcoming
        self.state.runtime_lines += asserted
        began = time.monotonic()
        try:
            # Secrets out of what is sent and of what comes back, whatever the client:
            # nothing recorded, acted on or sent next holds one (`harness.secrets`).
            reply = await self.call_model(request)
        except AgentEnded as stop:
            # No turn happened: the round and its declarations were never asserted.
            self.state.round -= 1
            del self.state.runtime_lines[len(self.state.runtime_lines) - len(asserted) :]
            self.state.notes.append(f"the agent ended: {stop}")
            self.committed(self.lifecycle.commit_stopped(self.state.round, "agent_ended"))
            return "script_exhausted"
        except ModelCallError as failure:
            return self.model_failed(failure)
        self.state.model_calls += 1
        self.ledger.charge_round()
        self.ledger.charge_tokens(reply.usage.input_tokens, reply.usage.output_tokens)
        self.record(
            EventKind.MODEL_CALL,
            {
                **call_payload(
                    self.client.name, envelope.digest(), request, estimate, reply, began
                ),
                "runtime_lines": asserted,
            },
        )
        self.state.history.append(
            Segment(provenance=Provenance.AGENT, text=reply.text, tool_calls=reply.tool_calls)
        )
        results = [await self.run_tool(call) for call in reply.tool_calls]
        overrun = self.ledger.overrun()
        feedback = self.read_proposals(reply, overrun_by=[f"{b.kind} ({b.id})" for b in overrun])
        self.record(EventKind.BUDGET_SNAPSHOT, {"budgets": self.ledger.rows_json(self.state.round)})
        ended = await self.after_reply(overrun_by=overrun)
        if ended is None:
            feedback += self.grader_feedback
            self.state.history.append(self.feedback_segment(feedback, results))
            self.state.history += self.grader_findings
            self.grader_feedback, self.grader_findings = [], []
        return ended

    # ---------------------------------------------------------------- proposals
    def issued_blocks(self) -> dict[str, frozenset[str]]:
        """The ::UNTRUSTED blocks the runtime has shown the agent so far (the task's,
        and every non-agent segment of the history: tool results, grader findings), by
        delimiter (`harness.enforce.claims.issued_blocks`): only an echo of one of them is
        quoting. Each segment is read once (segments are frozen; kept, so ids stay theirs)."""
        found: dict[str, frozenset[str]] = {}
        for segment in [*self.blocks, *self.state.history]:
            if segment.provenance is Provenance.AGENT:
                continue  # a block the agent wrote itself was never issued
            known = self._issued.get(id(segment))
            if known is None or known[0] is not segment:
                known = (segment, issued_blocks(segment.text))
                self._issued[id(segment)] = known
            found.update(known[1])
        return found

    def read_proposals(self, reply: ModelReply, overrun_by: Sequence[str]) -> list[str]:
        """Classify every claim in the agent's text; apply only accepted ones. Returns
        the feedback lines the agent sees next round."""
        feedback: list[str] = []
        issued = self.issued_blocks()
        declared = runtime_declarations(reply.text, issued)
        if declared:
            # No effect (the ledger, the rubric and the objective are the runtime's), but
            # recorded: an agent rewriting its own budget or bar is worth an audit. One
            # violation per reply, however many lines (a flood must not bloat the record).
            # Its own kind, not `authority_forgery`: it changes nothing, so it does not
            # count toward the SOUL's third-error rule.
            shown = ", ".join(f"line {n}: ::{name}" for n, name in declared[:5])
            more = f" and {len(declared) - 5} more" if len(declared) > 5 else ""
            detail = f"{shown}{more}: written by the runtime, not the agent: ignored"
            self.violation("runtime_declaration", detail)
            feedback.append(f"your {shown}{more} was ignored: {RUNTIME_ONLY}")
        claims = list(read_claims(reply.text, issued))
        written = sum(not claim.quoted for claim in claims)
        if written > MAX_CLAIMS_PER_REPLY:
            # A flood (a hostile endpoint is not bound by max_tokens): classifying and
            # recording every claim would cost minutes and gigabytes. Fail closed: none of
            # them is applied, and the flood itself is what is recorded, an error of the
            # agent's for the GENE cycle (the forgery it may hide is never classified).
            # Only written claims count: an honest reply quoting examples keeps its own.
            detail = (
                f"the reply holds {written} claims (at most {MAX_CLAIMS_PER_REPLY} are "
                "read): none was applied"
            )
            self.violation("claim_flood", detail)
            feedback.append(f"your reply was not read for claims: {detail}")
            return feedback
        quoted = [claim for claim in claims if claim.quoted]
        if len(quoted) > MAX_CLAIMS_PER_REPLY:
            # Quoted claims are never strict, so never applied; each is still recorded,
            # but only so many: the same bound of work per reply as the written ones.
            unread = {id(claim) for claim in quoted[MAX_CLAIMS_PER_REPLY:]}
            claims = [claim for claim in claims if id(claim) not in unread]
            why = (
                f"{len(unread)} quoted claims past the first {MAX_CLAIMS_PER_REPLY} were not "
                "read (a quoted claim is never applied)"
            )
            self.state.notes.append(f"round {self.state.round}: {why}")
            feedback.append(f"in your reply, {why}")
        # Fail closed: a reply whose forgery ends the session applies none of its
        # proposals, not even one written before the forgery (a claim applied first could
        # leave the task where no runtime stop is lawful).
        # A quoted claim (an example in a fence, a code span, a blockquote) is recorded
        # with its violations but is no error of the agent's: explaining that
        # `by:@RUNTIME` is forbidden must not count toward the third-error rule. Only
        # what Markdown surely quotes is exempt (`RawClaim.quoted`); a fake fence is not.
        ending = self.soul is not None and (
            self.soul.ending is not None
            or any(
                self.soul.would_end(v.kind, self.state.round)
                for claim in claims
                if not claim.quoted
                for v in classify(claim, self.lifecycle.state, self.state.round).violations
            )
        )
        for claim in claims:
            proposal = classify(claim, self.lifecycle.state, self.state.round)
            if ending and proposal.accepted:
                proposal = proposal.model_copy(
                    update={
                        "disposition": "rejected",
                        "why": "the session ends: an error of this agent happened a third time",
                        "status": None,
                    }
                )
            if (
                overrun_by
                and proposal.accepted
                and proposal.kind == "STATUS"
                and proposal.state != State.STOPPED
            ):
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
                self.violation(v.kind, v.detail, an_error=not claim.quoted)
            if proposal.accepted:
                self.apply(proposal)
            elif proposal.disposition != "accepted":
                feedback.append(f"your claim {row.line!r} was {row.disposition}: {row.why}")
        return feedback

    def apply(self, proposal: Proposal) -> None:
        entry = self.lifecycle.apply_proposal(proposal, self.state.round)
        if entry is not None:
            self.committed(entry)

    async def after_reply(self, overrun_by: Sequence[object]) -> EndedBy | None:
        current = self.lifecycle.state
        if self.soul is not None and self.soul.ending is not None and current is State.RUNNING:
            return self.gene_stop()
        if current is State.CLAIMED_COMPLETE:
            return await self.grade_claim()
        if current in AGENT_ENDS_RUN:
            return "agent_proposal"
        if current is State.NEEDS_REVISION:
            self.committed(self.lifecycle.commit_running(self.state.round))
        if overrun_by:
            return self.stop_for_budget("the last reply overran the budget")
        return None

    async def grade_claim(self) -> EndedBy | None:
        """DESIGN §4: claimed_complete → the grader (a fresh context, paid from
        reserve_audit) → the runtime acts on the report (`GradeReport.action`): complete,
        running with the gaps as feedback, stopped for budget, or the run ends
        unverified at claimed_complete."""
        r = self.state.round
        # A grading is bounded by the time the audit may still spend (each check and
        # grader call is clamped to it); without a time budget there is nothing to charge.
        await self.allow("grading", self.ledger.room(BudgetKind.TIME, Pool.AUDIT))
        report = await self.grader.grade(claims_from_proposals(self.state.proposals))
        action = report.action
        applied = action in ("verify", "revise")
        self.grades.append((r, report, applied))
        self.state.runtime_lines += report.context_lines
        self.record(EventKind.GRADER_RESULT, report.record_json(round=r, applied=applied))
        if report.tampering:
            self.violation(
                "tests_changed",
                "test files or test-runner configuration of the task's workspace were changed "
                "or removed, or a test-runner hook was added: the checks ran over a copy with "
                "the task's versions restored and the hooks removed",
            )
        if action == "verify":
            self.committed(
                self.lifecycle.apply_verification(State.VERIFIED_COMPLETE, r, evidence=AUDIT_REPORT)
            )
            self.committed(self.lifecycle.commit_complete(r))
            return "committed_complete"
        if action == "revise":
            self.committed(
                self.lifecycle.apply_verification(
                    State.NEEDS_REVISION, r, missing=report.missing, score=report.score
                )
            )
            self.committed(self.lifecycle.commit_running(r))
            # §3 judgment_error: a completion claim the grader rejected.
            self.gene_finding("claim_rejected")
            if self.soul is not None and self.soul.ending is not None:
                return self.gene_stop()
            self.grader_feedback = report.feedback_lines()
            findings = report.findings_text()
            if findings:
                block = wrap_untrusted(findings, source="grader", role="grader_findings")
                self.grader_findings = [Segment(provenance=Provenance.TOOL, text=block)]
            return None
        why = report.why_undecided()
        if action == "stop_budget":
            return self.stop_for_budget(f"the audit budget could not pay for the grader: {why}")
        self.state.notes.append(
            "the agent claimed completion; no grader verified it (the run ends at "
            f"claimed_complete, never complete): {why}"
        )
        return "unverified"

    def grader_summary(self) -> dict[str, Any] | None:
        """DESIGN §6 `grader`: the last grade of the run, with the grader's token use over
        the whole run and how many gradings there were."""
        if not self.grades:
            return None
        r, report, applied = self.grades[-1]
        tokens = sum((g.tokens for _, g, _ in self.grades), GraderTokens())
        # The agent's usage, from the record (so a resumed run counts all its calls): this
        # round's calls are staged still; the read waits for what was handed over.
        self.submit_staged()
        agent = GraderTokens()
        for event in self.store.events(self.run_id, EventKind.MODEL_CALL):
            usage = event.payload.get("usage", {})
            agent += GraderTokens(
                input=int(usage.get("input_tokens", 0)), output=int(usage.get("output_tokens", 0))
            )
        return {
            **report.run_json(round=r, applied=applied),
            "tokens": tokens.model_dump(),
            "agent_tokens": agent.model_dump(),
            "token_share": round(tokens.total / agent.total, 4) if agent.total else None,
            "gradings": len(self.grades),
        }

    # -------------------------------------------------------------------- tools
    async def call_model(self, request: ModelRequest) -> ModelReply:
        """One model call, in a GenAI `chat` span (token usage, finish reason)."""
        model = self.client.name
        attributes: dict[str, AttributeValue | None] = {
            "gen_ai.operation.name": "chat",
            "gen_ai.system": provider_system(model),
            "gen_ai.request.model": model,
            "gen_ai.request.max_tokens": request.max_output_tokens,
        }
        with span(f"chat {model}", attributes) as current:
            reply = redact_reply(await self.client.complete(self.redact_request(request)))
            current.set_attribute("gen_ai.usage.input_tokens", reply.usage.input_tokens)
            current.set_attribute("gen_ai.usage.output_tokens", reply.usage.output_tokens)
            current.set_attribute("gen_ai.response.finish_reasons", (reply.stop_reason,))
            return reply

    async def run_tool(self, call: ToolCall) -> ToolResult:
        attributes: dict[str, AttributeValue | None] = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": call.name,
            "gen_ai.tool.call.id": call.id,
        }
        with span(f"execute_tool {call.name}", attributes) as current:
            result = await self.tool_result(call)
            current.set_attribute("ilh.tool.ok", result.ok)
            return result

    async def tool_result(self, call: ToolCall) -> ToolResult:
        time_left = self.ledger.room(BudgetKind.TIME)
        timeout = (
            min(DEFAULT_TOOL_TIMEOUT_S, time_left)
            if time_left is not None
            else DEFAULT_TOOL_TIMEOUT_S
        )
        timeout = max(timeout, 0.001)
        if self.soul is not None and self.soul.ending is not None:
            # The session ends: the rest of the reply's calls are not run.
            result = ToolResult(
                name=call.name,
                ok=False,
                output="not run: the session ends (an error of this agent happened a third time)",
                id=call.id,
            )
            self.state.history.append(tool_result_segment(result))
            return result
        if call.name == "run_command":  # the one tool that can take long
            await self.allow("run_command", timeout, call_id=call.id)
        self.progress(STARTED, {"what": "tool", "name": call.name})
        # In a worker thread: a command may run for minutes, and the other tasks of a
        # batch share this event loop; their time budgets must not pay for it.
        result = await asyncio.to_thread(
            dispatch, self.workspace, call, timeout_s=timeout, sandbox=self.sandbox
        )
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
        if result.meta.get("secret_redacted"):
            self.violation("secret_reach", f"{call.name}: the output held a harness secret")
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
            grader=self.grader_summary(),
            notes=self.state.notes,
            workspace=str(self.workspace.root),
            model=self.client.name,
            sandbox=sandbox_report(self.sandbox),
        )
        # What the user sees (the summary, --json) and the record hold no secret: the
        # notes and the grader's evidence quote outputs and errors.
        dumped = result.model_dump(mode="json")
        clean = harness_secrets().redact_json(dumped)
        if clean is not dumped:
            result = RunResult.model_validate(clean)
        self.record(EventKind.RUN_ENDED, {"ended_by": ended, "result": clean})
        return result
