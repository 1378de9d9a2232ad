"""The spec's fenced examples, the golden corpora and the malformed corpus."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from envelopes.document import parse_document, read_document
from tests.conftest import SHARED
from tests.spec_blocks import fenced_examples

pytestmark = pytest.mark.shared

SPEC_EXAMPLES = fenced_examples(SHARED / "spec") if SHARED.is_dir() else []
GOLDEN = sorted((SHARED / "iml").glob("golden*/*.ilang")) if SHARED.is_dir() else []


def test_corpora_are_where_expected() -> None:
    assert len(SPEC_EXAMPLES) == 45  # every iLang fence but the one grammar template
    # 72 chains + 35 of the 0.4 chains (019.ilang is missing upstream) + doc-01 + 20 docs.
    assert len(GOLDEN) == 128


@pytest.mark.parametrize(
    ("name", "line", "block"), SPEC_EXAMPLES, ids=[f"{n}:{ln}" for n, ln, _ in SPEC_EXAMPLES]
)
def test_spec_example_parses_and_round_trips(name: str, line: int, block: str) -> None:
    document = parse_document(block, first_line=line)
    assert document.items, "an example parses to something"
    assert parse_document(document.render()) == document


@pytest.mark.parametrize("path", GOLDEN, ids=[f"{p.parent.name}/{p.name}" for p in GOLDEN])
def test_golden_file_parses_and_round_trips(path: Path) -> None:
    document = parse_document(path.read_text(encoding="utf-8"))
    assert parse_document(document.render()) == document


def _canon_cases() -> list[dict[str, str]]:
    if not SHARED.is_dir():
        return []
    cases = json.loads((SHARED / "iml" / "malformed-cases.json").read_text(encoding="utf-8"))
    # Canon-level cases are the document cases the canon's own grammar rejects; the
    # `stricter:` ones are IML's additions and the other directions are codec matters.
    return [
        c
        for c in cases
        if c["direction"] == "compile-document" and not c["label"].startswith("stricter:")
    ]


CANON_CASES = _canon_cases()


@pytest.mark.parametrize("case", CANON_CASES, ids=[c["label"] for c in CANON_CASES])
def test_canon_malformed_document_is_rejected_with_its_code(case: dict[str, str]) -> None:
    _, findings = read_document(case["input"])
    errors = [f for f in findings if f.severity == "error"]
    assert errors, f"accepted: {case['input']!r}"
    assert errors[0].code == case["expect"]


def test_canon_case_labels_cover_the_issue_list() -> None:
    labels = " | ".join(c["label"] for c in CANON_CASES)
    for wanted in (
        "unregistered declaration",
        "header lacks an opening brace",
        "unclosed span",
        "nesting two levels",
        "B6 prose in a non-prose body",
        "full-width pipe separator",
        "full-width colon separator",
        "orphan continuation",
        "unknown verb in a body chain",
        "unknown key in a top-level chain",
    ):
        assert wanted in labels
