"""`ilh`: the command line. Each command lives in its own module of `harness.cli`, imported
only when that command runs: `ilh --help` or `ilh lint` must not pay for the model SDKs,
the grader and the run loop that `ilh run` needs (start-up is most of a short command)."""

from __future__ import annotations

import contextlib
import errno
import importlib
import io
import os
import signal
import sys

import click

from harness.cli.entry import ready
from harness.workspace.interrupts import (
    EXIT_INTERRUPTED,
    exit_now,
    stopping,
    terminate_as_interrupt,
)

#: name -> (module, attribute, one-line help shown by `ilh --help` without importing it).
COMMANDS: dict[str, tuple[str, str, str]] = {
    "certify": (
        "harness.cli.certify",
        "certify",
        "Certify a handoff prompt with the Diylisis protocol.",
    ),
    "correct": (
        "harness.cli.correct",
        "correct",
        "Report an error of a recorded run: its agent's SOUL gets a GENE.",
    ),
    "grade": ("harness.cli.grade", "grade", "Grade the work in a workspace against a rubric."),
    "lint": ("harness.cli.lint", "lint", "Lint iLang text with the spec's error codes."),
    "run": ("harness.cli.run", "run", "Run an agent task under enforced iLang v4 semantics."),
    "runs": ("harness.cli.runs", "runs", "Inspect the run record."),
    "soul": (
        "harness.cli.soul",
        "soul",
        "An agent's SOUL: show, diff, history, review, sync.",
    ),
    "view": ("harness.cli.view", "view", "Show a run as a self-contained HTML report."),
    "schema": (
        "harness.cli.schema",
        "schema",
        "Print the JSON Schema of a task file or a JSON output.",
    ),
}


