"""Parse throughput of the iLang reader over the spec's iLang fences and the corpora, and its
speed against the reference validator on the same texts.

Run: .venv/bin/python benchmarks/parse.py [--shared ../shared] [--seconds 3]
         [--reference path/to/ilang_grammar_validator.py]

The reference is the canon's own `ilang_grammar_validator.py` (ilang-ai/ilang-spec; not
shipped here). Given its path (or `ILH_REFERENCE_VALIDATOR`), the script times, in one
process, `Linter(path, text).run()` against `read_document` and `lint_ilang` on every text
of the corpus: CPU time, the three sides interleaved round by round, the median round of
each compared. A ratio above 1 means this project's reader is the faster.

A fourth side, `floor`, is not a reader: it splits the text into lines, strips each, runs one
compiled regex on it and builds one tuple per line, which is the least a line-by-line reader in
CPython must do. Its ratio bounds what any such reader (ours or another) can reach against the
reference on this corpus.

A fifth side, `nodes`, is not a reader either: it builds the very nodes `read_document` returns
for each text (documents, declarations, body lines, chains, operations, modifiers), each by the
one C call the reader uses, from field tuples prepared before the timing. No reader that
returns this tree can spend less on building it; with `floor`'s reading it bounds the ratio an
eager tree-building reader can reach.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import re
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

from envelopes.document import read_document
from envelopes.lint import lint_ilang
from envelopes.markdown import ilang_fences

REPO = Path(__file__).resolve().parents[1]


def corpus(shared: Path) -> list[str]:
    texts = [p.read_text(encoding="utf-8") for p in sorted(shared.glob("iml/golden*/*.ilang"))]
    for spec in sorted((shared / "spec").glob("*.md")):
        texts += [block.text for block in ilang_fences(spec.read_text(encoding="utf-8"))]
    return texts


def throughput(texts: list[str], work: Callable[[str], object], seconds: float) -> float:
    size = sum(len(t.encode("utf-8")) for t in texts)
    done = 0
    start = time.perf_counter()
    while time.perf_counter() - start < seconds:
        for text in texts:
            work(text)
        done += size
    return done / (time.perf_counter() - start) / 1e6


def load_reference(path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location("ilang_grammar_validator", path)
    if spec is None or spec.loader is None:
        raise SystemExit(f"cannot load the reference validator from {path}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_ANY_HEAD = re.compile(r"::([A-Z][A-Z0-9_]*)|\[([^\]:|\s]+)")


class _Line(tuple[str, object, int]):
    __slots__ = ()


def floor(text: str) -> list[_Line]:
    """The least work per line: strip, one regex, one node (see the module docstring)."""
    new = tuple.__new__
    match = _ANY_HEAD.match
    lines = (line.strip() for line in text.split("\n"))
    return [new(_Line, (s, match(s), n)) for n, s in enumerate(lines) if s]


def node_plans(texts: list[str]) -> dict[str, list[tuple[type, tuple[object, ...]]]]:
    """Per text, the nodes of its document as (class, fields), children before parents."""

    def walk(node: tuple[object, ...], out: list[tuple[type, tuple[object, ...]]]) -> None:
        for field in node:
            if isinstance(field, tuple):
                children = field if field.__class__ is tuple else (field,)
                for child in children:
                    if isinstance(child, tuple) and child.__class__ is not tuple:
                        walk(child, out)
        out.append((node.__class__, tuple(node)))

    plans: dict[str, list[tuple[type, tuple[object, ...]]]] = {}
    for text in texts:
        plan: list[tuple[type, tuple[object, ...]]] = []
        walk(read_document(text)[0], plan)
        plans[text] = plan
    return plans


def versus_reference(texts: list[str], reference: ModuleType, seconds: float) -> None:
    """CPU seconds per pass over the corpus, each side timed in turn within every round
    so that drift (frequency, other load on the machine) falls on all three alike."""
    linter = reference.Linter
    sides: dict[str, Callable[[str], object]] = {
        "reference": lambda text: linter("-", text).run(),
        "read_document": read_document,
        "lint_ilang": lint_ilang,
        "floor": floor,
    }
    plans = node_plans(texts)
    new = tuple.__new__
    sides["nodes"] = lambda text: [new(cls, fields) for cls, fields in plans[text]]
    for work in sides.values():  # warm-up: imports, regex caches
        for text in texts:
            work(text)
    passes = 5
    times: dict[str, list[float]] = {name: [] for name in sides}
    deadline = time.perf_counter() + seconds
    while time.perf_counter() < deadline or len(times["reference"]) < 5:
        for name, work in sides.items():
            start = time.process_time()
            for _ in range(passes):
                for text in texts:
                    work(text)
            times[name].append((time.process_time() - start) / passes)
    ref = statistics.median(times["reference"])
    print(f"vs the reference validator ({len(times['reference'])} interleaved rounds, CPU):")
    print(f"  reference Linter.run : {ref * 1e3:7.2f} ms per corpus pass")
    print(f"  ({sum(map(len, plans.values()))} nodes in the documents of one pass)")
    for name in ("read_document", "lint_ilang", "floor", "nodes"):
        ours = statistics.median(times[name])
        print(
            f"  {name:<20} : {ours * 1e3:7.2f} ms per pass = {ref / ours:5.2f}x the "
            f"reference's speed ({ours / ref:4.2f}x its CPU time)"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--shared", type=Path, default=REPO.parent / "shared")
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument(
        "--reference",
        type=Path,
        default=os.environ.get("ILH_REFERENCE_VALIDATOR") or None,
        help="path of the canon's ilang_grammar_validator.py (not shipped here)",
    )
    args = parser.parse_args()
    texts = corpus(args.shared)
    size = sum(len(t.encode("utf-8")) for t in texts)
    big = "\n".join(texts) * 20
    print(f"corpus: {len(texts)} texts, {size / 1024:.1f} KiB (spec iLang fences + golden files)")
    print(
        f"read_document, per text    : {throughput(texts, read_document, args.seconds):6.2f} MB/s"
    )
    one_doc = throughput([big], read_document, args.seconds)
    print(f"read_document, one {len(big) / 1e6:.1f} MB doc: {one_doc:6.2f} MB/s")
    print(f"lint (grammar + semantics) : {throughput(texts, lint_ilang, args.seconds):6.2f} MB/s")
    if args.reference is None:
        print("vs the reference validator: skipped (give --reference or ILH_REFERENCE_VALIDATOR)")
        return
    versus_reference(texts, load_reference(args.reference), args.seconds * 2)


if __name__ == "__main__":
    main()
