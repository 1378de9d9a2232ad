"""`python` inside a free check: the check's own Python runs in the harness's runner.

    python -I -B ilh_python.py CONFIG_DIR [PYTHON ARGS...]

A free check (`sh check.sh`, `make test`, `bash -c '…'`) keeps exit-code semantics, but
the Python it runs must not: a restored `check.sh` calling `python -c "from calc import
add; assert add(1, 2) == 3"` ran the agent's `calc` in that process, which ended it with
0 (`os._exit(0)` at import, or an `atexit` hook after the failed assertion) and the check
passed (attack7). So the harness puts a folder first on the check's PATH whose `python`,
`python3`… start this file (`harness/grading/checks.py`), which decides:

* `-c CODE`, `-m pytest`, `-m unittest`, or a script (or `-m MODULE`'s module file)
  whose bytes are the template's (its
  SHA-256 in CONFIG_DIR/python.json, read once here and run as read): run by the
  harness's runner (`ilh_runner.run_guarded`), the agent's modules in the solution
  process; the exit status is 0 only when the code ran to its end (or `sys.exit(0)`),
  the tests passed and nothing of the runner was replaced;
* anything else (`python -m slug`, the agent's `python slug.py`, no arguments): the real
  interpreter, with the arguments and environment unchanged: the agent's program, its
  exit status its own, as before, but a change it made to a file already in the check's
  `/tmp` (its HOME) is recorded as a failed run (`_run_agents_program`).

* the program on stdin (`python - < check.py`, `cat check.py | python3`, a heredoc): run
  as a `-c` text is; `python -i` is refused (exit 1).

Each run in the runner is recorded on the harness's pipe (`status_fd`,
`harness/grading/python_runs.py`): `start NONCE` before, `end NONCE STATUS` after; a
check with a failed run fails whatever the line's exit status (`pytest -q | grep passed`
passed on the agent's own print).

Before the runner starts, the tree's trusted files (the task's tests and helpers the
runner imports itself) must still be the template's: a program of the agent that the
same check ran before (`python app.py && python -m unittest`) could have rewritten them.

This file runs standalone (isolated mode, no harness import), mounted read-only.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import json
import os
import re
import stat
import sys
import types
from typing import Any, NoReturn

#: Options of `python` that take no value, and those that take one (`-W error`).
_FLAGS = frozenset("bBdEhiIOPqRsSuvVx")
_VALUED = frozenset("WX")
#: Long options that take a value (`--check-hash-based-pycs never check.py` ran the check
#: with the real interpreter: attack9). Other long options run no code (`--version`) or
#: are refused by the interpreter itself.
_LONG_VALUED = frozenset({"--check-hash-based-pycs"})
#: Longest script read to be checked (a task's check script is small).
_MAX_SCRIPT = 4 * 1024 * 1024
#: Standard modules whose `python -m` runs code it is given (a file, a module, a text).
_RUNS_CODE = frozenset({"runpy", "doctest", "timeit", "cProfile", "profile", "trace", "pdb"})
_MODULE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*$")


def _runner() -> types.ModuleType:
    here = os.path.dirname(os.path.abspath(__file__))
    spec = importlib.util.spec_from_file_location(
        "_ilh_runner", os.path.join(here, "ilh_runner.py")
    )
    if spec is None or spec.loader is None:
        raise ImportError("ilh_runner.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["_ilh_runner"] = module
    spec.loader.exec_module(module)
    return module


def _operands(args: list[str]) -> list[str] | None:
    """`args` past the interpreter's options, `-c` and `-m` given as `["-c", CODE, …]` and
    `["-m", NAME, …]` (combined ones too: `-uc CODE`, `-mpytest`); None for options this
    file does not model (the real interpreter runs them)."""
    rest = list(args)
    while rest and rest[0].startswith("-") and rest[0] not in ("-", "--"):
        word, rest = rest[0], rest[1:]
        if word.split("=", 1)[0] in _LONG_VALUED:
            rest = rest[1:] if "=" not in word else rest
            continue
        if word.startswith("--"):
            return None  # `--version`, `--help`: no code runs
        letters = word[1:]
        for at, letter in enumerate(letters):
            tail = letters[at + 1 :]
            if letter in "cm":
                if tail:
                    return [f"-{letter}", tail, *rest]
                return [f"-{letter}", *rest] if rest else None
            if letter in _VALUED:
                if not tail:
                    rest = rest[1:]
                break
            if letter not in _FLAGS or letter == "i":
                return None  # interactive, or an option not modeled: not a check's run
    if rest[:1] == ["--"]:
        rest = rest[1:]
    return rest


def _options(args: list[str]) -> str:
    """The option letters of `args` before its operands (`-u -W error -i x.py` gives
    "uWi"; a `-W`/`-X` value is not read as letters)."""
    letters, rest = "", list(args)
    while rest and rest[0].startswith("-") and rest[0] not in ("-", "--"):
        word, rest = rest[0], rest[1:]
        if word.startswith("--"):
            if word in _LONG_VALUED:
                rest = rest[1:]
            continue
        for at, letter in enumerate(word[1:]):
            letters += letter
            if letter in "cm":
                return letters
            if letter in _VALUED:
                if at + 2 == len(word):
                    rest = rest[1:]
                break
    return letters


def _interactive(args: list[str]) -> bool:
    """`python -i …`: the code, then a prompt. Not a check's run (`route`), and not left
    to the real interpreter either: there the agent's module a check imports ended the
    process with 0 at import (`python -i check.py` passed; attack9)."""
    return "i" in _options(args)


def _stdin_program(args: list[str]) -> list[str] | None:
    """The arguments after `-` when the program comes on stdin (`python - < check.py`,
    `cat check.py | python3`, a heredoc in a restored `check.sh`), else None. That
    program is the check's own code, as a `-c` text is; left to the real interpreter it
    ran the agent's module in that process, which chose the exit status (attack9).
    `python -V`, `python -h` run no code."""
    rest = _operands([a for a in args if a != "-i"])
    if rest is None or (rest and rest[0] != "-"):
        return None
    if set(_options(args)) & set("hV"):
        return None
    return rest[1:]


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def route(args: list[str], config: dict[str, Any]) -> tuple[str, list[str], bytes | None] | None:
    """(the runner's kind, its arguments, a script's checked bytes), or None: the real
    interpreter runs `args` (see the module docstring)."""
    rest = _operands(args)
    if not rest:
        return None
    if rest[0] == "-c" and len(rest) >= 2:
        return "script", rest, None
    if rest[0] == "-m" and len(rest) >= 2:
        if rest[1] in ("pytest", "py.test"):
            return "pytest", rest[2:], None
        if rest[1] == "unittest":
            return "unittest", rest[2:], None
        if rest[1] == "runpy" and len(rest) >= 3:
            return route(["-m", *rest[2:]], config)  # `-m runpy NAME` is `-m NAME`
        if rest[1] in _RUNS_CODE:
            # A standard module that runs other code (`python -m doctest check.txt`,
            # `-m runpy check`, `-m timeit -s 'from calc import add' …`): run in the
            # runner, its code's imports served as any check's are. Left to the real
            # interpreter, the agent's module ended it with 0 at import (attack9).
            main = (
                f"import runpy; runpy.run_module({rest[1]!r}, run_name='__main__', alter_sys=True)"
            )
            return "script", ["-c", main, *rest[2:]], None
        # `python -m verify`: a module file of the tree holding the template's bytes runs
        # as that script would (a package's `__main__` keeps the real interpreter).
        module = os.path.join(*rest[1].split(".")) + ".py" if _MODULE.match(rest[1]) else None
        if module is None or not os.path.isfile(module):
            return None
        checked = _task_script(module, config)
        return (
            None if checked is None else ("script", [os.path.abspath(module), *rest[2:]], checked)
        )
    if rest[0].startswith("-"):
        return None
    checked = _task_script(rest[0], config)
    return None if checked is None else ("script", rest, checked)


def _task_script(path: str, config: dict[str, Any]) -> bytes | None:
    """The bytes of the script at `path` when they are the template's (read once here),
    else None: the agent's own script, or one it changed."""
    root = os.path.realpath(str(config["root"]))
    real = os.path.realpath(path)
    if not real.startswith(root.rstrip(os.sep) + os.sep):
        return None
    try:
        with open(real, "rb") as handle:
            data = handle.read(_MAX_SCRIPT + 1)
    except OSError:
        return None
    rel = os.path.relpath(real, root).replace(os.sep, "/")
    scripts = config.get("scripts") or {}
    if len(data) > _MAX_SCRIPT or scripts.get(rel) != _digest(data):
        return None  # the agent's own script (or one it changed): its own program
    return data


