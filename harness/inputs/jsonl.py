"""JSON Lines files a user hands the harness (scripted agents, recordings, conformance
cases): one pydantic model per non-blank line, any defect reported as one `InputError`
with the file, the line and a code (E500 unreadable, E300 not UTF-8 or not JSON, E301 a
value of the wrong type, E303 any other invalid value)."""

from __future__ import annotations

from pathlib import Path
from typing import TypeVar

from pydantic import BaseModel, ValidationError

from harness.inputs.errors import InputError, parse_json, read_utf8
from harness.inputs.keys import UNKNOWN, first_error, meant, table_keys

M = TypeVar("M", bound=BaseModel)


def _json_kind(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true or false"
    if isinstance(value, int | float):
        return "a number"
    return "a string" if isinstance(value, str) else "an array"


def line_model(model: type[M], line: str, path: Path, number: int) -> M:
    raw = parse_json(line, path, number)
    try:
        return model.model_validate(raw)
    except ValidationError as err:
        first = first_error(err.errors())
        code = "E301" if first["type"].endswith("_type") else "E303"
        where = ".".join(str(p) for p in first["loc"])
        message = f"{where}: {first['msg']}"
        if first["type"] == UNKNOWN:
            keys = table_keys(model, first["loc"]) or []
            close = meant(str(first["loc"][-1]), keys)
            instead = f"did you mean {close!r}?" if close else f"takes {', '.join(keys)}"
            message = f"{where}: unknown key; {instead}"
        if first["type"] in ("model_type", "dict_type"):
            # pydantic's words ("a valid dictionary or instance of ScriptedTurn") name a
            # Python type and a class of the harness; the file is JSON.
            kind = _json_kind(first["input"])
            what = f"{where}:" if where else "the line"
            message = f"{what} should be a JSON object, not {kind}"
        raise InputError(path, code, message, number) from None


def read_jsonl(path: Path, model: type[M], what: str) -> list[M]:
    """`what` names the file in the unreadable-file message ("the agent script")."""
    lines = read_utf8(path, what).splitlines()
    return [
        line_model(model, line, path, number)
        for number, line in enumerate(lines, start=1)
        if line.strip()
    ]
