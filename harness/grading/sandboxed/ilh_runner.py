"""The grader's test runner, started by the harness inside a check's sandbox:

    python -I -B ilh_runner.py REPORT_DIR KIND ROOT [RUNNER ARGS...]

KIND is `pytest`, `unittest` or `script` (a check's own Python: `-c CODE [ARGS…]` or
`SCRIPT [ARGS…]`, the task's, run here to its end: its exit status is this process's,
never one the agent's code chose); ROOT is the graded tree (the working directory); REPORT_DIR
is a folder outside the tree holding the harness's `nonce` and `bridge.json` (the
report's descriptor, the tree's trusted files), where pytest writes its JUnit XML. The
report goes to the descriptor; the harness reads it after the process ended
(`graders/runners.py`).

This file runs standalone (isolated mode, no harness import): it is mounted read-only,
so the code under test cannot change it on disk. The agent's code does not run in this
process (below); the guard is a second line, and what it does:

* the harness's secret for this run (`REPORT_DIR/nonce`) is read and deleted before any
  test code is imported: a report written by anyone else lacks it;
* everything it needs later (the writer, the hash, the JSON encoder) is bound to local
  names first, and it imports the runner (pytest or unittest) completely before the
  tree goes on the import path, so nothing in the tree shadows the runner's modules;
* a guard records, before the tests, the functions and classes of the runner, of the
  import system, of `json` and of `builtins`, and the import hooks; after the tests, any
  of them replaced is reported as tampering (a patched `assertEqual`, `TestCase.run`,
  `TestResult.addFailure`, a fake finder serving a test module…);
* classes created while the tests ran whose `__eq__` or `__contains__` says yes to any
  fresh value (an always-equal `str` subclass) are reported as tampering too;
* the report is written last and the process ends with `os._exit`, so no `atexit` hook
  or finalizer runs after it; exit 0 only after a report of a green run.

The agent's modules are served from a solution process (`ilh_bridge.py`) through
proxies; this process is made non-dumpable before that process starts, and the report
goes to a descriptor only this process holds (truncated and rewritten last). A profile
hook or a traceback's `f_back` in the solution process sees only that process's frames.
"""

from __future__ import annotations

if __name__ == "__main__":
    # The runner runs as a module of its own name (`_ilh_runner`), never as `__main__`:
    # a check script (kind `script`) is `__main__` while it runs, as under `python
    # check.py`, or `unittest.main()` in it found the runner's module, ran no test and
    # exited 0 for a wrong solution; pickling its functions (multiprocessing) and the
    # solution calling back a function it defined failed an honest check (review 8).
    # `main` ends the process (`os._exit`); this module's body below never runs here.
    import importlib.util as _util
    import sys as _sys

    _spec = _util.spec_from_file_location("_ilh_runner", __file__)
    if _spec is None or _spec.loader is None:
        raise ImportError(__file__)
    _runner = _util.module_from_spec(_spec)
    _sys.modules["_ilh_runner"] = _runner
    _spec.loader.exec_module(_runner)
    _runner.main(_sys.argv[1:])

import builtins
import contextlib
import gc
import hashlib
import json
import os
import re
import sys
import types
from collections.abc import Callable, Iterator, Mapping
from typing import Any

_HEAPTYPE = 1 << 9
_GUARDED = ("unittest", "json", "importlib", "_frozen_importlib", "_frozen_importlib_external")
_GUARDED_PYTEST = ("pytest", "_pytest", "pluggy")
_PROBED = ("__eq__", "__contains__")
#: Test files by the convention of `graders/baseline.py` (restored from the template in
#: the grading tree, or the hidden checks): their matchers may equal anything.
_TEST_FILE = re.compile(
    r"(?:^|/)(?:test_[^/]*\.py|[^/]*_test\.py|conftest\.py)$|(?:^|/)(?:tests?|__tests__|spec)/"
)


def _guarded(value: object) -> bool:
    return callable(value) or isinstance(value, staticmethod | classmethod | property)


def _owners(prefixes: tuple[str, ...]) -> Iterator[tuple[str, Mapping[str, Any]]]:
    """(label, namespace) of every guarded module and of the classes it defines."""
    for name, module in sorted(sys.modules.items()):
        if module is None or not isinstance(module, types.ModuleType):
            continue
        if not (name in ("builtins", "__main__", "_ilh_runner") or name.split(".")[0] in prefixes):
            continue
        yield name, module.__dict__
        for value in list(vars(module).values()):
            if isinstance(value, type) and getattr(value, "__module__", None) == name:
                yield f"{name}.{value.__qualname__}", value.__dict__


