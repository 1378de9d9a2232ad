"""`ilh view`: a run as one self-contained HTML page. The DOM is read back with the
standard library's parser: the sections a person needs are there, recorded text is
escaped (a tool output with markup stays text, inside a block marked untrusted), and the
page has no script and loads nothing."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
import urllib.request
from html import escape
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from harness.cli.main import ilh
from tests.certify_helpers import certified_clean, certify, certify_project, copy_example
from tests.view_runs import HOSTILE, run_with_hostile_output

ROLE = ("--role", "implementer", "--source", "project")


class Dom(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.stack: list[str] = []
        self.untrusted_text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))
        self.stack.append(dict(attrs).get("class") or "")

    def handle_endtag(self, tag: str) -> None:
        if self.stack:
            self.stack.pop()

    def handle_data(self, data: str) -> None:
        if self.stack and self.stack[-1] == "untrusted":
            self.untrusted_text.append(data)


def test_the_page_shows_the_run_and_escapes_what_was_recorded(tmp_path: Path) -> None:
    store, run_id = run_with_hostile_output(tmp_path)
    out = tmp_path / "report.html"
    result = CliRunner().invoke(ilh, ["view", run_id, "--store", str(store), "--out", str(out)])
    assert result.exit_code == 0, result.output
    page = out.read_text()
    dom = Dom()
    dom.feed(page)
    ids = {attrs.get("id") for _, attrs in dom.tags}
    assert {"timeline", "budgets", "rounds", "proposals", "violations", "grader"} <= ids
    assert not [tag for tag, _ in dom.tags if tag in ("script", "link", "img", "iframe")]
    # The hostile file content is text inside the untrusted block, never markup.
    assert HOSTILE in "".join(dom.untrusted_text)
    assert "<script>alert(1)</script>" not in page
    assert "committed_complete" in page and "verified_complete" in page
    assert page.count('class="bar"') + page.count("class=bar") >= 3


def test_an_unknown_run_is_bad_input(tmp_path: Path) -> None:
    store, _ = run_with_hostile_output(tmp_path)
    result = CliRunner().invoke(ilh, ["view", "zzz", "--store", str(store)])
    assert result.exit_code == 2 and "error zzz: E500" in result.output


def test_the_page_is_served_on_localhost(tmp_path: Path) -> None:
    store, run_id = run_with_hostile_output(tmp_path)
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    argv = [sys.executable, "-m", "harness", "view", run_id, "--store", str(store)]
    server = subprocess.Popen([*argv, "--port", str(port)], stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=2) as page:
                    body = page.read().decode()
                    policy = page.headers["Content-Security-Policy"]
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)
        assert run_id in body and "default-src 'none'" in policy
    finally:
        server.terminate()
        server.wait(timeout=10)


def test_runs_export_html_is_the_view_page(tmp_path: Path) -> None:
    """One code path: `runs export --html` (stdout or --out) is byte for byte `view --out`."""
    store, run_id = run_with_hostile_output(tmp_path)
    viewed = tmp_path / "view.html"
    exported = tmp_path / "export.html"
    runner = CliRunner()
    assert (
        runner.invoke(ilh, ["view", run_id, "--store", str(store), "--out", str(viewed)]).exit_code
        == 0
    )
    done = runner.invoke(ilh, ["runs", "export", run_id[:12], "--store", str(store), "--html"])
    assert done.exit_code == 0, done.output
    assert done.stdout == viewed.read_text() and 'id="rounds"' in done.stdout
    done = runner.invoke(
        ilh, ["runs", "export", run_id, "--store", str(store), "--html", "--out", str(exported)]
    )
    assert done.exit_code == 0 and exported.read_bytes() == viewed.read_bytes()
    # Without --html the export stays JSON lines; --out alone is refused in the one format.
    lines = runner.invoke(ilh, ["runs", "export", run_id, "--store", str(store)]).stdout
    assert all(json.loads(line)["run_id"] == run_id for line in lines.splitlines())
    bad = runner.invoke(ilh, ["runs", "export", run_id, "--store", str(store), "--out", "x.html"])
    assert bad.exit_code == 2 and "error --out: E303" in bad.output
    bad = runner.invoke(ilh, ["runs", "export", "zzz", "--store", str(store), "--html"])
    assert bad.exit_code == 2 and "error zzz: E500" in bad.output


def certification(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> tuple[Path, Path, dict[str, Any]]:
    """A certification that ends not certified, with the refuter's findings as residuals."""
    folder = copy_example("certify_tethered", tmp_path)
    store = tmp_path / "runs.db"
    code, cert, result = certify(folder, monkeypatch, "handoff.md", *ROLE, store=store)
    assert code == 1 and cert["verdict"]["findings"] and cert["residuals"], result.output
    cert_file = tmp_path / "cert.json"
    cert_file.write_text(result.stdout)
    return store, cert_file, cert


