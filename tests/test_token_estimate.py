"""The providers' offline input estimate (`large_vocab_text_tokens`) against the real
o200k_base counts of a fixed corpus (`tests/data/o200k_counts.json`, counted with
`bpe_openai`, which ships o200k_base in its wheel; re-counted here when it is installed).
The estimate must never be below the real count, and within 1.25× on whole requests.

The corpus holds the runtime's own fixed text (contract, genes, tool definitions) as it
is now: after changing any of it, `python -m benchmarks.tokens --refresh-corpus` (with
`bpe_openai` installed) rewrites those samples and re-counts the corpus."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from budgets.estimate import MESSAGE_OVERHEAD
from harness.context.agent import DEVELOPER_GENES, SYSTEM_CONTRACT
from harness.models.clients.anthropic_client import AnthropicClient
from harness.models.clients.estimate import (
    LARGE_VOCAB_SCALE,
    _large_vocab_raw,
    typescript_tool_tokens,
    typescript_tools,
    wire_text_tokens,
)
from harness.models.clients.openai_client import OpenAIClient
from harness.models.interface import Message
from harness.workspace.tools import ToolSpec, tool_specs

DATA = json.loads((Path(__file__).parent / "data" / "o200k_counts.json").read_text("utf-8"))
SAMPLES: dict[str, dict[str, object]] = DATA["samples"]
NON_ASCII = {"cjk", "accents", "emoji"}


def rule(text: str) -> int:
    """The offline rule itself (what runs where no tokenizer is installed)."""
    return math.ceil(_large_vocab_raw(text) * LARGE_VOCAB_SCALE)


def real(name: str) -> int:
    count = SAMPLES[name]["o200k"]
    assert isinstance(count, int)
    return count


def text(name: str) -> str:
    value = SAMPLES[name]["text"]
    assert isinstance(value, str)
    return value


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_the_rule_never_counts_below_o200k_and_stays_close(name: str) -> None:
    ratio = rule(text(name)) / real(name)
    assert ratio >= 1.0, f"{name}: {ratio:.3f}"
    # Each kind of text within 1.4x (short runtime lines and non-ASCII err furthest).
    assert ratio <= 1.4, f"{name}: {ratio:.3f}"


def test_the_old_rule_over_counted_what_the_new_one_does_not() -> None:
    names = [n for n in SAMPLES if n not in NON_ASCII]
    old = sum(wire_text_tokens(text(n)) for n in names)
    new = sum(rule(text(n)) for n in names)
    truth = sum(real(n) for n in names)
    assert old / truth > 1.4 and 1.0 <= new / truth <= 1.25


def test_a_whole_mixed_request_is_within_1_25x_and_never_below() -> None:
    """A request's texts mixed as a run's are: runtime text, blocks, code, output."""
    mix = ["contract", "genes", "budget", "status", "untrusted_obj", "untrusted_tool"]
    for extra in (["python_code"], ["json_data"], ["pytest_output", "ls_output"], ["spec"]):
        names = mix + extra
        ratio = sum(rule(text(n)) for n in names) / sum(real(n) for n in names)
        assert 1.0 <= ratio <= 1.25, (extra, ratio)


def test_the_stored_counts_are_o200k_when_a_tokenizer_is_installed() -> None:
    bpe_openai = pytest.importorskip("bpe_openai")
    encoding = bpe_openai.get_encoding("o200k_base")
    for name in SAMPLES:
        assert len(encoding.encode(text(name))) == real(name), name


def test_provider_clients_count_with_the_calibrated_rule() -> None:
    messages = (Message(role="user", content=text("python_code")),)
    tools = tool_specs()
    openai = OpenAIClient("gpt-x", api_key="sk-test-000000000000000000000000")
    anthropic = AnthropicClient("claude-x", api_key="sk-ant-test-0000000000000000000000")
    code = real("python_code")
    for client in (openai, anthropic):
        without_tools = client.estimate_input(messages, ())
        assert code <= without_tools <= code * 1.3
        assert client.estimate_input(messages, tools) > without_tools
    # OpenAI shows the model its tools as a typed namespace, cheaper than the JSON.
    assert "type read_file = (_: {" in typescript_tools(tools)
    expected = typescript_tool_tokens(tools, openai.text_tokens) + MESSAGE_OVERHEAD
    assert openai.tool_tokens(tools) == expected
    assert openai.estimate_input(messages, tools) < anthropic.estimate_input(messages, tools)


def runtime_texts() -> dict[str, str]:
    """The runtime's fixed text as it is sent now, by corpus sample name."""
    texts = {"contract": SYSTEM_CONTRACT, "genes": DEVELOPER_GENES}
    for tool in tool_specs():
        texts[f"tool_json_{tool.name}"] = json.dumps(tool.to_openai(), ensure_ascii=False)
    texts["tools_typescript"] = typescript_tools(tool_specs())
    texts["tools_typescript_read_only"] = typescript_tools(tool_specs(read_only=True))
    return texts


