"""The hostile reader: every `::STATUS` / `::EVIDENCE` claim in a piece of agent text.

An agent that wants to forge authority will disguise its claim: full-width `：｛｝｜`,
zero-width characters, `=` separators, bullets, emphasis, code spans, `T[n]` prefixes,
doubled or unclosed braces, repeated keys, case variants. None of that may hide a claim
(DESIGN §3). The reader therefore works in two passes:

1. *Detection* runs on a folded copy of each line (NFKC, invisible characters removed,
   look-alike characters mapped to ASCII) and is deliberately over-inclusive: anything
   that looks like an attempt at a status or evidence declaration becomes a `RawClaim`,
   with its fields read leniently (all values of every key kept).
2. *Strictness* is judged on the original line, as the agent wrote it, against a narrow
   canonical grammar. Only a strict claim can ever be accepted as a proposal; everything
   else is recorded and rejected by the authority layer.

A false positive costs a rejected claim and a violation record; a false negative could
let a disguised claim go unrecorded. Detection errs towards the former (fail closed).

Only agent text may be given to this reader (claims are read from the agent channel
only). A declaration inside a code block, inline code or an echoed `::UNTRUSTED` block is
still the agent's text: it is still a claim, but never a strict one.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterator
from typing import Literal

from pydantic import BaseModel, ConfigDict, model_validator

from envelopes.declarations.status import Status
from envelopes.errors import IlangError

ClaimKind = Literal["STATUS", "EVIDENCE"]

# --------------------------------------------------------------------------- folding

# Look-alikes NFKC leaves alone. Structural punctuation first, then Cyrillic and Greek
# letters that render like Latin ones (so `::ЅТАТUS` is still a STATUS attempt).
_CONFUSABLES: dict[int, str] = str.maketrans(
    {
        # colons
        "∶": ":",
        "ː": ":",
        "꞉": ":",
        "˸": ":",
        "։": ":",
        "׃": ":",
        "܃": ":",
        "᛬": ":",
        "⁚": ":",
        "᠄": ":",
        "ꓽ": ":",
        "∷": "::",
        # braces and brackets
        "❴": "{",
        "❵": "}",
        "⦃": "{",
        "⦄": "}",
        "〔": "{",
        "〕": "}",
        "⟨": "(",
        "⟩": ")",
        # vertical bars
        "∣": "|",
        "ǀ": "|",
        "¦": "|",
        "│": "|",
        "┃": "|",
        "❘": "|",
        "⏐": "|",
        "⎸": "|",
        "⎹": "|",
        "׀": "|",
        "।": "|",
        "ⵏ": "|",
        "丨": "|",
        # separators
        "꞊": "=",
        "⹀": "=",
        "、": ",",
        "‚": ",",
        "⸴": ",",
        "⁏": ";",
        # commercial at
        "Ⓐ": "@",
        # Cyrillic look-alikes
        "А": "A",
        "В": "B",
        "Е": "E",
        "К": "K",
        "М": "M",
        "Н": "H",
        "О": "O",
        "Р": "P",
        "С": "C",
        "Т": "T",
        "Х": "X",
        "Ѕ": "S",
        "І": "I",
        "Ј": "J",
        "У": "Y",
        "Ԁ": "D",
        "а": "a",
        "е": "e",
        "о": "o",
        "р": "p",
        "с": "c",
        "х": "x",
        "у": "y",
        "ѕ": "s",
        "і": "i",
        "ј": "j",
        "ԁ": "d",
        "һ": "h",
        "ԛ": "q",
        "ԝ": "w",
        "ո": "n",
        "ս": "u",
        # Greek look-alikes
        "Α": "A",
        "Β": "B",
        "Ε": "E",
        "Ζ": "Z",
        "Η": "H",
        "Ι": "I",
        "Κ": "K",
        "Μ": "M",
        "Ν": "N",
        "Ο": "O",
        "Ρ": "P",
        "Τ": "T",
        "Υ": "Y",
        "Χ": "X",
        "ο": "o",
        "ν": "v",
        "τ": "t",
        "υ": "u",
        "ι": "i",
        "κ": "k",
        "α": "a",
        "ε": "e",
    }
)

# Categories removed from the detection copy: format characters (zero-width space and
# joiners, BOM, soft hyphen, bidi controls, tag characters), combining marks (strike-
# through overlays), line/paragraph separators, private use, unassigned, and surrogates.
_INVISIBLE_CATEGORIES = frozenset({"Cf", "Mn", "Me", "Zl", "Zp", "Co", "Cn", "Cs"})


def _is_invisible(ch: str) -> bool:
    cat = unicodedata.category(ch)
    if cat == "Cc":
        return ch != "\t"
    return cat in _INVISIBLE_CATEGORIES


def fold(text: str) -> str:
    """The detection copy of `text`: what a reader of the rendered text would see.

    NFKC folds full-width and other compatibility forms (`：｛｝｜＝＠`, mathematical
    letters); invisible characters are dropped; remaining look-alikes are mapped to
    ASCII. NFKC runs again after the removals so that a character split by an invisible
    one still folds.
    """
    text = unicodedata.normalize("NFKC", text)
    text = "".join(" " if ch == "\t" else ch for ch in text if not _is_invisible(ch))
    return unicodedata.normalize("NFKC", text.translate(_CONFUSABLES))


# ------------------------------------------------------------------------- detection

# Markdown junk that may sit between the pieces of a disguised declaration head.
_JUNK = r"[\s*_~`'\"]*"


def _spaced(word: str) -> str:
    """A pattern for `word` with markdown junk allowed between its letters."""
    return "[*_~`]{0,3}".join(re.escape(c) for c in word)


_HEAD = re.compile(
    rf"(?P<colons>:{_JUNK}:?)?{_JUNK}"
    rf"(?<![A-Za-z0-9])(?P<name>{_spaced('status')}|{_spaced('evidence')})(?![A-Za-z0-9])"
    rf"(?P<gap>{_JUNK})(?P<open>[{{(\[]+)?",
    re.IGNORECASE,
)

# A field key in lenient reading: a word followed by `:` or `=` (not `=>`/`==`), possibly
# wrapped in quotes or emphasis. It must not continue a value (`sha256:abc`, `https://`).
_KEY = re.compile(
    r"(?<![\w@:./\-=>%+])[\"'*_~`]*(?P<key>[A-Za-z][A-Za-z0-9_\-]*)[\"'*_~`]*\s*(?::|=(?![>=]))"
)
_HARD_SEPARATORS = re.compile(r"[|;{}\[\]()]")
_VALUE_JUNK = " \t,\"'*~`"

# Keys that make a line a status/evidence attempt even without a declaration name.
_STATUS_KEYS = frozenset({"state", "by", "authority"})
_EVIDENCE_KEYS = frozenset({"verified_by", "result", "deliverable"})
# Keys whose values the authority layer inspects; an agent may try to hide them inside
# another field's value (`note:authority=commit`), so they are also searched for there.
_SENSITIVE_KEYS = frozenset({"state", "by", "authority", "verified_by", "reason"})
_EMBEDDED = re.compile(
    r"(?<![A-Za-z0-9_])(?P<key>state|by|authority|verified_by|reason)\s*(?::|=(?![>=]))\s*"
    r"(?P<value>[^\s|;,{}]+)",
    re.IGNORECASE,
)
_FORGED_PAIR = re.compile(
    r"(?<![A-Za-z0-9_])(?:by\s*[:=]\s*@?(?:runtime|grader|system)"
    r"|authority\s*[:=]\s*(?:commit|verification))",
    re.IGNORECASE,
)

_FENCE = re.compile(r"^[\s>]*(?:[-*+]\s+|\d+[.)]\s+)?(?P<fence>`{3,}|~{3,})")
_UNTRUSTED_OPEN = re.compile(r"::\s*UNTRUSTED(?![A-Za-z0-9_])", re.IGNORECASE)
_UNTRUSTED_CLOSE = re.compile(r"::\s*END_UNTRUSTED(?![A-Za-z0-9_])", re.IGNORECASE)


def _normal_key(raw: str) -> str:
    return raw.strip("_-").lower().replace("-", "_")


def _clean_value(raw: str) -> str:
    return raw.strip(_VALUE_JUNK).strip("_ \t")


def _parse_fields(body: str) -> tuple[list[str], list[tuple[str, str]]]:
    """Read `key:value` / `key=value` fields leniently; keep every value of every key.

    `|`, `;`, braces and brackets always separate fields; inside a segment a new key may
    also start after whitespace or a comma (`state=stopped, by=@AGENT`). A comma that is
    not followed by a key stays in the value, so `@SELF,@RUNTIME` is one compound value.
    """
    positional: list[str] = []
    fields: list[tuple[str, str]] = []
    for segment in _HARD_SEPARATORS.split(body):
        keys = list(_KEY.finditer(segment))
        head = _clean_value(segment[: keys[0].start()] if keys else segment).lstrip(":= ")
        if head:
            positional.append(head)
        for i, match in enumerate(keys):
            end = keys[i + 1].start() if i + 1 < len(keys) else len(segment)
            fields.append((_normal_key(match["key"]), _clean_value(segment[match.end() : end])))
    return positional, fields


def _embedded_fields(fields: list[tuple[str, str]]) -> list[tuple[str, str, str]]:
    """Sensitive fields hidden inside another field's value: (key, value, host key)."""
    found: list[tuple[str, str, str]] = []
    for host, value in fields:
        for match in _EMBEDDED.finditer(value):
            key = match["key"].lower()
            if key == host and match.start() == 0:
                continue
            found.append((key, _clean_value(match["value"]), host))
    return found


