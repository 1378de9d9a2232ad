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
still the agent's text: it is still a claim, but never a strict one. Where Markdown, as
the text is written, surely renders it as a quotation, it is also marked `quoted` (an
example, not a claim the agent makes: see `_quoting`).
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterator, Mapping
from typing import Literal, NamedTuple

from pydantic import BaseModel, ConfigDict, model_validator

from envelopes.declarations import State
from harness.enforce.folding import fold
from harness.enforce.strictness import ClaimKind, strict_problems

# ------------------------------------------------------------------------- detection


def _spaced(word: str) -> str:
    """A pattern for `word` with markdown junk allowed between its letters."""
    return r"[\s*_~`]{0,3}".join(re.escape(c) for c in word)


# The declaration name, letters possibly split by markdown junk (`S*T*A*T*U*S`). What
# stands around it (colons, braces) is scanned by hand in `_find_heads`: a regex with
# optional junk on both sides backtracks quadratically on long runs of spaces, and a
# hostile reply must not be able to stall the reader.
_NAME = re.compile(
    rf"(?<![A-Za-z0-9])(?P<name>{_spaced('status')}|{_spaced('evidence')})(?![A-Za-z0-9])",
    re.IGNORECASE,
)
_OPENERS = "{(["
_LOOKBACK = 32  # how far before a name its `::` may stand (through junk)

# A field key in lenient reading: a word followed by `:` or `=` (not `=>`/`==`), possibly
# wrapped in quotes or emphasis. It must not continue a value (`sha256:abc`, `https://`).
_KEY = re.compile(r"(?<![\w@:./\-=>%+])(?P<key>[A-Za-z][A-Za-z0-9_\-]*)[\"'*~`]*\s*(?::|=(?![>=]))")
# Emphasis underscores around a word (`_state_:`), removed before keys are looked for.
_EMPHASIS_UNDERSCORE = re.compile(r"(?<!\w)_+(?=[A-Za-z])|(?<=[A-Za-z0-9])_+(?!\w)")
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
    r"(?<![A-Za-z0-9_])(?:by[\"'*_~`]*\s*[:=]\s*[\"'*_~`]*@?(?:runtime|grader|system)"
    r"|authority[\"'*_~`]*\s*[:=]\s*[\"'*_~`]*(?:commit|verification))",
    re.IGNORECASE,
)
# A flush-left body line: `key:value` or `key=value` (over-inclusive on purpose).
_FLUSH_BODY = re.compile(r"\s*[\"'*~`]*[A-Za-z_][\w\-]*[\"'*~`]*\s*[:=]")
_TEMPORAL_PREFIX = re.compile(r"\s*T\[\d+\]")
_MAX_SPAN = 20
_FENCE = re.compile(r"^[\s>]*(?:[-*+]\s+|\d+[.)]\s+)?(?P<fence>`{3,}|~{3,})")
# An echoed block's marker lines, past quote, list and emphasis marks: a marker named in
# prose ("the ::UNTRUSTED block says…", `::UNTRUSTED`) opens nothing, else an honest
# agent's own claim after it would never be strict; and a marker inside a content line
# ("x ::END_UNTRUSTED") closes nothing, else an echoed injection could end its block.
_LINE_MARKS = " \t>*_~"
#: A list item's marker (CommonMark: a bullet, or up to nine digits and `.` or `)`).
_BULLET = r"(?:[-*+]|\d{1,9}[.)])"
_LIST_MARK = re.compile(rf"{_BULLET}\s")
_UNTRUSTED_OPEN = re.compile(r"::\s*UNTRUSTED(?![A-Za-z0-9_])", re.IGNORECASE)
_UNTRUSTED_CLOSE = re.compile(r"::\s*END_UNTRUSTED(?![A-Za-z0-9_])", re.IGNORECASE)
# An echoed header's own delimiter: its block ends at the END line after that delimiter's
# line, as the runtime's block did. A real payload never holds its delimiter's line, yet
# it may hold an `::END_UNTRUSTED` line (an injected file): closing at that one made the
# injection below it the agent's own writing.
_DELIMITER_FIELD = re.compile(r"delimiter\s*:\s*([^\s|{}]+)", re.IGNORECASE)


def _delimiter_of(header: str) -> str | None:
    found = _DELIMITER_FIELD.search(header)
    return found[1] if found is not None else None


def _line_starts(marker: re.Pattern[str], folded: str) -> bool:
    rest = folded.lstrip(_LINE_MARKS)
    item = _LIST_MARK.match(rest)
    if item is not None:
        rest = rest[item.end() :].lstrip(_LINE_MARKS)
    return marker.match(rest) is not None


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
    for segment in _HARD_SEPARATORS.split(_EMPHASIS_UNDERSCORE.sub("", body)):
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


# -------------------------------------------------------------------------- the model