class LazyGroup(click.Group):
    """A group whose commands are imported on first use (click's documented pattern)."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *COMMANDS})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        known = super().get_command(ctx, cmd_name)
        if known is not None or cmd_name not in COMMANDS:
            return known
        module_name, attribute, _ = COMMANDS[cmd_name]
        command = getattr(importlib.import_module(module_name), attribute)
        if not isinstance(command, click.Command):
            raise TypeError(f"{module_name}.{attribute} is not a click command")
        self.add_command(command, cmd_name)
        return command

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        try:
            return super().resolve_command(ctx, args)
        except click.exceptions.NoSuchCommand as err:
            # Click suggests among `self.commands`, the commands imported so far: none,
            # here, so `ilh rn` had no "Did you mean 'run'?" (a sub-command of `runs`,
            # an eager group, had one). Suggest among every command of the table.
            raise click.exceptions.NoSuchCommand(
                err.command_name, possibilities=self.list_commands(ctx), ctx=ctx
            ) from None

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        # The help page lists every command from the table, importing none of them.
        rows = [(name, COMMANDS[name][2]) for name in sorted(COMMANDS)]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="ilang-harness")
def ilh() -> None:
    """ilang-harness: the model proposes, the runtime decides."""
    from harness.secrets.logs import configure_logging, log_level  # not for `ilh --help`

    _, note = log_level(os.environ.get("ILH_LOG"))
    if note is not None:
        click.echo(note, err=True)
    if os.environ.get("ILH_SANDBOX_UID") is not None:
        from harness.workspace.sandbox_user import sandbox_uid_note

        uid_note = sandbox_uid_note()
        if uid_note is not None:
            click.echo(uid_note, err=True)
    configure_logging()


def usage_location(err: click.UsageError) -> str:
    """Where bad usage is: the option or argument at fault, else the command."""
    param = getattr(err, "param", None)  # only BadParameter and its kind carry one
    if isinstance(param, click.Option) and param.opts:
        return param.opts[0]
    if isinstance(param, click.Parameter):
        return param.human_readable_name
    option = getattr(err, "option_name", None)  # NoSuchOption, BadOptionUsage
    if isinstance(option, str) and option:
        return option
    return err.ctx.command_path if err.ctx is not None else "ilh"


_UTF8 = {"utf-8", "utf8"}


def main() -> None:
    """Bad usage is exit 2 with no traceback (DESIGN §7), in the one format every command
    uses for bad input (`harness.cli.errors`): `error WHERE: E303 message`."""
    # SIGTERM (a service manager, `kill`, a CI timeout) is an interruption like Ctrl-C:
    # the command stops its work and says what is resumable, rather than dying
    # silently with 143 (the record survives either way; the message does not).
    # A second signal while the first is handled is `harness.workspace.interrupts`'s.
    signal.signal(signal.SIGTERM, terminate_as_interrupt)
    if sys.stdin is None:
        # Started with stdin closed (`ilh … <&-`, some service managers): every
        # `sys.stdin.isatty()` and `lint -` raised AttributeError. Closed reads as empty.
        sys.stdin = open(os.devnull, encoding="utf-8")  # noqa: SIM115 (lives as long as we do)
    # A terminal or pipe that takes only ASCII (`PYTHONIOENCODING=ascii`, an old locale)
    # made the first `·` or `→` of a summary a UnicodeEncodeError traceback, after the
    # run was done. What it cannot show is replaced: `?` on stdout (a `--json` document
    # stays valid JSON), a `\\u` escape on stderr (messages keep what they name).
    for stream, errors in ((sys.stdout, "replace"), (sys.stderr, "backslashreplace")):
        if isinstance(stream, io.TextIOWrapper) and stream.encoding.lower() not in _UTF8:
            stream.reconfigure(errors=errors)
    try:
        _main()
        if stopping():  # an interruption a command swallowed still ends it as one
            click.echo("interrupted", err=True)
            sys.exit(EXIT_INTERRUPTED)
    except SystemExit as done:
        if not stopping():
            raise
        # Interrupted: the message is out; the interpreter's shutdown would restore
        # SIGTERM's default action (a repeated SIGTERM in it is exit 143) and wait for
        # worker threads the interruption left. Nothing is left to do.
        exit_now(done.code if isinstance(done.code, int) else EXIT_INTERRUPTED)
    except OSError as err:
        if err.errno not in _WRITE_FAILURES:
            raise
        cannot_write(err)


#: A write that the device refused: a full disk, a quota, a file too large, a broken
#: device (`ilh lint f > /dev/full`). Not a bug of ours: the environment's.
_WRITE_FAILURES = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EIO})


def cannot_write(err: OSError) -> None:
    """One line, exit 2, for output the device would not take: it was a traceback from
    deep in click or rich (DESIGN §7: never a traceback). Commands that write files say
    which one themselves; what reaches here is a write with no name, most often stdout."""
    from harness.cli.errors import EXIT_BAD_INPUT, BadInput, stdout_to_devnull

    stdout_to_devnull()  # what is still buffered must not fail again at exit
    command = " ".join(["ilh", *sys.argv[1:2]])
    with contextlib.suppress(OSError):  # stderr may be the same full device
        BadInput(command, "E500", f"cannot write its output: {err.strerror or err}").show()
    sys.exit(EXIT_BAD_INPUT)


def _main() -> None:
    try:
        ready()  # from here, click turns a Ctrl-C into its Abort: "interrupted", below
        returned = ilh.main(args=sys.argv[1:], prog_name="ilh", standalone_mode=False)
    except click.exceptions.NoArgsIsHelpError as err:
        # `ilh`, `ilh runs`, `ilh soul` alone: the help as click lays it out (a newcomer's
        # first command should not read as one squashed error line); still exit 2, as
        # click has it, since no command ran.
        click.echo(err.format_message(), err=True)
        sys.exit(2)
    except click.UsageError as err:
        # One line, as every bad input is: click lays some messages out on several
        # (a missing choice lists its options one per line).
        message = " ".join(err.format_message().split())
        click.echo(f"error {usage_location(err)}: E303 {message}", err=True)
        if err.ctx is not None:
            click.echo(f"(`{err.ctx.command_path} --help` shows the usage)", err=True)
        sys.exit(2)
    except click.ClickException as err:
        err.show()
        sys.exit(err.exit_code)
    except click.Abort:
        click.echo("interrupted", err=True)
        sys.exit(EXIT_INTERRUPTED)
    if isinstance(returned, int):  # `--help`, `--version`: click's own exit status
        sys.exit(returned)
