"""How `ilh run TASK… --concurrency N` scales when the model is the slow part.

200 one-round tasks run through the real batch path (`harness.run.batch.run_tasks`: task
file, ledger, envelope, orchestrator, run record) against the real OpenAI client, whose
HTTP goes to an `httpx2.MockTransport` that answers every request after 50 ms, at
concurrency 1, 16 and 64. With a 50 ms model, N tasks at a time take at least
ceil(200 / N) x 50 ms (the ideal); the rest is the runtime's own work (envelope, SDK,
redaction, the run record), most of it on the one event loop.

Printed per level: wall time, efficiency (ideal / measured wall) and the process's CPU
time per task (every thread: the event loop, the record's writer, the SDK; these tasks
run no commands, so all of it is the harness's own cost, the mock transport's few
microseconds aside).

Then the floor at the same level, right after: the same number of calls, with the body
the harness sent, through the bare SDK alone (no harness), once by
`chat.completions.create` (what a plain SDK user runs) and once by the SDK's `post`
(the harness's path, without `create`'s parameter transform). No runtime can beat its
own HTTP client: "beyond SDK" is the harness's CPU per task minus the `post` floor.

With `--instructions` (and valgrind on PATH), each level is also counted in instructions
(callgrind), which unlike CPU time do not move with the machine's load: this script runs
itself under callgrind, `--warm` tasks then `--tasks` more (and once the warm-up alone), so
the difference over `--tasks` is what one task costs once imports, first-use set-up and
caches are paid; likewise the SDK's bare `post` per call. "beyond SDK" is then the
harness's instructions per task minus that floor.

Run: .venv/bin/python benchmarks/concurrency.py [--tasks 200] [--latency-ms 50]
     [--levels 1,16,64] [--store-dir DIR] [--instructions [--warm 16]]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import platform
import sys
import tempfile
import textwrap
import time
from pathlib import Path
from typing import Any

import httpx2
import openai

try:
    from benchmarks import callgrind
except ModuleNotFoundError:  # run as a script: its own folder is on the path, not the repository
    import callgrind  # type: ignore[no-redef]
from harness.inputs.task_file import Task, load_task
from harness.models.clients.openai_client import OpenAIClient
from harness.record.results import RunResult
from harness.record.store import RunStore
from harness.run.batch import gather_limited
from harness.run.setup import run_task
from harness.secrets.logs import configure_logging

REPLY = {
    "id": "chatcmpl-bench",
    "object": "chat.completion",
    "created": 0,
    "model": "bench",
    "choices": [
        {
            "index": 0,
            "message": {"role": "assistant", "content": "Working on it."},
            "finish_reason": "stop",
        }
    ],
    "usage": {"prompt_tokens": 900, "completion_tokens": 12, "total_tokens": 912},
}


def write_task(folder: Path) -> Path:
    path = folder / "task.toml"
    path.write_text(
        textwrap.dedent(
            """
            [task]
            id = "bench"
            objective = "Say what you would do first."
            [budget.rounds]
            limit = 1
            [budget.tokens]
            limit = 20000
            """
        ),
        encoding="utf-8",
    )
    return path


def transport(latency_s: float, bodies: list[bytes] | None = None) -> httpx2.MockTransport:
    """The mock model: every request answered after `latency_s`; the first body kept."""

    async def answer(request: httpx2.Request) -> httpx2.Response:
        if bodies is not None and not bodies:
            bodies.append(request.content)
        await asyncio.sleep(latency_s)
        return httpx2.Response(200, json=REPLY)

    return httpx2.MockTransport(answer)


def client(latency_s: float, bodies: list[bytes] | None = None) -> OpenAIClient:
    return OpenAIClient("bench", api_key="bench-key", transport=transport(latency_s, bodies))


async def bare_sdk(
    body: dict[str, Any], calls: int, level: int, latency_s: float, how: str
) -> None:
    """`calls` requests with `body` through the SDK alone, `level` at a time."""
    async with httpx2.AsyncClient(transport=transport(latency_s)) as http:
        sdk = openai.AsyncOpenAI(api_key="bench-key", max_retries=0, http_client=http)
        gate = asyncio.Semaphore(level)

        async def one() -> None:
            async with gate:
                if how == "create":
                    await sdk.chat.completions.create(**body)
                else:
                    await sdk.post("/chat/completions", body=body, cast_to=httpx2.Response)

        await asyncio.gather(*(one() for _ in range(calls)))


def timed(work: Any) -> tuple[float, float]:
    """(wall s, process CPU s) of running the coroutine `work`."""
    began, cpu_began = time.perf_counter(), time.process_time()
    asyncio.run(work)
    return time.perf_counter() - began, time.process_time() - cpu_began


async def run_batch(
    task: Task,
    store: RunStore,
    tasks: int,
    level: int,
    latency_s: float,
    bodies: list[bytes] | None = None,
) -> list[RunResult]:
    def job() -> Any:
        return lambda: run_task(task, store, model="openai:bench", client=client(latency_s, bodies))

    return await gather_limited([job() for _ in range(tasks)], level)


def counted_work(side: str, warm: int, tasks: int, level: int, latency_s: float) -> None:
    """What one callgrind run executes (`--count SIDE`): `warm` tasks (or bare SDK
    calls), then `tasks` more, each batch `level` at a time."""
    with tempfile.TemporaryDirectory() as tmp:
        task = load_task(write_task(Path(tmp)))
        with RunStore(Path(tmp) / "runs.db") as store:
            bodies: list[bytes] = []

            async def work() -> None:
                await run_batch(task, store, warm, level, latency_s, bodies)
                if side == "post":  # the harness's body, then the bare SDK's own warm-up
                    body = json.loads(bodies[0])
                    await bare_sdk(body, warm, level, latency_s, "post")
                    if tasks:
                        await bare_sdk(body, tasks, level, latency_s, "post")
                elif tasks:
                    await run_batch(task, store, tasks, level, latency_s)

            asyncio.run(work())


def instructions_of(argv: list[str]) -> int | None:
    """Instructions that running `argv` (to a successful end) executed."""
    # The child imports this checkout's code, wherever it is run from.
    root = Path(__file__).resolve().parents[1]
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(root), os.environ.get("PYTHONPATH")])),
    }
    return callgrind.instructions_of(argv, cwd=root, env=env, timeout_s=3600, must_succeed=True)


def per_task_instructions(
    side: str, warm: int, tasks: int, level: int, latency_ms: float
) -> float | None:
    """Instructions one more task (`side` harness) or bare SDK call (`post`) costs: the
    run with `tasks` after the warm-up, minus the warm-up alone, over `tasks`."""
    base = [sys.executable, "-m", "benchmarks.concurrency", "--count", side, "--warm", str(warm)]
    base += ["--levels", str(level), "--latency-ms", str(latency_ms)]
    alone = instructions_of([*base, "--tasks", "0"])
    total = instructions_of([*base, "--tasks", str(tasks)])
    if alone is None or total is None:
        return None
    return (total - alone) / tasks


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=200)
    parser.add_argument("--latency-ms", type=float, default=50.0)
    parser.add_argument("--levels", default="1,16,64")
    parser.add_argument("--store-dir", type=Path, default=None, help="where the run stores go")
    parser.add_argument(
        "--instructions", action="store_true", help="also count instructions (callgrind)"
    )
    parser.add_argument("--warm", type=int, default=16, help="warm-up tasks before counting")
    parser.add_argument("--count", choices=("harness", "post"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    configure_logging()
    if args.count is not None:  # one run under callgrind (see per_task_instructions)
        counted_work(args.count, args.warm, args.tasks, int(args.levels), args.latency_ms / 1000)
        return
    levels = [int(x) for x in args.levels.split(",")]
    latency = args.latency_ms / 1000
    print(
        f"{args.tasks} tasks, one model call each, mock latency {args.latency_ms:g} ms; "
        f"python {platform.python_version()}, {os.cpu_count()} cpu(s)"
    )
    print(
        f"{'concurrency':>11} {'side':>12} {'wall s':>8} {'ideal s':>8} {'efficiency':>10} "
        f"{'cpu ms/task':>11} {'beyond SDK':>10}"
    )
    rows = []
    with tempfile.TemporaryDirectory(dir=args.store_dir) as tmp:
        task = load_task(write_task(Path(tmp)))
        for level in levels:
            ideal = math.ceil(args.tasks / level) * latency
            bodies: list[bytes] = []
            with RunStore(Path(tmp) / f"runs-{level}.db") as store:
                results: list[RunResult] = []

                async def harness(
                    store: RunStore = store,
                    level: int = level,
                    bodies: list[bytes] = bodies,
                    into: list[RunResult] = results,
                ) -> None:
                    into.extend(await run_batch(task, store, args.tasks, level, latency, bodies))

                sides = {"harness": timed(harness())}
                assert all(r.ended_by == "budget" for r in results), "every task ran its round"
                assert len({r.run_id for r in results}) == args.tasks
            body = json.loads(bodies[0])
            for how in ("create", "post"):
                sides[f"SDK {how}"] = timed(bare_sdk(body, args.tasks, level, latency, how))
            floor_ms = sides["SDK post"][1] / args.tasks * 1000
            for side, (wall, cpu) in sides.items():
                cpu_ms = cpu / args.tasks * 1000
                beyond = f"{cpu_ms - floor_ms:>10.2f}" if side == "harness" else f"{'':>10}"
                print(
                    f"{level:>11} {side:>12} {wall:>8.3f} {ideal:>8.3f} {ideal / wall:>10.2f} "
                    f"{cpu_ms:>11.2f} {beyond}"
                )
                rows.append(
                    {
                        "concurrency": level,
                        "side": side,
                        "wall_s": round(wall, 3),
                        "ideal_s": round(ideal, 3),
                        "efficiency": round(ideal / wall, 3),
                        "cpu_ms_per_task": round(cpu_ms, 2),
                    }
                )
    if args.instructions:
        # Fewer tasks than the timed table: under callgrind each costs ~50x its CPU time.
        counted_tasks = min(args.tasks, 128)
        print(
            f"Instructions (callgrind; {counted_tasks} tasks after {args.warm} warm-up, "
            "per task or per bare call):"
        )
        for level in levels:
            mine = per_task_instructions(
                "harness", args.warm, counted_tasks, level, args.latency_ms
            )
            floor = per_task_instructions("post", args.warm, counted_tasks, level, args.latency_ms)
            if mine is None or floor is None:
                print("  valgrind is not on PATH (or a counted run failed)")
                break
            print(
                f"  concurrency {level:>3}: harness {mine / 1e6:6.2f} M, SDK post "
                f"{floor / 1e6:6.2f} M, beyond SDK {(mine - floor) / 1e6:6.2f} M"
            )
            rows.append(
                {
                    "concurrency": level,
                    "side": "instructions",
                    "harness_per_task": round(mine),
                    "sdk_post_per_call": round(floor),
                }
            )
    print(json.dumps(rows))


if __name__ == "__main__":
    main()
