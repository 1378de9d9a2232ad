"""`ilh run --resume RUN`: continue a recorded run from its last committed state.

Everything is rebuilt from the run record, and nothing in it is trusted unchecked: the
record must verify (hash chain, head and the head's MAC), and the status history must
replay lawfully through the §4 machine (`Lifecycle.restore`). The task, a scripted
agent's turns and the model endpoint are the ones recorded when the run started
(`harness.run.recorded`): files on disk are never re-read, flags change the endpoint only
when given again, and every difference is a note.

Time after a kill errs high: a run cut inside a model call, a command or a grading is
charged that call's whole allowance, on top of the time up to its last event.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from budgets.ledger import BudgetLedger, Pool
from envelopes.declarations import Budget
from harness.context.agent import Segment, tool_result_segment
from harness.enforce.lifecycle import IllegalTransition, Lifecycle, StatusEntry
from harness.enforce.provenance import Provenance
from harness.enforce.transitions import TERMINAL
from harness.inputs.errors import InputError
from harness.inputs.task_file import Task
from harness.models.clients.options import NO_OPTIONS, ClientOptions
from harness.record.events import Event, EventKind
from harness.record.results import ProposalRow, RunResult, ViolationRow
from harness.record.store import RunStore
from harness.run.orchestrator import Orchestrator, Progress, RunState, no_progress
from harness.run.owner import owning
from harness.run.recorded import (
    ENDPOINT_NOTE,
    chosen_endpoint,
    rebuilt_script,
    rebuilt_task,
    recorded_endpoint,
)
from harness.run.setup import (
    budgets_of,
    check_handoff,
    client_for,
    grader_client_for,
    grading_sources,
    model_uri,
    run_then_close,
    sandbox_policy,
)
from harness.soul.file import load_soul, persist
from harness.soul.session import SoulSession
from harness.soul.sync import observations_of, persisted_payload, soul_of, verified_events
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


#: The NOTE payload key a resume writes: the ledger as rebuilt (budget rows, a new base
#: for the next resume, so the time the run lay dead is never charged), the endpoint used
#: and the notes.
RESUMED_NOTE = "resumed"


def _budget_rows(event: Event) -> list[dict[str, Any]] | None:
    """The budget rows an event carries: a snapshot's, a resume's, or the budgets of a
    run's result."""
    if event.kind is EventKind.BUDGET_SNAPSHOT:
        rows = event.payload.get("budgets")
    elif event.kind is EventKind.NOTE and isinstance(event.payload.get(RESUMED_NOTE), dict):
        rows = event.payload[RESUMED_NOTE].get("budgets")
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


def open_allowance(events: list[Event]) -> Event | None:
    """The allowance the record ends inside: the last `allowance` event when nothing but
    model attempts (retries of that very call) follow it. The process died during that
    call, command or grading, at a moment the record cannot tell."""
    for event in reversed(events):
        if event.kind is EventKind.ALLOWANCE:
            return event
        if event.kind is not EventKind.MODEL_ATTEMPT:
            return None
    return None


