"""Keys never reach a log line, the run record, a recording, a result or an error
message, even when the provider (or a proxy) echoes them back. The keys here are fakes;
the providers are `httpx2.MockTransport`s."""

from __future__ import annotations

import asyncio
import io
import logging
import os
import textwrap
from pathlib import Path

import httpx2
import pytest
import structlog
from structlog.testing import capture_logs

from harness.inputs.errors import InputError
from harness.inputs.task_file import load_task
from harness.models.clients.anthropic_client import AnthropicClient
from harness.models.clients.errors import scrub
from harness.models.clients.openai_client import OpenAIClient
from harness.models.clients.record import RecordingClient
from harness.models.interface import ModelAttempt, ModelCallError
from harness.record.store import RunStore
from harness.run.setup import run_task
from tests.model_fakes import PROVIDERS, FakeTime, Provider, Script, raises, request

ids = [p.name for p in PROVIDERS]


def fragments(key: str) -> list[str]:
    """The key and the pieces of it a masked echo would show."""
    return [key, key[8:24], key[-12:]]


def assert_clean(text: str, key: str, where: str) -> None:
    for piece in fragments(key):
        assert piece not in text, f"{where} holds (part of) the key: {piece!r}"


def echoing(provider: Provider) -> Script:
    key = provider.key
    masked = key[:8] + "*" * 20 + key[-4:]
    return Script(
        [
            lambda req: httpx2.Response(
                500,
                json=provider.error_body(
                    f"upstream said: Authorization: Bearer {key} x-api-key={key} ({key})"
                ),
            ),
            lambda req: httpx2.Response(
                401, json=provider.error_body(f"Incorrect API key provided: {masked}")
            ),
        ]
    )


