"""A small driver for a system Chromium over the DevTools protocol, on a pipe.

Why not selenium or Playwright: Debian's `chromium` package is all the browser tests
need. `--remote-debugging-pipe` speaks the DevTools protocol on file descriptors 3 (our
commands) and 4 (its answers and events), NUL-separated JSON, so the standard library is
enough: no websocket client, no driver binary, no extra PyPI package. With it the tests
read what the browser rendered (element geometry, computed styles, every request the page
made) and take real screenshots at a chosen width.

Every wait has a deadline: a browser that hangs fails the test, it does not stall the suite.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import tempfile
import threading
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

#: The flags a root process in a closed network needs (no sandbox as root; nothing that
#: reaches out at start: sync, component updates, QUIC, first-run pings).
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--no-default-browser-check",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-extensions",
    "--hide-scrollbars",
    "--mute-audio",
    "--remote-debugging-pipe",
)
TIMEOUT_S = 30.0


def find_chromium() -> str | None:
    """The browser: `ILH_CHROMIUM` if set, else the first of Debian's and other names."""
    named = os.environ.get("ILH_CHROMIUM")
    if named:
        return named if Path(named).exists() else None
    for name in ("chromium", "chromium-browser", "google-chrome", "chrome"):
        found = shutil.which(name)
        if found:
            return found
    return None


class BrowserError(RuntimeError):
    pass


