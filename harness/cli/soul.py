"""`ilh soul show|diff|history|review|sync`: an agent's SOUL file and where its GENEs came
from (SPEC-v5.0 Part IV; `harness.soul`)."""

from __future__ import annotations

import difflib
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import click

from envelopes.soul import Soul
from harness.cli.errors import BadInput, UserPath
from harness.cli.runs import STORE_OPTION, open_store
from harness.inputs.errors import InputError
from harness.run.owner import owning_recorded
from harness.soul.correct import error_counts
from harness.soul.cycle import apply_all
from harness.soul.file import load_soul, pending_path, read_pending, review
from harness.soul.sync import sync_run

SOUL_ARGUMENT = click.argument(
    "soul_path", metavar="SOUL", type=UserPath(path_type=Path, dir_okay=False)
)


@contextmanager
def bad_input() -> Iterator[None]:
    try:
        yield
    except InputError as err:
        raise BadInput.of(err) from None


def existing_soul(path: Path) -> Soul:
    # `exists`, not `is_file`: a named pipe or a device is there, and `load_soul` says
    # what it is not; "no such SOUL file" sent the user looking for a typo.
    if not path.exists():
        raise BadInput(str(path), "E500", "no such SOUL file")
    with bad_input():
        return load_soul(path)


@click.group()
def soul() -> None:
    """An agent's SOUL: its GENEs, where each came from, pending ones, sync after a kill."""


@soul.command("show")
@SOUL_ARGUMENT
def show(soul_path: Path) -> None:
    """The SOUL file, then each GENE's origins and the error counts."""
    current = existing_soul(soul_path)
    click.echo(current.render(), nl=False)
    click.echo("--")
    for gene in current.genes:
        origin = "; ".join(f"run {o.run} round {o.round} {o.error}" for o in gene.seen)
        click.echo(
            f"GENE {gene.name} conf:{gene.conf} occurrences:{gene.hits} "
            f"{'from ' + origin if origin else '(the principal’s)'}"
        )
        for flag in gene.flags:
            click.echo(f"  flagged principal_rule_error (run {flag.run}): {flag.note}")
    agent, principal = error_counts(current)
    by_class = ", ".join(f"{k}={v}" for k, v in sorted(agent.items())) or "none"
    click.echo(f"agent errors: {sum(agent.values())} ({by_class})")
    click.echo(f"principal_rule_error: {principal} (reported apart; counts toward nothing)")
    with bad_input():
        waiting = read_pending(soul_path)
    if waiting:
        click.echo(f"pending: {len(waiting)} occurrence(s) to review (ilh soul review)")


@soul.command("diff")
@SOUL_ARGUMENT
def diff(soul_path: Path) -> None:
    """What approving every pending GENE would change in the SOUL (unified diff)."""
    current = existing_soul(soul_path)
    with bad_input():
        waiting = read_pending(soul_path)
    after = apply_all(current, waiting)
    lines = difflib.unified_diff(
        current.render().splitlines(keepends=True),
        after.render().splitlines(keepends=True),
        fromfile=str(soul_path),
        tofile=f"{soul_path} (pending approved)",
    )
    click.echo("".join(lines) or "no pending GENEs", nl=not waiting)


@soul.command("history")
@SOUL_ARGUMENT
def history(soul_path: Path) -> None:
    """Every occurrence and flag, oldest run first: run, round, GENE, error class."""
    current = existing_soul(soul_path)
    rows = [
        (o.run, o.step, f"{o.run} round {o.round} step {o.step}: {g.name} {o.error}")
        for g in current.genes
        for o in g.seen
    ]
    rows += [
        (f.run, 1 << 30, f"{f.run}: {g.name} principal_rule_error flagged ({f.note})")
        for g in current.genes
        for f in g.flags
    ]
    for _, _, text in sorted(rows):
        click.echo(text)
    if not rows:
        click.echo("no corrections yet")


@soul.command("review")
@SOUL_ARGUMENT
@click.option("--approve", multiple=True, metavar="NAME", help="Approve a pending GENE.")
@click.option("--drop", multiple=True, metavar="NAME", help="Drop a pending GENE.")
@click.option("--all", "everything", is_flag=True, help="Approve every pending GENE.")
def review_pending(
    soul_path: Path, approve: tuple[str, ...], drop: tuple[str, ...], everything: bool
) -> None:
    """L3: approve or drop the pending GENEs before the agent's next session. Without a
    choice, lists them."""
    pending = pending_path(soul_path)
    if not os.path.lexists(soul_path) and not os.path.lexists(pending):
        # A SOUL may not exist yet (its first run was --soul-readonly), but with no pending
        # file either the path is a slip: "no pending GENEs", exit 0, hid it.
        raise BadInput(
            str(soul_path),
            "E500",
            f"no such SOUL file, and no pending GENEs for it ({pending.name}); check the path "
            "(the task's [agent] soul, from the task file's folder)",
        )
    with bad_input():
        waiting = read_pending(soul_path)
        names = {o.correction.gene for o in waiting}
        unknown = sorted((set(approve) | set(drop)) - names)
        if unknown:
            raise BadInput(
                "--approve" if unknown[0] in approve else "--drop",
                "E303",
                f"no pending GENE {unknown[0]!r} (pending: {', '.join(sorted(names)) or 'none'})",
            )
        both = sorted(set(approve) & set(drop))
        if both:
            # Which one the principal meant is not for the harness to guess.
            raise BadInput(
                "--drop",
                "E303",
                f"GENE {both[0]!r} is both approved and dropped; choose one",
            )
        if not (approve or drop or everything):
            for o in waiting:
                c = o.correction
                click.echo(f"{c.gene}: {c.error} in run {o.run} round {o.round}: T:{c.trait}")
            if not waiting:
                click.echo("no pending GENEs")
            return
        approved, dropped = review(soul_path, set(approve), set(drop), everything)
    click.echo(f"approved {approved}, dropped {dropped} pending occurrence(s)")


@soul.command("sync")
@click.argument("run_ref", metavar="RUN")
@STORE_OPTION
def sync(run_ref: str, store_path: Path) -> None:
    """Persist a run's GENEs from its record (after a kill: no run ended to do it)."""
    with (
        open_store(store_path, writing=True) as store,
        bad_input(),
        owning_recorded(store, run_ref),  # not while `ilh run` carries it on
    ):
        path, done = sync_run(store, run_ref)
    where = f"{path}.pending.jsonl" if done.pending else str(path)
    click.echo(f"{done.written} occurrence(s) persisted to {where}")
    if done.why:
        click.echo(done.why)
