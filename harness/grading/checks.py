"""How the grader runs one tool check: over its own grading tree, in its own sandbox.

For every check (`CheckRunner.__call__`):

1. a fresh temporary folder holds the check's grading tree (`harness.grading.tree`: the
   agent's work with the task's tests and runner configuration restored, hooks and
   bytecode removed) and, apart from it, a report folder;
2. the check runs confined (`harness.workspace.commands.run_shell`), the tree at
   `/workspace` (writable: a check may write caches; the next check gets a new copy),
   the task's files in it read-only for a free command (`read_only_files`: a build step
   the check ran first rewrote them), and only for a hidden check the task's checks
   snapshot read-only at `/ilh-checks`
   (`$ILH_CHECKS`); its HOME is an empty folder, never the tree (an agent's
   `.bash_profile` saying `exit 0` ended a restored `bash -lc 'sh check.sh'`);
3. a runner-aware check (`pytest = …`, `unittest = …`, or a `run` that is one call of
   a known runner) runs the harness's own runner, mounted read-only at `/ilh-runner`,
   isolated (`python -I -B`: no user site, no `PYTHON*` variables, no script folder on
   the path), over the tree mounted read-only. The runner imports the tree's test files
   (`trusted_files`) and serves every other module from a solution process through
   proxies (`sandboxed/ilh_bridge.py`), so the agent's code never runs in the process
   that writes the report; the report comes back through a memory file inherited by
   number, which only the runner holds. The verdict is `graders.runners.judge_run` over
   that report and the tests the template defines;
4. the temporary folder is removed.

Under `--sandbox none` the same happens with host paths (the user chose no
confinement; the tree is still a fresh copy, and pytest is still kept from the folders
above it with an explicit `--rootdir`, `--confcutdir` and configuration file).
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
import shlex
import stat
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path, PurePosixPath

from graders.baseline import is_test_file
from graders.criteria import GradingCriterion
from graders.runners import (
    CHECKS_VARIABLE,
    MAX_REPORT_BYTES,
    RunnerCall,
    RunVerdict,
    Selection,
    expand_checks,
    judge_run,
    junit_counts,
    parse_report,
    runner_call,
    script_call,
    selection,
    unittest_args,
)
from graders.tool_checks import RunnerOutcome, UntrustedCheck
from harness.grading.compiled_checks import compiled_untrusted
from harness.grading.js_checks import JS_SUFFIXES, js_untrusted
from harness.grading.python_runs import PythonRuns
from harness.grading.tree import (
    GradingSources,
    TreeChanges,
    TreeError,
    build_tree,
    check_scripts,
    relative_word,
    runner_paths,
)
from harness.telemetry import span
from harness.workspace.commands import CommandResult, run_shell, scrubbed_env
from harness.workspace.sandbox import SANDBOX_WORKDIR, Mount, SandboxPolicy
from harness.workspace.walk import remove_tree

#: The harness's runner (`ilh_runner.py`) and its empty pytest configuration.
RUNNER_DIR = Path(__file__).resolve().parent / "sandboxed"
CHECKS_MOUNT = "/ilh-checks"
RUNNER_MOUNT = "/ilh-runner"
REPORT_MOUNT = "/ilh-report"
#: A free command's `python` (`sandboxed/ilh_python.py`), first on its PATH.
PYTHON_MOUNT = "/ilh-python"


class CheckRunner:
    """Runs a rubric's tool checks over `workspace` (see the module docstring). After
    each check, `changes` holds what its grading tree changed from the workspace."""

    def __init__(
        self,
        workspace: Path,
        sources: GradingSources,
        sandbox: SandboxPolicy,
        on_start: Callable[[str], None] | None = None,
    ) -> None:
        """`on_start(criterion id)`: told as each check starts (the live progress shows
        the running check; called from the worker thread the checks run in)."""
        self.workspace = workspace
        self.sources = sources
        self.sandbox = sandbox
        self.on_start = on_start
        self.changes: list[TreeChanges] = []

    def __call__(self, criterion: GradingCriterion, timeout_s: float) -> RunnerOutcome:
        if self.on_start is not None:
            self.on_start(criterion.id)
        # Resolved: the runner reports real paths, matched against the tree's.
        scratch = Path(tempfile.mkdtemp(prefix="ilh-grade-")).resolve()
        # The span names the criterion only: a hidden check's command stays the grader's.
        with span("ilh.grader.check", {"ilh.criterion.id": criterion.id}) as current:
            try:
                outcome = self._check(criterion, timeout_s, scratch)
            finally:
                # Not `shutil.rmtree`: a free check may nest folders thousands deep in
                # its tree, and rmtree recursed past Python's limit (attack8).
                remove_tree(scratch)
            current.set_attribute("ilh.check.exit_code", outcome.exit_code)
            current.set_attribute("ilh.check.timed_out", outcome.timed_out)
            return outcome

    # ------------------------------------------------------------------ one check
    def _check(self, criterion: GradingCriterion, timeout_s: float, scratch: Path) -> RunnerOutcome:
        tree = scratch / "tree"
        reports = scratch / "report"
        reports.mkdir()
        confined = self.sandbox.confined
        root = SANDBOX_WORKDIR if confined else str(tree)
        checks = self.sources.checks if criterion.hidden else None
        checks_at = (CHECKS_MOUNT if confined else str(checks)) if checks is not None else None
        call = self._runner_call(criterion, checks_at)
        if checks is not None and call is None:
            # Fail closed: a free command runs the agent's code with the hidden checks
            # readable, and trusts an exit code that code decides (`os._exit(0)` on
            # import passed `python $ILH_CHECKS/check.py`). Only the runner keeps the
            # hidden tests apart from the agent's code.
            raise OSError(
                "a hidden check must be one test-runner call (pytest = …, unittest = …): "
                "a free command lets the code under test read the hidden checks and decide "
                "its exit code"
            )
        # What the check names, restored from the template: a runner's paths, or the
        # script a free command runs.
        named = (
            check_scripts(criterion.run or "")
            if call is None or call.kind == "script"
            else runner_paths(call.args)
        )
        try:
            # A `python -c` check's text imports the task's data modules as a script does.
            script_c = call is not None and call.kind == "script" and call.args[:1] == ("-c",)
            codes = (call.args[1],) if call is not None and script_c else ()
            # A free command's own line names data as a check script does (`diff - want`).
            lines = (criterion.run or "",) if call is None else ()
            changes = build_tree(
                self.workspace, self.sources.template, tree, named, checks, codes, lines
            )
        except TreeError as exc:
            raise OSError(str(exc)) from exc
        self.changes.append(changes)

        # The check's home is an empty folder of its own, never the tree: with HOME the
        # tree, the agent's `.bash_profile` / `.profile` / `.bashrc` (`exit 0`) ended a
        # restored `bash -lc 'sh check.sh'` with 0 before the check ran, and an `.npmrc`
        # would choose `npm test`'s shell (attack6). Confined, the private `/tmp` (empty
        # at each command's start); unconfined, a fresh folder beside the tree.
        home = scratch / "home"
        home.mkdir()
        env = {"HOME": "/tmp" if confined else str(home)}
        if checks_at is not None:
            env[CHECKS_VARIABLE] = checks_at
        mounts: list[Mount] = []
        if checks is not None and confined:
            mounts.append(Mount(checks, CHECKS_MOUNT, hand_over=True))
        if call is None:
            command = criterion.run or ""
            why = compiled_untrusted(tree, command)
            if why is not None:
                raise UntrustedCheck(f"a compiled test program: {why}")
            why = js_untrusted(tree, _task_files(tree, self.sources.template), command)
            if why is not None:
                raise UntrustedCheck(
                    "a JavaScript check that loads code the task did not ship lets that code "
                    f"decide its exit status (process.exit, an exit handler, a patched assert): "
                    f"{why}; run the agent's code as a program and read its output, or check "
                    "it with a hidden Python test"
                )
            # The Python this command runs is the harness's (`sandboxed/ilh_python.py`),
            # and its runs' results are recorded apart from the line's exit status
            # (`python_runs.py`: `pytest -q | grep passed` passed on the agent's print).
            runs = PythonRuns()
            try:
                env["PATH"] = self._python_shim(scratch, tree, root, changes, mounts, runs.write_fd)
                if confined:
                    mounts += read_only_files(tree, changes.protected)
                done = run_shell(
                    command,
                    tree,
                    timeout_s,
                    env,
                    sandbox=self.sandbox,
                    mounts=mounts,
                    writable=True,
                    pass_fds=(runs.write_fd,),
                )
                failed = runs.failures()
            finally:
                runs.close()
            if failed is not None and done.exit_code == 0 and not done.timed_out:
                done = done.model_copy(
                    update={"exit_code": 1, "output": f"{done.output}\nilh: {failed}\n"}
                )
            return _outcome(done)

        # The tests that must run are read before the check runs, from the snapshots
        # (or, with no template, from the tree as the user gave it).
        roots: dict[str, Path] = {root: self.sources.template or tree}
        if checks is not None and checks_at is not None:
            roots[checks_at] = checks
        chosen = selection(call, roots, root)
        nonce = secrets.token_hex(16)
        (reports / "nonce").write_text(nonce, encoding="ascii")
        # The report comes back through a file only the runner holds (a memory file,
        # inherited by number), and the agent's modules run in a process of their own
        # (`sandboxed/ilh_bridge.py`): see the module docstring.
        report_fd = os.memfd_create("ilh-runner-report", os.MFD_CLOEXEC)
        try:
            trusted = sorted({*trusted_files(tree), *changes.trusted})
            bridge = {"report_fd": report_fd, "trusted": trusted}
            (reports / "bridge.json").write_text(json.dumps(bridge), encoding="utf-8")
            runner_at = RUNNER_MOUNT if confined else str(RUNNER_DIR)
            reports_at = REPORT_MOUNT if confined else str(reports)
            if confined:
                mounts += [Mount(RUNNER_DIR, RUNNER_MOUNT), Mount(reports, REPORT_MOUNT, True)]
            argv = [
                sys.executable, "-I", "-B", f"{runner_at}/ilh_runner.py",
                reports_at, call.kind, root, *call.args,
            ]  # fmt: skip
            # `exec`: the shell gives way to the runner, so no other process (a dumpable
            # one) holds the report's descriptor while the code under test runs.
            done = run_shell(
                "exec " + shlex.join(argv),
                tree,
                timeout_s,
                env,
                sandbox=self.sandbox,
                mounts=mounts,
                writable=False,
                pass_fds=(report_fd,),
            )
            report = parse_report(_read_all(report_fd))
        finally:
            os.close(report_fd)
        verdict = judge_run(
            report,
            nonce=nonce,
            exit_code=done.exit_code,
            chosen=chosen,
            roots=list(roots),
            junit=junit_counts(reports / "junit.xml"),
            junit_sha256=_digest(reports / "junit.xml"),
        )
        return _outcome(done, verdict=verdict, runner=call.kind)

    def _python_shim(
        self,
        scratch: Path,
        tree: Path,
        root: str,
        changes: TreeChanges,
        mounts: list[Mount],
        status_fd: int,
    ) -> str:
        """A folder of `python`, `python3`… that run `sandboxed/ilh_python.py` (mounted with
        the runner), first on a free command's PATH; returns that PATH. Why: a restored
        `check.sh` calling `python -c "…assert…"` ran the agent's module in that Python,
        which ended it with 0 (`os._exit(0)` at import) and the check passed (attack7).
        The folder's `python.json` says where the tree is, the real interpreter, the
        SHA-256 of every Python file of the tree that is the template's (a task's script
        runs in the runner only with those bytes), the files the runner imports itself
        and the descriptor its runs are recorded on (`status_fd`, `python_runs.py`)."""
        confined = self.sandbox.confined
        shim = scratch / "python"
        shim.mkdir()
        shim_at = PYTHON_MOUNT if confined else str(shim)
        runner_at = RUNNER_MOUNT if confined else str(RUNNER_DIR)
        config = {
            "python": sys.executable,
            "root": root,
            "scripts": _template_digests(tree, self.sources.template),
            "trusted": sorted({*trusted_files(tree), *changes.trusted}),
            "status_fd": status_fd,
            # The check's scratch folders an agent's program may not change what is in
            # (`ilh_python._run_agents_program`): confined, its private /tmp (its HOME).
            "watch": ["/tmp"] if confined else [str(scratch / "home")],
            # What the check makes in the tree after this is watched too.
            "since_ns": time.time_ns(),
        }
        (shim / "python.json").write_text(json.dumps(config), encoding="utf-8")
        line = shlex.join([sys.executable, "-I", "-B", f"{runner_at}/ilh_python.py", shim_at])
        for name, head in _PYTHON_NAMES.items():
            (shim / name).write_text(f'#!/bin/sh\nexec {line}{head} "$@"\n', encoding="utf-8")
            (shim / name).chmod(0o755)
        shim.chmod(0o755)
        (shim / "python.json").chmod(0o644)
        if confined:
            mounts += [Mount(RUNNER_DIR, RUNNER_MOUNT), Mount(shim, PYTHON_MOUNT)]
            # A system interpreter named by its path (`/usr/bin/python3 -c …` in a restored
            # check.sh) is the harness's too: the shim bound over it, unless it is the
            # harness's own interpreter (which the shim itself runs).
            mounts += [Mount(shim / "python", path) for path in system_pythons()]
        return f"{shim_at}:{scrubbed_env(root, '/tmp')['PATH']}"

    def _runner_call(self, criterion: GradingCriterion, checks_at: str | None) -> RunnerCall | None:
        def expand(text: str) -> str:
            return expand_checks(text, checks_at) if checks_at is not None else text

        if criterion.pytest is not None:
            return RunnerCall(kind="pytest", args=tuple(shlex.split(expand(criterion.pytest))))
        if criterion.unittest is not None:
            target = expand(criterion.unittest)
            at = CHECKS_MOUNT if self.sandbox.confined else str(self.sources.checks)
            folder = _is_folder(
                target, {at: self.sources.checks}, self.sources.template or self.workspace
            )
            return RunnerCall(kind="unittest", args=unittest_args(target, folder))
        if criterion.run is not None:
            found = runner_call(criterion.run, checks_at)
            if found is None and checks_at is None:
                # A check's own Python (`python -c …`, the task's `python check.py`): run
                # by the harness's runner too, so the agent's code cannot choose its exit.
                found = script_call(criterion.run, self._task_script(criterion.run))
            return found
        return None

    def _task_script(self, command: str) -> Callable[[str], bool]:
        """Whether a word of `command` names a check script the grading tree restores
        from the template (`check_scripts`): the task's code, not the agent's."""
        template = self.sources.template
        restored = check_scripts(command) if template is not None else set()

        def task_script(word: str) -> bool:
            rel = relative_word(word)
            return template is not None and rel in restored and (template / rel).is_file()

        return task_script


#: Most mounts a free check's task files may take (`read_only_files`).
MAX_PROTECTED_MOUNTS = 4096


def read_only_files(tree: Path, files: Sequence[str]) -> list[Mount]:
    """Mounts that show the task's `files` of the tree read-only in a free check's
    sandbox, each bound over itself, and every folder above one (the root aside) bound
    over itself writable: a mount point cannot be moved, so a folder of task files
    cannot be swapped for a copy of the agent's. Why: the tree is writable during a free
    check, and `make test` with `test: build` ran the agent's `build.sh` first, which
    rewrote the cases a restored test read (or moved the test folder away and made
    another), and the check passed (attack7). Refused (`UntrustedCheck`) past
    `MAX_PROTECTED_MOUNTS`: such a check cannot be kept from its task's files."""
    folders: dict[str, None] = {}
    for rel in files:
        parts = PurePosixPath(rel).parts
        for i in range(1, len(parts)):
            folders.setdefault("/".join(parts[:i]))
    if len(folders) + len(files) > MAX_PROTECTED_MOUNTS:
        raise UntrustedCheck(
            f"the task has more than {MAX_PROTECTED_MOUNTS} files and folders a free check "
            "must not change: a program it runs could rewrite them before the tests read "
            "them; use pytest = … or unittest = …"
        )
    # Outer folders first: bwrap mounts in order, and an inner mount must land on the
    # outer one.
    mounts = [
        Mount(tree / rel, f"{SANDBOX_WORKDIR}/{rel}", writable=True)
        for rel in sorted(folders, key=lambda r: (r.count("/"), r))
    ]
    mounts += [Mount(tree / rel, f"{SANDBOX_WORKDIR}/{rel}") for rel in sorted(files)]
    return mounts


