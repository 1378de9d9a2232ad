"""Runner-aware tool checks: a check that runs pytest or unittest passes only on the
runner's own report, never on an exit code alone.

A test process runs the agent's code: whatever that code does at import (`os._exit(0)`,
an `atexit` hook, a patched `assertEqual`) happens inside the process whose exit code a
plain check trusts. So for a criterion that names a runner (`pytest = "tests/"`,
`unittest = "tests"`) or a free `run` command that is one simple call of a known runner
(`pytest`, `py.test`, `python -m pytest`, `python -m unittest …`), the harness starts the
runner itself (`harness/grading/sandboxed/ilh_runner.py`), which writes a machine-readable
report outside the graded tree, and this module decides from that report:

* the report exists, carries the secret the harness gave that one run, and says the run
  finished (a process that exited 0 before writing it never ran the tests);
* the process exited 0 and its in-process guard found nothing of the runner replaced;
* every test the *template's* test files define for that selection (read here from the
  snapshot, with Python's `ast`: the agent cannot change what is required) was reported
  as run and passed; a skip counts only where the template itself marks a test
  skippable; nothing failed or errored; at least one test ran.

When the command selects tests in a way this module does not model (`-k`, `-m`,
`--deselect`, node ids), the required set is unknown: the rest still holds, and every
skipped test must be one the template marks skippable.

This module is pure: it reads the template snapshot and the report files, and runs
nothing (`graders` never depends on `harness`).
"""

from __future__ import annotations

import ast
import configparser
import fnmatch
import json
import re
import shlex
import tomllib
import xml.etree.ElementTree as ElementTree
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path, PurePosixPath
from typing import Literal

from pydantic import BaseModel, ConfigDict, ValidationError

RunnerKind = Literal["pytest", "unittest", "script"]
Outcome = Literal["passed", "failed", "error", "skipped", "xfailed", "xpassed"]

#: Names of the fixed folder a hidden check's command may refer to (`$ILH_CHECKS`).
CHECKS_VARIABLE = "ILH_CHECKS"
_CHECKS_REF = re.compile(r"\$\{?" + CHECKS_VARIABLE + r"\}?(?![A-Za-z0-9_])")

#: Characters that make a command more than one simple call (the shell would expand,
#: redirect, chain or substitute): such a command keeps exit-code semantics.
_SHELL_SPECIAL = set("|&;<>()$`\\\n*?[]{}~!#")
_PYTHON = re.compile(r"^(?:.*/)?python(?:3(?:\.\d+)?)?$")
_PYTHON_FLAGS = {"-B", "-u", "-s", "-E", "-I", "-P", "-b", "-bb", "-O", "-OO", "-q", "-S"}

_MAX_SNAPSHOT_FILES = 20_000
_MAX_TEST_SOURCE = 2 * 1024 * 1024
_SKIP_WORDS = re.compile(r"skip|xfail|expectedFailure|importorskip")


