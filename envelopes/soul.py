"""A SOUL file: the principal's settings document for one agent (SPEC-v5.0 Part IV).

It holds iLang declarations of the SOUL layer only: `::GENE` (typed, `envelopes.declarations.
gene`), `::GENE_MUTABLE`, `::RULE`, `::IMMUNE`, `::FACT`, `::BOUNDARY`, `::LESSON`, `::PRIOR`,
`::MEMORY`, and an optional document marker. Anything else (a `::STATUS`, a `::BUDGET`, an
operation chain) is refused: the SOUL is rendered into the developer segment of every
envelope, and a runtime declaration there would speak with an authority no SOUL has.

`read_soul` never raises: it returns the SOUL it could read and every finding (lint's and its
own). A SOUL with any finding is not used (`harness.soul` reports the first as bad input).
`Soul.render()` is canonical: `read_soul(s.render())` gives `s` back.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from envelopes.declarations.gene import Gene
from envelopes.document import Declaration, TextLine, read_document
from envelopes.errors import Finding, IlangError
from envelopes.lint import lint_ilang

SOUL_DECLARATIONS = frozenset(
    {"GENE", "GENE_MUTABLE", "RULE", "IMMUNE", "FACT", "BOUNDARY", "LESSON", "PRIOR", "MEMORY"}
)
SOUL_MARKER = "::ILANG::v5.0::SOUL"

Entry = Gene | str
"""A typed GENE, or another declaration as its canonical text (kept verbatim)."""


@dataclass(frozen=True, slots=True)
class Soul:
    entries: tuple[Entry, ...] = ()
    marker: str | None = SOUL_MARKER

    @property
    def genes(self) -> list[Gene]:
        return [e for e in self.entries if isinstance(e, Gene)]

    def gene(self, name: str) -> Gene | None:
        return next((g for g in self.genes if g.name == name), None)

    def render(self) -> str:
        lines = [self.marker] if self.marker else []
        for entry in self.entries:
            lines += entry.render_lines() if isinstance(entry, Gene) else entry.splitlines()
        return "\n".join(lines) + "\n" if lines else ""

    def replaced(self, gene: Gene) -> Soul:
        """`gene` in the place of the GENE of the same name (appended when there is none:
        Part IV STEP-2, appended to the existing GENE set)."""
        entries = list(self.entries)
        for i, entry in enumerate(entries):
            if isinstance(entry, Gene) and entry.name == gene.name:
                entries[i] = gene
                return replace(self, entries=tuple(entries))
        last_gene = max((i for i, e in enumerate(entries) if isinstance(e, Gene)), default=None)
        at = len(entries) if last_gene is None else last_gene + 1
        entries.insert(at, gene)
        return replace(self, entries=tuple(entries))

    def moved_first(self, name: str) -> Soul:
        """The GENE `name` moved before every other GENE (STEP-3: position signals
        attention); the other entries keep their places."""
        genes = self.genes
        target = next((g for g in genes if g.name == name), None)
        if target is None or genes[0].name == name:
            return self
        order = iter([target, *(g for g in genes if g.name != name)])
        entries = tuple(next(order) if isinstance(e, Gene) else e for e in self.entries)
        return replace(self, entries=entries)


def _soul_entry(d: Declaration) -> Entry:
    if d.name == "GENE" and d.subname is None:
        return Gene.from_declaration(d)
    return "\n".join(d.render_lines())


def read_soul(text: str) -> tuple[Soul, list[Finding]]:
    """The SOUL in `text` and every problem found (lint's first, then the SOUL's own)."""
    findings = list(lint_ilang(text))
    document, _ = read_document(text)
    entries: list[Entry] = []
    marker: str | None = None
    for item in document.items:
        if isinstance(item, TextLine) and item.kind == "marker" and marker is None:
            marker = item.text
            continue
        if isinstance(item, Declaration) and item.name in SOUL_DECLARATIONS:
            if item.prefix is not None:
                findings.append(
                    Finding("E303", "a SOUL declaration takes no temporal prefix", item.line, 1)
                )
                continue
            try:
                entries.append(_soul_entry(item))
            except (IlangError, ValueError) as err:
                message = err.message if isinstance(err, IlangError) else str(err).splitlines()[0]
                findings.append(Finding("E303", message, item.line, 1))
            continue
        what = f"::{item.full_name}" if isinstance(item, Declaration) else "this line"
        line = item.line
        allowed = ", ".join(f"::{n}" for n in sorted(SOUL_DECLARATIONS))
        findings.append(
            Finding("E303", f"{what} is not a SOUL declaration (a SOUL holds {allowed})", line, 1)
        )
    findings.sort(key=lambda f: (f.line, f.col))
    return Soul(entries=tuple(entries), marker=marker), findings
