"""Review 8 of the run lock (ux6): a store on a folder whose file system takes no
`flock` (some network and FUSE mounts answer ENOLCK, EOPNOTSUPP or ENOSYS) must not stop
`ilh run` or `--resume`: the lock guards against an honest slip (two terminals), not an
adversary (the agent cannot reach the runs folder), so where the system offers none the
run goes on, with one note saying so. A lock held by another process is still refused."""

from __future__ import annotations

import errno
import fcntl
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from harness.cli.main import ilh
from harness.record.store import RunStore
from harness.run.owner import owning
from tests.test_review8_script_checks import CHECKS, HONEST, _task


@pytest.mark.parametrize("code", [errno.ENOLCK, errno.EOPNOTSUPP, errno.ENOSYS])
def test_a_store_whose_folder_takes_no_lock_still_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, code: int
) -> None:
    def no_lock(fd: int, operation: int) -> None:
        raise OSError(code, "no locks here")

    monkeypatch.setattr(fcntl, "flock", no_lock)
    task = _task(tmp_path, CHECKS["callback"], HONEST)
    store = tmp_path / "runs.db"
    result = CliRunner().invoke(ilh, ["run", str(task), "--store", str(store), "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["final"]["state"] == "complete"
    assert "cannot be locked" in result.stderr
    with RunStore(store, create=False) as records:
        run_id = records.list_runs()[0].run_id
    again = CliRunner().invoke(ilh, ["run", "--resume", run_id, "--store", str(store)])
    assert "cannot lock" not in again.output
    assert "E500" not in again.output


def test_a_lock_held_elsewhere_is_still_refused(tmp_path: Path) -> None:
    from harness.inputs.errors import InputError

    store = RunStore(tmp_path / "runs.db")
    try:
        with (
            owning(store, "r1"),
            pytest.raises(InputError, match="another ilh process"),
            owning(store, "r1"),
        ):
            pass
    finally:
        store.close()
