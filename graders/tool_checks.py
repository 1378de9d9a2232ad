"""Tool checks: a criterion with `run = "…"` is decided by running that command over the
grading tree (DESIGN §5: `/bin/sh -c`, exit 0 = pass); one with `pytest = "…"` or
`unittest = "…"`, or a `run` that is one call of a known test runner, by the test
runner's own report (`graders.runners`): there exit 0 alone is never a pass.

The command runner is injected (the harness passes its scrubbed, time-limited
`harness.workspace.commands.run_shell`, bound to the workspace): `graders` does not depend on
`harness` (DESIGN §2), and tests can pass a fake.

Results:

* exit 0 within the time limit → pass (a runner-aware check: the runner's report shows
  every required test run and passed, and the process exited 0);
* any other exit (a missing program too: the shell's 127), or a time-out with the full
  `DEFAULT_CHECK_TIMEOUT_S` → fail (a hanging check is the work's problem, and the agent
  can act on it);
* a time-out when the time budget had cut the check's timeout below
  `DEFAULT_CHECK_TIMEOUT_S` → unknown (`audit_budget`): the budget, not the work, ended
  the check, and budget pressure never decides a result (spec §2, §7
  `budget_pressure_completion⇒forbidden`);
* the command is blank (the shell would exit 0 having checked nothing), could not be
  started (the runner raised, whatever it raised), or no audit time is left to run it →
  unknown: nothing was checked, so nothing can be claimed either way.

The output is kept as evidence: all of it (as capped by the runner) in the report, its
tail (where test runners print their verdict) in the criterion's `evidence` field.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol, Self

from pydantic import BaseModel, ConfigDict, model_validator

from graders.criteria import GradingCriterion, Result, UnknownCause
from graders.runners import RunVerdict

#: Longest a single check may run when no time budget limits it further.
DEFAULT_CHECK_TIMEOUT_S = 120.0
#: How much of a check's output (its tail) goes into the criterion's `evidence` field.
EVIDENCE_TAIL_CHARS = 2000


class CommandOutcome(Protocol):
    """What a runner reports (`harness.workspace.commands.CommandResult` has this shape)."""

    @property
    def exit_code(self) -> int: ...
    @property
    def output(self) -> str: ...
    @property
    def timed_out(self) -> bool: ...
    @property
    def duration_s(self) -> float: ...
    @property
    def truncated(self) -> bool: ...


class RunnerOutcome(BaseModel):
    """What the harness reports for a check it ran: the command's outcome, and, for a
    runner-aware check, the verdict on the runner's report (None: exit-code semantics)."""

    model_config = ConfigDict(frozen=True)

    exit_code: int
    output: str
    timed_out: bool
    duration_s: float
    truncated: bool = False
    verdict: RunVerdict | None = None
    runner: str | None = None


class UntrustedCheck(Exception):
    """Raised by a runner for a check it will not run because its result could not be
    trusted (the message says why): the criterion is unknown, never verified."""


UNTRUSTED = "not trusted"


Runner = Callable[[GradingCriterion, float], CommandOutcome]
"""`runner(criterion, timeout_s)`: run one criterion's check over the graded work."""

TimeRoom = Callable[[], float | None]
"""Seconds the audit may still spend (None: no time budget)."""


