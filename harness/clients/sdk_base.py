"""What the Anthropic and OpenAI clients share: one async HTTP client under the official
SDK, the SDKs' own retries off (tenacity's retry loop owns them, so every attempt is
seen and counted against the deadline), SDK errors mapped to `AttemptFailed`, response
bodies validated by our own pydantic models (a malformed or truncated body is an error
the run survives, never an exception from deep inside an SDK), and credentials kept out
of every message.

The HTTP client is `httpx2`, httpx's successor by the same author: the current official
SDKs are built on it (the Anthropic SDK refuses an `httpx` client outright), and its API
is httpx's, so tests drive it with `httpx2.MockTransport` or a loopback server.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Sequence
from typing import Any

import httpx2
import structlog
from pydantic import ValidationError

from harness.clients.errors import AttemptFailed, kind_for_status, retry_after, scrub, short
from harness.clients.estimate import estimate_input
from harness.clients.retry import DEFAULT_POLICY, Clock, RetryPolicy, Sleep, call_with_retries
from harness.model import AttemptListener, Message, ModelReply, ModelRequest, Usage
from harness.tools import ToolSpec

log = structlog.get_logger(__name__)

# httpx2's own per-operation timeout; the real bound is the per-attempt deadline set by
# the retry loop (asyncio.timeout) and passed to the SDK with each request.
HTTP_TIMEOUT = httpx2.Timeout(600.0, connect=30.0)


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
    ) -> None:
        self.model = model
        self.base_url = base_url
        self.retry = retry
        self.on_attempt = on_attempt
        self._sleep = sleep
        self._clock = clock
        # Kept only to scrub it from messages; never logged or recorded.
        self._secrets = (api_key,)
        self._http = httpx2.AsyncClient(
            transport=transport, timeout=HTTP_TIMEOUT, follow_redirects=True
        )

    @property
    def name(self) -> str:
        return f"{self.provider}:{self.model}"

    def estimate_input(self, messages: Sequence[Message], tools: Sequence[ToolSpec]) -> int:
        return estimate_input(messages, tools, tools_overhead=self.tools_overhead)

    async def aclose(self) -> None:
        await self._http.aclose()

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
                "malformed", f"the response body is not JSON ({len(body)} bytes; truncated?)"
            ) from None
        if not isinstance(data, dict):
            raise AttemptFailed("malformed", "the response body is not a JSON object")
        try:
            return self._parse(data, request)
        except (ValidationError, ValueError, TypeError, KeyError) as exc:
            raise AttemptFailed(
                "malformed",
                f"the response is not a usable reply: {self._explain(exc)}",
                usage=self._salvage_usage(data),
            ) from None

    def _failure(self, exc: Exception) -> AttemptFailed:
        errors = self._errors()
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
