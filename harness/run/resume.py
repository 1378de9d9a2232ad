"""`ilh run --resume RUN`: continue a recorded run from its last committed state.

Everything is rebuilt from the run record, and nothing in it is trusted unchecked: the
record must verify (hash chain and head), and the status history must replay lawfully
through the §4 machine (`Lifecycle.restore`).
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any

from budgets.ledger import BudgetLedger
from envelopes.declarations import Budget
from harness.context.agent import Segment, tool_result_segment
from harness.enforce.lifecycle import IllegalTransition, Lifecycle, StatusEntry
from harness.enforce.provenance import Provenance
from harness.inputs.errors import InputError
from harness.inputs.task_file import Task, load_task
from harness.models.clients.options import NO_OPTIONS, ClientOptions
from harness.record.events import Event, EventKind
from harness.record.results import ProposalRow, RunResult, ViolationRow
from harness.record.store import RunStore
from harness.run.orchestrator import Orchestrator, Progress, RunState, no_progress
from harness.run.setup import (
    budgets_of,
    check_handoff,
    client_for,
    grader_client_for,
    model_uri,
    run_then_close,
    sandbox_policy,
)
from harness.workspace.folder import Workspace
from harness.workspace.sandbox import NO_OVERRIDES, SandboxOverrides
from harness.workspace.tools import ToolCall, ToolResult


def recorded_budgets(task: Task, rows: list[dict[str, Any]]) -> list[Budget]:
    """The task's budgets with the figures of recorded budget rows (time included)."""
    by_kind = {row.get("kind"): row for row in rows if isinstance(row, dict)}
    rebuilt: list[Budget] = []
    for budget in budgets_of(task):
        row = by_kind.get(str(budget.kind))
        if row is None:
            rebuilt.append(budget)
            continue
        figures = ("used", "reserve_audit", "reserve_summary")
        rebuilt.append(budget.model_copy(update={key: row[key] for key in figures}))
    return rebuilt


def _budget_rows(event: Event) -> list[dict[str, Any]] | None:
    """The budget rows an event carries: a snapshot's, or the budgets of a run's result."""
    if event.kind is EventKind.BUDGET_SNAPSHOT:
        rows = event.payload.get("budgets")
    elif event.kind is EventKind.RUN_ENDED:
        result = event.payload.get("result")
        rows = result.get("budgets") if isinstance(result, dict) else None
    else:
        return None
    return rows if isinstance(rows, list) else None


def _seconds_between(first: Event, later: Event) -> float:
    try:
        gap = (datetime.fromisoformat(later.at) - datetime.fromisoformat(first.at)).total_seconds()
    except ValueError:
        return 0.0
    return max(0.0, gap)


def _count(value: object) -> int:
    return value if isinstance(value, int) and value > 0 else 0


def _usage_tokens(usage: object) -> tuple[int, int]:
    if not isinstance(usage, dict):
        return 0, 0
    return _count(usage.get("input_tokens")), _count(usage.get("output_tokens"))


def resumed_ledger(task: Task, events: list[Event]) -> BudgetLedger:
    """The ledger as the record says it stands, including what was spent after the last
    recorded budget rows.

    A run can be killed at any moment, e.g. while a tool of its last reply runs: the
    reply's `model_call` is in the record but the round's `budget_snapshot` is not. Taking
    the last snapshot alone would forget that call (its round and its tokens), and a run
    killed and resumed again and again could then call the model without end. Fail
    closed: start from the latest rows (a snapshot, or the result of a run that ended),
    then charge every model call, failed call and grading recorded after them, and the
    wall time between those rows and the last event.
    """
    base_at = next(
        (i for i in range(len(events) - 1, -1, -1) if _budget_rows(events[i]) is not None), None
    )
    if base_at is None:
        ledger = BudgetLedger(budgets_of(task))
        after = events
    else:
        base = events[base_at]
        ledger = BudgetLedger(recorded_budgets(task, _budget_rows(base) or []))
        after = events[base_at + 1 :]
        if after:
            ledger.charge_time(_seconds_between(base, after[-1]))
    for event in after:
        payload = event.payload
        if event.kind is EventKind.MODEL_CALL:
            ledger.charge_round()
            ledger.charge_tokens(*_usage_tokens(payload.get("usage")))
        elif event.kind is EventKind.NOTE and isinstance(payload.get("model_error"), dict):
            ledger.charge_round()
            ledger.charge_tokens(*_usage_tokens(payload["model_error"].get("usage")))
        elif event.kind is EventKind.GRADER_RESULT:
            tokens = payload.get("tokens")
            if isinstance(tokens, dict):
                ledger.charge_audit(_count(tokens.get("input")), _count(tokens.get("output")))
    return ledger


