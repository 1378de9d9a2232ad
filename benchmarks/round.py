"""The runtime's own cost per round of `ilh run`, with a zero-latency scripted model.

The model here answers instantly (a scripted turn with its usage given, so not even a
token estimate is made on its side). Everything measured is therefore the runtime:
budget check, ::BUDGET/::STATUS rendering, envelope build, the offline token estimate and
clamp, the envelope digest, reading the reply with the hostile reader, classification,
and the appends to the run record (a SQLite file on disk, WAL, synchronous=FULL: one
fsync per event, as in a real run).

Three measurements, at task data of about 1 KB, 10 KB and 100 KB:

1. parts, fixed history: `build_envelope` + `messages()` + `digest()`; estimate + clamp;
   `read_claims` + `classify` on a reply; `RunStore.append` of a model_call event.
2. one whole round with a fixed history: `Orchestrator.round()` with the history reset
   to the same snapshot before every round.
3. a whole run of N rounds through `run_task` (task file + agent.jsonl, the `ilh run`
   path), where the envelope grows every round by the agent's reply and the runtime's
   feedback; the per-round time is the gap between consecutive model_call records.
4. growth: N rounds of one orchestrator whose history grows (replies, tool calls and
   their results, feedback), the process CPU time of each `round()` measured alone, less
   the CPU time of the record's appends (the record is measured separately, in 1 and
   3); printed as the ratio of rounds (N-10)..N to rounds 1..10. A run whose rounds
   cost the same whatever came before has a ratio near 1; one that re-renders its whole
   history every round grows with N.

Run: .venv/bin/python benchmarks/round.py [--rounds 200] [--reps 50] [--store-dir DIR]
     [--only growth]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import statistics
import tempfile
import time
from collections.abc import Callable
from datetime import datetime
from itertools import pairwise
from pathlib import Path
from typing import Any

from budgets.clamp import clamp
from budgets.estimate import estimate_messages
from budgets.ledger import BudgetLedger
from envelopes.declarations import State
from harness.context.agent import Segment, build_envelope
from harness.enforce.authority import classify
from harness.enforce.claims import read_claims
from harness.enforce.provenance import Provenance
from harness.inputs.task_file import Task, load_task
from harness.models.scripted import ScriptedCall, ScriptedClient, ScriptedTurn, ScriptedUsage
from harness.record.events import EventKind
from harness.record.store import RunStore
from harness.run.orchestrator import DEFAULT_MAX_OUTPUT, Orchestrator
from harness.run.setup import budgets_of, lifecycle_of, run_task, workspace_for
from harness.secrets.logs import configure_logging

SIZES_KB = (1, 10, 100)
FIXED_HISTORY_ROUNDS = 10
REPLY = (
    "I read the task data and the notes from the last round. The next section needs a\n"
    "second pass over the figures; I will compare them against the source table and\n"
    "write the corrected totals before moving on."
)
REPLY_WITH_CLAIM = (
    REPLY + "\n\n::STATUS{@TASK|state:blocked|need:source_table|by:@AGENT|authority:proposal}"
)
USAGE = {"input_tokens": 120, "output_tokens": 40}


def task_data(kilobytes: int) -> str:
    """Deterministic ASCII task data of about `kilobytes` KiB, in 64-byte lines."""
    line = "row {:05d}: lorem ipsum dolor sit amet, consectetur adipiscing.\n"
    lines = [line.format(i) for i in range(kilobytes * 1024 // len(line.format(0)))]
    return "".join(lines)


def write_task(folder: Path, kilobytes: int, rounds: int) -> Path:
    """A task file whose data is ~`kilobytes` KiB and a scripted agent of `rounds` turns."""
    folder.mkdir(parents=True, exist_ok=True)
    turns = [json.dumps({"text": REPLY, "usage": USAGE}) for _ in range(rounds)]
    (folder / "agent.jsonl").write_text("\n".join(turns) + "\n", encoding="utf-8")
    data = task_data(kilobytes).replace('"""', "")
    (folder / "task.toml").write_text(
        f"""[task]
id = "bench-{kilobytes}kb"
objective = "Check the figures in the task data and write the corrected totals."
accept = "totals.txt holds the corrected totals"
data = \"\"\"{data}\"\"\"

[budget.rounds]
limit = {rounds + 10}
[budget.tokens]
limit = 1000000000
reserve_audit = 2000
reserve_summary = 500
[budget.time]
limit = "1h"

[agent]
model = "scripted:agent.jsonl"
""",
        encoding="utf-8",
    )
    return folder / "task.toml"


def median_ms(work: Callable[[], object], reps: int) -> float:
    return timed_ms(work, reps)[0]


