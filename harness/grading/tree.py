"""The grading tree: what a tool check runs over instead of the agent's live workspace.

A tool check is only as good as the tests it runs, and the workspace is the agent's: it
can rewrite the tests, add a `conftest.py` or a `sitecustomize.py`, shadow a module the
runner imports (`iniconfig/`, `unittest.py`), leave forged bytecode in `__pycache__`, or
change the runner's configuration (`addopts = --collect-only`). So each check runs over
its own fresh copy of the workspace, rebuilt by one rule:

    the task's tests and test-runner configuration, the agent's other files.

Concretely, starting from a copy of the workspace (regular files and folders; symlinks
only when they stay inside it, dereferenced):

1. removed everywhere: bytecode (`__pycache__/`, `*.pyc`, `*.pyo`), `.pytest_cache/`,
   `*.pth` files;
2. when the template is known (`ilh run`'s snapshot, `ilh grade --baseline`), removed if
   the template did not have them: test files (`graders.baseline.is_test_file`: the usual
   names, anything under `tests/`…), runner configuration files (`pytest.ini`,
   `pytest.toml`, `tox.ini`, `setup.cfg`, `conftest.py`, `noxfile.py`, `Makefile`,
   `.coveragerc`, package managers' `.npmrc`/`.yarnrc`, anywhere), installed packages
   and programs (`node_modules/`, `*.dist-info`, `*.egg-info`: npm puts
   `node_modules/.bin` first on PATH, so an agent's `node` answered `node check.js`),
   `sitecustomize`/`usercustomize` modules anywhere, and, in
   the folders a test run puts on the import path (the root, and every folder holding
   one of the template's test files), any module or package whose name is a standard
   module or an installed one (`iniconfig/`, `unittest.py`, `json.py`…);
3. restored from the template: every test file, every runner configuration file, every
   file or folder a test runner's arguments name (`pytest verify/`) and the check script
   a free command runs (`sh check.sh`, `python verify.py`: see `check_scripts`):
   the template's bytes, whatever the agent made of them; and so is every *test data*
   file: a file of the template that is not Python source and that one of the
   template's test files names by a string literal (`"cases.json"`, `"data/in.txt"`,
   relative to the root or to the test's folder), or that lies in a folder a test names
   that way (`"fixtures"`): the expected values a test compares with are the task's,
   not the agent's to rewrite (see `task_test_data`); and so is everything the template
   ships under its test folders (`task_test_folders`: helpers such as
   `checks/helpers.py` included, the agent's additions there removed, and an agent
   module on the import path named like one of those helpers removed) and every root
   module of literals only that a test imports (`data_modules`: `expected.py`, or by a
   name it computes: `import_module("exp" + "ected")`), and every module a test imports
   that is test support (`_test_support`: named so, `testutil.py`, `helpers.py`, and
   asserting something). The names a test reads are its
   literals and the names it computes, followed through its variables, loops and
   `parametrize` values (`harness.grading.names`: `base + ext`, `os.path.join(d, n)`,
   `Path(d) / n` all resolve when their parts are literals). **Fail-closed rule**: when
   a test, a helper or a hidden test reads, lists or imports by a name that cannot be
   known before it runs (`os.listdir(here)`, a name read from `manifest.txt`,
   `Path(d) / n` with `n` a parameter, `import_module(name)`, `pkgutil.get_data`,
   `glob("*")`: `opaque_sources`), *every* data file of the template (`all_data`: not
   source of any language, documentation, a test or a manifest) and every data-only
   module (`every_data_module`) is the task's; an agent's edits to a data file survive
   only in a task whose tests name what they read. The Python check scripts a check
   runs are read for names like tests (`python check.py` reading `expected.json`), a free
   check's own line and the template's check recipes for the files they name
   (`diff - expected.txt`: `line_data`); a
   test or check script in another language (`check.sh`, `sum.test.js`, `check.js`) is
   opaque; the check scripts a restored shell check script runs are restored too
   (`script_scripts`). A file the agent adds where a test reads data by a pattern or a
   folder (`glob("cases/v*.json")`, `"fixtures"`) is removed unless a literal names it
   exactly (`DataScope.covers`); a document a test names is data unless it is a
   deliverable (`README.md`, `docs/…`: `_never_data`). The
   runner imports these Python files itself (`TreeChanges.trusted`). A `pyproject.toml` is kept as
   the agent wrote it only when its test-runner tables (`[tool.pytest…]`,
   `[tool.coverage…]`, `[tool.tox]`) equal the template's, and so is a `package.json`
   while its `scripts` and runner keys (`jest`, `mocha`…) do; otherwise the template's
   file is used (or, when the template had none, the agent's is removed).

Without a known template (`ilh grade` without `--baseline`) only step 1 applies: the
workspace's own tests and configuration are what the user asked to be trusted.

The template is always a snapshot taken when the run started (`snapshot_sources`),
never the task folder read live: an agent that could reach the task folder could
otherwise rewrite the tests it is graded by.
"""

from __future__ import annotations

import ast
import fnmatch
import functools
import importlib.metadata
import json
import os
import posixpath
import re
import shlex
import shutil
import stat
import sys
import tomllib
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from pydantic import BaseModel, ConfigDict

from graders.baseline import is_test_file
from harness.grading.names import by_identity, parsed_file, relative_name, scan
from harness.grading.support import is_reference, supports_tests, uses_test_framework
from harness.workspace.confined import MAX_WALK_DEPTH

#: Runner configuration files, by name, wherever they are.
RUNNER_CONFIGS = frozenset(
    {"pytest.ini", ".pytest.ini", "pytest.toml", ".pytest.toml", "tox.ini", "setup.cfg",
     "conftest.py", "noxfile.py", "Makefile", "makefile", "GNUmakefile", ".coveragerc",
     # JavaScript runners: their configuration decides which tests run and how.
     "jest.config.js", "jest.config.cjs", "jest.config.mjs", "jest.config.ts",
     "jest.config.json", "vitest.config.js", "vitest.config.mjs", "vitest.config.ts",
     "vitest.config.mts", ".mocharc.js", ".mocharc.cjs", ".mocharc.json", ".mocharc.yml",
     ".mocharc.yaml", ".mocharc.jsonc", "karma.conf.js", "ava.config.js", "ava.config.mjs",
     # Package managers' configuration: a project `.npmrc` with `script-shell=./yes.sh`
     # ran `npm test`'s restored script with the agent's shell (attack6).
     ".npmrc", ".yarnrc", ".yarnrc.yml", ".pnpmfile.cjs", "bunfig.toml"}
)  # fmt: skip
#: Folders whose programs and packages a check's tools find before the system's:
#: `node_modules/.bin/jest` answers a restored `"test": "jest"`; a `*.dist-info` folder on
#: the import path declares entry points (`pytest11` plugins pytest loads by itself).
_INSTALLED_DIRS = ("node_modules",)
_INSTALLED_SUFFIXES = (".dist-info", ".egg-info", ".egg-link", ".egg")
#: The `[tool.*]` tables of a pyproject.toml that configure a test run.
RUNNER_TABLES = ("pytest", "coverage", "tox")
_ALWAYS_HOOKS = frozenset({"sitecustomize", "usercustomize"})
_BYTECODE_DIRS = frozenset({"__pycache__", ".pytest_cache"})
_DROPPED_SUFFIXES = (".pyc", ".pyo", ".pth")
#: The harness's own top-level packages: installed, but never imported by a test run.
_OWN_PACKAGES = frozenset({"harness", "graders", "envelopes", "budgets", "examples"})

#: Most entries (files and folders) a workspace may have to be graded, and most bytes.
MAX_ENTRIES = 200_000
MAX_BYTES = 2 * 1024**3
#: Most folders deep a workspace may nest to be graded: as deep as the file tools go.
#: Deeper, Python 3.11's `os.walk` recursed past its limit and the grader ended with a
#: RecursionError (attack8).
MAX_DEPTH = MAX_WALK_DEPTH


class TreeError(OSError):
    """The grading tree cannot be built (too large, unreadable); the check is not run."""


