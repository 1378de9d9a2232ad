"""F0: the certification contract (DIYLISIS HandoffContract), its per-field provenance
(Rule 29), the activation edge, and the answers file that settles gates in scripts.

Where each field comes from decides its provenance. A field a person types on the
command line is their own words: user-stated. A field read from a contract file
(`--contract FILE`, written by whoever prepared the certification, often a model) is
AI-authored unless it can be traced to the user's own words given with `--utterance`
(a fair paraphrase counts: most of its content words appear there). Only the tracked
fields carry provenance: activity, execution_scope, stop_condition, allowed_sources.
An AI-authored field must be confirmed or corrected before Phase 1.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from graders.refuter import ADVISORIES
from harness.certify.sources import unusable_source
from harness.inputs.errors import InputError, parse_json, read_utf8
from harness.inputs.task_file import locate, parse_toml

FieldProvenance = Literal["user_stated", "ai_authored"]
TRACKED = ("activity", "execution_scope", "stop_condition", "allowed_sources")
MINIMAL_VERB = "Read {locator} and execute it"
PARAPHRASE_SHARE = 0.8


class ContractFile(BaseModel):
    """`--contract FILE` (TOML): the same fields as the command line."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    target: str | None = Field(default=None, min_length=1)
    role: str | None = Field(default=None, min_length=1)
    activity: str | None = Field(default=None, min_length=1)
    sources: list[str] = Field(default_factory=list)
    verify: list[str] = Field(default_factory=list)
    scope: str | None = Field(default=None, min_length=1)
    stop: str | None = Field(default=None, min_length=1)
    certificate: str | None = Field(default=None, min_length=1)
    verb: str | None = Field(default=None, min_length=1)

    @field_validator("sources", "verify")
    @classmethod
    def _no_blank(cls, values: list[str]) -> list[str]:
        if any(not v.strip() for v in values):
            raise ValueError("entries may not be blank")
        return values


@dataclass(frozen=True)
class Contract:
    """The declared contract. `sources` are paths as given, resolved against `base`."""

    role: str
    activity: str | None
    sources: tuple[str, ...]
    verify: tuple[str, ...]
    scope: str | None
    stop: str | None
    certificate: str | None
    verb: str | None
    base: Path
    utterance: tuple[str, ...] = ()
    provenance: dict[str, FieldProvenance] = field(default_factory=dict)
    confirmed: frozenset[str] = frozenset()

    def value_of(self, name: str) -> str:
        """A tracked field as text (what provenance and the refuter compare)."""
        if name == "allowed_sources":
            return "\n".join(self.sources)
        got = {
            "activity": self.activity,
            "execution_scope": self.scope,
            "stop_condition": self.stop,
        }.get(name)
        return got or ""

    def awaiting(self) -> list[str]:
        """AI-authored fields nobody has confirmed or corrected yet."""
        return [
            name
            for name in TRACKED
            if self.provenance.get(name) == "ai_authored" and name not in self.confirmed
        ]

    def source_paths(self) -> list[Path]:
        return [(self.base / s) if not Path(s).is_absolute() else Path(s) for s in self.sources]

    def shown(self) -> dict[str, str]:
        """The contract's fields as the refuter sees them."""
        return {
            "role": self.role,
            "activity": self.activity or "",
            "allowed_sources": "\n".join(self.sources),
            "verification_commands": "\n".join(self.verify),
            "execution_scope": self.scope or "",
            "stop_condition": self.stop or "",
        }


# -- provenance -------------------------------------------------------------------------


def _normal(text: str) -> str:
    text = unicodedata.normalize("NFKC", text).casefold()
    return re.sub(r"[\s\W_]+", " ", text).strip()


def traceable(value: str, utterance: Sequence[str]) -> bool:
    """Whether `value` is the user's own words: found in the utterance, or a fair
    paraphrase (at least PARAPHRASE_SHARE of its content words appear there)."""
    said = _normal(" ".join(utterance))
    mine = _normal(value)
    if not said or not mine:
        return False
    if mine in said:
        return True
    words = [w for w in mine.split() if len(w) >= 3 or not w.isascii()]
    if not words:
        return False
    found = sum(1 for w in words if w in said)
    return found / len(words) >= PARAPHRASE_SHARE


