"""Compiled test programs that link the agent's code: not trusted.

A free check such as `gcc -o t test_calc.c calc.c && ./t` (or `make test` building the
same) runs a program made of the task's test and the agent's code, and that program's
exit status is what the check trusts. The agent's code decides it before the test's
`main` runs (`__attribute__((constructor))` calling `_exit(0)`, a static initializer
calling `System.exit(0)`): a forged complete through `ilh run` (attack7). No runner keeps
the agent's code out of such a program, so the check is not run (unknown, never
verified: closed, not open), and the grader says why. A check that compiles the agent's
own program and reads its output (`gcc calc.c -o calc && test "$(./calc)" = 3`) still
runs: there is no task test program for the agent's code to answer for.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from graders.baseline import is_test_file
from harness.grading.tree import check_scripts, script_scripts

#: Test sources of compiled languages (by the test-file convention).
COMPILED_SUFFIXES = (".c", ".cc", ".cpp", ".cxx", ".rs", ".java", ".go", ".kt", ".swift", ".cs")
_COMPILER = re.compile(
    r"(?:^|[\s;&|(/])(?:gcc|cc|clang|g\+\+|c\+\+|clang\+\+|tcc|javac|java|rustc|cargo|go"
    r"|mvn|gradle|dotnet|swiftc|kotlinc|cmake|ctest|meson|ninja)(?:-[\d.]+)?(?=$|[\s;&|)])"
)
_MAX_SCRIPT = 1024 * 1024


def compiled_untrusted(tree: Path, command: str) -> str | None:
    """Why the free `command` over the grading tree at `tree` is not trusted: it builds a
    task's test program (a compiler in its line, the Makefiles' recipes or the shell
    scripts it runs, and a test source of a compiled language in the tree, which holds
    the task's test files only). None otherwise."""
    tests = sorted(
        rel for rel in _files(tree) if rel.endswith(COMPILED_SUFFIXES) and is_test_file(rel)
    )
    if not tests:
        return None
    scripts = check_scripts(command)
    scripts |= script_scripts(tree, scripts)
    lines = [command, *_makefile_lines(tree), *_script_lines(tree, scripts)]
    if not any(_COMPILER.search(line) for line in lines):
        return None
    return (
        f"it builds the task's test program ({', '.join(tests[:3])}) with the agent's code, "
        "which decides that program's exit status (a constructor calling _exit(0) before "
        "main); compile the agent's program alone and read its output, or test it with "
        "pytest = … or unittest = …"
    )


def _files(tree: Path) -> list[str]:
    found: list[str] = []
    for folder, dirs, files in os.walk(tree):
        dirs[:] = [d for d in dirs if d not in ("node_modules", ".git")]
        found += [(Path(folder) / f).relative_to(tree).as_posix() for f in files]
    return found


def _makefile_lines(tree: Path) -> list[str]:
    lines: list[str] = []
    for name in ("Makefile", "makefile", "GNUmakefile"):
        lines += _read_lines(tree / name)
    return lines


def _script_lines(tree: Path, scripts: set[str]) -> list[str]:
    lines: list[str] = []
    for rel in sorted(scripts):
        lines += _read_lines(tree / rel)
    return lines


def _read_lines(path: Path) -> list[str]:
    try:
        if path.is_symlink() or not path.is_file() or path.stat().st_size > _MAX_SCRIPT:
            return []
        return path.read_text(encoding="utf-8", errors="replace").splitlines()[:10_000]
    except OSError:
        return []
