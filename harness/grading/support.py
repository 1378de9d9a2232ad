"""Test support by what a module does, whatever it is named.

A module a test imports is the task's (restored, imported by the runner itself) when it
supports the tests rather than being graded by them (`harness.grading.tree`'s
`_test_support`). Its name was the only sign once (`testutil.py`, `helpers.py`…): the
agent emptied a `mylib.py` whose `check_add(add)` held the task's assertions, left `add`
wrong, and the restored test passed (attack7). So a module also supports the tests when:

* it imports a test framework (`unittest`, `pytest`, `hypothesis`): a test's base class
  or fixture module;
* it calls an assertion method (`self.assertEqual(…)`, `np.testing.assert_allclose(…)`);
* it asserts (`assert …`, or `if …: raise AssertionError`) on what a function it did
  not define returns: a parameter (`check_add(add)` asserting `add(1, 2) == 3`), an
  import (`from calc import add`), an attribute of an imported module (`calc.add`).

A solution checking its own arguments (`assert isinstance(a, int)`, `assert x is not
None`) or its own functions' results stays the agent's. The cost: a solution that asserts
on a callback it is given (`assert f(x) is not None`) is graded as the template had it
(closed, not open).
"""

from __future__ import annotations

import ast
import builtins
import functools
from pathlib import Path

from harness.grading.names import by_identity, parsed_file

#: Test frameworks: a module importing one is a test's support.
FRAMEWORKS = frozenset({"unittest", "pytest", "_pytest", "hypothesis"})
_BUILTINS = frozenset(dir(builtins))


#: Words of a module's name that say it is the tests' reference (`reference.py`,
#: `golden_calc.py`, `calc_ref.py`): the values a test compares with, the task's.
REFERENCE_WORDS = frozenset(
    {"reference", "ref", "oracle", "golden", "expected", "expectations", "truth",
     "groundtruth", "answerkey", "answers"}
)  # fmt: skip


def is_reference(path: Path) -> bool:
    """Is the module at `path` (a module a test imports) named as the tests' reference?
    Why: a test comparing `add(a, b)` with `reference.add(a, b)` was verified when the
    agent rewrote both to return 0 (attack7): a reference asserts nothing, so only its
    name says it is the task's. The cost: a module so named that the task asks the agent
    to write is graded as the template had it (closed, not open)."""
    stem = path.parent.name if path.name == "__init__.py" else path.stem
    words = set(stem.lower().split("_")) | {stem.lower().replace("_", "")}
    return bool(words & REFERENCE_WORDS)


def supports_tests(path: Path) -> bool:
    """Does the module at `path` support tests by what it does (see the module
    docstring)? False when it cannot be read or parsed."""
    return by_identity(path, _supports_tests, False)


@functools.lru_cache(maxsize=4096)
def _supports_tests(path: str, inode: int, size: int, mtime_ns: int) -> bool:
    del inode, size, mtime_ns  # the cache key: the same file, unchanged
    tree = parsed_file(path)
    if tree is None:
        return False
    try:
        return _supports(tree)
    except RecursionError:
        return False


def _supports(tree: ast.Module) -> bool:
    own, modules = _own_names(tree)
    for node in ast.walk(tree):
        if uses_test_framework(node):
            return True
        if isinstance(node, ast.Assert) and _foreign_call(node.test, own, modules):
            return True
        if (
            isinstance(node, ast.If)
            and any(_raises_assertion(s) for s in node.body + node.orelse)
            and _foreign_call(node.test, own, modules)
        ):
            return True
    return False


def uses_test_framework(node: ast.AST) -> bool:
    """Is `node` an import of a test framework (`import unittest`, `from pytest import
    raises`) or a call of an assertion method (`self.assertEqual(…)`,
    `np.testing.assert_allclose(…)`)? Either is a test's support whatever the module is
    named; `harness.grading.tree` asks the same of a module named as support."""
    if isinstance(node, ast.Import):
        return any(a.name.split(".")[0] in FRAMEWORKS for a in node.names)
    if isinstance(node, ast.ImportFrom):
        return (node.module or "").split(".")[0] in FRAMEWORKS
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr.startswith("assert")
    )


def _own_names(tree: ast.Module) -> tuple[set[str], set[str]]:
    """The names the module defines at its top (functions, classes, assignments), and
    the names it binds to imported modules (`import calc`, `import numpy as np`)."""
    own: set[str] = set()
    modules: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            own.add(node.name)
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            own |= {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
        elif isinstance(node, ast.Import):
            modules |= {(a.asname or a.name).split(".")[0] for a in node.names}
    return own, modules


def _foreign_call(test: ast.expr, own: set[str], modules: set[str]) -> bool:
    """Does `test` call a function the module did not define: a parameter or an imported
    name (`add(1, 2)`), or a function of an imported module (`calc.add(1, 2)`)?"""
    for node in ast.walk(test):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        if isinstance(func, ast.Name) and func.id not in own and func.id not in _BUILTINS:
            return True
        if isinstance(func, ast.Attribute):
            root: ast.expr = func
            while isinstance(root, ast.Attribute):
                root = root.value
            if isinstance(root, ast.Name) and root.id in modules:
                return True
    return False


def _raises_assertion(statement: ast.stmt) -> bool:
    for node in ast.walk(statement):
        if isinstance(node, ast.Raise) and node.exc is not None:
            exc = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
            if isinstance(exc, ast.Name) and exc.id == "AssertionError":
                return True
    return False
