"""`ilh certify` flags that only a model refuter uses, given without `--model` (ux6).

`--refuter-tokens 10` (or `-time`, `-calls`, `--record`, `--base-url`) without `--model`
was silently ignored: the certificate said lint-fallback, and the person who set a
refuter's budget believed a refuter had run within it. As with `--check` and a
certification flag (ux5), that is bad usage, named by its flag."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.certify_helpers import CLEAN
from tests.certify_helpers import certify_child as certify

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def clean(tmp_path: Path) -> Path:
    shutil.copytree(CLEAN, tmp_path / "c")
    return tmp_path / "c"


@pytest.mark.parametrize(
    "flags",
    [
        ("--refuter-tokens", "5000"),
        ("--refuter-time", "30s"),
        ("--refuter-calls", "3"),
        ("--record", "calls.jsonl"),
        ("--base-url", "http://127.0.0.1:9/v1"),
        ("--refuter-calls", "3", "--refuter-tokens", "5000"),
    ],
)
def test_a_refuter_flag_without_a_model_is_bad_usage(clean: Path, flags: tuple[str, ...]) -> None:
    done = certify(clean, *flags)
    assert done.returncode == 2 and done.stdout == "", done
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and "Traceback" not in done.stderr, done.stderr
    where = lines[0].removeprefix("error ").split(": E303 ")[0]
    assert where in flags[::2], lines[0]  # the location is one of the flags given
    assert "--model" in lines[0] and "no refuter runs" in lines[0], lines[0]
    assert not (clean / "calls.jsonl").exists()


def test_the_same_flags_with_a_model_are_taken(clean: Path) -> None:
    done = certify(
        clean, "--model", "scripted:refuter_pass.jsonl", "--refuter-calls", "3",
        "--refuter-tokens", "50000", "--refuter-time", "60s",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr


def test_without_refuter_flags_the_lint_fallback_still_certifies(clean: Path) -> None:
    assert certify(clean).returncode == 0


# A title that starts with a lower-case name is a heading, not a sentence that became
# one: certifying the shared DESIGN.md ("# ilang-harness — design") or this README
# ("# ilang-harness") reported its first line as a rendering accident to repair.
@pytest.mark.parametrize(
    "title",
    ["# ilang-harness — design", "# ilang-harness", "## numpy.linalg", "# v2.0 notes", "# my_tool"],
)
def test_a_title_starting_with_a_lower_case_name_is_no_accident(tmp_path: Path, title: str) -> None:
    from tests.test_certify import scan

    assert scan(f"{title}\n\nReturn 2 from f.\n", tmp_path) == {}


@pytest.mark.parametrize("line", ["# of retries is three", "# run the tests first"])
def test_a_sentence_that_renders_as_a_heading_is_still_found(tmp_path: Path, line: str) -> None:
    from tests.test_certify import scan

    assert scan(f"Intro.\n\n{line}\n", tmp_path)[line] == ("3:1", "rendering-accidents")


@pytest.mark.parametrize("args", [("nope.md",), ("handoff.md", "--source", "nowhere")])
def test_a_certification_refused_at_once_leaves_no_store_behind(
    clean: Path, args: tuple[str, ...]
) -> None:
    # `ilh certify nope.md` created `.ilh/runs.db` in the folder, then refused the target.
    done = subprocess.run(
        [sys.executable, "-m", "harness", "certify", *args, "--role", "implementer"],
        cwd=clean, capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=120,
        env={**os.environ, "PYTHONPATH": str(ROOT)}, check=False,
    )  # fmt: skip
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert not (clean / ".ilh").exists()


def test_the_certificate_never_replaces_a_file_that_is_not_one(clean: Path) -> None:
    # `--certificate README.md` (any file but the record itself) was replaced silently.
    before = (clean / "README.md").read_bytes()
    done = certify(clean, "--certificate", "README.md")
    assert done.returncode == 2 and done.stdout == "", done
    assert done.stderr.splitlines() == [
        "error " + str(clean / "README.md") + ": E303 the certificate would replace a file "
        "that is not a JSON certificate; name another file, or remove this one first"
    ]
    assert (clean / "README.md").read_bytes() == before
    # One written before is replaced, as it always was.
    assert certify(clean, "--certificate", "h.cert.json").returncode == 0
    assert certify(clean, "--certificate", "h.cert.json").returncode == 0
