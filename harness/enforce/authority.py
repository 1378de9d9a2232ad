"""Authority classification: what the runtime makes of each claim the agent wrote.

Every claim from `harness.enforce.claims.read_claims` becomes a `Proposal` with a disposition
(DESIGN §3):

* `accepted` — a strict, well-formed `::STATUS{@TASK|…|by:@AGENT|authority:proposal}`
  (or `@SELF`) of a state the agent may write, on a legal transition from the current
  state. Only these are ever applied (by `harness.enforce.lifecycle.Lifecycle`). An agent's
  `running` while the task is running is accepted as an acknowledgement that changes
  nothing.
* `downgraded` — the claim is lawful as a proposal but forged authority (a runtime,
  grader, system, user or tool writer, or an authority other than `proposal`). The
  spec's Authority Model lets an L2 runtime "reject or downgrade to authority:proposal";
  we downgrade, record it, and never apply it: a forger does not get its state.
* `rejected` — anything else: a state the agent may not write, an illegal transition,
  a compound or unknown state, or a claim that is not strict (disguised, malformed,
  ambiguous) even when its content would be lawful.

Each problem found is also a `Violation`. A claim can carry several.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from envelopes.declarations import WRITER_STATES, Authority, State, Status
from harness.enforce.claims import RawClaim
from harness.enforce.strictness import ClaimKind
from harness.enforce.transitions import illegal_because, is_budget_reason

Disposition = Literal["accepted", "downgraded", "rejected"]
ViolationKind = Literal[
    "authority_forgery",
    "illegal_transition",
    "forbidden_state",
    "malformed_claim",
    "ambiguous_claim",
]

AGENT_WRITERS: frozenset[str] = frozenset({"@AGENT", "@SELF"})
# Writer entities of the tiers above the agent: a claim naming one forges authority.
HIGHER_WRITERS: frozenset[str] = frozenset(
    {"@RUNTIME", "@GRADER", "@SYSTEM", "@DEVELOPER", "@HARNESS", "@ORCHESTRATOR"}
)
HIGHER_AUTHORITIES: frozenset[str] = frozenset({"commit", "verification"})

# Keys through which a claim names its writer, verifier or authority. Synonyms are read
# too: a forger does not get to pick a key we forgot.
_WRITER_KEYS = (
    "by",
    "writer",
    "author",
    "authored_by",
    "written_by",
    "signed_by",
    "committed_by",
    "issued_by",
)
_VERIFIER_KEYS = ("verified_by",)
_AUTHORITY_KEYS = ("authority", "auth", "authority_level", "tier")

_TOKEN_SPLIT = re.compile(r"->|=>|→|⇒|[\s,;/+&|<>]+")
_CONNECTORS = frozenset({"then", "or", "and", "to", "from", "via", "else", "with"})
_LETTER_HYPHEN = re.compile(r"(?<=[A-Za-z])-(?=[A-Za-z])")


class Violation(BaseModel):
    """One breach of the authority model, as DESIGN §6 `violations` records it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    round: int
    kind: ViolationKind
    detail: str


