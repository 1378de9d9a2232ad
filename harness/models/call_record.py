"""What the run record keeps of one model call (a `model_call` event), the same for the
agent's calls and the refuter's: so `ilh runs show`, `ilh view` and a resume read both
the same way."""

from __future__ import annotations

import time
from typing import Any

from harness.models.interface import ModelReply, ModelRequest


def call_payload(
    model: str,
    envelope_digest: str,
    request: ModelRequest,
    input_estimate: int,
    reply: ModelReply,
    began: float,
) -> dict[str, Any]:
    """The event's payload; `began` is the `time.monotonic()` the call started at."""
    return {
        "model": model,
        "envelope_digest": envelope_digest,
        "max_output_tokens": request.max_output_tokens,
        "input_estimate": input_estimate,
        "usage": reply.usage.model_dump(),
        "latency_s": round(time.monotonic() - began, 6),
        "stop_reason": reply.stop_reason,
        "text": reply.text,
        "tool_calls": [c.model_dump() for c in reply.tool_calls],
    }
