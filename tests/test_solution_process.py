"""The solution under test runs in a process of its own (`sandboxed/ilh_bridge.py`).

Two layers:

* the protocol, over a socket pair inside this process: what crosses is data (a `str`
  subclass arrives as the plain string, an object that equals anything equals nothing
  here), exceptions cross with their class, hostile frames break the connection and
  nothing else, and the test side serves the solution only calls and public attributes
  of what the tests handed it;
* end to end, `ilh grade --baseline` over a pytest task: honest work that uses what
  tests commonly use (classes, dataclass equality, custom exceptions with
  `pytest.raises`, generators, named tuples, callbacks, `tmp_path`, `monkeypatch`)
  verifies; solutions that attack the runner from their own process do not.
"""

from __future__ import annotations

import importlib.machinery
import json
import shutil
import socket
import struct
import subprocess
import sysconfig
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from harness.cli.main import ilh
from harness.grading.sandboxed import ilh_bridge
from harness.grading.sandboxed.ilh_bridge import BridgeError, Peer, Proxy, RemoteError
from tests import test_grading_tricks as tricks


# ---------------------------------------------------------------------- protocol
class Solution:
    """What a solution module might hold, served from a thread of this process."""

    class Error(ValueError):
        pass

    class AlwaysEqual(str):
        def __eq__(self, other: object) -> bool:
            return True

        __hash__ = str.__hash__

    class Bag:
        def __contains__(self, item: object) -> bool:
            return True  # says yes to anything

        def __iter__(self) -> Iterator[int]:
            return iter([1, 2])

    @staticmethod
    def forged() -> str:
        return Solution.AlwaysEqual("nothing")

    @staticmethod
    def bag() -> object:
        return Solution.Bag()

    @staticmethod
    def fail() -> None:
        raise Solution.Error("bad input")

    @staticmethod
    def leave() -> None:
        raise SystemExit(0)

    @staticmethod
    def apply(callback: Any, value: int) -> Any:
        return callback(value)

    @staticmethod
    def reach(obj: Any, name: str) -> Any:
        return getattr(obj, name)

    @staticmethod
    def numbers(n: int) -> Iterator[int]:
        yield from range(n)

    class Close:
        """Arithmetic that answers 0 whatever it is given: `expected - obj` is 0."""

        def __sub__(self, other: object) -> int:
            return 0

        __rsub__ = __sub__

        def __abs__(self) -> int:
            return 0

        @property
        def __array_interface__(self) -> dict[str, object]:
            return {"data": (0, True), "shape": (1,), "typestr": "<f8", "version": 3}

    @staticmethod
    def close() -> object:
        return Solution.Close()


@pytest.fixture
def peers() -> Iterator[tuple[Peer, Peer]]:
    here, there = socket.socketpair()
    tests = Peer(here, imports=False, guarded=True)
    solution = Peer(there, imports=True, guarded=False)
    thread = threading.Thread(target=solution.serve_forever, daemon=True)
    thread.start()
    yield tests, solution
    here.close()
    thread.join(5)
    there.close()


def remote(tests: Peer, solution: Peer) -> Any:
    """The `Solution` class as the test side sees it: a proxy."""
    handle = solution._export(Solution)
    return tests.decode(["h", handle])


def test_plain_values_arrive_as_their_builtin_types(peers: tuple[Peer, Peer]) -> None:
    tests, solution = peers
    value = {"a": (1, 2.5, None), "b": [b"x", {3, 4}], "c": frozenset({"z"}), 5: "five"}
    assert tests.decode(solution.encode(value)) == value
    forged = remote(tests, solution).forged()
    assert type(forged) is str and forged == "nothing"
    assert forged != "Fizz"


def test_an_object_that_equals_anything_equals_nothing_here(peers: tuple[Peer, Peer]) -> None:
    tests, solution = peers
    bag = remote(tests, solution).bag()
    assert isinstance(bag, Proxy)
    assert bag != "Fizz" and bag != 3
    assert 1 in bag and 7 not in bag  # membership decided here, over its items
    with pytest.raises(TypeError):
        _ = bag < 3


def test_exceptions_cross_with_their_class(peers: tuple[Peer, Peer]) -> None:
    tests, solution = peers
    module = remote(tests, solution)
    error = module.Error
    assert isinstance(error, type) and issubclass(error, ValueError)
    with pytest.raises(error, match="bad input"):
        module.fail()
    with pytest.raises(RemoteError, match="SystemExit"):
        module.leave()