def _changed(root: str, trusted: list[str], scripts: dict[str, str]) -> list[str]:
    """The trusted files that are no longer the template's bytes."""
    changed: list[str] = []
    for rel in trusted:
        try:
            with open(os.path.join(root, rel), "rb") as handle:
                data = handle.read()
        except OSError:
            data = b""
        if scripts.get(rel) != _digest(data):
            changed.append(rel)
    return changed


#: Most files of the tree compared with a program on stdin (`_agents_file`).
_MAX_COMPARED = 20000


def _agents_file(root: str, data: bytes, config: dict[str, Any]) -> bool:
    """Whether `data` is the bytes of a file of the tree that is not the task's (the
    agent's `prog.py` piped in: its own program). A heredoc or a task's script is not."""
    scripts = config.get("scripts") or {}
    digest = _digest(data)
    seen = 0
    for folder, dirs, files in os.walk(root):
        dirs.sort()
        for name in files:
            seen += 1
            if seen > _MAX_COMPARED:
                return False
            path = os.path.join(folder, name)
            try:
                if os.path.islink(path) or os.path.getsize(path) != len(data):
                    continue
                with open(path, "rb") as handle:
                    same = handle.read(len(data) + 1) == data
            except OSError:
                continue
            rel = os.path.relpath(path, root).replace(os.sep, "/")
            if same and scripts.get(rel) != digest:
                return True
    return False