def _allowed_seconds(event: Event) -> float:
    allowed = event.payload.get("allowed_s")
    if isinstance(allowed, bool) or not isinstance(allowed, int | float):
        return 0.0
    return float(allowed) if allowed > 0 and allowed != float("inf") else 0.0


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
    closed: start from the latest rows (a snapshot, a resume's, or the result of a run
    that ended), then charge every model call, failed call and grading recorded after
    them, the wall time between those rows and the last event, and, when the record ends
    inside an allowance (killed during a model call, a command or a grading), all of it.
    """
    base_at = next(
        (i for i in range(len(events) - 1, -1, -1) if _budget_rows(events[i]) is not None), None
    )
    if base_at is None:
        ledger = BudgetLedger(budgets_of(task))
        after = events[1:]
        if after:  # nothing was snapshotted yet: the time since the run started
            ledger.charge_time(_seconds_between(events[0], after[-1]))
    else:
        base = events[base_at]
        ledger = BudgetLedger(recorded_budgets(task, _budget_rows(base) or []))
        after = events[base_at + 1 :]
        if after:
            ledger.charge_time(_seconds_between(base, after[-1]))
    cut = open_allowance(after)
    if cut is not None:
        pool = Pool.AUDIT if cut.payload.get("for") == "grading" else Pool.WORK
        ledger.charge_time(_allowed_seconds(cut), pool=pool)
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
    """`model`, `options.base_url` and `grader_model` change the recorded endpoint only
    when given (each change is a note); otherwise the run goes on against the model,
    server and grader it was started with. Refused while another process carries the
    run on (`harness.run.owner`): its record is read only once this one holds it."""
    with owning(store, store.resolve_run_id(run_ref), run_ref):
        return await _resume_held(
            store,
            run_ref,
            model=model,
            progress=progress,
            options=options,
            grader_model=grader_model,
            sandbox=sandbox,
        )


async def _resume_held(
    store: RunStore,
    run_ref: str,
    *,
    model: str | None,
    progress: Progress,
    options: ClientOptions,
    grader_model: str | None,
    sandbox: SandboxOverrides,
) -> RunResult:
    run_id, events = verified_events(store, run_ref, "not resumed")
    started = events[0].payload
    meta = started.get("meta", {})
    if isinstance(meta, dict) and meta.get("kind") == "certify":
        # A certification is a run of the store too, with no task to continue.
        raise InputError(
            run_ref,
            "E303",
            "this run is a certification (`ilh certify`), not an agent run: there is nothing "
            "to resume; certify again, or see it with `ilh runs show`",
        )
    inputs = started.get("inputs")
    rebuilt = rebuilt_task(run_ref, inputs if isinstance(inputs, dict) else {})
    task = rebuilt.task
    handoff = check_handoff(task)
    entries = [
        StatusEntry.model_validate(e.payload) for e in events if e.kind is EventKind.STATE_CHANGE
    ]
    try:
        lifecycle = Lifecycle.restore(entries)
    except IllegalTransition as err:
        raise InputError(
            run_ref, "E303", f"the recorded history is not lawful; not resumed: {err}"
        ) from None
    if lifecycle.state in TERMINAL:
        # A finished run has nothing to continue: its recorded result is the answer, and
        # the record gets no second run_ended.
        ended = next((e for e in reversed(events) if e.kind is EventKind.RUN_ENDED), None)
        if ended is not None and isinstance(ended.payload.get("result"), dict):
            result = RunResult.model_validate(ended.payload["result"])
            note = f"the run is {lifecycle.state}: nothing to resume (its recorded result)"
            return result.model_copy(update={"notes": [*result.notes, note]})
    # The recorded model first: the task file may name none (the run was given --model).
    agent = task.spec.agent
    fallback = agent.model if agent is not None and agent.model else (model or "")
    recorded = recorded_endpoint(meta, events, fallback)
    if not recorded.model:
        model_uri(task, model)  # neither recorded nor given: the "no model" bad input
    endpoint, changes = chosen_endpoint(recorded, model, options.base_url, grader_model)
    script = (
        rebuilt_script(run_ref, inputs if isinstance(inputs, dict) else {}, task, endpoint.model)
        if endpoint.model == recorded.model
        else None
    )
    notes = [*rebuilt.notes, *(script.notes if script else []), *changes]
    state = replayed_state(events)
    answer_interrupted_calls(state.history)
    state.notes.append(f"resumed from the record at round {state.round}")
    state.notes += notes
    ledger = resumed_ledger(task, events)
    chosen = options.model_copy(update={"base_url": endpoint.base_url})
    client = client_for(
        endpoint.model,
        task,
        # Every recorded call an earlier process consumed, failed ones included (a replay
        # must not serve the failure that stopped the run again).
        start=state.model_calls
        + sum(
            1
            for e in events
            if e.kind is EventKind.NOTE and isinstance(e.payload.get("model_error"), dict)
        ),
        options=chosen,
        script=script.script if script else None,
    )
    grader_client = grader_client_for(endpoint.grader_model, task, chosen)
    workspace_dir = store.path.parent / "runs" / run_id / "workspace"
    if not workspace_dir.is_dir():
        raise InputError(run_ref, "E500", f"the run's workspace {workspace_dir} is gone")
    resumed = {
        RESUMED_NOTE: {"budgets": ledger.rows_json(state.round), "notes": notes},
        ENDPOINT_NOTE: endpoint.record(),
    }
    store.append(run_id, EventKind.NOTE, resumed, round=state.round)
    progress(str(EventKind.NOTE), resumed)
    soul = resumed_soul(store, run_id, events, state.round)
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
        sandbox=sandbox_policy(task, sandbox, store.path),
        grading=grading_sources(store, run_id, task),
        soul=soul,
    )
    if handoff is not None:
        orchestrator.state.notes.append(handoff.note)
    return await run_then_close(orchestrator, resume=True, clients=(client, grader_client))


def resumed_soul(
    store: RunStore, run_id: str, events: list[Event], round: int
) -> SoulSession | None:
    """After a kill, the GENEs the record holds are persisted first (as `ilh soul sync`
    does), then the run goes on under the SOUL as it is now on disk (other runs of the
    agent may have added GENEs), its step numbers continuing the record's."""
    path, readonly = soul_of(events)
    if path is None:
        return None
    observed = observations_of(events)
    if observed:
        done = persist(path, observed, readonly=readonly)
        store.append(run_id, EventKind.GENE, persisted_payload(path, done, "resume"), round=round)
    session = SoulSession(path, load_soul(path), run_id, readonly=readonly, observations=observed)
    session.persisted_steps = len(observed)
    return session
