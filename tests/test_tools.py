"""The agent's tools: specs, dispatch, each tool, and the scrubbed command runner."""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest

from harness.workspace import commands, tools
from harness.workspace.commands import CommandResult, run_shell, scrubbed_env
from harness.workspace.folder import Workspace
from harness.workspace.sandbox import UNCONFINED
from harness.workspace.tools import (
    READ_ONLY_TOOLS,
    TOOL_SPECS,
    ToolCall,
    ToolResult,
    ToolSpec,
    dispatch,
    tool_specs,
)
from tests.harness_helpers import none_running

#: Every variable a command's environment holds (harness.workspace.commands.scrubbed_env).
SCRUBBED_VARS = {
    "PATH",
    "HOME",
    "LANG",
    "LC_ALL",
    "PYTHONDONTWRITEBYTECODE",
    "PYTHONNOUSERSITE",
    "TMPDIR",
}

TIMEOUT_S = 20.0  # generous: only the timeout tests rely on a timeout actually firing


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    return Workspace.create(tmp_path / "run1" / "workspace")


def call(ws: Workspace, name: str, read_only: bool = False, **arguments: Any) -> ToolResult:
    return dispatch(
        ws, ToolCall(name=name, arguments=arguments), timeout_s=TIMEOUT_S, read_only=read_only
    )


# -- specs and models -----------------------------------------------------------------


def test_specs_cover_the_five_design_tools() -> None:
    names = [spec.name for spec in TOOL_SPECS]
    assert names == ["read_file", "write_file", "list_files", "grep", "run_command"]
    by_name = {spec.name: spec.parameters for spec in TOOL_SPECS}
    assert by_name["read_file"]["required"] == ["path"]
    assert sorted(by_name["write_file"]["required"]) == ["content", "path"]
    assert "required" not in by_name["list_files"]
    assert by_name["grep"]["required"] == ["pattern"]
    assert by_name["run_command"]["required"] == ["command"]
    for spec in TOOL_SPECS:
        assert spec.parameters["type"] == "object"
        # Sent with every call, so only what the model needs: the argument models refuse
        # an unknown key themselves (test_malformed_arguments_are_results_not_exceptions).
        assert set(spec.parameters) <= {"type", "properties", "required"}
        assert spec.description
        for prop in spec.parameters["properties"].values():
            assert prop == {"type": "string"}
        json.dumps(spec.to_anthropic())
        json.dumps(spec.to_openai())


def test_provider_renderings_do_not_share_the_spec_schema() -> None:
    rendered = TOOL_SPECS[0].to_openai()
    rendered["function"]["parameters"]["properties"].clear()
    assert TOOL_SPECS[0].parameters["properties"]


def test_provider_renderings_copy_every_level_and_equal_the_spec() -> None:
    """The schema copy (`_json_copy`) is a deep copy: equal, and no dict or list of it
    is the spec's own, at any depth; something that is not JSON is deep-copied."""
    spec = ToolSpec(
        name="t",
        description="d",
        parameters={
            "type": "object",
            "properties": {"a": {"enum": ["x", 1, 2.5, None, True]}},
            "extra": (["nested"],),
        },
    )
    for rendered in (
        spec.to_openai()["function"]["parameters"],
        spec.to_anthropic()["input_schema"],
    ):
        assert rendered == spec.parameters
        rendered["properties"]["a"]["enum"].append("changed")
        rendered["extra"][0].append("changed")
        assert spec.parameters["properties"]["a"]["enum"] == ["x", 1, 2.5, None, True]
        assert spec.parameters["extra"] == (["nested"],)


def test_read_only_specs_are_the_read_only_subset() -> None:
    assert {s.name for s in tool_specs(read_only=True)} == READ_ONLY_TOOLS
    assert len(tool_specs()) == 5


