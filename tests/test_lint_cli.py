"""`ilh lint`: exit codes, JSON, --explain, stdin, Markdown fences and the checks beyond
syntax (remaining field, writer authority, rubric weights, ::JUDGE schema and mode)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from envelopes.errors import ERROR_CODES
from harness.cli.main import ilh


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
def test_the_spec_lints_without_errors(name: str, shared_dir: Path) -> None:
    code, out = lint("--json", str(shared_dir / "spec" / name))
    assert code == 0, out


@pytest.mark.parametrize(
    "text",
    [
        # a second `state` behind a lawful one
        "::STATUS{@TASK|state:claimed_complete|state:complete|by:@SELF|authority:proposal}\n",
        # an upper-case key the typed reader refuses
        "::STATUS{@TASK|STATE:complete|by:@SELF|authority:proposal}\n",
        # a broken quote after the claim
        '::STATUS{@TASK|state:complete|by:@AGENT|note:"open}\n',
        # the claim on a body line, repeated
        "::STATUS{@TASK|state:blocked|by:@SELF}\n  state:complete\n",
    ],
    ids=["repeated", "upper-case", "broken-quote", "body-repeat"],
)
def test_a_status_that_cannot_be_read_is_an_error_not_a_warning(text: str) -> None:
    # Its writer authority cannot be checked, so lint fails closed (exit 1).
    rows = codes(text)
    assert any(sev == "error" for _, _, sev in rows), rows


@pytest.mark.parametrize(
    "field",
    ["REMAINING:8", "Remaining:8", '"remaining":8', "remaining：8", "remaining :8"],
)
def test_no_spelling_hides_a_remaining_field(field: str) -> None:
    rows = codes(f"::BUDGET{{id:b1|kind:tokens|limit:10|used:2|{field}}}\n")
    assert (1, "E303", "error") in rows
    # On a body line, a spelling that is no `key:` is already an E300 body line.
    body = codes(f"::BUDGET{{id:b1|kind:tokens|limit:10|used:2}}\n  {field}\n")
    assert any(sev == "error" for _, _, sev in body)
    assert codes("::BUDGET{id:b1|kind:tokens|limit:10|used:2|note:remaining_is_low}\n") == []


def test_judge_fields_may_not_trail_its_header() -> None:
    header, v_line, rest = JUDGE.split("\n", 2)
    rows = codes(f"{header} {v_line}\n{rest}")
    assert (1, "E303", "error") in rows


SOUP = st.lists(
    st.sampled_from(
        [
            *("::STATUS{", "::BUDGET{", "::RUBRIC{", "::JUDGE{v5.0}", "::OBJECTIVE{", "::PRIOR{"),
            *("::EVIDENCE{", "::FALLBACK{", "::UNTRUSTED{id:u|delimiter:X}", "<<<X", "X"),
            *("::END_UNTRUSTED{id:u}", "::GENE{g}", "@TASK", "state:", "complete", "by:@SELF"),
            *("kind:tokens", "limit:", "remaining:", "R:a|weight:", "V:[int=0.80", "M:M2", "R:x"),
            *("|", ":", "}", "{", "]", "[", '"', "\\", "⇒", "=>", "[Π:READ]", "1e999", "0.5"),
            *("\n", "\n  ", "\t", "\r", "\x00", "\x1b", "\u2028", "：", "｜", "T[0] ", "Ω"),
        ]
    ),
    max_size=40,
).map("".join)


@settings(max_examples=300, deadline=None)
@given(SOUP | st.text(max_size=200))
def test_hostile_text_is_findings_never_a_traceback(text: str) -> None:
    result = CliRunner().invoke(ilh, ["lint", "--json", "-"], input=text.encode("utf-8"))
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    assert result.exit_code in (0, 1)
    rows = json.loads(result.stdout)
    assert result.exit_code == (1 if any(r["severity"] == "error" for r in rows) else 0)
    assert all(r["code"] in ERROR_CODES for r in rows)


def test_a_huge_value_is_shortened_for_people_and_whole_in_json() -> None:
    # A 50 MB state value was echoed whole into the finding's one line: a terminal flooded
    # for one warning. People get its start and its size; `--json` keeps every character.
    value = "x" * 200_000
    text = f"::STATUS{{@TASK|state:{value}}}\n"
    code, out = lint("-", stdin=text)
    assert code == 0  # an unknown state is a warning
    (line,) = [row for row in out.splitlines() if ":1:1: E303" in row]
    assert len(line) < 600 and "characters" in line
    _, out = lint("--json", "-", stdin=text)
    assert any(value in row["message"] for row in json.loads(out))
