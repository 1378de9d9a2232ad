"""The Anthropic and OpenAI clients against `httpx2.MockTransport` (no network): tool
calls, usage accounting, retries (429 with Retry-After, 500 then success, timeouts),
errors that are not worth retrying, and malformed or truncated bodies, which end the call
with a ModelCallError and never with anything else."""

from __future__ import annotations

import asyncio
import email.utils
import json
import time
from typing import Any

import httpx2
import pytest

from harness.models.clients.retry import RetryPolicy
from harness.models.interface import Message, ModelAttempt, ModelCallError, ModelRequest
from harness.workspace.tools import ToolCall, tool_specs
from tests.model_fakes import (
    ANTHROPIC,
    OPENAI,
    PROVIDERS,
    FakeTime,
    Provider,
    Script,
    ok,
    raises,
    request,
    status,
)

ids = [p.name for p in PROVIDERS]


def run(coro: Any) -> Any:
    return asyncio.run(coro)


@pytest.mark.parametrize("provider", PROVIDERS, ids=ids)
def test_tool_calls_text_and_usage_come_back_as_reported(provider: Provider) -> None:
    body = provider.reply(
        "Looking around.",
        [("list_files", {}), ("read_file", {"path": "a.py"})],
        input_tokens=1234,
        output_tokens=56,
    )
    script = Script([ok(body)])
    reply = run(provider.client(script).complete(request(max_output=300)))

    assert reply.text == "Looking around."
    assert [(c.name, c.arguments) for c in reply.tool_calls] == [
        ("list_files", {}),
        ("read_file", {"path": "a.py"}),
    ]
    assert all(c.id for c in reply.tool_calls)
    assert (reply.usage.input_tokens, reply.usage.output_tokens) == (1234, 56)
    assert not reply.usage.estimated
    assert reply.stop_reason in ("tool_calls", "tool_use")
    assert reply.latency_s >= 0
    (sent,) = script.bodies()
    assert provider.max_tokens_field(sent) == 300
    assert sent["model"] == "test-model"
    names = [t.get("name") or t["function"]["name"] for t in sent["tools"]]
    assert names == [t.name for t in tool_specs()]


def test_anthropic_usage_counts_cache_reads_and_writes_as_input() -> None:
    body = ANTHROPIC.reply("hi")
    body["usage"] = {
        "input_tokens": 10,
        "output_tokens": 5,
        "cache_creation_input_tokens": 100,
        "cache_read_input_tokens": 1000,
    }
    reply = run(ANTHROPIC.client(Script([ok(body)])).complete(request()))
    assert (reply.usage.input_tokens, reply.usage.output_tokens) == (1110, 5)


def test_openai_without_usage_charges_a_flagged_estimate() -> None:
    body = OPENAI.reply("a short answer", usage=False)
    reply = run(OPENAI.client(Script([ok(body)])).complete(request(max_output=50)))
    assert reply.usage.estimated
    assert reply.usage.input_tokens > 0
    assert 0 < reply.usage.output_tokens <= 50


def test_openai_tool_arguments_that_are_not_json_reach_the_tool_as_invalid() -> None:
    body = OPENAI.reply(calls=[("read_file", {})])
    body["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"] = '{"path": "a'
    reply = run(OPENAI.client(Script([ok(body)])).complete(request()))
    assert reply.tool_calls[0].arguments == {"invalid_arguments": '{"path": "a'}


def test_openai_official_endpoint_gets_max_completion_tokens_others_max_tokens() -> None:
    official, compatible = Script([ok(OPENAI.reply("x"))]), Script([ok(OPENAI.reply("x"))])
    run(OPENAI.client(official).complete(request(max_output=77)))
    run(OPENAI.client(compatible, base_url="http://127.0.0.1:9/v1").complete(request(77)))
    assert official.bodies()[0]["max_completion_tokens"] == 77
    assert "max_tokens" not in official.bodies()[0]
    assert compatible.bodies()[0]["max_tokens"] == 77
    assert str(compatible.requests[0].url) == "http://127.0.0.1:9/v1/chat/completions"


