"""Budget ledger: tokens, time and rounds; reserves; clamp; rendering (DESIGN §4).

Depends on `envelopes` only.
"""

from __future__ import annotations

from budgets.clamp import MIN_USEFUL_OUTPUT, Clamp, clamp
from budgets.estimate import estimate_messages, estimate_text_tokens, estimate_tokens
from budgets.ledger import KIND_ORDER, BudgetLedger, BudgetRow, Pool

__all__ = [
    "KIND_ORDER",
    "MIN_USEFUL_OUTPUT",
    "BudgetLedger",
    "BudgetRow",
    "Clamp",
    "Pool",
    "clamp",
    "estimate_messages",
    "estimate_text_tokens",
    "estimate_tokens",
]
