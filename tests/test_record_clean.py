"""The store's one-walk cleaning of plain payloads (`harness.record.clean`) against the
general path it stands in for: field-name redaction, the JSON round trip, the secret
values' redaction. Equal results (key order included) on generated payloads, a fresh
copy that shares nothing with the caller's, and the general path for what is not plain."""

from __future__ import annotations

import json
import math
from enum import StrEnum
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.record.clean import clean_plain
from harness.record.events import normalize_payload, redact
from harness.record.store import RunStore
from harness.secrets import SecretValues

SECRET = "sk-live-0123456789abcdefXYZ"
KNOWN = SecretValues([("OPENAI_API_KEY", SECRET), ("OTHER_TOKEN", "hunter2hunter2")])


def general(payload: dict[str, Any], known: SecretValues) -> dict[str, Any]:
    """What `RunStore._clean` did before the one-walk path (and still does for the rest)."""
    cleaned: dict[str, Any] = known.redact_json(normalize_payload(redact(payload)))
    return cleaned


# Strings that exercise every rule: secret values whole and cut, encoded, a bearer
# header, field names that are credentials, lone surrogates, non-ASCII text.
TEXTS = st.one_of(
    st.text(max_size=30),
    st.sampled_from(
        [
            SECRET,
            f"key={SECRET}!",
            SECRET[:14],
            json.dumps(SECRET),
            "Bearer abc.def",
            "  bearer   xyz  ",
            "[REDACTED]",
            "api_key",
            "x-auth-token",
            "input_tokens",
            "password",
            "caf\u00e9 \udc80 \ud83d",
            "\ud800",
            "hunter2hunter2 and more",
        ]
    ),
)
KEYS = st.one_of(
    st.sampled_from(
        ["api_key", "Authorization", "token", "max_tokens", "a.b-token", "usage", "text", SECRET]
    ),
    st.text(max_size=12),
)
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    TEXTS,
)
PLAIN = st.recursive(
    SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.lists(inner, max_size=3).map(tuple),
        st.dictionaries(KEYS, inner, max_size=4),
    ),
    max_leaves=20,
)
PAYLOADS = st.dictionaries(KEYS, PLAIN, max_size=6)


def surrogate_key(value: Any) -> bool:
    if isinstance(value, dict):
        return any(
            any("\ud800" <= c <= "\udfff" for c in k) or surrogate_key(v) for k, v in value.items()
        )
    if isinstance(value, list | tuple):
        return any(surrogate_key(v) for v in value)
    return False


@settings(max_examples=400, deadline=None)
@given(payload=PAYLOADS, with_secrets=st.booleans())
def test_one_walk_equals_the_general_path(payload: dict[str, Any], with_secrets: bool) -> None:
    known = KNOWN if with_secrets else SecretValues()
    expected = general(payload, known)
    got = clean_plain(payload, known)
    # Of generated plain payloads, only one with a key holding half a surrogate pair is
    # left to the general path.
    assert (got is None) == surrogate_key(payload)
    if got is None:
        return
    assert got == expected
    # The same order of keys at every depth: what the live progress shows.
    assert json.dumps(got, ensure_ascii=False) == json.dumps(expected, ensure_ascii=False)


def test_known_cases_are_cleaned_like_the_general_path() -> None:
    payload = {
        "z": 1,
        "api_key": {"nested": float("nan")},  # redacted by name before it is read
        "text": f"the key is {SECRET}",
        "calls": ({"name": "t", "arguments": {"password": "p", "q": "Bearer tok"}},),
        SECRET: "a secret as a key",
        "bad": "\udc80 byte",
        "n": -0.0,
    }
    got = clean_plain(payload, KNOWN)
    assert got is not None
    assert json.dumps(got) == json.dumps(general(payload, KNOWN))  # key order too
    assert "[REDACTED]" in json.dumps(got) and SECRET not in json.dumps(got)
    assert got["bad"] == "\\x80 byte"
    assert math.copysign(1.0, got["n"]) == -1.0


def test_what_is_remembered_of_a_string_holds_for_its_set_of_secrets_only() -> None:
    """Short strings are cleaned once per set of secrets: a value that was plain text
    for one set is redacted once a set that knows it is in use, and back."""
    payload = {"text": "hunter2hunter2", "hunter2hunter2": 1}
    before = SecretValues([("A_KEY", "something-else-entirely")])
    assert clean_plain(payload, before) == payload
    got = clean_plain(payload, KNOWN)
    assert got == general(payload, KNOWN)
    assert got == {"text": "[REDACTED:OTHER_TOKEN]", "[REDACTED:OTHER_TOKEN]": 1}
    assert clean_plain(payload, before) == payload
    assert clean_plain(payload, SecretValues()) == payload


