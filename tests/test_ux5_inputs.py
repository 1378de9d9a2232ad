"""A file a user names that is not a regular file (`/dev/zero`, `/dev/null`, a folder, a
named pipe) is refused at once, before any byte is read, with one message naming it
(ux5). `-` (stdin) and an anonymous pipe (`<(cmd)`) are still read."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from harness.inputs.errors import InputError, read_bytes

ROOT = Path(__file__).resolve().parents[1]
TASK = (
    '[task]\nid = "t"\nobjective = "do it"\n\n[budget.rounds]\nlimit = 2\n\n'
    '[agent]\nmodel = "scripted:{script}"\n'
    '\n[rubric]\nthreshold = 0.5\n[[rubric.criteria]]\nid = "a"\nweight = 1.0\ncheck = "x"\n'
)


def ilh(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}  # this tree's code, not an installed one
    return subprocess.run(
        [sys.executable, "-m", "harness", *args],
        cwd=cwd, capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=120,
        env=env, check=False,
    )  # fmt: skip


@pytest.mark.parametrize("device", ["/dev/zero", "/dev/null", "/dev/urandom"])
def test_a_device_is_refused_before_it_is_read(device: str) -> None:
    if not Path(device).exists():
        pytest.skip(f"no {device} here")
    started = time.monotonic()
    with pytest.raises(InputError) as caught:
        read_bytes(Path(device), "the task file")
    # Reading /dev/zero to the 256 MiB cap took a good part of a second and as much memory.
    assert time.monotonic() - started < 0.5
    assert caught.value.code == "E500"
    assert "is a device" in caught.value.message and "not a regular file" in caught.value.message


def test_a_folder_is_refused_as_a_folder(tmp_path: Path) -> None:
    with pytest.raises(InputError) as caught:
        read_bytes(tmp_path, "the task file")
    assert caught.value.code == "E500" and "is a folder" in caught.value.message


@pytest.mark.skipif(not Path("/dev/zero").exists(), reason="no /dev/zero here")
@pytest.mark.parametrize(
    ("args", "what"),
    [
        (("run", "/dev/zero", "--store", "{tmp}/r.db"), "the task file"),
        (("run", "{tmp}/t2/task.toml", "--store", "{tmp}/r.db"), "the agent script"),
        (("grade", "/dev/zero", "--workspace", "{tmp}/ws"), "the task file"),
        (("grade", "{tmp}/task.toml", "--workspace", "{tmp}/ws", "--claim", "/dev/zero"),
         "the claim file"),
        (("lint", "/dev/zero"), "it"),
        (("lint", "{tmp}/good.ilang", "/dev/zero"), "it"),
    ],
)  # fmt: skip
def test_dev_zero_named_as_any_input_is_one_clear_error(
    tmp_path: Path, args: tuple[str, ...], what: str
) -> None:
    (tmp_path / "ws").mkdir()
    (tmp_path / "task.toml").write_text(TASK.format(script="agent.jsonl"), encoding="utf-8")
    (tmp_path / "t2").mkdir()
    (tmp_path / "t2" / "task.toml").write_text(TASK.format(script="/dev/zero"), encoding="utf-8")
    (tmp_path / "good.ilang").write_text("::GOAL{id:g1}\n", encoding="utf-8")
    done = ilh(tmp_path, *(a.format(tmp=tmp_path) for a in args))
    output = done.stdout + done.stderr
    assert done.returncode == 2, output
    assert "Traceback" not in output
    errors = [line for line in output.splitlines() if line.startswith("error ")]
    assert len(errors) == 1, output
    assert "/dev/zero" in errors[0] and "E500" in errors[0], errors
    assert "is a device" in errors[0] and "256 MiB" not in errors[0], errors


def test_stdin_is_still_read_by_lint(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-m", "harness", "lint", "-"], input="[READ: x]\n",
        cwd=tmp_path, capture_output=True, text=True, timeout=120, env=env, check=False,
    )  # fmt: skip
    assert done.returncode == 1, done.stderr
    assert "-:1:7: E300" in done.stdout
