"""Property tests of the document reader: generated documents survive render∘parse, and
no text makes the reader raise anything but IlangError."""

from __future__ import annotations

import contextlib

from hypothesis import given, settings
from hypothesis import strategies as st

from envelopes.chain import parse_chain
from envelopes.document import parse_document, read_document
from envelopes.errors import IlangError
from envelopes.vocabulary import ALIASES, CORE_MODIFIERS, ENTITY_TIERS, PROSE_BODY, VERBS

WORD = st.from_regex(r"[a-z][a-z0-9_]{0,8}", fullmatch=True)
ENTITY = st.sampled_from(sorted(ENTITY_TIERS)) | st.from_regex(
    r"[A-Z][A-Z0-9_]{0,6}", fullmatch=True
)
BARE = st.from_regex(r"[A-Za-z0-9_./*:#^-]{1,10}", fullmatch=True)
QUOTED = st.text(
    alphabet=st.characters(blacklist_categories=("Cc", "Cs", "Zl", "Zp")), max_size=12
).map(lambda s: '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"')
VERB_NAMES = [v for v in VERBS if v not in ("OUT", "BATC")]


@st.composite
def operations(draw: st.DrawFn, last: bool = False) -> str:
    if draw(st.booleans()) and not last:
        head = draw(st.sampled_from([a for a, v in ALIASES.items() if v not in ("OUT", "BATC")]))
    else:
        head = draw(st.sampled_from(VERB_NAMES))
    target = draw(st.none() | ENTITY)
    mods = draw(
        st.lists(
            st.tuples(st.sampled_from(CORE_MODIFIERS), BARE | QUOTED),
            max_size=3,
            unique_by=lambda m: m[0],
        )
    )
    text = f"[{head}" + (f":@{target}" if target else "")
    if mods:
        text += "|" + ",".join(f"{k}={v}" for k, v in mods)
    return text + "]"


@st.composite
def chains(draw: st.DrawFn) -> str:
    ops = draw(st.lists(operations(), min_size=1, max_size=4))
    if draw(st.booleans()):
        ops.append(draw(st.sampled_from(["[Ω]", "[OUT]"])))
    return "=>".join(ops)


@st.composite
def header_fields(draw: st.DrawFn) -> str:
    fields = draw(st.lists(st.tuples(WORD, BARE), min_size=1, max_size=4))
    lead = draw(st.sampled_from(["", "@TASK|", "@SELF, "]))
    return lead + "|".join(f"{k}:{v}" for k, v in fields)


@st.composite
def body_lines(draw: st.DrawFn, parent: str) -> str:
    options = [
        st.builds(lambda w: f"T:{w}", WORD),
        st.builds(lambda w, c: f"A:{w}⇒{c}", WORD, WORD),
        st.builds(lambda k, v: f"{k}:{v}", WORD, BARE),
        st.builds(lambda k, v, w: f"{k}:{v}|{w}:{v}", WORD, BARE, WORD),
        st.builds(lambda k, a, b: f"{k}:[{a},{b}]", WORD, BARE, BARE),
        st.builds(lambda w: f"[NOTE] {w}", WORD),
        chains(),
        st.builds(lambda w: f"→ {w}", WORD),
    ]
    if parent in PROSE_BODY:
        options.append(st.builds(lambda a, b: f"{a} {b}.", WORD, WORD))
    return draw(st.one_of(options))


DECL_NAMES = [
    "GENE",
    "FACT",
    "STATE",
    "RULE",
    "LESSON",
    "OBJECTIVE",
    "ACTIVATE",
    "CLAUSE",
    "MODULE",
]


@st.composite
def declarations(draw: st.DrawFn) -> str:
    name = draw(st.sampled_from(DECL_NAMES))
    head = f"::{name}{{{draw(header_fields())}}}"
    shape = draw(st.sampled_from(["inline", "body", "flush", "span"]))
    if shape == "inline":
        return head
    if shape == "span":
        lines = draw(st.lists(WORD, min_size=1, max_size=3))
        return "::PRIORITY{\n" + "\n".join(f"  {w} > x" for w in lines) + "\n}"
    lines = draw(st.lists(body_lines(name), min_size=1, max_size=4))
    if shape == "flush":
        flush = [
            ln for ln in lines if ln.startswith(("T:", "A:")) or (ln[:1].islower() and ":" in ln)
        ]
        return "\n".join([head, *flush]) if flush else head
    if draw(st.booleans()):
        lines.append(f"::PRIOR{{{draw(WORD)}:{draw(WORD)}}}")
    return "\n".join([head, *(f"  {ln}" for ln in lines)])


@st.composite
def documents(draw: st.DrawFn) -> str:
    parts = ["::ILANG::v5.0"] if draw(st.booleans()) else []
    parts += draw(st.lists(declarations() | chains(), min_size=1, max_size=5))
    return "\n\n".join(parts) + "\n"


@settings(max_examples=300, deadline=None)
@given(documents())
def test_render_parse_is_identity_on_generated_documents(text: str) -> None:
    document = parse_document(text)
    rendered = document.render()
    assert parse_document(rendered) == document
    assert parse_document(rendered).render() == rendered


@settings(max_examples=300, deadline=None)
@given(chains())
def test_render_parse_is_identity_on_generated_chains(text: str) -> None:
    chain = parse_chain(text)
    assert parse_chain(chain.render()) == chain


SOUP_PIECES = [
    *'[]{}|:,=>@"\\ \t\n→⇒｜：Ω',
    *("::", "=>", "T[0]", "<<<EOF", "EOF", "::UNTRUSTED{delimiter:EOF}", "::GENE{", "READ"),
    *("BATC:", "@SRC", "\u2028", "\ufeff", "::ILANG::v5.0", "  "),
]
SOUP = st.lists(st.sampled_from(SOUP_PIECES), max_size=40).map("".join)


@settings(max_examples=1000, deadline=None)
@given(SOUP | st.text(max_size=200))
def test_reader_only_ever_raises_its_own_error(text: str) -> None:
    read_document(text)
    for parse in (parse_document, parse_chain):
        with contextlib.suppress(IlangError):
            parse(text)
