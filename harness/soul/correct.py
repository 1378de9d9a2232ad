"""`ilh correct RUN`: an error a person reports on a recorded run (SPEC-v5.0 Part IV STEP-1),
and the counts `ilh soul show` reports.

An agent error (factual_error, judgment_error, style_violation, boundary_breach,
repeated_pattern) is one occurrence of the cycle, exactly as a runtime finding is: recorded
in the run as a `gene` event first (the record is what `ilh soul sync` replays), then
persisted to the run's SOUL (its pending file for a `--soul-readonly` run).

A principal_rule_error names the principal's GENE that produced the error (`--gene`): the
GENE gets a FLAG line for the principal to amend; no GENE is added against the agent and
nothing counts toward promotion or termination (§3). Counts are reported apart (§4).
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from envelopes.declarations.gene import NAME_PATTERN, slug
from envelopes.soul import Soul
from harness.inputs.errors import InputError
from harness.record.events import EventKind
from harness.record.store import RunStore
from harness.soul.cycle import Correction, Observation, StepKind, apply_observation
from harness.soul.file import flag_rule, load_soul, persist, read_pending
from harness.soul.sync import OBSERVATION, STEP, observations_of, persisted_payload, soul_of

_NAME = re.compile(NAME_PATTERN)


@dataclass(frozen=True)
class Corrected:
    soul: Path
    gene: str
    step: StepKind | str
    pending: bool


def _checked_run(store: RunStore, run_ref: str) -> tuple[str, Path, bool, int, int]:
    run_id = store.resolve_run_id(run_ref)
    check = store.verify(run_id)
    if not check.ok:
        raise InputError(run_ref, "E303", "the run record fails verification: " + check.problems[0])
    events = store.events(run_id)
    path, readonly = soul_of(events)
    if path is None:
        raise InputError(run_ref, "E303", "the run has no SOUL ([agent] soul in its task file)")
    steps = len(observations_of(events))
    return run_id, path, readonly, events[-1].round, steps


def correct_run(
    store: RunStore, run_ref: str, error_class: str, text: str, gene: str | None
) -> Corrected:
    if not text.strip():
        raise InputError("--text", "E303", "say what the error was (the correct behaviour)")
    if gene is not None and not _NAME.match(gene):
        raise InputError("--gene", "E303", f"not a GENE name (an identifier): {gene!r}")
    run_id, path, readonly, last_round, steps = _checked_run(store, run_ref)
    if error_class == "principal_rule_error":
        if gene is None:
            raise InputError("--gene", "E303", "principal_rule_error names the rule: --gene NAME")
        flag = flag_rule(path, gene, run_id, text)
        payload = {STEP: "principal_rule_error", "gene": gene, "note": flag.note, "soul": str(path)}
        store.append(run_id, EventKind.GENE, payload, round=last_round)
        return Corrected(path, gene, "principal_rule_error", pending=False)
    soul = load_soul(path)
    existing = soul.gene(gene) if gene is not None else None
    if error_class == "repeated_pattern" and existing is None:
        raise InputError(
            "--gene", "E303", "repeated_pattern is an error already corrected: name its GENE"
        )
    words = slug(text)
    correction = Correction(
        gene=gene or f"{error_class}_{slug(text, 40)}",
        error=error_class,
        trait=words,
        anti=f"not_{slug(text, 60)}⇒{error_class}",
    )
    seen = Observation(correction=correction, run=run_id, round=last_round, step=steps)
    view = soul
    if readonly:
        for earlier in read_pending(path):
            view, _ = apply_observation(view, earlier)
    _, kind = apply_observation(view, seen)
    store.append(
        run_id,
        EventKind.GENE,
        {STEP: kind, OBSERVATION: seen.model_dump(mode="json"), "soul": str(path), "by": "person"},
        round=last_round,
    )
    done = persist(path, [seen], readonly=readonly)
    store.append(run_id, EventKind.GENE, persisted_payload(path, done, "correct"), round=last_round)
    return Corrected(path, correction.gene, kind or "added", pending=done.pending)


def error_counts(soul: Soul) -> tuple[Counter[str], int]:
    """Agent errors by class (every SEEN line), and principal_rule_errors (FLAG lines),
    reported apart (§4 report)."""
    agent: Counter[str] = Counter()
    principal = 0
    for gene in soul.genes:
        agent.update(o.error for o in gene.seen)
        principal += len(gene.flags)
    return agent, principal
