"""A granted source's identity never reads a kernel file system (certify8).

A source swapped after certification for a link to `/proc/self` made `ilh certify --check`
(and `ilh run`'s `[handoff]` check) hash the checking process's own `/proc` entries:
`pagemap` alone is hundreds of gigabytes, so the check never ended. A link inside a source
folder to `/proc/self` did the same to the certification. A kernel file is named in the
identity, never read: the check ends, and reports the source changed."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.certify_helpers import CERTIFY_PROJECT as CERTIFY
from tests.certify_helpers import CLEAN
from tests.certify_helpers import ilh_child as ilh


@pytest.fixture
def clean(tmp_path: Path) -> Path:
    shutil.copytree(CLEAN, tmp_path / "c")
    return tmp_path / "c"


@pytest.mark.parametrize("kernel", ["/proc/self", "/proc/self/pagemap"])
def test_a_source_swapped_for_a_kernel_link_fails_the_check_quickly(
    clean: Path, kernel: str
) -> None:
    assert ilh(clean, *CERTIFY, "--certificate", "h.cert.json").returncode == 0
    (clean / "project").rename(clean / "project.real")
    (clean / "project").symlink_to(kernel)
    done = ilh(clean, "certify", "--check", "h.cert.json", "--json")
    assert done.returncode == 1, done.stderr
    problems = json.loads(done.stdout)["problems"]
    assert any("project changed after certification" in p for p in problems), problems


def test_a_link_to_proc_inside_a_source_is_named_not_read(clean: Path) -> None:
    (clean / "project" / "mine").symlink_to("/proc/self")
    (clean / "project" / "map").symlink_to("/proc/self/pagemap")
    done = ilh(clean, *CERTIFY, "--json")
    assert done.returncode in (0, 1), done.stderr
    assert "Traceback" not in done.stderr
