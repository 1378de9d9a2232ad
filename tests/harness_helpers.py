"""Helpers shared by the end-to-end tests: `ilh` in a child process, and a client that
keeps every request it was sent (the envelope exactly as the model saw it)."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

from harness.models.interface import ModelClient, ModelReply, ModelRequest


def ilh(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "harness", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
    )


@dataclass
class Recording:
    inner: ModelClient
    requests: list[ModelRequest] = field(default_factory=list)

    @property
    def name(self) -> str:
        return self.inner.name

    async def complete(self, request: ModelRequest) -> ModelReply:
        self.requests.append(request)
        return await self.inner.complete(request)
