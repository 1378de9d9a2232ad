"""What every v4 declaration model shares: parse/render plumbing and field reading.

Reading policy (SPEC-v5.0 Part III §1.4 KEY-SCOPING): an unknown key in a known
declaration is kept, in order, as an extra field, never rejected. Header keys must be
lowercase (SPEC.md §2.5); an upper-case header key is E303 rather than a second
spelling of a known key.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from typing import Annotated, Any, ClassVar, Self, TypeVar

from pydantic import AfterValidator, BaseModel, ConfigDict, ValidationError

from envelopes.declarations.fields import (
    LOWER_KEY,
    Segment,
    check_value,
    split_declaration,
    split_fields,
)
from envelopes.errors import IlangError


def _check_key(key: str) -> str:
    if not LOWER_KEY.fullmatch(key):
        raise ValueError(f"field key {key!r} is not a lowercase identifier")
    return key


M = TypeVar("M", bound=BaseModel)

Value = Annotated[str, AfterValidator(check_value)]
"""A field value: any text a canonical rendering can carry (see fields.check_value)."""

Key = Annotated[str, AfterValidator(_check_key)]
Extras = tuple[tuple[Key, Value], ...]

_INT = re.compile(r"-?[0-9]+")
_FLOAT = re.compile(r"-?[0-9]+(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?")
# A leading positional that stands for a declaration's id (narrative_payload grammar:
# the first segment names the declaration). Anything else there is E300, not a guess.
_POSITIONAL_ID = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.\-]*")


def check_extras(extras: Extras, reserved: frozenset[str]) -> None:
    """Extras may neither repeat a key nor shadow a named field."""
    seen: set[str] = set()
    for key, _ in extras:
        folded = key.lower()
        if folded in reserved:
            raise ValueError(f"extra field {key!r} shadows a named field")
        if folded in seen:
            raise ValueError(f"extra field {key!r} is repeated")
        seen.add(folded)


def parse_int(segment: Segment) -> int:
    """ASCII digits only: `int()` would also take full-width and other Unicode digits."""
    if not _INT.fullmatch(segment.value) or len(segment.value) > 40:
        raise IlangError(
            "E301",
            f"{segment.key} must be an integer, got {segment.value!r}",
            segment.line,
            segment.col,
        )
    return int(segment.value)


def parse_float(segment: Segment) -> float:
    """ASCII decimal or exponent form; NaN and infinities are refused (E301)."""
    if not _FLOAT.fullmatch(segment.value) or len(segment.value) > 64:
        raise IlangError(
            "E301",
            f"{segment.key} must be a number, got {segment.value!r}",
            segment.line,
            segment.col,
        )
    number = float(segment.value)
    if not math.isfinite(number):
        raise IlangError(
            "E301",
            f"{segment.key} is out of range: {segment.value!r}",
            segment.line,
            segment.col,
        )
    return number


def render_float(number: float) -> str:
    """`repr` round-trips every finite float exactly."""
    return repr(float(number))


class FieldReader:
    """Hands out a header's segments by key; whatever is left becomes extras."""

    def __init__(self, decl: str, segments: Sequence[Segment], line: int, col: int) -> None:
        self.decl = decl
        self.line = line
        self.col = col
        self.positionals = [s for s in segments if s.key is None]
        self.fields: dict[str, Segment] = {}
        self.order: list[str] = []
        # Keys already read, taken or not: a body line may not repeat any of them.
        self.seen: set[str] = set()
        for segment in segments:
            if segment.key is not None:
                self._add(segment, segment.key)
        if self.positionals and segments[0].key is not None:
            stray = self.positionals[0]
            raise IlangError(
                "E300",
                f"::{decl} positional segment {stray.value!r} must come first",
                stray.line,
                stray.col,
            )

    def add_body(self, body: Sequence[tuple[int, str]]) -> None:
        """Merge `key:value` body lines into the header's fields.

        The spec defines no body for this declaration; a field written on a body line
        is still a field of it (a claim must not hide on the next line), so it is read
        with the header's rules, and a key repeated across header and body is E303.
        """
        for line_no, text in body:
            for segment in split_fields(text, line=line_no, col=1):
                if segment.key is None:
                    raise IlangError(
                        "E300",
                        f"::{self.decl} body line is not a key:value field",
                        line_no,
                        segment.col,
                    )
                if segment.key.lower() in self.seen:
                    raise IlangError("E303", f"repeated key {segment.key!r}", line_no, segment.col)
                self._add(segment, segment.key)

    def _add(self, segment: Segment, key: str) -> None:
        if not LOWER_KEY.fullmatch(key):
            raise IlangError(
                "E303",
                f"::{self.decl} field key {key!r} must be lowercase",
                segment.line,
                segment.col,
            )
        self.fields[key] = segment
        self.order.append(key)
        self.seen.add(key.lower())

    def take(self, key: str) -> Segment | None:
        segment = self.fields.pop(key, None)
        if segment is not None:
            self.order.remove(key)
        return segment

    def take_str(self, key: str) -> str | None:
        segment = self.take(key)
        return None if segment is None else segment.value

    def require(self, key: str) -> Segment:
        segment = self.take(key)
        if segment is None:
            raise IlangError("E300", f"::{self.decl} needs a {key} field", self.line, self.col)
        return segment

    def take_positional_id(self) -> str | None:
        """A single leading positional names the declaration (`::RUBRIC{r1|…}`)."""
        if not self.positionals:
            return None
        first = self.positionals[0]
        if len(self.positionals) > 1:
            extra = self.positionals[1]
            raise IlangError(
                "E300",
                f"::{self.decl} has more than one positional segment",
                extra.line,
                extra.col,
            )
        if not _POSITIONAL_ID.fullmatch(first.value):
            raise IlangError(
                "E300",
                f"::{self.decl} positional segment {first.value!r} is not an id",
                first.line,
                first.col,
            )
        if "id" in self.fields:
            raise IlangError("E303", f"::{self.decl} names its id twice", first.line, first.col)
        self.positionals = []
        return first.value

    def no_positionals(self) -> None:
        if self.positionals:
            stray = self.positionals[0]
            raise IlangError(
                "E300",
                f"::{self.decl} takes no positional segment, found {stray.value!r}",
                stray.line,
                stray.col,
            )

    def extras(self) -> tuple[tuple[str, str], ...]:
        return tuple((key, self.fields[key].value) for key in self.order)


