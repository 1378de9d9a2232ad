"""`--otel TARGET`: where spans go. `console` prints them on stderr; an http(s) URL sends
them over OTLP/HTTP (needs `opentelemetry-exporter-otlp-proto-http`)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from harness.inputs.errors import InputError
from harness.telemetry import use_provider

EXTRA_HINT = "pip install 'ilang-harness[otel]'"


def start_exporting(target: str) -> Any:
    """Set up a tracer provider exporting to `target`; returns it (call `.shutdown()` to
    flush). Bad targets and missing packages are `InputError`s (exit 2)."""
    try:
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import (
            BatchSpanProcessor,
            ConsoleSpanExporter,
            SimpleSpanProcessor,
        )
    except ImportError:
        raise InputError(
            "--otel", "E500", f"OpenTelemetry is not installed: {EXTRA_HINT}"
        ) from None
    provider = TracerProvider(resource=Resource.create({"service.name": "ilang-harness"}))
    if target == "console":
        provider.add_span_processor(SimpleSpanProcessor(ConsoleSpanExporter(out=sys.stderr)))
    elif target.startswith(("http://", "https://")):
        try:
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import (  # type: ignore[import-not-found]
                OTLPSpanExporter,
            )
        except ImportError:
            raise InputError(
                "--otel",
                "E500",
                f"the OTLP exporter is not installed: {EXTRA_HINT} "
                "(opentelemetry-exporter-otlp-proto-http)",
            ) from None
        provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=target)))
    else:
        raise InputError(
            "--otel", "E303", f"not an export target: {target!r} (console, or an http(s) URL)"
        )
    use_provider(provider)
    return provider


@contextmanager
def exporting(target: str | None) -> Iterator[None]:
    """Spans go to `target` for the duration (nothing is set up for None); flushed and
    shut down at the end, however the block ends."""
    if target is None:
        yield
        return
    provider = start_exporting(target)
    try:
        yield
    finally:
        provider.shutdown()
        use_provider(None)
