"""Which variables of an environment hold credentials, and which of their values are worth
redacting.

Broad on purpose: a non-secret caught here is only replaced by `[REDACTED:NAME]` in what
the harness records and shows, while a secret missed could reach a model provider. The
rule is by name (case-insensitive), plus one by shape for every variable: the password
of a URL with credentials (`postgres://user:pw@host`, a `DATABASE_URL`, a proxy URL).

Values that cannot be secrets are skipped, because redacting them would blank out
ordinary text everywhere: values shorter than `MIN_SECRET_CHARS`, numbers, booleans and
the like, and absolute paths that exist (`SSH_AUTH_SOCK`, a key *file*'s path: the file
is the secret, not its name).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator, Mapping
from typing import Final
from urllib.parse import unquote, urlsplit

MIN_SECRET_CHARS: Final = 8
"""Shorter values are never redacted: they would match ordinary words."""

_CREDENTIAL_NAME = re.compile(
    r"KEY|TOKEN|SECRET|PASSW(?:OR)?D|PASSPHRASE|PWD$|CREDENTIAL|AUTH|COOKIE|SESSION|PRIVATE"
    r"|DSN|CONNECTION_?STRING|CONN_?STR|WEBHOOK|SIGNING|SIGNATURE|SALT|BEARER|JWT|OTP|PIN$",
    re.IGNORECASE,
)
# Names the rule above catches but that never hold credentials (a git author's name
# would otherwise be blanked out of every `git log`).
_NOT_CREDENTIAL_NAME = re.compile(r"AUTHOR|KEYBOARD|KEYMAP|^OLDPWD$|^PWD$", re.IGNORECASE)
_NOT_SECRET_VALUES: Final = frozenset(
    {
        "true",
        "false",
        "yes",
        "no",
        "on",
        "off",
        "none",
        "null",
        "undefined",
        "enabled",
        "disabled",
        "default",
        "unknown",
    }
)
_NUMBER = re.compile(r"[\s\d.,:+-]*")
# A variable named for a file or folder (`ILH_RECORD_KEY_FILE`, the `*_FILE` convention of
# container secrets) holds where the secret is, not the secret: an absolute path there is
# not redacted even before the file exists.
_PATH_NAME = re.compile(r"_(?:FILE|PATH|DIR)$", re.IGNORECASE)
_PLAIN_PATH = re.compile(r"(?:/|~/)[^\s]*")
_URL_WITH_PASSWORD = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^\s/@]*:[^\s/@]+@")


def is_credential_name(name: str) -> bool:
    """True when an environment variable's name says it holds a credential."""
    return bool(_CREDENTIAL_NAME.search(name)) and not _NOT_CREDENTIAL_NAME.search(name)


def worth_redacting(value: str) -> bool:
    """False for values that cannot be secrets (see the module doc)."""
    stripped = value.strip()
    if len(stripped) < MIN_SECRET_CHARS:
        return False
    if stripped.lower() in _NOT_SECRET_VALUES or _NUMBER.fullmatch(stripped):
        return False
    if stripped.startswith("/") and "\n" not in stripped:
        try:
            if os.path.lexists(stripped):
                return False
        except (OSError, ValueError):
            pass
    return True


def url_passwords(value: str) -> Iterator[str]:
    """The passwords of the URLs with credentials in `value` (as written, and decoded)."""
    for match in _URL_WITH_PASSWORD.finditer(value):
        try:
            password = urlsplit(match.group(0) + "host").password
        except ValueError:
            continue
        if password:
            yield password
            yield unquote(password)


def credential_items(environ: Mapping[str, str] | None = None) -> list[tuple[str, str]]:
    """`(name, value)` for every credential in `environ` (default: the process's), in a
    stable order: credential-named variables, then URL passwords found in any variable."""
    env = os.environ if environ is None else environ
    found: list[tuple[str, str]] = []
    for name in sorted(env):
        value = env[name]
        names_a_path = bool(_PATH_NAME.search(name)) and bool(_PLAIN_PATH.fullmatch(value))
        if is_credential_name(name) and worth_redacting(value) and not names_a_path:
            found.append((name, value))
        if "://" in value:
            found.extend((name, pw) for pw in url_passwords(value) if worth_redacting(pw))
    return found
