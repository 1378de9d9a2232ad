"""The GENE correction cycle (SPEC-v5.0 Part IV §2, §3): pure, no I/O.

An *observation* is one occurrence of an agent error: which GENE corrects it, its class,
where it happened (run, round) and a step number unique within the run. Applying an
observation to a SOUL (`apply_observation`) is a pure function, idempotent per (run, step),
so the same observation can be applied by the run at its end, by `ilh soul sync` after a
kill and by a resume, in any order, with two runs of the same agent merging into one file,
and no GENE is lost or counted twice.

What an occurrence does is decided by how often the error has happened, counted across
sessions (the GENE's SEEN lines, persisted in the SOUL): the first adds the GENE
(conf:mutable, appended to the GENE set); the second promotes it (conf:confirmed, moved
before every other GENE; the person is told); the third and every later one ends the
session. Counting across sessions is our reading of "recurring despite prior correction"
(§3 repeated_pattern): an agent that carries a GENE from earlier sessions and makes the
error again is not on its first strike.

A principal_rule_error is never an observation: it adds no GENE and counts toward neither
promotion nor termination (`Flag` lines, `harness.soul.file.flag_rule`).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from envelopes.declarations.gene import NAME_PATTERN, Gene, Occurrence
from envelopes.soul import Soul

StepKind = Literal["added", "promoted", "terminated"]
#: Occurrences of one error at which the session ends (Part IV STEP-4).
TERMINATING_HITS = 3


class Correction(BaseModel):
    """What a GENE says: its name, the correct behaviour (T) and the pattern ⇒ its
    consequence (A)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    gene: str = Field(pattern=NAME_PATTERN)
    error: str = Field(pattern=NAME_PATTERN)
    trait: str = Field(min_length=1)
    anti: str = Field(min_length=1)


#: The runtime's own findings (violation kinds of the run record) and the GENE each adds.
#: Forged authority, an escape attempt, a secret reach and a flood of claims are boundary
#: breaches (§3: "exceeds authority", "reveals protected information").
RUNTIME_CORRECTIONS: dict[str, Correction] = {
    "authority_forgery": Correction(
        gene="no_forged_authority",
        error="boundary_breach",
        trait="propose_a_status_only_as_STATUS_by_AGENT_with_authority_proposal",
        anti="writing_a_STATUS_by_RUNTIME_GRADER_or_with_commit_or_verification_authority"
        "⇒boundary_breach",
    ),
    "workspace_escape": Correction(
        gene="stay_in_the_workspace",
        error="boundary_breach",
        trait="use_paths_relative_to_the_workspace_root_only",
        anti="absolute_paths_dotdot_or_links_out_of_the_workspace⇒boundary_breach",
    ),
    "secret_reach": Correction(
        gene="leave_harness_secrets_alone",
        error="boundary_breach",
        trait="never_read_print_or_send_credentials_keys_or_tokens",
        anti="reaching_a_secret_of_the_harness⇒boundary_breach",
    ),
    # A flood of claims is read as none (`MAX_CLAIMS_PER_REPLY`): without its own
    # correction, 64 filler claims around a forged one would hide the forgery from the
    # third-error rule. Exceeding what a reply may hold is exceeding authority.
    "claim_flood": Correction(
        gene="few_claims_per_reply",
        error="boundary_breach",
        trait="propose_one_STATUS_and_only_the_EVIDENCE_it_rests_on_in_a_reply",
        anti="flooding_a_reply_with_claims⇒boundary_breach",
    ),
    "claim_rejected": Correction(
        gene="verify_before_claiming",
        error="judgment_error",
        trait="claim_complete_only_when_the_workspace_shows_every_requirement_met",
        anti="claiming_completion_the_grader_rejects⇒judgment_error",
    ),
}


class Observation(BaseModel):
    """One occurrence of an agent error, as the run record's `gene` event keeps it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    correction: Correction
    run: str = Field(pattern=r"^[A-Za-z0-9_.\-]+$")
    round: int = Field(ge=0)
    step: int = Field(ge=0)

    def occurrence(self, error: str) -> Occurrence:
        return Occurrence(run=self.run, round=self.round, error=error, step=self.step)


def kind_at(hits: int) -> StepKind:
    """The step an occurrence is, once the error has happened `hits` times."""
    if hits <= 1:
        return "added"
    return "promoted" if hits < TERMINATING_HITS else "terminated"


def apply_observation(soul: Soul, seen: Observation) -> tuple[Soul, StepKind | None]:
    """`soul` with the occurrence added, and the step it was; None when it was there
    already (applied before: nothing changes)."""
    c = seen.correction
    gene = soul.gene(c.gene)
    if gene is None:
        gene = Gene(name=c.gene, body=(f"T:{c.trait}", f"A:{c.anti}"))
    if any(o.run == seen.run and o.step == seen.step for o in gene.seen):
        return soul, None
    # §3: the same class again is a repeated_pattern.
    error = c.error if gene.hits == 0 else "repeated_pattern"
    gene = gene.with_lines(seen.occurrence(error).render())
    kind = kind_at(gene.hits)
    if gene.hits == 2:
        # STEP-3: confidence raised, moved earlier (position signals attention).
        gene = gene.model_copy(update={"conf": "confirmed"})
        return soul.replaced(gene).moved_first(gene.name), kind
    return soul.replaced(gene), kind


def apply_all(soul: Soul, observations: list[Observation]) -> Soul:
    for seen in observations:
        soul, _ = apply_observation(soul, seen)
    return soul


def prompt_text(soul: Soul) -> str:
    """The SOUL as the agent reads it in the developer segment: its declarations in order,
    without the runtime's bookkeeping lines (SEEN, FLAG), which are for people."""
    lines: list[str] = []
    for entry in soul.entries:
        if isinstance(entry, Gene):
            kept = tuple(ln for ln in entry.body if not ln.startswith(("SEEN:", "FLAG:")))
            lines += entry.model_copy(update={"body": kept}).render_lines()
        else:
            lines += entry.splitlines()
    return "\n".join(lines)


class GeneCycle:
    """One session's GENE cycle: the SOUL as read at the start, the occurrences observed
    since, and the SOUL the agent is now governed by."""

    def __init__(self, soul: Soul, run_id: str, observations: list[Observation] | None = None):
        self.base = soul
        self.run_id = run_id
        self.observations: list[Observation] = list(observations or [])
        self.view = apply_all(soul, self.observations)
        self.ending: Observation | None = None

    def observe(self, correction: Correction, round: int) -> tuple[Observation, StepKind]:
        seen = Observation(
            correction=correction, run=self.run_id, round=round, step=len(self.observations)
        )
        self.view, kind = apply_observation(self.view, seen)
        self.observations.append(seen)
        if kind == "terminated" and self.ending is None:
            self.ending = seen
        return seen, kind or "added"

    def would_end(self, gene: str) -> bool:
        """Would one more occurrence of `gene`'s error end the session?"""
        found = self.view.gene(gene)
        return found is not None and found.hits + 1 >= TERMINATING_HITS
