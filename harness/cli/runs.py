"""`ilh runs list|show|verify|export`: the run record."""

from __future__ import annotations

import errno
import json
import os
import stat
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import click
from rich import box
from rich.console import Console
from rich.markup import escape
from rich.table import Column, Table
from rich.text import Text

from harness.cli.consoles import ReportConsole
from harness.cli.errors import (
    BadInput,
    UserPath,
    reader_may_leave,
    refuse_overwriting,
    refuse_replacing_other_than,
)
from harness.record.events import EventKind, RunSummary
from harness.record.store import RunStore, StoreError, UnknownRun
from harness.secrets import harness_secrets
from harness.secrets.terminal import printable, shown

if TYPE_CHECKING:
    from harness.certify.certificate import Certificate

STORE_OPTION = click.option(
    "--store",
    "store_path",
    type=UserPath(path_type=Path, dir_okay=False),
    default=Path(".ilh") / "runs.db",
    show_default=True,
    help="Run store.",
)


@contextmanager
def open_store(path: Path, *, writing: bool = False) -> Iterator[RunStore]:
    """The store at `path`; a missing or unusable store, an unknown run or an unusable
    record key is one `error PATH: E500 …` line, exit 2. Unless `writing`, a store that
    cannot be written (a read-only mount) is opened read-only: reading needs no more."""
    try:
        store = RunStore(path, create=False, read_only_if_unwritable=not writing)
    except StoreError as err:
        raise BadInput(str(path), "E500", str(err)) from None
    try:
        with store:
            yield store
    except UnknownRun as err:
        raise BadInput("RUN", "E500", str(err)) from None
    except StoreError as err:
        raise BadInput(str(path), "E500", str(err)) from None


@click.group()
def runs() -> None:
    """The run record: list, show, verify and export runs."""


@runs.command("list")
@STORE_OPTION
@click.option("--json", "as_json", is_flag=True, help="One JSON array of runs on stdout.")
@click.option(
    "--verify",
    "full",
    is_flag=True,
    help="Check every event of every run (as `runs verify` does), not only each run's "
    "authenticated head.",
)
def list_runs(store_path: Path, as_json: bool, full: bool) -> None:
    """Every run in the store, oldest first.

    The `record` column is a cheap check of each run: its head's MAC (the record key) and
    that the stored events end at that head. `authenticated` is not a full check (an edit
    inside the chain needs `--verify` or `ilh runs verify RUN`); anything else means the
    run's state and end cannot be trusted."""
    with open_store(store_path) as store:
        summaries = store.list_runs()
        if full:
            summaries = [fully_checked(store, s) for s in summaries]
    if as_json:
        click.echo(json.dumps([s.model_dump(mode="json") for s in summaries], ensure_ascii=False))
        return
    runs_table(ReportConsole(highlight=False), summaries)


#: The columns after the run id.
_COLUMNS = ("task", "events", "last state", "ended by", "record")
#: The task id (the task file's, any length) is the one value a table may cut short
#: (with an ellipsis: `--json` and `ilh runs show` give it whole); it keeps this much.
_TASK_MIN = 10
_GAP = 3  # between two columns: padding on each side and the divider


def runs_table(console: Console, summaries: list[RunSummary]) -> None:
    """The runs as a table when the terminal is wide enough for every value but the task
    id whole, else one block per run. Nothing is folded inside a word: the run id is
    what `show`, `verify` and `--resume` take, a state or record value is read as one
    word, and rich's folding of narrow columns cut them anywhere (`authen|ticate|d`)."""
    headers = ("run", *_COLUMNS)
    rows = [_row(s) for s in summaries]
    widths = [len(header) for header in headers]
    for row in rows:
        widths = [max(width, cell.cell_len) for width, cell in zip(widths, row, strict=True)]
    task_at = 1
    # What the task column may have: the rest is never cut. Given as its width, so that
    # rich shrinks nothing else (it would narrow every column alike to fit).
    room = console.width - (sum(widths) - widths[task_at]) - _GAP * (len(widths) - 1)
    if room >= min(widths[task_at], _TASK_MIN):
        widths[task_at] = min(widths[task_at], room)
        table = Table(
            *(
                Column(
                    header,
                    no_wrap=True,
                    overflow="ellipsis",
                    width=width,
                    justify="right" if header == "events" else "left",
                )
                for header, width in zip(headers, widths, strict=True)
            ),
            box=box.SIMPLE_HEAD,
            show_edge=False,
            pad_edge=False,
        )
        for row in rows:
            table.add_row(*row)
        console.print(table)
        return
    for summary, (run_id, task, _, state, ended, record) in zip(summaries, rows, strict=True):
        # A narrow terminal: the id on its own line, whole; the rest as words, which
        # wrap between words (indented under the id), not inside one.
        console.print(run_id, overflow="fold")
        count = f"{summary.events} event{'' if summary.events == 1 else 's'}"
        details = Text.assemble(
            "task ", task, f", {count}, last state ", state, ", ended by ", ended,
            ", record ", record,
        )  # fmt: skip
        for line in details.wrap(console, max(console.width - 2, 1), overflow="fold"):
            line.rstrip()
            console.print(Text.assemble("  ", line), no_wrap=True, overflow="ignore")


