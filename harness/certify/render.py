"""A certificate as Markdown, for people: what was certified, under which realization,
what was observed and what was not, and the reception procedure that leads whatever a
receiver is handed (DIYLISIS F7: derived copy; the JSON is the record)."""

from __future__ import annotations

from harness.certify.certificate import Certificate


def _cell(text: str) -> str:
    return _line(text).replace("|", "\\|")


def _line(text: str) -> str:
    """Free text (a contract field, a premise, a reason, a basis) kept on its line: a
    line break in it would start a line of its own, where `# CERTIFIED: …` is a heading
    that the certificate never said (a NOT CERTIFIED page showed two)."""
    return " ".join(text.split()) if any(c in text for c in "\n\r\v\f\x85\u2028\u2029") else text


def _outcome(cert: Certificate) -> str:
    """The outcome line. DIYLISIS names a refusal's outcome too (AlreadyPortable: no repair
    was applied), and "outcome: AlreadyPortable" under NOT CERTIFIED read as a pass to a
    person: on a refusal the line says first that there is no certified outcome."""
    kind = cert.outcome.kind
    deltas = f" ({len(cert.outcome.deltas)} delta(s))" if cert.outcome.kind == "Repaired" else ""
    if cert.certified:
        return f"- outcome: {kind}{deltas}"
    applied = "no repair applied" if kind == "AlreadyPortable" else f"repairs applied{deltas}"
    return (
        f"- outcome: none, NOT CERTIFIED ({applied}; the JSON's `outcome` says {kind}, "
        "which is not a pass)"
    )


#: How every Markdown certificate begins (`render_markdown`'s first line), case folded:
#: `ilh certify --markdown FILE` replaces only a file that begins so (or an empty one).
MARKDOWN_STARTS = (b"# certified:", b"# not certified:")


def render_markdown(cert: Certificate) -> str:
    verdict = cert.verdict
    head = "CERTIFIED" if cert.certified else "NOT CERTIFIED"
    realization = verdict.realization if verdict else "none (no valid verdict)"
    lines = [
        f"# {head}: {_line(cert.target.locator)}",
        "",
        f"- target identity: `{cert.target_identity}`",
        f"- realization: **{realization}**"
        + (
            " (the deterministic legs alone judged: no model refuter ran)"
            if verdict and verdict.realization == "lint-fallback"
            else ""
        ),
        _outcome(cert),
        f"- passes: {cert.passes}; issued {cert.issued_at}"
        + (f"; run {cert.run_id}" if cert.run_id else ""),
        f"- activation edge: {_line(cert.activation_edge.verb)}",
    ]
    if cert.reason:
        lines += ["", f"**Reason:** {_line(cert.reason)}"]
    if cert.awaiting_confirmation:
        lines += [
            "",
            "Awaiting the user's confirmation: "
            + ", ".join(_line(a) for a in cert.awaiting_confirmation),
        ]
    procedure = cert.reception_procedure
    lines += [
        "",
        "## Reception procedure",
        "",
        f"- role: {_line(procedure.role)}",
        "- granted sources: "
        + (", ".join(f"`{_line(s.locator)}`" for s in procedure.granted_sources) or "(none)"),
        "- verification commands: "
        + (", ".join(f"`{_line(c)}`" for c in procedure.verification_commands) or "(none)"),
        f"- execution scope: {_line(procedure.execution_scope)}",
        f"- stop condition: {_line(procedure.stop_condition)}",
        "",
        "Dereference steps (run them with your own tools):",
        "",
        *(f"{n}. {_line(step)}" for n, step in enumerate(procedure.dereference_steps, 1)),
    ]
    gate = cert.premise_gate
    if gate.fired and gate.consumer_profile is not None:
        profile = gate.consumer_profile
        lines += [
            "",
            f"Authority: {_line(gate.authority_line() or '')} "
            f"(recipient: {profile.recipient_class}, "
            f"{'with' if profile.substrate_access else 'without'} access to the sources; "
            f"answered by {gate.answered_by})",
        ]
    if procedure.premises:
        lines += ["", "Premises to reconfirm:", ""]
        lines += [
            f"- {_line(p.claim)}"
            + (f" (deferred until: {_line(p.deferral)})" if p.deferral else "")
            for p in procedure.premises
        ]
    if verdict is not None:
        lines += [
            "",
            "## Category sweep",
            "",
            "| category | status | what was checked |",
            "|---|---|---|",
        ]
        lines += [f"| {r.category} | {r.status} | {_cell(r.checked)} |" for r in verdict.sweep]
    if cert.residuals:
        lines += [
            "",
            "## Findings",
            "",
            "| token | location | category | why | advisory | answer |",
            "|---|---|---|---|---|---|",
        ]
        for r in cert.residuals:
            f = r.finding
            answer = (
                "-"
                if r.answer is None
                else r.answer.tag + ("" if not r.deferred else " (deferred)")
            )
            lines.append(
                f"| `{_cell(f.quoted_token)}` | {_cell(f.location)} | {_cell(f.category)} | "
                f"{_cell(f.why_unresolvable)} | {f.advisory} | {answer} |"
            )
    observed = [j for j in cert.judgments if j.observation == "observed"]
    unobserved = [j for j in cert.judgments if j.observation == "unobserved"]
    inline = [j for j in cert.judgments if j.observation == "inline"]
    lines += [
        "",
        "## Judgments",
        "",
        f"{len(inline)} kept inline, {len(observed)} routed and observed, "
        f"{len(unobserved)} routed and unobserved (durable class, not resolved by the certifier).",
    ]
    for j in [*observed, *unobserved]:
        v = j.verdict
        if v.kind == "Reference":
            lines.append(f"- `{_line(v.stable_ref.locator)}` ({j.observation}): {_line(j.basis)}")
    return "\n".join(lines) + "\n"
