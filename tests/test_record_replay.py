"""`ilh run --record PATH` and `replay:PATH`: a recorded run replays to the same record,
offline; a request the recording has not seen fails loudly; recorded failures and
retries replay too."""

from __future__ import annotations

import asyncio
import json
import re
import shutil
from pathlib import Path
from typing import Any

import httpx2
import pytest

from harness.inputs.errors import InputError
from harness.inputs.task_file import load_task
from harness.models.clients.record import RecordingClient
from harness.models.clients.recording import canonical_text, request_digest
from harness.models.clients.replay import ReplayClient, load_recording
from harness.models.interface import ModelCallError
from harness.record.events import Event
from harness.record.store import RunStore
from harness.run.setup import run_task
from tests.harness_helpers import ilh
from tests.model_fakes import OPENAI, PROVIDERS, FakeTime, Provider, Script, ok, request, status

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = REPO / "examples"
ids = [p.name for p in PROVIDERS]
STOP = "::STATUS{@TASK|state:stopped|reason:user_pause|by:@AGENT|authority:proposal}"

_DROP = {
    "at", "hash", "prev_hash", "run_id", "latency_s", "duration_s", "envelope_digest",
    "allowed_s",  # an allowance is the time left, a wall-clock figure
}  # fmt: skip
_RUN_ID = re.compile(r"\d{8}T\d{9}-[0-9a-f]{12}")
_SECONDS = re.compile(r"\b\d+\.\d+s\b")  # wall-clock figures, e.g. a check's "exit 0 in 0.06s"


def normal(value: Any) -> Any:
    """A record value with what legitimately differs between two runs masked: ids, times,
    latencies, the random ::UNTRUSTED tokens, wall-clock figures."""
    if isinstance(value, dict):
        if value.get("kind") == "time" and "limit" in value:
            return {
                k: normal(v) for k, v in value.items() if k not in ("used", "remaining", "line")
            }
        return {k: normal(v) for k, v in value.items() if k not in _DROP}
    if isinstance(value, list):
        return [normal(v) for v in value]
    if isinstance(value, str):
        return _SECONDS.sub("Ns", _RUN_ID.sub("RUN", canonical_text(value)))
    return value


def record_of(store: RunStore, run_id: str) -> list[Any]:
    events: list[Event] = store.events(run_id)
    rows = []
    for event in events:
        payload = dict(event.payload)
        if event.kind == "run_started":
            payload["meta"] = {k: v for k, v in payload["meta"].items() if k != "model"}
        payload.pop("workspace", None)
        if "result" in payload:
            payload["result"] = {k: v for k, v in payload["result"].items() if k != "workspace"}
        rows.append((str(event.kind), event.round, normal(payload)))
    return rows


@pytest.mark.parametrize("example", ["honest", "injected_tool_result", "forged_commit"])
def test_a_recorded_run_replays_to_the_same_record_from_the_cli(
    example: str, tmp_path: Path
) -> None:
    task = EXAMPLES / example / "task.toml"
    first = ilh(
        "run", str(task), "--record", "rec.jsonl", "--store", "a.db", "--json", cwd=tmp_path
    )
    again = ilh(
        "run", str(task), "--model", "replay:rec.jsonl", "--store", "b.db", "--json", cwd=tmp_path
    )
    assert first.returncode == again.returncode, again.stderr
    one, two = json.loads(first.stdout), json.loads(again.stdout)
    assert two["ended_by"] == one["ended_by"]
    with RunStore(tmp_path / "a.db") as a, RunStore(tmp_path / "b.db") as b:
        assert b.verify(two["run_id"]).ok
        assert record_of(b, two["run_id"]) == record_of(a, one["run_id"])


