"""OpenTelemetry traces (GenAI semantic conventions), checked with an in-memory exporter:
a span per run, round, model call (with token usage), tool call and grader check."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from harness.api import run_task
from harness.cli.main import ilh
from harness.telemetry import use_provider

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    use_provider(provider)
    try:
        yield exporter
    finally:
        use_provider(None)
        provider.shutdown()


def by_name(exporter: InMemorySpanExporter, prefix: str) -> list[Any]:
    return [s for s in exporter.get_finished_spans() if s.name.startswith(prefix)]


def test_a_run_is_traced_with_the_genai_attributes(
    spans: InMemorySpanExporter, tmp_path: Path
) -> None:
    result = run_task(EXAMPLES / "honest" / "task.toml", store=tmp_path / "r.db")
    assert result.ended_by == "committed_complete"
    (run,) = by_name(spans, "invoke_agent")
    assert run.attributes["gen_ai.operation.name"] == "invoke_agent"
    assert run.attributes["ilh.run.id"] == result.run_id
    assert run.attributes["ilh.ended_by"] == "committed_complete"
    rounds = by_name(spans, "ilh.round")
    chats = by_name(spans, "chat ")
    assert len(rounds) == len(chats) == 4
    first = chats[0]
    assert first.name == "chat scripted:agent.jsonl"
    assert first.attributes["gen_ai.operation.name"] == "chat"
    assert first.attributes["gen_ai.request.model"] == "scripted:agent.jsonl"
    assert first.attributes["gen_ai.usage.input_tokens"] == 1800
    assert first.attributes["gen_ai.usage.output_tokens"] == 40
    # Nesting: run > round > model call and tool calls.
    assert first.parent.span_id == rounds[0].context.span_id
    assert rounds[0].parent.span_id == run.context.span_id
    tools = by_name(spans, "execute_tool ")
    assert [t.attributes["gen_ai.tool.name"] for t in tools] == [
        "list_files",
        "write_file",
        "run_command",
    ]
    assert all(t.attributes["ilh.tool.ok"] for t in tools)
    checks = by_name(spans, "ilh.grader.check")
    assert {c.attributes["ilh.criterion.id"] for c in checks} == {"tests", "docs"}
    assert all(c.attributes["ilh.check.exit_code"] == 0 for c in checks)
    # Only names, ids, counts and outcomes: no prompt, output or command text.
    for span in spans.get_finished_spans():
        for value in span.attributes.values():
            assert "fizzbuzz(" not in str(value) and "unittest" not in str(value)


def test_a_bad_export_target_is_bad_input(tmp_path: Path) -> None:
    task = EXAMPLES / "honest" / "task.toml"
    result = CliRunner().invoke(
        ilh, ["run", str(task), "--otel", "carrier-pigeon", "--store", str(tmp_path / "r.db")]
    )
    assert result.exit_code == 2 and "error --otel: E303" in result.output


def test_without_a_provider_spans_cost_nothing_visible(tmp_path: Path) -> None:
    result = run_task(EXAMPLES / "honest" / "task.toml", store=tmp_path / "r.db")
    assert result.ended_by == "committed_complete"


def test_a_global_provider_is_used_and_without_one_spans_are_skipped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No provider of our own and none set globally: the no-op span, without making a
    proxy span per call. A global provider (set by an application embedding the
    harness, after import) gets the spans."""
    from opentelemetry import trace

    from harness.telemetry import span

    with span("quiet") as nothing:
        assert not isinstance(nothing, trace.Span)
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    # `trace.set_tracer_provider` may be called once per process: set it where the
    # monkeypatch restores it.
    monkeypatch.setattr(trace, "_TRACER_PROVIDER", provider)
    result = run_task(EXAMPLES / "honest" / "task.toml", store=tmp_path / "r.db")
    (run,) = by_name(exporter, "invoke_agent")
    assert run.attributes["ilh.run.id"] == result.run_id
    assert len(by_name(exporter, "chat ")) == 4