class RunnerCall(BaseModel):
    """One call of a known test runner, with its arguments (after the runner's name)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: RunnerKind
    args: tuple[str, ...] = ()

    def shown(self) -> str:
        if self.kind == "script":
            return " ".join(["python", *(shlex.quote(a) for a in self.args)])
        head = "pytest" if self.kind == "pytest" else "python -m unittest"
        return " ".join([head, *(shlex.quote(a) for a in self.args)])


def expand_checks(text: str, checks_path: str) -> str:
    return _CHECKS_REF.sub(lambda _: checks_path, text)


def runner_call(command: str, checks_path: str | None = None) -> RunnerCall | None:
    """The runner a free `run` command calls, when it is one simple call of a known
    runner (`pytest …`, `py.test …`, `python[3] [-B…] -m pytest|unittest …`); None for
    anything else, which keeps exit-code semantics. `$ILH_CHECKS` is expanded first."""
    if checks_path is not None:
        command = expand_checks(command, checks_path)
    if set(command) & _SHELL_SPECIAL - {"\\"} and not _only_quoted_specials(command):
        return None
    try:
        argv = shlex.split(command)
    except ValueError:
        return None
    argv = _unwrapped(argv)
    if not argv:
        return None
    head = PurePosixPath(argv[0]).name
    if head in ("pytest", "py.test"):
        return RunnerCall(kind="pytest", args=tuple(argv[1:]))
    if not _PYTHON.match(argv[0]):
        return None
    rest = argv[1:]
    while rest and rest[0] in _PYTHON_FLAGS:
        rest = rest[1:]
    if len(rest) < 2 or rest[0] != "-m":
        return None
    if rest[1] in ("pytest", "py.test"):
        return RunnerCall(kind="pytest", args=tuple(rest[2:]))
    if rest[1] == "unittest":
        return RunnerCall(kind="unittest", args=tuple(rest[2:]))
    return None


def script_call(command: str, task_script: Callable[[str], bool]) -> RunnerCall | None:
    """A free `run` command that is one simple call of Python running the task's own
    code: `python [flags] -c CODE [ARGS…]` (the code is the task file's), or
    `python [flags] SCRIPT [ARGS…]` when `task_script(SCRIPT)` (a check script the
    grading tree restores from the template). The harness's runner runs it (kind
    `script`), so the agent's modules it imports cannot choose its exit status
    (`os._exit(0)` at import, an `atexit` hook after a failed assertion: attack6). Any
    other command (a shell line, the agent's own script) keeps exit-code semantics."""
    if set(command) & _SHELL_SPECIAL - {"\\"} and not _only_quoted_specials(command):
        return None
    try:
        argv = _unwrapped(shlex.split(command))
    except ValueError:
        return None
    if not argv or not _PYTHON.match(argv[0]):
        return None
    rest = argv[1:]
    while rest and rest[0] in _PYTHON_FLAGS:
        rest = rest[1:]
    if len(rest) >= 2 and rest[0] == "-c":
        return RunnerCall(kind="script", args=tuple(rest))
    if rest and not rest[0].startswith("-") and task_script(rest[0]):
        return RunnerCall(kind="script", args=tuple(rest))
    return None


#: Programs that only run the command after them: `timeout 60 python -m pytest` is the
#: runner's call (the check has its own time limit). Without this, such a check kept
#: exit-code semantics, and the code under test ended the run with `os._exit(0)`.
_WRAPPERS = {"timeout": 1, "env": 0, "exec": 0, "nice": 0, "command": 0, "nohup": 0}
_WRAPPER_VALUED = {"-s", "--signal", "-k", "--kill-after", "-n", "--adjustment"}


def _unwrapped(argv: list[str]) -> list[str]:
    """`argv` past its wrappers (`timeout [-k 5] 60`, `env`, `exec`, `nice [-n N]`); an
    `env` that sets or unsets variables is not unwrapped (the run would differ)."""
    while argv and PurePosixPath(argv[0]).name in _WRAPPERS:
        name = PurePosixPath(argv[0]).name
        rest = argv[1:]
        while rest and rest[0].startswith("-"):
            if name == "env":
                return argv  # `env -i`, `env -u NAME`: another environment
            rest = rest[2:] if rest[0] in _WRAPPER_VALUED else rest[1:]
        if name == "env" and rest and "=" in rest[0]:
            return argv
        argv = rest[_WRAPPERS[name] :]
    return argv


def _only_quoted_specials(command: str) -> bool:
    """True when every shell-special character sits inside single or double quotes
    (`-k "a or b"` is still one simple call); `$` and backquotes never are."""
    if "$" in command or "`" in command or "\\" in command:
        return False
    quote: str | None = None
    for ch in command:
        if quote is not None:
            if ch == quote:
                quote = None
        elif ch in "'\"":
            quote = ch
        elif ch in _SHELL_SPECIAL:
            return False
    return quote is None


def unittest_args(target: str, is_folder: bool) -> tuple[str, ...]:
    """The `python -m unittest` arguments of a `unittest = "…"` criterion: a folder is
    discovered (top level: the workspace), anything else is a module, file or test name."""
    if not is_folder:
        return (target,)
    # A folder outside the tree (the hidden checks) is its own top level.
    return ("discover", "-s", target, "-t", target if target.startswith("/") else ".")


# ------------------------------------------------------------------ required tests
class TemplateTest(BaseModel):
    """A test a template's test file defines, as a runner would report it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    root: str  # the path its root folder appears at to the runner ("/workspace")
    file: str  # relative to that root, with "/"
    cls: str | None  # the class's qualified name, None for a module-level function
    name: str
    may_skip: bool = False

    @property
    def key(self) -> tuple[str, str, str | None, str]:
        return (self.root, self.file, self.cls, self.name)

    def label(self) -> str:
        parts = [self.file, *([self.cls] if self.cls else []), self.name]
        return "::".join(parts)


class Selection(BaseModel):
    """What a runner call must show: `required` (None when the selection is not modeled)
    and every test the snapshot defines (for `may_skip`)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    required: tuple[TemplateTest, ...] | None
    known: tuple[TemplateTest, ...]
    why_unmodeled: str = ""


class _Patterns(BaseModel):
    model_config = ConfigDict(frozen=True)

    files: tuple[str, ...] = ("test_*.py", "*_test.py")
    classes: tuple[str, ...] = ("Test",)
    functions: tuple[str, ...] = ("test",)
    norecurse: tuple[str, ...] = (
        "*.egg", ".*", "_darcs", "build", "CVS", "dist", "node_modules", "venv", "{arch}",
    )  # fmt: skip
    testpaths: tuple[str, ...] = ()


def _split_option(value: object) -> tuple[str, ...] | None:
    if isinstance(value, str):
        return tuple(value.split())
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return tuple(value)
    return None


def pytest_patterns(root: Path) -> _Patterns:
    """The collection options of the template's pytest configuration at its root
    (`python_files`, `python_classes`, `python_functions`, `norecursedirs`, `testpaths`),
    found in pytest's order; the defaults when there is none."""
    options: dict[str, object] | None = None
    for name in ("pytest.toml", ".pytest.toml", "pytest.ini", ".pytest.ini"):
        path = root / name
        if path.is_file() and not path.is_symlink():
            options = _read_config(path, "pytest") or {}
            break
    if options is None:
        for name, section in (
            ("pyproject.toml", ""),
            ("tox.ini", "pytest"),
            ("setup.cfg", "tool:pytest"),
        ):
            path = root / name
            if path.is_file() and not path.is_symlink():
                found = _read_config(path, section)
                if found is not None:
                    options = found
                    break
    if not options:
        return _Patterns()
    update: dict[str, tuple[str, ...]] = {}
    for key, field in (
        ("python_files", "files"),
        ("python_classes", "classes"),
        ("python_functions", "functions"),
        ("norecursedirs", "norecurse"),
        ("testpaths", "testpaths"),
    ):
        value = _split_option(options.get(key))
        if value is not None:
            update[field] = value
    return _Patterns().model_copy(update=update)


def _read_config(path: Path, section: str) -> dict[str, object] | None:
    """The pytest options of one configuration file, None when it has none."""
    try:
        if path.suffix == ".toml":
            data = tomllib.loads(path.read_text(encoding="utf-8"))
            if path.name == "pyproject.toml":
                tool = data.get("tool", {})
                pytest_table = tool.get("pytest", {}) if isinstance(tool, dict) else {}
                if not isinstance(pytest_table, dict):
                    return None
                legacy = pytest_table.get("ini_options")
                if isinstance(legacy, dict):
                    return dict(legacy)
                rest = {k: v for k, v in pytest_table.items() if k != "ini_options"}
                return rest or None
            table = data.get("pytest", data)
            return dict(table) if isinstance(table, dict) else None
        parser = configparser.ConfigParser(interpolation=None)
        parser.read_string(path.read_text(encoding="utf-8"))
        if not parser.has_section(section):
            return None
        return {k: v for k, v in parser.items(section)}
    except (
        OSError,
        UnicodeDecodeError,
        tomllib.TOMLDecodeError,
        configparser.Error,
        RecursionError,  # arrays nested past Python's limit do not parse either
    ):
        return None


def _prefix_or_glob(name: str, options: Sequence[str]) -> bool:
    for option in options:
        if name.startswith(option):
            return True
        if any(ch in option for ch in "*?[") and fnmatch.fnmatchcase(name, option):
            return True
    return False


class _Defined(BaseModel):
    """A test found in a source file (before its root is known)."""

    cls: str | None
    name: str
    may_skip: bool


def _mentions_skip(nodes: Sequence[ast.AST]) -> bool:
    for node in nodes:
        for sub in ast.walk(node):
            if isinstance(sub, ast.Attribute) and _SKIP_WORDS.search(sub.attr):
                return True
            if isinstance(sub, ast.Name) and _SKIP_WORDS.search(sub.id):
                return True
    return False


def _sets_false(body: Sequence[ast.stmt], name: str) -> bool:
    for stmt in body:
        if isinstance(stmt, ast.Assign) and isinstance(stmt.value, ast.Constant):
            targets = [t.id for t in stmt.targets if isinstance(t, ast.Name)]
            if name in targets and stmt.value.value is False:
                return True
    return False


def _base_names(cls: ast.ClassDef) -> list[str]:
    names: list[str] = []
    for base in cls.bases:
        if isinstance(base, ast.Name):
            names.append(base.id)
        elif isinstance(base, ast.Attribute):
            names.append(base.attr)
    return names


def defined_tests(source: str, kind: RunnerKind, patterns: _Patterns) -> list[_Defined]:
    """The tests a test module defines, as `kind` would collect them (a static reading:
    module-level test functions, test classes and their test methods, methods inherited
    from classes of the same module included). A file that does not parse defines none
    (the runner will report its import error)."""
    try:
        module = ast.parse(source)
    except (SyntaxError, ValueError):
        return []
    if kind == "pytest" and _sets_false(module.body, "__test__"):
        return []
    module_skip = any(
        isinstance(s, ast.Assign)
        and any(isinstance(t, ast.Name) and t.id == "pytestmark" for t in s.targets)
        and _mentions_skip([s.value])
        for s in module.body
    )
    classes = {s.name: s for s in module.body if isinstance(s, ast.ClassDef)}
    testcase_memo: dict[str, bool] = {}

    def is_testcase(name: str, seen: frozenset[str] = frozenset()) -> bool:
        if name in testcase_memo:
            return testcase_memo[name]
        node = classes.get(name)
        result = False
        if node is not None and name not in seen:
            for base in _base_names(node):
                if base.endswith("TestCase") or is_testcase(base, seen | {name}):
                    result = True
        testcase_memo[name] = result
        return result

    def methods(node: ast.ClassDef, seen: frozenset[str] = frozenset()) -> dict[str, ast.AST]:
        found: dict[str, ast.AST] = {}
        for base in _base_names(node):
            if base in classes and base not in seen:
                found.update(methods(classes[base], seen | {node.name}))
        for stmt in node.body:
            if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef):
                found[stmt.name] = stmt
        return found

    out: list[_Defined] = []

    def visit_class(node: ast.ClassDef, qualname: str, outer_skip: bool) -> None:
        if classes.get(node.name) is node:
            testcase = is_testcase(node.name)
        else:
            testcase = any(b.endswith("TestCase") or is_testcase(b) for b in _base_names(node))
        if _sets_false(node.body, "__test__"):
            return
        if testcase:
            prefix: Sequence[str] = ("test",)
            exact_prefix = True
        elif kind == "pytest" and _prefix_or_glob(node.name, patterns.classes):
            if any(isinstance(s, ast.FunctionDef) and s.name == "__init__" for s in node.body):
                return  # pytest does not collect a test class with __init__
            prefix, exact_prefix = patterns.functions, False
        else:
            return
        class_skip = outer_skip or _mentions_skip(node.decorator_list)
        for name, fn in methods(node).items():
            matches = name.startswith("test") if exact_prefix else _prefix_or_glob(name, prefix)
            if not matches or not isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            skip = class_skip or _mentions_skip(fn.decorator_list) or _mentions_skip(fn.body)
            out.append(_Defined(cls=qualname, name=name, may_skip=skip))
        if kind == "pytest" and not testcase:
            for stmt in node.body:
                if isinstance(stmt, ast.ClassDef):
                    visit_class(stmt, f"{qualname}.{stmt.name}", class_skip)

    for stmt in module.body:
        if isinstance(stmt, ast.ClassDef):
            visit_class(stmt, stmt.name, module_skip)
        elif (
            kind == "pytest"
            and isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef)
            and _prefix_or_glob(stmt.name, patterns.functions)
        ):
            skip = module_skip or _mentions_skip(stmt.decorator_list) or _mentions_skip(stmt.body)
            out.append(_Defined(cls=None, name=stmt.name, may_skip=skip))
    return out


