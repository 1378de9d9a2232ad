"""The file names a test's Python source can read: its strings followed through its
variables, and where it reads a name that cannot be known before it runs.

The grading tree restores the template's data files that the task's tests read
(`harness.grading.tree.task_test_data`). Reading only string literals and simple computed
names (`f"{name}.json"`) missed every name built through variables: `base + ext` with
`base = "expected"` and `ext = ".json"`, `"".join([...])`, `os.path.join(d, n)`,
`Path(d) / n`, a name listed from a folder (`os.listdir(here)`) or read from another
file (`manifest.txt`), a data module imported by a computed name
(`importlib.import_module(name)`, `__import__`). The agent rewrote that data and the
restored tests passed (red team attack4). So `scan` does two things:

1. every expression that builds a string or a path is evaluated over the source's own
   bindings: its assignments (every scope merged: more values, never fewer), loop
   targets over literal collections, `pytest.mark.parametrize` values. Each value is a
   pattern whose unknown parts are `*` (`HERE / (base + ext)` is `*/expected.json`); the
   patterns join the literals as names the test may read;
2. a source is *opaque* where a call that reads, lists or imports files (`open`,
   `read_text`, `iterdir`, `glob`, `os.listdir`, `os.walk`, `import_module`,
   `__import__`, `pkgutil.get_data`, `importlib.resources`, `runpy.run_path`,
   `pandas.read_csv`…) is given a name whose pattern names nothing (fewer than two known
   characters besides `*`, `/` and `.`: `*`, `*/*`), or an import a module name with any
   unknown part. What an opaque test reads is unknowable, so the tree restores every data
   file of the template (the fail-closed rule; see `tree`). Library readers no list
   names in full (`np.load`, `sqlite3.connect`, `h5py.File`, `ET.parse`,
   `ConfigParser().read`: red team attack5) are known by their name's shape
   (`_LIBRARY_READERS`, `read_*`, `load_*`, `open_*`) when they are a function of an
   imported module; an argument that is an open file or a text (`json.load(f)`,
   `np.load(io.BytesIO(…))`) names nothing itself: its file was opened by a call read here.
   A child process (`subprocess.run`, `os.system`) given an argument that cannot be known
   (past its program: `sys.executable` is fine) is opaque too: it may read that name.
   Red team attack6 made the rule one of capabilities rather than of call shapes: a
   reference to an I/O capability that is not a call of it by its name (`r =
   Path.read_text`, `map(open, …)`, `open.__call__`), an attribute fetched by a name that
   may be a reader (`getattr(builtins, "open")`, `builtins.__dict__[n]`), a reader of a
   module that reads by name (`io.open`, `codecs.open`, `os.open`, `shutil.copy`,
   `urlopen`, `linecache`, `runpy`: `_MODULE_PATH_FUNCTIONS`), code given as a text that is
   no literal (`exec`, a `python -c` text, a child's standard input, a shell line that
   computes a name; a literal text is read like a source) and a child given an
   environment variable no literal spells are all opaque; a name read outside the tree
   or through `..` with an unknown part (`"/workspace/" + n`, `"file://" + n`) is too
   (`relative_name`).

Reading the test's own source (`open(__file__)`) is not data and never opaque. A reader
this module does not know (a method of a library's object) is not seen: such a test
names its files by literal almost always, and those are restored anyway.
"""

from __future__ import annotations

import ast
import functools
import itertools
import posixpath
import re
import shlex
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from harness.workspace.sandbox import SANDBOX_WORKDIR

STAR = "*"
_UNKNOWN: frozenset[str] = frozenset({STAR})
#: Most values one expression may take before it is taken as unknown (`*`).
_MAX_VALUES = 64
#: How deep a value is followed through names and calls before it is unknown.
_MAX_DEPTH = 24
#: A source is read for names only up to this size (a template's, so small).
MAX_SOURCE = 4 * 1024 * 1024
T = TypeVar("T")

#: A `%` conversion or a `str.format` field: the part of a name computed at run time.
_PERCENT_FIELD = re.compile(r"%(?:\([^)]*\))?[-#0 +]*[0-9*]*(?:\.[0-9*]+)?[a-zA-Z%]")
_FORMAT_FIELD = re.compile(r"\{[^{}]*\}")
_STARS = re.compile(r"\*+")