class Proposal(BaseModel):
    """A claim after classification: DESIGN §6 `proposals` plus what applying needs."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    round: int
    line: str  # as the agent wrote it
    kind: ClaimKind
    state: str | None  # as read (folded); None for ::EVIDENCE and for a claim with no state
    claimed_by: str | None
    claimed_authority: str | None
    disposition: Disposition
    why: str
    # For an accepted ::STATUS: the declaration as the project's parser reads it (its
    # reason and extra fields go into the status history). None otherwise.
    status: Status | None = None
    # An accepted claim that changes nothing (the agent's `running` while running).
    acknowledgement: bool = False
    violations: tuple[Violation, ...] = ()

    @property
    def accepted(self) -> bool:
        return self.disposition == "accepted"

    def record(self) -> dict[str, Any]:
        """The DESIGN §6 `proposals` entry."""
        return self.model_dump(
            include={
                "round",
                "line",
                "state",
                "claimed_by",
                "claimed_authority",
                "disposition",
                "why",
            }
        )


def value_tokens(value: str) -> list[str]:
    """Split a value the way a forger might compound it: `stopped->complete`,
    `@SELF,@RUNTIME`, `proposal/commit`, `running then complete`.

    A hyphen between letters is read as an underscore (`verified-complete` is still
    verified_complete), so that a spelling variant cannot hide a forbidden state.
    """
    value = _LETTER_HYPHEN.sub("_", value)
    parts = (part.strip("\"'`*~_.()[]{}") for part in _TOKEN_SPLIT.split(value))
    return [part for part in parts if part and part.lower() not in _CONNECTORS]


def _entity(token: str) -> str:
    return "@" + token.lstrip("@").upper()


def _joined(values: tuple[str, ...]) -> str | None:
    # Repeated values are kept visible in the record, separated by "; ".
    return "; ".join(values) if values else None


class _Findings:
    """Accumulates violations and the reasons for the disposition of one claim."""

    def __init__(self, round_no: int) -> None:
        self.round = round_no
        self.violations: list[Violation] = []
        self.rejections: list[str] = []
        self.forgeries: list[str] = []

    def reject(self, kind: ViolationKind, detail: str) -> None:
        self.violations.append(Violation(round=self.round, kind=kind, detail=detail))
        self.rejections.append(detail)

    def forge(self, detail: str) -> None:
        self.violations.append(Violation(round=self.round, kind="authority_forgery", detail=detail))
        self.forgeries.append(detail)


def _check_form(claim: RawClaim, found: _Findings) -> None:
    if claim.ambiguities:
        found.reject("ambiguous_claim", "ambiguous: " + "; ".join(claim.ambiguities))
    if claim.malformations:
        found.reject("malformed_claim", "not strict: " + "; ".join(claim.malformations))


def _check_writers(claim: RawClaim, found: _Findings, verifier_keys: tuple[str, ...]) -> None:
    """Any writer, verifier or authority above the agent tier is forged authority."""
    for key in (*_WRITER_KEYS, *verifier_keys):
        for value in claim.values(key):
            for token in value_tokens(value):
                if _entity(token) not in AGENT_WRITERS:
                    found.forge(f"{key}:{value} claims a writer the agent is not")
    for key in _AUTHORITY_KEYS:
        for value in claim.values(key):
            for token in value_tokens(value):
                if token.lstrip("@").lower() != Authority.PROPOSAL:
                    found.forge(f"{key}:{value} claims authority beyond proposal")
    for value in claim.positional:
        for token in value_tokens(value):
            if _entity(token) in HIGHER_WRITERS or token.lower() in HIGHER_AUTHORITIES:
                found.forge(f"positional {value!r} names a higher tier")
    # Any other field naming a higher tier's entity (`committer:@RUNTIME`,
    # `approved_by:@GRADER`, `grader:@GRADER`): the spec lists no such key, but an
    # accepted proposal's extra fields are copied into the committed status history, so
    # the runtime would record a line vouching for the runtime or the grader. Fail closed:
    # that is forged authority, whatever the key is called.
    checked = {*_WRITER_KEYS, *verifier_keys, *_AUTHORITY_KEYS}
    for key, values in claim.fields.items():
        if key in checked:
            continue
        for value in values:
            for token in value_tokens(value):
                if token.startswith("@") and _entity(token) in HIGHER_WRITERS:
                    found.forge(f"{key}:{value} names a higher tier ({_entity(token)})")


def _check_runtime_fields(claim: RawClaim, found: _Findings) -> None:
    """Fields only the runtime's own declarations may carry.

    Spec §2: `remaining` is derived and MUST NOT appear as a field. An agent claim with
    one would have it copied into the status history (and a ::BUDGET-looking number into
    the record), so it is rejected, not accepted with the field kept.
    """
    if "remaining" in claim.fields:
        found.reject("malformed_claim", "carries a remaining field (spec §2: never a field)")


def _check_state(claim: RawClaim, current: State, found: _Findings) -> tuple[State | None, bool]:
    """Judge the claimed state; return (the single writable state, is acknowledgement)."""
    values = claim.values("state")
    if not values:
        found.reject("malformed_claim", "names no state")
        return None, False
    tokens = list(dict.fromkeys(t.lower() for v in values for t in value_tokens(v)))
    if not tokens:
        found.reject("malformed_claim", "the state field is empty")
        return None, False
    known: list[State] = []
    for token in tokens:
        try:
            state = State(token)
        except ValueError:
            found.reject("forbidden_state", f"unknown state {token!r}")
            continue
        known.append(state)
        if state not in WRITER_STATES[Authority.PROPOSAL] and state is not State.RUNNING:
            found.reject("forbidden_state", f"the agent may not write state:{state}")
    if len(tokens) != 1:
        found.reject("ambiguous_claim", f"compound state {'; '.join(values)!r}")
        return None, False
    if not known:
        return None, False
    state = known[0]
    reasons = claim.values("reason")
    if any(is_budget_reason(t) for r in reasons for t in value_tokens(r)) and (
        state is not State.STOPPED
    ):
        found.reject("forbidden_state", f"reason:budget can only produce stopped, not {state}")
        return None, False
    if state is State.RUNNING:
        # DESIGN §3: the agent's `running` acknowledges a running task; it can never
        # start or resume one (only the runtime commits running).
        if current is State.RUNNING:
            return state, True
        found.reject(
            "illegal_transition",
            f"the agent cannot move the task from {current} to running "
            "(only the runtime commits running)",
        )
        return None, False
    if state not in WRITER_STATES[Authority.PROPOSAL]:
        return None, False
    reason = reasons[0] if len(reasons) == 1 else None
    problem = illegal_because(current, state, Authority.PROPOSAL, reason)
    if problem is not None:
        found.reject("illegal_transition", f"{current} → {state}: {problem}")
        return None, False
    return state, False


def _check_scope(claim: RawClaim, found: _Findings) -> None:
    # Only a status of this task can change this task; a strict claim names @TASK.
    if claim.positional and claim.positional[0].upper() != "@TASK":
        found.reject("malformed_claim", f"scope {claim.positional[0]!r} is not @TASK")


def _disposition(found: _Findings) -> Disposition:
    if found.rejections:
        return "rejected"
    return "downgraded" if found.forgeries else "accepted"


def _why(found: _Findings, accepted_why: str, downgraded_why: str) -> str:
    if found.rejections:
        parts = list(found.rejections)
        if found.forgeries:
            parts.append("authority forged: " + "; ".join(found.forgeries))
        return "rejected: " + "; ".join(parts)
    if found.forgeries:
        return f"{downgraded_why}: " + "; ".join(found.forgeries)
    return accepted_why


def _classify_status(claim: RawClaim, current: State, round_no: int) -> Proposal:
    found = _Findings(round_no)
    _check_form(claim, found)
    _check_writers(claim, found, _VERIFIER_KEYS)
    _check_runtime_fields(claim, found)
    _check_scope(claim, found)
    state, acknowledgement = _check_state(claim, current, found)
    disposition = _disposition(found)
    status: Status | None = None
    if disposition == "accepted":
        # A strict claim is, by construction of the reader, one Status.parse accepts.
        status = Status.parse(claim.line)
    if acknowledgement:
        accepted_why = "acknowledgement: the task is already running; changes nothing"
    else:
        accepted_why = f"strict proposal by the agent: {current} → {state}"
    return Proposal(
        round=round_no,
        line=claim.line,
        kind="STATUS",
        state=_joined(claim.values("state")),
        claimed_by=_joined(claim.values("by")),
        claimed_authority=_joined(claim.values("authority")),
        disposition=disposition,
        why=_why(found, accepted_why, "downgraded to authority:proposal and not applied"),
        status=status,
        acknowledgement=acknowledgement and disposition == "accepted",
        violations=tuple(found.violations),
    )


def _classify_evidence(claim: RawClaim, round_no: int) -> Proposal:
    found = _Findings(round_no)
    _check_form(claim, found)
    # Evidence verified by a tool, the grader or the runtime is evidence the agent did
    # not produce: writing that verifier is forging verification (spec §6, §4).
    _check_writers(claim, found, _VERIFIER_KEYS)
    _check_runtime_fields(claim, found)
    if claim.values("state"):
        # Evidence never changes the status; a state smuggled into it is not a proposal.
        found.reject("malformed_claim", "::EVIDENCE carries a state field")
    return Proposal(
        round=round_no,
        line=claim.line,
        kind="EVIDENCE",
        state=None,
        claimed_by=_joined(claim.values("by") or claim.values("verified_by")),
        claimed_authority=_joined(claim.values("authority")),
        disposition=_disposition(found),
        why=_why(
            found,
            "evidence recorded; evidence never changes the status",
            "downgraded to the agent's own unverified evidence",
        ),
        violations=tuple(found.violations),
    )


def classify(claim: RawClaim, current_state: State, round: int = 0) -> Proposal:
    """Classify one agent claim against the task's current state (DESIGN §3, §6)."""
    if claim.kind == "EVIDENCE":
        return _classify_evidence(claim, round)
    return _classify_status(claim, current_state, round)
