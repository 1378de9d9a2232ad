"""Unknown keys in a file a person wrote (a task file, a scripted agent's line): which
error to report, and what the person probably meant.

A misspelt key fails twice: it is unknown, and the key it was meant to be is missing.
pydantic lists the missing one first (fields in their order, then the extras), and the
message "task.id: required key missing" sent the person looking for an id they had
written (as `idd`). The unknown key is the cause: it is the one reported, with the key
meant when one is close, else the keys its table takes."""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from typing import Any, get_args

from pydantic import BaseModel
from pydantic_core import ErrorDetails

UNKNOWN = "extra_forbidden"


def first_error(errors: Sequence[ErrorDetails]) -> ErrorDetails:
    """The error to report: the first unknown key if there is one, else the first error."""
    return next((e for e in errors if e["type"] == UNKNOWN), errors[0])


def table_keys(model: type[BaseModel], loc: Sequence[str | int]) -> list[str] | None:
    """The keys the table holding the last key of `loc` takes, in their order; None when
    the table is not a model's (a free mapping, a path through a list of scalars)."""
    current: type[BaseModel] | None = model
    for part in loc[:-1]:
        if isinstance(part, int):
            continue  # an entry of a list: its model is the list's item
        field = current.model_fields.get(part) if current is not None else None
        if field is None:
            return None
        current = _model_in(field.annotation)
    return list(current.model_fields) if current is not None else None


def _model_in(annotation: Any) -> type[BaseModel] | None:
    """The model an annotation holds: itself, or inside `X | None`, `list[X]`…"""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in get_args(annotation):
        found = _model_in(arg)
        if found is not None:
            return found
    return None


def meant(key: str, keys: Sequence[str]) -> str | None:
    """The known key `key` is most likely a slip for, if one is close enough (difflib's
    default 0.6 took `extras` for `task`)."""
    close = difflib.get_close_matches(key, keys, n=1, cutoff=0.75)
    return close[0] if close else None
