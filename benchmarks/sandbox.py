"""What the sandbox costs per command: the same commands run through the real runner
(`harness.workspace.commands.run_shell`), confined (bubblewrap) and unconfined
(`--sandbox none`), interleaved in one run so the shared machine's noise hits both alike.

Commands: `true` (the fixed cost of starting one), `python -c pass` (the interpreter,
read-only mounted), and a unittest run of the fizzbuzz example (a real tool check).
Prints per-command medians and the ratio confined / unconfined.

Run: .venv/bin/python benchmarks/sandbox.py [--repeat 30]
"""

from __future__ import annotations

import argparse
import platform
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from harness.workspace.commands import run_shell
from harness.workspace.sandbox import CONFINED, UNCONFINED, SandboxPolicy, find_bwrap

FIZZ = '''"""FizzBuzz: multiples of 3 Fizz, of 5 Buzz, of both FizzBuzz."""


def fizzbuzz(n: int) -> str:
    if n % 15 == 0:
        return "FizzBuzz"
    if n % 3 == 0:
        return "Fizz"
    if n % 5 == 0:
        return "Buzz"
    return str(n)
'''

COMMANDS = {
    "true": "true",
    "python -c pass": "python -c pass",
    "unittest (fizzbuzz)": "python -m unittest -q",
}


def timed(command: str, folder: Path, policy: SandboxPolicy) -> float:
    started = time.perf_counter()
    result = run_shell(command, folder, 60, sandbox=policy)
    elapsed = time.perf_counter() - started
    if result.exit_code != 0:
        raise SystemExit(f"{command!r} failed under {policy.mode}: {result.output}")
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=30)
    args = parser.parse_args()
    example = Path(__file__).resolve().parents[1] / "examples" / "honest" / "workspace"
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "workspace"
        shutil.copytree(example, folder)
        (folder / "fizz.py").write_text(FIZZ)
        print(f"bwrap: {find_bwrap()}  python {platform.python_version()}  repeat {args.repeat}")
        print(f"{'command':<22}{'confined ms':>13}{'plain ms':>11}{'ratio':>8}{'added ms':>10}")
        for name, command in COMMANDS.items():
            timed(command, folder, CONFINED)  # warm both paths once
            timed(command, folder, UNCONFINED)
            boxed: list[float] = []
            plain: list[float] = []
            for _ in range(args.repeat):
                boxed.append(timed(command, folder, CONFINED))
                plain.append(timed(command, folder, UNCONFINED))
            b = statistics.median(boxed) * 1000
            p = statistics.median(plain) * 1000
            print(f"{name:<22}{b:>13.1f}{p:>11.1f}{b / p:>8.2f}{b - p:>10.1f}")


if __name__ == "__main__":
    main()
