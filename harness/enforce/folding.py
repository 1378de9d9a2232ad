"""Folding: the copy of agent text a hostile-claim detector reads.

What a person sees when the text is rendered is what counts: full-width and compatibility
forms, invisible characters, look-alike letters and markdown escapes are folded away so
that no disguise hides a claim from detection (`harness.enforce.claims`). The original text
is kept for the strictness judgement (`harness.enforce.strictness`), which refuses any of
these disguises in a claim that wants to be accepted.
"""

from __future__ import annotations

import html
import re
import unicodedata

# Look-alikes NFKC leaves alone. Structural punctuation first, then Cyrillic and Greek
# letters that render like Latin ones (so `::ЅТАТUS` is still a STATUS attempt).
LOOKALIKE_FROM = (
    "∶ː꞉˸։׃܃᛬⁚᠄ꓽ"  # colons
    "❴❵⦃⦄〔〕⟨⟩"  # braces and brackets
    "∣ǀ¦│┃❘⏐⎸⎹׀।ⵏ丨"  # vertical bars
    "꞊⹀、‚⸴⁏"  # equals, commas, semicolon
    "АВЕКМНОРСТХЅІЈУԀаеорсхуѕіјԁһԛԝոս"  # Cyrillic and Armenian
    "ΑΒΕΖΗΙΚΜΝΟΡΤΥΧοντυικαε"  # Greek
)
LOOKALIKE_TO = (
    ":::::::::::"  # colons
    "{}{}{}()"  # braces and brackets
    "|||||||||||||"  # vertical bars
    "==,,,;"  # equals, commas, semicolon
    "ABEKMHOPCTXSIJYDaeopcxysijdhqwnu"  # Cyrillic and Armenian
    "ABEZHIKMNOPTYXovtuikae"  # Greek
)
CONFUSABLES: dict[int, str] = {
    ord(a): b for a, b in zip(LOOKALIKE_FROM, LOOKALIKE_TO, strict=True)
} | {ord("∷"): "::"}

# Categories removed from the detection copy: format characters (zero-width space and
# joiners, BOM, soft hyphen, bidi controls, tag characters), combining marks (strike-
# through overlays), line/paragraph separators, private use, unassigned, and surrogates.
_INVISIBLE_CATEGORIES = frozenset({"Cf", "Mn", "Me", "Zl", "Zp", "Co", "Cn", "Cs"})


def is_invisible(ch: str) -> bool:
    cat = unicodedata.category(ch)
    if cat == "Cc":
        return ch != "\t"
    return cat in _INVISIBLE_CATEGORIES


_MARKDOWN_ESCAPE = re.compile(r"\\(?=[!-/:-@\[-`{-~])")


def fold(text: str) -> str:
    """The detection copy of `text`: what a reader of the rendered text would see.

    HTML character references are decoded; NFKC folds full-width and other
    compatibility forms (`：｛｝｜＝＠`, mathematical letters); invisible characters are
    dropped; remaining look-alikes are mapped to ASCII; NFKC runs again after the
    removals so that a character split by an invisible one still folds; markdown
    backslash escapes are removed.
    """
    text = unicodedata.normalize("NFKC", html.unescape(text))
    text = "".join(" " if ch == "\t" else ch for ch in text if not is_invisible(ch))
    text = unicodedata.normalize("NFKC", text.translate(CONFUSABLES))
    # Markdown renders `\:` as `:`; so does this copy.
    return _MARKDOWN_ESCAPE.sub("", text)
