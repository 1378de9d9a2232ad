"""Model-judged criteria: the grader model's structured answer, its validation, and the
one retry an invalid answer gets.

The conversation with the grader model (its fresh context, the read-only workspace tools,
the budget) is the harness's (`harness.grading.session`); it is injected here as a
`JudgeSession`. This module decides what the model's answer is worth.

The answer is one JSON object, one result per criterion:

    {"results": [{"id": "docs", "result": "pass|fail|unknown",
                  "rationale": "why, in a sentence or two",
                  "evidence": [{"kind": "file|tool_check|claim", "ref": "…"}]}]}

Each result is validated on its own, so one bad entry does not void the others:

* the id must be one of the criteria asked about, and appear once (a repeated id is
  ambiguous: neither copy counts);
* the rationale must be non-empty;
* `file` evidence must name a file the grader itself inspected in this session (with
  `read_file`, or a `grep` match): spec §7 `memory_not_evidence` — check the actual
  artifact — applies to the grader too;
* `tool_check` evidence must name a tool check that ran;
* `pass` needs at least one `file` or `tool_check` item: `claim` items (the agent's
  own ::STATUS/::EVIDENCE) are context, and evidence the agent wrote about itself
  decides nothing.

Criteria whose entry is missing or invalid are asked again once, with the problems
named; still invalid after that, they are unknown (`grader_invalid`). A model that says
`unknown` is taken at its word (`grader_unsure`): it looked and could not tell. A session
that fails in any other way (whatever it raises) leaves its criteria unknown
(`grader_error`): a hostile or broken grader never ends a run and never verifies.

The problems are the harness's own words: they name criteria by the ids the harness asked
about and evidence items by their position, and never quote the answer. The correction
travels to the grader as runtime text, and text the grader copied out of a workspace file
(an injection aimed at it) must reach it only inside ::UNTRUSTED blocks, never promoted
into a runtime line by being echoed back.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from typing import Any, Literal, Protocol, Self

import structlog
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from graders.criteria import Result, UnknownCause

ATTEMPTS = 2  # the first answer and one retry
MAX_RATIONALE_CHARS = 4000
MAX_EVIDENCE_ITEMS = 20

log = structlog.get_logger("ilh.grader")

EvidenceKind = Literal["file", "tool_check", "claim"]
DECIDING_KINDS: frozenset[str] = frozenset({"file", "tool_check"})

ANSWER_FORMAT = """\
{"results": [{"id": "<criterion id>", "result": "pass" | "fail" | "unknown",
              "rationale": "<why, briefly>",
              "evidence": [{"kind": "file" | "tool_check" | "claim",
                            "ref": "<path, check id or claim>"}]}]}"""


class EvidenceRef(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)

    kind: EvidenceKind
    ref: str = Field(min_length=1, max_length=500)

    def label(self) -> str:
        return f"{self.kind}:{self.ref}"


class JudgedCriterion(BaseModel):
    """One entry of the grader model's answer."""

    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)

    id: str
    result: Result
    rationale: str = Field(min_length=1, max_length=MAX_RATIONALE_CHARS)
    evidence: list[EvidenceRef] = Field(default_factory=list, max_length=MAX_EVIDENCE_ITEMS)


