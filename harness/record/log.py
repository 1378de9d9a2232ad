"""The record's logger, imported lazily: `ilh runs list` and `ilh runs show` open a
store and should not pay structlog's import (about 0.2 s of CPU, see
`harness.secrets.logs`) for log lines they almost never write. The first log call imports
structlog, which the command line has arranged to configure as it loads."""

from __future__ import annotations

from typing import Any


class LazyLogger:
    """`structlog.get_logger(name)`, fetched on first use."""

    def __init__(self, name: str) -> None:
        self._name = name
        self._logger: Any = None

    def __getattr__(self, method: str) -> Any:
        if self._logger is None:
            import structlog

            self._logger = structlog.get_logger(self._name)
        return getattr(self._logger, method)