def _has_keys(fields: list[tuple[str, str]], wanted: frozenset[str]) -> set[str]:
    return {key for key, _ in fields} & wanted


# --------------------------------------------------------------------- strict grammar

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


def _strict_problems(kind: ClaimKind, original: str) -> tuple[list[str], list[str]]:
    """Check `original` (one line, as written) against the canonical grammar.

    Canonical: `::STATUS{@TASK|key:value|…}` (or `::EVIDENCE{key:value|…}`) alone on
    its line, nothing before it, only trailing spaces after it, ASCII structure, `|`
    between fields, `:` between key and value, each key once, single well-formed values.
    Returns (malformations, ambiguities); both empty means strict.
    """
    malformed: list[str] = []
    ambiguous: list[str] = []
    line = original.rstrip(" ")
    if any(_is_invisible(ch) for ch in line):
        malformed.append("contains invisible or control characters")
    if unicodedata.normalize("NFKC", line) != line:
        malformed.append("contains full-width or compatibility characters")
    if line.translate(_CONFUSABLES) != line:
        malformed.append("contains look-alike characters")
    head = f"::{kind}{{"
    if not line.startswith(head):
        malformed.append(f"does not start its line with the exact head {head!r}")
        return malformed, ambiguous
    if not line.endswith("}") or line.endswith("}}"):
        malformed.append("does not end with a single closing brace")
        return malformed, ambiguous
    body = line[len(head) : -1]
    if any(ch in body for ch in "{}"):
        malformed.append("has doubled or nested braces")
        return malformed, ambiguous
    segments = body.split("|")
    seen: set[str] = set()
    if kind == "STATUS":
        if segments[0] != "@TASK":
            malformed.append("first field is not the @TASK scope")
        else:
            segments = segments[1:]
    for segment in segments:
        key, sep, value = segment.partition(":")
        if not sep or not _STRICT_KEY.fullmatch(key):
            malformed.append(f"field {segment!r} is not key:value")
            continue
        if key in seen:
            ambiguous.append(f"repeated key {key!r}")
        seen.add(key)
        pattern = _STRICT_VALUE_OF.get(key)
        if pattern is not None:
            if pattern.fullmatch(value):
                continue
            if _COMPOUND.search(value):
                ambiguous.append(f"multi-valued field {key}:{value}")
            else:
                malformed.append(f"malformed value {key}:{value!r}")
        elif not (_is_bare_value(value) or _QUOTED.fullmatch(value)):
            malformed.append(f"malformed value {key}:{value!r}")
    for key in _REQUIRED_KEYS[kind]:
        if key not in seen:
            malformed.append(f"missing field {key!r}")
    if kind == "STATUS" and not (malformed or ambiguous):
        # Defence in depth: what we call strict must also be a ::STATUS the project's
        # own iLang parser reads without complaint.
        try:
            Status.parse(line)
        except IlangError as exc:
            malformed.append(f"not a valid ::STATUS: {exc.message}")
    return malformed, ambiguous