#: Functions whose first argument is a file or folder they read or list (`open(p)`,
#: `os.listdir(d)`, `glob.glob(pattern)`, `pandas.read_csv(p)`, `shutil.copy(src, …)`).
_READERS = frozenset(
    {"open", "listdir", "scandir", "iglob", "run_path", "loadtxt", "genfromtxt", "fromfile",
     "read_csv", "read_json", "read_table", "read_excel", "read_parquet", "read_pickle",
     "read_fwf", "read_feather", "read_hdf", "read_xml", "copyfile", "copytree", "FileIO",
     "ZipFile"}
)  # fmt: skip
#: Readers whose name is common elsewhere (`ast.walk`, `re.glob`…): only of these modules.
_MODULE_READERS = {
    "walk": "os",
    "fwalk": "os",
    "glob": "glob",
    "input": "fileinput",
    "getline": "linecache",
    "getlines": "linecache",
}
#: Methods that read or list the path they are called on (`(HERE / n).read_text()`).
_PATH_READERS = frozenset({"read_text", "read_bytes", "open", "iterdir", "walk"})
#: Methods that list the path they are called on by a pattern (`HERE.glob(p)`).
_PATH_GLOBS = frozenset({"glob", "rglob"})
#: Functions naming a resource of a package (`pkgutil.get_data(pkg, name)`,
#: `importlib.resources.read_text(pkg, name)`): every argument is part of the name.
_RESOURCE_READERS = frozenset(
    {"get_data", "read_text", "read_binary", "open_text", "open_binary", "path", "contents",
     "is_resource", "files", "spec_from_file_location", "SourceFileLoader"}
)  # fmt: skip
_RESOURCE_MODULES = frozenset({"pkgutil", "resources", "importlib_resources", "util"})
#: Library functions that open a path they are given, by their name alone: `np.load`,
#: `sqlite3.connect`, `h5py.File`, `imageio.imread`, `scipy.io.loadmat`,
#: `xarray.open_dataset`, `openpyxl.load_workbook`, `pd.read_sql`… (with the prefixes
#: `read_`, `load_`, `open_`). A reader no list can name in full: the rule is the name's
#: shape, and a call of an imported module's function in this shape given a name that
#: cannot be known is opaque, as `open` is (red team attack5).
_LIBRARY_READERS = frozenset(
    {"load", "connect", "imread", "loadmat", "memmap", "File", "Dataset", "urlopen",
     "zipimporter", "read", "parse", "iterparse", "mmap"}
)  # fmt: skip
_LIBRARY_PREFIXES = ("read_", "load_", "open_")
#: Modules whose readers of those names take an open file object or a text, never a path
#: (`json.load(f)`, `ast.parse(src)`, `os.read(fd, n)`): the file was opened by a call
#: this module already reads (`open`, `.read_text()`), or the value is no file.
_NOT_PATH_MODULES = frozenset(
    {"json", "pickle", "marshal", "tomllib", "tomli", "plistlib", "yaml", "csv", "ast",
     "shlex", "email", "html", "os", "io", "re", "string", "struct", "base64", "zlib",
     "gzip", "bz2", "lzma", "codecs", "sys", "dis", "tokenize", "symtable", "argparse",
     "http", "datetime", "time", "dateutil", "packaging", "configparser"}
)  # fmt: skip
#: Keyword arguments that name the file a reader opens.
_PATH_KEYWORDS = frozenset(
    {"file", "path", "fname", "filename", "filenames", "filepath", "filepath_or_buffer",
     "database", "uri", "url", "name", "io", "source"}
)  # fmt: skip
#: Calls whose value is an open file or its content, never a name (`json.load(f)` with
#: `f = open(p)`): the name was read where they were called.
_HANDLE_MAKERS = frozenset(
    {"open", "read_text", "read_bytes", "read", "readlines", "BytesIO", "StringIO",
     "urlopen", "TemporaryFile", "NamedTemporaryFile", "SpooledTemporaryFile", "fdopen"}
)  # fmt: skip
#: Classes whose `.read(names)` reads files by name (`ConfigParser().read(path)`).
_CONFIG_PARSERS = frozenset({"ConfigParser", "RawConfigParser", "SafeConfigParser"})
#: Functions that start a child process (of `subprocess`, or `os`'s shell ones): what it
#: reads is decided by its arguments, which must be names a literal spells.
_SPAWNERS = {
    "subprocess": frozenset(
        {"run", "call", "check_call", "check_output", "Popen", "getoutput", "getstatusoutput"}
    ),
    "os": frozenset({"system", "popen"}),
}
#: Functions importing a module by its name as a string.
_IMPORTERS = frozenset({"import_module", "__import__", "run_module"})
#: Calls whose value is their argument's as a path (`Path(a, b)` joins; `str(p)`).
_PATH_MAKERS = frozenset({"Path", "PurePath", "PosixPath", "PurePosixPath", "WindowsPath"})
_SAME_VALUE = frozenset({"str", "fspath", "abspath", "realpath", "normpath", "expanduser"})
_SAME_VALUE_METHODS = frozenset({"resolve", "absolute", "expanduser", "as_posix", "strip"})
#: Functions of a module that read, list, copy or run the file or folder their first
#: argument (or a path keyword) names, by module: `io.open`, `codecs.open`, `shutil.copy`
#: then a read of the copy, `urllib.request.urlopen("file://" + n)` (red team attack6:
#: the names scan saw none of them). Known by the module the call reaches
#: (`_Flow.module_of`: `from shutil import copy` too).
_MODULE_PATH_FUNCTIONS: dict[str, frozenset[str]] = {
    "io": frozenset({"open", "open_code", "FileIO"}),
    "_io": frozenset({"open", "open_code", "FileIO"}),
    "codecs": frozenset({"open", "EncodedFile"}),
    "builtins": frozenset({"open"}),
    "os": frozenset(
        {"open", "listdir", "scandir", "walk", "fwalk", "rename", "renames", "replace", "link",
         "symlink", "readlink", "startfile", "popen", "system", "posix_spawn", "posix_spawnp",
         "execv", "execve", "execl", "execle", "execlp", "execvp", "execvpe", "spawnv",
         "spawnve", "spawnl", "spawnle", "spawnlp", "spawnvp", "spawnvpe"}
    ),
    "shutil": frozenset(
        {"copy", "copy2", "copyfile", "copytree", "move", "make_archive", "unpack_archive"}
    ),
    "urllib": frozenset({"urlopen", "urlretrieve", "Request"}),
    "mmap": frozenset({"mmap"}),
    "linecache": frozenset({"getline", "getlines", "updatecache"}),
    "runpy": frozenset({"run_path", "run_module"}),
    "fileinput": frozenset({"input", "FileInput"}),
    "tarfile": frozenset({"open", "TarFile"}),
    "zipfile": frozenset({"ZipFile", "Path"}),
    "gzip": frozenset({"open", "GzipFile"}),
    "bz2": frozenset({"open", "BZ2File"}),
    "lzma": frozenset({"open", "LZMAFile"}),
    "shelve": frozenset({"open"}),
    "dbm": frozenset({"open"}),
    "tokenize": frozenset({"open"}),
    "py_compile": frozenset({"compile"}),
    "zipimport": frozenset({"zipimporter"}),
    "filecmp": frozenset({"cmp", "cmpfiles", "dircmp"}),
}  # fmt: skip
#: Builtins that run code given as a text: what that code reads is known only when the
#: text is a literal (its own names are then read here like a source's).
_CODE_RUNNERS = frozenset({"exec", "eval", "compile"})
#: Built-ins that fetch an attribute by a name given as a text (`getattr(builtins,
#: "open")`): an I/O capability reached so is an alias of it (`_capability`).
_ATTRIBUTE_GETTERS = frozenset({"getattr", "attrgetter", "methodcaller", "__getattribute__"})
#: Namespaces whose items are looked up by a text (`builtins.__dict__["open"]`).
_NAMESPACES = frozenset({"vars", "globals", "locals"})
#: How deep a literal code text run by `exec` or `python -c` is read for its names.
_MAX_NESTED_CODE = 3


