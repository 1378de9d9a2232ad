"""`ilh lint` for people prints at most `MAX_PRINTED` findings a file (errors first), then
says how many more there are and that `--json` lists them all (ux5): 200,000 bad lines
took 81 s to print, one rich line at a time; `--json` took 5 s."""

from __future__ import annotations

import json
import re
from pathlib import Path

from click.testing import CliRunner

from harness.cli.lint import MAX_PRINTED
from harness.cli.main import ilh

WARNING = "::STATUS{@TASK|state:wobbling}\n"  # an unknown state: a warning
ERROR = "[READ: x]\n"  # E300


def lint(*args: str, stdin: str) -> tuple[int, str]:
    result = CliRunner().invoke(ilh, ["lint", *args], input=stdin)
    return result.exit_code, result.stdout


def finding_lines(out: str) -> list[str]:
    return [line for line in out.splitlines() if re.match(r"-:\d+:\d+: E\d{3} ", line)]


def test_many_findings_are_capped_for_people_errors_first_and_json_keeps_all() -> None:
    warnings = 3 * MAX_PRINTED
    text = WARNING * warnings + ERROR
    code, out = lint("-", stdin=text)
    assert code == 1
    shown = finding_lines(out)
    assert len(shown) == MAX_PRINTED
    # The one error, on the last line, is shown although a thousand warnings come before.
    assert any(line.startswith(f"-:{warnings + 1}:7: E300") for line in shown), shown[-3:]
    lines = [int(line.split(":")[1]) for line in shown]
    assert lines == sorted(lines)  # in the file's order
    more = warnings + 1 - MAX_PRINTED
    assert f"{more:,} more finding(s) in - not shown" in out and "--json" in out, out[-400:]
    assert f"1 file(s): 1 error(s), {warnings} warning(s)" in out
    code, out = lint("--json", "-", stdin=text)
    assert code == 1 and len(json.loads(out)) == warnings + 1


def test_up_to_the_cap_every_finding_is_printed_and_nothing_said() -> None:
    code, out = lint("-", stdin=ERROR * MAX_PRINTED)
    assert code == 1
    assert len(finding_lines(out)) == MAX_PRINTED
    assert "not shown" not in out


def test_the_cap_is_per_file(tmp_path: Path) -> None:
    a, b = tmp_path / "a.ilang", tmp_path / "b.ilang"
    a.write_text(ERROR * (MAX_PRINTED + 5), encoding="utf-8")
    b.write_text(ERROR * 3, encoding="utf-8")
    result = CliRunner().invoke(ilh, ["lint", str(a), str(b)])
    assert result.exit_code == 1
    assert "5 more finding(s) in" in result.stdout
    assert sum(str(b) in line for line in result.stdout.splitlines()) == 3


def test_a_location_that_looks_like_an_emoji_code_is_printed_as_written() -> None:
    # `-:100:7` was printed `-💯7`: rich read `:100:` as an emoji code.
    code, out = lint("-", stdin=ERROR * 100)
    assert code == 1
    assert "-:100:7: E300" in out and "💯" not in out
