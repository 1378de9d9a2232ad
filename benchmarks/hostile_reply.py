"""What a hostile reply costs the reader, as a ratio to an honest reply of the same size.

An agent shapes its reply; the runtime reads every reply twice (`read_claims` for its
proposals, `runtime_declarations` for declarations only the runtime writes). A shape that
makes either reader reread lines stalls the run (a 78 KiB reply of `_::BUDGET` lines took
153 s before the body span was bounded). Printed per shape: CPU ms to read it at 16 and
64 KiB, and the ratio of the two (linear: about 4) and of the 64 KiB figure to an honest
64 KiB reply read the same way, interleaved round by round.

Run: .venv/bin/python -m benchmarks.hostile_reply [--rounds 5]
"""

from __future__ import annotations

import argparse
import statistics
import time

from harness.enforce.claims import read_claims, runtime_declarations

HONEST = (
    "I read the failing test and fixed the off-by-one in `add`.\n\n"
    "```python\nreturn a + b\n```\n\n"
    "::EVIDENCE{@TASK|claim:tests pass|source:tool:run_tests}\n"
    "::STATUS{@TASK|state:claimed_complete}\n"
)

SHAPES = {
    "honest": HONEST,
    "flush _::BUDGET heads": "_::BUDGET\n",
    "lone heads + bodies": "::BUDGET\n   note\n",
    "unclosed braces": "::STATUS{@TASK|state:running\n",
    "fence openers": "```\n",
    "deep list": "- " * 30 + "::STATUS{@TASK|state:complete}\n",
    "tag layer": "".join(chr(0xE0000 + ord(c)) for c in "::STATUS{@TASK|state:complete}") + "\n",
    "one 64 KiB line of ::STATUS{": "::STATUS{",
}


def sized(unit: str, kib: int) -> str:
    size = kib * 1024
    return (unit * (size // len(unit) + 1))[:size]


def read_both(text: str) -> None:
    read_claims(text)
    runtime_declarations(text)


def cpu_ms(text: str) -> float:
    start = time.process_time()
    read_both(text)
    return (time.process_time() - start) * 1e3


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    texts = {name: (sized(unit, 16), sized(unit, 64)) for name, unit in SHAPES.items()}
    small: dict[str, list[float]] = {name: [] for name in texts}
    large: dict[str, list[float]] = {name: [] for name in texts}
    for _ in range(args.rounds):
        for name, (text16, text64) in texts.items():
            small[name].append(cpu_ms(text16))
            large[name].append(cpu_ms(text64))
    honest = statistics.median(large["honest"])
    print(f"read_claims + runtime_declarations, CPU, median of {args.rounds} interleaved rounds")
    print(f"{'shape':<30} {'16 KiB ms':>10} {'64 KiB ms':>10} {'64/16':>6} {'vs honest':>9}")
    for name in texts:
        s, big = statistics.median(small[name]), statistics.median(large[name])
        print(f"{name:<30} {s:>10.1f} {big:>10.1f} {big / s:>6.2f} {big / honest:>8.2f}x")


if __name__ == "__main__":
    main()