@dataclass(frozen=True)
class SourceNames:
    """What `scan` found in one source."""

    #: String literals and the patterns of computed names (`*/expected.json`).
    names: frozenset[str] = frozenset()
    #: Modules imported by a name computed from literals (`import_module("exp" + "ected")`).
    imports: frozenset[str] = frozenset()
    #: Where the source reads a name that cannot be known ("line 12: open(...)"); empty
    #: when every name it reads is a literal or a pattern of one.
    opaque: tuple[str, ...] = field(default=())


class _Each:
    """A loop target: one element of `node` (an iterable) at a time."""

    __slots__ = ("node",)

    def __init__(self, node: ast.expr) -> None:
        self.node = node


_Binding = ast.expr | _Each | str


def _product(left: frozenset[str], right: frozenset[str], sep: str) -> frozenset[str]:
    if len(left) * len(right) > _MAX_VALUES:
        return _UNKNOWN
    return frozenset(_STARS.sub(STAR, a + sep + b) for a, b in itertools.product(left, right))


def relative_name(name: str) -> str | None:
    """The tree-relative name a test's name reads (`cases.json`, `data/*.json`), or None
    when it reads outside the tree: an absolute path elsewhere, `..` past the start, a
    URL of another scheme, or a pattern with `..` (an unknown folder's parent). A check
    runs at `/workspace` (`SANDBOX_WORKDIR`), so `/workspace/cases.json` and
    `file:///workspace/cases.json` are `cases.json`: red team attack6 read the data by
    `urlopen("file://" + n)` and `open("/workspace/" + n)`, patterns taken as names of
    nothing in the tree (so not opaque) and restoring nothing."""
    text = name.strip()
    if text.startswith("file://"):
        text = text[len("file://") :]
        if not text.startswith("/"):  # `file://localhost/…`: a host, then the path
            text = "/" + text.split("/", 1)[1] if "/" in text else "/"
    elif text.startswith("file:"):
        text = text[len("file:") :]
    if re.match(r"^[A-Za-z][A-Za-z0-9+.-]*:", text):
        return None  # another scheme (`http:`, `data:`): no file of the tree
    if text == SANDBOX_WORKDIR or text.startswith(SANDBOX_WORKDIR + "/"):
        text = text[len(SANDBOX_WORKDIR) :].lstrip("/") or "."
    if text.startswith("/"):
        return None
    parts = text.split("/")
    if ".." in parts and STAR in text:
        return None
    normal = posixpath.normpath(text) if text else "."
    return None if normal == ".." or normal.startswith("../") else normal


def names_nothing(pattern: str) -> bool:
    """A pattern that could be any file (`*`, `*/*`, `./*`): fewer than two known
    characters besides glob characters, `/` and `.`."""
    return len(re.sub(r"[*?\[\]/.]", "", pattern)) < 2