def test_tool_call_accepts_json_string_and_null_arguments() -> None:
    assert ToolCall(name="read_file", arguments='{"path": "a"}').arguments == {"path": "a"}
    assert ToolCall(name="list_files", arguments=None).arguments == {}
    assert ToolCall(name="list_files").arguments == {}


# -- dispatch never raises for bad calls ------------------------------------------------


def test_unknown_tool(ws: Workspace) -> None:
    result = call(ws, "delete_everything")
    assert not result.ok
    assert result.meta == {"error": "unknown_tool"}
    assert "read_file" in result.output


@pytest.mark.parametrize(
    ("name", "arguments", "expected"),
    [
        ("read_file", {}, "missing required argument 'path'"),
        ("read_file", {"path": "a", "mode": "rb"}, "unexpected argument 'mode'"),
        ("read_file", {"path": 5}, "'path' must be a string"),
        ("write_file", {"path": "a"}, "missing required argument 'content'"),
        ("write_file", {"path": "a", "content": ["x"]}, "'content' must be a string"),
        ("grep", {"path": "."}, "missing required argument 'pattern'"),
        ("run_command", {"command": None}, "'command' must be a string"),
        ("run_command", {"cmd": "ls"}, "unexpected argument 'cmd'"),
    ],
)
def test_malformed_arguments_are_results_not_exceptions(
    ws: Workspace, name: str, arguments: dict[str, Any], expected: str
) -> None:
    result = dispatch(ws, ToolCall(name=name, arguments=arguments), timeout_s=TIMEOUT_S)
    assert not result.ok
    assert result.meta == {"error": "bad_arguments"}
    assert expected in result.output
    assert "expected:" in result.output


def test_arguments_that_are_not_an_object(ws: Workspace) -> None:
    bad = ToolCall.model_construct(name="read_file", arguments="nope", id=None)  # type: ignore[arg-type]
    result = dispatch(ws, bad, timeout_s=TIMEOUT_S)
    assert not result.ok
    assert result.meta["error"] == "bad_arguments"


def test_call_id_is_echoed(ws: Workspace) -> None:
    result = dispatch(
        ws, ToolCall(name="list_files", arguments={}, id="call_7"), timeout_s=TIMEOUT_S
    )
    assert result.id == "call_7"
    assert result.ok


def test_optional_path_may_be_null(ws: Workspace) -> None:
    (ws.root / "f.txt").write_text("hit\n")
    assert call(ws, "list_files", path=None).output == "f.txt"
    assert call(ws, "grep", pattern="hit", path=None).output == "f.txt:1:hit"


def test_read_only_mode_refuses_writes_and_commands(ws: Workspace) -> None:
    for name, arguments in [
        ("write_file", {"path": "x.txt", "content": "x"}),
        ("run_command", {"command": "touch y.txt"}),
    ]:
        result = call(ws, name, read_only=True, **arguments)
        assert not result.ok
        assert result.meta == {"error": "read_only"}
    assert list(ws.root.iterdir()) == []
    (ws.root / "f.txt").write_text("ok\n")
    assert call(ws, "read_file", read_only=True, path="f.txt").output == "ok\n"
    assert call(ws, "list_files", read_only=True).ok
    assert call(ws, "grep", read_only=True, pattern="ok").ok


# -- read_file ------------------------------------------------------------------------


def test_read_file_roundtrip_with_write_file(ws: Workspace) -> None:
    written = call(ws, "write_file", path="pkg/deep/mod.py", content="X = 'é'\n")
    assert written.ok, written.output
    assert written.meta == {"path": "pkg/deep/mod.py", "bytes": 9, "created": True}
    result = call(ws, "read_file", path="pkg/deep/mod.py")
    assert result.ok
    assert result.output == "X = 'é'\n"
    assert result.meta["truncated"] is False
    again = call(ws, "write_file", path="pkg/deep/mod.py", content="Y = 2\n")
    assert again.meta["created"] is False
    assert "replaced" in again.output


