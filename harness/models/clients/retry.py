"""Retries for one model call (tenacity): 429, 5xx, connection errors and timeouts are
tried again with exponential backoff and jitter, at least as long as the server's
`Retry-After` asks, for a bounded number of attempts; anything else fails at once.

The call's `timeout_s` (the orchestrator clamps it to the time budget left) is a deadline
for the whole call, retries and the sleeps between them included: each attempt gets the
time still left, and no retry starts that could not get `min_attempt_s` of it. So retries
count against the time budget and can never carry a call past it.

Every attempt is reported to the `on_attempt` listener (the run record gets one
`model_attempt` event each): `ok`, `retry` with the backoff about to be slept, or
`failed` for the last one. When no attempt succeeded the call raises `ModelCallError`.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Literal, TypeVar, cast

from pydantic import BaseModel, ConfigDict, Field
from tenacity import (
    AsyncRetrying,
    RetryCallState,
    retry_if_exception,
    wait_exponential,
    wait_random,
)

from harness.models.clients.errors import AttemptFailed, short
from harness.models.interface import AttemptListener, ModelAttempt, ModelCallError

T = TypeVar("T")
Sleep = Callable[[float], Awaitable[None]]
Clock = Callable[[], float]


class RetryPolicy(BaseModel):
    model_config = ConfigDict(frozen=True)

    max_attempts: int = Field(default=4, ge=1)
    initial_backoff_s: float = Field(default=1.0, ge=0)
    max_backoff_s: float = Field(default=30.0, ge=0)
    jitter_s: float = Field(default=1.0, ge=0)
    max_retry_after_s: float = Field(default=120.0, ge=0)
    """A server asking for a longer wait than this ends the call instead of hanging it."""
    min_attempt_s: float = Field(default=1.0, ge=0)
    """No retry starts with less time than this left before the deadline."""


DEFAULT_POLICY = RetryPolicy()


class _Failure:
    """The last failed attempt, kept for the listener and the final error."""

    def __init__(self, error: AttemptFailed, attempt: int, latency_s: float) -> None:
        self.error = error
        self.attempt = attempt
        self.latency_s = latency_s


async def call_with_retries(
    send: Callable[[int, float], Awaitable[T]],
    *,
    model: str,
    timeout_s: float,
    policy: RetryPolicy = DEFAULT_POLICY,
    on_attempt: AttemptListener | None = None,
    sleep: Sleep = asyncio.sleep,
    clock: Clock = time.monotonic,
) -> T:
    """Run `send(attempt_number, seconds_left)` until it returns, retrying as above.

    `send` must raise `AttemptFailed` for a failed attempt; it is also cut off with a
    timeout failure when it overruns the time left.
    """
    deadline = clock() + timeout_s
    last: list[_Failure] = []

    async def one(number: int) -> T:
        """Attempt `number`: its failure kept in `last`, its success reported."""
        left = deadline - clock()
        began = clock()
        try:
            if left <= 0:
                raise AttemptFailed("timeout", f"no time left for attempt {number}")
            try:
                async with asyncio.timeout(left):
                    result = await send(number, left)
            except TimeoutError:
                raise AttemptFailed("timeout", f"no complete answer within {left:.3g}s") from None
        except AttemptFailed as err:
            last.append(_Failure(err, number, clock() - began))
            raise
        if on_attempt is not None:
            on_attempt(
                ModelAttempt(
                    model=model,
                    attempt=number,
                    outcome="ok",
                    latency_s=round(clock() - began, 6),
                )
            )
        return result

    def report(
        outcome: Literal["retry", "failed"], failure: _Failure, wait_s: float | None = None
    ) -> None:
        if on_attempt is None:
            return
        err = failure.error
        on_attempt(
            ModelAttempt(
                model=model,
                attempt=failure.attempt,
                outcome=outcome,
                error=err.kind,
                status=err.status,
                message=err.message,
                latency_s=round(failure.latency_s, 6),
                retry_after_s=err.retry_after_s,
                wait_s=None if wait_s is None else round(wait_s, 6),
            )
        )

    try:
        # The first attempt runs without tenacity: nearly every call ends there, and
        # setting up a retry loop (its callbacks wrapped, its state, its statistics) cost
        # many times the attempt's own overhead. A failure that could be retried is then
        # handed to tenacity as its attempt 1 (replayed, `send` not called again), so
        # every decision after it (stop, wait, the retry event) is tenacity's as before.
        try:
            return await one(1)
        except AttemptFailed as err:
            if not err.retryable:
                raise
            first = err
        return await _retry_after_first(
            one,
            first,
            last,
            policy=policy,
            deadline=deadline,
            report=report,
            sleep=sleep,
            clock=clock,
        )
    except AttemptFailed as err:
        failure = last[-1] if last else _Failure(err, 1, 0.0)
        report("failed", failure)
        raise ModelCallError(
            err.kind,
            short(err.message),
            model=model,
            attempts=failure.attempt,
            status=err.status,
            usage=err.usage,
        ) from None


async def _retry_after_first(
    one: Callable[[int], Awaitable[T]],
    first: AttemptFailed,
    last: list[_Failure],
    *,
    policy: RetryPolicy,
    deadline: float,
    report: Callable[[Literal["retry", "failed"], _Failure, float | None], None],
    sleep: Sleep,
    clock: Clock,
) -> T:
    """Attempts 2 and later, after attempt 1 failed with `first` (retryable)."""
    # initial · 2^(n−1), capped, plus up to jitter_s of random: retries of many
    # concurrent tasks spread out instead of hitting a recovering server together.
    backoff = wait_exponential(
        multiplier=policy.initial_backoff_s, max=policy.max_backoff_s
    ) + wait_random(0, policy.jitter_s)

    def wait(state: RetryCallState) -> float:
        asked = last[-1].error.retry_after_s if last else None
        return max(backoff(state), asked or 0.0)

    def stop(state: RetryCallState) -> bool:
        if state.attempt_number >= policy.max_attempts:
            return True
        asked = last[-1].error.retry_after_s if last else None
        if asked is not None and asked > policy.max_retry_after_s:
            return True
        return deadline - clock() - state.upcoming_sleep < policy.min_attempt_s

    def before_sleep(state: RetryCallState) -> None:
        report("retry", last[-1], state.upcoming_sleep)

    retrying = AsyncRetrying(
        stop=stop,
        wait=wait,
        retry=retry_if_exception(lambda e: isinstance(e, AttemptFailed) and e.retryable),
        sleep=sleep,
        before_sleep=before_sleep,
        reraise=True,
    )
    result: T | None = None
    done = False
    async for attempt in retrying:
        with attempt:
            number = attempt.retry_state.attempt_number
            if number == 1:
                raise first  # run already, and kept in `last`
            result = await one(number)
            done = True
    if not done:  # pragma: no cover - tenacity either returns a result or raises
        raise ModelCallError("timeout", "no attempt was made", model="", attempts=0)
    return cast(T, result)
