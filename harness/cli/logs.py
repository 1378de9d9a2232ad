"""structlog set-up for the command line: warnings and above, on stderr, so that stdout
stays clean for `--json`. ILH_LOG=debug|info shows more. Every event passes
`redact_secrets` first: no log line holds a secret the harness knows."""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import MutableMapping
from typing import Any

import structlog

from harness.secrets import harness_secrets


def redact_secrets(
    logger: Any, method: str, event: MutableMapping[str, Any]
) -> MutableMapping[str, Any]:
    """A structlog processor: the event's values without the harness's secrets."""
    known = harness_secrets()
    if not known:
        return event
    for key, value in list(event.items()):
        if isinstance(value, str):
            event[key] = known.redact(value)
        elif isinstance(value, dict | list | tuple):
            event[key] = known.redact_json(value)
    return event


def configure_logging() -> None:
    name = os.environ.get("ILH_LOG", "warning").upper()
    level = logging.getLevelNamesMapping().get(name, logging.WARNING)
    structlog.configure(
        processors=[
            redact_secrets,
            *(p for p in structlog.get_config()["processors"] if p is not redact_secrets),
        ],
        wrapper_class=structlog.make_filtering_bound_logger(level),
        logger_factory=structlog.PrintLoggerFactory(file=sys.stderr),
        cache_logger_on_first_use=False,
    )
