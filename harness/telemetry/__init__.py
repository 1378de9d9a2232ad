"""OpenTelemetry traces of what the harness does, following the GenAI semantic
conventions: a span per run, per round, per model call (`chat MODEL`, with token usage),
per tool call (`execute_tool NAME`) and per grader check.

OpenTelemetry is optional (`pip install 'ilang-harness[otel]'`). Without it, or without a
tracer provider (`ilh run --otel …` sets one up), every span here is a no-op that costs
one function call. Attributes never carry prompt or output text: only names, ids, counts
and outcomes (the text may hold what the secrets redactor is for).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager, nullcontext
from typing import Any

AttributeValue = str | bool | int | float

_provider: Any = None  # an explicit TracerProvider (tests, `--otel`); else the global one


def use_provider(provider: Any) -> None:
    """Send spans to `provider` (an `opentelemetry.sdk.trace.TracerProvider`), or back to
    the global provider with None."""
    global _provider
    _provider = provider


_trace: Any = None  # the `opentelemetry.trace` module once imported; False: not installed


def _tracer() -> Any:
    global _trace
    if _trace is None:
        try:
            from opentelemetry import trace
        except ImportError:
            _trace = False
        else:
            _trace = trace
    if _trace is False:
        return None
    if _provider is not None:
        return _provider.get_tracer("ilang-harness")
    provider = _trace.get_tracer_provider()
    if isinstance(provider, _trace.ProxyTracerProvider):
        # Nobody set a global provider: each span would be a non-recording proxy, made,
        # entered as the current span and left again, several per round of every task
        # on the loop a batch shares. A provider set later is seen by the next span.
        return None
    return provider.get_tracer("ilang-harness")


@contextmanager
def span(name: str, attributes: Mapping[str, AttributeValue | None] | None = None) -> Iterator[Any]:
    """A span named `name` (a no-op without OpenTelemetry). The yielded object takes
    `set_attribute(key, value)`; `None` values are left out."""
    tracer = _tracer()
    if tracer is None:
        with nullcontext(_NoSpan()) as nothing:
            yield nothing
        return
    clean = {k: v for k, v in (attributes or {}).items() if v is not None}
    with tracer.start_as_current_span(name, attributes=clean) as current:
        yield current


class _NoSpan:
    def set_attribute(self, key: str, value: AttributeValue) -> None:
        return None


def provider_system(model_uri: str) -> str:
    """`gen_ai.system` for a model URI: the provider's name, else the harness's scheme."""
    scheme = model_uri.partition(":")[0]
    return {"openai": "openai", "anthropic": "anthropic"}.get(scheme, f"ilh.{scheme}")
