"""Hostile or broken provider responses, for both providers over `httpx2.MockTransport`:
empty choices, null content, tool calls with arguments that are not a JSON object (or
nest too deep for the run record), negative, missing or nonsensical usage, bodies that
are huge or cut off mid-stream. Each is a recorded model error or a reply the run
survives; none is ever an exception out of `run_task`."""

from __future__ import annotations

import asyncio
import json
import textwrap
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import httpx2
import pytest

from harness.inputs.task_file import Task, load_task
from harness.models.clients.convert import MAX_ARGUMENTS_DEPTH
from harness.models.clients.local_client import parse_tool_calls
from harness.models.clients.record import RecordingClient
from harness.models.interface import ModelCallError, ModelReply, Usage
from harness.record.events import EventKind
from harness.record.store import RunStore
from harness.run.setup import run_task
from harness.workspace.tools import ToolCall
from tests.model_fakes import OPENAI, PROVIDERS, FakeTime, Provider, Script, request

ids = [p.name for p in PROVIDERS]
Mangle = Callable[[dict[str, Any]], Any]


def nested(depth: int) -> dict[str, Any]:
    value: dict[str, Any] = {}
    for _ in range(depth):
        value = {"a": value}
    return value


def raw(body: Any) -> Callable[[httpx2.Request], httpx2.Response]:
    content = json.dumps(body).encode()
    return lambda req: httpx2.Response(
        200, content=content, headers={"content-type": "application/json"}
    )


def complete(provider: Provider, body: Any, **kw: Any) -> ModelReply:
    client = provider.client(Script([raw(body)]), time=FakeTime(), **kw)
    reply: ModelReply = asyncio.run(client.complete(request(max_output=256)))
    return reply


def first_call(provider: Provider, body: dict[str, Any]) -> dict[str, Any]:
    """The provider-native tool-call object of a reply body (to mangle in place)."""
    if provider is OPENAI:
        call: dict[str, Any] = body["choices"][0]["message"]["tool_calls"][0]
        return call
    (block,) = [b for b in body["content"] if b["type"] == "tool_use"]
    return block


def set_arguments(provider: Provider, body: dict[str, Any], value: Any) -> dict[str, Any]:
    call = first_call(provider, body)
    if provider is OPENAI:
        call["function"]["arguments"] = value
    else:
        call["input"] = value
    return body


def set_usage(provider: Provider, body: dict[str, Any], value: Any) -> dict[str, Any]:
    if value is ...:
        body.pop("usage", None)
    else:
        body["usage"] = value
    return body


# ------------------------------------------------------------------ empty / null content


def test_openai_empty_choices_is_malformed() -> None:
    body = {**OPENAI.reply("x"), "choices": []}
    with pytest.raises(ModelCallError) as caught:
        complete(OPENAI, body)
    assert caught.value.kind == "malformed" and "choices" in caught.value.message
    assert caught.value.usage is not None  # reported usage is still charged


@pytest.mark.parametrize("provider", PROVIDERS, ids=ids)
def test_null_or_empty_content_is_an_empty_reply(provider: Provider) -> None:
    body = provider.reply("")
    if provider is OPENAI:
        body["choices"][0]["message"]["content"] = None
    else:
        body["content"] = [{"type": "text", "text": None}]
    reply = complete(provider, body)
    assert (reply.text, reply.tool_calls) == ("", ())
    assert reply.usage.input_tokens == 100 and not reply.usage.estimated


# -------------------------------------------------------------------- tool-call arguments


@pytest.mark.parametrize("provider", PROVIDERS, ids=ids)
@pytest.mark.parametrize(
    "arguments, expected",
    [
        ('{"path": "a', {"invalid_arguments": '{"path": "a'}),
        ("[1, 2]", {"invalid_arguments": "[1, 2]"}),
        ([1, 2], {"invalid_arguments": "[1, 2]"}),
        (7, {"invalid_arguments": "7"}),
        (None, {}),
        ("", {}),
        ('{"path": "a.py"}', {"path": "a.py"}),
        ({"path": "a.py"}, {"path": "a.py"}),
    ],
    ids=["cut-json", "json-list", "list", "number", "null", "empty", "json-text", "object"],
)
def test_tool_arguments_that_are_not_an_object_reach_the_tool_as_invalid(
    provider: Provider, arguments: Any, expected: dict[str, Any]
) -> None:
    body = set_arguments(provider, provider.reply(calls=[("read_file", {})]), arguments)
    reply = complete(provider, body)
    (call,) = reply.tool_calls
    assert (call.name, call.arguments) == ("read_file", expected)
    assert call.id


@pytest.mark.parametrize("provider", PROVIDERS, ids=ids)
def test_arguments_nested_too_deep_are_kept_as_invalid(provider: Provider) -> None:
    deep = nested(MAX_ARGUMENTS_DEPTH + 5)
    value = json.dumps(deep) if provider is OPENAI else deep
    body = set_arguments(provider, provider.reply(calls=[("read_file", {})]), value)
    (call,) = complete(provider, body).tool_calls
    assert list(call.arguments) == ["invalid_arguments"]
    shallow = set_arguments(provider, provider.reply(calls=[("read_file", {})]), nested(3))
    (call,) = complete(provider, shallow).tool_calls
    assert call.arguments == nested(3)