def _read_source(path: Path) -> str | None:
    try:
        if path.is_symlink() or not path.is_file() or path.stat().st_size > _MAX_TEST_SOURCE:
            return None
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None


def _walk_py(folder: Path, norecurse: Sequence[str], packages_only: bool) -> Iterator[Path]:
    """Python files below `folder`, sorted, never through symlinks; `packages_only`:
    only into sub-folders with an `__init__.py` (unittest discovery)."""
    count = 0
    stack = [folder]
    while stack:
        current = stack.pop()
        try:
            entries = sorted(current.iterdir(), key=lambda p: p.name)
        except OSError:
            continue
        subdirs: list[Path] = []
        for entry in entries:
            if entry.is_symlink():
                continue
            if entry.is_dir():
                if entry.name == "__pycache__" or any(
                    fnmatch.fnmatchcase(entry.name, pat) for pat in norecurse
                ):
                    continue
                if (entry / "pyvenv.cfg").exists():
                    continue
                if packages_only and not (entry / "__init__.py").is_file():
                    continue
                subdirs.append(entry)
            elif entry.suffix == ".py":
                count += 1
                if count > _MAX_SNAPSHOT_FILES:
                    return
                yield entry
        stack.extend(reversed(subdirs))


def _file_matches(path: Path, root: Path, globs: Sequence[str]) -> bool:
    rel = path.relative_to(root).as_posix()
    for glob in globs:
        if "/" in glob:
            if fnmatch.fnmatch(rel, glob) or fnmatch.fnmatch(str(path), glob):
                return True
        elif fnmatch.fnmatch(path.name, glob):
            return True
    return False


