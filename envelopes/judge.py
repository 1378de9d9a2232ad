"""`::JUDGE{v5.0}` blocks: the model, the frozen serialization and its linter checks
(SPEC-v5.0.md Part II §4).

The canonical form is four lines; the body may sit flush-left under the header (as in
the spec) or be indented:

    ::JUDGE{v5.0}
    V:[int=0.80,cap=0.60,csq=0.70,rel=0.55,cer=0.90,aut=0.75,rev=0.85,evd=0.80,sov=0.95,ine=0.60,ext=0.90]
    M:M2|conf:0.87
    R:authorized_config_change_reversible_audit_trail_kept

Codes: E300 when a line matches no iLang production (a broken header, a prose line, an
unclosed or nested vector, a full-width separator, a field that is not `key:value`);
E303 for every break of the frozen schema (extra or missing lines and fields, dims
omitted, reordered, duplicated or unknown, values off the two-decimal [0.00, 1.00]
form, modes outside M1..M8, an over-long or empty R, a version other than v5.0, and the
§4 abstain rule, which the spec words as `parser_reject`).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping, Sequence
from typing import Literal, NamedTuple

from pydantic import BaseModel, ConfigDict, StrictFloat, ValidationError, field_validator

from envelopes.errors import Finding, IlangError
from envelopes.judge_function import (
    DIMENSIONS,
    MODE_NAMES,
    PRE_MODE_MAP,
    Decision,
    Mode,
    abstain_modes,
    action_score,
    decide,
    f_v5,
    f_v5_trace,
    unit_problem,
)

__all__ = [
    "DIMENSIONS",
    "MODE_NAMES",
    "RATIONALE_MAX",
    "Decision",
    "Judge",
    "Mode",
    "action_score",
    "decide",
    "f_v5",
    "f_v5_trace",
    "judge_findings",
]

RATIONALE_MAX = 120
"""§4 `R_single_line|max=120_chars`, counted in Unicode code points."""

_VERSION = "v5.0"
_HEADER_PREFIX = "::JUDGE"
_BODY_KEY = re.compile(r"([A-Za-z_][A-Za-z0-9_]*):")
_FULL_WIDTH_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_]*[：｜]")
_UNIT_TEXT = re.compile(r"(?:0\.[0-9]{2}|1\.00)\Z")
_TWO_DECIMALS = re.compile(r"[0-9]+\.[0-9]{2}\Z")
_NUMBER_LIKE = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)\Z")
_MODE_ID = re.compile(r"M[1-8]\Z")
_FIELD_ORDER = ("V", "M", "R")


class _Line(NamedTuple):
    number: int
    text: str
    """The line without its indentation or trailing whitespace."""
    col: int
    """1-based column of `text[0]` in the source line."""


def _unit_text_problem(raw: str) -> str | None:
    """Why the lexical value `raw` is not `0.dd` or `1.00`, or None."""
    if _UNIT_TEXT.match(raw):
        return None
    if _TWO_DECIMALS.match(raw):
        return f"{raw} is outside [0.00, 1.00]"
    if _NUMBER_LIKE.match(raw):
        return f"{raw} is not a value in [0.00, 1.00] with exactly 2 decimals"
    return f"{raw!r} is not a number"


def _is_forbidden_char(ch: str) -> bool:
    # Controls, format characters (zero-width, bidi overrides) and line/paragraph
    # separators: R is one visible line, and these can hide or split it.
    category = unicodedata.category(ch)
    return category.startswith("C") or category in ("Zl", "Zp")


# `\s` is the regex engine's `str.isspace`, found in one search instead of a call per character.
_SPACE = re.compile(r"\s")


def _rationale_problem(text: str) -> tuple[str, int] | None:
    """Why `text` cannot be an R value, with the 0-based offset to point at, or None."""
    if not text.strip():
        return "R must carry a rationale of 1 to 120 characters", 0
    # A printable text (`str.isprintable`, in C) holds no control, format or separator.
    if not text.isprintable():
        for index, ch in enumerate(text):
            if _is_forbidden_char(ch):
                return f"R contains the control or separator character U+{ord(ch):04X}", index
    if "|" in text:
        # A `|` turns the line into a B3 structured field (Part III §1.2), i.e. extra
        # fields on R; §4 rejects extra fields, so R is read fail-closed as one field.
        return "R is a single field; `|` would add fields to it", text.index("|")
    if text != text.strip():
        return "R must not begin or end with whitespace", 0
    if len(text) > RATIONALE_MAX:
        return f"R is {len(text)} characters; the maximum is {RATIONALE_MAX}", RATIONALE_MAX
    return None


class Judge(BaseModel):
    """One `::JUDGE{v5.0}` block.

    The model enforces the lexical schema (11 two-decimal values in [0, 1], a mode from
    M1..M8, a two-decimal conf, a 1–120 character single-line R). It does not enforce the
    abstain rule or mode == f_v5(vector): those are judgments about a block, reported by
    `judge_findings` (and the abstain rule is also rejected by `parse`).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    version: Literal["5.0"] = "5.0"
    vector: tuple[StrictFloat, ...]
    """The 11 values in DIMENSIONS order."""
    mode: Mode
    conf: StrictFloat | None = None
    """Diagnostic only; it never alters the mode (§3 TWO-LAYER)."""
    rationale: str

    @field_validator("vector")
    @classmethod
    def _check_vector(cls, vector: tuple[float, ...]) -> tuple[float, ...]:
        if len(vector) != len(DIMENSIONS):
            raise ValueError(f"the vector has exactly {len(DIMENSIONS)} values")
        for dim, value in zip(DIMENSIONS, vector, strict=True):
            problem = unit_problem(value)
            if problem is not None:
                raise ValueError(f"{dim}: {problem}")
        return tuple(value + 0.0 for value in vector)

    @field_validator("conf")
    @classmethod
    def _check_conf(cls, conf: float | None) -> float | None:
        if conf is None:
            return None
        problem = unit_problem(conf)
        if problem is not None:
            raise ValueError(f"conf: {problem}")
        return conf + 0.0

    @field_validator("rationale")
    @classmethod
    def _check_rationale(cls, rationale: str) -> str:
        problem = _rationale_problem(rationale)
        if problem is not None:
            raise ValueError(problem[0])
        return rationale

    # -- views -------------------------------------------------------------------------

    def as_mapping(self) -> dict[str, float]:
        """The vector keyed by dimension abbreviation."""
        return dict(zip(DIMENSIONS, self.vector, strict=True))

    def decision(self) -> Decision:
        """What f_v5 decides for this block's vector."""
        return decide(self.as_mapping())

    @classmethod
    def from_vector(
        cls, vector: Mapping[str, float], rationale: str, conf: float | None = None
    ) -> Judge:
        """The block whose mode is f_v5(vector): the only mode §3 lets a block carry."""
        values = tuple(vector[dim] for dim in DIMENSIONS)
        return cls(vector=values, mode=f_v5(vector), conf=conf, rationale=rationale)

    # -- serialization -----------------------------------------------------------------

    def render(self) -> str:
        """The frozen four-line form (no trailing newline)."""
        items = ",".join(
            f"{dim}={value:.2f}" for dim, value in zip(DIMENSIONS, self.vector, strict=True)
        )
        mode_line = f"M:{self.mode.value}"
        if self.conf is not None:
            mode_line += f"|conf:{self.conf:.2f}"
        return "\n".join(
            (f"::JUDGE{{v{self.version}}}", f"V:[{items}]", mode_line, f"R:{self.rationale}")
        )

    @classmethod
    def parse(cls, text: str, line: int = 1) -> Judge:
        """Read one whole block; `line` is the number of the first line of `text`.

        Blank lines before the header and after the block are ignored; a blank line
        inside it is not (the frozen form has no blank lines)."""
        raw_lines = [raw.removesuffix("\r") for raw in text.split("\n")]
        start = next((i for i, raw in enumerate(raw_lines) if raw.strip()), None)
        if start is None:
            raise IlangError("E300", "expected a ::JUDGE{v5.0} block, found no text", line, 1)
        end = max(i for i, raw in enumerate(raw_lines) if raw.strip()) + 1
        header = _split_indent(raw_lines[start], line + start)
        version_text = _read_header(header)
        body = _body_lines(raw_lines[start + 1 : end], line + start + 1, header)
        return _build(version_text, header.number, header.col + len("::JUDGE{"), body)

    @classmethod
    def from_body(
        cls,
        header: str,
        body: Sequence[tuple[int, str]],
        *,
        header_line: int | None = None,
    ) -> Judge:
        """Validate a block the document reader has already cut out: `header` is the
        text between the braces (`v5.0`), `body` the (1-based line number, text) pairs.
        Text is normally stripped, and columns are then relative to it; text passed with
        its indentation gives source columns. Trailing blank pairs are ignored, inner
        ones rejected. `header_line` defaults to the line before the first body line."""
        if header_line is None:
            header_line = body[0][0] - 1 if body else 1
        lines = [_Line(number, text.strip(), 1 + _indent_width(text)) for number, text in body]
        while lines and not lines[-1].text:
            lines.pop()
        for item in lines:
            if not item.text:
                raise _blank_inside(item.number)
        return _build(header, header_line, 1, lines)


