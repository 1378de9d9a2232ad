"""How large a model call may be so that it cannot overrun the budget (DESIGN §4, §7).

`clamp` tells a model client the largest output it may request: the pool's token room
less the estimated input, never more than requested, never below 0; and the time left,
for the call's timeout. If the caller's real input is no larger than its estimate (use
`budgets.estimate`, which errs high) and the provider honours the output cap, then
charging the call leaves the pool's room ≥ 0: a budget is overrun by at most the
estimate error of one call.

Rounds are not clamped here: a round is charged whole, and `BudgetLedger.exhausted()`
checked before the call decides whether it may start.
"""

from __future__ import annotations

import math

from pydantic import BaseModel, ConfigDict

from budgets.ledger import BudgetLedger, Pool
from envelopes.declarations.budget import BudgetKind

MIN_USEFUL_OUTPUT = 16
"""Fewer output tokens than this cannot carry a tool call or a status line."""


class Clamp(BaseModel):
    """What a model call may use."""

    model_config = ConfigDict(frozen=True)

    max_output: int
    """Output tokens to request (0 when nothing fits)."""
    fits: bool
    """False when no useful output fits in the tokens or no time is left: do not call."""
    token_room: int | None
    """Tokens the pool may still spend before this call (None: no token budget)."""
    time_left: float | None
    """Seconds the pool may still spend (None: no time budget); use as the timeout."""
    reason: str | None = None


def clamp(
    ledger: BudgetLedger,
    requested_max_output: int,
    estimated_input: int,
    *,
    pool: Pool = Pool.WORK,
    min_useful_output: int = MIN_USEFUL_OUTPUT,
) -> Clamp:
    """Clamp one call of `pool` (the agent's work by default; AUDIT for a grader)."""
    if requested_max_output < 0 or estimated_input < 0:
        raise ValueError("token counts cannot be negative")
    reasons: list[str] = []
    tokens = ledger.room(BudgetKind.TOKENS, pool)
    token_room = None if tokens is None else math.floor(tokens)
    max_output = requested_max_output
    if token_room is not None:
        max_output = max(0, min(requested_max_output, token_room - estimated_input))
    # A caller asking for fewer tokens than the useful minimum gets what it asked for.
    needed = max(1, min(min_useful_output, requested_max_output))
    if max_output < needed:
        reasons.append(
            f"no useful output fits: {max_output} token(s) left after an estimated "
            f"input of {estimated_input}"
        )
    seconds = ledger.room(BudgetKind.TIME, pool)
    time_left = None if seconds is None else max(0.0, float(seconds))
    if time_left is not None and time_left <= 0:
        reasons.append("no time left")
    return Clamp(
        max_output=max_output,
        fits=not reasons,
        token_room=token_room,
        time_left=time_left,
        reason="; ".join(reasons) or None,
    )