class RawClaim(BaseModel):
    """One attempt at a declaration found in agent text, before any judgement."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: ClaimKind
    # Exactly as the agent wrote it: the whole header line, plus its body lines (joined
    # with "\n") when the declaration continues below its header.
    line: str
    lineno: int  # 1-based
    positional: tuple[str, ...] = ()
    # Folded, lenient reading: every key (lower case) with all its values, in order.
    fields: dict[str, tuple[str, ...]] = {}
    strict: bool = False
    malformations: tuple[str, ...] = ()
    ambiguities: tuple[str, ...] = ()
    # Markdown (or an echoed ::UNTRUSTED block) surely renders it as a quotation
    # (`_quoting`, `_inline_quoted`): an example, not a claim the agent makes. It is still
    # read and never strict; it only does not count toward a reply's claim cap.
    quoted: bool = False

    @model_validator(mode="after")
    def _strict_means_no_defects(self) -> RawClaim:
        if self.strict == bool(self.malformations or self.ambiguities):
            raise ValueError("strict must be true exactly when no defect is recorded")
        if self.strict and self.quoted:
            raise ValueError("a quoted claim is never strict")
        return self

    def values(self, key: str) -> tuple[str, ...]:
        """All values read for `key` (empty when absent)."""
        return self.fields.get(key, ())


# ---------------------------------------------------------------------------- reading


def _context_flags(folded_lines: list[str]) -> Iterator[tuple[bool, bool]]:
    """Per line: (inside a fenced code block, inside an echoed ::UNTRUSTED block)."""
    fence: str | None = None
    untrusted = False
    awaited: str | None = None  # the open echo's delimiter, until its line is seen
    for line in folded_lines:
        match = _FENCE.match(line)
        in_fence = fence is not None or match is not None
        if match is not None:
            marker = match["fence"]
            if fence is None:
                fence = marker
            elif marker[0] == fence[0] and len(marker) >= len(fence):
                fence = None
        marked = ":" in line  # both markers start with `::`
        if marked and _line_starts(_UNTRUSTED_OPEN, line):
            if not untrusted or awaited is None:
                awaited = _delimiter_of(line)
            # else: a header inside an open echo's payload (an injected file) is content;
            # it must not swap the delimiter the echo waits for (nor drop it), or the
            # injected END below it would close the echo.
            untrusted = True
        elif awaited is not None and line.strip() == awaited:
            awaited = None
        in_untrusted = untrusted
        if marked and awaited is None and _line_starts(_UNTRUSTED_CLOSE, line):
            untrusted = False
        yield in_fence, in_untrusted


# ---------------------------------------------------------------------------- quoting
#
# Two readings of "quoted". `_context_flags` reads the folded copy, where a fence is
# anything that looks like one once escapes, entities and invisible characters are gone
# (`\`\`\``, `&#96;&#96;&#96;`, a zero-width space before ```): over-inclusive, as it
# must be for strictness (a claim that may be quoted is never strict). Exempting a quote
# (from the claim cap, from the runtime-declaration audit) needs the opposite reading:
# only what Markdown, as written, surely renders as a quotation (a closed fence, a
# blockquote, an indented code block, a code span) or an echoed ::UNTRUSTED block that is
# closed. Every doubt there (an unclosed fence, a fence whose list item or blockquote
# ended, a disguised fence or block marker) reads as written: fail closed.

FENCED = "inside a fenced code block"
ECHOED = "inside an echoed ::UNTRUSTED block"
BLOCKQUOTE = "in a blockquote"
INDENTED = "in an indented code block"
INLINE = "in inline code"


def _columns(line: str) -> int:
    """The width of a line's indentation, a tab reaching the next multiple of four."""
    width = 0
    for ch in line:
        if ch == " ":
            width += 1
        elif ch == "\t":
            width += 4 - width % 4
        else:
            break
    return width


_QUOTE_MARK = re.compile(r" {0,3}> ?")


def _unquote(line: str, depth: int | None = None) -> tuple[int, str]:
    """(blockquote depth, the rest): at most `depth` `>` markers taken off (all of them
    when `depth` is None)."""
    taken = 0
    while depth is None or taken < depth:
        mark = _QUOTE_MARK.match(line)
        if mark is None:
            break
        taken, line = taken + 1, line[mark.end() :]
    return taken, line


_LIST_ITEM = re.compile(rf" {{0,3}}{_BULLET}(?: +|$)")
_REAL_FENCE = re.compile(r" {0,3}(?P<fence>`{3,}|~{3,})(?P<info>.*)")


def _fence_opener(rest: str, in_list: bool) -> tuple[str, int] | None:
    """(fence, column of its content) when `rest` (a line less its `>` markers) opens a
    fenced code block, possibly after a list marker. `in_list`: a list item above may
    hold it, with a content column unknown here: the opener's own indentation is taken
    (a line less indented may have left the item and ended the fence)."""
    column = 0
    item = _LIST_ITEM.match(rest)
    if item is not None:
        column, rest = item.end(), rest[item.end() :]
    opener = _REAL_FENCE.match(rest)
    if opener is None:
        return None
    fence = opener["fence"]
    if fence[0] == "`" and "`" in opener["info"]:
        return None  # CommonMark: inline code, not a fence (```x` is a code span)
    # Only a list item's content column bounds the fence: a line less indented than an
    # opener indented by up to three spaces is still its content (CommonMark).
    return fence, column if item is not None or not in_list else _columns(rest)


