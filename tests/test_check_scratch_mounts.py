"""What a free check wrote in its scratch folders is watched while the agent's code runs
(attack9), but a file system the sandbox mounts inside one is not the check's: the
harness's venv, bound read-only at its own path, lies under the check's `/tmp` when a CI
checkout put it under the host's /tmp. The host's processes wrote bytecode there while
a check ran (`numpy/_utils/__pycache__/_inspect.cpython-311.pyc`, a module first
imported), and four honest checks failed in a fresh clone's CI: "the code this run
served changed what the check wrote before it"."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from harness.workspace.sandbox import find_bwrap

SHIM = Path(__file__).resolve().parents[1] / "harness" / "grading" / "sandboxed" / "ilh_python.py"


def test_a_mount_inside_a_watched_folder_is_not_the_checks(tmp_path: Path) -> None:
    bwrap = find_bwrap()
    if bwrap is None:
        pytest.skip("bubblewrap is not installed")
    scratch, venv = tmp_path / "scratch", tmp_path / "venv"
    scratch.mkdir()
    (venv / "__pycache__").mkdir(parents=True)
    (venv / "__pycache__" / "m.cpython-311.pyc").write_bytes(b"bytecode")
    code = (
        f"import json, runpy; files_of = runpy.run_path({str(SHIM)!r})['_files_of']; "
        f"open({str(scratch / 'want')!r}, 'w').write('42'); "
        f"print(json.dumps(sorted(files_of([({str(scratch)!r}, 0)]))))"
    )
    done = subprocess.run(
        [
            str(bwrap), "--dev-bind", "/", "/", "--tmpfs", str(scratch),
            "--ro-bind", str(venv), str(scratch / "venv"), sys.executable, "-c", code,
        ],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    watched = json.loads(done.stdout)
    # The check's own file is watched; the mounted venv and what is in it are not.
    assert watched == [str(scratch / "want")], watched
