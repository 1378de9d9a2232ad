"""`ilh run TASK` and `ilh run --resume RUN`: run an agent task under enforced v4 semantics."""

from __future__ import annotations

import asyncio
import shlex
import sys
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

import click

from harness.cli.consoles import ReportConsole, message_console
from harness.cli.errors import (
    EXIT_BAD_INPUT,
    BadInput,
    TaskFilePath,
    UserPath,
    refuse_recording_over,
)
from harness.cli.options import (
    GRADER_MODEL_OPTION,
    NETWORK_OPTION,
    OTEL_OPTION,
    SANDBOX_OPTION,
    base_url_option,
    checked_model_uri,
    sandbox_overrides,
)
from harness.inputs.errors import InputError, InputErrors
from harness.inputs.task_file import load_task
from harness.models.clients.options import NO_OPTIONS, ClientOptions
from harness.record.results import RunResult
from harness.record.store import DEFAULT_STORE_PATH, RunStore, StoreError, UnknownRun
from harness.run.batch import prepare_tasks, run_tasks
from harness.run.live import board_for, fan_out, limits_of
from harness.run.orchestrator import no_progress
from harness.run.progress import live_progress, summary
from harness.run.resume import resume_run
from harness.run.setup import default_store, prepare, run_task
from harness.secrets import harness_secrets
from harness.telemetry.export import exporting
from harness.workspace.interrupts import immediate_interrupts
from harness.workspace.sandbox import NO_OVERRIDES, SandboxOverrides

RESUME_FLAG = "\0flag"


class Interrupted(Exception):
    """Ctrl-C: the runs were left as a kill leaves them (resumable, their record intact)."""

    def __init__(self, run_ids: list[str]) -> None:
        super().__init__(", ".join(run_ids))
        self.run_ids = run_ids


@contextmanager
def interruption_reported(store: RunStore, resumed: str | None) -> Iterator[None]:
    try:
        yield
    except KeyboardInterrupt:
        ids = list(store.created_run_ids)
        if resumed not in (None, RESUME_FLAG):
            with suppress(UnknownRun, StoreError):
                ids.append(store.resolve_run_id(str(resumed)))
        raise Interrupted(ids) from None


def execute(
    task_file: Path | None,
    resume: str | None,
    model: str | None,
    store_path: Path | None,
    as_json: bool,
    grader_model: str | None = None,
    options: ClientOptions = NO_OPTIONS,
    sandbox: SandboxOverrides = NO_OVERRIDES,
    soul_readonly: bool = False,
) -> RunResult:
    err = message_console()
    lines = no_progress if as_json else live_progress(err)
    if resume not in (None, RESUME_FLAG) and Path(str(resume)).is_file() and task_file is None:
        task_file, resume = Path(str(resume)), RESUME_FLAG  # `--resume task.toml`
    if task_file is not None and resume not in (None, RESUME_FLAG):
        # `ilh run TASK --resume RUN` would silently drop RUN: say which form is meant.
        raise InputError(
            "--resume",
            "E303",
            f"--resume {resume} names a run, and a TASK_FILE was given too: continue the run "
            f"with `ilh run --resume {resume}`, or start the task stopped with "
            "`ilh run TASK --resume`",
        )
    # The task file is read before the store is opened: a mistyped or broken one left a
    # new `.ilh/runs.db` behind in whatever folder the command was typed.
    task = load_task(task_file) if task_file is not None else None
    # So is the rest of the task (its model, grader model, handoff, SOUL, template): a
    # refused `--model nosuch:thing` left an empty store behind too.
    prepared = (
        None
        if task is None
        else prepare(
            task,
            store_path or DEFAULT_STORE_PATH,
            model=model,
            grader_model=grader_model,
            options=options,
            sandbox=sandbox,
        )
    )
    # `--resume RUN` reads a store that is there: one typed in the wrong folder made an
    # empty store there, then called the run unknown "in the store".
    resuming = task is None and resume not in (None, RESUME_FLAG)
    with (
        default_store(store_path, create=not resuming) as store,
        interruption_reported(store, resume),
    ):
        if task is not None:
            # The live panel where a person watches; the event lines print above it.
            with board_for(err, as_json, [(task.id, limits_of(task))]) as board:
                return asyncio.run(
                    run_task(
                        task,
                        store,
                        model=model,
                        resume=resume is not None,
                        progress=lines if board is None else fan_out(lines, board.progress_for(0)),
                        grader_model=grader_model,
                        options=options,
                        soul_readonly=soul_readonly,
                        prepared=prepared,
                    )
                )
        if resume in (None, RESUME_FLAG):
            raise click.UsageError("give a TASK_FILE, or --resume RUN to continue a recorded run")
        with board_for(err, as_json, [(f"run {resume}", {})]) as board:
            return asyncio.run(
                resume_run(
                    store,
                    str(resume),
                    model=model,
                    progress=lines if board is None else fan_out(lines, board.progress_for(0)),
                    options=options,
                    grader_model=grader_model,
                    sandbox=sandbox,
                )
            )


