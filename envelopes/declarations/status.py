"""`::STATUS{}` (SPEC-v4.0-FINAL §4): the task lifecycle, and who may write which state.

The model READS any status, lawful or not, so that a linter and a runtime can say what
is wrong with it (`status_findings`); reading it never grants it anything. `state` is a
`State` when the text names a state of the §4 machine and the raw text otherwise (the
golden corpus has `state:in_progress`): an unknown state is a finding, not a parse
failure. Whether a status may be applied is decided elsewhere, from provenance; the
`by`/`authority` written in the text are claims (spec, Authority Model).

Canonical order: `::STATUS{@TASK|state:…|reason:…|<other fields in order>|by:…|
authority:…}` as in the §4 examples (the first example writes `since` after
`authority`; canonical text moves it before `by`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from enum import StrEnum
from types import MappingProxyType
from typing import Any, ClassVar, Self

from pydantic import field_validator, model_validator

from envelopes.declarations.base import Declaration, Extras, FieldReader, Value, build, check_extras
from envelopes.declarations.fields import render_fields, split_fields
from envelopes.errors import Finding, IlangError, Severity


class State(StrEnum):
    """The states of the §4 state machine."""

    CREATED = "created"
    RUNNING = "running"
    CLAIMED_COMPLETE = "claimed_complete"
    VERIFIED_COMPLETE = "verified_complete"
    COMPLETE = "complete"
    STOPPED = "stopped"
    BLOCKED = "blocked"
    FAILED = "failed"
    NEEDS_REVISION = "needs_revision"


class Authority(StrEnum):
    """The three write tiers of §4."""

    PROPOSAL = "proposal"
    VERIFICATION = "verification"
    COMMIT = "commit"


# §4 "Three-tier authority": the states each tier can write.
WRITER_STATES: Mapping[str, frozenset[State]] = MappingProxyType(
    {
        Authority.PROPOSAL: frozenset(
            {
                State.CLAIMED_COMPLETE,
                State.STOPPED,
                State.BLOCKED,
                State.FAILED,
                State.NEEDS_REVISION,
            }
        ),
        Authority.VERIFICATION: frozenset({State.VERIFIED_COMPLETE, State.NEEDS_REVISION}),
        Authority.COMMIT: frozenset({State.COMPLETE, State.RUNNING, State.STOPPED}),
    }
)

# §4: the tier each writer entity holds. A custom entity holds none.
AUTHORITY_OF_WRITER: Mapping[str, Authority] = MappingProxyType(
    {
        "@AGENT": Authority.PROPOSAL,
        "@SELF": Authority.PROPOSAL,
        "@GRADER": Authority.VERIFICATION,
        "@RUNTIME": Authority.COMMIT,
    }
)

COMPLETE_FORMS: frozenset[State] = frozenset(
    {State.CLAIMED_COMPLETE, State.VERIFIED_COMPLETE, State.COMPLETE}
)

_NAMED = frozenset({"scope", "state", "reason", "by", "authority"})
_ENTITY = re.compile(r"@[A-Z][A-Z0-9_]*")


def _known(enum: type[StrEnum], value: Any) -> Any:
    """Map a known spelling onto its enum member; leave anything else as written."""
    if isinstance(value, str) and not isinstance(value, StrEnum):
        try:
            return enum(value)
        except ValueError:
            return value
    return value


class Status(Declaration):
    NAME: ClassVar[str] = "STATUS"

    scope: Value = "@TASK"
    state: State | Value | None = None
    reason: Value | None = None
    extras: Extras = ()
    by: Value | None = None
    authority: Authority | Value | None = None

    @field_validator("state", mode="before")
    @classmethod
    def _state_member(cls, value: Any) -> Any:
        return _known(State, value)

    @field_validator("authority", mode="before")
    @classmethod
    def _authority_member(cls, value: Any) -> Any:
        return _known(Authority, value)

    @model_validator(mode="after")
    def _check(self) -> Self:
        if not _ENTITY.fullmatch(self.scope):
            raise ValueError(f"scope {self.scope!r} is not an entity @NAME")
        check_extras(self.extras, _NAMED)
        return self

    @property
    def known_state(self) -> State | None:
        """The state when it is one of the §4 machine, else None."""
        return self.state if isinstance(self.state, State) else None

    @property
    def known_authority(self) -> Authority | None:
        return self.authority if isinstance(self.authority, Authority) else None

    def get(self, key: str) -> str | None:
        """The value of any field by key (named or extra)."""
        if key in _NAMED:
            value = getattr(self, key)
            return None if value is None else str(value)
        return next((v for k, v in self.extras if k == key), None)

    @classmethod
    def from_parts(
        cls, header: str, body: Sequence[tuple[int, str]], line: int, *, col: int = 1
    ) -> Self:
        reader = FieldReader(cls.NAME, split_fields(header, line=line, col=col), line, col)
        reader.add_body(body)
        values: dict[str, Any] = {}
        scope_field = reader.take("scope")
        if reader.positionals:
            first = reader.positionals[0]
            if len(reader.positionals) > 1:
                stray = reader.positionals[1]
                raise IlangError(
                    "E300",
                    f"::STATUS has a second positional segment {stray.value!r}",
                    stray.line,
                    stray.col,
                )
            if scope_field is not None:
                raise IlangError("E303", "::STATUS names its scope twice", first.line, first.col)
            scope_field = first
        if scope_field is not None:
            if not _ENTITY.fullmatch(scope_field.value):
                code = "E200" if scope_field.value.startswith("@") else "E300"
                raise IlangError(
                    code,
                    f"::STATUS scope {scope_field.value!r} is not an entity @NAME",
                    scope_field.line,
                    scope_field.col,
                )
            values["scope"] = scope_field.value
        for name in ("state", "reason", "by", "authority"):
            values[name] = reader.take_str(name)
        values["extras"] = reader.extras()
        return build(cls, line, col, cls.NAME, **values)

    def render(self) -> str:
        segments: list[tuple[str | None, str]] = [(None, self.scope)]
        if self.state is not None:
            segments.append(("state", str(self.state)))
        if self.reason is not None:
            segments.append(("reason", self.reason))
        segments += list(self.extras)
        if self.by is not None:
            segments.append(("by", self.by))
        if self.authority is not None:
            segments.append(("authority", str(self.authority)))
        return f"::{self.NAME}{{{render_fields(segments)}}}"


def status_findings(s: Status, line: int) -> list[Finding]:
    """What is unlawful about `s` as written, judged on the text alone (§4).

    Severity: an unknown state is a warning (the corpus holds documents that use other
    state words); everything that would let a writer exceed its tier is an error.
    Fail-closed choices where §4 is silent:

    * `created` is written by nobody: no tier lists it under "Can write".
    * `complete`, `verified_complete` and `running` written with no writer at all are
      errors: only one tier may write each of them, and an unsigned claim of it cannot
      be checked.
    * `reason:budget` with any state but `stopped` is an error ("can only produce
      stopped"), not only with the complete forms.
    * A writer that holds no tier (a custom entity) is a warning; an authority word
      outside proposal/verification/commit is an error.
    * The writer table is read strictly for the text: an agent's `running` is an
      error here, even though a runtime may treat it as a mere acknowledgement.
    """
    found: list[Finding] = []

    def add(message: str, severity: Severity = "error") -> None:
        found.append(Finding("E303", message, line, 1, severity))

    writer_tier = AUTHORITY_OF_WRITER.get(s.by) if s.by is not None else None
    if s.by is not None and writer_tier is None:
        add(f"writer {s.by} holds no authority tier of §4", "warning")
    claimed = s.known_authority
    if s.authority is not None and claimed is None:
        add(f"unknown authority {s.authority!r} (proposal|verification|commit)")
    if writer_tier is not None and claimed is not None and writer_tier is not claimed:
        add(f"{s.by} writes with authority:{writer_tier}, not authority:{claimed}")

    state = s.known_state
    if s.state is None:
        add("::STATUS names no state", "warning")
    elif state is None:
        add(f"unknown state {s.state!r}: not a state of the §4 machine", "warning")
    else:
        _state_findings(s, state, writer_tier, claimed, add)
    return found


def _state_findings(
    s: Status,
    state: State,
    writer_tier: Authority | None,
    claimed: Authority | None,
    add: Callable[[str], None],
) -> None:
    if state is State.CREATED:
        add("no writer may write state:created (§4 lists it under no tier)")
    for tier in dict.fromkeys(t for t in (writer_tier, claimed) if t is not None):
        if state not in WRITER_STATES[tier]:
            who = s.by if tier is writer_tier and s.by is not None else f"authority:{tier}"
            add(
                f"{who} may not write state:{state} (authority:{tier} writes "
                f"{', '.join(sorted(WRITER_STATES[tier]))})"
            )
    if (
        writer_tier is None
        and claimed is None
        and state in (State.COMPLETE, State.VERIFIED_COMPLETE, State.RUNNING)
    ):
        add(f"state:{state} needs its writer (by and authority) to be stated")
    if s.reason == "budget" and state is not State.STOPPED:
        kind = "a form of complete" if state in COMPLETE_FORMS else f"state:{state}"
        add(f"reason:budget can only produce stopped, never {kind}")
