"""The one client interface the orchestrator, the grader and the refuter use.

Requests carry provenance-rendered messages, tool definitions, the clamped maximum
output and the clamped timeout; replies carry text, tool calls, usage as the provider
reported it (or an estimate, flagged), the stop reason and the latency.
"""

from __future__ import annotations

from typing import Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field

from harness.tools import ToolCall, ToolSpec

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


class ModelReply(BaseModel):
    model_config = ConfigDict(frozen=True)

    text: str
    tool_calls: tuple[ToolCall, ...] = ()
    usage: Usage
    stop_reason: str = "end_turn"
    latency_s: float = 0.0


class AgentEnded(Exception):
    """The agent has nothing more to say (a scripted agent's script ran out)."""


class ModelClient(Protocol):
    @property
    def name(self) -> str: ...

    async def complete(self, request: ModelRequest) -> ModelReply: ...