def test_the_result_shares_no_container_with_the_payload() -> None:
    inner = {"a": [1, 2]}
    payload: dict[str, Any] = {"inner": inner, "rows": [inner]}
    got = clean_plain(payload, KNOWN)
    assert got is not None
    inner["a"].append(3)
    payload["rows"].append("later")
    assert got == {"inner": {"a": [1, 2]}, "rows": [{"a": [1, 2]}]}


class Colour(StrEnum):
    RED = "red"


@pytest.mark.parametrize(
    "payload",
    [
        {"kind": Colour.RED},  # an enum: to_jsonable_python's business
        {"path": Path("/x")},
        {1: "int key"},
        {"f": float("inf")},
        {"\udc80": 1, "\\x80": 2},  # keys that collide once made whole
        {"nested": {"t": object()}},
    ],
)
def test_what_is_not_plain_takes_the_general_path(payload: dict[Any, Any]) -> None:
    assert clean_plain(payload, KNOWN) is None


def test_the_store_gives_the_same_payloads_either_way(tmp_path: Path) -> None:
    """The default redactor takes the one walk; any other redactor (here the same rule,
    another function) the general path: what is stored is identical."""
    payloads: list[dict[str, Any]] = [
        {"text": f"x {SECRET} y", "usage": {"input_tokens": 3}, "api_key": SECRET},
        {"kind": Colour.RED, "t": (1, 2.5, None)},
        {"call": {"arguments": {"cmd": "echo", "token": "t0k3n"}}, "ok": True},
    ]
    stored = []
    for redactor in (redact, lambda p: redact(p)):
        with RunStore(
            tmp_path / f"{len(stored)}.db", redactor=redactor, secrets=lambda: KNOWN
        ) as s:
            run = s.create_run("t", {"model": "m"})
            stored.append(
                [
                    s.append(run, "note", p).payload  # as read back: the same either way
                    for p in payloads
                ]
            )
            assert [e.payload for e in s.events(run)[1:]] == stored[-1]
            assert s.verify(run).ok
    assert stored[0] == stored[1]


def test_nan_is_still_refused_with_the_store_message(tmp_path: Path) -> None:
    from harness.record.store import StoreError

    with RunStore(tmp_path / "r.db") as s:
        run = s.create_run("t")
        with pytest.raises(StoreError, match="cannot be stored as JSON"):
            s.append(run, "note", {"x": float("nan")})


# -- the event hash's encoding -------------------------------------------------------------


def reference_json(value: Any) -> str:
    """The hash rule's encoding, spelled out (harness.record.events module doc)."""
    return json.dumps(
        value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    )


@settings(max_examples=300, deadline=None)
@given(
    value=st.one_of(
        st.text(),
        st.text(alphabet=st.characters(min_codepoint=0, max_codepoint=0x7F)),
        st.integers(),
        st.booleans(),
        PAYLOADS,
    )
)
def test_the_shared_encoder_and_the_scalar_shortcut_write_the_reference_text(value: Any) -> None:
    from harness.record.events import _scalar_json, canonical_json

    assert canonical_json(value) == reference_json(value)
    if isinstance(value, str | int):
        assert _scalar_json(value) == reference_json(value)


def test_an_event_hash_is_the_sha256_of_the_reference_encoding() -> None:
    import hashlib

    from harness.record.events import event_hash

    fields = {
        "run_id": 'r"un\\id\u00e9\n',  # what a tampered row may hold: escapes, non-ASCII
        "seq": 3,
        "kind": "note",
        "round": 0,
        "at": "2026-12-06T02:28:15.123456Z",
        "payload": {"b": [1, "x"], "a": None},
        "prev_hash": "0" * 64,
    }
    expected = hashlib.sha256(reference_json(fields).encode("utf-8")).hexdigest()
    got = event_hash(
        run_id=fields["run_id"],
        seq=3,
        kind="note",
        round_=0,
        at=fields["at"],
        payload=fields["payload"],
        prev_hash=fields["prev_hash"],
    )
    assert got == expected
