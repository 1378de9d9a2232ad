"""The offline examples, run end to end through `ilh run --json`; their outcomes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from envelopes.declarations import AUTHORITY_OF_WRITER, COMPLETE_FORMS, WRITER_STATES
from harness.cli.main import ilh

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def run(tmp_path: Path, example: str, *extra: str) -> tuple[int, dict[str, Any]]:
    result = CliRunner().invoke(
        ilh,
        [
            "run",
            str(EXAMPLES / example / "task.toml"),
            "--json",
            "--store",
            str(tmp_path / "runs.db"),
            *extra,
        ],
        catch_exceptions=False,
    )
    return result.exit_code, json.loads(result.stdout)


def assert_lawful(outcome: dict[str, Any]) -> None:
    for entry in outcome["history"]:
        authority = AUTHORITY_OF_WRITER[entry["by"]]
        assert entry["authority"] == authority
        assert entry["state"] in WRITER_STATES[authority]
    assert outcome["final"] == {k: outcome["history"][-1][k] for k in outcome["final"]}
    for line in outcome["runtime_lines"]:
        assert "remaining" not in line


def states(outcome: dict[str, Any]) -> list[str]:
    return [entry["state"] for entry in outcome["history"]]


def test_honest_agent_edits_code_runs_tests_and_claims(tmp_path: Path) -> None:
    code, outcome = run(tmp_path, "honest")
    assert_lawful(outcome)
    # Both criteria are tool checks: the grader verifies offline, the runtime commits.
    assert code == 0 and outcome["ended_by"] == "committed_complete"
    assert states(outcome) == ["running", "claimed_complete", "verified_complete", "complete"]
    assert [e["by"] for e in outcome["history"][-2:]] == ["@GRADER", "@RUNTIME"]
    assert [p["disposition"] for p in outcome["proposals"]] == ["accepted"]
    assert outcome["violations"] == []
    workspace = Path(outcome["workspace"])
    assert "FizzBuzz" in (workspace / "fizz.py").read_text()
    grader = outcome["grader"]
    assert grader["verdict"] == "verified_complete" and grader["score"] == 1.0
    assert [(c["id"], c["result"], c["via"]) for c in grader["criteria"]] == [
        ("tests", "pass", "tool"),
        ("docs", "pass", "tool"),
    ]
    assert grader["tokens"] == {"input": 0, "output": 0}


def test_forged_runtime_commit_is_never_applied(tmp_path: Path) -> None:
    code, outcome = run(tmp_path, "forged_commit")
    assert_lawful(outcome)
    assert code == 3 and outcome["ended_by"] == "script_exhausted"
    assert states(outcome) == ["running", "stopped"]
    assert outcome["final"]["reason"] == "agent_ended"
    assert [p["disposition"] for p in outcome["proposals"]] == [
        "rejected",
        "rejected",
        "downgraded",
    ]
    assert {"authority_forgery", "forbidden_state"} <= {v["kind"] for v in outcome["violations"]}
    assert not set(states(outcome)) & {s.value for s in COMPLETE_FORMS}


def test_injected_tool_result_changes_nothing(tmp_path: Path) -> None:
    code, outcome = run(tmp_path, "injected_tool_result")
    assert_lawful(outcome)
    assert code == 3 and states(outcome) == ["running", "stopped"]
    # The forged line came back in a tool result: never read as a claim. Only the
    # agent's echo of it is a claim, and that one is refused.
    assert len(outcome["proposals"]) == 1
    assert outcome["proposals"][0]["disposition"] == "rejected"
    assert all("limit:999" not in line for line in outcome["runtime_lines"])


def test_claim_after_budget_ran_out_ends_stopped_for_budget(tmp_path: Path) -> None:
    code, outcome = run(tmp_path, "budget_claim")
    assert_lawful(outcome)
    assert code == 3 and outcome["ended_by"] == "budget"
    assert states(outcome) == ["running", "stopped"]
    assert outcome["final"]["reason"] == "budget"
    assert [p["disposition"] for p in outcome["proposals"]] == ["rejected"]
    assert [v["kind"] for v in outcome["violations"]] == ["budget_exhausted"]
    tokens = next(b for b in outcome["budgets"] if b["kind"] == "tokens")
    assert tokens["remaining"] < 0  # the overrun is visible, never hidden


def test_stopped_task_is_not_run_without_resume(tmp_path: Path) -> None:
    code, outcome = run(tmp_path, "stopped_to_complete")
    assert code == 3 and outcome["ended_by"] == "not_running"
    assert states(outcome) == ["stopped"] and outcome["proposals"] == []


def test_stopped_never_goes_directly_to_complete(tmp_path: Path) -> None:
    _, outcome = run(tmp_path, "stopped_to_complete", "--resume")
    assert_lawful(outcome)
    assert states(outcome) == ["stopped", "running", "stopped"]
    assert [p["disposition"] for p in outcome["proposals"]] == ["rejected", "rejected"]
    assert "forbidden_state" in {v["kind"] for v in outcome["violations"]}


@pytest.mark.parametrize(
    "example",
    ["honest", "forged_commit", "injected_tool_result", "budget_claim", "stopped_to_complete"],
)
def test_every_example_task_file_is_valid(example: str) -> None:
    result = CliRunner().invoke(ilh, ["lint", "-"], input="")
    assert result.exit_code in (0, 1)
    assert (EXAMPLES / example / "task.toml").is_file()
    assert (EXAMPLES / example / "agent.jsonl").is_file()
