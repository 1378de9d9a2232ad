"""Frozen copy of the document reader as it stood before the single-pass rewrite (commit
4dad602). Test data for the differential test only: never imported by the product."""

from __future__ import annotations

import re

from envelopes.errors import Finding, IlangError
from envelopes.vocabulary import (
    DOUBLE_BRACE,
    NESTABLE_DECLARATIONS,
    PROSE_BODY,
    TOLERATED_ANNOTATIONS,
    TOP_LEVEL_DECLARATIONS,
)
from tests.parser_frozen.old_chain import (
    CONTROL,
    ENTITY_NAME,
    Chain,
    head_of,
    is_operation_head,
    parse_chain,
)
from tests.parser_frozen.old_nodes import (
    BodyForm,
    BodyLine,
    ChainLine,
    Declaration,
    Document,
    Item,
    Shape,
    TextLine,
)

_DOC_MARKER = re.compile(r"::ILANG::\S+\Z")
_DECL_HEAD = re.compile(r"::([A-Z][A-Z0-9_]*)(?:::([A-Z][A-Z0-9_]*))?(.*)\Z", re.S)
_BAD_HEAD = re.compile(r"::(\S*)")
_TEMPORAL_PREFIX = re.compile(r"(T\[[^\]]+\])\s+(::.*)\Z", re.S)
_TEMPORAL_BIND = re.compile(r"T\[[^\]]+\]=\S+")
_TEMPORAL_NOTE = re.compile(r"(T\[[^\]]+\](→T\[[^\]]+\])?|PARALLEL\{[^}]*\})(\s.*)?\Z")
_TAG = r"\[[A-Z][A-Z0-9_\-]*(?::[^\[\]]*)?\]"
_TAG_LINE = re.compile(rf"(?:{_TAG})+\Z")
_ONE_TAG = re.compile(r"\[[A-Z][A-Z0-9_\-]*\]\Z")  # `[NAME]`: no value, no text
_TAG_TEXT = re.compile(rf"{_TAG}(\s+\S.*)?\Z")
_KEY = re.compile(r"([A-Za-z_][A-Za-z0-9_]*):(.*)\Z", re.S)
# Entities count only in structural positions; `@` inside free prose is not an entity
# (Part III Appendix B).
_ENTITY_TOKEN = re.compile(r"(?<=[{:|,→=])@([A-Za-z0-9][A-Za-z0-9_\-]*)?")
_DELIMITER_FIELD = re.compile(r"(?:^|\|)\s*delimiter:([^|}\s]+)")
_ID_FIELD = re.compile(r"(?:^|\|)\s*id:([^|}\s]+)")
_LINE_PAD = " \t"
_DOUBLE_INLINE = re.compile(r"\{([^{}]*)\}\{(.*)\}\Z", re.S)
_DOUBLE_OPEN = re.compile(r"\{([^{}]*)\}\{([^}]*)\Z", re.S)
_STRUCTURAL_MARKS = ("::", "[", "{", "}", "|", "⇒", "=>")
INDENT = "  "


def indent_of(line: str) -> int:
    return len(line) - len(line.lstrip())


