"""The harness's structlog set-up, one for the command line and the Python API: warnings
and above on stderr, so that stdout stays clean for `--json` (and a library caller's own
output is never touched). ILH_LOG=debug|info shows more. Every event passes
`redact_secrets` just before it is rendered: no log line holds a secret the harness knows.

Importing structlog costs about 0.2 s of CPU (its `dev` module loads rich's traceback
and pretty-printer), several times an interpreter's own start-up. A command that logs
nothing (`ilh lint`, `ilh --help`) should not pay it: when structlog is not imported yet,
`configure_logging` only arranges for the configuration to run the moment it is, before
the importing module can log anything (`_ConfigureOnImport`).

A program that configured structlog itself (`library_logging`, called by
`harness.api`) keeps its set-up; `redact_secrets` is only added to its processors,
before its renderer, so the harness's log lines reach it without the harness's keys."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, MutableMapping, Sequence
from types import ModuleType, TracebackType
from typing import TYPE_CHECKING, Any, Final

# What a log line needs (the secrets to redact, `logging`'s level names, `traceback`,
# the import machinery) is imported when the first line is written or structlog loads,
# not here: every command imports this module to set logging up, and these imports were
# a seventh of a short `ilh lint`'s start-up (benchmarks/startup.py).
if TYPE_CHECKING:
    import importlib.machinery

    from harness.secrets.values import SecretValues

#: How deep `redact_secrets` follows containers inside containers; deeper (or a container
#: that holds itself) is judged by its text, as a renderer would show it.
_MAX_DEPTH: Final = 16
_SCALARS: Final = (bool, int, float, type(None))


def redact_secrets(
    logger: Any, method: str, event: MutableMapping[str, Any]
) -> MutableMapping[str, Any]:
    """A structlog processor: the event without the harness's secrets.

    Strings are redacted, containers (dicts, lists, tuples, sets) item by item, keys
    included. Any other value (a Path, an exception, bytes, an object) is shown by a
    renderer through its `repr` or `str`: when either holds a secret the value gives way
    to that text, redacted. A traceback (`exc_info`, or `log.exception`) becomes plain
    text, redacted, in the `exception` key: rendered later it could show what the
    processor never saw (rich's traceback prints each frame's local variables, a key
    among them)."""
    from harness.secrets.registry import harness_secrets

    known = harness_secrets()
    if not known:
        return event
    exc_info = event.pop("exc_info", None)
    if exc_info is None and method == "exception":
        exc_info = True  # structlog's `set_exc_info` may run after this processor
    for key, value in list(event.items()):
        event[key] = _redacted(known, value, 0)
    failure = _exc_info_tuple(exc_info)
    if failure is not None:
        import traceback

        text = "".join(traceback.format_exception(failure[0], failure[1], failure[2]))
        earlier = event.get("exception")
        event["exception"] = known.redact(f"{earlier}\n{text}" if earlier else text)
    return event


def _redacted(known: SecretValues, value: Any, depth: int) -> Any:
    if isinstance(value, str):
        return known.redact(value)
    if isinstance(value, _SCALARS):
        return value
    if depth < _MAX_DEPTH:
        if isinstance(value, Mapping):
            return {
                _redacted(known, key, depth + 1): _redacted(known, item, depth + 1)
                for key, item in value.items()
            }
        if isinstance(value, list | tuple | set | frozenset):
            items = [_redacted(known, item, depth + 1) for item in value]
            if isinstance(value, list):
                return items
            if isinstance(value, tuple):
                return tuple(items)
            return frozenset(items) if isinstance(value, frozenset) else set(items)
    if isinstance(value, bytes | bytearray | memoryview):
        text = bytes(value).decode("utf-8", errors="backslashreplace")
        return known.redact(text) if known.found_in(text) else value
    shown = _text_of(value, repr)
    if known.found_in(shown):
        return known.redact(shown)
    shown = _text_of(value, str)
    return known.redact(shown) if known.found_in(shown) else value


def _text_of(value: Any, show: Any) -> str:
    try:
        text = show(value)
    except Exception:  # a broken __repr__ must not lose the log line
        return ""
    return text if isinstance(text, str) else ""


def _exc_info_tuple(
    exc_info: Any,
) -> tuple[type[BaseException], BaseException, TracebackType | None] | None:
    """`exc_info` as structlog accepts it (True, an exception, a sys.exc_info() tuple)."""
    if isinstance(exc_info, BaseException):
        return type(exc_info), exc_info, exc_info.__traceback__
    if isinstance(exc_info, tuple) and len(exc_info) == 3 and exc_info[1] is not None:
        return exc_info[0], exc_info[1], exc_info[2]
    if exc_info is True:
        kind, error, trace = sys.exc_info()
        if kind is not None and error is not None:
            return kind, error, trace
    return None


def configure_logging() -> None:
    """Configure structlog now if it is imported, else as soon as it is."""
    if "structlog" in sys.modules:
        _configure()
    elif not any(isinstance(f, _ConfigureOnImport) for f in sys.meta_path):
        sys.meta_path.insert(0, _ConfigureOnImport())


def library_logging() -> None:
    """For the Python API: the command line's set-up (`configure_logging`) unless the
    program configured structlog itself; then its set-up stays, with `redact_secrets`
    added before its last processor (the renderer)."""
    import structlog

    if not structlog.is_configured():
        _configure()
        return
    processors = structlog.get_config()["processors"]
    if redact_secrets not in processors:
        structlog.configure(processors=_redacting(processors))


def _redacting(processors: Sequence[Any]) -> list[Any]:
    """`processors` with `redact_secrets` once, just before the last one: the last renders
    (or hands the event to logging's formatter), so redacting there also covers what the
    processors before it added (context variables, `set_exc_info`)."""
    kept = [p for p in processors if p is not redact_secrets]
    at = max(len(kept) - 1, 0)
    return [*kept[:at], redact_secrets, *kept[at:]]


class _ConfigureOnImport:
    """Finds nothing itself: on the import of `structlog` it takes the spec the other
    finders give and runs `_configure` right after the module's own code, then leaves
    `sys.meta_path` (it is needed once). A finder is anything with `find_spec`; deriving
    from `importlib.abc.MetaPathFinder` imported `importlib.resources` and `pathlib`."""

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname != "structlog":
            return None
        sys.meta_path.remove(self)
        import importlib.util

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


#: `logging.WARNING`, the level when `ILH_LOG` names none, spelled here so that the
#: default needs no `logging` (a test holds it equal).
WARNING: Final = 30

#: The levels `ILH_LOG` takes, as the note about a wrong one lists them.
LOG_LEVELS = ("debug", "info", "warning", "error", "critical")


def log_level(value: str | None) -> tuple[int, str | None]:
    """The level `ILH_LOG=value` asks for, and a note when it names none (warning is
    used then): `ILH_LOG=verbose` was taken silently, and the person who asked for more
    saw nothing and was not told why."""
    name = (value or "").strip()
    if not name:
        return WARNING, None
    import logging

    level = logging.getLevelNamesMapping().get(name.upper())
    if level is not None:
        return level, None
    return WARNING, (
        f"note: ILH_LOG={value!r} is not a log level ({', '.join(LOG_LEVELS)}): warning is used"
    )


def _configure() -> None:
    import structlog

    level, _ = log_level(os.environ.get("ILH_LOG"))
    structlog.configure(
        processors=_redacting(structlog.get_config()["processors"]),  # structlog's defaults
        wrapper_class=structlog.make_filtering_bound_logger(level),
        # The stream is looked up at each logger's making (each log call: nothing is
        # cached), not once here: a caller that swaps sys.stderr later (a library user's
        # redirect, a test's capture) had lines written to the closed stream it replaced,
        # and the log call raised "I/O operation on closed file".
        logger_factory=_stderr_logger,
        cache_logger_on_first_use=False,
    )


def _stderr_logger(*_args: object) -> Any:
    import structlog

    return structlog.PrintLogger(file=sys.stderr)