#: The names a check calls Python by (`python3.11` and the like included).
#: The names a check calls Python by, each with what it adds before the arguments: a bare
#: `pytest` in a restored `check.sh` is the interpreter's `pytest` script, which ran the
#: agent's module in its process as `python -m pytest` did.
_PYTHON_NAMES = {
    "python": "",
    "python3": "",
    f"python{sys.version_info.major}.{sys.version_info.minor}": "",
    "pytest": " -m pytest",
    "py.test": " -m pytest",
}


def _task_files(tree: Path, template: Path | None) -> set[str]:
    """The tree's JavaScript files that are the task's (`js_checks.js_untrusted`): those
    holding the template's bytes; without a known template, its test files (the user
    asked them to be trusted)."""
    found: set[str] = set()
    for folder, _dirs, files in os.walk(template or tree):
        for name in files:
            path = Path(folder) / name
            rel = path.relative_to(template or tree).as_posix()
            if not name.endswith(JS_SUFFIXES) or path.is_symlink():
                continue
            if template is None:
                if is_test_file(rel):
                    found.add(rel)
                continue
            mine = tree / rel
            try:
                if (
                    not mine.is_symlink()
                    and mine.is_file()
                    and mine.read_bytes() == path.read_bytes()
                ):
                    found.add(rel)
            except OSError:
                continue
    return found


