"""Strictness: the narrow canonical grammar a claim must meet, as written, to be accepted.

Detection (`harness.enforce.claims`) is deliberately lenient; this judge is deliberately
narrow. Only a claim with no malformation and no ambiguity can become an accepted
proposal; everything else is recorded and rejected by the authority layer.
"""

from __future__ import annotations

import html
import re
import unicodedata
from typing import Literal

from envelopes.declarations import Evidence, Status
from envelopes.errors import IlangError
from harness.enforce.folding import CONFUSABLES, is_invisible

ClaimKind = Literal["STATUS", "EVIDENCE"]

_ENTITY = re.compile(r"@[A-Z][A-Z0-9_]*")
_WORD = re.compile(r"[a-z][a-z0-9_]*")
_STRICT_KEY = re.compile(r"[a-z_][a-z0-9_]*")
_REASON = re.compile(r"[a-z0-9][a-z0-9_.\-]*")
_QUOTED = re.compile(r'"(?:[^"\\|{}\x00-\x1f]|\\["\\n])*"')
# Characters allowed in a strict bare value besides letters and digits of any script.
_BARE_PUNCTUATION = frozenset("@._%,+/-#")
_STRICT_VALUE_OF: dict[str, re.Pattern[str]] = {
    "state": _WORD,
    "authority": _WORD,
    "by": _ENTITY,
    "verified_by": _ENTITY,
    "reason": _REASON,
}
_REQUIRED_KEYS: dict[str, tuple[str, ...]] = {
    "STATUS": ("state", "by", "authority"),
    "EVIDENCE": (),
}
# A compound value (several values in one field) is an ambiguity, not a typo.
_COMPOUND = re.compile(r"[,/+&\s]|->|=>|→|⇒|>")


def _is_bare_value(value: str) -> bool:
    return bool(value) and all(
        ch in _BARE_PUNCTUATION
        or (ch.isascii() and ch.isalnum())
        or (not ch.isascii() and unicodedata.category(ch)[0] in "LN")
        for ch in value
    )


def _disguise_problems(text: str) -> list[str]:
    found: list[str] = []
    if any(is_invisible(ch) for ch in text.replace("\n", "")):
        found.append("contains invisible or control characters")
    if unicodedata.normalize("NFKC", text) != text:
        found.append("contains full-width or compatibility characters")
    if text.translate(CONFUSABLES) != text:
        found.append("contains look-alike characters")
    if "&" in text and html.unescape(text) != text:
        found.append("contains HTML character references")
    return found


def _check_field(segment: str, seen: set[str], malformed: list[str], ambiguous: list[str]) -> None:
    """One canonical `key:value` field: lowercase key, said once, a well-formed value."""
    key, sep, value = segment.partition(":")
    if not sep or not _STRICT_KEY.fullmatch(key):
        malformed.append(f"field {segment!r} is not key:value")
        return
    if key in seen:
        ambiguous.append(f"repeated key {key!r}")
    seen.add(key)
    pattern = _STRICT_VALUE_OF.get(key)
    if pattern is not None:
        if pattern.fullmatch(value):
            return
        if _COMPOUND.search(value):
            ambiguous.append(f"multi-valued field {key}:{value}")
        else:
            malformed.append(f"malformed value {key}:{value!r}")
    elif not (_is_bare_value(value) or _QUOTED.fullmatch(value)):
        malformed.append(f"malformed value {key}:{value!r}")


def strict_problems(kind: ClaimKind, header: str, body: list[str]) -> tuple[list[str], list[str]]:
    """Check a claim, as written, against the canonical grammar.

    Canonical: `::STATUS{@TASK|key:value|…}` (or `::EVIDENCE{key:value|…}`) at the
    start of its line, only trailing spaces after it, ASCII structure, `|` between
    fields, `:` between key and value, each key once, single well-formed values. Body
    lines (iLang lets a declaration continue on `key:value` lines below its header) must
    be canonical fields too. Returns (malformations, ambiguities); both empty = strict.
    """
    malformed: list[str] = []
    ambiguous: list[str] = []
    line = header.rstrip(" ")
    malformed += _disguise_problems("\n".join([line, *body]))
    head = f"::{kind}{{"
    if not line.startswith(head):
        malformed.append(f"does not start its line with the exact head {head!r}")
        return malformed, ambiguous
    if not line.endswith("}") or line.endswith("}}"):
        malformed.append("does not end with a single closing brace")
        return malformed, ambiguous
    content = line[len(head) : -1]
    if any(ch in content for ch in "{}"):
        malformed.append("has doubled or nested braces")
        return malformed, ambiguous
    segments = content.split("|")
    seen: set[str] = set()
    if kind == "STATUS":
        # The scope must be there; whether it is this task's (@TASK) is the authority
        # layer's judgement, so that it can say so.
        if _ENTITY.fullmatch(segments[0]):
            segments = segments[1:]
        else:
            malformed.append("first field is not a scope @ENTITY")
    for segment in segments:
        _check_field(segment, seen, malformed, ambiguous)
    for body_line in body:
        _check_field(body_line.strip(" "), seen, malformed, ambiguous)
    for key in _REQUIRED_KEYS[kind]:
        if key not in seen:
            malformed.append(f"missing field {key!r}")
    if kind == "EVIDENCE" and "state" in seen:
        malformed.append("::EVIDENCE carries a state field")
    if not (malformed or ambiguous):
        # Defence in depth: what we call strict must also be a declaration the
        # project's own iLang parser reads without complaint.
        model = Status if kind == "STATUS" else Evidence
        try:
            model.parse("\n".join([line, *body]))
        except IlangError as exc:
            malformed.append(f"not a valid ::{kind}: {exc.message}")
    return malformed, ambiguous