def timed_ms(work: Callable[[], object], reps: int) -> tuple[float, float]:
    """(median wall ms, mean CPU ms) of `work` over `reps` runs."""
    wall: list[float] = []
    began_cpu = time.process_time()
    for _ in range(reps):
        began = time.perf_counter()
        work()
        wall.append((time.perf_counter() - began) * 1000)
    return statistics.median(wall), (time.process_time() - began_cpu) * 1000 / reps


def fixed_history(rounds: int) -> list[Segment]:
    """What the history holds after `rounds` claim-free, tool-free rounds."""
    history: list[Segment] = []
    for n in range(1, rounds + 1):
        history.append(Segment(provenance=Provenance.AGENT, text=REPLY))
        history.append(
            Segment(
                provenance=Provenance.RUNTIME,
                text=f"Round {n} is over.\nContinue the task, or propose a status if the "
                "task is done or cannot go on.",
            )
        )
    return history


def orchestrator_for(task: Task, store: RunStore, turns: int) -> Orchestrator:
    script = [
        ScriptedTurn(text=REPLY, usage=ScriptedUsage.model_validate(USAGE)) for _ in range(turns)
    ]
    run_id = store.create_run(task.id, {"model": "scripted:bench"})
    lifecycle = lifecycle_of(task)
    orchestrator = Orchestrator(
        task=task,
        client=ScriptedClient(script, "scripted:bench"),
        store=store,
        run_id=run_id,
        ledger=BudgetLedger(budgets_of(task)),
        lifecycle=lifecycle,
        workspace=workspace_for(store, run_id, task),
    )
    orchestrator.start(resume=False)
    return orchestrator


def parts(task: Task, store: RunStore, reps: int) -> dict[str, float]:
    """Median ms of each part of one round, with a fixed history."""
    orch = orchestrator_for(task, store, reps * 2)
    history = fixed_history(FIXED_HISTORY_ROUNDS)
    round_lines = [
        *orch.ledger.render_lines(FIXED_HISTORY_ROUNDS + 1),
        orch.lifecycle.current_status().render(),
    ]

    def envelope() -> object:
        env = build_envelope(
            task_declarations=orch.task_declarations,
            round_lines=round_lines,
            task_blocks=orch.blocks,
            history=history,
        )
        env.messages()
        return env.digest()

    env = build_envelope(
        task_declarations=orch.task_declarations,
        round_lines=round_lines,
        task_blocks=orch.blocks,
        history=history,
    )
    contents = [m.content for m in env.messages()]

    def estimate_and_clamp() -> object:
        return clamp(orch.ledger, DEFAULT_MAX_OUTPUT, estimate_messages(contents))

    def read(text: str) -> Callable[[], object]:
        return lambda: [classify(c, State.RUNNING, 1) for c in read_claims(text)]

    payload = {
        "model": "scripted:bench",
        "envelope_digest": env.digest(),
        "max_output_tokens": DEFAULT_MAX_OUTPUT,
        "usage": {**USAGE, "estimated": False},
        "latency_s": 0.0,
        "stop_reason": "scripted",
        "text": REPLY,
        "tool_calls": [],
        "runtime_lines": round_lines,
    }

    def append() -> object:
        return store.append(orch.run_id, EventKind.MODEL_CALL, payload, round=1)

    async def whole_rounds() -> tuple[list[float], list[float]]:
        wall: list[float] = []
        cpu: list[float] = []
        for _ in range(reps):
            orch.state.history = list(history)
            began, began_cpu = time.perf_counter(), time.process_time()
            ended = await orch.round()
            wall.append((time.perf_counter() - began) * 1000)
            cpu.append((time.process_time() - began_cpu) * 1000)
            assert ended is None, f"the benchmark run ended early: {ended}"
        return wall, cpu

    round_wall, round_cpu = asyncio.run(whole_rounds())

    append_wall, append_cpu = timed_ms(append, reps)
    return {
        "context_chars": sum(len(c) for c in contents),
        "envelope": median_ms(envelope, reps),
        "clamp": median_ms(estimate_and_clamp, reps),
        "read": median_ms(read(REPLY), reps),
        "read_claim": median_ms(read(REPLY_WITH_CLAIM), reps),
        "append": append_wall,
        "append_cpu": append_cpu,
        "round": statistics.median(round_wall),
        "round_cpu": statistics.mean(round_cpu),
    }


