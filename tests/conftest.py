"""Shared fixtures: where the read-only test data (`../shared`) lives.

The shared corpora (spec, IML golden files, conformance cases) are an extra layer: a clone
alone has no `../shared`, and its tests that need it are skipped with the reason. CI lays
the folder beside the clone and sets `ILH_REQUIRE_SHARED=1`, so there a missing folder is
a failure, not a silent skip.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
SHARED = REPO_ROOT.parent / "shared"
_MISSING = f"test data folder {SHARED} is missing (a clone alone; CI lays shared/ beside it)"


def require_shared() -> Path:
    """The shared folder, or a skip (a fail where CI requires it) with the reason."""
    if not SHARED.is_dir():
        if os.environ.get("ILH_REQUIRE_SHARED") == "1":
            pytest.fail(_MISSING)
        pytest.skip(_MISSING)
    return SHARED


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    return require_shared()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Tests marked `shared` need the corpora: skipped (with the reason) on a clone alone.
    They are also marked `corpus`, so `pytest -m corpus` runs that layer alone."""
    for item in items:
        if item.get_closest_marker("shared"):
            item.add_marker(pytest.mark.corpus)
    if SHARED.is_dir() or os.environ.get("ILH_REQUIRE_SHARED") == "1":
        return
    skip = pytest.mark.skip(reason=_MISSING)
    for item in items:
        if item.get_closest_marker("shared"):
            item.add_marker(skip)


@pytest.fixture(autouse=True, scope="session")
def private_record_key(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """Tests never touch the user's real record key (`~/.config/ilh/record.key`): every
    store in the session, in this process and in the `python -m harness` children that
    inherit the environment, uses a key under the session's temporary folder. XDG_CONFIG_HOME
    too, so that a test clearing ILH_RECORD_KEY_FILE still lands in a temporary folder."""
    folder = tmp_path_factory.mktemp("ilh-config")
    saved = {name: os.environ.get(name) for name in ("ILH_RECORD_KEY_FILE", "XDG_CONFIG_HOME")}
    key_file = folder / "ilh" / "record.key"
    os.environ["ILH_RECORD_KEY_FILE"] = str(key_file)
    os.environ["XDG_CONFIG_HOME"] = str(folder / "xdg")
    try:
        yield key_file
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


@pytest.fixture(autouse=True, scope="session")
def quiet_logs() -> None:
    """Library code logs through structlog; keep test output to what tests print."""
    from harness.secrets.logs import configure_logging

    configure_logging()


@pytest.fixture
def honest(tmp_path: Path) -> Path:
    """A copy of examples/honest (task, scripted agent, workspace) to change at will."""
    folder = tmp_path / "honest"
    shutil.copytree(REPO_ROOT / "examples" / "honest", folder)
    return folder
