"""What the Anthropic and OpenAI clients share: one async HTTP client under the official
SDK, the SDKs' own retries off (tenacity's retry loop owns them, so every attempt is
seen and counted against the deadline), SDK errors mapped to `AttemptFailed`, response
bodies validated by our own pydantic models (a malformed or truncated body is an error
the run survives, never an exception from deep inside an SDK), bodies larger than
`MAX_RESPONSE_BYTES` refused while they are read (a runaway server cannot exhaust the
memory of the run), and credentials kept out of every message and every reply.

Usage is what the provider reports. A reply whose usage is missing or unusable
(negative, not a number) is still a reply: it is charged the estimate instead, flagged
`estimated` — the input estimate the clamp uses and the output text at
`budgets.estimate`'s rate, never more than the output cap the call asked for.
A successful response whose body cannot be read at all (cut off, not JSON) said nothing
of its usage: it is charged the most the call could cost (`unreported_usage`).

The HTTP client is `httpx2`, httpx's successor by the same author: the current official
SDKs are built on it (the Anthropic SDK refuses an `httpx` client outright), and its API
is httpx's, so tests drive it with `httpx2.MockTransport` or a loopback server.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from collections.abc import AsyncIterator, Sequence
from typing import Any

import httpx2
import structlog
from pydantic import ValidationError

from budgets.estimate import estimate_text_tokens
from harness.models.clients.convert import call_arguments_json
from harness.models.clients.errors import (
    AttemptFailed,
    kind_for_status,
    retry_after,
    scrub,
    short,
)
from harness.models.clients.estimate import (
    estimate_input,
    framed_tokens,
    json_tools,
    large_vocab_text_tokens,
    message_tokens,
)
from harness.models.clients.retry import (
    DEFAULT_POLICY,
    Clock,
    RetryPolicy,
    Sleep,
    call_with_retries,
)
from harness.models.interface import AttemptListener, Message, ModelReply, ModelRequest, Usage
from harness.models.memo import PerMessage
from harness.models.secrecy import redact_reply
from harness.secrets import register_secret
from harness.secrets.names import url_passwords
from harness.workspace.tools import ToolCall, ToolSpec

log = structlog.get_logger(__name__)

# httpx2's own per-operation timeout; the real bound is the per-attempt deadline set by
# the retry loop (asyncio.timeout) and passed to the SDK with each request.
HTTP_TIMEOUT = httpx2.Timeout(600.0, connect=30.0)

MAX_RESPONSE_BYTES = 8 * 1024 * 1024
"""The largest response body read (as it arrives on the wire). A reply within any
output cap a model accepts is far smaller (128k tokens of JSON-escaped text is about
2 MB); a larger body is a broken or hostile server, refused as `malformed` before it is
all in memory. Error bodies (4xx, 5xx) are capped alike."""


class ResponseTooLarge(Exception):
    """A response body went past `max_response_bytes` while it was read."""

    def __init__(self, limit: int, declared: int | None = None) -> None:
        what = f"declares {declared} bytes" if declared is not None else "is larger"
        super().__init__(f"the response body {what}; at most {limit} are read")


class _CappedStream(httpx2.AsyncByteStream):
    """A response stream that stops with `ResponseTooLarge` once `limit` bytes passed."""

    def __init__(self, inner: httpx2.AsyncByteStream, limit: int) -> None:
        self._inner = inner
        self._limit = limit

    async def __aiter__(self) -> AsyncIterator[bytes]:
        seen = 0
        async for chunk in self._inner:
            seen += len(chunk)
            if seen > self._limit:
                raise ResponseTooLarge(self._limit)
            yield chunk

    async def aclose(self) -> None:
        await self._inner.aclose()


class SdkErrors:
    """The exception classes of one SDK (both SDKs name them alike)."""

    def __init__(self, module: Any) -> None:
        self.timeout: type[Exception] = module.APITimeoutError
        self.connection: type[Exception] = module.APIConnectionError
        self.status: type[Exception] = module.APIStatusError


class SdkClient:
    """Base of the provider clients. Subclasses build the request (`_send`) and read the
    body (`_parse`); this class runs the attempts."""

    provider = "sdk"
    tools_overhead = 0
    """Input tokens the provider adds when tools are sent, beyond their definitions."""

    @staticmethod
    def text_tokens(text: str) -> int:
        """The provider family's count of a text (`harness.models.clients.estimate`)."""
        return large_vocab_text_tokens(text)

    @staticmethod
    def tool_texts(tools: Sequence[ToolSpec]) -> list[str]:
        """The tool definitions as the provider shows them to the model, for the default
        `tool_tokens`."""
        return json_tools(tools)

    def tool_tokens(self, tools: Sequence[ToolSpec]) -> int:
        """The provider's count of the tool definitions (without `tools_overhead`): each
        of `tool_texts` by `text_tokens`, framed as a message. A client whose provider
        renders them in a form of known structure counts that structure instead
        (`OpenAIClient`)."""
        return framed_tokens(self.tool_texts(tools), self.text_tokens)

    def __init__(
        self,
        model: str,
        *,
        api_key: str,
        base_url: str | None = None,
        transport: httpx2.AsyncBaseTransport | None = None,
        retry: RetryPolicy = DEFAULT_POLICY,
        on_attempt: AttemptListener | None = None,
        sleep: Sleep = asyncio.sleep,
        clock: Clock = time.monotonic,
        max_response_bytes: int = MAX_RESPONSE_BYTES,
    ) -> None:
        self.model = model
        self.base_url = base_url
        self.retry = retry
        self.on_attempt = on_attempt
        self._sleep = sleep
        self._clock = clock
        # Kept only to scrub it from messages; never logged or recorded. Registered so
        # that every exit point of the harness (tools, record, replies) redacts it too.
        self._secrets = (api_key,)
        register_secret(api_key, f"{self.provider.upper()}_API_KEY")
        for password in url_passwords(base_url or ""):
            register_secret(password, "BASE_URL_PASSWORD")
        self.max_response_bytes = max_response_bytes
        # Each round re-sends the conversation: count each message once.
        self._counted = PerMessage(lambda m: message_tokens(m, self.text_tokens))
        self._http = httpx2.AsyncClient(
            transport=transport,
            timeout=HTTP_TIMEOUT,
            follow_redirects=True,
            # The size cap counts the bytes as they arrive: a compressed body could expand
            # far past it when decoded, so we ask for the body as it is.
            headers={"Accept-Encoding": "identity"},
            event_hooks={"response": [self._cap_body]},
        )

    @property
    def name(self) -> str:
        return f"{self.provider}:{self.model}"

    def estimate_input(self, messages: Sequence[Message], tools: Sequence[ToolSpec]) -> int:
        return estimate_input(
            messages,
            tools,
            tools_overhead=self.tools_overhead,
            counted=self._counted,
            text_tokens=self.text_tokens,
            tool_tokens=self.tool_tokens,
        )

    async def aclose(self) -> None:
        await self._http.aclose()

    async def _cap_body(self, response: httpx2.Response) -> None:
        """Response hook (before the body is read): refuse a body that declares more
        than the cap, and cut off one that turns out larger while it streams in."""
        limit = self.max_response_bytes
        declared = response.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > limit:
            raise ResponseTooLarge(limit, int(declared))
        if isinstance(response.stream, httpx2.AsyncByteStream):
            response.stream = _CappedStream(response.stream, limit)

    async def complete(self, request: ModelRequest) -> ModelReply:
        began = self._clock()

        async def attempt(number: int, seconds_left: float) -> ModelReply:
            return await self._attempt(request, seconds_left)

        reply = await call_with_retries(
            attempt,
            model=self.name,
            timeout_s=request.timeout_s,
            policy=self.retry,
            on_attempt=self.on_attempt,
            sleep=self._sleep,
            clock=self._clock,
        )
        return reply.model_copy(update={"latency_s": round(self._clock() - began, 6)})

    async def _attempt(self, request: ModelRequest, timeout_s: float) -> ModelReply:
        try:
            body = await self._send(request, timeout_s)
        except AttemptFailed:
            raise
        except Exception as exc:  # every SDK or transport failure becomes an attempt failure
            raise self._failure(exc) from None
        try:
            data = json.loads(body)
        except (ValueError, RecursionError):
            raise AttemptFailed(
                "malformed",
                f"the response body is not JSON ({len(body)} bytes; truncated?)",
                usage=self.unreported_usage(request),
            ) from None
        if not isinstance(data, dict):
            raise AttemptFailed(
                "malformed",
                "the response body is not a JSON object",
                usage=self.unreported_usage(request),
            )
        try:
            return self._redacted(self._parse(data, request))
        except (ValidationError, ValueError, TypeError, KeyError, RecursionError) as exc:
            raise AttemptFailed(
                "malformed",
                f"the response is not a usable reply: {self._explain(exc)}",
                usage=self._salvage_usage(data) or self.unreported_usage(request),
            ) from None

    def _redacted(self, reply: ModelReply) -> ModelReply:
        """`reply` without the values of known credentials (`harness.models.secrecy`): the
        harness's secrets, this client's key among them (registered when it was made)."""
        return redact_reply(reply)

    def estimated_usage(self, request: ModelRequest, text: str, calls: Sequence[ToolCall]) -> Usage:
        """What a reply without usable usage is charged (flagged `estimated`)."""
        spoken = text + "".join(c.name + call_arguments_json(c) for c in calls)
        return Usage(
            input_tokens=self.estimate_input(request.messages, request.tools),
            output_tokens=min(request.max_output_tokens, estimate_text_tokens(spoken)),
            estimated=True,
        )

    def unreported_usage(self, request: ModelRequest) -> Usage:
        """What a successful (2xx) response whose body is unusable is charged: the provider
        did the work and bills it, but said nothing we can read. The most the call could
        cost (its input and the whole output cap it was clamped to), flagged `estimated`:
        the budget errs high, never low."""
        return Usage(
            input_tokens=self.estimate_input(request.messages, request.tools),
            output_tokens=request.max_output_tokens,
            estimated=True,
        )

    def _failure(self, exc: Exception) -> AttemptFailed:
        errors = self._errors()
        too_large = _in_chain(exc, ResponseTooLarge)
        if too_large is not None:
            return AttemptFailed("malformed", self._clean(str(too_large)))
        if isinstance(exc, errors.timeout):
            return AttemptFailed("timeout", "the request timed out")
        if isinstance(exc, errors.connection):
            cause = exc.__cause__ or exc.__context__
            detail = f"{type(cause).__name__}: {cause}" if cause else str(exc)
            return AttemptFailed("connection", self._clean(f"connection failed ({detail})"))
        if isinstance(exc, errors.status):
            status = int(getattr(exc, "status_code", 0) or 0)
            response = getattr(exc, "response", None)
            headers = dict(response.headers) if response is not None else {}
            message = provider_message(getattr(exc, "body", None)) or str(exc)
            return AttemptFailed(
                kind_for_status(status),
                self._clean(f"HTTP {status}: {message}"),
                status=status,
                retry_after_s=retry_after(headers),
            )
        log.warning("model.unexpected_error", model=self.name, error=type(exc).__name__)
        return AttemptFailed("malformed", self._clean(f"{type(exc).__name__}: {exc}"))

    def _clean(self, text: str) -> str:
        return short(scrub(text, self._secrets))

    def _explain(self, exc: Exception) -> str:
        if isinstance(exc, ValidationError):
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"]) or "(body)"
            return self._clean(f"{where}: {first['msg']}")
        return self._clean(f"{type(exc).__name__}: {exc}")

    # ---------------------------------------------------------------- subclass hooks
    def _errors(self) -> SdkErrors:
        raise NotImplementedError

    async def _send(self, request: ModelRequest, timeout_s: float) -> str:
        """Make one HTTP request through the SDK; return the 2xx body text."""
        raise NotImplementedError

    def _parse(self, data: dict[str, Any], request: ModelRequest) -> ModelReply:
        raise NotImplementedError

    def _salvage_usage(self, data: dict[str, Any]) -> Usage | None:
        """Usage from a body that is otherwise unusable, so that it is still charged."""
        return None