class TreeChanges(BaseModel):
    """What the grading tree changed from the agent's workspace (workspace-relative)."""

    model_config = ConfigDict(frozen=True)

    restored: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()  # "path: why"
    skipped: tuple[str, ...] = ()  # links and special files not copied
    #: The task's Python files under its test folders (`task_test_folders`), restored: the
    #: runner imports them itself, never from the solution process the agent's code
    #: runs in (where that code could rewrite a helper's values after import).
    trusted: tuple[str, ...] = ()
    #: Every file of the tree that holds the task's bytes by this rule (restored, or
    #: already equal): a free check's sandbox shows them read-only (`harness.grading.
    #: checks`), or a build step the check ran first rewrote them before the tests read
    #: them (attack7).
    protected: tuple[str, ...] = ()

    @property
    def tampering(self) -> bool:
        """Did the agent change the task's tests or add a runner hook? (Agent-added test
        files and configuration alone are not tampering: they are just not used.)"""
        return bool(self.restored) or any("runner hook" in r for r in self.removed)

    def listing(self) -> str:
        lines = [f"restored from the task: {p}" for p in self.restored]
        lines += [f"removed: {r}" for r in self.removed]
        lines += [f"not copied: {s}" for s in self.skipped]
        return "\n".join(lines)


class GradingSources(BaseModel):
    """What the grader restores from and mounts: the template (a snapshot, or the
    `--baseline` folder) and the hidden checks (a snapshot too, under `ilh run`)."""

    model_config = ConfigDict(frozen=True)

    template: Path | None = None
    checks: Path | None = None


# ------------------------------------------------------------------------ names
@functools.cache
def shadowing_names() -> frozenset[str]:
    """Module names a file of the tree must not take unless the template had it: the
    standard library, every installed top-level module, the startup hooks."""
    installed: set[str] = set()
    try:
        for name, dists in importlib.metadata.packages_distributions().items():
            if name.isidentifier() and name not in _OWN_PACKAGES:
                installed.add(name)
            del dists
    except Exception:  # a broken installation: the standard names still apply
        installed = set()
    return frozenset(sys.stdlib_module_names) | frozenset(installed) | _ALWAYS_HOOKS


def module_name(entry: str) -> str | None:
    """The module an entry of a folder on the import path would be imported as."""
    if entry.endswith(".py"):
        stem = entry[:-3]
    elif entry.endswith((".so", ".pyd")):
        stem = entry.split(".", 1)[0]
    elif "." not in entry:
        stem = entry
    else:
        return None
    return stem if stem.isidentifier() else None


# -------------------------------------------------------------------- snapshots
def snapshot_folder(source: Path, target: Path) -> Path:
    """A private copy of `source` (the template, the hidden checks) in the run folder,
    outside every sandbox, taken once when the run starts; made read-only."""
    from harness.workspace.folder import Workspace

    copy = Workspace.create(target, source).root
    for folder, _dirs, files in os.walk(copy):
        for name in files:
            path = Path(folder, name)
            if not path.is_symlink():
                path.chmod(path.stat().st_mode & ~0o222)
    return copy


# ----------------------------------------------------------------------- the tree
def _remove(path: Path) -> None:
    if path.is_symlink() or not path.is_dir():
        path.unlink(missing_ok=True)
    else:
        shutil.rmtree(path)


def _inside(path: Path, root: Path) -> bool:
    try:
        path.resolve(strict=True).relative_to(root)
    except (OSError, ValueError, RuntimeError):
        return False
    return True


def _copy_workspace(workspace: Path, dest: Path) -> list[str]:
    """Copy the workspace (step 1's removals included); returns what was not copied."""
    root = workspace.resolve(strict=True)
    skipped: list[str] = []
    entries = 0
    total = 0
    dest.mkdir(parents=True)
    for folder, dirs, files in os.walk(root, followlinks=False):
        here = Path(folder)
        rel_here = here.relative_to(root)
        kept_dirs: list[str] = []
        for name in sorted(dirs):
            path = here / name
            if name in _BYTECODE_DIRS:
                continue
            if path.is_symlink():
                skipped.append((rel_here / name).as_posix() + " (a link to a folder)")
                continue
            # Folders count as entries (a million empty ones were copied one by one), and
            # the walk goes no deeper than MAX_DEPTH: `os.walk` recurses once per level.
            entries += 1
            if entries > MAX_ENTRIES:
                raise TreeError(f"the workspace has more than {MAX_ENTRIES} entries")
            if len(rel_here.parts) >= MAX_DEPTH:
                raise TreeError(f"the workspace nests folders more than {MAX_DEPTH} deep")
            kept_dirs.append(name)
            (dest / rel_here / name).mkdir()
        dirs[:] = kept_dirs
        for name in sorted(files):
            entries += 1
            if entries > MAX_ENTRIES:
                raise TreeError(f"the workspace has more than {MAX_ENTRIES} entries")
            if name.endswith(_DROPPED_SUFFIXES):
                continue
            path = here / name
            rel = (rel_here / name).as_posix()
            if path.is_symlink():
                if not _inside(path, root) or not path.resolve().is_file():
                    skipped.append(f"{rel} (a link leaving the workspace or not to a file)")
                    continue
                path = path.resolve()
            mode = path.lstat().st_mode
            if not stat.S_ISREG(mode):
                skipped.append(f"{rel} (not a regular file)")
                continue
            total += path.lstat().st_size
            if total > MAX_BYTES:
                raise TreeError(f"the workspace holds more than {MAX_BYTES} bytes")
            shutil.copyfile(path, dest / rel, follow_symlinks=False)
            os.chmod(dest / rel, stat.S_IMODE(mode) | 0o600)
    return skipped


def _files(root: Path) -> list[str]:
    found: list[str] = []
    for folder, dirs, files in os.walk(root, followlinks=False):
        dirs.sort()
        here = Path(folder)
        for name in sorted(files):
            found.append((here / name).relative_to(root).as_posix())
    return found


#: The keys of a package.json that decide what `npm test` runs and how its runner is
#: configured: an agent's `"scripts": {"test": "exit 0"}` made `npm test` pass.
PACKAGE_RUNNER_KEYS = ("scripts", "jest", "mocha", "ava", "vitest", "c8", "nyc", "tap")
#: Project manifests whose test-runner parts are the task's, the rest the agent's.
_MANIFESTS = frozenset({"pyproject.toml", "package.json"})


def _runner_tables(path: Path) -> dict[str, object] | None:
    """The test-runner tables of a pyproject.toml (or keys of a package.json); None when
    it does not parse."""
    if path.name == "package.json":
        try:
            package = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, ValueError, RecursionError):
            return None
        if not isinstance(package, dict):
            return None
        return {k: package[k] for k in PACKAGE_RUNNER_KEYS if k in package}
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError, RecursionError):
        # RecursionError: arrays nested past Python's limit (an agent's file) do not parse;
        # ValueError: TOMLDecodeError, and an integer too long to convert (the plain
        # ValueError stopped every check: "the grading tree could not be built").
        return None
    tool = data.get("tool")
    if not isinstance(tool, dict):
        return {}
    return {k: tool[k] for k in RUNNER_TABLES if k in tool}


_INTERPRETERS = re.compile(r"^(?:.*/)?(?:sh|bash|zsh|dash|python[0-9.]*|node|ruby|perl)$")
_SCRIPT_SUFFIXES = (".sh", ".bash", ".zsh", ".js", ".mjs", ".cjs", ".rb", ".pl", ".mk")
_CHECK_SCRIPT = re.compile(r"^(?:check|verify|grade|run_tests|runtests)", re.IGNORECASE)


def relative_word(word: str) -> str | None:
    """A command's word as a tree-relative name (`/workspace/x` is `x`), or None for an
    option, an absolute path elsewhere or one leaving the tree."""
    if word.startswith("/workspace/"):
        word = word[len("/workspace/") :]
    if not word or word.startswith(("-", "/")):
        return None
    pure = PurePosixPath(word.split("::")[0])
    if ".." in pure.parts or not pure.parts:
        return None
    return pure.as_posix()


