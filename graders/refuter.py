"""The zero-memory refuter's verdict (DIYLISIS F5): the eleven-category checklist, the
verdict's structured form, and its strict validation.

The conversation with the refuter model (its fresh context, the read-only tools, its
budget) is the harness's (`harness.certify.refuter`); this module decides what the
refuter's answer is worth, and what a lint-only verdict may claim. It is pure: no I/O.

The refuter answers with one JSON object (the structured form of DIYLISIS's Verdict,
Realization, Findings table and Category sweep):

    {"verdict": "Pass|Fail", "realization": "refuter-subagent",
     "findings": [{"quoted_token": "…", "location": "12:7", "category": "deictic-anchors",
                   "why_unresolvable": "…", "advisory": "Resolve|Route|Drop|Defer",
                   "reference": "…", "repair_note": "…"}],
     "sweep": [{"category": "coined-names", "status": "clear|finding", "checked": "…"}]}

The answer is hostile input. It is a verdict only when every rule below holds; anything
else is *no verdict* (DIYLISIS: "a verdict missing the sweep trace or the realization
is no verdict — re-dispatch, never default to Pass"):

* one JSON object (bare, or alone in one ```json fence), no unknown keys, no key twice
  (`"verdict": "Fail", …, "verdict": "Pass"` is two answers in one);
* `realization` present and the one the harness dispatched;
* the sweep names each of the eleven categories exactly once, each with a non-empty
  `checked` (what was actually checked: at least two words, and not one text copied
  into every row), and nothing else;
* every finding has every field non-empty, a known category whose sweep row says
  `finding`, exactly one advisory tag, a `reference` when it advises Resolve, and a
  `(quoted_token, location)` that exists: `line:col` in the target (the token starts at
  that column), or `contract:<field>`, `edge:verb`, `judgment:<n>` naming text the
  refuter was shown;
* Pass carries no finding and no sweep row saying `finding`; Fail carries a finding;
* (checked by the session, which knows its tool calls: `unopened_citations`) a Pass cites
  as checked no granted file that its tool calls never opened, listed or grepped.

The problems are the harness's own words and never quote the answer, so text the refuter
copied out of the target cannot come back to it as a runtime line.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

Advisory = Literal["Resolve", "Route", "Drop", "Defer"]
ADVISORIES: tuple[str, ...] = ("Resolve", "Route", "Drop", "Defer")
Realization = Literal["refuter-subagent", "generic-subagent", "lint-fallback"]
SweepStatus = Literal["clear", "finding", "beyond-lint"]

# The checklist of DIYLISIS F5, in its order; category 11 keeps the set open.
CATEGORIES: tuple[tuple[str, str], ...] = (
    ("coined-names", "coined names and acronyms defined neither in the target nor a source"),
    ("session-identifiers", "identifiers that lived only in the author's session (#4, D3)"),
    ("deictic-anchors", "anchors resolved by session position ('as above', 'that file')"),
    (
        "unresolvable-references",
        "paths, URLs, ids and commands a receiver cannot dereference (resolves_at)",
    ),
    ("rendering-accidents", "stray ~…~, unbalanced backticks, accidental headings"),
    (
        "reception-procedure",
        "the activity is executable from the target, judgments and granted sources alone",
    ),
    ("inference-as-evidence", "a judgment basis or claim that is the author's own reasoning"),
    ("activation-edge", "the edge's verb carries task content or names another record"),
    ("operative-procedure", "authored procedure the receiver must adopt unverified (Rule 27)"),
    (
        "contract-provenance-misfit",
        "the contract claims more than the user's own words authorized (Rule 29)",
    ),
    ("emergent", "anything else a zero-memory receiver could not resolve"),
)
CATEGORY_IDS: tuple[str, ...] = tuple(c for c, _ in CATEGORIES)

MAX_FINDINGS = 200
MAX_FIELD_CHARS = 4000
_LOCATION = re.compile(r"^(\d{1,7}):(\d{1,7})$")
_WORDS = re.compile(r"[^\W\d_]+")
_GRANTED_PATH = re.compile(r"(?<![\w/.-])(?:\./)?(granted/[\w./@+-]*[\w/])")
_FENCE = re.compile(r"^```(?:json)?\s*\n(.*)\n```\s*$", re.DOTALL)


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


class Finding(_Strict):
    """One EvidencedFinding as it travels (the caller binds the item by token and place)."""

    quoted_token: str = Field(min_length=1, max_length=MAX_FIELD_CHARS)
    location: str = Field(min_length=1, max_length=200)
    category: str = Field(min_length=1, max_length=100)
    why_unresolvable: str = Field(min_length=1, max_length=MAX_FIELD_CHARS)
    advisory: Advisory
    reference: str | None = Field(default=None, max_length=MAX_FIELD_CHARS)
    repair_note: str = Field(min_length=1, max_length=MAX_FIELD_CHARS)


class SweepRow(_Strict):
    category: str = Field(min_length=1, max_length=100)
    status: SweepStatus
    checked: str = Field(min_length=1, max_length=MAX_FIELD_CHARS)


class Verdict(BaseModel):
    """A ZeroMemoryVerdict: Pass(sweep, realization) | Fail(findings, sweep, realization).
    Built by the harness (never straight from a reply), and read back from certificates."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    result: Literal["Pass", "Fail"]
    realization: Realization
    findings: tuple[Finding, ...] = ()
    sweep: tuple[SweepRow, ...]

    @property
    def passed(self) -> bool:
        return self.result == "Pass"


