"""A misspelt key (ux6). In a task file, an unknown key is the error reported, before the
required key it leaves missing (`idd = "x"` said only `task.id: required key missing`,
though the person had written an id), with the key meant when one is close, else the
keys the table takes. The same in a scripted agent's line (`"txt"` was pydantic's
"Extra inputs are not permitted")."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.inputs.errors import InputError
from harness.inputs.task_file import parse_task
from harness.models.scripted import load_script

TASK = """[task]
id = "t"
objective = "do it"

[budget.rounds]
limit = 2

[rubric]
threshold = 0.5
[[rubric.criteria]]
id = "a"
weight = 1.0
check = "x"

[agent]
model = "scripted:agent.jsonl"
"""


def refused(text: str) -> InputError:
    with pytest.raises(InputError) as caught:
        parse_task(text, Path("task.toml"))
    return caught.value


@pytest.mark.parametrize(
    ("old", "new", "where", "meant"),
    [
        ('id = "t"', 'idd = "t"', "task.idd", "id"),
        ('objective = "do it"', 'objectve = "do it"', "task.objectve", "objective"),
        ("[budget.rounds]", "[budget.round]", "budget.round", "rounds"),
        ("threshold = 0.5", "treshold = 0.5", "rubric.treshold", "threshold"),
        ('check = "x"', 'chek = "x"', "rubric.criteria.0.chek", "check"),
        ("[agent]", "[agnet]", "agnet", "agent"),
        ('model = "scripted', 'modle = "scripted', "agent.modle", "model"),
    ],
)
def test_an_unknown_key_is_reported_with_the_key_meant(
    old: str, new: str, where: str, meant: str
) -> None:
    assert old in TASK
    text = TASK.replace(old, new, 1)
    err = refused(text)
    assert err.code == "E303"
    assert err.message.startswith(f"{where}: unknown key; did you mean {meant!r}?"), err.message
    # At the line that holds the misspelt key (or table header).
    assert new.split(" =")[0] in text.splitlines()[err.line - 1], err.line


def test_an_unknown_key_with_no_close_match_lists_the_keys_of_its_table() -> None:
    err = refused(TASK.replace("[budget.rounds]", "[budget.money]"))
    assert err.message.startswith("budget.money: unknown key; [budget] takes rounds, tokens, time")


def test_an_unknown_top_level_table_lists_the_tables() -> None:
    err = refused(TASK + "\n[extras]\nx = 1\n")
    assert err.message.startswith("extras: unknown key; a task file takes [task], [budget], ")


def test_a_missing_key_alone_is_still_named() -> None:
    err = refused(TASK.replace('objective = "do it"\n', ""))
    assert err.message == "task.objective: required key missing"


def test_an_unknown_key_in_an_agent_script_line(tmp_path: Path) -> None:
    script = tmp_path / "agent.jsonl"
    script.write_text('{"text": "hi"}\n{"txt": "hi"}\n', encoding="utf-8")
    with pytest.raises(InputError) as caught:
        load_script(script)
    err = caught.value
    assert (err.line, err.code) == (2, "E303")
    assert err.message == "txt: unknown key; did you mean 'text'?"


def test_an_unknown_key_in_a_tool_call_lists_the_keys(tmp_path: Path) -> None:
    script = tmp_path / "agent.jsonl"
    script.write_text('{"tool_calls": [{"tool": "read_file"}]}\n', encoding="utf-8")
    with pytest.raises(InputError) as caught:
        load_script(script)
    assert caught.value.message == "tool_calls.0.tool: unknown key; takes name, arguments"