def execute_many(
    task_files: tuple[Path, ...],
    resume: str | None,
    model: str | None,
    store_path: Path | None,
    grader_model: str | None,
    options: ClientOptions,
    concurrency: int,
    sandbox: SandboxOverrides = NO_OVERRIDES,
    as_json: bool = False,
    soul_readonly: bool = False,
) -> list[RunResult]:
    """Several TASK_FILEs, at most `concurrency` at a time (harness.run.batch). No event
    lines (those of concurrent runs would interleave): at a terminal, a live panel per
    running task and the batch's counts; each run's summary follows."""
    if resume not in (None, RESUME_FLAG):
        raise click.UsageError("--resume RUN continues one recorded run; give no TASK_FILE")
    err = message_console()
    # Every task and model checked before the store is opened: a refused batch leaves
    # no store behind.
    prepared = asyncio.run(
        prepare_tasks(
            task_files,
            store_path or DEFAULT_STORE_PATH,
            model=model,
            options=options,
            grader_model=grader_model,
            sandbox=sandbox,
        )
    )
    with (
        default_store(store_path) as store,
        interruption_reported(store, resume),
        board_for(err, as_json, [(str(path), {}) for path in task_files]) as board,
    ):
        return asyncio.run(
            run_tasks(
                task_files,
                store,
                concurrency=concurrency,
                model=model,
                resume=resume is not None,
                options=options,
                grader_model=grader_model,
                sandbox=sandbox,
                progress_for=None
                if board is None
                else lambda i, task: board.progress_for(i, task.id, limits_of(task)),
                soul_readonly=soul_readonly,
                prepared=prepared,
            )
        )


def refuse_task_file_as_run(task_files: tuple[Path, ...], resume: str | None) -> None:
    """`--resume` takes the next word as its RUN, so `ilh run A.toml --resume B.toml`
    gives it B.toml. Alone, `--resume B.toml` is B run with the flag; after other task
    files, whether B alone or every task was meant is not for the harness to guess (the
    runs would differ): the message says which command runs them all with it."""
    if not task_files or resume in (None, RESUME_FLAG) or not Path(str(resume)).is_file():
        return
    files = " ".join(str(t) for t in task_files)
    raise InputError(
        "--resume",
        "E303",
        f"--resume took {resume} as the RUN to continue, and it is a task file: to run "
        f"every task with --resume, put the flag last: `ilh run {files} {resume} --resume`",
    )