class _Answer(_Strict):
    verdict: Literal["Pass", "Fail"]
    realization: str = Field(min_length=1, max_length=100)
    findings: list[Finding] = Field(default_factory=list, max_length=MAX_FINDINGS)
    sweep: list[SweepRow]


class InvalidVerdict(Exception):
    """No verdict: the problems, in the harness's words."""

    def __init__(self, problems: Sequence[str]) -> None:
        super().__init__("; ".join(problems))
        self.problems = list(problems)


class Shown(BaseModel):
    """The texts the refuter was shown, which its findings may quote: the target's
    lines, the contract's fields, the activation verb and the judgment bases."""

    model_config = ConfigDict(frozen=True)

    target: str
    contract: Mapping[str, str] = Field(default_factory=dict)
    edge_verb: str = ""
    judgments: Sequence[str] = ()


ANSWER_FORMAT = """\
{"verdict": "Pass" or "Fail",
 "realization": "refuter-subagent",
 "findings": [{"quoted_token": "<the exact text, copied from where it stands>",
               "location": "<line>:<column> in the target (both from 1), or contract:<field>,
                            edge:verb, judgment:<number>",
               "category": "<one category id>",
               "why_unresolvable": "<why a fresh receiver cannot resolve it>",
               "advisory": "Resolve" or "Route" or "Drop" or "Defer",
               "reference": "<for Resolve: the definition, path or id that resolves it>",
               "repair_note": "<what would repair it>"}],
 "sweep": [{"category": "<category id>", "status": "clear" or "finding",
            "checked": "<what you actually checked, which references you opened>"}]}"""


def checklist_text() -> str:
    return "\n".join(f"{n}. {cid}: {what}" for n, (cid, what) in enumerate(CATEGORIES, 1))


def token_at(text: str, location: str, token: str) -> bool:
    """Whether `token` starts at `line:col` (1-based, characters) of `text`."""
    match = _LOCATION.match(location)
    if match is None:
        return False
    line, col = int(match.group(1)), int(match.group(2))
    lines = text.split("\n")
    if not 1 <= line <= len(lines) or col < 1:
        return False
    return lines[line - 1].startswith(token, col - 1)


def _located(finding: Finding, shown: Shown) -> bool:
    where = finding.location
    token = finding.quoted_token
    if where.startswith("contract:"):
        return token in shown.contract.get(where.removeprefix("contract:"), "")
    if where == "edge:verb":
        return token in shown.edge_verb
    if where.startswith("judgment:"):
        number = where.removeprefix("judgment:")
        if not number.isdigit() or not 1 <= int(number) <= len(shown.judgments):
            return False
        return token in shown.judgments[int(number) - 1]
    return token_at(shown.target, where, token)


class _RepeatedKey(ValueError):
    pass


def _no_repeated_keys(pairs: list[tuple[str, object]]) -> dict[str, object]:
    # `{"verdict": "Fail", …, "verdict": "Pass"}` is two answers in one; json.loads would
    # quietly keep the last.
    keys = [k for k, _ in pairs]
    if len(set(keys)) != len(keys):
        raise _RepeatedKey()
    return dict(pairs)


def _json_object(text: str) -> object:
    body = text.strip()
    fenced = _FENCE.match(body)
    if fenced is not None:
        body = fenced.group(1)
    return json.loads(body, object_pairs_hook=_no_repeated_keys)