def test_callbacks_and_generators(peers: tuple[Peer, Peer]) -> None:
    tests, solution = peers
    module = remote(tests, solution)
    assert module.apply(lambda v: v * 2, 21) == 42
    assert list(module.numbers(4)) == [0, 1, 2, 3]


def test_the_test_side_serves_no_private_attribute_and_no_module(
    peers: tuple[Peer, Peer],
) -> None:
    tests, solution = peers
    module = remote(tests, solution)

    def callback(v: int) -> int:
        return v

    with pytest.raises((PermissionError, AttributeError)):
        module.reach(callback, "__globals__")
    with pytest.raises(PermissionError):
        module.reach(json, "dumps")  # a module handed over is not served
    with pytest.raises(PermissionError):
        module.reach(callback, "__name__")


def test_arithmetic_cannot_stand_in_for_equality(peers: tuple[Peer, Peer]) -> None:
    tests, solution = peers
    close = remote(tests, solution).close()
    assert close != pytest.approx(3.14)
    with pytest.raises(TypeError, match="plain value"):
        _ = 3.14 - close
    with pytest.raises(AttributeError):
        _ = close.__array_interface__  # a protocol looked up on the instance: refused


def test_the_runners_own_objects_are_not_served(peers: tuple[Peer, Peer]) -> None:
    tests, solution = peers
    module = remote(tests, solution)
    with pytest.raises(PermissionError):
        module.apply(pytest.fail, "forced")
    with pytest.raises(PermissionError):
        module.reach(pytest.MonkeyPatch(), "setattr")


def frame(payload: bytes) -> bytes:
    return struct.pack(">I", len(payload)) + payload


@pytest.mark.parametrize(
    "payload",
    [
        b"not json",
        b"[" * 100_000,
        json.dumps({"ok": ["h", "x"]}).encode(),
        json.dumps({"ok": ["mine", 999]}).encode(),
        json.dumps({"ok": ["nt", "1bad", ["a"], ["list", [1]]]}).encode(),
        json.dumps({"ok": ["exc", 1, "E", "int"]}).encode(),
        json.dumps({"ok": ["dict", [[["list", []], 1]]]}).encode(),
        json.dumps({"exc": [["builtin", "int"], ["list", []], "x"]}).encode(),
        json.dumps([1, 2]).encode(),
    ],
)
def test_a_hostile_answer_breaks_the_connection_and_nothing_else(payload: bytes) -> None:
    here, there = socket.socketpair()
    tests = Peer(here, imports=False, guarded=True)
    there.sendall(frame(payload))
    with pytest.raises(BridgeError):
        tests.request("getattr", 1, "x")
    with pytest.raises(BridgeError):  # and it stays broken
        tests.request("getattr", 1, "x")
    here.close()
    there.close()


def test_an_oversized_frame_is_refused_unread() -> None:
    here, there = socket.socketpair()
    tests = Peer(here, imports=False, guarded=True)
    there.sendall(struct.pack(">I", ilh_bridge.MAX_FRAME + 1))
    with pytest.raises(BridgeError, match="size"):
        tests.request("getattr", 1, "x")
    here.close()
    there.close()


# -------------------------------------------------------------------- end to end
TESTS = """\
import dataclasses

import pytest

import shapes
from shapes import Circle, ShapeError, area, grow, scaled


def test_area():
    assert area(Circle(1.0)) == pytest.approx(3.14159, rel=1e-4)


def test_dataclass_equality():
    assert grow(Circle(1.0), 1.0) == Circle(2.0)


def test_errors():
    with pytest.raises(ShapeError, match="negative"):
        Circle(-1.0)
    with pytest.raises(ValueError):
        Circle(-2.0)


def test_generators_and_named_tuples():
    assert list(scaled([1, 2, 3], 2)) == [2, 4, 6]
    point = shapes.center()
    assert point.x == 0 and point == (0, 0)


def test_callbacks_and_files(tmp_path):
    assert shapes.apply(lambda v: v + 1, 41) == 42
    target = tmp_path / "out.txt"
    shapes.save(str(target), "hello")
    assert target.read_text() == "hello"


def test_monkeypatch(monkeypatch):
    monkeypatch.setattr(shapes, "UNIT", 10)
    assert shapes.unit() == 10
"""

SOLUTION = """\
import dataclasses
import math
from collections import namedtuple

UNIT = 1
Point = namedtuple("Point", "x y")


class ShapeError(ValueError):
    pass


@dataclasses.dataclass
class Circle:
    r: float

    def __post_init__(self):
        if self.r < 0:
            raise ShapeError("negative radius")


def area(c):
    return math.pi * c.r ** 2


def grow(c, by):
    return Circle(c.r + by)


def scaled(values, k):
    for v in values:
        yield v * k


def center():
    return Point(0, 0)


def apply(f, v):
    return f(v)


def save(path, text):
    with open(path, "w") as out:
        out.write(text)


def unit():
    return UNIT
"""


