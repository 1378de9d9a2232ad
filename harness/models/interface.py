"""The one client interface the orchestrator, the grader and the refuter use.

Requests carry provenance-rendered messages, tool definitions, the clamped maximum
output and the clamped timeout; replies carry text, tool calls, usage as the provider
reported it (or an estimate, flagged), the stop reason and the latency.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Literal, Protocol, TypeGuard, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field, field_validator

from envelopes.encodable import whole_json_text, whole_text
from harness.workspace.tools import ToolCall, ToolSpec

Role = Literal["system", "user", "assistant", "tool"]


class Message(BaseModel):
    model_config = ConfigDict(frozen=True)

    role: Role
    content: str
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None


class ModelRequest(BaseModel):
    model_config = ConfigDict(frozen=True)

    messages: tuple[Message, ...]
    tools: tuple[ToolSpec, ...] = ()
    max_output_tokens: int = Field(ge=1)
    timeout_s: float = Field(gt=0)


class Usage(BaseModel):
    model_config = ConfigDict(frozen=True)

    input_tokens: int = Field(ge=0)
    output_tokens: int = Field(ge=0)
    estimated: bool = False

    @property
    def total(self) -> int:
        return self.input_tokens + self.output_tokens


def _whole_call(call: ToolCall) -> ToolCall:
    """A tool call a model proposed, every string of it whole (`whole_text`)."""
    try:
        dumped = json.dumps(call.arguments, ensure_ascii=False)
    except (TypeError, ValueError, RecursionError):  # not from JSON: left to the tool to refuse
        return call
    whole = whole_json_text(dumped)
    if whole is dumped and whole_text(call.name + (call.id or "")) == call.name + (call.id or ""):
        return call
    return ToolCall(
        name=whole_text(call.name),
        arguments=json.loads(whole),
        id=None if call.id is None else whole_text(call.id),
    )


class ModelReply(BaseModel):
    model_config = ConfigDict(frozen=True)

    text: str
    tool_calls: tuple[ToolCall, ...] = ()
    usage: Usage
    stop_reason: str = "end_turn"
    latency_s: float = 0.0

    @field_validator("text", "stop_reason")
    @classmethod
    def _whole_text(cls, value: str) -> str:
        # A model's reply is hostile input: half a surrogate pair (a JSON "\ud800")
        # would make hashing, recording and the next envelope raise.
        return whole_text(value)

    @field_validator("tool_calls")
    @classmethod
    def _whole_calls(cls, value: tuple[ToolCall, ...]) -> tuple[ToolCall, ...]:
        return tuple(_whole_call(call) for call in value)


class AgentEnded(Exception):
    """The agent has nothing more to say (a scripted agent's script ran out)."""


ErrorKind = Literal[
    "rate_limited",  # 429
    "server_error",  # 5xx, 408, 409, Anthropic's 529 "overloaded"
    "connection",  # no answer: refused, reset, DNS, TLS
    "timeout",  # no answer in time (or the deadline left no room for another attempt)
    "malformed",  # an answer that is not a usable reply: bad JSON, missing fields, cut off
    "bad_request",  # 4xx the provider will refuse again: 400, 404, 413, 422
    "auth",  # 401, 403: key missing, wrong or not allowed
    "local",  # the in-process model failed (context overflow, load error)
    "unrecorded",  # replay: a request the recording has not seen
    "recording",  # --record: the call could not be written to the recording
]


class ModelAttempt(BaseModel):
    """One attempt of a model call, as the run record keeps it (EventKind.MODEL_ATTEMPT).

    Messages are scrubbed of credentials before they get here."""

    model_config = ConfigDict(frozen=True)

    model: str
    attempt: int = Field(ge=1)
    outcome: Literal["ok", "retry", "failed"]
    error: ErrorKind | None = None
    status: int | None = None
    message: str | None = None
    latency_s: float = Field(ge=0)
    retry_after_s: float | None = None
    """What the provider asked for (Retry-After), if anything."""
    wait_s: float | None = None
    """The backoff slept before the next attempt (outcome "retry" only)."""


AttemptListener = Callable[[ModelAttempt], None]


class ModelCallError(Exception):
    """A model call that produced no usable reply: retries exhausted, an error that is not
    worth retrying, or a malformed response. The run survives it: the orchestrator records
    it and stops with reason:model_error. `str()` never holds a credential."""

    def __init__(
        self,
        kind: ErrorKind,
        message: str,
        *,
        model: str,
        attempts: int = 1,
        status: int | None = None,
        usage: Usage | None = None,
    ) -> None:
        super().__init__(f"{model}: {kind}: {message}")
        self.kind: ErrorKind = kind
        self.message = message
        self.model = model
        self.attempts = attempts
        self.status = status
        self.usage = usage
        """Usage the provider reported for a reply that was otherwise unusable (charged)."""

    def record(self) -> dict[str, object]:
        return {
            "model": self.model,
            "kind": self.kind,
            "message": self.message,
            "attempts": self.attempts,
            "status": self.status,
            "usage": None if self.usage is None else self.usage.model_dump(),
        }


class ModelClient(Protocol):
    @property
    def name(self) -> str: ...

    async def complete(self, request: ModelRequest) -> ModelReply: ...


@runtime_checkable
class ReportsAttempts(Protocol):
    """A client that reports every attempt of a call (retries included) to a listener.
    The orchestrator sets `on_attempt` so each attempt becomes a record event."""

    on_attempt: AttemptListener | None


def reports_attempts(client: object) -> TypeGuard[ReportsAttempts]:
    """`isinstance(client, ReportsAttempts)`, which for a data protocol is this `hasattr`,
    without typing's runtime-protocol walk (tens of microseconds a call on 3.11, and
    every run asks for its clients)."""
    return hasattr(client, "on_attempt")


def estimates_input(client: object) -> TypeGuard[EstimatesInput]:
    """`isinstance(client, EstimatesInput)` without typing's runtime-protocol walk (asked
    every round)."""
    return callable(getattr(client, "estimate_input", None))


@runtime_checkable
class EstimatesInput(Protocol):
    """A client that knows what its provider really sends: tool definitions, tool-call
    arguments, hidden prompts (Anthropic's tool-use system prompt). The orchestrator asks
    it for the input estimate the clamp uses; other clients get the plain message
    estimate."""

    def estimate_input(self, messages: Sequence[Message], tools: Sequence[ToolSpec]) -> int: ...
