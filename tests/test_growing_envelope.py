"""The incremental envelope (`harness.context.growing`) and the per-message memos of the
round loop (`harness.models.memo`, `RequestRedactor`, `ConversationEstimate`): whatever
the history does, each round sends exactly what a full rebuild would."""

from __future__ import annotations

import asyncio
import random
from pathlib import Path
from typing import Any

from budgets.estimate import CALL_OVERHEAD, estimate_messages, estimate_tokens
from budgets.ledger import BudgetLedger
from harness.context.agent import Segment, tool_result_segment, untrusted
from harness.context.growing import GrowingEnvelope, GrownEnvelope
from harness.enforce.provenance import Provenance
from harness.inputs.task_file import Task, TaskFile
from harness.models.clients.estimate import ConversationEstimate, estimate_input, message_tokens
from harness.models.interface import Message, ModelRequest
from harness.models.memo import PerMessage
from harness.models.scripted import ScriptedCall, ScriptedClient, ScriptedTurn
from harness.models.secrecy import RequestRedactor, redact_request
from harness.record.events import EventKind
from harness.record.store import RunStore
from harness.run.orchestrator import Orchestrator
from harness.run.setup import budgets_of, lifecycle_of, workspace_for
from harness.secrets import SecretValues
from harness.workspace.tools import ToolCall, ToolResult, tool_specs
from tests.harness_helpers import Recording

DECLARATIONS = ["::OBJECTIVE{g1|ACCEPT:untrusted_block:objective}"]


def blocks() -> list[Segment]:
    return [
        untrusted("Fix the totals.", source="user", role="objective"),
        untrusted("rows 1-9", source="user", role="task_data"),
    ]


def random_segment(rng: random.Random, n: int) -> Segment:
    """One history segment of any kind the orchestrator, a resume or the grader adds."""
    kind = rng.randrange(7)
    if kind == 0:
        return Segment(provenance=Provenance.AGENT, text=f"reply {n}")
    if kind == 1:
        calls = tuple(
            ToolCall(name="read_file", arguments={"path": f"f{n}-{i}.txt"}, id=f"c{n}-{i}")
            for i in range(rng.randrange(1, 3))
        )
        return Segment(
            provenance=Provenance.AGENT, text=rng.choice(["", f"look {n}"]), tool_calls=calls
        )
    if kind == 2:
        result = ToolResult(
            name="read_file", ok=rng.random() < 0.5, output=f"out {n} ü", id=f"c{n}"
        )
        return tool_result_segment(result)
    if kind == 3:  # a tool result with no call id to answer: travels as user text
        return tool_result_segment(ToolResult(name="grep", ok=True, output=f"hits {n}"))
    if kind == 4:
        return Segment(provenance=Provenance.RUNTIME, text=f"Round {n} is over.\nfeedback {n}")
    if kind == 5:  # the grader's findings (merge into the feedback before them)
        return untrusted(f"findings {n}", source="grader", role="grader_findings")
    return untrusted(f"note {n}", source="user", role="task_data")


def round_lines(n: int) -> list[str]:
    return [f"::BUDGET{{b1|rounds|limit:{n + 5}|spent:{n}|remaining:5}}", f"::STATUS{{n:{n}}}"]


def assert_same(grown: GrownEnvelope, builder: GrowingEnvelope, n: int, history: Any) -> None:
    full = builder.full(round_lines(n), history)
    assert grown.messages() == full.messages()
    assert grown.digest() == full.digest()
    assert grown.envelope() == full


def test_incremental_envelope_equals_a_full_rebuild_over_many_mixed_rounds() -> None:
    for seed in range(25):
        rng = random.Random(seed)
        builder = GrowingEnvelope(task_declarations=DECLARATIONS, task_blocks=blocks())
        history: list[Segment] = []
        if seed % 3 == 0:  # a resumed run's history can start with runtime text
            history.append(Segment(provenance=Provenance.RUNTIME, text="resumed"))
        for n in range(1, 61):
            for _ in range(rng.randrange(0, 4)):
                history.append(random_segment(rng, n))
            change = rng.random()
            if history and change < 0.05:  # an earlier segment replaced in place
                history[rng.randrange(len(history))] = random_segment(rng, 1000 + n)
            elif change < 0.08:  # the whole list replaced (a reset or a new run state)
                history = [*history[: rng.randrange(len(history) + 1)]]
            elif history and change < 0.10:  # cut short, the same list
                del history[rng.randrange(len(history)) :]
            # A tuple as well as a list: any sequence of segments.
            given = tuple(history) if change > 0.95 else history
            assert_same(builder.build(round_lines(n), given), builder, n, given)