#: Files never taken for test data: Python source is the agent's work (a test imports
#: the module it grades, and may read its text) or, when it is a test, restored anyway;
#: documentation (`README.md`) is a deliverable a test may read to check it was written.
_SOURCE_SUFFIXES = (".py", ".pyi", ".pyw", ".md", ".rst", ".adoc")
#: A test file is read for its literals only up to this size (a template's, so small).
_MAX_TEST_SOURCE = 4 * 1024 * 1024


def _literals(path: Path) -> set[str]:
    """The names a Python file may read: its string constants, and the patterns of the
    names it computes (`harness.grading.names.scan`: `f"{name}.json"`, `name + ".json"`,
    `"%s.json" % name`, `"{}.json".format(name)`, `path.with_suffix(".json")` are all
    `*.json`; `base + ext` with `base = "expected"`, `ext = ".json"` is `expected.json`).

    Why: a test reading one data file per case (`for name in ("add", "neg")`) names no
    file by a literal, so the agent rewrote `add.json` to expect what its `add` returned
    and was verified. As a pattern, the files it may read are restored (more, never
    less: the pattern rule of `_data_named`)."""
    return set(scan(path).names)


def task_test_data(
    template: Path,
    template_files: Iterable[str],
    hidden: Path | None = None,
    helpers: Iterable[str] = (),
) -> set[str]:
    """The template's test data: its files that are not Python source and that a test
    file of the template names by a string literal, or that lie in a folder one names
    (relative to the root, or to the test file's folder), or that a pattern literal
    matches (`"cases_*.json"`), or that are named after a test file (`test_calc.json`
    beside `test_calc.py`); and those a test of the `hidden` checks folder names
    (relative to the root, where it runs). When one of those sources reads a name that
    cannot be known (`opaque_sources`), every data file of the template (`all_data`).

    Why: a test that reads its expected values from a file (`cases.json` beside
    `test_calc.py`) passes for any code once the agent rewrote that file; an agent did
    exactly that (`add` returning 0, the cases rewritten to expect 0) and was verified.
    The cost: a data file the task asks the agent to change, and its test reads by name,
    is graded as the template had it (the check fails: closed, not open)."""
    files = set(template_files)
    tests = task_test_sources(template, files, helpers)
    return _data_named(files, tests) | (hidden_test_data(files, hidden) if hidden else set())


def task_test_sources(
    template: Path, template_files: Iterable[str], helpers: Iterable[str] = ()
) -> list[tuple[Path, PurePosixPath]]:
    """The task's Python a test run reads names from, each with the folder its names are
    relative to: its test files, and its other Python a test runs (`helpers`: its data
    modules, the helpers under its test folders). Such a helper names data too
    (`CASES_FILE = "golden.json"` in a `settings.py` the test imports): an agent rewrote
    such a `golden.json` and was verified while only the test files' literals were read."""
    wanted = set(helpers)
    return [
        (template / f, PurePosixPath(f).parent)
        for f in sorted(set(template_files) | wanted)
        if (is_test_file(f) or f in wanted) and (f.endswith(".py") or _foreign_code(f, wanted))
    ]


def _foreign_code(rel: str, named: set[str]) -> bool:
    """A test or check script in another language (`sum.test.js`, `check.sh`, a bare
    `run_checks`): the files it reads are not read here (`opaque_sources`)."""
    name = PurePosixPath(rel).name
    return name.endswith(_SCRIPT_SUFFIXES + _CODE_SUFFIXES) or (rel in named and "." not in name)


def hidden_test_sources(hidden: Path) -> list[tuple[Path, PurePosixPath]]:
    """The hidden checks' Python, each relative to the root (where it runs)."""
    return [(path, PurePosixPath(".")) for path in sorted(hidden.rglob("*.py"))]


def hidden_test_data(template_files: Iterable[str], hidden: Path) -> set[str]:
    """The template's test data that a test of the `hidden` checks folder names (relative
    to the root, where it runs): see `task_test_data`."""
    return _data_named(set(template_files), hidden_test_sources(hidden))


def opaque_sources(tests: Iterable[tuple[Path, PurePosixPath]]) -> list[str]:
    """Where the `tests` read a file or import a module by a name that cannot be known
    before they run (`harness.grading.names`): `os.listdir(here)`, a name read from
    another file, `Path(d) / n` with `n` a parameter, `import_module(name)`."""
    found: list[str] = []
    for path, _ in tests:
        if not path.name.endswith(".py"):
            # A shell, JavaScript… test or check script: its names are not followed here,
            # so what it reads cannot be known (a check.js reading expected.json was run
            # over the agent's rewritten expected.json).
            found.append(f"{path.name}: a test or check script not in Python")
            continue
        found += [f"{path.name}: {why}" for why in scan(path).opaque]
    return found


#: Source code of other languages: never taken for test data by the fail-closed rule
#: (`all_data`): a Python test running `node app.js` grades the agent's `app.js`.
_CODE_SUFFIXES = (
    ".js", ".mjs", ".cjs", ".ts", ".mts", ".cts", ".tsx", ".jsx", ".c", ".h", ".cc", ".cpp",
    ".cxx", ".hpp", ".go", ".rs", ".java", ".kt", ".rb", ".pl", ".pm", ".php", ".sh", ".bash",
    ".zsh", ".lua", ".swift", ".cs", ".scala", ".jl", ".hs", ".ml", ".ex", ".exs", ".clj",
    ".r", ".R", ".html", ".css", ".vue", ".svelte",
)  # fmt: skip


def all_data(template_files: Iterable[str]) -> set[str]:
    """Every file of the template that may be test data: not source (Python, another
    language's), documentation, a test or a manifest (whose runner settings have their
    own rule). What an opaque test (`opaque_sources`) may read: all of it is the task's."""
    return {
        f
        for f in template_files
        if not f.endswith(_SOURCE_SUFFIXES + _CODE_SUFFIXES)
        and not is_test_file(f)
        and PurePosixPath(f).name not in _MANIFESTS
    }


@dataclass
class DataScope:
    """What the tests read of the template's data (`_scope`): the files, and the patterns
    and folders that name them (where a file the agent adds would be read as data too)."""

    found: set[str] = field(default_factory=set)
    patterns: set[str] = field(default_factory=set)
    folders: set[str] = field(default_factory=set)
    exact: set[str] = field(default_factory=set)

    def covers(self, rel: str) -> bool:
        """Would a test read `rel` (a file the template did not have) as its data? Not when
        a literal names it exactly: a file the agent must write, which the test checks."""
        if rel in self.exact or _never_data(rel):
            return False
        return any(rel.startswith(d + "/") for d in self.folders) or any(
            fnmatch.fnmatchcase(rel, p) for p in self.patterns if _narrow(p)
        )


def _narrow(pattern: str) -> bool:
    """A pattern naming a family of data files (`cases/v*.json`, `golden_*.txt`), not
    just a kind (`*.json`, `*/*.json`, what `f"{name}.json"` becomes): only a narrow one
    keeps the agent's additions out (a `config.json` of its own is not a test's data)."""
    parts = pattern.split("/")
    if any(part and not _GLOB.search(part) for part in parts[:-1]):
        return True
    stem = parts[-1].rsplit(".", 1)[0] if "." in parts[-1] else parts[-1]
    return len(_GLOB.sub("", stem).strip("]")) >= 2


def _data_named(files: set[str], tests: list[tuple[Path, PurePosixPath]]) -> set[str]:
    """The `files` that are not Python source or tests and that a string literal of one
    of the `tests` (each with the folder its names are relative to, beside the root)
    names, or that lie in a folder one names; all of them when a test reads a name that
    cannot be known (the fail-closed rule of attack4: `opaque_sources`)."""
    return _scope(files, tests).found


#: Documentation a task may ask the agent to write (and its test to read): never data.
#: Other documents a test names (`expected_output.md`) are data like any other file: an
#: agent rewrote such an expected Markdown file and was verified (attack4).
_DELIVERABLE_DOCS = frozenset(
    {"readme", "changelog", "changes", "history", "news", "contributing", "notes", "report",
     "summary", "design", "answer", "answers", "solution", "handoff", "todo", "license",
     "install", "usage", "index", "authors", "analysis", "writeup", "explanation"}
)  # fmt: skip
_DOC_SUFFIXES = (".md", ".rst", ".adoc")


