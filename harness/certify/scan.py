"""The deterministic legs of a certification pass (DIYLISIS F1, F2, F3, F4 and the F6
lints), over the target's exact text, with positions.

* F1, deictic closure: deictic anchors; session-only identifiers (bare `#4`, `Task #4`,
  letter-number ids `D3`, `R1–R6` with no definition in the target or a granted source,
  agent/session/tool-call ids); coined names and acronyms defined neither in the target
  nor in a granted source.
* F2, grounding closure: every path, URL, id and command, classified by `resolves_at`
  (`harness.certify.reach`).
* F3/F4: items are the target's paragraphs. An item with no open finding is KEPT on the
  target's own text (DocumentRead, inline); each locator that resolves or is of a durable
  class is ROUTEd by reference. Each becomes a RouteJudgment with its basis.
* F6 lints: rendering accidents (stray `~…~`, unbalanced backticks, accidental
  headings, an unclosed fence); decision-shaped items with no durable ledger pointer
  (Rule 33); `--verify` commands naming files that do not exist.

Positions are `line:col`, both from 1, columns in characters. Every finding quotes the
token exactly as it stands at its position.
"""

from __future__ import annotations

import html
import re
import shlex
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from graders.refuter import CATEGORY_IDS, Advisory, Finding, SweepRow, Verdict
from harness.certify.certificate import (
    ContextItem,
    DecisionRecord,
    ReferenceVerdict,
    ResidualReason,
    RouteJudgment,
    StableRef,
    ValueVerdict,
)
from harness.certify.contract import MINIMAL_VERB, Contract
from harness.certify.lexicon import Lexicon
from harness.certify.patterns import Searcher, compiled_patterns
from harness.certify.reach import MAX_SOURCE_FILE_BYTES, Reach, Resolution, read_regular

_URL = re.compile(r"\b(?:https?|ftp|file)://[^\s<>()`\"'\]]+")
_HOSTPORT = re.compile(r"(?<![\w./-])(?:localhost|127\.0\.0\.1|0\.0\.0\.0)(?::\d+)?(?:/[^\s`)]*)?")
_GIT = re.compile(r"(?<![\w/])git:[\w.^~/-]+:[\w./@+-]+")
_REPO_ID = re.compile(r"(?<![\w/.-])[A-Za-z0-9][\w.-]*/[\w.-]+#\d+\b")
_EXT = (
    r"(?:py|md|txt|toml|json|jsonl|yaml|yml|sh|bash|cfg|ini|js|mjs|ts|tsx|rs|go|c|h|cc|cpp|"
    r"hpp|java|kt|rb|sql|csv|tsv|log|lock|html|css|xml|ipynb|rst|env|conf|gguf|db|patch|diff)"
)
_PATH = re.compile(
    r"(?<![\w/.:@$~-])(?:(?<!<)|(?!/))"  # `</span>` is a closing tag, not the path `/span`
    r"(?:(?:~|\$\{?[A-Za-z_]+\}?|%[A-Z]+%|\.{1,2})?/+(?:[\w.@+-]+/+)*[\w.@+-]*[\w/]"  # rooted
    # relative with a slash; its first folder may be a dot-folder (`.github/workflows/`)
    r"|(?:\.?[\w@+-][\w.@+-]*/+)+(?:[\w.@+-]*[\w])?/?"
    r"|[\w-][\w.-]*\." + _EXT + r")"  # a bare file name
    r"(?![\w/])"
)
_FENCE = re.compile(r"^\s{0,3}(`{3,}|~{3,})(.*)$")
_BACKTICKS = re.compile(r"`+")
_LETTER_ID = re.compile(
    r"(?<![\w./#-])([A-Z])(\d{1,3})(?:\s?[–—-]\s?(?:([A-Z]))?(\d{1,3}))?(?![\w/-])"
)
_BARE_HASH = re.compile(r"(?<![\w/&#\\-])#(\d{1,6})\b")
_ACRONYM = re.compile(r"(?<![\w/.$-])([A-Z][A-Z0-9]{1,7})(s?)(?![\w/-])")
_CAMEL = re.compile(r"(?<![\w/.$-])([A-Z][a-z0-9]+(?:[A-Z][a-z0-9]*)+)(?![\w/-])")
_SETEXT = re.compile(r"^\s{0,3}(=+|-{2,})\s*$")
_ATX = re.compile(r"^\s{0,3}(#{1,6})\s+(\S)")
#: A first word that is a name, not a sentence's word (`ilang-harness`, `numpy.linalg`,
#: `v2.0`, `my_tool`): a heading starting with it is a title, though lower case.
_NAME_LIKE = re.compile(r"[-_./:0-9]")
_LIST_OR_TABLE = re.compile(r"^\s*(?:[-*+]\s|\d+[.)]\s|\||>)")

Category = str


@dataclass(frozen=True)
class LintFinding:
    """A finding of a deterministic leg, and where its residual belongs."""

    finding: Finding
    reason: ResidualReason
    source: Literal["lint", "contract"] = "lint"
    #: False for text the person certifying and the receiver read differently (hidden
    #: text) and text addressed to the certification: a Defer accepts a gap the receiver
    #: can live with, and these are no gap but a second record inside the first; only
    #: removing them (Drop with --apply, or an edit) settles them.
    deferrable: bool = True

    @property
    def key(self) -> tuple[str, str]:
        return self.finding.quoted_token, self.finding.location


@dataclass
class Locator:
    token: str
    line: int
    col: int
    resolution: Resolution


@dataclass
class Scan:
    findings: list[LintFinding] = field(default_factory=list)
    judgments: list[RouteJudgment] = field(default_factory=list)
    decisions: list[DecisionRecord] = field(default_factory=list)
    locators: list[Locator] = field(default_factory=list)
    checked: dict[Category, str] = field(default_factory=dict)


def _finding(
    token: str,
    line: int,
    col: int,
    category: str,
    why: str,
    advisory: Advisory,
    note: str,
    reference: str | None = None,
) -> Finding:
    return Finding(
        quoted_token=token,
        location=f"{line}:{col}",
        category=category,
        why_unresolvable=why,
        advisory=advisory,
        reference=reference,
        repair_note=note,
    )


# -- the text's shape --------------------------------------------------------------------


