"""`harness.secrets`: which values are secrets, how they are found (exact, encoded, cut in
pieces) and that every exit point in the workspace room and the store removes them."""

from __future__ import annotations

import base64
import json
import sqlite3
from pathlib import Path
from types import MappingProxyType
from typing import Any
from urllib.parse import quote, quote_plus

import pytest
from structlog.testing import capture_logs

from harness.record.events import EventKind
from harness.record.store import RunStore
from harness.secrets import SecretValues, credential_items, harness_secrets, register_secret
from harness.secrets.values import FRAGMENT_MIN_CHARS, encoded_forms
from harness.workspace import commands, tools
from harness.workspace.commands import _CappedOutput
from harness.workspace.folder import Workspace
from harness.workspace.sandbox import UNCONFINED
from harness.workspace.tools import ToolCall, ToolResult, dispatch

KEY = "sk-proj-CANARYopenai0123456789abcdefXYZ"
TOKEN = "ghp_CANARYgithub9876543210zyxwvuTSRQ"
AWS = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYCANARYKEY"
# JSON, URL and shell all escape something in this one.
ODD = 'tok"en\\with/quotes and spaces+CANARY=42'
SECRETS = SecretValues(
    [("OPENAI_API_KEY", KEY), ("GITHUB_TOKEN", TOKEN), ("AWS_SECRET_ACCESS_KEY", AWS),
     ("MY_SERVICE_TOKEN", ODD)]
)  # fmt: skip
ALL = (KEY, TOKEN, AWS, ODD)


def leaks(text: str, values: tuple[str, ...] = ALL) -> list[str]:
    """The recognisable forms of any value found in `text`."""
    found = []
    for value in values:
        for form in encoded_forms(value):
            if form in text:
                found.append(form)
        for start in range(0, len(value) - FRAGMENT_MIN_CHARS + 1):
            piece = value[start : start + FRAGMENT_MIN_CHARS]
            if piece in text and len(set(piece)) >= 5:
                found.append(piece)
    return found


# -- which values -------------------------------------------------------------------------


def test_credential_variables_by_name_and_url_passwords_by_shape(tmp_path: Path) -> None:
    env = {
        "OPENAI_API_KEY": KEY,
        "GITHUB_TOKEN": TOKEN,
        "AWS_SECRET_ACCESS_KEY": AWS,
        "MY_SERVICE_TOKEN": ODD,
        "SENTRY_DSN": "https://abcdef0123456789@o1.ingest.example/1",
        "SLACK_WEBHOOK": "https://hooks.example/services/T000/B000/XXXXXXXXXXXX",
        "SESSION_COOKIE": "s%3Acookie-value-0123",
        "DATABASE_URL": "postgres://app:pa55w0rd-db-secret@db.internal:5432/app",
        "GIT_AUTHOR_NAME": "Ada Lovelace-Byron",  # AUTH in the name, never a secret
        "DEBUG_TOKEN_CHECK": "true",
        "API_KEY_COUNT": "12345678",
        "SHORT_KEY": "abc",
        "SSH_AUTH_SOCK": str(tmp_path),  # an existing path: not a secret
        "ILH_RECORD_KEY_FILE": str(tmp_path / "not-yet" / "record.key"),  # where, not what
        "DEPLOY_KEY_FILE": "-----BEGIN KEY----- abc123def456",  # not a path: a secret
        "PATH": "/usr/bin:/bin",
    }
    found = dict(credential_items(env))
    assert set(found) == {
        "OPENAI_API_KEY",
        "GITHUB_TOKEN",
        "AWS_SECRET_ACCESS_KEY",
        "MY_SERVICE_TOKEN",
        "SENTRY_DSN",
        "SLACK_WEBHOOK",
        "SESSION_COOKIE",
        "DATABASE_URL",
        "DEPLOY_KEY_FILE",
    }
    assert found["DATABASE_URL"] == "pa55w0rd-db-secret"


