"""Log lines hold no secret the harness knows, whatever the value holding it (a Path, an
exception, bytes, a nested container, a traceback) and whoever set structlog up (the
command line, the Python API, or a program that configured it itself)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import structlog
from structlog.testing import capture_logs

from harness.secrets.logs import redact_secrets

KEY = "sk-proj-LOGCANARY0123456789abcdefXYZ"
LABEL = "[REDACTED:OPENAI_API_KEY]"


@pytest.fixture
def key_in_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)


class Holder:
    """An object whose repr shows what it holds (as a dataclass's would)."""

    def __init__(self, held: str) -> None:
        self.held = held

    def __repr__(self) -> str:
        return f"Holder({self.held!r})"


def captured(**values: Any) -> dict[str, Any]:
    with capture_logs(processors=[redact_secrets]) as logs:
        structlog.get_logger("t").warning("x", **values)
    return logs[0]


@pytest.mark.usefixtures("key_in_env")
@pytest.mark.parametrize(
    "value",
    [
        Path("/home/me") / KEY / "config.toml",
        RuntimeError(f"auth failed with {KEY}"),
        KEY.encode(),
        bytearray(f"header: Bearer {KEY}".encode()),
        {"headers": {"authorization": f"Bearer {KEY}"}},
        {f"key-{KEY}": 1},
        [1, ("nested", [Path(KEY)])],
        {KEY},
        Holder(KEY),
    ],
    ids=[
        "path",
        "exception",
        "bytes",
        "bytearray",
        "nested-dict",
        "dict-key",
        "list-tuple-path",
        "set",
        "object-repr",
    ],
)
def test_a_secret_inside_any_value_is_redacted(value: object) -> None:
    event = captured(detail=value)
    shown = repr(event) + str(event)
    assert KEY not in shown and "LOGCANARY" not in shown
    assert LABEL in shown


@pytest.mark.usefixtures("key_in_env")
def test_values_without_a_secret_keep_their_type() -> None:
    where = Path("/tmp/plain")
    event = captured(path=where, count=3, ratio=0.5, flag=True, nothing=None, data=b"abc")
    assert event["path"] is where  # a renderer still shows it as a Path
    assert (event["count"], event["ratio"], event["flag"], event["nothing"]) == (3, 0.5, True, None)
    assert event["data"] == b"abc"


@pytest.mark.usefixtures("key_in_env")
def test_a_container_that_holds_itself_is_judged_by_its_text() -> None:
    loop: list[Any] = [KEY]
    loop.append(loop)
    shown = repr(captured(detail=loop))
    assert KEY not in shown and LABEL in shown


@pytest.mark.usefixtures("key_in_env")
def test_a_positional_argument_and_a_traceback_are_redacted() -> None:
    with capture_logs(processors=[redact_secrets]) as logs:
        log = structlog.get_logger("t")
        log.warning("saw %s", Path(KEY))
        try:
            raise ValueError(f"bad key {KEY}")
        except ValueError as err:
            log.error("failed", exc_info=err)
            log.error("failed again", exc_info=True)
    shown = repr(logs)
    assert KEY not in shown and "LOGCANARY" not in shown
    assert "exc_info" not in logs[1] and LABEL in logs[1]["exception"]
    assert "ValueError" in logs[2]["exception"] and LABEL in logs[2]["exception"]


def run_python(code: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "OPENAI_API_KEY": KEY, **env},
    )


API_LOGGING = """
from pathlib import Path
import structlog
from harness.api import quiet_logging
quiet_logging()
log = structlog.get_logger("lib")
log.info("shown-if-info")
log.warning("auth", where=Path("/keys") / {key!r}, error=RuntimeError({key!r}))
try:
    raise ValueError({key!r})
except ValueError:
    log.exception("boom")
print("stdout-clean")
""".replace("{key!r}", repr(KEY))


def test_the_api_log_set_up_redacts_and_follows_ilh_log() -> None:
    """`harness.api` used as a library: the command line's set-up, secrets redacted
    (in a Path, an exception, a traceback), ILH_LOG honoured, stdout untouched."""
    quiet = run_python(API_LOGGING, ILH_LOG="warning")
    assert quiet.returncode == 0, quiet.stderr
    assert quiet.stdout.strip() == "stdout-clean"
    assert "auth" in quiet.stderr and "boom" in quiet.stderr and "ValueError" in quiet.stderr
    assert "shown-if-info" not in quiet.stderr
    assert "LOGCANARY" not in quiet.stderr and LABEL in quiet.stderr
    chatty = run_python(API_LOGGING, ILH_LOG="info")
    assert "shown-if-info" in chatty.stderr and "LOGCANARY" not in chatty.stderr


CALLER_CONFIGURED = """
import sys
import structlog
structlog.configure(
    processors=[structlog.processors.JSONRenderer()],
    logger_factory=structlog.PrintLoggerFactory(sys.stderr),
)
from harness.api import quiet_logging
quiet_logging()
quiet_logging()  # twice: redact_secrets is added once
assert len(structlog.get_config()["processors"]) == 2
structlog.get_logger("lib").warning("auth", error=RuntimeError({key!r}))
""".replace("{key!r}", repr(KEY))


def test_a_callers_own_structlog_set_up_is_kept_with_secrets_redacted() -> None:
    done = run_python(CALLER_CONFIGURED)
    assert done.returncode == 0, done.stderr
    line = done.stderr.strip()
    assert line.startswith("{") and '"event": "auth"' in line  # the caller's renderer
    assert "LOGCANARY" not in line and LABEL in line
