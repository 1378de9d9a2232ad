"""Integrity checks of a run's record beyond its hash chain: the committed head (a cut or
extended tail), the runs row (which stands outside the chain) and the head's MAC (which
only the holder of the record key can compute, see `harness.record.keys`).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from harness.record.database import as_int, json_object, optional_str
from harness.record.events import EventKind, StoredEvent, canonical_json
from harness.record.keys import RecordKey


def check_head(rows: list[StoredEvent], head_seq: int, head_hash: str) -> list[str]:
    """Compare the stored chain with the head committed beside it in the runs row."""
    if not rows:
        return []
    last = rows[-1]
    if last.seq < head_seq:
        return [
            f"record ends at seq {last.seq} but the store committed up to seq {head_seq}: "
            f"events after seq {last.seq} were removed (tail cut)"
        ]
    if last.seq > head_seq:
        return [
            f"seq {last.seq}: events after the committed head (seq {head_seq}) were not "
            "written by the store (inserted)"
        ]
    if last.hash != head_hash:
        return [
            f"seq {last.seq}: hash {last.hash[:12]}… differs from the committed head hash "
            f"{head_hash[:12]}… (last event replaced or head edited)"
        ]
    return []


def check_run_row(
    rows: list[StoredEvent], task_id: str, created_at: str, meta_text: str
) -> list[str]:
    """The runs row is outside the chain; tie it to the run_started event, which is in it."""
    first = rows[0] if rows else None
    if first is None or first.seq != 1 or first.kind != EventKind.RUN_STARTED:
        return []  # check_chain already reports a missing or wrong first event
    started = json_object(first.payload_text)
    problems: list[str] = []
    if started.get("task_id") != task_id:
        problems.append(
            f"runs row: task_id {task_id!r} differs from run_started (seq 1) "
            f"{started.get('task_id')!r}"
        )
    if meta_text != canonical_json(started.get("meta")):
        problems.append("runs row: meta differs from run_started (seq 1)")
    if created_at != first.at:
        problems.append(
            f"runs row: created_at {created_at!r} differs from run_started (seq 1) {first.at!r}"
        )
    return problems


# --- the authenticated head -------------------------------------------------------------
#
# MAC rule: head_mac = HMAC-SHA256(record key, canonical_json({"v": 1, "run_id",
# "head_seq", "head_hash", "task_id", "created_at", "meta_sha256"})) in hex, where
# meta_sha256 is the sha256 of the runs row's meta text. Every event is covered through
# head_hash (each hash covers its event and the one before); the runs row, outside the
# chain, through the rest. `key_id` (the key's public fingerprint) is stored beside it.

MacStatus = Literal["ok", "mismatch", "legacy", "other_key", "no_key"]


@dataclass(frozen=True, slots=True)
class HeadRow:
    """A runs row as stored (columns `database.HEAD_COLUMNS`), possibly tampered with."""

    run_id: str
    task_id: str
    created_at: str
    meta_text: str
    head_seq: int
    head_hash: str
    head_mac: str | None
    key_id: str | None

    @classmethod
    def of(cls, row: tuple[Any, ...]) -> HeadRow:
        return cls(
            run_id=str(row[0]),
            task_id=str(row[1]),
            created_at=str(row[2]),
            meta_text=str(row[3]),
            head_seq=as_int(row[4]),
            head_hash=str(row[5]),
            head_mac=optional_str(row[6]),
            key_id=optional_str(row[7]),
        )

    def message(self) -> bytes:
        return head_message(
            run_id=self.run_id,
            head_seq=self.head_seq,
            head_hash=self.head_hash,
            task_id=self.task_id,
            created_at=self.created_at,
            meta_text=self.meta_text,
        )


def head_message(
    *, run_id: str, head_seq: int, head_hash: str, task_id: str, created_at: str, meta_text: str
) -> bytes:
    """What the head's MAC authenticates (the rule above)."""
    body = {
        "v": 1,
        "run_id": run_id,
        "head_seq": head_seq,
        "head_hash": head_hash,
        "task_id": task_id,
        "created_at": created_at,
        "meta_sha256": hashlib.sha256(meta_text.encode("utf-8")).hexdigest(),
    }
    return canonical_json(body).encode("utf-8")


def mac_status(head: HeadRow, key: RecordKey | None) -> MacStatus:
    if head.head_mac is None:
        return "legacy"
    if key is None:
        return "no_key"
    if head.key_id != key.key_id:
        return "other_key"
    return "ok" if key.matches(head.message(), head.head_mac) else "mismatch"


def check_mac(head: HeadRow, key: RecordKey | None, key_path: Path) -> tuple[MacStatus, list[str]]:
    """The head's MAC, with one message saying what a failure means."""
    status = mac_status(head, key)
    if status == "ok":
        return status, []
    if status == "legacy":
        why = (
            "unauthenticated (legacy): the run was recorded before run heads were "
            "authenticated (no MAC), so nothing shows it was not rewritten and re-hashed"
        )
    elif status == "no_key":
        why = (
            f"cannot authenticate the head: there is no record key at {key_path} (the key "
            "this record was written with is elsewhere, or was removed)"
        )
    elif status == "other_key":
        shown = key.key_id if key is not None else "?"
        why = (
            f"this record was written with another key (key id {head.key_id}; the key at "
            f"{key_path} is {shown}): set ILH_RECORD_KEY_FILE to the key it was written with"
        )
    else:
        why = (
            f"runs row: the head (seq {head.head_seq}, hash {head.head_hash[:12]}…) does not "
            "match its MAC: the record or its head was rewritten (events re-hashed, a tail "
            "cut and the head moved back, or a MAC copied from another run)"
        )
    return status, [why]


def quick_record_status(
    head: HeadRow, key: RecordKey | None, events: int, last_seq: object, last_hash: object
) -> str:
    """`RunSummary.record`: one MAC and the last stored row per run, cheap enough for
    `ilh runs list`. It sees a rewritten or moved head, a cut or extended tail, a copied
    MAC; an edit in the middle of a chain it leaves to `ilh runs verify`."""
    status = mac_status(head, key)
    if status == "legacy":
        return "unauthenticated (legacy)"
    if status == "no_key":
        return "no key"
    if status == "other_key":
        return "other key"
    if status == "mismatch":
        return "TAMPERED"
    ends_at_head = as_int(last_seq) == head.head_seq == events and str(last_hash) == head.head_hash
    return "authenticated" if ends_at_head else "TAMPERED"
