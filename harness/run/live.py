"""The live board of `ilh run` (rich, on stderr): one panel per running task and, for a
batch, one line of counts.

Each panel shows the task, its round and state, its tokens and time as bars against the
budget, and what is running now (a model call, a tool call, a grader check) with its
elapsed time. The board is fed by the orchestrator's progress callback (the record's
events, plus the progress-only `started` of a tool or check) and redrawn by rich's own
thread at a bounded rate (`REFRESH_HZ`): a burst of events costs a few dictionary updates,
never a redraw each, and the elapsed times tick while nothing else happens.

It is for a person at a terminal: off with `--json`, with `NO_COLOR` set, and when stderr
is not a TTY (`enabled`); the line-per-event output of `harness.run.progress` stays the
only output there.
"""

from __future__ import annotations

import os
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from rich.console import Console, Group, RenderableType
from rich.live import Live
from rich.panel import Panel
from rich.progress_bar import ProgressBar
from rich.table import Table
from rich.text import Text

from harness.inputs.task_file import Task
from harness.run.orchestrator import STARTED, Progress
from harness.run.setup import budgets_of
from harness.secrets.terminal import printable

#: Redraws per second: enough for a ticking clock, cheap next to any run.
REFRESH_HZ = 4
_BAR_WIDTH = 30
# What an allowance (recorded before it starts) says is about to run.
_ALLOWED = {"model_call": ("model", "call"), "grading": ("grader", "grading")}


def enabled(console: Console, as_json: bool) -> bool:
    """The board only for a person at a terminal (see the module docstring)."""
    return not as_json and "NO_COLOR" not in os.environ and console.is_terminal


@dataclass
class TaskPanel:
    """What one task's panel shows, updated from its progress events."""

    name: str
    limits: dict[str, float] = field(default_factory=dict)
    round: int = 0
    state: str = "queued"
    started_at: float | None = None
    used: dict[str, float] = field(default_factory=dict)
    snapshot_at: float | None = None
    running: tuple[str, str, float] | None = None  # (what, name, since)
    ended_by: str | None = None

    def take(self, kind: str, data: dict[str, Any], now: float) -> None:
        if self.started_at is None:
            self.started_at = now
            self.state = "starting"
        if kind == STARTED:
            self.running = (str(data.get("what")), str(data.get("name")), now)
        elif kind == "allowance" and str(data.get("for")) in _ALLOWED:
            what, name = _ALLOWED[str(data.get("for"))]
            self.running = (what, name, now)
            if isinstance(data.get("for_round"), int):
                self.round = data["for_round"]
        elif kind in ("model_call", "tool_call", "grader_result"):
            self.running = None
        elif kind == "state_change":
            self.state = str(data.get("state", self.state))
            if isinstance(data.get("round"), int):
                self.round = max(self.round, data["round"])
        elif kind == "budget_snapshot":
            for row in data.get("budgets", []):
                if isinstance(row, dict) and isinstance(row.get("used"), int | float):
                    self.used[str(row.get("kind"))] = float(row["used"])
                    if isinstance(row.get("limit"), int | float):
                        self.limits[str(row.get("kind"))] = float(row["limit"])
            self.snapshot_at = now
        elif kind == "run_ended":
            self.ended_by = str(data.get("ended_by"))
            self.running = None

    def time_used(self, now: float) -> float:
        """The time budget's spend, ticking between snapshots (the ledger charges wall
        time; a snapshot comes once a round)."""
        if self.snapshot_at is not None and "time" in self.used:
            return self.used["time"] + (now - self.snapshot_at)
        return now - self.started_at if self.started_at is not None else 0.0

    def render(self, now: float) -> Panel:
        grid = Table.grid(padding=(0, 1))
        grid.add_column(style="bold", no_wrap=True)
        grid.add_column(no_wrap=True)
        grid.add_column(no_wrap=True)
        tokens = self.used.get("tokens", 0.0)
        spent = self.time_used(now)
        for kind, used, shown in (
            ("tokens", tokens, f"{tokens:,.0f}"),
            ("time", spent, f"{spent:,.1f} s"),
        ):
            limit = self.limits.get(kind)
            if limit is None:
                grid.add_row(kind, Text("no budget", style="dim"), shown)
                continue
            unit = " s" if kind == "time" else ""
            grid.add_row(
                kind,
                ProgressBar(total=limit, completed=min(used, limit), width=_BAR_WIDTH),
                f"{shown} / {limit:,.0f}{unit}",
            )
        if self.running is not None:
            what, name, since = self.running
            # `name` is the agent's (a tool name it made up): shown, never obeyed.
            running = Text(printable(f"{what} {name}"), style="yellow")
            grid.add_row("running", running, f"{now - since:,.1f} s")
        else:
            grid.add_row("running", Text("—", style="dim"), "")
        title = Text.assemble(
            (self.name, "bold"), f" · round {self.round} · ", (self.state, "cyan")
        )
        return Panel(grid, title=title, title_align="left", expand=False)


