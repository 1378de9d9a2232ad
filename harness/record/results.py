"""The result of `ilh run` (DESIGN §6), as pydantic models."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

EndedBy = Literal[
    "committed_complete",
    "unverified",
    "agent_proposal",
    "budget",
    "not_running",
    "script_exhausted",
    "error",
    "repeated_error",
]

EXIT_COMPLETE = 0
EXIT_NOT_COMPLETE = 3


class HistoryRow(BaseModel):
    model_config = ConfigDict(frozen=True)

    seq: int
    round: int
    state: str
    reason: str | None
    by: str
    authority: str
    line: str


class FinalRow(BaseModel):
    model_config = ConfigDict(frozen=True)

    state: str
    reason: str | None
    by: str
    authority: str
    line: str


class ProposalRow(BaseModel):
    model_config = ConfigDict(frozen=True)

    round: int
    line: str
    state: str | None
    claimed_by: str | None
    claimed_authority: str | None
    disposition: Literal["accepted", "downgraded", "rejected"]
    why: str


class ViolationRow(BaseModel):
    model_config = ConfigDict(frozen=True)

    round: int
    kind: str
    detail: str


class RunResult(BaseModel):
    """One object on stdout with `--json`. The first ten fields are DESIGN §6's; `notes`,
    `workspace` and `model` are additions for people reading the result."""

    run_id: str
    task_id: str
    ended_by: EndedBy
    final: FinalRow | None
    history: list[HistoryRow]
    proposals: list[ProposalRow]
    budgets: list[dict[str, Any]]
    runtime_lines: list[str]
    violations: list[ViolationRow]
    grader: dict[str, Any] | None = None
    notes: list[str] = []
    workspace: str | None = None
    # How commands were confined (DESIGN §5): {"mode": "bwrap", "network": …, "limits":
    # …} or {"mode": "none", "warning": …} when the user chose `--sandbox none`, and
    # "available": false with the reason when commands were refused for want of one.
    sandbox: dict[str, Any] | None = None
    model: str | None = None

    @property
    def exit_code(self) -> int:
        return EXIT_COMPLETE if self.ended_by == "committed_complete" else EXIT_NOT_COMPLETE