@dataclass
class Shape:
    """Per line: inside a fence or not; and the prose mask (code spans, URLs blanked)."""

    lines: list[str]
    fenced: list[bool]
    fence_open: tuple[int, str] | None  # an unclosed fence: (line, opener)
    prose: list[str]
    #: Per line inside a fence, its opener's info string (`toml`, `sh`, "" untagged).
    fence_info: list[str | None] = field(default_factory=list)

    @classmethod
    def of(cls, text: str) -> Shape:
        lines = text.split("\n")
        fenced: list[bool] = []
        info: list[str | None] = []
        opener: tuple[int, str, str] | None = None  # (line, marker char, full marker)
        tag = ""
        for n, line in enumerate(lines, 1):
            match = _FENCE.match(line)
            if opener is None:
                if match:
                    opener = (n, match.group(1)[0], match.group(1))
                    tag = (match.group(2).split() or [""])[0].strip("{}.").lower()
                    fenced.append(True)
                    info.append(tag)
                else:
                    fenced.append(False)
                    info.append(None)
            else:
                fenced.append(True)
                info.append(tag)
                if (
                    match
                    and match.group(1)[0] == opener[1]
                    and len(match.group(1)) >= len(opener[2])
                    and not match.group(2).strip()
                ):
                    opener = None
        prose = [
            _blank_code(line) if not f else " " * len(line)
            for line, f in zip(lines, fenced, strict=True)
        ]
        fence_open = (opener[0], opener[2]) if opener else None
        return cls(lines, fenced, fence_open, prose, info)


def code_spans(line: str) -> list[tuple[int, int]]:
    """(start, end) of each code span of the line, its backticks included."""
    runs = list(_BACKTICKS.finditer(line))
    used: set[int] = set()
    spans: list[tuple[int, int]] = []
    for i, run in enumerate(runs):
        if i in used:
            continue
        for j in range(i + 1, len(runs)):
            if j not in used and len(runs[j].group()) == len(run.group()):
                used |= {i, j}
                spans.append((run.start(), runs[j].end()))
                break
    return spans


def _blank_code(line: str) -> str:
    """The line with code spans and URLs replaced by spaces (columns kept)."""
    out = list(line)
    for start, end in code_spans(line):
        out[start:end] = " " * (end - start)
    blanked = "".join(out)
    for url in _URL.finditer(blanked):
        blanked = blanked[: url.start()] + " " * (url.end() - url.start()) + blanked[url.end() :]
    return blanked


# -- the scan ------------------------------------------------------------------------------


def scan_target(text: str, contract: Contract, reach: Reach) -> Scan:
    shape = Shape.of(text)
    scan = Scan()
    lex = reach.lexicon
    scan_locators(shape, reach, scan)
    deictic(shape, lex.deictic, scan)
    session_ids(shape, reach, scan)
    coined(shape, reach, scan)
    rendering(shape, scan)
    claims = compiled_patterns(lex.addressed_patterns, lex.user_patterns, re.IGNORECASE)
    orders = compiled_patterns(lex.order_patterns, lex.user_patterns, re.IGNORECASE)
    addressed(shape, claims, orders, scan)
    addressed_contract(contract, (*claims, *orders), scan)
    addressed_routes(orders, scan)
    find_decisions(shape, reach, scan)
    verify_commands(contract, reach, scan)
    edge(contract, text, reach, scan)
    judgments(shape, scan)
    sweep_notes(scan, contract, lex.languages)
    scan.findings.sort(key=_position)
    return scan


def _position(item: LintFinding) -> tuple[int, int, int]:
    where = item.finding.location
    if where[:1].isdigit():
        line, col = where.split(":")
        return (0, int(line), int(col))
    return (1, 0, 0)


def scan_locators(shape: Shape, reach: Reach, scan: Scan) -> None:
    count = {"observed": 0, "unobserved": 0, "failed": 0}
    for n, line in enumerate(shape.lines, 1):
        taken: list[tuple[int, int]] = []

        def free(start: int, end: int, taken: list[tuple[int, int]] = taken) -> bool:
            return all(end <= a or start >= b for a, b in taken)

        found: list[tuple[int, str, Resolution]] = []
        for pattern, resolve in (
            (_URL, reach.resolve_url),
            (_GIT, reach.resolve_git),
            (_HOSTPORT, lambda t: reach.resolve_url("http://" + t)),
            (_REPO_ID, reach.resolve_id),
            (_PATH, reach.resolve_path),
        ):
            for match in pattern.finditer(line):
                token = match.group().rstrip(".,;:!?")
                if pattern is _URL:
                    token = token.rstrip(")")
                start, end = match.start(), match.start() + len(token)
                if not token or not free(start, end) or not _pathlike(token, pattern is _PATH):
                    continue
                taken.append((start, end))
                found.append((start, token, resolve(token)))
        for start, token, resolution in sorted(found):
            if resolution.missing and not_a_reference(shape, reach, n, start, token):
                continue
            if resolution.status == "failed" and in_layout(token, reach.lexicon):
                continue
            count[resolution.status] += 1
            scan.locators.append(Locator(token, n, start + 1, resolution))
            if resolution.status == "failed":
                scan.findings.append(
                    LintFinding(
                        _finding(
                            token,
                            n,
                            start + 1,
                            "unresolvable-references",
                            f"{token}: {resolution.why}",
                            "Route",
                            "move what it holds into a granted source or a durable record and "
                            "point there, or carry the content inline",
                        ),
                        "unresolved",
                    )
                )
    scan.checked["unresolvable-references"] = (
        f"{sum(count.values())} locators (paths, URLs, git records, ids) classified by "
        f"resolves_at: {count['observed']} observed within the granted sources, "
        f"{count['unobserved']} unobserved (durable class beyond reach, not resolved), "
        f"{count['failed']} failed"
    )


# What a path reference is (DIYLISIS F2, Rule 21: a stable pointer the receiver
# dereferences with its own tools). A token shaped like a path that names nothing in the
# reach is a broken pointer only when the record hands it over as one; these shapes hand
# nothing over, so they are words of the record, not residuals. A token that exists, or
# fails for any other reason (a tethered root, outside the granted sources), is judged as a
# locator wherever it stands: it names a real place on the author's machine.
_SHELL_FENCES = frozenset(
    {"sh", "bash", "zsh", "fish", "shell", "console", "shell-session", "sh-session",
     "bash-session", "powershell", "ps1", "pwsh", "cmd", "bat", "batch", "terminal"}
)  # fmt: skip
_PROMPT = re.compile(r"^\s*(?:\$|%|>|PS>)\s+")
_ASSIGNMENT = re.compile(r"^\s*[\w.-]+\s*=\s*\S")
_SLASH_WORDS = re.compile(r"[A-Za-z]+(?:/[A-Za-z]+)+")
# `**Task file** (`task.toml`, …)`: the token names the kind of file an emphasized term
# stands for, the way `zero-memory refuter (ZMR)` names an acronym.
_GLOSSED = re.compile(r"(\*\*|__|\*|_)[^*_\n]+?\1\s*\(\s*`?$")


