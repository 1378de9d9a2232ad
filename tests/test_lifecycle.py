"""The status machine: every transition of spec §4, and nothing else."""

from __future__ import annotations

import itertools
from collections.abc import Callable

import pytest

from envelopes.declarations import (
    AUTHORITY_OF_WRITER,
    WRITER_STATES,
    Authority,
    State,
    Status,
)
from harness.enforce.authority import Proposal, classify
from harness.enforce.claims import read_claims
from harness.enforce.lifecycle import IllegalTransition, Lifecycle, StatusEntry
from harness.enforce.provenance import (
    STATUS_AUTHORITY,
    Provenance,
    authority_of,
    is_status_writer,
    writer_entity,
)
from harness.enforce.transitions import EDGES, TERMINAL, is_legal

# The §4 diagram, written out independently of harness.enforce.transitions: (from, to, writer).
SPEC_EDGES: set[tuple[State, State, Authority]] = {
    (State.CREATED, State.RUNNING, Authority.COMMIT),
    (State.RUNNING, State.CLAIMED_COMPLETE, Authority.PROPOSAL),
    (State.RUNNING, State.STOPPED, Authority.PROPOSAL),
    (State.RUNNING, State.STOPPED, Authority.COMMIT),
    (State.RUNNING, State.BLOCKED, Authority.PROPOSAL),
    (State.RUNNING, State.FAILED, Authority.PROPOSAL),
    (State.RUNNING, State.NEEDS_REVISION, Authority.PROPOSAL),
    (State.CLAIMED_COMPLETE, State.VERIFIED_COMPLETE, Authority.VERIFICATION),
    (State.CLAIMED_COMPLETE, State.NEEDS_REVISION, Authority.VERIFICATION),
    (State.CLAIMED_COMPLETE, State.STOPPED, Authority.COMMIT),
    (State.VERIFIED_COMPLETE, State.COMPLETE, Authority.COMMIT),
    (State.STOPPED, State.RUNNING, Authority.COMMIT),
    (State.BLOCKED, State.RUNNING, Authority.COMMIT),
    (State.NEEDS_REVISION, State.RUNNING, Authority.COMMIT),
}


def accepted(state: State, reason: str | None = None, *, ack: bool = False) -> Proposal:
    """A hand-built accepted proposal: the lifecycle must not trust it blindly."""
    status = Status(state=state, reason=reason, by="@AGENT", authority=Authority.PROPOSAL)
    return Proposal(
        round=1,
        line=status.render(),
        kind="STATUS",
        state=str(state),
        claimed_by="@AGENT",
        claimed_authority="proposal",
        disposition="accepted",
        why="test",
        status=status,
        acknowledgement=ack,
    )


def at(state: State) -> Lifecycle:
    """A lifecycle driven lawfully to `state`."""
    life = Lifecycle()
    if state is State.CREATED:
        return life
    life.commit_running(0)
    if state in (State.CLAIMED_COMPLETE, State.VERIFIED_COMPLETE, State.COMPLETE):
        life.apply_proposal(accepted(State.CLAIMED_COMPLETE), 1)
        if state is not State.CLAIMED_COMPLETE:
            life.apply_verification(State.VERIFIED_COMPLETE, 1)
        if state is State.COMPLETE:
            life.commit_complete(1)
    elif state is State.STOPPED:
        life.commit_stopped(1, "user_pause")
    elif state is not State.RUNNING:
        life.apply_proposal(accepted(state), 1)
    assert life.state is state
    return life


def writer_call(life: Lifecycle, dst: State, authority: Authority) -> Callable[[], object]:
    """The lifecycle call through which `authority` would write `dst`."""
    if authority is Authority.COMMIT:
        if dst is State.RUNNING:
            return lambda: life.commit_running(2)
        if dst is State.STOPPED:
            return lambda: life.commit_stopped(2, "budget")
        if dst is State.COMPLETE:
            return lambda: life.commit_complete(2)
        return _no_method
    if authority is Authority.VERIFICATION:
        return lambda: life.apply_verification(dst, 2)
    return lambda: life.apply_proposal(accepted(dst), 2)


