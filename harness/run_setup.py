"""From a task file to a ready orchestrator: store, run id, workspace, ledger, lifecycle
and the model client named by a model URI."""

from __future__ import annotations

from pathlib import Path

from budgets.ledger import BudgetLedger
from envelopes.declarations import Budget, BudgetKind, State
from harness.events import EventKind
from harness.input_errors import InputError
from harness.lifecycle import Lifecycle
from harness.model import ModelClient
from harness.orchestrator import Orchestrator, Progress, no_progress
from harness.run_result import RunResult
from harness.scripted import ScriptedClient
from harness.store import RunStore
from harness.task import Task
from harness.workspace import Workspace, WorkspaceError

MODEL_SCHEMES = ("anthropic", "openai", "local", "scripted", "replay")


def budgets_of(task: Task) -> list[Budget]:
    spec = task.spec.budget
    found: list[Budget] = []
    for kind, section in (
        (BudgetKind.ROUNDS, spec.rounds),
        (BudgetKind.TOKENS, spec.tokens),
        (BudgetKind.TIME, spec.time),
    ):
        if section is not None:
            found.append(
                Budget(
                    kind=kind,
                    limit=section.limit,
                    used=section.used,
                    reserve_audit=section.reserve_audit,
                    reserve_summary=section.reserve_summary,
                )
            )
    return found


def lifecycle_of(task: Task) -> Lifecycle:
    initial = task.spec.initial
    if initial is None:
        return Lifecycle()
    return Lifecycle(State(initial.state), initial.reason)


def client_for(uri: str, task: Task, *, start: int = 0) -> ModelClient:
    scheme, _, rest = uri.partition(":")
    if scheme not in MODEL_SCHEMES or not rest:
        raise InputError(
            "--model", "E303", f"not a model URI: {uri!r} ({', '.join(MODEL_SCHEMES)})"
        )
    if scheme == "scripted":
        path = task.resolve(rest)
        client = ScriptedClient.from_file(path, start=start)
        return client
    raise InputError("--model", "E500", f"{scheme}: model clients are not available in this build")


def model_uri(task: Task, override: str | None) -> str:
    if override:
        return override
    if task.spec.agent is None:
        raise InputError(
            task.source or task.folder, "E303", "[agent].model is missing and no --model was given"
        )
    return task.spec.agent.model


def workspace_for(store: RunStore, run_id: str, task: Task) -> Workspace:
    target = store.path.parent / "runs" / run_id / "workspace"
    try:
        return Workspace.create(target, task.workspace_template())
    except WorkspaceError as err:
        raise InputError(task.source or task.folder, "E500", f"workspace: {err}") from None


async def run_task(
    task: Task,
    store: RunStore,
    *,
    model: str | None = None,
    resume: bool = False,
    progress: Progress = no_progress,
) -> RunResult:
    uri = model_uri(task, model)
    client = client_for(uri, task)
    lifecycle = lifecycle_of(task)
    ledger = BudgetLedger(budgets_of(task))
    run_id = store.create_run(
        task.id, {"task_file": str(task.source) if task.source else None, "model": uri}
    )
    workspace = workspace_for(store, run_id, task)
    for entry in lifecycle.history:
        store.append(run_id, EventKind.STATE_CHANGE, entry.model_dump(mode="json"))
    orchestrator = Orchestrator(
        task=task,
        client=client,
        store=store,
        run_id=run_id,
        ledger=ledger,
        lifecycle=lifecycle,
        workspace=workspace,
        progress=progress,
    )
    return await orchestrator.run(resume=resume)


def default_store(path: Path | None) -> RunStore:
    return RunStore(path or Path(".ilh") / "runs.db")