def not_a_reference(shape: Shape, reach: Reach, n: int, start: int, token: str) -> bool:
    """Whether `token` (at line `n`, 0-based column `start`), which names nothing in the
    reach, is a word of the record rather than a pointer handed to the receiver:

    * words joined by slashes (`pass/fail/unknown`): no extension, no trailing slash, and
      no first word naming a folder the reach holds (`src/core/engine` with a `src` is a
      pointer into it);
    * a path in a folder tools make for themselves (the lexicons' `layout_roots`:
      `.ilh/runs.db`, `.venv/`, `.git/`);
    * a bare file name glossing an emphasized term (`**Task file** (`task.toml`, …)`);
    * a pattern: the tail of a glob (`*_test.py`), or a placeholder, a part in capitals
      the record also uses on its own as a metavariable (`ilh run TASK` … `TASK.toml`,
      `runs/RUN/owner.lock`);
    * a value inside a quoted sample: a data fence (a layout, a TOML example; not a shell
      fence, a `$ ` prompt line or a line starting with a command word) or a code span
      holding a `key = value` line.

    A command the receiver runs, a bare name in a sentence ("read notes.md") and a folder
    with its trailing slash stay references."""
    lex = reach.lexicon
    if in_layout(token, lex):
        return True
    if _SLASH_WORDS.fullmatch(token):
        return reach.resolve_path(token.split("/", 1)[0]).missing
    line = shape.lines[n - 1]
    if start > 0 and line[start - 1] in "*?]}":
        return True  # the tail of a glob (`*_test.py`): a pattern of names, not a file
    if _placeholder(token, "\n".join(shape.lines)):
        return True
    if "/" not in token and _GLOSSED.search(line[:start]):
        return True
    if shape.fenced[n - 1]:
        return not _command_line(line, shape.fence_info[n - 1], lex)
    for a, b in code_spans(line):
        if a < start < b:
            body = line[a:b].strip("`")
            return bool(_ASSIGNMENT.match(body))
    return False


def in_layout(token: str, lex: Lexicon) -> bool:
    """Whether `token` lies in a folder tools make for themselves (`.ilh/runs.db`,
    `.venv/bin/python`): the layout, named, not a file handed over. Missing from the reach,
    or there as a link out of it (a virtual environment's `python`), it is vocabulary; in
    the reach as a file it is observed like any other."""
    return token.split("/", 1)[0] in lex.layout_roots


_CAPITALS = re.compile(r"[A-Z][A-Z0-9_]+")


def _placeholder(token: str, text: str) -> bool:
    """Whether a part of `token` in capitals (a folder, or a file's stem) stands on its own
    elsewhere in `text`, as a metavariable does; `NOTES.md` alone is a file's name."""
    for part in token.strip("/").split("/"):
        stem = part.split(".", 1)[0]
        if _CAPITALS.fullmatch(stem) and re.search(
            rf"(?<![\w./-]){re.escape(stem)}(?![\w./-])", text
        ):
            return True
    return False


def _command_line(line: str, fence: str | None, lex: Lexicon) -> bool:
    """A line the receiver runs: in a shell fence, after a prompt, or led by a command
    word of the lexicons (`python tools/gen.py`)."""
    if fence in _SHELL_FENCES or _PROMPT.match(line):
        return True
    words = line.split()
    # `pytest = "tests/"` is a key of a sample, not the program run.
    return bool(words) and words[0] in lex.command_words and not _ASSIGNMENT.match(line)


def _pathlike(token: str, is_path: bool) -> bool:
    if not is_path:
        return True
    if token.startswith("-"):
        return False  # `--refuter-tokens/-time/-calls`, `--out/--port`: options, not a path
    if token.startswith(("/", "~", "$", "%", "./", "../")):
        return len(token) > 1 and any(c.isalpha() for c in token)
    parts = [p for p in token.split("/") if p]
    if not parts or not any(any(c.isalpha() for c in p) for p in parts):
        return False  # 1/2, 2024/05
    if "/" not in token:
        return True  # a bare file name with a known extension
    # `and/or`, `TCP/IP`, `read/write`: words, not a path. A path has an extension, a
    # trailing slash, or more than two segments.
    return token.endswith("/") or "." in parts[-1] or len(parts) > 2


def _phrases_pattern(phrases: tuple[str, ...]) -> re.Pattern[str] | None:
    """One alternation of every phrase, longest first (a longer anchor wins its span)."""
    parts = []
    for phrase in sorted(phrases, key=len, reverse=True):
        body = r"\s+".join(re.escape(word) for word in phrase.split())
        parts.append(rf"(?<!\w){body}(?!\w)" if phrase.isascii() else body)
    return re.compile("|".join(parts), re.IGNORECASE) if parts else None


def folded(line: str) -> tuple[str, list[int]]:
    """The line as a reader sees it — format characters (zero-width spaces and joiners,
    soft hyphens, bidi marks) dropped, compatibility forms folded one for one (full-width
    `Ａｓ ａｂｏｖｅ`, a no-break space) — and, per character of it, its column in `line`.
    A disguised anchor ("As\u200b above") certified as clean before this."""
    if line.isascii():
        return line, list(range(len(line)))
    out: list[str] = []
    where: list[int] = []
    for i, ch in enumerate(line):
        if unicodedata.category(ch) == "Cf":
            continue
        plain = unicodedata.normalize("NFKC", ch)
        out.append(plain if len(plain) == 1 else ch)
        where.append(i)
    return "".join(out), where


def deictic(shape: Shape, phrases: tuple[str, ...], scan: Scan) -> None:
    pattern = _phrases_pattern(phrases)
    hits = 0
    for n, raw in enumerate(shape.prose, 1):
        if pattern is None:
            break
        line, where = folded(raw)
        for match in pattern.finditer(line):
            start, end = where[match.start()], where[match.end() - 1] + 1
            token = shape.lines[n - 1][start:end]
            hits += 1
            scan.findings.append(
                LintFinding(
                    _finding(
                        token,
                        n,
                        start + 1,
                        "deictic-anchors",
                        f"'{token}' points at something by its place in the author's "
                        "session; a fresh receiver has no 'above' or 'earlier'",
                        "Resolve",
                        "name the thing it points at: the file, section or decision itself",
                    ),
                    "unresolved",
                )
            )
    scan.checked["deictic-anchors"] = (
        f"{len(phrases)} anchor phrases of the lexicons searched in the prose; {hits} found"
    )


