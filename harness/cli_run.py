"""`ilh run TASK`: run an agent task under enforced v4 semantics."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import click
from rich.console import Console

from harness.input_errors import InputError
from harness.orchestrator import no_progress
from harness.progress import live_progress, summary
from harness.run_setup import default_store, run_task
from harness.task import load_task


@click.command()
@click.argument("task_file", type=click.Path(path_type=Path, dir_okay=False))
@click.option(
    "--model",
    help="Model URI (overrides [agent].model): scripted:PATH, anthropic:…, openai:…, local:smollm2, replay:PATH.",
)
@click.option(
    "--store",
    "store_path",
    type=click.Path(path_type=Path, dir_okay=False),
    help="Run store (default .ilh/runs.db).",
)
@click.option(
    "--resume",
    is_flag=True,
    help="Run a task whose start state is stopped (the runtime commits running).",
)
@click.option("--json", "as_json", is_flag=True, help="One JSON object (DESIGN §6) on stdout.")
def run(
    task_file: Path, model: str | None, store_path: Path | None, resume: bool, as_json: bool
) -> None:
    """Run TASK_FILE. Exit 0 complete committed, 3 ended otherwise, 2 bad input, 1 internal error."""
    err = Console(stderr=True, highlight=False, soft_wrap=True)
    try:
        task = load_task(task_file)
        with default_store(store_path) as store:
            progress = no_progress if as_json else live_progress(err)
            result = asyncio.run(
                run_task(task, store, model=model, resume=resume, progress=progress)
            )
    except InputError as bad:
        err.print(f"[bold red]error[/] {bad.render()}", markup=True)
        sys.exit(2)
    if as_json:
        click.echo(result.model_dump_json())
    else:
        summary(Console(highlight=False, soft_wrap=True), result)
    sys.exit(result.exit_code)