def _is_blank(line: str) -> bool:
    # CommonMark's blank line holds only spaces and tabs; a no-break space or another
    # Unicode space makes a line of text (which an indented line then continues).
    return not line.strip(" \t")


def _fence_end(lines: list[str], i: int, fence: str, depth: int, column: int) -> tuple[int, bool]:
    """Where the fence opened on line `i` ends: (index of its last line, whether a closing
    fence closed it). Not closed: a line left the opener's blockquote or list item (its
    index is returned less one), the text ended, or a line may close it for a renderer
    but not surely (what it held then reads as written)."""
    # Anything that looks like a closer: a run as long, only spaces or tabs around it.
    near = re.compile(rf"[ \t]*{re.escape(fence[0])}{{{len(fence)},}}[ \t]*")
    for k in range(i + 1, len(lines)):
        taken, rest = _unquote(lines[k], depth)
        if taken < depth or (not _is_blank(rest) and _columns(rest) < column):
            return k - 1, False
        if near.fullmatch(rest):
            # CommonMark: a closer is indented at most three columns past its container.
            # Tabs and deeper runs are where readings part, so a doubt ends the fence
            # unclosed rather than letting the next fences open and close out of step.
            surely = "\t" not in rest and _columns(rest) <= column + 3
            return k, surely
    return len(lines) - 1, False


_LIST_START = frozenset(" -*+0123456789")
# A fence run after any indentation (tabs too) and list markers.
_LOOSE_FENCE = re.compile(rf"[ \t]*(?:{_BULLET}[ \t]*)*(?P<fence>`{{3,}}|~{{3,}})")


def _doubtful_fence(rest: str) -> bool:
    """Whether a line `_fence_opener` does not take for an opener may yet open a fence
    for a renderer: one after a tab or deep indentation, which a list item above may make
    shallow enough (only an info string holding a backtick surely opens none)."""
    loose = _LOOSE_FENCE.match(rest)
    if loose is None:
        return False
    return not (loose["fence"][0] == "`" and "`" in rest[loose.end() :])


# A line that may start an HTML block (possibly in a list item): its lines up to a blank
# line, or to `-->` and the like, are raw HTML to a renderer, and a fence there is text.
_HTML_START = re.compile(rf"[ \t]*(?:{_BULLET}[ \t]+)*<[A-Za-z/!?]")
_REAL_UNTRUSTED = re.compile(r"[ \t]*::UNTRUSTED\{")
_REAL_END_UNTRUSTED = re.compile(r"[ \t]*::END_UNTRUSTED(?![A-Za-z0-9_])")
# Lines that may start a quotation (or an echoed block); none of them: nothing is quoted.
_MAY_QUOTE = re.compile(r"```|~~~|(?:^|\n)(?:[ \t]*>| {4}|\t)|::UNTRUSTED\{")


#: The ::UNTRUSTED blocks the runtime issued to the agent: each block's delimiter, and the
#: lines of its payload. An echo is quoting only when it is one of them, echoed truly.
Issued = Mapping[str, frozenset[str]]


def issued_blocks(text: str) -> dict[str, frozenset[str]]:
    """The ::UNTRUSTED blocks a runtime text holds (`Issued`): what the runtime wrapped
    (`envelopes.isolation.wrap_untrusted`), read by its own rule: a header with a
    delimiter, its payload to that delimiter's line."""
    found: dict[str, frozenset[str]] = {}
    if "::UNTRUSTED{" not in text:
        return found
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        delimiter = _delimiter_of(lines[i]) if _REAL_UNTRUSTED.match(lines[i]) else None
        if delimiter is None:
            i += 1
            continue
        end = next((k for k in range(i + 1, len(lines)) if lines[k] == delimiter), len(lines))
        found[delimiter] = frozenset(_echo_line(line) for line in lines[i + 2 : end])
        i = end + 1
    return found


def _echo_line(line: str) -> str:
    """A payload line as an echo is compared: without its trailing blanks and "\r". Why:
    a reply's line never ends in "\r" (`_split_lines`) and an agent's reply drops
    trailing blanks, so a file with Windows line ends (or trailing blanks) quoted whole
    was the agent's own writing: its `::BUDGET` line audited, its `::STATUS` line the
    agent's claim (review 8). Trailing blanks carry nothing; leading ones may continue
    a declaration and still count."""
    return line.rstrip(" \t\r")


