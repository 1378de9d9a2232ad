"""`ilh grade TASK --workspace DIR [--claim FILE] [--grader-model URI]`: grade a completion
claim made outside the harness (e.g. a CI job checking an agent's branch).

The grader is the one `ilh run` uses (`harness.grading.grader`): tool checks in DIR, model-judged
criteria by the grader model in a fresh context (unknown without one), the spec §7 audit.
The claim file, when given, is read like agent text with the hostile reader; its claims
are context for the grader and decide nothing.

Exit 0 verified, 1 needs revision, 2 bad input (DESIGN §6). `--json` prints exactly the
DESIGN §6 object; people get a rich table.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import click
from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from graders.evidence import AgentClaim
from graders.report import GradeReport
from harness.cli.consoles import ReportConsole, message_console
from harness.cli.errors import (
    EXIT_BAD_INPUT,
    BadInput,
    TaskFilePath,
    UserPath,
    reader_may_leave,
)
from harness.cli.options import (
    GRADER_MODEL_OPTION,
    NETWORK_OPTION,
    OTEL_OPTION,
    SANDBOX_OPTION,
    sandbox_overrides,
)
from harness.inputs.errors import InputError
from harness.run.grade_job import grade_task
from harness.run.progress import NARROW, sandbox_line
from harness.secrets import harness_secrets
from harness.secrets.terminal import printable, shown
from harness.telemetry.export import exporting
from harness.workspace.interrupts import immediate_interrupts
from harness.workspace.sandbox import (
    SandboxPolicy,
    sandbox_report,
)

EXIT_VERIFIED = 0
EXIT_NEEDS_REVISION = 1

EXIT_INTERRUPTED = 130

_RESULT_STYLE = {"pass": "green", "fail": "red", "unknown": "yellow"}


#: Lines of a failing check's output shown under the table (the whole is in --json).
OUTPUT_TAIL_LINES = 20


def failing_output(console: Console, report: GradeReport) -> None:
    """The end of each failing or undecided check's output: why a test failed is what the
    person grading needs next. Never for a hidden check (its output is the grader's)."""
    for check in report.checks:
        if check.result == "pass" or check.hidden or not check.output.strip():
            continue
        lines = check.output.rstrip("\n").splitlines()
        shown = lines[-OUTPUT_TAIL_LINES:]
        cut = len(lines) - len(shown)
        head = f"output of [bold]{escape(check.criterion)}[/] ({check.result})"
        if cut:
            head += f", its last {len(shown)} of {len(lines)} lines"
        console.print(head)
        for line in shown:
            console.print(Text("  " + printable(line), style="dim"))


def show(
    console: Console,
    report: GradeReport,
    claims: list[AgentClaim],
    claimed: bool,
    policy: SandboxPolicy,
) -> None:
    if console.width < NARROW:
        # Five columns in a narrow terminal are a letter wide each: one line a criterion.
        console.print("ilh grade")
        for o in report.audit.outcomes:
            style = _RESULT_STYLE[o.result]
            console.print(
                f"criterion {escape(o.id)} (weight {o.weight:g}): [{style}]{o.result}[/] "
                f"via {o.via}: {shown(o.detail)}",
                soft_wrap=True,
            )
    else:
        table = Table(title="ilh grade", show_lines=False)
        for column in ("criterion", "weight", "result", "via", "detail"):
            table.add_column(column)
        for o in report.audit.outcomes:
            style = _RESULT_STYLE[o.result]
            table.add_row(
                escape(o.id), f"{o.weight:g}", f"[{style}]{o.result}[/]", o.via, shown(o.detail)
            )
        console.print(table)
    failing_output(console, report)
    verified = report.verdict == "verified_complete"
    style = "bold green" if verified else "bold yellow"
    console.print(
        f"[{style}]{report.verdict}[/]  score {report.score:g} / threshold {report.threshold:g}"
        + ("" if verified else f"  missing: {escape(', '.join(report.missing))}")
    )
    console.print(f"[dim]{escape(report.status_line)}[/]")
    console.print("[bold]evidence map[/]")
    for line in report.audit.evidence.lines():
        console.print(f"  {shown(line)}")
    console.print("[bold]completion audit[/] (spec §7)")
    for step in report.audit.steps:
        console.print(f"  [cyan]{escape(step.pattern)}[/]")
        for finding in step.findings:
            console.print(f"    {shown(finding)}")
    if claimed and not claims:
        console.print("[yellow]note[/] the claim file holds no ::STATUS or ::EVIDENCE claim")
    for note in report.notes:
        console.print(f"[yellow]note[/] {shown(note)}")
    console.print(sandbox_line(sandbox_report(policy)))
    if report.grader_model is not None:
        console.print(
            f"grader {escape(report.grader_model)}: {report.tokens.input} in / "
            f"{report.tokens.output} out tokens, {len(report.calls)} call(s)"
        )


@click.command()
@click.argument("task_file", type=TaskFilePath())
@click.option(
    "--workspace",
    "workspace_dir",
    required=True,
    type=UserPath(path_type=Path),
    help="The workspace to grade (never changed: each check runs over its own copy; the "
    "grader model reads it).",
)
@click.option(
    "--claim",
    "claim_file",
    type=UserPath(path_type=Path, dir_okay=False),
    help="The agent's claim (its ::STATUS/::EVIDENCE lines): context, never evidence.",
)
@GRADER_MODEL_OPTION
@click.option(
    "--baseline",
    type=UserPath(path_type=Path, file_okay=False),
    help="The workspace as it was before the agent worked (say, the base branch's "
    "checkout): its tests and test-runner configuration are what the checks run.",
)
@SANDBOX_OPTION
@OTEL_OPTION
@NETWORK_OPTION
@click.option("--json", "as_json", is_flag=True, help="One JSON object (DESIGN §6) on stdout.")
def grade(
    task_file: Path,
    workspace_dir: Path,
    claim_file: Path | None,
    grader_model: str | None,
    baseline: Path | None,
    sandbox_mode: str | None,
    network: str | None,
    as_json: bool,
    otel: str | None,
) -> None:
    """Grade the work in a workspace against TASK_FILE's rubric.

    Exit 0 verified, 1 needs revision, 2 bad input, 130 interrupted."""
    err = message_console()
    try:
        with immediate_interrupts(), exporting(otel):
            report, claims, policy = asyncio.run(
                grade_task(
                    task_file,
                    workspace_dir,
                    claim_file,
                    grader_model,
                    baseline,
                    sandbox_overrides(sandbox_mode, network),
                )
            )
    except InputError as bad:
        BadInput.of(bad).show()
        sys.exit(EXIT_BAD_INPUT)
    except KeyboardInterrupt:
        err.print("interrupted: nothing was graded (the running check was stopped)")
        sys.exit(EXIT_INTERRUPTED)
    with reader_may_leave():
        if as_json:
            # Exactly DESIGN §6's object: consumers parse it strictly. An unconfined
            # grading is still said, on stderr, where a person running the pipeline sees it.
            if not policy.confined:
                err.print(sandbox_line(sandbox_report(policy)))
            shown = json.dumps(report.design_json(), ensure_ascii=False)
            click.echo(harness_secrets().redact(shown))  # check outputs were redacted already
        else:
            console = ReportConsole(highlight=False, soft_wrap=True)
            show(console, report, claims, claim_file is not None, policy)
    sys.exit(EXIT_VERIFIED if report.verdict == "verified_complete" else EXIT_NEEDS_REVISION)