def _all_classes() -> dict[int, type]:
    found: dict[int, type] = {id(object): object}
    stack: list[type] = [object]
    while stack:
        current = stack.pop()
        try:
            subclasses: list[type] = type.__subclasses__(current)
        except TypeError:
            continue
        for sub in subclasses:
            if id(sub) not in found:
                found[id(sub)] = sub
                stack.append(sub)
    return found


def _blank(cls: type) -> object | None:
    """An instance of `cls` made without running its own code, or None."""
    for base in cls.__mro__[1:]:
        if not base.__flags__ & _HEAPTYPE:
            try:
                return base.__new__(cls)  # type: ignore[call-overload,no-any-return]
            except Exception:
                return None
    return None


def _body(function: types.FunctionType) -> tuple[object, ...]:
    return (function.__code__, function.__defaults__, function.__kwdefaults__,
            function.__closure__)  # fmt: skip


class Guard:
    """What the code under test must not replace, recorded before it is imported."""

    def __init__(self, prefixes: tuple[str, ...]) -> None:
        #: (label, namespace, key, the values it may hold: the original, then any that
        #: installed code set while pytest started).
        self.entries: list[tuple[str, Mapping[str, Any], str, list[object]]] = []
        for label, namespace in _owners(prefixes):
            for key, value in list(namespace.items()):
                if _guarded(value):
                    self.entries.append((label, namespace, key, [value]))
        # A function's body can be swapped in place (`f.__code__ = …`), which keeps
        # its identity: its code, defaults and closure are recorded too.
        self.bodies: list[tuple[str, types.FunctionType, tuple[object, ...]]] = []
        for label, _, key, values in self.entries:
            function = getattr(values[0], "__func__", values[0])
            if isinstance(function, types.FunctionType):
                self.bodies.append((f"{label}.{key}", function, _body(function)))
        self.classes = _all_classes()  # kept: the ids stay theirs while we hold them
        self.meta_path = list(sys.meta_path)
        self.path_hooks = list(sys.path_hooks)
        self.probes: tuple[object, ...] = (object(), "\x00ilh-probe-" + os.urandom(8).hex())
        #: The tree's trusted files (real paths): the task's tests and helpers, whose
        #: matchers (an `ANY` that equals everything) are the task's, not tampering.
        self.trusted_files: frozenset[str] = frozenset()

    def rebase(self) -> None:
        """Accept what installed code changed since the snapshot (pytest loads its
        plugins, which may wrap pytest's own functions, after this runner starts);
        anything else changed by then stays a finding."""
        missing = object()
        for _, namespace, key, allowed in self.entries:
            now = namespace.get(key, missing)
            if now is not missing and not any(now is v for v in allowed) and _installed(now):
                allowed.append(now)
        self.meta_path += [h for h in sys.meta_path if _installed(type(h))]

    def findings(self, allowed_hooks: Callable[[object], bool]) -> list[str]:
        missing = object()
        found = [
            f"{label}.{key}"
            for label, namespace, key, allowed in self.entries
            if not any(namespace.get(key, missing) is v for v in allowed)
        ]
        for hook in sys.meta_path:
            if not any(hook is h for h in self.meta_path) and not allowed_hooks(hook):
                found.append(f"sys.meta_path (added {type(hook).__name__})")
        if [id(h) for h in sys.path_hooks] != [id(h) for h in self.path_hooks]:
            found.append("sys.path_hooks")
        for label, function, body in self.bodies:
            if any(a is not b for a, b in zip(_body(function), body, strict=True)):
                found.append(f"{label} (its body replaced)")
        found += self.always_true()
        return found

    def always_true(self) -> list[str]:
        """New classes whose `__eq__`/`__contains__` answers yes to a value never seen."""
        found: list[str] = []
        for key, cls in _all_classes().items():
            if key in self.classes:
                continue
            for attr in _PROBED:
                owner = next((c for c in cls.__mro__ if attr in c.__dict__), None)
                if owner is None or id(owner) in self.classes:
                    continue
                method = owner.__dict__[attr]
                if not isinstance(method, types.FunctionType):
                    continue
                filename = method.__code__.co_filename
                if _TEST_FILE.search(filename.replace(os.sep, "/")) or (
                    os.path.realpath(filename) in self.trusted_files
                ):
                    continue  # a matcher of the task's own tests (restored, trusted)
                instance = _blank(cls)
                if instance is None:
                    continue
                for probe in self.probes:
                    try:
                        answer = method(instance, probe)
                        yes = answer is not NotImplemented and bool(answer)
                    except Exception:
                        yes = False
                    if yes:
                        found.append(f"{cls.__qualname__}.{attr} (it says yes to anything)")
                        break
        return found


