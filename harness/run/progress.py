"""Live progress of a run for people (rich, on stderr) and its closing summary."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from harness.record.results import RunResult
from harness.run.orchestrator import Progress
from harness.secrets.terminal import shown

_DISPOSITION_STYLE = {"accepted": "green", "downgraded": "yellow", "rejected": "red"}


def live_progress(console: Console) -> Progress:
    def show(kind: str, data: dict[str, Any]) -> None:
        if kind == "state_change":
            console.print(f"  [bold cyan]status[/] {shown(data.get('line'))}")
        elif kind == "model_call":
            usage = data.get("usage", {})
            console.print(
                f"[bold]model[/] {shown(data.get('model'))}: "
                f"{usage.get('input_tokens')} in / {usage.get('output_tokens')} out"
                + (" (estimated)" if usage.get("estimated") else "")
            )
        elif kind == "proposal":
            style = _DISPOSITION_STYLE.get(str(data.get("disposition")), "white")
            console.print(
                f"  [{style}]{data.get('disposition')}[/] {shown(data.get('line'))[:100]}"
                f" [dim]({shown(data.get('why'))})[/]"
            )
        elif kind == "violation":
            console.print(
                f"  [bold red]violation[/] {data.get('kind')}: {shown(data.get('detail'))}"
            )
        elif kind == "model_attempt" and data.get("outcome") != "ok":
            wait = data.get("wait_s")
            console.print(
                f"  [yellow]model attempt {data.get('attempt')} {data.get('outcome')}[/] "
                f"{shown(data.get('error'))}"
                + (f" (HTTP {data.get('status')})" if data.get("status") else "")
                + (f", retrying in {wait:.1f}s" if isinstance(wait, int | float) else "")
            )
        elif kind == "tool_call":
            call = data.get("call", {})
            mark = "[green]ok[/]" if data.get("ok") else "[red]error[/]"
            console.print(f"  [dim]tool[/] {shown(call.get('name'))} {mark}")
        elif kind == "note" and isinstance(data.get("resumed"), dict):
            for note in data["resumed"].get("notes") or []:
                console.print(f"  [yellow]note[/] {shown(note)}")
        elif kind == "grader_result":
            style = "green" if data.get("verdict") == "verified_complete" else "yellow"
            results = ", ".join(
                f"{c.get('id')} {c.get('result')}" for c in data.get("criteria", [])
            )
            console.print(
                f"[bold]grader[/] [{style}]{data.get('verdict')}[/] score {data.get('score')} "
                f"/ {data.get('threshold')}: {shown(results)}"
            )

    return show


#: Below this width a table's value column is a few letters wide: rich folds each value
#: into letter pairs (`sc|ri|pt`), or, at a column or two, drops them. Rows become lines.
NARROW = 50


class Rows:
    """The summary's rows, rendered as a table where there is room for one, else one
    `key: value` line each (words whole: the terminal wraps them)."""

    def __init__(self) -> None:
        self.rows: list[tuple[str, str]] = []

    def add_row(self, key: str, value: str) -> None:
        self.rows.append((key, value))

    def print(self, console: Console, title: str) -> None:
        if console.width < NARROW:
            console.print(title, soft_wrap=True)
            for key, value in self.rows:
                console.print(f"[bold]{key}[/]: {value}", soft_wrap=True)
            return
        table = Table(title=title, show_header=False)
        table.add_column(style="bold")
        table.add_column(overflow="fold")  # a status line is read whole, never cut
        for key, value in self.rows:
            table.add_row(key, value)
        console.print(table)


def summary(console: Console, result: RunResult) -> None:
    table = Rows()
    final = result.final
    table.add_row("ended by", result.ended_by)
    # In words, so a narrow terminal wraps between words; the exact status line follows
    # the table on its own line (soft-wrapped by the terminal, never cut by rich).
    table.add_row(
        "final",
        escape(
            " · ".join(
                [
                    final.state,
                    *([f"reason {final.reason}"] if final.reason else []),
                    f"by {final.by}",
                    f"authority {final.authority}",
                ]
            )
        )
        if final
        else "-",
    )
    table.add_row("model", escape(result.model or "-"))
    table.add_row("sandbox", sandbox_text(result.sandbox))
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
        table.add_row(f"budget {row['kind']}", budget_text(row))
    grader_rows(table, result)
    for note in result.notes:
        table.add_row("note", shown(note))
    table.print(console, escape(f"run {result.run_id} · task {result.task_id}"))
    if final is not None:
        console.print(Text(final.line), soft_wrap=True)


def _amount(kind: str, value: object) -> str:
    number = float(value) if isinstance(value, int | float) else 0.0
    if kind == "time":
        return f"{number:,.2f} s"
    return f"{round(number):,}"


def budget_text(row: dict[str, object]) -> str:
    """One budget as a person reads it: rounded numbers with units, the reserves that
    `remaining` already leaves aside named, and an overrun said as one (never a negative
    remaining)."""
    kind = str(row.get("kind"))
    used, limit = row.get("used"), row.get("limit")
    remaining = row.get("remaining")
    left = float(remaining) if isinstance(remaining, int | float) else 0.0
    text = f"{_amount(kind, used)} of {_amount(kind, limit)} used, "
    if left < 0:
        text += f"0 remaining (over by {_amount(kind, -left)})"
    else:
        text += f"{_amount(kind, left)} remaining"
    reserves = [
        f"{name} {_amount(kind, value)}"
        for key, name in (("reserve_audit", "audit"), ("reserve_summary", "summary"))
        if isinstance(value := row.get(key), int | float) and value > 0
    ]
    if reserves:
        text += " after the reserves (" + ", ".join(reserves) + ")"
    return text


def grader_rows(table: Rows, result: RunResult) -> None:
    """The grader's verdict and its token use as a share of the agent's."""
    grader = result.grader
    if grader is None:
        table.add_row("grader", "not called (no completion claim)")
        return
    missing = ", ".join(grader.get("missing", [])) or "none"
    applied = "" if grader.get("applied", True) else "; not applied: no gap the agent can close"
    table.add_row(
        "grader",
        f"{grader['verdict']} (score {grader['score']} / {grader['threshold']}; "
        f"missing: {escape(missing)}; {grader.get('gradings', 1)} grading(s){applied})",
    )
    tokens = grader.get("tokens", {})
    agent = grader.get("agent_tokens", {})
    agent_total = int(agent.get("input", 0)) + int(agent.get("output", 0))
    share = grader.get("token_share")
    share_text = f"{100 * share:.1f}% of the agent's {agent_total}" if share is not None else "n/a"
    table.add_row(
        "grader tokens",
        f"{tokens.get('input', 0)} in / {tokens.get('output', 0)} out ({share_text})",
    )
    # The grader's notes: a check that trusts an exit code, an unknown template…
    for note in grader.get("notes", []):
        table.add_row("grader note", shown(note))


def sandbox_text(report: dict[str, Any] | None) -> str:
    """The sandbox in plain words, loud when commands ran (or would run) unconfined or were
    refused: a person reading the summary must not miss that the workspace was not a cage."""
    if not report:
        return "-"
    if not report.get("confined"):
        return "[bold red]NONE[/] " + shown(report.get("warning", "commands ran unconfined"))
    if report.get("available") is False:
        return "[bold red]unavailable[/]: commands and tool checks were refused: " + escape(
            str(report.get("reason", ""))
        )
    limits = report.get("limits", {})
    limits_text = ", ".join(f"{k.replace('_', ' ')} {_limit(k, v)}" for k, v in limits.items())
    network = report.get("network")
    net = "[bold yellow]host network[/]" if network == "host" else "no network"
    return f"{shown(report.get('mode'))} · {net} · {escape(limits_text)}"


_BYTE_LIMITS = frozenset({"file_size", "memory", "tmp_size", "disk"})


def _limit(name: str, value: object) -> str:
    if name in _BYTE_LIMITS and isinstance(value, int):
        for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
            if value >= size and value % size == 0:
                return f"{value // size} {unit}"
        return f"{value:,} bytes"
    if name == "cpu_seconds" and isinstance(value, int):
        return f"{value} s"
    return str(value)


def sandbox_line(report: dict[str, Any]) -> str:
    return "sandbox " + sandbox_text(report)