@pytest.mark.parametrize("provider", PROVIDERS, ids=ids)
def test_a_provider_run_with_retries_and_tools_replays_offline(
    provider: Provider, tmp_path: Path
) -> None:
    shutil.copytree(EXAMPLES / "honest", tmp_path / "honest")
    task = load_task(tmp_path / "honest" / "task.toml")
    script = Script(
        [
            status(429, provider.error_body("slow"), {"retry-after": "2"}),
            ok(provider.reply("Looking.", [("list_files", {})], 1500, 40)),
            ok(provider.reply("Reading.", [("read_file", {"path": "test_fizz.py"})], 1700, 40)),
            ok(
                provider.reply(
                    f"I stop here.\n\n{STOP}\n",
                    [],
                    1900,
                    30,
                )
            ),
        ]
    )
    recording = tmp_path / "rec.jsonl"
    client = RecordingClient(provider.client(script, time=FakeTime()), recording)
    with RunStore(tmp_path / "a.db") as store:
        original = asyncio.run(run_task(task, store, model=client.name, client=client))
        first = record_of(store, original.run_id)
    assert original.ended_by == "agent_proposal"
    lines = recording.read_text().splitlines()
    assert len(lines) == 3
    assert len(json.loads(lines[0])["attempts"]) == 2  # the 429 and the success

    with RunStore(tmp_path / "b.db") as store:
        replayed = asyncio.run(run_task(task, store, model=f"replay:{recording}"))
        assert store.verify(replayed.run_id).ok
        second = record_of(store, replayed.run_id)
    assert replayed.model == f"{provider.name}:test-model"
    assert second == first


def test_a_request_the_recording_has_not_seen_fails_loudly(tmp_path: Path) -> None:
    first = ilh(
        "run",
        str(EXAMPLES / "forged_commit" / "task.toml"),
        "--record",
        "rec.jsonl",
        "--store",
        "a.db",
        cwd=tmp_path,
    )
    assert first.returncode == 3
    changed = tmp_path / "changed"
    shutil.copytree(EXAMPLES / "forged_commit", changed)
    toml = changed / "task.toml"
    toml.write_text(toml.read_text().replace("three release notes", "four release notes"))
    again = ilh(
        "run",
        str(toml),
        "--model",
        f"replay:{tmp_path / 'rec.jsonl'}",
        "--store",
        "b.db",
        "--json",
        cwd=tmp_path,
    )
    assert again.returncode == 3
    result = json.loads(again.stdout)
    assert result["ended_by"] == "error"
    assert result["final"]["reason"] == "model_error"
    (note,) = [n for n in result["notes"] if "not in the recording" in n]
    assert "unrecorded" in note and "departs from the closest recorded call at message" in note
    assert "replay.miss" in again.stderr  # and a warning on the terminal


def test_recorded_failures_replay_as_failures(tmp_path: Path) -> None:
    shutil.copytree(EXAMPLES / "forged_commit", tmp_path / "t")
    task = load_task(tmp_path / "t" / "task.toml")

    def cut(req: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(
            200, content=b'{"choices": [', headers={"content-type": "application/json"}
        )

    recording = tmp_path / "rec.jsonl"
    client = RecordingClient(OPENAI.client(Script([cut]), time=FakeTime()), recording)
    with RunStore(tmp_path / "a.db") as store:
        original = asyncio.run(run_task(task, store, model=client.name, client=client))
        first = record_of(store, original.run_id)
    with RunStore(tmp_path / "b.db") as store:
        replayed = asyncio.run(run_task(task, store, model=f"replay:{recording}"))
        second = record_of(store, replayed.run_id)
    assert original.ended_by == replayed.ended_by == "error"
    assert second == first


def test_digests_ignore_per_run_randomness_but_not_content() -> None:
    base = request()
    again = request()
    assert request_digest(base.messages, base.tools, 100) == request_digest(
        again.messages, again.tools, 100
    )
    assert request_digest(base.messages, base.tools, 100) != request_digest(
        base.messages, base.tools, 101
    )
    assert request_digest(base.messages, (), 100) != request_digest(base.messages, base.tools, 100)
    text = (
        "::UNTRUSTED{id:u_0123456789ab|delimiter:EOF_0123456789abcdef01234567}\n"
        "::BUDGET{id:b3|kind:time|limit:5s|used:1.234s}"
    )
    other = (
        "::UNTRUSTED{id:u_ba9876543210|delimiter:EOF_76543210fedcba9876543210}\n"
        "::BUDGET{id:b3|kind:time|limit:5s|used:2.5s}"
    )
    assert canonical_text(text) == canonical_text(other)
    tokens = "::BUDGET{id:b2|kind:tokens|limit:500|used:100}"
    assert canonical_text(tokens) == tokens
    assert canonical_text("Ran 2 tests in 0.000s") == canonical_text("Ran 2 tests in 0.013s")
    assert canonical_text("3 passed") != canonical_text("4 passed")


@pytest.mark.parametrize(
    "content, code",
    [("not json\n", "E300"), ('{"model": "x"}\n', "E303"), (b"\xff\xfe", "E300")],
)
def test_a_broken_recording_is_bad_input(tmp_path: Path, content: str | bytes, code: str) -> None:
    path = tmp_path / "rec.jsonl"
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content)
    with pytest.raises(InputError) as caught:
        load_recording(path)
    assert caught.value.code == code
    done = ilh(
        "run",
        str(EXAMPLES / "forged_commit" / "task.toml"),
        "--model",
        f"replay:{path}",
        "--store",
        "x.db",
        cwd=tmp_path,
    )
    assert done.returncode == 2 and code in done.stderr and "Traceback" not in done.stderr


