"""Helpers shared by the end-to-end tests: `ilh` in a child process, and a client that
keeps every request it was sent (the envelope exactly as the model saw it)."""

from __future__ import annotations

import subprocess
import sys
import time
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


def process_gone(pid: int) -> bool:
    """Dead or a zombie (a zombie has stopped running; whoever adopted it may reap late)."""
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] == "Z"
    except FileNotFoundError:
        return True


def running_with(marker: str) -> list[int]:
    """Live (non-zombie) processes whose command line holds `marker`. Pids inside the
    sandbox are the sandbox's own, so survivors are found by what they run."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if marker in cmdline and not process_gone(int(entry.name)):
            found.append(int(entry.name))
    return found


def none_running(marker: str, within_s: float = 5.0) -> bool:
    """True once no process running `marker` is left (waiting up to `within_s`)."""
    deadline = time.monotonic() + within_s
    while running_with(marker):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True
