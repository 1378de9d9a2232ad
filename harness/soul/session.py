"""One run's SOUL: what the orchestrator asks of the GENE cycle.

* the developer text of every envelope: the harness's own GENE/RULE block, then the SOUL
  as the agent reads it (`prompt_text`), both with developer provenance (the principal's
  words, never the agent's);
* `observe`: a runtime finding (a violation kind of the record, or `claim_rejected`) → at
  most one occurrence per GENE per round (one forged reply with two forged keys is one
  error, not two) → the step it is;
* `persist`: every occurrence of the session to the SOUL (or its pending file), before the
  run ends, whichever way it ends.
"""

from __future__ import annotations

from pathlib import Path

from envelopes.soul import Soul
from harness.soul.cycle import (
    RUNTIME_CORRECTIONS,
    GeneCycle,
    Observation,
    StepKind,
    prompt_text,
)
from harness.soul.file import Persisted, persist


class SoulSession:
    def __init__(
        self,
        path: Path,
        soul: Soul,
        run_id: str,
        *,
        readonly: bool = False,
        observations: list[Observation] | None = None,
    ) -> None:
        self.path = path
        self.readonly = readonly
        self.cycle = GeneCycle(soul, run_id, observations)
        self._seen_this_round: set[tuple[int, str]] = set()
        self.persisted_steps = -1
        """How many occurrences the last persist wrote (-1: none yet)."""

    @property
    def ending(self) -> Observation | None:
        """The occurrence that ends the session (the third of one error), if any."""
        return self.cycle.ending

    def developer_text(self, harness_genes: str) -> str:
        soul = prompt_text(self.cycle.view)
        return f"{harness_genes.rstrip()}\n{soul}\n" if soul else harness_genes

    def observe(self, finding: str, round: int) -> tuple[Observation, StepKind] | None:
        correction = RUNTIME_CORRECTIONS.get(finding)
        if correction is None or (round, correction.gene) in self._seen_this_round:
            return None
        self._seen_this_round.add((round, correction.gene))
        return self.cycle.observe(correction, round)

    def would_end(self, finding: str, round: int) -> bool:
        correction = RUNTIME_CORRECTIONS.get(finding)
        return (
            correction is not None
            and (round, correction.gene) not in self._seen_this_round
            and self.cycle.would_end(correction.gene)
        )

    def followed(self, reply: str) -> str | None:
        """The principal's GENE the agent says it followed (Part IV STEP-1: "the agent may
        state which GENE or instruction it followed"), written `followed:NAME` or as the
        GENE's header `::GENE{NAME`. Recorded with the error only: the agent's word does
        not turn its error into a principal_rule_error (that is a person's call, `ilh
        correct --class principal_rule_error`), so citing a rule never escapes correction."""
        for gene in self.cycle.base.genes:
            if f"followed:{gene.name}" in reply or f"::GENE{{{gene.name}" in reply:
                return gene.name
        return None

    def persist(self) -> Persisted | None:
        """Write the session's occurrences; None when there is nothing new since the last
        write (a SOUL is not rewritten by a run that corrected nothing)."""
        count = len(self.cycle.observations)
        if count == self.persisted_steps or (count == 0 and self.persisted_steps < 0):
            return None
        done = persist(self.path, self.cycle.observations, readonly=self.readonly)
        self.persisted_steps = count
        return done
