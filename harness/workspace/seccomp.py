"""The system-call filter every sandboxed command runs under (bwrap `--seccomp FD`).

The namespaces and dropped capabilities already make most of these calls fail; the filter
is the second wall, for the kernel surfaces that have turned a sandbox into an escape
before: the key store (shared with the harness through the session keyring inherited by
the sandbox), new namespaces (`unshare`, `setns`, `clone` with namespace flags, `clone3`
whose flags a classic filter cannot read), mounts and the new mount API, `bpf`,
`perf_event_open`, `userfaultfd`, io_uring, kernel modules, kexec, file handles
(`open_by_handle_at`), swap, reboot, accounting, quotas, the kernel log.

A classic BPF program is built here from a table of call numbers, with no library: the
Python bindings of libseccomp need the C library installed system-wide, which the
harness cannot count on, and the program is twenty instructions. Calls of another ABI
(32-bit `int 0x80` on x86_64, x32) kill the process: the table is for the native ABI
only, and a filter that let them through would filter nothing.
"""

from __future__ import annotations

import errno
import functools
import platform
import struct
from typing import Final

# BPF opcodes (linux/filter.h) and seccomp return values (linux/seccomp.h).
_LD_W_ABS: Final = 0x20
_JEQ_K: Final = 0x15
_JGE_K: Final = 0x35
_JSET_K: Final = 0x45
_AND_K: Final = 0x54
_RET_K: Final = 0x06
_RET_ALLOW: Final = 0x7FFF0000
_RET_ERRNO: Final = 0x00050000
_RET_KILL_PROCESS: Final = 0x80000000

# Offsets in struct seccomp_data: nr, arch, then the arguments (low word first).
_NR: Final = 0
_ARCH: Final = 4
_ARG0_LOW: Final = 16
_ARG1_LOW: Final = 24
_AF_UNIX: Final = 1
_SOCK_DGRAM: Final = 2
_SOCK_TYPE_MASK: Final = 0xF

_X32_BIT: Final = 0x40000000
#: CLONE_NEWNS | NEWCGROUP | NEWUTS | NEWIPC | NEWUSER | NEWPID | NEWNET | NEWTIME.
_CLONE_NAMESPACES: Final = (
    0x00020000 | 0x02000000 | 0x04000000 | 0x08000000 | 0x10000000 | 0x20000000 | 0x40000000 | 0x80
)

#: Refused with EPERM, by name: the same list for every architecture.
DENIED: Final = (
    "add_key", "request_key", "keyctl",
    "unshare", "setns",
    "mount", "umount2", "pivot_root", "open_tree", "move_mount", "fsopen", "fsconfig",
    "fsmount", "fspick", "mount_setattr",
    "bpf", "perf_event_open", "userfaultfd",
    "io_uring_setup", "io_uring_enter", "io_uring_register",
    "kexec_load", "kexec_file_load", "init_module", "finit_module", "delete_module",
    "open_by_handle_at", "name_to_handle_at",
    "swapon", "swapoff", "reboot", "acct", "quotactl", "syslog", "lookup_dcookie", "vhangup",
    # Another process's memory and descriptors: a grader's runner and the processes
    # around it run as the same user as the code under test (red team, issue 9).
    "ptrace", "process_vm_readv", "process_vm_writev", "pidfd_getfd",
)  # fmt: skip


class _Arch:
    def __init__(self, audit: int, x32: bool, numbers: dict[str, int]) -> None:
        self.audit = audit
        self.x32 = x32
        self.numbers = numbers


# From the kernel's asm/unistd_64.h (x86_64) and asm-generic/unistd.h (aarch64).
_ARCHES: Final = {
    "x86_64": _Arch(
        0xC000003E,
        True,
        {
            "add_key": 248, "request_key": 249, "keyctl": 250, "unshare": 272, "setns": 308,
            "mount": 165, "umount2": 166, "pivot_root": 155, "open_tree": 428,
            "move_mount": 429, "fsopen": 430, "fsconfig": 431, "fsmount": 432, "fspick": 433,
            "mount_setattr": 442, "bpf": 321, "perf_event_open": 298, "userfaultfd": 323,
            "io_uring_setup": 425, "io_uring_enter": 426, "io_uring_register": 427,
            "kexec_load": 246, "kexec_file_load": 320, "init_module": 175,
            "finit_module": 313, "delete_module": 176, "open_by_handle_at": 304,
            "name_to_handle_at": 303, "swapon": 167, "swapoff": 168, "reboot": 169,
            "acct": 163, "quotactl": 179, "syslog": 103, "lookup_dcookie": 212,
            "vhangup": 153, "clone": 56, "clone3": 435, "socket": 41, "socketpair": 53,
            "ptrace": 101, "process_vm_readv": 310, "process_vm_writev": 311,
            "pidfd_getfd": 438,
        },
    ),
    "aarch64": _Arch(
        0xC00000B7,
        False,
        {
            "add_key": 217, "request_key": 218, "keyctl": 219, "unshare": 97, "setns": 268,
            "mount": 40, "umount2": 39, "pivot_root": 41, "open_tree": 428,
            "move_mount": 429, "fsopen": 430, "fsconfig": 431, "fsmount": 432, "fspick": 433,
            "mount_setattr": 442, "bpf": 280, "perf_event_open": 241, "userfaultfd": 282,
            "io_uring_setup": 425, "io_uring_enter": 426, "io_uring_register": 427,
            "kexec_load": 104, "kexec_file_load": 294, "init_module": 105,
            "finit_module": 273, "delete_module": 106, "open_by_handle_at": 265,
            "name_to_handle_at": 264, "swapon": 224, "swapoff": 225, "reboot": 142,
            "acct": 89, "quotactl": 60, "syslog": 116, "lookup_dcookie": 18,
            "vhangup": 58, "clone": 220, "clone3": 435, "socket": 198, "socketpair": 199,
            "ptrace": 117, "process_vm_readv": 270, "process_vm_writev": 271,
            "pidfd_getfd": 438,
        },
    ),
}  # fmt: skip
_ARCHES["arm64"] = _ARCHES["aarch64"]
_ARCHES["amd64"] = _ARCHES["x86_64"]


