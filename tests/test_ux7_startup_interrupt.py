"""Ctrl-C (or SIGTERM) in the first tenth of a second of any `ilh` command (ux7).

While Python imported click, rich and the rest, a Ctrl-C printed a KeyboardInterrupt
traceback of importlib's frames (and a SIGTERM ended the process silently, 143): the
handlers that say "interrupted" and exit 130 came later. Now the program's entry
(`harness.cli.entry`) holds both signals from its first line: "interrupted", 130. A
SIGINT a background job ignores stays ignored.

Deterministic: an import hook sends the signal while `click` is being imported, as a
person's Ctrl-C at that moment would."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

PROGRAM = """
import os, runpy, signal, sys

class SignalWhileImporting:
    def find_spec(self, name, path=None, target=None):
        if name == "click":
            sys.meta_path.remove(self)
            os.kill(os.getpid(), signal.{signal})
        return None

sys.meta_path.insert(0, SignalWhileImporting())
sys.argv = ["ilh", "lint", "-"]
runpy.run_module("harness", run_name="__main__")
"""


def started(signame: str, ignore_sigint: bool = False) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", PROGRAM.format(signal=signame)],
        cwd=ROOT, capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=120,
        env={**os.environ, "PYTHONPATH": str(ROOT)}, check=False,
        # Each case sets SIGINT as it needs it: a test run started in the background
        # (CI, `pytest &`) hands down an ignored SIGINT, which the entry rightly keeps.
        preexec_fn=lambda: signal.signal(
            signal.SIGINT, signal.SIG_IGN if ignore_sigint else signal.SIG_DFL
        ),
    )  # fmt: skip


@pytest.mark.parametrize("signame", ["SIGINT", "SIGTERM"])
def test_a_signal_while_starting_is_an_interruption_not_a_traceback(signame: str) -> None:
    done = started(signame)
    assert "Traceback" not in done.stderr and "KeyboardInterrupt" not in done.stderr, done
    assert done.returncode == 130, done
    assert done.stderr == "interrupted\n" and done.stdout == ""


def test_an_ignored_sigint_stays_ignored_while_starting() -> None:
    done = started("SIGINT", ignore_sigint=True)
    assert done.returncode == 0, done
    assert "ok" in done.stdout


def test_the_program_is_the_entry_that_holds_the_signals() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert project["project"]["scripts"]["ilh"] == "harness.cli.entry:main"
