"""A new user's four known slips (ux7), each one clear refusal that changes nothing:

- `ilh certify --markdown FILE` replaced any file with the Markdown (the task file, a
  source file): it now replaces only a Markdown certificate written before, or an empty
  file, as `--certificate`, `ilh view --out` and `runs export --out` do;
- a refused `--model` (`nosuch:thing`, `openai:` with no key) left an empty
  `.ilh/runs.db` behind: a refused run now leaves nothing new;
- `ilh correct` and `ilh soul sync` changed a run's SOUL while the run went on: they now
  take the run's lock (`runs/RUN/owner.lock`) and are refused, naming its holder;
- with `NO_COLOR` set, rich still wrote bold and dim: now no escape sequence at all.
"""

from __future__ import annotations

import os
import pty
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from harness.record.store import RunStore

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"


def ilh(
    cwd: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    environ = {**os.environ, "PYTHONPATH": str(ROOT), **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "harness", *args],
        cwd=cwd, capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=120,
        env=environ, check=False,
    )  # fmt: skip


def one_error(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert "Traceback" not in done.stderr and done.stdout == "", done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    return lines[0]


# --- 1. certify --markdown -------------------------------------------------------------

CERTIFY = (
    "certify", "handoff.md", "--role", "implementer", "--source", "project",
    "--non-interactive", "--markdown",
)  # fmt: skip


@pytest.fixture
def clean(tmp_path: Path) -> Path:
    shutil.copytree(EXAMPLES / "certify_clean", tmp_path / "c")
    shutil.copy(EXAMPLES / "honest" / "task.toml", tmp_path / "c" / "task.toml")
    return tmp_path / "c"


@pytest.mark.parametrize("victim", ["task.toml", "project/fizz.py"])
def test_markdown_never_replaces_a_file_that_is_not_a_markdown_certificate(
    clean: Path, victim: str
) -> None:
    before = (clean / victim).read_bytes()
    line = one_error(ilh(clean, *CERTIFY, victim))
    assert line == (
        f"error {victim}: E303 the Markdown would replace a file that is not a Markdown "
        "certificate; name another file, or remove this one first"
    )
    assert (clean / victim).read_bytes() == before
    assert not (clean / ".ilh").exists()  # refused before the store was opened


def test_markdown_replaces_its_own_earlier_output_and_an_empty_file(clean: Path) -> None:
    first = ilh(clean, *CERTIFY, "cert.md")
    assert first.returncode == 0, first.stderr
    again = ilh(clean, *CERTIFY, "cert.md")
    assert again.returncode == 0, again.stderr
    (clean / "empty.md").write_text("", encoding="utf-8")
    empty = ilh(clean, *CERTIFY, "empty.md")
    assert empty.returncode == 0, empty.stderr
    assert (clean / "empty.md").read_text(encoding="utf-8").startswith("# CERTIFIED: handoff.md")


# --- 2. a refused model leaves no store ------------------------------------------------


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (("--model", "nosuch:thing"), "error --model: E303 not a model URI: 'nosuch:thing'"),
        (("--model", "openai:"), "error --model: E303 not a model URI: 'openai:'"),
        (("--model", "openai:gpt-4o"), "error --model: E500 openai:gpt-4o needs OPENAI_API_KEY"),
        (("--grader-model", "nosuch:x"), "error --grader-model: E303 not a model URI"),
    ],
)
def test_a_refused_model_leaves_no_store_behind(
    tmp_path: Path, args: tuple[str, ...], says: str
) -> None:
    shutil.copytree(EXAMPLES / "honest", tmp_path / "ex")
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI")}
    done = subprocess.run(
        [sys.executable, "-m", "harness", "run", "ex/task.toml", *args],
        cwd=tmp_path, capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=120,
        env={**env, "PYTHONPATH": str(ROOT)}, check=False,
    )  # fmt: skip
    assert one_error(done).startswith(says), done.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ex"]