def _true_echo(lines: list[str], header: int, end: int, issued: Issued | None) -> bool:
    """Whether the echoed block from line `header` to its END line `end` is one the
    runtime issued (`issued`: its delimiter), each payload line one of that block's.
    Without `issued` (a caller that does not know what was issued) any closed echo is.
    Why: a fake echo block the agent wrote itself (`::UNTRUSTED{…|delimiter:X}` around
    its own `::BUDGET` line and forged claims) was exempt from the runtime-declaration
    audit and from the error count, as if the runtime's block were quoted (attack6)."""
    if issued is None:
        return True
    delimiter = _delimiter_of(lines[header])
    payload = issued.get(delimiter) if delimiter is not None else None
    if payload is None:
        return False
    markers = {delimiter, f"<<<{delimiter}"}
    return all(
        _echo_line(line) in payload or line in markers or not line.strip()
        for line in lines[header + 1 : end]
    )


def _quoting(lines: list[str], issued: Issued | None = None) -> list[str | None]:
    """Per original line: how Markdown (or an echoed ::UNTRUSTED block) surely quotes it,
    or None where it is written. An echo quotes only a block the runtime issued (`issued`:
    `_true_echo`). Linear: each line is looked at a bounded number of times."""
    n = len(lines)
    why: list[str | None] = [None] * n
    text = "\n".join(lines)
    if _MAY_QUOTE.search(text) is None:
        return why
    ends: list[int] = []
    if "::END_UNTRUSTED" in text:
        ends = [k for k, line in enumerate(lines) if _REAL_END_UNTRUSTED.match(line)]
    next_end = 0
    in_list, after_blank, after_code = False, True, False
    i = 0
    while i < n:
        line = lines[i]
        depth, rest = _unquote(line) if ">" in line[:4] else (0, line)
        if "<" in rest and _HTML_START.match(rest):
            # Where an HTML block ends is a doubt (a blank line, a `-->`, a `</pre>`),
            # and reading past it out of step flips fences: from here on, all is written.
            break
        opener = _fence_opener(rest, in_list) if "```" in rest or "~~~" in rest else None
        if opener is None and ("```" in rest or "~~~" in rest) and _doubtful_fence(rest):
            break  # a fence a renderer may open (after a tab, in a list item): all written
        if opener is not None:
            if _LIST_ITEM.match(rest):
                in_list = True  # an indented line below it is the item's, not code
            end, closed = _fence_end(lines, i, opener[0], depth, opener[1])
            for k in range(i, end + 1):
                # The opener's info string is not shown (a language name), yet a model
                # reads it: a claim there is hidden, not quoted.
                if closed and k > i:
                    why[k] = FENCED
                elif _unquote(lines[k], 1)[0]:
                    why[k] = BLOCKQUOTE
            if not closed:
                # Unclosed to the end, or ended in doubt: the fences below could pair out
                # of step with a renderer's (a closer read as an opener): all is written.
                break
            # After a closed fence no paragraph goes on: an indented line is code.
            i, after_blank, after_code = end + 1, closed, False
            continue
        if depth:
            why[i] = BLOCKQUOTE
        elif ends and _REAL_UNTRUSTED.match(line):
            delimiter = _delimiter_of(line)
            after = i
            if delimiter is not None:
                # Its END line is the first after its delimiter's line (`_delimiter_of`).
                after = next((k for k in range(i + 1, n) if lines[k].strip() == delimiter), n)
                if after == n:
                    break  # never closed by its own rule: from here on, all is written
            while next_end < len(ends) and ends[next_end] <= after:
                next_end += 1
            if next_end >= len(ends) and delimiter is not None:
                break  # its delimiter's line, then no END: unclosed, as above
            # Closed, and a block the runtime issued: what it holds is quoted, not its
            # markers. One it never issued (or changed) is the agent's own writing, read
            # line by line like any other (fences inside it pair as a renderer pairs them).
            if next_end < len(ends) and _true_echo(lines, i, ends[next_end], issued):
                end = ends[next_end]
                why[i + 1 : end] = [ECHOED] * (end - i - 1)
                i, after_blank, after_code = end + 1, False, False
                continue
        blank = _is_blank(line)
        indent = _columns(line) if line[:1] in " \t" else 0
        code = not (blank or depth or in_list) and indent >= 4 and (after_blank or after_code)
        if code:
            why[i] = INDENTED
        if not (blank or depth):
            if line[:1] in _LIST_START and _LIST_ITEM.match(line):
                in_list = True
            elif after_blank and indent == 0:
                in_list = False  # a paragraph at the margin after a blank line ends a list
        after_blank, after_code = blank, code or (after_code and blank)
        i += 1
    return why


_BACKTICKS = re.compile(r"`+")


def _without_code_spans(line: str) -> str:
    """`line` with each code span (as CommonMark reads the original: a run of backticks
    not escaped by a backslash, closed by the next run of the same length) replaced by a
    space. Escaped backticks and `&#96;` are literal text, never a span."""
    runs = [(m.start(), m.end()) for m in _BACKTICKS.finditer(line)]
    by_length: dict[int, list[int]] = {}
    for index, (start, end) in enumerate(runs):
        by_length.setdefault(end - start, []).append(index)
    kept: list[str] = []
    last = 0
    index = 0
    while index < len(runs):
        start, end = runs[index]
        j = start
        while j > last and line[j - 1] == "\\":
            j -= 1
        opening = start + (start - j) % 2  # an escaped backtick is literal
        candidates = by_length.get(end - opening, [])
        closer = bisect.bisect_right(candidates, index)
        if end > opening and closer < len(candidates):
            kept += [line[last:opening], " "]
            last = runs[candidates[closer]][1]
            index = candidates[closer] + 1  # the runs inside the span are its text
            continue
        index += 1
    kept.append(line[last:])
    return "".join(kept)


