"""A SOUL file on disk: read (lint clean or bad input), written atomically under a lock, and
its pending GENEs (`--soul-readonly`: the principal reviews first, L3).

Writing: temp file in the SOUL's folder, fsync, rename over the SOUL, fsync the folder. Two
runs of the same agent may end at once: each takes an exclusive lock (`<soul>.lock`), reads
the SOUL *as it is now*, applies its own occurrences (idempotent, `harness.soul.cycle`) and
writes; so neither loses the other's GENEs.

If the file on disk no longer lints clean when a run ends (someone edited it badly
meanwhile), it is not overwritten: the run's occurrences go to the pending file instead,
and the caller says so.
"""

from __future__ import annotations

import fcntl
import json
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from pydantic import ValidationError

from envelopes.declarations.gene import Flag
from envelopes.soul import Soul, read_soul
from harness.inputs.errors import InputError, read_utf8
from harness.soul.cycle import Observation, apply_all


def pending_path(soul: Path) -> Path:
    return soul.with_name(soul.name + ".pending.jsonl")


def lock_path(soul: Path) -> Path:
    return soul.with_name(soul.name + ".lock")


def parse_soul(text: str, path: Path | str) -> Soul:
    """The SOUL in `text`; its first finding (lint's or the SOUL's own) is bad input."""
    soul, findings = read_soul(text)
    if findings:
        first = findings[0]
        raise InputError(path, first.code, f"the SOUL file: {first.message}", first.line, first.col)
    return soul


def load_soul(path: Path) -> Soul:
    """The SOUL at `path`; a missing file is an empty SOUL (the first GENE creates it)."""
    if not path.exists():
        return Soul()
    if not path.is_file():
        raise InputError(path, "E303", "the SOUL is not a regular file")
    return parse_soul(read_utf8(path, "the SOUL file"), path)


@contextmanager
def locked(soul: Path) -> Iterator[None]:
    """An exclusive lock on `soul` (held on a side file: the SOUL itself is replaced by
    rename, so a lock on it would be a lock on an unlinked file)."""
    soul.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(lock_path(soul), os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing releases the lock


def write_atomic(path: Path, text: str) -> None:
    """`text` to `path`: temp + fsync + rename + fsync of the folder. A reader sees the
    old file or the new one, never a part; a crash leaves one of them."""
    folder = path.parent
    fd, temp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(text)
            out.flush()
            os.fsync(out.fileno())
        if path.exists():
            os.chmod(temp, path.stat().st_mode & 0o7777)
        os.replace(temp, path)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise
    dir_fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def read_pending(soul: Path) -> list[Observation]:
    path = pending_path(soul)
    if not path.exists():
        return []
    found: list[Observation] = []
    for n, line in enumerate(read_utf8(path, "the pending GENEs").splitlines(), 1):
        if not line.strip():
            continue
        try:
            found.append(Observation.model_validate_json(line))
        except ValidationError as err:
            message = err.errors()[0]["msg"]
            raise InputError(path, "E301", f"not a pending GENE: {message}", n) from None
    return found


def write_pending(soul: Path, observations: list[Observation]) -> None:
    path = pending_path(soul)
    if not observations:
        path.unlink(missing_ok=True)
        return
    write_atomic(path, "".join(o.model_dump_json() + "\n" for o in observations))


def _merged(old: list[Observation], new: list[Observation]) -> list[Observation]:
    keys = {(o.run, o.step) for o in old}
    return [*old, *(o for o in new if (o.run, o.step) not in keys)]


@dataclass(frozen=True)
class Persisted:
    written: int
    """Occurrences now in the SOUL file (or the pending file)."""
    pending: bool
    """They went to the pending file (review first, or the SOUL did not lint)."""
    why: str | None = None


def persist(path: Path, observations: list[Observation], *, readonly: bool) -> Persisted:
    """Write a session's occurrences to the SOUL at `path` (or, read-only, to its pending
    file). Idempotent: occurrences already there change nothing."""
    with locked(path):
        if readonly:
            write_pending(path, _merged(read_pending(path), observations))
            return Persisted(len(observations), pending=True)
        try:
            current = load_soul(path)
        except InputError as err:
            write_pending(path, _merged(read_pending(path), observations))
            why = f"the SOUL does not lint clean now ({err.render()}): the GENEs are pending"
            return Persisted(len(observations), pending=True, why=why)
        updated = apply_all(current, observations)
        if updated != current or not path.exists():
            write_atomic(path, updated.render())
        return Persisted(len(observations), pending=False)


def review(path: Path, approve: set[str], drop: set[str], everything: bool) -> tuple[int, int]:
    """Approve (apply to the SOUL) or drop pending occurrences by GENE name; `everything`
    approves all that are not dropped. Returns (approved, dropped)."""
    with locked(path):
        pending = read_pending(path)
        chosen = [
            o
            for o in pending
            if o.correction.gene not in drop and (everything or o.correction.gene in approve)
        ]
        dropped = [o for o in pending if o.correction.gene in drop]
        if chosen:
            current = load_soul(path)
            write_atomic(path, apply_all(current, chosen).render())
        keep = [o for o in pending if o not in chosen and o not in dropped]
        write_pending(path, keep)
        return len(chosen), len(dropped)


def flag_rule(path: Path, gene: str, run: str, note: str) -> Flag:
    """§3 principal_rule_error: flag the principal's GENE `gene` for amendment. No GENE is
    added and no occurrence counted."""
    with locked(path):
        current = load_soul(path)
        target = current.gene(gene)
        if target is None:
            names = ", ".join(g.name for g in current.genes) or "none"
            raise InputError(
                "--gene", "E303", f"the SOUL {path} has no GENE {gene!r} (its GENEs: {names})"
            )
        flag = Flag(run=run, note=note)
        if flag.render() not in target.body:
            write_atomic(path, current.replaced(target.with_lines(flag.render())).render())
        return flag


def dump_observation(seen: Observation) -> str:
    return json.dumps(seen.model_dump(mode="json"), sort_keys=True)
