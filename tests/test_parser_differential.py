"""The product's reader against a frozen copy of the reader it replaced (commit 4dad602,
kept in `tests/parser_frozen/` with the dataclass nodes and the lint of commit a4f8d26): every
input must give the same document, node for node (`repr` names every field, line and column
included), the same findings, the same lint output and, for chains, the same chain or the same
error.

Three sources of input: the project's own seed files (`tests/data/parser_fuzz/`), inputs
generated and mutated from them (hypothesis, derandomized: the same cases on every run;
`ILH_FUZZ_CASES` cases per generator, 1000 by default, so 3000 in all), and, as the `corpus`
layer, every text of the shared corpora (skipped with the reason on a clone alone).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from envelopes.chain import parse_chain
from envelopes.declarations import fields
from envelopes.document import read_document
from envelopes.errors import IlangError
from envelopes.lint import lint_ilang
from envelopes.markdown import ilang_fences
from tests.conftest import SHARED
from tests.parser_frozen import old_chain, old_document, old_fields, old_lint

SEEDS_DIR = Path(__file__).parent / "data" / "parser_fuzz"
SEEDS = sorted(SEEDS_DIR.glob("*.ilang"))
SEED_TEXTS = [p.read_bytes().decode("utf-8") for p in SEEDS]
SEED_LINES = sorted({ln for text in SEED_TEXTS for ln in text.splitlines() if ln.strip()})


def assert_same_reading(text: str, first_line: int = 1) -> None:
    old_doc, old_findings = old_document.read_document(text, first_line)
    new_doc, new_findings = read_document(text, first_line)
    assert repr(new_doc) == repr(old_doc)
    assert new_findings == old_findings
    assert lint_ilang(text, first_line) == old_lint.lint_ilang(text, first_line)


def chain_outcome(parse: object, text: str) -> str:
    try:
        return repr(parse(text, 3, 5))  # type: ignore[operator]
    except IlangError as err:
        return f"error {err.code} {err.line}:{err.col} {err.message}"


def assert_same_chain(text: str) -> None:
    assert chain_outcome(parse_chain, text) == chain_outcome(old_chain.parse_chain, text)


# ----------------------------------------------------------------------- own seeds


def test_the_seed_corpus_is_there_and_exercises_both_readers() -> None:
    assert len(SEEDS) >= 4
    findings = [f for text in SEED_TEXTS for f in read_document(text)[1]]
    codes = {f.code for f in findings}
    # The seeds reach the error paths as well as the fast ones.
    assert {"E300", "E302", "E304", "E305", "E502"} <= codes


@pytest.mark.parametrize("path", SEEDS, ids=[p.name for p in SEEDS])
def test_seed_file_reads_the_same(path: Path) -> None:
    assert_same_reading(path.read_bytes().decode("utf-8"))


@pytest.mark.parametrize("line", SEED_LINES)
def test_seed_line_reads_the_same_as_a_document_and_as_a_chain(line: str) -> None:
    assert_same_reading(line)
    assert_same_chain(line.strip())


# -------------------------------------------------------------------- generated

_MUTATION_ALPHABET = [*'[]{}|,:=>@"\\ \t\n\r→⇒Ω΄Σ\x00\u2028', "=>", "::", "  ", "<<<"]


@st.composite
def mutated_seed(draw: st.DrawFn) -> str:
    """A seed file (or a slice of one) with a few characters inserted, deleted or
    replaced: near-misses of every shape the seeds hold."""
    text = draw(st.sampled_from(SEED_TEXTS))
    if draw(st.booleans()):
        lines = text.split("\n")
        start = draw(st.integers(0, len(lines) - 1))
        text = "\n".join(lines[start : start + draw(st.integers(1, 12))])
    for _ in range(draw(st.integers(0, 6))):
        at = draw(st.integers(0, len(text)))
        action = draw(st.sampled_from(["insert", "delete", "replace"]))
        piece = draw(st.sampled_from(_MUTATION_ALPHABET) | st.text(max_size=2))
        if action == "insert":
            text = text[:at] + piece + text[at:]
        elif action == "delete":
            text = text[:at] + text[at + draw(st.integers(1, 4)) :]
        else:
            text = text[:at] + piece + text[at + len(piece) :]
    return text


_HEADS = ["READ", "WRIT", "FILT", "BATC", "OUT", "Ω", "Π", "Σ", "REED", "Φ", "read", "", "@X"]
_TARGETS = ["", ":@SRC", ":@X_1", ":@bad", ":@", ":READ", ":Σ", ":OUT", ":@A:B", ": @X", ":x"]
_KEYS = ["src", "whr", "fmt", "dst", "foo", "", "1x", "no_unknown"]
_VALUES = [
    "x",
    "@DST",
    "@dst",
    "@",
    '"quoted, v"',
    '"esc\\"q"',
    '"bad\\q"',
    '""',
    "a>=b",
    "a b",
    "",
    '"',
    "[x",
    "a\tb",
    '"tab\there"',
    "é中",
    "x\u2028",
    "v=w",
]


@st.composite
def chains(draw: st.DrawFn) -> str:
    ops = []
    for _ in range(draw(st.integers(1, 4))):
        op = "[" + draw(st.sampled_from(_HEADS)) + draw(st.sampled_from(_TARGETS))
        pieces = draw(
            st.lists(
                st.tuples(st.sampled_from(_KEYS), st.sampled_from(_VALUES), st.booleans()),
                max_size=3,
            )
        )
        if pieces or draw(st.booleans()):
            op += "|" + ",".join(f"{k}={v}" if eq else k for k, v, eq in pieces)
        if draw(st.integers(0, 9)):
            op += "]"
        ops.append(op)
    joiners = st.sampled_from(["=>"] * 6 + [" =>", "=> ", "", " ", "=>=>"])
    text = ops[0]
    for op in ops[1:]:
        text += draw(joiners) + op
    return text + draw(st.sampled_from([""] * 8 + [" ", "x", "=>", "\t"]))


_LINE_KINDS = [
    "::FACT{key:a|value:b}",
    "::GENE{g|conf:c}",
    "::LESSON{id:l|type:t}",
    "::SAY{@A→@B}{hi}",
    "::THINK{@A}{open",
    "::PRIORITY{",
    "}",
    "::UNTRUSTED{id:u|delimiter:Z}",
    "<<<Z",
    "Z",
    "::END_UNTRUSTED{id:u}",
    "::ILANG::v5.0",
    "[TYPE:x][LANG:en]",
    "[NOTE] text",
    "T:x",
    "key:value",
    "key:[a,b]",
    "prose words",
    "→ note",
    "T[0]=1",
    "T[1]  ::EVENT{e}",
    "---",
    "",
]


@st.composite
def documents(draw: st.DrawFn) -> str:
    lines = []
    for _ in range(draw(st.integers(1, 14))):
        indent = draw(st.sampled_from(["", "", "  ", "    ", "\t"]))
        body = draw(st.sampled_from(_LINE_KINDS) | chains() | st.just("=>[OUT]"))
        lines.append(indent + body)
    return draw(st.sampled_from(["\n", "\r\n"])).join(lines) + draw(st.sampled_from(["", "\n"]))


_FUZZ = settings(
    max_examples=int(os.environ.get("ILH_FUZZ_CASES", "1000")),
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)


@_FUZZ
@given(chains())
def test_generated_chain_parses_the_same(text: str) -> None:
    assert_same_chain(text)
    assert_same_reading(text)


@_FUZZ
@given(documents())
def test_generated_document_reads_the_same(text: str) -> None:
    assert_same_reading(text)


@_FUZZ
@given(mutated_seed(), st.integers(1, 40))
def test_mutated_seed_reads_the_same(text: str, first_line: int) -> None:
    assert_same_reading(text, first_line)


# ------------------------------------------------------------------ corpus layer


def _corpus_texts() -> list[tuple[str, str]]:
    if not SHARED.is_dir():
        return []
    texts: list[tuple[str, str]] = []
    for path in sorted((SHARED / "iml").glob("golden*/*.ilang")):
        texts.append((f"{path.parent.name}/{path.name}", path.read_text(encoding="utf-8")))
    for path in sorted((SHARED / "spec").glob("*.md")):
        markdown = path.read_text(encoding="utf-8")
        texts.append((path.name, markdown))  # the whole file, prose and all: hostile input
        for block in ilang_fences(markdown):
            texts.append((f"{path.name}:{block.first_line}", block.text))
    cases = json.loads((SHARED / "iml" / "malformed-cases.json").read_text(encoding="utf-8"))
    for number, case in enumerate(cases):
        texts.append((f"malformed#{number}", case["input"]))
    for path in sorted((SHARED / "conformance").glob("*/*.jsonl")):
        for number, row in enumerate(path.read_text(encoding="utf-8").splitlines()):
            texts.append((f"{path.parent.name}/{path.name}#{number}", json.loads(row)["prompt"]))
    return texts


CORPUS = _corpus_texts()


@pytest.mark.shared
def test_corpus_reads_the_same() -> None:
    assert len(CORPUS) > 700  # golden, spec files and fences, malformed cases, conformance
    for name, text in CORPUS:
        try:
            assert_same_reading(text)
            for line in text.splitlines():
                if line.lstrip().startswith(("[", "=>")):
                    assert_same_chain(line.strip())
        except AssertionError as err:
            raise AssertionError(f"{name} reads differently") from err


# ------------------------------------------------- the typed readers' character checks
# `lint_ilang` reads typed declarations through `declarations.fields`, whose per-character
# checks now skip printable ASCII in one match. These are the loops they replaced.


def _old_check_value(value: str) -> bool:
    return all(fields.value_char_allowed(ch) for ch in value)


def _old_bare_ok(value: str) -> bool:
    return all(fields._bare_char_ok(ch) and ch != fields.FULLWIDTH_PIPE for ch in value)


_CHARS = st.text(
    alphabet=st.characters(max_codepoint=0x7F) | st.sampled_from("｜：\u00a0\u2028é\u200b"),
    max_size=12,
)


@settings(max_examples=600, deadline=None)
@given(_CHARS, st.booleans())
def test_character_checks_agree_with_the_per_character_loops(value: str, positional: bool) -> None:
    try:
        fields.check_value(value)
        accepted = True
    except ValueError:
        accepted = False
    assert accepted == _old_check_value(value)
    try:
        fields._check_bare(value, 0, line=1, col=1)
        bare = True
    except IlangError:
        bare = False
    assert bare == _old_bare_ok(value)
    old_needs = (
        value == ""
        or value[0].isspace()
        or value[-1].isspace()
        or "\\" in value
        or (positional and (":" in value or fields.FULLWIDTH_COLON in value))
        or not all(fields._bare_char_ok(ch) for ch in value)
    )
    assert fields.needs_quoting(value, positional=positional) == old_needs


# ------------------------------------------------------------------ node semantics


def _node_pairs() -> list[tuple[object, object, object, object]]:
    """(new a, new b, old a, old b): the same two nodes built from both node types, each
    pair differing in exactly one thing (the line or column alone, or a compared field)."""
    from envelopes import chain as new_chain
    from envelopes import document as new_nodes
    from tests.parser_frozen import old_nodes

    def both(build: object) -> tuple[object, object]:
        return build(new_chain, new_nodes), build(old_nodes, old_nodes)  # type: ignore[operator]

    builders = [
        lambda c, d: c.Modifier("src", "x"),
        lambda c, d: c.Modifier("src", "x", True),
        lambda c, d: c.Operation("READ", None, "X", None, (c.Modifier("src", "x"),), 4),
        lambda c, d: c.Operation("READ", None, "X", None, (c.Modifier("src", "x"),), 9),
        lambda c, d: c.Operation("READ", "Ω", None, None, (), 4),
        lambda c, d: c.Chain((c.Operation("OUT"),), 1),
        lambda c, d: c.Chain((c.Operation("OUT"),), 7),
        lambda c, d: d.TextLine("tags", "[A:b]", 2),
        lambda c, d: d.TextLine("tags", "[A:b]", 3),
        lambda c, d: d.ChainLine(c.Chain((c.Operation("OUT"),), 7), 7),
        lambda c, d: d.ChainLine(c.Chain((c.Operation("OUT"),), 7), 8),
        lambda c, d: d.BodyLine("B2", "k:v", line=5),
        lambda c, d: d.BodyLine("B2", "k:v", line=6),
        lambda c, d: d.Declaration("FACT", "key:a", body=(d.BodyLine("B2", "k:v", line=5),)),
        lambda c, d: d.Declaration("FACT", "key:a", body=(d.BodyLine("B2", "k:v", line=6),)),
        lambda c, d: d.Declaration("FACT", "key:a", line=3),
        lambda c, d: d.Declaration("FACT", "key:b", line=3),
        lambda c, d: d.Document((d.TextLine("tags", "[A:b]", 2),)),
        lambda c, d: d.Document((d.TextLine("tags", "[A:b]", 3),)),
        lambda c, d: d.Document(()),
    ]
    built = [both(b) for b in builders]
    return [(na, nb, oa, ob) for na, oa in built for nb, ob in built]


def test_nodes_compare_hash_and_print_as_the_dataclasses_did() -> None:
    for new_a, new_b, old_a, old_b in _node_pairs():
        assert repr(new_a) == repr(old_a)
        assert (new_a == new_b) == (old_a == old_b), (new_a, new_b)
        assert (new_a != new_b) == (old_a != old_b), (new_a, new_b)
        if new_a == new_b:
            assert hash(new_a) == hash(new_b)
    from envelopes.chain import Modifier

    # A node is never equal to a bare tuple or to a node of another type with the same items.
    assert Modifier("src", "x") != ("src", "x", False)
    assert not Modifier("src", "x") == ("src", "x", False)  # noqa: SIM201


# ------------------------------------------------------- the typed readers' field scanner


def _fields_outcome(module: object, text: str) -> tuple[str, str]:
    results = []
    for read in (
        lambda: module.split_fields(text, line=2, col=3),  # type: ignore[attr-defined]
        lambda: module.scan_header("::X{" + text, 4, line=2),  # type: ignore[attr-defined]
    ):
        try:
            results.append(repr(read()))
        except IlangError as err:
            results.append(f"error {err.code} {err.line}:{err.col} {err.message}")
    return results[0], results[1]


def assert_same_fields(text: str) -> None:
    assert _fields_outcome(fields, text) == _fields_outcome(old_fields, text)


_HEADER_ALPHABET = st.sampled_from([*'ab:|"{}\\ \t@=,', "｜", "：", "é", "\u200b", "key:", "x|y"])


_PAD_CHOICES = st.sampled_from(["", "", " ", "\t", "  "])
_VALUE_PIECES = st.lists(_HEADER_ALPHABET | st.sampled_from(["x", "1.5", " ", "@T"]), max_size=5)


@st.composite
def headers(draw: st.DrawFn) -> str:
    """Well-formed and near-miss headers: segments of optional `key:` and a bare or quoted
    value, each with pads where a writer might leave them."""
    segments = []
    for _ in range(draw(st.integers(1, 4))):
        value = "".join(draw(_VALUE_PIECES))
        if draw(st.booleans()):
            value = '"' + value.replace('"', "") + draw(st.sampled_from(['"', '" ', "", '"x']))
        key = draw(st.sampled_from(["", "key", "id", "K_2", "1x", "ke y", "state"]))
        head = f"{key}{draw(_PAD_CHOICES)}:" if key else ""
        segments.append(draw(_PAD_CHOICES) + head + draw(_PAD_CHOICES) + value)
    return draw(st.sampled_from(["|", "|", " | ", "｜"])).join(segments) + draw(_PAD_CHOICES)


@_FUZZ
@given(st.lists(_HEADER_ALPHABET, max_size=16).map("".join) | headers())
def test_generated_header_splits_the_same(text: str) -> None:
    assert_same_fields(text)


@pytest.mark.shared
def test_corpus_headers_split_the_same() -> None:
    headers = 0
    for _, text in CORPUS:
        document, _ = read_document(text)
        for declaration in document.declarations():
            assert_same_fields(declaration.header)
            headers += 1
            for line in declaration.body:
                assert_same_fields(line.text)
    assert headers > 500


# ------------------------------------- printable-ASCII shortcuts against the loops they skip

_VALUE_TEXT = st.text(
    alphabet=st.characters(max_codepoint=0x7F)
    | st.sampled_from('"\\｜：\u00a0\u2028\u200b\x85é中 \t\n'),
    max_size=20,
)


def _outcome(read: object) -> str:
    try:
        return repr(read())  # type: ignore[operator]
    except IlangError as err:
        return f"error {err.code} {err.line}:{err.col} {err.message}"


def _old_rationale_problem(text: str) -> tuple[str, int] | None:
    from envelopes import judge

    if not text.strip():
        return "R must carry a rationale of 1 to 120 characters", 0
    for index, ch in enumerate(text):
        if judge._is_forbidden_char(ch):
            return f"R contains the control or separator character U+{ord(ch):04X}", index
    if "|" in text:
        return "R is a single field; `|` would add fields to it", text.index("|")
    if text != text.strip():
        return "R must not begin or end with whitespace", 0
    if len(text) > judge.RATIONALE_MAX:
        return (
            f"R is {len(text)} characters; the maximum is {judge.RATIONALE_MAX}",
            judge.RATIONALE_MAX,
        )
    return None


def _old_read_body_line(line_no: int, text: str) -> tuple[str, str]:
    """`objective._read_body_line` with its per-character loop over every unquoted value."""
    from envelopes.declarations import objective

    colon = text.find(":")
    key, value = objective._read_body_line(line_no, text)
    raw = text[colon + 1 :].strip(" \t")
    if not raw.startswith('"'):
        start = colon + 1 + (len(text[colon + 1 :]) - len(text[colon + 1 :].lstrip(" \t")))
        for offset, ch in enumerate(raw):
            if ch == fields.FULLWIDTH_PIPE or not objective._free_char_ok(ch):
                raise AssertionError(f"the loop refuses {ch!r} at {start + offset + 1}")
    return key, value


@settings(max_examples=600, deadline=None, derandomize=True, database=None)
@given(_VALUE_TEXT)
def test_quoted_reads_and_free_text_checks_agree_with_the_loops(text: str) -> None:
    from envelopes import judge
    from envelopes.declarations import objective

    quoted = '"' + text
    assert _outcome(lambda: fields.read_quoted(quoted, 0, line=2, col=3)) == _outcome(
        lambda: old_fields.read_quoted(quoted, 0, line=2, col=3)
    )
    assert objective._free_text_ok(text) == (
        not (text == "" or text[0].isspace() or text[-1].isspace() or text[0] == '"')
        and all(objective._free_char_ok(ch) for ch in text)
    )
    assert judge._rationale_problem(text) == _old_rationale_problem(text)
    line = "key: " + text
    assert _outcome(lambda: objective._read_body_line(4, line)) == _outcome(
        lambda: _old_read_body_line(4, line)
    )


def test_segments_compare_hash_and_print_as_the_model_did() -> None:
    values = [(None, "x", 1, 1), ("k", "x", 1, 1), ("k", "x", 2, 1), ("k", "x", 1, 5), ("k", "y")]
    new = [fields.Segment(*v) for v in values]  # type: ignore[arg-type]
    old = [
        old_fields.Segment(**dict(zip(("key", "value", "line", "col"), v, strict=False)))
        for v in values
    ]
    for new_a, old_a in zip(new, old, strict=True):
        assert repr(new_a) == repr(old_a)
        for new_b, old_b in zip(new, old, strict=True):
            assert (new_a == new_b) == (old_a == old_b)
            assert (new_a != new_b) == (old_a != old_b)
    assert fields.Segment("k", "x") != ("k", "x", 1, 1)


@settings(max_examples=600, deadline=None, derandomize=True, database=None)
@given(
    st.lists(
        st.floats(allow_nan=True, allow_infinity=True)
        | st.integers(-2, 2).map(lambda k: k / 2)
        | st.integers(0, 100).map(lambda k: k / 100)
        | st.sampled_from([-0.0, 0.0, 1.0, True, False, 0, 1, 2, "0.5", None, 0.855]),
        max_size=6,
    )
)
def test_unit_checks_agree_with_the_uncached_check(values: list[object]) -> None:
    from envelopes import judge_function

    for value in values + values:  # each twice: the second answer comes from the cache
        assert judge_function.unit_problem(value) == judge_function._unit_problem(value)


@settings(max_examples=300, deadline=None, derandomize=True, database=None)
@given(
    st.lists(
        st.integers(0, 100).map(lambda k: k / 100) | st.sampled_from([-0.0, 0.0, 1.0, 1, 0]),
        min_size=11,
        max_size=11,
    )
)
def test_exact_vectors_agree_with_the_uncached_conversion(values: list[float]) -> None:
    from decimal import Decimal

    from envelopes import judge_function

    vector = dict(zip(judge_function.DIMENSIONS, values, strict=True))
    for _ in range(2):  # the second conversion comes from the cache
        exact = judge_function._to_decimals(vector)
        assert exact == {d: Decimal(f"{float(v) + 0.0:.2f}") for d, v in vector.items()}
        assert all(str(exact[d]) == f"{float(v) + 0.0:.2f}" for d, v in vector.items())


def test_the_isprintable_shortcuts_hold_for_every_code_point() -> None:
    """`str.isprintable` stands in for per-character category look-ups; this holds only
    while it refuses exactly what they refuse, so every code point is checked (on this
    interpreter's Unicode tables)."""
    import sys

    from envelopes import judge
    from envelopes.declarations import objective

    for code in range(sys.maxunicode + 1):
        ch = chr(code)
        printable = ch.isprintable()
        assert fields._bare_char_ok(ch) == (printable and ch not in '|{}"｜'), hex(code)
        if printable:
            assert fields.value_char_allowed(ch), hex(code)
            assert judge._is_forbidden_char(ch) is False, hex(code)
            assert ch == "｜" or objective._free_char_ok(ch), hex(code)
