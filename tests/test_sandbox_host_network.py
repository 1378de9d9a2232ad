"""`network = "host"` shares the host's network namespace, and with it the host's abstract
Unix sockets, which no mount hides (issue 9, second red team). A command reached a host
service listening on one (containerd shims, X11 and D-Bus have); now, under host
network, it cannot make a Unix socket at all, while stream pairs still work, and without
host network Unix sockets work as before."""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.workspace.commands import run_shell
from harness.workspace.folder import Workspace
from harness.workspace.sandbox import CONFINED, SandboxPolicy

HOST = SandboxPolicy(network="host")
PROBE = r"""
import socket, sys
name = sys.argv[1].encode()
try:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(b"\0" + name)
    s.sendall(b"hello from the sandbox")
    print("stream: connected")
except OSError as e:
    print("stream: refused", e.errno)
try:
    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
    a.sendto(b"dgram", b"\0" + name + b"-dgram")
    print("dgram: sent")
except OSError as e:
    print("dgram: refused", e.errno)
a, b = socket.socketpair()
a.sendall(b"ping")
print("pair:", b.recv(4).decode())
"""


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    workspace = Workspace.create(tmp_path / "ws")
    (workspace.root / "probe.py").write_text(PROBE)
    return workspace


@pytest.fixture
def host_service() -> Iterator[tuple[str, socket.socket, socket.socket]]:
    """A host service on an abstract stream socket and an abstract datagram socket."""
    name = f"ilh-redteam-{os.getpid()}-{os.urandom(4).hex()}"
    stream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    stream.bind(b"\0" + name.encode())
    stream.listen(1)
    stream.settimeout(0.5)
    dgram = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    dgram.bind(b"\0" + name.encode() + b"-dgram")
    dgram.settimeout(0.5)
    yield name, stream, dgram
    stream.close()
    dgram.close()


def test_host_network_does_not_reach_host_abstract_sockets(
    ws: Workspace, host_service: tuple[str, socket.socket, socket.socket]
) -> None:
    name, stream, dgram = host_service
    result = run_shell(f"python probe.py {name}", ws.root, 30.0, sandbox=HOST)
    assert "stream: refused" in result.output and "dgram: refused" in result.output
    assert "pair: ping" in result.output  # stream pairs (asyncio, subprocess) still work
    with pytest.raises(TimeoutError):
        stream.accept()
    with pytest.raises(TimeoutError):
        dgram.recv(64)


def test_without_host_network_unix_sockets_work_inside(ws: Workspace) -> None:
    server = (
        "import socket, os\n"
        "s = socket.socket(socket.AF_UNIX); s.bind('/tmp/s'); s.listen(1)\n"
        "c = socket.socket(socket.AF_UNIX); c.connect('/tmp/s')\n"
        "a, _ = s.accept(); c.sendall(b'ok'); print('inside:', a.recv(2).decode())\n"
    )
    (ws.root / "server.py").write_text(server)
    result = run_shell("python server.py", ws.root, 30.0, sandbox=CONFINED)
    assert "inside: ok" in result.output
