"""What the Python a free check ran in the harness's runner said, whatever the line's
exit status says.

A free check keeps exit-code semantics, but its status is the shell's: in `pytest -q |
grep passed`, `python check.py | tail -1` or `python check.py > out; grep OK out` the
last command decides, and the agent's code, sharing stdout with the runner, printed the
line the grep wanted while its tests failed (attack9). So every `python` the shim runs
in the runner (`sandboxed/ilh_python.py`) writes to a pipe only the harness reads: a
`start NONCE` line before the code runs and `end NONCE STATUS` after, the nonce made in
the runner's non-dumpable process. A start with no end 0 is a failed run, and a check
with a failed run fails, its exit 0 notwithstanding. The check's other processes share
the pipe's write end: they can add lines, never take one back, and cannot guess a nonce.
"""

from __future__ import annotations

import contextlib
import os
import select
import threading

#: Most bytes of records read from one check (an honest check writes ~80 per Python it
#: runs); past it, the check's records cannot be trusted and it fails.
MAX_RECORD_BYTES = 1 << 20


class PythonRuns:
    """The read end of one free check's record pipe, drained by a thread while the check
    runs (so a check running many Pythons never blocks on a full pipe)."""

    def __init__(self) -> None:
        self._read, self.write_fd = os.pipe()
        self._data = bytearray()
        self._flooded = False
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._drain, name="ilh-python-runs", daemon=True)
        self._thread.start()

    def _drain(self) -> None:
        while not self._stop.is_set():
            try:
                ready, _w, _x = select.select([self._read], [], [], 0.2)
                if not ready:
                    continue
                chunk = os.read(self._read, 1 << 16)
            except OSError:
                return
            if not chunk:
                return
            if len(self._data) + len(chunk) > MAX_RECORD_BYTES:
                self._flooded = True
            else:
                self._data += chunk

    def close_writer(self) -> None:
        """The harness's own write end, closed once the check has been started and ended."""
        if self.write_fd >= 0:
            os.close(self.write_fd)
            self.write_fd = -1

    def failures(self) -> str | None:
        """Why a Python the check ran in the runner failed, or None when each passed. Waits
        a little for the pipe's end (a process of the check still holding it leaves its
        records as read so far)."""
        self.close_writer()
        self._thread.join(timeout=2.0)
        self._stop.set()
        self._thread.join()
        if self._flooded:
            return "the check wrote more records of its Python runs than any check writes"
        started: dict[str, None] = {}
        ended: dict[str, str] = {}
        for line in bytes(self._data).decode("ascii", "replace").splitlines():
            words = line.split()
            if len(words) == 2 and words[0] == "start":
                started.setdefault(words[1])
            elif len(words) == 3 and words[0] == "end":
                ended.setdefault(words[1], words[2])
        failed = [nonce for nonce in started if ended.get(nonce) != "0"]
        if not failed:
            return None
        return (
            f"{len(failed)} of the {len(started)} runs this check recorded failed (a Python it "
            "ran in the harness's runner, or an agent's program that changed what the check "
            "wrote before it), though the line's exit status was 0: a later command decided "
            "it (a pipe's last command, `|| …`, `; …`, `!`); a free check passes only when "
            "each of them passes"
        )

    def close(self) -> None:
        self.close_writer()
        self._stop.set()
        self._thread.join()
        with contextlib.suppress(OSError):
            os.close(self._read)
