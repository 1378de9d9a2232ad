"""The agent's envelope, built round after round without re-rendering the history.

`build_envelope` + `Envelope.messages()` + `Envelope.digest()` render every segment of
the history into messages and JSON on every call: a run of n rounds does O(n²) work.
`GrowingEnvelope` gives the same messages and the same digest (byte for byte: the tests
compare it with a full rebuild) while rendering each history segment once.

What changes between rounds, and how each is handled:

* The runtime segment (::OBJECTIVE, ::RUBRIC, then this round's ::BUDGET and ::STATUS
  lines) is new every round, and it stands *before* the history: the head (contract,
  developer text, runtime segment, task blocks) is folded again every round. It is a
  handful of segments whatever the round.
* Leading user-role segments of the history merge into the head's last message (a
  resumed run whose history starts with runtime feedback). The history is folded after a
  *sentinel*: an empty message of the head's last role, so whatever merges into it is
  exactly the suffix the head's last message gains (`a + "\\n\\n" + b` merges the same
  way whether `a` is empty or not, because the sentinel starts as "").
* The last history message can absorb the next segment (feedback followed by the
  grader's findings): merging replaces the last cached message and drops its cached
  JSON, nothing before it.
* The history list itself is append-only in the orchestrator, but nothing forbids a
  caller to replace it or an earlier segment (a benchmark resets it; a resume builds a
  new one). Every build compares the segments already folded with the list's prefix
  (identity first, then equality, in C) and folds from scratch when they differ, so a
  changed history can never be served from a stale cache.

Rendering is a pure function of the segments (text, provenance, calls, call id), so equal
segments render to equal messages: reusing a cached rendering is exact.
"""

from __future__ import annotations

import itertools
import operator
from collections.abc import Sequence
from typing import cast

from harness.context.agent import (
    DEVELOPER_GENES,
    SYSTEM_CONTRACT,
    Envelope,
    Segment,
    build_envelope,
    digest_of,
    fold_segment,
    message_json,
)
from harness.models.interface import Message


class GrownEnvelope:
    """One round's envelope from `GrowingEnvelope`: the same messages and digest as
    `build_envelope(...)` with the same arguments, and that envelope itself on demand."""

    def __init__(
        self,
        owner: GrowingEnvelope,
        head: tuple[Message, ...],
        tail: tuple[Message, ...],
        round_lines: tuple[str, ...],
        history: tuple[Segment, ...],
    ) -> None:
        self._owner = owner
        self._head = head
        self._tail = tail
        self._round_lines = round_lines
        self._history = history
        self._digest: str | None = None

    def messages(self) -> tuple[Message, ...]:
        return self._head + self._tail

    def digest(self) -> str:
        if self._digest is None:
            head = [message_json(m) for m in self._head]
            self._digest = digest_of([*head, *self._owner.tail_json(self._tail)])
        return self._digest

    def envelope(self) -> Envelope:
        """The full envelope these messages render (for checks and tests: O(history))."""
        return self._owner.full(self._round_lines, self._history)


class GrowingEnvelope:
    """The agent's envelopes over one run (see the module docstring)."""

    def __init__(
        self,
        *,
        task_declarations: Sequence[str],
        task_blocks: Sequence[Segment],
        contract: str = SYSTEM_CONTRACT,
        developer: str = DEVELOPER_GENES,
    ) -> None:
        self._declarations = tuple(task_declarations)
        self._blocks = tuple(task_blocks)
        self._contract = contract
        self._developer = developer
        # The head's shape does not depend on the round's lines, only its text does:
        # building it once checks the blocks (as build_envelope does) and gives the role
        # and calls the sentinel must have.
        self._head_messages = self._head(()).messages()
        last = self._head_messages[-1]
        self._sentinel = Message(role=last.role, content="", tool_calls=last.tool_calls)
        self._folded: list[Segment] = []
        # The sentinel, then the history's messages; and each one's canonical JSON, None
        # until a digest needs it (index 0, the sentinel's, is never used).
        self._tail: list[Message] = []
        self._json: list[bytes | None] = []
        self._reset()

    def set_developer(self, developer: str) -> None:
        """New developer text (a GENE added or promoted mid-run), effective from the next
        build. The head is folded again every build, so the new text is in the next
        envelope, and the role of the head's last message (the sentinel's) cannot change:
        the developer segment is neither the head's last segment nor a different role."""
        self._developer = developer

    def _head(self, round_lines: Sequence[str]) -> Envelope:
        return self.full(round_lines, ())

    def _reset(self) -> None:
        self._folded = []
        self._tail = [self._sentinel]
        self._json = [b""]

    def full(self, round_lines: Sequence[str], history: Sequence[Segment]) -> Envelope:
        """The envelope built from scratch (what every build must equal)."""
        return build_envelope(
            task_declarations=self._declarations,
            round_lines=round_lines,
            task_blocks=self._blocks,
            history=history,
            contract=self._contract,
            developer=self._developer,
        )

    def build(self, round_lines: Sequence[str], history: Sequence[Segment]) -> GrownEnvelope:
        """This round's envelope: `round_lines` (the round's ::BUDGET and ::STATUS) and the
        history so far. Only segments appended since the last build are rendered."""
        done = len(self._folded)
        if len(history) < done or list(history[:done]) != self._folded:
            self._reset()
            done = 0
        head_envelope = self._head(round_lines)
        for seg in history[done:]:
            size = len(self._tail)
            fold_segment(self._tail, seg, head_envelope.role_of(seg.provenance))
            if len(self._tail) > size:
                self._json.append(None)
            else:  # merged into the last message, whose JSON is stale now
                self._json[-1] = None
            self._folded.append(seg)
        head = list(head_envelope.messages())
        lead = self._tail[0]
        if lead.content:  # history segments that merged into the head's last message
            last = head[-1]
            head[-1] = Message(role=last.role, content=last.content + lead.content)
        # The same object for a message that did not change (the contract, every round),
        # so what is computed per message downstream (redaction, counts) is reused.
        if len(head) == len(self._head_messages):
            head = [
                old if old == new else new
                for old, new in zip(self._head_messages, head, strict=True)
            ]
        self._head_messages = tuple(head)
        return GrownEnvelope(
            self, self._head_messages, tuple(self._tail[1:]), tuple(round_lines), tuple(history)
        )

    def tail_json(self, tail: Sequence[Message]) -> list[bytes]:
        """The canonical JSON of each message of `tail` (a build's history messages), each
        encoded once: from the cache while the builder still holds those very messages,
        else encoded afresh (an envelope kept past a later build that replaced them)."""
        held = self._tail[1 : 1 + len(tail)]
        if len(held) != len(tail) or not all(map(operator.is_, held, tail)):
            return [message_json(m) for m in tail]
        for index in itertools.compress(
            range(1, 1 + len(tail)),
            map(operator.is_, self._json[1 : 1 + len(tail)], itertools.repeat(None)),
        ):
            self._json[index] = message_json(self._tail[index])
        return cast(list[bytes], self._json[1 : 1 + len(tail)])  # every one filled above