def _tests_of_file(
    path: Path, root_label: str, root: Path, kind: RunnerKind, patterns: _Patterns
) -> list[TemplateTest]:
    source = _read_source(path)
    if source is None:
        return []
    rel = path.relative_to(root).as_posix()
    return [
        TemplateTest(root=root_label, file=rel, cls=d.cls, name=d.name, may_skip=d.may_skip)
        for d in defined_tests(source, kind, patterns)
    ]


_PYTEST_VALUE_OPTIONS = {
    "-c", "-p", "-o", "-W", "-r", "--rootdir", "--confcutdir", "--junitxml", "--junit-xml",
    "--tb", "--durations", "--durations-min", "--maxfail", "--import-mode", "--basetemp",
    "--log-level", "--log-format", "--log-file", "--capture", "--color", "--code-highlight",
    "--junit-prefix", "--override-ini", "--config-file", "--debug", "--pythonwarnings",
    "--cov", "--cov-report", "-n", "--numprocesses", "--timeout", "--log-cli-level",
}  # fmt: skip
_PYTEST_SELECTING = {"-k", "-m", "--deselect", "--ignore", "--ignore-glob", "--lf",
                     "--last-failed", "--sw", "--stepwise", "--pyargs", "--doctest-modules",
                     "--collect-only", "--co", "--ff", "--nf", "--new-first"}  # fmt: skip


