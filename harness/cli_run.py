"""`ilh run TASK` and `ilh run --resume RUN`: run an agent task under enforced v4 semantics."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import click
from rich.console import Console

from harness.input_errors import InputError
from harness.orchestrator import no_progress
from harness.progress import live_progress, summary
from harness.resume import resume_run
from harness.run_result import RunResult
from harness.run_setup import default_store, run_task
from harness.store import StoreError, UnknownRun
from harness.task import load_task

RESUME_FLAG = "\0flag"


def execute(
    task_file: Path | None,
    resume: str | None,
    model: str | None,
    store_path: Path | None,
    as_json: bool,
) -> RunResult:
    err = Console(stderr=True, highlight=False, soft_wrap=True)
    progress = no_progress if as_json else live_progress(err)
    if resume not in (None, RESUME_FLAG) and Path(str(resume)).is_file() and task_file is None:
        task_file, resume = Path(str(resume)), RESUME_FLAG  # `--resume task.toml`
    with default_store(store_path) as store:
        if task_file is not None:
            task = load_task(task_file)
            return asyncio.run(
                run_task(task, store, model=model, resume=resume is not None, progress=progress)
            )
        if resume in (None, RESUME_FLAG):
            raise click.UsageError("give a TASK_FILE, or --resume RUN to continue a recorded run")
        return asyncio.run(resume_run(store, str(resume), model=model, progress=progress))


@click.command()
@click.argument("task_file", required=False, type=click.Path(path_type=Path, dir_okay=False))
@click.option(
    "--resume",
    is_flag=False,
    flag_value=RESUME_FLAG,
    default=None,
    metavar="[RUN]",
    help="With TASK_FILE: run a task that starts stopped. With RUN: continue that recorded run.",
)
@click.option(
    "--model", help="Model URI, overriding [agent].model (scripted:PATH, replay:PATH, …)."
)
@click.option(
    "--store",
    "store_path",
    type=click.Path(path_type=Path, dir_okay=False),
    help="Run store (default .ilh/runs.db).",
)
@click.option("--json", "as_json", is_flag=True, help="One JSON object (DESIGN §6) on stdout.")
def run(
    task_file: Path | None,
    resume: str | None,
    model: str | None,
    store_path: Path | None,
    as_json: bool,
) -> None:
    """Run TASK_FILE under enforced iLang v4 semantics.

    Exit 0 when complete was committed, 3 when the run ended otherwise, 2 on bad input,
    1 on an internal error."""
    err = Console(stderr=True, highlight=False, soft_wrap=True)
    try:
        result = execute(task_file, resume, model, store_path, as_json)
    except InputError as bad:
        err.print(f"[bold red]error[/] {bad.render()}", markup=True)
        sys.exit(2)
    except (UnknownRun, StoreError) as bad:
        err.print(f"[bold red]error[/] {bad}", markup=True)
        sys.exit(2)
    if as_json:
        click.echo(result.model_dump_json())
    else:
        summary(Console(highlight=False, soft_wrap=True), result)
    sys.exit(result.exit_code)
