"""`ilh grade`'s job without its output: grade a workspace against a task's rubric in a
fresh grader context (the CLI prints the report; `harness.api.grade` returns it)."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from budgets.ledger import BudgetLedger
from graders.evidence import AgentClaim
from graders.report import GradeReport
from harness.grading.grader import Grader, claims_from_text, grading_rubric
from harness.grading.tree import GradingSources, snapshot_folder
from harness.inputs.errors import InputError, read_utf8
from harness.inputs.task_file import Task, load_task
from harness.models.clients.options import NO_OPTIONS
from harness.run.orchestrator import objective_of, task_blocks
from harness.run.setup import budgets_of, close_client, grader_client_for, sandbox_policy
from harness.workspace.folder import Workspace, WorkspaceError
from harness.workspace.sandbox import NO_OVERRIDES, SandboxOverrides, SandboxPolicy


def read_claim_file(path: Path) -> list[AgentClaim]:
    text = read_utf8(path, "the claim file")
    return claims_from_text(text, path)


async def grade_task(
    task_file: Path,
    workspace_dir: Path,
    claim_file: Path | None,
    grader_model: str | None,
    baseline: Path | None = None,
    sandbox: SandboxOverrides = NO_OVERRIDES,
) -> tuple[GradeReport, list[AgentClaim], SandboxPolicy]:
    """Everything `ilh grade` does but the output. Bad input raises InputError."""
    task = load_task(task_file)
    policy = sandbox_policy(task, sandbox)
    if task.spec.rubric is None:
        raise InputError(
            task_file,
            "E303",
            "[rubric] is missing: ilh grade needs [task] and [rubric] (DESIGN §5)",
        )
    try:
        workspace = Workspace(workspace_dir)
    except WorkspaceError as err:
        raise InputError("--workspace", "E500", str(err)) from None
    if baseline is not None and not baseline.is_dir():
        raise InputError("--baseline", "E500", f"{baseline} is not a folder")
    claims = read_claim_file(claim_file) if claim_file is not None else []
    # The baseline plays the role of `ilh run`'s template snapshot; the hidden checks
    # are a private copy of the task's folder, as under `ilh run` (see `_checks_copy`).
    template = baseline.resolve() if baseline is not None else None
    with _checks_copy(task_file, task.checks_folder()) as checks:
        sources = GradingSources(template=template, checks=checks)
        return await _grade(task, workspace, claims, grader_model, sources, policy)


@contextmanager
def _checks_copy(task_file: Path, checks: Path | None) -> Iterator[Path | None]:
    """A private copy of the hidden checks, removed after grading. The sandbox hands
    the checks it mounts to its unprivileged user (chown): done to the task's own folder,
    that gave the user's files away, and to whatever a `checks` symlink named (`/`
    included: the whole host chowned to "nobody")."""
    if checks is None:
        yield None
        return
    scratch = Path(tempfile.mkdtemp(prefix="ilh-grade-checks-"))
    try:
        try:
            copy = snapshot_folder(checks, scratch / "checks")
        except WorkspaceError as err:
            raise InputError(task_file, "E500", f"checks: {err}") from None
        yield copy
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


async def _grade(
    task: Task,
    workspace: Workspace,
    claims: list[AgentClaim],
    grader_model: str | None,
    sources: GradingSources,
    policy: SandboxPolicy,
) -> tuple[GradeReport, list[AgentClaim], SandboxPolicy]:
    client = grader_client_for(grader_model, task, NO_OPTIONS)
    grader = Grader(
        rubric=grading_rubric(task),
        objective=objective_of(task),
        task_blocks=task_blocks(task),
        workspace=workspace,
        # The task's budgets, if any, bound the grader: it draws on the audit pool.
        ledger=BudgetLedger(budgets_of(task)),
        client=client,
        sources=sources,
        sandbox=policy,
    )
    try:
        return await grader.grade(claims), claims, policy
    finally:
        if client is not None:
            await close_client(client)