def test_the_corpus_holds_the_runtimes_current_text() -> None:
    """Else its counts (and the overhead bound of tests/test_prompt_overhead.py) would be
    of text no call sends. The fix: `python -m benchmarks.tokens --refresh-corpus`."""
    for name, current in runtime_texts().items():
        assert text(name) == current, f"{name} changed; refresh the corpus (module doc)"


@pytest.mark.parametrize("read_only", [False, True])
def test_openai_tools_are_counted_by_their_structure_never_below(read_only: bool) -> None:
    """The OpenAI client counts its tool definitions as rendered (`typescript_tool_tokens`):
    never below the real count, and closer than the rule over the whole rendering, which
    costs its fixed punctuation as prose."""
    name = "tools_typescript_read_only" if read_only else "tools_typescript"
    counted = typescript_tool_tokens(tool_specs(read_only=read_only), rule)
    assert real(name) <= counted <= real(name) * 1.15
    assert counted < rule(text(name))


def _tool(name: str, description: str, **params: dict[str, str]) -> ToolSpec:
    return ToolSpec(
        name=name,
        description=description,
        parameters={"type": "object", "properties": params, "required": list(params)[:1]},
    )


# Tool sets unlike the harness's: descriptions long and short, ending in a letter, with
# digits, CJK and emoji; parameters described or not, optional, of other types.
OTHER_TOOLS = [
    _tool(
        "fetch_url",
        "Fetch a URL over HTTPS and return the body (max 1 MB), with headers.",
        url={"type": "string", "description": "Absolute https URL."},
        timeout={"type": "number"},
    ),
    _tool("x", "Do it."),
    _tool(
        "searchCode",
        "検索する",
        q={"type": "string"},
        limit={"type": "integer", "description": "max hits"},
    ),
    _tool("a-b", "ends without a stop", Path_2={"type": "array", "description": "list: of it!"}),
    _tool("emoji", "🙂 smile ✓", v={"type": "boolean"}),
]


def test_the_fixed_text_of_the_rendering_is_never_under_counted() -> None:
    """`TS_*_TOKENS` are upper bounds: with o200k's exact count for the free text, the
    structural count is never below the real count of the whole rendering, over many
    tool sets, and at most a token per tool above it."""
    bpe_openai = pytest.importorskip("bpe_openai")
    encoding = bpe_openai.get_encoding("o200k_base")

    def exact(text: str) -> int:
        return len(encoding.encode(text))

    pool = [*tool_specs(), *OTHER_TOOLS]
    sets = [pool[i : i + size] for size in (1, 2, 3, 5, len(pool)) for i in range(len(pool))]
    for tools in filter(None, sets):
        truth = exact(typescript_tools(tools))
        counted = typescript_tool_tokens(tools, exact)
        assert truth <= counted <= truth + len(tools) + 2, [t.name for t in tools]


def _large_vocab_reference(text: str) -> float:
    """The calibrated rule as first written (`estimate._large_vocab_raw` before its
    branches were reordered for speed): the definition the fast one must equal."""
    import re as _re

    from harness.models.clients import estimate as e

    count = 0.0
    for match in e._LARGE_PIECE.finditer(text):
        kind, piece = match.lastgroup, match.group(0)
        if kind == "word":
            if not piece.isascii():
                ascii_letters = len(piece.encode("ascii", "ignore"))
                count += -(-ascii_letters // 10) + -(-(len(piece) - ascii_letters) // 4)
            elif len(piece) > 1 and piece.isupper():
                count += -(-len(piece) // 3)
            else:
                count += -(-len(piece) // 10) + len(_re.findall(r"[a-z][A-Z]|[A-Z]{2}[a-z]", piece))
        elif kind == "cjk":
            count += 0.62 * len(piece)
        elif kind == "mixed":
            count += 0.6 * len(piece)
        elif kind == "digits":
            count += -(-len(piece) // 3)
        elif kind == "newline":
            count += 1
        elif kind == "space":
            count += 1 if len(piece) > 1 else 0
        elif kind == "punct":
            glued = len(piece) == 1 and piece in "._(/@"
            if not (glued and text[match.end() : match.end() + 1].isalpha()):
                count += -(-len(piece) // 3)
        else:
            count += max(1, len(piece.encode("utf-8", "surrogatepass")) - 2)
    return count


@settings(max_examples=300, deadline=None)
@given(
    text=st.one_of(
        st.text(),
        st.text(alphabet="aAbZ xyQ\t\n.,_(/@-9+=é中ö"),
        st.lists(
            st.sampled_from(
                [
                    *("camelCase", "HTTPServer", "I", "a", "OK", "getURL", "x1y2z3w4v5"),
                    *("über", "東京", "internationalization", "abcdefghij", "ABCDEFGHIJK"),
                    *(" ", "  ", "\n", "._"),
                ]
            ),
            max_size=30,
        ).map("".join),
    )
)
def test_the_large_vocabulary_rule_counts_as_first_written(text: str) -> None:
    from harness.models.clients.estimate import _large_vocab_raw

    assert _large_vocab_raw(text) == _large_vocab_reference(text)
