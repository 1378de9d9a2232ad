"""`ilh certify TARGET --role ROLE …`: certify a handoff's portability to a zero-memory
receiver (DIYLISIS; `harness.certify`), and `ilh certify --check CERT [TARGET]`, the
receiver's re-check.

Exit 0 certified (or, with --check, the target still has the certified identity and every
dereference step resolves), 1 not certified (for any reason, a refused contract included),
2 unreadable input or bad usage (DESIGN §6), 130 interrupted (Ctrl-C: nothing written).
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import Callable
from contextlib import suppress
from pathlib import Path

import click
from click.core import ParameterSource
from rich.console import Console

from harness.certify.certificate import Certificate
from harness.certify.check import check_certificate
from harness.certify.contract import NO_ANSWERS, Flags, declare, load_answers
from harness.certify.gate import Gate, NoGate, PromptGate
from harness.certify.lexicon import load_lexicon
from harness.certify.loop import Certifier, Request
from harness.certify.refuter import RefuterBudget
from harness.certify.render import MARKDOWN_STARTS, render_markdown
from harness.certify.sources import IGNORED_FOLDERS
from harness.certify.target import read_target
from harness.cli.consoles import message_console
from harness.cli.errors import (
    EXIT_BAD_INPUT,
    BadInput,
    UserPath,
    refuse_overwriting,
    refuse_recording_over,
    refuse_replacing_other_than,
    same_file,
)
from harness.cli.options import base_url_option, checked_model_uri
from harness.inputs.bounds import MAX_ROUNDS, MAX_TIME_SECONDS, MAX_TOKENS
from harness.inputs.durations import parse_duration
from harness.inputs.errors import InputError
from harness.models.clients.options import ClientOptions
from harness.models.interface import ModelClient
from harness.record.store import DEFAULT_STORE_PATH, StoreError
from harness.run.setup import client_from_uri, close_client, default_store
from harness.secrets.terminal import printable
from harness.workspace.interrupts import EXIT_INTERRUPTED, immediate_interrupts

EXIT_CERTIFIED = 0
EXIT_NOT_CERTIFIED = 1


def refuter_seconds(value: str) -> float:
    """`--refuter-time` in seconds; bad usage (named by its flag) otherwise, checked by click
    before anything runs, like `--refuter-tokens`."""
    try:
        seconds = parse_duration(value)
    except ValueError as err:
        raise click.BadParameter(str(err)) from None
    if seconds <= 0:
        raise click.BadParameter(f"{value!r}: the refuter's time budget must be positive")
    if seconds > MAX_TIME_SECONDS:  # as a task file's [budget.time] (harness.inputs.bounds)
        raise click.BadParameter(
            f"{value!r}: at most {MAX_TIME_SECONDS} seconds (a year) for the refuter"
        )
    return seconds


@click.command()
@click.argument("target", required=False)
@click.option("--role", help="The receiver's role (an open word: implementer, reviewer, …).")
@click.option("--activity", help="What the receiver will do with the record.")
@click.option(
    "--source",
    "sources",
    multiple=True,
    metavar="PATH",
    help="A granted source (file or folder) the receiver is given; repeatable.",
)
@click.option(
    "--verify",
    "verify",
    multiple=True,
    metavar="CMD",
    help="A verification command the receiver runs; repeatable.",
)
@click.option("--scope", help="The execution scope.")
@click.option("--stop", help="The stop condition.")
@click.option(
    "--utterance",
    "utterance",
    multiple=True,
    metavar="TEXT",
    help="The user's own words behind this certification (contract provenance).",
)
@click.option("--verb", help="The activation verb (default: 'Read {locator} and execute it').")
@click.option(
    "--contract",
    "contract_path",
    type=UserPath(path_type=Path, dir_okay=False),
    help="A contract file (TOML) with the same fields; its fields are AI-authored "
    "unless traceable to --utterance.",
)
@click.option(
    "--certificate",
    "certificate",
    metavar="PATH",
    help="Write the certificate (JSON) here when certified.",
)
@click.option(
    "--markdown",
    "markdown_path",
    type=UserPath(path_type=Path, dir_okay=False),
    help="Also write the readable Markdown rendering here (a new or empty file, or one "
    "written so before: never another file).",
)
@click.option(
    "--model",
    callback=checked_model_uri,
    help="The refuter's model URI; without one, the realization is "
    "lint-fallback and the certificate says so.",
)
@click.option(
    "--answers",
    "answers_path",
    type=UserPath(path_type=Path, dir_okay=False),
    help="Gate answers and contract confirmations (JSON), for scripts.",
)
@click.option(
    "--apply",
    "apply_repairs",
    is_flag=True,
    help="Apply Resolve/Route/Drop repairs to the target in place.",
)
@click.option("--non-interactive", is_flag=True, help="Never prompt: open items end not certified.")
@click.option("--json", "as_json", is_flag=True, help="The certificate as JSON on stdout.")
@click.option(
    "--check",
    "check_path",
    type=UserPath(path_type=Path, dir_okay=False),
    metavar="CERT",
    help="The receiver's side: re-check CERT against TARGET.",
)
@click.option(
    "--store",
    "store_path",
    type=UserPath(path_type=Path, dir_okay=False),
    help="Run store (default .ilh/runs.db); a certification is a run.",
)
@click.option(
    "--record",
    "record_path",
    type=UserPath(path_type=Path, dir_okay=False),
    help="Record every refuter call; replay:PATH serves them back offline.",
)
@base_url_option("Server for openai:/anthropic: models.")
@click.option(
    "--lexicon",
    "lexicons",
    multiple=True,
    type=UserPath(path_type=Path, dir_okay=False),
    help="An extra word-list file (TOML, like harness/certify/lexicon/en.toml).",
)
@click.option(
    "--refuter-tokens",
    type=click.IntRange(min=1, max=MAX_TOKENS),
    default=60_000,
    show_default=True,
    help="The refuter's token budget.",
)
@click.option(
    "--refuter-time",
    default="600s",
    show_default=True,
    callback=lambda _ctx, _param, value: refuter_seconds(value),
    help="The refuter's time budget.",
)
@click.option(
    "--refuter-calls",
    type=click.IntRange(min=1, max=MAX_ROUNDS),
    default=24,
    show_default=True,
    help="The refuter's budget of model calls (its rounds).",
)
def certify(
    target: str | None,
    role: str | None,
    activity: str | None,
    sources: tuple[str, ...],
    verify: tuple[str, ...],
    scope: str | None,
    stop: str | None,
    utterance: tuple[str, ...],
    verb: str | None,
    contract_path: Path | None,
    certificate: str | None,
    markdown_path: Path | None,
    model: str | None,
    answers_path: Path | None,
    apply_repairs: bool,
    non_interactive: bool,
    as_json: bool,
    check_path: Path | None,
    store_path: Path | None,
    record_path: Path | None,
    base_url: str | None,
    lexicons: tuple[Path, ...],
    refuter_tokens: int,
    refuter_time: float,
    refuter_calls: int,
) -> None:
    """Certify TARGET (a file, or git:REV:PATH) for a zero-memory receiver in ROLE.

    Exit 0 certified, 1 not certified, 2 bad input, 130 interrupted."""
    err = message_console()
    try:
        if check_path is not None:
            refuse_certification_flags()
            sys.exit(run_check(check_path, target, as_json))
        if not model:
            refuse_refuter_flags_without_a_model()
        flags = Flags(
            target=target,
            role=role,
            activity=activity,
            sources=sources,
            verify=verify,
            scope=scope,
            stop=stop,
            certificate=certificate,
            verb=verb,
            utterance=utterance,
        )
        cwd = Path.cwd()
        if markdown_path is not None:
            # Checked before the work, as --certificate is: a certification that cannot
            # land where it was asked to is known before it is done.
            folder = markdown_path.parent
            if not folder.is_dir() or not os.access(folder, os.W_OK):
                raise InputError(markdown_path, "E500", "cannot write the Markdown there")
        given, contract = declare(flags, contract_path, cwd)
        # Read here, refused in the reader's own words, before the store is opened: a
        # mistyped target left a new `.ilh/runs.db` in the folder it was typed in, and so
        # did one that is a device, a folder, not UTF-8 or a git record that cannot be
        # read. (The certification reads it again, as it is then.)
        read_target(given, cwd)
        # The record being certified, and the store, are never an output's landing:
        # `--markdown handoff.md` replaced the handoff by its own certificate.
        keep = [(store_path or DEFAULT_STORE_PATH, "the run store")]
        if not given.startswith("git:"):
            keep.append((cwd / given, "the record it certifies"))
            if contract_path is not None:
                keep.append((contract_path.parent / given, "the record it certifies"))
        refuse_one_file_for_two_outputs(
            [
                (markdown_path, "--markdown"),
                (None if contract.certificate is None else cwd / contract.certificate,
                 "--certificate"),
                (record_path, "--record"),
            ]
        )  # fmt: skip
        if markdown_path is not None:
            refuse_overwriting(markdown_path, "the Markdown", keep)
            # `--markdown task.toml` (or a source file) replaced it with the Markdown, as
            # `--certificate task.toml` once did: only a Markdown certificate written
            # before, or an empty file, is replaced.
            refuse_replacing_other_than(
                markdown_path, "the Markdown", MARKDOWN_STARTS, "a Markdown certificate"
            )
        if contract.certificate is not None:
            # `--certificate task.toml` replaced the task file with the certificate; one
            # written before (JSON, an object) is replaced as it always was.
            refuse_replacing_other_than(
                cwd / contract.certificate, "the certificate", (b"{",), "a JSON certificate"
            )
        if record_path is not None:
            refuse_recording_over(record_path, keep)
        refuse_writing_into_sources(
            contract.source_paths(),
            [
                (store_path or DEFAULT_STORE_PATH, "--store"),
                (markdown_path, "--markdown"),
                (None if contract.certificate is None else cwd / contract.certificate,
                 "--certificate"),
                (record_path, "--record"),
            ],
        )  # fmt: skip
        answers = load_answers(answers_path) if answers_path is not None else NO_ANSWERS
        lexicon = load_lexicon(lexicons)
        seconds = refuter_time
        interactive = not non_interactive and sys.stdin.isatty()
        gate: Gate = PromptGate(err) if interactive else NoGate()
        client: ModelClient | None = None
        if model:
            client = client_from_uri(
                model,
                lambda rest: (cwd / rest).resolve(),
                options=ClientOptions(base_url=base_url, record=record_path),
                replay=lambda rest: Path(rest),
                script_of="refuter",
            )
        with default_store(store_path) as store:
            request = Request(
                target=given,
                contract=contract,
                cwd=cwd,
                lexicon=lexicon,
                gate=gate,
                answers=answers,
                apply=apply_repairs,
                client=client,
                model_uri=model,
                budget=RefuterBudget(tokens=refuter_tokens, seconds=seconds, calls=refuter_calls),
                store=store,
            )
            # Ctrl-C at once, in the model call too: asyncio's own handler only cancels
            # the task, and a second Ctrl-C in the clean-up ended the process by SIGINT.
            with immediate_interrupts():
                result = asyncio.run(_certify(request, client))
    except KeyboardInterrupt:
        kept = (
            "; --apply: the target keeps the repairs of the passes made before (each written whole)"
            if apply_repairs
            else ""
        )
        err.print(f"interrupted: not certified, nothing written{kept}", markup=False)
        sys.exit(EXIT_INTERRUPTED)
    except InputError as bad:
        BadInput.of(bad).show()
        sys.exit(EXIT_BAD_INPUT)
    except (StoreError, ValueError) as bad:
        BadInput("ilh certify", "E500", str(bad)).show()
        sys.exit(EXIT_BAD_INPUT)
    try:
        with immediate_interrupts():
            emit(result, contract.certificate, markdown_path, as_json, err)
    except KeyboardInterrupt:
        err.print("interrupted: each output is whole or was not written", markup=False)
        sys.exit(EXIT_INTERRUPTED)
    sys.exit(EXIT_CERTIFIED if result.certified else EXIT_NOT_CERTIFIED)


def refuse_one_file_for_two_outputs(outputs: list[tuple[Path | None, str]]) -> None:
    """`--markdown X --certificate X`: the certificate was written, "certificate written
    to X" said, and the Markdown then replaced it. Each output gets a file of its own."""
    given = [(path, flag) for path, flag in outputs if path is not None]
    for i, (path, flag) in enumerate(given):
        for other, other_flag in given[:i]:
            if same_file(path, other):
                raise BadInput(
                    flag,
                    "E303",
                    f"{other_flag} and {flag} name the same file ({path}): each output "
                    "needs a file of its own",
                )