def _installed_roots() -> tuple[str, ...]:
    import sysconfig

    paths = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix}
    paths |= {sysconfig.get_path(name) for name in ("stdlib", "platstdlib", "purelib", "platlib")}
    return tuple(os.path.realpath(p) + os.sep for p in paths if p)


_INSTALLED = _installed_roots()


def _installed(value: object) -> bool:
    """Was `value` defined by a file of the interpreter's installation (the standard
    library, site-packages), not by the tree or by code made up at run time?"""
    target = getattr(value, "__func__", value)
    code = getattr(target, "__code__", None)
    if isinstance(code, types.CodeType):
        file: object = code.co_filename
    else:
        module = sys.modules.get(getattr(target, "__module__", None) or "")
        file = getattr(module, "__file__", None)
    if not isinstance(file, str) or not os.path.isfile(file):
        return False
    return os.path.realpath(file).startswith(_INSTALLED)


def _module_file(cls: type) -> str | None:
    module = sys.modules.get(cls.__module__)
    file = getattr(module, "__file__", None)
    return os.path.abspath(file) if isinstance(file, str) else None


# ------------------------------------------------------------------------ unittest
def run_unittest(
    args: list[str],
    record: Callable[[dict[str, Any]], None],
    seal: Callable[[], None] = lambda: None,
) -> int:
    import unittest

    def entry(test: unittest.TestCase, outcome: str) -> dict[str, Any]:
        cls = type(test)
        name = getattr(test, "_testMethodName", None)
        if not isinstance(name, str) or cls.__module__.startswith("unittest"):
            # An import or class set-up error: its own id, no test of the template.
            return {"file": None, "cls": None, "name": test.id(), "outcome": outcome,
                    "id": test.id()}  # fmt: skip
        return {"file": _module_file(cls), "cls": cls.__qualname__, "name": name,
                "outcome": outcome, "id": test.id()}  # fmt: skip

    class Result(unittest.TextTestResult):
        def startTestRun(self) -> None:
            seal()  # every test module is loaded: the hidden checks close (see `main`)
            super().startTestRun()

        def addSuccess(self, test: unittest.TestCase) -> None:
            super().addSuccess(test)
            record(entry(test, "passed"))

        def addFailure(self, test: unittest.TestCase, err: Any) -> None:
            super().addFailure(test, err)
            record(entry(test, "failed"))

        def addError(self, test: unittest.TestCase, err: Any) -> None:
            super().addError(test, err)
            record(entry(test, "error"))

        def addSkip(self, test: unittest.TestCase, reason: str) -> None:
            super().addSkip(test, reason)
            record(entry(test, "skipped"))

        def addExpectedFailure(self, test: unittest.TestCase, err: Any) -> None:
            super().addExpectedFailure(test, err)
            record(entry(test, "xfailed"))

        def addUnexpectedSuccess(self, test: unittest.TestCase) -> None:
            super().addUnexpectedSuccess(test)
            record(entry(test, "xpassed"))

        def addSubTest(self, test: Any, subtest: Any, err: Any) -> None:
            super().addSubTest(test, subtest, err)
            if err is not None:
                record(entry(test, "failed"))

    class Runner(unittest.TextTestRunner):
        resultclass = Result  # type: ignore[assignment]

    try:
        program = unittest.main(
            module=None, argv=["python -m unittest", *args], testRunner=Runner, exit=False
        )
    except SystemExit as stop:  # a usage error
        return stop.code if isinstance(stop.code, int) and stop.code else 2
    result = program.result
    return 0 if result.wasSuccessful() and result.testsRun > 0 else 1


