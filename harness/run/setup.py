"""From a task file to a ready orchestrator: store, run id, workspace, ledger, lifecycle
and the model client named by a model URI."""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from budgets.ledger import BudgetLedger
from envelopes.declarations import Budget, BudgetKind, State
from envelopes.soul import Soul
from harness.certify.certificate import Certificate
from harness.certify.check import bind_handoff, bind_workspace_copy
from harness.enforce.lifecycle import Lifecycle
from harness.grading.tree import GradingSources, snapshot_folder
from harness.inputs.errors import InputError
from harness.inputs.task_file import Task, locate
from harness.models.clients.options import NO_OPTIONS, ClientOptions
from harness.models.interface import ModelClient
from harness.models.scripted import ScriptedClient, ScriptedTurn
from harness.record.events import EventKind
from harness.record.keys import RecordKeyError, default_key_path
from harness.record.results import RunResult
from harness.record.store import DEFAULT_STORE_PATH, RunStore
from harness.run.orchestrator import Orchestrator, Progress, no_progress
from harness.run.owner import owning
from harness.run.recorded import start_inputs
from harness.soul.file import load_soul
from harness.soul.session import SoulSession
from harness.workspace.folder import Workspace, WorkspaceError
from harness.workspace.sandbox import (
    CONFINED,
    NO_OVERRIDES,
    SandboxOverrides,
    SandboxPolicy,
    sandbox_report,
)

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
            # By each amount's repr: 0.0 and -0.0 (or 1 and 1.0) are equal keys of a dict
            # but not the same record (`-0.0` is what the row would show).
            key = (
                kind,
                repr(section.limit),
                repr(section.used),
                repr(section.reserve_audit),
                repr(section.reserve_summary),
            )
            budget = _BUDGETS.get(key)
            if budget is None:
                if len(_BUDGETS) >= 256:
                    _BUDGETS.clear()
                budget = _BUDGETS[key] = Budget(
                    kind=kind,
                    limit=section.limit,
                    used=section.used,
                    reserve_audit=section.reserve_audit,
                    reserve_summary=section.reserve_summary,
                )
            found.append(budget)
    return found


# Every run of a batch's task starts from the same budgets: each is made (and validated)
# once per distinct kind and amounts, and is frozen, so ledgers may share it.
_BUDGETS: dict[tuple[BudgetKind, str, str, str, str], Budget] = {}


def lifecycle_of(task: Task) -> Lifecycle:
    initial = task.spec.initial
    if initial is None:
        return Lifecycle()
    return Lifecycle(State(initial.state), initial.reason)


def client_for(
    uri: str,
    task: Task,
    *,
    start: int = 0,
    options: ClientOptions = NO_OPTIONS,
    flag: str = "--model",
    script: Sequence[ScriptedTurn] | None = None,
    on_command_line: bool = False,
) -> ModelClient:
    """The client a model URI names (DESIGN §5). `on_command_line`: the URI came from a
    flag, so its paths are relative to the current folder, like every path a person types
    (falling back to the task folder); a URI of the task file is relative to its folder.
    `start`: turns a scripted agent has already spoken (resume). `options`: --base-url
    for the providers, and --record, which wraps whatever client this is in a recorder.
    `flag`: where the URI came from, for the error message. `script`: a scripted
    agent's turns as the run record kept them (resume), instead of its file."""

    def typed(rest: str) -> Path:
        return typed_path(rest, task, flag, uri)

    try:
        return client_from_uri(
            uri,
            typed if on_command_line else lambda rest: task_path(rest, task),
            start=start,
            options=options,
            flag=flag,
            replay=typed,
            script=script,
        )
    except InputError as err:
        agent = task.spec.agent
        if on_command_line or err.path != flag or agent is None or agent.model != uri:
            raise
        # The URI is the task file's `[agent] model`: "--model" sent the person looking
        # for a flag they never typed (an unknown local model, a missing API key).
        raise InputError(
            task.source or task.folder,
            err.code,
            f"agent.model: {err.message}",
            locate(task.text or "", ("agent", "model")),
        ) from None


