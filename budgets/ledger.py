"""The budget ledger (SPEC-v4.0-FINAL §2, DESIGN §4/§6/§7): what the runtime has spent.

One account per budget kind present (rounds, tokens, time). The runtime charges usage
here, checks `exhausted()` before every model call, and renders the `::BUDGET` lines it
injects each round. The ledger is the only source of `used`; a model's text never
changes it.

Accounting:

* `used` counts everything spent, by anyone (agent work, grader audit, summary).
* The reserves are pools set aside inside the limit. What an audit (or summary) spends
  is charged to `used` and drawn from its pool at the same time, so the pool shown in
  the next `::BUDGET` line is what is left of it; `remaining` (limit − used −
  reserve_audit − reserve_summary) then stays the room of the agent's own work, and only
  spending beyond a pool cuts into it. `remaining` may be negative.
* Time is wall-clock time measured by an injectable `clock` (default
  `time.monotonic`) from the ledger's creation, plus what `charge_time` adds (time the
  clock cannot see, e.g. in tests with a frozen clock). Time spent in an audit is moved
  out of the audit pool with `audit_span()` (or `charge_time(..., pool=AUDIT)`).
  Rendered time is rounded UP to the millisecond, so a snapshot never under-states use.

Ids: the budgets present are numbered b1, b2, … in the fixed order rounds, tokens, time
(the order of the task file's `[budget.*]` tables), so the same task always gets the
same ids.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict

from envelopes.declarations.budget import Amount, Budget, BudgetKind

RUNTIME = "@RUNTIME"
KIND_ORDER: tuple[BudgetKind, ...] = (BudgetKind.ROUNDS, BudgetKind.TOKENS, BudgetKind.TIME)

Clock = Callable[[], float]


class Pool(StrEnum):
    """Whose spending a charge is: the agent's work, or one of the two reserves."""

    WORK = "work"
    AUDIT = "audit"
    SUMMARY = "summary"


class BudgetRow(BaseModel):
    """One row of DESIGN §6 `budgets`: JSON output, so it does carry `remaining`."""

    model_config = ConfigDict(frozen=True)

    id: str
    kind: BudgetKind
    limit: Amount
    used: Amount
    reserve_audit: Amount
    reserve_summary: Amount
    remaining: Amount
    line: str


class _Account(BaseModel):
    """Mutable spend of one budget kind."""

    model_config = ConfigDict(validate_assignment=True)

    id: str
    start: Budget
    charged: float = 0.0
    audit_spent: float = 0.0
    summary_spent: float = 0.0


def _ceil_ms(seconds: float) -> float:
    return math.ceil(seconds * 1000 - 1e-9) / 1000


