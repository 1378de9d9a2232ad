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
from typing import Any, Final

from envelopes.encodable import whole_text
from harness.record.events import REDACTED, bearer_value, is_secret_key
from harness.secrets import SecretValues


class _NotPlain(Exception):
    """The payload holds something only the general path handles."""


#: Strings up to this long are cleaned once per set of secrets (`_Memo`): a payload's keys
#: and most of its values (states, kinds, lines, names) repeat event after event.
_MEMO_MAX_CHARS: Final = 256
_MEMO_MAX_ENTRIES: Final = 8192


class _Memo:
    """What `_value` and `_object` computed for short strings, for one set of secrets
    (`SecretValues` never changes, so neither does an answer)."""

    def __init__(self, known: SecretValues | None) -> None:
        self.known = known
        self.values: dict[str, str] = {}
        # key -> (named a credential, the key as written); None: half a surrogate pair
        self.keys: dict[str, tuple[bool, str] | None] = {}

    def value(self, text: str) -> str:
        if len(text) > _MEMO_MAX_CHARS:
            return _string(text, self.known)
        done = self.values.get(text)
        if done is None:
            if len(self.values) >= _MEMO_MAX_ENTRIES:
                self.values.clear()
            done = self.values[text] = _string(text, self.known)
        return done

    def key(self, key: str) -> tuple[bool, str]:
        try:
            done = self.keys[key]
        except KeyError:
            if len(self.keys) >= _MEMO_MAX_ENTRIES:
                self.keys.clear()
            done = self.keys[key] = _key(key, self.known)
        if done is None:
            raise _NotPlain
        return done


_memo: _Memo | None = None  # for the last set of secrets seen (one per process, mostly)


def clean_plain(payload: Any, known: SecretValues) -> dict[str, Any] | None:
    """`payload` cleaned as `RunStore._clean` would with the default redactor, or None when
    it is not plain JSON (module doc). The result shares no container with `payload`
    (the caller may change its own afterwards)."""
    global _memo
    if type(payload) is not dict:
        return None
    memo = _memo
    wanted = known if known else None
    if memo is None or memo.known is not wanted:
        memo = _memo = _Memo(wanted)
    try:
        return _object(payload, memo)
    except _NotPlain:
        return None


def _string(value: str, known: SecretValues | None) -> str:
    """A string value: a bearer credential by its shape, then made whole, then without
    any secret value."""
    if bearer_value(value):
        return _redacted(known)
    if not value.isascii():  # O(1): CPython knows whether a str is ASCII
        value = whole_text(value)
    return value if known is None else known.redact(value)


def _key(key: str, known: SecretValues | None) -> tuple[bool, str] | None:
    if not key.isascii() and whole_text(key) is not key:
        # Half a surrogate pair in a key: made whole it could equal another key, and
        # which one wins is the round trip's business.
        return None
    return is_secret_key(key), key if known is None else known.redact(key)


def _redacted(known: SecretValues | None) -> str:
    # The field-name redaction's marker passes the secret values' redaction like any
    # string (it never holds one, but the general path runs it, so this does too).
    return REDACTED if known is None else known.redact(REDACTED)


def _object(value: dict[Any, Any], memo: _Memo) -> dict[str, Any]:
    for key in value:
        if type(key) is not str:
            raise _NotPlain  # JSON would make it a string: the general path decides how
    out: dict[str, Any] = {}
    # Sorted, as the round trip through canonical (sorted) JSON leaves them.
    for key in sorted(value):
        secret, written = memo.key(key)
        out[written] = _redacted(memo.known) if secret else _value(value[key], memo)
    return out


def _value(value: Any, memo: _Memo) -> Any:
    kind = type(value)
    if kind is str:
        return memo.value(value)
    if kind is dict:
        return _object(value, memo)
    if kind is list or kind is tuple:
        return [_value(item, memo) for item in value]
    if kind is int or kind is bool or value is None:
        return value
    if kind is float:
        if not math.isfinite(value):
            raise _NotPlain  # refused by the general path, with its message
        return value
    raise _NotPlain