def test_read_file_escapes_are_refused(ws: Workspace) -> None:
    for path in ("../outside.txt", "/etc/passwd", "a/../../x"):
        result = call(ws, "read_file", path=path)
        assert not result.ok
        assert result.meta == {"error": "path_escape"}


def test_symlink_made_by_run_command_cannot_be_read_through(ws: Workspace) -> None:
    made = call(ws, "run_command", command="ln -s /etc x")
    assert made.ok and made.meta["exit_code"] == 0
    result = call(ws, "read_file", path="x/passwd")
    assert not result.ok
    assert result.meta == {"error": "path_escape"}
    assert "outside the workspace" in result.output
    assert "root:" not in result.output


def test_read_file_missing_directory_fifo_and_binary(ws: Workspace) -> None:
    missing = call(ws, "read_file", path="nope.txt")
    assert (missing.ok, missing.meta) == (False, {"error": "not_found"})
    (ws.root / "d").mkdir()
    assert "use list_files" in call(ws, "read_file", path="d").output
    os.mkfifo(ws.root / "fifo")  # must not block the harness
    assert "not a regular file" in call(ws, "read_file", path="fifo").output
    (ws.root / "blob.bin").write_bytes(b"\x7fELF\x00\x01\x02")
    binary = call(ws, "read_file", path="blob.bin")
    assert binary.ok and binary.meta["binary"] is True
    assert "binary file" in binary.output


def test_read_file_is_capped(ws: Workspace, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tools, "MAX_READ_BYTES", 10)
    (ws.root / "big.txt").write_text("é" * 20)  # 40 bytes; the cap splits a character
    result = call(ws, "read_file", path="big.txt")
    assert result.ok
    assert result.meta == {"path": "big.txt", "bytes": 40, "truncated": True, "binary": False}
    assert result.output.startswith("ééééé\n[truncated: showing the first 10 of 40 bytes]")


# -- write_file -----------------------------------------------------------------------


def test_write_through_symlink_is_refused(ws: Workspace, tmp_path: Path) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("original")
    (ws.root / "link.txt").symlink_to(victim)
    result = call(ws, "write_file", path="link.txt", content="pwned")
    assert not result.ok
    assert "symlink" in result.output
    assert victim.read_text() == "original"


