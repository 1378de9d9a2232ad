"""The code under test in a process of its own; the tests reach it through proxies.

A runner-aware check runs the task's tests, which are trusted (restored from the
template), in the grader's runner process (`ilh_runner.py`). The agent's modules are not:
code imported into that process could read the runner's frames, its secret and its
report, whatever the runner guards (a `sys.setprofile` hook did, red team of issue 9).
So the runner starts this file as a second process, the *solution process*, and installs
an import finder: a test that imports one of the agent's modules gets a proxy, and every
use of it (an attribute, a call, an iteration, an operator) is a request over a socket
pair, answered by the solution process, where the real module lives.

What crosses the socket is data, never code:

* plain values (None, bool, int, float, str, bytes, lists, tuples, dicts, sets, complex,
  Decimal, Fraction, dates and times, paths, named tuples) are rebuilt from their builtin
  types: a subclass arrives as its base value, so a `str` subclass equal to anything
  arrives as the plain string it holds;
* any other object stays where it lives and the peer gets a handle (a `Proxy`); the
  exception classes of the solution arrive as local subclasses of their builtin base,
  so `pytest.raises(module.Error)` works;
* exceptions cross as their class, arguments and text; an exit (`SystemExit`, …)
  raised by the solution arrives as a `RemoteError`, never as the runner's own exit.

What the test process decides stays with it: a proxy equals only another proxy of the
same peer (`==` with a plain value is False, orders are refused), and `x in proxy`
iterates the proxy and compares here. The test process serves the solution only
callbacks on the objects the tests handed it: calls, public attributes (no `_` names),
iteration; modules and the runners' own objects are never served. The runner makes
itself non-dumpable before starting the solution process, so a process of the same user
cannot read its memory, and it writes its report to a private file descriptor.

This file runs standalone (`python -I -B ilh_bridge.py FD ROOT` serves), and is imported
by `ilh_runner.py` for the test side; it imports nothing of the harness.
"""

from __future__ import annotations

import base64
import builtins
import contextlib
import datetime
import decimal
import fractions
import importlib
import importlib.abc
import importlib.machinery
import json
import operator
import os
import pathlib
import socket
import struct
import sys
import threading
import types
from collections import namedtuple
from collections.abc import Callable, Sequence
from typing import Any

#: Largest message either side accepts, and deepest nesting of a value.
MAX_FRAME = 64 * 1024 * 1024
MAX_DEPTH = 200
_HEADER = struct.Struct(">I")
_NAME_LIMIT = 200

_BINARY = frozenset(
    {"add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "matmul", "and_", "or_",
     "xor", "lshift", "rshift"}
)  # fmt: skip
_UNARY = frozenset({"neg", "pos", "abs", "invert", "index"})
_ORDER = frozenset({"eq", "ne", "lt", "le", "gt", "ge"})
#: What the test process serves on the objects it handed the solution (see the docstring).
_SERVED_TO_SOLUTION = frozenset(
    {"call", "getattr", "iter", "next", "len", "repr", "str", "bool", "hash", "getitem",
     "format"}
)  # fmt: skip
#: Objects of these modules are the runners' own: never served to the solution. The
#: runner runs as `_ilh_runner`, not `__main__`: `__main__` is a check script's (kind
#: `script`), whose callbacks the solution may call as under `python check.py`.
_RUNNER_MODULES = ("_pytest", "pytest", "pluggy", "unittest", "_ilh_")


class BridgeError(RuntimeError):
    """The solution process broke the protocol, or is gone."""


class RemoteError(RuntimeError):
    """The solution raised something that is not an `Exception` (an exit, an interrupt)."""


def _is_name(value: object) -> bool:
    return isinstance(value, str) and 0 < len(value) <= _NAME_LIMIT and value.isidentifier()


def _builtin_class(name: object) -> type | None:
    value = getattr(builtins, name, None) if isinstance(name, str) else None
    return value if isinstance(value, type) else None