def viewed(tmp_path: Path, ref: str, store: Path) -> str:
    out = tmp_path / "c.html"
    done = CliRunner().invoke(ilh, ["view", ref, "--store", str(store), "--out", str(out)])
    assert done.exit_code == 0, done.output
    return out.read_text()


def test_a_certification_run_shows_its_findings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store, _, cert = certification(tmp_path, monkeypatch)
    page = viewed(tmp_path, cert["run_id"], store)
    for finding in cert["verdict"]["findings"]:
        assert escape(finding["quoted_token"]) in page and escape(finding["category"]) in page
    assert 'id="findings"' in page and 'id="residuals"' in page and "not certified" in page
    assert page.count("<li><strong>") >= 2  # the certification's steps


def test_a_certificate_file_is_viewed_without_its_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, cert_file, cert = certification(tmp_path, monkeypatch)
    page = viewed(tmp_path, str(cert_file), tmp_path / "none.db")
    out = tmp_path / "c.html"
    tokens = [f["quoted_token"] for f in cert["verdict"]["findings"]]
    assert all(escape(t) in page for t in tokens) and "handoff.md" in page
    # A file that is not a certificate: one line naming the file and the field.
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({**cert, "passes": -1}))
    done = CliRunner().invoke(ilh, ["view", str(bad), "--out", str(out)])
    assert (
        done.exit_code == 2 and f"error {bad}: E500 not an ilh certificate: passes" in done.output
    )
    assert "Traceback" not in done.output
    done = CliRunner().invoke(ilh, ["view", str(tmp_path / "missing.json")])
    assert done.exit_code == 2 and "cannot read the certificate" in done.output


def test_a_hand_edited_record_is_escaped_and_flagged(tmp_path: Path) -> None:
    """A record edited outside the harness (or handed over from elsewhere) may hold
    markup where a number was, and may show a completion nobody verified: the page
    escapes it, forbids scripts itself, and says the record does not verify."""
    import sqlite3

    store, run_id = run_with_hostile_output(tmp_path)
    clean = tmp_path / "clean.html"
    done = CliRunner().invoke(ilh, ["view", run_id, "--store", str(store), "--out", str(clean)])
    assert done.exit_code == 0, done.output
    assert 'id="tampered"' not in clean.read_text()
    assert "Content-Security-Policy" in clean.read_text()

    conn = sqlite3.connect(store)
    conn.execute("DROP TRIGGER events_no_update")
    conn.execute(
        "UPDATE events SET payload = json_set(payload, '$.usage.input_tokens', ?, "
        "'$.usage.output_tokens', json('[1]')) WHERE run_id = ? AND kind = 'model_call'",
        ("<script>alert(1)</script>", run_id),
    )
    conn.commit()
    conn.close()
    for argv in (["view", run_id, "--out"], ["runs", "export", run_id, "--html", "--out"]):
        out = tmp_path / f"{argv[0]}.html"
        done = CliRunner().invoke(ilh, [*argv, str(out), "--store", str(store)])
        assert done.exit_code == 0, done.output
        page = out.read_text()
        assert "<script" not in page
        dom = Dom()
        dom.feed(page)
        assert not [tag for tag, _ in dom.tags if tag in ("script", "link", "img", "iframe")]
        assert 'id="tampered"' in page and "does not verify" in page
        head = page.split("</head>", 1)[0]
        assert "default-src 'none'" in head


