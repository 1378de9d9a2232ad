"""The workspace a certified handoff is dispatched with is the certified one (certify8).

`ilh run` checked a `[handoff]`'s granted sources when it prepared the task, and copied
the workspace template into the run later: in a batch, after every task before it had
run. A template edited in that window (`fizz.py` planted) was handed to the agent under a
certificate that never saw it. The sources are checked again as the run starts, and the
agent's copy of a template that is a granted source must have the certified identity."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import pytest

from harness.inputs.errors import InputError
from harness.inputs.task_file import load_task
from harness.record.store import RunStore
from harness.run.setup import prepare, run_task
from tests.certify_helpers import certify, copy_example


def certified_task(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = copy_example("certify_handoff", tmp_path)
    code, _, made = certify(
        folder, monkeypatch, "handoff.md", "--role", "implementer", "--source", "workspace",
        "--verify", "python -m unittest -q", "--certificate", "handoff.cert.json",
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


def test_a_template_edited_after_the_check_is_not_dispatched(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = certified_task(tmp_path, monkeypatch)
    task = load_task(folder / "task.toml")
    store_path = tmp_path / "runs.db"
    prepared = prepare(task, store_path)
    # between the check and the copy (a batch: while the tasks before this one run)
    (folder / "workspace" / "fizz.py").write_text("# planted after certification\n")
    with RunStore(store_path) as store, pytest.raises(InputError) as refused:
        asyncio.run(run_task(task, store, prepared=prepared))
    assert refused.value.code == "E303", refused.value
    assert "changed after certification" in refused.value.message, refused.value


def test_an_unchanged_template_is_dispatched(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = certified_task(tmp_path, monkeypatch)
    task = load_task(folder / "task.toml")
    store_path = tmp_path / "runs.db"
    prepared = prepare(task, store_path)
    with RunStore(store_path) as store:
        result = asyncio.run(run_task(task, store, prepared=prepared))
    assert result.ended_by == "committed_complete", result.notes


def test_a_copy_that_is_not_the_certified_template_is_not_dispatched(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The template edited while it is copied (after the last check of the template itself):
    # the copy is what the agent gets, so the copy is what is compared.
    import harness.run.setup as setup

    folder = certified_task(tmp_path, monkeypatch)
    task = load_task(folder / "task.toml")
    store_path = tmp_path / "runs.db"
    copied = setup._run_folders

    def racing(store: RunStore, run_id: str, task: object) -> object:
        workspace, grading = copied(store, run_id, task)  # type: ignore[arg-type]
        (workspace.root / "fizz.py").write_text("# planted during the copy\n")
        return workspace, grading

    monkeypatch.setattr(setup, "_run_folders", racing)
    with RunStore(store_path) as store, pytest.raises(InputError) as refused:
        asyncio.run(run_task(task, store))
    assert refused.value.code == "E303", refused.value
    assert "before the run copied it" in refused.value.message, refused.value
