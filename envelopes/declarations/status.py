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

from collections.abc import Sequence
from typing import Any, ClassVar, Self

from pydantic import field_validator, model_validator

from envelopes.declarations.base import Declaration, Extras, Value, build
from envelopes.declarations.fields import check_extras, render_fields
from envelopes.declarations.status_rules import (
    AUTHORITY_OF_WRITER,
    COMPLETE_FORMS,
    ENTITY,
    NAMED,
    WRITER_STATES,
    Authority,
    State,
    known,
    read_status,
    status_findings,
)

# The rules live in `status_rules` (plain Python); they stay importable from here.
__all__ = [
    "AUTHORITY_OF_WRITER",
    "COMPLETE_FORMS",
    "WRITER_STATES",
    "Authority",
    "State",
    "Status",
    "status_findings",
]


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
        return known(State, value)

    @field_validator("authority", mode="before")
    @classmethod
    def _authority_member(cls, value: Any) -> Any:
        return known(Authority, value)

    @model_validator(mode="after")
    def _check(self) -> Self:
        if not ENTITY.fullmatch(self.scope):
            raise ValueError(f"scope {self.scope!r} is not an entity @NAME")
        check_extras(self.extras, NAMED)
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
        if key in NAMED:
            value = getattr(self, key)
            return None if value is None else str(value)
        return next((v for k, v in self.extras if k == key), None)

    @classmethod
    def from_parts(
        cls, header: str, body: Sequence[tuple[int, str]], line: int, *, col: int = 1
    ) -> Self:
        read = read_status(header, body, line, col=col)
        values: dict[str, Any] = read._asdict()
        if values["scope"] is None:
            del values["scope"]  # not written: the model's default
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