class _Flow:
    """The values each name of one source may take."""

    def __init__(self, tree: ast.Module) -> None:
        self.bindings: dict[str, list[_Binding]] = {}
        self.modules: set[str] = set()  # names bound by `import x` (and `from x import y`)
        self.origins: dict[str, str] = {}  # `from os import walk`: walk -> os
        self.aliases: dict[str, str] = {}  # `import numpy as np`: np -> numpy
        self.handles: dict[str, int] = {}  # how often a `with … as f` binds a name
        self._memo: dict[str, frozenset[str]] = {}
        self._active: set[str] = set()
        for node in ast.walk(tree):
            self._collect(node)

    def _bind(self, target: ast.AST, value: _Binding) -> None:
        if isinstance(target, ast.Name):
            self.bindings.setdefault(target.id, []).append(value)
        elif isinstance(target, ast.Tuple | ast.List):
            elements = value.elts if isinstance(value, ast.Tuple | ast.List) else None
            if elements is not None and len(elements) == len(target.elts):
                for sub, element in zip(target.elts, elements, strict=True):
                    self._bind(sub, element)
            else:  # unpacked from something unknown (`a, b = pair`)
                for sub in target.elts:
                    self._bind(sub, STAR)
        elif isinstance(target, ast.Starred):
            self._bind(target.value, STAR)

    def _collect(self, node: ast.AST) -> None:
        if isinstance(node, ast.Import):
            for alias in node.names:
                self.modules.add(alias.asname or alias.name.split(".")[0])
                if alias.asname:
                    self.aliases[alias.asname] = alias.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom):
            for alias in node.names:
                # A module or a value of one: both unknown as strings.
                self.modules.add(alias.asname or alias.name)
                self.origins[alias.asname or alias.name] = (node.module or "").split(".")[0]
                self.bindings.setdefault(alias.asname or alias.name, []).append(STAR)
        elif isinstance(node, ast.Assign):
            for target in node.targets:
                self._bind(target, node.value)
        elif isinstance(node, ast.AnnAssign | ast.NamedExpr) and node.value is not None:
            self._bind(node.target, node.value)
        elif isinstance(node, ast.AugAssign):
            self._bind(node.target, ast.BinOp(left=node.target, op=node.op, right=node.value))
        elif isinstance(node, ast.For | ast.AsyncFor | ast.comprehension):
            self._bind(node.target, _Each(node.iter))
        elif isinstance(node, ast.withitem) and node.optional_vars is not None:
            self._bind(node.optional_vars, STAR)  # a file object, not a name
            if isinstance(node.optional_vars, ast.Name):
                name = node.optional_vars.id
                self.handles[name] = self.handles.get(name, 0) + 1
        elif isinstance(node, ast.ExceptHandler) and node.name:
            self.bindings.setdefault(node.name, []).append(STAR)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            self._parameters(node)

    def _parameters(self, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) -> None:
        """A function's parameters are unknown, except the values a
        `pytest.mark.parametrize` gives them."""
        given: set[str] = set()
        for decorator in getattr(node, "decorator_list", ()):
            if (
                isinstance(decorator, ast.Call)
                and isinstance(decorator.func, ast.Attribute)
                and decorator.func.attr == "parametrize"
                and len(decorator.args) >= 2
            ):
                given |= self._parametrize(decorator.args[0], decorator.args[1])
        arguments = node.args
        for arg in [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]:
            if arg.arg not in given:
                self.bindings.setdefault(arg.arg, []).append(STAR)
        for extra in (arguments.vararg, arguments.kwarg):
            if extra is not None:
                self.bindings.setdefault(extra.arg, []).append(STAR)

    def _parametrize(self, names_node: ast.expr, values: ast.expr) -> set[str]:
        if isinstance(names_node, ast.Constant) and isinstance(names_node.value, str):
            names = [n.strip() for n in names_node.value.split(",") if n.strip()]
        elif isinstance(names_node, ast.Tuple | ast.List) and all(
            isinstance(e, ast.Constant) and isinstance(e.value, str) for e in names_node.elts
        ):
            names = [str(e.value) for e in names_node.elts if isinstance(e, ast.Constant)]
        else:
            return set()
        if not isinstance(values, ast.List | ast.Tuple):
            return set()  # unknown values: the parameters stay unknown
        for case in values.elts:
            if isinstance(case, ast.Call) and case.args:  # pytest.param(…, id=…)
                row: list[ast.expr] = list(case.args)
            elif len(names) == 1:
                row = [case]
            elif isinstance(case, ast.Tuple | ast.List):
                row = list(case.elts)
            else:
                row = []
            for i, name in enumerate(names):
                self.bindings.setdefault(name, []).append(row[i] if i < len(row) else STAR)
        return set(names)

    def module_of(self, func: ast.expr) -> str:
        """The top-level module a function call reaches: `np.load` -> numpy (through its
        alias), `load` imported from numpy -> numpy; "" when none."""
        if isinstance(func, ast.Name):
            return self.origins.get(func.id, "")
        root = _root(func) or ""
        return self.aliases.get(root, root)

    def is_handle(self, node: ast.expr, depth: int = 0) -> bool:
        """Whether `node` is an open file or a file's content, as far as the source
        shows: a call of `_HANDLE_MAKERS`, or a name bound only by `with … as` or to such
        calls (a name bound anywhere else is not)."""
        if depth > _MAX_DEPTH:
            return False
        if isinstance(node, ast.Call):
            return _func_name(node.func) in _HANDLE_MAKERS
        if isinstance(node, ast.Name):
            bindings = self.bindings.get(node.id, [])
            # Scopes are merged: `f` may be a `with` target in one function and a
            # parameter (a name) in another. Each unknown binding must be a `with`'s.
            unknown = sum(1 for b in bindings if isinstance(b, str))
            return (
                bool(bindings)
                and unknown <= self.handles.get(node.id, 0)
                and all(
                    isinstance(b, str) or (isinstance(b, ast.expr) and self.is_handle(b, depth + 1))
                    for b in bindings
                )
            )
        return False

    def is_config_parser(self, node: ast.expr, depth: int = 0) -> bool:
        """`configparser.ConfigParser()`, or a name bound to one."""
        if depth > _MAX_DEPTH:
            return False
        if isinstance(node, ast.Call):
            return _func_name(node.func) in _CONFIG_PARSERS
        if isinstance(node, ast.Name):
            return any(
                isinstance(b, ast.expr) and self.is_config_parser(b, depth + 1)
                for b in self.bindings.get(node.id, [])
            )
        return False

    # ------------------------------------------------------------------ values
    def name(self, name: str, depth: int) -> frozenset[str]:
        if name in self._memo:
            return self._memo[name]
        bindings = self.bindings.get(name)
        if not bindings or name in self._active or depth > _MAX_DEPTH:
            return _UNKNOWN  # unbound here (a builtin, `__file__`), a cycle, too deep
        self._active.add(name)
        found: set[str] = set()
        for binding in bindings:
            if isinstance(binding, str):
                found.add(binding)
            elif isinstance(binding, _Each):
                found |= self.each(binding.node, depth + 1)
            else:
                found |= self.value(binding, depth + 1)
            if len(found) > _MAX_VALUES:
                found = {STAR}
                break
        self._active.discard(name)
        self._memo[name] = frozenset(found)
        return self._memo[name]

    def each(self, node: ast.expr, depth: int) -> frozenset[str]:
        """The values of one element of the iterable `node`."""
        if depth > _MAX_DEPTH:
            return _UNKNOWN
        if isinstance(node, ast.List | ast.Tuple | ast.Set):
            found: set[str] = set()
            for element in node.elts:
                found |= (
                    _UNKNOWN if isinstance(element, ast.Starred) else self.value(element, depth + 1)
                )
            return frozenset(found) if len(found) <= _MAX_VALUES else _UNKNOWN
        if isinstance(node, ast.Name):
            found = set()
            for binding in self.bindings.get(node.id, [STAR]):
                found |= (
                    _UNKNOWN if not isinstance(binding, ast.expr) else self.each(binding, depth + 1)
                )
            return frozenset(found) if len(found) <= _MAX_VALUES else _UNKNOWN
        if isinstance(node, ast.GeneratorExp | ast.ListComp | ast.SetComp):
            return self.value(node.elt, depth + 1)
        if isinstance(node, ast.Call) and node.args:
            func = _func_name(node.func)
            if func in ("sorted", "list", "tuple", "set", "reversed", "frozenset"):
                return self.each(node.args[0], depth + 1)
            if func in ("glob", "iglob") and _is_reader(node.func, func, self):
                return self.value(node.args[0], depth + 1)  # the paths it matches
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in ("glob", "rglob", "iterdir")
            and not _is_module_call(node.func, self.modules)
        ):
            under = self.value(node.func.value, depth + 1)
            pattern = self.value(node.args[0], depth + 1) if node.args else _UNKNOWN
            return _product(under, pattern, "/")
        return _UNKNOWN

    def value(self, node: ast.AST, depth: int = 0) -> frozenset[str]:
        """The patterns of the string (or path) `node` may be."""
        if depth > _MAX_DEPTH:
            return _UNKNOWN
        if isinstance(node, ast.Constant):
            return frozenset({node.value}) if isinstance(node.value, str) else _UNKNOWN
        if isinstance(node, ast.Name):
            return self.name(node.id, depth + 1)
        if isinstance(node, ast.JoinedStr):
            found = frozenset({""})
            for part in node.values:
                if isinstance(part, ast.Constant) and isinstance(part.value, str):
                    piece = frozenset({part.value})
                elif (
                    isinstance(part, ast.FormattedValue)
                    and part.conversion in (-1, 115)  # none, or !s
                    and part.format_spec is None
                ):
                    piece = self.value(part.value, depth + 1)
                else:
                    piece = _UNKNOWN
                found = _product(found, piece, "")
            return found
        if isinstance(node, ast.BinOp):
            if isinstance(node.op, ast.Add):
                return _product(
                    self.value(node.left, depth + 1), self.value(node.right, depth + 1), ""
                )
            if isinstance(node.op, ast.Div):  # a path joined (`HERE / name`)
                return _product(
                    self.value(node.left, depth + 1), self.value(node.right, depth + 1), "/"
                )
            if (
                isinstance(node.op, ast.Mod)
                and isinstance(node.left, ast.Constant)
                and isinstance(node.left.value, str)
            ):
                return frozenset({_PERCENT_FIELD.sub(STAR, node.left.value)})
        if isinstance(node, ast.Subscript) and not isinstance(node.slice, ast.Slice):
            # One element of a collection (`sorted(glob("cases/v*.json"))[-1]`); a
            # string's character or a mapping's value is unknown (`*`) either way.
            return self.each(node.value, depth + 1)
        if isinstance(node, ast.IfExp):
            return self.value(node.body, depth + 1) | self.value(node.orelse, depth + 1)
        if isinstance(node, ast.BoolOp):
            either: set[str] = set()
            for operand in node.values:
                either |= self.value(operand, depth + 1)
            return frozenset(either) if len(either) <= _MAX_VALUES else _UNKNOWN
        if isinstance(node, ast.Call):
            return self._call(node, depth + 1)
        return _UNKNOWN

    def _joined(self, parts: list[ast.expr], depth: int, sep: str = "/") -> frozenset[str]:
        if not parts or any(isinstance(p, ast.Starred) for p in parts):
            return _UNKNOWN
        found = self.value(parts[0], depth)
        for part in parts[1:]:
            found = _product(found, self.value(part, depth), sep)
        return found

    def _call(self, node: ast.Call, depth: int) -> frozenset[str]:
        func, args = node.func, node.args
        name = _func_name(func)
        if isinstance(func, ast.Attribute):
            owner = func.value
            if (
                name == "format"
                and isinstance(owner, ast.Constant)
                and isinstance(owner.value, str)
            ):
                return frozenset({_FORMAT_FIELD.sub(STAR, owner.value)})
            if name == "join" and isinstance(owner, ast.Constant) and isinstance(owner.value, str):
                if len(args) == 1 and isinstance(args[0], ast.List | ast.Tuple):
                    return self._joined(list(args[0].elts), depth, owner.value)
                return _UNKNOWN
            if name == "join" and _is_module_call(func, self.modules):  # os.path.join
                return self._joined(list(args), depth)
            if name == "joinpath":
                return self._joined([owner, *args], depth)
            if name in ("with_suffix", "with_stem", "with_name") and args:
                text = self.value(args[0], depth)
                if name == "with_suffix":
                    return frozenset(STAR + t for t in text)
                return frozenset(t + ".*" for t in text) if name == "with_stem" else text
            if name in _SAME_VALUE_METHODS and not _is_module_call(func, self.modules):
                return self.value(owner, depth)
        if name in _PATH_MAKERS and args:
            return self._joined(list(args), depth)
        if name in _SAME_VALUE and args:
            return self.value(args[0], depth)
        return _UNKNOWN


