"""Time of a lint-fallback certification (`ilh certify` without --model) of a ~10 KB
handoff: the whole loop (read, F1-F4 legs over the text and the granted sources, the
lint verdict, the gate, F7 re-read and the certificate), with and without the run
record, and through the command line (`ilh certify --json`, in-process).

The handoff is realistic and clean: paragraphs naming files that exist in a granted
source, durable URLs, code spans, a fenced command, a defined acronym. A second variant
carries residue in every paragraph (a /tmp path, a deictic anchor, undefined numbering)
so the gate has work to do.

Run: .venv/bin/python benchmarks/certify.py [--reps 20] [--size 10240]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import tempfile
import time
from pathlib import Path

from click.testing import CliRunner

from harness.certify.contract import Flags, declare
from harness.certify.gate import NoGate
from harness.certify.lexicon import load_lexicon
from harness.certify.loop import Certifier, Request
from harness.cli.main import ilh
from harness.record.store import RunStore
from harness.secrets.logs import configure_logging

PARAGRAPH = """\
## Step {n}: the {n}th module

Implement `handle_{n}()` in `src/module_{n}.py` so that `tests/test_module_{n}.py` passes.
The design follows https://github.com/acme/app/issues/{n} and the RFC (request for comments)
linked there. Keep the public signature; the CLI (command line) calls it by name.

```sh
python -m pytest tests/test_module_{n}.py -q
```
"""

TETHERED = "As above, copy /tmp/run_{n}.log and apply D1–D{n} from the earlier one.\n"


def make_project(root: Path, size: int, tethered: bool) -> str:
    (root / "project" / "src").mkdir(parents=True)
    (root / "project" / "tests").mkdir(parents=True)
    parts = ["# Handoff: implement the modules\n"]
    n = 0
    while len("\n".join(parts).encode()) < size:
        n += 1
        (root / "project" / "src" / f"module_{n}.py").write_text(f"def handle_{n}(): ...\n")
        (root / "project" / "tests" / f"test_module_{n}.py").write_text(f"def test_{n}(): ...\n")
        parts.append(PARAGRAPH.format(n=n) + (TETHERED.format(n=n + 1) if tethered else ""))
    text = "\n".join(parts)
    (root / "handoff.md").write_text(text)
    return text


def once(root: Path, store: RunStore | None) -> float:
    flags = Flags(target="handoff.md", role="implementer", sources=("project",))
    given, contract = declare(flags, None, root)
    request = Request(
        target=given,
        contract=contract,
        cwd=root,
        lexicon=load_lexicon(),
        gate=NoGate(),
        store=store,
    )
    began = time.perf_counter()
    asyncio.run(Certifier(request).run())
    return time.perf_counter() - began


def cli_once(root: Path) -> float:
    runner = CliRunner()
    os.chdir(root)
    began = time.perf_counter()
    result = runner.invoke(
        ilh,
        [
            "certify",
            "handoff.md",
            "--role",
            "implementer",
            "--source",
            "project",
            "--json",
            "--non-interactive",
            "--store",
            str(root / "cli.db"),
        ],
    )
    spent = time.perf_counter() - began
    assert result.exit_code in (0, 1), result.output
    return spent


def report(label: str, samples: list[float]) -> None:
    samples = sorted(samples)
    print(
        f"{label:44s} median {statistics.median(samples) * 1000:7.1f} ms   "
        f"min {samples[0] * 1000:7.1f} ms   max {samples[-1] * 1000:7.1f} ms"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--reps", type=int, default=20)
    parser.add_argument("--size", type=int, default=10 * 1024)
    args = parser.parse_args()
    configure_logging()
    here = os.getcwd()
    for tethered in (False, True):
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp)
            text = make_project(root, args.size, tethered)
            kind = "tethered" if tethered else "clean"
            print(
                f"{kind} handoff: {len(text.encode())} bytes, "
                f"{len(list((root / 'project').rglob('*.py')))} files in the granted source"
            )
            once(root, None)  # warm: lexicons, regexes
            report(
                f"  lint-fallback, no record ({kind})", [once(root, None) for _ in range(args.reps)]
            )
            with RunStore(root / "runs.db") as store:
                report(
                    f"  lint-fallback, recorded ({kind})",
                    [once(root, store) for _ in range(args.reps)],
                )
            report(
                f"  `ilh certify --json` in-process ({kind})",
                [cli_once(root) for _ in range(max(3, args.reps // 4))],
            )
            os.chdir(here)


if __name__ == "__main__":
    main()