def client_from_uri(
    uri: str,
    resolve: Callable[[str], Path],
    *,
    start: int = 0,
    options: ClientOptions = NO_OPTIONS,
    flag: str = "--model",
    replay: Callable[[str], Path] | None = None,
    script: Sequence[ScriptedTurn] | None = None,
    script_of: str | None = None,
) -> ModelClient:
    """`client_for` without a task: `resolve` turns a relative path of the URI into a
    file (scripted:, local:PATH.gguf); `replay` finds a recording (default: `resolve`).
    `script_of`: whose a scripted file is, for its messages (default: the agent's, or the
    grader's for `--grader-model`)."""
    scheme, _, rest = uri.partition(":")
    if scheme not in MODEL_SCHEMES or not rest:
        raise InputError(flag, "E303", f"not a model URI: {uri!r} ({', '.join(MODEL_SCHEMES)})")
    client: ModelClient
    # Provider modules are imported here, not at the top: each SDK takes about two
    # seconds to import, which `ilh lint` and scripted runs should not pay.
    if scheme == "scripted" and script is not None:
        client = ScriptedClient(list(script), f"scripted:{Path(rest).name}", start)
    elif scheme == "scripted":
        who = f"the {script_of or ('grader' if flag == '--grader-model' else 'agent')} script"
        client = ScriptedClient.from_file(resolve(rest), start=start, what=who)
    elif scheme == "replay":
        from harness.models.clients.replay import ReplayClient

        client = ReplayClient.from_file((replay or resolve)(rest), start=start)
    elif scheme == "openai":
        from harness.models.clients.openai_client import OpenAIClient

        client = OpenAIClient.from_env(rest, base_url=options.base_url)
    elif scheme == "anthropic":
        from harness.models.clients.anthropic_client import AnthropicClient

        client = AnthropicClient.from_env(rest, base_url=options.base_url)
    else:
        from harness.models.clients.local_client import LocalClient

        client = LocalClient.for_uri(rest, resolve)
    if options.record is not None:
        from harness.models.clients.record import RecordingClient

        client = RecordingClient(client, options.record)
    return client


#: The schemes `--base-url` points at a server (DESIGN §5).
PROVIDERS = ("openai", "anthropic")


def refuse_unused_base_url(
    uris: Sequence[str], grader_model: str | None, options: ClientOptions
) -> None:
    """`--base-url` with no openai:/anthropic: model to use it (the agents' `uris`, the
    grader's): bad usage. It was silently ignored, and the person believed the run went
    to their server."""
    if not options.base_url:
        return
    named = [*uris, *([grader_model] if grader_model else [])]
    if any(uri.partition(":")[0] in PROVIDERS for uri in named):
        return
    raise InputError(
        "--base-url",
        "E303",
        "--base-url points openai: and anthropic: models at a server, and no such model "
        f"runs here ({', '.join(dict.fromkeys(named))}): drop it, or name one (--model "
        "openai:MODEL, --grader-model …)",
    )


def effective_base_url(uri: str, options: ClientOptions) -> str | None:
    """The server a provider model is reached at: --base-url, else the provider's
    environment variable (what the SDK would use), else None (the provider's own). The
    record keeps it, so a resume never silently moves to another endpoint."""
    if options.base_url:
        return options.base_url
    scheme = uri.partition(":")[0]
    if scheme == "openai":
        from harness.models.clients.openai_client import BASE_URL_ENV as OPENAI_URL_ENV

        return os.environ.get(OPENAI_URL_ENV) or None
    if scheme == "anthropic":
        from harness.models.clients.anthropic_client import BASE_URL_ENV as ANTHROPIC_URL_ENV

        return os.environ.get(ANTHROPIC_URL_ENV) or None
    return None


def replay_path(rest: str, task: Task) -> Path:
    """A file named on the command line (a recording, a script): relative to the current
    folder (where `--record` wrote it) when it is there, else to the task's folder."""
    given = Path(rest)
    if given.is_absolute() or given.exists():
        return given
    return task.resolve(rest)


def typed_path(rest: str, task: Task, flag: str, uri: str) -> Path:
    """`replay_path`, and when the file is in neither place, bad input that says where it
    was looked for and how to name it. The read error alone named only the path beside
    the task file: someone who typed `--grader-model scripted:grader.jsonl` in another
    folder was shown a path they never wrote, and not told that the current folder was
    tried first."""
    path = replay_path(rest, task)
    if Path(rest).is_absolute() or os.path.lexists(path):
        return path  # absent absolute paths keep the read error: it names what was typed
    raise InputError(
        flag,
        "E500",
        f"{uri}: no file {rest!r} in the current folder ({Path.cwd()}) nor in the task "
        f"file's folder ({task.folder}); name it from the current folder, or by an "
        "absolute path",
    )


def task_path(rest: str, task: Task) -> Path:
    """A file a task file's model URI names: beside the task file (bad input at
    `agent.model`'s line when it is not there)."""
    return task.file_beside(rest, ("agent", "model"), "file")


