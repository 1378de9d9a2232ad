"""A task file can demand a refuter for its handoff (certify8).

A certificate issued by the no-model mode (realization `lint-fallback`) was accepted by
`ilh run` like one a refuter passed, though DIYLISIS's Certified tier says the label
claims exactly its realization's rigor. `[handoff] realization = "refuter-subagent"` now
demands at least that rung of Rule 9's ladder: a lint-fallback certificate is refused
(E303, exit 2, before any model call), and `ilh run` says which realization the handoff
it dispatched was certified under."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from harness.cli.main import ilh
from harness.record.store import RunStore
from tests.certify_helpers import certify, copy_example


def prepared(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *model: str) -> Path:
    """`certify_handoff` certified here (with `model` as the refuter, if any), its
    objective the certified record."""
    folder = copy_example("certify_handoff", tmp_path)
    if model:
        clean = copy_example("certify_clean", tmp_path / "c")
        script = (clean / "refuter_pass.jsonl").read_text()
        # the same files, granted here as `workspace`
        (folder / "refuter.jsonl").write_text(script.replace("1-project", "1-workspace"))
    code, _, made = certify(
        folder, monkeypatch, "handoff.md", "--role", "implementer", "--source", "workspace",
        "--verify", "python -m unittest -q", "--certificate", "handoff.cert.json", *model,
        store=tmp_path / "runs.db",
    )  # fmt: skip
    assert code == 0, made.output
    task = (folder / "task.toml").read_text()
    certified = (folder / "handoff.md").read_text()
    (folder / "task.toml").write_text(
        re.sub(
            r'objective = """.*?"""', lambda _: f'objective = """{certified}"""', task, flags=re.S
        )
    )
    return folder


def demand(folder: Path, realization: str) -> None:
    task = folder / "task.toml"
    task.write_text(task.read_text() + f'realization = "{realization}"\n')


def run(folder: Path, store: Path) -> tuple[int, str, str]:
    result = CliRunner().invoke(
        ilh, ["run", str(folder / "task.toml"), "--json", "--store", str(store)],
        catch_exceptions=False,
    )  # fmt: skip
    return result.exit_code, result.stdout, result.stderr


def test_a_lint_fallback_certificate_is_refused_where_a_refuter_is_demanded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = prepared(tmp_path, monkeypatch)
    demand(folder, "refuter-subagent")
    store = tmp_path / "runs.db"
    with RunStore(store) as runs:
        before = {r.run_id for r in runs.list_runs()}
    code, out, err = run(folder, store)
    assert code == 2 and out == "", err
    lines = err.splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    assert lines[0].startswith(f"error {folder / 'task.toml'}"), lines[0]
    assert "E303" in lines[0] and "lint-fallback" in lines[0], lines[0]
    assert "refuter-subagent" in lines[0] and "--model" in lines[0], lines[0]
    with RunStore(store) as runs:
        assert {r.run_id for r in runs.list_runs()} == before  # no run, no model call


def test_a_refuter_certificate_is_dispatched_and_said(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = prepared(tmp_path, monkeypatch, "--model", "scripted:refuter.jsonl")
    demand(folder, "refuter-subagent")
    code, out, err = run(folder, tmp_path / "runs.db")
    assert code in (0, 3), err
    notes = json.loads(out)["notes"]
    assert any("refuter-subagent" in n and "handoff.cert.json" in n for n in notes), notes


def test_without_a_demand_a_lint_fallback_certificate_dispatches_and_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = prepared(tmp_path, monkeypatch)
    code, out, err = run(folder, tmp_path / "runs.db")
    assert code in (0, 3), err
    notes = json.loads(out)["notes"]
    assert any("lint-fallback" in n and "handoff.cert.json" in n for n in notes), notes


def test_a_demand_outside_the_ladder_is_bad_input(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = prepared(tmp_path, monkeypatch)
    demand(folder, "refuter")
    code, _, err = run(folder, tmp_path / "runs.db")
    assert code == 2 and "realization" in err and "Traceback" not in err, err


def test_the_task_schema_shows_the_demand() -> None:
    result = CliRunner().invoke(ilh, ["schema", "task"], catch_exceptions=False)
    schema = json.loads(result.stdout)
    handoff = schema["$defs"]["HandoffSection"]["properties"]
    assert "realization" in handoff, handoff
    assert "refuter-subagent" in json.dumps(handoff["realization"])
