"""The chain reader's fast patterns spell out `\\s` (`SPACE`) and unroll the quoted value's
repeated alternation (envelopes/chain.py): the same languages as the patterns first
written, which these tests hold them to."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from envelopes import chain
from envelopes.chain import SPACE

# The patterns as first written (before parse6), the definition the fast ones must match.
_HEAD_AS_WRITTEN = re.compile(
    r"\[([^\]:|\s]+)(?::(?:@([A-Z][A-Z0-9_]*)|([^\]:|\s@][^\]:|\s]*)))?([|\]])"
)
_MOD_AS_WRITTEN = re.compile(
    r"([A-Za-z_][A-Za-z0-9_]*)="
    r'(?:"((?:[^"\\\x00-\x1f\x7f-\x9f\u2028\u2029]|\\["\\n])*)"|([^\],|"\[\s\x00-\x1f\x7f-\x9f\u2028\u2029]+))'
    r"([,\]])"
)


def test_space_is_what_backslash_s_matches() -> None:
    every = "".join(map(chr, [*range(0xD800), *range(0xE000, 0x110000)]))
    assert re.findall(f"[{SPACE}]", every) == re.findall(r"\s", every)
    assert re.findall(f"[^{SPACE}]", every) == re.findall(r"\S", every)


_PIECES = st.sampled_from(
    [*'[]:|@,="\\ \t\n\x00\x1f\x85\xa0\u2028\u3000aZ_9-.', "READ", "@SRC", 'x="a\\"b"', "\\n"]
)


@settings(max_examples=3000, deadline=None, derandomize=True, database=None)
@given(st.lists(_PIECES, max_size=24).map("".join))
def test_the_fast_patterns_match_as_first_written(text: str) -> None:
    for fast, written in ((chain._FAST_HEAD, _HEAD_AS_WRITTEN), (chain._FAST_MOD, _MOD_AS_WRITTEN)):
        for start in range(len(text) + 1):
            got, want = fast.match(text, start), written.match(text, start)
            assert (got and (got.span(), got.groups())) == (want and (want.span(), want.groups()))
