"""Budget on the wire: real provider clients (over `httpx2.MockTransport`) driven by the
real orchestrator. The `max_tokens` sent never exceeds what the token budget still allows
after the input estimate; a call that cannot fit is never sent; reported usage is what
gets charged; the timeout never exceeds the time left; a failed call is recorded and the
run stops with reason:model_error, its record complete."""

from __future__ import annotations

import asyncio
import json
import textwrap
import time
from pathlib import Path
from typing import Any

import httpx2
import pytest

from harness.inputs.task_file import Task, load_task
from harness.models.clients.retry import RetryPolicy
from harness.models.interface import ModelClient
from harness.models.scripted import ScriptedClient, ScriptedTurn
from harness.record.events import EventKind
from harness.record.results import RunResult
from harness.record.store import RunStore
from harness.run.setup import run_task
from tests.model_fakes import PROVIDERS, FakeTime, Provider, Script, ok, status

ids = [p.name for p in PROVIDERS]
DEFAULT_MAX_OUTPUT = 4096


def make_task(tmp_path: Path, budget: str) -> Task:
    path = tmp_path / "task" / "task.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    body = """
        [task]
        id = "wire"
        objective = "List the files, then stop."
        """
    path.write_text(textwrap.dedent(body) + textwrap.dedent(budget), encoding="utf-8")
    return load_task(path)


def run(task: Task, store: RunStore, client: ModelClient) -> RunResult:
    return asyncio.run(run_task(task, store, model=client.name, client=client))


def working(provider: Provider, input_tokens: int, output_tokens: int) -> dict[str, Any]:
    return provider.reply("Looking.", [("list_files", {})], input_tokens, output_tokens)


@pytest.mark.parametrize("provider", PROVIDERS, ids=ids)
def test_max_tokens_sent_never_exceeds_what_the_budget_allows(
    provider: Provider, tmp_path: Path
) -> None:
    # Three calls of 2,300 leave 250 tokens: a room below any call's fixed prompt (contract,
    # genes and tools: over 400 tokens, however counted), so the fourth cannot fit whether
    # the estimate is the offline rule or o200k's exact count (`bpe_openai` installed).
    task = make_task(
        tmp_path,
        """
        [budget.tokens]
        limit = 7750
        reserve_audit = 500
        reserve_summary = 100
        [budget.rounds]
        limit = 20
        """,
    )
    script = Script([ok(working(provider, 2000, 300))])
    with RunStore(tmp_path / "runs.db") as store:
        result = run(task, store, provider.client(script, time=FakeTime()))
        calls = store.events(result.run_id, EventKind.MODEL_CALL)
        snapshots = store.events(result.run_id, EventKind.BUDGET_SNAPSHOT)
        assert store.verify(result.run_id).ok

    assert result.ended_by == "budget"
    assert result.final is not None and result.final.reason == "budget"
    sent = [provider.max_tokens_field(b) for b in script.bodies()]
    assert len(sent) == len(calls) >= 2, "every call made is recorded, no more, no less"
    used_before = 0
    for index, (max_tokens, call) in enumerate(zip(sent, calls, strict=True)):
        allowed = 7750 - 500 - 100 - used_before - call.payload["input_estimate"]
        assert max_tokens == call.payload["max_output_tokens"]
        assert 1 <= max_tokens <= min(allowed, DEFAULT_MAX_OUTPUT), f"call {index + 1}"
        (tokens,) = [r for r in snapshots[index].payload["budgets"] if r["kind"] == "tokens"]
        used_before = tokens["used"]
    # What the provider reported is what was charged, call by call.
    assert used_before == 2300 * len(calls)
    (tokens,) = [r for r in result.budgets if r["kind"] == "tokens"]
    assert tokens["used"] == 2300 * len(calls)
    assert any("cannot fit" in note for note in result.notes)


@pytest.mark.parametrize("provider", PROVIDERS, ids=ids)
def test_a_call_that_cannot_fit_is_never_sent(provider: Provider, tmp_path: Path) -> None:
    # Below the fixed prompt of any call (over 400 tokens, however counted).
    task = make_task(tmp_path, "[budget.tokens]\nlimit = 300\n")
    script = Script([ok(working(provider, 10, 10))])
    with RunStore(tmp_path / "runs.db") as store:
        result = run(task, store, provider.client(script, time=FakeTime()))
        assert store.events(result.run_id, EventKind.MODEL_CALL) == []
    assert script.requests == []
    assert result.ended_by == "budget"
    assert result.final is not None and (result.final.state, result.final.reason) == (
        "stopped",
        "budget",
    )


@pytest.mark.parametrize("provider", PROVIDERS, ids=ids)
def test_the_timeout_sent_never_exceeds_the_time_left(provider: Provider, tmp_path: Path) -> None:
    task = make_task(tmp_path, '[budget.time]\nlimit = "20s"\n[budget.rounds]\nlimit = 1\n')
    script = Script([ok(working(provider, 100, 10))])
    with RunStore(tmp_path / "runs.db") as store:
        run(task, store, provider.client(script))
    (req,) = script.requests
    assert 0 < req.extensions["timeout"]["read"] <= 20


@pytest.mark.parametrize("provider", PROVIDERS, ids=ids)
def test_every_attempt_is_an_event_in_the_run_record(provider: Provider, tmp_path: Path) -> None:
    task = make_task(tmp_path, "[budget.rounds]\nlimit = 1\n")
    script = Script(
        [
            status(429, provider.error_body("slow"), {"retry-after": "3"}),
            status(500, provider.error_body("oops")),
            ok(working(provider, 100, 10)),
        ]
    )
    with RunStore(tmp_path / "runs.db") as store:
        result = run(task, store, provider.client(script, time=FakeTime()))
        attempts = store.events(result.run_id, EventKind.MODEL_ATTEMPT)
        assert store.verify(result.run_id).ok
    assert [a.payload["outcome"] for a in attempts] == ["retry", "retry", "ok"]
    assert [a.payload["status"] for a in attempts] == [429, 500, None]
    assert attempts[0].payload["retry_after_s"] == 3
    assert all(a.round == 1 for a in attempts)
    assert result.ended_by == "budget"  # one round, spent: the run goes on normally


@pytest.mark.parametrize("provider", PROVIDERS, ids=ids)
@pytest.mark.parametrize(
    "failure",
    [
        lambda p: httpx2.Response(
            200, content=b'{"id": "x", "choi', headers={"content-type": "application/json"}
        ),
        lambda p: httpx2.Response(200, json={"unexpected": True}),
        lambda p: httpx2.Response(401, json=p.error_body("bad key")),
        lambda p: httpx2.Response(503, json=p.error_body("down")),
    ],
    ids=["truncated", "wrong-shape", "auth", "down"],
)
def test_a_failed_call_stops_the_run_with_model_error_and_a_complete_record(
    provider: Provider, failure: Any, tmp_path: Path
) -> None:
    task = make_task(tmp_path, "[budget.rounds]\nlimit = 5\n")
    script = Script([lambda req: failure(provider)])
    with RunStore(tmp_path / "runs.db") as store:
        result = run(task, store, provider.client(script, time=FakeTime()))
        events = store.events(result.run_id)
        assert store.verify(result.run_id).ok
    assert result.ended_by == "error"
    assert result.exit_code == 3
    assert result.final is not None
    assert (result.final.state, result.final.reason, result.final.by) == (
        "stopped",
        "model_error",
        "@RUNTIME",
    )
    kinds = [e.kind for e in events]
    assert kinds[-1] is EventKind.RUN_ENDED
    assert EventKind.MODEL_CALL not in kinds
    notes = [e.payload for e in events if e.kind is EventKind.NOTE]
    assert notes and "model_error" in notes[0]
    attempts = [e.payload for e in events if e.kind is EventKind.MODEL_ATTEMPT]
    assert attempts and attempts[-1]["outcome"] == "failed"
    (rounds,) = [r for r in result.budgets if r["kind"] == "rounds"]
    assert rounds["used"] == 1
    assert any("the model call failed" in note for note in result.notes)


@pytest.mark.parametrize("provider", PROVIDERS, ids=ids)
def test_usage_reported_with_an_unusable_reply_is_charged(
    provider: Provider, tmp_path: Path
) -> None:
    task = make_task(tmp_path, "[budget.tokens]\nlimit = 20000\n")
    body = provider.reply("x", input_tokens=1500, output_tokens=70)
    body.pop("choices", None)
    body["content"] = "not blocks"
    with RunStore(tmp_path / "runs.db") as store:
        result = run(task, store, provider.client(Script([ok(body)]), time=FakeTime()))
    (tokens,) = [r for r in result.budgets if r["kind"] == "tokens"]
    assert tokens["used"] == 1570


@pytest.mark.parametrize("provider", PROVIDERS, ids=ids)
def test_an_unreadable_2xx_body_is_charged_the_most_the_call_could_cost(
    provider: Provider, tmp_path: Path
) -> None:
    """A cut-off body said nothing of its usage, but the provider did the work: the run
    is charged the input estimate and the whole output cap it allowed (errs high)."""
    task = make_task(tmp_path, "[budget.tokens]\nlimit = 20000\n")
    script = Script(
        [
            lambda req: httpx2.Response(
                200, content=b'{"id": "x", "choi', headers={"content-type": "application/json"}
            )
        ]
    )
    with RunStore(tmp_path / "runs.db") as store:
        result = run(task, store, provider.client(script, time=FakeTime()))
    assert result.ended_by == "error"
    (body,) = script.bodies()
    cap = provider.max_tokens_field(body)
    (tokens,) = [r for r in result.budgets if r["kind"] == "tokens"]
    assert cap < tokens["used"] < cap + 5000, "the output cap and an input estimate"


@pytest.mark.parametrize("provider", PROVIDERS, ids=ids)
def test_retry_waits_are_spent_from_the_time_budget(provider: Provider, tmp_path: Path) -> None:
    """Real clock: the wait a 429 asks for is honoured, and it is time the run spent."""
    task = make_task(tmp_path, '[budget.time]\nlimit = "30s"\n[budget.rounds]\nlimit = 1\n')
    script = Script(
        [
            status(429, provider.error_body("slow"), {"retry-after-ms": "400"}),
            ok(working(provider, 100, 10)),
        ]
    )
    policy = RetryPolicy(initial_backoff_s=0.01, jitter_s=0, min_attempt_s=0.1)
    with RunStore(tmp_path / "runs.db") as store:
        result = run(task, store, provider.client(script, policy=policy))
    assert len(script.requests) == 2
    (spent,) = [r for r in result.budgets if r["kind"] == "time"]
    assert spent["used"] >= 0.4


@pytest.mark.parametrize("provider", PROVIDERS, ids=ids)
def test_a_retry_after_past_the_time_budget_is_not_waited_for(
    provider: Provider, tmp_path: Path
) -> None:
    task = make_task(tmp_path, '[budget.time]\nlimit = "5s"\n[budget.rounds]\nlimit = 3\n')
    script = Script([status(429, provider.error_body("come back later"), {"retry-after": "60"})])
    began = time.monotonic()
    with RunStore(tmp_path / "runs.db") as store:
        result = run(task, store, provider.client(script))
        attempts = store.events(result.run_id, EventKind.MODEL_ATTEMPT)
    assert time.monotonic() - began < 4, "the 60 s wait was not slept"
    assert len(script.requests) == 1
    assert [(a.payload["outcome"], a.payload["retry_after_s"]) for a in attempts] == [
        ("failed", 60)
    ]
    assert result.final is not None and result.final.reason == "model_error"


@pytest.mark.parametrize("provider", PROVIDERS, ids=ids)
def test_usage_missing_from_a_reply_is_charged_as_the_flagged_estimate(
    provider: Provider, tmp_path: Path
) -> None:
    task = make_task(tmp_path, "[budget.tokens]\nlimit = 20000\n[budget.rounds]\nlimit = 1\n")
    body = provider.reply("Looking.", [("list_files", {})], usage=False)
    with RunStore(tmp_path / "runs.db") as store:
        result = run(task, store, provider.client(Script([ok(body)]), time=FakeTime()))
        (call,) = store.events(result.run_id, EventKind.MODEL_CALL)
    usage = call.payload["usage"]
    assert usage["estimated"] is True
    assert usage["input_tokens"] == call.payload["input_estimate"]
    (tokens,) = [r for r in result.budgets if r["kind"] == "tokens"]
    assert tokens["used"] == usage["input_tokens"] + usage["output_tokens"]


@pytest.mark.parametrize("provider", PROVIDERS, ids=ids)
def test_the_graders_attempts_are_events_in_the_run_record_too(
    provider: Provider, tmp_path: Path
) -> None:
    task = make_task(
        tmp_path,
        """
        [budget.rounds]
        limit = 3

        [rubric]
        threshold = 1.0

        [[rubric.criteria]]
        id = "judged"
        weight = 1.0
        check = "the files are listed"
        """,
    )
    claim = "Done.\n\n::STATUS{@TASK|state:claimed_complete|by:@AGENT|authority:proposal}"
    agent = ScriptedClient([ScriptedTurn(text=claim)], "scripted:agent")
    answer = {"results": [{"id": "judged", "result": "fail", "rationale": "nothing listed"}]}
    grader_script = Script(
        [
            status(429, provider.error_body("slow"), {"retry-after": "1"}),
            ok(provider.reply(json.dumps(answer), [], 300, 20)),
        ]
    )
    grader = provider.client(grader_script, time=FakeTime())
    with RunStore(tmp_path / "runs.db") as store:
        result = asyncio.run(
            run_task(task, store, model=agent.name, client=agent, grader_client=grader)
        )
        attempts = [e.payload for e in store.events(result.run_id, EventKind.MODEL_ATTEMPT)]
        assert store.verify(result.run_id).ok
    assert len(grader_script.requests) == 2
    graders = [a for a in attempts if a.get("caller") == "grader"]
    assert [(a["outcome"], a["status"]) for a in graders] == [("retry", 429), ("ok", None)]
    assert result.grader is not None and result.grader["verdict"] == "needs_revision"