# -- block reading ---------------------------------------------------------------------


def _indent_width(raw: str) -> int:
    return len(raw) - len(raw.lstrip())


def _split_indent(raw: str, number: int) -> _Line:
    return _Line(number, raw.strip(), 1 + _indent_width(raw))


def _blank_inside(number: int) -> IlangError:
    return IlangError(
        "E303", "blank line inside ::JUDGE: the frozen form is four consecutive lines", number
    )


def _read_header(header: _Line) -> str:
    """The text between the header's braces; E300/E303 for a broken header line."""
    text, number, col = header.text, header.number, header.col
    if not text.startswith(_HEADER_PREFIX) or text[len(_HEADER_PREFIX) :][:1] not in ("{", ""):
        raise IlangError("E300", "expected the header line ::JUDGE{v5.0}", number, col)
    rest = text[len(_HEADER_PREFIX) :]
    brace_col = col + len(_HEADER_PREFIX)
    if not rest.startswith("{"):
        raise IlangError("E300", "missing `{` after ::JUDGE", number, brace_col)
    close = rest.find("}")
    if close < 0:
        raise IlangError("E300", "unclosed `{` in the ::JUDGE header", number, brace_col)
    content = rest[1:close]
    if "{" in content:
        nested = brace_col + 1 + content.index("{")
        raise IlangError("E300", "nested `{` in the ::JUDGE header", number, nested)
    trailing = rest[close + 1 :]
    if trailing.strip():
        offset = brace_col + close + 1 + _indent_width(trailing)
        raise IlangError(
            "E303",
            "text after the ::JUDGE header: V, M and R each take their own line",
            number,
            offset,
        )
    return content