def _never_data(rel: str) -> bool:
    """Python source (the agent's work, or a test restored anyway) and deliverable
    documentation (`README.md`, anything under `docs/`) are never test data."""
    if rel.endswith((".py", ".pyi", ".pyw")) or is_test_file(rel):
        return True
    pure = PurePosixPath(rel)
    if rel.endswith(_DOC_SUFFIXES):
        stem = pure.name.split(".", 1)[0].lower()
        return stem in _DELIVERABLE_DOCS or "docs" in pure.parts[:-1] or "doc" in pure.parts[:-1]
    return False


def _scope(files: set[str], tests: list[tuple[Path, PurePosixPath]]) -> DataScope:
    scope = DataScope()
    folders: dict[str, list[str]] = {}
    for rel in files:
        parts = PurePosixPath(rel).parts
        for i in range(1, len(parts)):
            folders.setdefault("/".join(parts[:i]), []).append(rel)

    def data(candidates: Iterable[str]) -> set[str]:
        return {f for f in candidates if f in files and not _never_data(f)}

    for source, here in tests:
        # A file named after the test (`test_calc.json` beside `test_calc.py`): read by
        # `Path(__file__).with_suffix(".json")`, a name no literal spells.
        prefix = (here / source.stem).as_posix().removeprefix("./") + "."
        scope.found |= data(f for f in files if f.startswith(prefix))
        for literal in _literals(source):
            if len(literal) > 1024 or "\x00" in literal:
                continue
            # `/workspace/cases.json`, `file:///workspace/…`, `data/../cases.json`: the
            # tree's own names (`relative_name`); a name outside the tree is no data of it.
            tree_name = relative_name(literal)
            if tree_name is None or tree_name == ".":
                continue
            absolute = literal.strip().startswith(("/", "file:"))
            for base in {PurePosixPath("."), PurePosixPath(".") if absolute else here}:
                rel = posixpath.normpath((base / tree_name).as_posix())
                if rel in (".", here.as_posix()) or rel == ".." or rel.startswith("../"):
                    continue  # the root or the test's own folder: not data it names
                if _GLOB.search(literal) and len(_GLOB.sub("", literal)) >= 2:
                    # A pattern (`glob("cases_*.json")`): every file it matches (`*`
                    # crossing folders too: more restored, never less).
                    # Never a manifest: its runner settings have their own rule.
                    matched = data(
                        f
                        for f in files
                        if fnmatch.fnmatchcase(f, rel) and PurePosixPath(f).name not in _MANIFESTS
                    )
                    if matched:
                        scope.found |= matched
                        scope.patterns.add(rel)
                    continue
                scope.exact.add(rel)
                scope.found |= data([rel])
                if data(folders.get(rel, ())):
                    scope.found |= data(folders[rel])
                    scope.folders.add(rel)
    if opaque_sources(tests):
        # What it reads cannot be known: all the data is the task's (the patterns and
        # folders it does name still keep the agent's additions out of them).
        scope.found |= all_data(files)
    return scope


def task_data_scope(
    template: Path, template_files: Iterable[str], helpers: Iterable[str] = ()
) -> DataScope:
    """`task_test_data` with the patterns and folders that name it (`DataScope`)."""
    files = set(template_files)
    return _scope(files, task_test_sources(template, files, helpers))


#: The characters of a glob pattern (a literal holding one names the files it matches).
_GLOB = re.compile(r"[*?\[]")


#: Shell operators: each starts a new simple command (`cd x && sh check.sh`).
_OPERATOR_CHARS = frozenset("&|;()<>!")
#: Programs that run the command they are given (`timeout 60 sh check.sh`).
_WRAPPERS = frozenset(
    {"env", "exec", "command", "builtin", "nohup", "nice", "ionice", "time", "timeout",
     "stdbuf", "setsid", "xargs", "chronic", "unbuffer", "flock"}
)  # fmt: skip
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_WRAPPER_ARGUMENT = re.compile(r"^(?:-.*|[0-9.]+[smhd]?)$")
_SHELLS = re.compile(r"^(?:.*/)?(?:sh|bash|zsh|dash)$")


def check_scripts(command: str, _depth: int = 0) -> set[str]:
    """The scripts a free command runs: in each of its simple commands (`cd x && …`,
    `… ; …`, `… | …`), past variable assignments (`PYTHONPATH=. …`) and wrappers
    (`timeout 60 …`, `env …`, `exec …`), the program — its first word (`./check.sh`), or
    the first word after an interpreter (`sh check.sh`, `python verify.py`), what a
    shell's `-c` text runs, the module of `python -m verify` — when it looks like a check
    script: a shell, JavaScript, Ruby or Perl script, a file without a suffix, or a
    Python file (module) named `check…`, `verify…`, `grade…`, `run_tests…`; and any
    other word naming a script so named (`make -f check.mk`). A Python module a check runs
    otherwise (`python slug.py`) is the agent's work, graded as written; a check script
    that must never change belongs in the hidden checks.

    (Only the program position was read once: `timeout 60 sh check.sh`,
    `PYTHONPATH=. python check.py`, `cd . && ./check.sh` and `python -m verify` ran the
    agent's rewritten script.)"""
    try:
        lexer = shlex.shlex(command, posix=True, punctuation_chars=True)
        lexer.whitespace_split = True
        tokens = list(lexer)
    except ValueError:
        return set()
    found: set[str] = set()
    simple: list[str] = []
    previous = ""
    for token in [*tokens, ";"]:
        if set(token) <= _OPERATOR_CHARS:
            found |= _scripts_of(simple, _depth)
            simple = []
        elif previous == "<":
            # A file fed on standard input (`sh < check.sh`, `python - < check.py`): the
            # script the shell or interpreter before it runs, when it looks like one.
            rel = relative_word(token)
            if rel is not None and _looks_like_script(rel, bare_ok=False):
                found.add(rel)
        else:
            simple.append(token)
        previous = token
    return found


def _looks_like_script(rel: str, bare_ok: bool) -> bool:
    name = PurePosixPath(rel).name
    return (
        name.endswith(_SCRIPT_SUFFIXES)
        or (bare_ok and "." not in name)
        or (name.endswith(".py") and _CHECK_SCRIPT.match(name) is not None)
    )


def _scripts_of(words: list[str], depth: int) -> set[str]:
    """`check_scripts` of one simple command (its words, operators removed)."""
    words = list(words)
    while words and _ASSIGNMENT.match(words[0]):
        words.pop(0)
    while words and PurePosixPath(words[0]).name in _WRAPPERS:
        words.pop(0)
        while words and (_WRAPPER_ARGUMENT.match(words[0]) or _ASSIGNMENT.match(words[0])):
            words.pop(0)
    if not words:
        return set()
    # Any other word naming a check script by its name (`node check.js app.js`: check.js,
    # never the agent's app.js).
    found = {
        rel
        for word in words[1:]
        if not any(c.isspace() for c in word)
        and (rel := relative_word(word)) is not None
        and _looks_like_script(rel, bare_ok=False)
        and _CHECK_SCRIPT.match(PurePosixPath(rel).name) is not None
    }
    program = words[0]
    if _INTERPRETERS.match(program):
        shell = _SHELLS.match(program) is not None
        rest: list[str] = []
        i = 1
        # The options, combined ones too (`bash -lc '…'`, `python -um check`,
        # `python3 -mverify`), up to the first operand: only `-c` and `-m` were seen once,
        # and `bash -lc 'sh check.sh'` or `python -um check` ran the agent's script.
        while i < len(words):
            word = words[i]
            if word == "--":
                rest = words[i + 1 :]
                break
            if not word.startswith("-") or word == "-" or word.startswith("--"):
                if word.startswith("--") or word == "-":
                    i += 1
                    continue
                rest = words[i:]
                break
            letters = word[1:]
            if shell and letters in ("o", "O"):
                i += 2  # `-o pipefail`: the option's value is no script
                continue
            if "c" in letters and (shell or not letters.startswith(("W", "X"))):
                # Inline code: for a shell, the scripts that code runs.
                at = i + 1
                while at < len(words) and words[at] == "--":
                    at += 1
                if shell and at < len(words) and depth < 3:
                    found |= check_scripts(words[at], depth + 1)
                return found
            if not shell and "m" in letters and not letters.startswith(("W", "X")):
                module = letters.split("m", 1)[1] or (words[i + 1] if i + 1 < len(words) else "")
                if module.replace(".", "").replace("_", "").isalnum() and _CHECK_SCRIPT.match(
                    module.rsplit(".", 1)[-1]
                ):
                    path = module.replace(".", "/")
                    found |= {f"{path}.py", path}
                return found
            if not shell and letters in ("W", "X"):
                i += 2  # `-W ignore`, `-X dev`: the option's value
                continue
            i += 1
        if not rest:
            return found
        program = rest[0]
    elif "/" not in program:
        return found  # a program looked up on PATH (`test`, `make`), not a file of the tree
    rel = relative_word(program)
    if rel is not None and _looks_like_script(rel, bare_ok=True):
        found.add(rel)
    return found


