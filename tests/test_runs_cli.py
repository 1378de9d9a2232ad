"""`ilh runs list|show|verify|export` over real runs of the examples."""

from __future__ import annotations

import json
import sqlite3
from itertools import pairwise
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from harness.cli.main import ilh
from harness.record.store import RunStore
from tests.test_store import tamper

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def invoke(*args: str) -> Result:
    return CliRunner().invoke(ilh, list(args), catch_exceptions=False, terminal_width=80)


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    """Two runs: the honest example (verified, complete) and the forged commit."""
    db = tmp_path_factory.mktemp("runs") / "runs.db"
    ids = []
    for example in ("honest", "forged_commit"):
        result = invoke("run", str(EXAMPLES / example / "task.toml"), "--store", str(db), "--json")
        ids.append(json.loads(result.stdout)["run_id"])
    return db, ids


def test_list_shows_every_run_id_whole_even_on_80_columns(store: tuple[Path, list[str]]) -> None:
    db, ids = store
    result = invoke("runs", "list", "--store", str(db))
    assert result.exit_code == 0
    for run_id in ids:
        assert run_id in result.output
    listed = json.loads(invoke("runs", "list", "--store", str(db), "--json").stdout)
    assert [r["run_id"] for r in listed] == ids
    assert [r["ended_by"] for r in listed] == ["committed_complete", "script_exhausted"]


@pytest.mark.parametrize("columns", [200, 100, 80, 40])
def test_list_never_folds_a_value_inside_a_word(
    store: tuple[Path, list[str]], columns: int
) -> None:
    """Run ids, states, ends and record checks are read (and copied) as words: at any
    width each is whole on one line, and no line is wider than the terminal. (rich's
    table folded them at 80 columns: `authen` / `ticate` / `d`.)"""
    db, _ = store
    listed = json.loads(invoke("runs", "list", "--store", str(db), "--json").stdout)
    table = CliRunner().invoke(
        ilh, ["runs", "list", "--store", str(db)], env={"COLUMNS": str(columns)}
    )
    assert table.exit_code == 0, table.output
    lines = table.output.splitlines()
    assert all(len(line) <= columns for line in lines), table.output
    words = {w for line in lines for w in line.replace(",", " ").split()}
    for run in listed:
        for value in (run["run_id"], run["last_state"], run["ended_by"], run["record"]):
            assert value in words, (value, table.output)
        assert run["task_id"] in words or any(w.endswith("…") for w in words)


def test_a_long_task_id_is_cut_with_an_ellipsis_in_a_table_never_the_run_id(
    tmp_path: Path,
) -> None:
    db = tmp_path / "runs.db"
    with RunStore(db) as runs:
        run_id = runs.create_run("a-task-id-far-longer-than-any-table-column-should-hold-" * 2)
    table = CliRunner().invoke(ilh, ["runs", "list", "--store", str(db)], env={"COLUMNS": "100"})
    row = next(line for line in table.output.splitlines() if run_id in line)
    assert "a-task-id-far-" in row and "…" in row and "authenticated" in row.split()
    assert len(row) <= 100


def test_show_gives_the_history_proposals_violations_and_grader(
    store: tuple[Path, list[str]],
) -> None:
    db, (honest, forged) = store
    shown = invoke("runs", "show", honest[:22], "--store", str(db)).output  # a unique prefix
    assert "state:complete" in shown and "grader verified_complete" in shown
    shown = invoke("runs", "show", forged, "--store", str(db)).output
    assert "violation authority_forgery" in shown and "downgraded" in shown
    result = json.loads(invoke("runs", "show", honest, "--store", str(db), "--json").stdout)
    assert result["ended_by"] == "committed_complete" and result["grader"]["verdict"]


def test_export_is_every_event_as_a_json_line_in_chain_order(
    store: tuple[Path, list[str]],
) -> None:
    db, (honest, _) = store
    lines = invoke("runs", "export", honest, "--store", str(db)).stdout.splitlines()
    events = [json.loads(line) for line in lines]
    with RunStore(db, create=False) as opened:
        assert len(events) == len(opened.events(honest))
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
    assert all(b["prev_hash"] == a["hash"] for a, b in pairwise(events))


def test_verify_detects_an_edit(tmp_path: Path, store: tuple[Path, list[str]]) -> None:
    db, (honest, _) = store
    assert invoke("runs", "verify", honest, "--store", str(db)).exit_code == 0
    copy = tmp_path / "copy.db"
    with sqlite3.connect(db) as source, sqlite3.connect(copy) as target:
        source.backup(target)
    tamper(
        copy,
        (
            "UPDATE events SET payload = replace(payload, 'complete', 'running') "
            "WHERE run_id = ? AND kind = 'state_change'",
            (honest,),
        ),
    )
    result = CliRunner().invoke(ilh, ["runs", "verify", honest, "--store", str(copy)])
    assert result.exit_code == 1 and "TAMPERED" in result.stderr


def test_unknown_runs_and_missing_stores_are_usage_errors(
    tmp_path: Path, store: tuple[Path, list[str]]
) -> None:
    db, _ = store
    for command in ("show", "verify", "export"):
        result = CliRunner().invoke(ilh, ["runs", command, "nope", "--store", str(db)])
        assert result.exit_code == 2 and "Traceback" not in result.output
    result = CliRunner().invoke(ilh, ["runs", "list", "--store", str(tmp_path / "none.db")])
    assert result.exit_code == 2 and "no run store" in result.output
