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
    Segment,
    check_key,
    check_value,
    split_declaration,
)
from envelopes.errors import IlangError

M = TypeVar("M", bound=BaseModel)

Value = Annotated[str, AfterValidator(check_value)]
"""A field value: any text a canonical rendering can carry (see fields.check_value)."""

Key = Annotated[str, AfterValidator(check_key)]
Extras = tuple[tuple[Key, Value], ...]

_INT = re.compile(r"-?[0-9]+")
_FLOAT = re.compile(r"-?[0-9]+(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?")


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