# -------------------------------------------------------------------------- script
def run_script(
    args: list[str], record: Callable[[dict[str, Any]], None], verified: bytes | None = None
) -> int:
    """A free check's Python (`python -c CODE …`, `python check.py …`), run in this process
    as `python` would run it (`__main__`, `sys.argv`, the script's folder on the path), the
    agent's modules served from the solution process. Passed: it ran to its end, or left
    by `sys.exit(0)`/`sys.exit()`. Why: run by `python` itself, the agent's module could
    end the process with 0 at import (`os._exit(0)`) or from an `atexit` hook after a
    failed assertion, and the check trusted that exit code (attack6). `verified`: the
    script's bytes as the caller read and checked them (`ilh_python.py`), run instead of
    reading the file again (the tree may have changed since)."""
    import traceback

    code: str | bytes
    if args[:1] == ["-c"] and len(args) >= 2:
        code, argv, filename = args[1], ["-c", *args[2:]], "<string>"
    elif args:
        filename = os.path.abspath(args[0])
        if verified is not None:
            code = verified
        else:
            with open(filename, "rb") as handle:
                code = handle.read()
        argv = list(args)
        sys.path.insert(0, os.path.dirname(filename))
    else:
        return 2
    sys.argv = argv
    # A real module, installed as `sys.modules["__main__"]`, as `python` makes it: what
    # looks `__main__` up (`unittest.main()`, pickling a function for multiprocessing,
    # `typing.get_type_hints`) finds the check, not the runner (review 8).
    main_module = types.ModuleType("__main__")
    namespace: dict[str, Any] = main_module.__dict__
    namespace["__builtins__"] = builtins
    if filename != "<string>":
        namespace["__file__"] = filename
    sys.modules["__main__"] = main_module
    status = 1
    try:
        exec(compile(code, filename, "exec"), namespace)
        status = 0
    except SystemExit as stop:
        if stop.code is None or stop.code == 0:
            status = 0
        else:
            if not isinstance(stop.code, int):
                print(stop.code, file=sys.stderr)
            status = stop.code if isinstance(stop.code, int) and 0 < stop.code < 256 else 1
    except BaseException:
        traceback.print_exc()
        status = 1
    outcome = "passed" if status == 0 else "failed"
    record({"file": None, "cls": None, "name": "script", "outcome": outcome, "id": "script"})
    return status


# -------------------------------------------------------------------------- pytest
def run_pytest(
    args: list[str],
    root: str,
    report_dir: str,
    record: Callable[[dict[str, Any]], None],
    on_start: Callable[[], None],
    early: Callable[[], None] = lambda: None,
    seal: Callable[[], None] = lambda: None,
) -> int:
    from pathlib import Path

    import pytest
    from _pytest.config import findpaths

    here = os.path.dirname(os.path.abspath(__file__))
    inifile = os.path.join(here, "empty_pytest.ini")
    loaders = getattr(findpaths, "CONFIG_LOADERS_BY_NAME", None)
    names = list(loaders) if isinstance(loaders, dict) else ["pytest.ini"]
    # The tree's own configuration (restored from the template), at its root only:
    # pytest would also climb into the folders above it, which the grader never trusts.
    for name in names:
        path = os.path.join(root, name)
        if os.path.isfile(path) and not os.path.islink(path):
            loader = loaders.get(name) if isinstance(loaders, dict) else None
            try:
                found = loader(Path(path)) if loader is not None else {}
            except Exception:
                found = None
            if found is not None:
                inifile = path
                break

    class Recorder:
        def __init__(self) -> None:
            self.items: dict[str, dict[str, Any]] = {}
            self.outcomes: dict[str, str] = {}

        @pytest.hookimpl(tryfirst=True)
        def pytest_load_initial_conftests(self, early_config: Any, parser: Any, args: Any) -> None:
            early()

        def pytest_sessionstart(self, session: Any) -> None:
            early()
            on_start()

        def pytest_collection_finish(self, session: Any) -> None:
            seal()  # every test module is imported: the hidden checks close (see `main`)
            for item in session.items:
                cls = getattr(item, "cls", None)
                path = getattr(item, "path", None)
                self.items[item.nodeid] = {
                    "file": os.path.abspath(str(path)) if path is not None else None,
                    "cls": cls.__qualname__ if isinstance(cls, type) else None,
                    "name": getattr(item, "originalname", None) or item.name,
                    "id": item.nodeid,
                }

        def pytest_collectreport(self, report: Any) -> None:
            if report.failed:
                record({"file": None, "cls": None, "name": report.nodeid or "collection",
                        "outcome": "error", "id": report.nodeid})  # fmt: skip

        def pytest_runtest_logreport(self, report: Any) -> None:
            xfail = hasattr(report, "wasxfail")
            if report.when == "call":
                if report.passed:
                    outcome = "xpassed" if xfail else "passed"
                elif report.skipped:
                    outcome = "xfailed" if xfail else "skipped"
                else:
                    outcome = "failed"
            elif report.failed:
                outcome = "error"
            elif report.skipped:
                outcome = "xfailed" if xfail else "skipped"
            else:
                return
            if self.outcomes.get(report.nodeid) in ("failed", "error"):
                return
            self.outcomes[report.nodeid] = outcome

        def pytest_sessionfinish(self, session: Any) -> None:
            for nodeid, outcome in self.outcomes.items():
                item = self.items.get(nodeid) or {"file": None, "cls": None, "name": nodeid,
                                                  "id": nodeid}  # fmt: skip
                record({**item, "outcome": outcome})

    junit = os.path.join(report_dir, "junit.xml")
    options = [
        *args,
        "-p", "no:cacheprovider",
        f"--junitxml={junit}",
        f"--rootdir={root}",
        f"--confcutdir={root}",
        "-c", inifile,
    ]  # fmt: skip
    code = pytest.main(options, plugins=[Recorder()])
    return int(code)