class Proxy:
    """An object that lives in the peer's process; every use of it is a request."""

    __slots__ = ("__weakref__", "_ilh_id", "_ilh_peer")

    _ilh_peer: Peer
    _ilh_id: int

    def __init__(self, peer: Peer, handle: int) -> None:
        object.__setattr__(self, "_ilh_peer", peer)
        object.__setattr__(self, "_ilh_id", handle)

    def _ilh(self, op: str, *args: object) -> Any:
        return self._ilh_peer.request(op, self, *args)

    def __getattr__(self, name: str) -> Any:
        if not _askable(name):
            raise AttributeError(name)
        return self._ilh("getattr", name)

    def __setattr__(self, name: str, value: object) -> None:
        self._ilh("setattr", name, value)

    def __delattr__(self, name: str) -> None:
        self._ilh("delattr", name)

    def __dir__(self) -> list[str]:
        names = self._ilh("dir")
        return [n for n in names if isinstance(n, str)] if isinstance(names, list) else []

    def __call__(self, *args: object, **kwargs: object) -> Any:
        return self._ilh("call", list(args), kwargs)

    def __iter__(self) -> Any:
        return self._ilh("iter")

    def __next__(self) -> Any:
        return self._ilh("next")

    def __len__(self) -> int:
        return _int(self._ilh("len"))

    def __bool__(self) -> bool:
        return self._ilh("bool") is True

    def __hash__(self) -> int:
        return _int(self._ilh("hash"))

    def __repr__(self) -> str:
        try:
            text = self._ilh("repr")
        except Exception:
            text = None
        return text if isinstance(text, str) else f"<object of the solution #{self._ilh_id}>"

    def __str__(self) -> str:
        text = self._ilh("str")
        return text if isinstance(text, str) else repr(self)

    def __format__(self, spec: str) -> str:
        text = self._ilh("format", spec)
        if not isinstance(text, str):
            raise TypeError("format() of an object of the solution gave no string")
        return text

    def __getitem__(self, key: object) -> Any:
        return self._ilh("getitem", key)

    def __setitem__(self, key: object, value: object) -> None:
        self._ilh("setitem", key, value)

    def __delitem__(self, key: object) -> None:
        self._ilh("delitem", key)

    def __contains__(self, value: object) -> bool:
        # Decided here, over the items: a container of the solution that says yes to
        # anything must not decide a membership the tests assert.
        return any(item is value or item == value for item in self)

    def __enter__(self) -> Any:
        return self._ilh("method", "__enter__", [], {})

    def __exit__(self, *exc: object) -> Any:
        return self._ilh("method", "__exit__", [None, None, None], {})

    def __fspath__(self) -> str:
        path = self._ilh("method", "__fspath__", [], {})
        if not isinstance(path, str | bytes):
            raise TypeError("__fspath__ of an object of the solution gave no path")
        return path if isinstance(path, str) else os.fsdecode(path)

    def __int__(self) -> int:
        return _int(self._ilh("method", "__int__", [], {}))

    def __index__(self) -> int:
        return _int(self._ilh("unary", "index"))

    def __float__(self) -> float:
        value = self._ilh("method", "__float__", [], {})
        if type(value) is not float:
            raise TypeError("__float__ of an object of the solution gave no float")
        return value

    def __instancecheck__(self, instance: object) -> bool:
        return self._ilh("isinstance", instance) is True

    def __subclasscheck__(self, subclass: object) -> bool:
        return self._ilh("issubclass", subclass) is True

    def __reduce__(self) -> Any:
        raise TypeError("an object of the solution cannot be pickled in the test process")

    # Equality and order only between objects of the same peer (see the docstring).
    def _order(self, name: str, other: object) -> Any:
        if isinstance(other, Proxy) and other._ilh_peer is self._ilh_peer:
            return self._ilh_peer.request("order", name, self, other)
        return NotImplemented

    def __eq__(self, other: object) -> Any:
        if other is self:
            return True
        return self._order("eq", other)

    def __ne__(self, other: object) -> Any:
        if other is self:
            return False
        return self._order("ne", other)

    def __lt__(self, other: object) -> Any:
        return self._order("lt", other)

    def __le__(self, other: object) -> Any:
        return self._order("le", other)

    def __gt__(self, other: object) -> Any:
        return self._order("gt", other)

    def __ge__(self, other: object) -> Any:
        return self._order("ge", other)

    def __neg__(self) -> Any:
        return self._ilh("unary", "neg")

    def __pos__(self) -> Any:
        return self._ilh("unary", "pos")

    def __abs__(self) -> Any:
        return self._ilh("unary", "abs")

    def __invert__(self) -> Any:
        return self._ilh("unary", "invert")


def _binary(name: str, reflected: bool) -> Callable[[Proxy, object], Any]:
    def method(self: Proxy, other: object) -> Any:
        left, right = (other, self) if reflected else (self, other)
        result = self._ilh_peer.request("binary", name, left, right)
        mixed = not (isinstance(other, Proxy) and other._ilh_peer is self._ilh_peer)
        if mixed and not isinstance(result, Proxy):
            # An object of the solution given a value of the tests (`expected - obj`,
            # as `assertAlmostEqual` and `pytest.approx` compute) must not answer with a
            # plain number of its choosing: that is equality by another name.
            raise TypeError(
                f"an object of the solution answered {name} with a value of the tests "
                "by a plain value"
            )
        return result

    return method


for _op in _BINARY:
    _dunder = _op.rstrip("_")
    setattr(Proxy, f"__{_dunder}__", _binary(_op, False))
    setattr(Proxy, f"__r{_dunder}__", _binary(_op, True))


