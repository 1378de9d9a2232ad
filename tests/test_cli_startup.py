"""Start-up: `ilh --help`, `ilh lint` and `ilh runs list` never import the model SDKs, the
grader or the run loop (each command module is imported only when that command runs)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from harness.cli.main import COMMANDS, ilh

HEAVY = ("openai", "anthropic", "httpx2", "harness.grading", "harness.run", "harness.models")

PROBE = """
import sys
from harness.cli.main import main
sys.argv = ["ilh", *sys.argv[1:]]
try:
    main()
except SystemExit:
    pass
heavy = sorted(m for m in sys.modules if m.split('.')[0] in {HEAVY_TOPS} or m in {HEAVY})
sys.stderr.write("HEAVY=" + ",".join(heavy) + "\\n")
"""


def imported_heavy(tmp_path: Path, *args: str) -> list[str]:
    tops = {h for h in HEAVY if "." not in h}
    code = PROBE.replace("{HEAVY_TOPS}", repr(tops)).replace(
        "{HEAVY}", repr({h for h in HEAVY if "." in h})
    )
    done = subprocess.run(
        [sys.executable, "-c", code, *args],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    line = next(x for x in done.stderr.splitlines() if x.startswith("HEAVY="))
    return [m for m in line.removeprefix("HEAVY=").split(",") if m]


@pytest.mark.parametrize(
    "args",
    [("--help",), ("lint", "t.ilang"), ("runs", "list", "--store", "none.db")],
)
def test_light_commands_import_nothing_heavy(tmp_path: Path, args: tuple[str, ...]) -> None:
    (tmp_path / "t.ilang").write_text(
        "::STATUS{@TASK|state:running|by:@RUNTIME|authority:commit}\n"
    )
    assert imported_heavy(tmp_path, *args) == []


def test_help_lists_every_command_and_each_resolves() -> None:
    from click.testing import CliRunner

    shown = CliRunner().invoke(ilh, ["--help"]).stdout
    for name in COMMANDS:
        assert name in shown
        assert ilh.get_command(None, name) is not None  # type: ignore[arg-type]


LATE_LOGGING = """
import sys
from harness.secrets.logs import configure_logging
configure_logging()
assert "structlog" not in sys.modules, "configuring must not import structlog"
from harness.record.log import LazyLogger
log = LazyLogger("late")
log.info("hidden-info")
log.warning("shown-warning", token="sk-late-SECRETVALUE-0123456789")
print("stdout-clean")
"""


def test_logging_configured_when_structlog_is_imported_later(tmp_path: Path) -> None:
    """`ilh lint` never imports structlog; a command that does gets the same set-up as
    if it had been imported first: warnings on stderr (stdout stays clean for --json),
    info filtered out, the harness's secrets redacted."""
    import os

    env = {**os.environ, "ILH_LOG": "warning", "MY_API_KEY": "sk-late-SECRETVALUE-0123456789"}
    done = subprocess.run(
        [sys.executable, "-c", LATE_LOGGING],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "stdout-clean"
    assert "shown-warning" in done.stderr
    assert "hidden-info" not in done.stderr + done.stdout
    assert "SECRETVALUE" not in done.stderr


def loads(tmp_path: Path, module: str, *args: str) -> bool:
    """Whether `ilh ARGS…`, run in `tmp_path`, imported `module`."""
    code = (
        "import sys\nfrom harness.cli.main import main\n"
        f"sys.argv = ['ilh', *{list(args)!r}]\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        f"sys.stderr.write('LOADED=' + str({module!r} in sys.modules) + '\\n')\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    line = next((x for x in done.stderr.splitlines() if x.startswith("LOADED=")), done.stderr)
    assert line in ("LOADED=True", "LOADED=False"), line
    return line == "LOADED=True"


@pytest.mark.parametrize("args", [("lint", "t.ilang"), ("runs", "list", "--store", "runs.db")])
def test_light_commands_do_not_import_structlog(tmp_path: Path, args: tuple[str, ...]) -> None:
    from harness.record.store import RunStore

    (tmp_path / "t.ilang").write_text("::STATUS{@TASK|state:running}\n")
    RunStore(tmp_path / "runs.db").close()
    assert not loads(tmp_path, "structlog", *args)


def test_lint_imports_the_judge_only_for_a_judge(tmp_path: Path) -> None:
    """The ::JUDGE model and its scoring function are a tenth of a short lint's start-up:
    a text without a ::JUDGE never loads them; one with a ::JUDGE is still judged."""
    (tmp_path / "t.ilang").write_text("::STATUS{@TASK|state:running}\n")
    assert not loads(tmp_path, "envelopes.judge", "lint", "t.ilang")
    (tmp_path / "j.ilang").write_text("::JUDGE{x}\n")
    assert loads(tmp_path, "envelopes.judge", "lint", "j.ilang")
    done = subprocess.run(
        [sys.executable, "-m", "harness", "lint", "j.ilang"],
        cwd=tmp_path, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 1 and "JUDGE" in done.stdout, done.stdout + done.stderr


#: What a lint of a text with no typed declaration must not load: the schema library
#: (pydantic, a third of a short lint's start-up), the typed declaration models, the
#: model SDKs and the grader.
SCHEMA_AND_HEAVY = (
    "pydantic",
    "pydantic_core",
    "envelopes.declarations.base",
    "envelopes.judge",
    "anthropic",
    "openai",
    "graders",
    "harness.grading",
    "harness.models",
)

DECLARATION_FREE = {
    "chains.ilang": "::ILANG::4.0\n@TASK → done\n# a note\nplain prose\n",
    "state.ilang": "::STATE{@WORKER|phase:one}\n  kept:yes\n",
    "notes.md": "# Notes\n\n```ilang\n@TASK → done\n```\n",
}


@pytest.mark.parametrize("name", sorted(DECLARATION_FREE))
@pytest.mark.parametrize("as_json", [False, True], ids=["text", "json"])
def test_lint_of_a_declaration_free_text_loads_no_schema(
    tmp_path: Path, name: str, as_json: bool
) -> None:
    """Issue 11 (start-up): `ilh lint` on a text without a typed declaration (::STATUS,
    ::BUDGET…) needs no schema, so it imports neither pydantic nor the declaration models,
    nor anything heavier."""
    (tmp_path / name).write_text(DECLARATION_FREE[name], encoding="utf-8")
    args = ("lint", "--json", name) if as_json else ("lint", name)
    loaded = [m for m in SCHEMA_AND_HEAVY if loads(tmp_path, m, *args)]
    assert loaded == []


@pytest.mark.parametrize("text", ["@TASK → done\n", "::STATUS{@TASK|state:complete}\n"])
def test_lint_to_a_pipe_loads_neither_rich_nor_logging(tmp_path: Path, text: str) -> None:
    """Issue 11: to what is not a terminal rich writes no style, so the report is written
    plainly (tests/test_report_lines.py holds it byte for byte the same) and rich's
    console is not imported; nor is `logging`, which only a log line needs."""
    (tmp_path / "t.ilang").write_text(text, encoding="utf-8")
    for module in ("rich.console", "rich.markup", "logging", "importlib.abc"):
        assert not loads(tmp_path, module, "lint", "t.ilang"), module


def test_the_default_log_level_is_loggings_warning() -> None:
    """`harness.secrets.logs` spells logging's WARNING so that the default needs no
    `logging`; the two must not part."""
    import logging

    from harness.secrets.logs import WARNING, log_level

    assert WARNING == logging.WARNING
    assert log_level(None) == (logging.WARNING, None)
    assert log_level("info") == (logging.INFO, None)


@pytest.mark.parametrize(
    "text",
    [
        "::ILANG::4.0\n::STATUS{@TASK|state:running}\n",
        "::STATUS{@TASK|state:complete|by:@AGENT|authority:commit|since:T3}\n",
    ],
)
def test_lint_of_a_status_the_model_accepts_loads_no_schema(tmp_path: Path, text: str) -> None:
    """A ::STATUS the model would accept is read by the plain rules
    (`envelopes.declarations.status_rules`, tests/test_status_rules.py): no pydantic."""
    (tmp_path / "s.ilang").write_text(text, encoding="utf-8")
    assert [m for m in SCHEMA_AND_HEAVY if loads(tmp_path, m, "lint", "s.ilang")] == []