def _resolve(arg: str, roots: Mapping[str, Path], cwd_label: str) -> tuple[str, Path] | None:
    """(root label, path in its snapshot) of a path argument, or None outside them."""
    for label, folder in roots.items():
        if arg == label or arg.startswith(label.rstrip("/") + "/"):
            rel = arg[len(label) :].lstrip("/")
            return label, (folder / rel) if rel else folder
    if arg.startswith("/"):
        return None
    relative = PurePosixPath(arg)
    if ".." in relative.parts:
        return None
    return cwd_label, roots[cwd_label] / relative


def pytest_selection(args: Sequence[str], roots: Mapping[str, Path], cwd: str) -> Selection:
    """The tests `pytest ARGS` must run, read from the snapshots (`roots`: the path each
    snapshot appears at → the snapshot folder; `cwd`: the label of the graded tree)."""
    patterns = pytest_patterns(roots[cwd])
    known = _known_tests("pytest", roots, patterns)
    paths: list[str] = []
    skip_next = False
    unmodeled = ""
    for arg in args:
        if skip_next:
            skip_next = False
            continue
        name = arg.split("=", 1)[0]
        if name in _PYTEST_SELECTING or (
            (arg.startswith("-k") or arg.startswith("-m"))
            and len(arg) > 2
            and not arg.startswith("--")
        ):
            unmodeled = f"the command selects tests itself ({name})"
            if name in ("-k", "-m", "--deselect", "--ignore", "--ignore-glob") and "=" not in arg:
                skip_next = True
            continue
        if arg.startswith("-"):
            if name in _PYTEST_VALUE_OPTIONS and "=" not in arg and len(arg) == len(name):
                skip_next = True
            continue
        if "::" in arg:
            unmodeled = "the command names single tests (node ids)"
            continue
        paths.append(arg)
    if unmodeled:
        return Selection(required=None, known=tuple(known), why_unmodeled=unmodeled)
    if not paths:
        paths = list(patterns.testpaths) or ["."]
    required: dict[tuple[str, str, str | None, str], TemplateTest] = {}
    for arg in paths:
        resolved = _resolve(arg, roots, cwd)
        if resolved is None:
            return Selection(
                required=None, known=tuple(known), why_unmodeled=f"{arg} is outside the tree"
            )
        label, target = resolved
        root = roots[label]
        if target.is_file():
            files: list[Path] = [target]
        elif target.is_dir():
            files = [
                f
                for f in _walk_py(target, patterns.norecurse, packages_only=False)
                if _file_matches(f, root, patterns.files)
            ]
        else:
            continue  # the runner reports a missing path as an error
        for f in files:
            for test in _tests_of_file(f, label, root, "pytest", patterns):
                required.setdefault(test.key, test)
    return Selection(required=tuple(required.values()), known=tuple(known))