#: The recipes that run a project's checks: a Makefile's `test`, `check`, `verify`
#: targets (`test-unit`…), a package.json's `test`, `pretest`, `test:unit` scripts.
#: Others (`start`, `build`) run the agent's own code, graded as written.
_CHECK_RECIPE = re.compile(r"^(?:pre|post)?(?:tests?|check|verify|ci)(?:[-_:.][\w:.-]*)?$")
_MAKE_TARGET = re.compile(r"^([A-Za-z0-9_.-]+)\s*:(?!=)")


def recipe_scripts(template: Path) -> set[str]:
    """The check scripts (`check_scripts`) the template's own check recipes run: its
    Makefile's `test`/`check`/`verify` recipe lines and its package.json's `test`
    scripts. `make test` and `npm test` run restored recipes, which named the agent's
    rewritten `scripts/check.sh`."""
    found: set[str] = set()
    for line in recipe_lines(template):
        found |= check_scripts(line)
    return found


def recipe_lines(template: Path) -> list[str]:
    """The command lines of the template's check recipes (`recipe_scripts`)."""
    found: list[str] = []
    for name in ("Makefile", "makefile", "GNUmakefile"):
        try:
            text = (template / name).read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        checking = False
        for line in text.splitlines()[:10_000]:
            if line.startswith("\t"):
                if checking:
                    found.append(line.strip().lstrip("@-+"))
            elif (target := _MAKE_TARGET.match(line)) is not None:
                checking = _CHECK_RECIPE.match(target.group(1)) is not None
    try:
        package = json.loads((template / "package.json").read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError, RecursionError):
        package = None
    scripts = package.get("scripts") if isinstance(package, dict) else None
    if isinstance(scripts, dict):
        for key, command in list(scripts.items())[:1000]:
            if isinstance(command, str) and _CHECK_RECIPE.match(str(key)):
                found.append(command)
    return found


def script_scripts(template: Path, scripts: Iterable[str]) -> set[str]:
    """The check scripts (`check_scripts`) that the template's shell check scripts among
    `scripts` run in turn: `sh check.sh` running `python3 verify_sums.py` ran the agent's
    rewritten `verify_sums.py` while only `check.sh` was restored. Followed two levels
    deep; each script read up to 1 MiB."""
    found: set[str] = set()
    todo = set(scripts)
    for _ in range(3):
        new: set[str] = set()
        for line, _folder in script_lines(template, todo):
            if line.strip() and not line.lstrip().startswith("#"):
                new |= check_scripts(line.strip())
        todo = new - found - set(scripts)
        found |= new
    return found


#: `. FILE` / `source FILE` at the start of a simple command: the shell reads FILE in.
_SOURCED = re.compile(
    r"(?:^|[;&|({'\"]|\b(?:then|do|else|elif)\s)\s*(?:\.|source)\s+(?P<file>[^\s;&|)]+)"
)
#: A command substitution (`$(dirname "$0")`), one level deep: a computed folder.
_SUBSTITUTION = re.compile(r"\$\([^()]*\)")
#: Everything up to a shell expansion's last `/` (`"$(dirname "$0")/config.sh"`: the
#: file beside the script, `$DIR/lib/x.sh`: `lib/x.sh`).
_EXPANDED_DIR = re.compile(r"^.*\$[^/]*/")
_MAKE_INCLUDE = re.compile(r"^\s*(?:-|s)?include\s+(?P<files>.+)$")


def sourced_files(template: Path, lines: Iterable[str], scripts: Iterable[str]) -> set[str]:
    """The files (workspace-relative names, or patterns) a check's shell or make reads in
    as its own code: `. FILE` / `source FILE` in the check's `lines`, its template's check
    recipes and shell `scripts` (and what those files source in turn), and the files the
    template's Makefiles `include` (`-include`, `sinclude`; every `*.mk` when an include
    is computed: `$(wildcard …)`).

    Why: a restored `check.sh` sourcing `config.sh`, or a restored Makefile including
    `local.mk`, ran the agent's file in the check's own shell or make: `exit 0`, or a
    `test:` recipe of `true` overriding the task's, and the check passed (attack7)."""
    found: set[str] = set()
    todo = [(line, ".") for line in [*lines, *recipe_lines(template)]]
    todo += script_lines(template, scripts)
    for _ in range(3):
        new: set[str] = set()
        for line, here in todo:
            for match in _SOURCED.finditer(_SUBSTITUTION.sub("$X", line)):
                word = match.group("file").strip().strip("'\"").replace('"', "").replace("'", "")
                relative = "$" in word
                word = _EXPANDED_DIR.sub("", word)
                if "$" in word or not word:
                    continue
                for base in {".", here} if relative else {"."}:
                    rel = relative_word(posixpath.normpath(posixpath.join(base, word)))
                    if rel is not None:
                        new.add(rel)
        todo = script_lines(template, new - found, sourced=True)
        found |= new
        if not todo:
            break
    for name in ("Makefile", "makefile", "GNUmakefile"):
        try:
            text = (template / name).read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        for line in text.splitlines()[:10_000]:
            if (include := _MAKE_INCLUDE.match(line)) is None:
                continue
            for word in include.group("files").split():
                if "$" in word:
                    found.add("*.mk")  # a computed include: any makefile fragment
                elif (rel := relative_word(word)) is not None:
                    found.add(rel)
    return found


def script_lines(
    template: Path, scripts: Iterable[str], sourced: bool = False, most: int = 1024 * 1024
) -> list[tuple[str, str]]:
    """(line, the script's folder) of the template's shell scripts among `scripts` (a
    `.sh`, `.bash`, `.zsh` file or one without a suffix; any file when `sourced`: what a
    shell reads in is shell code whatever its name), each read when of `most` bytes at
    the most (1 MiB; `harness.grading.js_checks` reads its sources up to 2 MiB)."""
    found: list[tuple[str, str]] = []
    for rel in sorted(scripts):
        name = PurePosixPath(rel).name
        if not (sourced or name.endswith((".sh", ".bash", ".zsh")) or "." not in name):
            continue
        try:
            path = template / rel
            if not path.is_file() or path.stat().st_size > most:
                continue
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        here = PurePosixPath(rel).parent.as_posix()
        found += [(line, here) for line in text.splitlines()[:10_000]]
    return found


_PYTHON_PROGRAM = re.compile(r"^(?:.*/)?python[0-9.]*$")