class ToolCheck(BaseModel):
    """One tool check as it ran: the evidence behind a tool-decided criterion."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    criterion: str
    command: str
    result: Result
    detail: str
    output: str = ""
    exit_code: int | None = None
    timed_out: bool = False
    duration_s: float = 0.0
    truncated: bool = False
    cause: UnknownCause | None = None
    runner: str | None = None  # "pytest"/"unittest": decided by the runner's report
    hidden: bool = False  # a hidden check: only its id, check text and result are shown

    @model_validator(mode="after")
    def _consistent(self) -> Self:
        # A pass is only ever what a finished command reported: exit 0, in time.
        if self.result == "pass" and (self.exit_code != 0 or self.timed_out):
            raise ValueError("a tool check passes only on exit 0 within its time limit")
        if (self.result == "unknown") != (self.cause is not None):
            raise ValueError("an unknown result carries its cause, and only an unknown one")
        return self

    @property
    def evidence_tail(self) -> str:
        if not self.output:
            return "(no output)" if self.exit_code is not None else ""
        if len(self.output) <= EVIDENCE_TAIL_CHARS:
            return self.output
        return "[… output cut: its last part follows …]\n" + self.output[-EVIDENCE_TAIL_CHARS:]


def _not_run(
    criterion: GradingCriterion, cause: UnknownCause, why: str, output: str = ""
) -> ToolCheck:
    return ToolCheck(
        criterion=criterion.id,
        command=criterion.command or "",
        result="unknown",
        hidden=criterion.hidden,
        cause=cause,
        detail=f"not run: {why}",
        output=output,
    )


def run_check(criterion: GradingCriterion, runner: Runner, time_room: TimeRoom) -> ToolCheck:
    """Run one criterion's check; never raises."""
    command = criterion.command
    if command is None:
        raise ValueError(f"criterion {criterion.id} has no tool check")
    if not command.strip():
        return _not_run(
            criterion, "check_error", "the check's command is blank (it would check nothing)"
        )
    room = time_room()
    if room is not None and room <= 0:
        return _not_run(criterion, "audit_budget", "no audit time is left in the time budget")
    clamped = room is not None and room < DEFAULT_CHECK_TIMEOUT_S
    timeout = min(DEFAULT_CHECK_TIMEOUT_S, room) if room is not None else DEFAULT_CHECK_TIMEOUT_S
    try:
        done = runner(criterion, timeout)
    except UntrustedCheck as exc:  # closed, not open: run, it would decide nothing
        return _not_run(criterion, "check_error", f"{UNTRUSTED}: {exc}")
    except Exception as exc:  # whatever the runner raised, nothing was checked
        return _not_run(
            criterion, "check_error", f"it could not start: {type(exc).__name__}: {exc}"
        )
    verdict = done.verdict if isinstance(done, RunnerOutcome) else None
    kind = done.runner if isinstance(done, RunnerOutcome) else None
    cause: UnknownCause | None = None
    if done.timed_out and clamped:
        result: Result = "unknown"
        cause = "audit_budget"
        detail = (
            f"timed out after {timeout:g}s, all the time the audit budget had left "
            f"(a check may take {DEFAULT_CHECK_TIMEOUT_S:g}s): the budget ended it, not the work"
        )
    elif done.timed_out:
        result = "fail"
        detail = f"timed out after {timeout:g}s (a check must finish to pass)"
    elif verdict is not None:
        result = "pass" if verdict.passed and done.exit_code == 0 else "fail"
        detail = f"{kind}: {verdict.detail} ({done.duration_s:g}s)"
    elif done.exit_code == 0:
        result, detail = "pass", f"exit 0 in {done.duration_s:g}s"
    else:
        result, detail = "fail", f"exit {done.exit_code} in {done.duration_s:g}s"
    output = done.output
    if criterion.hidden:
        # The real finding stays in the output (the record's, the user's); the detail
        # reaches the agent, and says only the verdict.
        output = f"[grader] {detail}\n{output}"
        detail = f"hidden check: {result}"
    return ToolCheck(
        criterion=criterion.id,
        command=command,
        result=result,
        detail=detail,
        output=output,
        runner=kind,
        hidden=criterion.hidden,
        exit_code=done.exit_code,
        timed_out=done.timed_out,
        duration_s=done.duration_s,
        truncated=done.truncated,
        cause=cause,
    )


def run_checks(
    criteria: Sequence[GradingCriterion], runner: Runner, time_room: TimeRoom
) -> list[ToolCheck]:
    """Every tool check of the rubric, in rubric order."""
    return [run_check(c, runner, time_room) for c in criteria if c.tool_checked]