def test_the_page_is_never_written_through_a_planted_link_or_into_a_pipe(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A certificate's default page name is predictable (`ilh-certificate-<digest>.html`):
    a link of that name handed over beside the certificate made `ilh view` overwrite the
    file it pointed at, and a pipe of that name made it hang."""
    import os

    folder, cert = certified_clean(tmp_path, monkeypatch)
    digest = cert["target_identity"][7:19]
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    planted = folder / f"ilh-certificate-{digest}.html"
    planted.symlink_to(victim)
    done = CliRunner().invoke(ilh, ["view", "h.cert.json"])
    assert done.exit_code == 2 and "link" in done.output
    assert victim.read_text() == "precious\n"
    os.mkfifo(folder / "pipe.html")
    done = CliRunner().invoke(ilh, ["view", "h.cert.json", "--out", "pipe.html"])
    assert done.exit_code == 2 and "pipe" in done.output
    # A regular file of that name is replaced, as before.
    planted.unlink()
    planted.write_text("old page")
    done = CliRunner().invoke(ilh, ["view", "h.cert.json"])
    assert done.exit_code == 0, done.output
    assert planted.read_text().startswith("<!doctype html>")


def test_outputs_named_by_a_pipe_are_refused_not_waited_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`--markdown`, `--certificate` and `--record` looked for a run store or a recording
    in the file named, opening a pipe for reading: it hung."""
    import os

    folder = copy_example("certify_clean", tmp_path)
    os.mkfifo(folder / "pipe")
    for option in ("--markdown", "--record", "--certificate"):
        code, _, result = certify_project(
            folder,
            monkeypatch,
            option,
            "pipe",
        )
        assert code == 2, (option, result.output)


def test_a_forged_certificate_is_not_shown_as_a_pass(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`ilh view` of a NOT CERTIFIED certificate hand-edited to `certified: true` showed a
    green "certified": viewing refuses nothing, but it says the seal does not verify."""
    folder = copy_example("certify_tethered", tmp_path)
    code, cert, _ = certify_project(folder, monkeypatch)
    assert code == 1
    (tmp_path / "real.json").write_text(json.dumps(cert))
    real = viewed(tmp_path, str(tmp_path / "real.json"), tmp_path / "none.db")
    assert "NOT AUTHENTIC" not in real and 'class="fail"' in real
    forged = tmp_path / "forged.json"
    forged.write_text(json.dumps(cert | {"certified": True, "reason": None}))
    page = viewed(tmp_path, str(forged), tmp_path / "none.db")
    assert "NOT AUTHENTIC" in page and "does not match its seal" in page
    assert 'class="pass"' not in page and ">certified<" not in page


@pytest.mark.parametrize(
    ("name", "text", "says"),
    [
        ("README.md", "# a readme\n", "it is a file, but not JSON"),
        ("notes.json", "[1, 2]", "the file: Input should be an object"),
    ],
)
def test_a_file_that_is_neither_a_run_nor_a_certificate_is_named_so(
    tmp_path: Path, name: str, text: str, says: str
) -> None:
    # `ilh view README.md` said "not an ilh certificate: (top): Invalid JSON: expected
    # value at line 1 column 1": `(top)` is pydantic's, and a run was not mentioned.
    path = tmp_path / name
    path.write_text(text)
    done = CliRunner().invoke(ilh, ["view", str(path), "--out", str(tmp_path / "o.html")])
    assert done.exit_code == 2 and "Traceback" not in done.output
    (line,) = [row for row in done.output.splitlines() if row.startswith("error ")]
    assert line.startswith(f"error {path}: E500 neither a run nor an ilh certificate: ")
    assert says in line and "(top)" not in line