#: Most entries of the check's scratch folders compared around an agent's program.
_MAX_WATCHED = 20000
_PR_SET_CHILD_SUBREAPER = 36
_PR_SET_PDEATHSIG = 1
_FORWARDED = ("SIGTERM", "SIGINT", "SIGHUP", "SIGQUIT", "SIGUSR1", "SIGUSR2")


def _files_of(folders: list[tuple[str, int]]) -> dict[str, tuple[int, ...]]:
    """What identifies each entry under each folder made at or after its time (ns; 0:
    every entry), not followed into links: a write, a replacement or a removal changes
    it (ctime cannot be set back). Walked with a stack of its own, not `os.walk`, which
    recursed past Python's limit in a tree a check nested thousands deep (attack8's)."""
    found: dict[str, tuple[int, ...]] = {}
    for top, since in folders:
        try:
            device = os.stat(top).st_dev
        except OSError:
            continue
        stack = [top]
        while stack:
            try:
                entries = list(os.scandir(stack.pop()))
            except OSError:
                continue
            for entry in entries:
                try:
                    info = entry.stat(follow_symlinks=False)
                except OSError:
                    continue
                if info.st_dev != device:
                    # A file system mounted inside, by the sandbox, not by the check: the
                    # harness's venv bound read-only where a CI checkout put it, under /tmp.
                    # Not the check's to have written, and the host's processes write there
                    # (bytecode of a module first imported) while the check runs: an honest
                    # check failed in a fresh clone's CI.
                    continue
                if stat.S_ISDIR(info.st_mode):
                    stack.append(entry.path)
                if info.st_ctime_ns < since:
                    continue
                if stat.S_ISDIR(info.st_mode):
                    # A folder the check made may take the program's new files: only its
                    # replacement counts (its files are compared one by one).
                    found[entry.path] = (info.st_dev, info.st_ino, 0, 0, 0, info.st_mode)
                else:
                    found[entry.path] = (
                        info.st_dev,
                        info.st_ino,
                        info.st_size,
                        info.st_mtime_ns,
                        info.st_ctime_ns,
                        info.st_mode,
                    )
                if len(found) >= _MAX_WATCHED:
                    return found
    return found


