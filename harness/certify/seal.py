"""A certificate's seal: what makes `certified: true` the certifier's word and not anyone's.

The digest in a certificate binds it to the record's bytes, but the certificate itself is
a JSON file anyone can edit: flip `certified` to true, set `target_identity` to the digest
of an edited objective, and the binding holds for the forgery. So the certifier seals
every certificate it issues (certified or not) with an HMAC-SHA256 under the per-user
record key (`harness.record.keys`: the same secret that authenticates run records, kept
outside every project and sandbox), and the two places that trust a certificate
(`ilh run`'s `[handoff]` binding and `ilh certify --check`) refuse one whose seal does
not verify, as bad input (E303, exit 2), before anything else is believed.

What the MAC covers: the certificate's JSON object exactly as it was read, every field
but `seal`, in the one canonical encoding (`harness.record.events.canonical_json`),
behind a label of its own so that no other MAC made with the key (a run head) can pass
for a seal. It is computed over the object as read rather than over the model re-dumped,
so a field the model would default, coerce or drop cannot slip past it.

A certificate made elsewhere (another user or machine) was sealed with another key: it
is refused, fail closed, with its key id and ours, and the way on: certify the record
again here, or, where a team deliberately shares one key, point `ILH_RECORD_KEY_FILE` at
it (whoever holds the key can issue certificates: that is the trust being granted).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Final

from harness.certify.certificate import Certificate, Seal
from harness.record.events import canonical_json
from harness.record.keys import RecordKey, default_key_path, ensure_key, load_key

_LABEL: Final = b"ilh certificate seal v1\0"
_RECERTIFY: Final = (
    "certify the record again here (`ilh certify TARGET --role ROLE … --certificate CERT`)"
)


def _message(body: Mapping[str, object]) -> bytes:
    content = {name: value for name, value in body.items() if name != "seal"}
    # surrogatepass: a JSON file may carry a lone "\\ud800" escape; it must hash, not crash.
    return _LABEL + canonical_json(content).encode("utf-8", "surrogatepass")


def seal_certificate(certificate: Certificate, key: RecordKey) -> Certificate:
    """The certificate with its seal (any previous seal replaced)."""
    body = certificate.model_dump(mode="json", exclude={"seal"})
    seal = Seal(key_id=key.key_id, mac=key.mac(_message(body)))
    return certificate.model_copy(update={"seal": seal})


def issuing_key(key_path: Path | None = None) -> RecordKey:
    """The key a certification seals with: the record key, created on first use.
    Raises `RecordKeyError` (a `StoreError`) when it cannot be read or created."""
    return ensure_key(key_path or default_key_path())


def seal_problem(
    raw: Mapping[str, object], certificate: Certificate, key_path: Path | None = None
) -> str | None:
    """Why `certificate` (parsed from the JSON object `raw`) is not authentic here, or None
    when its seal verifies with this user's key. A key that cannot be read raises
    `RecordKeyError`; a missing key is a problem like any other (fail closed)."""
    seal = certificate.seal
    if seal is None:
        return (
            "the certificate is not sealed, so nothing shows the certifier issued it "
            "(it was made before certificates were sealed, or the seal was removed): " + _RECERTIFY
        )
    path = key_path or default_key_path()
    key = load_key(path)
    if key is None:
        return (
            f"the certificate cannot be authenticated: there is no key at {path}, so it was "
            f"issued elsewhere (key id {seal.key_id}); a certificate is trusted only where it "
            "was issued: " + _RECERTIFY
        )
    if seal.key_id != key.key_id:
        return (
            f"the certificate was issued with another key (key id {seal.key_id}; the key at "
            f"{path} is {key.key_id}): by another user or on another machine, and trusted "
            f"only there: {_RECERTIFY}, or set ILH_RECORD_KEY_FILE to the key it was issued "
            "with if you share that key on purpose"
        )
    if not key.matches(_message(raw), seal.mac):
        return (
            "the certificate does not match its seal: it was edited after it was issued "
            "(a field changed, added or removed); trust none of it: " + _RECERTIFY
        )
    return None
