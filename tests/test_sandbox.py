"""The agent's hands in a cage: every attack a hostile command tried on the unconfined
runner (issue 9), run as the real user of this machine (root) against the real sandbox.

Each test would have failed on the unconfined runner: there the command ran with the
harness's rights, network, files and processes.
"""

from __future__ import annotations

import contextlib
import os
import socket
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.workspace import cgroups as cgroups_module
from harness.workspace import sandbox as sandbox_module
from harness.workspace.commands import run_shell
from harness.workspace.folder import Workspace
from harness.workspace.sandbox import (
    CONFINED,
    UNCONFINED,
    SandboxPolicy,
    SandboxUnavailable,
    sandbox_report,
)
from harness.workspace.tools import ToolCall, dispatch
from tests.harness_helpers import none_running

TIMEOUT_S = 20.0


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    return Workspace.create(tmp_path / "task" / "runs" / "r1" / "workspace")


def sh(ws: Workspace, command: str, policy: SandboxPolicy = CONFINED) -> str:
    result = run_shell(command, ws.root, TIMEOUT_S, sandbox=policy)
    assert result.sandbox == ("bwrap" if policy.confined else "none")
    return result.output


@pytest.fixture
def listener() -> Iterator[tuple[int, list[bytes]]]:
    """A TCP listener on 127.0.0.1 that keeps whatever it is sent."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    server.settimeout(0.2)
    received: list[bytes] = []
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except OSError:
                continue
            with conn:
                conn.settimeout(2)
                with contextlib.suppress(OSError):
                    received.append(conn.recv(1024))

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield server.getsockname()[1], received
    stop.set()
    thread.join(2)
    server.close()


_SEND = (
    "python -c \"import socket,sys; s=socket.create_connection(('127.0.0.1', {port}), 2); "
    "s.sendall(b'EXFIL'); print('sent')\""
)


def test_no_network_by_default(ws: Workspace, listener: tuple[int, list[bytes]]) -> None:
    port, received = listener
    output = sh(ws, _SEND.format(port=port))
    assert "sent" not in output
    time.sleep(0.3)
    assert received == []


def test_network_host_is_an_explicit_opt_in(
    ws: Workspace, listener: tuple[int, list[bytes]]
) -> None:
    port, received = listener
    output = sh(ws, _SEND.format(port=port), SandboxPolicy(network="host"))
    assert "sent" in output
    deadline = time.monotonic() + 3
    while not received and time.monotonic() < deadline:
        time.sleep(0.05)
    assert received == [b"EXFIL"]


def test_writes_outside_the_workspace_go_nowhere(ws: Workspace, tmp_path: Path) -> None:
    marker = f"ilh-escape-{os.getpid()}-{time.monotonic_ns()}"
    home = Path.home()
    task_folder = tmp_path / "task"
    targets = [home / marker, Path("/tmp") / marker, Path("/var/tmp") / marker]
    targets.append(task_folder / marker)
    script = "; ".join(f"echo x > {t} 2>/dev/null" for t in targets)
    sh(ws, script + "; echo x > ../" + marker + " 2>/dev/null; true")
    for target in [*targets, ws.root.parent / marker]:
        assert not target.exists(), target
    # What is written in the workspace lands there, and only there.
    sh(ws, f"echo inside > {marker}")
    assert (ws.root / marker).read_text() == "inside\n"


def test_the_harness_home_task_folder_and_record_are_invisible(
    ws: Workspace, tmp_path: Path
) -> None:
    (tmp_path / "task" / "task.toml").write_text("[task]\nid='secret-task'\n")
    (tmp_path / "task" / "runs.db").write_text("the record")
    output = sh(
        ws,
        f"ls -A {Path.home()} | head; ls {tmp_path / 'task'} 2>&1; "
        f"cat {tmp_path / 'task' / 'runs.db'} 2>&1; ls /work 2>&1 | head -3",
    )
    assert "secret-task" not in output and "the record" not in output
    assert "task.toml" not in output and "runs.db" not in output.replace(
        str(tmp_path / "task" / "runs.db"), ""
    )


def test_the_harness_processes_are_invisible(
    ws: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    canary = f"ilh-canary-{time.monotonic_ns()}"
    monkeypatch.setenv("OPENAI_API_KEY", canary)  # in the harness's own environment
    output = sh(
        ws,
        "echo ppid=$PPID; ls -l /proc/$PPID/cwd 2>&1;"
        " cat /proc/$PPID/environ 2>&1 | tr '\\0' '\\n';"
        " for p in /proc/[0-9]*; do cat $p/environ 2>/dev/null | tr '\\0' '\\n'; "
        "readlink $p/cwd; done; ps ax",
    )
    assert canary not in output
    assert str(ws.root) not in output  # not even the workspace's real path
    assert "ppid=1\n" in output  # its parent is the sandbox's own init, nothing of ours


def test_killing_the_parent_harms_nobody(ws: Workspace) -> None:
    output = sh(ws, "kill -9 $PPID; kill -9 -1; echo survived-kill")
    assert "survived-kill" in output or output  # the command itself may die with its init
    # This process (the harness) is alive, and so is the next command.
    assert "next" in sh(ws, "echo next")


def test_setsid_leaves_nothing_alive(ws: Workspace) -> None:
    marker = "sleep 31.2718"
    sh(ws, f"setsid {marker} >/dev/null 2>&1 & nohup {marker} >/dev/null 2>&1 & echo started")
    assert none_running(marker)


def test_background_process_that_outlives_a_timeout_is_killed(ws: Workspace) -> None:
    marker = "sleep 32.1828"
    result = run_shell(f"setsid {marker} & wait", ws.root, 0.5)
    assert result.timed_out
    assert none_running(marker)


def test_process_count_is_limited(ws: Workspace) -> None:
    policy = SandboxPolicy(processes=50)
    output = sh(
        ws,
        'python -c "\nimport subprocess\nstarted = 0\nfor _ in range(300):\n'
        "    try:\n        subprocess.Popen(['sleep', '3'])\n        started += 1\n"
        "    except OSError:\n        pass\nprint('started', started)\"",
        policy,
    )
    alive = int(output.rsplit("started ", 1)[1].split()[0])
    assert 10 < alive <= 50


def test_file_size_is_limited(ws: Workspace) -> None:
    policy = SandboxPolicy(file_size=1 << 20)
    sh(ws, "head -c 5000000 /dev/zero > big 2>/dev/null; true", policy)
    assert (ws.root / "big").stat().st_size <= 1 << 20


def test_cpu_time_is_limited(ws: Workspace) -> None:
    started = time.monotonic()
    result = run_shell(
        'python -c "while True: pass"', ws.root, TIMEOUT_S, sandbox=SandboxPolicy(cpu_seconds=1)
    )
    assert not result.passed and not result.timed_out
    assert time.monotonic() - started < TIMEOUT_S / 2


def test_bind_mount_as_root_cannot_reach_outside(ws: Workspace, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "precious").write_text("keep")
    output = sh(
        ws,
        f"mkdir -p door; mount --bind {outside} door 2>&1; mount --bind / door 2>&1;"
        " unshare -rm sh -c 'mount --bind /usr door' 2>&1; ls door; echo rc=$?",
    )
    assert "precious" not in output
    assert list((ws.root / "door").iterdir()) == []
    # write_file through the would-be mount writes into the workspace, nothing else.
    done = dispatch(
        ws,
        ToolCall(name="write_file", arguments={"path": "door/precious", "content": "x"}),
        timeout_s=TIMEOUT_S,
    )
    assert done.ok
    assert (outside / "precious").read_text() == "keep"


def test_system_and_harness_packages_are_read_only(ws: Workspace) -> None:
    site = next(p for p in sys.path if p.endswith("site-packages"))
    output = sh(
        ws,
        f"echo x > {site}/evil.pth 2>&1; echo x > /usr/evil 2>&1; cat /etc/shadow 2>&1;"
        " python -c 'print(1+1)'",
    )
    assert not Path(site, "evil.pth").exists()
    assert not Path("/usr/evil").exists()
    assert "root:" not in output
    assert output.strip().endswith("2")  # the interpreter itself still works


def test_capabilities_are_dropped(ws: Workspace) -> None:
    output = sh(ws, "grep -E '^Cap(Eff|Prm)' /proc/self/status")
    for line in output.splitlines():
        assert line.split()[1].strip("0") == "", line


def test_without_a_sandbox_commands_are_refused_with_the_reason(
    ws: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sandbox_module, "find_bwrap", lambda: None)
    sandbox_module._probe.cache_clear()
    try:
        with pytest.raises(SandboxUnavailable) as raised:
            run_shell("true", ws.root, TIMEOUT_S)
        assert "bwrap" in str(raised.value) and "--sandbox none" in str(raised.value)
        refused = dispatch(
            ws, ToolCall(name="run_command", arguments={"command": "touch made"}), timeout_s=5
        )
        assert not refused.ok and refused.meta["error"] == "no_sandbox"
        assert "--sandbox none" in refused.output
        assert not (ws.root / "made").exists()
        report = sandbox_report(CONFINED)
        assert report["available"] is False and "bwrap" in str(report["reason"])
        # Explicitly unconfined still runs, and says so.
        assert run_shell("true", ws.root, TIMEOUT_S, sandbox=UNCONFINED).sandbox == "none"
    finally:
        sandbox_module._probe.cache_clear()


def test_an_interpreter_under_tmp_stays_visible(
    ws: Workspace, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A CI checkout's venv lives under /tmp: the private /tmp must not hide it."""
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "marker").write_text("visible")
    assert str(venv).startswith("/tmp/")
    monkeypatch.setattr(sandbox_module, "interpreter_roots", lambda: [venv])
    assert sh(ws, f"cat {venv}/bin/marker; echo x > {venv}/bin/w 2>&1").startswith("visible")
    assert not (venv / "bin" / "w").exists()