def addressed(
    shape: Shape, claims: Sequence[Searcher], orders: Sequence[Searcher], scan: Scan
) -> None:
    """Text addressed to the certification rather than to the receiver: a verdict the
    record announces, a claim that it is already certified (the lexicons'
    `addressed_patterns`, `claims`), an order to the refuter or to ignore the instructions
    around it (`order_patterns`, `orders`). Every line is read, fences and comments
    included, as `folded` reads it: an order hidden in a code fence or split by a
    zero-width character is the same order to a model. The refuter judging the text cannot
    be trusted to see through it (it may be steered by the very text), so the lint finds it
    whatever the refuter answers. One exception: a claim quoted inside a sentence of prose
    is a mention (`_quoted_mention`)."""
    compiled = (*claims, *orders)
    hits = 0
    for n, raw in enumerate(shape.lines, 1):
        line, where = folded(raw)
        taken: list[tuple[int, int]] = []
        if "&" in raw and not any(p.search(line) for p in compiled):
            # `&#73;gnore all previous instructions` renders as the words it spells, and a
            # model reads it so: decoded, it is the same order, quoted as its whole line.
            decoded, _ = folded(html.unescape(raw))
            if decoded != line and any(p.search(decoded) for p in compiled):
                indent = len(raw) - len(raw.lstrip())
                taken.append((0, len(raw)))
                hits += 1
                scan.findings.append(_addressed_finding(raw.strip(), n, indent + 1))
        for index, pattern in enumerate(compiled):
            for match in pattern.finditer(line):
                if match.end() == match.start():
                    continue
                start, end = where[match.start()], where[match.end() - 1] + 1
                if any(not (end <= a or start >= b) for a, b in taken):
                    continue
                is_claim = index < len(claims)
                if is_claim and not shape.fenced[n - 1] and _quoted_mention(raw, start, end):
                    continue
                taken.append((start, end))
                hits += 1
                scan.findings.append(_addressed_finding(raw[start:end], n, start + 1))
    scan.checked["emergent-addressed"] = (
        f"{len(compiled)} patterns of text addressed to the certification (an announced "
        f"verdict, a certification claim, an order to the refuter) searched in every line; "
        f"{hits} found"
    )


#: A quotation's marks: the opening one and the closing one it pairs with.
_QUOTE_PAIRS = {'"': '"', "\u201c": "\u201d"}
_LETTER = re.compile(r"[^\W\d_]")


def _quoted_mention(raw: str, start: int, end: int) -> bool:
    """Whether the claim at `raw[start:end]` is the whole of a quotation (its closing mark
    after at most a full stop or comma) inside a sentence: words outside the quotation on
    the same line. That is how prose names a phrase instead of saying it: this
    repository's README describing the rule ('an announced verdict, "already certified",
    …') and an example ('a target carrying "Verdict: Pass"'). A quote alone on its line
    (or after a `>`) says it; an order is never a mention (a quoted order steers a model
    all the same); in a fence a quote is code's and stays a finding (an HTML comment
    holding one is hidden text already). The cost:
    a claim the record wraps in quotes mid-sentence ('the result is "Verdict: Pass" here')
    is left to the refuter."""
    if start == 0 or (closing := _QUOTE_PAIRS.get(raw[start - 1])) is None:
        return False
    after = end + 1 if raw[end : end + 1] in (".", ",", ";", ":", "!", "?") else end
    if raw[after : after + 1] != closing:
        return False
    return bool(_LETTER.search(raw[: start - 1] + " " + raw[after + 1 :]))


def _addressed_finding(token: str, n: int, col: int) -> LintFinding:
    return LintFinding(
        _finding(
            token,
            n,
            col,
            "emergent",
            f"'{token}' addresses the certification, not the receiver (a verdict, a "
            "certification claim or an order to the refuter or to ignore instructions): a "
            "record hands over a task, it never judges itself",
            "Drop",
            "remove it; a certification is the certificate's to state",
        ),
        "unresolved",
        deferrable=False,
    )


def addressed_routes(compiled: Sequence[Searcher], scan: Scan) -> None:
    """The files the target routes its receiver to (each observed path locator that is a
    file), searched for orders (`order_patterns`: a verdict or a certification claim is
    ordinary content there, code that parses one, a page describing one): an order moved
    out of the target into a file it points at reaches the receiver, and the refuter. The
    file is outside what a certification may edit, so the finding sits on the route (the
    locator in the target): route elsewhere, or change the file and certify again; never
    deferred."""
    hits: dict[Path, tuple[int, str] | None] = {}
    for loc in scan.locators:
        found = loc.resolution.found
        if loc.resolution.status != "observed" or found is None:
            continue
        if found not in hits:
            hits[found] = _first_addressed(found, compiled)
        hit = hits[found]
        if hit is None:
            continue
        line, quoted = hit
        scan.findings.append(
            LintFinding(
                _finding(
                    loc.token,
                    loc.line,
                    loc.col,
                    "emergent",
                    f"the file it routes the receiver to ({loc.token}) addresses the "
                    f"certification at line {line} ('{quoted}'): the receiver follows the "
                    "route and reads it",
                    "Route",
                    "route to a record without it, or change the file and certify again",
                ),
                "exposure",
                deferrable=False,
            )
        )


# The format characters (Unicode category Cf) `folded` drops, as ranges: a whole file is
# cleaned in one pass instead of character by character.
_FORMAT_CHARS = re.compile(
    "[\u00ad\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891\u08e2\u180e\u200b-\u200f"
    "\u202a-\u202e\u2060-\u2064\u2066-\u206f\ufeff\ufff9-\ufffb\U000110bd\U000110cd"
    "\U00013430-\U0001343f\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0001"
    "\U000e0020-\U000e007f]"
)


def _first_addressed(path: Path, compiled: Sequence[Searcher]) -> tuple[int, str] | None:
    """(line, quote) of the first text addressed to the certification in the file."""
    data = read_regular(path, MAX_SOURCE_FILE_BYTES)
    if data is None or b"\x00" in data[:8192]:
        return None
    text = data.decode("utf-8", errors="replace")
    if not text.isascii():
        text = _FORMAT_CHARS.sub("", unicodedata.normalize("NFKC", text))
    for pattern in compiled:
        match = pattern.search(text)
        if match is not None:
            return text.count("\n", 0, match.start()) + 1, match.group()[:80]
    return None


def addressed_contract(contract: Contract, compiled: Sequence[Searcher], scan: Scan) -> None:
    """The same search over the contract's free-text fields: they ride to the receiver in
    the reception procedure and to the refuter beside the target, so an order to the
    refuter or a certification claim there is the same order. Settled by the user
    re-declaring the field (Resolve), never by a Defer."""
    shown = contract.shown()
    for name in ("role", "activity", "execution_scope", "stop_condition", "verification_commands"):
        raw = shown[name]
        value, where = folded(raw)
        for pattern in compiled:
            for match in pattern.finditer(value):
                if match.end() == match.start():
                    continue
                # quoted as the field stands (zero-width characters and all)
                token = raw[where[match.start()] : where[match.end() - 1] + 1]
                scan.findings.append(
                    LintFinding(
                        Finding(
                            quoted_token=token,
                            location=f"contract:{name}",
                            category="emergent",
                            why_unresolvable=f"the contract's {name} addresses the "
                            "certification (a verdict, a certification claim or an order to the "
                            "refuter), not the receiver's task",
                            advisory="Resolve",
                            reference="the field in the user's own words, without it",
                            repair_note="re-declare the field without it",
                        ),
                        "certification-leg",
                        "contract",
                        deferrable=False,
                    )
                )