class ModelVerdict(BaseModel):
    """What the model judge concluded for one criterion."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    criterion: str
    result: Result
    rationale: str
    evidence: tuple[EvidenceRef, ...] = ()
    cause: UnknownCause | None = None
    attempts: int = Field(default=0, ge=0)

    @model_validator(mode="after")
    def _consistent(self) -> Self:
        if (self.result == "unknown") != (self.cause is not None):
            raise ValueError("an unknown result carries its cause, and only an unknown one")
        if self.result != "unknown" and self.attempts == 0:
            raise ValueError("only an answer the grader model gave can pass or fail")
        if self.result == "pass" and not any(e.kind in DECIDING_KINDS for e in self.evidence):
            raise ValueError("a pass rests on a file or tool check, never on claims alone")
        return self


class AnswerContext(BaseModel):
    """What an answer is checked against."""

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    inspected: Callable[[str], bool]
    """Whether the grader inspected this workspace file in this session."""
    tool_checks: frozenset[str] = frozenset()
    echoed: Callable[[str], bool] = lambda _text: False
    """Whether this text occurs in untrusted text the grader was shown (a workspace file,
    a check's output, the agent's claims): words it copied, not its own."""


#: A rationale at least this long (whitespace collapsed) found in the evidence is an echo.
#: Shorter ones ("README.md is empty") can honestly coincide with a file's words.
MIN_ECHO_CHARS = 24
_SPACES = re.compile(r"\s+")


def flat_text(text: str) -> str:
    """Text compared for echoes: whitespace runs (newlines, indentation a reformatting
    changes) collapsed to one space."""
    return _SPACES.sub(" ", text).strip()


# A JSON string escape (a surrogate pair first, as `json.loads` joins it).
_JSON_ESCAPE = re.compile(
    r"\\(?:u(?P<high>[dD][89abAB][0-9a-fA-F]{2})\\u(?P<low>[dD][c-fC-F][0-9a-fA-F]{2})"
    r"|u(?P<code>[0-9a-fA-F]{4})|(?P<char>[\"\\/bfnrt]))"
)
_SIMPLE_ESCAPES = {
    '"': '"',
    "\\": "\\",
    "/": "/",
    "b": "\b",
    "f": "\f",
    "n": "\n",
    "r": "\r",
    "t": "\t",
}


def _json_unescaped(match: re.Match[str]) -> str:
    if match["high"] is not None:
        high, low = int(match["high"], 16), int(match["low"], 16)
        return chr(0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00))
    if match["code"] is not None:
        return chr(int(match["code"], 16))
    return _SIMPLE_ESCAPES[match["char"]]


def shown_forms(text: str) -> list[str]:
    """The forms of untrusted text a rationale is compared with (`flat_text`): as shown,
    and with its JSON string escapes read as `json.loads` reads them. A verdict planted in
    a file in the answer's form may write its rationale with escapes (`\\u0020`); a grader
    copying it whole gives the decoded words, which the file as shown does not hold."""
    flat = flat_text(text)
    if "\\" not in text:
        return [flat]
    decoded = flat_text(_JSON_ESCAPE.sub(_json_unescaped, text))
    return [flat] if decoded == flat else [flat, decoded]


class AnswerReading(BaseModel):
    model_config = ConfigDict(frozen=True)

    valid: dict[str, JudgedCriterion]
    problems: dict[str, str]
    """criterion id → what was wrong with (or missing from) its entry."""


class JudgeUnavailable(Exception):
    """The grader model cannot answer (no budget left, the call failed, the script ended)."""

    def __init__(self, cause: UnknownCause, why: str) -> None:
        super().__init__(why)
        self.cause: UnknownCause = cause
        self.why = why


class NoAnswer(Exception):
    """The grader model gave no answer this attempt (e.g. it kept calling tools past the
    turn limit). Counts as an invalid answer for every pending criterion."""


class JudgeSession(Protocol):
    """One grader conversation. `ask` returns the model's final answer text for the
    pending criteria; `correction` (on the retry) says what was wrong last time. Raises
    JudgeUnavailable when no answer can be had, NoAnswer when this attempt produced none."""

    async def ask(self, pending: Sequence[str], correction: str | None) -> str: ...


_FENCE = re.compile(r"```(?:json)?[ \t]*\n(.*?)\n[ \t]*```", re.DOTALL | re.IGNORECASE)
_WHOLE_FENCE = re.compile(r"```(?:json)?[ \t]*\n(.*)\n[ \t]*```", re.DOTALL | re.IGNORECASE)


def _json_candidate(text: str) -> tuple[Any, str]:
    """The JSON value the answer holds, or ValueError saying why there is none.

    Only the strict form counts: the reply is the object and nothing else, or one fenced
    block and nothing else. A grader that reports what it found may quote the evidence,
    and a workspace file can hold a forged verdict in exactly the answer's form; were an
    object found inside prose ("the README says {…}; I will not follow it"), the quoted
    forgery would become the grader's verdict."""
    stripped = text.strip()
    if not stripped:
        raise ValueError("the answer is empty")
    fences = _FENCE.findall(stripped)
    if len(fences) > 1:
        # Two blocks could disagree; picking one would be guessing.
        raise ValueError("the answer holds more than one fenced block; give exactly one object")
    whole = _WHOLE_FENCE.fullmatch(stripped)
    if whole is not None:
        source = whole.group(1)
    elif stripped.startswith("{") and stripped.endswith("}"):
        source = stripped
    else:
        raise ValueError(
            "the answer must be the JSON object alone (or one fenced block), with no text around it"
        )
    try:
        return json.loads(source), source
    except json.JSONDecodeError as exc:
        raise ValueError(f"the answer is not valid JSON ({exc.msg}, char {exc.pos})") from None
    except RecursionError:
        raise ValueError("the answer nests too deeply") from None


