"""`benchmarks/peers.py` runs (tiny: 2 tasks, no real latency) and skips a peer that is not
installed with one line, never a traceback. The benchmark itself is not part of the suite."""

from __future__ import annotations

import importlib.util
from typing import Any

import pytest

from benchmarks import peers


def test_peers_runs_the_harness_alone(capsys: pytest.CaptureFixture[str]) -> None:
    peers.main(["--tasks", "2", "--latency-ms", "1", "--repeats", "1", "--peers", "none"])
    out = capsys.readouterr().out
    [row] = [line for line in out.splitlines() if line.startswith("ilang-harness")]
    cpu_ms, wall_s = (float(x) for x in row.split()[1:3])
    assert cpu_ms > 0 and wall_s > 0


def test_a_peer_not_installed_is_skipped_with_one_line(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    real = importlib.util.find_spec

    def missing(name: str, *args: Any) -> Any:
        return None if name in ("inspect_ai", "pydantic_ai") else real(name, *args)

    monkeypatch.setattr(importlib.util, "find_spec", missing)
    peers.main(["--tasks", "2", "--latency-ms", "1", "--repeats", "1"])
    out = capsys.readouterr().out.splitlines()
    assert [line for line in out if "not installed" in line] == [
        "inspect: not installed, skipped (pip install 'ilang-harness[bench]')",
        "pydantic-ai: not installed, skipped (pip install 'ilang-harness[bench]')",
    ]
    assert not [line for line in out if line.startswith(("inspect ", "pydantic-ai "))]


def test_an_unknown_peer_is_a_usage_error() -> None:
    with pytest.raises(SystemExit) as stopped:
        peers.main(["--tasks", "2", "--peers", "langchain"])
    assert stopped.value.code == 2
