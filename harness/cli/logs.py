"""structlog set-up for the command line: warnings and above, on stderr, so that stdout
stays clean for `--json`. ILH_LOG=debug|info shows more. Every event passes
`redact_secrets` first: no log line holds a secret the harness knows.

Importing structlog costs about 0.2 s of CPU (its `dev` module loads rich's traceback
and pretty-printer), several times an interpreter's own start-up. A command that logs
nothing (`ilh lint`, `ilh --help`) should not pay it: when structlog is not imported yet,
`configure_logging` only arranges for the configuration to run the moment it is, before
the importing module can log anything (`_ConfigureOnImport`)."""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import logging
import os
import sys
from collections.abc import MutableMapping, Sequence
from types import ModuleType
from typing import Any

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
    """Configure structlog now if it is imported, else as soon as it is."""
    if "structlog" in sys.modules:
        _configure()
    elif not any(isinstance(f, _ConfigureOnImport) for f in sys.meta_path):
        sys.meta_path.insert(0, _ConfigureOnImport())


class _ConfigureOnImport(importlib.abc.MetaPathFinder):
    """Finds nothing itself: on the import of `structlog` it takes the spec the other
    finders give and runs `_configure` right after the module's own code, then leaves
    `sys.meta_path` (it is needed once)."""

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname != "structlog":
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(fullname)  # the other finders (self is gone)
        if spec is None or spec.loader is None:
            return spec
        loader = spec.loader
        run_module = loader.exec_module

        def exec_then_configure(module: ModuleType) -> None:
            run_module(module)
            _configure()

        loader.exec_module = exec_then_configure  # type: ignore[method-assign]
        return spec


def _configure() -> None:
    import structlog

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