#: A module's attributes the import system owns: never asked of the solution (a module
#: without `__path__` is no package, whatever the solution would answer).
_MODULE_LOCAL = frozenset(
    {"__path__", "__file__", "__spec__", "__loader__", "__cached__", "__package__",
     "__builtins__", "__dict__", "__class__", "__name__"}
)  # fmt: skip


class ProxyModule(types.ModuleType):
    """A module of the solution as the tests see it: attributes are requests; the
    import system's own attributes (`__spec__`, `__path__`, submodules) stay here."""

    _ilh_peer: Peer
    _ilh_id: int

    def __getattr__(self, name: str) -> Any:
        if name in _MODULE_LOCAL or not _askable(name):
            raise AttributeError(name)
        return self._ilh_peer.request("getattr", self, name)

    def __setattr__(self, name: str, value: object) -> None:
        local = (name.startswith("__") and name.endswith("__")) or name.startswith("_ilh_")
        if local or isinstance(value, types.ModuleType):
            object.__setattr__(self, name, value)
        else:
            self._ilh_peer.request("setattr", self, name, value)

    def __delattr__(self, name: str) -> None:
        if name in self.__dict__:
            object.__delattr__(self, name)
        else:
            self._ilh_peer.request("delattr", self, name)

    def __dir__(self) -> list[str]:
        names = self._ilh_peer.request("dir", self)
        remote = [n for n in names if isinstance(n, str)] if isinstance(names, list) else []
        return sorted(set(remote) | set(self.__dict__))


#: The special attributes the tests may read from an object of the solution. Others are
#: refused here: libraries look up protocols on the instance (NumPy's
#: `__array_interface__` carries a memory address the solution would choose).
_ASKABLE_SPECIAL = frozenset(
    {"__name__", "__qualname__", "__doc__", "__module__", "__all__", "__version__",
     "__annotations__"}
)  # fmt: skip


def _askable(name: str) -> bool:
    if name.startswith("_ilh_"):
        return False
    return not (name.startswith("__") and name.endswith("__")) or name in _ASKABLE_SPECIAL


def _int(value: object) -> int:
    if type(value) is not int:
        raise TypeError("the solution answered with something that is not an int")
    return value


