"""The v5 decision layer: the reference function f_v5 (SPEC-v5.0.md Part II §2–§3).

f_v5 maps an 11-dimension judgment vector to one of the eight frozen modes through a
fixed cascade (first hit wins): STEP-1 survival ⇒ M8, STEP-2 epistemic gate ⇒ M5,
STEP-3 authority gate ⇒ M6, STEP-4 action score bands, STEP-5 authority cap. STEP-0
(an unreadable vector ⇒ M5) makes the function total over every input.

All arithmetic is exact (`Decimal` over the two-decimal lexical values), so a vector of
all 0.85 scores exactly 0.8500 and lands in M2, as Appendix D B03 requires; binary floats
would put it at 0.8499999… or 0.8500000…1 depending on the summation order.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from decimal import ROUND_HALF_EVEN, Decimal
from enum import StrEnum
from functools import lru_cache
from typing import Literal

from pydantic import BaseModel, ConfigDict

from envelopes.errors import IlangError

DIMENSIONS: tuple[str, ...] = (
    "int", "cap", "csq", "rel", "cer", "aut", "rev", "evd", "sov", "ine", "ext",
)  # fmt: skip
"""The 11 dimension abbreviations in the frozen V-line order (Part II §1, §4)."""

DIMENSION_NAMES: Mapping[str, str] = {
    "int": "intent",
    "cap": "capability",
    "csq": "consequence",
    "rel": "relationship",
    "cer": "certainty",
    "aut": "authority",
    "rev": "reversibility",
    "evd": "evidence",
    "sov": "sovereignty",
    "ine": "inertia",
    "ext": "externality",
}


class Mode(StrEnum):
    """The closed, frozen mode set of Part II §2."""

    M1 = "M1"
    M2 = "M2"
    M3 = "M3"
    M4 = "M4"
    M5 = "M5"
    M6 = "M6"
    M7 = "M7"
    M8 = "M8"


MODE_NAMES: Mapping[Mode, str] = {
    Mode.M1: "EXEC_AUTO",
    Mode.M2: "EXEC_AUDIT",
    Mode.M3: "CONFIRM",
    Mode.M4: "ADVISE",
    Mode.M5: "ASK",
    Mode.M6: "DEFER",
    Mode.M7: "DECLINE_ALT",
    Mode.M8: "STOP",
}

PRE_MODE_MAP: Mapping[str, Mode] = {
    "EXECUTE": Mode.M1,
    "EXECUTE_BOLDLY": Mode.M2,
    "SANDBOX": Mode.M2,
    "DEGRADE": Mode.M4,
    "HEDGE": Mode.M4,
    "OBSERVE": Mode.M5,
    "UNCERTAIN": Mode.M5,
    "ESCALATE": Mode.M6,
    "REFRAME": Mode.M7,
    "RETREAT": Mode.M8,
}
"""The superseded PRE mode names and their approximate M-ids (§2 MODES-SUPERSEDED). Only
used to explain a rejection: a PRE name in a ::JUDGE block is a schema violation."""

WEIGHTS: Mapping[str, Decimal] = {
    "int": Decimal("0.15"),
    "cap": Decimal("0.10"),
    "csq": Decimal("0.20"),
    "rel": Decimal("0.05"),
    "cer": Decimal("0.03"),
    "rev": Decimal("0.15"),
    "evd": Decimal("0.02"),
    "sov": Decimal("0.15"),
    "ine": Decimal("0.05"),
    "ext": Decimal("0.10"),
}
"""STEP-4 weights; `aut` is excluded because STEP-3 and STEP-5 gate it separately."""

SOV_FLOOR = Decimal("0.15")
EXT_FLOOR = Decimal("0.10")
CSQ_FLOOR = Decimal("0.10")
REV_FLOOR = Decimal("0.20")
CER_FLOOR = Decimal("0.30")
EVD_FLOOR = Decimal("0.25")
AUT_GATE = Decimal("0.30")
AUT_CAP = Decimal("0.55")

BANDS: tuple[tuple[Decimal, Mode], ...] = (
    (Decimal("0.85"), Mode.M1),
    (Decimal("0.70"), Mode.M2),
    (Decimal("0.55"), Mode.M3),
    (Decimal("0.40"), Mode.M4),
    (Decimal("0.25"), Mode.M7),
)
"""(exclusive lower edge, mode): S must be strictly above the edge, so a score exactly on
an edge falls to the next, more conservative band. Anything at or below 0.25 is M8."""

_FOUR_PLACES = Decimal("0.0001")
_UNIT_LOW = Decimal("0.00")
_UNIT_HIGH = Decimal("1.00")

Step = Literal["STEP-0", "STEP-1", "STEP-2", "STEP-3", "STEP-4", "STEP-5"]
ExactVector = Mapping[str, Decimal]


class Decision(BaseModel):
    """One evaluation of f_v5: the mode, the cascade step that decided it and why."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    mode: Mode
    step: Step
    detail: str
    score: Decimal | None = None
    """The rounded action score S when STEP-4 ran (STEP-4 and STEP-5 decisions)."""

    def explain(self) -> str:
        """E.g. `STEP-4 action score band: S=0.6075` (the wording the conformance
        suite's boundary notes use)."""
        return f"{self.step} {self.detail}"


