"""`anthropic:MODEL`: the Messages API with tool use on the official `anthropic` SDK.

The key comes from `ANTHROPIC_API_KEY`; `--base-url` (or the SDK's `ANTHROPIC_BASE_URL`)
points it at a proxy or a test server. Usage charged is what the API reports: input
tokens (cache writes and reads included: they are input the call processed) and output
tokens; a reply whose usage is missing or unusable is charged the flagged estimate
(`SdkClient.estimated_usage`). A `tool_use` block whose `input` is not an object
reaches the tool as `invalid_arguments`, as OpenAI's unparsable arguments do.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from typing import Any

import anthropic
import structlog
from pydantic import BaseModel, ConfigDict, Field

from harness.inputs.errors import InputError
from harness.models.clients.convert import anthropic_messages, anthropic_tools, arguments_of
from harness.models.clients.sdk_base import SdkClient, SdkErrors, joined_text, known_platform
from harness.models.interface import ModelReply, ModelRequest, Usage
from harness.workspace.tools import ToolCall, ToolSpec

log = structlog.get_logger(__name__)

KEY_ENV = "ANTHROPIC_API_KEY"
BASE_URL_ENV = "ANTHROPIC_BASE_URL"
# With tools, the API adds a tool-use system prompt the messages do not show (the
# documentation gives 313-346 tokens depending on the model and tool_choice).
TOOLS_OVERHEAD = 400


class _Block(BaseModel):
    type: str
    text: str | None = None
    id: str | None = None
    name: str | None = None
    input: Any = None


class _Usage(BaseModel):
    input_tokens: int = Field(ge=0)
    output_tokens: int = Field(ge=0)
    cache_creation_input_tokens: int | None = Field(default=None, ge=0)
    cache_read_input_tokens: int | None = Field(default=None, ge=0)

    def charged(self) -> Usage:
        read = (self.cache_creation_input_tokens or 0) + (self.cache_read_input_tokens or 0)
        return Usage(input_tokens=self.input_tokens + read, output_tokens=self.output_tokens)


class _Message(BaseModel):
    model_config = ConfigDict(extra="ignore")

    type: str = "message"
    content: list[_Block]
    stop_reason: str | None = None
    usage: Any = None
    """Read apart (`_reported_usage`): an unusable usage does not void the reply."""


class AnthropicClient(SdkClient):
    provider = "anthropic"
    tools_overhead = TOOLS_OVERHEAD

    @staticmethod
    def tool_texts(tools: Sequence[ToolSpec]) -> list[str]:
        return [json.dumps(t.to_anthropic(), ensure_ascii=False) for t in tools]

    def __init__(self, model: str, *, api_key: str, base_url: str | None = None, **kw: Any):
        super().__init__(model, api_key=api_key, base_url=base_url, **kw)
        options: dict[str, Any] = {"api_key": api_key, "max_retries": 0, "http_client": self._http}
        if base_url is not None:
            options["base_url"] = base_url
        self._sdk = anthropic.AsyncAnthropic(**options)
        known_platform(self._sdk)

    @classmethod
    def from_env(cls, model: str, *, base_url: str | None = None, **kw: Any) -> AnthropicClient:
        key = os.environ.get(KEY_ENV) or None
        if key is None:
            raise InputError(
                "--model", "E500", f"anthropic:{model} needs {KEY_ENV} in the environment"
            )
        url = base_url or os.environ.get(BASE_URL_ENV) or None
        return cls(model, api_key=key, base_url=url, **kw)

    def _errors(self) -> SdkErrors:
        return SdkErrors(anthropic)

    async def _send(self, request: ModelRequest, timeout_s: float) -> str:
        system, messages = anthropic_messages(request.messages)
        params: dict[str, Any] = {
            "model": self.model,
            "messages": messages,
            "max_tokens": request.max_output_tokens,
            "timeout": timeout_s,
        }
        if system:
            params["system"] = system
        if request.tools:
            params["tools"] = anthropic_tools(request.tools)
        raw = await self._sdk.messages.with_raw_response.create(**params)
        return str(raw.http_response.text)

    def _parse(self, data: dict[str, Any], request: ModelRequest) -> ModelReply:
        message = _Message.model_validate(data)
        texts: list[str] = []
        calls: list[ToolCall] = []
        for block in message.content:
            if block.type == "text":
                texts.append(block.text or "")
            elif block.type == "tool_use":
                if not block.id or not block.name:
                    # the next request must answer this call by its id: unusable without
                    raise ValueError("a tool_use block without an id or a name")
                calls.append(
                    ToolCall(name=block.name, arguments=arguments_of(block.input), id=block.id)
                )
        text = joined_text(texts)
        usage = self._salvage_usage(data)
        if usage is None:
            log.warning("model.usage_unusable", model=self.name)
            usage = self.estimated_usage(request, text, calls)
        return ModelReply(
            text=text,
            tool_calls=tuple(calls),
            usage=usage,
            stop_reason=message.stop_reason or "unknown",
        )

    def _salvage_usage(self, data: dict[str, Any]) -> Usage | None:
        try:
            return _Usage.model_validate(data.get("usage")).charged()
        except ValueError:
            return None