def _body_lines(raws: Sequence[str], first_number: int, header: _Line) -> list[_Line]:
    lines: list[_Line] = []
    indent: str | None = None
    header_width = header.col - 1
    for offset, raw in enumerate(raws):
        number = first_number + offset
        if not raw.strip():
            raise _blank_inside(number)
        own_indent = raw[: _indent_width(raw)]
        if len(own_indent) < header_width:
            raise IlangError("E300", "body line indented less than its ::JUDGE header", number, 1)
        if indent is not None and own_indent != indent:
            raise IlangError("E300", "inconsistent indentation in the ::JUDGE body", number, 1)
        indent = own_indent
        lines.append(_split_indent(raw, number))
    return lines


def _build(version_text: str, header_number: int, version_col: int, body: list[_Line]) -> Judge:
    _check_version(version_text, header_number, version_col)
    fields = _fields_in_order(body, header_number)
    vector = _read_vector(fields["V"])
    mode, conf, mode_col = _read_mode_line(fields["M"])
    rationale = _read_rationale(fields["R"])
    _check_abstain(vector, mode, fields["M"].number, mode_col)
    try:
        return Judge(
            vector=tuple(vector[dim] for dim in DIMENSIONS),
            mode=mode,
            conf=conf,
            rationale=rationale,
        )
    except ValidationError as error:  # pragma: no cover - the readers check all of it
        raise IlangError("E303", str(error), header_number, 1) from error


def _check_version(text: str, number: int, col: int) -> None:
    if text == _VERSION:
        return
    if "|" in text:
        raise IlangError(
            "E303", "extra fields in the ::JUDGE header: it carries only v5.0", number, col
        )
    raise IlangError(
        "E303", f"::JUDGE version {text!r} is not v5.0 (the frozen schema)", number, col
    )