def parse_verdict(text: str, shown: Shown, *, realization: Realization) -> Verdict:
    """The refuter's reply as a verdict, or `InvalidVerdict` saying why it is none."""
    try:
        raw = _json_object(text)
    except _RepeatedKey:
        raise InvalidVerdict(["the reply repeats a key (two answers in one)"]) from None
    except (json.JSONDecodeError, RecursionError):
        raise InvalidVerdict(["the reply is not one JSON object"]) from None
    if not isinstance(raw, dict):
        raise InvalidVerdict(["the reply is not one JSON object"])
    if "sweep" not in raw:
        raise InvalidVerdict(["the category sweep is missing"])
    if "realization" not in raw:
        raise InvalidVerdict(["the realization is missing"])
    try:
        answer = _Answer.model_validate(raw)
    except ValidationError as err:
        problems = []
        for error in err.errors()[:5]:
            where = ".".join(str(p) for p in error["loc"]) or "(answer)"
            problems.append(f"{where}: {error['type']}")
        raise InvalidVerdict([f"malformed verdict ({', '.join(problems)})"]) from None
    problems = verdict_problems(answer, shown, realization)
    if problems:
        raise InvalidVerdict(problems)
    return Verdict(
        result=answer.verdict,
        realization=realization,
        findings=tuple(answer.findings),
        sweep=tuple(sorted(answer.sweep, key=lambda row: CATEGORY_IDS.index(row.category))),
    )


def verdict_problems(answer: _Answer, shown: Shown, realization: Realization) -> list[str]:
    problems: list[str] = []
    if answer.realization != realization:
        problems.append(f"the realization must be {realization}, the one that ran")
    swept = [row.category for row in answer.sweep]
    unknown = sorted({c for c in swept if c not in CATEGORY_IDS})
    if unknown:
        problems.append(f"the sweep names {len(unknown)} unknown categor(y/ies)")
    missing = [c for c in CATEGORY_IDS if c not in swept]
    if missing:
        problems.append(f"the sweep misses categories: {', '.join(missing)}")
    repeated = sorted({c for c in swept if swept.count(c) > 1 and c in CATEGORY_IDS})
    if repeated:
        problems.append(f"the sweep repeats categories: {', '.join(repeated)}")
    if any(not row.checked.strip() for row in answer.sweep):
        problems.append("a sweep row has an empty 'checked'")
    # The sweep is the verdict's evidence: what was checked, category by category. One text
    # copied into every row, or a bare word ("ok", "clear"), says nothing was.
    elif len(answer.sweep) > 1 and len({" ".join(r.checked.split()) for r in answer.sweep}) == 1:
        problems.append("the sweep says the same text in every row, not what each checked")
    bare = [r.category for r in answer.sweep if 0 < len(_WORDS.findall(r.checked)) < 2]
    bare += [r.category for r in answer.sweep if r.checked.strip() and not _WORDS.search(r.checked)]
    if bare:
        # Named only by the checklist's own ids, never by the reply's text.
        named = [c for c in CATEGORY_IDS if c in bare][:3] or [f"{len(bare)} row(s)"]
        problems.append(f"sweep row(s) {', '.join(named)}: says nothing of what was checked")
    if any(row.status == "beyond-lint" for row in answer.sweep):
        problems.append("only the lint may mark a category beyond its reach")
    status = {row.category: row.status for row in answer.sweep}
    for n, finding in enumerate(answer.findings, 1):
        if finding.category not in CATEGORY_IDS:
            problems.append(f"finding {n}: unknown category")
        elif status.get(finding.category) != "finding":
            problems.append(f"finding {n}: its category's sweep row does not say 'finding'")
        if any(
            not getattr(finding, name).strip()
            for name in ("quoted_token", "location", "why_unresolvable", "repair_note")
        ):
            problems.append(f"finding {n}: an empty field")
        if finding.advisory == "Resolve" and not (finding.reference or "").strip():
            problems.append(f"finding {n}: a Resolve advisory must name its reference")
        if not _located(finding, shown):
            problems.append(f"finding {n}: its quoted token is not at its location")
    if answer.verdict == "Pass":
        if answer.findings:
            problems.append("a Pass carries no findings")
        if any(row.status == "finding" for row in answer.sweep):
            problems.append("a Pass sweep has a row saying 'finding'")
    elif not answer.findings:
        problems.append("a Fail names at least one finding")
    return problems


def unopened_citations(verdict: Verdict, evidence: str) -> list[str]:
    """The granted files a verdict's sweep cites as checked that appear nowhere in
    `evidence` (the arguments and output of the refuter's successful tool calls in that
    dispatch). The target is shown in full, so only `granted/…` paths need a tool call: a
    Pass that cites a file it never opened, listed or grepped claims evidence it lacks."""
    cited: dict[str, None] = {}
    for row in verdict.sweep:
        for match in _GRANTED_PATH.finditer(row.checked):
            cited.setdefault(match.group(1).rstrip("/."), None)
    return [path for path in cited if path not in evidence]
