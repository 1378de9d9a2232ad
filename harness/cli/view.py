"""`ilh view RUN`: the run (or certification) as one self-contained HTML page, written
to a file or served on 127.0.0.1."""

from __future__ import annotations

import http.server
from pathlib import Path

import click

from harness.cli.errors import BadInput, UserPath
from harness.cli.runs import STORE_OPTION, page_of, write_page


@click.command()
@click.argument("run_ref", metavar="RUN|CERT.json")
@STORE_OPTION
@click.option(
    "--out",
    "out_path",
    type=UserPath(path_type=Path, dir_okay=False),
    help="Write the page here (default ilh-RUN.html in the current folder).",
)
@click.option("--port", type=click.IntRange(1, 65535), help="Serve it on 127.0.0.1:PORT.")
def view(run_ref: str, store_path: Path, out_path: Path | None, port: int | None) -> None:
    """The run RUN as an HTML report: status timeline, rounds, tool output (marked
    untrusted), proposals, violations, budgets, the grader's criteria, a certification's
    steps and findings. RUN may also be a certificate file (`ilh certify --json`).
    Self-contained: no script, no network."""
    if port is not None and out_path is not None:
        raise BadInput(
            "--port", "E303", "--out writes the page to a file, --port serves it: give one"
        )
    run_id, page = page_of(run_ref, store_path)
    body = page.encode("utf-8")
    if port is None:
        target = out_path or Path(f"ilh-{run_id}.html")
        click.echo(str(write_page(page, target, typed=out_path is not None)))
        return

    class Page(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header(
                "Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'"
            )
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            return None

    try:
        server = http.server.HTTPServer(("127.0.0.1", port), Page)
    except OSError as err:
        raise BadInput("--port", "E500", f"cannot listen on 127.0.0.1:{port}: {err}") from None
    click.echo(f"serving run {run_id} on http://127.0.0.1:{port}/ (Ctrl-C stops)", err=True)
    # Ctrl-C (or SIGTERM) ends it as it ends every command: "interrupted", exit 130.
    try:
        server.serve_forever()
    finally:
        server.server_close()
