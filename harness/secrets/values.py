"""`SecretValues`: known secret values, and the redaction of them from text and JSON data.

What is found, for each value:

* the value itself, and its common encodings: JSON-escaped (ASCII-only or not, and
  escaped twice, as JSON text inside a JSON string), URL-encoded (`%XX`, and `+` for
  spaces), and base64 (standard and URL-safe, at each of the three byte alignments a
  value can have inside a longer encoded text; only the characters that depend on the
  value alone are matched, so the surrounding text does not matter);
* a *fragment* of any of those of at least `FRAGMENT_MIN_CHARS` characters: a value cut
  by an output cap (`[... omitted ...]`, `[truncated]`, a grep line's `…`) leaves a piece
  on each side of the cut, and each piece long enough to recognise is removed. Pieces
  with fewer than `_FRAGMENT_MIN_DISTINCT` different characters are left alone unless
  they are the whole value (`0000000000` is not recognisable, and is everywhere).

Each occurrence becomes `[REDACTED:NAME]`, NAME being the variable (or the holder) the
value came from, so a reader knows what was there without seeing it.

What cannot be found: pieces shorter than `FRAGMENT_MIN_CHARS` (at most that many
characters of a value survive a cut), a value transformed in other ways (reversed,
spaced out, hashed, encrypted, encoded twice in base64, split across two fields).

Speed: exact forms are found with `str.find` (C speed); fragments by looking up the
text's `_GRAM`-character windows at every `_STEP`-th position in an index of every
window of every form, then growing each hit as far as it matches. A fragment of
`_GRAM + _STEP - 1` characters or more always holds one sampled window, and
`FRAGMENT_MIN_CHARS` is at least that.
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Iterable, Mapping
from typing import Any, Final
from urllib.parse import quote, quote_plus

FRAGMENT_MIN_CHARS: Final = 10
_GRAM: Final = 6
_STEP: Final = 4
_FRAGMENT_MIN_DISTINCT: Final = 5
_MIN_FORM_CHARS: Final = 8
_MEMO_MAX_CHARS: Final = 256
_MEMO_MAX_ENTRIES: Final = 8192
_LONG_MEMO_MAX_CHARS: Final = 16384
_LONG_MEMO_MAX_ENTRIES: Final = 64  # at most 1 MiB of text held
_LABEL_NAME = re.compile(r"[^A-Za-z0-9_]+")

assert _GRAM + _STEP - 1 <= FRAGMENT_MIN_CHARS


def label(name: str) -> str:
    """What stands in for a value of `name`."""
    shown = _LABEL_NAME.sub("_", name).strip("_")[:60] or "SECRET"
    return f"[REDACTED:{shown}]"


def encoded_forms(value: str) -> list[str]:
    """`value` and its common encodings (see the module doc), without repeats."""
    forms = [value]
    for ascii_only in (True, False):
        escaped = json.dumps(value, ensure_ascii=ascii_only)[1:-1]
        forms.append(escaped)
        forms.append(json.dumps(escaped, ensure_ascii=ascii_only)[1:-1])
    forms.append(quote(value, safe=""))
    forms.append(quote_plus(value, safe=""))
    forms.append(quote(value, safe="/:"))
    raw = value.encode("utf-8", errors="surrogatepass")
    for encode in (base64.b64encode, base64.urlsafe_b64encode):
        forms.extend(_base64_cores(raw, encode))
    unique: list[str] = []
    for form in forms:
        if len(form) >= _MIN_FORM_CHARS and form not in unique:
            unique.append(form)
    return unique


def _base64_cores(raw: bytes, encode: Any) -> list[str]:
    """For each alignment (0, 1, 2 bytes before the value in the encoded data), the base64
    characters that encode the value's bits only."""
    cores: list[str] = []
    for pad in range(3):
        text = encode(b"\0" * pad + raw).decode("ascii")
        start_bit, end_bit = 8 * pad, 8 * (pad + len(raw))
        first = -(-start_bit // 6)  # the first character whose 6 bits all follow the pad
        last = end_bit // 6  # one past the last character wholly inside the value
        cores.append(text[first:last])
    return cores


class SecretValues:
    """A set of secret values, each with the name it is known by; redacts them.

    Immutable once built; cheap to build (the index is made on first use)."""

    def __init__(self, items: Iterable[tuple[str, str]] = ()) -> None:
        by_value: dict[str, str] = {}
        for name, value in items:
            if isinstance(value, str) and len(value) >= _MIN_FORM_CHARS:
                by_value.setdefault(value, name)
        self._by_value = by_value
        self._forms: list[tuple[str, str]] | None = None  # (form, label), longest first
        self._grams: dict[str, list[tuple[int, int]]] | None = None
        # short text -> its redaction, or None: nothing to redact (`redact`)
        self._memo: dict[str, str | None] = {}
        self._long_memo: dict[str, str | None] = {}  # the same, for longer texts

    @classmethod
    def of(cls, mapping: Mapping[str, str]) -> SecretValues:
        """From `{name: value}`."""
        return cls(mapping.items())

    def __bool__(self) -> bool:
        return bool(self._by_value)

    def __len__(self) -> int:
        return len(self._by_value)

    def __repr__(self) -> str:  # never the values
        return f"SecretValues({sorted(set(self._by_value.values()))})"

    @property
    def names(self) -> list[str]:
        return sorted(set(self._by_value.values()))

    def items(self) -> list[tuple[str, str]]:
        """`(name, value)` pairs (for combining sets; never log them)."""
        return [(name, value) for value, name in self._by_value.items()]

    def values(self) -> list[str]:
        return list(self._by_value)

    def plus(self, items: Iterable[tuple[str, str]]) -> SecretValues:
        """These values and `items` (a name already known keeps its first name)."""
        return SecretValues([*self.items(), *items])

    # -- finding -------------------------------------------------------------------

    def _index(self) -> tuple[list[tuple[str, str]], dict[str, list[tuple[int, int]]]]:
        if self._forms is None or self._grams is None:
            forms: list[tuple[str, str]] = []
            seen: set[str] = set()
            for value, name in self._by_value.items():
                for form in encoded_forms(value):
                    if form not in seen:
                        seen.add(form)
                        forms.append((form, label(name)))
            forms.sort(key=lambda f: len(f[0]), reverse=True)
            grams: dict[str, list[tuple[int, int]]] = {}
            for index, (form, _) in enumerate(forms):
                for offset in range(len(form) - _GRAM + 1):
                    grams.setdefault(form[offset : offset + _GRAM], []).append((index, offset))
            self._forms, self._grams = forms, grams
        return self._forms, self._grams

    def spans(self, text: str) -> list[tuple[int, int, str]]:
        """`(start, end, label)` of every secret (or recognisable piece of one) in `text`,
        merged where they overlap, in order."""
        if not self._by_value or len(text) < _MIN_FORM_CHARS:
            return []
        forms, grams = self._index()
        found: list[tuple[int, int, str]] = []
        for form, shown in forms:
            start = text.find(form)
            while start != -1:
                found.append((start, start + len(form), shown))
                start = text.find(form, start + 1)
        if len(text) >= FRAGMENT_MIN_CHARS:
            found.extend(self._fragments(text, forms, grams))
        return _merged(found)

    def _fragments(
        self,
        text: str,
        forms: list[tuple[str, str]],
        grams: dict[str, list[tuple[int, int]]],
    ) -> list[tuple[int, int, str]]:
        found: list[tuple[int, int, str]] = []
        size = len(text)
        covered_to = -1
        for position in range(0, size - _GRAM + 1, _STEP):
            if position < covered_to:
                continue
            hits = grams.get(text[position : position + _GRAM])
            if not hits:
                continue
            for index, offset in hits:
                form, shown = forms[index]
                left, at = position, offset
                while left > 0 and at > 0 and text[left - 1] == form[at - 1]:
                    left, at = left - 1, at - 1
                right, upto = position + _GRAM, offset + _GRAM
                while right < size and upto < len(form) and text[right] == form[upto]:
                    right, upto = right + 1, upto + 1
                piece = text[left:right]
                whole = len(piece) == len(form)
                if whole or (
                    len(piece) >= FRAGMENT_MIN_CHARS and len(set(piece)) >= _FRAGMENT_MIN_DISTINCT
                ):
                    found.append((left, right, shown))
                    covered_to = max(covered_to, right - _GRAM + 1)
        return found

    # -- redacting -----------------------------------------------------------------

    def found_in(self, text: str) -> bool:
        return bool(self.spans(text))

    def redact(self, text: str) -> str:
        """`text` with every secret (and recognisable piece of one) replaced by its label."""
        size = len(text)
        if size > _MEMO_MAX_CHARS:
            if size > _LONG_MEMO_MAX_CHARS:
                return self._redact(text)
            # A long text that repeats is the system contract every run of a batch sends
            # (its own object each time): a few entries, bounded in size, spare a scan of
            # it per run; a text seen once only passes through.
            memo = self._long_memo
            limit = _LONG_MEMO_MAX_ENTRIES
        else:
            # Short texts repeat (a payload's keys, states, kinds, tool names): each is
            # scanned once per set. The set never changes, so neither does the answer.
            memo = self._memo
            limit = _MEMO_MAX_ENTRIES
        try:
            done = memo[text]
        except KeyError:
            if len(memo) >= limit:
                memo.clear()
            redacted = self._redact(text)
            done = memo[text] = None if redacted is text else redacted
        # Text without a secret comes back as the very object given (not the equal one
        # first memoised): callers tell "nothing changed" by identity and then reuse what
        # they have (`redact_json`, the reply and request redaction), instead of copying
        # and validating it again.
        return text if done is None else done

    def _redact(self, text: str) -> str:
        spans = self.spans(text)
        if not spans:
            return text
        parts: list[str] = []
        last = 0
        for start, end, shown in spans:
            parts.append(text[last:start])
            parts.append(shown)
            last = end
        parts.append(text[last:])
        return "".join(parts)

    def redact_json(self, value: Any) -> Any:
        """`value` (JSON-like data: dicts, lists, tuples, strings, scalars) with every string,
        dict keys included, redacted. Returns the same object when nothing changed, so
        callers can tell cheaply (`is`)."""
        if not self._by_value:
            return value
        return self._redact_any(value)

    def _redact_any(self, value: Any) -> Any:
        # Exact types first: `isinstance(value, Mapping)` is an ABC check (a Python-level
        # call), the slowest step of this walk over the plain JSON almost every caller
        # hands it. Subclasses and other mappings get the same rules below.
        kind = type(value)
        if kind is str:
            return self.redact(value)
        if kind is dict:
            return self._redact_mapping(value)
        if kind is list or kind is tuple:
            return self._redact_sequence(value)
        if kind is int or kind is float or kind is bool or value is None:
            return value
        if isinstance(value, str):
            return self.redact(value)
        if isinstance(value, Mapping):
            return self._redact_mapping(value)
        if isinstance(value, list | tuple):
            return self._redact_sequence(value)
        return value

    def _redact_mapping(self, value: Mapping[Any, Any]) -> Any:
        changed = False
        out: dict[Any, Any] = {}
        for key, item in value.items():
            new_key = self.redact(key) if isinstance(key, str) else key
            new_item = self._redact_any(item)
            changed = changed or new_key is not key or new_item is not item
            out[new_key] = new_item
        return out if changed or not isinstance(value, dict) else value

    def _redact_sequence(self, value: list[Any] | tuple[Any, ...]) -> Any:
        items = [self._redact_any(item) for item in value]
        if all(new is old for new, old in zip(items, value, strict=True)):
            return value
        return items if isinstance(value, list) else tuple(items)


def _merged(spans: list[tuple[int, int, str]]) -> list[tuple[int, int, str]]:
    spans.sort(key=lambda s: (s[0], -s[1]))
    merged: list[tuple[int, int, str]] = []
    for start, end, shown in spans:
        if merged and start <= merged[-1][1]:
            first_start, first_end, first_label = merged[-1]
            merged[-1] = (first_start, max(first_end, end), first_label)
        else:
            merged.append((start, end, shown))
    return merged