def conversation() -> ModelRequest:
    call = ToolCall(name="read_file", arguments={"path": "a.py"}, id="call_7")
    return ModelRequest(
        messages=(
            Message(role="system", content="contract"),
            Message(role="system", content="genes"),
            Message(role="user", content="task"),
            Message(role="assistant", content="reading", tool_calls=(call,)),
            Message(role="tool", content="file text", tool_call_id="call_7"),
            Message(role="user", content="Round 1 is over."),
        ),
        tools=tuple(tool_specs()),
        max_output_tokens=100,
        timeout_s=10,
    )


def test_openai_sends_tool_calls_and_their_results_paired_by_id() -> None:
    script = Script([ok(OPENAI.reply("ok"))])
    run(OPENAI.client(script).complete(conversation()))
    messages = script.bodies()[0]["messages"]
    assert [m["role"] for m in messages] == [
        "system",
        "system",
        "user",
        "assistant",
        "tool",
        "user",
    ]
    assert messages[3]["tool_calls"][0]["id"] == "call_7"
    assert json.loads(messages[3]["tool_calls"][0]["function"]["arguments"]) == {"path": "a.py"}
    assert messages[4] == {"role": "tool", "tool_call_id": "call_7", "content": "file text"}


def test_openai_body_is_what_the_sdks_own_transform_would_send() -> None:
    """The client posts its JSON through the SDK without `create`'s parameter transform
    (it costs a third of a call's CPU). That is sound only while the transform changes
    nothing in what we send: a conversation with every message kind, tool calls and the
    tool schemas must come out of it unchanged, or this fails on an SDK upgrade."""
    from openai._utils import async_maybe_transform
    from openai.types.chat import completion_create_params

    script = Script([ok(OPENAI.reply("ok"))])
    run(OPENAI.client(script).complete(conversation()))
    body = script.bodies()[0]
    assert body["tools"] and any(m.get("tool_calls") for m in body["messages"])
    for params in (
        completion_create_params.CompletionCreateParamsNonStreaming,
        completion_create_params.CompletionCreateParamsStreaming,
    ):
        assert run(async_maybe_transform(body, params)) == body