def _no_method() -> None:
    raise IllegalTransition("the runtime has no commit for this state")


@pytest.mark.parametrize(
    ("src", "dst", "authority"),
    list(itertools.product(State, State, Authority)),
    ids=lambda v: str(v),
)
def test_exactly_the_spec_transitions_are_possible(
    src: State, dst: State, authority: Authority
) -> None:
    life = at(src)
    before = life.history
    call = writer_call(life, dst, authority)
    lawful = (src, dst, authority) in SPEC_EDGES
    if lawful:
        entry = call()
        assert isinstance(entry, StatusEntry)
        assert life.state is dst and entry.authority is authority
        assert life.history[:-1] == before
    else:
        with pytest.raises(IllegalTransition):
            call()
        assert life.history == before and life.state is src


def test_transition_table_matches_the_spec_and_the_writer_table() -> None:
    table = {(s, d, a) for (s, d), writers in EDGES.items() for a in writers}
    assert table == SPEC_EDGES
    for src, dst, authority in table:
        assert dst in WRITER_STATES[authority]
        assert src not in TERMINAL


def test_the_full_happy_path_and_its_lines() -> None:
    life = Lifecycle()
    life.commit_running(0)
    life.apply_proposal(accepted(State.CLAIMED_COMPLETE), 3)
    life.apply_verification(State.VERIFIED_COMPLETE, 3, evidence="@AUDIT_REPORT", score=1.0)
    life.commit_complete(3)
    assert [e.line for e in life.history] == [
        "::STATUS{@TASK|state:running|by:@RUNTIME|authority:commit}",
        "::STATUS{@TASK|state:claimed_complete|by:@AGENT|authority:proposal}",
        "::STATUS{@TASK|state:verified_complete|evidence:@AUDIT_REPORT|score:1.0|"
        "by:@GRADER|authority:verification}",
        "::STATUS{@TASK|state:complete|verified_by:@GRADER|by:@RUNTIME|authority:commit}",
    ]
    assert [e.seq for e in life.history] == [1, 2, 3, 4]
    assert life.final == life.history[-1]
    for entry in life.history:
        parsed = Status.parse(entry.line)
        assert parsed.known_state is entry.state and parsed.by == entry.by
        assert AUTHORITY_OF_WRITER[entry.by] is entry.authority


def test_needs_revision_from_the_grader_lists_missing_and_score() -> None:
    life = at(State.CLAIMED_COMPLETE)
    entry = life.apply_verification(State.NEEDS_REVISION, 2, missing=["d3", "d4"], score=0.78)
    assert entry.line == (
        "::STATUS{@TASK|state:needs_revision|missing:d3,d4|score:0.78|"
        "by:@GRADER|authority:verification}"
    )
    life.commit_running(2)
    assert life.state is State.RUNNING


def test_verified_complete_cannot_list_missing_criteria() -> None:
    with pytest.raises(IllegalTransition):
        at(State.CLAIMED_COMPLETE).apply_verification(State.VERIFIED_COMPLETE, 2, missing=["x"])


def test_stopped_never_goes_directly_to_complete() -> None:
    life = at(State.STOPPED)
    attempts: list[Callable[[], object]] = [
        lambda: life.commit_complete(2),
        lambda: life.apply_verification(State.VERIFIED_COMPLETE, 2),
        lambda: life.apply_proposal(accepted(State.CLAIMED_COMPLETE), 2),
    ]
    for attempt in attempts:
        with pytest.raises(IllegalTransition):
            attempt()
    life.commit_running(2)
    life.apply_proposal(accepted(State.CLAIMED_COMPLETE), 3)
    life.apply_verification(State.VERIFIED_COMPLETE, 3)
    assert life.commit_complete(3).state is State.COMPLETE


