"""The `grep` tool's regular-expression matching, in a child process with a deadline.

Python's `re` has no timeout and holds the interpreter lock while it backtracks: a
nine-character pattern (`(a|aa)+$`) against a sixty-character line runs for hours in
the harness itself, where no budget, no Ctrl-C and no other run of a batch could move
again. So the harness reads the files (its confined descriptor walk decides what may be
read) and a child interpreter (`python -I -S`, no site, no harness code) only matches
the lines it is sent; past the deadline it is killed and the call is a tool error.

The pipe protocol: frames of a 4-byte big-endian length and UTF-8 bytes (the pattern,
the match cap, the line cap, then each file's text); back, one JSON array per matching
line, `[file index, line number, shown line]`, and `["more"]` when matches went past
the cap.
"""

from __future__ import annotations

import contextlib
import json
import struct
import subprocess
import sys
import threading
from collections.abc import Iterable
from typing import IO, NamedTuple

_CHILD = r"""
import json, re, struct, sys
read, out = sys.stdin.buffer.read, sys.stdout


def frame():
    head = read(4)
    if len(head) < 4:
        return None
    data = read(struct.unpack(">I", head)[0])
    return data.decode("utf-8", "replace")


pattern = re.compile(frame())
cap, line_chars = int(frame()), int(frame())
found, index = 0, 0
while (text := frame()) is not None:
    for number, line in enumerate(text.split("\n"), start=1):
        line = line.removesuffix("\r")
        if pattern.search(line):
            if found >= cap:
                out.write('["more"]\n')
                sys.exit(0)
            found += 1
            shown = line if len(line) <= line_chars else line[:line_chars] + "\u2026"
            out.write(json.dumps([index, number, shown]) + "\n")
    index += 1
"""


class MatchTimeout(Exception):
    """The pattern ran past its deadline (catastrophic backtracking, most likely)."""


class Matches(NamedTuple):
    lines: list[tuple[int, int, str]]  # (index of the text fed, line number, shown line)
    more: bool  # matches went past the cap


def _frame(text: str) -> bytes:
    data = text.encode("utf-8", "replace")
    return struct.pack(">I", len(data)) + data


def search(
    pattern: str, texts: Iterable[str], *, cap: int, line_chars: int, timeout_s: float
) -> Matches:
    """Every line of `texts` that `pattern` matches (at most `cap`), or `MatchTimeout`.
    `texts` is consumed in a worker thread, wholly before this returns."""
    child = subprocess.Popen(
        [sys.executable, "-I", "-S", "-c", _CHILD],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    assert child.stdin is not None and child.stdout is not None
    sink: list[bytes] = []
    writer = threading.Thread(target=_feed, args=(child.stdin, pattern, cap, line_chars, texts))
    reader = threading.Thread(target=lambda out: sink.append(out.read()), args=(child.stdout,))
    writer.start()
    reader.start()
    try:
        child.wait(timeout_s)
    except subprocess.TimeoutExpired:
        child.kill()
        child.wait()
        raise MatchTimeout(f"the pattern ran for more than {timeout_s:g}s") from None
    finally:
        writer.join()  # the killed child broke its pipe: the writer stops at once
        reader.join()
        child.stdout.close()
    lines: list[tuple[int, int, str]] = []
    more = False
    for raw in b"".join(sink).splitlines():
        item = json.loads(raw)
        if item == ["more"]:
            more = True
        else:
            lines.append((int(item[0]), int(item[1]), str(item[2])))
    return Matches(lines, more)


def _feed(stdin: IO[bytes], pattern: str, cap: int, line_chars: int, texts: Iterable[str]) -> None:
    try:
        for head in (pattern, str(cap), str(line_chars)):
            stdin.write(_frame(head))
        for text in texts:
            stdin.write(_frame(text))
    except OSError:  # the child is gone (killed, or done at the cap)
        pass
    finally:
        with contextlib.suppress(OSError):
            stdin.close()