_UNSET: Any = object()
_PLATFORMS: dict[str, Any] = {}  # SDK package -> what its `get_platform` found


def known_platform(sdk: Any) -> None:
    """Give a new SDK client the platform it would look up at its first request.

    Both SDKs name the platform in a header of every request (`X-Stainless-OS`, …) and
    find it with calls that may block, so each client does it once, in a worker thread,
    when it first sends. The harness makes a client per task: at 64 tasks at a time that
    is a thread hop (an executor job and two wake-ups) for every task's first call. The
    answer is the process's, so it is found once, by the SDK's own `get_platform`, and
    handed to each client. An SDK that no longer keeps it there is left to do as it does.
    """
    if getattr(sdk, "_platform", _UNSET) is not None:
        return
    package = type(sdk).__module__.partition(".")[0]
    found = _PLATFORMS.get(package, _UNSET)
    if found is _UNSET:
        base = sys.modules.get(f"{package}._base_client")
        look_up = getattr(base, "get_platform", None)
        if look_up is None:
            return
        found = _PLATFORMS[package] = look_up()
    sdk._platform = found


def _in_chain(exc: BaseException, kind: type[Exception]) -> Exception | None:
    """`exc` or the first exception of `kind` among its causes (an SDK may wrap it)."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, kind):
            return current
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return None


def provider_message(body: object) -> str | None:
    """The human part of an error body: `{"error": {"message": …}}` (both providers;
    the OpenAI SDK hands over the inner object), or None."""
    if not isinstance(body, dict):
        return None
    inner = body.get("error", body)
    if isinstance(inner, dict) and isinstance(inner.get("message"), str):
        return str(inner["message"])
    if isinstance(inner, str):
        return inner
    return None


def joined_text(parts: Sequence[str]) -> str:
    return "\n".join(p for p in parts if p)
