"""One conversation with the grader model (`graders.model_judge.JudgeSession`).

Every call is built from scratch by `build_grader_envelope` (never from the agent's
history), offers only the read-only workspace tools, is clamped to what the audit pool
of the budget can pay (`clamp(..., pool=Pool.AUDIT)`) and charged to it
(`BudgetLedger.charge_audit`). The grader may look around the workspace for up to
`MAX_TURNS` calls per attempt; a reply without tool calls is its answer.

Failure is never fatal to a run: a call the budget cannot pay, a client error or a
grader script that has ended raises `JudgeUnavailable`, and the criteria it was to judge
become unknown.
"""

from __future__ import annotations

from collections.abc import Sequence

import structlog

from budgets.clamp import clamp
from budgets.ledger import BudgetLedger, Pool
from graders.model_judge import JudgeUnavailable, NoAnswer, flat_text, shown_forms
from graders.report import GraderCall, GraderTokens
from harness.context.agent import Segment, tool_result_segment
from harness.enforce.provenance import Provenance
from harness.grading.context import build_grader_envelope
from harness.models.clients.estimate import input_estimate_for
from harness.models.interface import AgentEnded, ModelCallError, ModelClient, ModelRequest
from harness.models.secrecy import redact_reply, redact_request
from harness.workspace.folder import Workspace
from harness.workspace.tools import ToolResult, dispatch, tool_specs

MAX_GRADER_OUTPUT = 2048
MAX_TURNS = 8
DEFAULT_GRADER_TIMEOUT_S = 120.0
READ_ONLY_TOOL_TIMEOUT_S = 10.0  # read-only tools run no commands; a formality for dispatch

log = structlog.get_logger("ilh.grader")


class GraderSession:
    def __init__(
        self,
        *,
        client: ModelClient,
        workspace: Workspace,
        ledger: BudgetLedger,
        declarations: Sequence[str],
        decided: Sequence[tuple[str, str]],
        task_blocks: Sequence[Segment],
        check_blocks: Sequence[Segment],
        claims: Sequence[str],
        max_output: int = MAX_GRADER_OUTPUT,
        check_texts: Sequence[str] = (),
    ) -> None:
        """`check_texts`: the raw outputs of the tool checks shown in `check_blocks`
        (for `echoed`)."""
        self.client = client
        self.workspace = workspace
        self.ledger = ledger
        self.declarations = list(declarations)
        self.decided = list(decided)
        self.task_blocks = list(task_blocks)
        self.check_blocks = list(check_blocks)
        self.claims = list(claims)
        self.max_output = max_output
        self.history: list[Segment] = []
        self.inspected: set[str] = set()
        self.calls: list[GraderCall] = []
        self.tokens = GraderTokens()
        self.attempt = 0
        # Untrusted text the grader is shown, whitespace collapsed, for `echoed`: the
        # check outputs and claims now, each tool result as it comes.
        self.shown: list[str] = []
        for text in (*check_texts, *claims):
            self.remember_shown(text)

    def remember_shown(self, text: str) -> None:
        """Keep untrusted text the grader is shown (each of its `shown_forms`)."""
        self.shown.extend(shown_forms(text))

    def echoed(self, text: str) -> bool:
        flat = flat_text(text)
        return bool(flat) and any(flat in seen for seen in self.shown)

    def inspected_file(self, path: str) -> bool:
        return path in self.inspected

    async def ask(self, pending: Sequence[str], correction: str | None) -> str:
        self.attempt += 1
        if correction:
            self.history.append(Segment(provenance=Provenance.RUNTIME, text=correction))
        for turn in range(1, MAX_TURNS + 1):
            envelope = build_grader_envelope(
                declarations=self.declarations,
                judge=pending,
                decided=self.decided,
                task_blocks=self.task_blocks,
                check_blocks=self.check_blocks,
                claims=self.claims,
                history=self.history,
            )
            messages = envelope.messages()
            tools = tuple(tool_specs(read_only=True))
            estimate = input_estimate_for(self.client, messages, tools)
            fit = clamp(self.ledger, self.max_output, estimate, pool=Pool.AUDIT)
            if not fit.fits:
                raise JudgeUnavailable(
                    "audit_budget", f"the audit budget cannot pay for a grader call: {fit.reason}"
                )
            timeout = min(fit.time_left or DEFAULT_GRADER_TIMEOUT_S, DEFAULT_GRADER_TIMEOUT_S)
            request = ModelRequest(
                messages=messages,
                tools=tools,
                max_output_tokens=fit.max_output,
                timeout_s=timeout,
            )
            try:
                reply = redact_reply(await self.client.complete(redact_request(request)))
            except AgentEnded as ended:
                raise JudgeUnavailable("grader_error", f"the grader model ended: {ended}") from None
            except ModelCallError as failure:
                if failure.usage is not None:  # usage the provider reported is still spent
                    self.ledger.charge_audit(
                        failure.usage.input_tokens, failure.usage.output_tokens
                    )
                    self.tokens += GraderTokens(
                        input=failure.usage.input_tokens, output=failure.usage.output_tokens
                    )
                if failure.kind == "timeout" and timeout < DEFAULT_GRADER_TIMEOUT_S:
                    # The time budget, not the grader, cut this call short.
                    raise JudgeUnavailable(
                        "audit_budget",
                        f"the grader model call timed out after {timeout:g}s, all the time "
                        "the audit budget had left",
                    ) from None
                raise JudgeUnavailable(
                    "grader_error", f"the grader model call failed: {failure}"
                ) from None
            except Exception as exc:
                # Whatever a client raises (network, provider, protocol), a grader that
                # cannot answer leaves its criteria unknown; it never ends the run.
                log.warning("grader.call_failed", error=type(exc).__name__)
                raise JudgeUnavailable(
                    "grader_error", f"the grader model call failed: {type(exc).__name__}: {exc}"
                ) from None
            usage = reply.usage
            self.ledger.charge_audit(usage.input_tokens, usage.output_tokens)
            self.tokens += GraderTokens(input=usage.input_tokens, output=usage.output_tokens)
            self.calls.append(
                GraderCall(
                    attempt=self.attempt,
                    turn=turn,
                    input_tokens=usage.input_tokens,
                    output_tokens=usage.output_tokens,
                    estimated=usage.estimated,
                    envelope_digest=envelope.digest(),
                    stop_reason=reply.stop_reason,
                    tool_calls=tuple(c.name for c in reply.tool_calls),
                )
            )
            self.history.append(
                Segment(provenance=Provenance.GRADER, text=reply.text, tool_calls=reply.tool_calls)
            )
            if not reply.tool_calls:
                return reply.text
            for call in reply.tool_calls:
                result = dispatch(
                    self.workspace, call, timeout_s=READ_ONLY_TOOL_TIMEOUT_S, read_only=True
                )
                self.inspected |= files_seen(result)
                self.remember_shown(result.output)
                self.history.append(tool_result_segment(result))
        raise NoAnswer(f"no answer after {MAX_TURNS} grader calls (it kept calling tools)")


def files_seen(result: ToolResult) -> set[str]:
    """Files whose content a tool result showed: read with read_file, or matched by grep
    (list_files shows names, not content). Grep's come from the tool's own list, never
    parsed out of its output: a file name may hold a newline and `name:n:` text, which
    would forge a file as inspected."""
    if not result.ok:
        return set()
    path = result.meta.get("path")
    if result.name == "read_file" and isinstance(path, str):
        return {path}
    if result.name == "grep":
        return {f for f in result.meta.get("matched_files", []) if isinstance(f, str)}
    return set()