async def close_client(client: ModelClient) -> None:
    """Release a client's connections (SDK clients hold an httpx pool)."""
    closer = getattr(client, "aclose", None)
    if closer is not None:
        await closer()


DEFAULT_MODEL = "local:smollm2"
"""The model when neither --model nor [agent].model names one: offline, no key needed
(it needs the `local` extra, and says so when it is missing)."""


def _no_agent_model(task: Task) -> bool:
    return task.spec.agent is None or task.spec.agent.model is None


def model_uri(task: Task, override: str | None) -> str:
    """`--model`, else the task's `[agent] model`. Neither is bad input: silently running
    some default model would spend a budget on an agent nobody chose."""
    if override:
        return override
    if task.spec.agent is None or task.spec.agent.model is None:
        raise InputError(
            task.source or task.folder,
            "E303",
            "no model: the task file has no [agent] model and no --model was given "
            '(add [agent] model = "scripted:agent.jsonl", or pass --model openai:…, '
            f"anthropic:…, {DEFAULT_MODEL}, …)",
        )
    return task.spec.agent.model


def workspace_for(store: RunStore, run_id: str, task: Task) -> Workspace:
    target = store.path.parent / "runs" / run_id / "workspace"
    try:
        return Workspace.create(target, task.workspace_template())
    except WorkspaceError as err:
        raise InputError(task.source or task.folder, "E500", f"workspace: {err}") from None


def _run_folders(store: RunStore, run_id: str, task: Task) -> tuple[Workspace, GradingSources]:
    return workspace_for(store, run_id, task), grading_sources(store, run_id, task)


def grading_sources(store: RunStore, run_id: str, task: Task) -> GradingSources:
    """The grader's snapshots of the template and of the hidden checks, in the run's
    folder (outside every sandbox), taken once when the run starts: the grader never
    reads the task folder again, so nothing that reaches it later can change what the
    work is graded by. A resumed run finds them there (one recorded before snapshots
    existed gets them now)."""
    base = store.path.parent / "runs" / run_id / "grading"
    found: dict[str, Path | None] = {}
    for name, source in (("template", task.workspace_template()), ("checks", task.checks_folder())):
        target = base / name
        if source is None:
            found[name] = None
        elif target.is_dir():
            found[name] = target
        else:
            try:
                found[name] = snapshot_folder(source, target)
            except WorkspaceError as err:
                raise InputError(task.source or task.folder, "E500", f"{name}: {err}") from None
    return GradingSources(template=found["template"], checks=found["checks"])


@dataclass(frozen=True)
class Prepared:
    """What a run of a task needs that can be refused: checked, and its clients built,
    before the store is opened (`prepare`). A refused `--model` (an unknown scheme, a
    missing key), handoff, SOUL or template left an empty `.ilh/runs.db` behind in
    whatever folder the command was typed."""

    uri: str
    client: ModelClient
    grader_client: ModelClient | None
    soul_path: Path | None
    soul: Soul | None
    policy: SandboxPolicy
    #: The `[handoff]` checked, when the task has one.
    handoff: Handoff | None = None


def prepare(
    task: Task,
    store_path: Path,
    *,
    model: str | None = None,
    grader_model: str | None = None,
    options: ClientOptions = NO_OPTIONS,
    client: ModelClient | None = None,
    grader_client: ModelClient | None = None,
    sandbox: SandboxOverrides = NO_OVERRIDES,
) -> Prepared:
    """Everything about a run of `task` that is bad input, checked with no store open
    (`store_path`: where the store is, or will be). `client`: one already built from the
    model URI (several tasks are set up before any runs, so a bad URI or a missing key
    stops them all at once); `grader_client` likewise for the grader model."""
    handoff = check_handoff(task)
    check_store_outside(task, store_path)
    soul_path = soul_of_task(task, store_path)
    soul = load_soul(soul_path) if soul_path is not None else None
    # A client handed in (tests, the Python API) names its own model.
    given = model or (client.name if client is not None and _no_agent_model(task) else None)
    uri = model_uri(task, given)
    if client is None:  # a batch checked its models together, and made the clients
        refuse_unused_base_url([uri], grader_model, options)
        client = client_for(uri, task, options=options, on_command_line=model is not None)
    if grader_client is None:
        grader_client = grader_client_for(grader_model, task, options)
    policy = sandbox_policy(task, sandbox, store_path)
    task.checks_folder()  # a missing or misplaced hidden checks folder: bad input, before any run
    task.workspace_template()  # likewise the template: nothing made for a task refused
    return Prepared(uri, client, grader_client, soul_path, soul, policy, handoff)


