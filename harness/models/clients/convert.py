"""Provider-neutral messages (`harness.models.interface.Message`) to the shapes each API takes.

The envelope has already rendered provenance into the text (runtime declarations outside,
everything from users and tools inside ::UNTRUSTED blocks); these functions change only
the framing, never the content.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from harness.models.interface import Message
from harness.workspace.tools import ToolCall, ToolSpec

MAX_INVALID_ARGUMENTS_CHARS = 2000
MAX_ARGUMENTS_DEPTH = 32
"""Tool arguments nested deeper than this are refused (kept as `invalid_arguments`): no
tool takes more than a flat object, and the run record's JSON cannot hold values nested
past a few hundred levels, so a hostile reply could otherwise end the run."""


def call_arguments_json(call: ToolCall) -> str:
    return json.dumps(call.arguments, ensure_ascii=False, sort_keys=True)


def arguments_of(raw: object) -> dict[str, Any]:
    """A provider's tool-call arguments as ours: a JSON object (OpenAI sends it as a JSON
    string, Anthropic as an object), `{}` when absent. Anything else (text that is not
    JSON, a list, a number) is kept, cut short, under `invalid_arguments`, for the tool
    to refuse and the agent to see why: a bad call is the agent's mistake, not a reason
    to throw the whole reply away."""
    arguments: object = raw
    if isinstance(raw, str):
        try:
            arguments = json.loads(raw) if raw.strip() else {}
        except (ValueError, RecursionError):
            return {"invalid_arguments": raw[:MAX_INVALID_ARGUMENTS_CHARS]}
    if arguments is None:
        return {}
    if isinstance(arguments, dict) and nesting_depth(arguments) <= MAX_ARGUMENTS_DEPTH:
        return {str(k): v for k, v in arguments.items()}
    if isinstance(raw, str):
        shown = raw
    else:
        try:
            shown = json.dumps(raw, ensure_ascii=False, default=str)
        except (ValueError, RecursionError):
            shown = "(arguments nested too deep to show)"
    return {"invalid_arguments": shown[:MAX_INVALID_ARGUMENTS_CHARS]}


def nesting_depth(value: object) -> int:
    """How deeply `value` nests lists and objects (iterative: no recursion limit)."""
    deepest = 0
    stack: list[tuple[object, int]] = [(value, 1)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, dict):
            children: list[object] = list(item.values())
        elif isinstance(item, list):
            children = list(item)
        else:
            continue
        deepest = max(deepest, level)
        if deepest > MAX_ARGUMENTS_DEPTH:
            return deepest
        stack.extend((child, level + 1) for child in children)
    return deepest


# ------------------------------------------------------------------------------ OpenAI


def openai_messages(messages: Sequence[Message]) -> list[dict[str, Any]]:
    """Chat-completions messages. Tool results answer their call by `tool_call_id`; a
    call without an id (a scripted or replayed turn) gets a stable one, so the answer
    that follows it still pairs with it."""
    out: list[dict[str, Any]] = []
    for index, message in enumerate(messages):
        if message.role == "assistant":
            entry: dict[str, Any] = {"role": "assistant", "content": message.content or None}
            if message.tool_calls:
                entry["tool_calls"] = [
                    {
                        "id": call.id or f"call_{index}_{n}",
                        "type": "function",
                        "function": {"name": call.name, "arguments": call_arguments_json(call)},
                    }
                    for n, call in enumerate(message.tool_calls)
                ]
                if entry["content"] is None:
                    entry.pop("content")
            elif entry["content"] is None:
                entry["content"] = ""
            out.append(entry)
        elif message.role == "tool":
            out.append(
                {"role": "tool", "tool_call_id": message.tool_call_id, "content": message.content}
            )
        else:
            out.append({"role": message.role, "content": message.content})
    return out


def openai_tools(tools: Sequence[ToolSpec]) -> list[dict[str, Any]]:
    return [tool.to_openai() for tool in tools]


# --------------------------------------------------------------------------- Anthropic


def anthropic_messages(messages: Sequence[Message]) -> tuple[str, list[dict[str, Any]]]:
    """(system, messages) for the Messages API.

    System messages join the `system` parameter. Tool results become `tool_result`
    blocks of a user turn, placed before any text of that turn as the API requires, and
    consecutive turns of one role merge (the API wants user and assistant to alternate).
    A tool result whose call is not in the assistant turn before it travels as text.
    """
    system: list[str] = []
    turns: list[dict[str, Any]] = []
    open_calls: set[str] = set()
    for message in messages:
        if message.role == "system":
            system.append(message.content)
            continue
        if message.role == "assistant":
            blocks: list[dict[str, Any]] = []
            if message.content.strip():
                blocks.append({"type": "text", "text": message.content})
            open_calls = set()
            for call in message.tool_calls:
                if call.id is None:
                    continue  # no id to answer: the call shows in the record, not here
                open_calls.add(call.id)
                blocks.append(
                    {"type": "tool_use", "id": call.id, "name": call.name, "input": call.arguments}
                )
            if not blocks:
                blocks.append({"type": "text", "text": "(no text)"})
            _append(turns, "assistant", blocks)
            continue
        if message.role == "tool" and message.tool_call_id in open_calls:
            block = {
                "type": "tool_result",
                "tool_use_id": message.tool_call_id,
                "content": message.content,
            }
            _append(turns, "user", [block], results_first=True)
            continue
        # the API refuses empty text blocks
        _append(turns, "user", [{"type": "text", "text": message.content or "(empty)"}])
    if turns and turns[0]["role"] != "user":
        turns.insert(0, {"role": "user", "content": [{"type": "text", "text": "(begin)"}]})
    return "\n\n".join(system), turns


def _append(
    turns: list[dict[str, Any]],
    role: str,
    blocks: list[dict[str, Any]],
    *,
    results_first: bool = False,
) -> None:
    if turns and turns[-1]["role"] == role:
        content: list[dict[str, Any]] = turns[-1]["content"]
        if results_first:
            # tool_result blocks lead a user turn: insert after the ones already there
            at = sum(1 for b in content if b.get("type") == "tool_result")
            content[at:at] = blocks
        else:
            content.extend(blocks)
        return
    turns.append({"role": role, "content": list(blocks)})


def anthropic_tools(tools: Sequence[ToolSpec]) -> list[dict[str, Any]]:
    return [tool.to_anthropic() for tool in tools]
