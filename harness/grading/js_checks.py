"""JavaScript checks that load the agent's code into their own process: not trusted.

A free check keeps exit-code semantics, and a JavaScript check's exit code is decided
by whatever runs in its process. When the task's `check.js` (or the `test/run.js` that
`npm test` runs, or a `*.test.js` a runner such as jest loads) requires the agent's
module, that module decides it: `process.exit(0)` at require time, `process.exitCode =
0` in a `process.on('exit')` handler after the assertion threw, `assert.strictEqual`
replaced by a no-op. Each was a forged complete through `ilh run` (attack7). Python has
the harness's runner, which keeps the agent's modules in a process of their own; no such
runner exists here for JavaScript, so such a check is not run at all (unknown, never
verified: closed, not open) and the grader says why.

`js_untrusted` reads, statically, the JavaScript a free command runs — the scripts it
names (`node check.js`), those its task's recipes and shell scripts run (`npm test`,
`make test`), and every JavaScript test file of the task when it starts a JavaScript
test runner (`jest`, `mocha`, `node --test`…) — and follows what they load:

* Node's own modules (`fs`, `node:assert`…) and JSON files: fine;
* a relative module that is the task's (its bytes the template's): read in turn;
* any relative name in its text that is a JavaScript file of the tree (`createRequire(…)
  ('./calc')`, `new Worker('./calc.js')`): loaded all the same;
* anything else — a module of the agent (`./calc`), one missing from the tree, a package
  (`lodash`, from a `node_modules` the agent can change), a name computed at run time
  (`require(name)`), code run from text (`eval`, `new Function`, `vm.run…`): the reason
  the check is not trusted.

A check that only runs the agent's code as a program of its own (`execSync("node
calc.js")`, `python3 -c …`) and reads its output still runs: there the agent's exit code
is its program's answer, which the check reads as it chooses.
"""

from __future__ import annotations

import posixpath
import re
from pathlib import Path

from graders.baseline import is_test_file
from harness.grading.tree import (
    check_scripts,
    recipe_lines,
    recipe_scripts,
    relative_word,
    script_lines,
    script_scripts,
)

#: Sources of JavaScript (and TypeScript, run by ts-node, tsx, bun or deno).
JS_SUFFIXES = (".js", ".mjs", ".cjs", ".jsx", ".ts", ".mts", ".cts", ".tsx")
#: Programs that load a project's JavaScript test files themselves.
_JS_RUNNER = re.compile(
    r"(?:^|[\s;&|(/])(?:jest|mocha|vitest|ava|tap|jasmine|karma|bun|deno|npx|yarn|pnpm|tsx"
    r"|ts-node)(?=$|[\s;&|)])|node\s+(?:\S+\s+)*--test\b"
)
_NODE_BUILTINS = frozenset(
    {"assert", "assert/strict", "async_hooks", "buffer", "child_process", "cluster",
     "console", "constants", "crypto", "dgram", "diagnostics_channel", "dns", "domain",
     "events", "fs", "fs/promises", "http", "http2", "https", "inspector", "module", "net",
     "os", "path", "path/posix", "perf_hooks", "process", "punycode", "querystring",
     "readline", "readline/promises", "repl", "stream", "stream/promises", "string_decoder",
     "test", "timers", "timers/promises", "tls", "trace_events", "tty", "url", "util",
     "util/types", "v8", "vm", "worker_threads", "zlib"}
)  # fmt: skip
_LITERAL = r"""\s*(?P<q>['"`])(?P<spec>[^'"`\n]{1,1024})(?P=q)\s*"""
_LOADS = (
    re.compile(r"\brequire\s*\(" + _LITERAL + r"\)"),
    re.compile(r"\bimport\s*\(" + _LITERAL + r"\)"),
    re.compile(r"\b(?:import|export)\s+(?:[\w*${}\s,]+?\s+from\s+)?" + _LITERAL[3:]),
)
_RELATIVE_NAME = re.compile(r"""(?P<q>['"`])(?P<spec>\.{1,2}/[^'"`\n]{1,1024})(?P=q)""")
_COMPUTED = re.compile(r"\b(?:require|import)\s*\(\s*(?![\s'\"`])")
_CODE_FROM_TEXT = re.compile(r"\beval\s*\(|\bnew\s+Function\s*\(|\bvm\.\w*[Rr]un\w*\s*\(")
_RESOLVE_SUFFIXES = ("", ".js", ".cjs", ".mjs", ".json", ".ts", ".mts", ".cts")
_INDEXES = ("index.js", "index.cjs", "index.mjs", "index.ts")
#: Largest JavaScript source read (a task's check is small; larger is not trusted).
_MAX_SOURCE = 2 * 1024 * 1024


