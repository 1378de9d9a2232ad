"""Attack 8: the confinement of the agent's hands, attacked through real commands, real
`ilh run`s with scripted agents and real grader checks, as root (as CI runs them).

Each test failed on main before its fix; the commit that fixed it names it.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from harness.cli.main import ilh
from harness.workspace.commands import run_shell
from harness.workspace.folder import Workspace
from harness.workspace.walk import remove_tree

TIMEOUT_S = 60.0
USAGE = {"input_tokens": 10, "output_tokens": 10}
CLAIM = "Done.\n::STATUS{@TASK|state:claimed_complete|evidence:run|by:@AGENT|authority:proposal}"

#: A shell line nesting folders 3000 deep (far past Python 3.11's recursion limit of
#: 1000) in a second, then leaving a setuid file at the bottom and a sibling beside.
DEEP = (
    "python3 -c \"import os\nos.chdir(os.environ.get('TOP', '.'))\n"
    "for _ in range(3000):\n    os.mkdir('d'); os.chdir('d')\n"
    "open('suid', 'w').close(); os.chmod('suid', 0o4755)\"; "
    "mkdir z && touch z/suid && chmod 4755 z/suid; echo nested"
)


@pytest.fixture(autouse=True)
def _no_deep_tree_left(tmp_path: Path) -> Iterator[None]:
    """pytest's own clean-up of old temporary folders recurses too: a deep tree left in
    one ends a later session with a RecursionError."""
    yield
    for entry in tmp_path.iterdir():
        remove_tree(entry)


def _deep_entry(root: Path, depth: int, name: str) -> Path:
    """The path of `name` at `depth` folders under `root`, reached without a path longer
    than the kernel takes (a 6000-character path is ENAMETOOLONG)."""
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for _ in range(depth):
            nxt = os.open("d", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = nxt
        return Path(f"/proc/self/fd/{os.dup(fd)}/{name}")
    finally:
        os.close(fd)


def _script_task(
    folder: Path, turns: list[dict[str, Any]], rubric: str, files: dict[str, str]
) -> Path:
    (folder / "workspace").mkdir(parents=True)
    for rel, text in files.items():
        (folder / "workspace" / rel).write_text(text)
    (folder / "agent.jsonl").write_text("".join(json.dumps(t) + "\n" for t in turns))
    task = folder / "task.toml"
    task.write_text(
        '[task]\nid = "attack8"\nobjective = "Do it."\nworkspace = "workspace"\n'
        '[budget.rounds]\nlimit = 6\n[budget.time]\nlimit = "300s"\n'
        '[agent]\nmodel = "scripted:agent.jsonl"\n' + rubric
    )
    return task


def _run_json(task: Path, store: Path) -> tuple[int, dict[str, Any]]:
    result = CliRunner().invoke(
        ilh, ["run", str(task), "--json", "--store", str(store)], catch_exceptions=False
    )
    return result.exit_code, json.loads(result.stdout)


# ----------------------------------------------------------------- deep trees


def test_a_tree_nested_thousands_deep_ends_the_command_not_the_harness(tmp_path: Path) -> None:
    """On main: the hand-over walk after the command (`os.fwalk`, recursive) raised
    RecursionError out of `run_shell`, and setuid bits past the depth it reached, or in
    folders after the deep one, stayed set."""
    ws = Workspace.create(tmp_path / "runs" / "r1" / "workspace")
    result = run_shell(DEEP, ws.root, TIMEOUT_S)
    assert result.exit_code == 0 and "nested" in result.output
    assert not os.stat(ws.root / "z" / "suid").st_mode & stat.S_ISUID
    assert not os.stat(_deep_entry(ws.root, 3000, "suid")).st_mode & stat.S_ISUID
    again = run_shell("echo again > after.txt && cat after.txt", ws.root, TIMEOUT_S)
    assert again.exit_code == 0 and "again" in again.output
    remove_tree(ws.root)
    assert not ws.root.exists()


def test_ilh_run_with_an_agent_nesting_folders_thousands_deep_ends_normally(
    tmp_path: Path,
) -> None:
    """On main: `ilh run` ended with a RecursionError traceback at the agent's command;
    past that, the grader's copy of the workspace (`os.walk`) did the same."""
    turns = [
        {
            "text": "Nesting.",
            "tool_calls": [{"name": "run_command", "arguments": {"command": DEEP}}],
            "usage": USAGE,
        },
        {"text": CLAIM, "usage": USAGE},
    ]
    rubric = (
        '[rubric]\nthreshold = 1.0\n[[rubric.criteria]]\nid = "ok"\nweight = 1.0\n'
        'check = "the shell says ok"\nrun = "sh ok.sh"\n'
    )
    task = _script_task(tmp_path / "task", turns, rubric, {"ok.sh": "echo ok\n"})
    code, out = _run_json(task, tmp_path / "runs.db")
    assert code in (0, 1, 3) and out["final"]["state"] != "complete"
    text = json.dumps(out["grader"])
    assert "nests folders more than 256 deep" in text