def _known_tests(
    kind: RunnerKind, roots: Mapping[str, Path], patterns: _Patterns
) -> list[TemplateTest]:
    found: list[TemplateTest] = []
    for label, root in roots.items():
        for f in _walk_py(root, patterns.norecurse, packages_only=False):
            found += _tests_of_file(f, label, root, kind, patterns)
    return found


_UNITTEST_FLAGS = {"-v", "--verbose", "-q", "--quiet", "-f", "--failfast", "-c", "--catch",
                   "-b", "--buffer", "--locals"}  # fmt: skip


def unittest_selection(args: Sequence[str], roots: Mapping[str, Path], cwd: str) -> Selection:
    """The tests `python -m unittest ARGS` must run (discovery, or named modules,
    classes and methods), read from the snapshots."""
    patterns = _Patterns()
    known = _known_tests("unittest", roots, patterns)
    rest = list(args)
    positional: list[str] = []
    options: dict[str, str] = {}
    while rest:
        arg = rest.pop(0)
        if arg in _UNITTEST_FLAGS:
            continue
        if arg in ("-k", "--durations"):
            if arg == "-k":
                return Selection(
                    required=None, known=tuple(known),
                    why_unmodeled="the command selects tests itself (-k)",
                )  # fmt: skip
            if rest:
                rest.pop(0)
            continue
        if arg in ("-s", "--start-directory", "-p", "--pattern", "-t", "--top-level-directory"):
            options[arg.lstrip("-")[0]] = rest.pop(0) if rest else ""
            continue
        if arg.startswith("-"):
            return Selection(
                required=None, known=tuple(known), why_unmodeled=f"unknown option {arg}"
            )
        positional.append(arg)
    if not positional or positional[0] == "discover":
        extra = positional[1:]
        start = options.get("s", extra[0] if extra else ".")
        pattern = options.get("p", extra[1] if len(extra) > 1 else "test*.py")
        top = options.get("t", extra[2] if len(extra) > 2 else None)
        return _discovered(start, pattern, top, roots, cwd, known)
    required: dict[tuple[str, str, str | None, str], TemplateTest] = {}
    for name in positional:
        tests = _named_tests(name, roots, cwd)
        if tests is None:
            return Selection(
                required=None, known=tuple(known), why_unmodeled=f"cannot resolve {name}"
            )
        for test in tests:
            required.setdefault(test.key, test)
    return Selection(required=tuple(required.values()), known=tuple(known))