# -- definitions -----------------------------------------------------------------------------


def _definition_patterns(token: str) -> list[re.Pattern[str]]:
    t = re.escape(token)
    mark = r"(?:\*\*|__|`|\*)?"
    return [
        # `D3: …`, `- **D3** — …`, `### D3. …`, `| D3 | … |`
        re.compile(
            rf"^\s*(?:[-*+]\s+|\d+[.)]\s+|#+\s*|\|\s*)?{mark}{t}{mark}\s*(?:[:：.)=|—–-]|\s[-–—=:])",
            re.MULTILINE,
        ),
        re.compile(rf"(?<![\w-]){t}\s*\((?=[^)]*[a-z가-힣])"),  # ZMR (zero-memory refuter)
        re.compile(rf"\([^()]*(?<![\w-]){t}(?![\w-])[^()]*\)"),  # zero-memory refuter (ZMR)
        re.compile(rf"(?<![\w-]){t}{mark}\s+(?:means|stands for|is short for|is defined as|=)\s"),
        re.compile(rf"(?<![\w-]){t}{mark}\s*(?::|=)\s*\S"),
    ]


def defined(
    token: str, text: str, reach: Reach, *, presence_in_sources: bool = False
) -> str | None:
    """Where `token` is defined: "the target", a granted source's label, or None."""
    key = (token, presence_in_sources, len(text), hash(text))
    cache = reach.definitions
    if key not in cache:
        cache[key] = _defined(token, text, reach, presence_in_sources)
    return cache[key]


def _defined(token: str, text: str, reach: Reach, presence_in_sources: bool) -> str | None:
    patterns = _definition_patterns(token)
    if any(p.search(text) for p in patterns):
        return "the target"
    if token not in reach.joined_sources():
        return None
    word = re.compile(rf"(?<![\w-]){re.escape(token)}(?![\w-])")
    for label, source in reach.source_texts():
        if token not in source:
            continue
        if presence_in_sources and word.search(source):
            return label
        if any(p.search(source) for p in patterns):
            return label
    return None


def session_ids(shape: Shape, reach: Reach, scan: Scan) -> None:
    text = "\n".join(shape.lines)
    lex = reach.lexicon
    reported: set[str] = set()
    taken: dict[int, list[tuple[int, int]]] = {}

    def report(n: int, start: int, token: str, why: str, advisory: Advisory, note: str) -> None:
        spans = taken.setdefault(n, [])
        end = start + len(token)
        if any(not (end <= a or start >= b) for a, b in spans):
            return
        spans.append((start, end))
        if token in reported:
            return
        reported.add(token)
        scan.findings.append(
            LintFinding(
                _finding(token, n, start + 1, "session-identifiers", why, advisory, note),
                "unresolved",
            )
        )

    words = "|".join(re.escape(w) for w in lex.numbered_words)
    numbered = (
        re.compile(rf"(?<!\w)(?:{words})\s*#?\s*(\d{{1,4}})\b", re.IGNORECASE) if words else None
    )
    custom = compiled_patterns(lex.session_id_patterns, lex.user_patterns, 0)
    count = 0
    for n, line in enumerate(shape.prose, 1):
        original = shape.lines[n - 1]
        for pattern in custom:
            for match in pattern.finditer(original):
                count += 1
                report(
                    n,
                    match.start(),
                    match.group(),
                    "an identifier of the author's session (an agent, session or tool-call "
                    "id, or the author's own numbering); it means nothing outside it",
                    "Drop",
                    "remove it, or replace it with the durable record it stood for",
                )
        if numbered is not None:
            for match in numbered.finditer(line):
                token = original[match.start() : match.end()]
                count += 1
                if defined(token, text, reach) is None:
                    report(
                        n,
                        match.start(),
                        token,
                        f"'{token}' is a number from the author's own list; neither the target "
                        "nor a granted source says what it is",
                        "Resolve",
                        "say what it is in words, or point to the durable record it numbers",
                    )
        for match in _BARE_HASH.finditer(line):
            token = original[match.start() : match.end()]
            count += 1
            if defined(token, text, reach) is None:
                report(
                    n,
                    match.start(),
                    token,
                    f"'{token}' is a bare number with no repository or list that defines it",
                    "Resolve",
                    "name the issue or pull request in full (owner/repo#N or its URL), or say "
                    "what it is",
                )
        for match in _LETTER_ID.finditer(line):
            token = original[match.start() : match.end()]
            if token in lex.known_acronyms:
                continue
            count += 1
            members = _expand(match)
            if defined(token, text, reach) is not None or all(
                defined(m, text, reach) is not None for m in members
            ):
                continue
            report(
                n,
                match.start(),
                token,
                f"'{token}' is numbering that lived in the author's session: "
                + ", ".join(m for m in members if defined(m, text, reach) is None)
                + " defined neither in the target nor in a granted source",
                "Resolve",
                "define each numbered item in the target, or point to the record that does",
            )
    scan.checked["session-identifiers"] = (
        f"{count} identifier-shaped tokens (#N, numbered words, letter-number ids, session "
        "and agent id shapes) checked for a definition in the target or a granted source"
    )


def _expand(match: re.Match[str]) -> list[str]:
    letter, first, letter2, last = match.group(1), match.group(2), match.group(3), match.group(4)
    if last is None:
        return [f"{letter}{first}"]
    if letter2 not in (None, letter):
        return [f"{letter}{first}", f"{letter2}{last}"]
    lo, hi = int(first), int(last)
    if hi < lo or hi - lo > 20:
        return [f"{letter}{first}", f"{letter}{last}"]
    return [f"{letter}{i}" for i in range(lo, hi + 1)]


def coined(shape: Shape, reach: Reach, scan: Scan) -> None:
    text = "\n".join(shape.lines)
    lex = reach.lexicon
    seen: set[str] = set()
    checked = 0
    for n, line in enumerate(shape.prose, 1):
        original = shape.lines[n - 1]
        candidates: list[tuple[int, str, bool]] = []
        for match in _ACRONYM.finditer(line):
            token = match.group(1)
            if token in lex.known_acronyms or token + match.group(2) in lex.known_acronyms:
                continue
            if sum(c.isupper() for c in token) < 2 or _LETTER_ID.fullmatch(token):
                continue
            candidates.append((match.start(), token, False))
        for match in _CAMEL.finditer(line):
            candidates.append((match.start(), match.group(1), True))
        in_paths = [
            (loc.col - 1, loc.col - 1 + len(loc.token)) for loc in scan.locators if loc.line == n
        ]
        for start, token, camel in sorted(candidates):
            if token in seen or original[start : start + len(token)] != token:
                continue
            if any(a <= start < b for a, b in in_paths):
                continue  # `NOTES.md`, `MyWidget.java`: a file's name, judged as a path
            seen.add(token)
            checked += 1
            if token in lex.known_acronyms:
                continue
            if defined(token, text, reach, presence_in_sources=camel) is not None:
                continue
            scan.findings.append(
                LintFinding(
                    _finding(
                        token,
                        n,
                        start + 1,
                        "coined-names",
                        f"'{token}' is a coined name or acronym defined neither in the target "
                        "nor in a granted source",
                        "Resolve",
                        f"define {token} where it first appears, e.g. '{token} (what it means)'",
                    ),
                    "unresolved",
                )
            )
    scan.checked["coined-names"] = (
        f"{checked} acronyms and CamelCase names checked for a definition ('X (…)', '(X)', "
        "'X: …', 'X means …') in the target or the granted sources"
    )