def test_an_empty_recording_misses_at_once(tmp_path: Path) -> None:
    client = ReplayClient([], "replay:empty.jsonl")
    with pytest.raises(Exception, match="is empty"):
        asyncio.run(client.complete(request()))


def test_a_recording_that_cannot_be_written_is_bad_input_before_anything_runs(
    tmp_path: Path,
) -> None:
    (tmp_path / "a-file").write_text("")
    result = ilh(
        "run",
        str(EXAMPLES / "honest" / "task.toml"),
        "--record",
        str(tmp_path / "a-file" / "rec.jsonl"),
        "--store",
        str(tmp_path / "runs.db"),
        cwd=tmp_path,
    )
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert "E500 cannot write the recording" in result.stderr
    if (tmp_path / "runs.db").exists():
        with RunStore(tmp_path / "runs.db", create=False) as store:
            assert store.list_runs() == []


def test_a_recording_that_fails_mid_run_stops_it_loudly_and_charges_the_call(
    tmp_path: Path,
) -> None:
    shutil.copytree(EXAMPLES / "honest", tmp_path / "honest")
    task = load_task(tmp_path / "honest" / "task.toml")
    script = Script([ok(OPENAI.reply("Looking.", [("list_files", {})], 1500, 40))])
    recording = tmp_path / "rec.jsonl"
    client = RecordingClient(OPENAI.client(script, time=FakeTime()), recording)
    recording.unlink()
    recording.mkdir()  # the file is gone; a folder stands in its place
    with RunStore(tmp_path / "a.db") as store:
        result = asyncio.run(run_task(task, store, model=client.name, client=client))
        assert store.verify(result.run_id).ok
    assert result.ended_by == "error"
    assert result.final is not None and result.final.reason == "model_error"
    (tokens,) = [b for b in result.budgets if b["kind"] == "tokens"]
    assert tokens["used"] == 1540


def test_a_resumed_replay_does_not_meet_the_failure_that_stopped_it_again(
    tmp_path: Path,
) -> None:
    """A run stopped by a failed call and resumed records the same request twice: failed,
    then answered. A replay of the resume skips what the first process consumed."""
    reply = {"text": "done", "tool_calls": [], "usage": {"input_tokens": 5, "output_tokens": 1}}
    base = {
        "model": "openai:gpt-x",
        "digest": "sha256:" + "a" * 64,
        "input_digest": "sha256:" + "b" * 64,
        "input_estimate": 5,
        "max_output_tokens": 100,
    }
    failed = {**base, "error": {"kind": "server_error", "message": "boom", "status": 500}}
    recording = tmp_path / "rec.jsonl"
    recording.write_text(json.dumps(failed) + "\n" + json.dumps({**base, "reply": reply}) + "\n")
    req = request()
    digest = request_digest(req.messages, req.tools, req.max_output_tokens)
    text = recording.read_text().replace(base["digest"], digest)
    recording.write_text(text)
    with pytest.raises(ModelCallError):
        asyncio.run(ReplayClient.from_file(recording).complete(req))
    answered = asyncio.run(ReplayClient.from_file(recording, start=1).complete(req))
    assert answered.text == "done"