@pytest.mark.parametrize("provider", PROVIDERS, ids=ids)
def test_no_key_in_logs_record_recording_result_or_exception(
    provider: Provider,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv(provider.key_env, provider.key)
    for name in ("openai", "anthropic", "httpx2", "httpcore2", "harness", ""):
        logging.getLogger(name).setLevel(logging.DEBUG)
    caplog.set_level(logging.DEBUG)
    task_file = tmp_path / "t" / "task.toml"
    task_file.parent.mkdir()
    task_file.write_text(
        textwrap.dedent(
            """
            [task]
            id = "secrets"
            objective = "Anything."
            [budget.rounds]
            limit = 2
            """
        )
    )
    task = load_task(task_file)
    recording = tmp_path / "rec.jsonl"
    script = echoing(provider)
    inner = provider.client(script, time=FakeTime())
    client = RecordingClient(inner, recording)
    with capture_logs() as structured, RunStore(tmp_path / "runs.db") as store:
        structlog.get_logger("test").warning("probe")  # capture_logs is live
        result = asyncio.run(run_task(task, store, model=client.name, client=client))
        export = io.StringIO()
        store.export_jsonl(result.run_id, export)

    assert result.ended_by == "error"
    assert len(script.requests) == 2  # 500 retried, 401 not
    sent = [
        r.headers.get("authorization", "") + r.headers.get("x-api-key", "") for r in script.requests
    ]
    assert all(provider.key in s for s in sent), "the key does reach the provider"
    out = capsys.readouterr()
    places = {
        "structlog events": repr(structured),
        "stdlib log records": "\n".join(
            r.getMessage() + repr(r.args) + repr(r.__dict__) for r in caplog.records
        ),
        "stdout/stderr": out.out + out.err,
        "run record": export.getvalue(),
        "recording": recording.read_text(),
        "result": result.model_dump_json(),
    }
    assert structured, "logs were captured"
    for where, text in places.items():
        assert_clean(text, provider.key, where)
    assert "upstream said" in places["run record"], "the (scrubbed) message is kept"


@pytest.mark.parametrize("provider", PROVIDERS, ids=ids)
def test_error_messages_are_scrubbed(provider: Provider) -> None:
    client = provider.client(echoing(provider), time=FakeTime())
    with pytest.raises(ModelCallError) as caught:
        asyncio.run(client.complete(request()))
    text = str(caught.value) + repr(caught.value.record()) + caught.value.message
    assert_clean(text, provider.key, "the exception")
    assert caught.value.kind == "auth"


def test_missing_keys_are_input_errors_that_name_the_variable(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(InputError, match="OPENAI_API_KEY"):
        OpenAIClient.from_env("gpt-x")
    with pytest.raises(InputError, match="ANTHROPIC_API_KEY"):
        AnthropicClient.from_env("claude-x")


def test_keys_come_from_the_environment_explicitly(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env-openai-key-000000000000")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-env-key-000000000000")
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    openai_client = OpenAIClient.from_env("gpt-x")
    anthropic_client = AnthropicClient.from_env("claude-x")
    assert openai_client._sdk.api_key == os.environ["OPENAI_API_KEY"]
    assert anthropic_client._sdk.api_key == os.environ["ANTHROPIC_API_KEY"]
    assert "sk-env" not in repr(openai_client.name) + repr(anthropic_client.name)


def test_scrub_removes_keys_their_masked_echoes_and_key_shapes() -> None:
    key = "sk-proj-abcdefghijklmnopqrstuvwxyz0123"
    text = (
        f"key {key}; masked sk-proj-abcd****0123; Bearer tok.en-123; "
        "x-api-key: raw-value; sk-ant-api03-zzzzzzzzzz; plain words stay"
    )
    cleaned = scrub(text, [key])
    for secret in (key, "abcd****0123", "tok.en-123", "raw-value", "zzzzzzzzzz"):
        assert secret not in cleaned
    assert "plain words stay" in cleaned


def test_keys_never_reach_a_tools_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from harness.workspace.folder import Workspace
    from harness.workspace.tools import ToolCall, dispatch

    for provider in PROVIDERS:
        monkeypatch.setenv(provider.key_env, provider.key)
    workspace = Workspace.create(tmp_path / "ws")
    result = dispatch(
        workspace, ToolCall(name="run_command", arguments={"command": "env"}), timeout_s=30
    )
    assert result.ok
    for provider in PROVIDERS:
        assert_clean(result.output, provider.key, "run_command's environment")
        assert provider.key_env not in result.output


@pytest.mark.parametrize("provider", PROVIDERS, ids=ids)
def test_a_key_echoed_in_a_successful_reply_is_redacted_everywhere(
    provider: Provider,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A proxy that echoes the request's headers into a 200 body: the reply's text and
    tool arguments reach the run record, the recording and the workspace, so the key is
    taken out of them; SDK debug logging of a successful call holds no key either."""
    monkeypatch.setenv(provider.key_env, provider.key)
    for name in ("openai", "anthropic", "httpx2", "httpcore2", "harness", ""):
        logging.getLogger(name).setLevel(logging.DEBUG)
    caplog.set_level(logging.DEBUG)
    task_file = tmp_path / "t" / "task.toml"
    task_file.parent.mkdir()
    task_file.write_text(
        '[task]\nid = "echo"\nobjective = "Anything."\n[budget.rounds]\nlimit = 1\n'
    )
    key = provider.key
    body = provider.reply(
        f"Your headers: Authorization: Bearer {key}",
        [("write_file", {"path": "leak.txt", "content": f"key={key}"})],
    )
    script = Script([lambda req: httpx2.Response(200, json=body)])
    recording = tmp_path / "rec.jsonl"
    client = RecordingClient(provider.client(script, time=FakeTime()), recording)
    with capture_logs() as structured, RunStore(tmp_path / "runs.db") as store:
        task = load_task(task_file)
        result = asyncio.run(run_task(task, store, model=client.name, client=client))
        export = io.StringIO()
        store.export_jsonl(result.run_id, export)
    assert len(script.requests) == 1
    workspace = Path(result.workspace) if result.workspace else None
    written = (workspace / "leak.txt").read_text() if workspace else ""
    places = {
        "structlog events": repr(structured),
        "stdlib log records": "\n".join(
            r.getMessage() + repr(r.args) + repr(r.__dict__) for r in caplog.records
        ),
        "run record": export.getvalue(),
        "recording": recording.read_text(),
        "result": result.model_dump_json(),
        "the file the tool wrote": written,
    }
    assert "Your headers" in places["run record"] and "key=" in written
    for where, text in places.items():
        assert_clean(text, key, where)


@pytest.mark.parametrize("provider", PROVIDERS, ids=ids)
def test_a_connection_error_quoting_the_key_is_scrubbed(provider: Provider) -> None:
    key = provider.key
    script = Script(
        [raises(lambda req: httpx2.ConnectError(f"proxy refused x-api-key={key}", request=req))]
    )
    attempts: list[ModelAttempt] = []
    client = provider.client(script, time=FakeTime(), attempts=attempts)
    with pytest.raises(ModelCallError) as caught:
        asyncio.run(client.complete(request(timeout_s=600)))
    assert caught.value.kind == "connection"
    text = str(caught.value) + repr(caught.value.record()) + repr(attempts)
    assert_clean(text, key, "the connection error")


def test_keys_never_reach_a_grader_checks_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Criterion `run` commands (graders) and `run_command` (tools) share `run_shell`."""
    from harness.workspace.commands import run_shell

    for provider in PROVIDERS:
        monkeypatch.setenv(provider.key_env, provider.key)
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    done = run_shell("env", tmp_path, timeout_s=30)
    output = done.output
    assert "PATH=" in output
    for provider in PROVIDERS:
        assert_clean(output, provider.key, "run_shell's environment")
        assert provider.key_env not in output


def test_credential_named_variables_of_any_service_are_secrets() -> None:
    from harness.models.clients.errors import env_secrets

    env = {
        "HF_TOKEN": "hf_0123456789abcdef",
        "GITHUB_TOKEN": "ghp_0123456789abcdef",
        "DB_PASSWORD": "correct-horse-battery",
        "AWS_SECRET_ACCESS_KEY": "wJalrXUtnFEMI/K7MDENG",
        "STRIPE_KEY": "rk_live_0123456789",
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "HOME": "/home/someone/elsewhere",
    }
    assert sorted(env_secrets(env)) == sorted(
        v for k, v in env.items() if k not in ("PATH", "HOME")
    )
