"""`replay:PATH`: serve a recording made with `ilh run --record PATH` back, offline.

Each request is looked up by its digest (`harness.models.clients.recording`); a digest seen
several times is served in recorded order. A request the recording has not seen is a
loud failure (`ReplayMiss`, logged as a warning): the run record gets it as a model
error, the run stops with reason:model_error, and the message says at which message the
request departs from the closest recorded one. Recorded attempts are reported again
and recorded errors raised again, so a replayed run writes the same record.
"""

from __future__ import annotations

from collections import defaultdict, deque
from collections.abc import Sequence
from pathlib import Path

import structlog

from harness.inputs.jsonl import read_jsonl
from harness.models.clients.estimate import estimate_input
from harness.models.clients.recording import (
    RecordedCall,
    input_digest,
    message_digests,
    request_digest,
)
from harness.models.interface import (
    AgentEnded,
    AttemptListener,
    Message,
    ModelCallError,
    ModelReply,
    ModelRequest,
    Usage,
)
from harness.workspace.tools import ToolSpec

log = structlog.get_logger(__name__)


class ReplayMiss(ModelCallError):
    """The replayed run asked for something the recording does not hold."""


def load_recording(path: Path) -> list[RecordedCall]:
    return read_jsonl(path, RecordedCall, "the recording")


class ReplayClient:
    def __init__(self, calls: list[RecordedCall], label: str) -> None:
        self._calls = calls
        self._label = label
        self._by_digest: dict[str, deque[RecordedCall]] = defaultdict(deque)
        self._by_input: dict[str, deque[RecordedCall]] = defaultdict(deque)
        for call in calls:
            self._by_digest[call.digest].append(call)
            self._by_input[call.input_digest].append(call)
        self.on_attempt: AttemptListener | None = None
        self.served = 0

    @classmethod
    def from_file(cls, path: Path, start: int = 0) -> ReplayClient:
        """`start`: calls an earlier process of the same run already consumed (a resume):
        they are not served again. Without it, a run that stopped on a recorded failure
        and was resumed would meet that failure again instead of the success after it."""
        client = cls(load_recording(path), f"replay:{path.name}")
        for call in client._calls[:start]:
            client._forget(call)
        return client

    def _forget(self, call: RecordedCall) -> None:
        for queue in (self._by_digest[call.digest], self._by_input[call.input_digest]):
            if call in queue:
                queue.remove(call)

    @property
    def name(self) -> str:
        # The recorded model's name, so the replayed record names the same model.
        return self._calls[0].model if self._calls else self._label

    def estimate_input(self, messages: Sequence[Message], tools: Sequence[ToolSpec]) -> int:
        """The estimate the recorded run made for this input, so the clamp asks for the
        same output cap; a request never recorded gets the plain estimate (and misses)."""
        queue = self._by_input.get(input_digest(messages, tools))
        if queue:
            return queue[0].input_estimate
        return estimate_input(messages, tools)

    async def complete(self, request: ModelRequest) -> ModelReply:
        digest = request_digest(request.messages, request.tools, request.max_output_tokens)
        queue = self._by_digest.get(digest)
        if not queue:
            why = self._why_unseen(request)
            log.warning("replay.miss", recording=self._label, call=self.served + 1, why=why)
            raise ReplayMiss("unrecorded", why, model=self.name)
        call = queue.popleft()
        same_input = self._by_input[call.input_digest]
        if call in same_input:
            same_input.remove(call)
        self.served += 1
        for attempt in call.attempts:
            if self.on_attempt is not None:
                self.on_attempt(attempt)
        if call.ended is not None:
            raise AgentEnded(call.ended)
        if call.error is not None:
            err = call.error
            raise ModelCallError(
                err.kind,
                err.message,
                model=call.model,
                attempts=err.attempts,
                status=err.status,
                usage=None if err.usage is None else Usage.model_validate(err.usage),
            )
        if call.reply is None:
            raise ModelCallError("malformed", "the recorded call holds no reply", model=call.model)
        return call.reply

    def _why_unseen(self, request: ModelRequest) -> str:
        wanted = message_digests(request.messages)
        best: RecordedCall | None = None
        best_common = -1
        for call in self._calls:
            common = 0
            for a, b in zip(call.messages, wanted, strict=False):
                if a != b:
                    break
                common += 1
            if common > best_common:
                best, best_common = call, common
        head = (
            f"request {self.served + 1} ({len(wanted)} messages, max_output_tokens "
            f"{request.max_output_tokens}) is not in the recording {self._label}"
        )
        if best is None:
            return head + " (it is empty)"
        if best_common >= len(wanted) and len(best.messages) == len(wanted):
            return head + (
                f"; its messages match a recorded call whose max_output_tokens was "
                f"{best.max_output_tokens} (or whose tools differ), or that call was "
                "already served"
            )
        if best_common < len(wanted):
            role = request.messages[best_common].role
            preview = " ".join(request.messages[best_common].content.split())[:80]
            return head + (
                f"; it departs from the closest recorded call at message {best_common + 1} "
                f"({role}: {preview!r})"
            )
        return head + f"; the closest recorded call has {len(best.messages)} messages"