def test_the_harness_set_follows_the_environment_and_keeps_registered_keys(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("MY_SERVICE_TOKEN", "svc-token-0123456789-canary")
    assert "svc-token-0123456789-canary" in harness_secrets().values()
    monkeypatch.delenv("MY_SERVICE_TOKEN")
    assert "svc-token-0123456789-canary" not in harness_secrets().values()
    register_secret("held-key-not-in-env-0123456789", "HELD_KEY")
    register_secret("true", "IGNORED")
    assert harness_secrets().redact("x held-key-not-in-env-0123456789 y") == (
        "x [REDACTED:HELD_KEY] y"
    )
    assert "[REDACTED" not in harness_secrets().redact("true")


# -- how they are found -------------------------------------------------------------------


@pytest.mark.parametrize("value", ALL)
def test_exact_json_url_and_base64_forms_are_redacted(value: str) -> None:
    raw = value.encode()
    texts = [
        f"before {value} after",
        json.dumps({"v": value}),
        json.dumps({"v": value}, ensure_ascii=False),
        json.dumps(json.dumps({"v": value})),  # JSON inside a JSON string
        quote(value, safe=""),
        "q=" + quote_plus(value),
    ]
    for prefix in (b"", b"K", b"KE", b"KEY="):  # every alignment inside base64
        texts.append(base64.b64encode(prefix + raw + b"\n").decode())
        texts.append(base64.urlsafe_b64encode(prefix + raw).decode())
    for text in texts:
        cleaned = SECRETS.redact(text)
        assert "[REDACTED:" in cleaned, text
        assert leaks(cleaned, (value,)) == [], (text, cleaned)


def test_a_value_cut_by_an_output_cap_leaves_no_recognisable_piece() -> None:
    # The command runner keeps the head and the tail of a long output: a value can sit
    # across the cut, a piece on each side of the note.
    for at in range(0, 40, 3):
        sink = _CappedOutput(200)
        sink.feed(b"x" * (100 - at) + KEY.encode() + b"y" * 300)
        text, truncated = sink.render()
        assert truncated
        cleaned = SECRETS.redact(text)
        for start in range(len(KEY) - FRAGMENT_MIN_CHARS + 1):
            assert KEY[start : start + FRAGMENT_MIN_CHARS] not in cleaned


def test_ordinary_text_is_left_alone_and_nothing_changed_is_the_same_object() -> None:
    text = "def fizzbuzz(n):\n    return 'Fizz' * (n % 3 == 0) or str(n)\n0000000000 sk-"
    assert SECRETS.redact(text) is text
    data: dict[str, Any] = {"a": [text, 1, None], "b": {"c": "plain"}}
    assert SECRETS.redact_json(data) is data
    assert SecretValues().redact(KEY) == KEY


def test_nothing_changed_is_the_same_object_the_second_time_too() -> None:
    """The memo of short texts answers "nothing to redact" with the text it is given,
    not the equal text it first saw: an equal payload built again (every round, every
    task) is recognised as unchanged by identity, and not copied."""
    known = SecretValues([("OPENAI_API_KEY", KEY)])

    def build() -> dict[str, Any]:
        return {"state": "".join(["run", "ning"]), "rows": ["".join(["a", "b"])], "n": 1}

    for _ in range(3):
        data = build()
        assert known.redact_json(data) is data
    text = "".join(["plain ", "words"])
    assert known.redact(text) is text and known.redact("".join(["plain ", "words"])) is not text
    assert known.redact(f"x{KEY}") == "x[REDACTED:OPENAI_API_KEY]"
    assert known.redact(f"x{KEY}") == "x[REDACTED:OPENAI_API_KEY]"  # from the memo
    # Longer texts (a contract every run sends) alike; past the bound, scanned each time.
    for size in (300, 20_000):
        long_text = "".join(["word "] * (size // 5))
        assert known.redact(long_text) is long_text
        again = "".join(["word "] * (size // 5))
        assert known.redact(again) is again
        cut = f"{long_text[:-40]} {KEY[:20]}"  # a cut piece, in a long text
        assert KEY[:20] not in known.redact(cut) and KEY[:20] not in known.redact(cut)


def test_json_data_is_redacted_in_keys_and_nested_values() -> None:
    data = {KEY: [{"deep": f"x{TOKEN}x"}, (AWS, 3)], "n": 1.5}
    cleaned = SECRETS.redact_json(data)
    assert leaks(json.dumps(cleaned)) == []
    assert cleaned["n"] == 1.5
    assert "[REDACTED:OPENAI_API_KEY]" in cleaned
    assert repr(SECRETS) == (
        "SecretValues(['AWS_SECRET_ACCESS_KEY', 'GITHUB_TOKEN', 'MY_SERVICE_TOKEN', "
        "'OPENAI_API_KEY'])"
    )


def test_json_walk_redacts_subclasses_and_other_mappings_like_their_base() -> None:
    """The walk takes exact dicts, lists and strs first; a subclass or another mapping
    gets the same rules (and a tuple stays a tuple)."""

    class Text(str):
        pass

    class Rows(list[Any]):
        pass

    data = {
        "s": Text(f"a {KEY}"),
        "m": MappingProxyType({"k": f"{TOKEN}"}),
        "r": Rows([KEY]),
        "t": (KEY, 1),
        "f": 0.5,
        "b": True,
    }
    cleaned = SECRETS.redact_json(data)
    assert leaks(json.dumps({k: v if k != "m" else dict(v) for k, v in cleaned.items()})) == []
    assert cleaned["m"] == {"k": "[REDACTED:GITHUB_TOKEN]"} and isinstance(cleaned["t"], tuple)
    assert cleaned["f"] == 0.5 and cleaned["b"] is True


# -- the workspace's exits ----------------------------------------------------------------


@pytest.fixture
def canaries(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in SECRETS.items():
        monkeypatch.setenv(name, value)


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    workspace = Workspace.create(tmp_path / "ws")
    body = "".join(f"{name}={value}\n" for name, value in SECRETS.items())
    (workspace.root / "notes.txt").write_text("left by the user:\n" + body)
    return workspace


def run(ws: Workspace, name: str, **arguments: Any) -> ToolResult:
    return dispatch(ws, ToolCall(name=name, arguments=arguments), timeout_s=30)


@pytest.mark.usefixtures("canaries")
def test_every_file_tool_returns_no_secret(ws: Workspace, monkeypatch: pytest.MonkeyPatch) -> None:
    results = [
        run(ws, "read_file", path="notes.txt"),
        run(ws, "grep", pattern="CANARY"),
        run(ws, "run_command", command="cat notes.txt; base64 notes.txt; od -c notes.txt"),
        run(ws, "run_command", command=f"echo '{json.dumps(ODD)}'"),
    ]
    assert run(ws, "write_file", path=f"name-{TOKEN}.txt", content="x").ok
    results.append(run(ws, "list_files"))
    results.append(run(ws, "grep", pattern="."))
    # A value cut by read_file's cap and by grep's line cap.
    monkeypatch.setattr(
        tools, "MAX_READ_BYTES", len("left by the user:\nAWS_SECRET_ACCESS_KEY=") + 20
    )
    results.append(run(ws, "read_file", path="notes.txt"))
    monkeypatch.setattr(tools, "MAX_GREP_LINE_CHARS", len("AWS_SECRET_ACCESS_KEY=") + 15)
    results.append(run(ws, "grep", pattern="AWS"))
    for result in results:
        assert result.ok, result.output
        shown = result.output + json.dumps(result.meta)
        assert leaks(shown) == [], (result.name, shown)
    assert "[REDACTED:GITHUB_TOKEN]" in results[0].output
    assert "[REDACTED:MY_SERVICE_TOKEN]" in results[3].output


@pytest.mark.usefixtures("canaries")
def test_an_unconfined_command_reading_the_harness_environment_sees_no_secret(
    ws: Workspace,
) -> None:
    done = dispatch(
        ws,
        ToolCall(
            name="run_command", arguments={"command": "cat /proc/$PPID/environ | tr '\\0' '\\n'"}
        ),
        timeout_s=30,
        sandbox=UNCONFINED,
    )
    assert done.ok and done.meta["exit_code"] == 0
    # /proc shows the environment the process started with; the canaries set by the
    # test are in os.environ, which is what the harness redacts: check with a file too.
    assert leaks(done.output) == []
    outcome = commands.run_shell("cat notes.txt", ws.root, 30, sandbox=UNCONFINED)
    assert leaks(outcome.output) == [] and "[REDACTED:OPENAI_API_KEY]" in outcome.output


# -- the store ----------------------------------------------------------------------------


def raw_store_bytes(db: Path) -> str:
    data = b""
    for suffix in ("", "-wal", "-shm", "-journal"):
        part = db.with_name(db.name + suffix)
        if part.exists():
            data += part.read_bytes()
    return data.decode("latin-1")


@pytest.mark.usefixtures("canaries")
def test_the_store_writes_no_secret_whatever_the_field_or_the_redactor(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    payload = {
        "text": f"the agent says {KEY}",
        KEY: "as a key",
        "nested": [{"output": base64.b64encode(TOKEN.encode()).decode()}],
        "json": json.dumps({"v": ODD}),
        "cut": AWS[:20] + "\n[... omitted ...]\n" + AWS[20:],
    }
    with RunStore(db, redactor=lambda p: dict(p)) as store:
        run_id = store.create_run("t", meta={"note": f"key {KEY}"})
        store.append(run_id, EventKind.NOTE, payload)
        assert store.verify(run_id).ok
        stored = store.events(run_id)[-1].payload
    assert "[REDACTED:OPENAI_API_KEY]" in stored["text"]
    text = raw_store_bytes(db)
    assert leaks(text) == []
    with sqlite3.connect(db) as conn:
        dumped = "\n".join(conn.iterdump())
    assert leaks(dumped) == []


def test_export_redacts_a_record_made_before_the_secret_was_known(tmp_path: Path) -> None:
    import io

    db = tmp_path / "runs.db"
    with RunStore(db, secrets=SecretValues) as store:  # knows nothing: writes the value
        run_id = store.create_run("t")
        store.append(run_id, EventKind.NOTE, {"text": f"old {KEY}"})
    with RunStore(db, secrets=lambda: SECRETS) as store:
        out = io.StringIO()
        store.export_jsonl(run_id, out)
    assert KEY not in out.getvalue() and "[REDACTED:OPENAI_API_KEY]" in out.getvalue()


@pytest.mark.usefixtures("canaries")
def test_log_lines_hold_no_secret() -> None:
    import structlog

    from harness.secrets.logs import redact_secrets

    with capture_logs(processors=[redact_secrets]) as logs:
        structlog.get_logger("t").warning("x", detail=f"saw {KEY}", items=[TOKEN])
    assert leaks(repr(logs)) == []
