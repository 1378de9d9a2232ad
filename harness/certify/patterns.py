"""The lexicons' regular expressions, compiled: the shipped ones by `re`, a user's own
(`ilh certify --lexicon FILE`) by `regex`, with a deadline on every search.

Python's `re` cannot be interrupted: a user's `(a+)+$` against a long line of `a`s
backtracks for ever, and `ilh certify` hung with it (certify8). Of the ways to bound it,
a signal alarm works only in the main thread (the Python API runs anywhere), and a
process per pattern costs more than the whole lint-fallback; refusing "dangerous" shapes
cannot be done soundly. The `regex` engine takes a `timeout` on each call, and copes
with many nested quantifiers by itself (`(a+)+$` ends at once). So a user's pattern runs
there, `re`-compatible (its VERSION0), and one search that overruns `USER_PATTERN_SECONDS`
ends the certification as bad input (E303) naming the pattern and its file. The
shipped patterns are the project's own, reviewed, and keep running in `re`, exactly
as before.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from functools import cache
from typing import Protocol

from harness.inputs.errors import InputError

# `regex` is imported where a user's pattern is compiled: about 14 ms, which a
# certification with the shipped lexicon alone never pays.

#: The longest one search of a user's pattern may take (one line of the target, one file
#: routed to): far above an ordinary pattern's microseconds, short enough that a
#: catastrophic one is named before anyone wonders whether certify hangs.
USER_PATTERN_SECONDS = 1.0


class Found(Protocol):
    def start(self) -> int: ...
    def end(self) -> int: ...
    def group(self) -> str: ...


class Searcher(Protocol):
    """What the scan asks of a compiled pattern (an `re.Pattern` has it)."""

    def search(self, text: str) -> Found | None: ...
    def finditer(self, text: str) -> Iterator[Found]: ...


class UserPattern:
    """A user's pattern in `regex`, every search bounded by `USER_PATTERN_SECONDS`."""

    def __init__(self, pattern: str, origin: str, flags: int) -> None:
        self.pattern = pattern
        self.origin = origin  # "FILE KEY": where the user wrote it
        import regex

        self._compiled: regex.Pattern[str] = regex.compile(
            pattern, _regex_flags(flags) | regex.VERSION0
        )

    def _overran(self) -> InputError:
        path, _, key = self.origin.rpartition(" ")
        return InputError(
            path,
            "E303",
            f"{key}: the pattern {self.pattern!r} ran longer than {USER_PATTERN_SECONDS:g} s "
            "on one search (catastrophic backtracking: nested or overlapping repeats such as "
            "(a|a)+); rewrite it, with an atomic group (?>…) or a possessive quantifier",
        )

    def search(self, text: str) -> Found | None:
        try:
            return self._compiled.search(text, timeout=USER_PATTERN_SECONDS)
        except TimeoutError:
            raise self._overran() from None

    def finditer(self, text: str) -> Iterator[Found]:
        try:
            yield from self._compiled.finditer(text, timeout=USER_PATTERN_SECONDS)
        except TimeoutError:
            raise self._overran() from None


def _regex_flags(flags: int) -> int:
    import regex

    return regex.IGNORECASE if flags & re.IGNORECASE else 0


def check_user_pattern(pattern: str) -> str | None:
    """Why `regex` cannot compile `pattern` (which `re` compiled), or None."""
    import regex

    try:
        regex.compile(pattern, regex.VERSION0)
    except regex.error as err:
        return str(err)
    return None


@cache
def compiled_patterns(
    patterns: tuple[str, ...], user: tuple[tuple[str, str], ...], flags: int
) -> tuple[Searcher, ...]:
    """`patterns` compiled once per process, each alone (Python's engine runs each faster
    alone than all in one alternation); those in `user` ((pattern, "FILE KEY") pairs, a
    `--lexicon` file's own) by `regex` with a deadline, the others by `re`."""
    origins = dict(user)
    return tuple(
        UserPattern(p, origins[p], flags) if p in origins else re.compile(p, flags)
        for p in patterns
    )