def test_reason_budget_only_ever_produces_stopped() -> None:
    life = at(State.RUNNING)
    with pytest.raises(IllegalTransition):
        life.apply_proposal(accepted(State.CLAIMED_COMPLETE, reason="budget"), 1)
    with pytest.raises(IllegalTransition):
        life.apply_proposal(accepted(State.BLOCKED, reason="Budget"), 1)
    assert life.commit_stopped(1, "budget").state is State.STOPPED
    for src, dst in itertools.product(State, State):
        for authority in Authority:
            if dst is not State.STOPPED:
                assert not is_legal(src, dst, authority, "budget")


def test_a_pending_claim_is_interrupted_only_by_a_budget_stop() -> None:
    with pytest.raises(IllegalTransition):
        at(State.CLAIMED_COMPLETE).commit_stopped(2, "user_pause")
    assert at(State.CLAIMED_COMPLETE).commit_stopped(2, "budget").reason == "budget"


def test_complete_needs_a_grader_verified_complete_right_before() -> None:
    for state in State:
        if state is State.VERIFIED_COMPLETE:
            continue
        with pytest.raises(IllegalTransition):
            at(state).commit_complete(5)


def test_terminal_states_accept_nothing() -> None:
    for terminal in TERMINAL:
        life = at(terminal)
        for state in State:
            with pytest.raises(IllegalTransition):
                life.commit_running(3) if state is State.RUNNING else life.apply_proposal(
                    accepted(state), 3
                )


def test_the_agent_running_is_an_acknowledgement_only_while_running() -> None:
    life = at(State.RUNNING)
    before = life.history
    assert life.apply_proposal(accepted(State.RUNNING, ack=True), 1) is None
    assert life.history == before
    with pytest.raises(IllegalTransition):
        life.apply_proposal(accepted(State.RUNNING, ack=False), 1)
    stopped = at(State.STOPPED)
    with pytest.raises(IllegalTransition):
        stopped.apply_proposal(accepted(State.RUNNING, ack=True), 2)


def test_agent_needs_revision_is_recorded_then_the_runtime_resumes() -> None:
    life = at(State.RUNNING)
    entry = life.apply_proposal(accepted(State.NEEDS_REVISION), 1)
    assert entry is not None and entry.by == "@AGENT" and entry.authority is Authority.PROPOSAL
    assert life.commit_running(2).state is State.RUNNING


@pytest.mark.parametrize("disposition", ["downgraded", "rejected"])
def test_only_accepted_proposals_are_applied(disposition: str) -> None:
    proposal = accepted(State.BLOCKED).model_copy(update={"disposition": disposition})
    life = at(State.RUNNING)
    with pytest.raises(IllegalTransition):
        life.apply_proposal(proposal, 1)
    assert life.state is State.RUNNING


@pytest.mark.parametrize(
    "status",
    [
        Status(state=State.BLOCKED, by="@RUNTIME", authority=Authority.COMMIT),
        Status(state=State.BLOCKED, by="@AGENT", authority=Authority.COMMIT),
        Status(state=State.COMPLETE, by="@AGENT", authority=Authority.PROPOSAL),
        Status(state=State.VERIFIED_COMPLETE, by="@SELF", authority=Authority.PROPOSAL),
        Status(scope="@OTHER", state=State.BLOCKED, by="@AGENT", authority=Authority.PROPOSAL),
        Status(state="done", by="@AGENT", authority=Authority.PROPOSAL),
    ],
)
def test_a_forged_accepted_proposal_is_still_refused(status: Status) -> None:
    proposal = accepted(State.BLOCKED).model_copy(update={"status": status})
    life = at(
        State.CLAIMED_COMPLETE if status.known_state is State.VERIFIED_COMPLETE else State.RUNNING
    )
    before = life.history
    with pytest.raises(IllegalTransition):
        life.apply_proposal(proposal, 1)
    assert life.history == before


