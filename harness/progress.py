"""Live progress of a run for people (rich, on stderr) and its closing summary."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from harness.orchestrator import Progress
from harness.run_result import RunResult

_DISPOSITION_STYLE = {"accepted": "green", "downgraded": "yellow", "rejected": "red"}


def live_progress(console: Console) -> Progress:
    def show(kind: str, data: dict[str, Any]) -> None:
        if kind == "state_change":
            console.print(f"  [bold cyan]status[/] {escape(str(data.get('line')))}")
        elif kind == "model_call":
            usage = data.get("usage", {})
            console.print(
                f"[bold]model[/] {escape(str(data.get('model')))}: "
                f"{usage.get('input_tokens')} in / {usage.get('output_tokens')} out"
                + (" (estimated)" if usage.get("estimated") else "")
            )
        elif kind == "proposal":
            style = _DISPOSITION_STYLE.get(str(data.get("disposition")), "white")
            console.print(
                f"  [{style}]{data.get('disposition')}[/] {escape(str(data.get('line')))[:100]}"
                f" [dim]({escape(str(data.get('why')))})[/]"
            )
        elif kind == "violation":
            console.print(
                f"  [bold red]violation[/] {data.get('kind')}: {escape(str(data.get('detail')))}"
            )
        elif kind == "tool_call":
            call = data.get("call", {})
            mark = "[green]ok[/]" if data.get("ok") else "[red]error[/]"
            console.print(f"  [dim]tool[/] {escape(str(call.get('name')))} {mark}")

    return show


def summary(console: Console, result: RunResult) -> None:
    table = Table(title=f"run {result.run_id} · task {result.task_id}", show_header=False)
    table.add_column(style="bold")
    table.add_column()
    final = result.final
    table.add_row("ended by", result.ended_by)
    table.add_row("final", escape(final.line) if final else "-")
    table.add_row("model", escape(result.model or "-"))
    table.add_row(
        "proposals",
        ", ".join(
            f"{n} {d}"
            for d in ("accepted", "downgraded", "rejected")
            if (n := sum(p.disposition == d for p in result.proposals))
        )
        or "none",
    )
    table.add_row("violations", str(len(result.violations)))
    for row in result.budgets:
        table.add_row(
            f"budget {row['kind']}",
            f"{row['used']} of {row['limit']} used, remaining {row['remaining']}",
        )
    for note in result.notes:
        table.add_row("note", escape(note))
    console.print(table)