def vector_problem(vector: Mapping[str, object]) -> str | None:
    """Why `vector` is not a point of V, or None when it is one.

    V is [0.00, 1.00]^11 at two decimals over exactly the 11 dimensions (CONVENTION-1,
    §4). Fail-closed choices: extra keys are rejected like extra fields, `bool` is not a
    number, and a float off the two-decimal grid (0.855, or 0.15 - 0.05 computed in
    binary) is not silently rounded — it has no V-line form, so it is not in V.
    """
    missing = [dim for dim in DIMENSIONS if dim not in vector]
    if missing:
        return f"omitted dim {', '.join(missing)}"
    extra = sorted(str(key) for key in vector if key not in DIMENSIONS)
    if extra:
        return f"unknown dim {', '.join(extra)}"
    for dim in DIMENSIONS:
        problem = unit_problem(vector[dim])
        if problem is not None:
            return f"{dim}: {problem}"
    return None


def unit_problem(value: object) -> str | None:
    """Why `value` is not a two-decimal number in [0.00, 1.00], or None."""
    if value.__class__ is float:
        return _float_problem(value)
    return _unit_problem(value)


@lru_cache(maxsize=4096)
def _float_problem(value: float) -> str | None:
    # A block's values are few and recur (101 two-decimal points, checked by the model, by
    # the decision and by the abstain rule), and the answer depends on the float alone:
    # equal floats print alike, but for -0.0, which passes like 0.0.
    return _unit_problem(value)


def _unit_problem(value: object) -> str | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return f"{value!r} is not a number"
    number = float(value)
    if not math.isfinite(number):
        return f"{value!r} is not finite"
    if not 0.0 <= number <= 1.0:
        return f"{value!r} is outside [0.00, 1.00]"
    if float(f"{number:.2f}") != number:
        return f"{value!r} is not a two-decimal value"
    return None


def exact_vector(vector: Mapping[str, float]) -> dict[str, Decimal]:
    """The vector as exact decimals; IlangError E303 when it is not a point of V."""
    problem = vector_problem(vector)
    if problem is not None:
        raise IlangError("E303", f"not a v5 judgment vector: {problem}")
    return _to_decimals(vector)


def _to_decimals(vector: Mapping[str, float]) -> dict[str, Decimal]:
    return {dim: _two_decimals(float(vector[dim])) for dim in DIMENSIONS}


@lru_cache(maxsize=4096)
def _two_decimals(value: float) -> Decimal:
    # The "+ 0.0" folds -0.0 into 0.0 so that it formats as "0.00". Memoised like
    # `_float_problem`: a Decimal is immutable, so one instance may serve every caller.
    return Decimal(f"{value + 0.0:.2f}")