def whole_run(task_file: Path, store: RunStore, rounds: int) -> dict[str, float]:
    """One `ilh run` of `rounds` rounds; per-round gaps from the model_call records."""
    task = load_task(task_file)
    began, began_cpu = time.perf_counter(), time.process_time()
    result = asyncio.run(run_task(task, store))
    total, cpu = time.perf_counter() - began, time.process_time() - began_cpu
    calls = store.events(result.run_id, EventKind.MODEL_CALL)
    stamps = [datetime.fromisoformat(e.at.replace("Z", "+00:00")) for e in calls]
    gaps = [(b - a).total_seconds() * 1000 for a, b in pairwise(stamps)]
    events = len(store.events(result.run_id))
    assert len(calls) == rounds and result.ended_by == "script_exhausted", result.ended_by
    tail = max(1, min(20, len(gaps)))
    return {
        "total_s": total,
        "per_round": total * 1000 / rounds,
        "cpu_per_round": cpu * 1000 / rounds,
        "first": statistics.mean(gaps[:tail]),
        "last": statistics.mean(gaps[-tail:]),
        "events_per_round": events / rounds,
        "verified": float(store.verify(result.run_id).ok),
    }


GROWTH_EDGE = 10


def growth_script(rounds: int) -> list[ScriptedTurn]:
    """A mixed history: plain replies, tool calls (a write, then reads and listings, so
    results of both kinds come back) and a claim the runtime rejects (feedback lines)."""
    usage = ScriptedUsage.model_validate(USAGE)
    bad_claim = "::STATUS{@TASK|state:verified_complete|by:@AGENT|authority:proposal}"
    turns: list[ScriptedTurn] = []
    for n in range(rounds):
        calls: list[ScriptedCall] = []
        text = REPLY
        if n == 0:
            calls = [
                ScriptedCall(name="write_file", arguments={"path": "notes.txt", "content": "x"})
            ]
        elif n % 4 == 1:
            calls = [ScriptedCall(name="read_file", arguments={"path": "notes.txt"})]
        elif n % 4 == 2:
            calls = [
                ScriptedCall(name="list_files", arguments={}),
                ScriptedCall(name="read_file", arguments={"path": "missing.txt"}),
            ]
        elif n % 8 == 3:
            text = f"{REPLY}\n\n{bad_claim}\n"
        turns.append(ScriptedTurn(text=text, tool_calls=calls, usage=usage))
    return turns


def growth(task: Task, store: RunStore, rounds: int) -> list[float]:
    """Process CPU ms of each of `rounds` rounds of one run, less its record appends."""
    run_id = store.create_run(task.id, {"model": "scripted:bench"})
    orchestrator = Orchestrator(
        task=task,
        client=ScriptedClient(growth_script(rounds), "scripted:bench"),
        store=store,
        run_id=run_id,
        ledger=BudgetLedger(budgets_of(task)),
        lifecycle=lifecycle_of(task),
        workspace=workspace_for(store, run_id, task),
    )
    orchestrator.start(resume=False)
    in_record = [0.0]
    append = store.append

    def timed_append(*args: Any, **kwargs: Any) -> Any:
        began = time.process_time()
        try:
            return append(*args, **kwargs)
        finally:
            in_record[0] += time.process_time() - began

    store.append = timed_append  # type: ignore[method-assign]

    async def rounds_cpu() -> list[float]:
        spent: list[float] = []
        for _ in range(rounds):
            in_record[0] = 0.0
            began = time.process_time()
            ended = await orchestrator.round()
            spent.append((time.process_time() - began - in_record[0]) * 1000)
            assert ended is None, f"the benchmark run ended early: {ended}"
        return spent

    try:
        return asyncio.run(rounds_cpu())
    finally:
        del store.append


def growth_ratio(root: Path, kb: int, rounds: int, repeats: int) -> dict[str, float]:
    """Median over `repeats` runs of each round's CPU; the last 10 rounds' mean over the
    first 10's."""
    task = load_task(write_task(root / f"growth-{kb}", kb, rounds))
    runs: list[list[float]] = []
    for n in range(repeats):
        with RunStore(root / f"growth-{kb}-{n}.db") as store:
            runs.append(growth(task, store, rounds))
    per_round = [statistics.median(column) for column in zip(*runs, strict=True)]
    edge = min(GROWTH_EDGE, rounds)
    first = statistics.mean(per_round[:edge])
    last = statistics.mean(per_round[-edge:])
    return {"first": first, "last": last, "ratio": last / first}


def fsync_ms(folder: Path, reps: int) -> float:
    """What one small write + fsync costs on the store's disk (the floor of an append)."""
    path = folder / "fsync.probe"
    with path.open("wb") as probe:

        def write() -> None:
            probe.write(b"x" * 512)
            probe.flush()
            os.fsync(probe.fileno())

        return median_ms(write, reps)


