"""The live board of `ilh run` (harness/run/live.py): what a person at a terminal sees
while tasks run, drawn by rich into a forced-terminal console over a StringIO; and that
it is off with --json, with NO_COLOR and without a TTY."""

from __future__ import annotations

import asyncio
import io
import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from rich.console import Console

from harness.cli.main import ilh
from harness.inputs.task_file import load_task
from harness.record.store import RunStore
from harness.run.live import REFRESH_HZ, Board, enabled, fan_out, limits_of
from harness.run.orchestrator import STARTED
from harness.run.setup import run_task

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def terminal() -> tuple[Console, io.StringIO]:
    out = io.StringIO()
    return Console(file=out, force_terminal=True, width=100, color_system=None), out


def drawn(board: Board) -> str:
    console, out = terminal()
    console.print(board.render())
    return out.getvalue()


SNAPSHOT = {
    "budgets": [
        {"kind": "rounds", "used": 1, "limit": 6},
        {"kind": "tokens", "used": 10000, "limit": 40000},
        {"kind": "time", "used": 30.0, "limit": 120},
    ]
}


def test_the_panel_shows_round_state_bars_and_the_running_tool() -> None:
    clock = Clock()
    console, _ = terminal()
    board = Board(console, [("fizzbuzz", {"tokens": 40000, "time": 120})], clock=clock)
    take = board.progress_for(0)
    take("state_change", {"state": "running", "round": 0})
    take("allowance", {"for": "model_call", "allowed_s": 120, "for_round": 1})
    text = drawn(board)
    assert "fizzbuzz · round 1 · running" in text
    assert "model call" in text and "0.0 s" in text
    clock.now += 1.5
    assert "model call" in drawn(board) and "1.5 s" in drawn(board)  # it ticks
    take("model_call", {"usage": {"input_tokens": 9000, "output_tokens": 1000}})
    take("budget_snapshot", SNAPSHOT)
    take(STARTED, {"what": "tool", "name": "run_command"})
    clock.now += 2.5
    text = drawn(board)
    # Bars of 30 cells (━ whole, ╸ half): a quarter of the tokens is 7.5 cells.
    bar = re.search(r"tokens\s+([━╸]+)\s+10,000 / 40,000", text)
    assert bar is not None, text
    assert bar.group(1).count("━") + 0.5 * bar.group(1).count("╸") == 7.5
    # The time bar goes on from the snapshot while the command runs: 32.5 of 120 s.
    bar = re.search(r"time\s+([━╸]+)\s+32\.5 s / 120 s", text)
    assert bar is not None and bar.group(1).count("━") == 8, text
    assert re.search(r"running\s+tool run_command\s+2\.5 s", text), text
    take("tool_call", {"call": {"name": "run_command"}, "ok": True})
    assert re.search(r"running\s+—", drawn(board))
    take(STARTED, {"what": "check", "name": "tests"})
    clock.now += 0.25
    assert re.search(r"running\s+check tests\s+0\.2 s|running\s+check tests\s+0\.3 s", drawn(board))
    take("grader_result", {"verdict": "verified_complete"})
    take("state_change", {"state": "complete", "round": 1})
    take("run_ended", {"ended_by": "committed_complete"})
    assert drawn(board).strip() == ""  # an ended task leaves the board (its summary follows)


def test_a_task_without_a_time_budget_says_so() -> None:
    clock = Clock()
    board = Board(terminal()[0], [("t", {"tokens": 100})], clock=clock)
    board.progress_for(0)("state_change", {"state": "running", "round": 0})
    assert re.search(r"time\s+no budget", drawn(board))


def test_the_batch_line_counts_done_running_and_queued() -> None:
    clock = Clock()
    board = Board(terminal()[0], [("a.toml", {}), ("b.toml", {}), ("c.toml", {})], clock=clock)
    first = board.progress_for(0, "alpha", {"tokens": 10})
    second = board.progress_for(1, "beta", {"tokens": 10})
    first("state_change", {"state": "running", "round": 0})
    second("state_change", {"state": "running", "round": 0})
    assert "batch 0 done · 2 running · 1 queued" in drawn(board)
    first("run_ended", {"ended_by": "committed_complete"})
    text = drawn(board)
    assert "batch 1 done · 1 running · 1 queued · 1 committed_complete" in text
    assert "beta · round 0" in text and "alpha" not in text  # panels: running tasks only
    second("run_ended", {"ended_by": "budget"})
    assert "2 done · 0 running · 1 queued · 1 budget, 1 committed_complete" in drawn(board)


def test_it_is_off_with_json_with_no_color_and_without_a_tty(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("NO_COLOR", raising=False)
    tty = Console(file=io.StringIO(), force_terminal=True)
    assert enabled(tty, as_json=False)
    assert not enabled(tty, as_json=True)
    assert not enabled(Console(file=io.StringIO()), as_json=False)  # not a terminal
    monkeypatch.setenv("NO_COLOR", "1")
    assert not enabled(tty, as_json=False)


def test_without_a_tty_ilh_run_prints_its_event_lines(tmp_path: Path) -> None:
    """CliRunner's stderr is no TTY: the line-per-event output, no panel."""
    done = CliRunner().invoke(
        ilh, ["run", str(EXAMPLES / "honest" / "task.toml"), "--store", str(tmp_path / "r.db")]
    )
    assert done.exit_code == 0, done.output
    assert "status ::STATUS{@TASK|state:running" in done.stderr
    assert "╭" not in done.stderr and "round 1 · running" not in done.stderr


def test_a_real_run_shows_the_running_command_ticking(tmp_path: Path) -> None:
    """The honest example with a command that sleeps: the board, redrawn by rich's own
    thread, shows the command running with a growing elapsed time; the grader's checks
    are announced as they start."""
    folder = tmp_path / "honest"
    shutil.copytree(EXAMPLES / "honest", folder)
    turns = [json.loads(line) for line in (folder / "agent.jsonl").read_text().splitlines()]
    turns[0]["tool_calls"] = [{"name": "run_command", "arguments": {"command": "sleep 1.5"}}]
    (folder / "agent.jsonl").write_text("\n".join(json.dumps(t) for t in turns) + "\n")
    task = load_task(folder / "task.toml")
    console, out = terminal()
    board = Board(console, [(task.id, limits_of(task))])
    seen: list[tuple[str, dict[str, Any]]] = []
    with RunStore(tmp_path / "r.db") as store, board.shown():
        result = asyncio.run(
            run_task(
                task,
                store,
                progress=fan_out(board.progress_for(0), lambda k, d: seen.append((k, d))),
            )
        )
    assert result.ended_by == "committed_complete"
    frames = out.getvalue()
    ticks = [float(t) for t in re.findall(r"tool run_command\s+(\d+\.\d) s", frames)]
    # The sleep's frames (the later unittest command starts again from 0): growing.
    sleep = ticks[: next((i for i in range(1, len(ticks)) if ticks[i] < ticks[i - 1]), None)]
    assert len(sleep) >= 3 and sleep == sorted(sleep) and sleep[-1] >= 1.0, ticks
    assert re.search(r"fizzbuzz · round 1 · running", frames)
    assert re.search(r"tokens\s+━+\s+[\d,]+ / 40,000", frames)
    # Redrawn at a bounded rate: about REFRESH_HZ frames a second, not one per event.
    assert frames.count("round 1 · running") <= 2.5 * REFRESH_HZ * 2
    checks = [d["name"] for k, d in seen if k == STARTED and d["what"] == "check"]
    assert checks == [c["id"] for c in result.grader["criteria"] if c["via"] == "tool"]
