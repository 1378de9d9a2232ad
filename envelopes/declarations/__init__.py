"""Typed models of the eight v4 declarations (SPEC-v4.0-FINAL §1–§8).

Each model has `parse(text, line)`, `from_parts(header, body, line)` and `render()`,
with `M.parse(m.render()) == m`. Field splitting lives in `fields`.
"""

from __future__ import annotations

from envelopes.declarations.base import Declaration
from envelopes.declarations.budget import Budget, BudgetKind
from envelopes.declarations.evidence import Evidence, EvidenceResult
from envelopes.declarations.fallback import Fallback, FallbackTier
from envelopes.declarations.objective import Objective, ObjectiveStatus
from envelopes.declarations.prior import Prior, PriorForm
from envelopes.declarations.rubric import Criterion, Rubric, rubric_findings
from envelopes.declarations.status import (
    AUTHORITY_OF_WRITER,
    COMPLETE_FORMS,
    WRITER_STATES,
    Authority,
    State,
    Status,
    status_findings,
)
from envelopes.declarations.untrusted import Untrusted

V4_DECLARATIONS: dict[str, type[Declaration]] = {
    model.NAME: model
    for model in (Untrusted, Budget, Status, Objective, Rubric, Evidence, Prior, Fallback)
}
"""Declaration name (without `::`) → model, for the document parser and the linter."""

__all__ = [
    "AUTHORITY_OF_WRITER",
    "COMPLETE_FORMS",
    "V4_DECLARATIONS",
    "WRITER_STATES",
    "Authority",
    "Budget",
    "BudgetKind",
    "Criterion",
    "Declaration",
    "Evidence",
    "EvidenceResult",
    "Fallback",
    "FallbackTier",
    "Objective",
    "ObjectiveStatus",
    "Prior",
    "PriorForm",
    "Rubric",
    "State",
    "Status",
    "Untrusted",
    "rubric_findings",
    "status_findings",
]
