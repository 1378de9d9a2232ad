"""A granted source must be a regular file or a folder (certify8).

`ilh certify T --source /dev/zero` (a FIFO, a socket, `/proc/self/environ`) was accepted
and ended certified: the receiver is handed a device or the certifier's own process state,
never a record. `--source /proc/self` walked the kernel's view of the certifier for ever.
Each is bad input: E303, exit 2, the path as the location, no store written."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from tests.certify_helpers import CLEAN
from tests.certify_helpers import certify_child as certify

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def clean(tmp_path: Path) -> Path:
    shutil.copytree(CLEAN, tmp_path / "c")
    return tmp_path / "c"


def assert_refused(done: subprocess.CompletedProcess[str], where: str, cwd: Path) -> None:
    assert done.returncode == 2 and done.stdout == "", done
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and "Traceback" not in done.stderr, done.stderr
    assert lines[0].startswith(f"error {where}: E303 "), lines[0]
    assert "regular file or a folder" in lines[0], lines[0]
    assert not (cwd / "s.db").exists()


@pytest.mark.parametrize("device", ["/dev/zero", "/dev/null", "/proc/self/environ", "/proc/self"])
def test_a_device_or_kernel_file_is_no_source(clean: Path, device: str) -> None:
    assert_refused(certify(clean, "--source", device), device, clean)


def test_a_fifo_is_no_source(clean: Path) -> None:
    os.mkfifo(clean / "pipe")
    assert_refused(certify(clean, "--source", "pipe"), str(clean / "pipe"), clean)


def test_a_socket_is_no_source(clean: Path) -> None:
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind(str(clean / "sock"))
        assert_refused(certify(clean, "--source", "sock"), str(clean / "sock"), clean)


def test_a_link_to_a_device_is_no_source(clean: Path) -> None:
    (clean / "zero").symlink_to("/dev/zero")
    assert_refused(certify(clean, "--source", "zero"), str(clean / "zero"), clean)


def test_a_contract_correction_to_a_device_is_refused(clean: Path) -> None:
    (clean / "contract.toml").write_text('sources = ["project"]\n')
    (clean / "answers.json").write_text(
        '{"contract": {"allowed_sources": {"correct": ["/dev/zero"]}}}'
    )
    done = subprocess.run(
        [
            sys.executable, "-m", "harness", "certify", "handoff.md", "--role", "implementer",
            "--contract", "contract.toml", "--answers", "answers.json", "--non-interactive",
            "--store", "s.db",
        ],
        cwd=clean, capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=60,
        env={**os.environ, "PYTHONPATH": str(ROOT)}, check=False,
    )  # fmt: skip
    assert done.returncode == 2, done
    assert "E303" in done.stderr and "regular file or a folder" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr


def test_a_file_and_a_folder_still_are_sources(clean: Path) -> None:
    assert certify(clean, "--source", "handoff.md").returncode == 0