def _row(s: RunSummary) -> tuple[Text, Text, Text, Text, Text, Text]:
    trusted = s.record in ("authenticated", "verified")
    # An untrusted record's state is what someone may have written: marked as such.
    mark = "" if trusted else "?"
    return (
        Text(s.run_id),
        Text(printable(s.task_id)),
        Text(str(s.events)),
        Text((s.last_state or "-") + mark),
        Text((s.ended_by or "-") + mark),
        Text(s.record, style="" if trusted else "bold red"),
    )


def fully_checked(store: RunStore, summary: RunSummary) -> RunSummary:
    """`verified` when every event checks out too, `TAMPERED` when one does not."""
    if summary.record != "authenticated":
        return summary
    ok = store.verify(summary.run_id).ok
    return summary.model_copy(update={"record": "verified" if ok else "TAMPERED"})


@runs.command("show")
@click.argument("run_ref", metavar="RUN")
@STORE_OPTION
@click.option("--json", "as_json", is_flag=True, help="The run's result (DESIGN §6) if it ended.")
def show_run(run_ref: str, store_path: Path, as_json: bool) -> None:
    """A run's status history, proposals and violations (RUN may be a unique prefix)."""
    with open_store(store_path) as store:
        try:
            summary = store.get_run(run_ref)
            events = store.events(summary.run_id)
        except UnknownRun as err:
            raise BadInput("RUN", "E500", str(err)) from None
    ended = next((e for e in reversed(events) if e.kind is EventKind.RUN_ENDED), None)
    if as_json:
        result = json.dumps(ended.payload["result"] if ended else None, ensure_ascii=False)
        click.echo(harness_secrets().redact(result))
        return
    console = ReportConsole(highlight=False, soft_wrap=True)
    console.print(
        f"[bold]run[/] {summary.run_id} · task {escape(summary.task_id)} · {summary.events} events"
    )
    if summary.record != "authenticated":
        console.print(
            f"[bold red]record {escape(summary.record)}[/]: what follows may not be what the "
            f"harness recorded (`ilh runs verify {summary.run_id}` says why)"
        )
    for event in events:
        data = event.payload
        if event.kind is EventKind.STATE_CHANGE:
            console.print(f"  round {event.round} [cyan]status[/] {shown(data.get('line'))}")
        elif event.kind is EventKind.PROPOSAL:
            console.print(
                f"  round {event.round} proposal {data.get('disposition')}: "
                f"{shown(data.get('line'))[:90]}"
            )
        elif event.kind is EventKind.VIOLATION:
            console.print(
                f"  round {event.round} [red]violation[/] {data.get('kind')}: "
                f"{shown(data.get('detail'))}"
            )
        elif event.kind is EventKind.GRADER_RESULT:
            missing = ", ".join(data.get("missing") or []) or "none"
            console.print(
                f"  round {event.round} [magenta]grader[/] {data.get('verdict')} score "
                f"{data.get('score')} / {data.get('threshold')}; missing: {escape(missing)}"
            )
        elif event.kind is EventKind.NOTE and isinstance(data.get("summary"), str):
            # A certification's steps (`ilh certify`): phase and what happened.
            phase = shown(data.get("phase", "note"))
            console.print(f"  round {event.round} [blue]{phase}[/] {shown(data['summary'])}")
        elif event.kind is EventKind.MODEL_CALL:
            show_model_call(console, event.round, data)
        elif event.kind is EventKind.TOOL_CALL:
            show_tool_call(console, event.round, data)
        elif event.kind is EventKind.RUN_ENDED:
            console.print(f"  [bold]ended by[/] {data.get('ended_by')}")