class Chromium:
    """One headless browser process; `page()` opens a tab at a given viewport."""

    def __init__(self, binary: str) -> None:
        self._profile = tempfile.mkdtemp(prefix="ilh-chromium-")
        to_child_r, self._to_child = os.pipe()
        self._from_child, from_child_w = os.pipe()

        def wire() -> None:  # in the child: our pipes become fds 3 and 4
            # Through fresh copies first: one of ours may itself be 3 or 4.
            read_end, write_end = os.dup(to_child_r), os.dup(from_child_w)
            os.dup2(read_end, 3)
            os.dup2(write_end, 4)
            os.set_inheritable(3, True)
            os.set_inheritable(4, True)

        self._proc = subprocess.Popen(
            [binary, *FLAGS, f"--user-data-dir={self._profile}", "about:blank"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            preexec_fn=wire,
            pass_fds=(3, 4),  # kept open by the fd sweep, which runs after `wire`
        )
        os.close(to_child_r)
        os.close(from_child_w)
        self._next_id = 0
        self._lock = threading.Condition()
        self._answers: dict[int, dict[str, Any]] = {}
        self.events: list[dict[str, Any]] = []
        self._closed = False
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        buffer = b""
        with os.fdopen(self._from_child, "rb", buffering=0) as stream:
            while chunk := stream.read(1 << 16):
                buffer += chunk
                *messages, buffer = buffer.split(b"\0")
                with self._lock:
                    for raw in messages:
                        message = json.loads(raw)
                        if "id" in message:
                            self._answers[message["id"]] = message
                        else:
                            self.events.append(message)
                    self._lock.notify_all()
        with self._lock:
            self._closed = True
            self._lock.notify_all()

    def send(self, method: str, session: str | None = None, **params: Any) -> dict[str, Any]:
        """One command; its result (or BrowserError with the protocol's message)."""
        with self._lock:
            self._next_id += 1
            ident = self._next_id
        message: dict[str, Any] = {"id": ident, "method": method, "params": params}
        if session:
            message["sessionId"] = session
        os.write(self._to_child, json.dumps(message).encode() + b"\0")
        with self._lock:
            answered = self._lock.wait_for(
                lambda: ident in self._answers or self._closed, timeout=TIMEOUT_S
            )
            if not answered or ident not in self._answers:
                raise BrowserError(f"{method}: no answer from Chromium in {TIMEOUT_S:.0f} s")
            answer = self._answers.pop(ident)
        if "error" in answer:
            raise BrowserError(f"{method}: {answer['error'].get('message')}")
        result: dict[str, Any] = answer.get("result", {})
        return result

    def wait_event(self, method: str, session: str, after: int) -> dict[str, Any]:
        """The first `method` event of `session` at index >= `after` of `events`."""

        def found() -> dict[str, Any] | None:
            for event in self.events[after:]:
                if event.get("method") == method and event.get("sessionId") == session:
                    return event
            return None

        with self._lock:
            if not self._lock.wait_for(
                lambda: found() is not None or self._closed, timeout=TIMEOUT_S
            ):
                raise BrowserError(f"no {method} from Chromium in {TIMEOUT_S:.0f} s")
            event = found()
        if event is None:
            raise BrowserError(f"Chromium exited before {method}")
        return event

    def page(self, url: str, width: int, height: int = 800) -> Page:
        target = self.send("Target.createTarget", url="about:blank")["targetId"]
        session = self.send("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
        page = Page(self, session)
        for domain in ("Page.enable", "Network.enable", "Runtime.enable"):
            self.send(domain, session)
        page.resize(width, height)
        mark = len(self.events)
        self.send("Page.navigate", session, url=url)
        self.wait_event("Page.loadEventFired", session, mark)
        return page

    def close(self) -> None:
        try:
            os.write(self._to_child, json.dumps({"id": 0, "method": "Browser.close"}).encode())
            os.write(self._to_child, b"\0")
        except OSError:
            pass
        try:
            self._proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait(timeout=10)
        os.close(self._to_child)
        shutil.rmtree(self._profile, ignore_errors=True)


class Page:
    def __init__(self, browser: Chromium, session: str) -> None:
        self.browser = browser
        self.session = session

    def resize(self, width: int, height: int) -> None:
        self.browser.send(
            "Emulation.setDeviceMetricsOverride",
            self.session,
            width=width,
            height=height,
            deviceScaleFactor=1,
            mobile=False,
        )

    def evaluate(self, expression: str) -> Any:
        """The value of a JavaScript expression in the page (returned by value, as JSON)."""
        answer = self.browser.send(
            "Runtime.evaluate", self.session, expression=expression, returnByValue=True
        )
        if "exceptionDetails" in answer:
            raise BrowserError(f"{expression[:60]}…: {answer['exceptionDetails'].get('text')}")
        return answer["result"].get("value")

    def requests(self) -> list[str]:
        """Every URL this page asked for (the DevTools Network domain sees them all)."""
        return [
            e["params"]["request"]["url"]
            for e in self.browser.events
            if e.get("method") == "Network.requestWillBeSent" and e.get("sessionId") == self.session
        ]

    def screenshot(self, max_height: int | None = None) -> bytes:
        """A PNG of the whole page (beyond the viewport) at the viewport's width, or of
        its top `max_height` pixels."""
        size = self.evaluate(
            "[document.documentElement.scrollWidth, document.documentElement.scrollHeight]"
        )
        if max_height is not None:
            size[1] = min(size[1], max_height)
        answer = self.browser.send(
            "Page.captureScreenshot",
            self.session,
            format="png",
            captureBeyondViewport=True,
            clip={"x": 0, "y": 0, "width": size[0], "height": size[1], "scale": 1},
        )
        return base64.b64decode(answer["data"])


@contextmanager
def chromium(binary: str) -> Iterator[Chromium]:
    browser = Chromium(binary)
    try:
        yield browser
    finally:
        browser.close()


def png_pixels(png: bytes) -> tuple[int, int, list[bytes]]:
    """(width, height, rows of RGB bytes) of an 8-bit RGB or RGBA PNG, as Chromium writes
    them: enough of PNG (zlib and the five row filters) to read a screenshot's pixels
    with the standard library."""
    if png[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("not a PNG")
    pos, data, header = 8, b"", b""
    while pos < len(png):
        length = int.from_bytes(png[pos : pos + 4], "big")
        kind, body = png[pos + 4 : pos + 8], png[pos + 8 : pos + 8 + length]
        pos += 12 + length
        if kind == b"IHDR":
            header = body
        elif kind == b"IDAT":
            data += body
    width, height = int.from_bytes(header[:4], "big"), int.from_bytes(header[4:8], "big")
    depth, color = header[8], header[9]
    if depth != 8 or color not in (2, 6):
        raise ValueError(f"PNG depth {depth} color type {color}: not read here")
    step = 3 if color == 2 else 4
    raw = zlib.decompress(data)
    stride = width * step
    rows: list[bytes] = []
    prior = bytearray(stride)
    at = 0
    for _ in range(height):
        kind, line = raw[at], bytearray(raw[at + 1 : at + 1 + stride])
        at += 1 + stride
        for i in range(stride):
            left = line[i - step] if i >= step else 0
            up = prior[i]
            corner = prior[i - step] if i >= step else 0
            if kind == 1:
                line[i] = (line[i] + left) & 0xFF
            elif kind == 2:
                line[i] = (line[i] + up) & 0xFF
            elif kind == 3:
                line[i] = (line[i] + (left + up) // 2) & 0xFF
            elif kind == 4:
                p = left + up - corner
                pa, pb, pc = abs(p - left), abs(p - up), abs(p - corner)
                pred = left if pa <= pb and pa <= pc else up if pb <= pc else corner
                line[i] = (line[i] + pred) & 0xFF
        prior = line
        rows.append(
            bytes(line) if step == 3 else bytes(b for j, b in enumerate(line) if j % 4 != 3)
        )
    return width, height, rows
