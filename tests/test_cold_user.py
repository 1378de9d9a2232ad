"""What a demanding new user (or a hostile one) tries first, command by command: every bad
input is one line `error LOCATION: CODE message`, exit 2, and never a traceback or a hang."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import click
import pytest
from click.testing import CliRunner, Result

from harness.cli.main import ilh
from harness.inputs import errors

CAP = 1024 * 1024  # the tests' cap on what is read of a file (the real one is larger)

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def invoke(*args: str, stdin: bytes | None = None) -> Result:
    return CliRunner().invoke(ilh, list(args), input=stdin)


def one_error(result: Result, location: str, code: str) -> str:
    assert result.exit_code == 2, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(
        result.exception
    )
    assert "Traceback" not in result.output
    lines = [line for line in result.output.splitlines() if line.startswith("error ")]
    assert len(lines) == 1, result.output
    assert lines[0].startswith(f"error {location}: {code} "), lines
    return lines[0]


@pytest.fixture
def huge(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A file one byte over the cap: a log or a disk image named by mistake must not be
    read whole into memory (nor `/dev/zero`, which never ends)."""
    monkeypatch.setattr(errors, "MAX_INPUT_BYTES", CAP)
    path = tmp_path / "huge.toml"
    path.write_bytes(b"#" * (CAP + 1))
    return path


def test_the_cap_is_far_above_any_real_input() -> None:
    assert errors.MAX_INPUT_BYTES >= 64 * 1024 * 1024


def test_a_huge_task_file_is_refused_unread(huge: Path, tmp_path: Path) -> None:
    line = one_error(invoke("run", str(huge), "--store", str(tmp_path / "r.db")), str(huge), "E500")
    assert "larger than" in line
    # At the cap it is read (and is a task file with no [task] table).
    huge.write_bytes(b"#" * CAP)
    one_error(invoke("run", str(huge), "--store", str(tmp_path / "r.db")), str(huge), "E303")


def test_a_huge_agent_script_is_refused_unread(honest: Path, huge: Path, tmp_path: Path) -> None:
    result = invoke(
        "run", str(honest / "task.toml"), "--model", f"scripted:{huge}",
        "--store", str(tmp_path / "r.db"),
    )  # fmt: skip
    assert "larger than" in one_error(result, str(huge), "E500")


def test_a_huge_claim_file_is_refused_unread(huge: Path) -> None:
    grade_true = EXAMPLES / "grade_true"
    result = invoke(
        "grade", str(grade_true / "task.toml"), "--workspace", str(grade_true / "workspace"),
        "--claim", str(huge),
    )  # fmt: skip
    assert "larger than" in one_error(result, str(huge), "E500")


def test_lint_refuses_a_huge_file_and_huge_stdin(huge: Path) -> None:
    assert "larger than" in one_error(invoke("lint", str(huge)), str(huge), "E500")
    stdin = b"x" * (CAP + 1)
    assert "larger than" in one_error(invoke("lint", "-", stdin=stdin), "-", "E500")


def test_certify_refuses_a_huge_target(huge: Path, tmp_path: Path) -> None:
    result = invoke("certify", str(huge), "--role", "implementer", "--store", str(tmp_path / "r"))
    assert "larger than" in one_error(result, str(huge), "E500")


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="no /dev/zero")
def test_an_endless_file_ends_in_a_message(tmp_path: Path, huge: Path) -> None:
    result = invoke("run", "/dev/zero", "--store", str(tmp_path / "r.db"))
    # A device is refused before a byte is read (ux5); a huge regular file at the cap.
    assert "is a device" in one_error(result, "/dev/zero", "E500")
    result = invoke("run", str(huge), "--store", str(tmp_path / "r.db"))
    assert "larger than" in one_error(result, str(huge), "E500")


def test_view_refuses_a_huge_certificate(huge: Path, tmp_path: Path) -> None:
    cert = huge.rename(tmp_path / "huge.cert.json")
    result = invoke("view", str(cert), "--out", str(tmp_path / "out.html"))
    assert "larger than" in one_error(result, str(cert), "E500")


