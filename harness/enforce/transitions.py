"""The spec §4 state machine as data: which tier may move the task from which state to which.

Both the authority layer (to reject an agent's unlawful proposal) and the lifecycle (to
refuse an unlawful commit) read this one table, so they cannot disagree.

The §4 diagram lists the paths

    created → running → claimed_complete → verified_complete → complete
    created → running → stopped → running → claimed_complete → …
    created → running → blocked → running → …
    created → running → needs_revision → running → …
    created → running → failed

and the three-tier table says who writes each target state. Fail-closed readings where
the spec is silent:

* Only edges on a listed path exist. `created` goes only to `running` (a task whose
  budget is exhausted before its first call is first committed running, then stopped).
* `claimed_complete` leaves only through the grader (`verified_complete` or
  `needs_revision`) or a runtime `stopped|reason:budget` (the audit reserve ran out):
  the agent cannot withdraw or replace its own claim while it waits for the grader.
* `stopped`, `blocked` and `needs_revision` leave only through a runtime `running`
  commit; `stopped → complete` and every other shortcut are absent.
* The agent's `needs_revision` (spec §7 self-audit, listed as agent-writable in §4) is
  an edge from `running`: it moves away from completion, so accepting it is safe. The
  runtime then commits `running` again, exactly as after the grader's needs_revision.
* `complete` and `failed` are terminal.
* `reason:budget` produces only `stopped`, whoever writes it.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from envelopes.declarations import COMPLETE_FORMS, WRITER_STATES, Authority, State

__all__ = [
    "BUDGET_REASON",
    "COMPLETE_FORMS",
    "EDGES",
    "INITIAL_STATES",
    "REPEATED_ERROR_REASON",
    "TERMINAL",
    "illegal_because",
    "is_budget_reason",
    "is_legal",
]

_P, _V, _C = Authority.PROPOSAL, Authority.VERIFICATION, Authority.COMMIT

EDGES: Mapping[tuple[State, State], frozenset[Authority]] = MappingProxyType(
    {
        (State.CREATED, State.RUNNING): frozenset({_C}),
        (State.RUNNING, State.CLAIMED_COMPLETE): frozenset({_P}),
        (State.RUNNING, State.STOPPED): frozenset({_P, _C}),
        (State.RUNNING, State.BLOCKED): frozenset({_P}),
        (State.RUNNING, State.FAILED): frozenset({_P}),
        (State.RUNNING, State.NEEDS_REVISION): frozenset({_P}),
        (State.CLAIMED_COMPLETE, State.VERIFIED_COMPLETE): frozenset({_V}),
        (State.CLAIMED_COMPLETE, State.NEEDS_REVISION): frozenset({_V}),
        (State.CLAIMED_COMPLETE, State.STOPPED): frozenset({_C}),
        (State.VERIFIED_COMPLETE, State.COMPLETE): frozenset({_C}),
        (State.STOPPED, State.RUNNING): frozenset({_C}),
        (State.BLOCKED, State.RUNNING): frozenset({_C}),
        (State.NEEDS_REVISION, State.RUNNING): frozenset({_C}),
    }
)

TERMINAL: frozenset[State] = frozenset({State.COMPLETE, State.FAILED})

# DESIGN §5: a task file may start a task as created (the default), running or stopped.
INITIAL_STATES: frozenset[State] = frozenset({State.CREATED, State.RUNNING, State.STOPPED})

BUDGET_REASON = "budget"

#: The reason of the runtime's stop when one error of the agent happens a third time
#: (SPEC-v5.0 Part IV STEP-4, SESSION_TERMINATION). Chosen over `failed`: the task is not
#: shown to be impossible, the agent is; a stopped task can be resumed (`ilh run --resume`)
#: by a person who decides so, under the GENEs the session persisted. Named after §3's
#: class for it, repeated_pattern. Fail closed: it is a runtime commit from `running` only
#: (the §4 table has no other edge for it), and a reply that reaches the third occurrence
#: has none of its proposals applied (`harness.run.orchestrator`).
REPEATED_ERROR_REASON = "repeated_pattern"


def is_budget_reason(reason: str | None) -> bool:
    """Any reason that names the budget: `budget` in any letter case, and compounds such as
    `budget_exhausted` or `low_budget`. Fail closed (v4.0 §7 budget_pressure_completion⇒
    forbidden): a completion whose stated reason is the budget is budget pressure."""
    return reason is not None and BUDGET_REASON in reason.strip().lower()


def illegal_because(
    src: State, dst: State, authority: Authority, reason: str | None = None
) -> str | None:
    """Why `authority` may not move the task from `src` to `dst`; None when it may."""
    if dst not in WRITER_STATES[authority]:
        return f"authority:{authority} may not write state:{dst}"
    if is_budget_reason(reason) and dst is not State.STOPPED:
        return f"reason:budget can only produce stopped, never {dst}"
    if src in TERMINAL:
        return f"{src} is terminal"
    writers = EDGES.get((src, dst))
    if writers is None:
        return f"no transition {src} → {dst} in the spec §4 state machine"
    if authority not in writers:
        allowed = ", ".join(sorted(writers))
        return f"{src} → {dst} is written by authority:{allowed}, not authority:{authority}"
    if (src, dst) == (State.CLAIMED_COMPLETE, State.STOPPED) and not is_budget_reason(reason):
        return "a pending completion claim is only interrupted by a budget stop"
    return None


def is_legal(src: State, dst: State, authority: Authority, reason: str | None = None) -> bool:
    """True when `authority` may move the task from `src` to `dst` with `reason`."""
    return illegal_because(src, dst, authority, reason) is None