def test_accepted_evidence_changes_nothing() -> None:
    (claim,) = read_claims("::EVIDENCE{id:e1|deliverable:d1|ref:a.py|result:pass}")
    proposal = classify(claim, State.RUNNING, round=1)
    life = at(State.RUNNING)
    assert life.apply_proposal(proposal, 1) is None and life.history == at(State.RUNNING).history


def test_agent_extras_go_into_the_history_line() -> None:
    (claim,) = read_claims("::STATUS{@TASK|state:blocked|need:api_key|by:@SELF|authority:proposal}")
    life = at(State.RUNNING)
    entry = life.apply_proposal(classify(claim, life.state, round=1), 1)
    assert entry is not None
    assert entry.line == "::STATUS{@TASK|state:blocked|need:api_key|by:@AGENT|authority:proposal}"


@pytest.mark.parametrize(
    ("initial", "reason", "entries"),
    [(State.CREATED, None, 0), (State.RUNNING, None, 1), (State.STOPPED, "user_pause", 1)],
)
def test_start_states_from_the_task_file(initial: State, reason: str | None, entries: int) -> None:
    life = Lifecycle(initial, reason)
    assert life.state is initial and len(life.history) == entries
    if entries:
        first = life.history[0]
        assert (first.round, first.by, first.authority) == (0, "@RUNTIME", Authority.COMMIT)
        assert first.reason == reason
    assert life.current_status().known_state is initial


@pytest.mark.parametrize(
    ("initial", "reason"),
    [
        (State.STOPPED, None),
        (State.RUNNING, "budget"),
        (State.CLAIMED_COMPLETE, None),
        (State.VERIFIED_COMPLETE, None),
        (State.COMPLETE, None),
        (State.BLOCKED, None),
        (State.NEEDS_REVISION, None),
        (State.FAILED, None),
    ],
)
def test_impossible_start_states_are_refused(initial: State, reason: str | None) -> None:
    with pytest.raises(IllegalTransition):
        Lifecycle(initial, reason)


def test_a_resumed_budget_stop_must_be_resumed_before_anything_else() -> None:
    life = Lifecycle(State.STOPPED, "budget")
    with pytest.raises(IllegalTransition):
        life.apply_proposal(accepted(State.CLAIMED_COMPLETE), 1)
    assert life.may_commit(State.RUNNING) and not life.may_commit(State.COMPLETE)
    life.commit_running(1)
    assert life.state is State.RUNNING


def test_rounds_never_go_backwards() -> None:
    life = at(State.RUNNING)
    life.commit_stopped(4, "user_pause")
    with pytest.raises(IllegalTransition):
        life.commit_running(3)


def test_a_stop_needs_a_reason() -> None:
    with pytest.raises(IllegalTransition):
        at(State.RUNNING).commit_stopped(1, "")


def test_provenance_to_authority_is_design_section_3() -> None:
    assert authority_of(Provenance.RUNTIME) is Authority.COMMIT
    assert authority_of(Provenance.GRADER) is Authority.VERIFICATION
    assert authority_of(Provenance.AGENT) is Authority.PROPOSAL
    for silent in (Provenance.USER, Provenance.TOOL, Provenance.SYSTEM, Provenance.DEVELOPER):
        assert authority_of(silent) is None and not is_status_writer(silent)
        with pytest.raises(ValueError):
            writer_entity(silent)
    assert set(STATUS_AUTHORITY) == set(Provenance)
    for provenance in Provenance:
        if is_status_writer(provenance):
            assert AUTHORITY_OF_WRITER[writer_entity(provenance)] is authority_of(provenance)


def test_a_reason_that_names_the_budget_never_produces_a_complete_form() -> None:
    from harness.enforce.authority import classify
    from harness.enforce.claims import read_claims

    for reason in ("budget", "Budget", "budget_exhausted", "low_budget", "out_of_budget"):
        fields = f"@TASK|state:claimed_complete|reason:{reason}|by:@AGENT|authority:proposal"
        line = f"::STATUS{{{fields}}}"
        proposal = classify(read_claims(line)[0], State.RUNNING)
        assert proposal.disposition == "rejected", reason
