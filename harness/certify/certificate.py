"""The Certificate of DIYLISIS F7 and its parts (TYPES: StableRef, ActivationEdge,
RouteJudgment, RepairDelta/EmittedDelta, DecisionRecord, ReceptionProcedure), as pydantic
models; `certificate_schema()` is its JSON Schema (`certificate.schema.json` beside this
module is that schema, written out, and a test keeps the two equal).

`ilh certify --json` prints one `Certificate`, certified or not (`certified`, `reason`).
Paths in it are relative to the certificate's own folder (the current folder when it is
printed rather than written), so a receiver holding the certificate beside the record can
re-check it (`ilh certify --check`).
"""

from __future__ import annotations

import hashlib
import json
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from graders.refuter import Advisory, Finding, Verdict

FORMAT = "ilh-certificate/1"
DIGEST_PATTERN = r"^sha256:[0-9a-f]{64}$"

RefKind = Literal["path", "url", "id", "command"]
Observation = Literal["inline", "observed", "unobserved"]
ResidualReason = Literal[
    "unresolved", "unknown-provenance", "comprehension-gap", "certification-leg", "exposure"
]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def sha256_digest(data: bytes) -> str:
    """A content digest as the certificate carries it: `sha256:<hex>` over exact bytes."""
    return "sha256:" + hashlib.sha256(data).hexdigest()


class StableRef(_Model):
    kind: RefKind
    locator: str = Field(min_length=1)


class ActivationEdge(_Model):
    """The minimal hand-over: a verb and the target by reference (never a copy)."""

    verb: str = Field(min_length=1)
    locator: StableRef


class ContextItem(_Model):
    """One item of the target: where it stands and what it says."""

    location: str = Field(description="line:col of its first character in the target")
    origin: Literal["DocumentRead", "ToolOutput", "UserStatement", "AIInference"]
    content: str


class ValueVerdict(_Model):
    kind: Literal["Value"] = "Value"
    evidence: str = Field(description="the inline evidence, as the target carries it")


class ReferenceVerdict(_Model):
    kind: Literal["Reference"] = "Reference"
    stable_ref: StableRef


class RouteJudgment(_Model):
    item: ContextItem
    verdict: Annotated[ValueVerdict | ReferenceVerdict, Field(discriminator="kind")]
    basis: str = Field(min_length=1)
    observation: Observation = Field(
        description="inline: carried in the target; observed: the certifier dereferenced it "
        "within the granted sources; unobserved: a durable class beyond the certifier's "
        "reach, never resolved by it (the receiver re-verifies)"
    )


class Resolution(_Model):
    kind: Literal["Resolution"] = "Resolution"
    at: str = Field(description="line:col of the claim the addition stands beside")
    added: str = Field(min_length=1)


class RepairDelta(_Model):
    """A Resolution delta as emitted (in full: its content survives in the target)."""

    kind: Literal["Resolution"] = "Resolution"
    repair: Resolution
    basis: str


class ExcisionMark(_Model):
    """An excision, emitted content-free: never the excised item, content or span."""

    kind: Literal["ExcisionMark"] = "ExcisionMark"


EmittedDelta = Annotated[RepairDelta | ExcisionMark, Field(discriminator="kind")]


class AlreadyPortable(_Model):
    kind: Literal["AlreadyPortable"] = "AlreadyPortable"


class Repaired(_Model):
    kind: Literal["Repaired"] = "Repaired"
    deltas: list[EmittedDelta] = Field(min_length=1)


class DecisionRecord(_Model):
    claim: str
    ledger_ref: StableRef | None = None
    deferral: str | None = None


class ReceptionProcedure(_Model):
    role: str
    granted_sources: list[StableRef]
    source_identities: dict[str, Annotated[str, Field(pattern=DIGEST_PATTERN)]] | None = Field(
        default=None,
        description="each granted source's content identity at certification, by locator "
        "(`harness.certify.sources`): `ilh certify --check` fails when one changed; null in "
        "a certificate issued before sources were bound by content (which fails the check)",
    )
    verification_commands: list[str]
    execution_scope: str
    stop_condition: str
    dereference_steps: list[str]
    premises: list[DecisionRecord]


class GateAnswer(_Model):
    tag: Advisory
    value: str | None = None


class Residual(_Model):
    """A ResidualLedger entry as the certificate shows it."""

    finding: Finding
    reason: ResidualReason
    source: Literal["lint", "refuter", "contract"]
    surfaced: bool
    deferred: bool = False
    answer: GateAnswer | None = None


class ConsumerProfile(_Model):
    """Who receives the record (DIYLISIS Rule 32, captured at Qp)."""

    recipient_class: Literal["human", "agent"]
    substrate_access: bool


class Derived(_Model):
    kind: Literal["Derived"] = "Derived"


class AuthoritativeAt(_Model):
    kind: Literal["AuthoritativeAt"] = "AuthoritativeAt"
    location: StableRef


AuthorityCopy = Annotated[Derived | AuthoritativeAt, Field(discriminator="kind")]


class PremiseGate(_Model):
    """Qp (Rule 32): whether it fired, who answered, and its answer (Aq)."""

    fired: bool
    answered_by: Literal["user", "answers", "default"] | None = None
    consumer_profile: ConsumerProfile | None = None
    authority_copy: AuthorityCopy | None = None

    def authority_line(self) -> str | None:
        """The line inscribed in the artifact (Rule 32), or None when Qp did not fire."""
        copy = self.authority_copy
        if copy is None:
            return None
        if isinstance(copy, AuthoritativeAt):
            return f"derived copy, authoritative at {copy.location.locator}"
        return "derived copy"


class Seal(_Model):
    """Who issued the certificate, as a MAC (`harness.certify.seal`): an HMAC-SHA256, with
    the per-user record key, over the certificate's canonical content without this field."""

    algorithm: Literal["hmac-sha256"] = "hmac-sha256"
    key_id: str = Field(
        pattern=r"^[0-9a-f]{16}$", description="the issuing key's public fingerprint"
    )
    mac: str = Field(pattern=r"^[0-9a-f]{64}$")


class Certificate(_Model):
    format: Literal["ilh-certificate/1"] = "ilh-certificate/1"
    certified: bool
    target: StableRef
    target_identity: str = Field(pattern=DIGEST_PATTERN)
    activation_edge: ActivationEdge
    judgments: list[RouteJudgment]
    outcome: Annotated[AlreadyPortable | Repaired, Field(discriminator="kind")]
    reception_procedure: ReceptionProcedure
    verdict: Verdict | None = Field(
        description="the last F5 verdict; null when no valid verdict was reached"
    )
    residuals: list[Residual]
    reason: str | None = None
    awaiting_confirmation: list[str] = Field(
        default_factory=list,
        description="contract fields the session authored that the user has not confirmed",
    )
    premise_gate: PremiseGate = Field(
        default_factory=lambda: PremiseGate(fired=False),
        description="Qp (Rule 32): fires on a repair, a named certificate target or premises",
    )
    passes: int = Field(ge=0)
    issued_at: str
    run_id: str | None = None
    seal: Seal | None = Field(
        default=None,
        description="the issuer's MAC; `ilh run` and `ilh certify --check` trust only a "
        "certificate whose seal verifies with the key of the user checking it",
    )

    def to_json(self) -> str:
        return self.model_dump_json(indent=2)


def certificate_schema() -> dict[str, object]:
    schema = Certificate.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["$id"] = "https://ilang-harness.invalid/schemas/certificate.schema.json"
    return schema


def schema_text() -> str:
    return json.dumps(certificate_schema(), indent=2, ensure_ascii=False) + "\n"
