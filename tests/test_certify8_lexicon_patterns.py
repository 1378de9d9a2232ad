"""A `--lexicon` pattern that backtracks catastrophically is bounded (certify8).

`ilh certify --lexicon slow.toml` with `session_id_patterns = ['(a+)+$']` (or an addressed
or order pattern of the kind) against a line of thirty `a`s and a `b` never ended: Python's
engine backtracks exponentially and cannot be interrupted. A user's pattern now runs in the
`regex` engine with a deadline per search: it ends, and a pattern that overruns the deadline
is bad input (E303, exit 2, the lexicon file as the location), never a hang. The shipped
lexicon's patterns still run in `re`, as before."""

from __future__ import annotations

import re
import shutil
import time
from pathlib import Path

import pytest

from harness.certify.lexicon import load_lexicon, shipped
from harness.certify.patterns import compiled_patterns
from tests.certify_helpers import CLEAN
from tests.certify_helpers import certify_child as certify


@pytest.fixture
def clean(tmp_path: Path) -> Path:
    shutil.copytree(CLEAN, tmp_path / "c")
    handoff = tmp_path / "c" / "handoff.md"
    handoff.write_text(handoff.read_text() + "\n" + "a" * 40 + "b\n")
    return tmp_path / "c"


@pytest.mark.parametrize("key", ["session_id_patterns", "addressed_patterns", "order_patterns"])
def test_a_nested_quantifier_no_longer_hangs(clean: Path, key: str) -> None:
    (clean / "slow.toml").write_text(f"language = \"x\"\n{key} = ['(a+)+$']\n")
    started = time.monotonic()
    done = certify(clean, "--lexicon", "slow.toml")
    assert time.monotonic() - started < 60
    assert done.returncode in (0, 1), done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize("key", ["session_id_patterns", "addressed_patterns", "order_patterns"])
def test_a_pattern_past_its_deadline_is_bad_input(clean: Path, key: str) -> None:
    # `(a|a)+$` backtracks in the `regex` engine too: it meets the deadline.
    (clean / "slow.toml").write_text(f"language = \"x\"\n{key} = ['(a|a)+$']\n")
    started = time.monotonic()
    done = certify(clean, "--lexicon", "slow.toml")
    assert time.monotonic() - started < 60
    assert done.returncode == 2, done
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and "Traceback" not in done.stderr, done.stderr
    assert lines[0].startswith("error slow.toml: E303 "), lines[0]
    assert key in lines[0] and "(a|a)+$" in lines[0] and "backtrack" in lines[0], lines[0]


def test_a_users_ordinary_pattern_still_finds_its_id(clean: Path) -> None:
    handoff = clean / "handoff.md"
    handoff.write_text(handoff.read_text() + "\nSee ticket ZX-9931 for details.\n")
    (clean / "ids.toml").write_text("language = \"x\"\nsession_id_patterns = ['ZX-\\d{4}']\n")
    done = certify(clean, "--lexicon", "ids.toml", "--json")
    assert done.returncode == 1, done.stderr
    assert "ZX-9931" in done.stdout


def test_the_shipped_patterns_still_run_in_re() -> None:
    lexicon = load_lexicon()
    patterns = lexicon.addressed_patterns + lexicon.order_patterns
    for compiled in compiled_patterns(patterns, lexicon.user_patterns, re.IGNORECASE):
        assert isinstance(compiled, re.Pattern)
    shipped_ids = [p for f in shipped() for p in f.session_id_patterns]
    for compiled in compiled_patterns(tuple(shipped_ids), lexicon.user_patterns, 0):
        assert isinstance(compiled, re.Pattern)