def _body_key(item: _Line) -> str:
    """The line's key; E300 when the line is no body form a ::JUDGE could hold."""
    match = _BODY_KEY.match(item.text)
    if match:
        return match.group(1)
    if item.text.startswith(("[", "::")):
        # Legal B5/B7/B8 forms, but the frozen schema has room for none of them.
        raise IlangError(
            "E303", "extra line in ::JUDGE: only V, M and R lines", item.number, item.col
        )
    if _FULL_WIDTH_KEY.match(item.text):
        raise IlangError(
            "E300",
            "full-width `：` or `｜` as a structural separator: use ASCII",
            item.number,
            item.col,
        )
    raise IlangError(
        "E300", "not a body line: ::JUDGE takes V:, M: and R: fields only", item.number, item.col
    )


def _fields_in_order(body: list[_Line], header_number: int) -> dict[str, _Line]:
    """Map V/M/R to their lines, insisting on exactly those three, in that order."""
    found: dict[str, _Line] = {}
    for index, item in enumerate(body):
        key = _body_key(item)
        if key in found:
            raise IlangError("E303", f"duplicated {key} line", item.number, item.col)
        if key not in _FIELD_ORDER:
            raise IlangError(
                "E303", f"extra field {key}: ::JUDGE has only V, M and R", item.number, item.col
            )
        expected = _FIELD_ORDER[index]
        if key != expected:
            raise IlangError(
                "E303",
                f"{key} line out of order: the frozen order is V, M, R ({expected} expected)",
                item.number,
                item.col,
            )
        found[key] = item
    if len(found) < len(_FIELD_ORDER):
        missing = _FIELD_ORDER[len(found)]
        after = body[-1].number if body else header_number
        raise IlangError("E303", f"{missing} line missing from ::JUDGE", after + 1, 1)
    return found


def _read_vector(item: _Line) -> dict[str, float]:
    value = item.text[2:]
    base = item.col + 2
    if not value.startswith("["):
        raise IlangError("E303", "V must be the vector [int=0.00,...,ext=0.00]", item.number, base)
    close = value.find("]")
    if close < 0:
        raise IlangError("E300", "unclosed vector: missing `]`", item.number, base)
    inner = value[1:close]
    if "[" in inner:
        nested = base + 1 + inner.index("[")
        raise IlangError("E300", "nested `[` in the vector: B4 lists are flat", item.number, nested)
    if value[close + 1 :]:
        raise IlangError("E303", "extra text after the vector's `]`", item.number, base + close + 1)
    return _read_items(inner, item.number, base + 1)


def _read_items(inner: str, number: int, first_col: int) -> dict[str, float]:
    pieces = inner.split(",")
    keys = [piece.partition("=")[0] for piece in pieces]
    values: dict[str, float] = {}
    col = first_col
    for index, piece in enumerate(pieces):
        key, value_col = _check_item(piece, index, keys, number, col)
        raw = piece.partition("=")[2]
        problem = _unit_text_problem(raw)
        if problem is not None:
            raise IlangError("E303", f"{key}: {problem}", number, value_col)
        values[key] = float(raw)
        col += len(piece) + 1
    if len(pieces) < len(DIMENSIONS):
        missing = DIMENSIONS[len(pieces)]
        raise IlangError(
            "E303", f"omitted dim {missing}: all 11 dims are always present", number, col - 1
        )
    return values


def _check_item(piece: str, index: int, keys: list[str], number: int, col: int) -> tuple[str, int]:
    """Check one `dim=value` item's shape and position; return its dim and value column."""
    if not piece:
        raise IlangError("E300", "empty item in the vector", number, col)
    if _SPACE.search(piece):
        raise IlangError("E303", "whitespace inside the vector", number, col)
    key, sep, _ = piece.partition("=")
    if not sep:
        raise IlangError("E303", f"vector item {piece!r} is not dim=value", number, col)
    if index >= len(DIMENSIONS):
        raise IlangError("E303", "extra item: the vector has exactly 11 dims", number, col)
    expected = DIMENSIONS[index]
    if key != expected:
        raise IlangError("E303", _misplaced_dim(key, expected, keys[:index], keys), number, col)
    return key, col + len(key) + 1