def mark(
    contract: Contract, from_file: frozenset[str], utterance: Sequence[str]
) -> dict[str, FieldProvenance]:
    """mark(contract, utterance): per tracked field. `from_file`: fields whose value came
    from the contract file (the rest were typed on the command line, or are absent)."""
    marks: dict[str, FieldProvenance] = {}
    for name in TRACKED:
        value = contract.value_of(name)
        if not value:
            continue
        if name not in from_file:
            marks[name] = "user_stated"
        elif name == "allowed_sources":
            ok = all(traceable(s, utterance) for s in contract.sources)
            marks[name] = "user_stated" if ok else "ai_authored"
        else:
            marks[name] = "user_stated" if traceable(value, utterance) else "ai_authored"
    return marks


# -- declaring --------------------------------------------------------------------------


@dataclass(frozen=True)
class Flags:
    """What the command line gave (None / empty: not given)."""

    target: str | None = None
    role: str | None = None
    activity: str | None = None
    sources: tuple[str, ...] = ()
    verify: tuple[str, ...] = ()
    scope: str | None = None
    stop: str | None = None
    certificate: str | None = None
    verb: str | None = None
    utterance: tuple[str, ...] = ()


def load_contract_file(path: Path) -> ContractFile:
    text = read_utf8(path, "the contract file")
    raw = parse_toml(text, path)
    try:
        return ContractFile.model_validate(raw)
    except ValidationError as err:
        first = err.errors()[0]
        loc = tuple(first["loc"])
        dotted = ".".join(str(p) for p in loc) or "(top level)"
        message = first["msg"].removeprefix("Value error, ")
        if first["type"] == "extra_forbidden":
            message = "unknown key (a contract has target, role, activity, sources, verify, "
            message += "scope, stop, certificate, verb)"
        raise InputError(path, "E303", f"{dotted}: {message}", locate(text, loc)) from None


def declare(flags: Flags, contract_path: Path | None, cwd: Path) -> tuple[str, Contract]:
    """F0 declare: the target as given and the contract, with provenance marked. Paths
    from the command line start at `cwd`; paths from a contract file, at its folder."""
    file = load_contract_file(contract_path) if contract_path is not None else ContractFile()
    folder = contract_path.parent if contract_path is not None else cwd
    from_file: set[str] = set()

    def pick(flag: Any, filed: Any, tracked: str | None = None) -> Any:
        if flag:
            return flag
        if filed and tracked:
            from_file.add(tracked)
        return filed

    def rebased(values: Sequence[str]) -> tuple[str, ...]:
        # A contract file's relative paths are relative to the file: restate them from cwd.
        return tuple(v if Path(v).is_absolute() else _relpath(folder / v, cwd) for v in values)

    # As a contract file's entries may not be: `--source ''` granted the whole current
    # folder (`Path('')` is `.`), and `--verify ''` was certified as a command to run.
    for flag, values in (("--source", flags.sources), ("--verify", flags.verify)):
        if any(not value.strip() for value in values):
            raise InputError(flag, "E303", f"{flag} may not be blank: name a path or command")
    target = flags.target or (
        _relpath(folder / file.target, cwd)
        if file.target and not file.target.startswith("git:")
        else file.target
    )
    if not target:
        raise InputError("ilh certify", "E303", "no target: give TARGET or `target` in --contract")
    role = flags.role or file.role
    if not role or not role.strip():
        raise InputError("--role", "E303", "the recipient role is required (--role ROLE)")
    sources = flags.sources or rebased(file.sources)
    if not flags.sources and file.sources:
        from_file.add("allowed_sources")
    certificate = flags.certificate or (
        _relpath(folder / file.certificate, cwd) if file.certificate else None
    )
    contract = Contract(
        role=role.strip(),
        activity=pick(flags.activity, file.activity, "activity"),
        sources=tuple(sources),
        verify=tuple(flags.verify or file.verify),
        scope=pick(flags.scope, file.scope, "execution_scope"),
        stop=pick(flags.stop, file.stop, "stop_condition"),
        certificate=certificate,
        verb=flags.verb or file.verb,
        base=cwd,
        utterance=flags.utterance,
    )
    for given in contract.source_paths():
        if not given.exists():
            raise InputError(str(given), "E500", "a granted source (--source) does not exist")
        refuse_unusable_source(given)
    marks = mark(contract, frozenset(from_file), flags.utterance)
    return target, replace(contract, provenance=marks)


