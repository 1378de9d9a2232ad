"""The time-limited shell runner behind the agent's `run_command` tool and the grader's
tool checks: every command runs confined (`harness.workspace.sandbox`), unless the user
explicitly chose `--sandbox none`.

What it guarantees:

* The command sees an environment built from nothing: `PATH` (a fixed safe default
  behind the current interpreter's bin directory, so `python` is the harness's
  interpreter), `HOME` = the working directory, `LANG`/`LC_ALL` = `C.UTF-8`,
  `PYTHONDONTWRITEBYTECODE=1`, `PYTHONNOUSERSITE=1` and a private `TMPDIR`. No variable
  of the harness process — API keys above all — reaches the command.
* Confined, it sees the workspace at `/workspace` and nothing of the harness (see the
  sandbox module); its whole process tree ends with it.
* It runs as the leader of a new session/process group; when it times out, or when it
  exits leaving background children, the whole group is killed with SIGKILL.
* stdout and stderr are merged and capped at `MAX_OUTPUT_BYTES`; beyond the cap the
  first and last halves are kept with a note of how much was left out.
* The harness's secrets (`harness.secrets`) are redacted from the output, pieces of one
  cut by the cap included.

Unconfined (`--sandbox none`), the command runs with the harness user's rights and can
read whatever that user can read; a process that calls `setsid` itself escapes the
process-group kill. That mode exists only because a user asked for it by name.
"""

from __future__ import annotations

import contextlib
import math
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from harness.secrets import harness_secrets
from harness.workspace.disk import DiskWatch
from harness.workspace.sandbox import (
    CONFINED,
    SANDBOX_WORKDIR,
    Mount,
    SandboxPolicy,
    confined_process,
)

#: Directories searched for programs, after the interpreter's own bin directory.
SAFE_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

#: Cap on the combined stdout+stderr kept per command (bytes).
MAX_OUTPUT_BYTES = 64 * 1024

#: A sensible default for callers without a budget (the orchestrator passes time left).
DEFAULT_TIMEOUT_S = 60.0

#: After the shell exits, how long children may keep the output pipe open before the
#: group is killed. Short: a finished command should not wait on its stragglers.
OUTPUT_DRAIN_S = 0.5

#: After the kill, how long to wait for the output pipe to close.
PIPE_CLOSE_WAIT_S = 2.0

_READ_CHUNK = 64 * 1024
_POLL_MAX_S = 0.05
_TMP_PREFIX = ".ilh-tmp-"
# Process groups of the commands running now (each still unreaped, so its id is still
# reserved), for `kill_running_commands`. set.add/discard are atomic: no lock, which a
# signal handler could deadlock on.
_RUNNING_GROUPS: set[int] = set()


class CommandResult(BaseModel):
    """What one shell command did. `exit_code` is the shell's status; negative means it
    was killed by that signal (a timed-out command reports -9)."""

    model_config = ConfigDict(frozen=True)

    exit_code: int
    output: str
    timed_out: bool
    duration_s: float
    truncated: bool = False
    output_bytes: int = 0  # total produced, before the cap
    sandbox: str = "bwrap"  # "bwrap" (confined) or "none" (the user chose unconfined)

    @property
    def passed(self) -> bool:
        """A tool check's verdict: exit 0 within the time limit."""
        return self.exit_code == 0 and not self.timed_out


def scrubbed_env(
    cwd: Path | str, tmp_dir: Path | str, extra_env: Mapping[str, str] | None = None
) -> dict[str, str]:
    """The whole environment a command gets. Nothing is inherited from `os.environ`.

    `extra_env` comes from harness code (never from the agent) and is applied last, so
    it may override the defaults.
    """
    path_dirs = [str(Path(sys.executable).parent)] if sys.executable else []
    path_dirs.append(SAFE_PATH)
    env = {
        "PATH": ":".join(path_dirs),
        "HOME": str(cwd),
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        "PYTHONDONTWRITEBYTECODE": "1",
        # The user site is the harness user's, outside any workspace: never on the path.
        "PYTHONNOUSERSITE": "1",
        "TMPDIR": str(tmp_dir),
    }
    if extra_env:
        env.update(extra_env)
    return env


