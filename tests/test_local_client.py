"""The local client's plumbing, without running the model: how tools are described to a
model without native tool calling, how its calls are read back, and how a missing extra
is reported."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.inputs.errors import InputError
from harness.models.clients.local_client import (
    _without_weight_repacking,
    local_messages,
    parse_tool_calls,
    smollm2_path,
    tools_prompt,
)
from harness.models.interface import Message
from harness.workspace.tools import ToolCall, tool_specs


def test_tools_are_described_in_the_system_message() -> None:
    sent = local_messages(
        [Message(role="system", content="contract"), Message(role="user", content="task")],
        tool_specs(),
    )
    assert sent[0]["role"] == "system" and sent[0]["content"].startswith("contract")
    assert "<tool_call>" in sent[0]["content"]
    assert "- write_file{path, content}" in sent[0]["content"]
    assert "- list_files{path?}" in sent[0]["content"]
    assert tools_prompt(()) == ""


def test_history_is_written_back_as_the_model_would_write_it() -> None:
    call = ToolCall(name="read_file", arguments={"path": "a.py"}, id="local_0_0")
    sent = local_messages(
        [
            Message(role="assistant", content="reading", tool_calls=(call,)),
            Message(role="tool", content="text of a.py", tool_call_id="local_0_0"),
        ],
        (),
    )
    assert sent[0] == {
        "role": "assistant",
        "content": "reading\n<tool_call>"
        + '{"name": "read_file", "arguments": {"path": "a.py"}}'
        + "</tool_call>",
    }
    assert sent[1] == {"role": "user", "content": "Tool result:\ntext of a.py"}


def test_well_formed_calls_are_taken_and_malformed_ones_stay_text() -> None:
    text = (
        "First a look.\n"
        '<tool_call>{"name": "list_files", "arguments": {}}</tool_call>\n'
        '<tool_call>{"name": "read_file", "parameters": {"path": "x"}}</tool_call>\n'
        "<tool_call>{not json}</tool_call>\n"
        '<tool_call>{"arguments": {}}</tool_call>\n'
        '<tool_call>{"name": "grep", "arguments": {"pattern": "a"'
    )
    rest, calls = parse_tool_calls(text, prefix="local_3")
    assert [(c.name, c.arguments, c.id) for c in calls] == [
        ("list_files", {}, "local_3_0"),
        ("read_file", {"path": "x"}, "local_3_1"),
    ]
    assert rest.startswith("First a look.")
    assert "{not json}" in rest and '{"arguments": {}}' in rest and "grep" in rest


def test_a_missing_gguf_override_is_bad_input(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("ILH_SMOLLM2_GGUF", str(tmp_path / "none.gguf"))
    with pytest.raises(InputError, match="no GGUF file"):
        smollm2_path()


def test_the_gguf_override_is_used(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    model = tmp_path / "m.gguf"
    model.write_bytes(b"GGUF")
    monkeypatch.setenv("ILH_SMOLLM2_GGUF", str(model))
    assert smollm2_path() == model


def test_without_the_extra_the_message_says_how_to_install_it(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from harness.models.clients import local_client
    from harness.run import setup as run_setup

    task_file = tmp_path / "task.toml"
    task_file.write_text('[task]\nid = "t"\nobjective = "x"\n')
    from harness.inputs.task_file import load_task

    task = load_task(task_file)
    # No silent default model: a task without [agent] and no --model is bad input.
    with pytest.raises(InputError, match="no model"):
        run_setup.model_uri(task, None)
    monkeypatch.setattr(local_client, "llama_available", lambda: False)
    with pytest.raises(InputError, match=r"pip install 'ilang-harness\[local\]'"):
        run_setup.client_for("local:smollm2", task)


def test_an_unknown_local_model_is_bad_input(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from harness.inputs.task_file import load_task
    from harness.models.clients import local_client
    from harness.run import setup as run_setup

    task_file = tmp_path / "task.toml"
    task_file.write_text('[task]\nid = "t"\nobjective = "x"\n')
    monkeypatch.setattr(local_client, "llama_available", lambda: True)
    with pytest.raises(InputError) as caught:
        run_setup.client_for("local:gpt-5", load_task(task_file))
    assert caught.value.code == "E303"


def test_the_model_loads_without_weight_repacking_and_the_defaults_come_back() -> None:
    """Repacked (AMX) weights crash llama.cpp on a multi-token prompt; the load turns them
    off for itself only."""
    llama = pytest.importorskip("llama_cpp.llama", reason="needs the `local` extra")
    bindings = llama.llama_cpp
    original = bindings.llama_model_default_params
    with _without_weight_repacking():
        assert bindings.llama_model_default_params().use_extra_bufts is False
    assert bindings.llama_model_default_params is original
    assert bindings.llama_model_default_params().use_extra_bufts is True