@pytest.mark.parametrize("provider", PROVIDERS, ids=ids)
def test_platform_headers_are_the_sdks_own_without_a_thread_per_client(
    provider: Provider, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each client is given the platform its SDK would look up (in a worker thread, at
    its first request): the headers that name it are what the SDK sends by itself, and
    no client's first request leaves the event loop for it."""
    import importlib

    import anthropic
    import openai

    module = openai if provider is OPENAI else anthropic
    base = importlib.import_module(f"{module.__name__}._base_client")
    own = Script([ok(provider.reply("ok"))])

    async def by_the_sdk_alone() -> None:
        async with httpx2.AsyncClient(transport=httpx2.MockTransport(own)) as http:
            sdk: Any = (openai.AsyncOpenAI if provider is OPENAI else anthropic.AsyncAnthropic)(
                api_key=provider.key, http_client=http, max_retries=0
            )
            await sdk.post("/x", body={}, cast_to=httpx2.Response)

    run(by_the_sdk_alone())
    expected = {k: v for k, v in own.requests[0].headers.items() if k.startswith("x-stainless")}
    assert expected.get("x-stainless-os")

    def no_thread(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("the platform was looked up again")

    for made in range(3):
        if made == 1:  # the first client found it (the SDK's way); no later one looks
            monkeypatch.setattr(base, "get_platform", no_thread)
        script = Script([ok(provider.reply("ok"))])
        run(provider.client(script).complete(request()))
        sent = {k: v for k, v in script.requests[0].headers.items() if k.startswith("x-stainless")}
        assert {k: sent.get(k) for k in ("x-stainless-os", "x-stainless-arch")} == {
            k: expected[k] for k in ("x-stainless-os", "x-stainless-arch")
        }


def test_anthropic_sends_system_apart_and_tool_results_first_in_the_user_turn() -> None:
    script = Script([ok(ANTHROPIC.reply("ok"))])
    run(ANTHROPIC.client(script).complete(conversation()))
    sent = script.bodies()[0]
    assert sent["system"] == "contract\n\ngenes"
    roles = [m["role"] for m in sent["messages"]]
    assert roles == ["user", "assistant", "user"]
    assistant = sent["messages"][1]["content"]
    assert assistant[1] == {
        "type": "tool_use",
        "id": "call_7",
        "name": "read_file",
        "input": {"path": "a.py"},
    }
    last = sent["messages"][2]["content"]
    assert last[0] == {"type": "tool_result", "tool_use_id": "call_7", "content": "file text"}
    assert last[1] == {"type": "text", "text": "Round 1 is over."}


# ----------------------------------------------------------------------------- retries


@pytest.mark.parametrize("provider", PROVIDERS, ids=ids)
def test_429_waits_at_least_retry_after_then_succeeds(provider: Provider) -> None:
    clock, attempts = FakeTime(), []
    script = Script(
        [
            status(429, provider.error_body("slow down"), {"retry-after": "7"}),
            ok(provider.reply("done")),
        ]
    )
    reply = run(provider.client(script, time=clock, attempts=attempts).complete(request()))
    assert reply.text == "done"
    assert len(script.requests) == 2
    assert len(clock.slept) == 1 and clock.slept[0] >= 7
    first, second = attempts
    assert (first.outcome, first.error, first.status) == ("retry", "rate_limited", 429)
    assert first.retry_after_s == 7 and first.wait_s is not None and first.wait_s >= 7
    assert first.message is not None and "slow down" in first.message
    assert second.outcome == "ok" and second.attempt == 2


@pytest.mark.parametrize("provider", PROVIDERS, ids=ids)
def test_retry_after_ms_and_http_dates_are_honoured(provider: Provider) -> None:
    clock = FakeTime()
    script = Script(
        [
            status(503, provider.error_body("busy"), {"retry-after-ms": "4500"}),
            ok(provider.reply("done")),
        ]
    )
    run(provider.client(script, time=clock).complete(request()))
    assert clock.slept[0] >= 4.5

    clock = FakeTime()
    when = email.utils.formatdate(time.time() + 40, usegmt=True)
    script = Script(
        [status(429, provider.error_body("later"), {"retry-after": when}), ok(provider.reply("ok"))]
    )
    run(provider.client(script, time=clock).complete(request(timeout_s=300)))
    assert len(script.requests) == 2
    assert 35 <= clock.slept[0] <= 42  # the date, read against the wall clock (no jitter added)


@pytest.mark.parametrize("provider", PROVIDERS, ids=ids)
def test_a_retry_after_beyond_the_policy_cap_ends_the_call(provider: Provider) -> None:
    clock, attempts = FakeTime(), []
    script = Script([status(429, provider.error_body("tomorrow"), {"retry-after": "86400"})])
    client = provider.client(script, time=clock, attempts=attempts)
    with pytest.raises(ModelCallError) as caught:
        run(client.complete(request(timeout_s=100_000)))
    assert caught.value.kind == "rate_limited"
    assert len(script.requests) == 1 and clock.slept == []
    assert [(a.outcome, a.retry_after_s) for a in attempts] == [("failed", 86400)]


def test_anthropic_overloaded_529_is_retried() -> None:
    clock = FakeTime()
    script = Script([status(529, ANTHROPIC.error_body("Overloaded")), ok(ANTHROPIC.reply("ok"))])
    assert run(ANTHROPIC.client(script, time=clock).complete(request())).text == "ok"
    assert len(script.requests) == 2


@pytest.mark.parametrize("provider", PROVIDERS, ids=ids)
def test_500_then_success(provider: Provider) -> None:
    clock, attempts = FakeTime(), []
    script = Script([status(500, provider.error_body("oops")), ok(provider.reply("fine"))])
    reply = run(provider.client(script, time=clock, attempts=attempts).complete(request()))
    assert reply.text == "fine"
    assert [a.outcome for a in attempts] == ["retry", "ok"]
    assert attempts[0].error == "server_error" and attempts[0].status == 500
    assert clock.slept and clock.slept[0] > 0  # backoff, with jitter


@pytest.mark.parametrize("provider", PROVIDERS, ids=ids)
def test_backoff_grows_and_attempts_are_bounded(provider: Provider) -> None:
    clock, attempts = FakeTime(), []
    policy = RetryPolicy(max_attempts=4, initial_backoff_s=1, jitter_s=0)
    script = Script([status(502, provider.error_body("bad gateway"))])
    client = provider.client(script, time=clock, attempts=attempts, policy=policy)
    with pytest.raises(ModelCallError) as caught:
        run(client.complete(request(timeout_s=600)))
    assert caught.value.kind == "server_error" and caught.value.attempts == 4
    assert len(script.requests) == 4
    assert clock.slept == [1, 2, 4]
    assert [a.outcome for a in attempts] == ["retry", "retry", "retry", "failed"]


@pytest.mark.parametrize("provider", PROVIDERS, ids=ids)
def test_timeouts_are_retried_then_reported(provider: Provider) -> None:
    clock, attempts = FakeTime(), []
    script = Script([raises(lambda req: httpx2.ReadTimeout("slow", request=req))])
    with pytest.raises(ModelCallError) as caught:
        run(provider.client(script, time=clock, attempts=attempts).complete(request(timeout_s=600)))
    assert caught.value.kind == "timeout"
    assert len(script.requests) == 4
    assert all(a.error == "timeout" for a in attempts)


@pytest.mark.parametrize("provider", PROVIDERS, ids=ids)
def test_timeout_then_success(provider: Provider) -> None:
    clock = FakeTime()
    script = Script(
        [raises(lambda req: httpx2.ConnectTimeout("x", request=req)), ok(provider.reply("ok"))]
    )
    assert run(provider.client(script, time=clock).complete(request())).text == "ok"


@pytest.mark.parametrize("provider", PROVIDERS, ids=ids)
def test_connection_errors_are_retried(provider: Provider) -> None:
    clock, attempts = FakeTime(), []
    script = Script(
        [raises(lambda req: httpx2.ConnectError("refused", request=req)), ok(provider.reply("ok"))]
    )
    assert run(provider.client(script, time=clock, attempts=attempts).complete(request())).text
    assert attempts[0].error == "connection"


@pytest.mark.parametrize("provider", PROVIDERS, ids=ids)
def test_a_hanging_server_is_cut_off_at_the_deadline_retries_included(provider: Provider) -> None:
    async def hang(req: httpx2.Request) -> httpx2.Response:
        await asyncio.sleep(30)
        return httpx2.Response(200, json=provider.reply("too late"))

    attempts: list[ModelAttempt] = []
    policy = RetryPolicy(max_attempts=5, initial_backoff_s=0.05, jitter_s=0, min_attempt_s=0.05)
    client = provider.client(hang, attempts=attempts, policy=policy)  # type: ignore[arg-type]
    began = time.monotonic()
    with pytest.raises(ModelCallError) as caught:
        run(client.complete(request(timeout_s=0.6)))
    elapsed = time.monotonic() - began
    assert caught.value.kind == "timeout"
    assert elapsed < 1.5, "retries must count against the call's deadline"
    assert attempts and attempts[-1].outcome == "failed"


@pytest.mark.parametrize("provider", PROVIDERS, ids=ids)
def test_each_attempt_gets_only_the_time_left(provider: Provider) -> None:
    clock = FakeTime()
    script = Script([status(500, provider.error_body("x")), ok(provider.reply("ok"))])
    policy = RetryPolicy(initial_backoff_s=3, jitter_s=0)
    run(provider.client(script, time=clock, policy=policy).complete(request(timeout_s=20)))
    first, second = (r.extensions["timeout"]["read"] for r in script.requests)
    assert first <= 20
    assert second <= 20 - 3 + 1e-6


@pytest.mark.parametrize("provider", PROVIDERS, ids=ids)
def test_no_retry_that_would_outlive_the_deadline(provider: Provider) -> None:
    clock = FakeTime()
    script = Script([status(429, provider.error_body("later"), {"retry-after": "30"})])
    with pytest.raises(ModelCallError) as caught:
        run(provider.client(script, time=clock).complete(request(timeout_s=10)))
    assert caught.value.kind == "rate_limited"
    assert len(script.requests) == 1 and clock.slept == []


@pytest.mark.parametrize("provider", PROVIDERS, ids=ids)
@pytest.mark.parametrize("code, kind", [(400, "bad_request"), (401, "auth"), (404, "bad_request")])
def test_errors_not_worth_retrying_fail_at_once(provider: Provider, code: int, kind: str) -> None:
    script = Script([status(code, provider.error_body("no"))])
    with pytest.raises(ModelCallError) as caught:
        run(provider.client(script, time=FakeTime()).complete(request()))
    assert (caught.value.kind, caught.value.status, caught.value.attempts) == (kind, code, 1)
    assert len(script.requests) == 1


# ------------------------------------------------------------------ malformed answers


@pytest.mark.parametrize("provider", PROVIDERS, ids=ids)
def test_a_truncated_body_is_a_model_error_not_a_crash(provider: Provider) -> None:
    text = json.dumps(provider.reply("a complete answer", [("list_files", {})]))
    cut = text[: len(text) // 2]
    script = Script(
        [
            lambda req: httpx2.Response(
                200, content=cut, headers={"content-type": "application/json"}
            )
        ]
    )
    with pytest.raises(ModelCallError) as caught:
        run(provider.client(script, time=FakeTime()).complete(request()))
    assert caught.value.kind == "malformed"
    assert "not JSON" in caught.value.message
    assert len(script.requests) == 1


@pytest.mark.parametrize("provider", PROVIDERS, ids=ids)
@pytest.mark.parametrize(
    "mangle",
    [
        lambda b: {},
        lambda b: [b],
        lambda b: {**b, "choices": [], "content": "not a list"},
        lambda b: {**b, "choices": [{"message": 3}], "content": [{"no_type": 1}]},
        lambda b: {"error": {"message": "upstream failed"}},
    ],
)
def test_malformed_bodies_are_model_errors(provider: Provider, mangle: Any) -> None:
    body = mangle(provider.reply("x"))
    script = Script([lambda req: httpx2.Response(200, json=body)])
    with pytest.raises(ModelCallError) as caught:
        run(provider.client(script, time=FakeTime()).complete(request()))
    assert caught.value.kind == "malformed"


@pytest.mark.parametrize("provider", PROVIDERS, ids=ids)
def test_usage_of_an_unusable_reply_is_still_reported_for_charging(provider: Provider) -> None:
    body = provider.reply("x", input_tokens=900, output_tokens=40)
    body.pop("choices", None)
    if provider is ANTHROPIC:
        body["content"] = "garbage"
    script = Script([ok(body)])
    with pytest.raises(ModelCallError) as caught:
        run(provider.client(script, time=FakeTime()).complete(request()))
    assert caught.value.usage is not None
    assert (caught.value.usage.input_tokens, caught.value.usage.output_tokens) == (900, 40)


def test_an_anthropic_tool_use_without_an_id_is_malformed() -> None:
    body = ANTHROPIC.reply(calls=[("list_files", {})])
    del body["content"][0]["id"]
    with pytest.raises(ModelCallError) as caught:
        run(ANTHROPIC.client(Script([ok(body)]), time=FakeTime()).complete(request()))
    assert caught.value.kind == "malformed"


@pytest.mark.parametrize("provider", PROVIDERS, ids=ids)
def test_a_non_json_error_page_is_survived(provider: Provider) -> None:
    page = "<html><body>502 Bad Gateway</body></html>"
    script = Script(
        [lambda req: httpx2.Response(502, content=page, headers={"content-type": "text/html"})]
    )
    with pytest.raises(ModelCallError) as caught:
        run(provider.client(script, time=FakeTime()).complete(request()))
    assert caught.value.kind == "server_error"