async def run_task(
    task: Task,
    store: RunStore,
    *,
    model: str | None = None,
    resume: bool = False,
    progress: Progress = no_progress,
    grader_model: str | None = None,
    options: ClientOptions = NO_OPTIONS,
    client: ModelClient | None = None,
    grader_client: ModelClient | None = None,
    sandbox: SandboxOverrides = NO_OVERRIDES,
    soul_readonly: bool = False,
    prepared: Prepared | None = None,
) -> RunResult:
    """Run one task. `client`, `grader_client`: as `prepare`'s; `prepared`: what
    `prepare` made of this task before the store was opened (then `client`,
    `grader_client` and `sandbox` are its). `soul_readonly`: the run's GENEs go to the
    SOUL's pending file, for the principal to review (`ilh soul review`)."""
    if prepared is None:
        prepared = prepare(
            task,
            store.path,
            model=model,
            grader_model=grader_model,
            options=options,
            client=client,
            grader_client=grader_client,
            sandbox=sandbox,
        )
    else:
        # Prepared earlier (a batch prepares every task before the first runs): what the
        # handoff binds may have changed since; checked again before the run is recorded.
        try:
            prepared = replace(prepared, handoff=check_handoff(task))
        except InputError:
            await _close_all(prepared)
            raise
    uri, client, grader_client = prepared.uri, prepared.client, prepared.grader_client
    soul_path, soul, policy = prepared.soul_path, prepared.soul, prepared.policy
    lifecycle = lifecycle_of(task)
    ledger = BudgetLedger(budgets_of(task))
    inputs = start_inputs(task, client)
    run_id = store.create_run(
        task.id,
        {
            "task_file": str(task.source) if task.source else None,
            "task_sha256": inputs["task"]["sha256"],
            # The endpoint as a resume must reuse it (harness.run.recorded).
            "model": uri,
            "base_url": effective_base_url(uri, options),
            "grader_model": grader_model,
            "sandbox": sandbox_report(policy),
            "soul": str(soul_path) if soul_path is not None else None,
            "soul_readonly": soul_readonly,
        },
        inputs=inputs,
        wait=False,
    )
    # Held from the first moment: a `--resume` of this run from another process while
    # it goes on would run a second agent in its workspace (`harness.run.owner`).
    with owning(store, run_id):
        # Off the event loop: two folders made (a system call each, a third of a
        # millisecond on a journaled disk) and the template and checks copied, while the
        # other tasks of a batch go on.
        workspace, grading = await asyncio.to_thread(_run_folders, store, run_id, task)
        try:
            await asyncio.to_thread(check_workspace_copy, task, prepared.handoff, workspace.root)
        except InputError:
            await _close_all(prepared)
            raise
        # Not waited for: the orchestrator's first commit follows it (one writer, in order),
        # and a failure here fails that one too. A task that starts `created` has no history
        # yet: nothing to hand the writer (an empty write would still read and check the head).
        started = [
            store.stage(EventKind.STATE_CHANGE, entry.model_dump(mode="json"))
            for entry in lifecycle.history
        ]
        if started:
            store.commit_later(run_id, started)
        orchestrator = Orchestrator(
            task=task,
            client=client,
            store=store,
            run_id=run_id,
            ledger=ledger,
            lifecycle=lifecycle,
            workspace=workspace,
            progress=progress,
            grader_client=grader_client,
            sandbox=policy,
            grading=grading,
            soul=None
            if soul_path is None or soul is None
            else SoulSession(soul_path, soul, run_id, readonly=soul_readonly),
        )
        if prepared.handoff is not None:
            orchestrator.state.notes.append(prepared.handoff.note)
        return await run_then_close(orchestrator, resume=resume, clients=(client, grader_client))


def check_store_outside(task: Task, store_path: Path) -> None:
    """Refuse (bad input, before any run) a run store inside the workspace template or
    the hidden checks: each run's folders are made beside the store, so the next run's
    workspace, a copy of the template, held the earlier runs' records, workspaces and
    hidden checks (`.ilh/runs/RUN/grading/checks`), and the store itself. It happened
    with the default store (`.ilh/runs.db`, in the current folder) and `cd workspace`."""
    home = store_path.parent.resolve()
    for name, folder in (
        ("the workspace template", task.workspace_template()),
        ("the hidden checks folder", task.checks_folder()),
    ):
        if folder is not None and (home == folder or folder in home.parents):
            raise InputError(
                task.source or task.folder,
                "E303",
                f"the run store {str(store_path)!r} is inside {name} {str(folder)!r}: every "
                "run's record, workspace and hidden checks would be copied to the agent; put "
                "the store outside the task's folders (--store PATH, or run ilh elsewhere)",
            )


