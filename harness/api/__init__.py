"""The Python API: what `ilh run`, `ilh grade`, `ilh certify` and `ilh lint` do, as typed
functions that return the result instead of printing it.

    from harness.api import run_task, grade, certify, lint

    result = run_task("examples/honest/task.toml")          # RunResult
    report = grade("examples/grade_true/task.toml", "examples/grade_true/workspace")
    cert = certify("handoff.md", role="implementer", sources=["project"])
    findings = lint("[READ:@FILE|path=a.txt]")              # list of Finding

Each has an async twin (`run_task_async`, `grade_async`, `certify_async`) for callers
that already run an event loop. Bad input raises `harness.inputs.errors.InputError` (with
its location and code), exactly what the CLI reports with exit 2.

Nothing is written to stdout: unless the caller configured structlog, the harness's log
lines go to stderr at WARNING and above (the CLI's default; ILH_LOG=info|debug shows
more), never to the caller's output. Either way the harness's secrets are redacted from
every log line (a caller's own structlog set-up gets `redact_secrets` before its
renderer). Paths are relative to the current folder; a model URI's file (`scripted:`,
`replay:`) too, as on the command line.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable, Coroutine, Sequence
from pathlib import Path
from typing import Any, ParamSpec, TypeVar

from envelopes.declarations.gene import ERROR_CLASSES
from envelopes.errors import Finding
from envelopes.lint import lint_text
from graders.report import GradeReport
from harness.certify.certificate import Certificate
from harness.certify.contract import NO_ANSWERS, Flags, declare, load_answers
from harness.certify.gate import NoGate
from harness.certify.lexicon import load_lexicon
from harness.certify.loop import Certifier, Request
from harness.certify.refuter import RefuterBudget
from harness.inputs.errors import InputError
from harness.inputs.task_file import load_task
from harness.models.clients.options import ClientOptions
from harness.models.interface import ModelClient
from harness.record.database import StoreError, UnknownRun
from harness.record.results import RunResult
from harness.record.store import DEFAULT_STORE_PATH, RunStore
from harness.run.grade_job import grade_task
from harness.run.owner import owning_recorded
from harness.run.setup import client_from_uri, close_client, prepare
from harness.run.setup import run_task as _run_task
from harness.secrets.logs import library_logging
from harness.soul.correct import Corrected, correct_run
from harness.soul.file import Persisted
from harness.soul.sync import sync_run
from harness.workspace.sandbox import NO_OVERRIDES, SandboxOverrides

__all__ = [
    "Certificate",
    "Finding",
    "GradeReport",
    "RunResult",
    "SandboxOverrides",
    "certify",
    "certify_async",
    "correct",
    "grade",
    "grade_async",
    "lint",
    "run_task",
    "run_task_async",
    "soul_sync",
]

PathLike = str | Path
P = ParamSpec("P")
R = TypeVar("R")


def quiet_logging() -> None:
    """The command line's log set-up (stderr, WARNING and above or ILH_LOG, secrets
    redacted) unless the caller configured structlog; then the caller's, with the
    harness's secrets redacted (`harness.secrets.logs.library_logging`)."""
    library_logging()


def _store(store: PathLike | None) -> RunStore:
    """The run store; one that cannot be opened (a folder, an unwritable place, not a
    database) is bad input, as `--store` is on the command line (E500 at its path)."""
    path = Path(store) if store is not None else DEFAULT_STORE_PATH
    try:
        return RunStore(path)
    except StoreError as err:
        raise InputError(path, "E500", str(err)) from None


async def run_task_async(
    task: PathLike,
    *,
    model: str | None = None,
    store: PathLike | None = None,
    grader_model: str | None = None,
    base_url: str | None = None,
    sandbox: SandboxOverrides = NO_OVERRIDES,
    soul_readonly: bool = False,
) -> RunResult:
    """`ilh run TASK`: the run's result (DESIGN §6), recorded in `store` (default
    `.ilh/runs.db`). `model` overrides the task's `[agent] model`; `soul_readonly`: the
    run's GENEs go to the SOUL's pending file (`ilh run --soul-readonly`)."""
    quiet_logging()
    loaded = load_task(Path(task))
    options = ClientOptions(base_url=base_url)
    # Checked before the store is opened: a refused model, handoff or template leaves
    # no store behind.
    prepared = prepare(
        loaded,
        Path(store) if store is not None else DEFAULT_STORE_PATH,
        model=model,
        grader_model=grader_model,
        options=options,
        sandbox=sandbox,
    )
    try:
        opened = _store(store)
    except InputError:
        # The run never starts: the clients it made are released here (the run closes
        # them when it ends).
        for client in (prepared.client, prepared.grader_client):
            if client is not None:
                await close_client(client)
        raise
    with opened as runs:
        return await _run_task(
            loaded,
            runs,
            model=model,
            grader_model=grader_model,
            options=options,
            soul_readonly=soul_readonly,
            prepared=prepared,
        )


