"""Task-file budgets and runner selections refused at load (ux5): `used` past the limit,
limits past their sane bounds, a `pytest`/`unittest` path outside the workspace. Each is
bad input: one message with the key path and a code, exit 2, never a traceback."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from harness.inputs.bounds import MAX_ROUNDS, MAX_TIME_SECONDS, MAX_TOKENS
from harness.inputs.errors import InputError
from harness.inputs.task_file import parse_task
from tests.test_run_inputs import run

HEAD = '[task]\nid = "t"\nobjective = "do it"\n\n'
AGENT = '\n[agent]\nmodel = "scripted:agent.jsonl"\n'
RUBRIC = (
    '\n[rubric]\nthreshold = 0.5\n[[rubric.criteria]]\nid = "{id}"\nweight = 1.0\ncheck = "x"\n'
)


@pytest.mark.parametrize(
    ("table", "limit", "used"),
    [("rounds", "2", "3"), ("tokens", "100", "101"), ("time", '"10s"', '"11s"')],
)
def test_used_past_the_limit_is_refused_with_its_key(
    tmp_path: Path, table: str, limit: str, used: str
) -> None:
    text = HEAD + f"[budget.{table}]\nlimit = {limit}\nused = {used}\n" + AGENT
    exit_code, output = run(tmp_path, text)
    assert exit_code == 2, output
    assert f"budget.{table}.used" in output and "E303" in output, output
    assert "task.toml:7:" in output, output  # the line of `used`


@pytest.mark.parametrize("table", ["rounds", "tokens"])
def test_used_and_reserves_past_the_limit_name_the_key_and_the_sum(
    tmp_path: Path, table: str
) -> None:
    text = HEAD + f"[budget.{table}]\nlimit = 2\nused = 1\nreserve_audit = 2\n" + AGENT
    exit_code, output = run(tmp_path, text)
    assert exit_code == 2, output
    assert f"budget.{table}.reserve_audit" in output and "E303" in output, output
    assert "used + reserve_audit = 3" in output and "limit 2" in output, output


def test_used_up_to_the_limit_is_an_exhausted_budget_not_bad_input(tmp_path: Path) -> None:
    """DESIGN §5: a task whose budget is already exhausted ends at once with
    `stopped|reason:budget`; that is `used` equal to the limit, still accepted."""
    exit_code, output = run(tmp_path, HEAD + "[budget.rounds]\nlimit = 2\nused = 2\n" + AGENT)
    assert exit_code == 3, output
    result = json.loads(output)
    assert (result["final"]["state"], result["ended_by"]) == ("stopped", "budget"), output


def test_the_conformance_suite_may_start_from_an_overrun() -> None:
    """The shared cases start runs from a narrated overrun (exec-0011): the suite's own
    tasks, and a resumed run's recorded task, are parsed with the overrun allowed."""
    text = HEAD + "[budget.rounds]\nlimit = 2\nused = 3\n" + AGENT
    with pytest.raises(InputError):
        parse_task(text, Path("task.toml"))
    task = parse_task(text, Path("task.toml"), overrun=True)
    assert task.spec.budget.rounds is not None and task.spec.budget.rounds.used == 3
    # The reserves alone are still held within the limit, overrun or not.
    reserves = text.replace("used = 3", "used = 3\nreserve_audit = 3")
    with pytest.raises(InputError, match="reserve_audit 3 is more than limit 2"):
        parse_task(reserves, Path("task.toml"), overrun=True)


@pytest.mark.parametrize(
    ("table", "value", "key"),
    [
        ("rounds", "limit = 100000000000000000000000", "limit"),
        ("rounds", f"limit = {MAX_ROUNDS + 1}", "limit"),
        ("tokens", f"limit = {MAX_TOKENS + 1}", "limit"),
        ("time", 'limit = "1e20h"', "limit"),
        ("time", 'limit = "100000000000000000000h"', "limit"),
        ("time", f"limit = {MAX_TIME_SECONDS + 1}", "limit"),
        ("time", f'limit = "{MAX_TIME_SECONDS // 3600 + 1}h"', "limit"),
        ("rounds", f"limit = 5\nused = {MAX_ROUNDS + 1}", "used"),
    ],
)
def test_budgets_past_their_bounds_are_refused(
    tmp_path: Path, table: str, value: str, key: str
) -> None:
    exit_code, output = run(tmp_path, HEAD + f"[budget.{table}]\n{value}\n" + AGENT)
    assert exit_code == 2, output
    assert f"budget.{table}.{key}" in output, output
    assert "E303" in output or "E301" in output, output


