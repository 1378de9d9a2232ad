"""`ilh certify --check sub/h.cert.json` reads the target beside the certificate (certify8).

With no TARGET the certificate's own locator is relative to its folder; the check joined
that folder twice (`out/out/../handoff.md`) whenever the certificate was named by a
relative path with a folder in it, and reported an unchanged record as CHANGED ("the
target cannot be read"). Only a bare name or an absolute path worked."""

from __future__ import annotations

import shutil
from pathlib import Path

from tests.certify_helpers import CLEAN
from tests.certify_helpers import ilh_child as ilh


def test_a_certificate_named_through_a_folder_checks_its_target(tmp_path: Path) -> None:
    clean = tmp_path / "c"
    shutil.copytree(CLEAN, clean)
    (clean / "out").mkdir()
    made = ilh(
        clean, "certify", "handoff.md", "--role", "implementer", "--source", "project",
        "--non-interactive", "--store", "s.db", "--certificate", "out/h.cert.json",
    )  # fmt: skip
    assert made.returncode == 0, made.stderr
    for cwd, cert in (
        (clean, "out/h.cert.json"),
        (clean / "out", "h.cert.json"),
        (tmp_path, "c/out/h.cert.json"),
        (clean / "project", "../out/h.cert.json"),
        (tmp_path, str(clean / "out" / "h.cert.json")),
    ):
        done = ilh(cwd, "certify", "--check", cert)
        assert done.returncode == 0, (cwd, cert, done.stdout, done.stderr)