def system_pythons() -> list[str]:
    """The system's Python interpreters by their usual paths (`/usr/bin/python3`…),
    resolved, other than the one the harness runs on (a `python` shim bound over that
    would run itself)."""
    own = os.path.realpath(sys.executable)
    found: dict[str, None] = {}
    for folder in ("/usr/bin", "/usr/local/bin", "/bin"):
        for name in _PYTHON_NAMES:
            if not name.startswith("python"):
                continue
            path = os.path.join(folder, name)
            real = os.path.realpath(path)
            if os.path.isfile(real) and real != own and not real.startswith(sys.prefix + "/"):
                found.setdefault(real)
    return list(found)


def _template_digests(tree: Path, template: Path | None) -> dict[str, str]:
    """SHA-256 of each Python file of the tree (relative, with `/`) that holds the
    template's bytes: the task's scripts and restored tests, which a free command's
    `python` runs in the harness's runner (`sandboxed/ilh_python.py`). Without a known
    template, every Python file of the tree (the user asked its files to be trusted)."""
    found: dict[str, str] = {}
    for folder, _dirs, files in os.walk(template or tree):
        for name in files:
            path = Path(folder) / name
            if not name.endswith(".py") or path.is_symlink():
                continue
            rel = path.relative_to(template or tree).as_posix()
            mine = tree / rel
            try:
                data = path.read_bytes()
                if mine.is_symlink() or not mine.is_file() or mine.read_bytes() != data:
                    continue
            except OSError:
                continue
            found[rel] = hashlib.sha256(data).hexdigest()
    return found