def refuse_writing_into_sources(
    sources: list[Path], outputs: list[tuple[Path | None, str]]
) -> None:
    """An output written inside a granted source folder changes the source after its
    identity is bound: the certificate issued failed its own `--check` at once ("the
    granted source changed after certification"). Inside a folder no identity covers
    (`.ilh`, the harness's store: the default `.ilh/runs.db`; `.git`) it does no harm."""
    folders = [Path(os.path.abspath(s)).resolve() for s in sources if s.is_dir()]
    for path, flag in outputs:
        if path is None:
            continue
        where = Path(os.path.abspath(path))
        where = where.parent.resolve() / where.name
        for folder in folders:
            if folder not in where.parents:
                continue
            if IGNORED_FOLDERS.intersection(where.relative_to(folder).parts[:-1]):
                continue
            raise BadInput(
                flag,
                "E303",
                f"{path} is inside the granted source {folder}: writing it would change the "
                "source after its identity is bound, and the certificate would fail its own "
                "check; write it outside the granted sources",
            )


async def _certify(request: Request, client: ModelClient | None) -> Certificate:
    try:
        return await Certifier(request).run()
    finally:
        if client is not None:
            await close_client(client)


def write_or_exit(path: Path, text: str, what: str, result: Certificate) -> None:
    """Write an output the user asked for, or end with one message: the checks made before
    the certification cannot see a full disk or a file system that refuses writes."""
    try:
        write_whole(path, text)
    except OSError as err:
        recorded = (
            f"; the certification is recorded as run {result.run_id}" if result.run_id else ""
        )
        BadInput(str(path), "E500", f"cannot write {what}: {err.strerror or err}{recorded}").show()
        sys.exit(EXIT_BAD_INPUT)