_VALID_MODULE = re.compile(r"[_a-z]\w*\.py$", re.IGNORECASE)


def _discovered(
    start: str,
    pattern: str,
    top: str | None,
    roots: Mapping[str, Path],
    cwd: str,
    known: Sequence[TemplateTest],
) -> Selection:
    resolved = _resolve(start, roots, cwd)
    if resolved is None or not resolved[1].is_dir():
        why = f"cannot resolve the start folder {start}"
        return Selection(required=None, known=tuple(known), why_unmodeled=why)
    label, folder = resolved
    root = roots[label]
    required: list[TemplateTest] = []
    patterns = _Patterns(norecurse=("__pycache__",))
    # The start folder itself is searched whatever it holds; below it, packages only.
    for f in _walk_py(folder, patterns.norecurse, packages_only=True):
        if _VALID_MODULE.match(f.name) and fnmatch.fnmatch(f.name, pattern):
            required += _tests_of_file(f, label, root, "unittest", patterns)
    del top  # ids are matched by file, so the top-level folder does not change them
    return Selection(required=tuple(required), known=tuple(known))


def _named_tests(name: str, roots: Mapping[str, Path], cwd: str) -> list[TemplateTest] | None:
    """Tests of `python -m unittest NAME`: a file path, a module, a class or a method."""
    patterns = _Patterns()
    if name.endswith(".py"):
        resolved = _resolve(name, roots, cwd)
        if resolved is None or not resolved[1].is_file():
            return None
        label, path = resolved
        return _tests_of_file(path, label, roots[label], "unittest", patterns)
    parts = name.split(".")
    root = roots[cwd]
    for cut in range(len(parts), 0, -1):
        module = root.joinpath(*parts[:cut])
        for candidate in (module.with_suffix(".py"), module / "__init__.py"):
            if candidate.is_file():
                tests = _tests_of_file(candidate, cwd, root, "unittest", patterns)
                inner = parts[cut:]
                if not inner:
                    return tests
                if len(inner) == 1:
                    return [t for t in tests if t.cls == inner[0]]
                wanted_cls, wanted = ".".join(inner[:-1]), inner[-1]
                picked = [t for t in tests if t.cls == wanted_cls and t.name == wanted]
                return picked or [t for t in tests if t.cls == ".".join(inner)]
    return None


def selection(call: RunnerCall, roots: Mapping[str, Path], cwd: str) -> Selection:
    if call.kind == "script":
        return Selection(required=(), known=(), why_unmodeled="a check script")
    if call.kind == "pytest":
        return pytest_selection(call.args, roots, cwd)
    return unittest_selection(call.args, roots, cwd)


# ------------------------------------------------------------------------ reports
class ReportedTest(BaseModel):
    """One test as the harness's runner reported it."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    file: str | None
    cls: str | None = None
    name: str
    outcome: Outcome
    id: str = ""


class RunnerReport(BaseModel):
    """The harness runner's report (`ilh_runner.py`), validated before use."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    nonce: str
    kind: RunnerKind
    finished: bool
    exit_code: int
    tests: tuple[ReportedTest, ...] = ()
    tampered: tuple[str, ...] = ()
    junit_sha256: str | None = None


#: Longest report the harness reads (a report is a few KiB per hundred tests).
MAX_REPORT_BYTES = 32 * 1024 * 1024


def parse_report(data: bytes) -> RunnerReport | None:
    """The runner's report from its bytes (None when absent, oversized or malformed)."""
    if not data or len(data) > MAX_REPORT_BYTES:
        return None
    try:
        return RunnerReport.model_validate(json.loads(data))
    except (ValueError, RecursionError, ValidationError):
        return None


class JunitCounts(BaseModel):
    model_config = ConfigDict(frozen=True)

    tests: int
    bad: int  # failures and errors


def junit_counts(path: Path) -> JunitCounts | None:
    """Test cases, and failed or errored ones, of a JUnit XML report."""
    try:
        if path.is_symlink() or not path.is_file() or path.stat().st_size > MAX_REPORT_BYTES:
            return None
        root = ElementTree.fromstring(path.read_bytes())
    except (OSError, ElementTree.ParseError):
        return None
    cases = list(root.iter("testcase"))
    bad = sum(1 for c in cases if c.find("failure") is not None or c.find("error") is not None)
    return JunitCounts(tests=len(cases), bad=bad)


