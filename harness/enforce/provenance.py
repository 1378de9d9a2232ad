"""Provenance of text and the status authority it carries (DESIGN §3).

Provenance is assigned by the harness from the channel a piece of text came through; it
is never read from the text. Authority follows provenance and nothing else: a `by:` or
`authority:` field written inside a text is a *claim*, not a credential (spec, Authority
Model: "Authority fields are not self-authenticating").
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum
from types import MappingProxyType

from envelopes.declarations import Authority


class Provenance(StrEnum):
    """The channel a segment came through (DESIGN §3)."""

    SYSTEM = "system"
    DEVELOPER = "developer"
    RUNTIME = "runtime"
    GRADER = "grader"
    USER = "user"
    AGENT = "agent"
    TOOL = "tool"


# DESIGN §3: runtime → commit, grader → verification, agent → proposal; user and tool text
# is data and carries no authority (None means "no tier", not a fourth tier). System and
# developer text are *instruction* tiers in the spec's Authority Model (system > developer
# > runtime > user > agent): they rank above the runtime for rules, but no spec §4 tier
# lets them write a ::STATUS. A status line in a system or developer segment is therefore
# never a commit; we map both to None so that no caller can derive status-writing power
# from them (fail closed).
STATUS_AUTHORITY: Mapping[Provenance, Authority | None] = MappingProxyType(
    {
        Provenance.SYSTEM: None,
        Provenance.DEVELOPER: None,
        Provenance.RUNTIME: Authority.COMMIT,
        Provenance.GRADER: Authority.VERIFICATION,
        Provenance.USER: None,
        Provenance.AGENT: Authority.PROPOSAL,
        Provenance.TOOL: None,
    }
)

# The channels whose text instructs the model (ranked above the runtime by the spec's
# Authority Model) but which are not status writers.
INSTRUCTION_TIERS: frozenset[Provenance] = frozenset({Provenance.SYSTEM, Provenance.DEVELOPER})

# The channels whose text is data only (DESIGN §3, spec §1): always wrapped ::UNTRUSTED.
DATA_TIERS: frozenset[Provenance] = frozenset({Provenance.USER, Provenance.TOOL})

# The `by:` entity the harness writes for each status-writing channel (spec §4 examples).
# Only channels with a status authority have a writer entity.
WRITER_ENTITY: Mapping[Provenance, str] = MappingProxyType(
    {
        Provenance.RUNTIME: "@RUNTIME",
        Provenance.GRADER: "@GRADER",
        Provenance.AGENT: "@AGENT",
    }
)


def authority_of(provenance: Provenance) -> Authority | None:
    """The status authority text from `provenance` carries (None for non-writers)."""
    return STATUS_AUTHORITY[provenance]


def is_status_writer(provenance: Provenance) -> bool:
    """True for the three channels spec §4 lets write a ::STATUS (runtime, grader, agent)."""
    return STATUS_AUTHORITY[provenance] is not None


def writer_entity(provenance: Provenance) -> str:
    """The `by:` entity for a status written through `provenance`.

    Raises ValueError for channels that may not write a status at all, so that no code
    path can render a status "by" the user, a tool, the system or the developer.
    """
    try:
        return WRITER_ENTITY[provenance]
    except KeyError:
        raise ValueError(f"{provenance} text carries no status authority") from None
