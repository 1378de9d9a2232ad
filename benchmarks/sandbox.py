"""What the sandbox costs per command: the same commands run through the real runner
(`harness.workspace.commands.run_shell`), confined (bubblewrap) and unconfined
(`--sandbox none`), interleaved in one run so the shared machine's noise hits both alike.

Commands: `true` (the fixed cost of starting one), `python -c pass` (the interpreter,
read-only mounted), and a unittest run of the fizzbuzz example (a real tool check).
Prints per-command medians and the ratio confined / unconfined. A last row runs `true`
in a workspace of `--files` small files: a root harness hands the workspace to the
sandbox user and clears setuid bits before and after each command, a walk of the tree.

Run: .venv/bin/python benchmarks/sandbox.py [--repeat 30]
"""

from __future__ import annotations

import argparse
import json
import platform
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from harness.workspace.commands import run_shell
from harness.workspace.sandbox import CONFINED, UNCONFINED, SandboxPolicy, find_bwrap

HONEST = Path(__file__).resolve().parents[1] / "examples" / "honest"


def honest_solution() -> str:
    """The fizz.py the honest example's scripted agent writes: the check then passes."""
    for line in (HONEST / "agent.jsonl").read_text().splitlines():
        for call in json.loads(line).get("tool_calls", []):
            if call["name"] == "write_file" and call["arguments"]["path"] == "fizz.py":
                return str(call["arguments"]["content"])
    raise SystemExit("examples/honest/agent.jsonl writes no fizz.py")


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
    parser.add_argument("--files", type=int, default=5000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "workspace"
        shutil.copytree(HONEST / "workspace", folder)
        (folder / "fizz.py").write_text(honest_solution())
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
            row(name, boxed, plain)
        big = Path(tmp) / "big"
        for i in range(args.files):
            sub = big / f"d{i // 100}"
            sub.mkdir(parents=True, exist_ok=True)
            (sub / f"f{i}.txt").write_text("x")
        boxed, plain = [], []
        for _ in range(args.repeat):
            boxed.append(timed("true", big, CONFINED))
            plain.append(timed("true", big, UNCONFINED))
        row(f"true, {args.files} files", boxed, plain)


def row(name: str, boxed: list[float], plain: list[float]) -> None:
    b = statistics.median(boxed) * 1000
    p = statistics.median(plain) * 1000
    print(f"{name:<22}{b:>13.1f}{p:>11.1f}{b / p:>8.2f}{b - p:>10.1f}")


if __name__ == "__main__":
    main()