def run_shell(
    command: str,
    cwd: Path,
    timeout_s: float,
    extra_env: Mapping[str, str] | None = None,
    *,
    max_output_bytes: int | None = None,
    sandbox: SandboxPolicy = CONFINED,
    mounts: Sequence[Mount] = (),
    writable: bool = True,
    pass_fds: tuple[int, ...] = (),
) -> CommandResult:
    """Run `command` with `/bin/sh -c` in `cwd` under a scrubbed environment, confined by
    `sandbox` (`cwd` is then `/workspace` inside, writable unless `writable=False`;
    `mounts` adds folders such as hidden checks; `pass_fds` are inherited by the command
    with their numbers, e.g. the grader's private report file).

    Raises `ValueError` for a non-positive or non-finite timeout or a command containing
    a NUL byte, `SandboxUnavailable` (an `OSError`) when it must be confined and no
    sandbox can be made, and `OSError` when the shell cannot be started; a command that
    fails, times out or floods its output is a normal result. `max_output_bytes`
    defaults to `MAX_OUTPUT_BYTES` (read at call time).
    """
    cap = MAX_OUTPUT_BYTES if max_output_bytes is None else max_output_bytes
    if not math.isfinite(timeout_s) or timeout_s <= 0:
        raise ValueError(f"timeout_s must be a positive number of seconds, got {timeout_s}")
    if "\x00" in command:
        raise ValueError("command contains a NUL byte")
    if sandbox.confined:
        env = scrubbed_env(SANDBOX_WORKDIR, "/tmp", extra_env)
        with confined_process(sandbox, workdir=cwd, writable=writable, mounts=mounts) as box:
            argv = [*box.argv, "/bin/sh", "-c", command]
            return _run(
                argv,
                cwd,
                timeout_s,
                env,
                cap,
                preexec=box.preexec,
                pass_fds=box.pass_fds + pass_fds,
                executable=box.executable,
                disk=DiskWatch(cwd, sandbox.disk),
            )
    tmp_dir = _make_tmp_dir(cwd)
    try:
        result = _run(
            ["/bin/sh", "-c", command],
            cwd,
            timeout_s,
            scrubbed_env(cwd, tmp_dir, extra_env),
            cap,
            pass_fds=pass_fds,
        )
        return result.model_copy(update={"sandbox": "none"})
    finally:
        # rmtree refuses (silently, here) if the command replaced the dir by a symlink,
        # and never follows symlinks inside it.
        shutil.rmtree(tmp_dir, ignore_errors=True)


def _make_tmp_dir(cwd: Path) -> Path:
    try:
        return Path(tempfile.mkdtemp(prefix=_TMP_PREFIX, dir=cwd))
    except OSError:
        # A read-only working directory (e.g. a graded workspace) still gets a private
        # temp dir, just not inside it.
        return Path(tempfile.mkdtemp(prefix=_TMP_PREFIX))