class SeccompUnsupported(OSError):
    """No call table for this machine's architecture: the sandbox is refused."""


def keyctl_number() -> int | None:
    """`keyctl`'s call number here (the harness joins a fresh session keyring with it)."""
    arch = _ARCHES.get(platform.machine())
    return arch.numbers["keyctl"] if arch is not None else None


def _op(code: int, k: int, jt: int = 0, jf: int = 0) -> bytes:
    return struct.pack("=HBBI", code, jt, jf, k)


@functools.cache
def filter_program(machine: str | None = None, host_network: bool = False) -> bytes:
    """The compiled filter (an array of `struct sock_filter`) for `machine` (default:
    this one); `SeccompUnsupported` for an architecture without a table. `host_network`:
    the command shares the host's network namespace, see `_no_unix_sockets`."""
    name = machine or platform.machine()
    arch = _ARCHES.get(name)
    if arch is None:
        raise SeccompUnsupported(
            f"no system-call filter for the {name} architecture (x86_64 and aarch64 "
            "have one); commands are not run without it"
        )
    deny = _RET_ERRNO | errno.EPERM
    prog = [_op(_LD_W_ABS, _ARCH), _op(_JEQ_K, arch.audit, jt=1), _op(_RET_K, _RET_KILL_PROCESS)]
    prog.append(_op(_LD_W_ABS, _NR))
    if arch.x32:
        prog += [_op(_JGE_K, _X32_BIT, jf=1), _op(_RET_K, _RET_KILL_PROCESS)]
    for call in DENIED:
        prog += [_op(_JEQ_K, arch.numbers[call], jf=1), _op(_RET_K, deny)]
    if host_network:
        prog += _no_unix_sockets(arch, deny)
    # clone3 passes its flags in memory a classic filter cannot read: ENOSYS makes the C
    # library fall back to clone, whose flags are checked below.
    prog += [_op(_JEQ_K, arch.numbers["clone3"], jf=1), _op(_RET_K, _RET_ERRNO | errno.ENOSYS)]
    prog += [
        _op(_JEQ_K, arch.numbers["clone"], jf=3),
        _op(_LD_W_ABS, _ARG0_LOW),
        _op(_JSET_K, _CLONE_NAMESPACES, jf=1),
        _op(_RET_K, deny),
    ]
    prog.append(_op(_RET_K, _RET_ALLOW))
    return b"".join(prog)


def _no_unix_sockets(arch: _Arch, deny: int) -> list[bytes]:
    """With the host's network, abstract Unix sockets are the host's too: they have no
    file, so no mount hides them, and host services listen on them (containerd shims,
    X11, D-Bus). A filter cannot read the address a `connect` names, so under host
    network no Unix socket can be made (`socket(AF_UNIX, ...)`), nor a datagram pair
    (`socketpair(AF_UNIX, SOCK_DGRAM)`, whose `sendto` can name any address); stream
    pairs, which stay connected to each other, still work. Ends with `nr` reloaded."""
    return [
        _op(_JEQ_K, arch.numbers["socket"], jf=3),
        _op(_LD_W_ABS, _ARG0_LOW),
        _op(_JEQ_K, _AF_UNIX, jf=1),
        _op(_RET_K, deny),
        _op(_LD_W_ABS, _NR),
        _op(_JEQ_K, arch.numbers["socketpair"], jf=6),
        _op(_LD_W_ABS, _ARG0_LOW),
        _op(_JEQ_K, _AF_UNIX, jf=4),
        _op(_LD_W_ABS, _ARG1_LOW),
        _op(_AND_K, _SOCK_TYPE_MASK),
        _op(_JEQ_K, _SOCK_DGRAM, jf=1),
        _op(_RET_K, deny),
        _op(_LD_W_ABS, _NR),
    ]