def replayed_state(events: list[Event]) -> RunState:
    state = RunState()
    for event in events:
        state.round = max(state.round, event.round)
        payload = event.payload
        if event.kind is EventKind.MODEL_CALL:
            state.model_calls += 1
            state.runtime_lines += payload.get("runtime_lines", [])
            calls = tuple(ToolCall.model_validate(c) for c in payload.get("tool_calls", []))
            state.history.append(
                Segment(provenance=Provenance.AGENT, text=payload.get("text", ""), tool_calls=calls)
            )
        elif event.kind is EventKind.TOOL_CALL:
            call = ToolCall.model_validate(payload["call"])
            result = ToolResult(
                name=call.name,
                ok=payload["ok"],
                output=payload["output"],
                meta=payload["meta"],
                id=call.id,
            )
            state.history.append(tool_result_segment(result))
        elif event.kind is EventKind.PROPOSAL:
            state.proposals.append(ProposalRow.model_validate(payload))
        elif event.kind is EventKind.VIOLATION:
            state.violations.append(ViolationRow.model_validate(payload))
    return state


def answer_interrupted_calls(history: list[Segment]) -> None:
    """Give every tool call the run was stopped in (killed or interrupted before its
    result was recorded) a result saying so. Only the last reply can have such calls:
    each round runs all of its calls, in order, before the next model call. Providers
    refuse a conversation whose tool call has no result, and the agent must know that
    the call's effects are unknown."""
    last = next(
        (i for i in range(len(history) - 1, -1, -1) if history[i].provenance is Provenance.AGENT),
        None,
    )
    if last is None:
        return
    calls = history[last].tool_calls
    answered = sum(1 for s in history[last + 1 :] if s.provenance is Provenance.TOOL)
    for call in calls[answered:]:
        result = ToolResult(
            name=call.name,
            ok=False,
            output="not finished: the run was stopped during this call; its effects, if "
            "any, are unknown (look before you rely on them)",
            id=call.id,
        )
        history.append(tool_result_segment(result))


async def resume_run(
    store: RunStore,
    run_ref: str,
    *,
    model: str | None = None,
    progress: Progress = no_progress,
    options: ClientOptions = NO_OPTIONS,
    grader_model: str | None = None,
    sandbox: SandboxOverrides = NO_OVERRIDES,
) -> RunResult:
    """`model`/`grader_model` override what the run was started with (the record's
    meta); a run started with a grader model is graded by it again when resumed."""
    run_id = store.resolve_run_id(run_ref)
    check = store.verify(run_id)
    if not check.ok:
        raise InputError(
            run_ref,
            "E303",
            "the run record fails verification; not resumed: " + "; ".join(check.problems[:3]),
        )
    events = store.events(run_id)
    meta = events[0].payload.get("meta", {})
    task_file = meta.get("task_file")
    if not task_file:
        raise InputError(run_ref, "E500", "the record names no task file to resume from")
    task = load_task(Path(task_file))
    check_handoff(task)
    entries = [
        StatusEntry.model_validate(e.payload) for e in events if e.kind is EventKind.STATE_CHANGE
    ]
    try:
        lifecycle = Lifecycle.restore(entries)
    except IllegalTransition as err:
        raise InputError(
            run_ref, "E303", f"the recorded history is not lawful; not resumed: {err}"
        ) from None
    state = replayed_state(events)
    answer_interrupted_calls(state.history)
    state.notes.append(f"resumed from the record at round {state.round}")
    ledger = resumed_ledger(task, events)
    uri = model or meta.get("model") or model_uri(task, None)
    client = client_for(uri, task, start=state.model_calls, options=options)
    grader_client = grader_client_for(grader_model or meta.get("grader_model"), task, options)
    workspace_dir = store.path.parent / "runs" / run_id / "workspace"
    if not workspace_dir.is_dir():
        raise InputError(run_ref, "E500", f"the run's workspace {workspace_dir} is gone")
    orchestrator = Orchestrator(
        task=task,
        client=client,
        store=store,
        run_id=run_id,
        ledger=ledger,
        lifecycle=lifecycle,
        workspace=Workspace(workspace_dir),
        state=state,
        progress=progress,
        grader_client=grader_client,
        # Confinement is decided anew: `--sandbox none` must be said again to resume
        # unconfined.
        sandbox=sandbox_policy(task, sandbox),
    )
    return await run_then_close(orchestrator, resume=True, clients=(client, grader_client))
