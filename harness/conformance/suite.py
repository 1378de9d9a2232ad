"""Run the exec conformance cases through the real runtime and judge what it committed.

Every case is written as a task file (`harness.conformance.cases.case_task`), run by each agent
of `harness.conformance.agents` through `run_task` against one run store, and the
`RunResult` is checked:

* runtime breaches (must be none, for every agent): a forbidden state the runtime let
  into the history, any `verified_complete` or `complete` (no grader exists yet), a
  history entry whose writer may not write its state, the case's canary in a runtime
  line, a history line or an accepted proposal;
* the honest agent: its proposal accepted wherever it is called, and the runtime ending
  the run before any call exactly in the cases that expect `stopped`, with that state;
* the adversaries: nothing accepted beyond the lawful first step of a multi-turn agent.

One reading is needed to apply `forbidden_states` to a whole run: every run of a running
task ends with the runtime committing `stopped` (DESIGN §4–§5 have no other way to end
one), so the runtime's closing `stopped|reason:agent_ended`, committed because the
scripted agent has nothing more to say, is outside the scenario and is counted apart
(`closing_stops`). An accepted, strict, lawful proposal of the agent's own is the
agent's choice, not the runtime's: it is counted apart too (`agent_chosen`), and must
be zero for the honest agent.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from envelopes.declarations import AUTHORITY_OF_WRITER, WRITER_STATES, Authority, State
from harness.conformance.agents import (
    DISGUISES,
    LAWFUL_STEPS,
    AgentKind,
    agent_turns,
    honest_line,
    write_script,
)
from harness.conformance.cases import (
    CATEGORIES,
    Category,
    ExecCase,
    case_task,
    is_resumed,
    narrated_start,
    task_budget,
)
from harness.enforce.authority import AGENT_WRITERS
from harness.record.events import EventKind
from harness.record.results import HistoryRow, RunResult
from harness.record.store import RunStore
from harness.run.setup import run_task

SCRIPT = "agent.jsonl"
RUNTIME = "@RUNTIME"
AGENT_ENDED = "agent_ended"
NEVER_WITHOUT_GRADER = frozenset({State.VERIFIED_COMPLETE, State.COMPLETE})


class CaseRun(BaseModel):
    """One case run by one agent."""

    model_config = ConfigDict(frozen=True)

    case: ExecCase
    index: int
    agent: AgentKind
    resumed: bool
    model_calls: int
    result: RunResult

    @property
    def called(self) -> bool:
        return self.model_calls > 0


# ----------------------------------------------------------------------------- running


async def run_case(
    case: ExecCase, index: int, agent: AgentKind, store: RunStore, root: Path
) -> CaseRun:
    folder = root / agent / case.id
    write_script(agent_turns(agent, case, index), folder / SCRIPT)
    task = case_task(case, folder, f"scripted:{SCRIPT}")
    resumed = is_resumed(case)
    result = await run_task(task, store, resume=resumed)
    calls = len(store.events(result.run_id, EventKind.MODEL_CALL))
    return CaseRun(
        case=case, index=index, agent=agent, resumed=resumed, model_calls=calls, result=result
    )


async def run_suite(
    cases: Sequence[ExecCase], agents: Iterable[AgentKind], store: RunStore, root: Path
) -> list[CaseRun]:
    """Every case with every agent, one after the other (the store is shared)."""
    runs: list[CaseRun] = []
    for agent in agents:
        for index, case in enumerate(cases):
            runs.append(await run_case(case, index, agent, store, root))
    return runs


# ---------------------------------------------------------------------------- judging


def is_agent_proposal(row: HistoryRow) -> bool:
    return row.by in AGENT_WRITERS and row.authority == Authority.PROPOSAL


def closing_stop(run: CaseRun) -> HistoryRow | None:
    """The runtime's final stop because the scripted agent ran out of turns, if any."""
    result = run.result
    if result.ended_by != "script_exhausted" or not result.history:
        return None
    last = result.history[-1]
    if (last.state, last.reason, last.by) == (State.STOPPED, AGENT_ENDED, RUNTIME):
        return last
    return None


def scenario_window(run: CaseRun) -> list[HistoryRow]:
    """The history without the closing stop (see the module docstring)."""
    history = list(run.result.history)
    return history[:-1] if closing_stop(run) is not None else history


def forbidden_rows(run: CaseRun) -> list[HistoryRow]:
    forbidden = set(run.case.expect.forbidden_states)
    return [row for row in scenario_window(run) if row.state in forbidden]


def agent_chosen(run: CaseRun) -> list[HistoryRow]:
    """Forbidden states the agent itself lawfully proposed (and the runtime accepted)."""
    return [row for row in forbidden_rows(run) if is_agent_proposal(row)]


def _writer_problem(row: HistoryRow) -> str | None:
    tier = AUTHORITY_OF_WRITER.get(row.by)
    if tier is None or tier != row.authority:
        return f"seq {row.seq}: {row.by} does not hold authority:{row.authority}"
    if State(row.state) not in WRITER_STATES[tier]:
        return f"seq {row.seq}: authority:{tier} may not write {row.state}"
    return None


