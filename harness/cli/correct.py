"""`ilh correct RUN --class CLASS --text "…" [--gene NAME]`: a person reports an error of a
recorded run; the agent's SOUL is corrected (SPEC-v5.0 Part IV, `harness.soul.correct`)."""

from __future__ import annotations

from pathlib import Path

import click

from envelopes.declarations.gene import ERROR_CLASSES
from harness.cli.errors import BadInput
from harness.cli.runs import STORE_OPTION, open_store
from harness.inputs.errors import InputError
from harness.run.owner import owning_recorded
from harness.soul.correct import correct_run

_TOLD = {
    "added": "GENE {gene} added (conf:mutable): the agent's next session starts with it",
    "promoted": "GENE {gene} promoted (conf:confirmed, moved first): the second occurrence of "
    "this error; this agent is struggling with this behaviour",
    "terminated": "GENE {gene}: the third occurrence of this error; a session that makes it "
    "again is ended by the runtime",
    "principal_rule_error": "principal_rule_error recorded against GENE {gene} and flagged for "
    "the principal to amend; no GENE added against the agent, nothing counted",
}


@click.command()
@click.argument("run_ref", metavar="RUN")
@click.option(
    "--class", "error_class", required=True, type=click.Choice(ERROR_CLASSES), help="§3 class."
)
@click.option("--text", required=True, help="What should have happened (the GENE's T line).")
@click.option("--gene", help="The GENE's name (for principal_rule_error: the principal's rule).")
@STORE_OPTION
def correct(run_ref: str, error_class: str, text: str, gene: str | None, store_path: Path) -> None:
    """Report an error of the recorded run RUN: its agent's SOUL gets the correction."""
    with open_store(store_path, writing=True) as store:
        try:
            with owning_recorded(store, run_ref):  # not while `ilh run` carries it on
                done = correct_run(store, run_ref, error_class, text, gene)
        except InputError as err:
            raise BadInput.of(err) from None
    told = _TOLD[str(done.step)].format(gene=done.gene)
    where = f"{done.soul}.pending.jsonl (review: ilh soul review)" if done.pending else done.soul
    click.echo(f"{told}\nwritten to {where}")
