"""The recording format shared by `ilh run --record PATH` and `replay:PATH`.

A recording is a JSONL file, one model call per line, appended (and fsync'd) as each call
ends, so a killed run leaves every finished call on disk:

    {"v": 1, "model": "openai:gpt-4o-mini", "digest": "sha256:…", "input_digest": "sha256:…",
     "input_estimate": 1834, "max_output_tokens": 2048, "messages": ["system:sha256:…", …],
     "reply": {…ModelReply…} | null, "error": {…} | null, "ended": null | "why",
     "attempts": [{…ModelAttempt…}, …]}

`digest` identifies the request: its messages, tool definitions and output cap, in a
canonical form where what differs from run to run by itself is masked — the random ids
and delimiters of ::UNTRUSTED blocks, run ids, the wall-clock figures of time budgets,
and measured durations with a fraction ("Ran 2 tests in 0.012s") — because a replayed
run draws or measures them again. Everything else the model reads is in it: a different
objective, tool output or reply history is a different request, and replay stops there.
`input_digest` is the same without the output cap: replay answers the clamp's input
estimate with it, so the replayed run asks for the same cap. `messages` holds one
digest per message, to say where a request the recording has not seen departs from it.
Nothing secret is written: requests appear only as digests, and error messages were
scrubbed by the client.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from harness.models.interface import ErrorKind, Message, ModelAttempt, ModelReply
from harness.workspace.tools import ToolSpec

FORMAT_VERSION = 1

_UNTRUSTED_ID = re.compile(r"\bu_[0-9a-f]{12}\b")
_DELIMITER = re.compile(r"\bEOF_[0-9a-f]{24}\b")
_RUN_ID = re.compile(r"\b\d{8}T\d{9}-[0-9a-f]{12}\b")
_BUDGET_LINE = re.compile(r"::BUDGET\{[^}\n]*\}")
_TIME_FIGURE = re.compile(r"\b(used|reserve_audit|reserve_summary):[^|}]*")
_DURATION = re.compile(r"\b\d+\.\d+ ?(?:s|ms|sec|secs|seconds)\b")


class RecordedError(BaseModel):
    model_config = ConfigDict(frozen=True)

    kind: ErrorKind
    message: str
    attempts: int = 1
    status: int | None = None
    usage: dict[str, Any] | None = None


class RecordedCall(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    v: int = FORMAT_VERSION
    model: str
    digest: str = Field(pattern=r"^sha256:[0-9a-f]{64}$")
    input_digest: str = Field(pattern=r"^sha256:[0-9a-f]{64}$")
    input_estimate: int = Field(ge=0)
    max_output_tokens: int = Field(ge=1)
    messages: list[str] = Field(default_factory=list)
    reply: ModelReply | None = None
    error: RecordedError | None = None
    ended: str | None = None
    attempts: list[ModelAttempt] = Field(default_factory=list)


def _mask_time(match: re.Match[str]) -> str:
    line = match.group(0)
    if "kind:time" not in line:
        return line
    return _TIME_FIGURE.sub(lambda m: m.group(1) + ":*", line)


def canonical_text(text: str) -> str:
    """`text` with the per-run random parts masked (see the module docstring)."""
    text = _UNTRUSTED_ID.sub("u_*", text)
    text = _DELIMITER.sub("EOF_*", text)
    text = _RUN_ID.sub("RUN_*", text)
    text = _BUDGET_LINE.sub(_mask_time, text)
    return _DURATION.sub("*s", text)


def _sha(value: Any) -> str:
    encoded = json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return "sha256:" + hashlib.sha256(encoded.encode("utf-8")).hexdigest()


def _message_form(message: Message) -> dict[str, Any]:
    return {
        "role": message.role,
        "content": canonical_text(message.content),
        "tool_calls": [
            {"name": c.name, "arguments": c.arguments, "id": c.id} for c in message.tool_calls
        ],
        "tool_call_id": message.tool_call_id,
    }


def message_digests(messages: Sequence[Message]) -> list[str]:
    return [f"{m.role}:{_sha(_message_form(m))}" for m in messages]


def input_digest(messages: Sequence[Message], tools: Sequence[ToolSpec]) -> str:
    return _sha(
        {
            "messages": [_message_form(m) for m in messages],
            "tools": [t.to_openai() for t in tools],
        }
    )


def request_digest(
    messages: Sequence[Message], tools: Sequence[ToolSpec], max_output_tokens: int
) -> str:
    return _sha({"input": input_digest(messages, tools), "max_output_tokens": max_output_tokens})
