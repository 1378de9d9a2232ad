"""The task's status machine (spec §4): the only place a status is ever written.

`Lifecycle` holds the status history (DESIGN §6 `history`). Every entry is written by
one of its methods, each of which checks the §4 transition table (`harness.enforce.transitions`)
and the writer table (`WRITER_STATES`) before it appends anything:

* `commit_running`, `commit_stopped`, `commit_complete` — runtime commits
  (`by:@RUNTIME|authority:commit`);
* `apply_verification` — the grader's verdict (`by:@GRADER|authority:verification`);
* `apply_proposal` — an agent proposal the authority layer accepted
  (`by:@AGENT|authority:proposal`).

An unlawful call raises `IllegalTransition` and changes nothing. That is an internal
error: the orchestrator must never attempt one, and the authority layer rejects an
agent's unlawful claim long before it gets here. The lifecycle nevertheless re-checks
everything itself rather than trusting a `Proposal`'s disposition (defence in depth: a
`Proposal` is a plain data object anyone can construct).

The agent's `needs_revision` (spec §7 self-audit) is applied like the grader's: it is
recorded, and the runtime is expected to commit `running` next so the agent keeps
working. It can never lead to `complete` without the grader.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict

from envelopes.declarations import (
    AUTHORITY_OF_WRITER,
    WRITER_STATES,
    Authority,
    State,
    Status,
)
from envelopes.declarations.base import render_float
from harness.enforce.authority import AGENT_WRITERS, Proposal
from harness.enforce.provenance import Provenance, writer_entity
from harness.enforce.transitions import INITIAL_STATES, illegal_because, is_budget_reason


class IllegalTransition(RuntimeError):
    """An attempt to write a status the §4 machine or the writer table forbids."""


class StatusEntry(BaseModel):
    """One transition of the status history (DESIGN §6 `history`)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    seq: int
    round: int
    state: State
    reason: str | None
    by: str
    authority: Authority
    line: str  # the canonical ::STATUS text, Status.render()


_RUNTIME = writer_entity(Provenance.RUNTIME)
_GRADER = writer_entity(Provenance.GRADER)
_AGENT = writer_entity(Provenance.AGENT)
_FIELDS = ("scope", "state", "reason", "by", "authority")