def print_growth(root: Path, rounds: int, repeats: int) -> None:
    edge = min(GROWTH_EDGE, rounds)
    print(
        f"Growth: CPU ms of one round() of a {rounds}-round run, record appends excluded "
        f"(median of {repeats} runs per round):"
    )
    header = (
        f"{'data':>6} {f'rounds 1-{edge}':>12} {f'rounds {rounds - edge + 1}-{rounds}':>16} "
        f"{'ratio':>6}"
    )
    print(header)
    print("-" * len(header))
    for kb in SIZES_KB:
        g = growth_ratio(root, kb, rounds, repeats)
        print(f"{kb:>4}KB {g['first']:>12.3f} {g['last']:>16.3f} {g['ratio']:>6.2f}")
    print(
        "  a mixed history: replies, tool calls and results, rejected claims; ratio = the\n"
        f"  last {edge} rounds' mean CPU over the first {edge}'s (1.0: no growth)."
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=200, help="rounds of the whole run")
    parser.add_argument("--reps", type=int, default=50, help="repetitions per micro-benchmark")
    parser.add_argument(
        "--store-dir", type=Path, default=None, help="where the temp store goes (default: tmp)"
    )
    parser.add_argument(
        "--repeats", type=int, default=3, help="runs per size of the growth measurement"
    )
    parser.add_argument(
        "--only", choices=("growth",), default=None, help="print only the growth figures"
    )
    args = parser.parse_args()
    configure_logging()
    with tempfile.TemporaryDirectory(prefix="ilh-bench-", dir=args.store_dir) as tmp:
        root = Path(tmp)
        print(
            f"ilh round cost: runtime only, zero-latency scripted model; store on disk at "
            f"{root} (SQLite WAL, synchronous=FULL)"
        )
        print(
            f"python {platform.python_version()} on {platform.machine()}, {platform.system()}; "
            f"one 512-byte write + fsync on this disk: {fsync_ms(root, args.reps):.3f} ms"
        )
        print()
        print_growth(root, args.rounds, args.repeats)
        if args.only == "growth":
            return
        print()
        print(
            f"Parts of one round, fixed history of {FIXED_HISTORY_ROUNDS} rounds "
            f"(median of {args.reps}, ms):"
        )
        header = (
            f"{'data':>6} {'context':>9} {'envelope':>9} {'est+clamp':>9} {'read':>7} "
            f"{'read+cls':>8} {'append':>7} {'cpu':>6} {'sum':>7} | {'round()':>8} {'cpu':>6}"
        )
        print(header)
        print("-" * len(header))
        for kb in SIZES_KB:
            task = load_task(write_task(root / f"parts-{kb}", kb, args.reps * 2))
            with RunStore(root / f"parts-{kb}.db") as store:
                p = parts(task, store, args.reps)
            total = p["envelope"] + p["clamp"] + p["read"] + p["append"]
            print(
                f"{kb:>4}KB {p['context_chars'] / 1024:>7.1f}KB {p['envelope']:>9.3f} "
                f"{p['clamp']:>9.3f} {p['read']:>7.3f} {p['read_claim']:>8.3f} "
                f"{p['append']:>7.3f} {p['append_cpu']:>6.3f} {total:>7.3f} | "
                f"{p['round']:>8.3f} {p['round_cpu']:>6.3f}"
            )
        print(
            "  envelope = build_envelope + messages() + digest(); est+clamp = offline token\n"
            "  estimate of the whole context + clamp; read = read_claims + classify on the\n"
            "  claim-free reply (read+cls: the same reply with one strict ::STATUS); append =\n"
            "  RunStore.append of one model_call event (cpu: its mean process CPU time, i.e.\n"
            "  without the wait for the disk's fsync); sum = envelope + est+clamp + read +\n"
            "  append; round() = one whole Orchestrator.round(): all of the above plus the\n"
            "  budget check and rendering, a second messages() pass, the model_call AND\n"
            "  budget_snapshot appends and the feedback segment (median wall; cpu = mean)."
        )
        print()
        print(
            f"Whole run of {args.rounds} rounds through run_task (history grows every round; "
            "ms per round):"
        )
        header = (
            f"{'data':>6} {'total s':>8} {'mean':>7} {'cpu':>6} {'first 20':>9} {'last 20':>8} "
            f"{'events/round':>12} {'verify':>6}"
        )
        print(header)
        print("-" * len(header))
        for kb in SIZES_KB:
            task_file = write_task(root / f"run-{kb}", kb, args.rounds)
            with RunStore(root / f"run-{kb}.db") as store:
                r = whole_run(task_file, store, args.rounds)
            print(
                f"{kb:>4}KB {r['total_s']:>8.2f} {r['per_round']:>7.3f} "
                f"{r['cpu_per_round']:>6.3f} {r['first']:>9.3f} "
                f"{r['last']:>8.3f} {r['events_per_round']:>12.2f} "
                f"{'ok' if r['verified'] else 'FAIL':>6}"
            )
        print(
            "  mean = wall time of the whole run / rounds (includes run setup and the end);\n"
            "  cpu = process CPU time / rounds; first/last 20 = mean wall gap between\n"
            "  consecutive model_call records (the history, and so the envelope, grows by\n"
            "  one reply and one feedback segment per round)."
        )


if __name__ == "__main__":
    main()
