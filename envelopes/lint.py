"""`ilh lint`: grammar findings plus what the spec makes checkable beyond syntax."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence
from pathlib import PurePath
from typing import TYPE_CHECKING

from envelopes.document import Declaration, Document, read_document
from envelopes.errors import Finding, IlangError
from envelopes.markdown import ilang_fences
from envelopes.vocabulary import ENTITY_TIERS

if TYPE_CHECKING:
    from envelopes.declarations.base import Declaration as TypedDeclaration

# The typed declaration models (pydantic) are imported by the check that reads one, not
# here: pydantic and the models are half the start-up of a short `ilh lint`, and a
# text with no ::STATUS, ::BUDGET… needs no schema (tests/test_cli_startup.py).

# Any spelling a reader could take for a `remaining` key: case, quotes and a full-width
# colon do not hide it (the typed reader refuses those spellings, but only as warnings).
_REMAINING = re.compile(r"(?:^|[|,{]\s*)\"?remaining\"?\s*[:：]", re.IGNORECASE)
_STATE_INTRO = re.compile(r"(@[A-Z][A-Z0-9_]*)[,|\s]|(@[A-Z][A-Z0-9_]*)\Z")

Body = Sequence[tuple[int, str]]
TypedCheck = Callable[[Declaration, Body], list[Finding]]


def body_pairs(declaration: Declaration, *, everything: bool = False) -> list[tuple[int, str]]:
    """Body lines as (line, text) for a typed model. Annotation lines (`→ …`) are commentary
    and left out, unless `everything`: a frozen schema (::JUDGE) must see every line,
    nested declarations and chains included, to reject them."""
    return [
        (item.line, item.text or item.render(0)[0])
        for item in declaration.body
        if everything or item.form not in ("annotation", "temporal")
    ]


def _as_warning(err: IlangError, what: str) -> Finding:
    return Finding(err.code, f"{what}: {err.message}", err.line, err.col, severity="warning")


def check_budget(d: Declaration, body: Body) -> list[Finding]:
    # v4.0 §2: remaining is derived; a declared one can only disagree with the source of
    # truth, so it is an error wherever it appears.
    if _REMAINING.search(d.header) or any(_REMAINING.match(text) for _, text in body):
        return [
            Finding(
                "E303",
                "::BUDGET carries a `remaining` field: remaining is derived "
                "(limit − used − reserves) and must not be declared",
                d.line,
                1,
            )
        ]
    from envelopes.declarations import Budget

    try:
        Budget.from_parts(d.header, body, d.line)
    except IlangError as err:
        return [_as_warning(err, "::BUDGET is not in the v4 canonical form")]
    return []


def check_status(d: Declaration, body: Body) -> list[Finding]:
    # Read with the plain rules; the model (pydantic) is imported only when its
    # validation might refuse what was read, to decide and word it: most texts hold only
    # lawful-looking statuses, and their findings are the same either way.
    from envelopes.declarations.status_rules import as_validated, read_status, status_findings

    try:
        status = as_validated(read_status(d.header, body, d.line))
        if status is None:
            from envelopes.declarations import Status

            return status_findings(Status.from_parts(d.header, body, d.line), d.line)
    except IlangError as err:
        # Fail closed: a status the typed reader cannot read (a repeated or upper-case
        # `state` key, a broken quote) is one whose writer authority cannot be checked,
        # and such a spelling is exactly how a forbidden claim would hide.
        message = (
            f"::STATUS cannot be read, so its writer authority cannot be checked: {err.message}"
        )
        return [Finding(err.code, message, err.line, err.col)]
    return status_findings(status, d.line)


def check_rubric(d: Declaration, body: Body) -> list[Finding]:
    from envelopes.declarations import Rubric, rubric_findings

    try:
        rubric = Rubric.from_parts(d.header, body, d.line)
    except IlangError as err:
        return [_as_warning(err, "::RUBRIC is not in the v4 canonical form")]
    return rubric_findings(rubric, d.line)


def check_judge(d: Declaration, body: Body) -> list[Finding]:
    # The JUDGE serialization is frozen (v5 Part II §4): any departure is an error.
    if d.body and d.body[0].line == d.line:
        # Part III lets one body token trail a header; the frozen form does not.
        return [
            Finding(
                "E303",
                "text after the ::JUDGE header: V, M and R each take their own line",
                d.line,
                1,
            )
        ]
    # Imported here: the JUDGE model and its scoring function cost a tenth of a short
    # `ilh lint`'s start-up, and most texts hold no ::JUDGE.
    from envelopes.judge import Judge, judge_findings

    try:
        judge = Judge.from_body(d.header, body_pairs(d, everything=True))
    except IlangError as err:
        return [err.finding]
    return judge_findings(judge, d.line)


def typed_form_check(name: str) -> TypedCheck:
    """The check of a declaration whose typed model only has to read it: `name`'s model
    in `V4_DECLARATIONS`, looked up when a text holds one."""

    def check(d: Declaration, body: Body) -> list[Finding]:
        from envelopes.declarations import V4_DECLARATIONS

        model: type[TypedDeclaration] = V4_DECLARATIONS[name]
        try:
            model.from_parts(d.header, body, d.line)
        except IlangError as err:
            return [_as_warning(err, f"::{name} is not in the v4 canonical form")]
        return []

    return check


TYPED_CHECKS: dict[str, TypedCheck] = {
    "BUDGET": check_budget,
    "STATUS": check_status,
    "RUBRIC": check_rubric,
    "JUDGE": check_judge,
    "OBJECTIVE": typed_form_check("OBJECTIVE"),
    "EVIDENCE": typed_form_check("EVIDENCE"),
    "PRIOR": typed_form_check("PRIOR"),
    "FALLBACK": typed_form_check("FALLBACK"),
}


def rebinding_findings(d: Declaration) -> Iterator[Finding]:
    """Part III §2.2: introducing a Tier 1/2 name with ::STATE rebinds it (E202)."""
    match = _STATE_INTRO.match(d.header.strip())
    name = (match.group(1) or match.group(2))[1:] if match else ""
    if ENTITY_TIERS.get(name) in (1, 2):
        yield Finding(
            "E202",
            f"::STATE introduces the registered entity @{name}: possible rebinding",
            d.line,
            1,
            severity="warning",
        )


def semantic_findings(document: Document) -> list[Finding]:
    findings: list[Finding] = []
    for d in document.declarations():
        check = TYPED_CHECKS.get(d.name)
        if check is not None:
            findings += check(d, body_pairs(d))
        if d.name == "STATE":
            findings += rebinding_findings(d)
    return findings


def lint_ilang(text: str, first_line: int = 1) -> list[Finding]:
    document, findings = read_document(text, first_line)
    findings = findings + semantic_findings(document)
    return sorted(findings, key=lambda f: (f.line, f.col))


def lint_text(text: str, name: str = "-") -> list[Finding]:
    """Lint a whole iLang file, or the iLang fences of a Markdown file (by its suffix)."""
    if PurePath(name).suffix.lower() in (".md", ".markdown"):
        findings: list[Finding] = []
        for block in ilang_fences(text):
            findings += lint_ilang(block.text, block.first_line)
        return findings
    return lint_ilang(text)
