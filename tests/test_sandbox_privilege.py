"""The sandbox against an agent that tries to keep, gain or use privilege (issue 9, red
team). Run as this machine's real user, root: a user namespace alone left a command
host root (setuid-root files built in the workspace, root's session keyring, unbounded
tmpfs and memory). Each test here passed as an attack before the fix it names."""

from __future__ import annotations

import ctypes
import errno
import os
import stat
import struct
from pathlib import Path

import pytest

from harness.workspace import cgroups as cgroups_module
from harness.workspace.commands import run_shell
from harness.workspace.folder import Workspace
from harness.workspace.sandbox import CONFINED, SandboxPolicy
from harness.workspace.sandbox_user import UID_VARIABLE, hand_over, sandbox_user
from harness.workspace.seccomp import _ARCHES, DENIED, filter_program
from harness.workspace.tools import ToolCall, dispatch

TIMEOUT_S = 30.0
ROOT = os.geteuid() == 0
as_root = pytest.mark.skipif(not ROOT, reason="the privilege drop applies to a root harness")


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    # Under pytest's 0700 tmp folder: the sandbox user cannot traverse it by path.
    return Workspace.create(tmp_path / "task" / "runs" / "r1" / "workspace")


def sh(ws: Workspace, command: str, policy: SandboxPolicy = CONFINED) -> str:
    result = run_shell(command, ws.root, TIMEOUT_S, sandbox=policy)
    assert result.sandbox == "bwrap"
    return result.output


def py(code: str) -> str:
    return "python3 -c " + repr(code).replace("\\n", "\n")


# --- who the command is on the host -------------------------------------------------------


@as_root
def test_a_root_harness_runs_commands_as_an_unprivileged_host_user(ws: Workspace) -> None:
    output = sh(ws, "id -u; echo made > made.txt; sleep 0")
    assert output.split()[0] != "0"
    owner = (ws.root / "made.txt").stat().st_uid
    assert owner == sandbox_user().uid and owner != 0