def test_a_free_check_that_nests_folders_deep_in_its_tree_is_graded(tmp_path: Path) -> None:
    """A check's own tree (writable for a free command) nested thousands deep: on main the
    hand-over after the check and `shutil.rmtree` of the check's folder both recursed past
    the limit, and the run ended with a traceback instead of a verdict."""
    turns = [{"text": CLAIM, "usage": USAGE}]
    rubric = (
        '[rubric]\nthreshold = 1.0\n[[rubric.criteria]]\nid = "deep"\nweight = 1.0\n'
        'check = "the check nests and passes"\nrun = "sh deep.sh"\n'
    )
    task = _script_task(tmp_path / "task", turns, rubric, {"deep.sh": DEEP + "\n"})
    code, out = _run_json(task, tmp_path / "runs.db")
    assert code == 0 and out["final"]["state"] == "complete"


def test_remove_tree_removes_links_never_what_they_name(tmp_path: Path) -> None:
    """The removal that replaced `shutil.rmtree` for grading folders: a link the check
    left (to a folder or a file outside) goes, what it names stays."""
    outside = tmp_path / "outside"
    (outside / "keep").mkdir(parents=True)
    (outside / "keep" / "file").write_text("kept")
    tree = tmp_path / "tree"
    (tree / "a" / "b").mkdir(parents=True)
    (tree / "a" / "b" / "to_dir").symlink_to(outside / "keep")
    (tree / "a" / "to_file").symlink_to(outside / "keep" / "file")
    (tree / "a" / "b" / "plain").write_text("x")
    remove_tree(tree)
    assert not tree.exists() and (outside / "keep" / "file").read_text() == "kept"


# ----------------------------------------------------------- the report folder


def test_a_fifo_left_in_the_report_folder_does_not_hang_the_grader(tmp_path: Path) -> None:
    """The task's test runs the agent's script in a process of its own (outside the
    solution process's Landlock domain), and that script leaves a FIFO where pytest
    writes its JUnit XML. On main the runner was killed at its timeout and then the
    harness opened the FIFO to hash it, and waited for a writer for ever (its thread
    in `wait_for_partner`); `ilh run` never ended."""
    calc = (
        "import os\ntry:\n    os.mkfifo('/ilh-report/junit.xml')\n"
        "except OSError:\n    pass\nprint(4)\n"
    )
    turns = [
        {
            "text": "Writing calc.py.",
            "tool_calls": [
                {"name": "write_file", "arguments": {"path": "calc.py", "content": calc}}
            ],
            "usage": USAGE,
        },
        {"text": CLAIM, "usage": USAGE},
    ]
    test = (
        "import subprocess\nimport sys\n\n\ndef test_calc() -> None:\n"
        "    out = subprocess.run([sys.executable, 'calc.py'], capture_output=True, text=True)\n"
        "    assert out.stdout.strip() == '4'\n"
    )
    rubric = (
        '[rubric]\nthreshold = 1.0\n[[rubric.criteria]]\nid = "tests"\nweight = 1.0\n'
        'check = "the tests pass"\npytest = "test_calc.py"\n'
    )
    task = _script_task(tmp_path / "task", turns, rubric, {"test_calc.py": test})
    task.write_text(task.read_text().replace('limit = "300s"', 'limit = "20s"'))
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "harness",
            "run",
            str(task),
            "--json",
            "--store",
            str(tmp_path / "runs.db"),
        ],
        capture_output=True,
        text=True,
        timeout=150,
    )
    out = json.loads(done.stdout)
    assert out["final"]["state"] != "complete"
    assert out["grader"]["criteria"][0]["id"] == "tests"


