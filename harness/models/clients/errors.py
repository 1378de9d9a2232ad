"""What one failed attempt was, whether it is worth another, and how to say so without
leaking a credential.

A provider's error text can quote the key it was given (OpenAI's 401 names a masked
prefix of it), a proxy can echo headers, and exception text ends up in logs, the run
record and the terminal. So every message that leaves a client passes `scrub` first.
"""

from __future__ import annotations

import email.utils
import math
import re
import time
from collections.abc import Iterable, Mapping

from harness.models.interface import ErrorKind, Usage
from harness.secrets import credential_items, harness_secrets

REDACTED = "[REDACTED]"
MAX_MESSAGE_CHARS = 400

# Credential shapes worth removing even when we do not know the value: provider keys
# (sk-…, sk-ant-…, sk-proj-…, masked forms with *), bearer tokens, key headers.
_SECRET_SHAPES = (
    re.compile(r"\b(?:sk|rk|pk)-[A-Za-z0-9_\-*.]{6,}"),
    re.compile(r"(?i)\bbearer\s+[^\s\"',;]+"),
    re.compile(r"(?i)\b(x-api-key|api[_-]?key|authorization)(\"?\s*[:=]\s*\"?)[^\s\"',;]+"),
)
_MIN_SECRET_CHARS = 8
# A masked echo keeps the key's first characters; only long values (real keys) are
# matched by prefix, so a short secret cannot blank out ordinary words.
_PREFIX_CHARS = 8
_PREFIX_MIN_SECRET_CHARS = 20

RETRYABLE: frozenset[ErrorKind] = frozenset(
    {"rate_limited", "server_error", "connection", "timeout"}
)


def env_secrets(environ: Mapping[str, str] | None = None) -> list[str]:
    """The values of the environment's credentials (`harness.secrets.names`)."""
    return [value for _, value in credential_items(environ)]


def known_secrets(secrets: Iterable[str] = ()) -> list[str]:
    """The given secrets and every one the harness knows (its environment's and the keys
    it holds, `harness.secrets`), long enough to be keys, longest first."""
    known = {s for s in (*secrets, *harness_secrets().values()) if len(s) >= _MIN_SECRET_CHARS}
    return sorted(known, key=len, reverse=True)


def scrub(text: str, secrets: Iterable[str] = ()) -> str:
    """`text` without credentials: the given secrets and those in the environment, any
    token that starts like one of them (masked echoes such as `sk-abcd****wxyz`), and
    anything shaped like a key or an authorization header."""
    out = text
    for secret in known_secrets(secrets):
        out = out.replace(secret, REDACTED)
        if len(secret) >= _PREFIX_MIN_SECRET_CHARS:
            prefix = re.escape(secret[:_PREFIX_CHARS])
            out = re.sub(prefix + r"[^\s\"',;]*", REDACTED, out)
    out = _SECRET_SHAPES[0].sub(REDACTED, out)
    out = _SECRET_SHAPES[1].sub(REDACTED, out)
    out = _SECRET_SHAPES[2].sub(lambda m: m.group(1) + m.group(2) + REDACTED, out)
    return out


def short(text: str, limit: int = MAX_MESSAGE_CHARS) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


class AttemptFailed(Exception):
    """One attempt failed. Raised inside a client's attempt; the retry loop decides."""

    def __init__(
        self,
        kind: ErrorKind,
        message: str,
        *,
        status: int | None = None,
        retry_after_s: float | None = None,
        usage: Usage | None = None,
    ) -> None:
        super().__init__(message)
        self.kind: ErrorKind = kind
        self.message = message
        self.status = status
        self.retry_after_s = retry_after_s
        self.usage = usage

    @property
    def retryable(self) -> bool:
        return self.kind in RETRYABLE


def kind_for_status(status: int) -> ErrorKind:
    if status == 429:
        return "rate_limited"
    if status in (401, 403):
        return "auth"
    if status >= 500 or status in (408, 409):
        return "server_error"
    return "bad_request"


def retry_after(headers: Mapping[str, str], *, now: float | None = None) -> float | None:
    """Seconds the server asked us to wait: `retry-after-ms` (OpenAI), `retry-after` in
    seconds or as an HTTP date. None when absent or unreadable; never negative."""
    lowered = {k.lower(): v for k, v in headers.items()}
    raw_ms = lowered.get("retry-after-ms")
    if raw_ms is not None:
        try:
            value = float(raw_ms) / 1000
        except ValueError:
            value = math.nan
        if math.isfinite(value):
            return max(0.0, value)
    raw = lowered.get("retry-after")
    if raw is None:
        return None
    try:
        value = float(raw)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(raw).timestamp()
        except (TypeError, ValueError, IndexError, OverflowError):
            return None
        value = when - (time.time() if now is None else now)
    return max(0.0, value) if math.isfinite(value) else None