def test_local_tool_calls_nested_too_deep_stay_text() -> None:
    line = (
        '<tool_call>{"name": "read_file", "arguments": '
        + json.dumps(nested(MAX_ARGUMENTS_DEPTH + 5))
        + "}</tool_call>"
    )
    text, calls = parse_tool_calls(line)
    assert calls == () and text == line


@pytest.mark.parametrize("provider", PROVIDERS, ids=ids)
def test_a_tool_call_without_a_name_is_malformed(provider: Provider) -> None:
    body = provider.reply(calls=[("read_file", {})])
    call = first_call(provider, body)
    if provider is OPENAI:
        call["function"]["name"] = " "
    else:
        call["name"] = ""
    with pytest.raises(ModelCallError) as caught:
        complete(provider, body)
    assert caught.value.kind == "malformed"


# ----------------------------------------------------------------------------- usage


@pytest.mark.parametrize("provider", PROVIDERS, ids=ids)
@pytest.mark.parametrize(
    "usage",
    [
        ...,
        None,
        {},
        "lots",
        {"prompt_tokens": -5, "completion_tokens": 2, "input_tokens": -5, "output_tokens": 2},
        {"prompt_tokens": 1.5, "completion_tokens": 2, "input_tokens": 1.5, "output_tokens": 2},
        {"prompt_tokens": None, "completion_tokens": 2, "input_tokens": None, "output_tokens": 2},
    ],
    ids=["missing", "null", "empty", "text", "negative", "fraction", "null-field"],
)
def test_missing_or_unusable_usage_is_charged_a_flagged_estimate(
    provider: Provider, usage: Any
) -> None:
    body = set_usage(provider, provider.reply("A short answer."), usage)
    reply = complete(provider, body)
    assert reply.text == "A short answer."
    assert reply.usage.estimated
    client = provider.client(Script([]))
    req = request(max_output=256)
    assert reply.usage.input_tokens == client.estimate_input(req.messages, req.tools) > 0
    assert 0 < reply.usage.output_tokens <= 256


@pytest.mark.parametrize("provider", PROVIDERS, ids=ids)
def test_reported_usage_is_taken_as_is_even_when_large(provider: Provider) -> None:
    body = provider.reply("x", input_tokens=10**12, output_tokens=3)
    reply = complete(provider, body)
    assert (reply.usage.input_tokens, reply.usage.output_tokens) == (10**12, 3)
    assert not reply.usage.estimated


# ---------------------------------------------------------------------- body size / cuts


@pytest.mark.parametrize("provider", PROVIDERS, ids=ids)
def test_a_body_declared_larger_than_the_cap_is_refused_unread(provider: Provider) -> None:
    script = Script([raw(provider.reply("y" * 5000))])
    client = provider.client(script, time=FakeTime(), max_response_bytes=1000)
    with pytest.raises(ModelCallError) as caught:
        asyncio.run(client.complete(request()))
    assert caught.value.kind == "malformed" and "at most 1000" in caught.value.message
    assert len(script.requests) == 1, "not retried"


@pytest.mark.parametrize("provider", PROVIDERS, ids=ids)
def test_the_body_is_asked_for_uncompressed(provider: Provider) -> None:
    """The cap counts bytes on the wire; a compressed body could expand far past it."""
    script = Script([raw(provider.reply("fine"))])
    asyncio.run(provider.client(script, time=FakeTime()).complete(request()))
    (sent,) = script.requests
    assert sent.headers["accept-encoding"] == "identity"


def chunks(parts: list[bytes], fail: Exception | None = None) -> httpx2.AsyncByteStream:
    class Stream(httpx2.AsyncByteStream):
        async def __aiter__(self) -> AsyncIterator[bytes]:
            for part in parts:
                yield part
            if fail is not None:
                raise fail

    return Stream()


