"""Fenced iLang examples of the spec files, selected the way the canon's validator
selects them: a fence is iLang when its first non-blank line opens a declaration
(`::`), a temporal prefix (`T[`) or a bracket group whose first letter is upper case or
a Greek alias."""

from __future__ import annotations

import re
from pathlib import Path

SPEC_FILES = ("SPEC.md", "SPEC-v4.0-FINAL.md", "SPEC-v5.0.md")
_FENCE = re.compile(r"^```[^\n]*\n(.*?)^```", re.S | re.M)
_ILANG_START = re.compile(r"::|T\[|\[[A-ZΣΔφ∇λ∂μψξζθΩΠ]")

# SPEC.md §2.2 states the operation syntax itself with metavariables (`VERB`, `VERB2`,
# `mod=value`); it is a template of the grammar, not an example written in it.
TEMPLATES = {("SPEC.md", "[VERB:@TARGET|mod=value]=>[VERB2]=>[VERB3:@DST]\n")}


def fenced_examples(spec_dir: Path) -> list[tuple[str, int, str]]:
    """(file, 1-based line of the block's first line, block text) of every iLang fence."""
    found: list[tuple[str, int, str]] = []
    for name in SPEC_FILES:
        text = (spec_dir / name).read_text(encoding="utf-8")
        for match in _FENCE.finditer(text):
            block = match.group(1)
            first = next((ln.strip() for ln in block.splitlines() if ln.strip()), "")
            if not _ILANG_START.match(first) or (name, block) in TEMPLATES:
                continue
            line = text.count("\n", 0, match.start(1)) + 1
            found.append((name, line, block))
    return found