def _func_name(func: ast.expr) -> str | None:
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return None


def _root(node: ast.expr) -> str | None:
    while isinstance(node, ast.Attribute):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def _is_module_call(func: ast.expr, modules: set[str]) -> bool:
    """`os.path.join(…)`, `glob.glob(…)`: a function of an imported module (or a name
    imported from one), not a method of a value."""
    if isinstance(func, ast.Name):
        return True
    return isinstance(func, ast.Attribute) and _root(func.value) in modules


def _is_own_file(node: ast.expr) -> bool:
    """`__file__`, `Path(__file__)`: the test reading its own source, not data."""
    if isinstance(node, ast.Call) and _func_name(node.func) in _PATH_MAKERS and len(node.args) == 1:
        node = node.args[0]
    return isinstance(node, ast.Name) and node.id == "__file__"


def _is_reader(func: ast.expr, name: str | None, flow: _Flow) -> bool:
    if name in _READERS:
        return True
    module = _MODULE_READERS.get(name or "")
    if module is None:
        return False
    if isinstance(func, ast.Name):  # `from os import walk`, never the builtin `input`
        return flow.origins.get(func.id) == module
    return isinstance(func, ast.Attribute) and _root(func.value) == module


def _library_reader(func: ast.expr, name: str | None, flow: _Flow) -> bool:
    """A library function that opens the path it is given (`_LIBRARY_READERS`): a
    function of an imported module (or imported from one), in a module that is not
    known to take only open files or texts."""
    if name is None or not (name in _LIBRARY_READERS or name.startswith(_LIBRARY_PREFIXES)):
        return False
    module = flow.module_of(func)
    if not module or module in _NOT_PATH_MODULES:
        return False  # a function of the test's own (`def load(…)`), or a text parser
    if name in ("parse", "iterparse"):  # `ast.parse(text)`: only XML parsers take paths
        return module in ("xml", "lxml", "defusedxml") or _root(func) in (
            "ET",
            "ElementTree",
            "etree",
            "minidom",
        )
    return True