def _is_junk(ch: str) -> bool:
    return ch.isspace() or ch in "*_~`'\""


class _Head(NamedTuple):
    """A declaration name on a folded line and what stands around it (a tuple: one is
    made per name on every line read, and a frozen dataclass is slower to make)."""

    start: int  # first character: the first colon before the name, else the name
    name: str
    end: int  # after the name, the junk after it and its run of opening brackets
    colons: int  # colons (0-2) right before the name, through junk
    opener: str  # the run of `{([` after the name ("" when none)
    next_char: str  # the first character after the name and its junk ("" at line end)


def _find_heads(folded: str, names: re.Pattern[str] = _NAME) -> list[_Head]:
    heads: list[_Head] = []
    for match in names.finditer(folded):
        start, colons = match.start(), 0
        j = match.start() - 1
        while j >= max(0, match.start() - _LOOKBACK) and colons < 2:
            if folded[j] == ":":
                colons, start = colons + 1, j
            elif not _is_junk(folded[j]):
                break
            j -= 1
        k = match.end()
        while k < len(folded) and _is_junk(folded[k]):
            k += 1
        opened = k
        while k < len(folded) and folded[k] in _OPENERS:
            k += 1
        heads.append(
            _Head(start, match["name"], k, colons, folded[opened:k], folded[opened : opened + 1])
        )
    return heads


def _interesting(fields: list[tuple[str, str]]) -> bool:
    return bool(_has_keys(fields, _STATUS_KEYS | _EVIDENCE_KEYS))


# The first word after a `::STATUS` head when it starts a claim written with spaces for
# separators (`::STATUS @TASK state complete by @RUNTIME`, `::STATUS complete`).
_FIRST_WORD = re.compile(r"[\s*_~`'\"]*(?P<word>@?[A-Za-z][A-Za-z0-9_]*)")
_STATE_WORDS = frozenset(state.value for state in State)


def _starts_like_claim(rest: str) -> bool:
    """Whether the text after a head begins with a scope entity or a state word."""
    match = _FIRST_WORD.match(rest)
    if match is None:
        return False
    word = match["word"]
    return word.startswith("@") or word.lower() in _STATE_WORDS


def _is_strong(head: _Head, fields: list[tuple[str, str]], rest: str) -> bool:
    """A head that is an attempt wherever it stands.

    A brace after the name always is; so is `::` before it when an opener or a field
    follows (`::STATUS(…)`, `::STATUS state:complete`), or an entity or a state word
    (`::STATUS @TASK state complete by @RUNTIME`: a claim with spaces for separators;
    fail closed, since a reader of the rendered text may take it as one). A bare
    `::STATUS` in prose ("I will write a ::STATUS line") is not.
    """
    if head.opener.startswith("{"):
        return True
    return head.colons == 2 and (bool(head.opener) or bool(fields) or _starts_like_claim(rest))


def _is_weak_attempt(head: _Head, fields: list[tuple[str, str]]) -> bool:
    """Decide whether a bare STATUS/EVIDENCE word (no `::`, no brace) is an attempt.

    It is when a separator follows it and a status or evidence key follows that
    (`Status: state=complete, by=@RUNTIME`, `[STATUS:@TASK|state=complete]`).
    """
    if head.opener:
        return _interesting(fields)
    return head.next_char in (":", "=", "|", "-") and _interesting(fields)


def _after_separator(folded: str, head: _Head) -> bool:
    """Whether the head stands right after a field separator (it is then a key)."""
    j = head.start - 1
    while j >= max(0, head.start - _LOOKBACK) and _is_junk(folded[j]):
        j -= 1
    return j >= 0 and folded[j] in "|;,{"


def _heads(folded: str) -> list[_Head]:
    """The declaration heads on a folded line that start a claim.

    A weak head right after a field separator is a key (`|evidence:@AUDIT_REPORT` inside
    a STATUS), and a weak head after a strong one is part of that claim's body. Each
    head's fields are read only up to the next name, so the work stays linear.
    """
    found = _find_heads(folded)
    heads: list[_Head] = []
    strong_seen = False
    for i, head in enumerate(found):
        stop = found[i + 1].start if i + 1 < len(found) else len(folded)
        _, fields = _parse_fields(folded[head.end : stop])
        if _is_strong(head, fields, folded[head.end : stop]):
            heads.append(head)
            strong_seen = True
        elif (
            not strong_seen
            and not _after_separator(folded, head)
            and _is_weak_attempt(head, fields)
        ):
            heads.append(head)
    return heads


