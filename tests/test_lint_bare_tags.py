"""A bare `[NAME]` on its own line outside the preamble is a one-step chain: an unknown
verb there is E304 (as the reference validator reports), not a silently accepted tag."""

from __future__ import annotations

import pytest

from envelopes.lint import lint_text


@pytest.mark.parametrize("line", ["[REED]", "[OT]", "::FACT{key:a|value:b}\n\n[REED]"])
def test_unknown_one_step_verb_is_e304(line: str) -> None:
    codes = [f.code for f in lint_text(line + "\n")]
    assert codes == ["E304"]


@pytest.mark.parametrize(
    "text",
    [
        "[OUT]\n",  # a known verb
        "[READ:@SPEC]\n",
        "[PROTOCOL:iLang|v=4.0]\n",  # a tag with a value stays a tag
        "::ILANG::v5.0\n[TYPE:profile][SCOPE:public]\n",  # preamble metadata
    ],
)
def test_verbs_and_tags_with_values_stay_clean(text: str) -> None:
    assert [f.code for f in lint_text(text) if f.severity == "error"] == []
