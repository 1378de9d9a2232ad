"""Property: whatever the agent writes, the committed status history obeys the authority
model and the spec §4 state machine.

Arbitrary sequences of agent replies (prose mixed with strict and disguised ::STATUS and
::EVIDENCE lines of every state, writer and authority, forgeries included) are fed round
by round through read_claims → classify → Lifecycle.apply_proposal, interleaved with the
runtime's own moves (budget and pause stops, resumes, grader verdicts, complete commits,
and deliberately illegal calls). The history must then satisfy, precisely:

H1  writer table: every entry's `by` holds exactly its `authority`, and that authority
    may write the entry's state (spec §4 three-tier table);
H2  transitions: the first entry is the start state (or running from created) and every
    later entry follows the previous one by a spec §4 edge for its writer's tier;
H3  agent entries are exactly the accepted, non-acknowledging ::STATUS proposals, in
    order and with their states; nothing downgraded or rejected ever reaches history;
H4  every accepted proposal came from a strict claim by @AGENT/@SELF with
    authority:proposal and no violation;
H5  every `complete` directly follows `verified_complete` by @GRADER/verification;
H6  after a `stopped` entry the next entry, if any, is `running` by @RUNTIME/commit;
H7  `reason:budget` appears only on `stopped`; between a budget stop and any complete
    form (claimed_complete, verified_complete, complete) lies a runtime `running`;
H8  nothing follows `complete` or `failed`;
H9  a claim naming any writer but @AGENT/@SELF, or any authority but proposal, is
    never accepted and always leaves an `authority_forgery` violation;
H10 a disguised line is never hidden (it yields a claim) and never accepted;
H11 every history line is canonical (`Status.parse(line).render() == line`), seq runs
    1..n and rounds never decrease;
H12 an illegal lifecycle call raises IllegalTransition and leaves history unchanged.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from itertools import pairwise

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from envelopes.declarations import (
    AUTHORITY_OF_WRITER,
    COMPLETE_FORMS,
    WRITER_STATES,
    Authority,
    State,
    Status,
)
from harness.enforce.authority import AGENT_WRITERS, Proposal, classify, value_tokens
from harness.enforce.claims import read_claims
from harness.enforce.lifecycle import IllegalTransition, Lifecycle
from tests.test_lifecycle import SPEC_EDGES

WRITERS = [
    "@AGENT",
    "@SELF",
    "@RUNTIME",
    "@GRADER",
    "@USER",
    "@TOOL",
    "@SYSTEM",
    "@SELF,@RUNTIME",
    "@agent",
]
AUTHORITIES = ["proposal", "verification", "commit", "user", "proposal/commit", "Proposal"]
STATES = [s.value for s in State] + ["done", "stopped->complete", "running then complete"]
REASONS = [None, "budget", "user_pause", "unrecoverable", "Budget"]
PROSE = [
    "I read the task and started on the parser.",
    "The status of the build is green.",
    "Tests: 14 passed, 0 failed.",
    "Next I will write the docstring.",
    "Budget is tight; I will be brief.",
    "",
]


def _fullwidth(text: str) -> str:
    return "".join(chr(ord(c) + 0xFEE0) if c in ":{}|" else c for c in text)


def _equals(text: str) -> str:
    head, _, body = text.partition("{")
    return head + "{" + body.replace(":", "=")


DISGUISES: list[Callable[[str], str]] = [
    _fullwidth,
    _equals,
    lambda t: t.replace("::STATUS", "::STA\u200bTUS").replace("::EVIDENCE", ":\u200d:EVIDENCE"),
    lambda t: t.replace("by:", "b\u2060y:").replace("::", "\ufeff::", 1),
    lambda t: "- " + t,
    lambda t: "• " + t,
    lambda t: "1. " + t,
    lambda t: "> " + t,
    lambda t: "T[2] " + t,
    lambda t: f"**{t}**",
    lambda t: f"_{t}_",
    lambda t: f"`{t}`",
    lambda t: t.replace("::STATUS{", "::Status {").replace("::EVIDENCE{", "::evidence {"),
    lambda t: t.replace("{", "{{", 1) + "}",
    lambda t: t.removesuffix("}"),
    lambda t: t.replace("|by:", "|by:@AGENT|by:", 1) if "|by:" in t else t + "|by:@AGENT",
    lambda t: t.replace("STATUS", "ЅТАТUS", 1),
    lambda t: t.replace("|", " | ").replace("{", " { "),
    lambda t: "    " + t,
]


@dataclass(frozen=True)
class Piece:
    """One generated line of agent text and what we know about it."""

    text: str
    disguised: bool = False
    canonical: bool = False  # a strict line with single, well-formed values


def _status_line(state: str, by: str, authority: str, reason: str | None) -> str:
    value = f'"{state}"' if " " in state else state
    fields = [f"state:{value}"] + ([f"reason:{reason}"] if reason else [])
    return "::STATUS{@TASK|" + "|".join([*fields, f"by:{by}", f"authority:{authority}"]) + "}"


def _is_canonical(state: str, by: str, authority: str, reason: str | None) -> bool:
    simple = {"@AGENT", "@SELF", "@RUNTIME", "@GRADER", "@USER", "@TOOL", "@SYSTEM"}
    return (
        state.replace("_", "").isalpha()
        and state.islower()
        and by in simple
        and authority.isalpha()
        and authority.islower()
        and reason != "Budget"
    )


@st.composite
def status_piece(draw: st.DrawFn) -> Piece:
    state, by = draw(st.sampled_from(STATES)), draw(st.sampled_from(WRITERS))
    authority, reason = draw(st.sampled_from(AUTHORITIES)), draw(st.sampled_from(REASONS))
    line = _status_line(state, by, authority, reason)
    canonical = _is_canonical(state, by, authority, reason)
    disguises = draw(st.lists(st.sampled_from(DISGUISES), max_size=3))
    disguised = line
    for disguise in disguises:
        disguised = disguise(disguised)
    if disguised == line:
        return Piece(line, canonical=canonical)
    return Piece(disguised, disguised=True)


@st.composite
def lawful_piece(draw: st.DrawFn) -> Piece:
    """A strict agent proposal of an agent-writable state (lawful or not from here)."""
    state = draw(
        st.sampled_from(
            [
                "claimed_complete",
                "claimed_complete",
                "stopped",
                "blocked",
                "failed",
                "needs_revision",
                "running",
            ]
        )
    )
    by = draw(st.sampled_from(["@AGENT", "@SELF"]))
    reason = draw(st.sampled_from([None, None, None, "budget", "user_pause"]))
    return Piece(_status_line(state, by, "proposal", reason), canonical=True)


@st.composite
def evidence_piece(draw: st.DrawFn) -> Piece:
    verifier = draw(st.sampled_from([None, "@SELF", "@TOOL", "@GRADER", "@RUNTIME"]))
    line = (
        "::EVIDENCE{id:e1|deliverable:d1|kind:file|ref:a.py|"
        + (f"verified_by:{verifier}|" if verifier else "")
        + "result:pass}"
    )
    disguise = draw(st.none() | st.sampled_from(DISGUISES))
    if disguise is None or disguise(line) == line:
        return Piece(line, canonical=True)
    return Piece(disguise(line), disguised=True)


pieces = st.one_of(
    st.sampled_from(PROSE).map(Piece),
    status_piece(),
    lawful_piece(),
    lawful_piece(),
    evidence_piece(),
)
replies = st.lists(pieces, max_size=6)
RUNTIME_MOVES = [
    "none",
    "stop_budget",
    "stop_pause",
    "resume",
    "resume",
    "grade_pass",
    "grade_pass",
    "grade_fail",
    "complete",
    "complete",
    "illegal",
]
rounds = st.lists(st.tuples(st.sampled_from(RUNTIME_MOVES), replies), min_size=1, max_size=12)
starts = st.sampled_from(
    [
        (State.CREATED, None),
        (State.RUNNING, None),
        (State.STOPPED, "user_pause"),
        (State.STOPPED, "budget"),
    ]
)


@dataclass
class Run:
    life: Lifecycle
    proposals: list[Proposal] = field(default_factory=list)
    # (piece, proposals of the claims read from that piece's line)
    lines: list[tuple[Piece, list[Proposal]]] = field(default_factory=list)


def _illegal_call(life: Lifecycle, r: int, pick: int) -> None:
    """Call something the current state forbids; it must raise and change nothing."""
    before = life.history
    calls: list[tuple[State, Callable[[], object]]] = [
        (State.COMPLETE, lambda: life.commit_complete(r)),
        (State.VERIFIED_COMPLETE, lambda: life.apply_verification(State.VERIFIED_COMPLETE, r)),
        (State.RUNNING, lambda: life.commit_running(r)),
        (State.STOPPED, lambda: life.commit_stopped(r, "user_pause")),
    ]
    target, call = calls[pick % len(calls)]
    lawful = {
        State.COMPLETE: life.may_commit(State.COMPLETE),
        State.VERIFIED_COMPLETE: life.state is State.CLAIMED_COMPLETE,
        State.RUNNING: life.may_commit(State.RUNNING),
        State.STOPPED: life.may_commit(State.STOPPED, "user_pause"),
    }[target]
    if lawful:
        return
    try:
        call()
    except IllegalTransition:
        assert life.history == before  # H12
    else:
        raise AssertionError(f"illegal {target} from {life.state} was allowed")


def _runtime_move(life: Lifecycle, move: str, r: int) -> None:
    if move == "stop_budget" and life.may_commit(State.STOPPED, "budget"):
        life.commit_stopped(r, "budget")
    elif move == "stop_pause" and life.may_commit(State.STOPPED, "user_pause"):
        life.commit_stopped(r, "user_pause")
    elif move == "resume" and life.may_commit(State.RUNNING):
        life.commit_running(r)
    elif move in ("grade_pass", "grade_fail") and life.state is State.CLAIMED_COMPLETE:
        verdict = State.VERIFIED_COMPLETE if move == "grade_pass" else State.NEEDS_REVISION
        life.apply_verification(verdict, r, missing=[] if move == "grade_pass" else ["docs"])
    elif move == "complete" and life.may_commit(State.COMPLETE):
        life.commit_complete(r)
    elif move == "illegal":
        _illegal_call(life, r, r)


def _drive(start: tuple[State, str | None], plan: list[tuple[str, list[Piece]]]) -> Run:
    run = Run(Lifecycle(*start))
    for r, (move, reply) in enumerate(plan, start=1):
        _runtime_move(run.life, move, r)
        text = "\n".join(piece.text for piece in reply)
        by_line: dict[int, list[Proposal]] = {}
        for claim in read_claims(text):
            proposal = classify(claim, run.life.state, round=r)
            run.proposals.append(proposal)
            by_line.setdefault(claim.lineno, []).append(proposal)
            if proposal.accepted:
                run.life.apply_proposal(proposal, r)
        run.lines += [(p, by_line.get(i, [])) for i, p in enumerate(reply, start=1)]
    return run


def _forges(proposal: Proposal) -> bool:
    writers = value_tokens(proposal.claimed_by or "")
    authorities = value_tokens(proposal.claimed_authority or "")
    return any("@" + w.lstrip("@").upper() not in AGENT_WRITERS for w in writers) or any(
        a.lower() != "proposal" for a in authorities
    )


def check_history(run: Run, start: State) -> None:
    history = run.life.history
    for entry in history:  # H1, H11
        assert AUTHORITY_OF_WRITER[entry.by] is entry.authority
        assert entry.state in WRITER_STATES[entry.authority]
        assert Status.parse(entry.line).render() == entry.line
        parsed = Status.parse(entry.line)
        assert (parsed.known_state, parsed.reason, parsed.by) == (
            entry.state,
            entry.reason,
            entry.by,
        )
    assert [e.seq for e in history] == list(range(1, len(history) + 1))
    assert all(a.round <= b.round for a, b in pairwise(history))
    if history:  # H2
        first = history[0]
        assert first.by == "@RUNTIME"
        assert first.state is (State.RUNNING if start is State.CREATED else start)
    for prev, nxt in pairwise(history):
        assert (prev.state, nxt.state, nxt.authority) in SPEC_EDGES
        if (prev.state, nxt.state) == (State.CLAIMED_COMPLETE, State.STOPPED):
            assert nxt.reason == "budget"
        if nxt.state is State.COMPLETE:  # H5
            assert prev.state is State.VERIFIED_COMPLETE and prev.by == "@GRADER"
            assert prev.authority is Authority.VERIFICATION
        if prev.state is State.STOPPED:  # H6
            assert (nxt.state, nxt.by, nxt.authority) == (
                State.RUNNING,
                "@RUNTIME",
                Authority.COMMIT,
            )
        assert prev.state not in (State.COMPLETE, State.FAILED)  # H8
    budget_stopped = False  # H7
    for entry in history:
        if entry.reason is not None and entry.reason.lower() == "budget":
            assert entry.state is State.STOPPED
            budget_stopped = True
        elif entry.state is State.RUNNING:
            budget_stopped = False
        assert not (budget_stopped and entry.state in COMPLETE_FORMS)


def check_proposals(run: Run) -> None:
    applied = [
        p for p in run.proposals if p.accepted and p.kind == "STATUS" and not p.acknowledgement
    ]
    agent_entries = [e for e in run.life.history if e.authority is Authority.PROPOSAL]
    assert [e.state for e in agent_entries] == [  # H3
        p.status.known_state for p in applied if p.status is not None
    ]
    assert len(agent_entries) == len(applied)
    for proposal in run.proposals:
        if proposal.accepted:  # H4
            assert proposal.violations == ()
            assert proposal.kind == "EVIDENCE" or proposal.claimed_by in AGENT_WRITERS
            assert proposal.kind == "EVIDENCE" or proposal.claimed_authority == "proposal"
            assert read_claims(proposal.line)[0].strict
        if _forges(proposal):  # H9
            assert not proposal.accepted
            assert any(v.kind == "authority_forgery" for v in proposal.violations)
    for piece, found in run.lines:  # H10
        if piece.disguised:
            assert found, f"disguise hid a claim: {piece.text!r}"
            assert not any(p.accepted for p in found)
        if piece.canonical:
            assert len(found) == 1


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(start=starts, plan=rounds)
def test_no_agent_reply_breaks_the_authority_model(
    start: tuple[State, str | None], plan: list[tuple[str, list[Piece]]]
) -> None:
    run = _drive(start, plan)
    check_history(run, start[0])
    check_proposals(run)


@settings(max_examples=300, deadline=None)
@given(
    state=st.sampled_from(STATES),
    by=st.sampled_from(["@RUNTIME", "@GRADER", "@SYSTEM", "@SELF,@RUNTIME"]),
    authority=st.sampled_from(AUTHORITIES),
    disguises=st.lists(st.sampled_from(DISGUISES), min_size=1, max_size=4),
    current=st.sampled_from(list(State)),
)
def test_disguised_forgeries_are_always_found_and_recorded(
    state: str, by: str, authority: str, disguises: list[Callable[[str], str]], current: State
) -> None:
    line = _status_line(state, by, authority, None)
    for disguise in disguises:
        line = disguise(line)
    claims = read_claims(line)
    assert claims
    proposals = [classify(c, current, round=1) for c in claims]
    assert not any(p.accepted for p in proposals)
    assert any(v.kind == "authority_forgery" for p in proposals for v in p.violations)


@settings(max_examples=200, deadline=None)
@given(text=st.text(max_size=300), current=st.sampled_from(list(State)))
def test_arbitrary_text_never_crashes_the_reader(text: str, current: State) -> None:
    for claim in read_claims(text):
        proposal = classify(claim, current, round=1)
        if proposal.accepted and proposal.kind == "STATUS":
            assert claim.strict and proposal.claimed_by in AGENT_WRITERS
