"""`ilh run --record PATH`: a client wrapper that appends every call of the client it
wraps to a recording (format: `harness.models.clients.recording`), replies, errors and attempts
alike, so that `replay:PATH` can serve the run again without the provider."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from harness.inputs.errors import InputError
from harness.models.clients.estimate import input_estimate_for
from harness.models.clients.recording import (
    RecordedCall,
    RecordedError,
    input_digest,
    message_digests,
    request_digest,
)
from harness.models.interface import (
    AgentEnded,
    AttemptListener,
    Message,
    ModelAttempt,
    ModelCallError,
    ModelClient,
    ModelReply,
    ModelRequest,
    ReportsAttempts,
)
from harness.workspace.tools import ToolSpec


class RecordingClient:
    def __init__(self, inner: ModelClient, path: Path) -> None:
        self.inner = inner
        self.path = path
        self._check_writable()
        self._listener: AttemptListener | None = None
        self._attempts: list[ModelAttempt] = []
        if isinstance(inner, ReportsAttempts):
            inner.on_attempt = self._collect

    @property
    def name(self) -> str:
        return self.inner.name

    def _check_writable(self) -> None:
        """Before any run starts: a recording that cannot be written is bad input."""
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with self.path.open("a", encoding="utf-8"):
                pass
        except OSError as err:
            raise InputError(
                self.path, "E500", f"cannot write the recording: {err.strerror or err}"
            ) from None

    @property
    def on_attempt(self) -> AttemptListener | None:
        return self._listener

    @on_attempt.setter
    def on_attempt(self, listener: AttemptListener | None) -> None:
        self._listener = listener

    def _collect(self, attempt: ModelAttempt) -> None:
        self._attempts.append(attempt)
        if self._listener is not None:
            self._listener(attempt)

    def estimate_input(self, messages: Any, tools: Any) -> int:
        return input_estimate_for(self.inner, messages, tools)

    async def complete(self, request: ModelRequest) -> ModelReply:
        self._attempts = []
        try:
            reply = await self.inner.complete(request)
        except ModelCallError as err:
            self._write(
                request,
                error=RecordedError(
                    kind=err.kind,
                    message=err.message,
                    attempts=err.attempts,
                    status=err.status,
                    usage=None if err.usage is None else err.usage.model_dump(),
                ),
            )
            raise
        except AgentEnded as stop:
            self._write(request, ended=str(stop) or "the agent ended")
            raise
        self._write(request, reply=reply)
        return reply

    async def aclose(self) -> None:
        closer = getattr(self.inner, "aclose", None)
        if closer is not None:
            await closer()

    def _write(
        self,
        request: ModelRequest,
        *,
        reply: ModelReply | None = None,
        error: RecordedError | None = None,
        ended: str | None = None,
    ) -> None:
        messages: tuple[Message, ...] = request.messages
        tools: tuple[ToolSpec, ...] = request.tools
        entry = RecordedCall(
            model=self.name,
            digest=request_digest(messages, tools, request.max_output_tokens),
            input_digest=input_digest(messages, tools),
            input_estimate=input_estimate_for(self.inner, messages, tools),
            max_output_tokens=request.max_output_tokens,
            messages=message_digests(messages),
            reply=reply,
            error=error,
            ended=ended,
            attempts=list(self._attempts),
        )
        # One line per call, flushed to disk before the run goes on: a kill loses nothing
        # that finished. Several tasks may share one file (one event loop, so no two
        # writes interleave). A recording asked for and not written (disk full, file
        # gone read-only) stops the run loudly; the provider's usage is still charged.
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with self.path.open("a", encoding="utf-8") as out:
                out.write(entry.model_dump_json() + "\n")
                out.flush()
                os.fsync(out.fileno())
        except OSError as err:
            raise ModelCallError(
                "recording",
                f"cannot write the recording {self.path}: {err.strerror or err}",
                model=self.name,
                usage=None if reply is None else reply.usage,
            ) from None
