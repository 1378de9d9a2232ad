"""structlog set-up for the command line: warnings and above, on stderr, so that stdout
stays clean for `--json`. ILH_LOG=debug|info shows more."""

from __future__ import annotations

import logging
import os
import sys

import structlog


def configure_logging() -> None:
    name = os.environ.get("ILH_LOG", "warning").upper()
    level = logging.getLevelNamesMapping().get(name, logging.WARNING)
    structlog.configure(
        wrapper_class=structlog.make_filtering_bound_logger(level),
        logger_factory=structlog.PrintLoggerFactory(file=sys.stderr),
        cache_logger_on_first_use=False,
    )