@pytest.mark.parametrize("provider", PROVIDERS, ids=ids)
@pytest.mark.parametrize("code", [200, 500])
def test_a_streamed_body_growing_past_the_cap_is_cut_off(provider: Provider, code: int) -> None:
    pulled: list[int] = []

    class Endless(httpx2.AsyncByteStream):
        async def __aiter__(self) -> AsyncIterator[bytes]:
            while True:  # a server that never stops sending
                pulled.append(1)
                yield b"y" * 512

    def respond(req: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(code, stream=Endless(), headers={"content-type": "application/json"})

    script = Script([respond])
    client = provider.client(script, time=FakeTime(), max_response_bytes=10_000)
    with pytest.raises(ModelCallError) as caught:
        asyncio.run(client.complete(request()))
    assert caught.value.kind == "malformed" and "larger" in caught.value.message
    assert len(pulled) <= 10_000 // 512 + 2, "reading stopped at the cap"
    assert len(script.requests) == 1


@pytest.mark.parametrize("provider", PROVIDERS, ids=ids)
def test_the_cap_leaves_ordinary_streamed_replies_alone(provider: Provider) -> None:
    whole = json.dumps(provider.reply("fine", [("list_files", {})])).encode()
    half = len(whole) // 2

    def respond(req: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(200, stream=chunks([whole[:half], whole[half:]]))

    client = provider.client(Script([respond]), time=FakeTime(), max_response_bytes=len(whole))
    reply = asyncio.run(client.complete(request()))
    assert reply.text == "fine" and reply.tool_calls[0].name == "list_files"


@pytest.mark.parametrize("provider", PROVIDERS, ids=ids)
def test_a_connection_dropped_mid_body_is_retried(provider: Provider) -> None:
    whole = json.dumps(provider.reply("late")).encode()

    def cut(req: httpx2.Request) -> httpx2.Response:
        dropped = httpx2.RemoteProtocolError("peer closed connection without sending all")
        return httpx2.Response(200, stream=chunks([whole[: len(whole) // 2]], dropped))

    def whole_reply(req: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(200, content=whole)

    attempts: list[Any] = []
    script = Script([cut, whole_reply])
    client = provider.client(script, time=FakeTime(), attempts=attempts)
    assert asyncio.run(client.complete(request())).text == "late"
    assert [(a.outcome, a.error) for a in attempts] == [("retry", "connection"), ("ok", None)]


# ----------------------------------------------------------- the run survives them all


def hostile_bodies(provider: Provider) -> dict[str, Any]:
    calls = [("read_file", {"path": "x"})]
    return {
        "empty-choices-or-content": {**provider.reply("x"), "choices": [], "content": []},
        "null-content": set_usage(provider, provider.reply(""), ...),
        "bad-arguments": set_arguments(provider, provider.reply(calls=calls), "{not json"),
        "deep-arguments": set_arguments(
            provider,
            provider.reply(calls=calls),
            json.dumps(nested(400)) if provider is OPENAI else nested(400),
        ),
        "negative-usage": set_usage(
            provider,
            provider.reply("x", calls),
            {"prompt_tokens": -1, "completion_tokens": -1, "input_tokens": -1, "output_tokens": -1},
        ),
        "absurd-usage": provider.reply("x", calls, input_tokens=10**30, output_tokens=1),
        "not-an-object": [1, 2, 3],
        "huge": provider.reply("y" * 20_000),
        # Half a surrogate pair, as JSON may escape it: a str Python holds but UTF-8 cannot
        # encode (hashing, the record, the recording and the envelope all encode).
        "lone-surrogate-text": provider.reply("\ud800 half a pair", calls),
        "lone-surrogate-arguments": set_arguments(
            provider,
            provider.reply(calls=calls),
            '{"path": "\\udc00x"}' if provider is OPENAI else {"path": "\udc00x"},
        ),
    }


def make_task(tmp_path: Path) -> Task:
    path = tmp_path / "task" / "task.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        textwrap.dedent(
            """
            [task]
            id = "hostile"
            objective = "Read x, then stop."
            [budget.rounds]
            limit = 2
            [budget.tokens]
            limit = 60000
            """
        ),
        encoding="utf-8",
    )
    return load_task(path)


@pytest.mark.parametrize("provider", PROVIDERS, ids=ids)
@pytest.mark.parametrize("case", list(hostile_bodies(OPENAI)))
def test_the_run_survives_every_hostile_reply_with_a_verifiable_record(
    provider: Provider, case: str, tmp_path: Path
) -> None:
    body = hostile_bodies(provider)[case]
    task = make_task(tmp_path)
    script = Script([raw(body)])
    inner = provider.client(script, time=FakeTime(), max_response_bytes=10_000)
    client = RecordingClient(inner, tmp_path / "rec.jsonl")
    with RunStore(tmp_path / "runs.db") as store:
        result = asyncio.run(run_task(task, store, model=client.name, client=client))
        events = store.events(result.run_id)
        assert store.verify(result.run_id).ok
    assert result.ended_by in ("error", "budget")
    assert result.final is not None and result.final.reason in ("model_error", "budget")
    assert events[-1].kind is EventKind.RUN_ENDED
    assert (tmp_path / "rec.jsonl").read_text().count("\n") >= 1
    if result.ended_by == "error":
        notes = [e.payload for e in events if e.kind is EventKind.NOTE]
        assert any(n.get("model_error", {}).get("kind") == "malformed" for n in notes)


def test_half_a_surrogate_pair_in_a_reply_becomes_a_replacement_character() -> None:
    usage = Usage(input_tokens=1, output_tokens=1)
    call = ToolCall(name="read\ud800", arguments={"path": ["\udc00x", {"k\ud83d": 1}]}, id="c")
    reply = ModelReply(text="a\ud800b", tool_calls=(call,), usage=usage)
    assert reply.text == "a\ufffdb"
    (whole,) = reply.tool_calls
    assert whole.name == "read\ufffd"
    assert whole.arguments == {"path": ["\ufffdx", {"k\ufffd": 1}]}
    # A whole pair is one code point, not two halves: it is kept.
    assert ModelReply(text="\U0001f600", usage=usage).text == "\U0001f600"