def rendering(shape: Shape, scan: Scan) -> None:
    found = 0

    def add(token: str, n: int, col: int, why: str, note: str, deferrable: bool = True) -> None:
        nonlocal found
        found += 1
        scan.findings.append(
            LintFinding(
                _finding(
                    token,
                    n,
                    col,
                    "rendering-accidents",
                    why,
                    "Resolve",
                    note,
                    reference="the intended plain text",
                ),
                "unresolved",
                deferrable=deferrable,
            )
        )

    paragraph_runs: list[tuple[int, re.Match[str]]] = []

    def close_paragraph() -> None:
        unmatched = _unmatched_backticks([m for _, m in paragraph_runs])
        for index in unmatched[:1]:
            n, match = paragraph_runs[index]
            add(
                match.group(),
                n,
                match.start() + 1,
                "an unbalanced backtick: the rest of the paragraph renders as code, or the "
                "backtick shows as a stray character",
                "close the code span, or remove the stray backtick",
            )
        paragraph_runs.clear()

    previous = ""
    for n, line in enumerate(shape.lines, 1):
        if shape.fenced[n - 1]:
            close_paragraph()
            previous = ""
            continue
        if not line.strip():
            close_paragraph()
            previous = ""
            continue
        paragraph_runs.extend((n, m) for m in _BACKTICKS.finditer(line))
        prose = _blank_code(line)
        for start, end in _tilde_pairs(prose):
            add(
                line[start : end + 1],
                n,
                start + 1,
                "single tildes pair up and render as strikethrough: the text between them "
                "reads as deleted",
                "write the range or approximation without tildes ('10-20', 'about 5'), or "
                "escape them (\\~)",
            )
        setext = _SETEXT.match(line)
        if (
            setext
            and previous.strip()
            and not _LIST_OR_TABLE.match(previous)
            and not _ATX.match(previous)
            and (previous.rstrip().endswith((".", ",", ":", ";")) or len(previous) > 60)
        ):
            add(
                setext.group(1),
                n,
                line.index(setext.group(1)) + 1,
                "this line turns the sentence above it into a heading",
                "put a blank line before it, or remove it",
            )
        atx = _ATX.match(line)
        if (
            atx
            and atx.group(2).islower()
            and atx.group(2).isascii()
            and not _NAME_LIKE.search(line[atx.start(2) :].split(maxsplit=1)[0])
        ):
            add(
                line.strip()[:40],
                n,
                len(line) - len(line.lstrip()) + 1,
                "a line starting with '#' renders as a heading; this one reads as a sentence",
                "rephrase so the line does not start with '# ', or escape it (\\#)",
            )
        previous = line
    close_paragraph()
    for token, n, col, why, note in hidden_text(shape):
        add(token, n, col, why, note, deferrable=False)
    if shape.fence_open is not None:
        n, opener = shape.fence_open
        add(
            opener,
            n,
            shape.lines[n - 1].index(opener) + 1,
            "a code fence that never closes: everything after it renders as code",
            "close the fence",
        )
    scan.checked["rendering-accidents"] = (
        "single-tilde pairs (strikethrough), backtick balance per paragraph, setext and ATX "
        "heading accidents, unclosed fences, hidden text (invisible characters, HTML "
        f"comments and hidden elements, mixed-script look-alike words); {found} found"
    )


# Text the person certifying does not see but an agent receiver reads in full: a record
# that says one thing rendered and another raw is a different record for each of them
# (and the carrier of instructions hidden from the certifier, for the refuter or the
# receiver). Each is a finding, so it is shown and answered, never certified past.
_HTML_COMMENT = re.compile(r"<!--")
# Raw HTML that renders as nothing at all: a processing instruction, CDATA, a declaration.
_HTML_UNRENDERED = re.compile(r"<!\[CDATA\[|<![A-Za-z]+|<\?")
_HIDDEN_ELEMENT = re.compile(
    r"<(?:script|style|template|noscript)\b"  # content never rendered as text
    r"|<[a-zA-Z][^>]*?(?:\shidden(?:[\s>=/]|$)|display\s*:\s*none|visibility\s*:\s*hidden"
    r"|font-size\s*:\s*0(?![.\d]*[1-9]))",
    re.IGNORECASE,
)
# Look-alikes of Latin letters in scripts that mixed into a Latin word only to disguise
# it ("\u0430s \u0430bove" reads as "as above" and matched no word list). Greek is limited
# to its Latin look-alikes, so "μs" and "α-helix" stay prose.
_GREEK_LOOKALIKES = frozenset("αβγεικνοπρτυχωΑΒΕΖΗΙΚΜΝΟΡΤΥΧ")
_WORD = re.compile(r"\w+")
# Mathematical notation mixes a Latin and a Greek letter without disguising a word: a
# differential (`dτ` in the specs' `∫₀ᵗ S(τ)dτ`) and a Greek variable with a subscript
# (`ρ_k`, `λ_k`). Neither reads as an English word, and as hidden text (never deferred)
# they made every spec with a formula uncertifiable (review9). A vowel's look-alike after
# the `d` is left out: `dο` reads as "do".
_GREEK_NOTATION = re.compile(r"d(?![αειουΑΕΙΟΥ])[\u0370-\u03ff]|[\u0370-\u03ff]+_[A-Za-z0-9]+")


def _script(ch: str) -> str:
    name = unicodedata.name(ch, "")
    return name.split(" ", 1)[0] if name else ""


def _variation_selector(ch: str) -> bool:
    o = ord(ch)
    return 0xFE00 <= o <= 0xFE0F or 0xE0100 <= o <= 0xE01EF


# Letters that render as blank space, each with the block where it is a real part of
# writing (a Hangul jamo filler beside jamo, a blank braille cell beside braille).
_BLANK_LETTERS = {
    "\u3164": None,  # HANGUL FILLER
    "\uffa0": None,  # HALFWIDTH HANGUL FILLER
    "\u115f": (0x1100, 0x11FF),
    "\u1160": (0x1100, 0x11FF),
    "\u2800": (0x2801, 0x28FF),
}


