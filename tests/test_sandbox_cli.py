"""The sandbox as a person sees it: `ilh run`/`ilh grade` with `--sandbox` and `--network`,
what the record, `--json` and the summary say, and the refusal where no sandbox exists."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from harness.cli.main import ilh
from harness.record.store import RunStore
from harness.workspace import sandbox as sandbox_module

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
HONEST = EXAMPLES / "honest" / "task.toml"


@pytest.fixture
def no_bwrap(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """This machine as one without any bwrap."""
    monkeypatch.setattr(sandbox_module, "find_bwrap", lambda: None)
    sandbox_module._probe.cache_clear()
    yield
    sandbox_module._probe.cache_clear()


def run_json(tmp_path: Path, *extra: str) -> tuple[int, dict[str, Any], str]:
    result = CliRunner().invoke(
        ilh,
        ["run", str(HONEST), "--json", "--store", str(tmp_path / "runs.db"), *extra],
        catch_exceptions=False,
    )
    return result.exit_code, json.loads(result.stdout), result.stderr


def test_run_is_confined_by_default_and_says_so(tmp_path: Path) -> None:
    code, out, _ = run_json(tmp_path)
    assert code == 0 and out["ended_by"] == "committed_complete"
    assert out["sandbox"]["mode"] == "bwrap" and out["sandbox"]["confined"] is True
    assert out["sandbox"]["network"] == "none" and out["sandbox"]["available"] is True
    with RunStore(tmp_path / "runs.db") as store:
        meta = store.get_run(out["run_id"]).meta
        assert meta["sandbox"]["mode"] == "bwrap"
        tool_rows = [e for e in store.events(out["run_id"]) if e.kind == "tool_call"]
        assert any(r.payload.get("meta", {}).get("sandbox") == "bwrap" for r in tool_rows)


def test_sandbox_none_is_explicit_recorded_and_loud(tmp_path: Path) -> None:
    code, out, _ = run_json(tmp_path, "--sandbox", "none")
    assert code == 0
    assert out["sandbox"]["mode"] == "none" and out["sandbox"]["confined"] is False
    assert "UNCONFINED" in out["sandbox"]["warning"]
    with RunStore(tmp_path / "runs.db") as store:
        assert store.get_run(out["run_id"]).meta["sandbox"]["confined"] is False
    shown = CliRunner().invoke(
        ilh,
        ["run", str(HONEST), "--sandbox", "none", "--store", str(tmp_path / "other.db")],
        catch_exceptions=False,
    )
    assert "NONE" in shown.stdout and "UNCONFINED" in shown.stdout


def test_network_host_is_recorded(tmp_path: Path) -> None:
    _, out, _ = run_json(tmp_path, "--network", "host")
    assert out["sandbox"]["network"] == "host"


def test_without_a_sandbox_commands_are_refused_and_nothing_is_complete(
    tmp_path: Path, no_bwrap: None
) -> None:
    code, out, _ = run_json(tmp_path)
    assert code == 3 and out["final"]["state"] != "complete"
    assert out["sandbox"]["available"] is False
    assert "--sandbox none" in out["sandbox"]["reason"]
    with RunStore(tmp_path / "runs.db") as store:
        tool_rows = [e for e in store.events(out["run_id"]) if e.kind == "tool_call"]
    refused = [r for r in tool_rows if r.payload.get("meta", {}).get("error") == "no_sandbox"]
    assert refused, "run_command was not refused"
    # And the explicit way out works on the same machine.
    code, out, _ = run_json(tmp_path, "--sandbox", "none")
    assert code == 0 and out["final"]["state"] == "complete"


def test_grade_refuses_checks_without_a_sandbox(tmp_path: Path, no_bwrap: None) -> None:
    workspace = EXAMPLES / "grade_true" / "workspace"
    task = EXAMPLES / "grade_true" / "task.toml"
    refused = CliRunner().invoke(
        ilh, ["grade", str(task), "--workspace", str(workspace)], catch_exceptions=False
    )
    assert refused.exit_code == 1
    assert "unavailable" in refused.stdout
    allowed = CliRunner().invoke(
        ilh,
        ["grade", str(task), "--workspace", str(workspace), "--sandbox", "none", "--json"],
        catch_exceptions=False,
    )
    assert allowed.exit_code == 0
    assert json.loads(allowed.stdout)["verdict"] == "verified_complete"
    assert "UNCONFINED" in allowed.stderr


def test_task_file_sandbox_section(tmp_path: Path) -> None:
    folder = tmp_path / "t"
    folder.mkdir()
    text = HONEST.read_text().replace("scripted:agent.jsonl", "scripted:a.jsonl")
    (folder / "a.jsonl").write_text((EXAMPLES / "honest" / "agent.jsonl").read_text())
    shutil.copytree(EXAMPLES / "honest" / "workspace", folder / "workspace")
    (folder / "task.toml").write_text(
        text + '\n[sandbox]\nnetwork = "host"\nprocesses = 64\nfile_size = "8MiB"\n'
    )
    result = CliRunner().invoke(
        ilh,
        ["run", str(folder / "task.toml"), "--json", "--store", str(tmp_path / "r.db")],
        catch_exceptions=False,
    )
    out = json.loads(result.stdout)
    assert out["sandbox"]["network"] == "host"
    assert out["sandbox"]["limits"]["processes"] == 64
    assert out["sandbox"]["limits"]["file_size"] == 8 * 1024 * 1024
    # The command line wins over the task file.
    result = CliRunner().invoke(
        ilh,
        [
            "run",
            str(folder / "task.toml"),
            "--json",
            "--network",
            "none",
            "--store",
            str(tmp_path / "r2.db"),
        ],
        catch_exceptions=False,
    )
    assert json.loads(result.stdout)["sandbox"]["network"] == "none"


@pytest.mark.parametrize(
    "section",
    [
        '[sandbox]\nmode = "none"\n',  # a task file cannot switch the sandbox off
        '[sandbox]\nnetwork = "everything"\n',
        "[sandbox]\nprocesses = 0\n",
        '[sandbox]\nfile_size = "lots"\n',
    ],
)
def test_bad_sandbox_sections_are_input_errors(tmp_path: Path, section: str) -> None:
    task = tmp_path / "task.toml"
    task.write_text('[task]\nid = "t"\nobjective = "o"\n' + section)
    result = CliRunner().invoke(ilh, ["run", str(task), "--store", str(tmp_path / "r.db")])
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output and "sandbox" in result.output