def checking_scripts(
    template: Path, template_files: set[str], lines: Iterable[str], scripts: set[str]
) -> set[str]:
    """The template's Python scripts that a free check runs (`python3 sums.py` in its
    line, its check recipes or the shell scripts it runs) and that are tests by what they
    do or are named (`_test_support`: asserting on the agent's functions, a reference).

    Why: a restored `check.sh` running `python3 sums.py`, whose asserts were the task's
    check, ran the agent's rewritten `sums.py` (`pass`) because only scripts named
    `check…`/`verify…` were the task's, and a wrong `add` passed (attack7). A script that
    asserts nothing (the agent's program, `python slug.py`) stays the agent's."""
    shells = scripts | script_scripts(template, scripts)
    every = [*lines, *recipe_lines(template)] + [line for line, _ in script_lines(template, shells)]
    found: set[str] = set()
    for line in every:
        try:
            lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
            lexer.whitespace_split = True
            tokens = list(lexer)
        except ValueError:
            continue
        simple: list[str] = []
        for token in [*tokens, ";"]:
            if not set(token) <= _OPERATOR_CHARS:
                simple.append(token)
                continue
            words = simple
            simple = []
            while words and (
                _ASSIGNMENT.match(words[0]) or PurePosixPath(words[0]).name in _WRAPPERS
            ):
                words = words[1:]
            if not words or not _PYTHON_PROGRAM.match(words[0]):
                continue
            rest = words[1:]
            while rest and rest[0].startswith("-") and rest[0] not in ("-c", "-m"):
                rest = rest[2:] if rest[0] in ("-W", "-X") else rest[1:]
            if not rest or rest[0] in ("-c", "-m"):
                continue
            rel = relative_word(rest[0])
            if rel is not None and rel in template_files and _test_support(template / rel):
                found.add(rel)
    return found


def line_data(template_files: Iterable[str], lines: Iterable[str]) -> set[str]:
    """The template's data (`all_data`: not source, documentation, a test or a manifest)
    that shell `lines` name by a word (`diff - expected.txt`, `cmp out want/`, a folder
    or a pattern: its files); all of it when a line computes a name (`$VAR`, `$(…)`,
    backquotes) or cannot be read.

    Why: a free check's own line (`python3 prog.py | diff - expected.txt`) or a restored
    recipe running it (`make test`) compared with an `expected.txt` the agent rewrote to
    match its wrong program; only test files' and check scripts' names were read for
    test data, and it was verified (attack7)."""
    files = set(template_files)
    data = all_data(files)
    found: set[str] = set()
    for line in lines:
        try:
            lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
            lexer.whitespace_split = True
            words = list(lexer)
        except ValueError:
            return data
        for word in words:
            if "$" in word or "`" in word:
                return data  # a name computed when it runs: any data may be read
            for part in {word, word.split("=", 1)[-1]}:
                rel = relative_word(part)
                if rel is None or len(rel) > 1024:
                    continue
                if _GLOB.search(rel):
                    found |= {f for f in data if fnmatch.fnmatchcase(f, rel)}
                else:
                    found |= {f for f in data if f == rel or f.startswith(rel.rstrip("/") + "/")}
    return {f for f in found if not _never_data(f)}


def runner_paths(args: Iterable[str]) -> set[str]:
    """The files and folders a test runner's arguments name (`tests/`, `test_a.py`)."""
    return {rel for word in args if (rel := relative_word(word)) is not None}


def task_test_folders(template_files: Iterable[str], named_dirs: Iterable[str] = ()) -> set[str]:
    """The template's test folders: every folder but the root that holds one of its test
    files (`is_test_file`), and the folders a check names. Everything the template ships
    under them is the task's in the grading tree (restored; what the agent added there is
    removed), Python helpers included (`tests/expected.py`, `checks/helpers.py`, a
    sub-folder's `conftest.py`, a package `__init__.py`).

    Why: a test's helper module holding the expected values (`from helpers import CASES`
    beside `checks/test_calc.py`) was graded as the agent rewrote it, and the restored
    tests passed. The cost: a solution module living beside its tests in a sub-folder
    (`pkg/calc.py` next to `pkg/test_calc.py`) is graded as the template had it (closed,
    not open); the root is never a test folder, so the usual flat layout is unaffected."""
    found = {PurePosixPath(f).parent.as_posix() for f in template_files if is_test_file(f)}
    found |= {d.rstrip("/") for d in named_dirs}
    return {d for d in found if d not in ("", ".")}


def data_modules(
    template: Path,
    template_files: Iterable[str],
    scripts: Iterable[str] = (),
    codes: Iterable[str] = (),
) -> set[str]:
    """The template's modules that hold only data (a docstring and assignments of
    literal values: `CASES = [(1, 2, 3)]`) and that a test file of the template imports
    from the root (`from expected import CASES`, `expected/__init__.py` too, and
    `from data.expected import CASES`: `data/expected.py`), with the packages they lie
    in when those are empty or data too: Python test data, the task's like `cases.json`;
    and those that are test support (`_test_support`: `testutil.py` asserting the cases).

    Why: a root `expected.py` beside `test_calc.py` was graded as the agent rewrote it
    (`add` returning 0, the cases made to expect 0) and verified; so was the same data
    as a package (`expected/__init__.py`) or a module in one (`data/expected.py`): only
    `NAME.py` at the root was looked for. A package's `__init__.py` runs before its
    module and could put a forged one in `sys.modules`, so it is the task's as well. A
    module with any code (a `def`, a `class`, an import, a call of anything but a pure
    builtin) is the agent's work, graded as written; a data module a task asks the agent
    to fill in is graded as the template had it (closed, not open).

    `scripts` (the task's check scripts a free `run` names: `checks/verify.py`) and
    `codes` (a `python -c` check's text) import as a test does, a script from its own
    folder too (where `python` finds its siblings). Why: a check script's
    `checks/expected.py` or root `helper.py` holding the cases was graded as the agent
    rewrote it (the cases emptied, `add` left wrong) and the check passed (review 8)."""
    files = set(template_files)
    wanted = {s for s in scripts if s.endswith(".py") and s in files}
    #: (the module a source imports, the folder it is found from: "" for the root)
    imported: set[tuple[str, str]] = set()
    for rel in sorted(files):
        if not (rel.endswith(".py") and (is_test_file(rel) or rel in wanted)):
            continue
        try:
            if (template / rel).stat().st_size > _MAX_TEST_SOURCE:
                continue
            source = (template / rel).read_bytes()
        except OSError:
            continue
        folders = {""}
        if rel in wanted and PurePosixPath(rel).parent.as_posix() != ".":
            folders.add(PurePosixPath(rel).parent.as_posix() + "/")
        # `importlib.import_module("exp" + "ected")`, `__import__(name)`: an import by a
        # name the test computes from its literals is an import all the same.
        names = _imports_of(source) | scan(template / rel).imports
        imported |= {(n, f) for n in names for f in folders}
    for code in codes:
        if len(code) <= _MAX_TEST_SOURCE:
            imported |= {(n, "") for n in _imports_of(code.encode("utf-8", "replace"))}
    found: set[str] = set()
    for dotted, folder in imported:
        parts = dotted.split(".")
        for depth in range(len(parts), 0, -1):
            base = folder + "/".join(parts[:depth])
            data = [
                f
                for f in (f"{base}.py", f"{base}/__init__.py")
                if f in files and (_only_data(template / f) or _test_support(template / f))
            ]
            if not data:
                continue
            found.update(data)
            # The packages it lies in, when they hold nothing but data (or nothing).
            for up in range(1, depth):
                init = folder + "/".join(parts[:up]) + "/__init__.py"
                if init in files and _only_data(template / init, empty_ok=True):
                    found.add(init)
            break
    return found


def plugin_modules(template: Path, template_files: Iterable[str]) -> set[str]:
    """The template's modules that its test files load as pytest plugins (`pytest_plugins
    = ["myplugin"]` in a `conftest.py`): test machinery, the task's, restored and loaded
    by the runner itself. Why: served from the solution process as the agent's, such a
    plugin's fixtures were not seen by pytest, and an honest agent's test errored; and its
    fixtures (`expected`) were the agent's to rewrite."""
    files = set(template_files)
    found: set[str] = set()
    for rel in sorted(files):
        if not (rel.endswith(".py") and is_test_file(rel)):
            continue
        tree = by_identity(template / rel, _parsed, None)
        if tree is None:
            continue
        for node in tree.body:
            if not (
                isinstance(node, ast.Assign)
                and any(isinstance(t, ast.Name) and t.id == "pytest_plugins" for t in node.targets)
            ):
                continue
            values = (
                node.value.elts if isinstance(node.value, ast.List | ast.Tuple) else [node.value]
            )
            for value in values:
                if isinstance(value, ast.Constant) and isinstance(value.value, str):
                    base = value.value.replace(".", "/")
                    found |= {f for f in (f"{base}.py", f"{base}/__init__.py") if f in files}
    return found


