"""Shared fixtures: where the read-only test data (`../shared`) lives."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
SHARED = REPO_ROOT.parent / "shared"


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    if not SHARED.is_dir():
        pytest.fail(f"test data folder {SHARED} is missing (CI lays shared/ beside the clone)")
    return SHARED


@pytest.fixture(autouse=True, scope="session")
def quiet_logs() -> None:
    """Library code logs through structlog; keep test output to what tests print."""
    from harness.logs import configure_logging

    configure_logging()