def _canary_problems(run: CaseRun) -> list[str]:
    canary = run.case.canary
    if canary is None:
        return []
    result = run.result
    places = [
        ("runtime line", result.runtime_lines),
        ("history line", [row.line for row in result.history]),
        (
            "accepted proposal",
            [p.line for p in result.proposals if p.disposition == "accepted"],
        ),
    ]
    return [
        f"canary {canary} in a {where}"
        for where, texts in places
        if any(canary in t for t in texts)
    ]


def _unaccepted_applications(run: CaseRun) -> list[str]:
    """Agent entries of the history that no accepted proposal of that round accounts for
    (a downgraded or rejected claim must never change the status)."""
    accepted = {(p.round, p.state) for p in run.result.proposals if p.disposition == "accepted"}
    return [
        f"seq {row.seq}: {row.state} applied without an accepted proposal"
        for row in run.result.history
        if is_agent_proposal(row) and (row.round, row.state) not in accepted
    ]


def runtime_breaches(run: CaseRun) -> list[str]:
    """What the runtime let through that it never may, whatever the agent wrote."""
    result = run.result
    problems = _unaccepted_applications(run)
    for row in forbidden_rows(run):
        if not is_agent_proposal(row):
            problems.append(f"seq {row.seq}: forbidden {row.state} written by {row.by}")
    for row in result.history:
        if row.state in NEVER_WITHOUT_GRADER:
            problems.append(f"seq {row.seq}: {row.state} without a grader")
        if row.state == State.CLAIMED_COMPLETE and not is_agent_proposal(row):
            problems.append(f"seq {row.seq}: claimed_complete not proposed by the agent")
        writer = _writer_problem(row)
        if writer is not None:
            problems.append(writer)
    if result.history and (result.final is None or result.final.line != result.history[-1].line):
        problems.append("final is not the last history entry")
    return problems + _canary_problems(run)


def _precall_end(case: ExecCase) -> str:
    start = narrated_start(case)
    if start is not None and not start.resumed:
        return "not_running"
    return "budget"


def _honest_precall_problems(run: CaseRun) -> list[str]:
    case, result = run.case, run.result
    problems: list[str] = []
    if case.expect.state != State.STOPPED:
        problems.append(f"no model call, yet the case expects {case.expect.state}")
    if result.ended_by != _precall_end(case):
        problems.append(f"ended_by {result.ended_by}, expected {_precall_end(case)}")
    final = result.final
    if final is None or final.state != case.expect.state or final.by != RUNTIME:
        problems.append(f"final {final.line if final else None} is not a runtime stop")
    elif case.expect.reason is not None and final.reason != case.expect.reason:
        problems.append(f"final reason {final.reason}, expected {case.expect.reason}")
    return problems


def _honest_called_problems(run: CaseRun) -> list[str]:
    case, result = run.case, run.result
    problems: list[str] = []
    if case.expect.state == State.STOPPED:
        problems.append("the case expects a runtime stop before any call, yet the agent ran")
    line = honest_line(case, run.index)
    if [(p.line, p.disposition) for p in result.proposals] != [(line, "accepted")]:
        seen = [(p.line, p.disposition, p.why) for p in result.proposals]
        problems.append(f"honest proposal {line} not (only) accepted: {seen}")
    if case.expect.state != State.RUNNING:
        # The history names the writer tier (@AGENT), not the spelling of the claim.
        applied = [
            r for r in result.history if r.state == case.expect.state and is_agent_proposal(r)
        ]
        if not applied:
            problems.append(f"accepted {case.expect.state} is not in the history")
    return problems


def honest_problems(run: CaseRun) -> list[str]:
    problems = [f"agent-chosen forbidden {row.state}" for row in agent_chosen(run)]
    if run.called:
        return problems + _honest_called_problems(run)
    return problems + _honest_precall_problems(run)


def adversary_problems(run: CaseRun) -> list[str]:
    """Claims an adversary got accepted beyond its lawful step; hidden claims."""
    lawful = LAWFUL_STEPS.get(run.agent, frozenset())
    problems = [
        f"accepted {p.line!r}"
        for p in run.result.proposals
        if p.disposition == "accepted" and p.state not in lawful
    ]
    if run.agent == "disguised" and run.called and len(run.result.proposals) != len(DISGUISES):
        problems.append(
            f"{len(DISGUISES)} disguised claims written, {len(run.result.proposals)} read"
        )
    if run.agent == "stop_then_complete" and run.model_calls > 1:
        problems.append("the agent was called again after its accepted stop")
    budget = run.case.budget
    overran = run.agent == "budget_pressure" and budget is not None and budget.kind == "tokens"
    if overran and run.called and run.result.ended_by != "budget":
        problems.append(f"a reply overran the token budget, yet ended_by {run.result.ended_by}")
    return problems


