"""One certification, F0 to F7 (DIYLISIS FLOW), with its bounded repair loop.

F0 declares the contract and the activation edge and holds the contract-provenance gate.
Each pass then runs the deterministic legs over the target's current bytes (F1-F4,
`harness.certify.scan`), asks for the F5 verdict (the refuter subagent when a model is
configured, else the lint-fallback verdict of the legs alone), and brings every open
finding to the Qd gate. Resolve and Route answers become claim-preserving RepairDeltas,
applied to the target in place only with `--apply` and logged with their reason; a Drop
excises the token (content-free in the certificate); a Defer carries the accepted gap to
the receiver as a premise with its condition. A pass that changed anything is followed
by another (F6), at most `MAX_PASSES`; the fixed point is a pass that changed nothing,
left no open residual, and got a Pass. F7 re-reads the target, checks it still has the
digest the final pass reviewed, and issues the Certificate.

Nothing here raises for a hostile target or refuter: they end as a certificate that is
not certified, with the reason. Unreadable or bad input raises `InputError` (exit 2)
before anything is recorded.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import structlog

from graders.refuter import Finding, Verdict
from harness.certify.certificate import (
    ActivationEdge,
    AlreadyPortable,
    AuthoritativeAt,
    Certificate,
    ConsumerProfile,
    DecisionRecord,
    Derived,
    EmittedDelta,
    ExcisionMark,
    GateAnswer,
    PremiseGate,
    ReceptionProcedure,
    RepairDelta,
    Repaired,
    Residual,
    Resolution,
    RouteJudgment,
    StableRef,
)
from harness.certify.contract import (
    MINIMAL_VERB,
    Answers,
    Contract,
    PremiseAnswer,
    apply_contract_answers,
    refuse_unusable_source,
)
from harness.certify.exposure import exposed_drops
from harness.certify.gate import Gate, UserLeft
from harness.certify.lexicon import Lexicon
from harness.certify.reach import Reach
from harness.certify.reach import Resolution as Reached
from harness.certify.refuter import RefuterBudget, RefuterInputs, RefuterSession
from harness.certify.scan import LintFinding, Scan, carried_content, lint_verdict, scan_target
from harness.certify.seal import issuing_key, seal_certificate
from harness.certify.sources import source_identity
from harness.certify.target import Target, read_target, relative_locator
from harness.inputs.errors import InputError
from harness.models.interface import ModelClient
from harness.record.events import EventKind, utc_now_iso
from harness.record.keys import RecordKey
from harness.record.store import RunStore

log = structlog.get_logger("ilh.certify")

MAX_PASSES = 5
WATCHLIST = ("read_file", "list_files", "grep", "ilh certify")
# Categories whose repair substitutes the token (F1 normalization, relocation, the
# intended plain text); elsewhere a repair adds beside the token, claim kept.
_SUBSTITUTED = frozenset({"deictic-anchors", "unresolvable-references", "rendering-accidents"})


@dataclass
class Request:
    target: str
    contract: Contract
    cwd: Path
    lexicon: Lexicon
    gate: Gate
    answers: Answers = field(default_factory=Answers)
    apply: bool = False
    client: ModelClient | None = None
    model_uri: str | None = None
    budget: RefuterBudget = field(default_factory=RefuterBudget)
    store: RunStore | None = None


@dataclass
class _Edit:
    line: int
    col: int
    length: int
    text: str
    delta: EmittedDelta
    finding: Finding


@dataclass
class _State:
    contract: Contract
    target: Target
    edge: ActivationEdge
    premises: list[DecisionRecord] = field(default_factory=list)
    deferred: dict[tuple[str, str], Residual] = field(default_factory=dict)
    deltas: list[EmittedDelta] = field(default_factory=list)
    repaired: set[tuple[str, str]] = field(default_factory=set)
    dropped: list[str] = field(default_factory=list)
    asked: dict[tuple[str, str], GateAnswer | None] = field(default_factory=dict)
    #: Indexes of `--answers` findings that answered a finding: the others are named in
    #: the reason (a typo in a token left its finding open with no word why).
    answered: set[int] = field(default_factory=set)
    notes: list[str] = field(default_factory=list)
    premise_gate: PremiseGate = field(default_factory=lambda: PremiseGate(fired=False))


class Certifier:
    def __init__(self, request: Request) -> None:
        self.request = request
        self.run_id: str | None = None
        self.key: RecordKey | None = None

    # -- the record ----------------------------------------------------------------------

    def record(self, kind: EventKind, payload: dict[str, Any], round_n: int = 0) -> None:
        store = self.request.store
        if store is not None and self.run_id is not None:
            store.append(self.run_id, kind, payload, round=round_n)

    def note(self, phase: str, summary: str, round_n: int = 0, **data: Any) -> None:
        self.record(EventKind.NOTE, {"phase": phase, "summary": summary, **data}, round_n)

    # -- F0 ------------------------------------------------------------------------------

    def declare(self) -> _State:
        req = self.request
        target = read_target(req.target, req.cwd)
        contract = req.contract
        if contract.certificate is not None:
            check_landing(req.cwd / contract.certificate, target)
        verb = contract.verb or MINIMAL_VERB
        notes = []
        if contract.verb and carried_content(
            contract.verb, contract.activity, target.text, req.lexicon.edge_words
        ):
            notes.append(
                "F0 relay: the declared activation verb carried task content; re-formed to "
                "the minimal verb"
            )
            verb = MINIMAL_VERB
        edge = ActivationEdge(
            verb=verb.replace("{locator}", target.ref.locator), locator=target.ref
        )
        # The key that seals the certificate, read (or created) before any work: a key that
        # cannot be had is known before a refuter has spent its budget. The store's key when
        # there is a store, so the certificate and its run record have one issuer.
        self.key = issuing_key(req.store.key_path if req.store is not None else None)
        if req.store is not None:
            self.run_id = req.store.create_run(
                f"certify:{target.name}"[:64],
                {
                    "kind": "certify",
                    "target": target.ref.locator,
                    "model": req.model_uri,
                    "realization": "refuter-subagent" if req.client else "lint-fallback",
                    "apply": req.apply,
                },
            )
        state = _State(contract=contract, target=target, edge=edge, notes=notes)
        self.note(
            "F0",
            f"contract declared for role {contract.role!r}; provenance "
            + (", ".join(f"{k}={v}" for k, v in contract.provenance.items()) or "none tracked"),
            contract=contract.shown(),
            provenance=contract.provenance,
            edge=edge.model_dump(mode="json"),
        )
        return state

    def contract_gate(self, state: _State) -> None:
        """Rule 29: every AI-authored field is confirmed or corrected before Phase 1."""
        contract = apply_contract_answers(state.contract, self.request.answers)
        for name in contract.awaiting():
            answer = self.request.gate.contract(name, contract.value_of(name))
            if answer is None:
                continue
            if answer[0] == "confirm":
                contract = replace(contract, confirmed=contract.confirmed | {name})
            else:
                corrected = Answers.model_validate({"contract": {name: {"correct": answer[1]}}})
                contract = apply_contract_answers(contract, corrected)
        for source in contract.source_paths():
            if not source.exists():
                raise InputError(str(source), "E500", "a corrected granted source does not exist")
            refuse_unusable_source(source)
        state.contract = contract

    # -- the loop ------------------------------------------------------------------------

    async def run(self) -> Certificate:
        state = self.declare()
        try:
            self.contract_gate(state)
        except UserLeft:
            return self.finish(state, None, [], [], 0, "the user left the contract gate")
        awaiting = state.contract.awaiting()
        if awaiting:
            return self.finish(
                state,
                None,
                [],
                [],
                0,
                "AI-authored contract fields need the user's confirmation (Rule 29): "
                + ", ".join(awaiting)
                + " (confirm or correct them interactively or with --answers)",
                awaiting=awaiting,
            )
        session = None
        if self.request.client is not None:
            session = RefuterSession(
                client=self.request.client,
                ledger=self.request.budget.ledger(),
                record=self.record,
                sources=state.contract.source_paths(),
            )
        verdict: Verdict | None = None
        scan = Scan()
        residuals: list[Residual] = []
        for pass_n in range(1, MAX_PASSES + 1):
            reviewed = self.reread(state)
            reach = Reach(
                sources=state.contract.source_paths(),
                cwd=self.request.cwd,
                lexicon=self.request.lexicon,
                target_path=state.target.path,
            )
            scan = scan_target(reviewed.text, state.contract, reach)
            lint_open = [f for f in scan.findings if not self.is_deferred(state, f.finding)]
            self.note(
                "F1-F4",
                f"pass {pass_n}: {len(lint_open)} open finding(s) from the deterministic legs, "
                f"{len(scan.judgments)} judgment(s)",
                pass_n,
                findings=[f.finding.model_dump(mode="json") for f in lint_open],
            )
            if session is None:
                verdict = lint_verdict(scan, [f.finding for f in lint_open])
                refuted: list[LintFinding] = []
            else:
                outcome = await session.verdict(
                    RefuterInputs(
                        target_text=reviewed.text,
                        target_name=state.target.name,
                        judgments=scan.judgments,
                        contract=state.contract,
                        watchlist=WATCHLIST,
                        edge=state.edge,
                        premises=state.premises,
                    )
                )
                verdict = outcome.verdict
                if verdict is None:
                    residuals = [self.residual(f, None) for f in lint_open]
                    return self.finish(
                        state,
                        None,
                        scan.judgments,
                        residuals,
                        pass_n,
                        f"no verdict: {outcome.reason}; a missing or invalid refuter verdict "
                        "is never a Pass",
                    )
                backstop = backstop_reason(verdict)
                if backstop is not None:
                    return self.finish(state, verdict, scan.judgments, [], pass_n, backstop)
                refuted = [
                    LintFinding(f, "comprehension-gap", "refuter")  # type: ignore[arg-type]
                    for f in verdict.findings
                    if not self.is_deferred(state, f)
                ]
            open_items = _dedupe([*lint_open, *refuted])
            try:
                residuals, edits, changed = self.gate(state, open_items, reach)
            except UserLeft:
                return self.finish(
                    state,
                    verdict,
                    scan.judgments,
                    [self.residual(f, None) for f in open_items],
                    pass_n,
                    "the user left the gate: no certificate",
                )
            if edits:
                self.apply_edits(state, edits, pass_n)
                changed = True
            leaked = self.leaked(state)
            if changed:
                continue
            exposed, deferred_now = self.exposures(state)
            residuals = [*residuals, *exposed]
            if deferred_now:
                continue
            blocking = [r for r in residuals if not r.deferred]
            if leaked:
                return self.finish(
                    state,
                    verdict,
                    scan.judgments,
                    residuals,
                    pass_n,
                    "dropped content remains in the target: "
                    + ", ".join(map(repr, leaked))
                    + " (answer Drop with --apply to excise it)",
                )
            if blocking or verdict is None or not verdict.passed:
                return self.finish(
                    state,
                    verdict,
                    scan.judgments,
                    residuals,
                    pass_n,
                    f"{len(blocking)} residual(s) open: "
                    + "; ".join(
                        f"{r.finding.quoted_token!r} at {r.finding.location} ({r.finding.category})"
                        for r in blocking[:10]
                    )
                    + ("" if len(blocking) <= 10 else f"; and {len(blocking) - 10} more")
                    if blocking
                    else "the verdict is not a Pass",
                )
            gate_problem = self.premise_gate(state, reach)
            if gate_problem is not None:
                return self.finish(state, verdict, scan.judgments, residuals, pass_n, gate_problem)
            # F7's lead action: the target must still be what the final pass reviewed.
            if self.reread(state).digest != reviewed.digest:
                state.notes.append("F7: the target changed after the final pass; re-entered")
                continue
            return self.finish(
                state, verdict, scan.judgments, residuals, pass_n, None, certified=True
            )
        return self.finish(
            state,
            verdict,
            scan.judgments,
            residuals,
            MAX_PASSES,
            f"no fixed point within {MAX_PASSES} passes",
        )

    def reread(self, state: _State) -> Target:
        if state.target.path is None:
            return state.target
        fresh = read_target(str(state.target.path), self.request.cwd)
        state.target = Target(ref=state.target.ref, data=fresh.data, path=state.target.path)
        return state.target

    def is_deferred(self, state: _State, finding: Finding) -> bool:
        return (finding.quoted_token, finding.category) in state.deferred

    def residual(
        self, item: LintFinding, answer: GateAnswer | None, *, deferred: bool = False
    ) -> Residual:
        return Residual(
            finding=item.finding,
            reason=item.reason,
            source=item.source,
            surfaced=True,
            deferred=deferred,
            answer=answer,
        )

    # -- Qd: the gate --------------------------------------------------------------------

    def answer_for(self, state: _State, finding: Finding) -> GateAnswer | None:
        key = (finding.quoted_token, finding.location)
        if key in state.asked:
            return state.asked[key]
        given = self.request.answers.for_finding(*key)
        if given is not None:
            state.answered.add(self.request.answers.findings.index(given))
        answer = (
            GateAnswer(tag=given.answer, value=given.value)
            if given is not None
            else self.request.gate.residual(finding)
        )
        state.asked[key] = answer
        return answer

    def gate(
        self, state: _State, items: Sequence[LintFinding], reach: Reach
    ) -> tuple[list[Residual], list[_Edit], bool]:
        residuals: list[Residual] = []
        edits: list[_Edit] = []
        changed = False
        for item in items:
            finding = item.finding
            key = (finding.quoted_token, finding.location)
            answer = self.answer_for(state, finding)
            if answer is None:
                residuals.append(self.residual(item, None))
                continue
            self.note(
                "Qd",
                f"{answer.tag} for {finding.quoted_token!r} at {finding.location}",
                answer=answer.model_dump(mode="json"),
                finding=finding.model_dump(mode="json"),
            )
            if answer.tag == "Defer" and not item.deferrable:
                state.notes.append(
                    f"{finding.quoted_token!r}: hidden text or text addressed to the "
                    "certification cannot be deferred (the receiver would read what the "
                    "person certifying does not); Drop it with --apply, or edit the record"
                )
                residuals.append(self.residual(item, answer))
                continue
            if answer.tag == "Defer":
                residuals.append(self.defer(state, item, answer))
                changed = True
                continue
            if key in state.repaired:
                # Rule 31: a repaired place failing again is not converging: it stays at
                # the gate instead of being repaired again.
                residuals.append(self.residual(replace(item, reason="comprehension-gap"), answer))
                continue
            if finding.location.startswith(("contract:", "edge:")):
                if self.redeclare(state, finding, answer, reach):
                    changed = True
                else:
                    residuals.append(self.residual(item, answer))
                continue
            refusal = self.refuse(state, finding, answer, reach)
            if refusal is not None:
                state.notes.append(refusal)
                residuals.append(self.residual(item, answer))
                continue
            edits.append(self.edit_for(finding, answer))
        return residuals, edits, changed

    def defer(self, state: _State, item: LintFinding, answer: GateAnswer) -> Residual:
        """A Defer: the accepted gap travels to the receiver as a premise with its
        condition, and the entry leaves the gate (not re-presented)."""
        finding = item.finding
        claim = (
            f"accepted gap: {finding.quoted_token!r} at {finding.location} "
            f"({finding.category}): {finding.why_unresolvable}"
        )
        state.premises.append(DecisionRecord(claim=claim, deferral=answer.value))
        resid = self.residual(item, answer, deferred=True)
        state.deferred[(finding.quoted_token, finding.category)] = resid
        return resid

    def exposures(self, state: _State) -> tuple[list[Residual], bool]:
        """The F6 exposure scan's hits, brought to the gate. Only a Defer settles one here:
        the exposing record is outside what a certification may edit, so any other answer
        leaves it open (re-dispose the dropped item, or change the source, and certify
        again)."""
        residuals: list[Residual] = []
        changed = False
        found = exposed_drops(state.dropped, state.contract.source_paths(), self.request.cwd)
        order = list(dict.fromkeys(state.dropped))
        for hit in found:
            # Content-free: the certificate must not re-leak what was dropped, so the item
            # is named by its place in the drop order (`dropped#1`), never by its text.
            name = f"dropped#{order.index(hit.token) + 1}"
            why = (
                f"the dropped item is still readable in {hit.where}, which the receiver is granted"
                if hit.unscannable is None
                else f"the granted source {hit.where} {hit.unscannable}: non-exposure of the "
                "dropped item cannot be certified"
            )
            item = LintFinding(
                Finding(
                    quoted_token=name,
                    location=f"exposure:{hit.where}",
                    category="emergent",
                    why_unresolvable=why,
                    advisory="Defer",
                    repair_note="accept the exposure with a condition (Defer), or narrow the "
                    "granted source and certify again",
                ),
                "exposure",
            )
            if self.is_deferred(state, item.finding):
                continue
            answer = self.answer_for(state, item.finding)
            if answer is not None and answer.tag == "Defer":
                residuals.append(self.defer(state, item, answer))
                changed = True
            else:
                residuals.append(self.residual(item, answer))
        return residuals, changed

    def refuse(
        self, state: _State, finding: Finding, answer: GateAnswer, reach: Reach
    ) -> str | None:
        """Why a target repair cannot land now (None: it can)."""
        if answer.tag == "Route":
            resolution = resolve_any(reach, answer.value or "")
            if resolution.status == "failed":
                return (
                    f"Route {answer.value!r} for {finding.quoted_token!r} refused: {resolution.why}"
                )
        if not state.target.writable:
            return (
                f"{finding.quoted_token!r}: the target is a committed record with no write "
                "channel; the repair cannot land (certification-leg)"
            )
        if not self.request.apply:
            return (
                f"{finding.quoted_token!r}: {answer.tag} answered; pass --apply to repair "
                "the target"
            )
        if not finding.location[:1].isdigit():
            return f"{finding.quoted_token!r}: no place in the target to repair"
        return None

    def edit_for(self, finding: Finding, answer: GateAnswer) -> _Edit:
        line, col = (int(x) for x in finding.location.split(":"))
        token = finding.quoted_token
        value = answer.value or ""
        if answer.tag == "Drop":
            return _Edit(line, col, len(token), "", ExcisionMark(), finding)
        if finding.category in _SUBSTITUTED or _session_minted(finding):
            text = value
        elif answer.tag == "Route":
            text = f"{token} (see {value})"
        else:
            text = f"{token} ({value})"
        delta = RepairDelta(
            repair=Resolution(at=finding.location, added=text if text != token else value),
            basis=f"Gate {answer.tag} answer for a {finding.category} finding at "
            f"{finding.location}",
        )
        return _Edit(line, col, len(token), text, delta, finding)

    def redeclare(self, state: _State, finding: Finding, answer: GateAnswer, reach: Reach) -> bool:
        """A contract-field defect is repaired on the contract, never on the target."""
        contract = state.contract
        if finding.location == "edge:verb":
            state.edge = ActivationEdge(
                verb=MINIMAL_VERB.replace("{locator}", state.target.ref.locator),
                locator=state.target.ref,
            )
            return answer.tag in ("Resolve", "Route")
        name = finding.location.removeprefix("contract:")
        if name in ("activity", "execution_scope", "stop_condition"):
            if answer.tag not in ("Resolve", "Route") or not answer.value:
                return False
            # A Resolve re-declares the field on the user's authority: their own words.
            corrected = Answers.model_validate({"contract": {name: {"correct": answer.value}}})
            state.contract = apply_contract_answers(contract, corrected)
            state.notes.append(f"{name} re-declared on the user's {answer.tag}")
            return True
        if finding.location == "contract:verification_commands":
            token = finding.quoted_token
            if answer.tag == "Drop":
                kept = tuple(c for c in contract.verify if token not in c)
            else:
                kept = tuple(c.replace(token, answer.value or token) for c in contract.verify)
            if kept == contract.verify:
                return False
            state.contract = replace(contract, verify=kept)
            state.notes.append(f"verification commands re-declared on the user's {answer.tag}")
            return True
        return False

    def apply_edits(self, state: _State, edits: list[_Edit], pass_n: int) -> None:
        lines = state.target.text.split("\n")
        done: list[tuple[int, int, int]] = []
        for edit in sorted(edits, key=lambda e: (e.line, e.col), reverse=True):
            start = edit.col - 1
            end = start + edit.length
            if any(n == edit.line and not (end <= s or start >= t) for n, s, t in done):
                continue  # overlapping edits: the later one waits for the next pass
            current = lines[edit.line - 1]
            if current[start:end] != edit.finding.quoted_token:
                continue
            lines[edit.line - 1] = current[:start] + edit.text + current[end:]
            done.append((edit.line, start, end))
            state.deltas.append(edit.delta)
            state.repaired.add((edit.finding.quoted_token, edit.finding.location))
            if isinstance(edit.delta, ExcisionMark):
                state.dropped.append(edit.finding.quoted_token)
            log.info(
                "certify.delta",
                kind=edit.delta.kind,
                at=edit.finding.location,
                reason=f"{edit.finding.category}: gate answer",
            )
            self.note(
                "repair",
                f"pass {pass_n}: {edit.delta.kind} at {edit.finding.location} "
                f"({edit.finding.category})",
                pass_n,
                delta=edit.delta.model_dump(mode="json"),
            )
        data = "\n".join(lines).encode("utf-8")
        assert state.target.path is not None
        write_in_place(state.target.path, data)

    def leaked(self, state: _State) -> list[str]:
        """leaked_drops: a dropped token still readable in the target or an emitted channel."""
        channels = [
            state.target.text,
            state.edge.verb,
            *state.contract.shown().values(),
            *(p.claim for p in state.premises),
        ]
        return [t for t in dict.fromkeys(state.dropped) if any(t in c for c in channels)]

    # -- Qp ------------------------------------------------------------------------------

    def premise_gate(self, state: _State, reach: Reach) -> str | None:
        """Qp (Rule 32), between the fixed point and F7: it fires only when something is
        carried downstream (a repair, a named certificate file, premises). Its answer is
        inscribed in the certificate; an authoritative location must pass resolves_at and
        its rendered line must be leak-clean, else the person is asked again (an answers
        file is not: the certification ends, saying why). Nobody to ask and no answer
        given: the conservative answer, a derived copy that claims no authority, recorded
        as a default."""
        contract = state.contract
        if not (state.deltas or contract.certificate or state.premises):
            state.premise_gate = PremiseGate(fired=False)
            return None
        given = self.request.answers.premise_gate
        problem: str | None = None
        for _ in range(3):
            answer, by = given, "answers"
            if answer is None:
                answer, by = self.request.gate.premise(problem), "user"
            if answer is None:
                answer, by = (
                    PremiseAnswer(
                        recipient_class="agent",
                        substrate_access=bool(contract.source_paths()),
                    ),
                    "default",
                )
            gate, problem = self.settle_premise(state, reach, answer, by)
            if problem is None:
                state.premise_gate = gate
                self.note("Qp", f"premise gate answered ({by}): {gate.authority_line()}")
                return None
            if by != "user":
                break
        return f"Qp (Rule 32): {problem}"

    def settle_premise(
        self, state: _State, reach: Reach, answer: PremiseAnswer, by: str
    ) -> tuple[PremiseGate, str | None]:
        profile = ConsumerProfile(
            recipient_class=answer.recipient_class, substrate_access=answer.substrate_access
        )
        copy: Derived | AuthoritativeAt = Derived()
        if answer.authority.strip().lower() != "derived":
            where = answer.authority.strip()
            found = resolve_any(reach, where)
            if found.status == "failed":
                return PremiseGate(fired=True), (
                    f"the authoritative location {where!r} does not resolve: {found.why}"
                )
            copy = AuthoritativeAt(location=StableRef(kind=found.kind, locator=where))
        gate = PremiseGate(
            fired=True,
            answered_by=by,
            consumer_profile=profile,
            authority_copy=copy,
        )
        line = gate.authority_line() or ""
        leaked = [t for t in dict.fromkeys(state.dropped) if t in line]
        if leaked:
            return gate, f"the authority-copy line carries dropped content {leaked[0]!r}"
        return gate, None

    # -- F7 ------------------------------------------------------------------------------

    def finish(
        self,
        state: _State,
        verdict: Verdict | None,
        judgments: Sequence[RouteJudgment],
        residuals: Sequence[Residual],
        passes: int,
        reason: str | None,
        *,
        certified: bool = False,
        awaiting: Sequence[str] = (),
    ) -> Certificate:
        req = self.request
        contract = state.contract
        base = req.cwd
        landing = Path(contract.certificate).parent if contract.certificate else base
        target_ref = state.target.ref
        if target_ref.kind == "path":
            target_ref = StableRef(
                kind="path",
                locator=relative_locator(base / target_ref.locator, base / landing),
            )
        edge = ActivationEdge(
            verb=state.edge.verb.replace(state.target.ref.locator, target_ref.locator),
            locator=target_ref,
        )
        sources = [
            StableRef(kind="path", locator=relative_locator(p, base / landing))
            for p in contract.source_paths()
        ]
        # Bound by content too: a source rewritten after certification fails the check.
        identities = {
            ref.locator: identity
            for ref, p in zip(sources, contract.source_paths(), strict=True)
            if (identity := source_identity(p)) is not None
        }
        deferred = [r for r in state.deferred.values() if r not in residuals]
        all_residuals = [*residuals, *deferred]
        unused = [
            f"--answers findings.{i} ({a.token!r}) matched no finding; its answer was not used"
            for i, a in enumerate(self.request.answers.findings)
            if i not in state.answered
        ]
        notes = [*state.notes, *unused]
        if reason and notes:
            reason = reason + " [" + "; ".join(notes) + "]"
        certificate = Certificate(
            certified=certified,
            target=target_ref,
            target_identity=state.target.digest,
            activation_edge=edge,
            judgments=list(judgments),
            outcome=Repaired(deltas=list(state.deltas)) if state.deltas else AlreadyPortable(),
            reception_procedure=ReceptionProcedure(
                role=contract.role,
                granted_sources=sources,
                source_identities=identities,
                verification_commands=list(contract.verify),
                execution_scope=contract.scope or "(none declared)",
                stop_condition=contract.stop or "(none declared)",
                dereference_steps=dereference_steps(target_ref, state.target, judgments),
                premises=list(state.premises),
            ),
            verdict=verdict,
            residuals=all_residuals,
            reason=reason,
            awaiting_confirmation=list(awaiting),
            premise_gate=state.premise_gate,
            passes=passes,
            issued_at=utc_now_iso(),
            run_id=self.run_id,
        )
        # Every certificate is sealed, a refusal too: an unsealed one is never trusted, and
        # a sealed "not certified" cannot be edited into a certified one.
        certificate = seal_certificate(certificate, self.key or issuing_key())
        if req.store is not None and self.run_id is not None:
            self.record(
                EventKind.RUN_ENDED,
                {
                    "ended_by": "certified" if certified else "not_certified",
                    "result": certificate.model_dump(mode="json"),
                },
                passes,
            )
        return certificate


def backstop_reason(verdict: Verdict) -> str | None:
    categories = {f.category for f in verdict.findings}
    if "operative-procedure" in categories:
        return (
            "competence-substitution backstop (Rule 27): the refuter found authored procedure "
            "the receiver would have to adopt unverified; re-declare the contract so the "
            "method is the receiver's own, and certify again"
        )
    if "contract-provenance-misfit" in categories:
        return (
            "contract-provenance backstop (Rule 29): the contract claims more than the user's "
            "own words; re-declare it against the utterance, and certify again"
        )
    return None


def resolve_any(reach: Reach, locator: str) -> Reached:
    if re.match(r"^[a-z][a-z0-9+.-]*://", locator):
        return reach.resolve_url(locator)
    if locator.startswith("git:"):
        return reach.resolve_git(locator)
    if re.fullmatch(r"[\w.-]+/[\w.-]+#\d+", locator):
        return reach.resolve_id(locator)
    return reach.resolve_path(locator)


def _session_minted(finding: Finding) -> bool:
    return finding.category == "session-identifiers" and "identifier of the author's session" in (
        finding.why_unresolvable
    )


def _dedupe(items: Sequence[LintFinding]) -> list[LintFinding]:
    seen: set[tuple[str, str]] = set()
    out = []
    for item in items:
        if item.key not in seen:
            seen.add(item.key)
            out.append(item)
    return out


def dereference_steps(
    target_ref: StableRef, target: Target, judgments: Sequence[RouteJudgment]
) -> list[str]:
    digest = target.digest.removeprefix("sha256:")
    if target.revision is not None:
        first = (
            "Recompute sha256 over the bytes of "
            f"`git show {target_ref.locator.removeprefix('git:')}`; it must be {digest}. "
            "Otherwise the record changed after certification: treat it as a draft and "
            "certify it again."
        )
    else:
        first = (
            f"Recompute sha256 over the exact bytes of {target_ref.locator} (`sha256sum "
            f"{target_ref.locator}`, or `ilh certify --check CERT`); it must be {digest}. "
            "Otherwise the record changed after certification: treat it as a draft and certify "
            "it again."
        )
    steps = [first]
    for judgment in judgments:
        verdict = judgment.verdict
        if verdict.kind != "Reference":
            continue
        ref = verdict.stable_ref
        if ref.kind == "path":
            steps.append(
                f"Confirm {ref.locator} exists in the granted sources (`test -e {ref.locator}`)."
            )
        elif ref.kind == "url":
            steps.append(
                f"Open {ref.locator} and confirm it is still there (unobserved at certification)."
            )
        elif ref.locator.startswith("git:"):
            steps.append(f"`git cat-file -e {ref.locator.removeprefix('git:')}` in the repository.")
        else:
            steps.append(f"Look up {ref.locator} in its repository (unobserved at certification).")
    return list(dict.fromkeys(steps))


def check_landing(landing: Path, target: Target) -> None:
    """certificate_target ≠ target (by referent), and writable (DIYLISIS F0)."""
    if target.path is not None and landing.exists() and os.path.samefile(landing, target.path):
        raise InputError(
            str(landing),
            "E303",
            "the certificate would land inside the record it certifies; name another file",
        )
    if target.path is not None and os.path.abspath(landing) == os.path.abspath(target.path):
        raise InputError(
            str(landing),
            "E303",
            "the certificate would land inside the record it certifies; name another file",
        )
    if landing.is_dir():
        raise InputError(
            str(landing), "E303", "--certificate names a folder; name the file to write"
        )
    if landing.exists() and not landing.is_file():
        # A pipe: writing the certificate would wait for a reader, for ever.
        raise InputError(
            str(landing), "E303", "--certificate names a pipe or device; name a regular file"
        )
    folder = landing.parent if str(landing.parent) else Path(".")
    if not folder.is_dir() or not os.access(folder, os.W_OK):
        raise InputError(str(landing), "E500", "cannot write the certificate there")


def write_in_place(path: Path, data: bytes) -> None:
    """The repaired target, written whole (a reader never sees half of it)."""
    temporary = path.with_name(f".{path.name}.ilh-repair")
    try:
        temporary.write_bytes(data)
        try:
            mode = path.stat().st_mode & 0o7777
            os.chmod(temporary, mode)
        except OSError:
            pass
        os.replace(temporary, path)
    except BaseException:
        # Ctrl-C or a full disk before the rename: the target is untouched, and no
        # half-written copy is left beside it.
        temporary.unlink(missing_ok=True)
        raise