def _bare_head(folded: str) -> str | None:
    """The name of a declaration head standing alone on its line (`STATUS:`, `::STATUS`,
    `## Status`, `T[2] **Status**`), whose fields, if any, are on the lines below."""
    found = _find_heads(folded)
    if len(found) != 1:
        return None
    head = found[0]
    prefix = folded[: head.start]
    temporal = _TEMPORAL_PREFIX.match(prefix)
    if temporal is not None:
        prefix = prefix[temporal.end() :]
    if any(ch.isalpha() for ch in prefix) or len(head.opener) > 1:
        return None
    rest = "".join(ch for ch in folded[head.end :] if not _is_junk(ch))
    return head.name if rest in ("", ":", "=") and not (head.opener and rest) else None


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
    originals: list[str],
    lineno: int,
    positional: list[str],
    fields: list[tuple[str, str]],
    context: list[str],
) -> RawClaim:
    malformed, ambiguous = list(context), []
    if not context:
        strict_malformed, strict_ambiguous = strict_problems(kind, originals[0], originals[1:])
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
        line="\n".join(originals),
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


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _body_end(folded: list[str], i: int, unclosed: bool, limit: int | None = None) -> int:
    """The index after the last body line of the declaration whose header is line `i`.

    iLang (SPEC-v5.0 Part III §1.1, mirrored by envelopes.document) lets a declaration
    continue below its header: lines indented deeper than the header (blank lines
    between them allowed), or flush-left `key:value` lines. A field there is a field of
    the claim, so a forger cannot park `by:@RUNTIME` on the next line. A header whose
    brace is not closed on its line also takes the following lines up to the first one
    holding `}` (at most `_MAX_SPAN` lines). Both are read over-inclusively (any
    `key:` or `key=` flush line counts), since a larger claim is only ever less strict.
    With a `limit`, no more than `limit + 1` lines below the header are looked at.
    """
    n = len(folded)
    j = i + 1
    if unclosed:
        while j < n and j - i <= _MAX_SPAN and folded[j].strip() and not _heads(folded[j]):
            j += 1
            if "}" in folded[j - 1]:
                return j
        return j
    header_indent = _indent(folded[i])
    regime: str | None = None
    while j < n and (limit is None or j - i <= limit):
        line = folded[j]
        if not line.strip():
            k = j + 1
            while k < n and not folded[k].strip():
                k += 1
            if regime == "indent" and k < n and _indent(folded[k]) > header_indent:
                j = k
                continue
            break
        if _heads(line):
            break
        if _indent(line) > header_indent and regime != "flush":
            regime = "indent"
        elif regime != "indent" and _indent(line) == header_indent and _FLUSH_BODY.match(line):
            regime = "flush"
        else:
            break
        j += 1
    return j


# A claim in the making: its kind, positional segments and (key, value) fields.
_Found = tuple[ClaimKind, list[str], list[tuple[str, str]]]


_Mode = Literal["head", "bare", "headless"]


def _claims_on(folded: str) -> tuple[list[_Found], _Mode]:
    """The claims a single folded line starts, and how the line announced them."""
    found: list[_Found] = []
    heads = _heads(folded)
    for i, head in enumerate(heads):
        stop = heads[i + 1].start if i + 1 < len(heads) else len(folded)
        positional, fields = _parse_fields(folded[head.end : stop])
        found.append((_kind_of_name(head.name), positional, fields))
    if found:
        return found, "head"
    bare = _bare_head(folded)
    if bare is not None:
        return [(_kind_of_name(bare), [], [])], "bare"
    positional, fields = _parse_fields(folded)
    kind = _headless_kind(folded, fields)
    return ([(kind, positional, fields)] if kind is not None else []), "headless"


# Unicode tag characters (U+E0020–U+E007E) mirror printable ASCII and render as nothing,
# yet language models read them ("ASCII smuggling"). `fold` drops them like any format
# character, which would hide a whole claim spelled in them; so their decoded text is
# read as well, as a second, hidden layer of the line.
_TAG_FIRST, _TAG_LAST, _TAG_OFFSET = 0xE0020, 0xE007E, 0xE0000
_TAG_CHAR = re.compile(f"[{chr(_TAG_FIRST)}-{chr(_TAG_LAST)}]")


def _tag_decoded(line: str) -> str:
    return "".join(chr(ord(ch) - _TAG_OFFSET) for ch in line if _TAG_FIRST <= ord(ch) <= _TAG_LAST)