def test_a_merge_into_the_last_message_and_a_leading_merge_are_rendered_again() -> None:
    builder = GrowingEnvelope(task_declarations=DECLARATIONS, task_blocks=blocks())
    feedback = Segment(provenance=Provenance.RUNTIME, text="Round 1 is over.")
    history = [feedback]
    first = builder.build(round_lines(1), history)
    # The leading runtime text merged into the head's user message.
    assert (
        first.messages()[-1].role == "user" and "Round 1 is over." in first.messages()[-1].content
    )
    history += [Segment(provenance=Provenance.AGENT, text="ok"), feedback]
    second = builder.build(round_lines(2), history)
    history.append(untrusted("gap: hello", source="grader", role="grader_findings"))
    third = builder.build(round_lines(3), history)
    last = third.messages()[-1]
    assert last.content.startswith("Round 1 is over.\n\n::UNTRUSTED") and last.role == "user"
    assert_same(third, builder, 3, history)
    # An envelope kept from before the merge still digests its own messages.
    assert second.digest() == builder.full(round_lines(2), history[:3]).digest()


def test_a_changed_earlier_segment_is_never_served_from_the_cache() -> None:
    builder = GrowingEnvelope(task_declarations=DECLARATIONS, task_blocks=blocks())
    history = [Segment(provenance=Provenance.AGENT, text=f"reply {n}") for n in range(5)]
    before = builder.build(round_lines(1), history)
    history[1] = Segment(provenance=Provenance.AGENT, text="a different reply")
    after = builder.build(round_lines(2), history)
    assert "a different reply" in [m.content for m in after.messages()]
    assert after.digest() != before.digest()
    assert_same(after, builder, 2, history)


def test_a_message_re_sent_at_its_place_is_computed_once() -> None:
    seen: list[str] = []

    def compute(message: Message) -> int:
        seen.append(message.content)
        return len(message.content)

    memo = PerMessage(compute)
    a, b, c = (Message(role="user", content=t) for t in ("a", "bb", "ccc"))
    assert memo((a, b)) == [1, 2]
    assert memo((a, b, c)) == [1, 2, 3]
    assert seen == ["a", "bb", "ccc"]
    b2 = Message(role="user", content="bbbb")  # a new object at an old place
    assert memo((a, b2, c)) == [1, 4, 3] and seen[-1] == "bbbb" and len(seen) == 4
    memo.clear()
    assert memo((a,)) == [1] and len(seen) == 5


def test_the_request_redactor_gives_what_redact_request_gives_call_for_call() -> None:
    key = "sk-live-9f8e7d6c5b4a39281706f5e4d3c2b1a0"
    first = SecretValues([("OPENAI_API_KEY", key)])
    redactor = RequestRedactor()
    messages: list[Message] = [Message(role="system", content="contract")]
    for n in range(12):
        text = f"output {n} {key}" if n % 3 == 0 else f"output {n}"
        messages.append(Message(role="user", content=text))
        request = ModelRequest(messages=tuple(messages), max_output_tokens=10, timeout_s=1)
        secrets = first if n < 8 else SecretValues([("OTHER_KEY", "output 1 ")])
        got = redactor(request, secrets)
        assert got == redact_request(request, secrets)
        assert key not in "".join(m.content for m in got.messages) or n >= 8
    clean = ModelRequest(
        messages=(Message(role="user", content="nothing here"),), max_output_tokens=10, timeout_s=1
    )
    assert redactor(clean, first) is clean


