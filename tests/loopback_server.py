"""A small OpenAI-compatible server on 127.0.0.1 for end-to-end tests of `ilh run
--base-url`: it answers POST /v1/chat/completions from a list of scripted replies and
keeps every request. Loopback only; nothing leaves the machine."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

# A reply: (status, headers, body bytes)
Reply = tuple[int, dict[str, str], bytes]


def json_reply(body: dict[str, Any], status: int = 200, **headers: str) -> Reply:
    return status, {"content-type": "application/json", **headers}, json.dumps(body).encode()


@dataclass
class ChatServer:
    replies: list[Callable[[dict[str, Any]], Reply]]
    requests: list[dict[str, Any]] = field(default_factory=list)
    headers: list[dict[str, str]] = field(default_factory=list)
    url: str = ""

    def answer(self, body: dict[str, Any], headers: dict[str, str]) -> Reply:
        self.requests.append(body)
        self.headers.append(headers)
        index = min(len(self.requests), len(self.replies)) - 1
        return self.replies[index](body)


@contextmanager
def serve(server: ChatServer) -> Iterator[ChatServer]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # the name http.server calls
            length = int(self.headers.get("content-length", "0"))
            body = json.loads(self.rfile.read(length) or b"{}")
            if self.path != "/v1/chat/completions":
                status, headers, payload = 404, {}, b'{"error": {"message": "no such path"}}'
            else:
                status, headers, payload = server.answer(
                    body, {k.lower(): v for k, v in self.headers.items()}
                )
            self.send_response(status)
            for key, value in headers.items():
                self.send_header(key, value)
            if "content-length" not in {k.lower() for k in headers}:
                self.send_header("content-length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, format: str, *args: Any) -> None:
            pass  # keep test output clean

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    server.url = f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    try:
        yield server
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=5)