def survival_hit(vector: ExactVector) -> str | None:
    """The STEP-1 survival boundary the vector hits (first in spec order), or None."""
    if vector["sov"] < SOV_FLOOR:
        return "sov<0.15"
    if vector["ext"] < EXT_FLOOR:
        return "ext<0.10"
    if vector["csq"] < CSQ_FLOOR and vector["rev"] < REV_FLOOR:
        return "csq<0.10 and rev<0.20"
    return None


def epistemic_gate_hit(vector: ExactVector) -> bool:
    """STEP-2: cer < 0.30 ∨ evd < 0.25 (strict: a value on the threshold passes)."""
    return vector["cer"] < CER_FLOOR or vector["evd"] < EVD_FLOOR


def score(vector: ExactVector) -> Decimal:
    """STEP-4 action score S, rounded to 4 places as the spec's float determinism rule
    demands. Over exact two-decimal inputs the sum already has at most 4 places, so the
    rounding (half-even, like Python's round) never changes the value; it is kept so the
    code reads like the spec."""
    total = sum((weight * vector[dim] for dim, weight in WEIGHTS.items()), Decimal(0))
    return total.quantize(_FOUR_PLACES, rounding=ROUND_HALF_EVEN)


def band(s: Decimal) -> Mode:
    """STEP-4 banding; an edge value falls to the more conservative mode."""
    for edge, mode in BANDS:
        if s > edge:
            return mode
    return Mode.M8


def decide(vector: Mapping[str, float]) -> Decision:
    """Run the f_v5 cascade and record which step decided. Never raises."""
    problem = vector_problem(vector)
    if problem is not None:
        return Decision(mode=Mode.M5, step="STEP-0", detail=f"default: {problem}")
    return decide_exact(_to_decimals(vector))


def decide_exact(vector: ExactVector) -> Decision:
    """The cascade over a vector already known to be a point of V."""
    hit = survival_hit(vector)
    if hit is not None:
        return Decision(mode=Mode.M8, step="STEP-1", detail=f"survival: {hit}")
    if epistemic_gate_hit(vector):
        return Decision(mode=Mode.M5, step="STEP-2", detail="epistemic gate: cer<0.30 or evd<0.25")
    if vector["aut"] < AUT_GATE:
        return Decision(mode=Mode.M6, step="STEP-3", detail="authority gate: aut<0.30")
    s = score(vector)
    banded = band(s)
    if vector["aut"] < AUT_CAP and banded in (Mode.M1, Mode.M2):
        return Decision(
            mode=Mode.M3,
            step="STEP-5",
            detail=f"authority cap: aut<0.55 caps M1/M2 to M3 (S={s:.4f})",
            score=s,
        )
    return Decision(mode=banded, step="STEP-4", detail=f"action score band: S={s:.4f}", score=s)


def f_v5(vector: Mapping[str, float]) -> Mode:
    """The reference function f: V → M. Deterministic and total: a mapping that is not a
    point of V gets STEP-0's M5 (the spec's `[PARSE:@JUDGE]→fail ⇒ M5`) rather than an
    exception."""
    return decide(vector).mode


def f_v5_trace(vector: Mapping[str, float]) -> tuple[Mode, str]:
    """f_v5 plus the step that decided, e.g. `(Mode.M8, "STEP-1 survival: sov<0.15")`."""
    decision = decide(vector)
    return decision.mode, decision.explain()


def action_score(vector: Mapping[str, float]) -> Decimal:
    """S of STEP-4 (4 places) for a point of V; IlangError E303 otherwise. S alone does not
    show the gates of STEP-1 to STEP-3."""
    return score(exact_vector(vector))


def abstain_modes(vector: Mapping[str, float]) -> frozenset[Mode] | None:
    """The modes the §4 abstain rule leaves valid, or None when the rule does not apply.

    Under the epistemic gate M must be M5; the 2026-09-14 erratum adds M8 when a STEP-1
    survival boundary is also hit (SURVIVAL > EPISTEMIC). M5 stays schema-valid there
    even though f_v5 says M8: the mismatch is a separate, decision-layer finding.
    """
    exact = exact_vector(vector)
    if not epistemic_gate_hit(exact):
        return None
    if survival_hit(exact) is not None:
        return frozenset({Mode.M5, Mode.M8})
    return frozenset({Mode.M5})
