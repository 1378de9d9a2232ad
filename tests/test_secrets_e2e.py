"""Canary keys in the harness's environment never reach the run store (its bytes on disk),
`ilh runs export`, `ilh run`'s stdout/stderr, or a request sent to a model provider,
whatever path the agent takes to them: a file the user left in the workspace, its own
reply, a tool check that prints it, `/proc/$PPID/environ` under `--sandbox none`, base64.

Model providers are `httpx2.MockTransport`s behind the real OpenAI and Anthropic clients.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import httpx2
import pytest

from harness.inputs.task_file import load_task
from harness.record.store import RunStore
from harness.run.setup import run_task
from harness.secrets.values import FRAGMENT_MIN_CHARS, encoded_forms
from tests.model_fakes import PROVIDERS, FakeTime, Provider, Script

CANARIES = {
    "OPENAI_API_KEY": "sk-proj-CANARY0penai0123456789abcdefXYZ",
    "GITHUB_TOKEN": "ghp_CANARYgithub9876543210zyxwvuTSRQ",
    "AWS_SECRET_ACCESS_KEY": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYCANARYKEY",
    "MY_SERVICE_TOKEN": 'svc"tok\\en/with spaces+CANARY=42',
}


def leaks(text: str, canaries: dict[str, str] = CANARIES) -> list[str]:
    """Every recognisable form of a canary in `text`: exact, encoded, or a piece of
    `FRAGMENT_MIN_CHARS` characters (cut by a cap)."""
    found = []
    for value in canaries.values():
        found += [form for form in encoded_forms(value) if form in text]
        for start in range(len(value) - FRAGMENT_MIN_CHARS + 1):
            piece = value[start : start + FRAGMENT_MIN_CHARS]
            if piece in text and len(set(piece)) >= 5:
                found.append(piece)
    return found


def store_bytes(db: Path) -> str:
    """The store as it is on disk, its write-ahead log and journals included."""
    data = b""
    for path in db.parent.iterdir():
        if path.name.startswith(db.name):
            data += path.read_bytes()
    return data.decode("latin-1")


def write_task(folder: Path, calls: list[dict[str, Any]], *, said: str) -> Path:
    """A task whose workspace holds a file the user left (with every canary) and whose
    scripted agent makes `calls`, then says `said` and writes it to a file, then claims."""
    (folder / "workspace").mkdir(parents=True)
    notes = "".join(f"{name}={value}\n" for name, value in CANARIES.items())
    (folder / "workspace" / "notes.txt").write_text("keys I use:\n" + notes)
    usage = {"input_tokens": 10, "output_tokens": 10}
    write = {"name": "write_file", "arguments": {"path": "out.txt", "content": said}}
    claim = "::STATUS{@TASK|state:claimed_complete|evidence:check|by:@AGENT|authority:proposal}"
    script = [
        {"text": "Looking around.", "tool_calls": calls, "usage": usage},
        {"text": said, "tool_calls": [write], "usage": usage},
        {"text": claim, "usage": usage},
    ]
    (folder / "agent.jsonl").write_text("".join(json.dumps(s) + "\n" for s in script))
    (folder / "task.toml").write_text(
        textwrap.dedent(
            """
            [task]
            id = "canary"
            objective = "Look around."
            workspace = "workspace"
            [budget.rounds]
            limit = 5
            [rubric]
            threshold = 0.5
            [[rubric.criteria]]
            id = "shows"
            weight = 1.0
            check = "the notes are there"
            run = "cat notes.txt; base64 notes.txt; cat out.txt"
            [agent]
            model = "scripted:agent.jsonl"
            """
        )
    )
    return folder / "task.toml"


def ilh_with(env: dict[str, str], *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "harness", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )


@pytest.mark.parametrize("sandbox", ["confined", "none"])
def test_canaries_never_reach_the_store_export_or_terminal(tmp_path: Path, sandbox: str) -> None:
    as_json = "python3 -c \"import json; print(json.dumps(open('notes.txt').read()))\""
    calls: list[dict[str, Any]] = [
        {"name": "read_file", "arguments": {"path": "notes.txt"}},
        {"name": "grep", "arguments": {"pattern": "CANARY"}},
        {"name": "run_command", "arguments": {"command": "cat notes.txt; base64 notes.txt"}},
        {"name": "run_command", "arguments": {"command": as_json}},
        {"name": "list_files", "arguments": {}},
    ]
    if sandbox == "none":
        calls.append(
            {
                "name": "run_command",
                "arguments": {"command": "tr '\\0' '\\n' < /proc/$PPID/environ; env"},
            }
        )
    said = "I found " + " and ".join(CANARIES.values())  # the agent echoes them itself
    task = write_task(tmp_path / "task", calls, said=said)
    env = {**os.environ, **CANARIES, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    extra = ["--sandbox", "none"] if sandbox == "none" else []
    store = tmp_path / "runs.db"
    texts: dict[str, str] = {}
    for mode in ("--json", None):
        args = ["run", str(task), "--store", str(store), *extra]
        done = ilh_with(env, *args, *([mode] if mode else []), cwd=tmp_path)
        assert "Traceback" not in done.stderr, done.stderr
        assert done.returncode in (0, 3), done.stderr
        texts[f"ilh run {mode or ''} stdout"] = done.stdout
        texts[f"ilh run {mode or ''} stderr"] = done.stderr
        if mode == "--json":
            result = json.loads(done.stdout)
    run_id = result["run_id"]
    for command in (
        ["runs", "export", run_id],
        ["runs", "show", run_id, "--json"],
        ["runs", "show", run_id],
    ):
        shown = ilh_with(env, *command, "--store", str(store), cwd=tmp_path)
        assert shown.returncode == 0, shown.stderr
        texts[" ".join(command[:2])] = shown.stdout + shown.stderr
    texts["store bytes"] = store_bytes(store)
    texts["the file the agent wrote"] = (Path(result["workspace"]) / "out.txt").read_text()
    for where, text in texts.items():
        assert leaks(text) == [], where
    # The agent did get at them: what it saw says what was taken out.
    export = texts["runs export"]
    for name in CANARIES:
        assert f"[REDACTED:{name}]" in export, name
    with RunStore(store) as opened:
        assert opened.verify(run_id).ok


def _reply(provider: Provider, text: str, calls: list[tuple[str, dict[str, Any]]]) -> Any:
    body = provider.reply(text, calls)
    return lambda req: httpx2.Response(200, json=body)


@pytest.mark.parametrize("provider", PROVIDERS, ids=[p.name for p in PROVIDERS])
def test_canaries_never_reach_a_provider_request(
    provider: Provider, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The provider's own variable holds the key the client is given (which the
    # OPENAI_API_KEY canary of the notes then is not: a string like any other).
    canaries = {n: v for n, v in CANARIES.items() if n != provider.key_env}
    for name, value in canaries.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv(provider.key_env, provider.key)
    folder = tmp_path / "task"
    write_task(folder, [], said="unused")
    key_b64 = base64.b64encode(CANARIES["GITHUB_TOKEN"].encode()).decode()
    echoed = f"{key_b64} {CANARIES['MY_SERVICE_TOKEN']}"
    blocked = "::STATUS{@TASK|state:blocked|reason:done|by:@AGENT|authority:proposal}"
    script = Script(
        [
            _reply(
                provider,
                "Reading the notes.",
                [
                    ("read_file", {"path": "notes.txt"}),
                    ("run_command", {"command": "cat notes.txt | base64"}),
                ],
            ),
            # A proxy that echoes secrets into a reply, as text and as tool arguments.
            _reply(
                provider,
                f"Echo: {CANARIES['AWS_SECRET_ACCESS_KEY']} {provider.key}",
                [("write_file", {"path": "k.txt", "content": echoed})],
            ),
            _reply(provider, blocked, []),
        ]
    )
    client = provider.client(script, time=FakeTime())
    db = tmp_path / "runs.db"
    with RunStore(db) as store:
        task = load_task(folder / "task.toml")
        result = asyncio.run(run_task(task, store, model=client.name, client=client))
    assert len(script.requests) == 3
    bodies = [r.content.decode() for r in script.requests]
    for n, body in enumerate(bodies):
        assert leaks(body, canaries) == [], f"request {n + 1}"
        assert provider.key not in body
    # The request after the tool results carried them, redacted.
    assert "[REDACTED:MY_SERVICE_TOKEN]" in bodies[1] and "[REDACTED:GITHUB_TOKEN]" in bodies[1]
    assert "[REDACTED:AWS_SECRET_ACCESS_KEY]" in bodies[2]
    assert leaks(store_bytes(db), canaries) == [] and provider.key not in store_bytes(db)
    written = (Path(str(result.workspace)) / "k.txt").read_text()
    assert leaks(written, canaries) == []