def test_a_batch_with_a_refused_model_leaves_no_store_behind(tmp_path: Path) -> None:
    shutil.copytree(EXAMPLES / "honest", tmp_path / "a")
    shutil.copytree(EXAMPLES / "honest", tmp_path / "b")
    done = ilh(tmp_path, "run", "a/task.toml", "b/task.toml", "--model", "nosuch:thing")
    assert one_error(done).startswith("error --model: E303 not a model URI")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a", "b"]


def test_a_refused_workspace_template_leaves_no_store_behind(tmp_path: Path) -> None:
    shutil.copytree(EXAMPLES / "honest", tmp_path / "ex")
    shutil.rmtree(tmp_path / "ex" / "workspace")
    done = ilh(tmp_path, "run", "ex/task.toml")
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ex"]


# --- 3. correct and soul sync take the run's lock --------------------------------------

SLOW = (
    '{"text": "a slow command", "tool_calls": [{"name": "run_command", '
    '"arguments": {"command": "sleep 6"}}]}\n'
    '{"text": "done."}\n'
)


def started_run(store: Path, timeout: float = 60.0) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if store.exists():
            with RunStore(store, create=False) as records:
                runs = records.list_runs()
            if runs:
                time.sleep(1.5)  # its first (scripted) reply reaches the 6-second command
                return runs[0].run_id
        time.sleep(0.1)
    raise AssertionError("the run did not start")


def test_correct_and_soul_sync_are_refused_while_the_run_goes_on(tmp_path: Path) -> None:
    shutil.copytree(EXAMPLES / "gene", tmp_path / "ex")
    (tmp_path / "ex" / "agent.jsonl").write_text(SLOW, encoding="utf-8")
    soul = tmp_path / "ex" / "agent.soul.ilang"
    first = subprocess.Popen(
        [sys.executable, "-m", "harness", "run", "ex/task.toml", "--json"],
        cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        stdin=subprocess.DEVNULL, env={**os.environ, "PYTHONPATH": str(ROOT)},
    )  # fmt: skip
    try:
        run_id = started_run(tmp_path / ".ilh" / "runs.db")
        soul_before = soul.read_bytes() if soul.exists() else None
        for args in (
            ("correct", run_id, "--class", "factual_error", "--text", "say what is true"),
            ("soul", "sync", run_id),
        ):
            line = one_error(ilh(tmp_path, *args))
            assert line.startswith(f"error {run_id}: E500 run {run_id} is being run by "), line
            assert f"(pid {first.pid})" in line, line
        assert (soul.read_bytes() if soul.exists() else None) == soul_before
        assert not soul.with_name(soul.name + ".pending.jsonl").exists()
    finally:
        first.communicate(timeout=120)
    # Once the run has ended, a correction goes through.
    done = ilh(tmp_path, "correct", run_id, "--class", "factual_error", "--text", "say it")
    assert done.returncode == 0, done.stderr


# --- 4. NO_COLOR: no escape sequence ---------------------------------------------------


def at_a_terminal(cwd: Path, *args: str, env: dict[str, str]) -> tuple[int, bytes]:
    """`ilh ARGS` with stdout and stderr a terminal (a pseudo-terminal), all it wrote."""
    main, side = pty.openpty()
    process = subprocess.Popen(
        [sys.executable, "-m", "harness", *args],
        cwd=cwd, stdin=subprocess.DEVNULL, stdout=side, stderr=side,
        env={**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "100", **env},
    )  # fmt: skip
    os.close(side)
    written = b""
    while True:
        try:
            chunk = os.read(main, 65536)
        except OSError:  # EIO: the terminal's other side closed
            break
        if not chunk:
            break
        written += chunk
    os.close(main)
    return process.wait(timeout=120), written