#: How much of a model's text or a tool's output `runs show` prints per event (the whole
#: record is in `ilh runs export`).
SHOWN_CHARS = 600


def _clip(text: str) -> str:
    text = printable(harness_secrets().redact(text))
    return text if len(text) <= SHOWN_CHARS else text[:SHOWN_CHARS] + f"… [{len(text)} chars]"


def show_model_call(console: Console, round_n: int, data: dict[str, object]) -> None:
    """What the agent said and asked for: its text is untrusted, shown as plain text."""
    usage = data.get("usage")
    tokens = ""
    if isinstance(usage, dict):
        tokens = f" ({usage.get('input_tokens', '?')} in / {usage.get('output_tokens', '?')} out)"
    console.print(f"  round {round_n} [green]model[/] {shown(data.get('model'))}{tokens}")
    text = str(data.get("text") or "").strip()
    if text:
        console.print(Text(_indent(_clip(text)), style="dim"))
    calls = data.get("tool_calls")
    for call in calls if isinstance(calls, list) else []:
        if isinstance(call, dict):
            args = json.dumps(call.get("arguments", {}), ensure_ascii=False)
            console.print(Text(f"    → {printable(str(call.get('name')))} {_clip(args)}"))


def show_tool_call(console: Console, round_n: int, data: dict[str, object]) -> None:
    call = data.get("call") if isinstance(data.get("call"), dict) else {}
    name = call.get("name") if isinstance(call, dict) else "?"
    mark = "ok" if data.get("ok") else "error"
    console.print(f"  round {round_n} [yellow]tool[/] {shown(name)} {mark}")
    output = str(data.get("output") or "").strip()
    if output:
        console.print(Text(_indent(_clip(output)), style="dim"))


def _indent(text: str) -> str:
    return "\n".join("    │ " + line for line in text.splitlines())


@runs.command("verify")
@click.argument("run_ref", metavar="RUN")
@STORE_OPTION
def verify_run(run_ref: str, store_path: Path) -> None:
    """Check the run's hash chain, that it ends at the committed head, and the head's MAC
    (the per-user record key). Exit 0 intact, 1 tampered or unauthenticated, 2 unknown run."""
    with open_store(store_path) as store:
        try:
            result = store.verify(store.resolve_run_id(run_ref))
        except UnknownRun as err:
            raise BadInput("RUN", "E500", str(err)) from None
    if result.ok:
        click.echo(
            f"{result.run_id}: ok, {result.checked} events verified, head authenticated "
            f"(record key {store.key_path})"
        )
        return
    verdict = {
        "legacy": "UNAUTHENTICATED (legacy)",
        "other_key": "NOT CHECKED: written with another key",
        "no_key": "NOT CHECKED: no record key",
    }.get(result.mac, "TAMPERED")
    if result.mac in ("other_key", "no_key") and len(result.problems) > 1:
        verdict = "TAMPERED"  # the chain itself is broken, whatever the key
    click.echo(f"{result.run_id}: {verdict}", err=True)
    for problem in result.problems:
        click.echo(f"  {problem}", err=True)
    sys.exit(1)


@runs.command("export")
@click.argument("run_ref", metavar="RUN")
@STORE_OPTION
@click.option(
    "--html",
    "as_html",
    is_flag=True,
    help="The run as the self-contained HTML report of `ilh view` instead of JSON lines.",
)
@click.option(
    "--out",
    "out_path",
    type=UserPath(path_type=Path, dir_okay=False),
    help="With --html: write the page here instead of stdout.",
)
def export_run(run_ref: str, store_path: Path, as_html: bool, out_path: Path | None) -> None:
    """The run's events as JSON lines on stdout, or (--html) its HTML report."""
    if out_path is not None and not as_html:
        raise BadInput("--out", "E303", "--out goes with --html (JSON lines go to stdout)")
    if as_html:
        _, page = page_of(run_ref, store_path)
        if out_path is None:
            with reader_may_leave():
                sys.stdout.write(page)
                sys.stdout.flush()
        else:
            click.echo(str(write_page(page, out_path)))
        return
    with open_store(store_path) as store:
        try:
            store.export_jsonl(store.resolve_run_id(run_ref), sys.stdout)
        except UnknownRun as err:
            raise BadInput("RUN", "E500", str(err)) from None