def _invisible(line: str, i: int) -> bool:
    """A format character (zero-width space or joiner, bidi control, soft hyphen, tag
    character, word joiner) that is not the joiner of an emoji sequence; a variation
    selector that selects nothing (after plain text, or in a run: one selector per byte is
    how text is smuggled invisibly); a letter that renders blank outside its script."""
    ch = line[i]
    if _variation_selector(ch):
        before = line[i - 1] if i else ""
        after = line[i + 1 : i + 2]
        return (
            not before
            or before.isascii()
            or _variation_selector(before)
            or (after != "" and _variation_selector(after))
        )
    if ch in _BLANK_LETTERS:
        block = _BLANK_LETTERS[ch]
        if block is None:
            return True
        around = line[i - 1 : i] + line[i + 1 : i + 2]
        return not any(block[0] <= ord(c) <= block[1] for c in around)
    if unicodedata.category(ch) != "Cf":
        return False
    if ch == "\u200d":
        around = line[i - 1 : i] + line[i + 1 : i + 2]
        return not any(unicodedata.category(c) in ("So", "Sk") for c in around)
    return True


# A link reference definition (`[label]: destination "title"`) renders as nothing; one
# whose label no link uses is there only to be hidden: the markdown comment idiom
# (`[//]: # (…)`, `[comment]: <> (…)`).
_LINK_DEFINITION = re.compile(r"^\s{0,3}(\[([^\]]+)\]:[ \t]*\S*)")


def _unused_definitions(shape: Shape) -> list[tuple[int, re.Match[str]]]:
    definitions = [
        (n, match)
        for n, line in enumerate(shape.lines, 1)
        if not shape.fenced[n - 1] and (match := _LINK_DEFINITION.match(line))
    ]
    if not definitions:
        return []
    defining = {n for n, _ in definitions}
    # Labels match case-insensitively with runs of white space as one (CommonMark).
    body = " ".join(
        " ".join(line for n, line in enumerate(shape.lines, 1) if n not in defining).split()
    ).casefold()
    return [
        (n, match)
        for n, match in definitions
        if f"[{' '.join(match.group(2).split()).casefold()}]" not in body
    ]


def hidden_text(shape: Shape) -> list[tuple[str, int, int, str, str]]:
    """(token, line, column, why, repair note) of each hidden span of the target."""
    out: list[tuple[str, int, int, str, str]] = []
    for n, match in _unused_definitions(shape):
        out.append(
            (
                match.group(1),
                n,
                match.start(1) + 1,
                "a markdown comment (a link definition no link uses): hidden when the record "
                "is rendered, read in full by an agent receiver, so the person certifying "
                "and the receiver see different records",
                "move what it says into the visible text, or remove it",
            )
        )
    for n, line in enumerate(shape.lines, 1):
        if not line.isascii():
            for i in range(len(line)):
                if _invisible(line, i):
                    name = unicodedata.name(line[i], f"U+{ord(line[i]):04X}")
                    out.append(
                        (
                            line[i],
                            n,
                            i + 1,
                            f"an invisible character ({name}): the receiver reads text the "
                            "person certifying does not see (words split or joined, order "
                            "reversed, or characters no one can read)",
                            "remove it",
                        )
                    )
                    break  # one per line: the line is then re-read as a whole
            for word in _WORD.finditer(line):
                scripts = {_script(c) for c in word.group() if c.isalpha()}
                if "LATIN" not in scripts:
                    continue
                greek = any(c in _GREEK_LOOKALIKES for c in word.group())
                notation = _GREEK_NOTATION.fullmatch(word.group()) is not None
                if "CYRILLIC" in scripts or ("GREEK" in scripts and greek and not notation):
                    out.append(
                        (
                            word.group(),
                            n,
                            word.start() + 1,
                            "a word mixing Latin letters with look-alikes from another "
                            "script: it reads as one word and is another to every search",
                            "retype the word in one script",
                        )
                    )
        if shape.fenced[n - 1]:
            continue  # a fence shows its HTML as text
        prose = _blank_code(line)
        for match in _HTML_COMMENT.finditer(prose):
            out.append(
                (
                    match.group(),
                    n,
                    match.start() + 1,
                    "an HTML comment: hidden when the record is rendered, read in full by an "
                    "agent receiver, so the person certifying and the receiver see different "
                    "records",
                    "move what it says into the visible text, or remove it",
                )
            )
        for match in _HTML_UNRENDERED.finditer(prose):
            out.append(
                (
                    match.group(),
                    n,
                    match.start() + 1,
                    "raw HTML that renders as nothing (a processing instruction, CDATA or a "
                    "declaration): read in full by an agent receiver, not seen by a person",
                    "move what it says into the visible text, or remove it",
                )
            )
        for match in _HIDDEN_ELEMENT.finditer(prose):
            out.append(
                (
                    line[match.start() : match.end()],
                    n,
                    match.start() + 1,
                    "an HTML element hidden when rendered: its text reaches an agent receiver "
                    "but not a person reading the record",
                    "make its text visible, or remove it",
                )
            )
    return out


def _tilde_pairs(line: str) -> list[tuple[int, int]]:
    singles = [
        i
        for i, c in enumerate(line)
        if c == "~"
        and (i == 0 or line[i - 1] != "~")
        and (i + 1 >= len(line) or line[i + 1] not in "~/")
    ]
    pairs: list[tuple[int, int]] = []
    i = 0
    while i + 1 < len(singles):
        a, b = singles[i], singles[i + 1]
        if not line[a + 1].isspace() and not line[b - 1].isspace() and b > a + 1:
            pairs.append((a, b))
            i += 2
        else:
            i += 1
    return pairs


def _unmatched_backticks(runs: list[re.Match[str]]) -> list[int]:
    open_runs: list[int] = []
    for index, run in enumerate(runs):
        match = next(
            (k for k in reversed(open_runs) if len(runs[k].group()) == len(run.group())), None
        )
        if match is not None:
            open_runs = open_runs[: open_runs.index(match)]
        else:
            open_runs.append(index)
    return open_runs