def write_whole(path: Path, text: str) -> None:
    """`text` to `path` through a temporary file renamed over it: an interruption or a
    full disk leaves the old file or none, never the first half of a certificate. An
    existing file keeps its mode, as writing over it kept it."""
    temporary = path.with_name(f".{path.name}.ilh-tmp")
    try:
        temporary.write_text(text, encoding="utf-8")
        with suppress(FileNotFoundError):
            os.chmod(temporary, path.stat().st_mode & 0o7777)
        os.replace(temporary, path)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise


def emit(
    result: Certificate,
    landing: str | None,
    markdown_path: Path | None,
    as_json: bool,
    err: Console,
) -> None:
    if landing is not None:
        if result.certified:
            write_or_exit(Path(landing), result.to_json() + "\n", "the certificate", result)
            err.print(f"certificate written to {landing}", markup=False)
        else:
            err.print(f"not certified: no certificate written to {landing}", markup=False)
    if markdown_path is not None:
        write_or_exit(markdown_path, render_markdown(result), "the Markdown", result)
    if as_json:
        click.echo(result.to_json())
    else:
        # Quoted tokens and refuter text come from an untrusted target: shown, never
        # obeyed by the terminal.
        click.echo(printable(render_markdown(result)), nl=False)


#: What `--check CERT [TARGET]` takes; every other option is certification's. A script's
#: `--non-interactive` and `--store` do no harm there (a check never prompts and writes no
#: run), so they pass.
_CHECK_TAKES = frozenset({"check_path", "target", "as_json", "non_interactive", "store_path"})