def refuse_unusable_source(path: Path) -> None:
    """`InputError` (E303) when the existing `path` is no file or folder a receiver can be
    given (`harness.certify.sources.unusable_source`)."""
    why = unusable_source(path)
    if why is not None:
        raise InputError(str(path), "E303", why)


def _relpath(path: Path, cwd: Path) -> str:
    import os

    try:
        return Path(os.path.relpath(os.path.abspath(path), os.path.abspath(cwd))).as_posix()
    except ValueError:
        return path.as_posix()


# -- answers ----------------------------------------------------------------------------


class Correct(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    correct: str | list[str]


class FindingAnswer(BaseModel):
    """A Gate answer for one finding: matched by its quoted token (and location, if
    given); `value` is the reference (Resolve/Route) or the condition (Defer)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    token: str = Field(min_length=1)
    location: str | None = None
    answer: Literal["Resolve", "Route", "Drop", "Defer"]
    value: str | None = None

    @field_validator("value")
    @classmethod
    def _not_blank(cls, value: str | None) -> str | None:
        if value is not None and not value.strip():
            raise ValueError("may not be blank")
        return value


class PremiseAnswer(BaseModel):
    """The Qp answer (Rule 32), both facets at once: who receives the record, and where
    its authoritative copy lives (`"derived"`, or a stable locator)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    recipient_class: Literal["human", "agent"]
    substrate_access: bool
    authority: str = Field(default="derived", min_length=1)


class Answers(BaseModel):
    """`--answers FILE` (JSON): contract confirmations and Gate answers, for scripts."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    contract: dict[str, Literal["confirm"] | Correct] = Field(default_factory=dict)
    findings: list[FindingAnswer] = Field(default_factory=list)
    premise_gate: PremiseAnswer | None = None

    @field_validator("contract")
    @classmethod
    def _tracked(cls, value: dict[str, Any]) -> dict[str, Any]:
        unknown = [k for k in value if k not in TRACKED]
        if unknown:
            raise ValueError(f"not a tracked contract field: {unknown[0]} ({', '.join(TRACKED)})")
        return value

    def for_finding(self, token: str, location: str) -> FindingAnswer | None:
        exact = [a for a in self.findings if a.token == token and a.location == location]
        loose = [a for a in self.findings if a.token == token and a.location is None]
        found = exact or loose
        return found[0] if found else None


NO_ANSWERS = Answers()


def load_answers(path: Path) -> Answers:
    text = read_utf8(path, "the answers file")
    raw = parse_json(text, path)
    try:
        answers = Answers.model_validate(raw)
    except ValidationError as err:
        first = err.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "(top level)"
        message = first["msg"].removeprefix("Value error, ")
        raise InputError(path, "E303", f"{where}: {message}") from None
    for item in answers.findings:
        if item.answer in ("Resolve", "Route", "Defer") and item.value is None:
            raise InputError(
                path, "E303", f"findings: {item.answer} for {item.token!r} needs a value"
            )
    return answers


def apply_contract_answers(contract: Contract, answers: Answers) -> Contract:
    """Confirm keeps a field ai_authored but ratified; Correct replaces it with the user's
    own words (user_stated)."""
    confirmed = set(contract.confirmed)
    marks = dict(contract.provenance)
    updates: dict[str, Any] = {}
    for name, answer in answers.contract.items():
        if answer == "confirm":
            confirmed.add(name)
            continue
        assert isinstance(answer, Correct)
        value = answer.correct
        if name == "allowed_sources":
            updates["sources"] = tuple([value] if isinstance(value, str) else value)
        elif isinstance(value, list):
            raise InputError("--answers", "E303", f"contract.{name}: a correction is one text")
        else:
            updates[
                {"activity": "activity", "execution_scope": "scope", "stop_condition": "stop"}[name]
            ] = value
        marks[name] = "user_stated"
    return replace(contract, provenance=marks, confirmed=frozenset(confirmed), **updates)


ADVISORY_TAGS = ADVISORIES