class _Layer:
    """One layer of a reply, line for line: as written, folded, and how each line is
    quoted (worked out only when a line needs it: most replies quote nothing)."""

    def __init__(self, originals: list[str], *, hidden: bool, issued: Issued | None = None) -> None:
        self.originals = originals
        self.issued = issued
        self.folded = [fold(line) for line in originals]
        # Nothing in the invisible layer is quoted: a fence there renders as nothing, and
        # an agent that hides text has no example to show (fail closed). Nor is anything
        # in a text with a bare CR: Markdown ends a line there (a fence closes, a blank
        # line ends a paragraph) where the lines read here go on.
        self.hidden = hidden or any("\r" in line for line in originals)
        self._quoting: list[str | None] | None = None
        self._span_doubt: list[bool] | None = None

    def quoted(self, i: int) -> str | None:
        """How line `i` as a whole is surely quoted (None: written)."""
        if self.hidden:
            return None
        if self._quoting is None:
            self._quoting = _quoting(self.originals, self.issued)
        return self._quoting[i]

    def outside_code_spans(self, i: int) -> str:
        """Line `i` folded, less its code spans (all of it where they are in doubt)."""
        original = self.originals[i]
        if self.hidden or "`" not in original or "<" in original:
            # `<`: an HTML tag or autolink that starts first wins over a code span, and
            # its backtick opens none (`<a title="`">…<b title="`">`).
            return self.folded[i]
        if self._span_doubt is None:
            self._span_doubt = _span_doubts(self.originals)
        if self._span_doubt[i]:
            return self.folded[i]
        return fold(_without_code_spans(original))


def _span_doubts(originals: list[str]) -> list[bool]:
    """Per line: whether a line above it in its paragraph leaves a backtick run open or
    holds a `<`. A code span crosses lines (its closer here would be read as an opener)
    and so does an HTML tag: the spans on such a line are in doubt. Linear."""
    doubts: list[bool] = []
    doubt = html = False
    for line in originals:
        if _is_blank(line):
            doubt = html
        doubts.append(doubt)
        if "<" in line and _HTML_START.match(_unquote(line)[1]):
            # An HTML block may run past blank lines (`<pre>`, `<!--`): for good.
            doubt = html = True
        elif "<" in line or ("`" in line and "`" in _without_code_spans(line)):
            doubt = True
    return doubts


def _layers(text: str, issued: Issued | None = None) -> Iterator[_Layer]:
    """The visible text, then, when there is one, the layer spelled in tag characters."""
    originals = _split_lines(text)
    yield _Layer(originals, hidden=False, issued=issued)
    if _TAG_CHAR.search(text) is None:  # the usual case: no hidden layer to read
        return
    hidden = [_tag_decoded(line) for line in originals]
    if any(hidden):
        yield _Layer(hidden, hidden=True)


def read_claims(text: str, issued: Issued | None = None) -> list[RawClaim]:
    """Every `::STATUS` / `::EVIDENCE` claim in `text` (agent text only), in order.
    `issued`: the ::UNTRUSTED blocks the runtime gave the agent (`issued_blocks`); an
    echo of any other block quotes nothing (`_true_echo`). None: any closed echo quotes.

    Claims spelled in invisible tag characters are claims too, never strict or quoted
    ones: each keeps the line as the agent wrote it and says what it hid.
    """
    visible, *hidden = _layers(text, issued)
    claims = _read_layer(visible)
    for layer in hidden:
        originals = visible.originals
        for claim in _read_layer(layer):
            lines = originals[claim.lineno - 1 : claim.lineno - 1 + claim.line.count("\n") + 1]
            why = f"hidden in invisible Unicode tag characters: {claim.line!r}"
            data = claim.model_dump()
            data.update(
                line="\n".join(lines),
                strict=False,
                malformations=(why, *claim.malformations),
            )
            claims.append(RawClaim(**data))
        claims.sort(key=lambda claim: claim.lineno)
    return claims


def _inline_quoted(layer: _Layer, i: int) -> bool:
    """Whether every claim line `i` starts stands in a code span (`` `::STATUS{…}` ``)."""
    if "`" not in layer.originals[i]:
        return False
    outside = layer.outside_code_spans(i)
    return outside != layer.folded[i] and not _claims_on(outside)[0]


def _read_layer(layer: _Layer) -> list[RawClaim]:
    originals, folded_lines = layer.originals, layer.folded
    contexts = list(_context_flags(folded_lines))
    claims: list[RawClaim] = []
    i = 0
    while i < len(originals):
        folded = folded_lines[i]
        found, mode = _claims_on(folded)
        if not found:
            i += 1
            continue
        in_fence, in_untrusted = contexts[i]
        context: list[str] = []
        if in_fence:
            context.append(FENCED)
        if in_untrusted:
            context.append(ECHOED)
        # A bare head's claim is its fields below it: a head in a code span over written
        # fields is not a quotation.
        quoted = layer.quoted(i) or (
            INLINE if mode != "bare" and _inline_quoted(layer, i) else None
        )
        if quoted is not None and quoted not in context:
            # Markdown as written quotes it even where the folded copy sees no fence (a
            # fake fence before a real one flips the folded copy's reading).
            context.append(quoted)
        if mode == "headless":
            context.append("has no declaration head")
        if mode == "bare":
            context.append("has its fields below a bare declaration head")
        if len(found) > 1:
            context.append("shares its line with another claim")
        # Body lines belong to the last declaration on the header line.
        last_open = folded.rfind("{")
        unclosed = last_open >= 0 and "}" not in folded[last_open:]
        end = _body_end(folded_lines, i, unclosed)
        for j in range(i + 1, end):
            positional, fields = _parse_fields(folded_lines[j])
            found[-1][1].extend(positional)
            found[-1][2].extend(fields)
        if mode == "bare" and not _has_keys(found[0][2], _STATUS_KEYS | _EVIDENCE_KEYS):
            # A bare head without a status or evidence field below it is a heading or a
            # word in prose ("## Status" over "Progress: 50%"), not a claim.
            i += 1
            continue
        for k, (kind, positional, fields) in enumerate(found):
            lines = originals[i:end] if k == len(found) - 1 else [originals[i]]
            claim = _build(kind, lines, i + 1, positional, fields, context)
            claims.append(claim.model_copy(update={"quoted": True}) if quoted else claim)
        i = end
    return claims


