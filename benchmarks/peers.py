"""The harness's own cost per task beside its peers', on one mock workload.

200 tasks, one model call each, answered by an OpenAI-compatible mock (an
`httpx2.MockTransport` that replies after 50 ms, the same for everyone) through the real
OpenAI SDK, at most 64 at a time, through:

* ilang-harness: the batch path of `ilh run --concurrency` (`harness.run.setup.run_task`:
  task, ledger, envelope, orchestrator, run record, result);
* Inspect AI (`inspect_ai.eval`: 200 samples, `generate()`, its `openai/` provider);
* pydantic-ai (`Agent.run` on an `OpenAIChatModel`).

The frameworks take turns (each repeat runs every one, the order rotating) after a small
warm-up each, so that the machine's load falls on all alike; the figures are the median
over repeats. Per task: CPU time of the process (every thread) and wall time; the
ratios are ilang-harness's over each peer's (above 1: the harness costs more).

A peer that is not installed is skipped with one line. The peers come with the optional
extra `bench` (`pip install 'ilang-harness[bench]'`, in a venv of its own).

Run: python -m benchmarks.peers [--tasks 200] [--latency-ms 50] [--concurrency 64]
     [--repeats 3] [--peers inspect,pydantic-ai | none]
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import math
import os
import platform
import statistics
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import httpx2

from benchmarks.concurrency import REPLY, run_batch, write_task
from harness.inputs.task_file import Task, load_task
from harness.record.store import RunStore
from harness.secrets.logs import configure_logging

PROMPT = "Say what you would do first."
KEY = "bench-key"


def transport(latency_s: float) -> httpx2.MockTransport:
    async def answer(request: httpx2.Request) -> httpx2.Response:
        await asyncio.sleep(latency_s)
        return httpx2.Response(200, json=REPLY)

    return httpx2.MockTransport(answer)


@dataclass
class Workload:
    tasks: int
    latency_s: float
    concurrency: int
    folder: Path


Runner = Callable[[Workload, int], None]
"""Runs `n` tasks of the workload (blocking); raises if one did not get its reply."""


# --- ilang-harness ---------------------------------------------------------------------------


def harness_runner(work: Workload) -> Runner:
    task: Task = load_task(write_task(work.folder))
    count = [0]

    def run(w: Workload, n: int) -> None:
        count[0] += 1
        with RunStore(w.folder / f"runs-{count[0]}.db") as store:
            results = asyncio.run(run_batch(task, store, n, w.concurrency, w.latency_s))
        assert all(r.ended_by == "budget" for r in results), "every task made its call"

    return run


# --- Inspect AI ------------------------------------------------------------------------------


def inspect_runner(work: Workload) -> Runner:
    from inspect_ai import Task as InspectTask
    from inspect_ai import eval as inspect_eval
    from inspect_ai.dataset import Sample
    from inspect_ai.model import get_model
    from inspect_ai.solver import generate

    count = [0]

    def run(w: Workload, n: int) -> None:
        count[0] += 1
        model = get_model(
            "openai/bench",
            api_key=KEY,
            responses_api=False,
            http_client=httpx2.AsyncClient(transport=transport(w.latency_s)),
            memoize=False,
        )
        task = InspectTask(dataset=[Sample(input=PROMPT) for _ in range(n)], solver=generate())
        [log] = inspect_eval(
            task,
            model=model,
            max_connections=w.concurrency,
            max_samples=w.concurrency,
            log_dir=str(w.folder / f"inspect-{count[0]}"),
            display="none",
            log_level="error",
            score=False,
        )
        assert log.status == "success", log.error
        assert len(log.samples or []) == n

    return run


# --- pydantic-ai -----------------------------------------------------------------------------


def pydantic_ai_runner(work: Workload) -> Runner:
    from openai import AsyncOpenAI
    from pydantic_ai import Agent
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    def run(w: Workload, n: int) -> None:
        sdk = AsyncOpenAI(
            api_key=KEY, http_client=httpx2.AsyncClient(transport=transport(w.latency_s))
        )
        agent: Agent[None, str] = Agent(
            OpenAIChatModel("bench", provider=OpenAIProvider(openai_client=sdk))
        )

        async def batch() -> list[str]:
            gate = asyncio.Semaphore(w.concurrency)

            async def one() -> str:
                async with gate:
                    return (await agent.run(PROMPT)).output

            return await asyncio.gather(*(one() for _ in range(n)))

        outputs = asyncio.run(batch())
        assert outputs == [REPLY["choices"][0]["message"]["content"]] * n  # type: ignore[index]

    return run


PEERS: dict[str, tuple[str, Callable[[Workload], Runner]]] = {
    "inspect": ("inspect_ai", inspect_runner),
    "pydantic-ai": ("pydantic_ai", pydantic_ai_runner),
}


@dataclass
class Figures:
    cpu_ms: list[float]
    wall_s: list[float]


def measure(runner: Runner, work: Workload) -> tuple[float, float]:
    began, cpu_began = time.perf_counter(), time.process_time()
    runner(work, work.tasks)
    wall = time.perf_counter() - began
    return (time.process_time() - cpu_began) / work.tasks * 1000, wall


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--tasks", type=int, default=200)
    parser.add_argument("--latency-ms", type=float, default=50.0)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument(
        "--peers", default=",".join(PEERS), help="comma-separated, or `none` (the harness alone)"
    )
    args = parser.parse_args(argv)
    if args.tasks < 1 or args.concurrency < 1 or args.repeats < 1:
        parser.error("--tasks, --concurrency and --repeats must be at least 1")
    wanted = [] if args.peers.strip() == "none" else [p.strip() for p in args.peers.split(",")]
    unknown = [p for p in wanted if p not in PEERS]
    if unknown:
        parser.error(f"unknown peer(s) {', '.join(unknown)} (known: {', '.join(PEERS)})")
    configure_logging()
    os.environ.setdefault("INSPECT_LOG_LEVEL", "error")
    print(
        f"{args.tasks} tasks, one model call each, mock latency {args.latency_ms:g} ms, "
        f"concurrency {args.concurrency}, {args.repeats} interleaved repeat(s); "
        f"python {platform.python_version()}, {os.cpu_count()} cpu(s)"
    )
    with tempfile.TemporaryDirectory() as tmp:
        work = Workload(args.tasks, args.latency_ms / 1000, args.concurrency, Path(tmp))
        runners: dict[str, Runner] = {"ilang-harness": harness_runner(work)}
        for name in wanted:
            module, make = PEERS[name]
            if importlib.util.find_spec(module) is None:
                print(f"{name}: not installed, skipped (pip install 'ilang-harness[bench]')")
                continue
            runners[name] = make(work)
        warm = Workload(min(8, args.tasks), work.latency_s, work.concurrency, work.folder)
        for runner in runners.values():  # imports, caches, first connections: not counted
            runner(warm, warm.tasks)
        figures = {name: Figures([], []) for name in runners}
        names = list(runners)
        for repeat in range(args.repeats):
            shift = repeat % len(names)
            for name in names[shift:] + names[:shift]:
                cpu_ms, wall = measure(runners[name], work)
                figures[name].cpu_ms.append(cpu_ms)
                figures[name].wall_s.append(wall)
        report(figures, work)


def report(figures: dict[str, Figures], work: Workload) -> None:
    ideal = math.ceil(work.tasks / work.concurrency) * work.latency_s
    print(
        f"{'framework':<14} {'cpu ms/task':>11} {'wall s':>8} {'efficiency':>10} "
        f"{'harness/peer cpu':>16} {'harness/peer wall':>17}"
    )
    ours = figures["ilang-harness"]
    our_cpu, our_wall = statistics.median(ours.cpu_ms), statistics.median(ours.wall_s)
    for name, fig in figures.items():
        cpu, wall = statistics.median(fig.cpu_ms), statistics.median(fig.wall_s)
        ratios = ""
        if name != "ilang-harness":
            ratios = f"{our_cpu / cpu:>15.2f}x {our_wall / wall:>16.2f}x"
        print(f"{name:<14} {cpu:>11.2f} {wall:>8.3f} {ideal / wall:>10.2f} {ratios}")
    print(f"(efficiency: ideal {ideal:.3f} s, ceil(tasks / concurrency) x latency, / wall)")


if __name__ == "__main__":
    main()
