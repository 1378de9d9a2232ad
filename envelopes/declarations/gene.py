"""`::GENE` as a SOUL file holds it (v3.0 layer; SPEC-v5.0 Part IV `MODULE::GENE_CORRECTION`).

A GENE is a header `::GENE{name|conf:…|scope:…|…}` and body lines: `T:` the correct behaviour,
`A:` the error pattern ⇒ its consequence, nested declarations and fields. The body is kept
as written, line by line and in order, so a principal's GENE renders back to the very text
that was read (`Gene.parse(g.render()) == g`, and the text round-trips too).

The runtime adds two kinds of B3 field lines to the body (Part III §1.4 KEY-SCOPING: an
unknown key in a known declaration is a field, never rejected):

* `SEEN:<run>|round:<n>|class:<error class>|step:<k>`: one line per occurrence of the
  error this GENE corrects, where it came from. The number of SEEN lines is how often the
  error happened; `(run, step)` makes applying the same occurrence twice a no-op.
* `FLAG:principal_rule_error|run:<run>|note:<text>`: the principal's own rule produced an
  error (§3): recorded against the rule, for the principal to amend; it counts nowhere.
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from envelopes.document import INDENT, Declaration
from envelopes.errors import IlangError

NAME_PATTERN = r"^[A-Za-z_][A-Za-z0-9_]*$"
_NAME = re.compile(NAME_PATTERN)
_FIELD = re.compile(r"([A-Za-z_][A-Za-z0-9_]*):(.*)\Z", re.S)
_SLUG_CUT = re.compile(r"[^\w]+", re.UNICODE)

Confidence = Literal["mutable", "confirmed"]
#: §3 error classes. principal_rule_error is the principal's, never the agent's.
ERROR_CLASSES: tuple[str, ...] = (
    "principal_rule_error",
    "factual_error",
    "judgment_error",
    "style_violation",
    "boundary_breach",
    "repeated_pattern",
)
AGENT_ERROR_CLASSES: tuple[str, ...] = ERROR_CLASSES[1:]


def slug(text: str, limit: int = 80) -> str:
    """`text` as one body-safe token: every run of non-word characters (spaces, `|`,
    braces, `::`, `⇒`, newlines) becomes `_`, so no person's words can add structure to a
    SOUL (values may be any language: word characters of every script are kept)."""
    cut = _SLUG_CUT.sub("_", text).strip("_")
    return cut[:limit].rstrip("_") or "unspecified"


class Occurrence(BaseModel):
    """One `SEEN:` line: an occurrence of the error, where it came from."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    run: str = Field(pattern=r"^[A-Za-z0-9_.\-]+$")
    round: int = Field(ge=0)
    error: str = Field(pattern=NAME_PATTERN)
    step: int = Field(ge=0)

    def render(self) -> str:
        return f"SEEN:{self.run}|round:{self.round}|class:{self.error}|step:{self.step}"


class Flag(BaseModel):
    """One `FLAG:principal_rule_error` line."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    run: str = Field(pattern=r"^[A-Za-z0-9_.\-]+$")
    note: str

    def render(self) -> str:
        return f"FLAG:principal_rule_error|run:{self.run}|note:{slug(self.note)}"


def _fields(text: str) -> dict[str, str]:
    found: dict[str, str] = {}
    for part in text.split("|"):
        match = _FIELD.match(part.strip())
        if match:
            found.setdefault(match.group(1), match.group(2).strip())
    return found


class Gene(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    name: str = Field(pattern=NAME_PATTERN)
    conf: str = "mutable"
    scope: str = "local"
    extra: tuple[tuple[str, str], ...] = ()
    """Header fields other than conf and scope (`pri:MAX`), in order."""
    body: tuple[str, ...] = ()
    """Body lines as written, relative to the body's indentation (nested ones keep theirs)."""
    conf_first: bool = True
    """Header order: conf before scope (how the text was written)."""

    # ----------------------------------------------------------------- reading
    @classmethod
    def from_declaration(cls, d: Declaration) -> Gene:
        parts = [p.strip() for p in d.header.split("|")]
        name = parts[0]
        if not _NAME.match(name):
            raise IlangError(
                "E303", f"::GENE names itself first (an identifier), not {name!r}", d.line
            )
        conf, scope, extra, order = "mutable", "local", [], []
        for part in parts[1:]:
            match = _FIELD.match(part)
            if match is None:
                raise IlangError("E300", f"::GENE header field {part!r} is not key:value", d.line)
            key, value = match.group(1), match.group(2)
            if key == "conf":
                conf = value
                order.append(key)
            elif key == "scope":
                scope = value
                order.append(key)
            else:
                extra.append((key, value))
        body: list[str] = []
        for item in d.body:
            body += item.render(0)
        return cls(
            name=name,
            conf=conf,
            scope=scope,
            extra=tuple(extra),
            body=tuple(body),
            conf_first=order[:1] != ["scope"],
        )

    # ----------------------------------------------------------------- views
    @property
    def traits(self) -> list[str]:
        return [line[2:] for line in self.body if line.startswith("T:")]

    @property
    def antis(self) -> list[str]:
        return [line[2:] for line in self.body if line.startswith("A:")]

    @property
    def seen(self) -> list[Occurrence]:
        found = []
        for line in self.body:
            if line.startswith("SEEN:"):
                head, _, rest = line[5:].partition("|")
                fields = _fields(rest)
                try:
                    found.append(
                        Occurrence(
                            run=head,
                            round=int(fields.get("round", "0")),
                            error=fields.get("class", "unspecified"),
                            step=int(fields.get("step", "0")),
                        )
                    )
                except ValueError:
                    continue  # a hand-edited line that is not ours: not an occurrence
        return found

    @property
    def flags(self) -> list[Flag]:
        found = []
        for line in self.body:
            if line.startswith("FLAG:principal_rule_error"):
                fields = _fields(line.partition("|")[2])
                try:
                    found.append(Flag(run=fields.get("run", "?"), note=fields.get("note", "")))
                except ValueError:
                    continue
        return found

    @property
    def hits(self) -> int:
        """How often the error this GENE corrects has happened (its SEEN lines)."""
        return len(self.seen)

    # ----------------------------------------------------------------- writing
    def header(self) -> str:
        pairs = [("conf", self.conf), ("scope", self.scope)]
        if not self.conf_first:
            pairs.reverse()
        fields = [f"{k}:{v}" for k, v in [*pairs, *self.extra]]
        return "|".join([self.name, *fields])

    def render_lines(self) -> list[str]:
        return [f"::GENE{{{self.header()}}}", *(INDENT + line for line in self.body)]

    def render(self) -> str:
        return "\n".join(self.render_lines()) + "\n"

    def with_lines(self, *lines: str) -> Gene:
        return self.model_copy(update={"body": (*self.body, *lines)})