class Peer:
    """One end of the socket: encodes, decodes, requests and serves.

    `imports`: this end imports modules for the other (the solution process).
    `guarded`: this end holds what must not be reached (the test process): it serves
    only `_SERVED_TO_SOLUTION` on the objects it handed over, and decodes strictly."""

    def __init__(self, sock: socket.socket, *, imports: bool, guarded: bool) -> None:
        self.sock = sock
        self.imports = imports
        self.guarded = guarded
        self.exported: dict[int, object] = {}
        self.export_ids: dict[int, int] = {}
        self.proxies: dict[int, object] = {}
        self.proxy_ids: dict[int, int] = {}
        self.broken: str | None = None
        self._next = 1
        self._named_tuples: dict[tuple[str, tuple[str, ...]], type] = {}
        # One exchange on the socket at a time: a request's message and its reply (and
        # the callbacks served between) belong together. Threads of a check calling the
        # agent's module at once interleaved their frames, and an honest check failed at
        # random. Re-entrant: a callback served inside an exchange may request again.
        self._exchange = threading.RLock()

    # ------------------------------------------------------------------ wire
    def _send(self, message: object) -> None:
        data = json.dumps(message, separators=(",", ":")).encode("utf-8")
        if len(data) > MAX_FRAME:
            raise BridgeError("a message over the size limit")
        self.sock.sendall(_HEADER.pack(len(data)) + data)

    def _exact(self, size: int) -> bytes:
        chunks: list[bytes] = []
        while size:
            chunk = self.sock.recv(min(size, 1 << 20))
            if not chunk:
                raise BridgeError("the solution process is gone")
            chunks.append(chunk)
            size -= len(chunk)
        return b"".join(chunks)

    def _receive(self) -> Any:
        (size,) = _HEADER.unpack(self._exact(_HEADER.size))
        if size > MAX_FRAME:
            raise BridgeError("a message over the size limit")
        try:
            return json.loads(self._exact(size))
        except (ValueError, RecursionError) as exc:
            raise BridgeError(f"an unreadable message ({type(exc).__name__})") from None

    def _fail(self, why: str) -> BridgeError:
        self.broken = self.broken or why
        return BridgeError(self.broken)

    # --------------------------------------------------------------- request
    def request(self, op: str, *args: object) -> Any:
        """Ask the peer to perform `op` and wait, serving the peer's own requests (its
        callbacks) meanwhile."""
        with self._exchange:
            return self._request(op, args)

    def _request(self, op: str, args: tuple[object, ...]) -> Any:
        if self.broken is not None:
            raise BridgeError(self.broken)
        try:
            self._send({"op": op, "a": [self.encode(a) for a in args]})
            while True:
                message = self._receive()
                if not isinstance(message, dict):
                    raise self._fail("a message that is not an object")
                if "op" in message:
                    self._serve(message)
                elif "ok" in message:
                    return self.decode(message["ok"])
                elif "exc" in message:
                    failure = self._exception(message["exc"])
                    break
                else:
                    raise self._fail("a message of no known kind")
        except BridgeError as exc:
            raise self._fail(str(exc)) from None
        except OSError as exc:
            raise self._fail(f"the solution process is gone ({exc.strerror})") from None
        # Raised outside the `try`: the peer's OSError is the test's to see, not a
        # broken connection.
        raise failure

    def serve_forever(self) -> None:
        """The solution process's loop: serve until the test process hangs up."""
        while True:
            try:
                message = self._receive()
            except BridgeError:
                return
            if isinstance(message, dict) and "op" in message:
                try:
                    self._serve(message)
                except (BridgeError, OSError):
                    return

    def _serve(self, message: dict[str, Any]) -> None:
        try:
            op, raw = message.get("op"), message.get("a")
            if not isinstance(op, str) or not isinstance(raw, list):
                raise self._fail("a request of no known form")
            args = [self.decode(a) for a in raw]
            reply: dict[str, Any] = {"ok": self.encode(self._perform(op, args))}
        except BridgeError:
            raise
        except Exception as exc:
            reply = {"exc": self._encode_exception(exc)}
        except BaseException as exc:
            if self.guarded:  # the test process's own Ctrl-C or exit stays its own
                raise
            reply = {"exc": self._encode_exception(exc)}
        if not self.guarded:
            # What the solution printed reaches the check's output before the test goes
            # on, and at all: the runner ends this process with SIGKILL, and its stdout,
            # a pipe or a file in a check, kept the block it buffered (`python3 -c 'from
            # calc import main; main()' > got` wrote nothing; attack9).
            for stream in (sys.stdout, sys.stderr):
                with contextlib.suppress(Exception):
                    stream.flush()
        self._send(reply)

    def _perform(self, op: str, args: list[Any]) -> object:
        if self.guarded:
            if op not in _SERVED_TO_SOLUTION:
                raise PermissionError(f"the test process does not serve {op!r}")
            target = args[0] if args else None
            if isinstance(target, types.ModuleType) or _runner_object(target):
                raise PermissionError("the test process does not serve this object")
            if op == "getattr" and (not isinstance(args[1], str) or args[1].startswith("_")):
                raise PermissionError("the test process serves public attributes only")
        if op == "import":
            if not self.imports or not isinstance(args[0], str):
                raise PermissionError("no imports served here")
            where = args[1] if len(args) > 1 else None
            if isinstance(where, str) and where not in sys.path:
                sys.path.append(where)  # where the tests' process found it (a conftest's path)
            return importlib.import_module(args[0])
        return _OPERATIONS[op](*args)

    # ------------------------------------------------------------ exceptions
    def _encode_exception(self, exc: BaseException) -> list[object]:
        try:
            arguments = self.encode(list(exc.args))
        except Exception:
            arguments = ["list", []]
        try:
            text = str(exc)
        except Exception:
            text = type(exc).__name__
        return [self.encode(type(exc)), arguments, text[:10_000]]

    def _exception(self, data: object) -> BaseException:
        if not (isinstance(data, list) and len(data) == 3 and isinstance(data[2], str)):
            return self._fail("an unreadable exception")
        cls = self.decode(data[0])
        if not (isinstance(cls, type) and issubclass(cls, BaseException)):
            return self._fail("an exception that is not an exception class")
        text = data[2]
        if not issubclass(cls, Exception):
            return RemoteError(f"the solution raised {cls.__name__}: {text}"[:2000])
        try:
            arguments = self.decode(data[1])
            return cls(*arguments) if isinstance(arguments, list) else cls(text)
        except Exception:
            try:
                return cls(text)
            except Exception:
                return RemoteError(f"the solution raised {cls.__name__}: {text}"[:2000])

    # ---------------------------------------------------------------- encode
    def encode(self, value: object, depth: int = 0) -> object:
        if depth > MAX_DEPTH:
            raise BridgeError("a value nested too deep")
        if value is None or value is True or value is False:
            return value
        kind = type(value)
        if kind is int or kind is str or kind is float:
            return value
        mine = self.proxy_ids.get(id(value))
        if mine is not None and self.proxies.get(mine) is value:
            return ["mine", mine]
        if isinstance(value, Proxy | ProxyModule):
            raise BridgeError("an object of another peer")
        deeper = depth + 1
        if isinstance(value, int):
            return int(value)
        if isinstance(value, str):
            return str.__str__(value)
        if isinstance(value, float):
            return float.__float__(value)
        if isinstance(value, bytes | bytearray | memoryview):
            tag = "bytearray" if isinstance(value, bytearray) else "bytes"
            return [tag, base64.b64encode(bytes(value)).decode("ascii")]
        if isinstance(value, tuple):
            items = [self.encode(v, deeper) for v in value]
            fields = getattr(type(value), "_fields", None)
            if isinstance(fields, tuple) and all(_is_name(f) for f in fields):
                return ["nt", type(value).__name__, list(fields), items]
            return ["tuple", items]
        if isinstance(value, list):
            return ["list", [self.encode(v, deeper) for v in value]]
        if isinstance(value, dict):
            pairs = [[self.encode(k, deeper), self.encode(v, deeper)] for k, v in value.items()]
            return ["dict", pairs]
        if isinstance(value, set | frozenset):
            tag = "frozenset" if isinstance(value, frozenset) else "set"
            return [tag, [self.encode(v, deeper) for v in value]]
        if isinstance(value, complex):
            return ["complex", value.real, value.imag]
        if isinstance(value, decimal.Decimal):
            return ["decimal", str(value)]
        if isinstance(value, fractions.Fraction):
            return ["fraction", value.numerator, value.denominator]
        if isinstance(value, pathlib.PurePath):
            return ["path", str(value)]
        if isinstance(value, range):
            return ["range", value.start, value.stop, value.step]
        if isinstance(value, datetime.timedelta):
            return ["timedelta", value.days, value.seconds, value.microseconds]
        for tag, cls in _TIMES:
            if isinstance(value, cls):
                return [tag, value.isoformat()]  # type: ignore[attr-defined]
        if isinstance(value, type):
            if _builtin_class(value.__name__) is value:
                return ["builtin", value.__name__]
            if issubclass(value, BaseException):
                base = next(c for c in value.__mro__ if _builtin_class(c.__name__) is c)
                return ["exc", self._export(value), value.__name__[:_NAME_LIMIT], base.__name__]
        if isinstance(value, types.ModuleType):
            return ["module", self._export(value), value.__name__[:_NAME_LIMIT]]
        return ["h", self._export(value)]

    def _export(self, value: object) -> int:
        handle = self.export_ids.get(id(value))
        if handle is None or self.exported.get(handle) is not value:
            handle, self._next = self._next, self._next + 1
            self.exported[handle] = value
            self.export_ids[id(value)] = handle
        return handle

    # ---------------------------------------------------------------- decode
    def decode(self, data: object, depth: int = 0) -> Any:
        try:
            return self._decode(data, depth)
        except BridgeError:
            raise
        except (
            TypeError, ValueError, KeyError, IndexError, OverflowError, ArithmeticError,
            SyntaxError,  # a named tuple whose names collide once normalized
        ):  # fmt: skip
            raise self._fail("a value of no known form") from None

    def _decode(self, data: object, depth: int) -> Any:
        if data is None or type(data) in (bool, int, float, str):
            return data
        if depth > MAX_DEPTH:
            raise BridgeError("a value nested too deep")
        if type(data) is not list or not data or type(data[0]) is not str:
            raise ValueError("no tag")
        tag, rest, deeper = data[0], data[1:], depth + 1

        def items(raw: object) -> list[Any]:
            if type(raw) is not list:
                raise ValueError("no items")
            return [self._decode(v, deeper) for v in raw]

        if tag == "list":
            return items(rest[0])
        if tag == "tuple":
            return tuple(items(rest[0]))
        if tag == "set":
            return set(items(rest[0]))
        if tag == "frozenset":
            return frozenset(items(rest[0]))
        if tag == "dict":
            return {k: v for k, v in (_pair(p, self, deeper) for p in _list(rest[0]))}
        if tag in ("bytes", "bytearray"):
            raw = base64.b64decode(_str(rest[0]), validate=True)
            return bytearray(raw) if tag == "bytearray" else raw
        if tag == "nt":
            name, fields, values = rest[0], rest[1], items(rest[2])
            if not _is_name(name) or type(fields) is not list or not all(map(_is_name, fields)):
                raise ValueError("a named tuple of no known form")
            return self._named_tuple(name, tuple(fields))(*values)
        if tag == "complex":
            return complex(_number(rest[0]), _number(rest[1]))
        if tag == "decimal":
            return decimal.Decimal(_str(rest[0]))
        if tag == "fraction":
            return fractions.Fraction(_int(rest[0]), _int(rest[1]))
        if tag == "path":
            return pathlib.Path(_str(rest[0]))
        if tag == "range":
            return range(_int(rest[0]), _int(rest[1]), _int(rest[2]))
        if tag == "timedelta":
            return datetime.timedelta(_int(rest[0]), _int(rest[1]), _int(rest[2]))
        for name, cls in _TIMES:
            if tag == name:
                return cls.fromisoformat(_str(rest[0]))  # type: ignore[attr-defined]
        if tag == "builtin":
            found = _builtin_class(rest[0])
            if found is None:
                raise ValueError("no such builtin class")
            return found
        if tag == "mine":
            handle = _int(rest[0])
            if handle not in self.exported:
                raise ValueError("an unknown handle")
            return self.exported[handle]
        if tag in ("h", "exc", "module"):
            return self._proxy(tag, _int(rest[0]), rest[1:])
        raise ValueError("an unknown tag")

    def _proxy(self, tag: str, handle: int, rest: Sequence[object]) -> object:
        known = self.proxies.get(handle)
        if known is not None:
            return known
        made: object
        if tag == "exc":
            name = rest[0] if _is_name(rest[0]) else "SolutionError"
            base = _builtin_class(rest[1])
            if base is None or not issubclass(base, BaseException):
                raise ValueError("an exception class of no known base")
            if not issubclass(base, Exception):
                base = RemoteError
            made = type(str(name), (base,), {"__module__": "solution", "_ilh_id": handle})
        elif tag == "module":
            module = ProxyModule(_str(rest[0]))
            object.__setattr__(module, "_ilh_peer", self)
            object.__setattr__(module, "_ilh_id", handle)
            made = module
        else:
            made = Proxy(self, handle)
        self.proxies[handle] = made
        self.proxy_ids[id(made)] = handle
        return made

    def _named_tuple(self, name: str, fields: tuple[str, ...]) -> type:
        key = (name, fields)
        if key not in self._named_tuples:
            self._named_tuples[key] = _make_named_tuple(name, fields)
        return self._named_tuples[key]


