"""What keeping the solution in a process of its own costs (`sandboxed/ilh_bridge.py`).

Two figures, each measured side by side in one run (the machine is shared and noisy):

1. **Per check.** The fizzbuzz example's tests, confined, run two ways, interleaved:
   the grader's runner-aware check (`CheckRunner`: grading tree, the harness's runner,
   the solution process, the report through a private descriptor) and a plain
   `python -m unittest` in the same sandbox (the tests and the solution in one process,
   exit code only). Prints the medians and the difference.
2. **Per use.** A call of a solution's function through a proxy (one round trip over the
   socket pair, both ends in this process, the solution's end on a thread) against the
   same call made directly. Prints calls per second and microseconds per call.

Run: .venv/bin/python -m benchmarks.solution_process [--repeat 15] [--calls 20000]
"""

from __future__ import annotations

import argparse
import shutil
import socket
import statistics
import tempfile
import threading
import time
from pathlib import Path

from benchmarks.sandbox import honest_solution
from graders.criteria import GradingCriterion
from harness.grading.checks import CheckRunner
from harness.grading.sandboxed.ilh_bridge import Peer
from harness.grading.tree import GradingSources
from harness.workspace.commands import run_shell
from harness.workspace.sandbox import CONFINED, find_bwrap

HONEST = Path(__file__).resolve().parents[1] / "examples" / "honest"


def per_check(repeat: int) -> None:
    scratch = Path(tempfile.mkdtemp(prefix="ilh-bench-"))
    try:
        template = scratch / "template"
        shutil.copytree(HONEST / "workspace", template)
        workspace = scratch / "workspace"
        shutil.copytree(template, workspace)
        (workspace / "fizz.py").write_text(honest_solution())
        runner = CheckRunner(workspace, GradingSources(template=template), CONFINED)
        criterion = GradingCriterion(
            id="tests", weight=1.0, check="tests pass", unittest="test_fizz.py"
        )
        graded: list[float] = []
        plain: list[float] = []
        for _ in range(repeat):
            started = time.perf_counter()
            outcome = runner(criterion, 60)
            graded.append(time.perf_counter() - started)
            if outcome.verdict is None or not outcome.verdict.passed:
                raise SystemExit(f"the honest check did not pass: {outcome.output[-500:]}")
            started = time.perf_counter()
            done = run_shell("python -m unittest -q test_fizz", workspace, 60)
            plain.append(time.perf_counter() - started)
            if done.exit_code != 0:
                raise SystemExit(f"the plain run failed: {done.output[-500:]}")
        g, p = statistics.median(graded), statistics.median(plain)
        print(f"per check ({repeat} runs each, confined, interleaved):")
        print(f"  runner-aware check, solution process: {g * 1000:7.1f} ms (median)")
        print(f"  plain unittest, one process:          {p * 1000:7.1f} ms (median)")
        print(f"  difference: {(g - p) * 1000:+.1f} ms; ratio {g / p:.2f}x")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def fizzbuzz(n: int) -> str:
    if n % 15 == 0:
        return "FizzBuzz"
    if n % 3 == 0:
        return "Fizz"
    if n % 5 == 0:
        return "Buzz"
    return str(n)


def per_use(calls: int) -> None:
    here, there = socket.socketpair()
    tests = Peer(here, imports=False, guarded=True)
    solution = Peer(there, imports=True, guarded=False)
    thread = threading.Thread(target=solution.serve_forever, daemon=True)
    thread.start()
    proxy = tests.decode(["h", solution._export(fizzbuzz)])
    started = time.perf_counter()
    for n in range(calls):
        proxy(n)
    through = time.perf_counter() - started
    started = time.perf_counter()
    for n in range(calls):
        fizzbuzz(n)
    direct = time.perf_counter() - started
    here.close()
    thread.join(5)
    there.close()
    print(f"per use ({calls} calls of fizzbuzz):")
    print(f"  through a proxy: {calls / through:9.0f} calls/s, {through / calls * 1e6:6.1f} us")
    print(f"  direct:          {calls / direct:9.0f} calls/s, {direct / calls * 1e6:6.3f} us")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--calls", type=int, default=20_000)
    args = parser.parse_args()
    if find_bwrap() is None:
        print("no bwrap: the per-check figure needs the sandbox; skipped")
    else:
        per_check(args.repeat)
    per_use(args.calls)


if __name__ == "__main__":
    main()