class _DocumentReader:
    def __init__(self, text: str, first_line: int) -> None:
        self.lines = text.split("\n")
        if self.lines and self.lines[-1] == "":
            self.lines.pop()
        self.lines = [ln[:-1] if ln.endswith("\r") else ln for ln in self.lines]
        self.offset = first_line
        self.findings: list[Finding] = []
        # Control characters found per line index; reported after reading, except on the
        # payload lines of opaque blocks, which are never read as iLang.
        self.controls: list[tuple[int, Finding]] = []
        self.opaque_lines: set[int] = set()
        # The line index right after the most recent opaque block's delimiter line: the
        # only place an ::END_UNTRUSTED line may stand.
        self.end_expected_at: int | None = None

    # ------------------------------------------------------------------ reporting
    def error(self, index: int, code: str, message: str, col: int = 1) -> None:
        self.findings.append(Finding(code, message, index + self.offset, col))

    def raised(self, err: IlangError, index: int) -> None:
        self.findings.append(Finding(err.code, err.message, index + self.offset, err.col))

    def col_of(self, index: int, needle: str) -> int:
        found = self.lines[index].find(needle)
        return found + 1 if found >= 0 else 1

    # ---------------------------------------------------------------------- lines
    def check_characters(self) -> None:
        if self.lines and self.lines[0].startswith("\ufeff"):
            self.error(0, "E502", "a byte order mark is not part of iLang text")
            self.lines[0] = self.lines[0][1:]
        for index, line in enumerate(self.lines):
            for found in CONTROL.finditer(line):
                if found.group(0) != "\t":
                    ch = found.group(0)
                    message = f"control character U+{ord(ch):04X}"
                    finding = Finding("E300", message, index + self.offset, found.start() + 1)
                    self.controls.append((index, finding))
                    break

    def read(self) -> Document:
        self.check_characters()
        document = self.read_items()
        # Opaque payloads are content, not iLang text: a control character there (ANSI
        # escapes in tool output, a NUL) is data, never a finding.
        control_findings = [f for index, f in self.controls if index not in self.opaque_lines]
        self.findings[:0] = control_findings
        return document

    def read_items(self) -> Document:
        items: list[Item] = []
        nonblank = [i for i, ln in enumerate(self.lines) if ln.strip()]
        first_nb = nonblank[0] if nonblank else -1
        last_nb = nonblank[-1] if nonblank else -1
        in_preamble = False
        seen_construct = False
        last_chain: tuple[int, str] | None = None  # (first line index, joined text)
        i = 0
        n = len(self.lines)

        def flush_chain() -> None:
            nonlocal last_chain
            if last_chain is not None:
                start, joined = last_chain
                chain = self.chain_at(start, joined)
                if chain is not None:
                    items.append(ChainLine(chain, start + self.offset))
                last_chain = None

        while i < n:
            s = self.lines[i].strip()
            if not s or s == "---":
                flush_chain()
                i += 1
                continue
            if s.startswith("=>"):
                if last_chain is None:
                    self.error(i, "E300", "orphan `=>`: no operation line before it")
                else:
                    last_chain = (last_chain[0], last_chain[1] + s)
                i += 1
                continue
            flush_chain()
            preamble_here, in_preamble = in_preamble, False
            if _DOC_MARKER.match(s):
                if i == first_nb:
                    in_preamble = True
                elif i != last_nb:
                    self.error(i, "E300", "the ::ILANG marker may only open or close a document")
                items.append(TextLine("marker", s, i + self.offset))
                i += 1
                continue
            if _TEMPORAL_BIND.match(s):
                items.append(TextLine("temporal", s, i + self.offset))
                i += 1
                continue
            if s.startswith("::") or _TEMPORAL_PREFIX.match(s):
                seen_construct = True
                start = i
                i, item = self.construct(i)
                if (
                    isinstance(item, Declaration)
                    and item.name == "END_UNTRUSTED"
                    and start != self.end_expected_at
                ):
                    self.error(
                        start,
                        "E300",
                        "::END_UNTRUSTED closes an opaque block: it stands right after the "
                        "block's delimiter line",
                    )
                if item is not None:
                    items.append(item)
                continue
            if s.startswith("["):
                if preamble_here and _TAG_LINE.match(s) and "]=>" not in s:
                    # Part III §1.7: tags right after the marker are metadata even when a
                    # tag's name is also a verb (`[LIST:known_repos]`).
                    in_preamble = True
                    items.append(TextLine("tags", s, i + self.offset))
                elif "]=>" in s or is_operation_head(head_of(s)) or _ONE_TAG.match(s):
                    # Outside the preamble, a bare `[NAME]` on its own line is a
                    # one-step chain (as the reference validator reads it): an unknown verb
                    # there is E304, never silently a tag. Tag rows stay tags.
                    seen_construct = True
                    last_chain = (i, s)
                elif _TAG_LINE.match(s):
                    items.append(TextLine("tags", s, i + self.offset))
                else:
                    self.error(
                        i, "E300", f"bracket line is neither a tag nor an operation: {s[:40]}"
                    )
                i += 1
                continue
            if _TEMPORAL_NOTE.match(s):
                items.append(TextLine("temporal", s, i + self.offset))
            elif s.startswith(("→", "<<<")):
                items.append(TextLine("annotation", s, i + self.offset))
            elif not seen_construct and not any(m in s for m in _STRUCTURAL_MARKS):
                items.append(TextLine("colophon", s, i + self.offset))
            else:
                self.error(i, "E300", f"line matches no iLang production: {s[:40]}")
            i += 1
        flush_chain()
        return Document(tuple(items))

    def chain_at(self, index: int, text: str) -> Chain | None:
        try:
            return parse_chain(text, index + self.offset, self.col_of(index, "[") or 1)
        except IlangError as err:
            self.raised(err, index)
            return None

    # ----------------------------------------------------------------- constructs
    def construct(self, i: int) -> tuple[int, Item | None]:
        line = self.lines[i]
        stripped = line.strip()
        prefix_match = _TEMPORAL_PREFIX.match(stripped)
        prefix = prefix_match.group(1) if prefix_match else None
        text = prefix_match.group(2) if prefix_match else stripped
        head = _DECL_HEAD.match(text)
        if head is None:
            bad = _BAD_HEAD.match(text)
            self.error(
                i, "E300", f"malformed declaration header: {(bad.group(0) if bad else text)[:40]}"
            )
            return i + 1, None
        name, subname, rest = head.group(1), head.group(2), head.group(3).strip()
        if name == "ILANG":
            self.error(i, "E300", f"malformed ::ILANG document marker: {text[:40]}")
            return i + 1, None
        if name in TOLERATED_ANNOTATIONS:
            return i + 1, TextLine("annotation", stripped, i + self.offset)
        if subname and name != "MODULE":
            self.error(i, "E300", f"::{name}::{subname}: only ::MODULE takes a two-segment name")
        if name not in TOP_LEVEL_DECLARATIONS:
            self.error(i, "E300", f"::{name} is not in the declaration registry")
        if not rest.startswith("{"):
            self.error(
                i, "E300", f"::{name} header lacks `{{`", self.col_of(i, "::") + 2 + len(name)
            )
            return i + 1, None
        close = find_close(rest)
        self.check_header(i, rest[: close + 1] if close > 0 else rest)
        header_indent = indent_of(line)
        base = Declaration(name, "", subname=subname, prefix=prefix, line=i + self.offset)

        if name in DOUBLE_BRACE:
            return self.narrative(i, base, rest, header_indent)
        if rest.count("{") - rest.count("}") > 0:
            return self.brace_span(i, base, rest[1:], None)
        header = rest[1:close] if close > 0 else rest[1:]
        trailing = rest[close + 1 :].strip() if close > 0 else ""
        if trailing.startswith("::"):
            self.error(i, "E300", "a second declaration on a header line: start a new line")
            trailing = ""
        decl = _with(base, header=header)
        if name == "UNTRUSTED":
            delimiter = _DELIMITER_FIELD.search(header)
            if delimiter:
                if trailing:
                    self.error(i, "E300", "text after an opaque block's header")
                return self.opaque(i, _with(decl, delimiter=delimiter.group(1)))
        first_body: list[BodyLine] = []
        if trailing:
            body_line = self.body_line(i, name, trailing)
            if body_line is not None:
                first_body.append(body_line)
        end, body = self.body(i, name, header_indent)
        body = first_body + body
        shape: Shape = "header_body" if body else "inline"
        return end, _with(decl, shape=shape, body=tuple(body))

    def check_header(self, i: int, rest: str) -> None:
        # Part III §1.3: full-width punctuation is legal inside values but never as a
        # structural separator; a pipe segment with `：` and no ASCII `:` uses it as one.
        if "｜" in rest:
            self.error(
                i, "E300", "full-width ｜ used as a separator: use ASCII `|`", self.col_of(i, "｜")
            )
        elif "：" in rest:
            for segment in rest.strip("{}").split("|"):
                if "：" in segment and ":" not in segment:
                    self.error(
                        i,
                        "E300",
                        "full-width ： used as a separator: use ASCII `:`",
                        self.col_of(i, "："),
                    )
                    break
        self.check_entities(i, rest)

    def check_entities(self, i: int, text: str) -> None:
        for token in _ENTITY_TOKEN.finditer(text):
            name = token.group(1) or ""
            if not ENTITY_NAME.match(name) and "-" not in name:
                # A hyphenated name (`@GPT-5.5-Pro` in a tag) is a label, not an entity.
                col = self.col_of(i, token.group(0))
                self.error(i, "E300", f"entity @{name} does not match @[A-Z][A-Z0-9_]*", col)

    def narrative(
        self, i: int, base: Declaration, rest: str, header_indent: int
    ) -> tuple[int, Item | None]:
        inline = _DOUBLE_INLINE.match(rest)
        if inline:
            decl = _with(base, header=inline.group(1), content=inline.group(2))
            end, body = self.body(i, base.name, header_indent)
            return end, _with(decl, shape="header_body" if body else "inline", body=tuple(body))
        opened = _DOUBLE_OPEN.match(rest)
        if opened:
            return self.brace_span(i, base, opened.group(1), opened.group(2))
        self.error(
            i,
            "E300",
            f"::{base.name} takes the double-brace form ::{base.name}{{addressing}}{{content}}",
        )
        return i + 1, None

    def brace_span(
        self, i: int, base: Declaration, header: str, content: str | None
    ) -> tuple[int, Item | None]:
        # Part III §1.1: a set span (header ends with `{`) closes at a bare `}` line; a
        # wrapped field header closes at the first line ending with `}`.
        opening = content if content is not None else header
        wrapped = opening.strip() != ""
        j = i + 1
        while j < len(self.lines):
            t = self.lines[j].strip()
            if t == "}" or (wrapped and t.endswith("}")):
                span = tuple(ln.strip() for ln in self.lines[i + 1 : j] if ln.strip())
                closed_by_line = t == "}"
                if not closed_by_line:
                    span = (*span, t)
                decl = _with(
                    base,
                    shape="brace_span",
                    header=header,
                    content=content,
                    span=span,
                    span_closed_by_line=closed_by_line,
                )
                return j + 1, decl
            j += 1
        self.error(i, "E300", f"::{base.name} brace span never closes")
        return len(self.lines), None

    def opaque(self, i: int, decl: Declaration) -> tuple[int, Item | None]:
        delimiter = decl.delimiter or ""
        if i + 1 >= len(self.lines) or self.lines[i + 1].strip(_LINE_PAD) != f"<<<{delimiter}":
            self.error(
                i + 1 if i + 1 < len(self.lines) else i,
                "E300",
                f"an opaque block opens with `<<<{delimiter}` on the line after its header",
            )
            return i + 1, None
        j = self.delimiter_line(i + 2, delimiter)
        if j is None:
            self.error(i, "E300", f"opaque block never reaches its delimiter line `{delimiter}`")
            return len(self.lines), None
        payload = "\n".join(self.lines[i + 2 : j])
        self.check_end_line(i, j + 1, decl.header)
        return j + 1, _with(decl, opaque=payload)

    def delimiter_line(self, start: int, delimiter: str) -> int | None:
        """Index of the first line from `start` that is exactly `delimiter` (spaces and
        tabs aside); every line before it is payload, marked opaque."""
        for j in range(start, len(self.lines)):
            if self.lines[j].strip(_LINE_PAD) == delimiter:
                return j
            self.opaque_lines.add(j)
        return None

    def check_end_line(self, i: int, at: int, header: str) -> None:
        """SPEC-v4.0-FINAL §1: the delimiter line is followed by `::END_UNTRUSTED{id:…}`
        naming the block's own id (E300 otherwise, as `isolation.read_untrusted`)."""
        self.end_expected_at = at
        own = _ID_FIELD.search(header)
        own_id = own.group(1) if own else None
        end_line = self.lines[at].strip(_LINE_PAD) if at < len(self.lines) else ""
        end = _DECL_HEAD.match(end_line)
        if end is None or end.group(1) != "END_UNTRUSTED" or end.group(2) is not None:
            self.error(
                i,
                "E300",
                "an opaque block ends with its delimiter line followed by ::END_UNTRUSTED"
                f"{{id:{own_id or '…'}}}",
            )
            return
        closing = end.group(3).strip()
        end_id = _ID_FIELD.search(closing[1:-1]) if closing.startswith("{") else None
        if (end_id.group(1) if end_id else None) != own_id:
            self.error(at, "E300", f"::END_UNTRUSTED does not name the block's id {own_id!r}")

    # ---------------------------------------------------------------------- bodies
    def body(self, i: int, parent: str, header_indent: int) -> tuple[int, list[BodyLine]]:
        """Header-body lines: indented deeper than the header, or flush-left body forms
        B1–B5 at the header's own indent (Part III §1.1 FLUSH-LEFT-BODY)."""
        out: list[BodyLine] = []
        regime: str | None = None
        j = i + 1
        n = len(self.lines)
        last_chain: int | None = None  # index into out of the chain a `=>` may extend
        while j < n:
            line = self.lines[j]
            s = line.strip()
            if not s:
                if regime != "indent":
                    break
                k = j + 1
                while k < n and not self.lines[k].strip():
                    k += 1
                if k < n and indent_of(self.lines[k]) > header_indent:
                    j = k
                    last_chain = None
                    continue
                break
            indent = indent_of(line)
            if indent > header_indent:
                if regime == "flush":
                    break
                regime = "indent"
                if s.startswith("=>"):
                    if last_chain is None:
                        self.error(
                            j,
                            "E300",
                            f"orphan `=>` in the ::{parent} body: no operation line before it",
                        )
                    else:
                        out[last_chain] = self.extend_chain(out[last_chain], s, j)
                    j += 1
                    continue
                if s.startswith("::"):
                    j, nested = self.nested(j, indent)
                    if nested is not None:
                        out.append(nested)
                    last_chain = None
                    continue
                body_line = self.body_line(j, parent, s)
                last_chain = None
                if body_line is not None:
                    out.append(body_line)
                    if body_line.form == "B8":
                        last_chain = len(out) - 1
                j += 1
                continue
            if regime == "indent" or indent != header_indent:
                break
            if s.startswith("::") or _TEMPORAL_PREFIX.match(s) or _DOC_MARKER.match(s):
                break
            if not is_flush_body_form(s):
                break
            regime = "flush"
            body_line = self.body_line(j, parent, s)
            if body_line is not None:
                out.append(body_line)
            j += 1
        return j, out

    def extend_chain(self, item: BodyLine, continuation: str, j: int) -> BodyLine:
        if item.chain is None:
            return item
        joined = item.chain.render() + continuation
        try:
            chain = parse_chain(joined, item.line, 1)
        except IlangError as err:
            self.raised(err, j)
            return item
        return BodyLine("B8", "", chain=chain, line=item.line)

    def nested(self, j: int, indent: int) -> tuple[int, BodyLine | None]:
        s = self.lines[j].strip()
        head = _DECL_HEAD.match(s)
        delimiter = _DELIMITER_FIELD.search(s) if head and head.group(1) == "UNTRUSTED" else None
        if delimiter is not None:
            # An opaque block is a top-level construct; its payload is skipped unread.
            self.error(j, "E300", "an opaque ::UNTRUSTED block cannot nest in a body")
            close = self.delimiter_line(j + 1, delimiter.group(1))
            return (len(self.lines) if close is None else close + 1), None
        end = j + 1
        own_body: list[BodyLine] = []
        name = head.group(1) if head else "?"
        while end < len(self.lines):
            t = self.lines[end].strip()
            if not t or indent_of(self.lines[end]) <= indent:
                break
            if t.startswith("::"):
                self.error(
                    end, "E300", "declaration nesting deeper than one level (Part III §1.2 B7)"
                )
            else:
                body_line = self.body_line(end, name, t)
                if body_line is not None:
                    own_body.append(body_line)
            end += 1
        if head is None:
            self.error(j, "E300", f"malformed nested declaration: {s[:40]}")
            return end, None
        if name in TOLERATED_ANNOTATIONS:
            return end, BodyLine("annotation", s, line=j + self.offset)
        subname = head.group(2)
        if (subname and name != "MODULE") or name not in NESTABLE_DECLARATIONS:
            self.error(
                j, "E300", f"nested ::{head.group(1)} is not a registered declaration that may nest"
            )
            return end, None
        rest = head.group(3).strip()
        self.check_header(j, rest)
        if name in DOUBLE_BRACE:
            double = _DOUBLE_INLINE.match(rest)
            if not double:
                self.error(j, "E300", f"::{name} takes the double-brace form")
                return end, None
            decl = Declaration(name, double.group(1), content=double.group(2), line=j + self.offset)
        else:
            close = find_close(rest)
            if not rest.startswith("{") or close < 0 or rest[close + 1 :].strip():
                self.error(j, "E300", f"a nested ::{name} must be one closed header on its line")
                return end, None
            decl = Declaration(name, rest[1:close], subname=subname, line=j + self.offset)
        if own_body:
            decl = _with(decl, shape="header_body", body=tuple(own_body))
        return end, BodyLine("B7", "", nested=decl, line=j + self.offset)

    def body_line(self, j: int, parent: str, s: str) -> BodyLine | None:
        """Part III §1.2: the form of a body line is decided by its first token."""
        at = j + self.offset
        if _TEMPORAL_BIND.match(s) or _TEMPORAL_NOTE.match(s):
            return BodyLine("temporal", s, line=at)
        if s.startswith("→"):
            return BodyLine("annotation", s, line=at)
        if s.startswith(("T:", "A:")):
            self.check_entities(j, s)
            return BodyLine("B1", s, line=at)
        if s.startswith("=>"):
            self.error(j, "E300", f"orphan `=>` in the ::{parent} body")
            return None
        if s.startswith("["):
            if "]=>" in s or is_operation_head(head_of(s)):
                chain = self.chain_at(j, s)
                return BodyLine("B8", "", chain=chain, line=at) if chain else None
            if _TAG_LINE.match(s) or _TAG_TEXT.match(s):
                return BodyLine("B5", s, line=at)
            if parent in PROSE_BODY:
                return BodyLine("B6", s, line=at)
            self.error(
                j, "E300", f"bracket body line is neither a B5 tag nor a B8 operation: {s[:40]}"
            )
            return None
        key = _KEY.match(s)
        if key:
            self.check_entities(j, s)
            value = key.group(2).lstrip()
            form: BodyForm = "B4" if value.startswith("[") else "B3" if "|" in value else "B2"
            return BodyLine(form, s, line=at)
        if parent in PROSE_BODY:
            return BodyLine("B6", s, line=at)
        self.error(j, "E300", f"prose line in the non-prose ::{parent} body: {s[:40]}")
        return None