def _unknown_argument(command: ast.expr, flow: _Flow, depth: int = 0) -> bool:
    """Whether a child process's command has an argument that cannot be known (the
    program itself, `sys.executable`, may be unknown): a child given a name built at
    run time (`[sys.executable, "show.py", name]`, `f"cat {name}"`) reads a file no
    literal of the test spells. A list built elsewhere is followed through its names;
    one unpacked into the list (`*args`), or a command that is all unknown, is unknown."""
    if depth > _MAX_DEPTH:
        return True
    if isinstance(command, ast.List | ast.Tuple):
        return any(
            isinstance(e, ast.Starred) or any(_unknown_word(v) for v in flow.value(e))
            for e in command.elts[1:]
        )
    if isinstance(command, ast.Name):
        bindings = flow.bindings.get(command.id, [])
        if bindings and all(isinstance(b, ast.expr) for b in bindings):
            return any(
                _unknown_argument(b, flow, depth + 1) for b in bindings if isinstance(b, ast.expr)
            )
    # A command line: its words after the program (`f"{sys.executable} -m slug"` is
    # known); one that is all unknown (`subprocess.run(cmd, shell=True)`) is unknown.
    for value in flow.value(command):
        words = value.split()
        if all(_unknown_word(w) for w in words) or any(_unknown_word(w) for w in words[1:]):
            return True
    return False


def _unknown_word(value: str) -> bool:
    """An argument computed at run time that may be any name (`*`, `*/*`); a literal one
    (`-q`, `x`) is known, however short."""
    return STAR in value and names_nothing(value)


def _path_argument(node: ast.Call) -> ast.expr | None:
    """The argument naming the file a reader opens: its first, or a keyword for one."""
    if node.args:
        first = node.args[0]
        return None if isinstance(first, ast.Starred) else first
    return next((k.value for k in node.keywords if k.arg in _PATH_KEYWORDS), None)


def scan(path: Path) -> SourceNames:
    """The names a Python source may read, and where it reads one that cannot be known
    (see the module docstring). A source that cannot be read or parsed names nothing and
    is not opaque (it runs nothing either). Cached by the file's identity and time: one
    grading tree asks about each test source several times."""
    return by_identity(path, _scan_file, SourceNames())


def by_identity(path: Path, cached: Callable[[str, int, int, int], T], default: T) -> T:
    """`cached(path, inode, size, mtime_ns)` for a source of at most `MAX_SOURCE` bytes,
    else `default` (gone, unreadable or too large). `cached` memoises by those arguments:
    the file's identity and time, so a file edited since is read again."""
    try:
        info = path.stat()
    except OSError:
        return default
    if info.st_size > MAX_SOURCE:
        return default
    return cached(str(path), info.st_ino, info.st_size, info.st_mtime_ns)


def parsed_file(path: str) -> ast.Module | None:
    """The Python source at `path` parsed, or None when it cannot be read or parsed (not
    Python, nested past the parser's limits, too large for memory)."""
    try:
        return ast.parse(Path(path).read_bytes())
    except (OSError, SyntaxError, ValueError, RecursionError, MemoryError):
        return None


@functools.lru_cache(maxsize=512)
def _scan_file(path: str, inode: int, size: int, mtime_ns: int) -> SourceNames:
    del inode, size, mtime_ns  # the cache key: the same file, unchanged
    tree = parsed_file(path)
    if tree is None:
        return SourceNames()
    try:
        return _scan(tree)
    except RecursionError:
        # Expressions nested past Python's limit: nothing can be said of what it reads.
        return SourceNames(opaque=("the source nests too deep to be read",))


def _capability(node: ast.expr, flow: _Flow) -> str | None:
    """The I/O capability `node` (a name or an attribute) is, or None: a function or
    method that reads, lists, copies, imports or runs a file by a name it is given
    (`open`, `Path.read_text`, `shutil.copy`, `subprocess.run`, `exec`…)."""
    name = _func_name(node)
    if name is None:
        return None
    if name in _GENERIC_CAPABILITIES:
        return name
    module = flow.module_of(node)
    if name in _MODULE_PATH_FUNCTIONS.get(module, ()) or name in _SPAWNERS.get(module, ()):
        return name
    library = _library_reader(node, name, flow) and _is_module_call(node, flow.modules)
    return name if library and name != "read" else None


def _capability_text(value: str) -> bool:
    """A text naming an attribute that may be an I/O capability (`"open"`,
    `"read_text"`), or one that cannot be known (`*`)."""
    if STAR in value:
        return True
    last = value.rsplit(".", 1)[-1]
    return (
        last in _GENERIC_CAPABILITIES
        or any(last in names for names in _MODULE_PATH_FUNCTIONS.values())
        or last.startswith(_LIBRARY_PREFIXES)
        or last in _LIBRARY_READERS
    )


def _aliases(tree: ast.Module, flow: _Flow) -> list[str]:
    """Where the source reaches an I/O capability other than by calling it by its name,
    so that what it reads is not seen where it is called: a reference that is no call
    (`r = Path.read_text; r(p)`, `map(open, names)`), `getattr(builtins, "open")`
    (or any attribute fetched by a name that cannot be known), a namespace's item
    (`builtins.__dict__["open"]`, `vars(builtins)[name]`). The rule is the capability's
    name, not a list of ways to alias it (red team attack6)."""
    called = {id(n.func) for n in ast.walk(tree) if isinstance(n, ast.Call)}
    # A module an attribute is read from (`glob` in `glob.glob(…)`, bound by `import
    # glob`) is no reference to a capability of that name; a function's attribute is
    # (`open.__call__(n)`, `Path.read_text.__get__(p)()`).
    called |= {
        id(n.value)
        for n in ast.walk(tree)
        if isinstance(n, ast.Attribute)
        and isinstance(n.value, ast.Name)
        and n.value.id in flow.modules
        and n.value.id not in flow.origins
    }
    found: list[str] = []
    for node in ast.walk(tree):
        line = getattr(node, "lineno", 0)
        if (
            isinstance(node, ast.Name | ast.Attribute)
            and isinstance(node.ctx, ast.Load)
            and id(node) not in called
            and (capability := _capability(node, flow)) is not None
        ):
            found.append(f"line {line}: {capability} used as a value (an alias of a reader)")
        elif isinstance(node, ast.Call) and _func_name(node.func) in _ATTRIBUTE_GETTERS:
            at = 1 if _func_name(node.func) == "getattr" else 0
            texts = [a for a in node.args[at:] if not isinstance(a, ast.Starred)]
            if _func_name(node.func) == "getattr":
                texts = texts[:1]
            if any(isinstance(a, ast.Starred) for a in node.args) or any(
                _capability_text(v) for a in texts for v in flow.value(a)
            ):
                found.append(f"line {line}: an attribute fetched by a name that may be a reader")
        elif (
            isinstance(node, ast.Subscript)
            and _namespace(node.value)
            and any(_capability_text(v) for v in flow.value(node.slice))
        ):
            found.append(f"line {line}: a namespace's item that may be a reader")
    return found


