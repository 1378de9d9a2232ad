"""`ilh lint`: exit codes, JSON, --explain, stdin, Markdown fences and the checks beyond
syntax (remaining field, writer authority, rubric weights, ::JUDGE schema and mode)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from harness.cli import ilh
from tests.conftest import SHARED


def lint(*args: str, stdin: str | None = None) -> tuple[int, str]:
    result = CliRunner().invoke(ilh, ["lint", *args], input=stdin)
    return result.exit_code, result.stdout


def codes(text: str) -> list[tuple[int, str, str]]:
    code, out = lint("--json", "-", stdin=text)
    rows = json.loads(out)
    assert code == (1 if any(r["severity"] == "error" for r in rows) else 0)
    return [(r["line"], r["code"], r["severity"]) for r in rows]


def test_clean_file_exits_zero(tmp_path: Path) -> None:
    path = tmp_path / "ok.ilang"
    path.write_text("::GENE{verify_first|conf:confirmed}\n  T:check_before_execute\n")
    assert lint(str(path))[0] == 0


def test_json_rows_have_the_design_fields() -> None:
    code, out = lint("--json", "-", stdin="[REED:@SRC]=>[Ω]\n")
    assert code == 1
    assert json.loads(out) == [
        {"file": "-", "line": 1, "col": 2, "code": "E304", "severity": "error",
         "message": "unknown verb 'REED' (88 verbs, upper case)"}
    ]  # fmt: skip


def test_unreadable_input_exits_two(tmp_path: Path) -> None:
    assert lint(str(tmp_path / "missing.ilang"))[0] == 2
    binary = tmp_path / "latin1.ilang"
    binary.write_bytes(b"::FACT{key:caf\xe9}\n")
    assert lint(str(binary))[0] == 2


def test_explain_prints_the_meaning_of_a_code() -> None:
    code, out = lint("--explain", "E304")
    assert code == 0 and "Unknown Verb" in out
    assert lint("--explain", "E999")[0] == 2


def test_budget_with_a_remaining_field_is_an_error() -> None:
    rows = codes("::BUDGET{id:b1|kind:tokens|limit:10|used:2|remaining:8|authority:@RUNTIME}\n")
    assert (1, "E303", "error") in rows


def test_status_its_writer_may_not_write_is_an_error() -> None:
    assert (1, "E303", "error") in codes(
        "::STATUS{@TASK|state:complete|by:@SELF|authority:proposal}\n"
    )
    assert (1, "E303", "error") in codes(
        "::STATUS{@TASK|state:verified_complete|by:@AGENT|authority:verification}\n"
    )
    assert (
        codes("::STATUS{@TASK|state:complete|verified_by:@GRADER|by:@RUNTIME|authority:commit}\n")
        == []
    )


def test_rubric_weights_must_sum_to_one() -> None:
    text = (
        "::RUBRIC{id:r1|threshold:0.8|mode:weighted}\n"
        "  R:a|weight:0.5|check:x\n  R:b|weight:0.4|check:y\n"
    )
    assert (1, "E303", "error") in codes(text)
    assert codes(text.replace("0.4", "0.5")) == []


JUDGE = """::JUDGE{v5.0}
V:[int=0.80,cap=0.60,csq=0.70,rel=0.55,cer=0.90,aut=0.75,rev=0.85,evd=0.80,sov=0.95,ine=0.60,ext=0.90]
M:M2|conf:0.87
R:authorized_config_change_reversible_audit_trail_kept
"""


def test_judge_mode_must_be_f_v5_of_its_vector() -> None:
    assert codes(JUDGE) == []
    wrong = codes(JUDGE.replace("M:M2", "M:M1"))
    assert any(code == "E303" and severity == "error" for _, code, severity in wrong)


def test_judge_frozen_schema_breaks_are_errors() -> None:
    missing_dim = JUDGE.replace(",ext=0.90", "")
    assert any(sev == "error" for _, _, sev in codes(missing_dim))
    extra_line = JUDGE + "X:extra\n"
    assert any(sev == "error" for _, _, sev in codes(extra_line))


def test_markdown_files_lint_their_ilang_fences(tmp_path: Path) -> None:
    md = tmp_path / "notes.md"
    md.write_text("# Notes\n\n```\n::FACT{key:a|value:b}\n```\n\nprose\n\n```\n[REED]=>[Ω]\n```\n")
    code, out = lint("--json", str(md))
    assert code == 1
    assert [(r["line"], r["code"]) for r in json.loads(out)] == [(10, "E304")]


@pytest.mark.parametrize("name", ["SPEC-v4.0-FINAL.md", "SPEC-v5.0.md"])
def test_the_spec_lints_without_errors(name: str) -> None:
    code, out = lint("--json", str(SHARED / "spec" / name))
    assert code == 0, out
