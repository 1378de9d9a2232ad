"""Typed models of the eight v4 declarations (SPEC-v4.0-FINAL §1–§8).

Each model has `parse(text, line)`, `from_parts(header, body, line)` and `render()`,
with `M.parse(m.render()) == m`. Field splitting lives in `fields`; the rules of
::STATUS in plain Python in `status_rules`.

The names below are imported on first use (PEP 562), not with the package: the models are
pydantic's, and importing `envelopes.declarations.fields` or `status_rules` (plain Python,
what `ilh lint` needs for a text without other declarations) must not import pydantic
with them (tests/test_cli_startup.py).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from envelopes.declarations.base import Declaration
    from envelopes.declarations.budget import Budget, BudgetKind
    from envelopes.declarations.evidence import Evidence, EvidenceResult
    from envelopes.declarations.fallback import Fallback, FallbackTier
    from envelopes.declarations.objective import Objective, ObjectiveStatus
    from envelopes.declarations.prior import Prior, PriorForm
    from envelopes.declarations.rubric import Criterion, Rubric, rubric_findings
    from envelopes.declarations.status import Status
    from envelopes.declarations.status_rules import (
        AUTHORITY_OF_WRITER,
        COMPLETE_FORMS,
        WRITER_STATES,
        Authority,
        State,
        status_findings,
    )
    from envelopes.declarations.untrusted import Untrusted

    V4_DECLARATIONS: dict[str, type[Declaration]]
    """Declaration name (without `::`) → model, for the document parser and the linter."""

#: Each public name → the module that defines it.
_HOMES: dict[str, str] = {
    "Declaration": "base",
    "Budget": "budget",
    "BudgetKind": "budget",
    "Evidence": "evidence",
    "EvidenceResult": "evidence",
    "Fallback": "fallback",
    "FallbackTier": "fallback",
    "Objective": "objective",
    "ObjectiveStatus": "objective",
    "Prior": "prior",
    "PriorForm": "prior",
    "Criterion": "rubric",
    "Rubric": "rubric",
    "rubric_findings": "rubric",
    "Status": "status",
    "AUTHORITY_OF_WRITER": "status_rules",
    "COMPLETE_FORMS": "status_rules",
    "WRITER_STATES": "status_rules",
    "Authority": "status_rules",
    "State": "status_rules",
    "status_findings": "status_rules",
    "Untrusted": "untrusted",
}


def __getattr__(name: str) -> Any:
    if name == "V4_DECLARATIONS":
        models = [
            __getattr__(model)
            for model in (
                "Untrusted", "Budget", "Status", "Objective", "Rubric", "Evidence", "Prior",
                "Fallback",
            )
        ]  # fmt: skip
        value: Any = {model.NAME: model for model in models}
    elif name in _HOMES:
        module = importlib.import_module(f"{__name__}.{_HOMES[name]}")
        value = getattr(module, name)
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value  # looked up once
    return value


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