#: Not called as `namedtuple(...)`: the names come from the peer (validated identifiers).
_make_named_tuple: Callable[[str, tuple[str, ...]], type] = namedtuple

_TIMES: tuple[tuple[str, type], ...] = (
    ("datetime", datetime.datetime),  # before date: a datetime is a date
    ("date", datetime.date),
    ("time", datetime.time),
)


def _list(value: object) -> list[Any]:
    if type(value) is not list:
        raise ValueError("not a list")
    return value


def _str(value: object) -> str:
    if type(value) is not str:
        raise ValueError("not a string")
    return value


def _number(value: object) -> float:
    if type(value) not in (int, float):
        raise ValueError("not a number")
    return float(value)  # type: ignore[arg-type]


def _pair(raw: object, peer: Peer, depth: int) -> tuple[Any, Any]:
    pair = _list(raw)
    if len(pair) != 2:
        raise ValueError("not a pair")
    return peer._decode(pair[0], depth), peer._decode(pair[1], depth)


def _runner_object(value: object) -> bool:
    """Is `value` (or, for a class or function, what defined it) the runners' own?"""
    owners = [getattr(type(value), "__module__", None)]
    if isinstance(value, type | types.FunctionType | types.MethodType | types.BuiltinFunctionType):
        owners.append(getattr(value, "__module__", None))
    if isinstance(value, types.MethodType):
        owners.append(getattr(type(value.__self__), "__module__", None))
    for module in owners:
        if not isinstance(module, str) or module.startswith("unittest.mock"):
            continue
        if module.split(".")[0].startswith(_RUNNER_MODULES):
            return True
    return False


