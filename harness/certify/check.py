"""The receiver's side (DIYLISIS Rule 24): `ilh certify --check CERT [TARGET]`, and the
binding `ilh run` enforces for a task file's `[handoff] certificate = "…"`.

The receiver re-checks with its own tools: the target's digest (a one-byte edit after
certification is detected, never trusted) and every dereference step: each path a
judgment routes to must still exist within the granted sources, each committed record
must still be in the repository. URLs and ids stay what they were, unobserved: the check
says so rather than pretending to have fetched them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import ValidationError

from harness.certify.certificate import Certificate, sha256_digest
from harness.certify.lexicon import load_lexicon
from harness.certify.reach import Reach
from harness.certify.seal import seal_problem
from harness.certify.sources import source_identity
from harness.certify.target import read_record, read_target
from harness.inputs.errors import InputError, parse_json
from harness.record.keys import RecordKeyError


def _read_certificate(path: Path) -> tuple[dict[str, object], Certificate]:
    # Not `read_utf8`: a pipe named as the certificate (`[handoff] certificate`) hung there.
    data = read_record(path, str(path), "the certificate", follow_links=True)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise InputError(path, "E300", f"not UTF-8 (byte {err.start})") from None
    raw = parse_json(text, path)
    repeated = _repeated_key(text)
    if repeated is not None:
        # A key written twice reads one way to a first-wins reader and another to ilh
        # (last wins), and the seal covers only what ilh kept: one file, two certificates.
        raise InputError(
            path, "E303", f"not a certificate: it writes the key {repeated!r} twice in one object"
        )
    try:
        certificate = Certificate.model_validate(raw)
    except ValidationError as err:
        first = err.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "(top level)"
        raise InputError(path, "E303", f"not a certificate: {where}: {first['msg']}") from None
    # Validation accepted it as a model, so the JSON was an object.
    return raw, certificate


class _Repeated(ValueError):
    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


def _unique_keys(pairs: list[tuple[str, object]]) -> dict[str, object]:
    seen: set[str] = set()
    for key, _ in pairs:
        if key in seen:
            raise _Repeated(key)
        seen.add(key)
    return dict(pairs)


def _repeated_key(text: str) -> str | None:
    """The first key written twice in one object of the JSON `text` (already parsed once,
    so it is JSON), or None."""
    try:
        json.loads(text, object_pairs_hook=_unique_keys)
    except _Repeated as repeated:
        return repeated.key
    except (ValueError, RecursionError):
        return None
    return None


def load_certificate(path: Path) -> Certificate:
    """The certificate at `path`, as it says: for showing it, never for trusting it."""
    return _read_certificate(path)[1]


def load_authentic_certificate(path: Path, key_path: Path | None = None) -> Certificate:
    """The certificate at `path`, only if its seal verifies with this user's record key
    (`harness.certify.seal`); `InputError` (E303, exit 2) with the reason otherwise. Every
    place that acts on a certificate loads it through here, so a hand-edited one is refused
    before any of its fields is believed."""
    raw, certificate = _read_certificate(path)
    try:
        problem = seal_problem(raw, certificate, key_path)
    except RecordKeyError as err:
        raise InputError(path, "E500", str(err)) from None
    if problem is not None:
        raise InputError(path, "E303", problem)
    return certificate


@dataclass
class CheckReport:
    certificate: str
    target: str
    problems: list[str] = field(default_factory=list)
    checked: list[str] = field(default_factory=list)
    unobserved: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems

    def as_json(self) -> dict[str, object]:
        return {
            "ok": self.ok,
            "certificate": self.certificate,
            "target": self.target,
            "problems": self.problems,
            "checked": self.checked,
            "unobserved": self.unobserved,
        }


def check_certificate(cert_path: Path, target: str | None) -> CheckReport:
    """Exit 0 when `ok`, 1 otherwise; an unreadable certificate raises `InputError`."""
    cert = load_authentic_certificate(cert_path)
    folder = cert_path.parent
    locator = cert.target.locator
    if target is None:
        # The locator is relative to the certificate's folder; `given` already carries it,
        # and is read from where the person is (joined to the folder again it read
        # `out/out/../handoff.md` for `--check out/h.cert.json`). A git record is read
        # in the repository around the certificate.
        if locator.startswith("git:"):
            given, base = locator, folder
        else:
            given, base = str(folder / locator), Path.cwd()
    else:
        # A TARGET typed on the command line is relative to where the person is, like
        # every path they type; the certificate's own locator is relative to it.
        given = target
        base = Path.cwd()
    report = CheckReport(certificate=str(cert_path), target=given)
    if not cert.certified:
        report.problems.append(f"the certificate says not certified: {cert.reason}")
    try:
        current = read_target(given, base)
    except InputError as err:
        if target is not None:
            # A TARGET the person typed that cannot be read is a mistyped path, bad input
            # (DESIGN §6: exit 2), not a record that changed.
            raise
        report.problems.append(f"the target cannot be read: {err.message}")
        return report
    digest = sha256_digest(current.data)
    if digest != cert.target_identity:
        report.problems.append(
            f"the target changed after certification: it is {digest}, the certificate is for "
            f"{cert.target_identity}; treat it as a draft and certify it again"
        )
    else:
        report.checked.append(f"target identity {digest}")
    sources = [folder / s.locator for s in cert.reception_procedure.granted_sources]
    missing = [str(s) for s in sources if not s.exists()]
    for source in missing:
        report.problems.append(f"a granted source is gone: {source}")
    _check_identities(cert, folder, report)
    reach = Reach(
        sources=[s for s in sources if s.exists()],
        cwd=folder,
        lexicon=load_lexicon(),
        target_path=current.path,
    )
    for judgment in cert.judgments:
        verdict = judgment.verdict
        if verdict.kind != "Reference":
            continue
        ref = verdict.stable_ref
        if ref.kind == "path":
            got = reach.resolve_path(ref.locator)
        elif ref.locator.startswith("git:"):
            got = reach.resolve_git(ref.locator)
        elif ref.kind == "url":
            got = reach.resolve_url(ref.locator)
        else:
            got = reach.resolve_id(ref.locator)
        if got.status == "failed":
            report.problems.append(f"{ref.locator} no longer resolves: {got.why}")
        elif got.status == "unobserved":
            report.unobserved.append(f"{ref.locator}: {got.why}")
        else:
            report.checked.append(f"{ref.locator}: {got.why}")
    return report


def _check_identities(cert: Certificate, folder: Path, report: CheckReport) -> None:
    """Each granted source must be the content certified (`harness.certify.sources`): a
    path that still exists is not enough, its files may have been rewritten since."""
    problems, checked = source_problems(cert, folder)
    report.problems += problems
    report.checked += checked


def source_problems(cert: Certificate, folder: Path) -> tuple[list[str], list[str]]:
    """(problems, what was checked) of the granted sources' identities, the sources
    relative to `folder` (the certificate's). A source that is gone is not reported here
    (the caller says so)."""
    procedure = cert.reception_procedure
    identities = procedure.source_identities
    problems: list[str] = []
    checked: list[str] = []
    if identities is None:
        if procedure.granted_sources:
            problems.append(
                "the certificate binds its granted sources by path only (issued before "
                "sources were bound by content): nothing shows they are the certified ones; "
                "certify the record again"
            )
        return problems, checked
    for ref in procedure.granted_sources:
        certified = identities.get(ref.locator)
        if certified is None:
            problems.append(f"the granted source {ref.locator} has no certified identity")
            continue
        current = source_identity(folder / ref.locator)
        if current is None:
            continue
        if current != certified:
            problems.append(
                f"the granted source {ref.locator} changed after certification: it is "
                f"{current}, the certificate is for {certified}; certify the record again"
            )
        else:
            checked.append(f"granted source {ref.locator} identity {current}")
    return problems, checked


#: What a TOML string adds or drops around a record: blank lines, never other characters.
_BLANK = " \t\r\n"


def _text(data: bytes) -> str | None:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


#: Rule 9's platform ladder, strongest first: a demand for one rung accepts it and those
#: above it.
LADDER = ("refuter-subagent", "generic-subagent", "lint-fallback")


def realization_problem(cert: Certificate, demanded: str | None) -> str | None:
    """Why `cert` does not meet the `[handoff] realization` demanded, or None."""
    if demanded is None:
        return None
    got = cert.verdict.realization if cert.verdict is not None else None
    if got is not None and LADDER.index(got) <= LADDER.index(demanded):
        return None
    return (
        f"it was certified under {got or 'no verdict'}"
        + (" (a lint's rigor: no refuter ran)" if got == "lint-fallback" else "")
        + f", and [handoff] realization demands {demanded}: certify it again with a refuter "
        "(ilh certify … --model URI)"
    )


def bind_handoff(
    certificate: Path,
    *,
    objective: str,
    file: Path | None,
    where: str,
    realization: str | None = None,
) -> Certificate:
    """`ilh run` dispatches a handoff only as certified: the task's objective (or the file
    `[handoff] file` names) must have exactly the certified bytes, and with a file the
    objective must be that record, and the certificate must have been issued under the
    `realization` demanded (`realization_problem`). Raises `InputError` (exit 2, no model
    called) with the reason otherwise, a certificate whose seal does not verify here
    included. Returns the certificate as checked: what is compared later (the workspace's
    copy) is compared with these bytes, never with the file read again."""
    cert = load_authentic_certificate(certificate)
    if not cert.certified:
        raise InputError(
            where,
            "E303",
            f"handoff: {certificate.name} is not a certificate of "
            f"portability (not certified: {cert.reason})",
        )
    demand = realization_problem(cert, realization)
    if demand is not None:
        raise InputError(where, "E303", f"handoff: {certificate.name}: {demand}")
    if file is not None:
        data = read_record(file, where, f"handoff: {file.name}", follow_links=True)
        what = f"the file {file.name}"
    else:
        data = objective.encode("utf-8")
        what = "the task's objective"
    digest = sha256_digest(data)
    if digest != cert.target_identity:
        raise InputError(
            where,
            "E303",
            f"handoff: {what} does not match its certificate {certificate.name}: it is "
            f"{digest}, the certified record is {cert.target_identity}; it changed after "
            "certification (or is another record): certify it again before dispatch",
        )
    # The sources the record routes its reader to are part of what was certified: a
    # workspace rewritten after certification is not the one the record was checked
    # against (nor is one named by a certificate that bound its sources by path only).
    problems, _ = source_problems(cert, certificate.parent)
    gone = [
        s.locator
        for s in cert.reception_procedure.granted_sources
        if not (certificate.parent / s.locator).exists()
    ]
    problems += [f"the granted source {g} is gone" for g in gone]
    if problems:
        raise InputError(
            where,
            "E303",
            f"handoff: {certificate.name}: {problems[0]}; certify it again before dispatch",
        )
    # What is dispatched is the objective, never the file: a certified file beside an
    # objective of any other text dispatched that text. The objective must be the
    # certified record itself (up to the blank lines around it, which a TOML string
    # adds or drops). Not the activation edge ("Read handoff.md and execute it"): the
    # agent would read whatever handoff.md its workspace holds, which is not the file
    # checked here.
    # Only ASCII blank-line characters are stripped: `str.strip()` also drops U+2028,
    # U+3000, NBSP, NEL and the \x1c-\x1f separators, invisible text the certifier
    # refuses inside a record but which rode along unchecked around it. Bytes that are
    # not UTF-8 are no record an objective can equal (never a replacement character).
    text = _text(data)
    if file is not None and (text is None or objective.strip(_BLANK) != text.strip(_BLANK)):
        raise InputError(
            where,
            "E303",
            f"handoff: the task's objective is not the certified file {file.name}: the "
            "objective is what is dispatched, so it must be the certified record itself",
        )
    return cert


def bind_workspace_copy(
    cert: Certificate, certificate: Path, template: Path, copy: Path, *, where: str
) -> None:
    """The agent's copy of a workspace template that is one of the certificate's granted
    sources must have that source's certified identity: `bind_handoff` checked the
    template when the task was prepared, and the copy is made later (in a batch, after
    the tasks before it ran); a template edited in between was handed over under a
    certificate that never saw it. Compared on the copy itself, so nothing done to the
    template after the copy matters and nothing done before it escapes. `InputError`
    (E303) otherwise. `cert`: the certificate `bind_handoff` checked (read once: a file
    swapped between the two checks would otherwise bind the copy to another certificate),
    `certificate` its path."""
    identities = cert.reception_procedure.source_identities or {}
    wanted = template.resolve()
    for ref in cert.reception_procedure.granted_sources:
        if (certificate.parent / ref.locator).resolve() != wanted:
            continue
        certified = identities.get(ref.locator)
        current = source_identity(copy)
        if certified is None or current != certified:
            raise InputError(
                where,
                "E303",
                f"handoff: {certificate.name}: the granted source {ref.locator} changed after "
                f"certification, before the run copied it (the copy is {current}, the "
                f"certificate is for {certified}): nothing was dispatched; certify it again",
            )