async def grade_async(
    task: PathLike,
    workspace: PathLike,
    *,
    claim: PathLike | None = None,
    grader_model: str | None = None,
    baseline: PathLike | None = None,
    sandbox: SandboxOverrides = NO_OVERRIDES,
) -> GradeReport:
    """`ilh grade TASK --workspace DIR`: the grader's report (`report.design_json()` is
    DESIGN §6's object; `report.verdict` is `verified_complete` or `needs_revision`)."""
    quiet_logging()
    report, _, _ = await grade_task(
        Path(task),
        Path(workspace),
        Path(claim) if claim is not None else None,
        grader_model,
        Path(baseline) if baseline is not None else None,
        sandbox,
    )
    return report


async def certify_async(
    target: str,
    *,
    role: str,
    sources: Sequence[str] = (),
    verify: Sequence[str] = (),
    scope: str | None = None,
    stop: str | None = None,
    activity: str | None = None,
    utterance: Sequence[str] = (),
    model: str | None = None,
    answers: PathLike | None = None,
    apply: bool = False,
    store: PathLike | None = None,
    refuter_budget: RefuterBudget | None = None,
) -> Certificate:
    """`ilh certify TARGET --role ROLE --non-interactive`: the Certificate (its
    `certified` says the outcome). Without `model` the realization is lint-fallback."""
    quiet_logging()
    cwd = Path.cwd()
    flags = Flags(
        target=target,
        role=role,
        activity=activity,
        sources=tuple(sources),
        verify=tuple(verify),
        scope=scope,
        stop=stop,
        utterance=tuple(utterance),
    )
    given, contract = declare(flags, None, cwd)
    client: ModelClient | None = None
    if model:
        client = client_from_uri(model, lambda rest: (cwd / rest).resolve())
    try:
        with _store(store) as runs:
            request = Request(
                target=given,
                contract=contract,
                cwd=cwd,
                lexicon=load_lexicon(),
                gate=NoGate(),
                answers=load_answers(Path(answers)) if answers is not None else NO_ANSWERS,
                apply=apply,
                client=client,
                model_uri=model,
                budget=refuter_budget or RefuterBudget(),
                store=runs,
            )
            return await Certifier(request).run()
    finally:
        if client is not None:
            await close_client(client)


def _blocking(function: Callable[P, Coroutine[Any, Any, R]]) -> Callable[P, R]:
    """The async function for callers without an event loop: same signature, same types."""

    @functools.wraps(function)
    def blocking(*args: P.args, **kwargs: P.kwargs) -> R:
        return asyncio.run(function(*args, **kwargs))

    return blocking


run_task = _blocking(run_task_async)
grade = _blocking(grade_async)
certify = _blocking(certify_async)


def correct(
    run: str, error_class: str, text: str, *, gene: str | None = None, store: PathLike | None = None
) -> Corrected:
    """`ilh correct RUN --class CLASS --text TEXT [--gene NAME]`: the step it was (added,
    promoted, terminated, principal_rule_error) and where it was written."""
    if error_class not in ERROR_CLASSES:
        raise InputError("--class", "E303", f"not an error class: {error_class!r}")
    with _store(store) as runs:
        try:
            with owning_recorded(runs, run):  # not while `ilh run` carries it on
                return correct_run(runs, run, error_class, text, gene)
        except UnknownRun as err:
            raise InputError(run, "E500", str(err)) from None


def soul_sync(run: str, *, store: PathLike | None = None) -> Persisted:
    """`ilh soul sync RUN`: persist a recorded run's GENEs to its SOUL (after a kill)."""
    with _store(store) as runs:
        try:
            with owning_recorded(runs, run):  # not while `ilh run` carries it on
                return sync_run(runs, run)[1]
        except UnknownRun as err:
            raise InputError(run, "E500", str(err)) from None


def lint(text: str, name: str = "<text>") -> list[Finding]:
    """`ilh lint`: the diagnostics of iLang `text` (each with line, col, code, severity)."""
    return lint_text(text, name)