def is_flush_body_form(s: str) -> bool:
    """B1–B5 shapes that bind flush-left; operations (B8) never do."""
    if s.startswith(("T:", "A:")):
        return True
    if s.startswith("["):
        return bool(_TAG_LINE.match(s) or _TAG_TEXT.match(s)) and not is_operation_head(head_of(s))
    return bool(_KEY.match(s) or _TEMPORAL_BIND.match(s))


def find_close(rest: str) -> int:
    """Index of the brace that closes the one opening `rest`, or -1."""
    depth = 0
    for k, ch in enumerate(rest):
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                return k
    return -1


def _with(decl: Declaration, **changes: object) -> Declaration:
    from dataclasses import replace

    return replace(decl, **changes)  # type: ignore[arg-type]


def read_document(text: str, first_line: int = 1) -> tuple[Document, list[Finding]]:
    """Read what can be read and report every problem; never raises."""
    reader = _DocumentReader(text, first_line)
    document = reader.read()
    return document, reader.findings


def parse_document(text: str, first_line: int = 1) -> Document:
    """Strict: the first error is raised as IlangError."""
    document, findings = read_document(text, first_line)
    errors = [f for f in findings if f.severity == "error"]
    if errors:
        first = min(errors, key=lambda f: (f.line, f.col))
        raise IlangError(first.code, first.message, first.line, first.col)
    return document