def test_write_into_symlinked_directory_outside_is_refused(ws: Workspace, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    call(ws, "run_command", command=f"ln -s {outside} door")
    result = call(ws, "write_file", path="door/planted.txt", content="x")
    assert not result.ok
    assert result.meta == {"error": "path_escape"}
    assert list(outside.iterdir()) == []


def test_write_file_refusals(ws: Workspace, monkeypatch: pytest.MonkeyPatch) -> None:
    assert call(ws, "write_file", path="/tmp/x", content="x").meta["error"] == "path_escape"
    assert call(ws, "write_file", path=".", content="x").meta["error"] == "invalid"
    assert "Unicode" in call(ws, "write_file", path="s.txt", content="\ud800").output
    (ws.root / "file").write_text("")
    under_file = call(ws, "write_file", path="file/child.txt", content="x")
    assert not under_file.ok and under_file.meta["error"] == "os_error"
    monkeypatch.setattr(tools, "MAX_WRITE_BYTES", 4)
    too_big = call(ws, "write_file", path="big.txt", content="12345")
    assert (too_big.ok, too_big.meta) == (False, {"error": "too_large"})
    assert not (ws.root / "big.txt").exists()


# -- list_files -----------------------------------------------------------------------


def test_list_files_is_recursive_sorted_and_relative(ws: Workspace) -> None:
    for rel in ("src/b.py", "src/a.py", "README.md", "src/sub/c.txt"):
        assert call(ws, "write_file", path=rel, content="x").ok
    (ws.root / "outside").symlink_to("/etc")
    result = call(ws, "list_files")
    assert result.output.splitlines() == [
        "README.md",
        "outside -> /etc",
        "src/",
        "src/a.py",
        "src/b.py",
        "src/sub/",
        "src/sub/c.txt",
    ]
    assert call(ws, "list_files", path="src/sub").output == "src/sub/c.txt"
    assert call(ws, "list_files", path="src/a.py").output == "src/a.py"
    assert call(ws, "list_files", path="nope").meta == {"error": "not_found"}
    assert not call(ws, "list_files", path="outside").ok


def test_list_files_empty_workspace(ws: Workspace) -> None:
    result = call(ws, "list_files")
    assert result.ok and result.output == "(no files under .)"


def test_list_files_is_capped(ws: Workspace, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tools, "MAX_LIST_ENTRIES", 3)
    for i in range(10):
        (ws.root / f"f{i}.txt").write_text("")
    result = call(ws, "list_files")
    lines = result.output.splitlines()
    assert lines[:3] == ["f0.txt", "f1.txt", "f2.txt"]
    assert "capped at 3 entries" in lines[3]
    assert len(lines) == 4
    assert result.meta == {"path": ".", "entries": 3, "truncated": True}


# -- grep -------------------------------------------------------------------------------


def test_grep_output_format(ws: Workspace) -> None:
    (ws.root / "pkg").mkdir()
    (ws.root / "pkg" / "a.py").write_text("def fizz():\n    return 'fizz'\r\nbuzz\n")
    (ws.root / "b.txt").write_text("no match\nFizz here\n")
    (ws.root / "bin.dat").write_bytes(b"fizz\x00\x00")
    result = call(ws, "grep", pattern=r"[Ff]izz")
    assert result.ok
    assert result.output.splitlines() == [
        "b.txt:2:Fizz here",
        "pkg/a.py:1:def fizz():",
        "pkg/a.py:2:    return 'fizz'",
    ]
    assert result.meta["files_skipped"] == 1  # the binary file
    assert call(ws, "grep", pattern="fizz", path="pkg/a.py").output.count("\n") == 1
    assert call(ws, "grep", pattern="zzz").output == "(no matches)"


def test_grep_invalid_regex_is_a_tool_error(ws: Workspace) -> None:
    result = call(ws, "grep", pattern="(unclosed")
    assert not result.ok
    assert result.meta == {"error": "invalid"}
    assert result.output.startswith("invalid regular expression")


def test_grep_path_escapes_are_refused(ws: Workspace) -> None:
    (ws.root / "etc").symlink_to("/etc")
    assert call(ws, "grep", pattern="root", path="etc").meta == {"error": "path_escape"}
    assert call(ws, "grep", pattern="root", path="..").meta == {"error": "path_escape"}
    # Walking the root never follows the link out either.
    assert call(ws, "grep", pattern="root").output == "(no matches)"


def test_grep_is_capped(ws: Workspace, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tools, "MAX_GREP_MATCHES", 5)
    monkeypatch.setattr(tools, "MAX_GREP_LINE_CHARS", 8)
    (ws.root / "many.txt").write_text("".join(f"hit {i} {'x' * 20}\n" for i in range(50)))
    result = call(ws, "grep", pattern="hit")
    lines = result.output.splitlines()
    assert len(lines) == 6
    assert lines[0] == "many.txt:1:hit 0 xx…"
    assert "output capped" in lines[-1]
    assert result.meta["truncated"] is True
    assert result.meta["matches"] == 5


def test_grep_skips_files_over_the_size_cap(ws: Workspace, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tools, "MAX_GREP_FILE_BYTES", 10)
    (ws.root / "big.txt").write_text("needle " * 10)
    (ws.root / "small.txt").write_text("needle\n")
    result = call(ws, "grep", pattern="needle")
    assert result.output == "small.txt:1:needle"
    assert result.meta["files_skipped"] == 1


# -- run_command ------------------------------------------------------------------------


def test_run_command_reports_output_and_exit_code(ws: Workspace) -> None:
    result = call(ws, "run_command", command="echo out; echo err >&2; exit 3")
    assert result.ok
    assert result.output == "out\nerr\n[exit code: 3]"
    assert result.meta["exit_code"] == 3
    assert result.meta["timed_out"] is False


def test_run_command_runs_in_the_workspace(ws: Workspace) -> None:
    result = call(ws, "run_command", command="pwd; echo hi > made.txt")
    # Confined, the workspace is mounted at /workspace: the harness's paths stay unseen.
    assert result.output.splitlines()[0] == "/workspace"
    assert result.meta["sandbox"] == "bwrap"
    assert (ws.root / "made.txt").read_text() == "hi\n"


def test_run_command_unconfined_runs_in_the_workspace_itself(ws: Workspace) -> None:
    result = dispatch(
        ws,
        ToolCall(name="run_command", arguments={"command": "pwd"}),
        timeout_s=TIMEOUT_S,
        sandbox=UNCONFINED,
    )
    assert result.output.splitlines()[0] == str(ws.root)
    assert result.meta["sandbox"] == "none"


def test_run_command_environment_is_scrubbed(
    ws: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai-SECRET")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-SECRET")
    monkeypatch.setenv("SOME_TOKEN", "tok-SECRET")
    result = call(ws, "run_command", command="env")
    assert result.ok
    assert "SECRET" not in result.output
    assert "API_KEY" not in result.output
    env = dict(line.split("=", 1) for line in result.output.splitlines()[:-1] if "=" in line)
    assert set(env) <= SCRUBBED_VARS | {"PWD", "SHLVL", "_", "OLDPWD"}  # set by sh itself
    assert env["HOME"] == "/workspace"
    assert env["LANG"] == env["LC_ALL"] == "C.UTF-8"
    assert env["PYTHONDONTWRITEBYTECODE"] == env["PYTHONNOUSERSITE"] == "1"
    assert env["TMPDIR"] == "/tmp"


def test_run_command_python_is_the_harness_interpreter(ws: Workspace) -> None:
    result = call(ws, "run_command", command="command -v python")
    assert result.output.splitlines()[0] == str(Path(sys.executable).parent / "python")


def test_run_command_temp_dir_is_private_and_gone_afterwards(ws: Workspace) -> None:
    marker = f"ilh-scratch-{os.getpid()}-{time.monotonic_ns()}"
    first = call(ws, "run_command", command=f'touch "$TMPDIR/{marker}"; ls "$TMPDIR"')
    assert first.ok and marker in first.output
    assert not (Path(tempfile.gettempdir()) / marker).exists()  # not the host's /tmp
    second = call(ws, "run_command", command='ls -A "$TMPDIR"')
    assert marker not in second.output  # each command gets a fresh one
    assert list(ws.root.iterdir()) == []


def test_run_command_unconfined_temp_dir_is_removed_afterwards(tmp_path: Path) -> None:
    result = run_shell('touch "$TMPDIR/scratch"; echo "$TMPDIR"', tmp_path, 10, sandbox=UNCONFINED)
    tmp_dir = Path(result.output.splitlines()[0])
    assert tmp_dir.parent == tmp_path
    assert not tmp_dir.exists()


def test_run_command_timeout_kills_the_process_group(ws: Workspace) -> None:
    started = time.monotonic()
    result = dispatch(
        ws,
        ToolCall(name="run_command", arguments={"command": "sleep 30.4242 & wait"}),
        timeout_s=1.0,
    )
    assert time.monotonic() - started < 15  # far below the child's 30 s
    assert result.ok
    assert result.meta["timed_out"] is True
    assert result.meta["exit_code"] != 0
    assert "timed out" in result.output
    assert none_running("sleep 30.4242"), "the sleep child survived the timeout"


def test_background_children_are_killed_when_the_shell_exits(ws: Workspace) -> None:
    started = time.monotonic()
    result = call(ws, "run_command", command="sleep 30.4343 & echo started")
    assert time.monotonic() - started < 15
    assert result.meta == {**result.meta, "exit_code": 0, "timed_out": False}
    assert result.output.startswith("started\n")
    assert none_running("sleep 30.4343")


def test_run_command_output_is_capped(ws: Workspace, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(commands, "MAX_OUTPUT_BYTES", 100)
    command = "echo FIRST; i=0; while [ $i -lt 200 ]; do echo line-$i; i=$((i+1)); done; echo LAST"
    result = call(ws, "run_command", command=command)
    assert result.ok
    assert result.meta["truncated"] is True
    assert result.meta["output_bytes"] > 1000
    assert result.output.startswith("FIRST\n")
    assert "bytes of output omitted" in result.output
    assert result.output.endswith("LAST\n[exit code: 0]")
    assert len(result.output) < 400


def test_run_command_refusals(ws: Workspace) -> None:
    assert call(ws, "run_command", command="  ").meta == {"error": "invalid"}
    assert call(ws, "run_command", command="echo \x00").meta == {"error": "invalid"}
    no_time = dispatch(ws, ToolCall(name="run_command", arguments={"command": "ls"}), timeout_s=0)
    assert no_time.meta == {"error": "no_time"}


# -- the runner on its own (the grader's tool checks use it) -----------------------------


def test_run_shell_pass_and_fail(tmp_path: Path) -> None:
    ok = run_shell("true", tmp_path, 10)
    assert isinstance(ok, CommandResult)
    assert ok.passed and ok.exit_code == 0 and not ok.timed_out
    failed = run_shell("exit 1", tmp_path, 10)
    assert not failed.passed and failed.exit_code == 1


def test_run_shell_timed_out_never_passes(tmp_path: Path) -> None:
    result = run_shell("sleep 30", tmp_path, 0.3)
    assert result.timed_out and not result.passed
    assert result.duration_s < 15


def test_run_shell_extra_env_is_added(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LEAK", "no")
    result = run_shell('echo "$GRADER_MODE/$LEAK/"', tmp_path, 10, {"GRADER_MODE": "yes"})
    assert result.output == "yes//\n"


def test_run_shell_rejects_bad_timeouts(tmp_path: Path) -> None:
    for bad in (0.0, -1.0, float("inf"), float("nan")):
        with pytest.raises(ValueError):
            run_shell("true", tmp_path, bad)


def test_scrubbed_env_starts_empty(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-x")
    env = scrubbed_env(tmp_path, tmp_path / "t")
    assert set(env) == SCRUBBED_VARS
    assert env["PATH"].split(":")[0] == str(Path(sys.executable).parent)


def test_run_shell_falls_back_when_cwd_is_not_writable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Simulated rather than chmod-ed: tests may run as root, who can write anywhere.
    real_mkdtemp = tempfile.mkdtemp

    def refuse_in_cwd(prefix: str, dir: str | Path | None = None) -> str:
        if dir is not None:
            raise PermissionError(13, "Permission denied")
        return str(real_mkdtemp(prefix=prefix))

    monkeypatch.setattr(tempfile, "mkdtemp", refuse_in_cwd)
    result = run_shell('echo "$TMPDIR"', tmp_path, 10, sandbox=UNCONFINED)
    assert result.passed
    tmp_dir = Path(result.output.strip())
    assert not tmp_dir.is_relative_to(tmp_path)
    assert not tmp_dir.exists()


def test_grep_names_the_files_it_matched_exactly(ws: Workspace) -> None:
    """A file name may hold a newline and `name:n:` text; the matched files are given in
    the result's meta so nobody has to parse them back out of the output."""
    tricky = "a\nREADME.md:1:looks like a hit"
    (ws.root / tricky).write_text("hit\n")
    (ws.root / "README.md").write_text("no match here\n")
    result = call(ws, "grep", pattern="hit")
    assert result.meta["matched_files"] == [tricky]