def certify_clean(tmp_path: Path, *extra: str) -> Result:
    clean = EXAMPLES / "certify_clean"
    return invoke(
        "certify", str(clean / "handoff.md"), "--role", "implementer",
        "--source", str(clean / "project"), "--non-interactive",
        "--store", str(tmp_path / "r.db"), *extra,
    )  # fmt: skip


def test_certify_names_a_certificate_path_that_is_a_folder(tmp_path: Path) -> None:
    assert certify_clean(tmp_path).exit_code == 0  # certified: the file would be written
    line = one_error(certify_clean(tmp_path, "--certificate", str(tmp_path)), str(tmp_path), "E303")
    assert "folder" in line


@pytest.mark.parametrize("flag", ["--certificate", "--markdown"])
def test_certify_names_an_output_it_cannot_write(tmp_path: Path, flag: str) -> None:
    unwritable = tmp_path / "missing" / "cert.out"
    line = one_error(certify_clean(tmp_path, flag, str(unwritable)), str(unwritable), "E500")
    assert "cannot write" in line
    # Refused before anything is certified: the store holds no certification run.
    assert (
        not (tmp_path / "r.db").exists()
        or "certify" not in invoke("runs", "list", "--store", str(tmp_path / "r.db")).output
    )


def test_certify_says_why_the_certificate_could_not_be_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A folder that refuses the write only at the end (a full disk, a read-only mount, a
    # file system root opens but does not write).
    real = Path.write_text

    def refuse(self: Path, *args: object, **kwargs: object) -> int:
        if "cert.json" in self.name:  # the certificate, or the temporary file renamed over it
            raise OSError(28, "No space left on device")
        return real(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(Path, "write_text", refuse)
    landing = tmp_path / "cert.json"
    line = one_error(certify_clean(tmp_path, "--certificate", str(landing)), str(landing), "E500")
    assert "No space left on device" in line
    assert not [p for p in tmp_path.iterdir() if "cert.json" in p.name]  # no half, no temp


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no named pipes here")
def test_certify_does_not_hang_on_a_source_holding_a_pipe_or_a_device(tmp_path: Path) -> None:
    # `--source ~` or `--source /` grants folders that hold pipes, sockets and devices
    # (`/dev/zero` never ends; a pipe with no writer blocks its reader forever): only
    # regular files are read.
    clean = EXAMPLES / "certify_clean"
    source = tmp_path / "source"
    shutil.copytree(clean / "project", source)
    os.mkfifo(source / "a_pipe")
    if os.path.exists("/dev/zero"):
        (source / "zeros").symlink_to("/dev/zero")
    done = subprocess.run(
        [
            sys.executable, "-m", "harness", "certify", str(clean / "handoff.md"),
            "--role", "implementer", "--source", str(source), "--non-interactive",
            "--store", str(tmp_path / "r.db"), "--json",
        ],
        capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["certified"] is True


def usage_error(*args: str) -> str:
    """Bad usage goes through `ilh`'s own entry point (click's standalone mode is not it)."""
    done = subprocess.run(
        [sys.executable, "-m", "harness", *args],
        capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert done.stdout == ""
    return done.stderr.splitlines()[0]


@pytest.mark.parametrize("value", ["forever", "-5s", "inf", "0"])
def test_certify_names_a_bad_refuter_time_by_its_flag(value: str) -> None:
    handoff = str(EXAMPLES / "certify_clean" / "handoff.md")
    line = usage_error("certify", handoff, "--role", "x", "--refuter-time", value)
    assert line.startswith("error --refuter-time: E303 "), line


DEEP = 100_000  # far past Python's recursion limit: parsers that recurse give up


def deep_toml() -> str:
    return f"x = {'[' * DEEP}{']' * DEEP}\n"


def deep_json() -> str:
    return f'{{"x": {"[" * DEEP}{"]" * DEEP}}}\n'


def test_a_deeply_nested_task_file_is_bad_input(tmp_path: Path) -> None:
    task = tmp_path / "task.toml"
    task.write_text('[task]\nid = "t"\nobjective = "x"\n' + deep_toml(), encoding="utf-8")
    line = one_error(invoke("run", str(task), "--store", str(tmp_path / "r.db")), str(task), "E300")
    assert "nested too deeply" in line


def test_a_deeply_nested_agent_script_line_is_bad_input(honest: Path, tmp_path: Path) -> None:
    script = tmp_path / "agent.jsonl"
    script.write_text('{"text": "a"}\n' + deep_json(), encoding="utf-8")
    result = invoke(
        "run", str(honest / "task.toml"), "--model", f"scripted:{script}",
        "--store", str(tmp_path / "r.db"),
    )  # fmt: skip
    assert "nested too deeply" in one_error(result, f"{script}:2", "E300")


@pytest.mark.parametrize(
    ("flag", "name", "text"),
    [
        ("--contract", "contract.toml", deep_toml()),
        ("--lexicon", "lexicon.toml", deep_toml()),
        ("--answers", "answers.json", deep_json()),
        ("--check", "cert.json", deep_json()),
    ],
)
def test_certify_refuses_deeply_nested_files(
    tmp_path: Path, flag: str, name: str, text: str
) -> None:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    # `--check` takes no certification flag (ux5): the certificate alone.
    result = invoke("certify", flag, str(path)) if flag == "--check" else None
    line = one_error(result or certify_clean(tmp_path, flag, str(path)), str(path), "E300")
    assert "nested too deeply" in line


def readme_exit_codes(command: str) -> set[str]:
    """The exit codes README's "Exit codes:" paragraph gives `command` (`ilh run 0 …, 3 …`)."""
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
    paragraph = " ".join(readme.split("\nExit codes: `ilh run`", 1)[1].split("\n\n")[0].split())
    part = ("`ilh run`" + paragraph).split(f"`{command}`", 1)[1].split("`ilh ", 1)[0]
    return set(re.findall(r"(?<![\w.])(\d+) [a-z]", part))


@pytest.mark.parametrize("command", ["ilh run", "ilh grade", "ilh lint", "ilh certify"])
def test_help_gives_the_exit_codes_readme_gives(command: str) -> None:
    codes = readme_exit_codes(command)
    assert "0" in codes and "2" in codes, codes
    page = invoke(command.split()[1], "--help").output
    exit_line = " ".join(page.split("Exit ", 1)[1].split("\n\n")[0].split())
    assert set(re.findall(r"(?<![\w.])(\d+) ", exit_line)) == codes, (exit_line, codes)


def test_grade_help_does_not_say_checks_run_in_the_workspace() -> None:
    # The workspace is never changed: each check runs over its own copy (README, grading).
    page = " ".join(invoke("grade", "--help").output.split())
    assert "checks run in it" not in page and "copy" in page


def test_the_api_reports_an_unusable_store_or_an_unknown_run_as_input_error(
    tmp_path: Path,
) -> None:
    # README: "Bad input raises InputError with its location and code" — the CLI's exit 2.
    from harness.api import correct, run_task, soul_sync

    with pytest.raises(errors.InputError) as caught:
        run_task(EXAMPLES / "honest" / "task.toml", store=tmp_path)  # a folder
    assert caught.value.code == "E500" and caught.value.path == str(tmp_path)
    store = tmp_path / "runs.db"
    for call in (
        lambda: correct("nope", "factual_error", "x", store=store),
        lambda: soul_sync("nope", store=store),
    ):
        with pytest.raises(errors.InputError) as caught:
            call()
        assert caught.value.code == "E500" and "unknown run" in caught.value.message


@pytest.mark.parametrize(
    ("args", "where"), [(("schema",), "NAME"), (("run", "--network"), "--network")]
)
def test_a_usage_error_is_one_line_even_when_click_says_more(
    args: tuple[str, ...], where: str
) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "harness", *args],
        capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert done.returncode == 2
    lines = done.stderr.splitlines()
    assert lines[0].startswith(f"error {where}: E303 "), lines
    # The message (a choice's options included) is on that line; at most the hint follows.
    assert len(lines) <= 2 and all(line.startswith(("error ", "(`ilh")) for line in lines), lines


def test_resuming_a_certification_says_it_is_one(tmp_path: Path) -> None:
    assert certify_clean(tmp_path).exit_code == 0
    store = str(tmp_path / "r.db")
    run_id = invoke("runs", "list", "--store", store, "--json").output
    certification = json.loads(run_id)[0]["run_id"]
    line = one_error(
        invoke("run", "--resume", certification, "--store", store), certification, "E303"
    )
    assert "certification" in line and "older ilh" not in line


def test_certify_check_reads_a_target_named_on_the_command_line_from_the_current_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The certificate lands in another folder than the handoff; the receiver, in the
    # handoff's folder, names it as a person does: relative to where they are.
    landing = tmp_path / "certs" / "handoff.cert.json"
    landing.parent.mkdir()
    assert certify_clean(tmp_path, "--certificate", str(landing)).exit_code == 0
    monkeypatch.chdir(EXAMPLES / "certify_clean")
    done = invoke("certify", "--check", str(landing), "handoff.md")
    assert done.exit_code == 0, done.output
    assert done.output.startswith("ok: handoff.md against ")
    # Without TARGET, the certificate's own locator is used (relative to the certificate).
    assert invoke("certify", "--check", str(landing)).exit_code == 0


def test_soul_review_refuses_a_gene_both_approved_and_dropped(tmp_path: Path) -> None:
    folder = tmp_path / "gene"
    shutil.copytree(EXAMPLES / "gene", folder)
    soul = folder / "agent.soul.ilang"
    before = soul.read_text(encoding="utf-8")
    store = str(tmp_path / "r.db")
    ran = invoke("run", str(folder / "task.toml"), "--soul-readonly", "--store", store)
    assert ran.exit_code == 3, ran.output
    pending = Path(f"{soul}.pending.jsonl").read_text(encoding="utf-8")
    assert "no_forged_authority" in pending
    both = ("--approve", "no_forged_authority", "--drop", "no_forged_authority")
    line = one_error(invoke("soul", "review", str(soul), *both), "--drop", "E303")
    assert "no_forged_authority" in line
    # Nothing was decided: the SOUL and the pending GENEs are as they were.
    assert soul.read_text(encoding="utf-8") == before
    assert Path(f"{soul}.pending.jsonl").read_text(encoding="utf-8") == pending


@pytest.fixture
def recorded(honest: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, str]:
    """A store (in the default place, `.ilh/runs.db` under the current folder) with one run."""
    monkeypatch.chdir(tmp_path)
    assert invoke("run", str(honest / "task.toml")).exit_code == 0
    store = tmp_path / ".ilh" / "runs.db"
    run_id = json.loads(invoke("runs", "list", "--json").output)[0]["run_id"]
    return store, run_id


@pytest.mark.parametrize(
    "command",
    [("view", "RUN", "--out", "STORE"), ("runs", "export", "RUN", "--html", "--out", "STORE")],
)
def test_a_report_never_overwrites_the_run_store(
    recorded: tuple[Path, str], command: tuple[str, ...]
) -> None:
    # `--out .ilh/runs.db` (a slip of the finger) used to replace the whole record by HTML.
    store, run_id = recorded
    before = store.read_bytes()
    args = [{"RUN": run_id, "STORE": str(store)}.get(a, a) for a in command]
    line = one_error(invoke(*args), str(store), "E303")
    assert "run store" in line
    assert store.read_bytes() == before
    assert invoke("runs", "verify", run_id).exit_code == 0


def test_a_recording_is_never_appended_to_the_task_file_or_the_store(
    recorded: tuple[Path, str], honest: Path, tmp_path: Path
) -> None:
    store, _ = recorded
    task = honest / "task.toml"
    text = task.read_text(encoding="utf-8")
    notes = tmp_path / "notes.md"  # any text file that is not a recording
    notes.write_text("# Notes\n\nNot JSON lines.\n", encoding="utf-8")
    for target in (task, store, notes):
        before = target.read_bytes()
        line = one_error(invoke("run", str(task), "--record", str(target)), str(target), "E303")
        assert "recording" in line
        assert target.read_bytes() == before
    assert task.read_text(encoding="utf-8") == text
    # A new file, and an existing recording, are fine.
    fresh = tmp_path / "calls.jsonl"
    assert invoke("run", str(task), "--record", str(fresh)).exit_code == 0
    assert invoke("run", str(task), "--record", str(fresh)).exit_code == 0


def test_certify_never_writes_its_markdown_over_the_record_it_certifies(tmp_path: Path) -> None:
    folder = tmp_path / "clean"
    shutil.copytree(EXAMPLES / "certify_clean", folder)
    handoff = folder / "handoff.md"
    before = handoff.read_bytes()
    result = invoke(
        "certify", str(handoff), "--role", "implementer", "--source", str(folder / "project"),
        "--non-interactive", "--store", str(tmp_path / "r.db"), "--markdown", str(handoff),
    )  # fmt: skip
    assert "the record it certifies" in one_error(result, str(handoff), "E303")
    assert handoff.read_bytes() == before


#: What a hostile agent writes to take over the terminal of whoever reads its run: clear
#: the screen, set the window title, a hyperlink whose text hides its target, a carriage
#: return that overwrites the line shown, a C1 control, a right-to-left override.
TERMINAL_TAKEOVER = (
    "\x1b[2J\x1b]0;PWNED\x07 \x1b]8;;http://evil.example/\x1b\\click\x1b]8;;\x1b\\ "
    "\rended by committed_complete \x9b31m \u202egnp.exe"
)


def no_control(text: str) -> None:
    bad = [c for c in text if (ord(c) < 32 and c not in "\n\t") or 0x7F <= ord(c) <= 0x9F]
    assert not bad, [hex(ord(c)) for c in bad]
    assert "\u202e" not in text


def test_runs_show_never_passes_the_agents_control_characters_to_the_terminal(
    honest: Path, tmp_path: Path
) -> None:
    script = tmp_path / "agent.jsonl"
    turn = {
        "text": "hello " + TERMINAL_TAKEOVER,
        "tool_calls": [
            {"name": "run_command", "arguments": {"command": "printf '\\033]0;TOOL\\007 out\\n'"}},
            {"name": "read_file", "arguments": {"path": "x" + TERMINAL_TAKEOVER}},
        ],
    }
    script.write_text(json.dumps(turn) + "\n", encoding="utf-8")
    store = str(tmp_path / "r.db")
    ran = invoke(
        "run", str(honest / "task.toml"), "--model", f"scripted:{script}", "--store", store
    )
    assert ran.exit_code == 3, ran.output
    no_control(ran.output)
    run_id = json.loads(invoke("runs", "list", "--store", store, "--json").output)[0]["run_id"]
    shown = invoke("runs", "show", run_id, "--store", store)
    assert shown.exit_code == 0
    no_control(shown.output)
    # Shown, not dropped: the reader sees that something was there.
    assert "\\x1b]0;PWNED" in shown.output and "\\x1b]0;TOOL" in shown.output


def test_grade_never_passes_a_checks_control_characters_to_the_terminal(tmp_path: Path) -> None:
    folder = tmp_path / "g"
    shutil.copytree(EXAMPLES / "grade_false", folder)
    # The agent's code is what a failing check's output shows: it writes to the terminal.
    module = folder / "workspace" / "slug.py"
    module.write_text(
        f"import sys\nsys.stderr.write({TERMINAL_TAKEOVER!r})\n"
        + module.read_text(encoding="utf-8"),
        encoding="utf-8",
    )
    done = invoke("grade", str(folder / "task.toml"), "--workspace", str(folder / "workspace"))
    assert done.exit_code == 1, done.output
    no_control(done.output)
    assert "\\x1b]0;PWNED" in done.output


def test_lint_never_passes_the_texts_control_characters_to_the_terminal(tmp_path: Path) -> None:
    text = tmp_path / "a.ilang"
    text.write_text(f"::STATUS{{@TASK|state:complete}}\n{TERMINAL_TAKEOVER} garbage\n")
    done = invoke("lint", str(text))
    assert done.exit_code == 1, done.output
    no_control(done.output)


def test_the_summary_gives_every_byte_limit_in_units() -> None:
    from harness.run.progress import sandbox_text

    limits = {"file_size": 256 << 20, "memory": 4 << 30, "tmp_size": 512 << 20, "disk": 4 << 30}
    text = sandbox_text({"mode": "bwrap", "confined": True, "network": "none", "limits": limits})
    assert "disk 4 GiB" in text and "memory 4 GiB" in text and "4294967296" not in text


@pytest.mark.parametrize("kind", ["folder", "pipe"])
def test_a_record_key_that_is_not_a_file_is_one_message(
    honest: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str
) -> None:
    key = tmp_path / "key"
    if kind == "folder":
        key.mkdir()
    else:
        os.mkfifo(key)  # no writer: a blocking read would wait forever
    monkeypatch.setenv("ILH_RECORD_KEY_FILE", str(key))
    store = tmp_path / "r.db"
    line = one_error(
        invoke("run", str(honest / "task.toml"), "--store", str(store)), str(store), "E500"
    )
    assert "not a regular file" in line


def test_view_refuses_out_and_port_together(recorded: tuple[Path, str], tmp_path: Path) -> None:
    # One would be silently ignored (the page was served and no file written).
    _, run_id = recorded
    out = tmp_path / "page.html"
    one_error(invoke("view", run_id, "--out", str(out), "--port", "18799"), "--port", "E303")
    assert not out.exists()


def test_lint_explain_with_files_is_bad_usage(tmp_path: Path) -> None:
    # The files were silently not linted: exit 0 for text full of errors.
    text = tmp_path / "a.ilang"
    text.write_text("[REED]\n", encoding="utf-8")
    one_error(invoke("lint", "--explain", "E304", str(text)), "--explain", "E303")


def test_a_byte_order_mark_is_named(honest: Path, tmp_path: Path) -> None:
    # Editors on Windows save "UTF-8" with a BOM; tomllib said only "Invalid statement".
    task = honest / "task.toml"
    task.write_bytes(b"\xef\xbb\xbf" + task.read_bytes())
    line = one_error(
        invoke("run", str(task), "--store", str(tmp_path / "r.db")), f"{task}:1:1", "E300"
    )
    assert "byte order mark" in line
    script = tmp_path / "agent.jsonl"
    script.write_bytes(b"\xef\xbb\xbf" + (EXAMPLES / "honest" / "agent.jsonl").read_bytes())
    result = invoke(
        "run", str(EXAMPLES / "honest" / "task.toml"), "--model", f"scripted:{script}",
        "--store", str(tmp_path / "r.db"),
    )  # fmt: skip
    assert "byte order mark" in one_error(result, f"{script}:1:1", "E300")


@pytest.mark.parametrize("group", [[], ["runs"], ["soul"]])
def test_a_command_group_alone_prints_its_help_laid_out(group: list[str]) -> None:
    """`ilh` alone is a newcomer's first command: the help as click lays it out, one
    option per line, not squashed into an error line; exit 2 as click has it."""
    done = subprocess.run(
        [sys.executable, "-m", "harness", *group],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert done.returncode == 2
    assert done.stderr.startswith(f"Usage: ilh {' '.join(group)}".rstrip() + " [OPTIONS] COMMAND")
    assert "\nCommands:\n" in done.stderr and "E303" not in done.stderr


def test_every_option_of_every_command_says_what_it_does() -> None:
    # `ilh runs list --help` listed a bare `--json`: the one option a script reads was
    # the one left unexplained.
    group = ilh
    ctx = click.Context(group)
    silent: list[str] = []

    def walk(command: click.Command, path: str) -> None:
        if isinstance(command, click.Group):
            for name in command.list_commands(ctx):
                sub = command.get_command(ctx, name)
                assert sub is not None
                walk(sub, f"{path} {name}")
            return
        for param in command.params:
            if isinstance(param, click.Option) and not param.hidden and not param.help:
                silent.append(f"{path} {param.opts[0]}")

    walk(group, "ilh")
    assert silent == []