def make_task(tmp_path: Path) -> Path:
    folder = tmp_path / "task"
    (folder / "workspace" / "tests").mkdir(parents=True)
    (folder / "workspace" / "tests" / "test_shapes.py").write_text(TESTS)
    (folder / "workspace" / "shapes.py").write_text("# to be written\n")
    (folder / "task.toml").write_text(
        """[task]
id = "shapes"
objective = "Write shapes.py."
workspace = "workspace"

[rubric]
threshold = 1.0

[[rubric.criteria]]
id = "tests"
weight = 1.0
check = "the tests pass"
pytest = "tests/"
"""
    )
    return folder / "task.toml"


def grade(tmp_path: Path, task: Path, files: dict[str, str]) -> dict[str, Any]:
    work = tmp_path / "work"
    work.mkdir()
    (work / "tests").mkdir()
    (work / "tests" / "test_shapes.py").write_text(TESTS)
    for name, text in files.items():
        (work / name).parent.mkdir(parents=True, exist_ok=True)
        (work / name).write_text(text)
    template = task.parent / "workspace"
    args = ["grade", str(task), "--workspace", str(work), "--baseline", str(template)]
    result = CliRunner().invoke(ilh, [*args, "--json"])
    report: dict[str, Any] = json.loads(result.stdout)
    report["_exit"] = result.exit_code
    return report


def test_honest_work_using_common_test_features_verifies(tmp_path: Path) -> None:
    task = make_task(tmp_path)
    report = grade(tmp_path, task, {"shapes.py": SOLUTION})
    assert report["_exit"] == 0 and report["verdict"] == "verified_complete", report


# Each reaches for the runner from the solution process; none may verify.
ATTACKS = {
    # The red team's frame forgery (test_grading_tricks), aimed at pytest this time.
    "profile_hook": SOLUTION + "import json, os, sys\n"
    "def _hook(frame, event, arg):\n"
    "    if event == 'call' and frame.f_code.co_name == 'findings':\n"
    "        loc = frame.f_back.f_locals\n"
    "        tests = [dict(t, outcome='passed') for t in loc['tests']]\n"
    "        report = {'nonce': loc['nonce'], 'kind': loc['kind'], 'finished': True,\n"
    "                  'exit_code': 0, 'tests': tests, 'tampered': [], 'junit_sha256': None}\n"
    "        with open(os.path.join(loc['report_dir'], 'report.json'), 'w') as out:\n"
    "            json.dump(report, out)\n"
    "        os._exit(0)\n"
    "sys.setprofile(_hook)\n"
    "def area(c):\n    return 0\n",
    # Write the report through the runner's descriptors (same user, one level up).
    "runner_descriptors": SOLUTION + "import os\n"
    "def area(c):\n"
    "    for n in range(3, 64):\n"
    "        try:\n"
    "            with open(f'/proc/{os.getppid()}/fd/{n}', 'w') as out:\n"
    "                out.write('{}')\n"
    "        except OSError:\n"
    "            pass\n"
    "    return 0\n",
    # Read the runner's memory for its secret.
    "runner_memory": SOLUTION + "import os\n"
    "def area(c):\n"
    "    with open(f'/proc/{os.getppid()}/mem', 'rb') as mem:\n"
    "        mem.read(1)\n"
    "    return math.pi * c.r ** 2\n",
    # End the test process with success.
    "kill_runner": SOLUTION + "import os, signal\nos.kill(os.getppid(), signal.SIGKILL)\n",
    "exit_in_call": SOLUTION + "import sys\ndef area(c):\n    sys.exit(0)\n",
    # Rewrite the tests on disk when imported.
    "rewrite_tests": SOLUTION
    + "open('tests/test_shapes.py', 'w').write('def test_ok():\\n    pass\\n')\n"
    "def area(c):\n    return 0\n",
    # Answer with an object whose arithmetic says "no difference" (pytest.approx,
    # assertAlmostEqual) and whose array interface points wherever it likes.
    "approximately_anything": SOLUTION + "class _Close:\n"
    "    def __sub__(self, other):\n        return 0\n"
    "    __rsub__ = __sub__\n"
    "    def __abs__(self):\n        return 0\n"
    "    def __array__(self, *a, **k):\n        import array\n        return 3.14159\n"
    "def area(c):\n    return _Close()\n",
    # Answer with values that equal anything.
    "always_equal": SOLUTION + "class _Any(float):\n"
    "    def __eq__(self, other):\n        return True\n"
    "    __hash__ = float.__hash__\n"
    "def area(c):\n    return _Any(0)\n",
}


