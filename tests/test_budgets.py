"""The budget ledger, the clamp and the token estimate."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from budgets import (
    BudgetLedger,
    Pool,
    clamp,
    estimate_messages,
    estimate_text_tokens,
    estimate_tokens,
)
from envelopes.declarations import Budget, BudgetKind


@dataclass
class FakeClock:
    now: float = 1000.0

    def __call__(self) -> float:
        return self.now


def make_ledger(clock: FakeClock | None = None) -> BudgetLedger:
    return BudgetLedger(
        [
            Budget(kind=BudgetKind.TIME, limit=300),
            Budget(
                kind=BudgetKind.TOKENS,
                limit=8000,
                used=2400,
                reserve_audit=500,
                reserve_summary=300,
            ),
            Budget(kind=BudgetKind.ROUNDS, limit=5),
        ],
        clock=clock or FakeClock(),
    )


def test_ids_follow_the_fixed_kind_order() -> None:
    ledger = make_ledger()
    assert [(b.id, b.kind) for b in ledger.budgets()] == [
        ("b1", BudgetKind.ROUNDS),
        ("b2", BudgetKind.TOKENS),
        ("b3", BudgetKind.TIME),
    ]
    only_tokens = BudgetLedger([Budget(kind=BudgetKind.TOKENS, limit=10, id="zz")])
    assert [b.id for b in only_tokens.budgets()] == ["b1"]
    with pytest.raises(ValueError):
        BudgetLedger([Budget(kind=BudgetKind.ROUNDS, limit=1)] * 2)


def test_render_lines_are_runtime_budgets_without_remaining() -> None:
    clock = FakeClock()
    ledger = make_ledger(clock)
    ledger.charge_round()
    ledger.charge_tokens(1000, 200)
    clock.now += 12.5
    assert ledger.render_lines(3) == [
        "::BUDGET{id:b1|scope:@TASK|kind:rounds|limit:5|used:1|authority:@RUNTIME|asof:round_3}",
        "::BUDGET{id:b2|scope:@TASK|kind:tokens|limit:8000|used:3600|reserve_audit:500|"
        "reserve_summary:300|authority:@RUNTIME|asof:round_3}",
        "::BUDGET{id:b3|scope:@TASK|kind:time|limit:300s|used:12.5s|authority:@RUNTIME|"
        "asof:round_3}",
    ]
    for line in ledger.render_lines(3):
        assert "remaining" not in line
        assert Budget.parse(line).authority == "@RUNTIME"


def test_snapshot_rows_carry_remaining_as_json() -> None:
    ledger = make_ledger()
    rows = ledger.rows_json(0)
    assert rows[1] == {
        "id": "b2",
        "kind": "tokens",
        "limit": 8000,
        "used": 2400,
        "reserve_audit": 500,
        "reserve_summary": 300,
        "remaining": 4800,
        "line": ledger.render_lines(0)[1],
    }
    assert rows[2]["limit"] == 300.0 and rows[2]["remaining"] == 300.0


def fresh_rows(ledger: BudgetLedger, round_n: int) -> list[dict[str, object]]:
    """What `rows_json` must equal: the rows built from scratch from the budgets."""
    return [
        {
            "id": b.id,
            "kind": str(b.kind),
            "limit": b.limit,
            "used": b.used,
            "reserve_audit": b.reserve_audit,
            "reserve_summary": b.reserve_summary,
            "remaining": b.remaining,
            "line": b.render(),
        }
        for b in (Budget.model_validate(x.model_dump()) for x in ledger.budgets(round_n))
    ]


def test_snapshots_built_once_per_state_follow_every_charge_round_and_tick() -> None:
    """Snapshots are reused while nothing changes (`BudgetLedger._built`); a charge of
    any kind or pool, the time clock and the round each give a new one."""
    clock = FakeClock()
    ledger = make_ledger(clock)
    first = ledger.budgets(1)
    assert ledger.budgets(1) == first and ledger.budgets(1)[0] is first[0]  # reused
    assert [b.asof for b in ledger.budgets(2)] == [2, 2, 2]
    assert [b.asof for b in ledger.budgets()] == [None, None, None]
    steps: list[Callable[[], None]] = [
        ledger.charge_round,
        lambda: ledger.charge_tokens(10, 5),
        lambda: ledger.charge_audit(100, 0),
        lambda: ledger.charge_summary(50, 0),
        lambda: ledger.charge_time(1.5),
        lambda: ledger.charge_time(2.0, pool=Pool.AUDIT),
        lambda: setattr(clock, "now", clock.now + 0.25),
    ]
    seen = [ledger.render_lines(1)]
    for step in steps:
        before = ledger.rows_json(1)
        step()
        after = ledger.rows_json(1)
        assert after != before, step
        assert after == fresh_rows(ledger, 1)
        seen.append(ledger.render_lines(1))
    assert len({tuple(lines) for lines in seen}) == len(seen)
    assert ledger.budgets(1)[0].used == 1 and ledger.budgets(1)[1].used == 2400 + 15 + 150


def test_rows_are_copies_the_caller_may_change() -> None:
    ledger = make_ledger()
    rows = ledger.rows_json(0)
    rows[0]["used"] = 99
    rows[0]["line"] = "changed"
    assert ledger.rows_json(0) == fresh_rows(ledger, 0)
    assert ledger.snapshot(0)[0].used == 0


def test_rounds_exhaust_after_the_limit_is_spent() -> None:
    ledger = BudgetLedger([Budget(kind=BudgetKind.ROUNDS, limit=2)])
    calls = 0
    while not ledger.exhausted():
        ledger.charge_round()
        calls += 1
    assert calls == 2
    (spent,) = ledger.exhausted()
    assert spent.kind is BudgetKind.ROUNDS and spent.remaining == 0


def test_already_exhausted_budget_is_reported_before_any_call() -> None:
    ledger = BudgetLedger([Budget(kind=BudgetKind.TOKENS, limit=100, used=100)])
    assert [b.id for b in ledger.exhausted()] == ["b1"]


def test_time_is_measured_by_the_clock_and_rounded_up() -> None:
    clock = FakeClock()
    ledger = BudgetLedger([Budget(kind=BudgetKind.TIME, limit=10, used=1)], clock=clock)
    clock.now += 0.0001
    budget = ledger.budget(BudgetKind.TIME)
    assert budget is not None and budget.used == 1.001
    clock.now += 9
    ledger.charge_time(0.5)
    assert [b.kind for b in ledger.exhausted()] == [BudgetKind.TIME]
    remaining = ledger.room(BudgetKind.TIME)
    assert remaining is not None and remaining < 0


def test_audit_draws_on_its_reserve_first() -> None:
    ledger = BudgetLedger(
        [Budget(kind=BudgetKind.TOKENS, limit=1000, reserve_audit=200, reserve_summary=100)]
    )
    ledger.charge_tokens(600, 100)
    assert ledger.room(BudgetKind.TOKENS) == 0
    assert ledger.exhausted() != []
    assert ledger.room(BudgetKind.TOKENS, Pool.AUDIT) == 200
    ledger.charge_audit(120, 30)
    budget = ledger.budget(BudgetKind.TOKENS)
    assert budget is not None
    assert (budget.used, budget.reserve_audit, budget.remaining) == (850, 50, 0)
    ledger.charge_audit(80, 0)  # 30 beyond the pool: it comes out of remaining
    budget = ledger.budget(BudgetKind.TOKENS)
    assert budget is not None
    assert (budget.used, budget.reserve_audit, budget.remaining) == (930, 0, -30)
    ledger.charge_summary(50, 0)
    budget = ledger.budget(BudgetKind.TOKENS)
    assert budget is not None and (budget.reserve_summary, budget.remaining) == (50, -30)


def test_audit_span_moves_grader_time_out_of_the_reserve() -> None:
    clock = FakeClock()
    ledger = BudgetLedger([Budget(kind=BudgetKind.TIME, limit=100, reserve_audit=20)], clock=clock)
    clock.now += 80
    with ledger.audit_span():
        clock.now += 15
    budget = ledger.budget(BudgetKind.TIME)
    assert budget is not None
    assert (budget.used, budget.reserve_audit, budget.remaining) == (95.0, 5.0, 0.0)


def test_a_ledger_without_a_kind_ignores_its_charges() -> None:
    ledger = BudgetLedger([])
    ledger.charge_round()
    ledger.charge_tokens(10, 10)
    ledger.charge_time(3)
    assert ledger.budgets() == [] and ledger.exhausted() == [] and ledger.render_lines(1) == []
    result = clamp(ledger, 4096, 10_000)
    assert (result.max_output, result.fits, result.token_room, result.time_left) == (
        4096,
        True,
        None,
        None,
    )


@pytest.mark.parametrize(
    "bad",
    [
        lambda led: led.charge_tokens(-1, 0),
        lambda led: led.charge_time(-1.0),
        lambda led: led.charge_time(math.inf),
        lambda led: clamp(led, -1, 0),
    ],
)
def test_negative_charges_are_refused(bad: Callable[[BudgetLedger], object]) -> None:
    ledger = make_ledger()
    with pytest.raises(ValueError):
        bad(ledger)


def test_clamp_caps_output_to_the_room_and_reports_time() -> None:
    clock = FakeClock()
    ledger = make_ledger(clock)  # token remaining 4800, time 300 s
    clock.now += 100
    result = clamp(ledger, 4096, 1000)
    assert (result.max_output, result.fits, result.token_room) == (3800, True, 4800)
    assert result.time_left == 200.0
    assert clamp(ledger, 1000, 1000).max_output == 1000
    starved = clamp(ledger, 4096, 4790)
    assert (starved.max_output, starved.fits) == (10, False)
    assert starved.reason is not None and "no useful output" in starved.reason
    assert clamp(ledger, 8, 4790).fits  # asked for little, got all of it
    over = clamp(ledger, 4096, 9000)
    assert (over.max_output, over.fits) == (0, False)
    audit = clamp(ledger, 4096, 4790, pool=Pool.AUDIT)
    assert (audit.max_output, audit.fits) == (510, True)
    clock.now += 500
    late = clamp(ledger, 100, 10)
    assert (late.fits, late.time_left) == (False, 0.0)
    assert late.reason == "no time left"


def test_estimate_errs_high_but_stays_small() -> None:
    assert estimate_text_tokens("") == 0
    assert estimate_tokens("") == 4
    assert estimate_text_tokens("abc") == 1 and estimate_text_tokens("abcd") == 2
    assert estimate_text_tokens("中文") == 4
    assert estimate_text_tokens("é") == 1 and estimate_text_tokens("🙂") == 3
    assert estimate_messages(["abc", "def"]) == 2 * (1 + 4) + 3
    # a 2,000-byte English prompt is estimated near 667 tokens, not thousands
    assert 600 < estimate_tokens("word " * 400) < 700


# --- properties ---------------------------------------------------------------------------

counts = st.integers(min_value=0, max_value=10**6)
seconds = st.floats(min_value=0, max_value=10**4, allow_nan=False)


@st.composite
def ledgers(draw: st.DrawFn) -> tuple[BudgetLedger, FakeClock]:
    clock = FakeClock()
    budgets = []
    for kind in draw(st.sets(st.sampled_from(BudgetKind))):
        amount: st.SearchStrategy[int] | st.SearchStrategy[float] = (
            seconds if kind is BudgetKind.TIME else counts
        )
        budgets.append(
            Budget(
                kind=kind,
                limit=draw(amount),
                used=draw(amount),
                reserve_audit=draw(amount),
                reserve_summary=draw(amount),
            )
        )
    ledger = BudgetLedger(budgets, clock=clock)
    pools = st.sampled_from(Pool)
    for op in draw(st.lists(st.integers(0, 4), max_size=12)):
        if op == 0:
            ledger.charge_round()
        elif op == 1:
            ledger.charge_tokens(draw(counts), draw(counts), pool=draw(pools))
        elif op == 2:
            ledger.charge_time(draw(seconds), pool=draw(pools))
        elif op == 3:
            clock.now += draw(seconds)
        else:
            with ledger.audit_span():
                clock.now += draw(seconds)
    return ledger, clock


@settings(max_examples=300)
@given(ledgers(), st.integers(min_value=0, max_value=10**6))
def test_remaining_is_the_formula_and_never_rendered(
    state: tuple[BudgetLedger, FakeClock], round_n: int
) -> None:
    ledger, _ = state
    budgets = ledger.budgets(round_n)
    for budget, row, line in zip(
        budgets, ledger.snapshot(round_n), ledger.render_lines(round_n), strict=True
    ):
        formula = budget.limit - budget.used - budget.reserve_audit - budget.reserve_summary
        assert budget.remaining == formula == row.remaining
        assert budget.exhausted == (formula <= 0)
        assert "remaining" not in line and line == row.line
        assert Budget.parse(line) == budget
        assert budget.authority == "@RUNTIME" and budget.asof == round_n
    assert ledger.exhausted() == [
        b.model_copy(update={"asof": None}) for b in budgets if b.exhausted
    ]


@settings(max_examples=300)
@given(
    ledgers(),
    st.integers(0, 10**6),
    st.integers(0, 10**6),
    st.sampled_from(Pool),
    st.integers(0, 64),
)
def test_a_clamped_call_never_overruns(
    state: tuple[BudgetLedger, FakeClock],
    requested: int,
    estimated_input: int,
    pool: Pool,
    min_useful: int,
) -> None:
    ledger, _ = state
    before = ledger.room(BudgetKind.TOKENS, pool)
    result = clamp(ledger, requested, estimated_input, pool=pool, min_useful_output=min_useful)
    assert 0 <= result.max_output <= requested
    if result.fits and before is not None:
        assert result.max_output >= 1
        # the worst case the clamp allows: the whole estimated input, the whole output
        ledger.charge_tokens(estimated_input, result.max_output, pool=pool)
        after = ledger.room(BudgetKind.TOKENS, pool)
        assert after is not None and after >= 0
    if before is not None and before - estimated_input < max(1, min(min_useful, requested)):
        assert not result.fits


@given(st.text(), st.text())
def test_estimate_is_subadditive_and_above_four_bytes_per_token(a: str, b: str) -> None:
    assert estimate_text_tokens(a + b) <= estimate_text_tokens(a) + estimate_text_tokens(b)
    assert estimate_text_tokens(a) >= math.ceil(len(a.encode("utf-8")) / 4)
    assert estimate_tokens(a) == estimate_text_tokens(a) + 4


@settings(max_examples=200, deadline=None)
@given(
    charges=st.lists(
        st.tuples(
            st.sampled_from(["round", "tokens", "audit", "summary", "time", "tick"]),
            st.integers(min_value=0, max_value=5000),
        ),
        max_size=12,
    )
)
def test_exhausted_and_overrun_are_decided_as_the_budgets_would(
    charges: list[tuple[str, int]],
) -> None:
    """`exhausted()` and `overrun()` decide on the amounts, without a Budget each: the
    same budgets as `remaining <= 0` and `< 0` of the snapshots, after any charges."""
    clock = FakeClock()
    ledger = make_ledger(clock)
    for what, amount in charges:
        if what == "round":
            ledger.charge_round()
        elif what == "tokens":
            ledger.charge_tokens(amount, 0)
        elif what == "audit":
            ledger.charge_audit(amount, 0)
        elif what == "summary":
            ledger.charge_summary(amount, 0)
        elif what == "time":
            ledger.charge_time(amount / 37)
        else:
            clock.now += amount / 13
        budgets = ledger.budgets()
        assert ledger.exhausted() == [b for b in budgets if b.remaining <= 0]
        assert ledger.overrun() == [b for b in budgets if b.remaining < 0]
