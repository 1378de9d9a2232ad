"""Hidden checks (`[rubric] checks = "checks"`): run by the grader from a snapshot the
agent never sees; the agent learns only the criterion's id, check text and verdict."""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from harness.cli.main import ilh
from harness.inputs.errors import InputError
from harness.inputs.task_file import load_task
from harness.models.scripted import ScriptedClient
from harness.record.events import EventKind
from harness.record.store import RunStore
from harness.run.setup import run_task
from tests.harness_helpers import Recording

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "hidden_checks"
HONEST_FIZZ = Path(__file__).resolve().parents[1] / "examples" / "honest" / "agent.jsonl"
#: Words only the hidden check's source and output hold.
SECRETS = ("HiddenFizzBuzzTest", "test_every_number_up_to_300", "test_hidden", "range(1, 301)")


def agent_saw(agent: Recording) -> str:
    return "\n".join(
        json.dumps(m.model_dump(mode="json")) for r in agent.requests for m in r.messages
    )


def test_the_agent_cannot_see_the_hidden_checks_and_special_casing_fails(
    tmp_path: Path,
) -> None:
    task = load_task(EXAMPLE / "task.toml")
    agent = Recording(ScriptedClient.from_file(EXAMPLE / "agent.jsonl"))
    with RunStore(tmp_path / "runs.db") as store:
        result = asyncio.run(run_task(task, store, client=agent))
        events = store.events(result.run_id)
    states = [h.state for h in result.history]
    assert "complete" not in states and states.count("needs_revision") == 2
    grader = result.grader or {}
    rows = {c["id"]: c for c in grader["criteria"]}
    assert rows["tests"]["result"] == "pass" and rows["rules"]["result"] == "fail"
    assert rows["rules"]["detail"] == "hidden check: fail"
    assert not any(secret in json.dumps(grader) for secret in SECRETS)  # --json too

    # Its `ls`/`cat` of the checks found nothing: not mounted, no variable, no task folder.
    looked = next(e for e in events if e.kind == EventKind.TOOL_CALL)
    assert "No such file" in looked.payload["output"]
    assert "ILH_CHECKS=\n" in looked.payload["output"]
    seen = agent_saw(agent)
    assert "hidden check: fail" in seen  # the verdict reaches the agent…
    for secret in SECRETS:  # …never the check's command, source or output
        assert secret not in seen
    assert "unittest $ILH_CHECKS" not in seen  # the hidden criterion's command

    # The user keeps everything: the record holds the hidden check's output.
    graded = [e for e in events if e.kind == EventKind.GRADER_RESULT]
    hidden = next(c for c in graded[-1].payload["checks"] if c["criterion"] == "rules")
    assert hidden["hidden"] and "HiddenFizzBuzzTest" in hidden["output"]
    # The hidden checks never entered the agent's workspace.
    assert not (Path(result.workspace) / "test_hidden.py").exists()


def test_honest_work_passes_the_hidden_checks(tmp_path: Path) -> None:
    folder = tmp_path / "task"
    shutil.copytree(EXAMPLE, folder)
    honest = HONEST_FIZZ.read_text().splitlines()
    (folder / "agent.jsonl").write_text("\n".join([honest[1], honest[3]]) + "\n")
    result = CliRunner().invoke(
        ilh, ["run", str(folder / "task.toml"), "--json", "--store", str(tmp_path / "r.db")]
    )
    outcome = json.loads(result.stdout)
    assert result.exit_code == 0 and outcome["ended_by"] == "committed_complete"


def grade(workspace: Path, *extra: str) -> tuple[int, dict[str, Any]]:
    result = CliRunner().invoke(
        ilh,
        ["grade", str(EXAMPLE / "task.toml"), "--workspace", str(workspace), "--json", *extra],
    )
    return result.exit_code, json.loads(result.stdout)


def test_ilh_grade_runs_the_hidden_checks(tmp_path: Path) -> None:
    workspace = tmp_path / "work"
    shutil.copytree(EXAMPLE / "workspace", workspace)
    write = json.loads(HONEST_FIZZ.read_text().splitlines()[1])["tool_calls"][0]["arguments"]
    (workspace / "fizz.py").write_text(write["content"])
    code, report = grade(workspace, "--baseline", str(EXAMPLE / "workspace"))
    assert code == 0 and report["verdict"] == "verified_complete"
    (workspace / "fizz.py").write_text(
        'ANSWERS = {1: "1", 7: "7", 9: "Fizz", 10: "Buzz", 45: "FizzBuzz"}\n'
        "def fizzbuzz(n):\n    return ANSWERS.get(n, str(n))\n"
    )
    code, report = grade(workspace)
    rows = {c["id"]: c for c in report["criteria"]}
    assert code == 1 and rows["rules"] == {**rows["rules"], "result": "fail"}
    assert rows["rules"]["detail"] == "hidden check: fail"
    assert not any(secret in json.dumps(report) for secret in SECRETS)  # --json too


@pytest.mark.parametrize(
    ("rubric_extra", "criterion", "message"),
    [
        ("", 'run = "sh $ILH_CHECKS/x.sh"', "names no checks folder"),
        ('checks = "../elsewhere"', 'run = "true"', "checks names a folder"),
        ('checks = "missing"', 'run = "true"', "not found"),
        ('checks = "workspace"', 'run = "true"', "overlaps the workspace template"),
        ("", 'run = "true"\npytest = "tests/"', "at most one of run, pytest"),
        ("", 'unittest = "a b"', "unittest names one"),
    ],
)
def test_bad_hidden_check_settings_are_bad_input(
    tmp_path: Path, rubric_extra: str, criterion: str, message: str
) -> None:
    (tmp_path / "workspace").mkdir()
    (tmp_path / "task.toml").write_text(
        '[task]\nid = "t"\nobjective = "o"\nworkspace = "workspace"\n\n'
        f"[rubric]\nthreshold = 1.0\n{rubric_extra}\n\n"
        f'[[rubric.criteria]]\nid = "a"\nweight = 1.0\ncheck = "c"\n{criterion}\n'
    )
    with pytest.raises(InputError, match=message):
        load_task(tmp_path / "task.toml").checks_folder()