def test_the_conversation_estimate_equals_the_estimate_of_each_call() -> None:
    plain = ConversationEstimate(object())
    messages: list[Message] = []
    for n in range(20):
        messages.append(Message(role="user" if n % 2 else "assistant", content=f"text {n} é" * n))
        got = plain(tuple(messages), ())
        assert got == estimate_messages(m.content for m in messages)
        assert got == sum(estimate_tokens(m.content) for m in messages) + CALL_OVERHEAD
    tools = tuple(tool_specs())
    calls = (ToolCall(name="read_file", arguments={"path": "a"}, id="1"),)
    wire = [Message(role="assistant", content="x", tool_calls=calls), *messages]
    memo = PerMessage(message_tokens)
    assert estimate_input(wire, tools, counted=memo) == estimate_input(wire, tools)
    assert estimate_input(wire, tools, counted=memo) == estimate_input(wire, tools)


def test_the_round_loop_sends_and_records_what_a_full_rebuild_gives(tmp_path: Path) -> None:
    """A whole run (tool calls, a rejected claim, a grader's needs_revision with feedback
    and findings, then completion): every request's messages and every recorded digest
    are those of the envelope rebuilt from scratch."""
    (tmp_path / "template").mkdir()
    task = Task(
        spec=TaskFile.model_validate(
            {
                "task": {
                    "id": "t",
                    "objective": "Write notes.txt saying hello.",
                    "accept": "notes.txt says hello",
                    "workspace": "template",
                },
                "budget": {"rounds": {"limit": 12}},
                "rubric": {
                    "threshold": 1.0,
                    "criteria": [
                        {
                            "id": "hello",
                            "weight": 1.0,
                            "check": "says hello",
                            "run": "grep -q hello notes.txt",
                        }
                    ],
                },
            }
        ),
        folder=tmp_path,
    )
    claim = "::STATUS{@TASK|state:claimed_complete|by:@AGENT|authority:proposal}"
    bad = "::STATUS{@TASK|state:complete|by:@AGENT|authority:commit}"
    turns = [
        ScriptedTurn(text="looking", tool_calls=[ScriptedCall(name="list_files")]),
        ScriptedTurn(text=f"done\n{bad}\n"),
        ScriptedTurn(text=f"done\n{claim}\n"),
        ScriptedTurn(
            text="fixing",
            tool_calls=[
                ScriptedCall(
                    name="write_file", arguments={"path": "notes.txt", "content": "hello"}
                ),
                ScriptedCall(name="read_file", arguments={"path": "notes.txt"}),
            ],
        ),
        ScriptedTurn(text="checked"),
        ScriptedTurn(text=claim),
    ]
    store = RunStore(tmp_path / "runs.db")
    try:
        agent = Recording(ScriptedClient(turns, "scripted:agent"))
        run_id = store.create_run(task.id, {"model": agent.name})
        orchestrator = Orchestrator(
            task=task,
            client=agent,
            store=store,
            run_id=run_id,
            ledger=BudgetLedger(budgets_of(task)),
            lifecycle=lifecycle_of(task),
            workspace=workspace_for(store, run_id, task),
        )
        rebuilt: list[tuple[tuple[Message, ...], str]] = []
        build = orchestrator.envelopes.build

        def checked(lines: Any, history: Any) -> GrownEnvelope:
            grown = build(lines, history)
            full = orchestrator.envelopes.full(lines, list(history))
            rebuilt.append((full.messages(), full.digest()))
            return grown

        orchestrator.envelopes.build = checked  # type: ignore[method-assign]
        result = asyncio.run(orchestrator.run())
        calls = store.events(run_id, EventKind.MODEL_CALL)
    finally:
        store.close()
    assert result.ended_by == "committed_complete"
    assert len(agent.requests) == len(turns) == len(calls) == len(rebuilt)
    for request, event, (messages, digest) in zip(agent.requests, calls, rebuilt, strict=True):
        assert request.messages == messages
        assert event.payload["envelope_digest"] == digest
    # The findings merged into the feedback before them, in the run's later requests.
    assert any("role:grader_findings" in m.content for m in agent.requests[3].messages)
