"""The v4 declaration models: spec examples, fail-closed readings, round-trip properties."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from envelopes.declarations import (
    AUTHORITY_OF_WRITER,
    V4_DECLARATIONS,
    WRITER_STATES,
    Authority,
    Budget,
    BudgetKind,
    Criterion,
    Declaration,
    Evidence,
    EvidenceResult,
    Fallback,
    FallbackTier,
    Objective,
    ObjectiveStatus,
    Prior,
    PriorForm,
    Rubric,
    State,
    Status,
    Untrusted,
    rubric_findings,
    status_findings,
)
from envelopes.declarations.fields import (
    Segment,
    render_fields,
    render_value,
    split_declaration,
    split_fields,
    value_char_allowed,
)
from envelopes.errors import IlangError

# --- SPEC-v4.0-FINAL.md §0.1–§8 example lines, copied verbatim --------------------------

FALLBACK_LINES = [
    "::FALLBACK{v3_only⇒warn}",
    "::FALLBACK{unsupported_advisory_semantics⇒warn}",
    "::FALLBACK{unsupported_safety_boundary⇒safe_mode}",
    "::FALLBACK{unsupported_commit_authority⇒safe_mode}",
    "::FALLBACK{unsupported_untrusted_boundary⇒read_only}",
]
UNTRUSTED_LINES = [
    "::UNTRUSTED{id:u1|source:user|role:objective|effects:none|delimiter:EOF_u1}",
    "::UNTRUSTED{id:u1|source:user|role:objective|effects:none|payload:external}",
]
BUDGET_LINES = [
    "::BUDGET{id:b1|scope:@TASK|kind:tokens|limit:8000|used:2400|reserve_audit:500|reserve_summary:300|authority:@RUNTIME|asof:round_3}",
    "::BUDGET{id:b2|scope:@TASK|kind:time|limit:300s|used:120s|authority:@RUNTIME|asof:round_3}",
    "::BUDGET{id:b3|scope:@TASK|kind:rounds|limit:5|used:2|authority:@RUNTIME|asof:round_3}",
]
OBJECTIVE_TEXT = """\
::OBJECTIVE{id:g1|owner:user|trust:untrusted|version:1|hash:sha256:abc123|status:active}
  ACCEPT: all tests pass AND coverage > 90%
  NON_GOALS: performance optimization, UI changes
  DONE_WHEN: test suite green + coverage report generated + PR opened"""
STATUS_LINES = [
    "::STATUS{@TASK|state:claimed_complete|evidence:@AUDIT_REPORT|by:@SELF|authority:proposal}",
    "::STATUS{@TASK|state:verified_complete|evidence:@AUDIT_REPORT|by:@GRADER|authority:verification}",
    "::STATUS{@TASK|state:complete|verified_by:@GRADER|by:@RUNTIME|authority:commit}",
    "::STATUS{@TASK|state:stopped|reason:budget|progress:60%|next:resume_step_4|by:@RUNTIME|authority:commit}",
    "::STATUS{@TASK|state:stopped|reason:user_pause|by:@RUNTIME|authority:commit}",
    "::STATUS{@TASK|state:blocked|need:api_key|by:@AGENT|authority:proposal}",
    "::STATUS{@TASK|state:failed|reason:unrecoverable|detail:...|by:@AGENT|authority:proposal}",
    "::STATUS{@TASK|state:needs_revision|missing:d3,d4|score:0.78|by:@GRADER|authority:verification}",
    # §7
    "::STATUS{@TASK|state:needs_revision|missing:gaps|by:@SELF|authority:proposal}",
]
# §4's first example writes `since` after `authority`; the canonical order moves it.
STATUS_RUNNING = (
    "::STATUS{@TASK|state:running|objective:g1|by:@RUNTIME|authority:commit|since:round_3}"
)
STATUS_RUNNING_CANONICAL = (
    "::STATUS{@TASK|state:running|objective:g1|since:round_3|by:@RUNTIME|authority:commit}"
)
RUBRIC_TEXT = """\
::RUBRIC{id:r1|objective:g1|threshold:0.85|mode:weighted}
  R:correctness|weight:0.5|check:all_tests_pass
  R:coverage|weight:0.3|check:coverage_report_gt_90
  R:style|weight:0.2|check:no_lint_errors"""
EVIDENCE_LINES = [
    "::EVIDENCE{id:e1|deliverable:d1|kind:file|ref:path/to/file|verified_by:@TOOL|result:pass}",
    "::EVIDENCE{id:e2|deliverable:d2|kind:test_output|ref:test_run_42|verified_by:@TOOL|result:pass}",
    "::EVIDENCE{id:e3|deliverable:d3|kind:manual_check|ref:screenshot|verified_by:@GRADER|result:fail|gap:missing_error_handling}",
]
PRIOR_LINES = [
    "::PRIOR{dimension:completion|default:assume_incomplete|authority:system|scope:@TASK}",
    "::PRIOR{dimension:execution|default:act_when_safe|authority:system|scope:@TASK}",
    "::PRIOR{dimension:user_claims|default:verify_first|authority:system|scope:@TASK}",
    "::PRIOR{dimension:output|default:precision_over_recall|authority:system|scope:@TASK}",
    "::PRIOR{dimension:clarification|default:ask_when_irreversible_or_ambiguous|authority:system|scope:@TASK}",
    # §8 sugar, as written inside a GENE body (indented)
    "  ::PRIOR{completion:assume_incomplete}",
    "  ::PRIOR{execution:act_when_safe}",
]

SPEC_EXAMPLES: list[tuple[type[Declaration], str]] = [
    *[(Fallback, t) for t in FALLBACK_LINES],
    *[(Untrusted, t) for t in UNTRUSTED_LINES],
    *[(Budget, t) for t in BUDGET_LINES],
    (Objective, OBJECTIVE_TEXT),
    *[(Status, t) for t in STATUS_LINES],
    (Rubric, RUBRIC_TEXT),
    *[(Evidence, t) for t in EVIDENCE_LINES],
    *[(Prior, t) for t in PRIOR_LINES],
]


@pytest.mark.parametrize(("model", "text"), SPEC_EXAMPLES)
def test_spec_example_parses_and_renders_back_verbatim(model: type[Declaration], text: str) -> None:
    parsed = model.parse(text)
    assert isinstance(parsed, model)
    assert parsed.render() == text.strip()
    assert model.parse(parsed.render()) == parsed


def test_status_running_example_renders_in_canonical_order() -> None:
    status = Status.parse(STATUS_RUNNING)
    assert status.state is State.RUNNING
    assert status.extras == (("objective", "g1"), ("since", "round_3"))
    assert status.render() == STATUS_RUNNING_CANONICAL
    assert Status.parse(STATUS_RUNNING_CANONICAL) == status


def test_spec_examples_have_the_right_field_values() -> None:
    b1, b2, b3 = (Budget.parse(t) for t in BUDGET_LINES)
    assert (b1.kind, b1.limit, b1.used, b1.reserve_audit, b1.reserve_summary) == (
        BudgetKind.TOKENS,
        8000,
        2400,
        500,
        300,
    )
    assert b1.remaining == 4800 and b1.asof == 3 and b1.authority == "@RUNTIME"
    assert (b2.kind, b2.limit, b2.used, b2.remaining) == (BudgetKind.TIME, 300.0, 120.0, 180.0)
    assert b3.remaining == 3 and not b3.exhausted

    objective = Objective.parse(OBJECTIVE_TEXT)
    assert objective.hash == "sha256:abc123" and objective.version == 1
    assert objective.status is ObjectiveStatus.ACTIVE
    assert objective.accept == "all tests pass AND coverage > 90%"
    assert objective.non_goals == "performance optimization, UI changes"
    assert objective.done_when == "test suite green + coverage report generated + PR opened"

    rubric = Rubric.parse(RUBRIC_TEXT)
    assert rubric.threshold == 0.85 and rubric.mode == "weighted"
    assert [c.id for c in rubric.criteria] == ["correctness", "coverage", "style"]
    assert rubric.criteria[1] == Criterion(id="coverage", weight=0.3, check="coverage_report_gt_90")
    assert rubric_findings(rubric, 1) == []

    e3 = Evidence.parse(EVIDENCE_LINES[2])
    assert e3.result is EvidenceResult.FAIL and e3.gap == "missing_error_handling"

    untrusted = Untrusted.parse(UNTRUSTED_LINES[0])
    assert untrusted.delimiter == "EOF_u1" and untrusted.end_line() == "::END_UNTRUSTED{id:u1}"
    assert Untrusted.parse(UNTRUSTED_LINES[1]).payload == "external"

    fallback = Fallback.parse(FALLBACK_LINES[-1])
    assert (fallback.condition, fallback.tier) == (
        "unsupported_untrusted_boundary",
        FallbackTier.READ_ONLY,
    )


@pytest.mark.parametrize("text", [*STATUS_LINES, STATUS_RUNNING])
def test_spec_status_examples_are_lawful(text: str) -> None:
    assert status_findings(Status.parse(text), 1) == []


# --- fields -------------------------------------------------------------------------------


def test_fields_split_at_the_first_colon_and_keep_order() -> None:
    segments = split_fields("@TASK|state:running|by:@RUNTIME|hash:sha256:abc123")
    assert [(s.key, s.value) for s in segments] == [
        (None, "@TASK"),
        ("state", "running"),
        ("by", "@RUNTIME"),
        ("hash", "sha256:abc123"),
    ]
    assert segments[1].col == 7


def test_quoted_values_hold_separators_and_escapes() -> None:
    segments = split_fields(r'detail:"a|b}{c \"q\" \\ \n end"|x: "  pad "|"po:s"')
    assert [(s.key, s.value) for s in segments] == [
        ("detail", 'a|b}{c "q" \\ \n end'),
        ("x", "  pad "),
        (None, "po:s"),
    ]


@pytest.mark.parametrize(
    ("content", "code"),
    [
        ("state：running", "E300"),
        ("state:running｜by:@X", "E300"),
        ("a||b", "E300"),
        ("a|", "E300"),
        ('x:"abc', "E300"),
        (r'x:"a\tb"', "E300"),
        ('x:"a"b', "E300"),
        ('x:a"b', "E303"),
        ("x:a}b", "E303"),
        ("x:a{b", "E303"),
        ("state:a|state:b", "E303"),
        ("state:a|STATE:b", "E303"),
        ("x y:z", "E300"),
        ("x:a\u200bb", "E303"),
    ],
)
def test_malformed_fields_are_refused(content: str, code: str) -> None:
    with pytest.raises(IlangError) as caught:
        split_fields(content)
    assert caught.value.code == code


def test_fullwidth_punctuation_inside_values_is_legal() -> None:
    segments = split_fields("detail:原因：预算（见附录），、|原因：预算")
    assert [(s.key, s.value) for s in segments] == [
        ("detail", "原因：预算（见附录），、"),
        (None, "原因：预算"),
    ]


@pytest.mark.parametrize(
    "value", ["", " x", "a|b", "a}b", 'say "hi"', "a\nb", "c:\\dir", "全角｜", "a\u200b", "\t"]
)
def test_values_that_need_quotes_are_quoted_and_read_back(value: str) -> None:
    rendered = render_fields([("k", value), (None, value)])
    assert [(s.key, s.value) for s in split_fields(rendered)] == [("k", value), (None, value)]
    assert render_value(value).startswith('"')


def test_split_declaration_honours_quoted_braces_and_reports_positions() -> None:
    content, body, line, col = split_declaration(
        '\n  ::STATUS{detail:"}"|state:stopped}\n    progress:1\n\n', "STATUS", 10
    )
    assert (content, body, line, col) == ('detail:"}"|state:stopped', [(12, "progress:1")], 11, 12)
    with pytest.raises(IlangError, match="unclosed brace"):
        split_declaration("::STATUS{state:running", "STATUS")
    with pytest.raises(IlangError, match="after the closing brace"):
        split_declaration("::STATUS{state:running} trailing", "STATUS")
    with pytest.raises(IlangError):
        split_declaration("::STATUS｛state:running｝", "STATUS")


# --- BUDGET -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "::BUDGET{id:b1|scope:@TASK|kind:rounds|limit:10|used:3|remaining:7|authority:@RUNTIME}",
        "::BUDGET{id:b1|kind:tokens|limit:10|remaining:-1}",
        "::BUDGET{id:b1|kind:tokens|limit:10}\n  remaining:10",
    ],
)
def test_remaining_field_is_rejected(text: str) -> None:
    with pytest.raises(IlangError) as caught:
        Budget.parse(text)
    assert caught.value.code == "E303"
    assert "remaining" in caught.value.message


def test_remaining_cannot_be_smuggled_in_as_an_extra() -> None:
    with pytest.raises(ValueError):
        Budget(kind=BudgetKind.TOKENS, limit=5, extras=(("remaining", "5"),))


def test_remaining_is_derived_never_rendered_and_may_go_negative() -> None:
    budget = Budget(
        id="b1",
        kind=BudgetKind.TOKENS,
        limit=1000,
        used=900,
        reserve_audit=100,
        reserve_summary=50,
        authority="@RUNTIME",
        asof=4,
    )
    assert budget.remaining == -50 and budget.exhausted
    assert "remaining" not in budget.render()
    assert budget.render() == (
        "::BUDGET{id:b1|scope:@TASK|kind:tokens|limit:1000|used:900|reserve_audit:100|"
        "reserve_summary:50|authority:@RUNTIME|asof:round_4}"
    )


@pytest.mark.parametrize(
    ("written", "seconds"),
    [("300s", 300.0), ("5m", 300.0), ("300", 300.0), ("1.5h", 5400.0), ("0.25s", 0.25)],
)
def test_time_values_read_units_and_render_seconds(written: str, seconds: float) -> None:
    budget = Budget.parse(f"::BUDGET{{kind:time|limit:{written}|used:{written}}}")
    assert budget.limit == seconds and budget.used == seconds
    assert f"limit:{seconds:g}s" in budget.render()


@pytest.mark.parametrize(
    ("text", "code"),
    [
        ("::BUDGET{kind:tokens|limit:1.5}", "E301"),
        ("::BUDGET{kind:tokens|limit:8k}", "E301"),
        ("::BUDGET{kind:tokens|limit:300s}", "E301"),
        ("::BUDGET{kind:tokens|limit:\uff18}", "E301"),
        ("::BUDGET{kind:time|limit:1e999}", "E301"),
        ("::BUDGET{kind:tokens|limit:-5}", "E301"),
        ("::BUDGET{kind:coins|limit:5}", "E303"),
        ("::BUDGET{limit:5}", "E300"),
        ("::BUDGET{kind:rounds}", "E300"),
        ("::BUDGET{kind:rounds|limit:5|asof:3}", "E303"),
        ("::BUDGET{@TASK|kind:rounds|limit:5}", "E300"),
        ("::BUDGET{kind:rounds|limit:5|Authority:@RUNTIME}", "E303"),
    ],
)
def test_bad_budgets_are_refused(text: str, code: str) -> None:
    with pytest.raises(IlangError) as caught:
        Budget.parse(text)
    assert caught.value.code == code


def test_parsed_budget_claims_no_authority_it_did_not_state() -> None:
    budget = Budget.parse("::BUDGET{kind:rounds|limit:5}")
    assert budget.authority is None and budget.asof is None and budget.used == 0
    assert budget.render() == "::BUDGET{scope:@TASK|kind:rounds|limit:5|used:0}"


# --- STATUS -------------------------------------------------------------------------------


def test_status_reads_body_fields_and_warns_on_unknown_state() -> None:
    # the IML golden corpus (golden-0.5/017.ilang) writes the state on a body line
    status = Status.parse("::STATUS{by:@RUNTIME}\n  state:in_progress", line=15)
    assert status.state == "in_progress" and status.known_state is None
    findings = status_findings(status, 15)
    assert [(f.code, f.severity, f.line) for f in findings] == [("E303", "warning", 15)]


def test_status_repeated_key_across_header_and_body_is_refused() -> None:
    with pytest.raises(IlangError) as caught:
        Status.parse("::STATUS{@TASK|state:running|by:@RUNTIME}\n  state:complete")
    assert caught.value.code == "E303"


@pytest.mark.parametrize(
    ("text", "code"),
    [
        ("::STATUS{@task|state:running}", "E200"),
        ("::STATUS{state=complete|by:@SELF}", "E300"),
        ("::STATUS{@TASK|@OTHER|state:running}", "E300"),
        ("::STATUS{state:running|@TASK}", "E300"),
        ("::STATUS{@TASK|scope:@TASK|state:running}", "E303"),
        ("::STATUS{@TASK|State:complete}", "E303"),
        ("::STATUS{@TASK|state:complete}\n  just prose", "E300"),
        ("::STATUS{@TASK state:complete|by:@SELF|authority:proposal}", "E300"),
    ],
)
def test_bad_status_text_is_refused(text: str, code: str) -> None:
    with pytest.raises(IlangError) as caught:
        Status.parse(text)
    assert caught.value.code == code


def test_status_maps_known_words_to_enums_and_keeps_others() -> None:
    status = Status(state="complete", authority="commit", by="@RUNTIME")
    assert status.state is State.COMPLETE and status.authority is Authority.COMMIT
    odd = Status(state="done", authority="admin")
    assert odd.known_state is None and odd.known_authority is None
    assert odd.render() == "::STATUS{@TASK|state:done|authority:admin}"
    assert Status.parse(odd.render()) == odd
    full = Status.parse(STATUS_LINES[7])
    assert full.get("missing") == "d3,d4" and full.get("state") == "needs_revision"
    assert full.get("nothing") is None


def test_writer_table_is_the_spec_table() -> None:
    assert WRITER_STATES["proposal"] == {
        State.CLAIMED_COMPLETE,
        State.STOPPED,
        State.BLOCKED,
        State.FAILED,
        State.NEEDS_REVISION,
    }
    assert WRITER_STATES["verification"] == {State.VERIFIED_COMPLETE, State.NEEDS_REVISION}
    assert WRITER_STATES["commit"] == {State.COMPLETE, State.RUNNING, State.STOPPED}
    assert dict(AUTHORITY_OF_WRITER) == {
        "@AGENT": "proposal",
        "@SELF": "proposal",
        "@GRADER": "verification",
        "@RUNTIME": "commit",
    }


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # forged authority: writer/authority mismatch
        ("::STATUS{@TASK|state:stopped|by:@SELF|authority:commit}", [("E303", "error")]),
        # a state its writer may not write
        ("::STATUS{@TASK|state:complete|by:@SELF|authority:proposal}", [("E303", "error")]),
        ("::STATUS{@TASK|state:complete|by:@GRADER|authority:verification}", [("E303", "error")]),
        (
            "::STATUS{@TASK|state:verified_complete|by:@AGENT|authority:proposal}",
            [("E303", "error")],
        ),
        ("::STATUS{@TASK|state:running|by:@AGENT|authority:proposal}", [("E303", "error")]),
        # mismatch AND a state neither tier may write
        (
            "::STATUS{@TASK|state:verified_complete|by:@SELF|authority:commit}",
            [("E303", "error")] * 3,
        ),
        # reason:budget never with a complete form
        (
            "::STATUS{@TASK|state:claimed_complete|reason:budget|by:@AGENT|authority:proposal}",
            [("E303", "error")],
        ),
        (
            "::STATUS{@TASK|state:complete|reason:budget|by:@RUNTIME|authority:commit}",
            [("E303", "error")],
        ),
        # unsigned claims of a single-writer state
        ("::STATUS{@TASK|state:complete}", [("E303", "error")]),
        ("::STATUS{@TASK|state:created|by:@RUNTIME|authority:commit}", [("E303", "error")] * 2),
        # unknown words
        ("::STATUS{@TASK|state:done|by:@AGENT|authority:proposal}", [("E303", "warning")]),
        (
            "::STATUS{@TASK|state:stopped|by:@ROOT|authority:root}",
            [("E303", "warning"), ("E303", "error")],
        ),
        ("::STATUS{@TASK|by:@AGENT}", [("E303", "warning")]),
        # lawful
        ("::STATUS{@TASK|state:stopped|reason:budget|by:@AGENT|authority:proposal}", []),
        ("::STATUS{@TASK|state:needs_revision|by:@SELF|authority:proposal}", []),
        ("::STATUS{@TASK|state:stopped|by:@SELF}", []),
    ],
)
def test_status_findings(text: str, expected: list[tuple[str, str]]) -> None:
    findings = status_findings(Status.parse(text), 7)
    assert [(f.code, f.severity) for f in findings] == expected
    assert all(f.line == 7 for f in findings)


# --- OBJECTIVE ----------------------------------------------------------------------------


def test_objective_digest_and_create() -> None:
    objective = Objective.create(
        id="g1", body=[("ACCEPT", "all tests pass"), ("target", "fizz | buzz {x}")]
    )
    assert objective.hash == objective.body_digest() and objective.hash_matches()
    assert objective.hash is not None and objective.hash.startswith("sha256:")
    assert len(objective.hash) == len("sha256:") + 64
    assert objective.body_text() == "ACCEPT: all tests pass\ntarget: fizz | buzz {x}\n"
    assert Objective.parse(objective.render()) == objective
    changed = objective.model_copy(update={"body": (("ACCEPT", "some tests pass"),)})
    assert not changed.hash_matches()
    assert not Objective.parse(OBJECTIVE_TEXT).hash_matches()


@pytest.mark.parametrize(
    ("text", "code"),
    [
        ("::OBJECTIVE{id:g1|status:done}", "E303"),
        ("::OBJECTIVE{id:g1|version:one}", "E301"),
        ("::OBJECTIVE{id:g1|version:0}", "E303"),
        ("::OBJECTIVE{id:g1}\n  ACCEPT: a\n  accept: b", "E303"),
        ("::OBJECTIVE{id:g1}\n  just some prose", "E300"),
        ("::OBJECTIVE{id:g1}\n  ACCEPT：all", "E300"),
        ('::OBJECTIVE{id:g1}\n  ACCEPT: "fast" and correct', "E300"),
        ("::OBJECTIVE{id:g1}\n  ACCEPT: a｜b", "E300"),
        ("::OBJECTIVE{g1|id:g2}", "E303"),
        ("::OBJECTIVE{a=b}", "E300"),
    ],
)
def test_bad_objectives_are_refused(text: str, code: str) -> None:
    with pytest.raises(IlangError) as caught:
        Objective.parse(text)
    assert caught.value.code == code


def test_objective_keeps_other_narrative_fields_in_order() -> None:
    objective = Objective.parse(
        '::OBJECTIVE{g7|pri:p0}\n  target: ship it\n  ACCEPT: "two\\nlines"\n  DONE_WHEN:'
    )
    assert objective.id == "g7" and objective.extras == (("pri", "p0"),)
    assert objective.body == (("target", "ship it"), ("ACCEPT", "two\nlines"), ("DONE_WHEN", ""))
    assert Objective.parse(objective.render()) == objective


# --- RUBRIC, EVIDENCE, PRIOR, FALLBACK, UNTRUSTED ----------------------------------------


def test_rubric_findings() -> None:
    bad = Rubric.parse(
        "::RUBRIC{release_gate|threshold:1.5|mode:ranked}\n"
        "  R:a|weight:0.5\n  R:a|weight:0.7|check:x\n  R:c|weight:-0.1"
    )
    assert bad.id == "release_gate"
    messages = [(f.code, f.severity, f.message) for f in rubric_findings(bad, 1)]
    assert [m[:2] for m in messages] == [
        ("E303", "error"),
        ("E303", "warning"),
        ("E303", "error"),
        ("E303", "error"),
        ("E303", "error"),
    ]
    assert "sum" in messages[-1][2]
    assert rubric_findings(Rubric(), 1)[0].message == "rubric has no criterion rows"
    thirds = Rubric(criteria=tuple(Criterion(id=str(i), weight=1 / 3) for i in range(3)))
    assert rubric_findings(thirds, 1) == []


@pytest.mark.parametrize(
    ("text", "code"),
    [
        ("::RUBRIC{id:r1}\n  R:a|check:x", "E300"),
        ("::RUBRIC{id:r1}\n  R:a|weight:half", "E301"),
        ("::RUBRIC{id:r1|threshold:high}", "E301"),
        ("::RUBRIC{id:r1}\n  correctness matters", "E300"),
        ("::RUBRIC{id:r1}\n  R:a|weight:0.5|weight:0.5", "E303"),
    ],
)
def test_bad_rubrics_are_refused(text: str, code: str) -> None:
    with pytest.raises(IlangError) as caught:
        Rubric.parse(text)
    assert caught.value.code == code


def test_evidence_body_fields_and_bad_result() -> None:
    evidence = Evidence.parse("::EVIDENCE{verified_by:@TOOL}\n  src:ci_run_1234")
    assert evidence.extras == (("src", "ci_run_1234"),)
    with pytest.raises(IlangError) as caught:
        Evidence.parse("::EVIDENCE{id:e1|result:passed}")
    assert caught.value.code == "E303"


def test_prior_sugar_expands_to_canonical() -> None:
    sugar = Prior.parse("::PRIOR{completion:assume_incomplete}")
    assert sugar.form is PriorForm.SUGAR
    canonical = sugar.canonical()
    assert canonical.render() == (
        "::PRIOR{dimension:completion|default:assume_incomplete|authority:developer|"
        "scope:gene_context}"
    )
    assert Prior.parse(canonical.render()) == canonical
    assert Prior.sugar("execution", "act_when_safe").render() == "::PRIOR{execution:act_when_safe}"
    with pytest.raises(ValueError):
        Prior(dimension="completion", default="x", authority="system", form=PriorForm.SUGAR)


@pytest.mark.parametrize(
    "text",
    [
        "::PRIOR{}",
        "::PRIOR{x}",
        "::PRIOR{a:b|c:d}",
        "::PRIOR{dimension:completion}",
        "::PRIOR{default:x}",
        "::PRIOR{scope:@TASK}",
        "::PRIOR{completion:assume_incomplete}\n  more:1",
    ],
)
def test_ambiguous_priors_are_refused(text: str) -> None:
    with pytest.raises(IlangError) as caught:
        Prior.parse(text)
    assert caught.value.code == "E300"


@pytest.mark.parametrize(
    ("text", "code"),
    [
        ("::FALLBACK{v3_only=>warn}", "E300"),
        ("::FALLBACK{v3_only⇒panic}", "E303"),
        ("::FALLBACK{a⇒b⇒warn}", "E300"),
        ("::FALLBACK{x:y⇒warn}", "E300"),
        ("::FALLBACK{}", "E300"),
    ],
)
def test_bad_fallbacks_are_refused(text: str, code: str) -> None:
    with pytest.raises(IlangError) as caught:
        Fallback.parse(text)
    assert caught.value.code == code


@pytest.mark.parametrize(
    "text",
    [
        "::UNTRUSTED{id:u1|delimiter:EOF_u1|payload:external}",
        "::UNTRUSTED{id:u1|payload:inline}",
        "::UNTRUSTED{id:u1|delimiter:EOF u1}",
    ],
)
def test_bad_untrusted_headers_are_refused(text: str) -> None:
    with pytest.raises(IlangError):
        Untrusted.parse(text)


def test_registry_and_from_parts() -> None:
    assert set(V4_DECLARATIONS) == {
        "UNTRUSTED",
        "BUDGET",
        "STATUS",
        "OBJECTIVE",
        "RUBRIC",
        "EVIDENCE",
        "PRIOR",
        "FALLBACK",
    }
    status = Status.from_parts("@TASK|state:blocked", [(4, "need:api_key")], 3)
    assert status.get("need") == "api_key"
    with pytest.raises(IlangError) as caught:
        Status.from_parts("@TASK|state:blocked", [(4, "need:a|need:b")], 3)
    assert (caught.value.code, caught.value.line) == ("E303", 4)


def test_error_positions_point_at_the_field() -> None:
    with pytest.raises(IlangError) as caught:
        Budget.parse("\n\n::BUDGET{kind:tokens|limit:5|remaining:1}", line=10)
    assert (caught.value.line, caught.value.col) == (12, 30)


# --- properties ---------------------------------------------------------------------------

_SPECIAL = [*list('|{}":\\ \n\t：｜⇒@,=-_.\u200b\u3000'), "é", "中", "🙂"]
_char = st.one_of(
    st.sampled_from(_SPECIAL),
    st.characters(blacklist_categories=("Cs", "Cc", "Zl", "Zp")),
)
values = st.text(alphabet=_char, max_size=12)
keys = st.from_regex(r"[a-z_][a-z0-9_]{0,6}", fullmatch=True)
entities = st.from_regex(r"@[A-Z][A-Z0-9_]{0,6}", fullmatch=True)


def extras_without(named: set[str]) -> st.SearchStrategy[tuple[tuple[str, str], ...]]:
    return st.lists(
        st.tuples(keys.filter(lambda k: k not in named), values),
        unique_by=lambda kv: kv[0],
        max_size=3,
    ).map(tuple)


def optional(strategy: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.none() | strategy


@st.composite
def budgets(draw: st.DrawFn) -> Budget:
    kind = draw(st.sampled_from(BudgetKind))
    amount: st.SearchStrategy[float] | st.SearchStrategy[int] = (
        st.floats(min_value=0, max_value=1e12, allow_nan=False)
        if kind is BudgetKind.TIME
        else st.integers(min_value=0, max_value=10**15)
    )
    return Budget(
        id=draw(optional(values)),
        scope=draw(values),
        kind=kind,
        limit=draw(amount),
        used=draw(amount),
        reserve_audit=draw(amount),
        reserve_summary=draw(amount),
        authority=draw(optional(values)),
        asof=draw(optional(st.integers(0, 10**6))),
        extras=draw(
            extras_without(
                {
                    "id",
                    "scope",
                    "kind",
                    "limit",
                    "used",
                    "reserve_audit",
                    "reserve_summary",
                    "authority",
                    "asof",
                    "remaining",
                }
            )
        ),
    )


statuses = st.builds(
    Status,
    scope=entities,
    state=optional(st.sampled_from(State) | values),
    reason=optional(values),
    extras=extras_without({"scope", "state", "reason", "by", "authority"}),
    by=optional(entities | values),
    authority=optional(st.sampled_from(Authority) | values),
)
body_keys = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,6}", fullmatch=True)
objectives = st.builds(
    Objective,
    id=optional(values),
    owner=optional(values),
    trust=optional(values),
    version=optional(st.integers(1, 10**9)),
    hash=optional(values),
    status=optional(st.sampled_from(ObjectiveStatus)),
    extras=extras_without({"id", "owner", "trust", "version", "hash", "status"}),
    body=st.lists(st.tuples(body_keys, values), unique_by=lambda kv: kv[0].lower(), max_size=4).map(
        tuple
    ),
)
finite = st.floats(allow_nan=False, allow_infinity=False)
criteria = st.builds(
    Criterion,
    id=values,
    weight=finite,
    check=optional(values),
    extras=extras_without({"r", "weight", "check"}),
)
rubrics = st.builds(
    Rubric,
    id=optional(values),
    objective=optional(values),
    threshold=optional(finite),
    mode=optional(values),
    extras=extras_without({"id", "objective", "threshold", "mode"}),
    criteria=st.lists(criteria, max_size=4).map(tuple),
)
evidences = st.builds(
    Evidence,
    id=optional(values),
    deliverable=optional(values),
    kind=optional(values),
    ref=optional(values),
    verified_by=optional(values),
    result=optional(st.sampled_from(EvidenceResult)),
    gap=optional(values),
    extras=extras_without({"id", "deliverable", "kind", "ref", "verified_by", "result", "gap"}),
)
priors = st.builds(
    Prior,
    dimension=values,
    default=values,
    authority=optional(values),
    scope=optional(values),
    extras=extras_without({"dimension", "default", "authority", "scope"}),
) | st.builds(
    Prior.sugar,
    keys.filter(lambda k: k not in {"dimension", "default", "authority", "scope"}),
    values,
)
fallbacks = st.builds(
    Fallback,
    condition=st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,10}", fullmatch=True),
    tier=st.sampled_from(FallbackTier),
)
untrusteds = (
    st.builds(
        Untrusted,
        id=optional(values),
        source=optional(values),
        role=optional(values),
        effects=optional(values),
        extras=extras_without({"id", "source", "role", "effects", "delimiter", "payload"}),
    )
    | st.builds(
        Untrusted,
        id=values,
        delimiter=st.from_regex(r"[A-Za-z0-9_]{1,10}", fullmatch=True),
    )
    | st.builds(Untrusted, id=values, payload=st.just("external"))
)

MODELS = st.one_of(
    budgets(), statuses, objectives, rubrics, evidences, priors, fallbacks, untrusteds
)


@settings(max_examples=600)
@given(MODELS)
def test_parse_inverts_render_for_every_model(model: Declaration) -> None:
    text = model.render()
    assert type(model).parse(text) == model
    assert type(model).parse(text).render() == text


@given(budgets())
def test_no_rendered_budget_holds_remaining_and_remaining_is_the_formula(budget: Budget) -> None:
    # no `remaining` field; a value may of course spell the word
    content, _, _, _ = split_declaration(budget.render(), "BUDGET")
    assert all(segment.key != "remaining" for segment in split_fields(content))
    assert budget.remaining == (
        budget.limit - budget.used - budget.reserve_audit - budget.reserve_summary
    )
    assert budget.exhausted == (budget.remaining <= 0)


@given(st.lists(st.tuples(optional(keys), values), max_size=5, unique_by=lambda kv: kv[0] or ""))
def test_split_fields_inverts_render_fields(pairs: list[tuple[str | None, str]]) -> None:
    # a positional segment with a key of None may repeat; keys may not
    rendered = render_fields(pairs)
    if not pairs:
        assert split_fields(rendered) == []
        return
    assert [(s.key, s.value) for s in split_fields(rendered)] == pairs


@given(values)
def test_every_value_a_model_accepts_can_be_rendered(value: str) -> None:
    assert all(value_char_allowed(ch) for ch in value)
    (segment,) = split_fields(render_fields([("k", value)]))
    assert segment == Segment(key="k", value=value, line=1, col=1)


_decl_names = st.sampled_from(sorted(V4_DECLARATIONS))
_noise = st.text(
    alphabet=st.one_of(st.sampled_from([*_SPECIAL, "\n", "\r", "\u2028"]), st.characters()),
    max_size=60,
)


@settings(max_examples=800)
@given(_decl_names, _noise, st.booleans())
def test_parse_raises_only_ilang_errors(name: str, noise: str, with_header: bool) -> None:
    text = f"::{name}{{{noise}" if with_header else noise
    for model in V4_DECLARATIONS.values():
        try:
            parsed = model.parse(text)
        except IlangError:
            continue
        assert model.parse(parsed.render()) == parsed


@settings(max_examples=300)
@given(
    _decl_names,
    st.lists(
        st.sampled_from(
            [
                "state:running",
                "by:@SELF",
                "@TASK",
                "kind:tokens",
                "limit:5",
                "used:2",
                "id:x",
                "completion:assume_incomplete",
                "dimension:d",
                "default:e",
                "v3_only⇒warn",
                "delimiter:EOF",
                'detail:"a|b"',
                "result:pass",
                "threshold:0.5",
                "R:a|weight:1",
                "remaining:3",
                "status:active",
                "ACCEPT: x",
                "",
            ]
        ),
        max_size=5,
    ),
)
def test_near_miss_declarations_parse_or_fail_cleanly(name: str, parts: list[str]) -> None:
    header, *body = parts or [""]
    text = "\n  ".join([f"::{name}{{{header}}}", *body])
    model = V4_DECLARATIONS[name]
    try:
        parsed = model.parse(text)
    except IlangError:
        return
    assert model.parse(parsed.render()) == parsed