class Board:
    """The panels of the tasks of one `ilh run` (one, or a batch), drawn by rich.Live."""

    def __init__(
        self,
        console: Console,
        tasks: Sequence[tuple[str, dict[str, float]]],
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """`tasks`: (name, budget limits by kind) in the order they were given."""
        self.console = console
        self.clock = clock
        self.panels = [TaskPanel(name, dict(limits)) for name, limits in tasks]
        # Events come from the event loop and from the grader's worker thread; rich
        # draws from its own thread.
        self.lock = threading.Lock()

    def progress_for(
        self, index: int, name: str | None = None, limits: dict[str, float] | None = None
    ) -> Progress:
        """The progress sink of task `index` (its name and budget limits, once known)."""
        panel = self.panels[index]
        with self.lock:
            panel.name = name or panel.name
            panel.limits.update(limits or {})

        def take(kind: str, data: dict[str, Any]) -> None:
            with self.lock:
                panel.take(kind, data, self.clock())

        return take

    def render(self) -> RenderableType:
        now = self.clock()
        with self.lock:
            shown: list[RenderableType] = [
                p.render(now)
                for p in self.panels
                if p.started_at is not None and p.ended_by is None
            ]
            if len(self.panels) > 1:
                shown.append(self.batch_line())
        return Group(*shown)

    def batch_line(self) -> Text:
        done = [p for p in self.panels if p.ended_by is not None]
        running = sum(p.started_at is not None and p.ended_by is None for p in self.panels)
        queued = sum(p.started_at is None for p in self.panels)
        line = Text.assemble(
            ("batch ", "bold"),
            f"{len(done)} done · {running} running · {queued} queued",
        )
        counts = Counter(p.ended_by for p in done)
        if counts:
            line.append(" · " + ", ".join(f"{n} {by}" for by, n in sorted(counts.items())))
        return line

    @contextmanager
    def shown(self) -> Iterator[Board]:
        """Drawn while the block runs; gone after it (the summary follows)."""
        live = Live(
            get_renderable=self.render,
            console=self.console,
            refresh_per_second=REFRESH_HZ,
            transient=True,
            redirect_stdout=False,
            redirect_stderr=False,
        )
        with live:
            yield self


@contextmanager
def board_for(
    console: Console, as_json: bool, tasks: Sequence[tuple[str, dict[str, float]]]
) -> Iterator[Board | None]:
    """The board, drawn while the block runs, or None where it is off (`enabled`)."""
    if not enabled(console, as_json):
        yield None
        return
    board = Board(console, tasks)
    with board.shown():
        yield board


def limits_of(task: Task) -> dict[str, float]:
    return {str(b.kind): float(b.limit) for b in budgets_of(task)}


def fan_out(*sinks: Progress) -> Progress:
    def each(kind: str, data: dict[str, Any]) -> None:
        for sink in sinks:
            sink(kind, data)

    return each
