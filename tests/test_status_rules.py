"""`ilh lint` reads a ::STATUS with the plain rules (`envelopes.declarations.status_rules`)
and leaves it to the pydantic model only when the model might refuse it. Differential:
on the project's and the shared corpora's statuses and on generated ones, the findings
are those of the model's reading (the linter's `check_status` before the fast path),
and the plain validation accepts exactly what the model accepts, with the same values.
A guard: the model's fields and validators are those the plain copy was written for."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import AfterValidator

from envelopes.declarations import Authority, State, Status, status_findings
from envelopes.declarations.base import Extras, Value
from envelopes.declarations.fields import check_value
from envelopes.declarations.status_rules import as_validated, read_status
from envelopes.document import Declaration, read_document
from envelopes.errors import Finding, IlangError
from envelopes.lint import body_pairs, check_status
from envelopes.markdown import ilang_fences
from tests.conftest import REPO_ROOT, SHARED


def by_the_model(header: str, body: list[tuple[int, str]], line: int) -> list[Finding]:
    """`check_status` as it was: the model reads every status."""
    try:
        status = Status.from_parts(header, body, line)
    except IlangError as err:
        message = (
            f"::STATUS cannot be read, so its writer authority cannot be checked: {err.message}"
        )
        return [Finding(err.code, message, err.line, err.col)]
    return status_findings(status, line)


def assert_same(header: str, body: list[tuple[int, str]] | None = None, line: int = 3) -> None:
    body = body or []
    declaration = Declaration("STATUS", header, line=line)
    assert check_status(declaration, body) == by_the_model(header, body, line)
    try:
        read = read_status(header, body, line)
    except IlangError:
        return
    plain = as_validated(read)
    try:
        model = Status.from_parts(header, body, line)
    except IlangError:
        assert plain is None, header
        return
    assert plain is not None, f"the model accepts {header!r}; the plain rules must too"
    assert tuple(plain) == (
        model.scope, model.state, model.reason, model.extras, model.by, model.authority,
    )  # fmt: skip
    assert [type(v) for v in plain] == [
        type(v) for v in (model.scope, model.state, model.reason, model.extras, model.by,
                          model.authority)
    ]  # fmt: skip


def statuses_in(paths: list[Path]) -> Iterator[tuple[str, list[tuple[int, str]], int]]:
    for path in paths:
        text = path.read_bytes().decode("utf-8", "replace")
        blocks = (
            [(b.text, b.first_line) for b in ilang_fences(text)]
            if path.suffix.lower() in (".md", ".markdown")
            else [(text, 1)]
        )
        for block, first in blocks:
            document, _ = read_document(block, first)
            for d in document.declarations("STATUS"):
                yield d.header, body_pairs(d), d.line


#: Every ::STATUS header written anywhere in the project (tests, examples, docs), as text.
OWN_HEADERS = sorted(
    {
        match
        for pattern in ("tests/**/*.py", "tests/data/**/*", "examples/**/*", "*.md", "docs/**/*")
        for path in REPO_ROOT.glob(pattern)
        if path.is_file() and path.suffix not in (".pyc", ".png", ".db")
        for match in re.findall(r"::STATUS\{([^}\n]*)\}", path.read_text("utf-8", "replace"))
    }
)


def test_every_own_status_reads_the_same() -> None:
    assert len(OWN_HEADERS) >= 100
    for header in OWN_HEADERS:
        assert_same(header)
    for header, body, line in statuses_in(sorted((REPO_ROOT / "tests" / "data").rglob("*.ilang"))):
        assert_same(header, body, line)


@pytest.mark.shared
def test_every_shared_status_reads_the_same() -> None:
    paths = sorted(
        p for f in ("iml", "conformance", "spec") for p in (SHARED / f).rglob("*") if p.is_file()
    )
    found = list(statuses_in(paths))
    headers = {
        match
        for path in paths
        for match in re.findall(r"::STATUS\{([^}\n]*)\}", path.read_text("utf-8", "replace"))
    }
    assert len(found) >= 10 and len(headers) >= 30
    for header, body, line in found:
        assert_same(header, body, line)
    for header in sorted(headers):
        assert_same(header)


WORDS = st.sampled_from(
    [
        "@TASK", "@AGENT", "@GRADER", "@RUNTIME", "@SELF", "@X_1", "task", "@task", "",
        "running", "complete", "claimed_complete", "verified_complete", "created",
        "stopped", "in_progress", "proposal", "commit", "verification", "budget", "RUNNING",
        '"quoted value"', '"a\\nb"', '"tab\there"', '"\u200b"', "\u00e9t\u00e9", "a：b", "x y",
    ]
)  # fmt: skip
KEYS = st.sampled_from(
    ["state", "by", "authority", "reason", "scope", "since", "note", "State", "x_y", "1x"]
)
FIELD = st.one_of(
    st.tuples(KEYS, WORDS).map(lambda kv: f"{kv[0]}:{kv[1]}"),
    WORDS,
    st.tuples(KEYS, st.text(max_size=6)).map(lambda kv: f"{kv[0]}:{kv[1]}"),
)


@settings(max_examples=1500, deadline=None, derandomize=True)
@given(
    fields=st.lists(FIELD, max_size=6),
    body=st.lists(st.tuples(KEYS, WORDS).map(lambda kv: f"{kv[0]}:{kv[1]}"), max_size=2),
)
def test_generated_statuses_read_the_same(fields: list[str], body: list[str]) -> None:
    assert_same("|".join(fields), [(4 + i, text) for i, text in enumerate(body)])


def test_the_model_is_the_one_the_plain_rules_copy() -> None:
    """`as_validated` repeats the model's validation in plain Python: a field or a
    validator added to `Status` must be added there too (then update this list)."""
    checked = AfterValidator(check_value)
    fields = Status.model_fields
    assert list(fields) == ["scope", "state", "reason", "extras", "by", "authority"]
    assert (fields["scope"].annotation, fields["scope"].metadata) == (str, [checked])
    assert fields["state"].annotation == State | Value | None
    assert fields["reason"].annotation == Value | None
    assert fields["extras"].annotation == Extras
    assert fields["by"].annotation == Value | None
    assert fields["authority"].annotation == Authority | Value | None
    assert Value.__metadata__ == (checked,)
    decorators = Status.__pydantic_decorators__
    assert sorted(decorators.field_validators) == ["_authority_member", "_state_member"]
    assert sorted(decorators.model_validators) == ["_check"]
    assert not decorators.validators and not decorators.root_validators
    assert Status.model_config.get("strict") is None