# ------------------------------------------------------------- the run store


def _hidden_task(folder: Path) -> Path:
    (folder / "checks").mkdir(parents=True)
    (folder / "checks" / "test_hidden.py").write_text(
        "import unittest\nEXPECTED = 'HIDDEN-EXPECTED-42'\n\n\n"
        "class T(unittest.TestCase):\n    def test_x(self) -> None:\n        pass\n"
    )
    look = "grep -rl HIDDEN-EXPECTED /workspace; ls -a /workspace"
    turns = [
        {
            "text": "Looking.",
            "tool_calls": [{"name": "run_command", "arguments": {"command": look}}],
            "usage": USAGE,
        },
        {"text": CLAIM, "usage": USAGE},
    ]
    rubric = (
        '[rubric]\nthreshold = 1.0\nchecks = "checks"\n[[rubric.criteria]]\nid = "hidden"\n'
        'weight = 1.0\ncheck = "the hidden tests pass"\nunittest = "$ILH_CHECKS"\n'
    )
    return _script_task(folder, turns, rubric, {"notes.md": "hello\n"})


def test_a_store_inside_the_workspace_template_is_refused(tmp_path: Path) -> None:
    """`cd task/workspace && ilh run ../task.toml`: the default store, `.ilh/runs.db`, is
    then inside the workspace template, and every run's workspace is a copy of it. On
    main the second run's agent read the first run's hidden checks
    (`.ilh/runs/RUN/grading/checks/test_hidden.py`) and the run store itself."""
    task = _hidden_task(tmp_path / "task")
    store = tmp_path / "task" / "workspace" / ".ilh" / "runs.db"
    outputs = []
    for _ in range(2):
        result = CliRunner().invoke(
            ilh, ["run", str(task), "--json", "--store", str(store)], catch_exceptions=False
        )
        outputs.append(result.output)
        assert result.exit_code == 2, result.output
        assert "E303" in result.output and "inside the workspace template" in result.output
    runs = store.parent / "runs"
    assert not runs.exists() or not any(runs.iterdir())


# ------------------------------------- the harness's folders under a shown root