def _run(
    argv: list[str],
    cwd: Path,
    timeout_s: float,
    env: dict[str, str],
    max_output_bytes: int,
    *,
    preexec: Callable[[], None] | None = None,
    pass_fds: tuple[int, ...] = (),
    executable: str | None = None,
    disk: DiskWatch | None = None,
) -> CommandResult:
    # Our own pipe rather than Popen's file objects: the reader thread owns the read end
    # and closes it, so it is never closed under a read still in progress.
    read_fd, write_fd = os.pipe()
    started = time.monotonic()
    try:
        proc = subprocess.Popen(  # preexec only sets limits: see sandbox.py
            argv,
            executable=executable,
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=write_fd,
            stderr=subprocess.STDOUT,
            close_fds=True,
            start_new_session=True,
            preexec_fn=preexec,
            pass_fds=pass_fds,
        )
    except BaseException:
        os.close(read_fd)
        raise
    finally:
        os.close(write_fd)

    sink = _CappedOutput(max_output_bytes)
    reader = threading.Thread(target=_pump, args=(read_fd, sink), daemon=True)
    reader.start()

    _RUNNING_GROUPS.add(proc.pid)
    try:
        exited, stopped = _wait_without_reaping(proc.pid, started + timeout_s, disk)
    except BaseException:  # Ctrl-C, cancellation: the command must not outlive the run
        _RUNNING_GROUPS.discard(proc.pid)
        _kill_group(proc.pid)
        proc.wait()
        raise
    duration_s = time.monotonic() - started
    if exited:
        reader.join(OUTPUT_DRAIN_S)
    # Killed while the shell is still unreaped, so its pid (= the group id) cannot have
    # been reused by an unrelated process group.
    _RUNNING_GROUPS.discard(proc.pid)
    _kill_group(proc.pid)
    exit_code = proc.wait()
    reader.join(PIPE_CLOSE_WAIT_S)

    output, truncated = sink.render()
    if stopped is not None:
        output += f"\n[{stopped}]"
    if reader.is_alive():
        output += (
            "\n[output may be incomplete: a process outside the command's process group "
            "kept the output open]"
        )
    return CommandResult(
        exit_code=exit_code,
        # Secrets out before anyone sees the output: an unconfined command can read the
        # harness's environment (/proc/$PPID/environ), and any command a file holding one.
        output=harness_secrets().redact(output),
        timed_out=not exited and stopped is None,
        duration_s=round(duration_s, 3),
        truncated=truncated,
        output_bytes=sink.total,
    )


def _wait_without_reaping(
    pid: int, deadline: float, disk: DiskWatch | None = None
) -> tuple[bool, str | None]:
    """(True, None) once the child has exited, (False, None) at the deadline, (False,
    why) when `disk` says it must stop. `WNOWAIT` leaves the child a zombie, which keeps
    its pid and process group id reserved for the kill."""
    delay = 0.001
    while True:
        try:
            info = os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        except ChildProcessError:  # reaped by someone else: it has certainly exited
            return True, None
        if info is not None:
            return True, None
        if disk is not None and (why := disk.exceeded()) is not None:
            return False, why
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return False, None
        time.sleep(min(delay, remaining))
        delay = min(delay * 2, _POLL_MAX_S)


def kill_running_commands() -> None:
    """Kill every command running now, in any thread (Ctrl-C: a tool check in a worker
    thread must not keep the process, or itself, alive)."""
    for pgid in list(_RUNNING_GROUPS):
        _kill_group(pgid)


def _kill_group(pgid: int) -> None:
    # Gone already, or only members we may not signal (setuid programs) remain.
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


def _pump(fd: int, sink: _CappedOutput) -> None:
    try:
        while chunk := os.read(fd, _READ_CHUNK):
            sink.feed(chunk)
    except OSError:
        pass
    finally:
        os.close(fd)


class _CappedOutput:
    """Collects output, keeping the first and last halves of the cap. Both ends matter:
    the start shows what ran, the end holds the verdict (a test summary, an error)."""

    def __init__(self, cap: int) -> None:
        self._cap = max(cap, 0)
        self._head_cap = self._cap // 2
        self._tail_cap = self._cap - self._head_cap
        self._head = bytearray()
        self._tail = bytearray()
        self._lock = threading.Lock()
        self.total = 0

    def feed(self, chunk: bytes) -> None:
        with self._lock:
            self.total += len(chunk)
            room = self._head_cap - len(self._head)
            if room > 0:
                self._head += chunk[:room]
                chunk = chunk[room:]
            if chunk and self._tail_cap > 0:
                self._tail += chunk
                excess = len(self._tail) - self._tail_cap
                if excess > 0:
                    del self._tail[:excess]

    def render(self) -> tuple[str, bool]:
        with self._lock:
            head = bytes(self._head)
            tail = bytes(self._tail)
            omitted = self.total - len(head) - len(tail)
        if omitted <= 0:
            return (head + tail).decode("utf-8", errors="replace"), False
        note = (
            f"\n[... {omitted} bytes of output omitted: output is capped at {self._cap} "
            f"bytes of {self.total}; the first and last parts are shown ...]\n"
        )
        text = head.decode("utf-8", errors="replace") + note
        return text + tail.decode("utf-8", errors="replace"), True
