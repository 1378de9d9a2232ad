"""The file tools cannot be led outside the workspace: not through a hard link, not
through a symlink planted or swapped in while they work (races), not by a path too long,
too deep, with a NUL byte or an over-long name (clean tool errors, never a traceback)."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import stat
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from harness.record.events import EventKind
from harness.record.store import RunStore
from harness.workspace.confined import MAX_WALK_DEPTH
from harness.workspace.folder import Workspace
from harness.workspace.tools import ToolCall, ToolResult, dispatch
from tests.harness_helpers import ilh

SECRET = "OUTSIDE-SECRET-CONTENT"


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    return Workspace.create(tmp_path / "ws")


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    folder = tmp_path / "outside"
    folder.mkdir()
    (folder / "secret.txt").write_text(SECRET + "\n")
    return folder


def run(ws: Workspace, name: str, **arguments: Any) -> ToolResult:
    return dispatch(ws, ToolCall(name=name, arguments=arguments), timeout_s=10)


# -- hard links ---------------------------------------------------------------------------


def test_a_hard_link_to_an_outside_file_is_not_read_nor_grepped(
    ws: Workspace, outside: Path
) -> None:
    os.link(outside / "secret.txt", ws.root / "alias.txt")
    read = run(ws, "read_file", path="alias.txt")
    assert (read.ok, read.meta) == (False, {"error": "path_escape"})
    assert "hard link" in read.output and SECRET not in read.output
    grepped = run(ws, "grep", pattern="SECRET")
    assert grepped.output == "(no matches)" and grepped.meta["files_skipped"] == 1
    assert SECRET not in run(ws, "grep", pattern=".", path="alias.txt").output


def test_hard_links_all_inside_the_workspace_are_read(ws: Workspace) -> None:
    (ws.root / "a.txt").write_text("shared inside\n")
    (ws.root / "sub").mkdir()
    os.link(ws.root / "a.txt", ws.root / "sub" / "b.txt")
    assert run(ws, "read_file", path="sub/b.txt").output == "shared inside\n"
    assert run(ws, "grep", pattern="shared").meta["matches"] == 2


# -- symlinks -----------------------------------------------------------------------------


def test_symlinks_are_followed_only_while_they_stay_inside(ws: Workspace, outside: Path) -> None:
    (ws.root / "real").mkdir()
    (ws.root / "real" / "f.txt").write_text("inside\n")
    (ws.root / "rel").symlink_to("real")
    (ws.root / "abs_host").symlink_to(ws.root / "real")
    (ws.root / "abs_box").symlink_to("/workspace/real")  # as a command in the sandbox made it
    (ws.root / "door").symlink_to(outside)
    (ws.root / "up").symlink_to("../outside")
    (ws.root / "real" / "back").symlink_to("../../outside/secret.txt")
    for path in ("rel/f.txt", "abs_host/f.txt", "abs_box/f.txt"):
        assert run(ws, "read_file", path=path).output == "inside\n", path
    for path in ("door/secret.txt", "up/secret.txt", "real/back"):
        for tool in ("read_file", "list_files"):
            result = run(ws, tool, path=path)
            assert result.meta == {"error": "path_escape"}, (tool, path)
        assert run(ws, "grep", pattern=".", path=path).meta == {"error": "path_escape"}
    assert SECRET not in run(ws, "grep", pattern=".").output
    wrote = run(ws, "write_file", path="door/new.txt", content="x")
    assert wrote.meta == {"error": "path_escape"} and sorted(os.listdir(outside)) == ["secret.txt"]


def test_write_replaces_a_name_and_keeps_the_files_mode(ws: Workspace) -> None:
    script = ws.root / "run.sh"
    script.write_text("#!/bin/sh\necho old\n")
    script.chmod(0o755)
    assert run(ws, "write_file", path="run.sh", content="#!/bin/sh\necho new\n").ok
    assert stat.S_IMODE(script.stat().st_mode) == 0o755
    assert script.read_text().endswith("new\n")
    assert sorted(os.listdir(ws.root)) == ["run.sh"]  # no temporary file left behind


def _flip(make_real: Callable[[], None], make_link: Callable[[], None]) -> Iterator[None]:
    while True:
        for step in (make_link, make_real):
            with contextlib.suppress(OSError):
                step()
            time.sleep(0.0005)  # each state lasts a while, whatever the scheduler does
            yield None


def _folder_flipper(real: Path, target: Path) -> tuple[Callable[[], None], Callable[[], None]]:
    """Steps that swap the folder `real` for a symlink to `target` and back. The tools
    may recreate `real` while it is missing (a write makes parent folders): the steps
    put things right again, so the race goes on for the whole test."""
    parked = real.with_name(real.name + ".parked")

    def make_link() -> None:
        if real.is_symlink():
            return
        if parked.exists():
            shutil.rmtree(parked)
        os.rename(real, parked)
        os.symlink(target, real)

    def make_real() -> None:
        if real.is_symlink():
            os.unlink(real)
        elif real.exists():
            shutil.rmtree(real)
        if parked.exists():
            os.rename(parked, real)
        else:
            real.mkdir()

    return make_real, make_link


def _flipping(steps: Iterator[None]) -> tuple[threading.Thread, threading.Event]:
    stop = threading.Event()

    def loop() -> None:
        while not stop.is_set():
            next(steps)

    thread = threading.Thread(target=loop, daemon=True)
    thread.start()
    return thread, stop


def test_race_a_folder_swapped_for_a_symlink_never_puts_bytes_outside(
    ws: Workspace, tmp_path: Path
) -> None:
    victim = tmp_path / "victim"
    victim.mkdir()
    (ws.root / "d").mkdir()
    thread, stop = _flipping(_flip(*_folder_flipper(ws.root / "d", victim)))
    outcomes: dict[str, int] = {}
    try:
        deadline = time.monotonic() + 3
        i = 0
        while time.monotonic() < deadline:
            result = run(ws, "write_file", path=f"d/f{i % 50}.txt", content="x")
            key = "ok" if result.ok else result.meta["error"]
            outcomes[key] = outcomes.get(key, 0) + 1
            i += 1
            assert list(victim.iterdir()) == []
    finally:
        stop.set()
        thread.join()
    assert list(victim.iterdir()) == []
    # Both sides of the race were met: some writes landed (inside), some were refused.
    assert outcomes.get("ok", 0) > 0 and sum(outcomes.values()) > outcomes.get("ok", 0)


def test_race_a_file_swapped_for_a_symlink_is_never_written_through(
    ws: Workspace, outside: Path
) -> None:
    target = ws.root / "t.txt"
    target.write_text("start")

    def make_link() -> None:
        os.unlink(target)
        os.symlink(outside / "secret.txt", target)

    def make_real() -> None:
        os.unlink(target)
        target.write_text("real")

    thread, stop = _flipping(_flip(make_real, make_link))
    try:
        deadline = time.monotonic() + 2
        while time.monotonic() < deadline:
            run(ws, "write_file", path="t.txt", content="PWNED")
            assert (outside / "secret.txt").read_text() == SECRET + "\n"
    finally:
        stop.set()
        thread.join()
    assert (outside / "secret.txt").read_text() == SECRET + "\n"


def test_race_reads_never_show_an_outside_file(ws: Workspace, outside: Path) -> None:
    (ws.root / "d").mkdir()
    (ws.root / "d" / "secret.txt").write_text("inside\n")
    thread, stop = _flipping(_flip(*_folder_flipper(ws.root / "d", outside)))
    seen_inside = 0
    try:
        deadline = time.monotonic() + 3
        while time.monotonic() < deadline:
            for name, args in (
                ("read_file", {"path": "d/secret.txt"}),
                ("grep", {"pattern": ".", "path": "d"}),
                ("grep", {"pattern": "."}),
                ("list_files", {"path": "d"}),
            ):
                result = run(ws, name, **args)
                assert SECRET not in result.output, (name, result.output)
                seen_inside += "inside" in result.output
    finally:
        stop.set()
        thread.join()
    assert seen_inside > 0


# -- hostile paths ------------------------------------------------------------------------

HOSTILE_PATHS = {
    "3000 characters nested": "/".join(["abcdefghijk"] * 250),
    "3000 characters of single letters": "/".join(["a"] * 1500),
    "500 components": "/".join(["d"] * 500),
    "a NUL byte": "a/b\x00c.txt",
    "a name over 255 bytes": "n" * 300,
    "a name over 255 bytes in UTF-8": "é" * 200,
}


@pytest.mark.parametrize("path", HOSTILE_PATHS.values(), ids=HOSTILE_PATHS.keys())
@pytest.mark.parametrize("tool", ["read_file", "write_file", "list_files", "grep"])
def test_hostile_paths_are_clean_tool_errors(ws: Workspace, tool: str, path: str) -> None:
    arguments: dict[str, Any] = {"path": path}
    if tool == "write_file":
        arguments["content"] = "x"
    if tool == "grep":
        arguments["pattern"] = "x"
    result = run(ws, tool, **arguments)
    assert not result.ok
    assert result.meta["error"] == "invalid"
    assert "Traceback" not in result.output and len(result.output) < 600


def _deep_tree(root: Path, depth: int) -> None:
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for _ in range(depth):
            os.mkdir("d", dir_fd=fd)
            child = os.open("d", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = child
        with open(os.open("leaf.txt", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd), "w") as f:
            f.write("needle\n")
    finally:
        os.close(fd)


def _remove_deep_tree(top: Path) -> None:
    # Iteratively (Python 3.11's rmtree recurses once per level).
    while (top / "d").exists():
        path = top
        while (path / "d").exists():
            path = path / "d"
        for entry in path.iterdir():
            entry.unlink()
        if path == top:
            break
        os.rmdir(path)


def test_a_tree_deeper_than_the_walk_limit_is_listed_and_searched_cleanly(ws: Workspace) -> None:
    _deep_tree(ws.root, MAX_WALK_DEPTH + 40)
    try:
        listing = run(ws, "list_files")
        assert listing.ok and listing.meta["entries"] == MAX_WALK_DEPTH
        searched = run(ws, "grep", pattern="needle")
        assert searched.ok and searched.output == "(no matches)"
        shallow = "/".join(["d"] * 40)
        assert run(ws, "write_file", path=shallow + "/new.txt", content="needle").ok
        assert run(ws, "grep", pattern="needle").meta["matches"] == 1
    finally:
        _remove_deep_tree(ws.root)


def test_ilh_run_with_an_agent_sending_hostile_paths_ends_normally(tmp_path: Path) -> None:
    task = tmp_path / "task"
    (task / "workspace").mkdir(parents=True)
    (task / "workspace" / "README.md").write_text("hello\n")
    calls = [
        {"name": "write_file", "arguments": {"path": p, "content": "x"}}
        for p in HOSTILE_PATHS.values()
    ]
    calls += [{"name": "read_file", "arguments": {"path": p}} for p in HOSTILE_PATHS.values()]
    calls += [
        {"name": "run_command", "arguments": {"command": "mkdir -p $(printf 'd/%.0s' $(seq 300))"}},
        {"name": "list_files", "arguments": {}},
        {"name": "grep", "arguments": {"pattern": "x"}},
    ]
    usage = {"input_tokens": 10, "output_tokens": 10}
    blocked = "::STATUS{@TASK|state:blocked|reason:paths|by:@AGENT|authority:proposal}"
    script = [
        {"text": "Trying paths.", "tool_calls": calls, "usage": usage},
        {"text": blocked, "usage": usage},
    ]
    (task / "agent.jsonl").write_text("".join(json.dumps(line) + "\n" for line in script))
    (task / "task.toml").write_text(
        '[task]\nid = "paths"\nobjective = "Try paths."\nworkspace = "workspace"\n'
        '[budget.rounds]\nlimit = 3\n[agent]\nmodel = "scripted:agent.jsonl"\n'
    )
    done = ilh("run", str(task / "task.toml"), "--json", "--store", "runs.db", cwd=tmp_path)
    assert "Traceback" not in done.stderr, done.stderr
    assert done.returncode == 3, done.stderr
    result = json.loads(done.stdout)
    assert result["final"]["state"] == "blocked"
    with RunStore(tmp_path / "runs.db") as store:
        assert store.verify(result["run_id"]).ok
        tools_run = [
            e.payload for e in store.events(result["run_id"]) if e.kind is EventKind.TOOL_CALL
        ]
    assert len(tools_run) == len(calls)
    assert all(not t["ok"] for t in tools_run[: 2 * len(HOSTILE_PATHS)])
    assert tools_run[-2]["ok"] and tools_run[-1]["ok"]
    _remove_deep_tree(Path(result["workspace"]))