def test_a_task_and_store_under_a_folder_the_sandbox_shows_stay_hidden(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The sandbox shows /usr, /etc and the harness's Python installation read-only. A
    task folder and store beneath one of them (a container's `WORKDIR /usr/src/app`, a
    project inside the interpreter's prefix) were readable by every command: on main the
    agent read the hidden checks, task.toml and the run store through their host paths.
    Here the interpreter's roots gain a folder holding the task and the store."""
    from harness.workspace import sandbox as sandbox_module

    shown = tmp_path / "prefix"
    real = sandbox_module.interpreter_roots()
    monkeypatch.setattr(sandbox_module, "interpreter_roots", lambda: [*real, shown])
    folder = shown / "app" / "task"
    task = _hidden_task(folder)
    look = (
        f"cat {folder}/checks/test_hidden.py {folder}/task.toml; "
        f"ls -a {shown}/app/.ilh {shown}/app/.ilh/runs; echo listed"
    )
    script = json.loads((folder / "agent.jsonl").read_text().splitlines()[0])
    script["tool_calls"][0]["arguments"]["command"] = look
    lines = (folder / "agent.jsonl").read_text().splitlines()
    (folder / "agent.jsonl").write_text("\n".join([json.dumps(script), *lines[1:]]) + "\n")
    store = shown / "app" / ".ilh" / "runs.db"
    result = CliRunner().invoke(
        ilh, ["run", str(task), "--json", "--store", str(store)], catch_exceptions=False
    )
    out = json.loads(result.stdout)
    from harness.record.store import RunStore

    with RunStore(store) as records:
        shown_to_agent = [e.payload for e in records.events(out["run_id"]) if e.kind == "tool_call"]
    text = json.dumps(shown_to_agent)
    assert "listed" in text  # the command ran
    assert "HIDDEN-EXPECTED" not in text and "scripted:agent.jsonl" not in text
    assert "runs.db" not in text


def test_ilh_grade_of_a_workspace_nested_thousands_deep_says_why_it_is_not_graded(
    tmp_path: Path,
) -> None:
    """`ilh grade --workspace` on a pull request's checkout (hostile: git keeps deep
    trees): on main the grader's copy (`os.walk`) ended `ilh grade` with a RecursionError."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    fd = os.open(workspace, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for _ in range(1500):
            os.mkdir("d", dir_fd=fd)
            deeper = os.open("d", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = deeper
    finally:
        os.close(fd)
    task = Path(__file__).resolve().parents[1] / "examples" / "honest" / "task.toml"
    result = CliRunner().invoke(
        ilh, ["grade", str(task), "--workspace", str(workspace), "--json"], catch_exceptions=False
    )
    assert result.exit_code == 1
    report = json.loads(result.stdout)
    assert report["verdict"] == "needs_revision"
    assert all("nests folders more than 256 deep" in c["detail"] for c in report["criteria"])


def test_an_interpreter_installed_over_the_home_folder_refuses_the_sandbox(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The sandbox shows the harness's Python installation at its own path. Python built
    with `./configure --prefix=$HOME` (the usual way without root) has the home folder as
    its prefix: on main every command read all of it (`.ssh`, cloud credentials, the
    record key). Now no sandbox is made there, and the refusal says why."""
    from harness.workspace.sandbox import SandboxUnavailable

    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_ed25519").write_text("PRIVATE-KEY-MATERIAL\n")
    os.chmod(home / ".ssh" / "id_ed25519", 0o644)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setattr(sys, "base_prefix", str(home))
    ws = Workspace.create(tmp_path / "runs" / "r1" / "workspace")
    try:
        result = run_shell(f"cat {home}/.ssh/id_ed25519; echo ran", ws.root, TIMEOUT_S)
    except SandboxUnavailable as exc:
        assert "home folder" in str(exc)
    else:
        assert "PRIVATE-KEY-MATERIAL" not in result.output, result.output


def test_an_interpreter_inside_a_masked_task_folder_stays_shown(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The masks over the harness's folders must not hide an interpreter inside one (a
    venv in `/usr/src/app/.venv`, the task folder `/usr/src/app`): the mask goes first,
    the interpreter's bind after it, and only then is the mask made read-only."""
    from harness.workspace import sandbox as sandbox_module
    from harness.workspace.sandbox import CONFINED

    shown = tmp_path / "prefix"
    task = shown / "app"
    venv = task / "venv"
    venv.mkdir(parents=True)
    (venv / "marker").write_text("INTERPRETER-HERE\n")
    (task / "task.toml").write_text("SECRET-TASK\n")
    for folder in (tmp_path, shown, task, venv):
        os.chmod(folder, 0o755)
    os.chmod(venv / "marker", 0o644)
    real = sandbox_module.interpreter_roots()
    monkeypatch.setattr(sandbox_module, "interpreter_roots", lambda: [*real, venv, shown])
    policy = CONFINED.model_copy(update={"hidden": (str(task),)})
    ws = Workspace.create(tmp_path / "runs" / "r1" / "workspace")
    result = run_shell(
        f"cat {venv}/marker; cat {task}/task.toml; echo done", ws.root, TIMEOUT_S, sandbox=policy
    )
    assert "INTERPRETER-HERE" in result.output and "done" in result.output, result.output
    assert "SECRET-TASK" not in result.output