@click.command()
@click.argument("task_files", nargs=-1, type=TaskFilePath())
@click.option(
    "--resume",
    is_flag=False,
    flag_value=RESUME_FLAG,
    default=None,
    metavar="[RUN]",
    help="With TASK_FILE: run a task that starts stopped. With RUN: continue that recorded run.",
)
@click.option(
    "--model",
    callback=checked_model_uri,
    help="Model URI, overriding [agent].model (scripted:PATH, replay:PATH, …).",
)
@click.option(
    "--store",
    "store_path",
    type=UserPath(path_type=Path, dir_okay=False),
    help="Run store (default .ilh/runs.db).",
)
@click.option("--json", "as_json", is_flag=True, help="One JSON object (DESIGN §6) on stdout.")
@GRADER_MODEL_OPTION
@base_url_option(
    "Server for openai:/anthropic: models (an OpenAI-compatible one: vLLM, llama.cpp, "
    "Ollama, LM Studio; a proxy)."
)
@click.option(
    "--record",
    "record_path",
    type=UserPath(path_type=Path, dir_okay=False),
    help="Append every model call (request digest and response) to this file; replay:PATH "
    "serves it back offline.",
)
@click.option(
    "--concurrency",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    help="With several TASK_FILEs: how many run at once.",
)
@click.option(
    "--soul-readonly",
    is_flag=True,
    help="Write the run's GENEs to the SOUL's pending file, not the SOUL: the principal "
    "approves or drops them with `ilh soul review` (a resume keeps the run's choice).",
)
@SANDBOX_OPTION
@OTEL_OPTION
@NETWORK_OPTION
def run(
    task_files: tuple[Path, ...],
    resume: str | None,
    model: str | None,
    store_path: Path | None,
    as_json: bool,
    grader_model: str | None,
    base_url: str | None,
    record_path: Path | None,
    concurrency: int,
    sandbox_mode: str | None,
    network: str | None,
    otel: str | None,
    soul_readonly: bool,
) -> None:
    """Run TASK_FILE under enforced iLang v4 semantics.

    Several TASK_FILEs run as a batch (--concurrency at a time), each with its own
    budgets and run record; with --json the output is then a JSON array of results, in
    the order the files were given.

    Exit 0 when complete was committed (for every task), 3 when a run ended otherwise,
    2 on bad input, 1 on an internal error, 130 when interrupted (Ctrl-C: the run is
    resumable)."""
    err = message_console()
    if record_path is not None:
        store_file = store_path or DEFAULT_STORE_PATH
        refuse_recording_over(
            record_path,
            [(t, "the task file") for t in task_files] + [(store_file, "the run store")],
        )
    options = ClientOptions(base_url=base_url, record=record_path)
    sandbox = sandbox_overrides(sandbox_mode, network)
    try:
        refuse_task_file_as_run(task_files, resume)
        with immediate_interrupts(), exporting(otel):
            if len(task_files) > 1:
                results = execute_many(
                    task_files,
                    resume,
                    model,
                    store_path,
                    grader_model,
                    options,
                    concurrency,
                    sandbox,
                    as_json,
                    soul_readonly,
                )
            else:
                task_file = task_files[0] if task_files else None
                results = [
                    execute(
                        task_file,
                        resume,
                        model,
                        store_path,
                        as_json,
                        grader_model,
                        options,
                        sandbox,
                        soul_readonly,
                    )
                ]
    except InputError as bad:
        for each in bad.errors if isinstance(bad, InputErrors) else [bad]:
            BadInput.of(each).show()
        sys.exit(EXIT_BAD_INPUT)
    except UnknownRun as bad:
        BadInput(str(resume), "E500", str(bad)).show()
        sys.exit(EXIT_BAD_INPUT)
    except StoreError as bad:
        BadInput(str(store_path or DEFAULT_STORE_PATH), "E500", str(bad)).show()
        sys.exit(EXIT_BAD_INPUT)
    except Interrupted as stop:
        # Nothing is committed for a Ctrl-C: the run stays exactly where its last event
        # left it, as after a kill, and --resume continues it from there.
        # The command as it can be pasted: with its store (`ilh run --resume RUN` alone
        # looked in the default one and called the run unknown), quoted for a shell.
        store_flag = "" if store_path is None else f" --store {shlex.quote(str(store_path))}"
        for run_id in stop.run_ids:
            err.print(
                f"interrupted: run {run_id} is resumable, its record intact; continue it "
                f"with `ilh run --resume {run_id}{store_flag}`",
                markup=False,
            )
        if not stop.run_ids:
            err.print("interrupted before any run started")
        sys.exit(130)
    # The results were redacted when the runs ended; this is the last look before
    # stdout, for anything added since (`harness.secrets`).
    redact = harness_secrets().redact
    if as_json and len(task_files) > 1:
        click.echo(redact("[" + ",".join(r.model_dump_json() for r in results) + "]"))
    elif as_json:
        click.echo(redact(results[0].model_dump_json()))
    else:
        for result in results:
            summary(ReportConsole(highlight=False, soft_wrap=True), result)
    sys.exit(max(r.exit_code for r in results))