class BudgetLedger:
    """Runtime-owned budgets: charge, check, render, report."""

    def __init__(
        self,
        budgets: Iterable[Budget],
        *,
        clock: Clock = time.monotonic,
        scope: str = "@TASK",
    ) -> None:
        """Start accounts from `budgets` (at most one per kind).

        Only kind, limit, used and the two reserves are read from each budget; id,
        authority and asof are the ledger's to set, and scope is `scope`.
        """
        by_kind: dict[BudgetKind, Budget] = {}
        for budget in budgets:
            if budget.kind in by_kind:
                raise ValueError(f"two {budget.kind} budgets for one task")
            by_kind[budget.kind] = budget
        self._clock = clock
        self._started = clock()
        self._scope = scope
        self._accounts: dict[BudgetKind, _Account] = {}
        for kind in KIND_ORDER:
            if kind in by_kind:
                number = len(self._accounts) + 1
                self._accounts[kind] = _Account(id=f"b{number}", start=by_kind[kind])
        # A round reads every budget several times (the check before the call, the
        # ::BUDGET lines, the overrun check, the snapshot event, the result) with nothing
        # charged in between. A Budget (frozen) and its row are a function of the
        # account's constants and `_SnapshotKey`: each is built and validated once per
        # key, not once per read.
        self._built: dict[BudgetKind, dict[_SnapshotKey, _Built]] = {}

    # --- charging ---------------------------------------------------------------------

    def charge_round(self) -> None:
        """One more round of agent work."""
        self._charge(BudgetKind.ROUNDS, 1, Pool.WORK)

    def charge_tokens(
        self, input_tokens: int, output_tokens: int, *, pool: Pool = Pool.WORK
    ) -> None:
        """A model call's usage as the provider reported it (or as estimated)."""
        if input_tokens < 0 or output_tokens < 0:
            raise ValueError("token counts cannot be negative")
        self._charge(BudgetKind.TOKENS, input_tokens + output_tokens, pool)

    def charge_audit(self, input_tokens: int, output_tokens: int) -> None:
        """A grader call's tokens, drawn on reserve_audit first."""
        self.charge_tokens(input_tokens, output_tokens, pool=Pool.AUDIT)

    def charge_summary(self, input_tokens: int, output_tokens: int) -> None:
        """A summary call's tokens, drawn on reserve_summary first."""
        self.charge_tokens(input_tokens, output_tokens, pool=Pool.SUMMARY)

    def charge_time(self, seconds: float, *, pool: Pool = Pool.WORK) -> None:
        """Time the clock did not measure. With `pool` AUDIT/SUMMARY it is drawn on that
        reserve first."""
        if not math.isfinite(seconds) or seconds < 0:
            raise ValueError("seconds must be a finite, non-negative number")
        self._charge(BudgetKind.TIME, seconds, pool)

    @contextmanager
    def audit_span(self) -> Iterator[None]:
        """Measure a grader call's wall time and draw it from the time reserve_audit.

        The clock already counts the time into `used`; this only moves it out of the
        pool, so audit time within the reserve does not shrink the agent's remaining.
        """
        began = self._clock()
        try:
            yield
        finally:
            spent = max(0.0, self._clock() - began)
            account = self._accounts.get(BudgetKind.TIME)
            if account is not None:
                account.audit_spent += spent

    def _charge(self, kind: BudgetKind, amount: float, pool: Pool) -> None:
        account = self._accounts.get(kind)
        if account is None:
            return
        account.charged += amount
        if pool is Pool.AUDIT:
            account.audit_spent += amount
        elif pool is Pool.SUMMARY:
            account.summary_spent += amount

    # --- reading ----------------------------------------------------------------------

    @property
    def kinds(self) -> tuple[BudgetKind, ...]:
        return tuple(self._accounts)

    def budget(self, kind: BudgetKind, round_n: int | None = None) -> Budget | None:
        """The current state of one budget, as the runtime would render it."""
        account = self._accounts.get(kind)
        return None if account is None else self._snapshot(account, round_n)

    def budgets(self, round_n: int | None = None) -> list[Budget]:
        """Every budget's current state, in id order."""
        return [self._snapshot(account, round_n) for account in self._accounts.values()]

    def exhausted(self) -> list[Budget]:
        """The budgets whose remaining is ≤ 0. Check this BEFORE every model call of the
        agent: any entry means commit `stopped|reason:budget` and call nothing."""
        return self._where(lambda remaining: remaining <= 0)

    def overrun(self) -> list[Budget]:
        """The budgets whose remaining is < 0: spent past their limit (a reply may overrun
        by the estimate error of one call)."""
        return self._where(lambda remaining: remaining < 0)

    def _where(self, chosen: Callable[[float], bool]) -> list[Budget]:
        # Decided on the amounts (`Budget.remaining`'s arithmetic on the same numbers);
        # a Budget is made only for a chosen one.
        return [
            self._snapshot(account, None)
            for account in self._accounts.values()
            if chosen(self._remaining(account))
        ]

    def _remaining(self, account: _Account) -> float:
        used, reserve_audit, reserve_summary = self._amounts(account)
        return account.start.limit - used - reserve_audit - reserve_summary

    def room(self, kind: BudgetKind, pool: Pool = Pool.WORK) -> Amount | None:
        """What `pool` may still spend of `kind` (None when there is no such budget).

        The agent's work has `remaining`; an audit also has what is left of
        reserve_audit, a summary what is left of reserve_summary. May be negative.
        """
        budget = self.budget(kind)
        if budget is None:
            return None
        if pool is Pool.AUDIT:
            return budget.remaining + budget.reserve_audit
        if pool is Pool.SUMMARY:
            return budget.remaining + budget.reserve_summary
        return budget.remaining

    def render_lines(self, round_n: int) -> list[str]:
        """The runtime's `::BUDGET{…|authority:@RUNTIME|asof:round_N}` lines. They never
        hold a `remaining` field (§2): the Budget model cannot render one."""
        return [budget.render() for budget in self.budgets(round_n)]

    def snapshot(self, round_n: int) -> list[BudgetRow]:
        """DESIGN §6 `budgets` rows (time in seconds), each with its rendered line."""
        return [self._built_now(account, round_n).row() for account in self._accounts.values()]

    def rows_json(self, round_n: int) -> list[dict[str, Any]]:
        # A copy of each (flat) row: the caller puts it in a record payload or a result.
        return [
            dict(self._built_now(account, round_n).row_json())
            for account in self._accounts.values()
        ]

    def _snapshot(self, account: _Account, round_n: int | None) -> Budget:
        return self._built_now(account, round_n).budget

    def _amounts(self, account: _Account) -> tuple[float, float, float]:
        """used and the two reserves left, as a snapshot shows them now."""
        start = account.start
        used: float = start.used + account.charged
        reserve_audit = max(0.0, start.reserve_audit - account.audit_spent)
        reserve_summary = max(0.0, start.reserve_summary - account.summary_spent)
        if start.kind is BudgetKind.TIME:
            used = _ceil_ms(used + max(0.0, self._clock() - self._started))
            reserve_audit = _ceil_ms(reserve_audit) if reserve_audit else 0.0
            reserve_summary = _ceil_ms(reserve_summary) if reserve_summary else 0.0
        return used, reserve_audit, reserve_summary

    def _built_now(self, account: _Account, round_n: int | None) -> _Built:
        start = account.start
        used, reserve_audit, reserve_summary = self._amounts(account)
        key: _SnapshotKey = (used, reserve_audit, reserve_summary, round_n)
        built = self._built.setdefault(start.kind, {})
        found = built.get(key)
        if found is None:
            if len(built) >= _MAX_BUILT:  # a time budget's key changes every millisecond
                built.clear()
            found = built[key] = _Built(
                Budget(
                    id=account.id,
                    scope=self._scope,
                    kind=start.kind,
                    limit=start.limit,
                    used=used,
                    reserve_audit=reserve_audit,
                    reserve_summary=reserve_summary,
                    authority=RUNTIME,
                    asof=round_n,
                )
            )
        return found


#: What a budget's snapshot depends on besides its account's constants (id, kind, limit,
#: the ledger's scope): used, the two reserves left, the round it is as of. Numbers that
#: compare equal give equal Budgets (the model makes token and round amounts ints, time
#: amounts floats), so 912 and 912.0 may share an entry.
_SnapshotKey = tuple[float, float, float, int | None]
_MAX_BUILT = 16


class _Built:
    """One snapshot of a budget, its §6 row and that row's JSON, each made when first
    asked for."""

    __slots__ = ("_json", "_row", "budget")

    def __init__(self, budget: Budget) -> None:
        self.budget = budget
        self._row: BudgetRow | None = None
        self._json: dict[str, Any] | None = None

    def row(self) -> BudgetRow:
        if self._row is None:
            budget = self.budget
            self._row = BudgetRow(
                id=budget.id or "",
                kind=budget.kind,
                limit=budget.limit,
                used=budget.used,
                reserve_audit=budget.reserve_audit,
                reserve_summary=budget.reserve_summary,
                remaining=budget.remaining,
                line=budget.render(),
            )
        return self._row

    def row_json(self) -> dict[str, Any]:
        if self._json is None:
            self._json = self.row().model_dump(mode="json")
        return self._json
