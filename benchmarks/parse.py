"""Parse throughput of the iLang reader over the spec's iLang fences and the corpora.

Run: .venv/bin/python benchmarks/parse.py [--shared ../shared] [--seconds 3]
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from pathlib import Path

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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--shared", type=Path, default=REPO.parent / "shared")
    parser.add_argument("--seconds", type=float, default=3.0)
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


if __name__ == "__main__":
    main()
