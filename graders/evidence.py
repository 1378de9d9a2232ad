"""The evidence map (spec §6, §7 step AUDT): every deliverable mapped to `::EVIDENCE` items.

Items come from three places, and only two of them can decide anything:

* `@TOOL` — a tool check the grader ran itself (kind `command_output`);
* `@GRADER` — the grader model's judgement (kind `grader_judgement`), citing the files
  and checks it relied on;
* the agent — every `::EVIDENCE` the agent wrote. Recorded as it wrote it (its
  `verified_by` included), but it decides nothing, whatever verifier it names: evidence
  the agent wrote about itself is a proposal (spec §6 "without evidence, claims are
  proposals"), and an agent's `verified_by:@TOOL` is a forgery, not a tool run.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict

from envelopes.declarations import Evidence, EvidenceResult
from graders.criteria import Result
from graders.model_judge import ModelVerdict
from graders.tool_checks import ToolCheck

Source = Literal["tool", "grader", "agent"]
ClaimKind = Literal["STATUS", "EVIDENCE"]

TOOL = "@TOOL"
GRADER = "@GRADER"
_FIELD_CHARS = 200
_SPACE = re.compile(r"\s+")
_RESULTS: dict[str, Result] = {"pass": "pass", "fail": "fail", "unknown": "unknown"}


class AgentClaim(BaseModel):
    """One `::STATUS`/`::EVIDENCE` the agent wrote, as the grader may see it.

    `canonical` is the declaration as the project's parser reads it, re-rendered (fields
    only); None when it does not parse. The agent's raw text is never handed on: only
    its claims reach the grader, never its reasoning.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: ClaimKind
    round: int
    disposition: Literal["accepted", "downgraded", "rejected"]
    canonical: str | None
    state: str | None = None
    evidence: Evidence | None = None

    def shown(self) -> str:
        text = self.canonical or f"(an unreadable ::{self.kind} claim)"
        return f"[round {self.round}, {self.disposition}] {text}"


class EvidenceItem(BaseModel):
    """One `::EVIDENCE` record of the map."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    deliverable: str
    kind: str
    ref: str
    verified_by: str
    result: Result | None
    gap: str | None = None
    source: Source
    decides: bool
    note: str = ""

    def line(self) -> str:
        """The item as an `::EVIDENCE` declaration (spec §6)."""
        return Evidence(
            id=self.id,
            deliverable=self.deliverable,
            kind=self.kind,
            ref=self.ref,
            verified_by=self.verified_by,
            result=EvidenceResult(self.result) if self.result is not None else None,
            gap=self.gap,
        ).render()


def field_text(text: str, limit: int = _FIELD_CHARS) -> str:
    """Free text made fit for a one-line declaration field: whitespace collapsed, capped."""
    flat = _SPACE.sub(" ", text).strip()
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def tool_evidence(number: int, check: ToolCheck) -> EvidenceItem:
    return EvidenceItem(
        id=f"e{number}",
        deliverable=check.criterion,
        kind="command_output",
        ref=f"run:{check.criterion}",
        verified_by=TOOL,
        result=check.result,
        gap=None if check.result == "pass" else field_text(check.detail),
        source="tool",
        decides=True,
    )


def model_evidence(number: int, verdict: ModelVerdict) -> EvidenceItem:
    refs = "; ".join(item.label() for item in verdict.evidence)
    return EvidenceItem(
        id=f"e{number}",
        deliverable=verdict.criterion,
        kind="grader_judgement",
        ref=field_text(refs) if refs else "none",
        verified_by=GRADER,
        result=verdict.result,
        gap=None if verdict.result == "pass" else field_text(verdict.rationale),
        source="grader",
        decides=True,
    )


def agent_evidence(number: int, claim: AgentClaim) -> EvidenceItem:
    """The agent's `::EVIDENCE`, recorded with decides=False."""
    ev = claim.evidence
    result = _RESULTS.get(ev.result.value) if ev is not None and ev.result is not None else None
    return EvidenceItem(
        id=f"e{number}",
        deliverable=(ev.deliverable if ev is not None and ev.deliverable else "?"),
        kind=(ev.kind if ev is not None and ev.kind else "claim"),
        ref=field_text(ev.ref) if ev is not None and ev.ref else "agent_text",
        verified_by=(ev.verified_by if ev is not None and ev.verified_by else "@AGENT"),
        result=result,
        gap=field_text(ev.gap) if ev is not None and ev.gap else None,
        source="agent",
        decides=False,
        note=f"written by the agent ({claim.disposition}): evidence about itself decides nothing",
    )


class EvidenceMap(BaseModel):
    """Deliverable → its evidence items (spec §6: one or more per deliverable)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    items: dict[str, list[EvidenceItem]]
    unmatched: list[EvidenceItem]
    """Agent evidence naming no deliverable of the rubric."""

    def deciding(self, deliverable: str) -> list[EvidenceItem]:
        return [i for i in self.items.get(deliverable, []) if i.decides]

    def lines(self) -> list[str]:
        out = [item.line() for items in self.items.values() for item in items]
        return out + [item.line() for item in self.unmatched]


def build_map(
    deliverables: Sequence[str],
    checks: Sequence[ToolCheck],
    verdicts: Sequence[ModelVerdict],
    claims: Sequence[AgentClaim],
) -> EvidenceMap:
    """Map every deliverable to its items, numbered e1, e2, … in a fixed order: tool
    checks, then the grader's judgements, then the agent's claims."""
    items: dict[str, list[EvidenceItem]] = {d: [] for d in deliverables}
    unmatched: list[EvidenceItem] = []
    number = 0
    for check in checks:
        number += 1
        items.setdefault(check.criterion, []).append(tool_evidence(number, check))
    for verdict in verdicts:
        number += 1
        items.setdefault(verdict.criterion, []).append(model_evidence(number, verdict))
    for claim in claims:
        if claim.kind != "EVIDENCE":
            continue
        number += 1
        item = agent_evidence(number, claim)
        if item.deliverable in items:
            items[item.deliverable].append(item)
        else:
            unmatched.append(item)
    return EvidenceMap(items=items, unmatched=unmatched)