class Lifecycle:
    """The status machine of one task, from its start state to its last commit."""

    def __init__(self, initial: State = State.CREATED, initial_reason: str | None = None) -> None:
        """Start a task in `initial` (DESIGN §5 `[initial]`: created, running or stopped).

        A non-created start state was committed by the runtime before this run (a
        resumed task); it is recorded as the first history entry, round 0, so that the
        history always says where the task stands. `stopped` needs its reason; `running`
        takes none (fail closed: an unexplained stop, or a running task with a reason,
        is not a state the runtime could have committed).
        """
        self._history: list[StatusEntry] = []
        self._state = State(initial)
        if self._state not in INITIAL_STATES:
            raise IllegalTransition(f"a task cannot start in state {initial}")
        if self._state is State.STOPPED and not initial_reason:
            raise IllegalTransition("a task that starts stopped needs its reason")
        if self._state is not State.STOPPED and initial_reason is not None:
            raise IllegalTransition(f"a task starting {initial} takes no reason")
        if self._state is not State.CREATED:
            self._append(0, self._state, initial_reason, _RUNTIME, Authority.COMMIT, ())

    @classmethod
    def restore(cls, entries: Sequence[StatusEntry]) -> Lifecycle:
        """Rebuild a lifecycle from a recorded history (`ilh run --resume RUN`).

        Nothing is taken on trust from the record: the first entry must be a lawful start
        state and every later entry a lawful transition by a writer allowed to write it,
        numbered in order; otherwise IllegalTransition (fail closed: a record that breaks
        the machine is not resumed).
        """
        if not entries:
            return cls()
        first = entries[0]
        restored = cls(first.state, first.reason)
        if restored._history and restored._history[0].line != first.line:
            raise IllegalTransition("the recorded start entry is not a runtime start commit")
        for entry in entries[1:]:
            if entry.seq != len(restored._history) + 1:
                raise IllegalTransition(f"history entry {entry.seq} is out of order")
            if AUTHORITY_OF_WRITER.get(entry.by) is not entry.authority:
                raise IllegalTransition(
                    f"entry {entry.seq}: {entry.by} is not a {entry.authority} writer"
                )
            problem = restored._problem(entry.state, entry.authority, entry.reason)
            if problem is not None:
                raise IllegalTransition(f"entry {entry.seq}: {problem}")
            restored._history.append(entry)
            restored._state = entry.state
        return restored

    # ------------------------------------------------------------------ reading

    @property
    def state(self) -> State:
        return self._state

    @property
    def reason(self) -> str | None:
        """The reason of the current state's entry (None for created)."""
        return self._history[-1].reason if self._history else None

    @property
    def history(self) -> tuple[StatusEntry, ...]:
        return tuple(self._history)

    @property
    def final(self) -> StatusEntry | None:
        """The last history entry (DESIGN §6 `final`); None while still created."""
        return self._history[-1] if self._history else None

    def current_status(self) -> Status:
        """The ::STATUS the runtime shows the model each round (DESIGN §4)."""
        if self._history:
            return Status.parse(self._history[-1].line)
        return Status(state=State.CREATED, by=_RUNTIME, authority=Authority.COMMIT)

    def may_commit(self, state: State, reason: str | None = None) -> bool:
        """Whether the runtime may commit `state` now (lets callers ask before acting)."""
        return self._problem(state, Authority.COMMIT, reason) is None

    # ----------------------------------------------------------- runtime commits

    def commit_running(self, round: int) -> StatusEntry:
        """Start, resume or continue the task (from created, stopped, blocked,
        needs_revision)."""
        return self._write(round, State.RUNNING, None, _RUNTIME, Authority.COMMIT)

    def commit_stopped(self, round: int, reason: str) -> StatusEntry:
        """Stop the task (from running; from claimed_complete only for reason budget)."""
        if not reason:
            raise IllegalTransition("a runtime stop needs its reason")
        return self._write(round, State.STOPPED, reason, _RUNTIME, Authority.COMMIT)

    def commit_complete(self, round: int) -> StatusEntry:
        """Commit terminal complete: only right after the grader's verified_complete."""
        last = self.final
        if last is None or not (
            last.state is State.VERIFIED_COMPLETE
            and last.by == _GRADER
            and last.authority is Authority.VERIFICATION
        ):
            raise IllegalTransition(
                "complete is committed only directly after verified_complete by @GRADER"
            )
        extras = (("verified_by", _GRADER),)
        return self._write(round, State.COMPLETE, None, _RUNTIME, Authority.COMMIT, extras)

    # --------------------------------------------------------- grader verdicts

    def apply_verification(
        self,
        verdict: State,
        round: int,
        *,
        missing: Sequence[str] = (),
        score: float | None = None,
        evidence: str | None = None,
    ) -> StatusEntry:
        """Record the grader's verdict on a completion claim (spec §4, DESIGN §4).

        `verdict` is verified_complete or needs_revision; the caller is the grader
        channel (the verdict of a fresh grader context, never text from the agent).
        """
        verdict = State(verdict)
        if verdict is State.VERIFIED_COMPLETE and missing:
            raise IllegalTransition("verified_complete cannot list missing criteria")
        extras: list[tuple[str, str]] = []
        if evidence is not None:
            extras.append(("evidence", evidence))
        if missing:
            extras.append(("missing", ",".join(missing)))
        if score is not None:
            extras.append(("score", render_float(score)))
        return self._write(round, verdict, None, _GRADER, Authority.VERIFICATION, tuple(extras))

    # ---------------------------------------------------------- agent proposals

    def apply_proposal(self, proposal: Proposal, round: int) -> StatusEntry | None:
        """Apply an accepted agent proposal; None when it changes nothing.

        Accepted ::EVIDENCE and the agent's acknowledging `running` change nothing.
        Anything not accepted, or not lawful now, raises IllegalTransition.
        """
        if proposal.disposition != "accepted":
            raise IllegalTransition(
                f"only accepted proposals are applied, not {proposal.disposition} ones"
            )
        if proposal.kind == "EVIDENCE":
            return None
        status = proposal.status
        if (
            status is None
            or status.by not in AGENT_WRITERS
            or (status.known_authority is not Authority.PROPOSAL)
        ):
            raise IllegalTransition("an accepted proposal must carry an agent ::STATUS")
        if status.scope != "@TASK":
            raise IllegalTransition(f"a proposal for {status.scope} is not about this task")
        state = status.known_state
        if state is None:
            raise IllegalTransition(f"unknown state {status.state!r}")
        if state is State.RUNNING:
            if proposal.acknowledgement and self._state is State.RUNNING:
                return None
            raise IllegalTransition("the agent cannot write running")
        extras = tuple((k, v) for k, v in status.extras if k not in _FIELDS)
        return self._write(round, state, status.reason, _AGENT, Authority.PROPOSAL, extras)

    # --------------------------------------------------------------- internals

    def _problem(self, state: State, authority: Authority, reason: str | None) -> str | None:
        problem = illegal_because(self._state, state, authority, reason)
        if problem is None and is_budget_reason(reason) and state is not State.STOPPED:
            problem = "reason:budget can only produce stopped"
        return problem

    def _write(
        self,
        round: int,
        state: State,
        reason: str | None,
        by: str,
        authority: Authority,
        extras: tuple[tuple[str, str], ...] = (),
    ) -> StatusEntry:
        problem = self._problem(state, authority, reason)
        if problem is not None:
            raise IllegalTransition(f"{by} cannot write {self._state} → {state}: {problem}")
        if self._history and round < self._history[-1].round:
            raise IllegalTransition(
                f"round {round} is before the last entry's round {self._history[-1].round}"
            )
        return self._append(round, state, reason, by, authority, extras)

    def _append(
        self,
        round: int,
        state: State,
        reason: str | None,
        by: str,
        authority: Authority,
        extras: tuple[tuple[str, str], ...],
    ) -> StatusEntry:
        # The writer table is checked once more at the single point of writing.
        if AUTHORITY_OF_WRITER.get(by) is not authority or state not in WRITER_STATES[authority]:
            raise IllegalTransition(f"{by} with authority:{authority} cannot write {state}")
        try:
            line = Status(
                state=state, reason=reason, extras=extras, by=by, authority=authority
            ).render()
        except ValueError as exc:
            raise IllegalTransition(f"cannot render the status: {exc}") from None
        entry = StatusEntry(
            seq=len(self._history) + 1,
            round=round,
            state=state,
            reason=reason,
            by=by,
            authority=authority,
            line=line,
        )
        self._history.append(entry)
        self._state = state
        return entry
