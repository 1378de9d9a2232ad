"""Integrity checks of a run's record beyond its hash chain: the committed head (a cut or
extended tail) and the runs row (which stands outside the chain).
"""

from __future__ import annotations

from harness.record.database import json_object
from harness.record.events import EventKind, StoredEvent, canonical_json


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