@pytest.mark.parametrize("attack", list(ATTACKS))
def test_a_solution_attacking_the_runner_does_not_verify(tmp_path: Path, attack: str) -> None:
    task = make_task(tmp_path)
    report = grade(tmp_path, task, {"shapes.py": ATTACKS[attack]})
    assert report["verdict"] != "verified_complete", report


def test_the_runner_is_out_of_reach_of_the_solution_process(tmp_path: Path) -> None:
    """Seen from the solution: the runner's descriptors and memory are closed to it."""
    task = make_task(tmp_path)
    probe = SOLUTION + (
        "import os\n"
        "def area(c):\n"
        "    seen = []\n"
        "    for what in ('fd', 'mem', 'environ'):\n"
        "        try:\n"
        "            os.listdir(f'/proc/{os.getppid()}/fd') if what == 'fd' else "
        "open(f'/proc/{os.getppid()}/{what}', 'rb').read(1)\n"
        "            seen.append(what + ':open')\n"
        "        except OSError as exc:\n"
        "            seen.append(what + ':' + type(exc).__name__)\n"
        "    raise AssertionError('PROBE ' + ' '.join(seen))\n"
    )
    report = grade(tmp_path, task, {"shapes.py": probe})
    text = json.dumps(report)
    assert "PROBE" in text, text[:2000]
    assert ":open" not in text.split("PROBE", 1)[1][:200]


# --------------------------------------------- the second red team's breaks (issue 9)
RED_TEAM = Path(__file__).parent / "data" / "red_team"


def fizz_grade(tmp_path: Path, runner: str, files: dict[str, bytes]) -> dict[str, Any]:
    """The fizzbuzz task of the tricks (`test_grading_tricks`) graded with `files`."""
    task = tricks.make_task(tmp_path, runner)
    work = tmp_path / "work"
    shutil.copytree(task.parent / "workspace", work)
    for name, data in files.items():
        (work / name).parent.mkdir(parents=True, exist_ok=True)
        (work / name).write_bytes(data)
    return tricks.ilh_grade(task, work)[1]


@pytest.mark.parametrize("runner", ["unittest", "pytest"])
def test_a_root_package_init_runs_in_the_solution_process(tmp_path: Path, runner: str) -> None:
    """pytest imports a root with `__init__.py` as a package, found from `/`: its
    `__init__` swapped `assertEqual`'s body in the runner."""
    files = {
        "__init__.py": (RED_TEAM / "root_init.py.txt").read_bytes(),
        "fizz.py": tricks.STUB.encode(),
    }
    report = fizz_grade(tmp_path, runner, files)
    assert report["verdict"] != "verified_complete", report


@pytest.mark.parametrize("runner", ["unittest", "pytest"])
def test_the_runners_descriptors_are_held_by_no_other_process(tmp_path: Path, runner: str) -> None:
    """A setsid'd grandchild looked for the report's descriptor in every process of the
    sandbox and ptraced the runner's shell to rewrite the report after the runner wrote
    it."""
    files = {"fizz.py": (RED_TEAM / "ptrace_shell_fizz.py.txt").read_bytes()}
    report = fizz_grade(tmp_path, runner, files)
    assert report["verdict"] != "verified_complete", report


@pytest.mark.skipif(shutil.which("gcc") is None, reason="no gcc to build the extension")
@pytest.mark.parametrize("runner", ["unittest", "pytest"])
def test_a_package_init_that_is_an_extension_runs_in_the_solution_process(
    tmp_path: Path, runner: str
) -> None:
    built = tmp_path / "build"
    built.mkdir()
    suffix = importlib.machinery.EXTENSION_SUFFIXES[0]
    target = built / f"__init__{suffix}"
    include = sysconfig.get_paths()["include"]
    done = subprocess.run(
        ["gcc", "-shared", "-fPIC", f"-I{include}", "-o", str(target),
         str(RED_TEAM / "ext_init.c")],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    if done.returncode != 0:
        pytest.skip(f"the extension does not build here: {done.stderr[:200]}")
    report = fizz_grade(tmp_path, runner, {f"fizz/__init__{suffix}": target.read_bytes()})
    assert report["verdict"] != "verified_complete", report
