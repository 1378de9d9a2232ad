"""Fakes for the model-client tests: provider response bodies, mock transports, a fake
clock whose sleep only moves time forward. Nothing here touches the network."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import httpx2

from harness.models.clients.anthropic_client import AnthropicClient
from harness.models.clients.openai_client import OpenAIClient
from harness.models.clients.retry import RetryPolicy
from harness.models.clients.sdk_base import SdkClient
from harness.models.interface import Message, ModelAttempt, ModelRequest
from harness.workspace.tools import tool_specs

FAKE_OPENAI_KEY = "sk-proj-FAKEopenaiKEY0123456789abcdefSECRET"
FAKE_ANTHROPIC_KEY = "sk-ant-api03-FAKEanthropicKEY0123456789SECRET"

Handler = Callable[[httpx2.Request], httpx2.Response]


class FakeTime:
    """A clock for the retry loop: `sleep` records the wait and moves the clock."""

    def __init__(self) -> None:
        self.now = 1000.0
        self.slept: list[float] = []

    def clock(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


@dataclass
class Provider:
    """One provider, as the tests see it."""

    name: str
    key: str
    key_env: str
    client_cls: type[SdkClient]
    reply: Callable[..., dict[str, Any]]
    max_tokens_field: Callable[[dict[str, Any]], int]
    error_body: Callable[[str], dict[str, Any]]

    def client(
        self,
        handler: Handler,
        *,
        time: FakeTime | None = None,
        attempts: list[ModelAttempt] | None = None,
        policy: RetryPolicy | None = None,
        base_url: str | None = None,
        max_response_bytes: int | None = None,
    ) -> SdkClient:
        extra: dict[str, Any] = {}
        if time is not None:
            extra.update(sleep=time.sleep, clock=time.clock)
        if policy is not None:
            extra["retry"] = policy
        if max_response_bytes is not None:
            extra["max_response_bytes"] = max_response_bytes
        return self.client_cls(
            "test-model",
            api_key=self.key,
            base_url=base_url,
            transport=httpx2.MockTransport(handler),
            on_attempt=None if attempts is None else attempts.append,
            **extra,
        )


def openai_reply(
    text: str = "",
    calls: Sequence[tuple[str, dict[str, Any]]] = (),
    input_tokens: int = 100,
    output_tokens: int = 20,
    usage: bool = True,
) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": text or None}
    if calls:
        message["tool_calls"] = [
            {
                "id": f"call_{i}",
                "type": "function",
                "function": {"name": name, "arguments": json.dumps(args)},
            }
            for i, (name, args) in enumerate(calls)
        ]
    body: dict[str, Any] = {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 0,
        "model": "test-model",
        "choices": [
            {"index": 0, "message": message, "finish_reason": "tool_calls" if calls else "stop"}
        ],
    }
    if usage:
        body["usage"] = {
            "prompt_tokens": input_tokens,
            "completion_tokens": output_tokens,
            "total_tokens": input_tokens + output_tokens,
        }
    return body


def anthropic_reply(
    text: str = "",
    calls: Sequence[tuple[str, dict[str, Any]]] = (),
    input_tokens: int = 100,
    output_tokens: int = 20,
    usage: bool = True,
) -> dict[str, Any]:
    content: list[dict[str, Any]] = [{"type": "text", "text": text}] if text else []
    content += [
        {"type": "tool_use", "id": f"toolu_{i}", "name": name, "input": args}
        for i, (name, args) in enumerate(calls)
    ]
    body: dict[str, Any] = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "test-model",
        "content": content,
        "stop_reason": "tool_use" if calls else "end_turn",
        "stop_sequence": None,
    }
    if usage:
        body["usage"] = {"input_tokens": input_tokens, "output_tokens": output_tokens}
    return body


OPENAI = Provider(
    name="openai",
    key=FAKE_OPENAI_KEY,
    key_env="OPENAI_API_KEY",
    client_cls=OpenAIClient,
    reply=openai_reply,
    max_tokens_field=lambda body: int(
        body.get("max_completion_tokens", body.get("max_tokens", -1))
    ),
    error_body=lambda msg: {"error": {"message": msg, "type": "error", "code": None}},
)
ANTHROPIC = Provider(
    name="anthropic",
    key=FAKE_ANTHROPIC_KEY,
    key_env="ANTHROPIC_API_KEY",
    client_cls=AnthropicClient,
    reply=anthropic_reply,
    max_tokens_field=lambda body: int(body["max_tokens"]),
    error_body=lambda msg: {"type": "error", "error": {"type": "api_error", "message": msg}},
)
PROVIDERS = (OPENAI, ANTHROPIC)


def request(max_output: int = 256, timeout_s: float = 30.0, tools: bool = True) -> ModelRequest:
    return ModelRequest(
        messages=(
            Message(role="system", content="You are a test agent."),
            Message(role="user", content="List the files."),
        ),
        tools=tuple(tool_specs()) if tools else (),
        max_output_tokens=max_output,
        timeout_s=timeout_s,
    )


@dataclass
class Script:
    """A mock provider that answers from a list of responses, one per HTTP request, and
    keeps every request it got."""

    responses: list[Callable[[httpx2.Request], httpx2.Response]]
    requests: list[httpx2.Request] = field(default_factory=list)

    def __call__(self, req: httpx2.Request) -> httpx2.Response:
        self.requests.append(req)
        index = min(len(self.requests), len(self.responses)) - 1
        return self.responses[index](req)

    def bodies(self) -> list[dict[str, Any]]:
        return [json.loads(r.content) for r in self.requests]


def ok(body: dict[str, Any]) -> Callable[[httpx2.Request], httpx2.Response]:
    return lambda req: httpx2.Response(200, json=body)


def status(
    code: int, body: dict[str, Any], headers: dict[str, str] | None = None
) -> Callable[[httpx2.Request], httpx2.Response]:
    return lambda req: httpx2.Response(code, json=body, headers=headers or {})


def raises(exc: Callable[[httpx2.Request], Exception]) -> Callable[[httpx2.Request], Any]:
    def respond(req: httpx2.Request) -> httpx2.Response:
        raise exc(req)

    return respond
