"""The spec's error codes (SPEC.md §9, SPEC-v5.0.md Part III §2) and the one error type
the text layer raises."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Severity = Literal["error", "warning"]

ERROR_CODES: dict[str, tuple[str, str]] = {
    "E200": (
        "Entity Not Found",
        "An entity name cannot be resolved: it breaks the @[A-Z][A-Z0-9_]* pattern "
        "(lower-case, empty or leading digit) or no tier or registry knows it.",
    ),
    "E201": (
        "Unsupported Entity",
        "The entity is registered but not available in this environment (an external "
        "Tier 2 service that is not connected). Recoverable: degrade per v4.0 §0.1.",
    ),
    "E202": (
        "Entity Rebinding",
        "A document rebinds a registered Tier 1/2/3 entity name to foreign semantics, "
        "for example by introducing it with ::STATE.",
    ),
    "E300": (
        "Syntax Error",
        "The text matches no iLang production: a malformed operation or declaration, an "
        "unregistered declaration, a missing `{`, an unclosed span, nesting deeper than one "
        "level, prose in a non-prose body, a full-width structural separator, an orphan `=>`.",
    ),
    "E301": (
        "Type Mismatch",
        "A value has the wrong type for its field, e.g. a non-numeric budget limit or a "
        "rubric weight that is not a number.",
    ),
    "E302": (
        "Invalid Modifier",
        "An operation uses a modifier key outside the 29 registered modifiers (plus the "
        "v4.1 media profile keys).",
    ),
    "E303": (
        "Invalid Value",
        "A value is not allowed where it stands: a reserved character in a bare value, a "
        "state outside the status machine, a `remaining` budget field, rubric weights that "
        "do not sum to 1, a ::JUDGE mode that is not f_v5 of its vector.",
    ),
    "E304": (
        "Unknown Verb",
        "The operation's verb (or a BATC verb reference) is not one of the 88 verbs.",
    ),
    "E305": (
        "Unknown Alias",
        "A single non-ASCII letter stands where a verb alias would, but it is not one of the "
        "13 Greek aliases.",
    ),
    "E400": ("Rate Limited", "A provider refused the call for rate (HTTP 429)."),
    "E401": (
        "Capacity Exceeded",
        "A budget or size limit would be exceeded: the call cannot fit in what is left.",
    ),
    "E402": ("Timeout", "An operation did not finish within the time allowed."),
    "E500": (
        "Dependency Unavailable",
        "Something the operation needs (a model, a tool, a file) cannot be reached.",
    ),
    "E501": (
        "Ambiguous Instruction",
        "The text admits more than one reading and the runtime will not guess (fail closed).",
    ),
    "E502": (
        "Unsupported Format",
        "The input is in a form this reader does not carry: a byte order mark, a chain whose "
        "OUT is not last, OUT with a target or as a verb reference, two chains on one line.",
    ),
}


@dataclass(frozen=True)
class Finding:
    """One diagnostic at a 1-based line and column."""

    code: str
    message: str
    line: int = 1
    col: int = 1
    severity: Severity = "error"

    @property
    def title(self) -> str:
        return ERROR_CODES[self.code][0]


class IlangError(ValueError):
    """The only exception the text layer raises for bad iLang text."""

    def __init__(self, code: str, message: str, line: int = 1, col: int = 1) -> None:
        if code not in ERROR_CODES:
            raise KeyError(f"unknown error code {code}")
        super().__init__(f"{line}:{col}: {code} {ERROR_CODES[code][0]}: {message}")
        self.code = code
        self.message = message
        self.line = line
        self.col = col

    @property
    def finding(self) -> Finding:
        return Finding(self.code, self.message, self.line, self.col)


def explain(code: str) -> str:
    """Human text for `ilh lint --explain CODE`."""
    title, text = ERROR_CODES[code.upper()]
    return f"{code.upper()} {title}\n\n{text}"