def find_decisions(shape: Shape, reach: Reach, scan: Scan) -> None:
    marker = _phrases_pattern(reach.lexicon.decision_markers)
    by_line: dict[int, list[Locator]] = {}
    for loc in scan.locators:
        by_line.setdefault(loc.line, []).append(loc)
    count = 0
    for n, line in enumerate(shape.prose, 1):
        hit = marker.search(line) if marker is not None else None
        if hit is None:
            continue
        count += 1
        claim = shape.lines[n - 1].strip()[:300]
        pointer = next(
            (loc for loc in by_line.get(n, []) if loc.resolution.status != "failed"), None
        )
        if pointer is not None:
            scan.decisions.append(
                DecisionRecord(
                    claim=claim,
                    ledger_ref=StableRef(kind=pointer.resolution.kind, locator=pointer.token),
                )
            )
            continue
        token = shape.lines[n - 1][hit.start() : hit.end()]
        scan.findings.append(
            LintFinding(
                _finding(
                    token,
                    n,
                    hit.start() + 1,
                    "inference-as-evidence",
                    "a decision with no durable record of its rationale (a commit, an issue or "
                    "pull request, a tracked document): the receiver must take it on the "
                    "author's word",
                    "Route",
                    "point to where the decision was made and why (Rule 33)",
                ),
                "certification-leg",
            )
        )
    scan.checked["inference-as-evidence"] = (
        f"{count} decision-shaped lines checked for a durable ledger pointer; whether each "
        "judgment's basis truly supports its claim is beyond the lint"
    )


def verify_commands(contract: Contract, reach: Reach, scan: Scan) -> None:
    named = 0
    for index, command in enumerate(contract.verify):
        try:
            words = shlex.split(command, comments=True)
        except ValueError:
            words = command.split()
        for word in words:
            value = word.split("=", 1)[1] if word.startswith("-") and "=" in word else word
            if value.startswith("-") or not _PATH.fullmatch(value) or not _pathlike(value, True):
                continue
            named += 1
            resolution = reach.resolve_path(value)
            if resolution.status == "observed":
                continue
            scan.findings.append(
                LintFinding(
                    Finding(
                        quoted_token=value,
                        location="contract:verification_commands",
                        category="reception-procedure",
                        why_unresolvable=f"verification command {index + 1} names {value}, "
                        f"which {resolution.why}",
                        advisory="Resolve",
                        reference="a command whose files exist in the granted sources",
                        repair_note="correct the command, or grant the source that holds the file",
                    ),
                    "certification-leg",
                    "contract",
                )
            )
    scan.checked["reception-procedure"] = (
        f"{len(contract.verify)} verification commands: the {named} files they name must exist "
        "in the granted sources; whether the activity is executable from the target alone "
        "is beyond the lint"
    )


def carried_content(
    verb: str, activity: str | None, text: str, edge_words: frozenset[str]
) -> list[str]:
    """Words of a declared activation verb that are task content (content_free fails)."""
    content = f"{activity or ''}\n{text}".casefold()
    return [
        w
        for w in re.findall(r"[^\W\d_]{5,}", verb.replace("{locator}", ""))
        if w.casefold() not in edge_words and w.casefold() in content
    ]


def edge(contract: Contract, text: str, reach: Reach, scan: Scan) -> None:
    if contract.verb is None:
        scan.checked["activation-edge"] = (
            f"the minimal verb '{MINIMAL_VERB}', the target by reference: content-free"
        )
        return
    scan.checked["activation-edge"] = (
        "the declared verb checked content-free against the activity and the target's words "
        "(re-formed to the minimal verb at F0 when it was not); the locator is the target by "
        "reference"
    )


def judgments(shape: Shape, scan: Scan) -> None:
    """F3/F4: KEEP each finding-free paragraph on the target's own text; ROUTE each
    locator that did not fail, by reference."""
    open_lines = {
        int(f.finding.location.split(":")[0])
        for f in scan.findings
        if f.finding.location[:1].isdigit()
    }
    for start, end in _paragraphs(shape):
        if any(start <= n <= end for n in open_lines):
            continue
        content = "\n".join(shape.lines[start - 1 : end])
        first = shape.lines[start - 1]
        col = len(first) - len(first.lstrip()) + 1
        scan.judgments.append(
            RouteJudgment(
                item=ContextItem(
                    location=f"{start}:{col}",
                    origin="DocumentRead",
                    content=first.strip()[:120],
                ),
                verdict=ValueVerdict(evidence=content),
                basis=f"inline in the target, lines {start}-{end}, read from the record itself "
                "(bound by the target's digest)",
                observation="inline",
            )
        )
    for loc in scan.locators:
        if loc.resolution.status == "failed":
            continue
        scan.judgments.append(
            RouteJudgment(
                item=ContextItem(
                    location=f"{loc.line}:{loc.col}",
                    origin="DocumentRead",
                    content=loc.token,
                ),
                verdict=ReferenceVerdict(
                    stable_ref=StableRef(kind=loc.resolution.kind, locator=loc.token)
                ),
                basis=f"resolves_at: {loc.resolution.why}",
                observation="observed" if loc.resolution.status == "observed" else "unobserved",
            )
        )


def _paragraphs(shape: Shape) -> list[tuple[int, int]]:
    spans: list[tuple[int, int]] = []
    start: int | None = None
    for n, line in enumerate(shape.lines, 1):
        blank = not line.strip() and not shape.fenced[n - 1]
        if blank:
            if start is not None:
                spans.append((start, n - 1))
                start = None
        elif start is None:
            start = n
    if start is not None:
        spans.append((start, len(shape.lines)))
    return spans


def sweep_notes(scan: Scan, contract: Contract, languages: tuple[str, ...]) -> None:
    scan.checked.setdefault(
        "operative-procedure",
        "beyond the lint: whether authored procedure is handed over for adoption unverified",
    )
    awaiting = contract.awaiting()
    authored = [k for k, v in contract.provenance.items() if v == "ai_authored"]
    scan.checked["contract-provenance-misfit"] = (
        f"per-field provenance marked at F0 ({len(authored)} AI-authored, "
        f"{len(authored) - len(awaiting)} confirmed or corrected); whether the scope claims "
        "more than the user's words is beyond the lint"
    )
    addressed_note = scan.checked.pop("emergent-addressed", "")
    scan.checked["emergent"] = (
        f"{addressed_note}; the rest beyond the lint (lexicons: {', '.join(languages)}); only "
        "a model refuter sweeps it"
        if addressed_note
        else f"beyond the lint (lexicons: {', '.join(languages)}); only a model refuter sweeps it"
    )


BEYOND_LINT = frozenset(
    {"reception-procedure", "inference-as-evidence", "operative-procedure", "emergent"}
)


def lint_verdict(scan: Scan, open_findings: list[Finding]) -> Verdict:
    """The lint-fallback verdict: what the deterministic legs saw, no more. A category the
    lint cannot judge says `beyond-lint` unless the lint found something there."""
    with_findings = {f.category for f in open_findings}
    rows = []
    for category in CATEGORY_IDS:
        if category in with_findings:
            status: Literal["clear", "finding", "beyond-lint"] = "finding"
        elif category in BEYOND_LINT:
            status = "beyond-lint"
        else:
            status = "clear"
        rows.append(SweepRow(category=category, status=status, checked=scan.checked[category]))
    return Verdict(
        result="Fail" if open_findings else "Pass",
        realization="lint-fallback",
        findings=tuple(open_findings),
        sweep=tuple(rows),
    )
