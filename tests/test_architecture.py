"""ARCHITECTURE.md is the map of the code: every path it names must exist."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MAP = ROOT / "ARCHITECTURE.md"
# A code span that looks like a repository path: a folder (`x/`) or a file with a suffix.
_PATH = re.compile(r"`([A-Za-z_][\w./-]*(?:/|\.py|\.toml|\.md))`")


def named_paths(text: str) -> list[str]:
    return sorted(set(_PATH.findall(text)))


def test_map_names_paths() -> None:
    # If the pattern stopped matching, the next test would pass on nothing.
    assert len(named_paths(MAP.read_text(encoding="utf-8"))) >= 30


def test_every_path_on_the_map_exists() -> None:
    missing = [p for p in named_paths(MAP.read_text(encoding="utf-8")) if not (ROOT / p).exists()]
    assert missing == []


def test_every_room_is_on_the_map() -> None:
    text = MAP.read_text(encoding="utf-8")
    rooms = [p.name for p in (ROOT / "harness").iterdir() if (p / "__init__.py").exists()]
    assert rooms, "harness has no rooms"
    assert [r for r in rooms if f"`harness/{r}/`" not in text] == []


def test_no_file_name_prefix_stands_in_for_a_folder() -> None:
    """`cli_x.py`, `grader_x.py` beside each other are a room waiting to exist."""
    for folder in [ROOT / "harness", *(p for p in (ROOT / "harness").iterdir() if p.is_dir())]:
        stems = [p.stem for p in folder.glob("*.py") if not p.stem.startswith("_")]
        prefixes = [s.split("_")[0] for s in stems if "_" in s]
        repeated = {p for p in prefixes if prefixes.count(p) >= 2}
        assert not repeated, f"{folder}: {repeated}"