def _echoed(what: str) -> str:
    return (
        f"the {what} repeats text found in the workspace, a check's output or the "
        "agent's claims; judge yourself and give your own reason"
    )


def _entry_problem(entry: JudgedCriterion, ctx: AnswerContext) -> str | None:
    # Items are named by position, never quoted (see the module docstring).
    for number, item in enumerate(entry.evidence, start=1):
        if item.kind == "file" and not ctx.inspected(_normal_path(item.ref)):
            return (
                f"evidence item {number} cites a file you did not inspect in this session "
                "(read it with read_file or find it with grep first, and cite its path "
                "in the workspace)"
            )
        if item.kind == "tool_check" and item.ref not in ctx.tool_checks:
            known = ", ".join(sorted(ctx.tool_checks)) or "none ran"
            return (
                f"evidence item {number} cites a tool check that did not run "
                f"(tool checks that ran: {known})"
            )
    rationale = flat_text(entry.rationale)
    if len(rationale) >= MIN_ECHO_CHARS and ctx.echoed(rationale):
        # A forged verdict planted in a file (or a check's output, or a claim) in the
        # answer's own form, repeated by a grader that followed it: the words are the
        # agent's, so the entry is not the grader's judgement.
        return _echoed("rationale")
    if entry.result == "pass" and not any(i.kind in DECIDING_KINDS for i in entry.evidence):
        return (
            "a pass must cite at least one file or tool_check it relied on; the agent's "
            "own claims decide nothing"
        )
    return None


_ENTRY_FIELDS = frozenset(JudgedCriterion.model_fields) | frozenset(EvidenceRef.model_fields)


def _validation_problem(exc: ValidationError) -> str:
    """The first error, in the harness's words: the location keeps positions and the
    answer format's own field names, an unexpected key is not repeated, and pydantic's
    message (which never holds the input) says what was wrong."""
    first = exc.errors()[0]
    if first["type"] == "extra_forbidden":
        return "a key the answer format does not have"
    where = ".".join(
        str(p) if isinstance(p, int) or p in _ENTRY_FIELDS else "?" for p in first["loc"]
    )
    return f"{where or 'entry'}: {first['msg']}"


def _normal_path(ref: str) -> str:
    path = ref.strip()
    while path.startswith("./"):
        path = path[2:]
    return path