def test_no_color_means_no_escape_sequence_at_all(tmp_path: Path) -> None:
    shutil.copytree(EXAMPLES / "honest", tmp_path / "ex")
    env = {"NO_COLOR": "1", "TERM": "xterm-256color"}
    env.pop("FORCE_COLOR", None)
    status, written = at_a_terminal(tmp_path, "run", "ex/task.toml", env=env)
    assert status == 0, written
    assert b"committed_complete" in written  # the summary was drawn
    assert b"\x1b" not in written, written
    (tmp_path / "bad.ilang").write_text("[REED]\n", encoding="utf-8")
    for args in (("runs", "list"), ("lint", "bad.ilang")):
        status, written = at_a_terminal(tmp_path, *args, env=env)
        assert b"\x1b" not in written, (args, written)
    # Without NO_COLOR the terminal still gets its styles.
    status, written = at_a_terminal(tmp_path, "lint", "bad.ilang", env={"TERM": "xterm-256color"})
    assert b"E304" in written and b"\x1b[" in written, written


def test_the_api_twins_take_the_runs_lock_too(tmp_path: Path) -> None:
    from harness.api import correct, run_task, soul_sync
    from harness.inputs.errors import InputError
    from harness.run.owner import owning

    shutil.copytree(EXAMPLES / "gene", tmp_path / "ex")
    store = tmp_path / "runs.db"
    result = run_task(str(tmp_path / "ex" / "task.toml"), store=str(store))
    with RunStore(store, create=False) as records, owning(records, result.run_id):
        for call in (
            lambda: correct(result.run_id, "factual_error", "say it", store=str(store)),
            lambda: soul_sync(result.run_id, store=str(store)),
        ):
            with pytest.raises(InputError) as refused:
                call()
            assert refused.value.code == "E500"
            assert f"(pid {os.getpid()})" in refused.value.message
    assert correct(result.run_id, "factual_error", "say it", store=str(store)).gene


def test_the_api_leaves_no_store_for_a_refused_model(tmp_path: Path) -> None:
    from harness.api import run_task
    from harness.inputs.errors import InputError

    shutil.copytree(EXAMPLES / "honest", tmp_path / "ex")
    with pytest.raises(InputError) as refused:
        run_task(str(tmp_path / "ex" / "task.toml"), model="nosuch:x", store=tmp_path / "r.db")
    assert refused.value.code == "E303"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ex"]


@pytest.mark.parametrize(
    "outputs",
    [
        ("--markdown", "out.md", "--certificate", "out.md"),
        ("--markdown", "out.md", "--certificate", "./out.md"),
        ("--model", "scripted:refuter_pass.jsonl", "--record", "out.md", "--markdown", "out.md"),
    ],
)
def test_two_outputs_into_one_file_are_refused(clean: Path, outputs: tuple[str, ...]) -> None:
    # `--markdown X --certificate X` wrote the certificate, said "certificate written to
    # X", then replaced it with the Markdown: the certificate was lost.
    done = ilh(clean, *CERTIFY[:-1], *outputs)
    line = one_error(done)
    assert "E303" in line and "the same file" in line, line
    assert not any(clean.glob("out.*"))
    assert not (clean / ".ilh").exists()


@pytest.mark.parametrize(
    "target",
    ["/dev/zero", "binary.md", "folder", "git:HEAD:handoff.md"],
)
def test_a_refused_certify_target_leaves_no_store_behind(tmp_path: Path, target: str) -> None:
    # Only a target that did not exist was refused before the store was opened: a
    # device, a file that is not UTF-8, a folder or an unreadable git record left an
    # empty `.ilh/runs.db` in the folder the command was typed in.
    (tmp_path / "binary.md").write_bytes(bytes(range(256)) * 4)
    (tmp_path / "folder").mkdir()
    before = sorted(p.name for p in tmp_path.iterdir())
    done = ilh(tmp_path, "certify", target, "--role", "implementer", "--non-interactive")
    assert one_error(done).startswith(f"error {target}: E"), done.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == before