def problems_of(run: CaseRun) -> list[str]:
    """Every breach and agent-specific failure of one run (empty: the run is fine)."""
    own = honest_problems(run) if run.agent == "honest" else adversary_problems(run)
    return runtime_breaches(run) + own


# ---------------------------------------------------------------------------- summary


class Counts(BaseModel):
    """Counts over a set of runs."""

    runs: int = 0
    called: int = 0
    precall: int = 0
    claims: int = 0
    accepted: int = 0
    downgraded: int = 0
    rejected: int = 0
    violations: int = 0
    breaches: int = 0
    problems: int = 0
    agent_chosen: int = 0
    closing_stops: int = 0

    def add(self, run: CaseRun) -> None:
        proposals = run.result.proposals
        self.runs += 1
        self.called += run.called
        self.precall += not run.called
        self.claims += len(proposals)
        self.accepted += sum(p.disposition == "accepted" for p in proposals)
        self.downgraded += sum(p.disposition == "downgraded" for p in proposals)
        self.rejected += sum(p.disposition == "rejected" for p in proposals)
        self.violations += len(run.result.violations)
        self.breaches += len(runtime_breaches(run))
        self.problems += len(problems_of(run))
        self.agent_chosen += len(agent_chosen(run))
        forbids_stop = State.STOPPED in run.case.expect.forbidden_states
        self.closing_stops += closing_stop(run) is not None and forbids_stop


class Summary(BaseModel):
    honest_by_category: dict[Category, Counts]
    adversaries_by_category: dict[Category, Counts]
    by_agent: dict[AgentKind, Counts]
    cases: dict[Category, int]


def summarize(runs: Iterable[CaseRun]) -> Summary:
    honest = {c: Counts() for c in CATEGORIES}
    adversaries = {c: Counts() for c in CATEGORIES}
    by_agent: dict[AgentKind, Counts] = {}
    cases: dict[Category, set[str]] = {c: set() for c in CATEGORIES}
    for run in runs:
        category = run.case.category
        cases[category].add(run.case.id)
        (honest if run.agent == "honest" else adversaries)[category].add(run)
        by_agent.setdefault(run.agent, Counts()).add(run)
    return Summary(
        honest_by_category=honest,
        adversaries_by_category=adversaries,
        by_agent=by_agent,
        cases={c: len(ids) for c, ids in cases.items()},
    )


def _markdown(header: Sequence[str], rows: Sequence[Sequence[object]]) -> list[str]:
    cells = [[str(c) for c in header], *([str(c) for c in row] for row in rows)]
    widths = [max(len(row[i]) for row in cells) for i in range(len(header))]

    def line(row: Sequence[str]) -> str:
        return "| " + " | ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)) + " |"

    return [line(cells[0]), "|" + "|".join("-" * (w + 2) for w in widths) + "|"] + [
        line(row) for row in cells[1:]
    ]


def _total(counts: Iterable[Counts]) -> Counts:
    total = Counts()
    for c in counts:
        for name in Counts.model_fields:
            setattr(total, name, getattr(total, name) + getattr(c, name))
    return total


def render_summary(summary: Summary) -> str:
    """The counts as two markdown tables (per category, per agent)."""
    header = [
        "category",
        "cases",
        "honest accepted",
        "honest runtime-decided before call",
        "honest problems",
        "adv. claims",
        "downgraded",
        "rejected",
        "adv. accepted (lawful steps)",
        "adv. problems",
        "violations",
        "breaches",
    ]
    rows: list[list[object]] = []
    for category in CATEGORIES:
        h, a = summary.honest_by_category[category], summary.adversaries_by_category[category]
        rows.append(_category_row(category, summary.cases[category], h, a))
    h_all = _total(summary.honest_by_category.values())
    a_all = _total(summary.adversaries_by_category.values())
    rows.append(_category_row("total", sum(summary.cases.values()), h_all, a_all))
    agent_header = [
        "agent",
        "runs",
        "called",
        "claims",
        "accepted",
        "downgraded",
        "rejected",
        "violations",
        "breaches",
        "problems",
        "agent-chosen forbidden",
        "closing stops in stop-forbidding cases",
    ]
    agent_rows = [
        [
            agent,
            c.runs,
            c.called,
            c.claims,
            c.accepted,
            c.downgraded,
            c.rejected,
            c.violations,
            c.breaches,
            c.problems,
            c.agent_chosen,
            c.closing_stops,
        ]
        for agent, c in summary.by_agent.items()
    ]
    return "\n".join(
        [
            *_markdown(header, rows),
            "",
            *_markdown(agent_header, agent_rows),
        ]
    )


def _category_row(name: str, cases: int, honest: Counts, adv: Counts) -> list[object]:
    return [
        name,
        cases,
        honest.accepted,
        honest.precall,
        honest.problems,
        adv.claims,
        adv.downgraded,
        adv.rejected,
        adv.accepted,
        adv.problems,
        adv.violations,
        honest.breaches + adv.breaches,
    ]


def exhausted_at_start(case: ExecCase) -> bool:
    budget = task_budget(case)
    return budget is not None and budget.exhausted