def page_of(ref: str, store_path: Path) -> tuple[str, str]:
    """(title, HTML) of `ilh view REF` and `ilh runs export --html`, one code path for both.

    REF is a run of the store (id or unique prefix), or the path of a certificate file
    (`ilh certify --json` or the file it wrote): a certificate travels without its store,
    so the receiver can look at it too."""
    # Imported here: `ilh runs list` stays light (tests/test_cli_startup.py).
    from harness.view.report import render_certificate, render_run

    given = Path(ref)
    if given.suffix == ".json" or given.is_file():
        cert, text = read_certificate(given)
        return (
            f"certificate-{cert.target_identity.removeprefix('sha256:')[:12]}",
            render_certificate(cert, unsealed=seal_of(cert, text)),
        )
    with open_store(store_path) as store:
        try:
            summary = store.get_run(ref)
            events = store.events(summary.run_id)
            checked = store.verify(summary.run_id)
        except UnknownRun as err:
            raise BadInput(ref, "E500", str(err)) from None
    problems = [] if checked.ok else (checked.problems or [f"record MAC: {checked.mac}"])
    return summary.run_id, render_run(summary, events, problems)


def seal_of(cert: Certificate, text: str) -> str | None:
    """Why the certificate is not authentic here (its seal, `harness.certify.seal`), or
    None. Viewing refuses nothing, but a forged "certified" must not look like a pass."""
    from harness.certify.seal import seal_problem
    from harness.record.keys import RecordKeyError

    try:
        return seal_problem(json.loads(text), cert)
    except RecordKeyError as err:
        return f"the certificate cannot be authenticated: {err}"


def read_certificate(path: Path) -> tuple[Certificate, str]:
    from pydantic import ValidationError

    from harness.certify.certificate import Certificate
    from harness.inputs.errors import InputError, read_utf8

    try:
        text = read_utf8(path, "the certificate")
    except InputError as err:
        raise BadInput.of(err) from None
    try:
        return Certificate.model_validate_json(text), text
    except ValidationError as err:
        first = err.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        if first["type"] == "json_invalid":
            # `ilh view README.md`: a file given where a run or a certificate goes.
            raise BadInput(
                str(path),
                "E500",
                f"neither a run nor an ilh certificate: it is a file, but not JSON "
                f"({first['msg']})",
            ) from None
        if not where:
            raise BadInput(
                str(path),
                "E500",
                f"neither a run nor an ilh certificate: the file: {first['msg']}",
            ) from None
        raise BadInput(
            str(path), "E500", f"not an ilh certificate: {where}: {first['msg']}"
        ) from None


#: How an HTML page written before starts (ours, a browser's "save as"…).
_HTML_STARTS = (b"<!doctype html", b"<html")


def write_page(page: str, target: Path, *, typed: bool = True) -> Path:
    """Write the page to `target`, a regular file (created or replaced), never through a
    symbolic link or into a pipe or device. The default name is predictable (a
    certificate's is `ilh-certificate-<its digest>.html`): a link of that name planted
    beside a handed-over certificate made `ilh view` overwrite the file it pointed at
    (`~/.bashrc`, with lines of the page), and a pipe of that name made it hang."""
    refuse_overwriting(target, "the page")
    if typed:  # `--out FILE`; the default name (`ilh-RUN.html`) is the harness's own
        refuse_replacing_other_than(target, "the page", _HTML_STARTS, "an HTML page")
    flags = os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    try:
        fd = os.open(target, flags, 0o644)
    except OSError as err:
        if err.errno in (errno.ELOOP, errno.ENXIO) or target.is_symlink():
            raise BadInput(
                str(target), "E303", "the page would be written through a link or into a "
                "pipe or device: name a regular file",
            ) from None  # fmt: skip
        raise BadInput(str(target), "E500", f"cannot write it: {err.strerror or err}") from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise BadInput(str(target), "E303", "the page would be written into a device: "
                           "name a regular file")  # fmt: skip
        os.ftruncate(fd, 0)
        with os.fdopen(fd, "wb", closefd=False) as out:
            out.write(page.encode("utf-8"))
    except OSError as err:
        raise BadInput(str(target), "E500", f"cannot write it: {err.strerror or err}") from None
    finally:
        os.close(fd)
    return target
