"""Operation chains: the single-chain cases of the malformed corpus and round trips."""

from __future__ import annotations

import json

import pytest

from envelopes.chain import Modifier, Operation, parse_chain
from envelopes.errors import IlangError
from tests.conftest import SHARED, require_shared

# Codec-only refusals of the IML compiler that the canon does not make, and the reading
# this project takes instead (each a documented choice, see envelopes/chain.py):
CODEC_ONLY = {
    "declaration": "a declaration is not a chain: the chain reader reports E300",
    "temporal prefix": "not a chain: E300",
    "parallel group": "not a chain: E300",
    "IML given to the compiler": "not a chain: E300",
    "OUT with a target": "SPEC.md §2.2: for output verbs the entity is the final value",
    "backslash inside a bare value": "SPEC.md §10.1 writes `[SPLIT|mch=\\n]`",
    "a Greek letter that is no alias: E304 here, E305 (unknown alias) in the validator": (
        "SPEC.md §9 has E305 Unknown Alias for exactly this"
    ),
}


def _compile_cases() -> list[dict[str, str]]:
    if not SHARED.is_dir():
        return []
    cases = json.loads((SHARED / "iml" / "malformed-cases.json").read_text(encoding="utf-8"))
    return [c for c in cases if c["direction"] == "compile" and c["label"] not in CODEC_ONLY]


CASES = _compile_cases()


@pytest.mark.parametrize("case", CASES, ids=[c["label"] for c in CASES])
def test_malformed_chain_is_rejected_with_its_code(case: dict[str, str]) -> None:
    with pytest.raises(IlangError) as caught:
        parse_chain(case["input"])
    assert caught.value.code == case["expect"]


@pytest.mark.shared
def test_the_corpus_still_has_every_exempted_label() -> None:
    corpus = require_shared() / "iml" / "malformed-cases.json"
    cases = json.loads(corpus.read_text(encoding="utf-8"))
    labels = {c["label"] for c in cases}
    assert set(CODEC_ONLY) <= labels
    assert len(CASES) == 57


def test_alias_and_batch_forms() -> None:
    chain = parse_chain("[LIST:@LOCAL|mch=*.md]=>[Π:READ]=>[Σ]=>[Ω]")
    assert [op.verb for op in chain.operations] == ["LIST", "BATC", "MERGE", "OUT"]
    assert chain.operations[1].verb_ref == "READ"
    assert chain.operations[2].alias == "Σ"
    assert chain.render() == "[LIST:@LOCAL|mch=*.md]=>[Π:READ]=>[Σ]=>[Ω]"


def test_batc_may_take_an_entity_target() -> None:
    op = parse_chain("[BATC:@SRC|op=SCAN]").operations[0]
    assert op.target == "SRC" and op.verb_ref is None


def test_comma_piece_without_key_continues_the_value() -> None:
    op = parse_chain("[CHEK:@AUDIT_REPORT|whr=score>=threshold,no_unknown,no_fail]").operations[0]
    assert op.modifiers == (Modifier("whr", "score>=threshold,no_unknown,no_fail"),)


def test_quoted_values_keep_their_reading() -> None:
    op = parse_chain('[READ:@SRC|path="@not_an_entity",whr="a \\"b\\",c\\n"]').operations[0]
    assert op.modifiers[0] == Modifier("path", "@not_an_entity", quoted=True)
    assert op.modifiers[1].value == 'a "b",c\n'
    assert parse_chain(Operation.render(op)).operations[0] == op


def test_error_positions_point_at_the_fault() -> None:
    with pytest.raises(IlangError) as caught:
        parse_chain("[READ:@SRC]=>[FMT|fmt=json,pth=x]", line=7, col=3)
    assert (caught.value.code, caught.value.line, caught.value.col) == ("E302", 7, 30)


def test_out_must_be_last() -> None:
    with pytest.raises(IlangError) as caught:
        parse_chain("[READ]=>[Ω]=>[FMT]")
    assert caught.value.code == "E502"
