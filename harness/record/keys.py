"""The per-user record key: what makes a run's chain head authentic (an HMAC-SHA256).

The hash chain alone proves nothing against someone who can write the store: they can
rewrite an event, re-hash the chain with the public rule and move the head. The head is
therefore authenticated with a secret that lives outside every project and every
sandbox: by default ``$XDG_CONFIG_HOME/ilh/record.key`` (``~/.config/ilh/record.key``),
or the file ``ILH_RECORD_KEY_FILE`` names. Whoever can read that file can forge records;
whoever can only write the store cannot.

The key is created on first use: 32 random bytes, hex, in a 0600 file, in a 0700 folder
when the folder is new. Creation is atomic and exclusive: the key is written in full to a
private temporary file and then hard-linked to its name, which fails if another process
got there first, so concurrent first uses agree on one key and nobody ever reads half a
key. (Where hard links are not supported, ``O_EXCL`` on the name itself is the fallback,
and a reader that finds the file still empty waits for it.)

A key file that others may read or write is refused: such a key authenticates nothing.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
import stat
import tempfile
import time
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

from harness.record.database import StoreError
from harness.secrets import register_secret

KEY_FILE_ENV: Final = "ILH_RECORD_KEY_FILE"
KEY_BYTES: Final = 32
_KEY_ID_LABEL: Final = b"ilh record key id\0"
_EMPTY_WAIT_S: Final = 2.0


class RecordKeyError(StoreError):
    """The record key cannot be read or created; the message says why and what to do."""


@dataclass(frozen=True, slots=True, repr=False)
class RecordKey:
    """A loaded key. `repr` never shows the secret."""

    path: Path
    secret: bytes
    key_id: str = field(init=False, compare=False)
    """A public fingerprint (stored beside each MAC) that tells a record written with
    another key from a tampered one; it reveals nothing of the secret. Computed once:
    every append reads it two or three times."""

    def __post_init__(self) -> None:
        fingerprint = hashlib.sha256(_KEY_ID_LABEL + self.secret).hexdigest()[:16]
        object.__setattr__(self, "key_id", fingerprint)  # frozen: set once, here

    def __repr__(self) -> str:
        return f"RecordKey(path={str(self.path)!r}, id={self.key_id})"

    def mac(self, message: bytes) -> str:
        return hmac.new(self.secret, message, hashlib.sha256).hexdigest()

    def matches(self, message: bytes, mac: str) -> bool:
        return hmac.compare_digest(self.mac(message), mac)


def default_key_path() -> Path:
    """`ILH_RECORD_KEY_FILE`, else `$XDG_CONFIG_HOME/ilh/record.key`, else
    `~/.config/ilh/record.key` (a relative XDG_CONFIG_HOME is ignored, as the XDG spec says;
    a relative `ILH_RECORD_KEY_FILE` is refused: `RecordKeyError`)."""
    override = os.environ.get(KEY_FILE_ENV)
    if override:
        try:
            path = Path(override).expanduser()
        except RuntimeError:  # `~someone/…` of a user this machine does not know
            path = Path(override)
        if not path.is_absolute():
            # Relative, it would name a different key from every folder ilh runs in (a
            # task's workspace among them, where the agent can write one): refused, not
            # resolved against the current folder.
            raise RecordKeyError(
                f"{KEY_FILE_ENV} is a relative path ({override!r}); the record key must be "
                f"named absolutely (e.g. {KEY_FILE_ENV}=$HOME/.config/ilh/record.key)"
            )
        return path
    xdg = os.environ.get("XDG_CONFIG_HOME")
    if xdg and Path(xdg).is_absolute():
        base = Path(xdg)
    else:
        try:
            base = Path.home() / ".config"
        except RuntimeError:  # no HOME and no password entry: no default place
            raise RecordKeyError(
                f"no home folder to keep the record key in: set {KEY_FILE_ENV} to an absolute path"
            ) from None
    return base / "ilh" / "record.key"


def load_key(path: Path) -> RecordKey | None:
    """The key at `path`, or None when there is no file there."""
    deadline = time.monotonic() + _EMPTY_WAIT_S
    while True:
        try:
            # Non-blocking: a pipe named as the key must be refused, not waited on.
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
        except FileNotFoundError:
            return None
        except OSError as err:
            raise RecordKeyError(
                f"cannot read the record key {path}: {err.strerror or err}"
            ) from None
        try:
            info = os.fstat(fd)
            # Checked before reading: a folder cannot be read at all (EISDIR).
            if not stat.S_ISREG(info.st_mode):
                raise RecordKeyError(f"the record key {path} is not a regular file")
            raw = os.read(fd, 4096)
        finally:
            os.close(fd)
        if info.st_mode & 0o077:
            raise RecordKeyError(
                f"the record key {path} is open to other users (mode "
                f"{stat.S_IMODE(info.st_mode):04o}); a shared key authenticates nothing: "
                f"`chmod 600 {path}` if only you could ever read it, otherwise move it away "
                "(records written with it then fail `ilh runs verify`)"
            )
        if raw or time.monotonic() > deadline:
            break
        time.sleep(0.01)  # the O_EXCL fallback: its creator is still writing
    secret = _parse(path, raw)
    # Whoever reads the key can forge the record: keep it out of everything we write.
    register_secret(secret.hex(), "ILH_RECORD_KEY")
    return RecordKey(path=path, secret=secret)


def ensure_key(path: Path) -> RecordKey:
    """The key at `path`, created (atomically, exclusively) when there is none."""
    found = load_key(path)
    if found is not None:
        return found
    _create(path)
    created = load_key(path)
    if created is None:  # removed between our link and our read: nothing sane to do
        raise RecordKeyError(f"the record key {path} vanished right after it was created")
    return created


def _parse(path: Path, raw: bytes) -> bytes:
    text = raw.decode("ascii", errors="replace").strip()
    try:
        secret = bytes.fromhex(text)
    except ValueError:
        secret = b""
    if len(secret) != KEY_BYTES:
        raise RecordKeyError(
            f"the record key {path} is not a key ({2 * KEY_BYTES} hex digits expected); "
            "records written with the real one fail `ilh runs verify` without it"
        )
    return secret


def _make_folder(folder: Path) -> None:
    """Create the folders the key needs; the ones made here are private (0700)."""
    missing: list[Path] = []
    probe = folder
    while not probe.exists():
        missing.append(probe)
        if probe.parent == probe:
            break
        probe = probe.parent
    for made in reversed(missing):
        try:
            made.mkdir(mode=0o700)
        except FileExistsError:
            continue  # a concurrent first use made it
        except OSError as err:
            raise RecordKeyError(
                f"cannot create {made} for the record key: {err.strerror or err}"
            ) from None
        os.chmod(made, 0o700)  # whatever the umask


def _create(path: Path) -> None:
    _make_folder(path.parent)
    text = (secrets.token_bytes(KEY_BYTES).hex() + "\n").encode("ascii")
    try:
        fd, temporary = tempfile.mkstemp(prefix=".record.key.", dir=path.parent)  # 0600
    except OSError as err:
        raise RecordKeyError(
            f"cannot create the record key {path}: {err.strerror or err}"
        ) from None
    try:
        try:
            os.write(fd, text)
            os.fsync(fd)
        finally:
            os.close(fd)
        try:
            os.link(temporary, path)
        except FileExistsError:
            return  # another process created it first: theirs is the key
        except OSError:
            _create_exclusive(path, text)
    finally:
        with suppress(OSError):
            os.unlink(temporary)
    _sync_folder(path.parent)


def _create_exclusive(path: Path, text: bytes) -> None:
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
    except FileExistsError:
        return
    except OSError as err:
        raise RecordKeyError(
            f"cannot create the record key {path}: {err.strerror or err}"
        ) from None
    try:
        os.write(fd, text)
        os.fsync(fd)
    finally:
        os.close(fd)


def _sync_folder(folder: Path) -> None:
    """Make the new name durable too (a key lost in a crash would orphan every record)."""
    with suppress(OSError):
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
