"""`ilh`: the command line. Each command lives in its own `cli_*` module."""

from __future__ import annotations

import sys

import click

from harness.cli.certify import certify
from harness.cli.grade import grade
from harness.cli.lint import lint
from harness.cli.logs import configure_logging
from harness.cli.run import run
from harness.cli.runs import runs


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="ilang-harness")
def ilh() -> None:
    """ilang-harness: the model proposes, the runtime decides."""
    configure_logging()


ilh.add_command(certify)
ilh.add_command(grade)
ilh.add_command(lint)
ilh.add_command(run)
ilh.add_command(runs)


def main() -> None:
    # click reports bad usage with exit status 2 and no traceback, as DESIGN §7 asks.
    ilh.main(args=sys.argv[1:], prog_name="ilh")