def _watched(config: dict[str, Any]) -> list[tuple[str, int]]:
    """What the agent's code may not change of what the check wrote before it ran: the
    check's scratch folders (`watch`: its `/tmp`, its HOME), and what the check made in
    the tree since it started (`python3 want.py > want.txt && python3 prog.py > got.txt
    && diff want.txt got.txt`)."""
    folders = [(str(w), 0) for w in config.get("watch") or () if os.path.isdir(str(w))]
    since = config.get("since_ns")
    if folders and isinstance(since, int) and os.path.isdir(str(config["root"])):
        folders.append((str(config["root"]), since))
    return folders


def _changes(before: dict[str, tuple[int, ...]], after: dict[str, tuple[int, ...]]) -> list[str]:
    """The entries of `before` changed or gone in `after`, but this process's stdout and
    stderr: its own to write wherever the line sent them (`python3 prog.py > /tmp/got`:
    the shell made the file before it started)."""
    own: set[tuple[int, int]] = set()
    for number in (1, 2):
        with contextlib.suppress(OSError):
            info = os.fstat(number)
            own.add((info.st_dev, info.st_ino))
    return sorted(
        path
        for path, seen in before.items()
        if after.get(path) != seen and (seen[0], seen[1]) not in own
    )


def _children() -> list[int]:
    """This process's children (those it adopted as a subreaper included)."""
    mine, found = os.getpid(), []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as handle:
                fields = handle.read().rsplit(b")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if len(fields) > 1 and fields[1] == str(mine).encode():
            found.append(int(entry))
    return found


def _run_agents_program(
    real: str, argv: list[str], config: dict[str, Any], fd: int | None
) -> NoReturn:
    """The agent's program (`python3 prog.py`), run by the real interpreter, its exit
    status its own. In a free check (`fd`: the harness records its Python runs) it may
    not change a file of the check's scratch folders (`watch`: its `/tmp`, its HOME) that
    existed when it started: `python3 want.py > /tmp/want && python3 prog.py > /tmp/got
    && diff /tmp/want /tmp/got` passed when the agent's program rewrote `/tmp/want`
    (attack9). So this process stays its parent (a subreaper: what it leaves running is
    ended when it ends), then compares; a change is recorded as a failed run."""
    watch = _watched(config)
    if fd is None or not watch:
        os.execv(real, argv)
    import ctypes
    import signal

    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    before = _files_of(watch)
    pid = os.fork()
    if pid == 0:
        try:
            # Ended with this process, as it was when this process became it (`exec`):
            # `timeout -s KILL 5 python3 server.py` must not leave the server running.
            libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
            os.execv(real, argv)
        finally:
            os._exit(127)

    def forward(number: int, _frame: object) -> None:
        with contextlib.suppress(OSError):
            os.kill(pid, number)

    for name in _FORWARDED:
        signal.signal(getattr(signal, name), forward)
    while True:
        try:
            _pid, status = os.waitpid(pid, 0)
            break
        except ChildProcessError:
            status = 0
            break
        except InterruptedError:
            continue
    # What it left running (a daemon, double-forked: adopted here) ends with it.
    for _round in range(100):
        left = _children()
        if not left:
            break
        for child in left:
            with contextlib.suppress(OSError):
                os.kill(child, signal.SIGKILL)
        for child in left:
            with contextlib.suppress(OSError):
                os.waitpid(child, 0)
    changed = _changes(before, _files_of(watch))
    if changed:
        _record(fd, f"start {os.urandom(16).hex()}\n")
        print(
            "ilh: the agent's program changed what the check wrote before it: "
            f"{', '.join(changed[:5])}",
            file=sys.stderr,
        )
    if os.WIFSIGNALED(status):
        number = os.WTERMSIG(status)
        signal.signal(number, signal.SIG_DFL)
        os.kill(os.getpid(), number)
    sys.stdout.flush()
    os._exit(os.waitstatus_to_exitcode(status) if os.WIFEXITED(status) else 1)


def _channel(config: dict[str, Any]) -> int | None:
    """The write end of the harness's record of this check's Python runs
    (`harness/grading/python_runs.py`), kept from the processes this one starts (a
    test's `subprocess.run([sys.executable, "-c", …])` expecting a failure is the test's
    to judge); None outside a free check, or when a program of the check above this one
    closed it (that program decides this one's status anyway)."""
    fd = config.get("status_fd")
    if not isinstance(fd, int) or isinstance(fd, bool):
        return None
    try:
        if not stat.S_ISFIFO(os.fstat(fd).st_mode):
            return None
        os.set_inheritable(fd, False)
    except OSError:
        return None
    return fd


def _record(fd: int | None, line: str) -> None:
    if fd is not None:
        with contextlib.suppress(OSError):
            os.write(fd, line.encode("ascii"))


def _refuse(fd: int | None, message: str) -> NoReturn:
    """Not run: exit 1, recorded as a run that never ended (a pipe's last command must
    not turn it into a pass)."""
    _record(fd, f"start {os.urandom(16).hex()}\n")
    print(f"ilh: {message}", file=sys.stderr)
    os._exit(1)


def _read_stdin(fd: int | None) -> str:
    """The program on stdin, as a `-c` text; refused when it cannot be one."""
    program = sys.stdin.buffer.read(_MAX_SCRIPT + 1)
    if len(program) > _MAX_SCRIPT:
        _refuse(fd, "the program on stdin is too long to be a check; not run")
    try:
        return program.decode("utf-8")
    except UnicodeDecodeError:
        _refuse(fd, "the program on stdin is not UTF-8; not run")


def main(argv: list[str]) -> None:
    config_dir, args = argv[0], argv[1:]
    with open(os.path.join(config_dir, "python.json"), encoding="utf-8") as handle:
        config = json.load(handle)
    real = str(config["python"])
    fd = _channel(config)
    routed = route(args, config)
    if routed is None and _interactive(args):
        _refuse(fd, "python -i is not run in a check (its code would decide its exit)")
    after_dash = _stdin_program(args) if routed is None else None
    if after_dash is not None and sys.stdin is not None and not sys.stdin.isatty():
        program = _read_stdin(fd)
        if _agents_file(str(config["root"]), program.encode("utf-8"), config):
            # `python3 < prog.py`: the agent's program, as `python3 prog.py` is (in the
            # runner, its code would run beside the runner's record of it).
            _run_agents_program(real, [real, "-c", program, *after_dash], config, fd)
        routed = "script", ["-c", program, *after_dash], None
    if routed is None:
        _run_agents_program(real, [real, *args], config, fd)
    kind, rest, verified = routed
    root = str(config["root"])
    runner = _runner()
    exit_now, write_now = os._exit, os.write
    runner._not_dumpable()
    # Made once this process cannot be read by the check's others: they cannot end a run
    # they do not know the nonce of.
    nonce = os.urandom(16).hex()
    _record(fd, f"start {nonce}\n")
    trusted = [str(t) for t in config.get("trusted") or ()]
    changed = _changed(root, trusted, config.get("scripts") or {})
    if changed:
        print(
            "ilh: the task's test files changed while the check ran (by a program it ran "
            f"before): {', '.join(changed[:5])}; not run",
            file=sys.stderr,
        )
        os._exit(1)
    cwd = os.getcwd()
    # As `python` would: the script's folder or the working folder first, then PYTHONPATH.
    path = [cwd] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    # Nor may the agent's modules, served while this run goes (attack9): read before
    # the run, compared after it.
    watch = _watched(config) if fd is not None else []
    before = _files_of(watch)
    report_dir = ""
    if kind == "pytest":
        import tempfile

        report_dir = tempfile.mkdtemp(prefix="ilh-python-")
    shim = os.path.join(config_dir, "python")
    task_files = frozenset(trusted) | frozenset(config.get("scripts") or {})
    status, _tests, tampered = runner.run_guarded(
        kind, root, rest, report_dir, [], frozenset(trusted), path, verified, shim, task_files
    )
    if tampered:
        print(f"ilh: the code under test replaced {', '.join(tampered[:5])}", file=sys.stderr)
    changed = _changes(before, _files_of(watch)) if watch else []
    if changed:
        print(
            f"ilh: the code this run served changed what the check wrote before it: "
            f"{', '.join(changed[:5])}",
            file=sys.stderr,
        )
        status = status or 1
    code = 0 if status == 0 and not tampered else 1
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    finally:
        if fd is not None:
            with contextlib.suppress(OSError):
                write_now(fd, f"end {nonce} {code}\n".encode("ascii"))
        exit_now(code)


if __name__ == "__main__":
    main(sys.argv[1:])
