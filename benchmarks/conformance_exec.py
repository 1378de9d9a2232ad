"""The 100 exec conformance cases through the real runtime: the honest agent and every
adversary of harness.conformance.agents, with the counts the tests assert.

Run: .venv/bin/python benchmarks/conformance_exec.py [--shared ../shared] [--keep DIR]
Exit 0 when no run breached an invariant or failed its agent's checks, 1 otherwise.
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from pathlib import Path

from harness.conformance.agents import AGENTS
from harness.conformance.cases import load_exec_cases
from harness.conformance.suite import CaseRun, problems_of, render_summary, run_suite, summarize
from harness.record.store import RunStore
from harness.secrets.logs import configure_logging

REPO = Path(__file__).resolve().parents[1]


def run_all(shared: Path, root: Path) -> list[CaseRun]:
    cases = load_exec_cases(shared / "conformance" / "exec")
    with RunStore(root / "runs.db") as store:
        return asyncio.run(run_suite(cases, AGENTS, store, root / "cases"))


def report(runs: list[CaseRun], seconds: float) -> int:
    print(render_summary(summarize(runs)))
    print(f"\n{len(runs)} runs in {seconds:.1f} s")
    failed = [(run, problems_of(run)) for run in runs]
    failed = [(run, problems) for run, problems in failed if problems]
    for run, problems in failed:
        print(f"FAIL {run.agent} {run.case.id}: {'; '.join(problems)}")
    return 1 if failed else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--shared", type=Path, default=REPO.parent / "shared")
    parser.add_argument("--keep", type=Path, help="write the store and task files here")
    args = parser.parse_args()
    configure_logging()
    began = time.perf_counter()
    if args.keep is not None:
        runs = run_all(args.shared, args.keep)
    else:
        with tempfile.TemporaryDirectory(prefix="ilh-conformance-") as tmp:
            runs = run_all(args.shared, Path(tmp))
    return report(runs, time.perf_counter() - began)


if __name__ == "__main__":
    raise SystemExit(main())