# ---------------------------------------------------------------------------- main
def _not_dumpable() -> None:
    """No process of this user may read this one's memory or descriptors (ptrace,
    /proc/PID/mem, /proc/PID/fd): the solution process and what the tests start run as
    the same user."""
    import ctypes

    pr_set_dumpable = 4
    if ctypes.CDLL(None, use_errno=True).prctl(pr_set_dumpable, 0, 0, 0, 0) != 0:
        print("ilh runner: cannot make the runner non-dumpable", file=sys.stderr)
        os._exit(2)


def _load_bridge() -> types.ModuleType:
    """`ilh_bridge.py` beside this file (isolated mode puts no script folder on the path).
    Loaded before the guard's snapshot, under a name no tree can have."""
    import importlib.util

    here = os.path.dirname(os.path.abspath(__file__))
    path = os.path.join(here, "ilh_bridge.py")
    spec = importlib.util.spec_from_file_location("_ilh_bridge", path)
    if spec is None or spec.loader is None:
        raise ImportError("ilh_bridge.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["_ilh_bridge"] = module
    spec.loader.exec_module(module)
    return module


def run_guarded(
    kind: str,
    root: str,
    args: list[str],
    report_dir: str,
    hidden: list[str],
    trusted: frozenset[str],
    path: list[str],
    verified: bytes | None = None,
    python: str | None = None,
    task_files: frozenset[str] | None = None,
) -> tuple[int, list[dict[str, Any]], list[str]]:
    """Run `kind` over the tree at `root` with the guard on and the agent's modules in the
    solution process (unable to read `hidden`); (status, the tests recorded, what the
    code under test replaced). `path`: the folders put first on the import path (as
    `python` would: the tree, or the working folder); `trusted`: the tree's files the
    runner imports itself; `verified`: a script's checked bytes (`run_script`); `python`:
    what `sys.executable` says once the solution process runs (`ilh_python.py`: the
    check's own `subprocess.run([sys.executable, …])` is run by the harness too);
    `task_files`: in a free check, the tree's files that are the task's
    (`SolutionFinder`: no other file of the tree stands for a standard or installed
    module)."""
    # The runner, imported completely before the tree is on the import path.
    import unittest
    import unittest.mock  # noqa: F401  (its helpers exist before any test code does)

    prefixes: tuple[str, ...] = _GUARDED
    allowed: Callable[[object], bool] = lambda hook: False  # noqa: E731
    if kind == "pytest":
        import _pytest.assertion.rewrite
        import pytest  # noqa: F401

        rewrite_hook = _pytest.assertion.rewrite.AssertionRewritingHook
        allowed = lambda hook: isinstance(hook, rewrite_hook)  # noqa: E731
        prefixes = prefixes + _GUARDED_PYTEST
    bridge = _load_bridge()
    gc.collect()
    guard = Guard(prefixes)
    findings = guard.findings
    tests: list[dict[str, Any]] = []
    record = tests.append

    sys.path[0:0] = path  # as `python -m` would: the tree's modules importable
    here = os.path.dirname(os.path.abspath(__file__))
    # The hidden checks (their tests run here) and this report folder are not the
    # solution's to read.
    peer, solution_pid = bridge.start_solution(root, here, hidden)
    if python is not None:
        sys.executable = python
    guard.trusted_files = frozenset(os.path.realpath(os.path.join(root, t)) for t in trusted)
    finder = bridge.SolutionFinder(peer, root, trusted, task_files)
    sys.meta_path.insert(0, finder)
    before = allowed
    allowed = lambda hook: hook is finder or before(hook)  # noqa: E731

    def front() -> None:
        """The solution's modules are served as proxies before any other finder (pytest's
        assertion rewriter, installed later, would import a module its configuration
        names into this process)."""
        if sys.meta_path[:1] != [finder]:
            if finder in sys.meta_path:
                sys.meta_path.remove(finder)
            sys.meta_path.insert(0, finder)

    def seal() -> None:
        """Close the hidden checks to this process and all it starts from now on, once the
        tests are loaded. Why: a test may start the agent's code in a process of its own
        (`subprocess.run([sys.executable, "calc.py"])`), outside the solution process's
        Landlock domain; that code read the hidden tests and was verified. The cost: a
        hidden test reading its own folder while it runs (not at import) fails, closed."""
        checks = os.environ.get("ILH_CHECKS")
        problem = bridge.hide([checks]) if checks else None
        if problem is not None:
            print(f"ilh runner: the hidden checks stay open to what the tests start: {problem}",
                  file=sys.stderr)  # fmt: skip

    status = 2
    try:
        if kind == "pytest":
            status = run_pytest(args, root, report_dir, record, guard.rebase, front, seal)
        elif kind == "script":
            status = run_script(args, record, verified)
        else:
            status = run_unittest(args, record, seal)
    except BaseException as stop:
        print(f"ilh runner: the run ended with {type(stop).__name__}", file=sys.stderr)
        status = 3
    with contextlib.suppress(OSError):
        os.killpg(solution_pid, 9)
    tampered = findings(allowed)
    if tampered:
        status = status or 1
    return status, tests, tampered


def main(argv: list[str]) -> None:
    if len(argv) < 3 or argv[1] not in ("pytest", "unittest", "script"):
        print(
            "usage: ilh_runner.py REPORT_DIR pytest|unittest|script ROOT [ARGS...]",
            file=sys.stderr,
        )
        os._exit(2)
    report_dir, kind, root, args = argv[0], argv[1], argv[2], argv[3:]
    exit_now, dumps, sha256 = os._exit, json.dumps, hashlib.sha256
    open_file, flush_out, flush_err = builtins.open, sys.stdout.flush, sys.stderr.flush
    nonce_path = os.path.join(report_dir, "nonce")
    with open_file(nonce_path, encoding="ascii") as handle:
        nonce = handle.read().strip()
    os.unlink(nonce_path)
    # The private report and the tree's trusted files (see `ilh_bridge`): read and
    # removed before any other process of this user exists.
    bridge_path = os.path.join(report_dir, "bridge.json")
    with open_file(bridge_path, encoding="utf-8") as config_file:
        bridge_config = json.load(config_file)
    os.unlink(bridge_path)
    report_fd = int(bridge_config["report_fd"])
    os.set_inheritable(report_fd, False)
    _not_dumpable()

    hidden = [p for p in (os.environ.get("ILH_CHECKS"), report_dir) if p]
    trusted = frozenset(str(t) for t in bridge_config.get("trusted") or ())
    os.chdir(root)
    status, tests, tampered = run_guarded(kind, root, args, report_dir, hidden, trusted, [root])
    junit_digest = None
    if kind == "pytest":
        try:
            with open_file(os.path.join(report_dir, "junit.xml"), "rb") as junit_file:
                junit_digest = sha256(junit_file.read()).hexdigest()
        except OSError:
            junit_digest = None
    report = {
        "nonce": nonce,
        "kind": kind,
        "finished": True,
        "exit_code": status,
        "tests": tests,
        "tampered": tampered,
        "junit_sha256": junit_digest,
    }
    # Only this process holds the descriptor (not inherited, not dumpable): whatever
    # was written to it before (a callback the solution abused) is cut away.
    data = dumps(report).encode("utf-8")
    os.ftruncate(report_fd, 0)
    written = 0
    while written < len(data):
        written += os.pwrite(report_fd, data[written:], written)
    try:
        flush_out()
        flush_err()
    finally:
        exit_now(0 if status == 0 else 1)