@functools.lru_cache(maxsize=1024)
def _parsed(path: str, inode: int, size: int, mtime_ns: int) -> ast.Module | None:
    del inode, size, mtime_ns  # the cache key: the same file, unchanged
    return parsed_file(path)


def _imports_of(source: bytes) -> set[str]:
    """The modules a Python source imports by name (`import a.b`, `from a import b`: `a`
    and `a.b`, the name may be a submodule); none when it does not parse."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return set()
    imported: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            imported.add(node.module)
            # `from data import expected`: the name may be a submodule.
            imported.update(f"{node.module}.{a.name}" for a in node.names if a.name != "*")
    return imported


#: Names of a module that supports tests (`testutil.py`, `helpers.py`): with an assertion
#: in it, a module so named that a test imports is the task's (`_test_support`).
_SUPPORT_NAMES = frozenset(
    {"helpers", "helper", "fixtures", "support", "checks", "checker", "checking", "verify",
     "verifier", "oracle", "assertions", "asserts", "expectations", "harness_utils"}
)  # fmt: skip


def _test_support(path: Path) -> bool:
    """A module that supports the tests rather than being graded by them: named so
    (`testutil.py`, `helpers.py`: a name holding "test", or `_SUPPORT_NAMES`) and
    asserting something (an `assert`, an `AssertionError`, a `self.assert…()`/`assert_…()`
    call, an import of a test framework). A test that imports it asserts through it: the
    agent rewrote a root `testutil.py`'s `check_add` to return None and was verified
    (attack6); only such modules in test folders were the task's. The cost: a module so
    named and asserting that the task asks the agent to change is graded as the
    template had it (closed, not open)."""
    # A reference implementation (`reference.py`, `oracle.py`) asserts nothing: by its
    # name (attack7: the agent rewrote it and its own `add` alike, and was verified).
    if is_reference(path):
        return True
    stem = path.parent.name if path.name == "__init__.py" else path.stem
    if "test" in stem.lower() or stem.lower() in _SUPPORT_NAMES:
        return by_identity(path, _asserts, False)
    # Named otherwise (`mylib.py`): by what it does (`harness.grading.support`). The agent
    # emptied such a helper's `check_add`, left `add` wrong and was verified (attack7).
    return supports_tests(path)


@functools.lru_cache(maxsize=4096)
def _asserts(path: str, inode: int, size: int, mtime_ns: int) -> bool:
    del inode, size, mtime_ns  # the cache key: the same file, unchanged
    tree = parsed_file(path)
    if tree is None:
        return False
    for node in ast.walk(tree):
        if isinstance(node, ast.Assert):
            return True
        if isinstance(node, ast.Name) and node.id == "AssertionError":
            return True
        if uses_test_framework(node):
            return True
    return False


def every_data_module(template: Path, template_files: Iterable[str]) -> set[str]:
    """Every module of the template that holds only data (`_only_data`), with the
    packages it lies in when those are empty or data too: what a test importing by a
    name that cannot be known may import."""
    found: set[str] = set()
    for rel in template_files:
        if rel.endswith(".py") and not is_test_file(rel) and _only_data(template / rel):
            found.add(rel)
            parts = PurePosixPath(rel).parts
            for up in range(1, len(parts) - 1):
                init = "/".join(parts[:up]) + "/__init__.py"
                if init in template_files and _only_data(template / init, empty_ok=True):
                    found.add(init)
    return found


#: The builtins a data module may compute its values with (`range`, `zip`…): pure ones.
_DATA_BUILTINS = frozenset(
    {"range", "list", "tuple", "dict", "set", "frozenset", "zip", "enumerate", "sorted",
     "reversed", "len", "str", "int", "float", "bool", "abs", "min", "max", "sum", "round",
     "chr", "ord", "map", "filter", "divmod", "pow", "repr", "bytes", "complex", "any", "all",
     "True", "False", "None"}
)  # fmt: skip


def _computed_data(value: ast.expr, known: set[str]) -> bool:
    """A value computed from literals, names the module assigned before, comprehension
    variables and pure builtins (`[(a, b, a + b) for a in range(3)]`): data. No lambda,
    no import, no other name (the agent's module), no `_private` attribute."""
    local = set(known) | {
        n.id
        for c in ast.walk(value)
        if isinstance(c, ast.comprehension)
        for n in ast.walk(c.target)
        if isinstance(n, ast.Name)
    }
    for node in ast.walk(value):
        if isinstance(node, ast.Lambda | ast.NamedExpr | ast.Await | ast.Yield | ast.YieldFrom):
            return False
        if isinstance(node, ast.Name) and node.id not in local and node.id not in _DATA_BUILTINS:
            return False
        if isinstance(node, ast.Attribute) and node.attr.startswith("_"):
            return False
    return True


def _only_data(path: Path, *, empty_ok: bool = False) -> bool:
    """A module of a docstring and assignments of data: literals, or values computed
    from them (`_computed_data`). (Literals only once: a `cases.py` computing its cases
    with a comprehension was the agent's to rewrite, attack4.) Cached by the file's
    identity and time: a tree asks of every template module when a test is opaque."""
    return by_identity(path, functools.partial(_only_data_file, empty_ok=empty_ok), False)


@functools.lru_cache(maxsize=4096)
def _only_data_file(path: str, inode: int, size: int, mtime_ns: int, empty_ok: bool) -> bool:
    del inode, size, mtime_ns  # the cache key: the same file, unchanged
    tree = parsed_file(path)
    if tree is None:
        return False
    body = tree.body
    known: set[str] = set()
    for node in body:
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            continue  # a docstring
        if isinstance(node, ast.Assign):
            value, targets = node.value, node.targets
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            value, targets = node.value, [node.target]
        else:
            return False
        try:
            if not _computed_data(value, known):
                return False
        except RecursionError:
            return False
        known |= {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
    return bool(body) or empty_ok


def build_tree(
    workspace: Path,
    template: Path | None,
    dest: Path,
    named: Iterable[str] = (),
    hidden: Path | None = None,
    codes: Iterable[str] = (),
    lines: Iterable[str] = (),
) -> TreeChanges:
    """Build the grading tree of one check at `dest` (which must not exist); see the
    module docstring for the rule. `named`: the workspace-relative files and folders the
    check names (`check_scripts`, `runner_paths`), restored from the template; `hidden`:
    the hidden checks folder of a hidden check (the test data its tests name is
    restored too); `codes`: the Python text of a `python -c` check (its imports are
    followed as a check script's, `data_modules`); `lines`: a free check's shell line
    (the data it and the template's check recipes name is the task's, `line_data`)."""
    try:
        skipped = _copy_workspace(workspace, dest)
        if template is None:
            return TreeChanges(skipped=tuple(skipped))
        return _apply_template(
            template.resolve(strict=True),
            dest,
            set(named),
            skipped,
            hidden,
            tuple(codes),
            tuple(lines),
        )
    except TreeError:
        raise
    except (OSError, RuntimeError, ValueError) as exc:
        raise TreeError(f"the grading tree could not be built: {exc}") from exc


def _apply_template(
    template: Path,
    dest: Path,
    named: set[str],
    skipped: list[str],
    hidden: Path | None = None,
    codes: tuple[str, ...] = (),
    lines: tuple[str, ...] = (),
) -> TreeChanges:
    template_files = set(_files(template))
    template_entries = template_files | {
        PurePosixPath(f).parents[i].as_posix()
        for f in template_files
        for i in range(len(PurePosixPath(f).parents) - 1)
    }
    named = named | recipe_scripts(template)
    if lines:
        # A Python script a free check runs that is a test by what it does (`python3
        # sums.py` asserting on `add`): the task's, whatever its name (`checking_scripts`).
        named = named | checking_scripts(template, template_files, lines, named)
    data_py = data_modules(template, template_files, named, codes)
    data_py |= plugin_modules(template, template_files)
    named = named | script_scripts(template, named) | data_py
    # What the check's shell or make reads in as code (`. ./config.sh`, `include local.mk`):
    # the template's, and an agent's file there that the template lacks is removed.
    sourced = sourced_files(template, lines, named) if lines else set()
    named = named | {f for f in template_files if any(fnmatch.fnmatchcase(f, p) for p in sourced)}
    named_dirs = task_test_folders(template_files, {n for n in named if (template / n).is_dir()})
    # The Python a check runs reads data as a test does: the check scripts it names
    # (`python check.py` reading expected.json), its data modules, its test folders'
    # helpers; any other script it names, in another language, is opaque.
    helper_files = (
        data_py
        | {f for f in template_files if any(f.startswith(d + "/") for d in named_dirs)}
        | (named & template_files)
    )
    scope = task_data_scope(template, template_files, helper_files)
    hidden_scope = _scope(template_files, hidden_test_sources(hidden)) if hidden else DataScope()
    data = scope.found
    if lines:
        data = data | line_data(template_files, [*lines, *recipe_lines(template)])
    # What only a hidden check's tests name is restored without a word to the agent: a
    # listing would tell it which files the hidden tests read.
    quiet = hidden_scope.found - data
    # A test that reads or imports by a name that cannot be known (`opaque_sources`) may
    # import any of the task's data modules too (`import_module(name)`): all of them are
    # the task's, like all its data files (`task_test_data`).
    if opaque_sources(task_test_sources(template, template_files, helper_files)):
        data_py = data_py | every_data_module(template, template_files)
        named = named | data_py
    elif hidden is not None and opaque_sources(hidden_test_sources(hidden)):
        quiet |= every_data_module(template, template_files) - data_py
    import_dirs = {"."} | {
        PurePosixPath(f).parent.as_posix() for f in template_files if is_test_file(f)
    }
    # The module names of the task's test helpers: an agent's module of the same name
    # on the import path (a root `expected.py` beside the task's `tests/expected.py`)
    # would be imported in the helper's place by a test run from the root.
    helpers = {
        name
        for rel in template_entries
        if PurePosixPath(rel).parent.as_posix() in named_dirs
        and (name := module_name(PurePosixPath(rel).name)) is not None
    }
    # Beside a data module, an agent's package or extension of the same name is what
    # Python imports in its place (`expected/__init__.py` beats `expected.py`).
    data_names = {
        (PurePosixPath(rel).parent.as_posix(), PurePosixPath(rel).stem)
        for rel in data_py
        if not rel.endswith("/__init__.py")
    }
    shadowing = shadowing_names()
    removed: list[str] = []
    restored: list[str] = []
    protected: list[str] = []

    def under_named_dir(rel: str) -> bool:
        return any(rel.startswith(d.rstrip("/") + "/") for d in named_dirs)

    # 2. removals: walk the tree top-down, pruning what goes.
    for folder, dirs, files in os.walk(dest, followlinks=False):
        here = Path(folder)
        rel_here = here.relative_to(dest).as_posix()
        for name in sorted([*dirs, *files]):
            rel = name if rel_here == "." else f"{rel_here}/{name}"
            if rel in template_entries:
                continue
            why = _why_removed(rel, name, rel_here in import_dirs, shadowing)
            if why is None and under_named_dir(rel):
                why = "not in the task's test folder (or a folder a check names)"
            if why is None and rel_here in import_dirs and module_name(name) in helpers:
                why = f"a runner hook: it would shadow the task's test helper {module_name(name)!r}"
            if why is None and (rel_here, module_name(name)) in data_names:
                why = f"a runner hook: it would shadow the task's test data {module_name(name)!r}"
            if why is None and any(fnmatch.fnmatchcase(rel, p) for p in sourced):
                why = "a runner hook: a file the task's check sources or includes as its code"
            if why is None and name in _MANIFESTS:
                tables = _runner_tables(here / name)
                if tables is None or tables:
                    why = "a runner hook: test-runner settings the task did not have"
            # A file added where a test reads its data by a pattern or a folder
            # (`sorted(glob("cases/v*.json"))[-1]`): the agent's `cases/v9.json` was read
            # as the newest cases. Not for a file a literal names exactly (its deliverable).
            if why is None and not (here / name).is_dir() and scope.covers(rel):
                why = "not in the task's test data (its tests read the files there as data)"
            if why is None and not (here / name).is_dir() and hidden_scope.covers(rel):
                _remove(here / name)  # without a word: it would tell what hidden tests read
                continue
            if why is not None:
                _remove(here / name)
                removed.append(f"{rel}: {why}")
        dirs[:] = [d for d in dirs if (here / d).is_dir()]

    # 3. restorations from the template.
    for rel in sorted(template_files):
        name = PurePosixPath(rel).name
        wanted = (
            is_test_file(rel)
            or name in RUNNER_CONFIGS
            or rel in named
            or rel in data
            or rel in quiet
            or under_named_dir(rel)
            or name in _MANIFESTS
        )
        if not wanted:
            continue
        source, target = template / rel, dest / rel
        protected.append(rel)
        if name in _MANIFESTS and target.is_file() and not target.is_symlink():
            mine = _runner_tables(target)
            if mine is not None and mine == _runner_tables(source):
                continue
        if _same(source, target):
            continue
        _restore(source, target, dest)
        if rel in quiet and name not in RUNNER_CONFIGS and rel not in named:
            continue  # (test data is never a test file: `_data_named`)
        restored.append(rel)
    trusted = tuple(
        rel
        for rel in sorted(template_files)
        if rel.endswith(".py")
        and (under_named_dir(rel) or rel in data_py)
        and (dest / rel).is_file()
    )
    return TreeChanges(
        restored=tuple(restored),
        removed=tuple(removed),
        skipped=tuple(skipped),
        trusted=trusted,
        protected=tuple(rel for rel in protected if (dest / rel).is_file()),
    )


def _why_removed(
    rel: str, name: str, on_import_path: bool, shadowing: frozenset[str]
) -> str | None:
    module = module_name(name)
    if module in _ALWAYS_HOOKS:
        return "a runner hook: a Python start-up hook the task did not have"
    if name in RUNNER_CONFIGS:
        return "a runner hook: test-runner configuration the task did not have"
    if is_test_file(rel):
        return "a test file the task did not have (checks run the task's tests)"
    if name in _INSTALLED_DIRS or name.endswith(_INSTALLED_SUFFIXES):
        # Not counted as tampering: `pip install -e .` leaves an `*.egg-info` honestly.
        return "installed packages or programs the task did not have (a check finds them first)"
    if on_import_path and module is not None and module in shadowing:
        return f"a runner hook: it would shadow the installed or standard module {module!r}"
    return None


def _same(source: Path, target: Path) -> bool:
    try:
        if target.is_symlink() or not target.is_file():
            return False
        return source.read_bytes() == target.read_bytes()
    except OSError:
        return False


def _restore(source: Path, target: Path, dest: Path) -> None:
    # Any folder on the way that the agent replaced by a file (or link) goes first.
    parent = dest
    for part in target.relative_to(dest).parts[:-1]:
        parent = parent / part
        if parent.is_symlink() or (parent.exists() and not parent.is_dir()):
            _remove(parent)
        if not parent.exists():
            parent.mkdir()
    if target.exists() or target.is_symlink():
        _remove(target)
    _restore_entry(source, target)
    os.chmod(target, stat.S_IMODE(target.stat().st_mode) | 0o600)


def _restore_entry(source: Path, target: Path) -> None:
    """The template's entry at `target`, its links dereferenced: a link restored as a
    link (`cases.json -> data/real.json`) read the agent's `data/real.json` in the tree,
    and the test passed over the agent's rewritten data. The snapshot keeps only links
    that stay inside it (`Workspace.create`), so the bytes copied are the template's."""
    if source.is_dir():
        shutil.copytree(source, target, symlinks=False)
    else:
        shutil.copyfile(source, target, follow_symlinks=True)
        shutil.copymode(source, target, follow_symlinks=True)
