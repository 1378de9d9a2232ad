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

A call carries more than message texts: tool definitions (as JSON), the arguments of
earlier tool calls, per-message framing (`budgets.estimate.MESSAGE_OVERHEAD`) and, for
some providers, a hidden prompt (Anthropic's tool-use system prompt): all of it counts.
"""

from __future__ import annotations

import functools
import json
import math
import re
from collections.abc import Iterable, Sequence

from budgets.estimate import CALL_OVERHEAD, MESSAGE_OVERHEAD, estimate_messages, estimate_tokens
from harness.models.clients.convert import call_arguments_json
from harness.models.interface import EstimatesInput, Message
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


def wire_messages_tokens(texts: Iterable[str]) -> int:
    return sum(wire_text_tokens(t) + MESSAGE_OVERHEAD for t in texts) + CALL_OVERHEAD


def message_tokens(message: Message) -> int:
    """Estimated tokens of one message as a provider carries it: its text and the
    arguments of its tool calls, each with one message's framing."""
    count = wire_text_tokens(message.content) + MESSAGE_OVERHEAD
    for call in message.tool_calls:
        count += wire_text_tokens(call.name + call_arguments_json(call)) + MESSAGE_OVERHEAD
    return count


def estimate_input(
    messages: Sequence[Message],
    tools: Sequence[ToolSpec],
    *,
    tools_overhead: int = 0,
    counted: PerMessage[int] | None = None,
) -> int:
    """Estimated input tokens of one provider call: messages, earlier tool calls and
    tool definitions, plus `tools_overhead` when tools are sent. `counted`: the
    conversation's memo of `message_tokens`, so a message re-sent is not counted again."""
    per_message = counted(messages) if counted is not None else map(message_tokens, messages)
    texts = [json.dumps(t.to_openai(), ensure_ascii=False) for t in tools]
    return sum(per_message) + wire_messages_tokens(texts) + (tools_overhead if tools else 0)


def input_estimate_for(
    client: object, messages: Sequence[Message], tools: Sequence[ToolSpec]
) -> int:
    """The estimate the clamp uses for `client`: its own when it knows what its provider
    sends (`EstimatesInput`), else the plain estimate of the message texts (scripted
    agents, whose usage is written in their script or estimated the same way)."""
    if isinstance(client, EstimatesInput):
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
        if isinstance(self._client, EstimatesInput):
            return self._client.estimate_input(messages, tools)
        return sum(self._plain(messages)) + CALL_OVERHEAD


def _plain_tokens(message: Message) -> int:
    return estimate_tokens(message.content)