def _call(target: Any, args: list[Any], kwargs: dict[str, Any]) -> object:
    if not all(isinstance(k, str) for k in kwargs):
        raise TypeError("keyword names must be strings")
    return target(*args, **kwargs)


def _method(target: Any, name: str, args: list[Any], kwargs: dict[str, Any]) -> object:
    return _call(getattr(target, name), args, kwargs)


def _binary_op(name: str, left: Any, right: Any) -> object:
    if name not in _BINARY:
        raise TypeError("no such operator")
    return getattr(operator, name)(left, right)


def _order_op(name: str, left: Any, right: Any) -> object:
    if name not in _ORDER:
        raise TypeError("no such comparison")
    return getattr(operator, name)(left, right)


def _unary_op(target: Any, name: str) -> object:
    if name not in _UNARY:
        raise TypeError("no such operator")
    return getattr(operator, name)(target)


_OPERATIONS: dict[str, Callable[..., object]] = {
    "getattr": getattr,
    "setattr": setattr,
    "delattr": delattr,
    "dir": lambda target: list(dir(target)),
    "call": _call,
    "method": _method,
    "iter": iter,
    "next": next,
    "len": len,
    "bool": bool,
    "hash": hash,
    "repr": repr,
    "str": str,
    "format": format,
    "getitem": operator.getitem,
    "setitem": operator.setitem,
    "delitem": operator.delitem,
    "binary": _binary_op,
    "order": _order_op,
    "unary": _unary_op,
    "isinstance": lambda cls, value: isinstance(value, cls),
    "issubclass": lambda cls, value: issubclass(value, cls),
}


