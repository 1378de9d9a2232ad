"""The closed vocabularies against the spec's own tables, and entity resolution.

Each count is read from the spec text (SPEC.md §3, §3.10, §4; SPEC-v5.0.md Part III
§2.1), so a verb, alias, modifier or entity dropped from or added to `vocabulary.py`
fails here, and every verb and alias must also go through the chain reader.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from envelopes.chain import parse_chain, resolve_entity
from envelopes.errors import IlangError
from envelopes.vocabulary import (
    ALIASES,
    CORE_MODIFIERS,
    ENTITY_TIERS,
    MODIFIERS,
    ROLE_ENTITIES,
    VERB_SET,
    VERBS,
)


def _section(text: str, start: str, end: str) -> str:
    return text[text.index(start) : text.index(end, text.index(start))]


@pytest.fixture(scope="module")
def spec_v3(shared_dir: Path) -> str:
    return (shared_dir / "spec" / "SPEC.md").read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def spec_v5(shared_dir: Path) -> str:
    return (shared_dir / "spec" / "SPEC-v5.0.md").read_text(encoding="utf-8")


def _verb_rows(spec_v3: str) -> list[tuple[str, str]]:
    tables = _section(spec_v3, "## 3. Verb Table", "### 3.10")
    return re.findall(r"^\| ([A-Z]+) \| (\S*) ?\|", tables, re.M)


def test_the_88_verbs_are_the_spec_table(spec_v3: str) -> None:
    rows = _verb_rows(spec_v3)
    assert len(rows) == 88
    assert tuple(verb for verb, _ in rows) == VERBS
    assert len(VERB_SET) == 88


def test_the_13_aliases_are_the_spec_tables(spec_v3: str) -> None:
    in_verb_tables = {alias: verb for verb, alias in _verb_rows(spec_v3) if alias}
    quick = _section(spec_v3, "### 3.10", "## 4.")
    pairs = re.findall(r"\| (\S) \| ([A-Z]+) ", quick)
    assert dict(pairs) == in_verb_tables == ALIASES
    assert len(ALIASES) == 13


def test_the_29_modifiers_are_the_spec_table(spec_v3: str) -> None:
    table = _section(spec_v3, "## 4. Modifiers", "### 4.1")
    assert tuple(re.findall(r"^\| ([a-z]+) \|", table, re.M)) == CORE_MODIFIERS
    assert len(CORE_MODIFIERS) == 29 and set(CORE_MODIFIERS) <= MODIFIERS


def test_the_22_registered_entities_are_the_spec_tiers(spec_v5: str) -> None:
    registry = _section(spec_v5, "### §2.1 Three tiers", "::CLAUSE{ENTITY-COUNT")
    tiers = [
        re.findall(r"^\| `@([A-Z0-9_]+)` \|", part, re.M)
        for part in re.split(r"\*\*Tier \d", registry)[1:]
    ]
    assert [len(t) for t in tiers] == [8, 6, 8]
    for number, names in enumerate(tiers, start=1):
        assert {n for n, t in ENTITY_TIERS.items() if t == number} == set(names)
    assert set(tiers[2]) == ROLE_ENTITIES


@pytest.mark.parametrize("verb", VERBS)
def test_every_verb_reads_in_a_chain(verb: str) -> None:
    if verb == "OUT":
        chain = parse_chain("[READ:@SRC]=>[OUT]")
    else:
        chain = parse_chain(f"[{verb}:@SRC|fmt=json]=>[Ω]")
    assert verb in [op.verb for op in chain.operations]
    assert parse_chain(chain.render()) == chain


@pytest.mark.parametrize("alias", sorted(ALIASES))
def test_every_alias_reads_as_its_verb(alias: str) -> None:
    text = f"[READ:@SRC]=>[{alias}]" if ALIASES[alias] == "OUT" else f"[{alias}]=>[Ω]"
    chain = parse_chain(text)
    op = chain.operations[-1] if ALIASES[alias] == "OUT" else chain.operations[0]
    assert (op.verb, op.alias) == (ALIASES[alias], alias)
    assert chain.render() == text


@pytest.mark.parametrize(
    ("text", "ref"),
    [
        ("[Π:READ]", "READ"),
        ("[BATC:READ]", "READ"),
        ("[Π:φ]", "φ"),
        ("[BATC:SCAN|src=@LOCAL]", "SCAN"),
    ],
)
def test_batc_takes_a_verb_reference(text: str, ref: str) -> None:
    (op,) = parse_chain(text).operations
    assert (op.verb, op.verb_ref, op.target) == ("BATC", ref, None)


@pytest.mark.parametrize(
    ("text", "code"),
    [
        ("[Π:REED]", "E304"),  # the reference is a verb, checked like one
        ("[Π:Ж]", "E305"),  # a single non-ASCII letter that is no alias
        ("[READ:READ]", "E300"),  # only BATC/Π take a verb reference
        ("[Π:Ω]", "E502"),  # OUT is not applied per item
    ],
)
def test_verb_reference_exception_is_batc_only(text: str, code: str) -> None:
    with pytest.raises(IlangError) as caught:
        parse_chain(text)
    assert caught.value.code == code


def test_the_batch_syntax_of_section_3_9() -> None:
    (op,) = parse_chain("[BATC|op=READ,src=@LOCAL]").operations
    assert [(m.key, m.value) for m in op.modifiers] == [("op", "READ"), ("src", "@LOCAL")]


@pytest.mark.parametrize("name", ["MSG", "SYS_PROMPT", "A1", "X_9_Y", "BOSS"])
def test_custom_entities_need_no_registration(name: str) -> None:
    assert resolve_entity(name) == "custom"
    assert parse_chain(f"[READ:@{name}|src=@{name}]").operations[0].target == name


@pytest.mark.parametrize(
    ("name", "tier"),
    [("SRC", "core"), ("STDIN", "core"), ("GH", "external"), ("RUNTIME", "role"),
     ("TASK", "role"), ("IMG", "media")],
)  # fmt: skip
def test_registered_entities_resolve_to_their_tier(name: str, tier: str) -> None:
    assert resolve_entity(name) == tier


@pytest.mark.parametrize("name", ["gh", "", "1ST", "Src", "A-B", "ÄX"])
def test_names_off_the_pattern_resolve_nowhere(name: str) -> None:
    with pytest.raises(IlangError) as caught:
        resolve_entity(name, line=4, col=9)
    assert (caught.value.code, caught.value.line, caught.value.col) == ("E200", 4, 9)


def test_an_unconnected_external_entity_is_e201() -> None:
    assert resolve_entity("GH", connected={"GH"}) == "external"
    with pytest.raises(IlangError) as caught:
        resolve_entity("R2", connected={"GH"})
    assert caught.value.code == "E201"
    # Core, role and custom entities do not depend on a connection.
    assert resolve_entity("LOCAL", connected=()) == "core"
    assert resolve_entity("SELF", connected=()) == "role"
    assert resolve_entity("MSG", connected=()) == "custom"