@pytest.mark.parametrize(
    ("table", "value"),
    [
        ("rounds", f"limit = {MAX_ROUNDS}"),
        ("tokens", f"limit = {MAX_TOKENS}"),
        ("time", f"limit = {MAX_TIME_SECONDS}"),
        ("time", f'limit = "{MAX_TIME_SECONDS // 3600}h"'),
    ],
)
def test_budgets_at_their_bounds_are_accepted(table: str, value: str) -> None:
    task = parse_task(HEAD + f"[budget.{table}]\n{value}\n" + AGENT, Path("task.toml"))
    assert getattr(task.spec.budget, table) is not None


def test_the_schema_describes_the_bounds() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "harness", "schema", "task"],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    schema = json.loads(done.stdout)
    defs = schema["$defs"]
    count = defs["CountBudget"]["properties"]
    assert count["limit"]["maximum"] == MAX_TOKENS
    assert "limit" in count["used"]["description"]
    time = defs["TimeBudget"]["properties"]
    assert "limit" in time["used"]["description"]
    number = next(b for b in time["limit"]["anyOf"] if b.get("type") == "number")
    assert number["maximum"] == MAX_TIME_SECONDS
    # Only JSON Schema keywords (a bound on the float itself came out as `le`).
    assert "le" not in time["limit"] and "ge" not in time["limit"]
    assert defs["RoundsBudget"]["properties"]["limit"]["maximum"] == MAX_ROUNDS


@pytest.mark.parametrize(
    ("check", "bad"),
    [
        ('pytest = "/etc"', "/etc"),
        ('pytest = "tests/../../x"', "tests/../../x"),
        ('pytest = "-q ../outside/test_a.py"', "../outside/test_a.py"),
        ('pytest = "--rootdir=/"', "/"),
        ('pytest = "-c /etc/passwd tests"', "/etc/passwd"),
        ('pytest = "/etc/x.py::test_a"', "/etc/x.py::test_a"),
        ('unittest = "/etc"', "/etc"),
        ('unittest = "../tests"', "../tests"),
    ],
)
def test_a_runner_selection_outside_the_workspace_is_refused(
    tmp_path: Path, check: str, bad: str
) -> None:
    text = HEAD + AGENT + RUBRIC.format(id="tests_pass") + check + "\n"
    exit_code, output = run(tmp_path, text)
    assert exit_code == 2, output
    assert "rubric.criteria.0" in output and "tests_pass" in output and "E303" in output
    assert repr(bad) in output, output


def test_an_unclosed_quote_in_a_runner_selection_is_refused(tmp_path: Path) -> None:
    text = HEAD + AGENT + RUBRIC.format(id="t1") + 'pytest = "\'tests"\n'
    exit_code, output = run(tmp_path, text)
    assert exit_code == 2, output
    assert "rubric.criteria.0" in output and "E303" in output and "quot" in output, output


@pytest.mark.parametrize(
    "check",
    [
        'pytest = "tests"',
        'pytest = "-q tests/test_a.py::test_one -k fast"',
        'pytest = "$ILH_CHECKS/test_hidden.py"',
        'pytest = "/ilh-checks"',
        'unittest = "tests"',
        'unittest = "tests.test_a.Case.test_one"',
        'unittest = "${ILH_CHECKS}"',
    ],
)
def test_runner_selections_inside_the_trees_are_accepted(check: str) -> None:
    rubric = RUBRIC.format(id="t1") + check + "\n"
    if "CHECKS" in check or "ilh-checks" in check:
        rubric = rubric.replace("threshold = 0.5", 'threshold = 0.5\nchecks = "hidden"')
    task = parse_task(HEAD + AGENT + rubric, Path("task.toml"))
    assert task.spec.rubric is not None