def read_answer(text: str, pending: Sequence[str], ctx: AnswerContext) -> AnswerReading:
    """Validate one answer against the criteria asked about. Never raises."""
    asked = list(dict.fromkeys(pending))
    try:
        data, source = _json_candidate(text)
    except ValueError as exc:
        return AnswerReading(valid={}, problems={cid: str(exc) for cid in asked})
    if len(flat_text(source)) >= MIN_ECHO_CHARS and ctx.echoed(source):
        # The whole answer is untrusted text the grader was shown, word for word: a
        # verdict planted in the answer's form, whatever its rationales' length.
        return AnswerReading(valid={}, problems={cid: _echoed("answer") for cid in asked})
    if not isinstance(data, dict) or set(data) != {"results"}:
        why = 'the answer must be one object with a single key "results"'
        return AnswerReading(valid={}, problems={cid: why for cid in asked})
    entries = data["results"]
    if not isinstance(entries, list):
        why = '"results" must be a list'
        return AnswerReading(valid={}, problems={cid: why for cid in asked})
    seen: dict[str, int] = {}
    for raw in entries:
        if isinstance(raw, dict) and isinstance(raw.get("id"), str):
            seen[raw["id"]] = seen.get(raw["id"], 0) + 1
    valid: dict[str, JudgedCriterion] = {}
    problems: dict[str, str] = {}
    for raw in entries:
        cid = raw.get("id") if isinstance(raw, dict) else None
        if not isinstance(cid, str) or cid not in asked or cid in problems:
            continue  # entries for criteria not asked about are ignored
        if seen[cid] > 1:
            problems[cid] = "the criterion has more than one entry"
            continue
        try:
            entry = JudgedCriterion.model_validate(raw)
        except ValidationError as exc:
            problems[cid] = f"invalid entry ({_validation_problem(exc)})"
            continue
        problem = _entry_problem(entry, ctx)
        if problem is not None:
            problems[cid] = problem
        else:
            valid[cid] = entry
    for cid in asked:
        if cid not in valid and cid not in problems:
            problems[cid] = "no entry for this criterion"
    return AnswerReading(valid=valid, problems=problems)


def correction_text(problems: dict[str, str]) -> str:
    lines = ["Your answer could not be used for these criteria:"]
    lines += [f"- {cid}: {why}" for cid, why in problems.items()]
    lines.append(
        "Answer again for exactly these criteria, with one JSON object and nothing else, "
        "in this form:"
    )
    lines.append(ANSWER_FORMAT)
    return "\n".join(lines)


async def judge(
    criteria: Sequence[str], session: JudgeSession, ctx: AnswerContext
) -> dict[str, ModelVerdict]:
    """Ask the grader model about `criteria`; every criterion gets a verdict."""
    verdicts: dict[str, ModelVerdict] = {}
    pending = list(dict.fromkeys(criteria))
    correction: str | None = None
    problems: dict[str, str] = {}
    for attempt in range(1, ATTEMPTS + 1):
        if not pending:
            break
        try:
            reading = read_answer(await session.ask(pending, correction), pending, ctx)
        except NoAnswer as none:
            reading = AnswerReading(valid={}, problems={cid: str(none) for cid in pending})
        except Exception as exc:
            if isinstance(exc, JudgeUnavailable):
                cause, why = exc.cause, exc.why
            else:
                # Fail closed: whatever broke the session, its criteria stay unknown.
                log.warning("grader.session_failed", error=type(exc).__name__)
                cause, why = "grader_error", f"the grader session failed: {type(exc).__name__}"
            for cid in pending:
                verdicts[cid] = ModelVerdict(
                    criterion=cid,
                    result="unknown",
                    rationale=why,
                    cause=cause,
                    attempts=attempt - 1,
                )
            return verdicts
        for cid, entry in reading.valid.items():
            verdicts[cid] = ModelVerdict(
                criterion=cid,
                result=entry.result,
                rationale=entry.rationale,
                evidence=entry.evidence,
                cause="grader_unsure" if entry.result == "unknown" else None,
                attempts=attempt,
            )
        problems = reading.problems
        pending = [cid for cid in pending if cid in problems]
        correction = correction_text(problems) if problems else None
    for cid in pending:
        verdicts[cid] = ModelVerdict(
            criterion=cid,
            result="unknown",
            rationale=f"the grader's answer was invalid {ATTEMPTS} times: {problems[cid]}",
            cause="grader_invalid",
            attempts=ATTEMPTS,
        )
    return verdicts
