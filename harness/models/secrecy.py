"""Secrets out of what a model says and what it is sent (`harness.secrets`).

A reply is redacted before anything acts on it or records it: a proxy or a misconfigured
server can echo a request's headers into a 200 body, and a model could repeat a secret it
somehow saw; a tool call's arguments carry it straight into the workspace. A request is
redacted before it is sent: its messages are built from tool results, files and replies
that were redacted already, so this is the last check, for text that came another way
(the task's own words).
"""

from __future__ import annotations

import operator

from harness.models.interface import Message, ModelReply, ModelRequest
from harness.models.memo import PerMessage
from harness.secrets import SecretValues, harness_secrets
from harness.workspace.tools import ToolCall


def redact_reply(reply: ModelReply, secrets: SecretValues | None = None) -> ModelReply:
    """`reply` with every known secret removed from its text and tool-call arguments."""
    known = harness_secrets() if secrets is None else secrets
    if not known:
        return reply
    text = known.redact(reply.text)
    calls = _calls(reply.tool_calls, known)
    if text is reply.text and calls is reply.tool_calls:
        return reply
    return reply.model_copy(update={"text": text, "tool_calls": calls})


def redact_request(request: ModelRequest, secrets: SecretValues | None = None) -> ModelRequest:
    """`request` with every known secret removed from its messages."""
    known = harness_secrets() if secrets is None else secrets
    if not known:
        return request
    messages = tuple(_message(m, known) for m in request.messages)
    if all(new is old for new, old in zip(messages, request.messages, strict=True)):
        return request
    return request.model_copy(update={"messages": messages})


class RequestRedactor:
    """`redact_request` for the calls of one conversation, which re-send the messages of
    the last call and add a few: each message is redacted once (`PerMessage`) while the
    set of known secrets stays the same; `harness_secrets()` gives a new set when it
    changes, and then every message is redacted again. Same result as `redact_request`,
    call for call."""

    def __init__(self) -> None:
        self._known: SecretValues | None = None
        self._redacted = PerMessage(self._redact)

    def _redact(self, message: Message) -> Message:
        assert self._known is not None  # set before any message is redacted
        return _message(message, self._known)

    def __call__(self, request: ModelRequest, secrets: SecretValues | None = None) -> ModelRequest:
        known = harness_secrets() if secrets is None else secrets
        if not known:
            return request
        if known is not self._known:
            self._known = known
            self._redacted.clear()
        messages = self._redacted(request.messages)
        if not any(map(operator.is_not, messages, request.messages)):
            return request
        return request.model_copy(update={"messages": tuple(messages)})


def _message(message: Message, known: SecretValues) -> Message:
    content = known.redact(message.content)
    calls = _calls(message.tool_calls, known)
    if content is message.content and calls is message.tool_calls:
        return message
    return message.model_copy(update={"content": content, "tool_calls": calls})


def _calls(calls: tuple[ToolCall, ...], known: SecretValues) -> tuple[ToolCall, ...]:
    redacted = tuple(_call(c, known) for c in calls)
    return calls if all(n is o for n, o in zip(redacted, calls, strict=True)) else redacted


def _call(call: ToolCall, known: SecretValues) -> ToolCall:
    arguments = known.redact_json(call.arguments)
    if arguments is call.arguments:
        return call
    return call.model_copy(update={"arguments": arguments})
