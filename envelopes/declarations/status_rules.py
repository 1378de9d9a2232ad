"""The rules of `::STATUS{}` (SPEC-v4.0-FINAL §4) in plain Python: its states and
authority tiers, who may write which state (`status_findings`), and the reading of its
fields (`read_status`).

The model, `envelopes.declarations.status.Status` (pydantic), reads with them and
validates. `ilh lint` reads a ::STATUS with them alone when the model would accept it
(`as_validated`), so that linting a short text does not import pydantic (with the
model's building, more than half of a short `ilh lint`'s start-up); whenever it might
not, the model decides and words the error. tests/test_status_rules.py holds the two
readings equal and this module's copy of the model's validation in step with the model.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from enum import StrEnum
from types import MappingProxyType
from typing import Any, NamedTuple, Protocol

from envelopes.declarations.fields import (
    FieldReader,
    check_extras,
    check_key,
    check_value,
    split_fields,
)
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

#: The fields a ::STATUS names; any other key is an extra.
NAMED = frozenset({"scope", "state", "reason", "by", "authority"})
ENTITY = re.compile(r"@[A-Z][A-Z0-9_]*")


def known(enum: type[StrEnum], value: Any) -> Any:
    """Map a known spelling onto its enum member; leave anything else as written."""
    if isinstance(value, str) and not isinstance(value, StrEnum):
        try:
            return enum(value)
        except ValueError:
            return value
    return value


class StatusText(NamedTuple):
    """A ::STATUS's fields as written, before the model's validation: `scope` is None
    when not written."""

    scope: str | None
    state: str | None
    reason: str | None
    extras: tuple[tuple[str, str], ...]
    by: str | None
    authority: str | None


def read_status(
    header: str, body: Sequence[tuple[int, str]], line: int, *, col: int = 1
) -> StatusText:
    """Read a ::STATUS's header content and (line, stripped) body lines into its fields
    (`IlangError` for what cannot be read: a repeated key, a second positional…)."""
    reader = FieldReader("STATUS", split_fields(header, line=line, col=col), line, col)
    reader.add_body(body)
    scope: str | None = None
    values: dict[str, str | None] = {}
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
        if not ENTITY.fullmatch(scope_field.value):
            code = "E200" if scope_field.value.startswith("@") else "E300"
            raise IlangError(
                code,
                f"::STATUS scope {scope_field.value!r} is not an entity @NAME",
                scope_field.line,
                scope_field.col,
            )
        scope = scope_field.value
    for name in ("state", "reason", "by", "authority"):
        values[name] = reader.take_str(name)
    return StatusText(scope=scope, extras=reader.extras(), **values)


class StatusLike(Protocol):
    """What `status_findings` reads of a status: the model, or `ValidatedStatus`."""

    @property
    def state(self) -> State | str | None: ...
    @property
    def reason(self) -> str | None: ...
    @property
    def by(self) -> str | None: ...
    @property
    def authority(self) -> Authority | str | None: ...
    @property
    def known_state(self) -> State | None: ...
    @property
    def known_authority(self) -> Authority | None: ...


class ValidatedStatus(NamedTuple):
    """The values the model would hold for a status it accepts (`as_validated`)."""

    scope: str
    state: State | str | None
    reason: str | None
    extras: tuple[tuple[str, str], ...]
    by: str | None
    authority: Authority | str | None

    @property
    def known_state(self) -> State | None:
        return self.state if isinstance(self.state, State) else None

    @property
    def known_authority(self) -> Authority | None:
        return self.authority if isinstance(self.authority, Authority) else None


def as_validated(text: StatusText) -> ValidatedStatus | None:
    """The status the model would build from `text`, when each of its validators would
    accept it (field by field as pydantic runs them: `state` and `authority` mapped onto
    their enum or checked as a value, every value `check_value`d, extras' keys checked,
    then the scope and the extras as a whole); None when one might refuse, and then only
    the model says how."""
    try:
        state = _member_or_value(State, text.state)
        authority = _member_or_value(Authority, text.authority)
        scope = "@TASK" if text.scope is None else check_value(text.scope)
        for value in (text.reason, text.by):
            if value is not None:
                check_value(value)
        for key, value in text.extras:
            check_key(key)
            check_value(value)
        if not ENTITY.fullmatch(scope):
            return None
        check_extras(text.extras, NAMED)
    except ValueError:
        return None
    return ValidatedStatus(scope, state, text.reason, text.extras, text.by, authority)


def _member_or_value(enum: type[StrEnum], value: str | None) -> Any:
    """A field typed `Enum | Value | None` with a `known` before-validator: the member
    for a known spelling, else the text checked as a value."""
    mapped = known(enum, value)
    if isinstance(mapped, str) and not isinstance(mapped, StrEnum):
        check_value(mapped)
    return mapped


def status_findings(s: StatusLike, line: int) -> list[Finding]:
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
    s: StatusLike,
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
