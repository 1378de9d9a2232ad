"""The harness's own secrets: its environment's credentials and the keys it was given.

One per process, because every exit point needs the same set and most of them (a tool's
output, a log line, a stored event) are far from where a key is read. `harness_secrets()`
is called at each exit point; it re-reads the environment's credential variables each
time (cheap: the environment is compared with the one the set was made from) so a key
set after start-up (a test's `monkeypatch.setenv`, a client built later) is covered too,
and rebuilds the set only when it changed. Keys that do not come from the environment
(an `api_key=` given to a client, a key file read) are added with `register_secret` and
kept for the life of the process.
"""

from __future__ import annotations

import os
import threading
from typing import Any

from harness.secrets.names import credential_items, worth_redacting
from harness.secrets.values import SecretValues

_lock = threading.Lock()
_registered: dict[str, str] = {}  # value -> name
# (the environment it was made from, the set): rebuilt when either changes.
_cached: tuple[dict[Any, Any], SecretValues] | None = None


def register_secret(value: str | None, name: str) -> None:
    """Treat `value` as a secret known as `name` from now on (a key the harness holds).
    Values too short or shaped like non-secrets are ignored (see `harness.secrets.names`)."""
    if not value or not worth_redacting(value):
        return
    global _cached
    with _lock:
        if value not in _registered:
            _registered[value] = name
            _cached = None


def harness_secrets() -> SecretValues:
    """Every secret the harness knows now: credential variables of its environment first
    (so a value is labelled with its variable's name), then registered keys."""
    global _cached
    raw = _environ_raw()  # the cheap part; the rules run when it changed
    with _lock:
        if _cached is not None and _cached[0] == raw:
            return _cached[1]
        items = credential_items(dict(os.environ))
        values = SecretValues([*items, *((name, value) for value, name in _registered.items())])
        _cached = (dict(raw), values)
        return values


def _environ_raw() -> dict[Any, Any]:
    """The environment as `os.environ` keeps it (undecoded: comparing it is one C-level
    dict comparison, 20x cheaper than decoding every variable, and this runs for every
    event recorded and every output shown). `os.environ` is read, not this, to build the
    set; a Python without the attribute compares the decoded copy instead."""
    raw = getattr(os.environ, "_data", None)
    return raw if isinstance(raw, dict) else dict(os.environ)
