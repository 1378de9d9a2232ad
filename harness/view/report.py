"""A run as one self-contained HTML page (`ilh view RUN`): no script, no CDN, styles
inline, every piece of recorded text escaped.

What it shows, from the run record alone: the status history as a timeline; each round
with the runtime's lines, the agent's text and tool calls, and the tool output (marked
untrusted: it reached the model inside an `::UNTRUSTED` block); the proposals with their
dispositions; the violations; the budgets as bars, per round; the grader's criteria and
evidence; for a certification, its steps and findings. Secrets are redacted again on the
way out (a record made before a secret was known).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from html import escape
from typing import Any

from harness.certify.certificate import Certificate
from harness.record.events import Event, EventKind, RunSummary
from harness.secrets import harness_secrets

_STYLE = """
body{font:14px/1.45 system-ui,sans-serif;margin:0;background:#f6f7f9;color:#1d2330}
header{background:#1d2330;color:#fff;padding:16px 24px}
header h1{margin:0 0 4px;font-size:18px}
main{padding:16px 24px;max-width:1180px}
section{background:#fff;border:1px solid #dde1e8;border-radius:6px;margin:0 0 16px;
 padding:12px 16px}
h2{font-size:15px;margin:0 0 8px}
h3{font-size:13px;margin:10px 0 4px}
code,pre{font:12px/1.4 ui-monospace,monospace}
code,h1,header div,.ev{overflow-wrap:anywhere}
td{overflow-wrap:break-word}
pre{white-space:pre-wrap;word-break:break-word;margin:4px 0;padding:6px 8px;background:#f1f3f6}
.untrusted{border-left:4px solid #d9822b;background:#fff7ee}
.untrusted::before{content:"untrusted: tool output";display:block;font:600 11px system-ui;
 color:#a45a12;margin-bottom:2px}
.agent{border-left:4px solid #3b6fd8}
.runtime{border-left:4px solid #6b7280;background:#f3f4f6}
.timeline{list-style:none;margin:0;padding:0}
.timeline li{padding:2px 0 2px 14px;border-left:2px solid #3b6fd8;margin-left:4px}
table{border-collapse:collapse;width:100%}
td,th{border-bottom:1px solid #e5e7eb;padding:4px 6px;text-align:left;vertical-align:top}
.accepted,.pass{color:#137333}.downgraded,.unknown{color:#a45a12}
.rejected,.fail,.violation{color:#b3261e}
.bar{height:10px;background:#e5e7eb;border-radius:5px;overflow:hidden;min-width:60px}
.bar span{display:block;height:100%;background:#3b6fd8}
.bar span.over,.spark span.over{background:#b3261e}
.spark{display:flex;align-items:flex-end;gap:2px;height:24px;background:#f1f3f6;padding:2px;
 overflow:hidden}
.spark span{flex:0 1 8px;min-width:1px;background:#3b6fd8;min-height:1px}
.ev{white-space:pre-wrap;font:12px/1.4 ui-monospace,monospace}
.round{border-top:1px dashed #cfd4dc;padding-top:8px;margin-top:8px}
/* a phone: every column may break anywhere rather than push the page sideways */
@media (max-width:600px){main{padding:8px}header{padding:12px}section{padding:8px}
 td,th{padding:3px;overflow-wrap:anywhere}}
"""


def _text(value: object) -> str:
    return escape(harness_secrets().redact(str(value)))


#: The page forbids scripts, frames, forms and every fetch itself, wherever it is opened
#: (a file has no server to send the header): a piece of text that escaped the escaping
#: still cannot run or call out.
_CSP = (
    '<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; '
    "style-src 'unsafe-inline'; form-action 'none'; base-uri 'none'\">"
)


def _count(value: object) -> str:
    """A token count as the record holds it: a number, or `?`. (A record edited by hand,
    or from elsewhere, may hold markup where the count was.)"""
    return str(value) if isinstance(value, int) and not isinstance(value, bool) else "?"


def _pre(value: object, css: str = "") -> str:
    return f'<pre class="{css}">{_text(value)}</pre>' if str(value).strip() else ""


def render_run(summary: RunSummary, events: Sequence[Event], problems: Sequence[str] = ()) -> str:
    """The HTML page of one run. `problems`: what `ilh runs verify` found wrong with the
    record (an edited, re-hashed or foreign record): shown first, so that a page made
    from a forged record never reads as the harness's word."""
    ended = next((e for e in reversed(events) if e.kind is EventKind.RUN_ENDED), None)
    result: dict[str, Any] = (ended.payload.get("result") or {}) if ended else {}
    final = result.get("final") or {}
    parts = [
        f"<!doctype html><html lang=en><head><meta charset=utf-8>{_CSP}",
        f"<title>ilh run {escape(summary.run_id)}</title><style>{_STYLE}</style></head><body>",
        _tampered(problems),
        f'<header><h1>run <code id="run-id">{escape(summary.run_id)}</code> · task '
        f"{_text(summary.task_id)}</h1>",
        f'<div id="ended-by">ended by {_text(result.get("ended_by", "—"))}</div>',
        f'<div id="final"><code>{_text(final.get("line", ""))}</code></div>',
        f"<div>record: {_text(summary.record)} · {summary.events} events</div></header><main>",
        # The overview first (what happened, what was decided, what it cost); the rounds,
        # long, last.
        _timeline(events),
        _grader(events),
        _certification(events),
        _proposals(events),
        _violations(events),
        _budgets(events),
        _rounds(events),
        "</main></body></html>",
    ]
    return "".join(p for p in parts if p)


def _tampered(problems: Sequence[str]) -> str:
    if not problems:
        return ""
    listed = "".join(f"<li>{_text(p)}</li>" for p in problems[:20])
    more = f"<li>… {len(problems) - 20} more</li>" if len(problems) > 20 else ""
    return (
        '<div id="tampered" class="fail" style="background:#fde8e6;padding:12px 24px">'
        "<strong>This record does not verify</strong> (<code>ilh runs verify</code>): it "
        "was edited, or not written by the harness with your record key; what this page "
        f"shows may be forged.<ul>{listed}{more}</ul></div>"
    )


def _timeline(events: Sequence[Event]) -> str:
    items = [
        f"<li>round {e.round}: <code>{_text(e.payload.get('line'))}</code></li>"
        for e in events
        if e.kind is EventKind.STATE_CHANGE
    ]
    if not items:
        return ""
    body = "".join(items)
    return (
        f'<section id="timeline"><h2>Status history</h2><ul class="timeline">{body}</ul></section>'
    )


def _budgets(events: Sequence[Event]) -> str:
    """One row per budget: what the last snapshot says (a bar against the limit), and a
    bar per round, so the spend over the run is seen at a glance."""
    by_kind: dict[str, list[tuple[int, float, float]]] = {}
    for snap in (e for e in events if e.kind is EventKind.BUDGET_SNAPSHOT):
        for row in snap.payload.get("budgets", []):
            if isinstance(row, dict):
                by_kind.setdefault(str(row.get("kind")), []).append(
                    (snap.round, _number(row.get("used")), _number(row.get("limit")))
                )
    if not by_kind:
        return ""
    rows = []
    for kind, points in by_kind.items():
        _, used, limit = points[-1]
        rounds = "".join(
            f'<span class="{_over(u, lim)}" style="height:{_share(u, lim):.0f}%" '
            f'title="round {r}: {u:g} / {lim:g}"></span>'
            for r, u, lim in points
        )
        rows.append(
            f'<tr class="budget"><td>{_text(kind)}</td><td>{used:g} / {limit:g}</td>'
            f'<td><div class=bar><span class="{_over(used, limit)}" '
            f'style="width:{_share(used, limit):.1f}%"></span></div></td>'
            f'<td><div class=spark aria-label="per round">{rounds}</div></td></tr>'
        )
    head = "<tr><th>budget</th><th>used / limit</th><th>at the end</th><th>per round</th></tr>"
    return f'<section id="budgets"><h2>Budgets</h2><table>{head}{"".join(rows)}</table></section>'


def _number(value: object) -> float:
    return float(value) if isinstance(value, int | float) else 0.0


def _share(used: float, limit: float) -> float:
    return min(100.0, 100.0 * used / limit) if limit > 0 else 0.0


def _over(used: float, limit: float) -> str:
    return "over" if used > limit else ""


def _rounds(events: Sequence[Event]) -> str:
    out = []
    for e in events:
        data = e.payload
        if e.kind is EventKind.MODEL_CALL:
            calls = "".join(
                f"<li><code>{_text(c.get('name'))}</code> "
                f"<code>{_text(json.dumps(c.get('arguments', {}), ensure_ascii=False))}</code></li>"
                for c in data.get("tool_calls", [])
                if isinstance(c, dict)
            )
            lines = "\n".join(str(x) for x in data.get("runtime_lines", []))
            raw_usage = data.get("usage")
            usage: dict[str, Any] = raw_usage if isinstance(raw_usage, dict) else {}
            out.append(
                f'<div class="round" data-round="{e.round}"><strong>round {e.round}</strong> · '
                f"{_text(data.get('model'))} · {_count(usage.get('input_tokens'))} in / "
                f"{_count(usage.get('output_tokens'))} out"
                f"{_pre(lines, 'runtime')}{_pre(data.get('text', ''), 'agent')}"
                f"{'<ul class=calls>' + calls + '</ul>' if calls else ''}</div>"
            )
        elif e.kind is EventKind.TOOL_CALL:
            call = data.get("call") if isinstance(data.get("call"), dict) else {}
            name = call.get("name") if isinstance(call, dict) else "?"
            mark = "ok" if data.get("ok") else "error"
            out.append(
                f'<div class="tool"><code>{_text(name)}</code> {mark}'
                f"{_pre(data.get('output', ''), 'untrusted')}</div>"
            )
    if not out:
        return ""
    return f'<section id="rounds"><h2>Rounds</h2>{"".join(out)}</section>'


def _proposals(events: Sequence[Event]) -> str:
    rows = [
        f'<tr class="{escape(str(e.payload.get("disposition")))}"><td>{e.round}</td>'
        f"<td>{_text(e.payload.get('disposition'))}</td>"
        f"<td><code>{_text(e.payload.get('line'))}</code></td>"
        f"<td>{_text(e.payload.get('why', ''))}</td></tr>"
        for e in events
        if e.kind is EventKind.PROPOSAL
    ]
    if not rows:
        return ""
    head = "<tr><th>round</th><th>disposition</th><th>as the agent wrote it</th><th>why</th></tr>"
    return (
        f'<section id="proposals"><h2>Proposals</h2><table>{head}{"".join(rows)}</table></section>'
    )


def _violations(events: Sequence[Event]) -> str:
    rows = [
        f'<tr class="violation"><td>{e.round}</td><td>{_text(e.payload.get("kind"))}</td>'
        f"<td>{_text(e.payload.get('detail'))}</td></tr>"
        for e in events
        if e.kind is EventKind.VIOLATION
    ]
    head = "<tr><th>round</th><th>kind</th><th>detail</th></tr>"
    body = head + "".join(rows) if rows else "<tr><td>none</td></tr>"
    return f'<section id="violations"><h2>Violations</h2><table>{body}</table></section>'


def _grader(events: Sequence[Event]) -> str:
    gradings = [e for e in events if e.kind is EventKind.GRADER_RESULT]
    if not gradings:
        return ""
    out = []
    for g in gradings:
        data = g.payload
        rows = "".join(
            f'<tr class="{escape(str(c.get("result")))}"><td>{_text(c.get("id"))}</td>'
            f"<td>{_text(c.get('result'))}</td><td>{_text(c.get('via'))}</td>"
            f"<td class=ev>{_text(c.get('evidence', ''))}</td>"
            f"<td>{_text(c.get('detail', ''))}</td></tr>"
            for c in data.get("criteria", [])
            if isinstance(c, dict)
        )
        out.append(
            f"<p>round {g.round}: <strong>{_text(data.get('verdict'))}</strong> score "
            f"{_text(data.get('score'))} / {_text(data.get('threshold'))}</p>"
            "<table><tr><th>criterion</th><th>result</th><th>via</th><th>evidence</th>"
            f"<th>detail</th></tr>{rows}</table>"
        )
    return f'<section id="grader"><h2>Grader</h2>{"".join(out)}</section>'


def _certification(events: Sequence[Event]) -> str:
    """A certification run: its steps (the NOTE events `ilh certify` records) and the
    certificate its `run_ended` carries."""
    steps = [
        f"<li><strong>{_text(e.payload.get('phase', 'note'))}</strong> "
        f"{_text(e.payload['summary'])}</li>"
        for e in events
        if e.kind is EventKind.NOTE and isinstance(e.payload.get("summary"), str)
    ]
    ended = next((e for e in reversed(events) if e.kind is EventKind.RUN_ENDED), None)
    result = ended.payload.get("result") if ended else None
    cert = result if isinstance(result, dict) and "residuals" in result else None
    if not steps and cert is None:
        return ""
    listed = f"<h3>Steps</h3><ol class=steps>{''.join(steps)}</ol>" if steps else ""
    return (
        f'<section id="certification"><h2>Certification</h2>{listed}'
        f"{_certificate_body(cert) if cert is not None else ''}</section>"
    )


def render_certificate(cert: Certificate, unsealed: str | None = None) -> str:
    """The HTML page of one certificate (`ilh certify --json`, or the file it wrote).
    `unsealed`: why its seal does not verify here; such a page says so first, and never
    shows "certified" as a pass (anyone can type `"certified": true`)."""
    data = cert.model_dump(mode="json")
    title = f"certificate · {cert.target.locator}"
    if unsealed is not None:
        data["certified"] = False
        data["reason"] = f"NOT AUTHENTIC: {unsealed}" + (
            f" (as written, it says: {cert.reason})" if cert.reason else ""
        )
        status = "NOT AUTHENTIC (its seal does not verify here)"
    else:
        status = "certified" if cert.certified else "not certified"
    return "".join(
        [
            f"<!doctype html><html lang=en><head><meta charset=utf-8>{_CSP}",
            f"<title>ilh {_text(title)}</title><style>{_STYLE}</style></head><body>",
            f"<header><h1>certificate · <code>{_text(cert.target.locator)}</code></h1>",
            f'<div id="ended-by">{_text(status)}</div>',
            f"<div>issued {_text(cert.issued_at)} · run {_text(cert.run_id or '—')}</div>",
            "</header><main>",
            f'<section id="certification"><h2>Certification</h2>{_certificate_body(data)}'
            "</section></main></body></html>",
        ]
    )


def _certificate_body(cert: dict[str, Any]) -> str:
    """The certificate's verdict, its findings and what stayed open (residuals)."""
    certified = bool(cert.get("certified"))
    verdict = cert.get("verdict") if isinstance(cert.get("verdict"), dict) else None
    target = cert.get("target") if isinstance(cert.get("target"), dict) else {}
    head = (
        f'<p id="certified" class="{"pass" if certified else "fail"}"><strong>'
        f"{'certified' if certified else 'not certified'}</strong> · target "
        f"<code>{_text((target or {}).get('locator', '?'))}</code> · "
        f"{_text(cert.get('passes', '?'))} pass(es) · refuter verdict "
        f"{_text(verdict.get('result') if verdict else 'none')}</p>"
    )
    if cert.get("reason"):
        head += f"<p>reason: {_text(cert['reason'])}</p>"
    findings = [f for f in (verdict or {}).get("findings", []) if isinstance(f, dict)]
    residuals = [
        r
        for r in cert.get("residuals", [])
        if isinstance(r, dict) and isinstance(r.get("finding"), dict)
    ]
    return (
        head
        + _findings_table("findings", "Findings of the refuter", findings, [])
        + _findings_table(
            "residuals",
            "Residuals (open at the end)",
            [r["finding"] for r in residuals],
            [f"{r.get('reason', '')} · {r.get('source', '')}" for r in residuals],
        )
    )


def _findings_table(
    css_id: str, title: str, findings: Sequence[dict[str, Any]], extra: Sequence[str]
) -> str:
    if not findings:
        return f'<h3>{title}</h3><p id="{css_id}">none</p>'
    rows = "".join(
        f"<tr><td><code>{_text(f.get('quoted_token'))}</code></td>"
        f"<td>{_text(f.get('location'))}</td><td>{_text(f.get('category'))}</td>"
        f"<td>{_text(f.get('advisory', ''))}</td><td>{_text(f.get('why_unresolvable'))}</td>"
        f"<td>{_text(extra[i] if i < len(extra) else '')}</td></tr>"
        for i, f in enumerate(findings)
    )
    head = (
        "<tr><th>token</th><th>location</th><th>category</th><th>advisory</th><th>why</th>"
        f"<th>{'reason · source' if extra else ''}</th></tr>"
    )
    return f'<h3>{title}</h3><table id="{css_id}">{head}{rows}</table>'