def typed_flags(names: Callable[[str], bool]) -> list[str]:
    """The options among `names` that the person gave (on the command line or through
    the environment), each by its first flag."""
    ctx = click.get_current_context()
    return [
        param.opts[0]
        for param in ctx.command.params
        if param.name is not None
        and names(param.name)
        and ctx.get_parameter_source(param.name)
        in (ParameterSource.COMMANDLINE, ParameterSource.ENVIRONMENT)
    ]


#: The options only a model refuter uses (its budget, its calls' recording, its server).
_REFUTER_TAKES = frozenset(
    {"refuter_tokens", "refuter_time", "refuter_calls", "record_path", "base_url"}
)


def refuse_refuter_flags_without_a_model() -> None:
    """Without `--model` no refuter runs (the lint-fallback judges): a refuter's budget
    given then was silently ignored, and the person who set it believed a refuter had
    run within it."""
    given = typed_flags(lambda name: name in _REFUTER_TAKES)
    if given:
        raise BadInput(
            given[0],
            "E303",
            f"{', '.join(given)} set{'s' if len(given) == 1 else ''} up the model refuter, "
            "and without --model no refuter runs (the lint-fallback judges): add "
            "--model URI, or drop "
            f"{'it' if len(given) == 1 else 'them'}",
        )


def refuse_certification_flags() -> None:
    """`--check` re-checks a certificate against its own contract: a certification flag
    beside it (`--source project`, `--apply`, `--model …`) was silently ignored, and the
    person believed the sources they named were the ones checked."""
    given = typed_flags(lambda name: name not in _CHECK_TAKES)
    if given:
        raise BadInput(
            "--check",
            "E303",
            f"--check re-checks a certificate and certifies nothing; {', '.join(given)} "
            "would be ignored: drop them, or drop --check to certify",
        )


def run_check(cert: Path, target: str | None, as_json: bool) -> int:
    try:
        report = check_certificate(cert, target)
    except InputError as err:
        if err.path != str(cert) or not (
            err.code == "E300" or err.message.startswith("not a certificate")
        ):
            raise
        # Most often the record named first (`--check handoff.md handoff.cert.json`):
        # "not JSON" alone did not say which of the two was expected where.
        raise InputError(
            err.path,
            err.code,
            f"{err.message}; --check takes the certificate first: "
            "ilh certify --check CERT [TARGET]",
            err.line,
            err.col,
        ) from None
    if as_json:
        click.echo(json.dumps(report.as_json(), ensure_ascii=False, indent=2))
    else:
        # A certificate is handed over, so its locators are anyone's text: shown, never
        # obeyed (a carriage return once drew "ok: …" over a problem line).
        click.echo(
            printable(
                f"{'ok' if report.ok else 'CHANGED'}: {report.target} against {report.certificate}"
            )
        )
        for label, lines in (
            ("problem", report.problems),
            ("checked", report.checked),
            ("unobserved", report.unobserved),
        ):
            for line in lines:
                click.echo(f"  {label}: {printable(line)}")
    return EXIT_CERTIFIED if report.ok else EXIT_NOT_CERTIFIED