def _namespace(node: ast.expr) -> bool:
    """`X.__dict__`, `__builtins__`, `vars(X)`, `globals()`: a mapping of names to values."""
    if isinstance(node, ast.Attribute):
        return node.attr == "__dict__"
    if isinstance(node, ast.Name):
        return node.id == "__builtins__"
    return isinstance(node, ast.Call) and _func_name(node.func) in _NAMESPACES


#: Variables of a child's environment that name no file it reads as data.
_PLAIN_VARIABLES = frozenset({"PATH", "HOME", "TMPDIR", "PWD", "LANG", "LC_ALL", "TERM"})


def _unknown_environment(call: ast.Call, flow: _Flow) -> bool:
    """A child given a variable whose value cannot be known (`env={"CASES": name}`): it
    may read the file that names (red team attack6: `os.environ`-driven names). The
    parent's own environment spread in (`**os.environ`) is not the test's choice."""
    env = next((k.value for k in call.keywords if k.arg == "env"), None)
    if env is None:
        return False
    pairs: list[tuple[ast.expr, ast.expr]]
    if isinstance(env, ast.Call) and _func_name(env.func) == "dict":
        pairs = [(ast.Constant(k.arg), k.value) for k in env.keywords if k.arg is not None]
    elif isinstance(env, ast.Dict):
        pairs = [(k, v) for k, v in zip(env.keys, env.values, strict=True) if k is not None]
    else:
        return False  # a mapping built elsewhere (`os.environ.copy()`): the parent's
    for key, value in pairs:
        names = flow.value(key)
        if any(n in _PLAIN_VARIABLES for n in names):
            continue
        if any(STAR in v and names_nothing(v) for v in flow.value(value)):
            return True
    return False


def _code_texts(command: ast.expr, flow: _Flow) -> tuple[list[str], list[str]]:
    """The code texts a child's command runs inline, each with what it is: a `-c` text
    (`[sys.executable, "-c", code]`, `"python -c '…'"`) or a shell command line
    (`os.system("cat …")`, `["sh", "-c", "…"]`). Returns (Python texts, shell texts); a
    text that cannot be known is `*`."""
    python: list[str] = []
    shell: list[str] = []
    if isinstance(command, ast.Name):
        # A list built elsewhere (`cmd = [sys.executable, "-c", code]; run(cmd)`).
        bindings = flow.bindings.get(command.id, [])
        lists = [b for b in bindings if isinstance(b, ast.List | ast.Tuple)]
        if lists and len(lists) == len(bindings):
            for bound in lists:
                more = _code_texts(bound, flow)
                python += more[0]
                shell += more[1]
            return python, shell
    words: list[frozenset[str]] = []
    if isinstance(command, ast.List | ast.Tuple):
        words = [_UNKNOWN if isinstance(e, ast.Starred) else flow.value(e) for e in command.elts]
        line = None
    else:
        line = flow.value(command)
    if line is not None:
        for text in line:
            shell.append(text)
            try:
                split = shlex.split(text)
            except ValueError:
                continue
            words = [frozenset({w}) for w in split]
    for i, word in enumerate(words[:-1]):
        if any(re.fullmatch(r"-[A-Za-z]*c", w) for w in word):
            program = next(iter(words[0])) if len(words[0]) == 1 else STAR
            target = shell if re.search(r"(?:^|/)(?:ba|z|da)?sh$", program) else python
            target.extend(words[i + 1])
        elif any(w in ("-e", "--eval") for w in word):
            shell.append(STAR)  # another language's inline code (`node -e`): unknown
    return python, shell


