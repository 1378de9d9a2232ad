"""The run record's vocabulary: event kinds, the frozen event model, hashing and redaction.

This module is pure (no I/O) so the hash rule and the chain check can be reused on any
copy of a record, e.g. an exported JSONL file, not only on the SQLite store.

Hash rule (the contract `ilh runs verify` checks)::

    hash = sha256(canonical_json({"run_id", "seq", "kind", "round", "at", "payload",
                                   "prev_hash"})).hexdigest()

where ``canonical_json`` is ``json.dumps(..., sort_keys=True, separators=(",", ":"),
ensure_ascii=False, allow_nan=False)`` encoded as UTF-8, and the first event of a run
chains to ``GENESIS_HASH`` (64 zeros).

Payload conventions the store's summaries rely on (everything else is free-form):

- ``run_started``: ``{"task_id": str, "meta": {...}}`` (written by the store itself)
- ``state_change``: carries the committed state under ``"state"``
- ``run_ended``: carries the end cause under ``"ended_by"`` (§6 values)
- ``allowance``: ``{"for": "model_call" | "run_command" | "grading", "allowed_s": float |
  null}``, written just before that call, command or grading starts
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any, Final

from pydantic import BaseModel, ConfigDict, Field
from pydantic_core import to_jsonable_python

from envelopes.encodable import whole_json_text

GENESIS_HASH: Final = "0" * 64
REDACTED: Final = "[REDACTED]"

_HEX64 = r"^[0-9a-f]{64}$"


class EventKind(StrEnum):
    """What a record entry is about; one event per state change, call, claim, etc."""

    RUN_STARTED = "run_started"
    STATE_CHANGE = "state_change"
    PROPOSAL = "proposal"
    VIOLATION = "violation"
    MODEL_CALL = "model_call"
    MODEL_ATTEMPT = "model_attempt"
    TOOL_CALL = "tool_call"
    BUDGET_SNAPSHOT = "budget_snapshot"
    GRADER_RESULT = "grader_result"
    RUN_ENDED = "run_ended"
    NOTE = "note"
    ALLOWANCE = "allowance"
    """Written before a model call, a command or a grading: what it may take (`for`,
    `allowed_s`). A record that ends inside one was cut there, and a resume charges
    the allowance (`harness.run.resume.resumed_ledger`)."""
    GENE = "gene"
    """A step of the GENE correction cycle (SPEC-v5.0 Part IV, `harness.soul`): `step` is
    added, promoted, terminated (with the `observation`), principal_rule_error or
    persisted."""


class Event(BaseModel):
    """One committed, hash-chained entry of a run record."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    run_id: str = Field(min_length=1)
    seq: int = Field(ge=1, description="1-based position in the run's chain")
    kind: EventKind
    round: int = Field(ge=0)
    at: str = Field(description="UTC ISO-8601 timestamp of the commit")
    payload: dict[str, Any]
    prev_hash: str = Field(pattern=_HEX64)
    hash: str = Field(pattern=_HEX64)

    def expected_hash(self) -> str:
        """The hash these fields must carry; differs from `hash` iff the event was edited."""
        return event_hash(
            run_id=self.run_id,
            seq=self.seq,
            kind=str(self.kind),
            round_=self.round,
            at=self.at,
            payload=self.payload,
            prev_hash=self.prev_hash,
        )

    def to_json_line(self) -> str:
        """One canonical JSON line (no trailing newline), as `export_jsonl` writes it."""
        return canonical_json(self.model_dump(mode="json"))


class RunSummary(BaseModel):
    """What `ilh runs list` / `ilh runs show` need to know about a run without its events."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    run_id: str
    task_id: str
    created_at: str
    meta: dict[str, Any]
    events: int = Field(description="number of stored events")
    head_seq: int = Field(description="last seq the store committed")
    last_state: str | None = Field(description="`state` of the last state_change event")
    ended_by: str | None = Field(description="`ended_by` of the last run_ended event")
    record: str = Field(
        description="the cheap check of the record (`RunStore.list_runs`): `authenticated`, "
        "`TAMPERED`, `unauthenticated (legacy)`, `other key` or `no key`; only "
        "`ilh runs verify` checks every event"
    )


class VerifyResult(BaseModel):
    """Outcome of checking one run's chain; `problems` name the seq they concern."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    run_id: str
    ok: bool
    checked: int = Field(description="number of stored events examined")
    problems: list[str]
    mac: str = Field(
        description="the head's MAC: `ok`, `mismatch`, `legacy` (none: written before "
        "records were authenticated), `other_key` or `no_key` (no record key here)"
    )


