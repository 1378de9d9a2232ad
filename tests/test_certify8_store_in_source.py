"""A certification's own run store never unbinds its granted sources (certify8).

A certification is a run: its record is written to the store after the sources'
identities are bound. With the store inside a granted source (`--source .` and the default
`.ilh/runs.db`, or `--store project/runs.db`) the certificate issued failed its own
`--check` at once ("the granted source changed after certification"), and so did one
whose `--certificate` (or `--markdown`, `--record`) landed inside a granted source. The
harness's own store folder `.ilh` is no part of a source's identity (as `.git` is not); a
store elsewhere inside a granted source, and an output there, are bad input (E303, exit 2),
before anything is written."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.certify_helpers import CLEAN
from tests.certify_helpers import ilh_child as ilh


@pytest.fixture
def clean(tmp_path: Path) -> Path:
    shutil.copytree(CLEAN, tmp_path / "c")
    return tmp_path / "c"


def test_the_default_store_inside_a_source_keeps_the_certificate_checkable(clean: Path) -> None:
    project = clean / "project"
    shutil.move(clean / "handoff.md", project / "handoff.md")
    done = ilh(
        project, "certify", "handoff.md", "--role", "implementer", "--source", ".",
        "--non-interactive", "--certificate", "../h.cert.json",
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert (project / ".ilh" / "runs.db").is_file()
    check = ilh(project, "certify", "--check", "../h.cert.json")
    assert check.returncode == 0, check.stdout


def test_another_store_inside_a_source_is_bad_input(clean: Path) -> None:
    done = ilh(
        clean, "certify", "handoff.md", "--role", "implementer", "--source", "project",
        "--non-interactive", "--store", "project/runs.db",
    )  # fmt: skip
    assert done.returncode == 2, done
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and "Traceback" not in done.stderr, done.stderr
    assert "E303" in lines[0] and "granted source" in lines[0], lines[0]
    assert not (clean / "project" / "runs.db").exists()


@pytest.mark.parametrize(
    "output",
    [("--certificate", "project/h.cert.json"), ("--markdown", "project/h.md"),
     ("--record", "project/calls.jsonl")],
)  # fmt: skip
def test_an_output_inside_a_source_is_bad_input(clean: Path, output: tuple[str, str]) -> None:
    model = ("--model", "scripted:refuter_pass.jsonl") if output[0] == "--record" else ()
    done = ilh(
        clean, "certify", "handoff.md", "--role", "implementer", "--source", "project",
        "--non-interactive", "--store", "s.db", *model, *output,
    )  # fmt: skip
    assert done.returncode == 2, done
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and "Traceback" not in done.stderr, done.stderr
    assert lines[0].startswith(f"error {output[0]}: E303"), lines[0]
    assert "granted source" in lines[0], lines[0]
    assert not (clean / output[1]).exists() and not (clean / "s.db").exists()
