"""The word lists the deterministic legs read: data files, not code.

Every `*.toml` in `harness/certify/lexicon/` (shipped as package data) is applied, and
so is any file passed with `ilh certify --lexicon FILE`: the lists are merged. A language
is one more file (the protocol's authors write their handoffs in Korean: `ko.toml`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import cache
from importlib import resources
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from harness.certify.patterns import check_user_pattern
from harness.inputs.errors import InputError, read_utf8
from harness.inputs.task_file import parse_toml


class LexiconFile(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    language: str = Field(min_length=1)
    deictic: list[str] = Field(default_factory=list)
    numbered_words: list[str] = Field(default_factory=list)
    decision_markers: list[str] = Field(default_factory=list)
    known_acronyms: list[str] = Field(default_factory=list)
    command_words: list[str] = Field(default_factory=list)
    edge_words: list[str] = Field(default_factory=list)
    ephemeral_roots: list[str] = Field(default_factory=list)
    system_paths: list[str] = Field(default_factory=list)
    layout_roots: list[str] = Field(default_factory=list)
    ephemeral_hosts: list[str] = Field(default_factory=list)
    session_id_patterns: list[str] = Field(default_factory=list)
    addressed_patterns: list[str] = Field(default_factory=list)
    order_patterns: list[str] = Field(default_factory=list)
    durable_hosts: list[str] = Field(default_factory=list)

    @field_validator("session_id_patterns", "addressed_patterns", "order_patterns")
    @classmethod
    def _compiles(cls, patterns: list[str]) -> list[str]:
        for pattern in patterns:
            try:
                re.compile(pattern)
            except re.error as err:
                raise ValueError(f"not a regular expression: {pattern!r} ({err})") from None
        return patterns


class Lexicon(BaseModel):
    """The merged lists of every lexicon file."""

    model_config = ConfigDict(frozen=True)

    languages: tuple[str, ...]
    deictic: tuple[str, ...]
    numbered_words: tuple[str, ...]
    decision_markers: tuple[str, ...]
    known_acronyms: frozenset[str]
    command_words: frozenset[str]
    edge_words: frozenset[str]
    ephemeral_roots: tuple[str, ...]
    system_paths: frozenset[str]
    layout_roots: frozenset[str] = frozenset()
    ephemeral_hosts: frozenset[str]
    session_id_patterns: tuple[str, ...]
    addressed_patterns: tuple[str, ...]
    order_patterns: tuple[str, ...]
    durable_hosts: frozenset[str]
    #: (pattern, "FILE KEY") of each pattern only a `--lexicon` file brings: run with a
    #: deadline (`harness.certify.patterns`), where the shipped ones run as they always did.
    user_patterns: tuple[tuple[str, str], ...] = ()

    @classmethod
    def merge(cls, files: Iterable[LexiconFile]) -> Lexicon:
        files = list(files)

        def union(name: str) -> list[str]:
            seen: dict[str, None] = {}
            for f in files:
                for word in getattr(f, name):
                    seen.setdefault(word, None)
            return list(seen)

        return cls(
            languages=tuple(f.language for f in files),
            deictic=tuple(union("deictic")),
            numbered_words=tuple(union("numbered_words")),
            decision_markers=tuple(union("decision_markers")),
            known_acronyms=frozenset(union("known_acronyms")),
            command_words=frozenset(union("command_words")),
            edge_words=frozenset(w.lower() for w in union("edge_words")),
            ephemeral_roots=tuple(union("ephemeral_roots")),
            system_paths=frozenset(union("system_paths")),
            layout_roots=frozenset(union("layout_roots")),
            ephemeral_hosts=frozenset(h.lower() for h in union("ephemeral_hosts")),
            session_id_patterns=tuple(union("session_id_patterns")),
            addressed_patterns=tuple(union("addressed_patterns")),
            order_patterns=tuple(union("order_patterns")),
            durable_hosts=frozenset(h.lower() for h in union("durable_hosts")),
        )


def parse_lexicon(text: str, path: Path) -> LexiconFile:
    raw = parse_toml(text, path)
    try:
        return LexiconFile.model_validate(raw)
    except ValidationError as err:
        first = err.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "(top level)"
        raise InputError(path, "E303", f"lexicon {where}: {first['msg']}") from None


@cache
def shipped() -> tuple[LexiconFile, ...]:
    """The lexicons shipped in the package, in file-name order."""
    folder = resources.files("harness.certify") / "lexicon"
    found = []
    for entry in sorted(folder.iterdir(), key=lambda e: e.name):
        if entry.name.endswith(".toml"):
            found.append(parse_lexicon(entry.read_text(encoding="utf-8"), Path(entry.name)))
    return tuple(found)


_PATTERN_KEYS = ("session_id_patterns", "addressed_patterns", "order_patterns")


def load_lexicon(extra: Iterable[Path] = ()) -> Lexicon:
    files = list(shipped())
    own = {p for f in files for key in _PATTERN_KEYS for p in getattr(f, key)}
    user: dict[str, str] = {}
    for path in extra:
        added = parse_lexicon(read_utf8(path, "the lexicon"), path)
        files.append(added)
        for key in _PATTERN_KEYS:
            for pattern in getattr(added, key):
                if pattern in own or pattern in user:
                    continue
                why = check_user_pattern(pattern)
                if why is not None:
                    raise InputError(
                        path,
                        "E303",
                        f"lexicon {key}: not a regular expression: {pattern!r} ({why})",
                    )
                user[pattern] = f"{path} {key}"
    return Lexicon.merge(files).model_copy(update={"user_patterns": tuple(user.items())})