def _scan(tree: ast.Module, nested: int = 0) -> SourceNames:
    flow = _Flow(tree)
    names: set[str] = set()
    imports: set[str] = set()
    opaque: list[str] = _aliases(tree, flow)

    def read(node: ast.AST, values: frozenset[str], what: str) -> None:
        unknown = False
        for value in values:
            relative = relative_name(value)
            if relative is None:
                # Outside the tree: known only when spelled whole (`/tmp/out.txt`).
                unknown = unknown or STAR in value
            elif names_nothing(relative):
                unknown = True
            else:
                names.update({value, relative})
        if unknown:
            opaque.append(f"line {getattr(node, 'lineno', 0)}: {what}")

    def run_code(node: ast.AST, texts: Iterable[str], what: str) -> None:
        """Code given as a text (`exec`, `python -c`): a literal one is read here like a
        source; one that cannot be known (or nests too deep) is opaque."""
        for text in texts:
            if STAR in text or nested >= _MAX_NESTED_CODE:
                opaque.append(
                    f"line {getattr(node, 'lineno', 0)}: {what} of a text no literal spells"
                )
                continue
            try:
                inner = _scan(ast.parse(text), nested + 1)
            except (SyntaxError, ValueError):
                continue  # it does not run
            names.update(inner.names)
            imports.update(inner.imports)
            opaque.extend(f"line {getattr(node, 'lineno', 0)}: {what}: {o}" for o in inner.opaque)

    def shell_code(node: ast.AST, texts: Iterable[str]) -> None:
        """A shell command line: its words are names it may read (`cat cases.json`);
        one that computes a name (`$(…)`, `$VAR`, a backquote, a glob) is opaque. The
        program may be unknown (`f"{sys.executable} -m slug"`); its arguments may not."""
        for text in texts:
            try:
                words = shlex.split(text)
            except ValueError:
                words = [STAR, STAR]
            if text == STAR or any(re.search(r"[$`*?\[]", w) for w in words[1:]):
                opaque.append(
                    f"line {getattr(node, 'lineno', 0)}: a shell command that computes a name"
                )
                continue
            names.update(w for w in words if w and STAR not in w)

    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value:
            names.add(node.value)
            continue
        if isinstance(node, ast.BinOp | ast.JoinedStr | ast.Call):
            # A computed name, as patterns: its tail past unknown folders too
            # (`*/expected.json` is also `expected.json`, relative to the root or test).
            for value in flow.value(node):
                if value.strip("*/"):
                    names.add(value)
                    tail = re.sub(r"^(?:\*/)+", "", value)
                    if tail != value and tail.strip("*"):
                        names.add(tail)
        if not isinstance(node, ast.Call):
            continue
        func, args = node.func, node.args
        name = _func_name(func)
        module_call = _is_module_call(func, flow.modules)
        if module_call and name in _MODULE_PATH_FUNCTIONS.get(flow.module_of(func), ()):
            # `io.open`, `shutil.copy`, `urlopen`, `os.rename`… of a name (attack6).
            target = _path_argument(node)
            if target is not None and not flow.is_handle(target) and not _is_own_file(target):
                read(node, flow.value(target), f"{name}() of a name no literal spells")
        if name in _CODE_RUNNERS and isinstance(func, ast.Name) and args:
            # `exec(open(n).read())`, `eval(code)`: what the code reads is its own.
            first = args[0]
            code = first.value if isinstance(first, ast.Constant) else None
            run_code(node, [code] if isinstance(code, str) else [STAR], f"{name}()")
        if name in _IMPORTERS and args:
            modules = flow.value(args[0])
            if any(STAR in m for m in modules):
                opaque.append(f"line {node.lineno}: {name}() of a computed module name")
            imports.update(m for m in modules if STAR not in m)
        elif (
            name in _RESOURCE_READERS
            and isinstance(func, ast.Attribute)
            and (_root(func.value) or "").split(".")[-1] in _RESOURCE_MODULES | {"importlib"}
            and module_call
        ):
            parts = [flow.value(a) for a in args]
            if not parts or any(names_nothing(v) for part in parts for v in part):
                opaque.append(f"line {node.lineno}: {name}() of a package resource")
            for combined in itertools.islice(itertools.product(*parts), _MAX_VALUES):
                # `get_data("data.sets", "cases.json")`: data/sets/cases.json.
                names.add("/".join([*(p.replace(".", "/") for p in combined[:-1]), combined[-1]]))
        elif module_call and _is_reader(func, name, flow):
            target = (
                args[0]
                if args
                else next(
                    (k.value for k in node.keywords if k.arg in ("file", "path", "fname")), None
                )
            )
            if target is not None and not _is_own_file(target):
                read(node, flow.value(target), f"{name}() of a name no literal spells")
        elif module_call and name in _SPAWNERS.get(flow.module_of(func), ()):
            command = (
                args[0]
                if args
                else next(
                    (k.value for k in node.keywords if k.arg in ("args", "cmd", "command")), None
                )
            )
            if command is not None and _unknown_argument(command, flow):
                opaque.append(
                    f"line {node.lineno}: {name}() of a command whose arguments no literal spells"
                )
            elif command is not None:
                # The code a child runs inline (`python -c "…"`, `sh -c "…"`, code fed
                # on its standard input) reads what it names, like a test (a `-c` text
                # reading a computed name: attack6).
                python, shell = _code_texts(command, flow)
                if _unknown_environment(node, flow):
                    opaque.append(
                        f"line {node.lineno}: {name}() given an environment no literal spells"
                    )
                fed = next((k.value for k in node.keywords if k.arg == "input"), None)
                if fed is not None:
                    text = fed.value if isinstance(fed, ast.Constant) else None
                    code = text.decode("utf-8", "replace") if isinstance(text, bytes) else text
                    python.append(code if isinstance(code, str) else STAR)
                run_code(node, python, f"{name}() running code")
                shell_code(node, shell)
        elif module_call and _library_reader(func, name, flow):
            target = _path_argument(node)
            if target is not None and not flow.is_handle(target) and not _is_own_file(target):
                read(node, flow.value(target), f"{name}() of a name no literal spells")
        elif isinstance(func, ast.Attribute) and not module_call:
            if name == "read" and args and flow.is_config_parser(func.value):
                # `ConfigParser().read(names)`: a name or a list of them.
                names_read = (
                    flow.each(args[0], 0)
                    if isinstance(args[0], ast.List | ast.Tuple)
                    else flow.value(args[0])
                )
                read(node, names_read, ".read() of a config file no literal spells")
            elif name in _PATH_READERS:
                if not _is_own_file(func.value):
                    read(node, flow.value(func.value), f".{name}() of a path no literal spells")
            elif name in _PATH_GLOBS:
                pattern = flow.value(args[0]) if args else _UNKNOWN
                read(node, _product(flow.value(func.value), pattern, "/"), f".{name}()")
    return SourceNames(frozenset(names), frozenset(imports), tuple(dict.fromkeys(opaque)))


#: I/O capabilities known by their name whatever their owner (`open`, `.read_text`,
#: `run_path`, `exec`): a reference to one that is no call of it is an alias (`_aliases`).
_GENERIC_CAPABILITIES = (
    _READERS
    | _PATH_READERS
    | _PATH_GLOBS
    | _IMPORTERS
    | _CODE_RUNNERS
    | frozenset({"open_code", "urlopen", "urlretrieve", "get_data", "getline", "getlines"})
)
