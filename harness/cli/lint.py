"""`ilh lint FILE…`: iLang diagnostics for people (rich) or tools (`--json`)."""

from __future__ import annotations

import json
import sys
from functools import partial
from pathlib import Path

import click

from envelopes.errors import ERROR_CODES, Finding, explain
from envelopes.lint import lint_text
from harness.cli.errors import EXIT_BAD_INPUT, BadInput
from harness.cli.report_lines import ReportLines
from harness.inputs.errors import InputError, read_bytes, read_capped
from harness.secrets.terminal import printable, shown


def read_input(name: str) -> str:
    """The text of a file, or of stdin for `-`; unreadable input is bad input (2)."""
    if not name:  # `Path("")` is the current folder: "cannot read .: Is a directory"
        raise BadInput("FILE", "E303", "an empty path names no file")
    try:
        if name == "-":
            data = read_capped(sys.stdin.buffer, name, "stdin")
        else:
            data = read_bytes(Path(name), "it")
    except InputError as err:
        raise BadInput.of(err) from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise BadInput(
            name, "E300", f"not UTF-8 (byte {err.start}); iLang text is UTF-8 (Part III §1.3)"
        ) from None


def finding_row(name: str, f: Finding) -> dict[str, object]:
    return {
        "file": name, "line": f.line, "col": f.col, "code": f.code,
        "severity": f.severity, "message": f.message,
    }  # fmt: skip


def unreadable_row(name: str, problem: BadInput) -> dict[str, object]:
    """A file that could not be read, as a `--json` row of the documented shape."""
    return {
        "file": name, "line": problem.line, "col": problem.col, "code": problem.code,
        "severity": "error", "message": problem.message,
    }  # fmt: skip


#: The most of one finding's message a person is shown: a message quotes what the text
#: holds, and a value of 50 MB filled the terminal for one warning (`--json` keeps it).
MAX_SHOWN = 300


def brief(message: str) -> str:
    if len(message) <= MAX_SHOWN:
        return message
    return f"{message[:MAX_SHOWN]}… ({len(message):,} characters; --json shows it whole)"


#: The most findings printed for people per file. 200,000 bad lines took 81 s to print
#: (0.4 ms a rich line; `--json` took 5 s) and no one reads past the first screens: the
#: rest are counted, and `--json` lists every one.
MAX_PRINTED = 200


def printed(findings: list[Finding]) -> list[Finding]:
    """At most `MAX_PRINTED` of `findings`, errors before warnings (an error on the last
    line is not hidden behind a thousand warnings), in the file's order."""
    if len(findings) <= MAX_PRINTED:
        return findings
    order = sorted(range(len(findings)), key=lambda i: (findings[i].severity != "error", i))
    return [findings[i] for i in sorted(order[:MAX_PRINTED])]


def finding_markup(name: str, f: Finding) -> str:
    """A finding's line in rich markup: what is untrusted (the file's name, the message
    quoting the text) escaped, the code coloured by severity."""
    style = "bold red" if f.severity == "error" else "yellow"
    return (
        f"{shown(name)}:{f.line}:{f.col}: [{style}]{f.code}[/] "
        f"[dim]{ERROR_CODES[f.code][0]}:[/] {shown(brief(f.message))}"
    )


def finding_text(name: str, f: Finding) -> str:
    """The same line as rich writes it without styles."""
    return (
        f"{printable(name)}:{f.line}:{f.col}: {f.code} "
        f"{ERROR_CODES[f.code][0]}: {printable(brief(f.message))}"
    )


def print_findings(out: ReportLines, name: str, findings: list[Finding]) -> None:
    # Each line as rich markup and as the text rich makes of it without styles: the
    # plain one is written when that is all rich would write (`ReportLines`).
    chosen = printed(findings)
    for f in chosen:
        out.line(partial(finding_markup, name, f), finding_text(name, f))
    more = len(findings) - len(chosen)
    if more:
        first = f"the first {MAX_PRINTED} are, errors first"
        out.line(
            lambda: (
                f"[dim]… {more:,} more finding(s) in {shown(name)} not shown ({first}); "
                "--json lists them all[/]"
            ),
            f"… {more:,} more finding(s) in {printable(name)} not shown ({first}); "
            "--json lists them all",
        )


@click.command()
@click.argument("files", nargs=-1)
@click.option("--json", "as_json", is_flag=True, help="One JSON array of findings on stdout.")
@click.option("--explain", "explain_code", metavar="CODE", help="Print what an error code means.")
def lint(files: tuple[str, ...], as_json: bool, explain_code: str | None) -> None:
    """Check iLang text: FILE… (`-` reads stdin; `.md` files: their iLang fences).

    Exit 0 no errors, 1 errors, 2 unreadable input."""
    if explain_code is not None:
        if files:
            raise BadInput(
                "--explain",
                "E303",
                "--explain prints what a code means and lints nothing: "
                "give it alone, or drop it to lint FILE…",
            )
        if explain_code.upper() not in ERROR_CODES:
            raise BadInput(
                "--explain", "E303", f"unknown code {explain_code}; known: {', '.join(ERROR_CODES)}"
            )
        click.echo(explain(explain_code))
        return
    if not files:
        raise BadInput("FILE", "E303", "give at least one FILE (or - for stdin)")
    texts: dict[str, str | BadInput] = {}
    unreadable: list[BadInput] = []
    for name in files:
        if name in texts:
            # Named twice: read once. `- -` read stdin twice, and its second, empty,
            # read replaced the first: text with errors was reported ok.
            continue
        try:
            texts[name] = read_input(name)
        except BadInput as problem:
            unreadable.append(problem)
            texts[name] = problem
    if unreadable and not as_json:
        # Every unreadable file is named, not only the first.
        for earlier in unreadable[:-1]:
            earlier.show()
        raise unreadable[-1]
    rows: list[dict[str, object]] = []
    errors = 0
    out = ReportLines(highlight=False, soft_wrap=True)
    for name, text in texts.items():
        if isinstance(text, BadInput):
            # A tool parses stdout as the documented array whatever the exit status: an
            # unreadable file left it empty, and every other file's findings were lost.
            rows.append(unreadable_row(name, text))
            continue
        findings = lint_text(text, name)
        errors += sum(f.severity == "error" for f in findings)
        rows += [finding_row(name, f) for f in findings]
        if not as_json:
            print_findings(out, name, findings)
    if as_json:
        click.echo(json.dumps(rows, ensure_ascii=False))
        for reason in unreadable:  # people still read why, on stderr
            reason.show()
        if unreadable:
            sys.exit(EXIT_BAD_INPUT)
    else:
        warnings = len(rows) - errors
        counts = f"{len(texts)} file(s): {errors} error(s), {warnings} warning(s)"
        verdict = "[bold red]errors[/]" if errors else "[bold green]ok[/]"
        out.line(lambda: f"{counts}: {verdict}", f"{counts}: {'errors' if errors else 'ok'}")
    sys.exit(1 if errors else 0)
