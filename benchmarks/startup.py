"""Start-up: the CPU time of `ilh --help`, `ilh lint` on a tiny file and `ilh runs list`,
each as a ratio to `python -c pass` (the interpreter's own start-up) measured in the same
run, interleaved, so that the machine's load falls on every side alike.

The CPU time of each command is its child's rusage (user + system), not wall time: a
shared, noisy machine moves wall time far more than CPU time. Two `floor` lines are not
commands: the libraries the commands stand on, imported and nothing else done. Printed per
command: the median CPU ms over the repeats and the median of the per-round ratios to
`python -c pass` (the issue's bound: at most 4x).

With `--instructions` (and valgrind on PATH), each command is also run once under
callgrind and its instruction count printed as a ratio: instructions, unlike CPU time,
do not move with the machine's load, so a change of a few percent shows.

Run: .venv/bin/python -m benchmarks.startup [--repeat 15] [--instructions]
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

try:
    from benchmarks import callgrind
except ModuleNotFoundError:  # run as a script: its own folder is on the path, not the repository
    import callgrind  # type: ignore[no-redef]
from harness.record.store import RunStore

ILH = [sys.executable, "-m", "harness"]

#: The tiny file `ilh lint` reads: a header and one ::STATUS (tests/test_startup_budget.py
#: holds the same bound on the same text).
TINY_ILANG = "::ILANG::4.0\n::STATUS{@TASK|state:running}\n"


# A user's interpreter writes bytecode on the first run and reads it after; an
# environment that forbids it (PYTHONDONTWRITEBYTECODE, set on some CI and sandbox
# machines) would measure compiling every module of the harness on every start.
CHILD_ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def cpu_of(argv: list[str], cwd: Path) -> float:
    """CPU seconds (user + system) that running `argv` to its end cost."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(argv, cwd=cwd, env=CHILD_ENV, capture_output=True, check=False, timeout=120)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def instructions_of(argv: list[str], cwd: Path) -> int | None:
    return callgrind.instructions_of(
        argv, cwd=cwd, env=CHILD_ENV, timeout_s=600, must_succeed=False
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--instructions", action="store_true", help="also count instructions")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        (folder / "tiny.ilang").write_text(TINY_ILANG, encoding="utf-8")
        sides = {
            "python -c pass": [sys.executable, "-c", "pass"],
            # Not a command: the libraries every one of them stands on (click for the
            # command line, rich for the terminal, pydantic for every schema) imported
            # and nothing else done. No command that uses them can start for less.
            "floor: click+rich": [sys.executable, "-c", "import click, rich.console, rich.table"],
            "floor: +pydantic": [
                sys.executable,
                "-c",
                "import click, rich.console, rich.table; from pydantic import BaseModel",
            ],
            "ilh --help": [*ILH, "--help"],
            "ilh lint tiny.ilang": [*ILH, "lint", "tiny.ilang"],
            "ilh runs list": [
                *ILH,
                "runs",
                "list",
                "--store",
                str(folder / "runs.db"),
            ],
        }
        with RunStore(folder / "runs.db"):
            pass  # an empty store: `runs list` reads it, as a user's first list would
        env_note = f"python {sys.version.split()[0]}, {os.cpu_count()} cpu(s)"
        for argv in sides.values():  # warm-up: the file cache, compiled bytecode
            cpu_of(argv, folder)
        cpu: dict[str, list[float]] = {name: [] for name in sides}
        for _ in range(args.repeat):
            for name, argv in sides.items():
                cpu[name].append(cpu_of(argv, folder))
        counted = {
            name: instructions_of(argv, folder) if args.instructions else None
            for name, argv in sides.items()
        }
    print(f"Start-up CPU time, {args.repeat} interleaved rounds; {env_note}")
    base = cpu["python -c pass"]
    for name, times in cpu.items():
        ratios = [t / b for t, b in zip(times, base, strict=True) if b > 0]
        print(
            f"  {name:<22} {statistics.median(times) * 1000:7.1f} ms"
            f"   {statistics.median(ratios):5.2f}x python -c pass"
        )
    floor = counted["python -c pass"]
    if args.instructions and floor:
        print("Instructions (callgrind, one run each):")
        for name, count in counted.items():
            if count is not None:
                print(f"  {name:<22} {count / 1e6:7.1f} M   {count / floor:5.2f}x python -c pass")
    elif args.instructions:
        print("Instructions: valgrind is not on PATH (or counted nothing)")


if __name__ == "__main__":
    main()