def _outcome(
    done: CommandResult, verdict: RunVerdict | None = None, runner: str | None = None
) -> RunnerOutcome:
    """The command's outcome as the grader reports it (plus a runner's verdict)."""
    return RunnerOutcome(
        exit_code=done.exit_code,
        output=done.output,
        timed_out=done.timed_out,
        duration_s=done.duration_s,
        truncated=done.truncated,
        verdict=verdict,
        runner=runner,
    )


def _is_folder(target: str, mounted: Mapping[str, Path | None], tree: Path) -> bool:
    for at, folder in mounted.items():
        if folder is not None and (target == at or target.startswith(at.rstrip("/") + "/")):
            return (folder / target[len(at) :].lstrip("/")).is_dir()
    return (tree / target).is_dir()


def trusted_files(tree: Path) -> list[str]:
    """The tree's test files (`graders.baseline.is_test_file`), relative, with `/`: the
    runner imports these itself; every other module of the tree is the agent's and runs
    in the solution process. With a known template they are the template's own (the
    tree restored them and removed the agent's others); without one, the user's."""
    found: list[str] = []
    for folder, dirs, files in os.walk(tree):
        dirs.sort()
        for name in sorted(files):
            relative = (Path(folder) / name).relative_to(tree).as_posix()
            if name.endswith(".py") and is_test_file(relative):
                found.append(relative)
    return found


def _read_all(fd: int) -> bytes:
    """A memory file's bytes from its start, at most what a report may hold (+1, so an
    oversized one is seen as such)."""
    size = os.fstat(fd).st_size
    return os.pread(fd, min(size, MAX_REPORT_BYTES + 1), 0)


def _digest(path: Path) -> str | None:
    """The SHA-256 of a regular file of the report folder, or None. The folder is the
    sandbox's to write (pytest writes its JUnit XML there), and so, in a runner-aware
    check, is it for what a test starts (`subprocess.run([sys.executable, "calc.py"])`
    runs the agent's code outside the solution process): a FIFO left as `junit.xml`
    blocked this read, and the harness, for ever (attack8). Opened without following a
    link and without blocking, and read only when it is a regular file."""
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    try:
        fd = os.open(path, flags)
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return None
        digest = hashlib.sha256()
        while chunk := os.read(fd, 1 << 16):
            digest.update(chunk)
        return digest.hexdigest()
    except OSError:
        return None
    finally:
        os.close(fd)


__all__ = ["CheckRunner", "Selection"]
