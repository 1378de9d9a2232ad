"""`openai:MODEL`: chat completions with tools on the official `openai` SDK.

`--base-url` (or the SDK's own `OPENAI_BASE_URL`) points it at any OpenAI-compatible
server: vLLM, the llama.cpp server, Ollama, LM Studio. The key comes from
`OPENAI_API_KEY`; a server of one's own usually wants none, so with a base URL and no key
a placeholder is sent.

The output cap goes out as `max_completion_tokens` to OpenAI itself (its newer models
refuse `max_tokens`) and as `max_tokens` to other servers (the field they all read).

Usage is `prompt_tokens` and `completion_tokens` as reported. Some compatible servers
report none, or an unusable one (negative, not a number): such a reply is charged the
flagged estimate (`SdkClient.estimated_usage`). A tool call without a function name
cannot be run or answered, so the reply is malformed; arguments that are not a JSON
object reach the tool as `invalid_arguments`.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import httpx2
import openai
import structlog
from pydantic import BaseModel, ConfigDict, Field

from budgets.estimate import MESSAGE_OVERHEAD
from harness.inputs.errors import InputError
from harness.models.clients.convert import arguments_of, openai_messages, openai_tools
from harness.models.clients.estimate import typescript_tool_tokens
from harness.models.clients.sdk_base import SdkClient, SdkErrors, known_platform
from harness.models.interface import ModelReply, ModelRequest, Usage
from harness.workspace.tools import ToolCall, ToolSpec

log = structlog.get_logger(__name__)

KEY_ENV = "OPENAI_API_KEY"
BASE_URL_ENV = "OPENAI_BASE_URL"
NO_KEY = "no-key"  # what a keyless local server gets; servers that check keys refuse it
# OpenAI renders tool definitions into a hidden system message; its framing is small.
TOOLS_OVERHEAD = 16


class _Function(BaseModel):
    name: str
    arguments: Any = None


class _ToolCall(BaseModel):
    id: str | None = None
    function: _Function


class _TextPart(BaseModel):
    type: str = "text"
    text: str | None = None


class _Message(BaseModel):
    content: str | list[_TextPart] | None = None
    refusal: str | None = None
    tool_calls: list[_ToolCall] | None = None


class _Choice(BaseModel):
    message: _Message
    finish_reason: str | None = None


class _Usage(BaseModel):
    prompt_tokens: int = Field(ge=0)
    completion_tokens: int = Field(ge=0)


class _Completion(BaseModel):
    model_config = ConfigDict(extra="ignore")

    choices: list[_Choice] = Field(min_length=1)
    usage: Any = None
    """Read apart (`_salvage_usage`): an unusable usage does not void the reply."""


def tool_call_of(call: _ToolCall, index: int) -> ToolCall:
    """A provider tool call as ours. Arguments that are not a JSON object are kept,
    under `invalid_arguments`, for the tool to refuse and the agent to see why."""
    if not call.function.name.strip():
        # nothing to run, and the next request could not name the call it answers
        raise ValueError("a tool call without a function name")
    arguments = arguments_of(call.function.arguments)
    return ToolCall(name=call.function.name, arguments=arguments, id=call.id or f"call_{index}")


class OpenAIClient(SdkClient):
    provider = "openai"
    tools_overhead = TOOLS_OVERHEAD

    def tool_tokens(self, tools: Sequence[ToolSpec]) -> int:
        # As OpenAI shows them to the model (a typed namespace), counted by its structure:
        # one hidden message's framing, the fixed text at its measured cost, the names
        # and descriptions by the calibrated rule (`typescript_tool_tokens`).
        return typescript_tool_tokens(tools, self.text_tokens) + MESSAGE_OVERHEAD

    def __init__(self, model: str, *, api_key: str, base_url: str | None = None, **kw: Any):
        super().__init__(model, api_key=api_key, base_url=base_url, **kw)
        self._official = base_url is None
        options: dict[str, Any] = {"api_key": api_key, "max_retries": 0, "http_client": self._http}
        if base_url is not None:
            options["base_url"] = base_url
        self._sdk = openai.AsyncOpenAI(**options)
        known_platform(self._sdk)

    @classmethod
    def from_env(cls, model: str, *, base_url: str | None = None, **kw: Any) -> OpenAIClient:
        url = base_url or os.environ.get(BASE_URL_ENV) or None
        key = os.environ.get(KEY_ENV) or None
        if key is None:
            if url is None:
                raise InputError(
                    "--model",
                    "E500",
                    f"openai:{model} needs {KEY_ENV} in the environment "
                    "(or --base-url for a server that wants no key)",
                )
            key = NO_KEY
        return cls(model, api_key=key, base_url=url, **kw)

    def _errors(self) -> SdkErrors:
        return SdkErrors(openai)

    async def _send(self, request: ModelRequest, timeout_s: float) -> str:
        cap = "max_completion_tokens" if self._official else "max_tokens"
        params: dict[str, Any] = {
            "model": self.model,
            "messages": openai_messages(request.messages),
            cap: request.max_output_tokens,
        }
        if request.tools:
            params["tools"] = openai_tools(request.tools)
        # The SDK's own POST (its auth, headers, errors and connection) without
        # `chat.completions.create`'s parameter transform: that walks every message
        # against the SDK's TypedDicts (a third of a call's CPU at 64 tasks at a time) to
        # rename aliased keys and format dates and files, and the plain JSON built here
        # has none of those (tests/test_clients_providers.py holds the transform to identity
        # on such a request, so an SDK that starts changing one fails a test).
        response = await self._sdk.post(
            "/chat/completions",
            body=params,
            cast_to=httpx2.Response,
            options={"timeout": timeout_s},
        )
        return response.text

    def _parse(self, data: dict[str, Any], request: ModelRequest) -> ModelReply:
        completion = _Completion.model_validate(data)
        choice = completion.choices[0]
        message = choice.message
        if isinstance(message.content, list):
            text = "".join(p.text or "" for p in message.content if p.type == "text")
        else:
            text = message.content or ""
        if not text and message.refusal:
            text = message.refusal
        calls = tuple(tool_call_of(c, i) for i, c in enumerate(message.tool_calls or ()))
        usage = self._salvage_usage(data)
        if usage is None:
            if completion.usage is not None:
                log.warning("model.usage_unusable", model=self.name)
            usage = self.estimated_usage(request, text, calls)
        return ModelReply(
            text=text,
            tool_calls=calls,
            usage=usage,
            stop_reason=choice.finish_reason or "unknown",
        )

    def _salvage_usage(self, data: dict[str, Any]) -> Usage | None:
        try:
            usage = _Usage.model_validate(data.get("usage"))
        except ValueError:
            return None
        return Usage(input_tokens=usage.prompt_tokens, output_tokens=usage.completion_tokens)
