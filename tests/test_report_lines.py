"""`ilh lint`'s report written plainly (no rich) where rich would write the same bytes: a
differential test of the two writers of `harness.cli.report_lines.ReportLines`, on the
project's iLang files, the shared corpora and generated findings; and the command itself
through a pipe, a forced colour terminal and a reader that leaves early."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import redirect_stdout
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from envelopes.errors import ERROR_CODES, Finding
from envelopes.lint import lint_text
from harness.cli import report_lines
from harness.cli.lint import MAX_PRINTED, print_findings
from harness.cli.report_lines import ReportLines
from tests.conftest import REPO_ROOT, SHARED

OWN_TEXTS = sorted(
    [
        *(REPO_ROOT / "tests" / "data" / "parser_fuzz").glob("*.ilang"),
        *(REPO_ROOT / "examples").rglob("*.ilang"),
        *(REPO_ROOT / "examples").rglob("*.md"),
        *(REPO_ROOT / "tests" / "data").rglob("*.md"),
    ]
)


def report(plain: bool, files: list[tuple[str, list[Finding]]]) -> str:
    """What `ilh lint` prints for `files` (to what is not a terminal), by the plain
    writer or by rich alone."""
    written = io.StringIO()
    with pytest.MonkeyPatch.context() as patch, redirect_stdout(written):
        patch.setattr(report_lines, "rich_adds_no_style", lambda: plain)
        out = ReportLines(highlight=False, soft_wrap=True)
        for name, findings in files:
            print_findings(out, name, findings)
        out.line(lambda: "1 file(s): [bold green]ok[/]", "1 file(s): ok")
    return written.getvalue()


def assert_same(files: list[tuple[str, list[Finding]]]) -> None:
    assert report(True, files) == report(False, files)


def test_the_own_texts_are_there() -> None:
    assert len(OWN_TEXTS) >= 6


@pytest.mark.parametrize("path", OWN_TEXTS, ids=[p.name for p in OWN_TEXTS])
def test_a_project_file_is_reported_the_same_by_both_writers(path: Path) -> None:
    text = path.read_bytes().decode("utf-8", "replace")
    assert_same([(str(path), lint_text(text, path.name))])


def shared_texts() -> Iterator[Path]:
    for folder in ("iml", "conformance", "spec"):
        yield from sorted(p for p in (SHARED / folder).rglob("*") if p.is_file())


@pytest.mark.shared
def test_every_shared_file_is_reported_the_same_by_both_writers() -> None:
    files = [
        (str(p), lint_text(p.read_bytes().decode("utf-8", "replace"), p.name))
        for p in shared_texts()
    ]
    assert len(files) > 200
    assert_same(files)


# What rich treats specially (markup, escapes, tabs, controls, wide and combining
# characters, emoji codes) is drawn often.
TRICKY = st.text(
    st.sampled_from(list("ab :|@{}[]/\\\t\n\r\x1b\x07é中\u0301\u202e😀")) | st.characters(),
    max_size=40,
)
FINDINGS = st.lists(
    st.builds(
        Finding,
        st.sampled_from(sorted(ERROR_CODES)),
        TRICKY,
        st.integers(0, 10**6),
        st.integers(0, 10**4),
        st.sampled_from(["error", "warning"]),
    ),
    max_size=5,
)


@settings(max_examples=300, deadline=None, derandomize=True)
@given(files=st.lists(st.tuples(TRICKY, FINDINGS), min_size=1, max_size=3))
def test_generated_findings_are_reported_the_same_by_both_writers(
    files: list[tuple[str, list[Finding]]],
) -> None:
    assert_same(files)


def test_more_than_the_printed_findings_are_counted_the_same() -> None:
    many = [Finding("E300", f"bad {i}", i, 1) for i in range(MAX_PRINTED + 5)]
    assert_same([("many.ilang", many)])
    assert "5 more finding(s)" in report(True, [("many.ilang", many)])


def lint_cli(
    tmp_path: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "harness", "lint", *args],
        cwd=tmp_path, capture_output=True, timeout=120, env={**os.environ, **(env or {})},
    )  # fmt: skip


def test_a_colour_terminal_still_gets_rich_styles(tmp_path: Path) -> None:
    """FORCE_COLOR makes rich style a pipe as a terminal: the plain writer stands aside."""
    (tmp_path / "t.ilang").write_text("::STATUS{@TASK|state:complete}\n", encoding="utf-8")
    coloured = lint_cli(tmp_path, "t.ilang", env={"FORCE_COLOR": "1", "TERM": "xterm"})
    plain = lint_cli(tmp_path, "t.ilang")
    assert coloured.returncode == plain.returncode == 1
    assert b"\x1b[" in coloured.stdout and b"\x1b[" not in plain.stdout
    assert b"E303" in plain.stdout and plain.stdout.endswith(b"1 error(s), 0 warning(s): errors\n")


def test_a_reader_that_leaves_early_does_not_change_the_verdict(tmp_path: Path) -> None:
    """`ilh lint big.ilang | head -c 1`: the status is still the verdict's (1, errors),
    with no broken-pipe complaint, as under rich."""
    (tmp_path / "big.ilang").write_text(
        "".join(f"::STATUS{{@TASK|state:complete|n:{i}}}\n" for i in range(150)),
        encoding="utf-8",
    )
    done = subprocess.run(
        f"{sys.executable} -m harness lint big.ilang | head -c 1 >/dev/null; "
        "echo \"status=${PIPESTATUS[0]}\"",
        shell=True, executable="/bin/bash", cwd=tmp_path, capture_output=True, text=True,
        timeout=120,
    )  # fmt: skip
    assert done.stdout.strip() == "status=1", done.stdout + done.stderr
    assert "Broken pipe" not in done.stderr and "Exception" not in done.stderr, done.stderr
