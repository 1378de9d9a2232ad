"""`ilh run TASK… --concurrency N`: several tasks at once, each with its own budgets,
workspace and run record.

Every task file is read and every model client built before any task runs, so a bad
file, an unknown model URI or a missing key stops the whole batch with one message
(exit 2) instead of half-way through. Tasks then run on one event loop, at most N at a
time; model calls are async (httpx2), so N tasks waiting on a provider wait together.
The results come back in the order the tasks were given.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import TypeVar

from harness.inputs.errors import InputError, InputErrors
from harness.inputs.task_file import Task, load_task
from harness.models.clients.options import NO_OPTIONS, ClientOptions
from harness.record.results import RunResult
from harness.record.store import RunStore
from harness.run.orchestrator import Progress, no_progress
from harness.run.setup import (
    Prepared,
    check_handoff,
    client_for,
    close_client,
    model_uri,
    prepare,
    refuse_unused_base_url,
    run_task,
)
from harness.workspace.sandbox import NO_OVERRIDES, SandboxOverrides

T = TypeVar("T")


async def gather_limited(jobs: Sequence[Callable[[], Awaitable[T]]], concurrency: int) -> list[T]:
    """Run `jobs` with at most `concurrency` at a time; results in job order. Every job
    runs to its end even when another fails; then the first failure is raised."""
    if concurrency < 1:
        raise ValueError("concurrency must be at least 1")
    gate = asyncio.Semaphore(concurrency)

    async def one(job: Callable[[], Awaitable[T]]) -> T:
        async with gate:
            return await job()

    outcomes = await asyncio.gather(*(one(job) for job in jobs), return_exceptions=True)
    results: list[T] = []
    for outcome in outcomes:
        if isinstance(outcome, BaseException):
            raise outcome
        results.append(outcome)
    return results


async def prepare_tasks(
    task_files: Sequence[Path],
    store_path: Path,
    *,
    model: str | None = None,
    options: ClientOptions = NO_OPTIONS,
    grader_model: str | None = None,
    sandbox: SandboxOverrides = NO_OVERRIDES,
) -> list[tuple[Task, Prepared]]:
    """Every task read and checked, every client built (`harness.run.setup.prepare`),
    with no store open: a refused batch leaves nothing behind. `store_path`: where the
    store is, or will be."""
    tasks = []
    problems: list[InputError] = []
    for path in task_files:
        try:
            task = load_task(path)
            check_handoff(task)  # a refused handoff stops the batch before any model call
            tasks.append(task)
        except InputError as bad:
            problems.append(bad)
    if problems:
        raise problems[0] if len(problems) == 1 else InputErrors(problems)
    refuse_unused_base_url([model_uri(task, model) for task in tasks], grader_model, options)
    clients = []
    try:
        for task in tasks:
            clients.append(
                client_for(
                    model_uri(task, model), task, options=options, on_command_line=model is not None
                )
            )
        return [
            (
                task,
                prepare(
                    task,
                    store_path,
                    model=model,
                    grader_model=grader_model,
                    options=options,
                    client=client,
                    sandbox=sandbox,
                ),
            )
            for task, client in zip(tasks, clients, strict=True)
        ]
    except BaseException:
        for client in clients:
            await close_client(client)
        raise


async def run_tasks(
    task_files: Sequence[Path],
    store: RunStore,
    *,
    concurrency: int,
    model: str | None = None,
    resume: bool = False,
    options: ClientOptions = NO_OPTIONS,
    grader_model: str | None = None,
    progress: Progress = no_progress,
    sandbox: SandboxOverrides = NO_OVERRIDES,
    progress_for: Callable[[int, Task], Progress] | None = None,
    soul_readonly: bool = False,
    prepared: Sequence[tuple[Task, Prepared]] | None = None,
) -> list[RunResult]:
    """`progress_for(index, task)`: each task's own progress sink (the live board's
    panel of that task), instead of the one `progress` they all share. `prepared`:
    what `prepare_tasks` made of `task_files` before the store was opened."""
    if prepared is None:
        prepared = await prepare_tasks(
            task_files,
            store.path,
            model=model,
            options=options,
            grader_model=grader_model,
            sandbox=sandbox,
        )
    tasks = [task for task, _ in prepared]

    def job(index: int) -> Callable[[], Awaitable[RunResult]]:
        async def go() -> RunResult:
            return await run_task(
                tasks[index],
                store,
                model=model,
                resume=resume,
                progress=progress if progress_for is None else progress_for(index, tasks[index]),
                grader_model=grader_model,
                options=options,
                soul_readonly=soul_readonly,
                prepared=prepared[index][1],
            )

        return go

    return await gather_limited([job(i) for i in range(len(tasks))], concurrency)