def utc_now_iso() -> str:
    """Commit timestamp: UTC, microsecond precision, `Z` suffix (fixed width, sortable)."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


# `json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
# allow_nan=False)`: with arguments, `json.dumps` builds this encoder anew on every call
# (a dozen calls per event, on the writer thread and the event loop); one instance gives
# the same text (it keeps no state between calls, so threads may share it).
_CANONICAL: Final = json.JSONEncoder(
    sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
)
# A string JSON writes as itself between quotes: printable ASCII without `"` or `\`.
_BARE_STRING: Final = re.compile(r"[ !#-\[\]-~]*")


def canonical_json(value: Any) -> str:
    """The one JSON encoding used for hashing and storage, so both always agree.

    Raises ValueError for NaN/Infinity and TypeError for values JSON cannot carry, because
    a payload that cannot be re-read identically could never be verified.
    """
    return _CANONICAL.encode(value)


def _scalar_json(value: str | int) -> str:
    """`canonical_json` of an event's own str or int field (a run id, a time, a hash, a
    seq): the common case without the encoder, whose call costs more than the text."""
    if type(value) is int:
        return str(value)
    if type(value) is str and _BARE_STRING.fullmatch(value):
        return f'"{value}"'
    return canonical_json(value)


def normalize_payload(payload: Mapping[str, Any]) -> dict[str, Any]:
    """Turn a caller's payload into plain JSON data exactly as it will read back.

    Pydantic models, enums, paths, datetimes, tuples become their JSON forms; the result
    round-trips through `canonical_json` unchanged, so the event handed back by `append`
    equals the one later read from the store.
    """
    plain = to_jsonable_python(dict(payload))
    # The record is UTF-8 (hashed and stored so): a lone surrogate some caller let
    # through is made whole here rather than lose the event (`whole_json_text`).
    decoded: dict[str, Any] = json.loads(whole_json_text(canonical_json(plain)))
    return decoded


def event_hash(
    *,
    run_id: str,
    seq: int,
    kind: str,
    round_: int,
    at: str,
    payload: Mapping[str, Any],
    prev_hash: str,
) -> str:
    """sha256 hex digest of the canonical encoding of an event's content and its link."""
    return event_hash_of_text(
        run_id=run_id,
        seq=seq,
        kind=kind,
        round_=round_,
        at=at,
        payload_text=canonical_json(payload),
        prev_hash=prev_hash,
    )


def event_hash_of_text(
    *,
    run_id: str,
    seq: int,
    kind: str,
    round_: int,
    at: str,
    payload_text: str,
    prev_hash: str,
) -> str:
    """`event_hash` for a payload already in canonical form (what the store writes), so
    a payload is encoded once. The body is spelled out in the order `canonical_json`
    gives it (keys sorted: at, kind, payload, prev_hash, round, run_id, seq); a nested
    canonical text is exactly what the whole encoding holds at that place."""
    body = (
        f'{{"at":{_scalar_json(at)},"kind":{_scalar_json(kind)},'
        f'"payload":{payload_text},"prev_hash":{_scalar_json(prev_hash)},'
        f'"round":{_scalar_json(round_)},"run_id":{_scalar_json(run_id)},'
        f'"seq":{_scalar_json(seq)}}}'
    )
    return hashlib.sha256(body.encode("utf-8")).hexdigest()


_KIND_VALUES: Final = frozenset(kind.value for kind in EventKind)


# --- redaction -------------------------------------------------------------------------
#
# Rule (applied to every dict key at any depth, after lower-casing and mapping "-", " "
# and "." to "_"): a key is secret when it
#   - contains one of SECRET_KEY_PARTS (api_key, apikey, authorization, password, passwd,
#     secret, private_key, credential, cookie), or
#   - is "token" / "bearer" or ends with "_token" (access_token, x_auth_token, ...).
# Usage counters such as "input_tokens" or "max_tokens" are *not* secret: they end in
# "_tokens", not "_token". Independently of keys, a string value of the form
# "Bearer <credential>" is replaced, since it can only be an authorization header.
# Secret values are replaced by "[REDACTED]" whatever their type; nothing else changes.