# ------------------------------------------------------------------------ verdict
class RunVerdict(BaseModel):
    model_config = ConfigDict(frozen=True)

    passed: bool
    detail: str


_SHOWN = 5


def _names(tests: Sequence[str]) -> str:
    shown = ", ".join(tests[:_SHOWN])
    return shown + (f" and {len(tests) - _SHOWN} more" if len(tests) > _SHOWN else "")


def _locate(file: str | None, roots: Sequence[str]) -> tuple[str, str] | None:
    if file is None:
        return None
    for label in sorted(roots, key=len, reverse=True):
        prefix = label.rstrip("/") + "/"
        if file.startswith(prefix):
            return label, file[len(prefix) :]
    return None


def judge_run(
    report: RunnerReport | None,
    *,
    nonce: str,
    exit_code: int,
    chosen: Selection,
    roots: Sequence[str],
    junit: JunitCounts | None = None,
    junit_sha256: str | None = None,
) -> RunVerdict:
    """Pass only when the runner's report is there, complete and its own, and shows
    every required test run and passed (see the module docstring)."""

    def fail(why: str) -> RunVerdict:
        return RunVerdict(passed=False, detail=why)

    if report is None or report.nonce != nonce or not report.finished:
        return fail(
            f"the test run ended (exit {exit_code}) without the runner's complete report: "
            "exit 0 from a process that never ran the tests is not a pass (something the "
            "tests imported ended the process early, or forged the report)"
        )
    if report.tampered:
        return fail(
            "the test process was tampered with: the code under test replaced "
            + _names(list(report.tampered))
        )
    if report.kind == "pytest":
        if junit is None or junit_sha256 is None or junit_sha256 != report.junit_sha256:
            return fail("pytest's JUnit report is missing or was changed after the run")
        if junit.tests != len(report.tests) or (junit.bad == 0) != all(
            t.outcome not in ("failed", "error") for t in report.tests
        ):
            return fail("pytest's JUnit report and the runner's record disagree")
    by_key: dict[tuple[str, str, str | None, str], list[ReportedTest]] = {}
    for test in report.tests:
        where = _locate(test.file, roots)
        if where is not None:
            by_key.setdefault((where[0], where[1], test.cls, test.name), []).append(test)
    bad = [t.id or t.name for t in report.tests if t.outcome in ("failed", "error", "xpassed")]
    total = len(report.tests)
    if bad:
        return fail(f"{len(bad)} of {total} tests failed or errored: {_names(bad)}")
    if total == 0:
        return fail("no test ran")
    if exit_code != 0 or report.exit_code != 0:
        return fail(f"the test runner exited {exit_code} (its own status {report.exit_code})")
    if report.kind == "script":
        return RunVerdict(
            passed=True,
            detail="the check script ran to its end in the harness's runner and exited 0",
        )
    skippable = {t.key for t in chosen.known if t.may_skip}
    if chosen.required is not None:
        skippable |= {t.key for t in chosen.required if t.may_skip}
    unexpected_skips: list[str] = []
    for test in report.tests:
        if test.outcome not in ("skipped", "xfailed"):
            continue
        where = _locate(test.file, roots)
        key = (where[0], where[1], test.cls, test.name) if where is not None else None
        if key not in skippable:
            unexpected_skips.append(test.id or test.name)
    if unexpected_skips:
        return fail(
            f"tests were skipped that the task's tests do not mark skippable: "
            f"{_names(unexpected_skips)}"
        )
    if chosen.required is None:
        return RunVerdict(
            passed=True,
            detail=f"{total} tests ran and passed (which tests must run is not known: "
            f"{chosen.why_unmodeled})",
        )
    missing = [t.label() for t in chosen.required if t.key not in by_key]
    if missing:
        return fail(f"tests the task defines did not run: {_names(missing)}")
    return RunVerdict(
        passed=True,
        detail=f"{total} tests ran and passed, every one of the {len(chosen.required)} "
        "the task's test files define among them",
    )
