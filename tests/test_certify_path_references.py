"""What a path reference is (DIYLISIS F2, Rule 21): a locator the record hands the receiver
to dereference. Words joined by slashes, names inside a quoted sample (a data fence, a
`key = "value"` code span), a file kind glossed after its term, standard system paths and
ordinary snake_case words are not; a named file that does not exist, a path outside the
granted sources, a tethered root and a command's missing script still are.

Found by certifying `../shared/DESIGN.md`: 18 residuals, none of them real."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.certify_helpers import certify, scan_findings, scanned, tokens


def findings(text: str, tmp_path: Path) -> dict[str, tuple[str, str]]:
    """token -> (location, category) of the deterministic legs' findings, `tmp_path/src`
    granted."""
    return scan_findings(text, tmp_path)


NOT_REFERENCES = (
    "# Design\n\n"
    "Each criterion returns pass/fail/unknown, and each file is read/write/execute.\n\n"
    "**Task file** (`task.toml`, validated by pydantic):\n\n"
    "```toml\n"
    'objective = "Implement fizzbuzz(n) in fizz.py"\n'
    'certificate = "handoff.cert.json"\n'
    "```\n\n"
    "Layout:\n\n"
    "```\n"
    "pyproject.toml     one distribution\n"
    "envelopes/         the text layer\n"
    "README.md\n"
    "```\n\n"
    'A criterion may say `pytest = "tests/"` instead of `run`.\n\n'
    "A criterion's `run` is a shell command (`/bin/sh -c`); output goes to /dev/null.\n\n"
    "The agent's claim is rejected with reason agent_proposal or task_complete.\n\n"
    "**Model URIs**: `anthropic:MODEL`, `openai:MODEL`.\n"
)


@pytest.mark.parametrize(
    "token",
    [
        "pass/fail/unknown",
        "read/write/execute",
        "task.toml",
        "fizz.py",
        "handoff.cert.json",
        "pyproject.toml",
        "envelopes/",
        "README.md",
        "tests/",
        "/bin/sh",
        "/dev/null",
        "agent_proposal",
        "task_complete",
        "URI",
    ],
)
def test_vocabulary_that_looks_like_a_path_is_not_a_residual(token: str, tmp_path: Path) -> None:
    found = findings(NOT_REFERENCES, tmp_path)
    assert token not in found, found[token]


def test_placeholders_and_globs_are_not_residuals(tmp_path: Path) -> None:
    """`ilh run TASK` … `TASK.toml`, `runs/RUN/owner.lock`: the capitals are a metavariable
    the record uses on its own, so the path is a pattern, not a file; so is `*_test.py`.
    A capitalized name never used on its own (`NOTES.md`) is still a file. Command-line
    options joined by a slash (`--refuter-tokens/-time/-calls`) are options."""
    text = (
        "Run `ilh run TASK`; TASK is the task file, `TASK.toml` in the examples.\n"
        "Resume RUN with `ilh run --resume RUN`; its lock is `runs/RUN/owner.lock`.\n"
        "Test files (`test_*.py`, `*_test.py`) are restored.\n"
        "Read NOTES.md first.\n"
        "Its budget flags are `--refuter-tokens/-time/-calls` and --out/--port.\n"
    )
    found = findings(text, tmp_path)
    for token in ("TASK.toml", "runs/RUN/owner.lock", "_test.py", "--refuter-tokens/-time/-calls"):
        assert token not in found, (token, found)
    assert found.get("NOTES.md", ("", ""))[1] == "unresolvable-references", found


TRUE_RESIDUALS = (
    "Read notes.md for the plan, then missing/gone.py and docs/api/guide/.\n\n"
    "The settings (`config.py`) hold the ports.\n\n"
    "```sh\n"
    "python tools/gen.py --out build/\n"
    "```\n\n"
    "```\n"
    "$ python scripts/run_eval.py\n"
    "log = /tmp/fizz-run.log\n"
    "secret = ELSEWHERE\n"
    "```\n\n"
    'Set `log = "/tmp/trace.log"`; the old words are in/out/err/ and a/b/c.py.\n'
    "The guide is <docs/missing.md>; wrap keys in <kbd>Ctrl</kbd>.\n"
)


def test_true_residuals_stay_flagged(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere" / "secret.txt"
    elsewhere.parent.mkdir()
    elsewhere.write_text("not granted\n")
    text = TRUE_RESIDUALS.replace("ELSEWHERE", str(elsewhere))
    found = findings(text, tmp_path)
    for token in (
        "notes.md",  # a bare file name that names nothing
        "missing/gone.py",
        "docs/api/guide/",  # a folder (trailing slash) that names nothing
        "config.py",  # glossing a plain phrase: a pointer, not a file kind
        "tools/gen.py",  # a shell fence: a command the receiver runs
        "scripts/run_eval.py",  # a prompt line in a plain fence
        "/tmp/fizz-run.log",  # tethered, in a sample: still the author's machine
        str(elsewhere),  # exists, outside the granted sources, in a sample
        "/tmp/trace.log",
        "in/out/err/",  # a trailing slash: a folder, not words
        "a/b/c.py",
        "docs/missing.md",  # in angle brackets, not a closing tag
    ):
        assert found.get(token, ("", ""))[1] == "unresolvable-references", (token, found)


def test_slash_words_anchored_in_a_real_folder_are_a_path(tmp_path: Path) -> None:
    """`src/core/engine` whose `src` is a folder the receiver has: a pointer into it, so
    its missing rest is a residual; `pass/fail/unknown` has no such anchor."""
    (tmp_path / "src" / "src").mkdir(parents=True)
    found = findings("See src/core/engine and pass/fail/unknown.\n", tmp_path)
    assert found.get("src/core/engine", ("", ""))[1] == "unresolvable-references", found
    assert "pass/fail/unknown" not in found


def test_slash_words_that_exist_are_routed_not_dropped(tmp_path: Path) -> None:
    (tmp_path / "src" / "pass" / "fail").mkdir(parents=True)
    (tmp_path / "src" / "pass" / "fail" / "unknown").write_text("x\n")
    result = scanned("See pass/fail/unknown.\n", tmp_path, role="r")
    assert [loc.token for loc in result.locators] == ["pass/fail/unknown"]
    assert result.locators[0].resolution.status == "observed"


@pytest.mark.shared
def test_certifying_the_shared_design_reports_no_false_path(
    shared_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`ilh certify ../shared/DESIGN.md --source ../shared`: of the residuals, only the
    files it names that the receiver is not given (ARCHITECTURE.md, the repository's
    `tests/`) stay."""
    code, cert, result = certify(
        tmp_path,
        monkeypatch,
        str(shared_dir / "DESIGN.md"),
        "--role",
        "implementer",
        "--source",
        str(shared_dir),
    )
    assert code == 1, result.output
    found = tokens(cert)
    for false in (
        "pass/fail/unknown",
        "pyproject.toml",
        "envelopes/",
        "budgets/",
        "harness/",
        "graders/",
        "examples/",
        "README.md",
        "task.toml",
        "fizz.py",
        "handoff.cert.json",
        "/bin/sh",
        "URI",
        "agent_proposal",
    ):
        assert false not in found, (false, found)
    assert "ARCHITECTURE.md" in found  # named as a file; not in the granted sources