def no_body(decl: str, body: Sequence[tuple[int, str]]) -> None:
    if body:
        line_no, _ = body[0]
        raise IlangError("E300", f"::{decl} takes no body lines", line_no, 1)


def build(model: Callable[..., M], line: int, col: int, decl: str, **values: Any) -> M:
    """Construct a model, turning a validation failure into E303 at the header."""
    try:
        return model(**values)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc']) or decl}: {err['msg']}" for err in exc.errors()
        )
        raise IlangError("E303", f"::{decl}: {problems}", line, col) from None


class Declaration(BaseModel):
    """A v4 declaration: `parse` reads its text, `render` writes its canonical text."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    NAME: ClassVar[str]

    @classmethod
    def parse(cls, text: str, line: int = 1) -> Self:
        """Read the declaration's text: the header line plus optional body lines."""
        content, body, header_line, col = split_declaration(text, cls.NAME, line)
        return cls.from_parts(content, body, header_line, col=col)

    @classmethod
    def from_parts(
        cls, header: str, body: Sequence[tuple[int, str]], line: int, *, col: int = 1
    ) -> Self:
        """Build from header content (between the braces) and (line, stripped) body lines.

        `col` is the 1-based column where the header content starts (error positions).
        """
        raise NotImplementedError

    def render(self) -> str:
        raise NotImplementedError
