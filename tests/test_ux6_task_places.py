"""Each value of a task file that is wrong is reported at its line, in words (ux6).

Before: a workspace or checks folder that was a file said "not found", at no line; a
missing `[handoff] certificate` named an absolute path and no line; an id with a space
quoted the regular expression; a task file's `[agent] model` that could not be used
(an unknown local model, a missing API key) was reported at `--model`, a flag the
person had not typed."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.inputs.errors import InputError
from harness.inputs.task_file import Task, parse_task
from harness.run.setup import check_handoff, client_for

TASK = """[task]
id = "t"
objective = "do it"
workspace = "ws"

[rubric]
threshold = 0.5
checks = "hidden"
[[rubric.criteria]]
id = "a"
weight = 1.0
check = "x"

[agent]
model = "scripted:agent.jsonl"
"""


def task_in(folder: Path, text: str = TASK) -> Task:
    path = folder / "task.toml"
    path.write_text(text, encoding="utf-8")
    return parse_task(text, path)


def line_of(text: str, start: str) -> int:
    return next(n for n, line in enumerate(text.splitlines(), 1) if line.startswith(start))


def test_a_workspace_that_is_a_file_is_named_a_file_at_its_line(tmp_path: Path) -> None:
    (tmp_path / "ws").write_text("not a folder")
    task = task_in(tmp_path)
    with pytest.raises(InputError) as caught:
        task.workspace_template()
    err = caught.value
    assert (err.code, err.line) == ("E500", line_of(TASK, "workspace ="))
    assert err.message == "workspace folder 'ws' is a file, not a folder"


def test_a_missing_checks_folder_says_where_it_was_looked_for(tmp_path: Path) -> None:
    (tmp_path / "ws").mkdir()
    task = task_in(tmp_path)
    with pytest.raises(InputError) as caught:
        task.checks_folder()
    err = caught.value
    assert err.line == line_of(TASK, "checks =")
    assert err.message == f"checks folder 'hidden' not found (looked for {tmp_path / 'hidden'})"


def test_a_workspace_outside_the_task_folder_is_at_its_line(tmp_path: Path) -> None:
    text = TASK.replace('workspace = "ws"', 'workspace = "../.."')
    with pytest.raises(InputError) as caught:
        task_in(tmp_path, text).workspace_template()
    assert caught.value.line == line_of(text, "workspace =")


def test_a_missing_handoff_certificate_is_at_its_line(tmp_path: Path) -> None:
    text = TASK + '\n[handoff]\ncertificate = "handoff.cert.json"\n'
    with pytest.raises(InputError) as caught:
        check_handoff(task_in(tmp_path, text))
    err = caught.value
    assert (err.path, err.code) == (str(tmp_path / "task.toml"), "E500")
    assert err.line == line_of(text, "certificate =")
    assert err.message.startswith(
        "handoff.certificate: no certificate 'handoff.cert.json' beside the task file"
    )


@pytest.mark.parametrize(
    ("old", "new", "words"),
    [
        ('id = "t"', 'id = "my task"', "task.id: a task id is 1 to 64 letters, digits"),
        ('id = "a"', 'id = "a-b"', "rubric.criteria.0.id: a criterion id is 1 to 64"),
        ('model = "scripted:', 'model = "gpt4:', "agent.model: a model URI is SCHEME:NAME"),
    ],
)
def test_a_name_of_the_wrong_shape_is_explained_in_words(
    tmp_path: Path, old: str, new: str, words: str
) -> None:
    text = TASK.replace(old, new, 1)
    with pytest.raises(InputError) as caught:
        task_in(tmp_path, text)
    assert caught.value.message.startswith(words), caught.value.message
    assert "pattern" not in caught.value.message


def test_a_task_files_unusable_model_is_reported_at_agent_model(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    text = TASK.replace("scripted:agent.jsonl", "openai:some-model")
    task = task_in(tmp_path, text)
    with pytest.raises(InputError) as caught:
        client_for("openai:some-model", task)
    err = caught.value
    assert (err.path, err.line) == (str(tmp_path / "task.toml"), line_of(text, "model ="))
    assert err.message.startswith("agent.model: openai:some-model needs OPENAI_API_KEY")
    # Typed on the command line, the same URI is the flag's.
    with pytest.raises(InputError) as typed:
        client_for("openai:some-model", task, on_command_line=True)
    assert typed.value.path == "--model"
