"""The retry loop's first attempt runs without tenacity (harness.models.clients.retry):
a call that succeeds, or fails for good, at once builds no retry loop; a retryable first
failure is handed to tenacity, which decides every attempt after it as before. Checked on
the attempts reported, the calls of `send` and the sleeps (a fake clock: no timing)."""

from __future__ import annotations

import asyncio

import pytest
import tenacity

from harness.models.clients import retry as retry_module
from harness.models.clients.errors import AttemptFailed
from harness.models.clients.retry import RetryPolicy, call_with_retries
from harness.models.interface import ModelAttempt, ModelCallError


class Script:
    """`send` that fails with each of `failures` in turn, then answers "done"."""

    def __init__(self, *failures: AttemptFailed) -> None:
        self.failures = list(failures)
        self.calls: list[int] = []
        self.slept: list[float] = []
        self.attempts: list[ModelAttempt] = []
        self.now = 1000.0

    async def send(self, number: int, left: float) -> str:
        self.calls.append(number)
        if self.failures:
            raise self.failures.pop(0)
        return "done"

    async def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds

    def clock(self) -> float:
        return self.now

    def run(self, policy: RetryPolicy) -> str:
        return asyncio.run(
            call_with_retries(
                self.send,
                model="m",
                timeout_s=600,
                policy=policy,
                on_attempt=self.attempts.append,
                sleep=self.sleep,
                clock=self.clock,
            )
        )


NO_JITTER = RetryPolicy(max_attempts=4, initial_backoff_s=1, max_backoff_s=30, jitter_s=0)


@pytest.fixture
def no_tenacity(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("a retry loop was built")

    monkeypatch.setattr(retry_module, "AsyncRetrying", refuse)


@pytest.mark.usefixtures("no_tenacity")
def test_a_first_attempt_that_answers_builds_no_retry_loop() -> None:
    script = Script()
    assert script.run(NO_JITTER) == "done"
    assert script.calls == [1]
    assert [(a.attempt, a.outcome) for a in script.attempts] == [(1, "ok")]


@pytest.mark.usefixtures("no_tenacity")
def test_a_first_failure_not_worth_retrying_fails_at_once_without_a_loop() -> None:
    script = Script(AttemptFailed("bad_request", "no", status=400))
    with pytest.raises(ModelCallError) as caught:
        script.run(NO_JITTER)
    assert (caught.value.kind, caught.value.attempts) == ("bad_request", 1)
    assert script.calls == [1]
    assert [(a.attempt, a.outcome, a.status) for a in script.attempts] == [(1, "failed", 400)]


def test_a_retryable_first_failure_is_not_sent_twice_and_backs_off_from_attempt_1() -> None:
    script = Script(
        AttemptFailed("server_error", "a", status=500),
        AttemptFailed("rate_limited", "b", status=429, retry_after_s=7.0),
    )
    assert script.run(NO_JITTER) == "done"
    # attempt 1 is replayed into tenacity, not sent again: three sends, numbered 1..3
    assert script.calls == [1, 2, 3]
    # backoff 1 * 2^(n-1): 1 s after attempt 1; after attempt 2 the server's 7 s wins over 2 s
    assert script.slept == [1.0, 7.0]
    assert [(a.attempt, a.outcome, a.wait_s) for a in script.attempts] == [
        (1, "retry", 1.0),
        (2, "retry", 7.0),
        (3, "ok", None),
    ]


def test_retries_stop_at_max_attempts_counting_the_first() -> None:
    failures = [AttemptFailed("server_error", str(n), status=503) for n in range(5)]
    script = Script(*failures)
    with pytest.raises(ModelCallError) as caught:
        script.run(NO_JITTER)
    assert caught.value.attempts == 4
    assert script.calls == [1, 2, 3, 4]
    assert script.slept == [1.0, 2.0, 4.0]
    assert [a.outcome for a in script.attempts] == ["retry", "retry", "retry", "failed"]


def test_one_attempt_allowed_a_retryable_failure_ends_the_call() -> None:
    script = Script(AttemptFailed("server_error", "x", status=500))
    with pytest.raises(ModelCallError) as caught:
        script.run(NO_JITTER.model_copy(update={"max_attempts": 1}))
    assert caught.value.attempts == 1
    assert script.calls == [1]
    assert script.slept == []
    assert [(a.attempt, a.outcome) for a in script.attempts] == [(1, "failed")]


def test_the_loop_still_is_tenacity_after_a_first_failure(monkeypatch: pytest.MonkeyPatch) -> None:
    built: list[object] = []
    real = tenacity.AsyncRetrying

    def counting(*args: object, **kwargs: object) -> object:
        built.append(kwargs)
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(retry_module, "AsyncRetrying", counting)
    script = Script(AttemptFailed("connection", "reset"))
    assert script.run(NO_JITTER) == "done"
    assert len(built) == 1