SECRET_KEY_PARTS: Final = (
    "api_key",
    "apikey",
    "authorization",
    "password",
    "passwd",
    "secret",
    "private_key",
    "credential",
    "cookie",
)
_KEY_SEPARATORS = re.compile(r"[-\s.]+")
_BEARER_VALUE = re.compile(r"^\s*bearer\s+\S+\s*$", re.IGNORECASE)


@functools.lru_cache(maxsize=4096)  # payload keys repeat; each is judged once
def is_secret_key(key: str) -> bool:
    """True when a payload key names a credential under the redaction rule above."""
    name = _KEY_SEPARATORS.sub("_", key.strip().lower())
    if any(part in name for part in SECRET_KEY_PARTS):
        return True
    return name in {"token", "bearer"} or name.endswith("_token")


def bearer_value(text: str) -> bool:
    """True when a string value is an authorization header's `Bearer <credential>`."""
    return _BEARER_VALUE.match(text) is not None


def redact(payload: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of `payload` with every secret value replaced by `REDACTED`."""
    return {key: _redact_entry(key, value) for key, value in payload.items()}


def _redact_entry(key: object, value: Any) -> Any:
    if isinstance(key, str) and is_secret_key(key):
        return REDACTED
    return _redact_value(value)


def _redact_value(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {k: _redact_entry(k, v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_redact_value(item) for item in value]
    if isinstance(value, str) and bearer_value(value):
        return REDACTED
    return value


# --- chain check -----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class StoredEvent:
    """An event exactly as stored (payload still text), so a tampered row that no longer
    fits the `Event` model can still be examined and reported instead of crashing."""

    run_id: str
    seq: int
    kind: str
    round: int
    at: str
    payload_text: str
    prev_hash: str
    hash: str


def check_chain(run_id: str, rows: Iterable[StoredEvent]) -> tuple[list[str], int]:
    """Check content hashes, links and numbering of one run's events (sorted by seq).

    Returns (problems, events checked). It cannot see a removed tail: that needs the head
    the store keeps beside the chain (see `RunStore.verify`).
    """
    problems: list[str] = []
    expected_seq = 1
    prev_stored_hash = GENESIS_HASH
    checked = 0
    for row in rows:
        checked += 1
        problems.extend(_check_numbering(row, expected_seq, checked))
        if row.prev_hash != prev_stored_hash:
            problems.append(
                f"seq {row.seq}: prev_hash {row.prev_hash[:12]}… does not link to the event "
                f"before it ({prev_stored_hash[:12]}…): an event was removed, inserted or moved"
            )
        problems.extend(_check_content(run_id, row))
        expected_seq = row.seq + 1
        prev_stored_hash = row.hash
    if checked == 0:
        problems.append("run has no events (not even run_started)")
    return problems, checked


def _check_numbering(row: StoredEvent, expected_seq: int, position: int) -> list[str]:
    problems: list[str] = []
    if row.seq > expected_seq:
        missing = (
            f"seq {expected_seq}"
            if row.seq == expected_seq + 1
            else f"seqs {expected_seq}..{row.seq - 1}"
        )
        problems.append(f"seq {row.seq}: {missing} missing before it (deleted events)")
    elif row.seq < expected_seq:
        problems.append(f"seq {row.seq}: out of order, expected seq {expected_seq}")
    if position == 1 and row.kind != EventKind.RUN_STARTED:
        problems.append(f"seq {row.seq}: first event is {row.kind!r}, expected 'run_started'")
    return problems


def _check_content(run_id: str, row: StoredEvent) -> list[str]:
    problems: list[str] = []
    if row.kind not in _KIND_VALUES:
        problems.append(f"seq {row.seq}: unknown kind {row.kind!r}")
    try:
        payload = json.loads(row.payload_text)
    except ValueError:
        return [*problems, f"seq {row.seq}: payload is not valid JSON"]
    if not isinstance(payload, dict):
        return [*problems, f"seq {row.seq}: payload is not a JSON object"]
    if canonical_json(payload) != row.payload_text:
        problems.append(f"seq {row.seq}: payload text is not in canonical form (edited)")
    computed = event_hash(
        run_id=run_id,
        seq=row.seq,
        kind=row.kind,
        round_=row.round,
        at=row.at,
        payload=payload,
        prev_hash=row.prev_hash,
    )
    if computed != row.hash:
        problems.append(
            f"seq {row.seq}: content does not match its hash (stored {row.hash[:12]}…, "
            f"computed {computed[:12]}…): kind, round, time, payload or hash was edited"
        )
    return problems
