"""Every payload the store writes is cleaned the same way (`RunStore._clean`): credentials
redacted by field name (`harness.record.events.redact`), then reduced to plain JSON
exactly as it reads back (`normalize_payload`: a JSON round trip), then every known
secret value removed from every string (`SecretValues.redact_json`). Three walks of the
payload and a JSON encode and decode, for every event of every task: at 64 tasks at a
time on one event loop, the largest part of the harness's own CPU per task.

Almost every payload the harness records is plain JSON already (dicts of str keys,
lists, str, int, finite float, bool, None), built by the harness a moment before. For
those, `clean_plain` does the same three steps in one walk, without the round trip:
for plain JSON the round trip only sorts each object's keys, turns tuples into lists and
makes lone surrogates whole (`whole_text` of each string is what `whole_json_text` does
to the JSON text), so the result is equal, key order included. Anything else (a model,
an enum, a path, a non-str key, a NaN, a key holding half a surrogate pair) returns None
and takes the general path, which is the definition; tests hold the two equal on
generated payloads (`tests/test_record_clean.py`).
"""

from __future__ import annotations

import math
from typing import Any

from envelopes.encodable import whole_text
from harness.record.events import REDACTED, bearer_value, is_secret_key
from harness.secrets import SecretValues


class _NotPlain(Exception):
    """The payload holds something only the general path handles."""


def clean_plain(payload: Any, known: SecretValues) -> dict[str, Any] | None:
    """`payload` cleaned as `RunStore._clean` would with the default redactor, or None when
    it is not plain JSON (module doc). The result shares no container with `payload`
    (the caller may change its own afterwards)."""
    if type(payload) is not dict:
        return None
    try:
        return _object(payload, known if known else None)
    except _NotPlain:
        return None


def _text(value: str, known: SecretValues | None) -> str:
    if not value.isascii():  # O(1): CPython knows whether a str is ASCII
        value = whole_text(value)
    return value if known is None else known.redact(value)


def _redacted(known: SecretValues | None) -> str:
    # The field-name redaction's marker passes the secret values' redaction like any
    # string (it never holds one, but the general path runs it, so this does too).
    return REDACTED if known is None else known.redact(REDACTED)


def _object(value: dict[Any, Any], known: SecretValues | None) -> dict[str, Any]:
    for key in value:
        if type(key) is not str:
            raise _NotPlain  # JSON would make it a string: the general path decides how
    out: dict[str, Any] = {}
    # Sorted, as the round trip through canonical (sorted) JSON leaves them.
    for key in sorted(value):
        if not key.isascii() and whole_text(key) is not key:
            # Half a surrogate pair in a key: made whole it could equal another key, and
            # which one wins is the round trip's business.
            raise _NotPlain
        item = _redacted(known) if is_secret_key(key) else _value(value[key], known)
        out[key if known is None else known.redact(key)] = item
    return out


def _value(value: Any, known: SecretValues | None) -> Any:
    kind = type(value)
    if kind is str:
        if bearer_value(value):
            return _redacted(known)
        return _text(value, known)
    if kind is dict:
        return _object(value, known)
    if kind is list or kind is tuple:
        return [_value(item, known) for item in value]
    if kind is int or kind is bool or value is None:
        return value
    if kind is float:
        if not math.isfinite(value):
            raise _NotPlain  # refused by the general path, with its message
        return value
    raise _NotPlain