# ----------------------------------------------------------- the test side's imports
class SolutionFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Serves the agent's modules of the tree as proxies (first on `sys.meta_path`).

    A module is the agent's when the file it would load from is inside `root` and is
    not one of `trusted` (the tree's test files, restored from the template: imported
    here, normally). The standard library and modules installed outside the tree are
    never served from it."""

    def __init__(
        self,
        peer: Peer,
        root: str,
        trusted: frozenset[str],
        task_files: frozenset[str] | None = None,
    ) -> None:
        """`task_files`: in a free check (whose tree a program it ran may have written
        to), the tree's files that are the task's; any other module of the tree named
        like a standard or installed one is never taken for it (`_shadowing`)."""
        self.peer = peer
        self.root = os.path.realpath(root)
        self.trusted = trusted
        self.task_files = task_files

    def _inside(self, path: str) -> bool:
        return path == self.root or path.startswith(self.root.rstrip(os.sep) + os.sep)

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: object = None
    ) -> importlib.machinery.ModuleSpec | None:
        top = fullname.partition(".")[0]
        if self.task_files is not None and "." not in fullname:
            shadowed = self._shadowing(fullname)
            if shadowed is not None:
                return shadowed
        if top in sys.stdlib_module_names or top in sys.builtin_module_names:
            return None
        # Decided by where the module would really load from, whatever finds it: a
        # package at the tree's root reached from `/` (pytest's prepend mode with a
        # root `__init__.py`), an `__init__` that is an extension module, a `.so`
        # beside a test: every file of the tree but the trusted ones is the agent's.
        found = importlib.machinery.PathFinder.find_spec(fullname, path)
        if found is None:
            return None
        origin = found.origin
        if origin is None or not found.has_location:
            return None  # a namespace package: a folder, no code of its own
        file = os.path.realpath(origin)
        if not self._inside(file):
            return None
        if os.path.relpath(file, self.root).replace(os.sep, "/") in self.trusted:
            return None
        package = found.submodule_search_locations is not None
        spec = importlib.machinery.ModuleSpec(fullname, self, origin=origin, is_package=package)
        if package:
            spec.submodule_search_locations = list(found.submodule_search_locations or ())
        spec.has_location = True
        # Where the solution process finds it: the folder above a top-level module.
        folder = os.path.dirname(origin)
        spec.loader_state = os.path.dirname(folder) if package else folder
        return spec

    def _shadowing(self, fullname: str) -> importlib.machinery.ModuleSpec | None:
        """The standard or installed module `fullname` when a file of the tree that is
        not the task's would be imported in its place; None when none would (the usual
        rules decide). Why: in a free check the tree is first on the import path, and the
        agent's build step, run by the same check, wrote `statistics.py` (`os._exit(0)`)
        or `numpy.py` (an `assert_allclose` doing nothing) there after the tree was
        cleaned; a restored test importing it ran the agent's code in this process, or
        asserted nothing, and passed (attack7)."""
        if fullname in sys.builtin_module_names or self.task_files is None:
            return None  # built in: the built-in finder, before any path, takes it
        found = importlib.machinery.PathFinder.find_spec(fullname, None)
        if found is None or found.origin is None:
            return None
        file = os.path.realpath(found.origin)
        if not self._inside(file):
            return None
        if os.path.relpath(file, self.root).replace(os.sep, "/") in self.task_files:
            return None
        outside = [e for e in sys.path if not self._inside(os.path.realpath(e or "."))]
        installed = importlib.machinery.PathFinder.find_spec(fullname, outside)
        if installed is None and fullname in sys.stdlib_module_names:
            raise ImportError(f"{fullname}: a module of the tree named like a standard one")
        return installed

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        where = spec.loader_state if "." not in spec.name else None
        try:
            module = self.peer.request("import", spec.name, where)
        except BridgeError as exc:
            raise ImportError(f"{spec.name}: the solution process: {exc}") from None
        except Exception as exc:
            raise ImportError(
                f"{spec.name} failed to import: {type(exc).__name__}: {exc}"
            ) from None
        if not isinstance(module, ProxyModule):
            raise ImportError(f"{spec.name}: the solution process answered no module")
        # A module object has its own `__doc__` (None) before any attribute is asked for,
        # so the solution's docstring is fetched once, as data (a check reading
        # `fizz.__doc__` saw None). Anything but a text stays None.
        try:
            doc = self.peer.request("getattr", module, "__doc__")
        except Exception:
            doc = None
        module.__doc__ = doc if type(doc) is str else None
        return module

    def exec_module(self, module: types.ModuleType) -> None:
        return None


def start_solution(root: str, here: str, hidden: Sequence[str] = ()) -> tuple[Peer, int]:
    """Start the solution process (isolated, no bytecode, its own session) serving
    `root`, unable to read the folders `hidden` (see `hide`); the test side's `Peer`
    and the process id."""
    import subprocess

    mine, theirs = socket.socketpair()
    process = subprocess.Popen(
        [
            sys.executable,
            "-I",
            "-B",
            os.path.join(here, "ilh_bridge.py"),
            str(theirs.fileno()),
            root,
            *hidden,
        ],
        cwd=root,
        pass_fds=(theirs.fileno(),),
        start_new_session=True,
        stdin=subprocess.DEVNULL,
    )
    theirs.close()
    return Peer(mine, imports=False, guarded=True), process.pid


# Landlock (linux/landlock.h): the same call numbers on every architecture.
_LANDLOCK_CREATE_RULESET = 444
_LANDLOCK_ADD_RULE = 445
_LANDLOCK_RESTRICT_SELF = 446
_LANDLOCK_RULE_PATH_BENEATH = 1
_FS_EXECUTE, _FS_WRITE_FILE, _FS_READ_FILE = 1 << 0, 1 << 1, 1 << 2
#: Every access right of Landlock's first version (read, write, remove, make …): what
#: the hidden folders are closed to. The rights of a file (not a folder) are the first 3.
_FS_ALL_V1 = (1 << 13) - 1
_FS_OF_A_FILE = _FS_EXECUTE | _FS_WRITE_FILE | _FS_READ_FILE
_PR_SET_NO_NEW_PRIVS = 38


def hide(paths: Sequence[str]) -> str | None:
    """Close the folders `paths` (top-level mounts of the sandbox: the hidden checks, the
    report folder) to this process and every process it starts — no reading, listing,
    running, writing or making files there — with a Landlock domain that leaves every
    other top-level entry as the mounts have it. None when done (or nothing to hide),
    else why not.

    Why: the solution process runs the agent's code in the sandbox of a hidden check,
    where the hidden tests are mounted. It read them (their source, their reference
    `expected()`), special-cased the visible tests' inputs and passed the hidden ones:
    verified complete by checks it was never to see."""
    tops = {
        os.path.basename(os.path.normpath(p))
        for p in paths
        if p and os.path.dirname(os.path.normpath(p)) == "/"
    }
    if not tops:
        return None  # no sandbox mount (an unconfined run, no hidden checks): nothing hidden
    import ctypes
    import stat

    libc = ctypes.CDLL(None, use_errno=True)
    syscall = libc.syscall
    syscall.restype = ctypes.c_long

    class RulesetAttr(ctypes.Structure):
        _fields_ = [("handled_access_fs", ctypes.c_uint64)]

    class PathBeneath(ctypes.Structure):
        _pack_ = 1  # packed in the kernel's header
        _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]

    handled = _FS_ALL_V1
    attr = RulesetAttr(handled)
    ruleset = syscall(
        ctypes.c_long(_LANDLOCK_CREATE_RULESET), ctypes.byref(attr), ctypes.c_size_t(8),
        ctypes.c_uint32(0),
    )  # fmt: skip
    if ruleset < 0:
        return f"no Landlock here (errno {ctypes.get_errno()})"
    try:
        for name in sorted(os.listdir("/")):
            if name in tops:
                continue
            try:
                fd = os.open("/" + name, os.O_PATH | os.O_CLOEXEC)
            except OSError:
                continue
            try:
                folder = stat.S_ISDIR(os.fstat(fd).st_mode)
                rule = PathBeneath(handled if folder else _FS_OF_A_FILE, fd)
                if syscall(
                    ctypes.c_long(_LANDLOCK_ADD_RULE), ctypes.c_int(ruleset),
                    ctypes.c_int(_LANDLOCK_RULE_PATH_BENEATH), ctypes.byref(rule),
                    ctypes.c_uint32(0),
                ) != 0:  # fmt: skip
                    return f"a Landlock rule for /{name} failed (errno {ctypes.get_errno()})"
            finally:
                os.close(fd)
        if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
            return "no_new_privs could not be set"
        if syscall(ctypes.c_long(_LANDLOCK_RESTRICT_SELF), ctypes.c_int(ruleset), 0) != 0:
            return f"the Landlock domain could not be entered (errno {ctypes.get_errno()})"
    finally:
        os.close(ruleset)
    return None


def serve(fd: int, root: str, hidden: Sequence[str] = ()) -> None:
    """The solution process: the tree importable as `python -m` would have it; the
    `hidden` folders unreadable before any of the agent's code runs."""
    problem = hide(hidden)
    if problem is not None:
        # Said in the check's output (the record keeps it; a hidden check's output never
        # reaches the agent): the hidden tests were readable by the code under test.
        print(f"ilh: the hidden checks and the report folder stay open to the code under "
              f"test: {problem}", file=sys.stderr)  # fmt: skip
    sock = socket.socket(fileno=fd)
    os.chdir(root)
    sys.path.insert(0, root)
    Peer(sock, imports=True, guarded=False).serve_forever()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


if __name__ == "__main__":
    serve(int(sys.argv[1]), sys.argv[2], sys.argv[3:])