def js_untrusted(root: Path, task_files: set[str], command: str) -> str | None:
    """Why the free `command`, run over the tree at `root`, is not trusted: the
    JavaScript it runs loads code the task did not ship (see the module docstring).
    None when it runs no JavaScript, or only the task's and Node's own. `task_files`:
    the tree's files (relative, with `/`) that are the task's, their bytes the
    template's."""
    scripts = check_scripts(command) | recipe_scripts(root)
    scripts |= script_scripts(root, scripts)
    entries = {s for s in scripts if s.endswith(JS_SUFFIXES)}
    lines = [
        command,
        *recipe_lines(root),
        *(line for line, _ in script_lines(root, scripts, most=_MAX_SOURCE)),
    ]
    # A task's file any line names (`npx tsx check.ts`: no `check_scripts` suffix); the
    # agent's named so is a program the check runs, its output read.
    entries |= {
        rel
        for line in lines
        for word in line.split()
        if (rel := relative_word(word.strip("'\"")) or "") in task_files
        and rel.endswith(JS_SUFFIXES)
    }
    if any(_JS_RUNNER.search(line) for line in lines):
        entries |= {f for f in task_files if f.endswith(JS_SUFFIXES) and is_test_file(f)}
    seen: set[str] = set()
    todo = sorted(entries)
    while todo:
        rel = todo.pop()
        if rel in seen:
            continue
        seen.add(rel)
        if rel not in task_files:
            return f"it runs {rel}, which is not the task's"
        problem, loaded = _loads(root, rel)
        if problem is not None:
            return problem
        for target in loaded:
            if target not in task_files:
                return (
                    f"{rel} loads {target} into the check's own process, which is not the "
                    "task's: the code there decides the check's exit status"
                )
            todo.append(target)
    return None


def _loads(root: Path, rel: str) -> tuple[str | None, list[str]]:
    """(why `rel` is not trusted, or None; the tree files it loads that need reading)."""
    try:
        path = root / rel
        if path.stat().st_size > _MAX_SOURCE:
            return f"{rel} is too large to be read", []
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return f"{rel} cannot be read", []
    if _COMPUTED.search(text):
        return f"{rel} loads a module by a name it computes (not the task's to know)", []
    if _CODE_FROM_TEXT.search(text):
        return f"{rel} runs code made from text (eval, new Function, vm)", []
    loaded: list[str] = []
    for pattern in _LOADS:
        for match in pattern.finditer(text):
            spec = match.group("spec")
            name = spec.removeprefix("node:")
            if spec.startswith("node:") or name in _NODE_BUILTINS:
                continue
            if not spec.startswith((".", "/")):
                return f"{rel} loads the package {spec!r}, which the task does not ship", []
            target = _resolve(root, rel, spec)
            if target is None:
                return f"{rel} loads {spec}, which is not in the tree (the agent's to add)", []
            if not target.endswith(".json"):
                loaded.append(target)
    # A module loaded by another name (`createRequire(…)('./calc')`, `new Worker('./calc.js')`):
    # any relative name in the text that is a JavaScript file of the tree counts.
    for match in _RELATIVE_NAME.finditer(text):
        target = _resolve(root, rel, match.group("spec"))
        if target is not None and target.endswith(JS_SUFFIXES) and target not in loaded:
            loaded.append(target)
    return None, loaded


def _resolve(root: Path, rel: str, spec: str) -> str | None:
    """The tree file (relative) Node loads for `spec` from `rel`, or None."""
    if spec.startswith("/workspace/"):
        base = spec[len("/workspace/") :]
    elif spec.startswith("/"):
        return None
    else:
        base = posixpath.normpath(posixpath.join(posixpath.dirname(rel), spec))
    if base == ".." or base.startswith("../"):
        return None
    candidates = [base + s for s in _RESOLVE_SUFFIXES] + [f"{base}/{i}" for i in _INDEXES]
    for candidate in candidates:
        path = root / candidate
        if not path.is_symlink() and path.is_file():
            return posixpath.normpath(candidate)
    return None
