"""Upper bounds of the budgets a user gives (a task file's `[budget]`, `ilh certify`'s
`--refuter-*`): one place, so the two refuse the same numbers."""

from __future__ import annotations

#: Upper bounds of the budgets. A round is at least one model call, so a million rounds is
#: months of calls; a trillion tokens is a million rounds of a million-token context. Both
#: stay below 2^53, where the ledger's float arithmetic and a JSON reader's numbers are
#: still exact (10^23 rounds was taken and shown as 1e+23, and a limit past 2^63 cannot be
#: stored as an SQLite integer). A year of time: no run is meant to last longer, and the
#: ledger counts time in milliseconds, which a float holds exactly far beyond it.
MAX_ROUNDS = 1_000_000
MAX_TOKENS = 1_000_000_000_000
MAX_TIME_SECONDS = 366 * 24 * 3600