def soul_of_task(task: Task, store_path: Path) -> Path | None:
    """The task's SOUL file, refused (bad input) where an agent could write it: inside
    the workspace template (`Task.soul_path`) or the run folders of the store at
    `store_path`, where every run's workspace lives."""
    path = task.soul_path()
    if path is None:
        return None
    runs = (store_path.parent / "runs").resolve()
    if path == runs or runs in path.parents:
        raise InputError(
            task.source or task.folder,
            "E303",
            f"agent.soul {str(path)!r} is inside the run folders {str(runs)!r}, where the "
            "agents' workspaces are: keep the SOUL outside every workspace",
        )
    return path


@dataclass(frozen=True)
class Handoff:
    """A `[handoff]` as checked: the note the run shows, and the certificate read once."""

    note: str
    certificate: Certificate
    path: Path


def check_handoff(task: Task) -> Handoff | None:
    """`[handoff]`: refuse (bad input, before any model call) a handoff whose objective or
    file is not the record its certificate certifies, or whose certificate was issued
    under less rigor than `[handoff] realization` demands. Returns the note the run shows:
    the realization the dispatched handoff was certified under (a lint-fallback label
    claims a lint's rigor, never a refuter's, DIYLISIS Rule 9)."""
    section = task.spec.handoff
    if section is None:
        return None
    path = task.file_beside(section.certificate, ("handoff", "certificate"), "certificate")
    cert = bind_handoff(
        path,
        objective=task.spec.task.objective,
        file=None
        if section.file is None
        else task.file_beside(section.file, ("handoff", "file"), "file"),
        where=str(task.source or task.folder),
        realization=section.realization,
    )
    realization = cert.verdict.realization if cert.verdict is not None else "no verdict"
    rigor = " (a lint's rigor: no refuter ran)" if realization == "lint-fallback" else ""
    return Handoff(
        f"handoff: dispatched as certified by {section.certificate} under {realization}{rigor}",
        cert,
        path,
    )


async def _close_all(prepared: Prepared) -> None:
    """The run's clients, when it is refused before `run_then_close` would close them."""
    for client in (prepared.client, prepared.grader_client):
        if client is not None:
            await close_client(client)


def check_workspace_copy(task: Task, handoff: Handoff | None, copy: Path) -> None:
    """`[handoff]`: the agent's workspace, as copied, is the certified template
    (`harness.certify.check.bind_workspace_copy`), when the template is a granted source."""
    template = task.workspace_template()
    if handoff is None or template is None:
        return
    bind_workspace_copy(
        handoff.certificate,
        handoff.path,
        template,
        copy,
        where=str(task.source or task.folder),
    )


def sandbox_policy(
    task: Task, overrides: SandboxOverrides = NO_OVERRIDES, store_path: Path | None = None
) -> SandboxPolicy:
    """The task file's `[sandbox]` (limits, network), then the command line's overrides.
    Only the command line can turn confinement off (`--sandbox none`). The task folder,
    the store's folder and the record key's are hidden from every command, even where
    they lie beneath a folder the sandbox shows (`/usr/src/app`)."""
    section = task.spec.sandbox
    policy = CONFINED if section is None else SandboxPolicy(**section.model_dump(exclude_none=True))
    hidden = [task.folder, *([store_path.parent] if store_path is not None else [])]
    with contextlib.suppress(RecordKeyError):
        hidden.append(default_key_path().parent)
    resolved = tuple(sorted({str(p.resolve()) for p in hidden}))
    return overrides.apply(policy).model_copy(update={"hidden": resolved})


def grader_client_for(
    grader_model: str | None, task: Task, options: ClientOptions
) -> ModelClient | None:
    """The grader model (`--grader-model`): without one, only tool checks can verify. It
    shares --base-url but is never recorded: --record holds the agent's calls only."""
    if not grader_model:
        return None
    return client_for(
        grader_model,
        task,
        options=ClientOptions(base_url=options.base_url),
        flag="--grader-model",
        on_command_line=True,
    )


async def run_then_close(
    orchestrator: Orchestrator, *, resume: bool, clients: Sequence[ModelClient | None]
) -> RunResult:
    try:
        return await orchestrator.run(resume=resume)
    finally:
        for client in clients:
            if client is not None:
                await close_client(client)


def default_store(path: Path | None, *, create: bool = True) -> RunStore:
    return RunStore(path or DEFAULT_STORE_PATH, create=create)
