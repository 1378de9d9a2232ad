"""`ilh certify` as a new user meets it (ux5): a blank `--verify` or `--source`, refuter
budgets past the task file's bounds, and a missing refuter script are bad input (exit 2)
with the flag named, never a certification of nothing or a misleading word."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.inputs.bounds import MAX_ROUNDS, MAX_TIME_SECONDS, MAX_TOKENS
from tests.certify_helpers import certified_clean, certify_project, copy_example, invoke


def error_line(output: str) -> str:
    assert "Traceback" not in output
    lines = [line for line in output.splitlines() if line.startswith("error ")]
    assert len(lines) == 1, output
    return lines[0]


@pytest.mark.parametrize(
    ("extra", "flag"),
    [
        (("--verify", ""), "--verify"),
        (("--verify", "   "), "--verify"),
        (("--source", ""), "--source"),
    ],
)
def test_a_blank_verify_or_source_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, extra: tuple[str, str], flag: str
) -> None:
    # `--verify ''` was certified as a verification command the receiver runs;
    # `--source ''` granted the whole current folder (Path('') is '.').
    folder = copy_example("certify_clean", tmp_path)
    code, _, result = certify_project(folder, monkeypatch, *extra)
    assert code == 2, result.output
    line = error_line(result.output)
    assert line.startswith(f"error {flag}: E303 ") and "blank" in line, line


@pytest.mark.parametrize(
    ("extra", "flag"),
    [
        (("--refuter-time", "100000000000000000000h"), "--refuter-time"),
        (("--refuter-time", f"{MAX_TIME_SECONDS + 1}"), "--refuter-time"),
        (("--refuter-tokens", str(10**23)), "--refuter-tokens"),
        (("--refuter-tokens", str(MAX_TOKENS + 1)), "--refuter-tokens"),
        (("--refuter-calls", str(MAX_ROUNDS + 1)), "--refuter-calls"),
    ],
)
def test_refuter_budgets_past_the_bounds_are_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, extra: tuple[str, str], flag: str
) -> None:
    folder = copy_example("certify_clean", tmp_path)
    code, _, result = certify_project(folder, monkeypatch, *extra)
    assert code == 2, result.output
    # Bad usage caught by click: `main` (not run by CliRunner) prints it as `error FLAG: E303`.
    assert f"Invalid value for '{flag}'" in result.output and "Traceback" not in result.output


def test_refuter_budgets_at_the_bounds_are_taken(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = copy_example("certify_clean", tmp_path)
    # With a refuter to budget: without --model these flags are bad usage (ux6).
    code, _, result = certify_project(
        folder, monkeypatch, "--refuter-time", f"{MAX_TIME_SECONDS}",
        "--refuter-tokens", str(MAX_TOKENS), "--refuter-calls", str(MAX_ROUNDS),
        "--model", "scripted:refuter_pass.jsonl",
    )  # fmt: skip
    assert code == 0, result.output


def test_a_missing_refuter_script_is_called_the_refuter_script(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # It said "cannot read the agent script": certify has no agent, its model is the refuter.
    folder = copy_example("certify_clean", tmp_path)
    code, _, result = certify_project(folder, monkeypatch, "--model", "scripted:nowhere.jsonl")
    assert code == 2, result.output
    line = error_line(result.output)
    assert "cannot read the refuter script" in line and "nowhere.jsonl" in line, line


@pytest.mark.parametrize(
    "extra",
    [
        ("--apply",),
        ("--role", "reviewer"),
        ("--source", "project"),
        ("--model", "scripted:refuter_pass.jsonl"),
        ("--refuter-calls", "3"),
    ],
)
def test_check_with_a_certification_flag_is_bad_usage(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, extra: tuple[str, ...]
) -> None:
    # `--check c.json --source project` re-checked the certificate's own sources and said
    # nothing of the flag: the person believed their sources were the ones checked.
    folder, _ = certified_clean(tmp_path, monkeypatch)
    result = invoke(folder, monkeypatch, "certify", "--check", "h.cert.json", *extra)
    assert result.exit_code == 2, result.output
    line = error_line(result.output)
    assert line.startswith("error --check: E303 ") and extra[0] in line, line
    # What --check does take still works.
    result = invoke(folder, monkeypatch, "certify", "--check", "h.cert.json", "handoff.md")
    assert result.exit_code == 0, result.output
    result = invoke(folder, monkeypatch, "certify", "--check", "h.cert.json", "--json")
    assert result.exit_code == 0, result.output


def test_check_of_a_target_typed_that_cannot_be_read_is_bad_input(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # DESIGN §6: 2 for unreadable input. A mistyped TARGET was reported "CHANGED", exit 1.
    folder, _ = certified_clean(tmp_path, monkeypatch)
    for given in ("nowhere.md", "project"):
        result = invoke(folder, monkeypatch, "certify", "--check", "h.cert.json", given)
        assert result.exit_code == 2, result.output
        line = error_line(result.output)
        assert line.startswith(f"error {given}: E500 "), line
        assert "CHANGED" not in result.output
    # The certificate's own target gone (none typed): something changed, exit 1.
    (folder / "handoff.md").unlink()
    result = invoke(folder, monkeypatch, "certify", "--check", "h.cert.json")
    assert result.exit_code == 1, result.output
    assert "the target cannot be read" in result.output


def test_an_answer_that_matches_no_finding_is_named_in_the_reason(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A typo in a token ("as discused") left its finding open and said nothing of it.
    folder = copy_example("certify_repair", tmp_path)
    answers = json.loads((folder / "answers.json").read_text(encoding="utf-8"))
    answers["findings"][0]["token"] = "as discused"
    (folder / "typo.json").write_text(json.dumps(answers), encoding="utf-8")
    code, cert, result = certify_project(folder, monkeypatch, "--answers", "typo.json", "--apply")
    assert code == 1, result.output
    assert "findings.0 ('as discused') matched no finding" in cert["reason"], cert["reason"]
    assert "findings.1" not in cert["reason"]
    # The answers as shipped all match: certified, as the example's README says.
    folder = copy_example("certify_repair", tmp_path / "again")
    code, cert, result = certify_project(
        folder, monkeypatch, "--answers", "answers.json", "--apply"
    )
    assert code == 0, result.output
