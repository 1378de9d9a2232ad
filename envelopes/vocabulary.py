"""The closed vocabularies of iLang: verbs, aliases, modifiers, entities, declarations.

Sources: SPEC.md §3–§5 (88 verbs, 13 aliases, 29 modifiers, 14 entities), SPEC-v5.0.md
Part III §1.5–§1.7 and §2 (the declaration registry and the 22 entities), and
SPEC-v4.1-MEDIA-PROFILE (named in SPEC.md's history), which registers 20 media
profile keys and the entities @IMG/@VID/@AUD.
"""

from __future__ import annotations

from typing import Final

VERBS: Final[tuple[str, ...]] = (
    # Data I/O (12)
    "READ", "WRIT", "GET", "DEL", "LIST", "COPY", "MOVE", "STRM", "CACH", "SYNC", "SEND", "RUN",
    # Transform (22)
    "FMT", "CONV", "SPLIT", "MERGE", "MAP", "FILT", "SORT", "DEDU", "FLAT", "NEST", "CHNK",
    "REDU", "PIVT", "TRNS", "ENCD", "DECD", "HASH", "CMPR", "EXPN", "XLAT", "REWR", "DIFF",
    # Analysis (17)
    "SCAN", "MTCH", "CNT", "STAT", "EVAL", "SCOR", "RANK", "TRND", "CORR", "FRCS", "ANOM",
    "SENT", "CLST", "BNCH", "AUDT", "VALD", "CLSF",
    # Generation (10)
    "CREA", "DRFT", "EXPD", "SHRT", "PARA", "STYL", "TMPL", "FILL", "EXTC", "GEN",
    # Execute (12)
    "PLAN", "DECI", "CHEK", "FIX", "DPLO", "SAVE", "REVW", "LERN", "TEST", "PARS", "LOOP", "WAIT",
    # Output (5)
    "OUT", "DISP", "EXPT", "PRNT", "LOG",
    # Structure (5)
    "LINK", "SET", "TAG", "GRP", "EMBD",
    # Meta (4)
    "HELP", "DESC", "INTR", "NOOP",
    # Batch (1)
    "BATC",
)  # fmt: skip
VERB_SET: Final[frozenset[str]] = frozenset(VERBS)

ALIASES: Final[dict[str, str]] = {
    "Σ": "MERGE", "Δ": "DIFF", "φ": "FILT", "∇": "SORT", "λ": "MAP", "∂": "SPLIT", "μ": "STAT",
    "ψ": "SENT", "ξ": "HASH", "ζ": "CMPR", "θ": "XLAT", "Ω": "OUT", "Π": "BATC",
}  # fmt: skip

CORE_MODIFIERS: Final[tuple[str, ...]] = (
    "src", "dst", "path", "fmt", "lng", "sty", "ton", "len", "lim", "off", "top", "bot", "srt",
    "grp", "whr", "mch", "exc", "dep", "rng", "typ", "enc", "cap", "pri", "col", "row", "frm",
    "to", "scp", "op",
)  # fmt: skip
MEDIA_PROFILE_KEYS: Final[tuple[str, ...]] = (
    "sbj", "act", "plc", "txt", "pov", "fcl", "mvt", "lgt", "pal", "mdm", "asp", "rsl", "qly",
    "dur", "fps", "sed", "adh", "ref", "dlg", "sfx",
)  # fmt: skip
MODIFIERS: Final[frozenset[str]] = frozenset(CORE_MODIFIERS) | frozenset(MEDIA_PROFILE_KEYS)

ENTITY_TIERS: Final[dict[str, int]] = {
    **dict.fromkeys(("SRC", "DST", "PREV", "LOCAL", "SCREEN", "LOG", "NULL", "STDIN"), 1),
    **dict.fromkeys(("GH", "R2", "COS", "DRIVE", "WORKER", "CF"), 2),
    **dict.fromkeys(("SYSTEM", "RUNTIME", "GRADER", "USER", "SELF", "AGENT", "TASK", "TOOL"), 3),
    **dict.fromkeys(("IMG", "VID", "AUD"), 4),
}
ROLE_ENTITIES: Final[frozenset[str]] = frozenset(k for k, t in ENTITY_TIERS.items() if t == 3)

STRUCTURAL_V3: Final[tuple[str, ...]] = (
    "STATE", "TRUST", "ALIVE", "MEMORY", "GENE", "GENE_MUTABLE", "RULE", "ACTIVATE", "FACT",
    "LESSON", "PROGRESS", "PRIORITY", "DECAY", "IMMUNE",
)  # fmt: skip
STRUCTURAL_V4: Final[tuple[str, ...]] = (
    "UNTRUSTED", "BUDGET", "STATUS", "OBJECTIVE", "RUBRIC", "EVIDENCE", "PRIOR", "FALLBACK",
)  # fmt: skip
STRUCTURAL_V5: Final[tuple[str, ...]] = (
    "JUDGE", "BOUNDARY", "DIM", "MODE", "FUNC", "SCHEMA", "CASE", "CLAUSE", "MODULE",
)  # fmt: skip
STRUCTURAL_AMENDED: Final[tuple[str, ...]] = ("LIST",)
STRUCTURAL: Final[frozenset[str]] = frozenset(
    STRUCTURAL_V3 + STRUCTURAL_V4 + STRUCTURAL_V5 + STRUCTURAL_AMENDED
)
NARRATIVE: Final[frozenset[str]] = frozenset(
    ("SAY", "THINK", "ACT", "DECIDE", "DISCOVER", "CREATE", "EVENT", "SILENCE", "META", "IRONY",
     "FORESHADOW", "CALLBACK", "EMOTION_FIELD")
)  # fmt: skip
# v3.0 §7: these six address participants in a first brace and carry content in a second.
DOUBLE_BRACE: Final[frozenset[str]] = frozenset(
    ("SAY", "THINK", "ACT", "DECIDE", "DISCOVER", "CREATE")
)
META_DECLARATIONS: Final[frozenset[str]] = frozenset(("GRAMMAR", "BODY", "REGISTRY"))
TERMINATORS: Final[frozenset[str]] = frozenset(("END_UNTRUSTED",))
# Part III §1.6: annotation lines of v3.0 §10.4, tolerated until registered.
TOLERATED_ANNOTATIONS: Final[frozenset[str]] = frozenset(("LATENCY", "CONFIDENCE"))
# Part III §1.2 B6: the only declaration types whose bodies may carry free prose.
PROSE_BODY: Final[frozenset[str]] = frozenset(("LESSON", "MODULE", "LIST", "RULE", "OBJECTIVE"))

TOP_LEVEL_DECLARATIONS: Final[frozenset[str]] = (
    STRUCTURAL | NARRATIVE | META_DECLARATIONS | TERMINATORS
)
# B7 nesting admits registered structural and narrative declarations only.
NESTABLE_DECLARATIONS: Final[frozenset[str]] = STRUCTURAL | NARRATIVE
