"""Offline token estimates for the clamp (DESIGN §5: no tokenizer download at run time).

The estimate errs high, because an estimate that is too low lets a call overrun its
budget, while one that is too high only trims the output a little:

* ASCII text: one token per 3 bytes, rounded up. Common BPE tokenizers average about 4
  bytes of English or code per token; 3 leaves a margin for identifiers, digits and
  punctuation, which split finer.
* Other characters: `utf-8 length − 1` tokens each: 1 for accented Latin, Greek or
  Cyrillic (2 bytes), 2 for CJK (3 bytes), 3 for emoji (4 bytes). Tokenizers spend
  between 1 and 2 tokens on a CJK character and up to 3 on an emoji.
* Overhead: `MESSAGE_OVERHEAD` (4) tokens per message for role and framing, plus
  `CALL_OVERHEAD` (3) per call for the reply's priming, as chat formats spend. Both are
  small on purpose: a fixed overhead of hundreds of tokens would starve small budgets.

The provider's reported usage, not this estimate, is what the ledger charges.
"""

from __future__ import annotations

from collections.abc import Iterable

MESSAGE_OVERHEAD = 4
CALL_OVERHEAD = 3
ASCII_BYTES_PER_TOKEN = 3


def estimate_text_tokens(text: str) -> int:
    """Tokens for the bare text, no framing. Computed with whole-string encodes (C speed):
    the per-character rule above summed over the text."""
    if text.isascii():
        return -(-len(text) // ASCII_BYTES_PER_TOKEN)
    ascii_bytes = len(text.encode("ascii", "ignore"))
    non_ascii = len(text) - ascii_bytes
    # surrogatepass: a lone surrogate (possible in Python text) still has a size
    utf8_bytes = len(text.encode("utf-8", "surrogatepass"))
    other = utf8_bytes - ascii_bytes - non_ascii
    return -(-ascii_bytes // ASCII_BYTES_PER_TOKEN) + other


def estimate_tokens(text: str) -> int:
    """Tokens for one message holding `text`: its content plus one message's framing."""
    return estimate_text_tokens(text) + MESSAGE_OVERHEAD


def estimate_messages(texts: Iterable[str]) -> int:
    """Tokens for a whole call's input: every message, plus the per-call overhead."""
    return sum(estimate_tokens(text) for text in texts) + CALL_OVERHEAD
