"""`ilh run … --model openai:… --base-url http://127.0.0.1:PORT/v1` against an
OpenAI-compatible server this test starts on loopback: the real CLI, the real SDK, real
HTTP; the server plays the agent."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from harness.record.store import RunStore
from tests.loopback_server import ChatServer, Reply, json_reply, serve
from tests.model_fakes import openai_reply

REPO = Path(__file__).resolve().parents[1]
HONEST = REPO / "examples" / "honest" / "task.toml"
FIZZ = '''"""FizzBuzz: multiples of 3 give "Fizz", of 5 "Buzz", of both "FizzBuzz"."""


def fizzbuzz(n: int) -> str:
    if n % 15 == 0:
        return "FizzBuzz"
    if n % 3 == 0:
        return "Fizz"
    if n % 5 == 0:
        return "Buzz"
    return str(n)
'''
CLAIM = "::STATUS{@TASK|state:claimed_complete|by:@AGENT|authority:proposal}"


def ilh(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ANTHROPIC_"))}
    return subprocess.run(
        [sys.executable, "-m", "harness", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def reply(body: dict[str, Any]) -> Any:
    return lambda request: json_reply(body)


def busy(request: dict[str, Any]) -> Reply:
    return json_reply({"error": {"message": "warming up"}}, status=503, **{"retry-after": "0"})


def test_ilh_run_against_a_loopback_openai_compatible_server(tmp_path: Path) -> None:
    server = ChatServer(
        [
            busy,
            reply(
                openai_reply(
                    "I write fizz.py.",
                    [("write_file", {"path": "fizz.py", "content": FIZZ})],
                    1500,
                    90,
                )
            ),
            reply(
                openai_reply(
                    "Now the tests.",
                    [("run_command", {"command": "python -m unittest -q"})],
                    1800,
                    30,
                )
            ),
            reply(openai_reply(f"The tests pass.\n\n{CLAIM}\n", [], 2000, 40)),
        ]
    )
    store = tmp_path / "runs.db"
    with serve(server):
        done = ilh(
            "run",
            str(HONEST),
            "--model",
            "openai:tiny-test",
            "--base-url",
            server.url,
            "--store",
            str(store),
            "--json",
            cwd=tmp_path,
        )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["ended_by"] == "committed_complete"
    assert result["model"] == "openai:tiny-test"
    assert result["final"]["state"] == "complete"

    # The wire: four requests (one retried), each to the model asked for, each with
    # tools and a max_tokens the token budget allows, none with a real key.
    assert len(server.requests) == 4
    assert all(r["model"] == "tiny-test" for r in server.requests)
    assert all(
        {t["function"]["name"] for t in r["tools"]} >= {"write_file"} for r in server.requests
    )
    assert all(0 < r["max_tokens"] <= 40000 - 4000 - 1000 for r in server.requests)
    assert server.requests[0] == server.requests[1], "a retry resends the same request"
    assert all(h.get("authorization") == "Bearer no-key" for h in server.headers)
    last = server.requests[-1]["messages"]
    assert last[-2]["role"] == "tool" and "OK" in last[-2]["content"]

    # The record: usage as the server reported it; the retry is an event.
    (tokens,) = [b for b in result["budgets"] if b["kind"] == "tokens"]
    assert tokens["used"] >= 1590 + 1830 + 2040
    with RunStore(store) as runs:
        assert runs.verify(result["run_id"]).ok
        kinds = [e.kind for e in runs.events(result["run_id"])]
        attempts = [e.payload for e in runs.events(result["run_id"], "model_attempt")]
    assert [a["outcome"] for a in attempts] == ["retry", "ok", "ok", "ok"]
    assert attempts[0]["status"] == 503
    assert kinds.count("model_call") == 3


def test_a_server_that_drops_the_connection_mid_body_is_survived(tmp_path: Path) -> None:
    whole = json.dumps(openai_reply("never complete")).encode()

    def cut(request: dict[str, Any]) -> Reply:
        # Promise the whole body, send half: the client sees the connection close early.
        return (
            200,
            {"content-type": "application/json", "content-length": str(len(whole))},
            whole[: len(whole) // 2],
        )

    server = ChatServer([cut])
    with serve(server):
        done = ilh(
            "run",
            str(HONEST),
            "--model",
            "openai:tiny-test",
            "--base-url",
            server.url,
            "--store",
            str(tmp_path / "runs.db"),
            "--json",
            cwd=tmp_path,
        )
    assert done.returncode == 3, done.stderr
    result = json.loads(done.stdout)
    assert result["ended_by"] == "error"
    assert result["final"]["reason"] == "model_error"
    assert "Traceback" not in done.stderr


def test_openai_without_a_key_or_a_base_url_is_bad_input(tmp_path: Path) -> None:
    done = ilh(
        "run",
        str(HONEST),
        "--model",
        "openai:gpt-x",
        "--store",
        str(tmp_path / "r.db"),
        cwd=tmp_path,
    )
    assert done.returncode == 2
    assert "OPENAI_API_KEY" in done.stderr and "Traceback" not in done.stderr