def _misplaced_dim(key: str, expected: str, before: list[str], keys: list[str]) -> str:
    if key in before:
        return f"duplicated dim {key}"
    if key == "drift":
        return "dim drift was renamed ine (inertia, polarity inverted) in v5 (DIM-10-RENAME)"
    if key not in DIMENSIONS:
        return f"unknown dim {key!r}: the dims are {','.join(DIMENSIONS)}"
    if expected not in keys:
        return f"omitted dim {expected}: all 11 dims are always present"
    return f"dim {key} out of order: position {len(before) + 1} is {expected}"


def _read_mode_line(item: _Line) -> tuple[Mode, float | None, int]:
    """(mode, conf, column of the mode) from `M:Mn` or `M:Mn|conf:0.dd`."""
    base = item.col + 2
    segments = item.text[2:].split("|")
    mode = _read_mode(segments[0], item.number, base)
    conf: float | None = None
    col = base + len(segments[0]) + 1
    for segment in segments[1:]:
        conf = _read_conf(segment, conf, item.number, col)
        col += len(segment) + 1
    return mode, conf, base


def _read_mode(text: str, number: int, col: int) -> Mode:
    if _MODE_ID.match(text):
        return Mode(text)
    if text in PRE_MODE_MAP:
        message = (
            f"PRE mode name {text} is superseded (≈{PRE_MODE_MAP[text]}): "
            "a ::JUDGE carries an id from M1..M8"
        )
    elif text in MODE_NAMES.values():
        ids = {name: mode for mode, name in MODE_NAMES.items()}
        message = f"mode name {text} is not a mode id: write {ids[text]}"
    else:
        message = f"mode {text!r} is outside the closed set M1..M8"
    raise IlangError("E303", message, number, col)


def _read_conf(segment: str, seen: float | None, number: int, col: int) -> float:
    key, sep, raw = segment.partition(":")
    if not sep:
        raise IlangError("E300", f"field {segment!r} is not key:value", number, col)
    if key != "conf":
        raise IlangError("E303", f"extra field {key!r} on the M line: only conf", number, col)
    if seen is not None:
        raise IlangError("E303", "duplicated conf on the M line", number, col)
    problem = _unit_text_problem(raw)
    if problem is not None:
        raise IlangError("E303", f"conf: {problem}", number, col + len("conf:"))
    return float(raw)


def _read_rationale(item: _Line) -> str:
    value = item.text[2:]
    text = value.lstrip()
    problem = _rationale_problem(text)
    if problem is not None:
        message, offset = problem
        col = item.col + 2 + (len(value) - len(text)) + offset
        raise IlangError("E303", message, item.number, col)
    return text


def _abstain_message(allowed: frozenset[Mode], mode: Mode) -> str:
    valid = " or ".join(sorted(allowed))
    return (
        f"abstain rule (Part II §4, erratum 2026-09-14): cer<0.30 or evd<0.25, "
        f"so M must be {valid}, not {mode}"
    )


def _check_abstain(vector: Mapping[str, float], mode: Mode, number: int, col: int) -> None:
    allowed = abstain_modes(vector)
    if allowed is not None and mode not in allowed:
        # §4 words this one as `any_other_mode⇒parser_reject`, so it fails the parse.
        raise IlangError("E303", _abstain_message(allowed, mode), number, col)


# -- linter checks ---------------------------------------------------------------------


def judge_findings(j: Judge, line: int = 1, *, indent: int = 0) -> list[Finding]:
    """Semantic findings for a block whose header is on `line` (body `indent` columns in).

    Findings point at the mode on the M line. One problem gives one finding: an abstain
    violation already implies mode != f_v5, so it is reported once, naming both rules.
    """
    m_line, mode_col = line + 2, indent + 3
    decision = j.decision()
    expected = f"f_v5 gives {decision.mode} ({MODE_NAMES[decision.mode]}) at {decision.explain()}"
    allowed = abstain_modes(j.as_mapping())
    if allowed is not None and j.mode not in allowed:
        message = f"{_abstain_message(allowed, j.mode)}; {expected}"
        return [Finding("E303", message, m_line, mode_col)]
    if j.mode != decision.mode:
        message = (
            f"mode {j.mode} is not f_v5 of the vector: {expected}; "
            "the decision layer allows no discretion (Part II §3)"
        )
        return [Finding("E303", message, m_line, mode_col)]
    return []
