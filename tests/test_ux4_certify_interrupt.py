"""Ctrl-C during `ilh certify`, once or twice: exit 130 with one message, no traceback, no
certificate, and no half-written file beside the target `--apply` repairs.

The certification waits on its refuter model: an OpenAI-compatible endpoint on loopback that
accepts the request and never answers, so the interruption lands in the model call (the
longest wait of a certification; before, asyncio's cancellation was lost there and the
command waited out the call's 120 s timeout, then reported "not certified", exit 1)."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "certify_repair"


@contextlib.contextmanager
def silent_endpoint() -> Iterator[tuple[int, threading.Event]]:
    """A loopback port that accepts connections and never answers; the event is set at
    the first connection (the model call has begun)."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    called = threading.Event()
    held: list[socket.socket] = []

    def accept() -> None:
        with contextlib.suppress(OSError):
            while True:
                conn, _ = listener.accept()
                held.append(conn)
                called.set()

    threading.Thread(target=accept, daemon=True).start()
    try:
        yield listener.getsockname()[1], called
    finally:
        listener.close()
        for conn in held:
            conn.close()


@pytest.mark.parametrize("second", [None, 0.05, 0.3, 1.5], ids=["once", "0.05s", "0.3s", "1.5s"])
def test_ctrl_c_in_certify_ends_it_at_once_and_writes_nothing_half(
    tmp_path: Path, second: float | None
) -> None:
    work = tmp_path / "repair"
    shutil.copytree(EXAMPLE, work)
    original = (work / "handoff.md").read_bytes()
    env = {**os.environ, "OPENAI_API_KEY": "sk-test-not-a-key"}
    with silent_endpoint() as (port, called):
        proc = subprocess.Popen(
            [
                sys.executable, "-m", "harness", "certify", "handoff.md",
                "--role", "implementer", "--source", "project", "--answers", "answers.json",
                "--apply", "--certificate", "handoff.cert.json", "--markdown", "cert.md",
                "--store", str(tmp_path / "runs.db"), "--non-interactive",
                "--model", "openai:m", "--base-url", f"http://127.0.0.1:{port}/v1",
            ],
            cwd=work, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True,
            # A shell's background jobs ignore SIGINT; this one gets it as from a terminal.
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
        )  # fmt: skip
        try:
            assert called.wait(60), "the refuter never called its model"
            time.sleep(0.2)
            interrupted_at = time.monotonic()
            proc.send_signal(signal.SIGINT)
            if second is not None:
                time.sleep(second)
                with contextlib.suppress(ProcessLookupError):
                    proc.send_signal(signal.SIGINT)
            out, err = proc.communicate(timeout=30)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    assert time.monotonic() - interrupted_at < 15, "it waited for the model call"
    assert proc.returncode == 130, (out, err)
    assert "Traceback" not in err and "interrupted" in err, err
    assert not (work / "handoff.cert.json").exists() and not (work / "cert.md").exists()
    # --apply writes each pass whole: the target is the original or a whole repair (the
    # example's passes run before the refuter), and no temporary file is left beside it.
    assert (work / "handoff.md").read_bytes() != b""
    assert sorted(p.name for p in work.iterdir()) == sorted(p.name for p in EXAMPLE.iterdir())
    if (work / "handoff.md").read_bytes() != original:
        assert "--apply" in err  # the message says the target holds repairs
