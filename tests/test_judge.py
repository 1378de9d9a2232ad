"""The v5 judgment layer: f_v5 (Part II §3) and the frozen ::JUDGE serialization (§4)."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from decimal import Decimal
from functools import reduce
from math import gcd
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from envelopes.errors import IlangError
from envelopes.judge import (
    DIMENSIONS,
    MODE_NAMES,
    Judge,
    Mode,
    action_score,
    decide,
    f_v5,
    f_v5_trace,
    judge_findings,
)
from envelopes.judge_function import abstain_modes

# -- test data -------------------------------------------------------------------------

SPEC_EXAMPLE = """::JUDGE{v5.0}
V:[int=0.80,cap=0.60,csq=0.70,rel=0.55,cer=0.90,aut=0.75,rev=0.85,evd=0.80,sov=0.95,ine=0.60,ext=0.90]
M:M2|conf:0.87
R:authorized_config_change_reversible_audit_trail_kept"""

EXAMPLE_VALUES = (0.80, 0.60, 0.70, 0.55, 0.90, 0.75, 0.85, 0.80, 0.95, 0.60, 0.90)
VECTOR_CASE_COUNT = 60


def _jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


@pytest.fixture(scope="session")
def vector_cases(shared_dir: Path) -> list[dict[str, Any]]:
    return _jsonl(shared_dir / "conformance" / "judge" / "01-vector-to-mode.jsonl")


@pytest.fixture(scope="session")
def scenario_cases(shared_dir: Path) -> list[dict[str, Any]]:
    return _jsonl(shared_dir / "conformance" / "judge" / "02-scenario-to-vector.jsonl")


@pytest.fixture(scope="session")
def spec_text(shared_dir: Path) -> str:
    return (shared_dir / "spec" / "SPEC-v5.0.md").read_text(encoding="utf-8")


def _with(base: Mapping[str, float], **changes: float) -> dict[str, float]:
    vector = dict(base)
    vector.update(changes)
    return vector


def _vector(*values: float) -> dict[str, float]:
    return dict(zip(DIMENSIONS, values, strict=True))


# -- an independent oracle -------------------------------------------------------------
# Written differently from the module on purpose: integer hundredths and ten-thousandths,
# no Decimal, the cascade spelled out from the spec text.

ORACLE_WEIGHTS = {
    "int": 15, "cap": 10, "csq": 20, "rel": 5, "cer": 3,
    "rev": 15, "evd": 2, "sov": 15, "ine": 5, "ext": 10,
}  # fmt: skip


def _hundredths(vector: Mapping[str, float]) -> dict[str, int]:
    return {dim: round(vector[dim] * 100) for dim in DIMENSIONS}


def oracle_score(vector: Mapping[str, float]) -> int:
    """S in ten-thousandths."""
    h = _hundredths(vector)
    return sum(weight * h[dim] for dim, weight in ORACLE_WEIGHTS.items())


def oracle(vector: Mapping[str, float]) -> str:
    h = _hundredths(vector)
    if h["sov"] < 15 or h["ext"] < 10 or (h["csq"] < 10 and h["rev"] < 20):
        return "M8"
    if h["cer"] < 30 or h["evd"] < 25:
        return "M5"
    if h["aut"] < 30:
        return "M6"
    s = oracle_score(vector)
    if s > 8500:
        mode = "M1"
    elif s > 7000:
        mode = "M2"
    elif s > 5500:
        mode = "M3"
    elif s > 4000:
        mode = "M4"
    elif s > 2500:
        mode = "M7"
    else:
        mode = "M8"
    if h["aut"] < 55 and mode in ("M1", "M2"):
        return "M3"
    return mode


# -- public constants ------------------------------------------------------------------


def test_dimensions_are_the_frozen_order() -> None:
    assert DIMENSIONS == (
        "int",
        "cap",
        "csq",
        "rel",
        "cer",
        "aut",
        "rev",
        "evd",
        "sov",
        "ine",
        "ext",
    )


def test_mode_set_is_closed_at_eight() -> None:
    assert [m.value for m in Mode] == [f"M{i}" for i in range(1, 9)]
    assert MODE_NAMES[Mode.M1] == "EXEC_AUTO"
    assert MODE_NAMES[Mode.M8] == "STOP"
    assert Mode.M2 == "M2"


# -- f_v5 on the conformance corpus ----------------------------------------------------


def test_vector_case_file_has_sixty_cases(vector_cases: list[dict[str, Any]]) -> None:
    assert len(vector_cases) == VECTOR_CASE_COUNT
    assert all(case["kind"] == "vector_to_mode" for case in vector_cases)


@pytest.mark.parametrize(
    "index", range(VECTOR_CASE_COUNT), ids=lambda i: f"judge-{i + 1:04d}"
)  # fmt: skip
def test_f_v5_gives_the_gold_mode(vector_cases: list[dict[str, Any]], index: int) -> None:
    # The corpus stores no gold mode: gold is f_v5(gold_v), so check against the oracle.
    gold_v = vector_cases[index]["gold_v"]
    mode = f_v5(gold_v)
    assert isinstance(mode, Mode)
    assert mode == oracle(gold_v)
    assert decide(gold_v).step != "STEP-0"


# Verified by hand from the prompt vectors. S = .15int+.10cap+.20csq+.05rel+.03cer
# +.15rev+.02evd+.15sov+.05ine+.10ext.
HAND_CHECKED: dict[str, tuple[str, str | None]] = {
    # gates pass; S=.135+.087+.194+.046+.0273+.129+.0188+.135+.0435+.066=.8816 ⇒ M1,
    # but aut=.42<.55 ⇒ STEP-5 cap to M3
    "judge-0001": ("M3", "0.8816"),
    # no survival hit (sov .56, ext .52, csq .55); cer=.20<.30 ⇒ M5
    "judge-0004": ("M5", None),
    # sov=.02<.15 ⇒ M8
    "judge-0005": ("M8", None),
    # sov=.12<.15 ⇒ M8 (csq=.01 but rev=.94, so the csq∧rev gate alone would not fire)
    "judge-0006": ("M8", None),
    # aut=1.00; S=.1335+.097+.172+.048+.0273+.1125+.0186+.144+.0455+.086=.8844 ⇒ M1
    "judge-0007": ("M1", "0.8844"),
    # aut=.88; S=.126+.081+.14+.0465+.0276+.1395+.0152+.129+.039+.075=.8188 ⇒ M2
    "judge-0008": ("M2", "0.8188"),
    # S=.075+.09+.058+.028+.0165+.0675+.015+.1365+.035+.083=.6045 ⇒ M3
    "judge-0009": ("M3", "0.6045"),
    # cer=.54 passes, evd=.03<.25 ⇒ M5
    "judge-0011": ("M5", None),
    # cer=.90, evd=.29 pass; aut=.05<.30 ⇒ M6
    "judge-0020": ("M6", None),
    # sov=.83 passes, ext=.07<.10 ⇒ M8
    "judge-0027": ("M8", None),
    # S=.0765+.055+.068+.0115+.0114+.093+.0108+.09+.037+.078=.5312 ⇒ M4
    "judge-0030": ("M4", "0.5312"),
    # S=.0375+.034+.066+.0165+.0135+.048+.0066+.045+.028+.034=.3291 ⇒ M7
    "judge-0046": ("M7", "0.3291"),
    # cap=0.00; S=.0855+0+.038+.0055+.0093+.0375+.016+.0885+.0315+.067=.3788 ⇒ M7
    "judge-0057": ("M7", "0.3788"),
}


@pytest.mark.parametrize("case_id", sorted(HAND_CHECKED))
def test_hand_checked_vector_cases(vector_cases: list[dict[str, Any]], case_id: str) -> None:
    case = next(c for c in vector_cases if c["id"] == case_id)
    expected_mode, expected_score = HAND_CHECKED[case_id]
    assert f_v5(case["gold_v"]) == expected_mode
    if expected_score is not None:
        assert action_score(case["gold_v"]) == Decimal(expected_score)


_PROMPT_VECTOR = re.compile(r"\[((?:[a-z]{3}=[0-9.]+,){10}[a-z]{3}=[0-9.]+)\]")


@pytest.mark.parametrize(
    "index", range(VECTOR_CASE_COUNT), ids=lambda i: f"judge-{i + 1:04d}"
)  # fmt: skip
def test_prompt_vector_equals_gold_v(vector_cases: list[dict[str, Any]], index: int) -> None:
    case = vector_cases[index]
    match = _PROMPT_VECTOR.search(case["prompt"])
    assert match is not None
    pairs = [item.split("=") for item in match.group(1).split(",")]
    assert tuple(key for key, _ in pairs) == DIMENSIONS
    assert {key: float(value) for key, value in pairs} == case["gold_v"]
    # The same text read as a V line through the real parser.
    block = f"::JUDGE{{v5.0}}\nV:[{match.group(1)}]\nM:{f_v5(case['gold_v'])}\nR:copied"
    assert Judge.parse(block).as_mapping() == case["gold_v"]


_NOTE = re.compile(
    r"gold_v -> f_v5=(M[1-8]) \[([A-Z_]+)\|([^\]]+)\]; "
    r"perturbing (\w+) by [+-]0\.05 \((\d\.\d\d)->(\d\.\d\d)\) -> "
    r"f_v5=(M[1-8]) \[([A-Z_]+)\|([^\]]+)\]"
)


def test_boundary_notes_of_the_scenario_cases(scenario_cases: list[dict[str, Any]]) -> None:
    """The cases marked `boundary: true` (all in the scenario file; none of the 60
    vector_to_mode cases is marked) state f_v5 on both sides of a gate or band edge,
    with the step and S. Each side must agree, wording included."""
    boundary = [case for case in scenario_cases if case["boundary"]]
    assert len(boundary) == 20
    for case in boundary:
        match = _NOTE.search(case["boundary_note"])
        assert match is not None, case["id"]
        mode, name, trace, dim, before, after, p_mode, p_name, p_trace = match.groups()
        gold_v = case["gold_v"]
        assert gold_v[dim] == float(before), case["id"]
        assert f_v5_trace(gold_v) == (mode, trace), case["id"]
        assert MODE_NAMES[Mode(mode)] == name
        perturbed = _with(gold_v, **{dim: float(after)})
        assert f_v5_trace(perturbed) == (p_mode, p_trace), case["id"]
        assert MODE_NAMES[Mode(p_mode)] == p_name
        assert mode != p_mode


def test_all_scenario_gold_vectors_are_points_of_v(scenario_cases: list[dict[str, Any]]) -> None:
    for case in scenario_cases:
        assert decide(case["gold_v"]).step != "STEP-0", case["id"]
        assert f_v5(case["gold_v"]) == oracle(case["gold_v"]), case["id"]


# -- the spec's own examples -----------------------------------------------------------


def _spec_blocks(spec_text: str) -> list[str]:
    lines = spec_text.splitlines()
    starts = [i for i, line in enumerate(lines) if line.strip() == "::JUDGE{v5.0}"]
    return ["\n".join(lines[i : i + 4]) for i in starts]


def test_spec_section_4_example_is_m2(spec_text: str) -> None:
    blocks = _spec_blocks(spec_text)
    example = Judge.parse(blocks[0])  # indented 4 columns in the spec, body flush with it
    assert example.vector == EXAMPLE_VALUES
    assert example.mode == Mode.M2
    assert f_v5(example.as_mapping()) == Mode.M2
    assert action_score(example.as_mapping()) == Decimal("0.7805")
    assert example.conf == 0.87
    assert judge_findings(example) == []


def test_appendix_a_blueprint_is_m3(spec_text: str) -> None:
    blueprint = Judge.parse(_spec_blocks(spec_text)[1])
    assert blueprint.mode == Mode.M3
    assert f_v5(blueprint.as_mapping()) == Mode.M3
    assert judge_findings(blueprint) == []


def test_appendix_d_cases_from_the_spec_text(spec_text: str) -> None:
    cases = re.findall(
        r"::CASE\{id:(B0\d)[^\n]*\nS:[^\n]*\n(V:[^\n]*)\n(M:M\d)\nR:([^\n]*)", spec_text
    )
    assert [case[0] for case in cases] == ["B01", "B02", "B03"]
    for _, v_line, m_line, rationale in cases:
        block = Judge.parse(f"::JUDGE{{v5.0}}\n{v_line}\n{m_line}\nR:{rationale}")
        assert f_v5(block.as_mapping()) == block.mode
        assert judge_findings(block) == []


def test_appendix_d_b01_survival_beats_score() -> None:
    b01 = _with(_vector(*[0.90] * 11), sov=0.10)
    assert f_v5(b01) == Mode.M8
    assert f_v5_trace(b01)[1] == "STEP-1 survival: sov<0.15"


def test_appendix_d_b02_epistemic_gate_beats_excellence() -> None:
    assert f_v5(_with(_vector(*[0.90] * 11), cer=0.28)) == Mode.M5


def test_appendix_d_b03_edge_falls_conservative() -> None:
    b03 = _vector(*[0.85] * 11)
    assert action_score(b03) == Decimal("0.8500")
    assert f_v5(b03) == Mode.M2


# -- f_v5 properties -------------------------------------------------------------------

S_DIMS = tuple(ORACLE_WEIGHTS)
# Floors that keep every gate open (hundredths): survival, epistemic, authority gate.
GATE_FLOORS = {"sov": 15, "ext": 10, "csq": 10, "cer": 30, "evd": 25, "aut": 30}
EDGES = {85: ("M2", "M1"), 70: ("M3", "M2"), 55: ("M4", "M3"), 40: ("M7", "M4"), 25: ("M8", "M7")}


def _edge_base(edge: int) -> dict[str, int]:
    """A gate-passing vector (hundredths, aut aside) whose S is exactly `edge`/100."""
    base = dict.fromkeys(S_DIMS, edge)
    if edge == 25:
        # cer must reach 0.30: +.05·.03 = +.0015, paid back by ine -.03·.05.
        base.update(cer=30, ine=22)
    return base


def _in_bounds(values: Mapping[str, int]) -> bool:
    return all(
        GATE_FLOORS.get(dim, 0) <= value <= 100 for dim, value in values.items()
    )  # fmt: skip


def _transfer(values: dict[str, int], move: tuple[str, str, int]) -> dict[str, int]:
    """Shift value between two dims keeping S constant; unchanged if it leaves bounds."""
    first, second, steps = move
    if first == second:
        return values
    w1, w2 = ORACLE_WEIGHTS[first], ORACLE_WEIGHTS[second]
    common = gcd(w1, w2)
    moved = dict(values)
    moved[first] += (w2 // common) * steps
    moved[second] -= (w1 // common) * steps
    return moved if _in_bounds(moved) else values


def _as_floats(values: Mapping[str, int], aut: int) -> dict[str, float]:
    return {dim: (aut if dim == "aut" else values[dim]) / 100 for dim in DIMENSIONS}


MOVES = st.lists(
    st.tuples(st.sampled_from(S_DIMS), st.sampled_from(S_DIMS), st.integers(-4, 4)),
    max_size=25,
)


@given(edge=st.sampled_from(sorted(EDGES)), moves=MOVES, aut=st.integers(55, 100))
def test_score_exactly_on_a_band_edge_falls_conservative(
    edge: int, moves: list[tuple[str, str, int]], aut: int
) -> None:
    values = reduce(_transfer, moves, _edge_base(edge))
    vector = _as_floats(values, aut)
    assert oracle_score(vector) == edge * 100
    assert action_score(vector) == Decimal(edge) / 100
    conservative, _ = EDGES[edge]
    assert f_v5(vector) == conservative


@given(edge=st.sampled_from(sorted(EDGES)), moves=MOVES, aut=st.integers(55, 100))
def test_score_just_above_a_band_edge_is_less_conservative(
    edge: int, moves: list[tuple[str, str, int]], aut: int
) -> None:
    values = reduce(_transfer, moves, _edge_base(edge))
    # The lightest dim with room to grow adds the smallest possible step to S.
    dim = min((d for d in S_DIMS if values[d] < 100), key=ORACLE_WEIGHTS.__getitem__)
    values[dim] += 1
    vector = _as_floats(values, aut)
    assert action_score(vector) == Decimal(edge * 100 + ORACLE_WEIGHTS[dim]) / 10000
    _, less_conservative = EDGES[edge]
    assert f_v5(vector) == less_conservative


def _two_dp(low: int = 0, high: int = 100) -> st.SearchStrategy[float]:
    return st.integers(low, high).map(lambda n: n / 100)


@st.composite
def open_vectors(draw: st.DrawFn) -> dict[str, float]:
    """Vectors on which no gate fires (aut may still be under the 0.55 cap)."""
    return {dim: draw(_two_dp(GATE_FLOORS.get(dim, 0))) for dim in DIMENSIONS}


GATES: list[tuple[str, dict[str, float], dict[str, float], str, str]] = [
    # (step, at the threshold, just below it, mode, trace)
    ("STEP-1", {"sov": 0.15}, {"sov": 0.14}, "M8", "STEP-1 survival: sov<0.15"),
    ("STEP-1", {"ext": 0.10}, {"ext": 0.09}, "M8", "STEP-1 survival: ext<0.10"),
    (
        "STEP-1",
        {"csq": 0.10, "rev": 0.19},
        {"csq": 0.09, "rev": 0.19},
        "M8",
        "STEP-1 survival: csq<0.10 and rev<0.20",
    ),
    (
        "STEP-1",
        {"csq": 0.09, "rev": 0.20},
        {"csq": 0.09, "rev": 0.19},
        "M8",
        "STEP-1 survival: csq<0.10 and rev<0.20",
    ),
    ("STEP-2", {"cer": 0.30}, {"cer": 0.29}, "M5", "STEP-2 epistemic gate: cer<0.30 or evd<0.25"),
    ("STEP-2", {"evd": 0.25}, {"evd": 0.24}, "M5", "STEP-2 epistemic gate: cer<0.30 or evd<0.25"),
    ("STEP-3", {"aut": 0.30}, {"aut": 0.29}, "M6", "STEP-3 authority gate: aut<0.30"),
]


@pytest.mark.parametrize("gate", GATES, ids=lambda g: f"{g[0]}-{'-'.join(g[1])}")
@given(vector=open_vectors())
def test_gates_are_strict(
    gate: tuple[str, dict[str, float], dict[str, float], str, str], vector: dict[str, float]
) -> None:
    step, at_threshold, below, mode, trace = gate
    on_edge = decide(_with(vector, **at_threshold))
    assert on_edge.step > step  # a value exactly on a threshold does not trigger it
    assert f_v5_trace(_with(vector, **below)) == (mode, trace)


@given(vector=open_vectors(), aut=_two_dp(30, 100))
def test_authority_cap(vector: dict[str, float], aut: float) -> None:
    uncapped = f_v5(_with(vector, aut=1.0))
    capped = aut < 0.55 and uncapped in (Mode.M1, Mode.M2)
    decision = decide(_with(vector, aut=aut))
    assert decision.mode == (Mode.M3 if capped else uncapped)
    assert (decision.step == "STEP-5") == capped


def test_authority_cap_edge_is_strict() -> None:
    high = _vector(*[0.90] * 11)
    assert f_v5(_with(high, aut=0.55)) == Mode.M1
    assert f_v5_trace(_with(high, aut=0.54)) == (
        Mode.M3,
        "STEP-5 authority cap: aut<0.55 caps M1/M2 to M3 (S=0.9000)",
    )


TWO_DP_VECTORS = st.lists(_two_dp(), min_size=11, max_size=11).map(lambda v: _vector(*v))


@given(vector=TWO_DP_VECTORS)
def test_f_v5_is_total_and_agrees_with_the_oracle(vector: dict[str, float]) -> None:
    mode = f_v5(vector)
    assert isinstance(mode, Mode)
    assert mode == oracle(vector)
    assert decide(vector).step != "STEP-0"


ANY_VALUE = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.integers(-5, 5),
    st.booleans(),
    st.none(),
    st.text(max_size=3),
)


@given(
    vector=st.dictionaries(
        st.one_of(st.sampled_from(DIMENSIONS), st.text(max_size=4)), ANY_VALUE, max_size=13
    )
)
def test_f_v5_never_raises_on_any_mapping(vector: dict[str, Any]) -> None:
    decision = decide(vector)
    assert isinstance(f_v5(vector), Mode)
    if decision.step == "STEP-0":
        assert decision.mode == Mode.M5


@pytest.mark.parametrize(
    ("change", "why"),
    [
        ({"cer": 0.855}, "two-decimal"),
        ({"cer": 0.1 + 0.2}, "two-decimal"),  # binary arithmetic leaves the 2dp grid
        ({"aut": 1.01}, "outside"),
        ({"aut": -0.01}, "outside"),
        ({"aut": float("nan")}, "finite"),
        ({"aut": True}, "not a number"),
        ({"drift": 0.5}, "unknown dim drift"),
    ],
)
def test_step_0_reads_an_unparseable_vector_as_m5(change: dict[str, Any], why: str) -> None:
    vector: dict[str, Any] = _with(_vector(*EXAMPLE_VALUES), **change)
    decision = decide(vector)
    assert (decision.mode, decision.step) == (Mode.M5, "STEP-0")
    assert why in decision.detail
    with pytest.raises(IlangError) as raised:
        action_score(vector)
    assert raised.value.code == "E303"


def test_step_0_for_an_omitted_dim() -> None:
    vector = _vector(*EXAMPLE_VALUES)
    del vector["ext"]
    assert f_v5_trace(vector) == (Mode.M5, "STEP-0 default: omitted dim ext")


def test_integer_endpoints_are_values() -> None:
    assert f_v5(dict.fromkeys(DIMENSIONS, 1)) == Mode.M1
    assert f_v5(dict.fromkeys(DIMENSIONS, 0)) == Mode.M8


# -- the model and its serialization ---------------------------------------------------


def test_render_is_the_frozen_form() -> None:
    judge = Judge(
        vector=EXAMPLE_VALUES, mode=Mode.M2, conf=0.87, rationale=SPEC_EXAMPLE.split("R:")[1]
    )
    assert judge.render() == SPEC_EXAMPLE
    assert Judge.parse(SPEC_EXAMPLE) == judge


def test_conf_is_optional() -> None:
    judge = Judge(vector=EXAMPLE_VALUES, mode="M2", rationale="ok")
    assert judge.render().splitlines()[2] == "M:M2"
    assert Judge.parse(judge.render()) == judge


def test_from_vector_takes_the_f_v5_mode() -> None:
    judge = Judge.from_vector(_vector(*EXAMPLE_VALUES), "ok", conf=0.5)
    assert judge.mode == Mode.M2
    assert judge.version == "5.0"


@pytest.mark.parametrize(
    "fields",
    [
        {"vector": EXAMPLE_VALUES[:10]},
        {"vector": (*EXAMPLE_VALUES[:10], 0.905)},
        {"vector": (*EXAMPLE_VALUES[:10], 1.5)},
        {"mode": "M9"},
        {"mode": "EXECUTE"},
        {"conf": 0.875},
        {"conf": True},
        {"rationale": ""},
        {"rationale": "x" * 121},
        {"rationale": "a|b"},
        {"rationale": "two\nlines"},
        {"rationale": " padded"},
        {"version": "5.1"},
        {"extra": 1},
    ],
)
def test_model_rejects_schema_breaks(fields: dict[str, Any]) -> None:
    base: dict[str, Any] = {"vector": EXAMPLE_VALUES, "mode": "M2", "conf": 0.87, "rationale": "ok"}
    with pytest.raises(ValidationError):
        Judge(**{**base, **fields})


def test_model_is_frozen() -> None:
    judge = Judge.parse(SPEC_EXAMPLE)
    with pytest.raises(ValidationError):
        judge.mode = Mode.M1  # type: ignore[misc]


def test_negative_zero_renders_as_zero() -> None:
    judge = Judge(vector=(*EXAMPLE_VALUES[:10], -0.0), mode="M8", rationale="ok")
    assert "ext=0.00]" in judge.render()


RATIONALES = (
    st.text(
        alphabet=st.characters(
            exclude_categories=("Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"), exclude_characters="|"
        ),
        min_size=1,
        max_size=120,
    )
    .map(str.strip)
    .filter(bool)
)


@st.composite
def judges(draw: st.DrawFn) -> Judge:
    values = draw(st.lists(_two_dp(), min_size=11, max_size=11))
    allowed = abstain_modes(_vector(*values))
    mode = draw(st.sampled_from(sorted(allowed) if allowed is not None else list(Mode)))
    conf = draw(st.none() | _two_dp())
    return Judge(vector=tuple(values), mode=mode, conf=conf, rationale=draw(RATIONALES))


@given(judge=judges(), indent=st.sampled_from(["", "  ", "\t"]), header_indent=st.booleans())
def test_parse_inverts_render(judge: Judge, indent: str, header_indent: bool) -> None:
    text = judge.render()
    assert Judge.parse(text) == judge
    assert Judge.parse(text + "\n") == judge
    assert Judge.parse(text.replace("\n", "\r\n")) == judge
    header, *body = text.split("\n")
    lead = "  " if header_indent else ""
    shifted = "\n".join([lead + header, *(lead + indent + line for line in body)])
    assert Judge.parse(shifted) == judge
    pairs = [(number, line) for number, line in enumerate(body, start=8)]
    assert Judge.from_body("v5.0", pairs) == judge
    assert Judge.parse(judge.render()).render() == text


@given(text=st.text(max_size=200))
def test_parse_raises_only_ilang_error_on_any_text(text: str) -> None:
    _parse_or_ilang_error(text)


STRUCTURAL = [*"::{}[]|,=.:0123456789 \tVMR\n", "M2", "v5.0", "int=", "conf:", "\u3000", "："]


@st.composite
def mutated_blocks(draw: st.DrawFn) -> str:
    text = draw(judges()).render()
    for _ in range(draw(st.integers(1, 4))):
        position = draw(st.integers(0, len(text)))
        kind = draw(st.sampled_from(["insert", "delete", "replace"]))
        piece = draw(st.sampled_from(STRUCTURAL))
        if kind == "insert":
            text = text[:position] + piece + text[position:]
        elif kind == "delete":
            text = text[:position] + text[position + 1 :]
        else:
            text = text[:position] + piece + text[position + 1 :]
    return text


@settings(max_examples=300)
@given(text=mutated_blocks())
def test_parse_raises_only_ilang_error_on_mutated_blocks(text: str) -> None:
    parsed = _parse_or_ilang_error(text)
    if parsed is not None:
        assert Judge.parse(parsed.render()) == parsed


def _parse_or_ilang_error(text: str) -> Judge | None:
    try:
        return Judge.parse(text)
    except IlangError as error:
        assert error.code in ("E300", "E303")
        assert error.line >= 1 and error.col >= 1
        return None


# -- schema breaks ---------------------------------------------------------------------

HEADER, V_LINE, M_LINE, R_LINE = SPEC_EXAMPLE.split("\n")


def _block(*, header: str = HEADER, v: str = V_LINE, m: str = M_LINE, r: str = R_LINE) -> str:
    return "\n".join((header, v, m, r))


def _v(**changes: str) -> str:
    items = V_LINE[3:-1].split(",")
    pairs = dict(item.split("=") for item in items)
    pairs.update(changes)
    return "V:[" + ",".join(f"{k}={v}" for k, v in pairs.items()) + "]"


def _v_items(items: list[str]) -> str:
    return "V:[" + ",".join(items) + "]"


EXAMPLE_ITEMS = V_LINE[3:-1].split(",")
SWAPPED = [EXAMPLE_ITEMS[1], EXAMPLE_ITEMS[0], *EXAMPLE_ITEMS[2:]]
LONG_R = "R:" + "x" * 121

# (name, text, code, line, col); `line` counts from the header line = 1.
BREAKS: list[tuple[str, str, str, int, int | None]] = [
    ("empty text", "  \n", "E300", 1, 1),
    ("version v5.1", _block(header="::JUDGE{v5.1}"), "E303", 1, 9),
    ("version without v", _block(header="::JUDGE{5.0}"), "E303", 1, 9),
    ("extra header field", _block(header="::JUDGE{v5.0|src:x}"), "E303", 1, 9),
    ("header without brace", _block(header="::JUDGE v5.0"), "E300", 1, 1),
    ("unclosed header", _block(header="::JUDGE{v5.0"), "E300", 1, 8),
    ("lower-case header", _block(header="::judge{v5.0}"), "E300", 1, 1),
    ("full-width header", _block(header="：：JUDGE｛v5.0｝"), "E300", 1, 1),
    ("other declaration", _block(header="::STATE{v5.0}"), "E300", 1, 1),
    ("token after header", _block(header="::JUDGE{v5.0} M:M2"), "E303", 1, 15),
    ("extra field line", SPEC_EXAMPLE + "\nX:foo", "E303", 5, 1),
    ("extra trait line", SPEC_EXAMPLE + "\nT:more", "E303", 5, 1),
    ("extra tag line", SPEC_EXAMPLE + "\n[NOTE] hi", "E303", 5, 1),
    ("second R line", SPEC_EXAMPLE + "\nR:again", "E303", 5, 1),
    ("prose line", SPEC_EXAMPLE + "\nhello there", "E300", 5, 1),
    ("full-width colon", _block(v=V_LINE.replace("V:", "V：")), "E300", 2, 1),
    ("R missing", "\n".join((HEADER, V_LINE, M_LINE)), "E303", 4, 1),
    ("M missing", "\n".join((HEADER, V_LINE, R_LINE)), "E303", 3, 1),
    ("M before V", "\n".join((HEADER, M_LINE, V_LINE, R_LINE)), "E303", 2, 1),
    ("duplicated V", "\n".join((HEADER, V_LINE, V_LINE, M_LINE, R_LINE)), "E303", 3, 1),
    ("lower-case key", _block(v=V_LINE.replace("V:", "v:")), "E303", 2, 1),
    ("blank line inside", "\n".join((HEADER, V_LINE, "", M_LINE, R_LINE)), "E303", 3, 1),
    ("omitted dim", _block(v=_v_items([EXAMPLE_ITEMS[0], *EXAMPLE_ITEMS[2:]])), "E303", 2, 13),
    ("omitted last dim", _block(v=_v_items(EXAMPLE_ITEMS[:10])), "E303", 2, None),
    ("reordered dims", _block(v=_v_items(SWAPPED)), "E303", 2, 4),
    (
        "duplicated dim",
        _block(v=_v_items([*EXAMPLE_ITEMS[:2], EXAMPLE_ITEMS[1], *EXAMPLE_ITEMS[3:]])),
        "E303",
        2,
        22,
    ),
    (
        "PRE drift",
        _block(v=_v_items([*EXAMPLE_ITEMS[:9], "drift=0.40", EXAMPLE_ITEMS[10]])),
        "E303",
        2,
        None,
    ),
    ("twelve items", _block(v=_v_items([*EXAMPLE_ITEMS, "ext=0.90"])), "E303", 2, None),
    ("value above 1", _block(v=_v(cap="1.01")), "E303", 2, 17),
    ("one decimal", _block(v=_v(cap="0.6")), "E303", 2, 17),
    ("three decimals", _block(v=_v(cap="0.600")), "E303", 2, 17),
    ("negative", _block(v=_v(cap="-0.10")), "E303", 2, 17),
    ("not a number", _block(v=_v(cap="high")), "E303", 2, 17),
    ("full-width digits", _block(v=_v(cap="０.６０")), "E303", 2, 17),
    ("space in vector", _block(v=V_LINE.replace(",cap", ", cap")), "E303", 2, 13),
    ("unclosed vector", _block(v=V_LINE[:-1]), "E300", 2, 3),
    ("nested list", _block(v=_v(cap="[0.60]")), "E300", 2, 17),
    ("not a vector", _block(v="V:int=0.80"), "E303", 2, 3),
    ("text after vector", _block(v=V_LINE + "|conf:0.5"), "E303", 2, None),
    ("empty item", _block(v=V_LINE.replace(",cap", ",,cap")), "E300", 2, 13),
    ("item without =", _block(v=V_LINE.replace("int=0.80", "0.80")), "E303", 2, 4),
    ("mode M9", _block(m="M:M9"), "E303", 3, 3),
    ("mode M0", _block(m="M:M0|conf:0.87"), "E303", 3, 3),
    ("lower-case mode", _block(m="m:M2"), "E303", 3, 1),
    ("mode m2", _block(m="M:m2"), "E303", 3, 3),
    ("PRE mode EXECUTE", _block(m="M:EXECUTE|conf:0.87"), "E303", 3, 3),
    ("PRE mode RETREAT", _block(m="M:RETREAT"), "E303", 3, 3),
    ("mode name", _block(m="M:EXEC_AUDIT"), "E303", 3, 3),
    ("empty mode", _block(m="M:"), "E303", 3, 3),
    ("mode with space", _block(m="M: M2"), "E303", 3, 3),
    ("conf one decimal", _block(m="M:M2|conf:0.9"), "E303", 3, 11),
    ("conf above 1", _block(m="M:M2|conf:1.50"), "E303", 3, 11),
    ("conf twice", _block(m="M:M2|conf:0.87|conf:0.87"), "E303", 3, 16),
    ("extra M field", _block(m="M:M2|conf:0.87|why:x"), "E303", 3, 16),
    ("trailing pipe", _block(m="M:M2|"), "E300", 3, 6),
    ("field without colon", _block(m="M:M2|0.87"), "E300", 3, 6),
    ("empty R", _block(r="R:"), "E303", 4, 3),
    ("blank R", _block(r="R:   "), "E303", 4, None),
    ("R 121 chars", _block(r=LONG_R), "E303", 4, 123),
    ("R with pipe", _block(r="R:ok|conf:0.99"), "E303", 4, 5),
    ("R with tab", _block(r="R:a\tb"), "E303", 4, 4),
    ("R with zero-width space", _block(r="R:a\u200bb"), "E303", 4, 4),
    ("R with line separator", _block(r="R:a\u2028b"), "E303", 4, 4),
    ("abstain rule", _block(v=_v(cer="0.20")), "E303", 3, 3),
    ("abstain rule evd", _block(v=_v(evd="0.24"), m="M:M6"), "E303", 3, 3),
    ("abstain survival", _block(v=_v(cer="0.20", sov="0.10"), m="M:M4"), "E303", 3, 3),
    ("body less indented", "  " + SPEC_EXAMPLE.replace("\n", "\n "), "E300", 2, 1),
    ("body indent mixed", SPEC_EXAMPLE.replace("\nM:", "\n  M:"), "E300", 3, 1),
]


@pytest.mark.parametrize(
    ("text", "code", "line", "col"), [case[1:] for case in BREAKS], ids=[case[0] for case in BREAKS]
)
def test_schema_breaks(text: str, code: str, line: int, col: int | None) -> None:
    with pytest.raises(IlangError) as raised:
        Judge.parse(text, line=10)
    error = raised.value
    assert (error.code, error.line) == (code, line + 9), error
    if col is not None:
        assert error.col == col, error


def test_r_of_exactly_120_characters_is_valid() -> None:
    judge = Judge.parse(_block(r="R:" + "理" * 120))
    assert len(judge.rationale) == 120


def test_r_may_be_prose_after_a_space() -> None:
    judge = Judge.parse(_block(r="R: 授权的配置变更, reversible (audit kept)"))
    assert judge.rationale == "授权的配置变更, reversible (audit kept)"


def test_pre_mode_message_names_the_replacement() -> None:
    with pytest.raises(IlangError) as raised:
        Judge.parse(_block(m="M:SANDBOX"))
    assert "superseded" in raised.value.message and "M2" in raised.value.message


def test_drift_message_names_ine() -> None:
    with pytest.raises(IlangError) as raised:
        Judge.parse(_block(v=_v_items([*EXAMPLE_ITEMS[:9], "drift=0.40", EXAMPLE_ITEMS[10]])))
    assert "ine" in raised.value.message


def test_abstain_erratum_lets_m8_and_m5_through_on_a_survival_hit() -> None:
    v = _v(cer="0.20", sov="0.10")
    assert Judge.parse(_block(v=v, m="M:M8")).mode == Mode.M8
    assert Judge.parse(_block(v=v, m="M:M5")).mode == Mode.M5


def test_blank_lines_around_the_block_are_not_part_of_it() -> None:
    assert Judge.parse("\n\n" + SPEC_EXAMPLE + "\n\n  \n") == Judge.parse(SPEC_EXAMPLE)
    with pytest.raises(IlangError) as raised:
        Judge.parse("\n\n" + HEADER + "\nX:1", line=5)
    assert (raised.value.line, raised.value.code) == (8, "E303")


# -- from_body -------------------------------------------------------------------------


def test_from_body_reports_document_lines() -> None:
    body = [(41, V_LINE), (42, "M:M9"), (43, R_LINE)]
    with pytest.raises(IlangError) as raised:
        Judge.from_body("v5.0", body)
    assert (raised.value.code, raised.value.line, raised.value.col) == ("E303", 42, 3)


def test_from_body_checks_the_header() -> None:
    body = [(41, V_LINE), (42, M_LINE), (43, R_LINE)]
    assert Judge.from_body("v5.0", body) == Judge.parse(SPEC_EXAMPLE)
    with pytest.raises(IlangError) as raised:
        Judge.from_body("v4.0", body)
    assert (raised.value.code, raised.value.line) == ("E303", 40)
    with pytest.raises(IlangError) as raised:
        Judge.from_body("v5.0", body[:2], header_line=7)
    assert (raised.value.code, raised.value.line) == ("E303", 43)


def test_from_body_ignores_trailing_blanks_but_not_inner_ones() -> None:
    body = [(2, V_LINE), (3, M_LINE), (4, R_LINE), (5, "")]
    assert Judge.from_body("v5.0", body) == Judge.parse(SPEC_EXAMPLE)
    with pytest.raises(IlangError) as raised:
        Judge.from_body("v5.0", [(2, V_LINE), (3, ""), (4, M_LINE), (5, R_LINE)])
    assert (raised.value.code, raised.value.line) == ("E303", 3)


def test_from_body_with_no_body() -> None:
    with pytest.raises(IlangError) as raised:
        Judge.from_body("v5.0", [], header_line=3)
    assert (raised.value.code, raised.value.line) == ("E303", 4)


# -- judge_findings --------------------------------------------------------------------


def _judge(values: Mapping[str, float], mode: str) -> Judge:
    return Judge(vector=tuple(values[d] for d in DIMENSIONS), mode=mode, rationale="r")


def test_findings_mode_mismatch_names_mode_and_step() -> None:
    judge = _judge(_vector(*EXAMPLE_VALUES), "M1")
    findings = judge_findings(judge, line=20)
    assert len(findings) == 1
    finding = findings[0]
    assert (finding.code, finding.line, finding.col, finding.severity) == ("E303", 22, 3, "error")
    assert "M2" in finding.message and "STEP-4" in finding.message and "S=0.7805" in finding.message


def test_findings_indent_shifts_the_column() -> None:
    finding = judge_findings(_judge(_vector(*EXAMPLE_VALUES), "M3"), line=1, indent=4)[0]
    assert finding.col == 7


def test_findings_abstain_violation_is_one_finding() -> None:
    judge = _judge(_with(_vector(*EXAMPLE_VALUES), cer=0.20), "M2")
    findings = judge_findings(judge)
    assert len(findings) == 1
    assert "abstain" in findings[0].message and "M5" in findings[0].message
    assert "STEP-2" in findings[0].message


def test_findings_m5_on_survival_hit_is_schema_valid_but_not_f_v5() -> None:
    judge = _judge(_with(_vector(*EXAMPLE_VALUES), cer=0.20, ext=0.05), "M5")
    findings = judge_findings(judge)
    assert len(findings) == 1
    assert "abstain" not in findings[0].message
    assert "M8" in findings[0].message and "STEP-1 survival: ext<0.10" in findings[0].message


def test_findings_m8_on_survival_hit_under_epistemic_gate_is_clean() -> None:
    judge = _judge(_with(_vector(*EXAMPLE_VALUES), evd=0.10, sov=0.05), "M8")
    assert judge_findings(judge) == []


def test_findings_authority_cap() -> None:
    judge = _judge(_with(_vector(*[0.90] * 11), aut=0.50), "M1")
    (finding,) = judge_findings(judge)
    assert "M3" in finding.message and "STEP-5" in finding.message


@given(judge=judges())
def test_findings_are_empty_exactly_when_mode_is_f_v5(judge: Judge) -> None:
    findings = judge_findings(judge)
    assert (findings == []) == (judge.mode == f_v5(judge.as_mapping()))
    assert all(f.code == "E303" for f in findings)
