"""iLang carried in Markdown: the fenced blocks whose first line opens iLang."""

from __future__ import annotations

import re
from dataclasses import dataclass

_FENCE = re.compile(r"^[ \t]*```")
_ILANG_START = re.compile(r"::|T\[|\[[A-ZΣΔφ∇λ∂μψξζθΩΠ]")


@dataclass(frozen=True, slots=True)
class FencedBlock:
    first_line: int
    """1-based line number of the block's first content line in the Markdown file."""
    text: str


def is_ilang_start(line: str) -> bool:
    return bool(_ILANG_START.match(line.strip()))


def ilang_fences(markdown: str) -> list[FencedBlock]:
    """Every fenced block whose first non-blank line looks like iLang (a declaration, a
    temporal prefix or a bracket group); other fences are prose or code and are skipped."""
    lines = markdown.split("\n")
    blocks: list[FencedBlock] = []
    i = 0
    while i < len(lines):
        if not _FENCE.match(lines[i]):
            i += 1
            continue
        start = i + 1
        end = start
        while end < len(lines) and not _FENCE.match(lines[end]):
            end += 1
        body = lines[start:end]
        first = next((ln for ln in body if ln.strip()), "")
        if is_ilang_start(first):
            blocks.append(FencedBlock(start + 1, "\n".join(body) + "\n"))
        i = end + 1
    return blocks