def test_kernel_wide_settings_are_read_only(ws: Workspace) -> None:
    """As root, the sandbox's root is the host's: a writable core_pattern would run any
    program as real root outside every namespace. Nothing under /proc/sys may change."""
    before = Path("/proc/sys/kernel/core_pattern").read_text()
    output = sh(
        ws,
        "echo '|/bin/true' > /proc/sys/kernel/core_pattern 2>&1; "
        "echo 1 > /proc/sys/kernel/printk_ratelimit_burst 2>&1; echo done",
    )
    assert Path("/proc/sys/kernel/core_pattern").read_text() == before
    assert "done" in output


def test_a_cgroup_that_cannot_be_made_refuses_the_command(
    ws: Workspace, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Root ignores RLIMIT_NPROC: without its pids cgroup a command would run unlimited."""
    root = tmp_path / "pids"
    root.mkdir()
    (root / "cgroup.procs").write_text("")
    (root / "pids.max").write_text("max")
    monkeypatch.setattr(cgroups_module, "_V1", tmp_path)
    real_mkdir = Path.mkdir

    def refuse(self: Path, *args: object, **kwargs: object) -> None:
        if self.parent == root:
            raise PermissionError(13, "Permission denied")
        real_mkdir(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(Path, "mkdir", refuse)
    with pytest.raises(SandboxUnavailable, match="pids cgroup"):
        run_shell("true", ws.root, TIMEOUT_S)
    assert sorted(p.name for p in root.iterdir()) == ["cgroup.procs", "pids.max"]
