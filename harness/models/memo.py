"""A function of each message, computed once over a conversation that re-sends them.

Every call of a run sends the whole conversation again: the same message objects, at the
same positions, with a few new ones at the end and the head (the round's ::BUDGET and
::STATUS) new in front. Redacting or counting every message on every call makes a run
O(n²); `PerMessage` recomputes only the messages that are not the very object that stood
at the same position in the last call. The comparison runs in C (`map(operator.is_)`),
so a call costs O(new messages) in Python and a pointer comparison per old one.

Identity, not equality, decides: a message is frozen, so the same object has the same
content; an equal but distinct message is simply computed again.
"""

from __future__ import annotations

import itertools
import operator
from collections.abc import Callable, Sequence
from typing import Generic, TypeVar

from harness.models.interface import Message

T = TypeVar("T")


class PerMessage(Generic[T]):
    """`compute(message)` for each message of a call, reusing the last call's results."""

    def __init__(self, compute: Callable[[Message], T]) -> None:
        self._compute = compute
        self._messages: tuple[Message, ...] = ()
        self._results: list[T] = []

    def __call__(self, messages: Sequence[Message]) -> list[T]:
        current = tuple(messages)
        kept = min(len(current), len(self._messages))
        results = self._results[:kept]
        stale = map(operator.is_not, current[:kept], self._messages[:kept])
        for index in itertools.compress(range(kept), stale):
            results[index] = self._compute(current[index])
        results += map(self._compute, current[kept:])
        self._messages, self._results = current, results
        return list(results)

    def clear(self) -> None:
        """Forget every result (what they were computed with has changed)."""
        self._messages, self._results = (), []