# The declarations only the runtime or the principal writes (v4 §2, §3, §5): an agent's
# ::BUDGET, ::RUBRIC or ::OBJECTIVE is never read as one (only ::STATUS and ::EVIDENCE
# are the agent's proposals), but writing one is an attempt on the runtime's authority
# and is recorded as such. They are found as claims are (`_find_heads` on the folded
# copy, the hidden tag layer too), but quoting is not writing: what Markdown surely
# quotes (`_quoting`, code spans) is left alone.
_RUNTIME_NAME = re.compile(
    rf"(?<![A-Za-z0-9])(?P<name>{_spaced('budget')}|{_spaced('rubric')}|{_spaced('objective')})"
    r"(?![A-Za-z0-9])",
    re.IGNORECASE,
)


_NOT_LETTER = re.compile(r"[^A-Z]")


def _starts_statement(folded: str, head: _Head) -> bool:
    """Whether a head stands where a statement starts: what comes before its `::`, past
    emphasis marks, is the line's start, a space or punctuation; not a program's path
    (`cost::Budget{100}`, `Vec<T>::Budget{…}`)."""
    j = head.start - 1
    while j >= 0 and folded[j] in "*_~":
        j -= 1
    return j < 0 or not (folded[j].isalnum() or folded[j] == ">")


# Past a runtime head's name: a `:` or `=` and junk before its brace (`::BUDGET: {…}`).
_SEPARATED_BRACE = re.compile(r"[\s*_~`'\"]*[:=][\s*_~`'\"]*\{")


def _opens_here(line: str, head: _Head) -> bool:
    """Whether a head's brace follows it on its line, right after the name or after a
    `:` or `=` (`::BUDGET{…}`, `::BUDGET = {…}`)."""
    return head.opener.startswith("{") or (
        not head.opener and _SEPARATED_BRACE.match(line, head.end) is not None
    )


def _opens_below(folded_lines: list[str], i: int, line: str, head: _Head) -> bool:
    """Whether a head alone on its line (`::BUDGET`) has its declaration below it: a
    `{` on the next line that is not blank, or body lines with fields."""
    if head.opener or any(ch.isalnum() for ch in line[: head.start]):
        return False
    if any(not _is_junk(ch) and ch not in ":=" for ch in line[head.end :]):
        return False
    k = i + 1
    while k < len(folded_lines) and not folded_lines[k].strip():
        k += 1
    if k < len(folded_lines) and folded_lines[k].lstrip(" *_~>").startswith("{"):
        return True
    # Bounded: a body of flush `_::BUDGET` lines is read once per head, so unbounded
    # reading is quadratic (minutes for 100 KB). A body that goes on past the bound
    # without a field yet counts as a declaration (fail closed).
    end = _body_end(folded_lines, i, unclosed=False, limit=_MAX_SPAN)
    if end - i > _MAX_SPAN:
        return True
    return any(_parse_fields(folded_lines[j])[1] for j in range(i + 1, end))


def runtime_declarations(text: str, issued: Issued | None = None) -> list[tuple[int, str]]:
    """`(line number, NAME)` of every runtime-only declaration the agent's `text` writes
    (folded like claims: full-width, invisible and look-alike disguises count); `issued`
    as for `read_claims`."""
    found: list[tuple[int, str]] = []
    for layer in _layers(text, issued):
        for i, line in enumerate(layer.folded):
            # Cheap tests first: most lines name no runtime declaration at all.
            heads = _find_heads(line, _RUNTIME_NAME) if ":" in line else []
            if not heads or layer.quoted(i):
                continue
            if line != (outside := layer.outside_code_spans(i)):
                line, heads = outside, _find_heads(outside, _RUNTIME_NAME)
            for head in heads:
                written = head.colons == 2 and _starts_statement(line, head)
                if written and (
                    _opens_here(line, head) or _opens_below(layer.folded, i, line, head)
                ):
                    found.append((i + 1, _NOT_LETTER.sub("", head.name.upper())))
    found.sort(key=lambda item: item[0])
    return found
