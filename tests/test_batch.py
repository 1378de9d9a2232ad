"""`ilh run TASK… --concurrency N`: several tasks at once, each with its own budgets and
run record; `--json` prints an array of results in the order the files were given."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from harness.record.results import RunResult
from harness.record.store import RunStore
from harness.run.batch import gather_limited, run_tasks
from tests.harness_helpers import ilh

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = REPO / "examples"


def test_several_tasks_run_at_once_each_with_its_own_record(tmp_path: Path) -> None:
    names = ["honest", "forged_commit", "injected_tool_result", "budget_claim"]
    files = [str(EXAMPLES / n / "task.toml") for n in names]
    done = ilh("run", *files, "--concurrency", "3", "--json", "--store", "runs.db", cwd=tmp_path)
    results = json.loads(done.stdout)
    assert isinstance(results, list) and len(results) == 4
    assert [r["task_id"] for r in results] == [
        "fizzbuzz",
        "forged-commit",
        "injected-tool-result",
        "budget-claim",
    ]
    assert len({r["run_id"] for r in results}) == 4
    assert results[0]["ended_by"] == "committed_complete"
    assert done.returncode == 3  # not every task was completed
    with RunStore(tmp_path / "runs.db") as store:
        for r in results:
            assert store.verify(r["run_id"]).ok
            assert store.get_run(r["run_id"]).task_id == r["task_id"]
    # Each task's budgets are its own: the budget_claim example overran only its own.
    assert results[3]["ended_by"] == "budget" and results[0]["final"]["state"] == "complete"


def test_without_json_each_run_gets_its_summary(tmp_path: Path) -> None:
    files = [str(EXAMPLES / n / "task.toml") for n in ("forged_commit", "injected_tool_result")]
    done = ilh("run", *files, "--store", "runs.db", cwd=tmp_path)
    assert done.returncode == 3
    assert "forged-commit" in done.stdout and "injected-tool-result" in done.stdout


def test_one_bad_file_stops_the_batch_before_anything_runs(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text("[task]\nid = 3\n")
    done = ilh(
        "run", str(EXAMPLES / "honest" / "task.toml"), str(bad), "--store", "runs.db", cwd=tmp_path
    )
    assert done.returncode == 2 and "Traceback" not in done.stderr
    with RunStore(tmp_path / "runs.db") as store:
        assert store.list_runs() == []


def test_resume_run_takes_no_task_files(tmp_path: Path) -> None:
    files = [str(EXAMPLES / n / "task.toml") for n in ("honest", "forged_commit")]
    done = ilh("run", *files, "--resume", "someRun", "--store", "runs.db", cwd=tmp_path)
    assert done.returncode == 2


@pytest.mark.parametrize("limit", [1, 3, 8])
def test_gather_limited_runs_at_most_n_at_once_and_keeps_order(limit: int) -> None:
    running = 0
    peak = 0

    def job(i: int):  # type: ignore[no-untyped-def]
        async def go() -> int:
            nonlocal running, peak
            running += 1
            peak = max(peak, running)
            await asyncio.sleep(0.01 * (i % 3))
            running -= 1
            return i

        return go

    results = asyncio.run(gather_limited([job(i) for i in range(12)], limit))
    assert results == list(range(12))
    assert peak == limit


def test_gather_limited_finishes_every_job_before_raising() -> None:
    finished: list[int] = []

    def job(i: int):  # type: ignore[no-untyped-def]
        async def go() -> int:
            await asyncio.sleep(0.01)
            if i == 1:
                raise ValueError("boom")
            finished.append(i)
            return i

        return go

    with pytest.raises(ValueError, match="boom"):
        asyncio.run(gather_limited([job(i) for i in range(4)], 2))
    assert sorted(finished) == [0, 2, 3]


def _scripted_task(folder: Path, task_id: str, turns: list[dict[str, object]]) -> Path:
    folder.mkdir()
    (folder / "workspace").mkdir()
    (folder / "agent.jsonl").write_text("\n".join(json.dumps(t) for t in turns) + "\n")
    (folder / "task.toml").write_text(
        f'[task]\nid = "{task_id}"\nobjective = "wait and look"\nworkspace = "workspace"\n'
        '[budget.time]\nlimit = "60s"\n[budget.rounds]\nlimit = 8\n'
        '[agent]\nmodel = "scripted:agent.jsonl"\n'
    )
    return folder / "task.toml"


def test_one_tasks_command_never_stalls_or_charges_another(tmp_path: Path) -> None:
    """Commands run off the event loop: while one task's `sleep` runs, the other task's
    rounds go on, and its time budget pays only for its own work."""
    sleep = {"name": "run_command", "arguments": {"command": "sleep 3"}}
    look = {"name": "list_files", "arguments": {}}
    stop = "::STATUS{@TASK|state:blocked|reason:agent_stop|by:@AGENT|authority:proposal}"
    sleeper = _scripted_task(
        tmp_path / "sleeper", "sleeper", [{"text": "wait", "tool_calls": [sleep]}, {"text": stop}]
    )
    quick = _scripted_task(
        tmp_path / "quick",
        "quick",
        [{"text": "look", "tool_calls": [look]} for _ in range(4)] + [{"text": stop}],
    )
    with RunStore(tmp_path / "runs.db") as store:
        results = asyncio.run(run_tasks([sleeper, quick], store, concurrency=2))

    def time_used(result: RunResult) -> float:
        return float(next(row["used"] for row in result.budgets if row["kind"] == "time"))

    assert time_used(results[0]) >= 3.0
    assert time_used(results[1]) < 1.5, results[1].budgets


def test_resume_as_a_flag_applies_to_every_task_of_a_batch(tmp_path: Path) -> None:
    # `ilh run A.toml B.toml --resume`: each task is run as `ilh run X.toml --resume`
    # would run it alone: one that starts stopped is resumed, one that does not runs.
    files = [str(EXAMPLES / n / "task.toml") for n in ("stopped_to_complete", "honest")]
    plain = json.loads(ilh("run", *files, "--json", "--store", "a.db", cwd=tmp_path).stdout)
    assert [r["ended_by"] for r in plain] == ["not_running", "committed_complete"]
    done = ilh("run", *files, "--resume", "--json", "--store", "b.db", cwd=tmp_path)
    resumed = json.loads(done.stdout)
    assert resumed[0]["ended_by"] != "not_running"  # it ran: its agent spoke
    assert any(p["disposition"] == "rejected" for p in resumed[0]["proposals"])
    assert resumed[1]["ended_by"] == "committed_complete"


@pytest.mark.parametrize("before", [1, 2])
def test_a_task_file_taken_as_the_value_of_resume_is_named_as_such(
    tmp_path: Path, before: int
) -> None:
    # `--resume` takes the next word as its RUN: `ilh run A.toml --resume B.toml` was told
    # "--resume B.toml names a run" (it names a task file), and with two files before it,
    # "give no TASK_FILE" (the user gave three, and no run).
    files = [str(EXAMPLES / n / "task.toml") for n in ("honest", "forged_commit")][:before]
    last = str(EXAMPLES / "stopped_to_complete" / "task.toml")
    done = ilh("run", *files, "--resume", last, "--store", "runs.db", cwd=tmp_path)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    lines = [line for line in done.stderr.splitlines() if line.startswith("error ")]
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("error --resume: E303 ")
    assert "is a task file" in lines[0] and f"{last} --resume`" in lines[0]
    assert not (tmp_path / "runs.db").exists()  # nothing ran
