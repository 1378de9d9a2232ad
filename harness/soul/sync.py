"""A run's GENE occurrences, from its record to its SOUL (`ilh soul sync RUN`, a resume).

The run record keeps every step of the cycle as a `gene` event. A run killed before it
could persist (`kill -9`) left its occurrences only there: applying them again is safe
(idempotent per run and step, `harness.soul.cycle`), so sync may run any number of times.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import ValidationError

from harness.inputs.errors import InputError
from harness.record.events import Event, EventKind
from harness.record.store import RunStore
from harness.soul.cycle import Observation
from harness.soul.file import Persisted, persist

#: `gene` event payload keys.
STEP = "step"
OBSERVATION = "observation"
OBSERVED_STEPS = ("added", "promoted", "terminated")


def soul_of(events: list[Event]) -> tuple[Path | None, bool]:
    """The SOUL a run used and whether it ran read-only, from its run_started meta."""
    meta = events[0].payload.get("meta", {}) if events else {}
    path = meta.get("soul") if isinstance(meta, dict) else None
    readonly = bool(meta.get("soul_readonly")) if isinstance(meta, dict) else False
    return (Path(path) if isinstance(path, str) and path else None), readonly


def observations_of(events: list[Event]) -> list[Observation]:
    found: list[Observation] = []
    for event in events:
        if event.kind is not EventKind.GENE or event.payload.get(STEP) not in OBSERVED_STEPS:
            continue
        try:
            found.append(Observation.model_validate(event.payload.get(OBSERVATION)))
        except ValidationError:
            continue  # a verified record holds only what the runtime wrote
    return found


def persisted_payload(path: Path, persisted: Persisted, how: str) -> dict[str, Any]:
    return {
        STEP: "persisted",
        "soul": str(path),
        "occurrences": persisted.written,
        "pending": persisted.pending,
        "why": persisted.why,
        "by": how,
    }


def verified_events(store: RunStore, run_ref: str, refused: str) -> tuple[str, list[Event]]:
    """The run's id and events, once its record verifies: what a resume or a sync
    reads must be what the run recorded (`refused`: what is not done otherwise)."""
    run_id = store.resolve_run_id(run_ref)
    check = store.verify(run_id)
    if not check.ok:
        raise InputError(
            run_ref,
            "E303",
            f"the run record fails verification; {refused}: " + "; ".join(check.problems[:3]),
        )
    return run_id, store.events(run_id)


def sync_run(store: RunStore, run_ref: str) -> tuple[Path, Persisted]:
    """Persist the GENE occurrences of a recorded run to its SOUL; record that it did."""
    run_id, events = verified_events(store, run_ref, "not synced")
    path, readonly = soul_of(events)
    if path is None:
        raise InputError(run_ref, "E303", "the run has no SOUL ([agent] soul in its task file)")
    persisted = persist(path, observations_of(events), readonly=readonly)
    last = events[-1].round if events else 0
    store.append(run_id, EventKind.GENE, persisted_payload(path, persisted, "sync"), round=last)
    return path, persisted
