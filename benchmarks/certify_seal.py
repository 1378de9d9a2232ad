"""What sealing and the hidden-text leg add to a lint-fallback certification, measured side
by side in one run: the whole certification of a ~10 KB handoff (benchmarks/certify.py's
clean one, no run record), against sealing its certificate, loading it through the seal
check (`load_authentic_certificate`, what `ilh run` and `--check` do) against loading it
plain, and the hidden-text leg alone against the whole scan. Ratios, not absolute times.

Uses a throwaway record key (ILH_RECORD_KEY_FILE in a temporary folder), never yours.

Run: .venv/bin/python -m benchmarks.certify_seal [--reps 50] [--size 10240]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from benchmarks.certify import make_project
from harness.certify.certificate import Certificate
from harness.certify.check import load_authentic_certificate, load_certificate
from harness.certify.contract import Flags, declare
from harness.certify.gate import NoGate
from harness.certify.lexicon import load_lexicon
from harness.certify.loop import Certifier, Request
from harness.certify.reach import Reach
from harness.certify.scan import Shape, hidden_text, scan_target
from harness.certify.seal import issuing_key, seal_certificate
from harness.record.keys import KEY_FILE_ENV
from harness.secrets.logs import configure_logging


def median_of(reps: int, work: Callable[[], object]) -> float:
    samples = []
    for _ in range(reps):
        began = time.perf_counter()
        work()
        samples.append(time.perf_counter() - began)
    return statistics.median(samples)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--reps", type=int, default=50)
    parser.add_argument("--size", type=int, default=10 * 1024)
    args = parser.parse_args()
    configure_logging()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        os.environ[KEY_FILE_ENV] = str(root / "key" / "record.key")
        text = make_project(root, args.size, tethered=False)
        flags = Flags(target="handoff.md", role="implementer", sources=("project",))
        given, contract = declare(flags, None, root)
        lexicon = load_lexicon()

        def certify() -> Certificate:
            request = Request(
                target=given, contract=contract, cwd=root, lexicon=lexicon, gate=NoGate()
            )
            return asyncio.run(Certifier(request).run())

        cert = certify()  # warm: lexicons, regexes, the key
        assert cert.certified
        key = issuing_key()
        path = root / "cert.json"
        path.write_text(cert.to_json())
        reach = Reach(sources=[root / "project"], cwd=root, lexicon=lexicon)
        shape = Shape.of(text)

        whole = median_of(args.reps, certify)
        seal = median_of(args.reps, lambda: seal_certificate(cert, key))
        plain = median_of(args.reps, lambda: load_certificate(path))
        checked = median_of(args.reps, lambda: load_authentic_certificate(path))
        scan = median_of(args.reps, lambda: scan_target(text, contract, reach))
        hidden = median_of(args.reps, lambda: hidden_text(shape))
    print(f"clean handoff: {len(text.encode())} bytes; medians of {args.reps}")
    print(f"  sealing / whole certification:        {seal / whole:.3f}")
    print(f"  load with seal check / plain load:    {checked / plain:.2f}")
    print(f"  seal check / whole certification:     {(checked - plain) / whole:.3f}")
    print(f"  hidden-text leg / whole scan:         {hidden / scan:.3f}")


if __name__ == "__main__":
    main()