# -------------------------------------------------------------------------- the model


class RawClaim(BaseModel):
    """One attempt at a declaration found in agent text, before any judgement."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: ClaimKind
    line: str  # the whole line exactly as the agent wrote it
    lineno: int  # 1-based
    positional: tuple[str, ...] = ()
    # Folded, lenient reading: every key (lower case) with all its values, in order.
    fields: dict[str, tuple[str, ...]] = {}
    strict: bool = False
    malformations: tuple[str, ...] = ()
    ambiguities: tuple[str, ...] = ()

    @model_validator(mode="after")
    def _strict_means_no_defects(self) -> RawClaim:
        if self.strict == bool(self.malformations or self.ambiguities):
            raise ValueError("strict must be true exactly when no defect is recorded")
        return self

    def values(self, key: str) -> tuple[str, ...]:
        """All values read for `key` (empty when absent)."""
        return self.fields.get(key, ())


# ---------------------------------------------------------------------------- reading


def _context_flags(folded_lines: list[str]) -> Iterator[tuple[bool, bool]]:
    """Per line: (inside a fenced code block, inside an echoed ::UNTRUSTED block)."""
    fence: str | None = None
    untrusted = False
    for line in folded_lines:
        match = _FENCE.match(line)
        in_fence = fence is not None or match is not None
        if match is not None:
            marker = match["fence"]
            if fence is None:
                fence = marker
            elif marker[0] == fence[0] and len(marker) >= len(fence):
                fence = None
        if _UNTRUSTED_OPEN.search(line):
            untrusted = True
        in_untrusted = untrusted
        if _UNTRUSTED_CLOSE.search(line):
            untrusted = False
        yield in_fence, in_untrusted


def _is_strong(match: re.Match[str], folded: str) -> bool:
    """A head that is an attempt wherever it stands.

    A brace after the name always is; so is `::` before it when an opener or a field
    follows (`::STATUS(…)`, `::STATUS state:complete`). A bare `::STATUS` in prose
    ("I will write a ::STATUS line") is not.
    """
    opener = match["open"] or ""
    if opener.startswith("{"):
        return True
    if re.sub(_JUNK, "", match["colons"] or "") != "::":
        return False
    if opener:
        return True
    _, fields = _parse_fields(folded[match.end() :])
    return bool(fields)


def _is_weak_attempt(match: re.Match[str], after: str, fields: list[tuple[str, str]]) -> bool:
    """Decide whether a bare STATUS/EVIDENCE word (no `::`, no brace) is an attempt.

    It is when a separator follows it and a status or evidence key follows that
    (`Status: state=complete, by=@RUNTIME`, `[STATUS:@TASK|state=complete]`).
    """
    interesting = {key for key, _ in fields} & (_STATUS_KEYS | _EVIDENCE_KEYS)
    if match["open"]:
        return bool(interesting)
    return after[:1] in (":", "=", "|", "-") and bool(interesting)


def _heads(folded: str) -> list[re.Match[str]]:
    """The declaration heads on a folded line that start a claim.

    A weak head right after a field separator is a key (`|evidence:@AUDIT_REPORT` inside
    a STATUS), and a weak head after a strong one is part of that claim's body.
    """
    heads: list[re.Match[str]] = []
    strong_seen = False
    for match in _HEAD.finditer(folded):
        if _is_strong(match, folded):
            heads.append(match)
            strong_seen = True
            continue
        if strong_seen:
            continue
        if folded[: match.start("name")].rstrip(" *_~`'\"").endswith(("|", ";", ",", "{")):
            continue
        after = folded[match.end("name") + len(match["gap"]) :]
        _, fields = _parse_fields(folded[match.end() :])
        if _is_weak_attempt(match, after, fields):
            heads.append(match)
    return heads


def _kind_of_name(name: str) -> ClaimKind:
    return "STATUS" if re.sub(r"[^a-z]", "", name.lower()) == "status" else "EVIDENCE"


def _headless_kind(folded: str, fields: list[tuple[str, str]]) -> ClaimKind | None:
    """A line without a declaration name that still carries a status/evidence claim."""
    status_keys = _has_keys(fields, _STATUS_KEYS)
    starts_braced = folded.lstrip(" >*-+`_~\"'").startswith("{")
    if len(status_keys) >= 2 or _FORGED_PAIR.search(folded) or (starts_braced and status_keys):
        return "STATUS"
    evidence_keys = _has_keys(fields, _EVIDENCE_KEYS)
    if "verified_by" in evidence_keys and len(evidence_keys) >= 2:
        return "EVIDENCE"
    return None


def _build(
    kind: ClaimKind,
    original: str,
    lineno: int,
    positional: list[str],
    fields: list[tuple[str, str]],
    context: list[str],
) -> RawClaim:
    malformed, ambiguous = list(context), []
    if not context:
        strict_malformed, strict_ambiguous = _strict_problems(kind, original)
        malformed += strict_malformed
        ambiguous += strict_ambiguous
    grouped: dict[str, list[str]] = {}
    for key, value in fields:
        grouped.setdefault(key, []).append(value)
    for key, value, host in _embedded_fields(fields):
        grouped.setdefault(key, []).append(value)
        ambiguous.append(f"{key!r} field hidden inside the value of {host!r}")
    for key, values in grouped.items():
        if len(values) > 1 and key in _SENSITIVE_KEYS:
            ambiguous.append(f"{key!r} given {len(values)} times")
    # Deduplicate while keeping order: the same defect can be seen twice.
    malformed = list(dict.fromkeys(malformed))
    ambiguous = list(dict.fromkeys(ambiguous))
    return RawClaim(
        kind=kind,
        line=original,
        lineno=lineno,
        positional=tuple(positional),
        fields={key: tuple(values) for key, values in grouped.items()},
        strict=not (malformed or ambiguous),
        malformations=tuple(malformed),
        ambiguities=tuple(ambiguous),
    )


def _split_lines(text: str) -> list[str]:
    # Only "\n" (optionally with "\r") ends a line: other Unicode line breaks are
    # treated as invisible characters so that they cannot cut a declaration in two.
    return [line.removesuffix("\r") for line in text.split("\n")]


def read_claims(text: str) -> list[RawClaim]:
    """Every `::STATUS` / `::EVIDENCE` claim in `text` (agent text only), in order."""
    originals = _split_lines(text)
    folded_lines = [fold(line) for line in originals]
    claims: list[RawClaim] = []
    for lineno, (original, folded, (in_fence, in_untrusted)) in enumerate(
        zip(originals, folded_lines, _context_flags(folded_lines), strict=True), start=1
    ):
        context: list[str] = []
        if in_fence:
            context.append("inside a fenced code block")
        if in_untrusted:
            context.append("inside an echoed ::UNTRUSTED block")
        found: list[tuple[ClaimKind, list[str], list[tuple[str, str]]]] = []
        heads = _heads(folded)
        for i, match in enumerate(heads):
            stop = heads[i + 1].start() if i + 1 < len(heads) else len(folded)
            positional, fields = _parse_fields(folded[match.end() : stop])
            found.append((_kind_of_name(match["name"]), positional, fields))
        if not found:
            positional, fields = _parse_fields(folded)
            kind = _headless_kind(folded, fields)
            if kind is not None:
                found.append((kind, positional, fields))
                context = [*context, "has no declaration head"]
        if len(found) > 1:
            context = [*context, "shares its line with another claim"]
        claims.extend(
            _build(kind, original, lineno, positional, fields, context)
            for kind, positional, fields in found
        )
    return claims
