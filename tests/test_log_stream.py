"""The harness's log lines go to the stderr of the moment they are written: a caller that
swaps sys.stderr after the first log (a library user's redirect, a test's capture that
closes its stream) made every later warning raise "I/O operation on closed file"."""

from __future__ import annotations

import io
import sys

import pytest

from harness.secrets.logs import configure_logging


def test_a_warning_after_stderr_was_swapped_goes_to_the_new_stream(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import structlog

    first = io.StringIO()
    monkeypatch.setattr(sys, "stderr", first)
    structlog.reset_defaults()
    configure_logging()
    log = structlog.get_logger("test")
    log.warning("first.line")
    assert "first.line" in first.getvalue()
    first.close()
    second = io.StringIO()
    monkeypatch.setattr(sys, "stderr", second)
    log.warning("second.line")
    assert "second.line" in second.getvalue()