@as_root
def test_the_sandbox_user_can_be_chosen(ws: Workspace, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(UID_VARIABLE, "4242")
    sh(ws, "echo x > chosen.txt")
    assert (ws.root / "chosen.txt").stat().st_uid == 4242


def test_files_the_harness_wrote_stay_writable_by_the_command(ws: Workspace) -> None:
    """The file tools write as the harness (root): the command must still edit them."""
    target = ws.root / "sub" / "notes.txt"
    target.parent.mkdir()
    target.write_text("one\n")
    target.chmod(0o600)
    output = sh(ws, "echo two >> sub/notes.txt && echo appended; mkdir sub/more && echo mk")
    assert "appended" in output and "mk" in output
    assert target.read_text() == "one\ntwo\n"


def test_what_the_file_tools_write_between_commands_stays_the_commands(ws: Workspace) -> None:
    """After the first command the tree is the sandbox user's and is not walked again
    before each command: what write_file creates (folders too) must be given to it."""
    sh(ws, "true")
    for path in ("new.txt", "deep/er/new.txt"):
        call = ToolCall(name="write_file", arguments={"path": path, "content": "one\n"})
        assert dispatch(ws, call, timeout_s=TIMEOUT_S).ok
    output = sh(ws, "echo two >> new.txt && echo two >> deep/er/new.txt && echo ok")
    assert "ok" in output, output
    assert (ws.root / "deep" / "er" / "new.txt").read_text() == "one\ntwo\n"


def test_a_setuid_program_built_inside_loses_its_bit(ws: Workspace) -> None:
    sh(ws, "cp /bin/sh ./shell && chmod 6755 ./shell; mkdir d; cp /bin/sh d/x; chmod 4755 d/x")
    for path in (ws.root / "shell", ws.root / "d" / "x"):
        mode = path.lstat().st_mode
        assert not mode & (stat.S_ISUID | stat.S_ISGID), oct(mode)
        assert path.lstat().st_uid != 0 or not ROOT


def test_hand_over_never_follows_a_link(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.write_text("x")
    outside.chmod(0o4755)
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "link").symlink_to(outside)
    (tree / "dirlink").symlink_to(tmp_path)
    before = outside.stat()
    hand_over(tree, sandbox_user())
    after = outside.stat()
    assert (after.st_mode, after.st_uid) == (before.st_mode, before.st_uid)


# --- the kernel surfaces the filter closes ---------------------------------------------------

_CALLS = """
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
def call(nr, *args):
    r = libc.syscall(ctypes.c_long(nr), *[ctypes.c_long(a) for a in args])
    return "ok" if r >= 0 else os.strerror(ctypes.get_errno())
for name, nr, args in CALLS:
    print(name, call(nr, *args))
"""


def test_keyring_namespace_mount_and_bpf_calls_are_refused(ws: Workspace) -> None:
    numbers = _ARCHES[os.uname().machine].numbers
    calls = [
        ("keyctl", numbers["keyctl"], (0, -3, 0)),  # KEYCTL_GET_KEYRING_ID of the session
        ("add_key", numbers["add_key"], (0, 0, 0, 0, -3)),
        ("unshare", numbers["unshare"], (0x10000000,)),
        ("mount", numbers["mount"], (0, 0, 0, 0, 0)),
        ("bpf", numbers["bpf"], (0, 0, 0)),
        ("io_uring_setup", numbers["io_uring_setup"], (1, 0)),
        ("clone3", numbers["clone3"], (0, 0)),
    ]
    script = _CALLS.replace("CALLS", repr(calls))
    out = sh(ws, f"python3 - <<'EOF'\n{script}\nEOF\nunshare -r true 2>&1; echo rc=$?")
    lines = dict(line.split(" ", 1) for line in out.splitlines() if " " in line)
    for name in ("keyctl", "add_key", "unshare", "mount", "bpf", "io_uring_setup"):
        assert lines.get(name) == os.strerror(errno.EPERM), (name, out)
    assert lines.get("clone3") == os.strerror(errno.ENOSYS), out
    assert "rc=0" not in out


def test_the_harness_keyring_is_out_of_reach(ws: Workspace) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    canary = f"ilh-canary-{os.getpid()}".encode()
    key = libc.syscall(
        ctypes.c_long(_ARCHES[os.uname().machine].numbers["add_key"]),
        b"user",
        canary,
        b"keyring-secret-0123456789",
        ctypes.c_size_t(25),
        ctypes.c_long(-3),  # KEY_SPEC_SESSION_KEYRING
    )
    if key < 0:
        pytest.skip("no key store here")
    output = sh(ws, "cat /proc/keys 2>&1; echo end")
    assert canary.decode() not in output and "keyring-secret" not in output


def test_subprocesses_of_other_abis_are_killed_and_namespaces_refused() -> None:
    """The filter, run by a small interpreter of the instructions it uses."""
    for machine, arch in _ARCHES.items():
        prog = filter_program(machine)
        nr = arch.numbers
        assert run_filter(prog, arch.audit, 0)[0] == "allow"  # read / io_setup
        assert run_filter(prog, arch.audit, 63)[0] == "allow"  # uname / read
        for name in DENIED:
            assert run_filter(prog, arch.audit, nr[name]) == ("errno", errno.EPERM), name
        assert run_filter(prog, arch.audit, nr["clone"], 0x10000000) == ("errno", errno.EPERM)
        assert run_filter(prog, arch.audit, nr["clone"], 0x00000011)[0] == "allow"  # fork
        assert run_filter(prog, arch.audit, nr["clone3"]) == ("errno", errno.ENOSYS)
        assert run_filter(prog, 0x40000003, 0)[0] == "kill"  # i386 via int 0x80
        if arch.x32:
            assert run_filter(prog, arch.audit, 0x40000000 | nr["keyctl"])[0] == "kill"


def run_filter(prog: bytes, arch: int, nr: int, arg0: int = 0) -> tuple[str, int]:
    data = struct.pack("=iIQ6Q", nr, arch, 0, arg0, 0, 0, 0, 0, 0)
    ops = [struct.unpack_from("=HBBI", prog, i) for i in range(0, len(prog), 8)]
    pc, acc = 0, 0
    while True:
        code, jt, jf, k = ops[pc]
        if code == 0x20:
            acc = struct.unpack_from("=I", data, k)[0]
            pc += 1
        elif code in (0x15, 0x35, 0x45):
            hit = acc == k if code == 0x15 else (acc >= k if code == 0x35 else bool(acc & k))
            pc += 1 + (jt if hit else jf)
        elif code == 0x06:
            action = k & 0xFFFF0000
            if action == 0x7FFF0000:
                return ("allow", 0)
            if action == 0x00050000:
                return ("errno", k & 0xFFFF)
            return ("kill", k)
        else:
            raise AssertionError(f"unknown op {code:#x}")


# --- space and memory --------------------------------------------------------------------


def test_temporary_filesystems_are_bounded_and_dev_is_read_only(ws: Workspace) -> None:
    policy = SandboxPolicy(tmp_size=8 * 1024 * 1024)
    output = sh(
        ws,
        "for d in /tmp /var/tmp /dev/shm; do "
        "dd if=/dev/zero of=$d/fill bs=1M count=32 2>/dev/null; "
        "echo $d=$(du -m $d/fill | cut -f1); "
        "done; touch /dev/evil 2>&1; echo dev=$?",
        policy,
    )
    for folder in ("/tmp", "/var/tmp", "/dev/shm"):
        size = int(output.split(f"{folder}=")[1].split()[0])
        assert size <= 8, output
    assert "dev=0" not in output


@as_root
def test_memory_is_bounded_for_the_whole_tree(ws: Workspace) -> None:
    groups = cgroups_module.make_groups(16, 64 * 1024 * 1024)
    cgroups_module.remove_groups(groups)
    if not cgroups_module.bounded(groups, "memory"):
        pytest.skip("no memory cgroup on this machine")
    policy = SandboxPolicy(memory=160 * 1024 * 1024)
    hog = "import time; b = bytearray(100 * 1024 * 1024); time.sleep(3); print('held')"
    output = sh(ws, f'for i in 1 2 3; do python3 -c "{hog}" & done; wait; echo end', policy)
    assert output.count("held") < 3, output


@as_root
def test_no_cgroup_is_left_behind(ws: Workspace) -> None:
    prefix = f"ilh-{os.getpid()}-"
    for _ in range(3):
        sh(ws, "true")
    for root in (Path("/sys/fs/cgroup/pids"), Path("/sys/fs/cgroup/memory")):
        if root.is_dir():
            assert not [p for p in root.iterdir() if p.name.startswith(prefix)]
