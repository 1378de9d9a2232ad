"""Hostile input found by a sweep of every command (bad task values, empty paths…): each is
one `error LOCATION: CODE message` line and exit 2, never a traceback, and nothing is
recorded for a task that was refused."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from harness.cli.main import ilh

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def invoke(*args: str) -> Result:
    return CliRunner().invoke(ilh, list(args))


@dataclass
class Ended:
    exit_code: int
    output: str


def ilh_process(cwd: Path, *args: str) -> Ended:
    """`ilh ARGS` as a user runs it: bad usage is reported by `main`, not by click."""
    done = subprocess.run(
        [sys.executable, "-m", "harness", *args],
        cwd=cwd, capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=120,
    )  # fmt: skip
    return Ended(done.returncode, done.stdout + done.stderr)


def one_error(result: Result | Ended, location: str, code: str) -> str:
    assert result.exit_code == 2, result.output
    if isinstance(result, Result):
        assert result.exception is None or isinstance(result.exception, SystemExit), result
    assert "Traceback" not in result.output
    lines = [line for line in result.output.splitlines() if line.startswith("error ")]
    assert lines, result.output
    # The location may go on with `:LINE` (a task file) or be any option (`location=""`).
    assert re.match(rf"error {re.escape(location)}\S*: {code} ", lines[-1]), lines
    return lines[-1]


@pytest.mark.parametrize(
    ("old", "new", "key"),
    [
        ('workspace = "workspace"', 'workspace = "work\\u0000space"', "task.workspace"),
        ("scripted:agent.jsonl", "scripted:agent\\u0000.jsonl", "agent.model"),
        ("[agent]\n", '[agent]\nsoul = "s\\u0000"\n', "agent.soul"),
        ('id = "fizzbuzz"', 'id = "fizz\\u0000buzz"', "task.id"),
    ],
)  # fmt: skip
def test_a_nul_character_in_a_task_value_is_bad_input(
    honest: Path, tmp_path: Path, old: str, new: str, key: str
) -> None:
    # A path holding NUL used to reach `Path.resolve()` in the run's setup: a ValueError
    # traceback, exit 1, after the run had been opened in the store.
    task = honest / "task.toml"
    text = task.read_text()
    assert old in text
    task.write_text(text.replace(old, new, 1))
    store = tmp_path / "r.db"
    line = one_error(invoke("run", str(task), "--store", str(store)), str(task), "E303")
    assert key in line and "NUL" in line
    runs = tmp_path / "runs"
    assert not runs.exists() or not any(runs.iterdir())  # refused before a run began
    graded = invoke("grade", str(task), "--workspace", str(honest / "workspace"))
    assert key in one_error(graded, str(task), "E303")


@pytest.mark.parametrize(
    "args",
    [
        ("runs", "list", "--store", ""),
        ("runs", "show", "x", "--store", ""),
        ("runs", "verify", "x", "--store", ""),
        ("soul", "show", ""),
        ("lint", ""),
        ("certify", "--check", ""),
    ],
)
def test_an_empty_path_is_bad_usage(args: tuple[str, ...], tmp_path: Path) -> None:
    # click takes "" as the current folder; the store's code then met `.` and raised.
    line = one_error(ilh_process(tmp_path, *args), "", "E303")
    assert "empty path" in line


def test_an_empty_workspace_is_not_the_current_folder(honest: Path) -> None:
    # `--workspace "$WS"` with WS unset graded whatever folder the command ran in.
    result = ilh_process(honest, "grade", "task.toml", "--workspace", "")
    assert "empty path" in one_error(result, "--workspace", "E303")


@pytest.mark.parametrize(
    "args",
    [
        ("run", "task.toml", "--model", ""),
        ("run", "task.toml", "--grader-model", " "),
        ("grade", "task.toml", "--workspace", "workspace", "--grader-model", ""),
        ("certify", "README.md", "--role", "r", "--model", ""),
    ],
)
def test_an_empty_model_uri_is_bad_input(honest: Path, args: tuple[str, ...]) -> None:
    # `--model "$MODEL"` with MODEL unset ran the task's own model, silently.
    (honest / "README.md").write_text("Fix add() in calc.py; run the tests.\n", encoding="utf-8")
    flag = args[args.index("") - 1] if "" in args else "--grader-model"
    line = one_error(ilh_process(honest, *args), flag, "E303")
    assert "empty model URI" in line
    assert not (honest / ".ilh").exists()


def test_a_lone_surrogate_in_an_agent_script_is_bad_input(honest: Path, tmp_path: Path) -> None:
    # `"\ud800"` is valid JSON but no UTF-8 text: hashing the script for the run record
    # raised UnicodeEncodeError (a traceback, exit 1).
    script = honest / "agent.jsonl"
    script.write_text('{"text": "a\\ud800b"}\n')
    result = invoke("run", str(honest / "task.toml"), "--store", str(tmp_path / "r.db"))
    assert "surrogate" in one_error(result, f"{script}:1", "E300")


def test_a_surrogate_pair_escape_is_still_text(honest: Path, tmp_path: Path) -> None:
    # The check refuses half a pair only: an escaped emoji is a character like any other.
    script = honest / "agent.jsonl"
    lines = script.read_text().splitlines()
    first = json.loads(lines[0])
    first["text"] = "\U0001f642 " + first["text"]
    lines[0] = json.dumps(first)  # ensure_ascii: written as `\ud83d\ude42`
    assert "\\ud83d" in lines[0]
    script.write_text("\n".join(lines) + "\n")
    result = invoke("run", str(honest / "task.toml"), "--store", str(tmp_path / "r.db"))
    assert result.exit_code == 0, result.output


@pytest.mark.parametrize("json_out", [False, True])
def test_an_ascii_only_output_is_not_a_traceback(tmp_path: Path, json_out: bool) -> None:
    # `PYTHONIOENCODING=ascii` (or an old locale): the first `·` of a summary raised
    # UnicodeEncodeError after the work was done.
    source = tmp_path / "a.ilang"
    source.write_text("：：ＳＴＡＴＵＳ{@TASK|state:complete}\n")
    args = [sys.executable, "-m", "harness", "lint", str(source), *(["--json"] if json_out else [])]
    env = {**os.environ, "PYTHONIOENCODING": "ascii"}
    done = subprocess.run(args, capture_output=True, env=env, timeout=120, check=False)
    assert done.returncode == 1, done.stderr
    assert b"Traceback" not in done.stderr
    if json_out:
        rows = json.loads(done.stdout)  # still one valid JSON document
        assert [row["code"] for row in rows] == ["E300"]
    else:
        assert b"E300" in done.stdout


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no named pipes here")
@pytest.mark.parametrize(
    ("command", "what"),
    [
        (("run", "{fifo}", "--store", "{store}"), "the task file"),
        (("grade", "{fifo}", "--workspace", "{ws}"), "the task file"),
        (("lint", "{fifo}"), "it"),
        (("certify", "--check", "{fifo}"), "the certificate"),
    ],
)
def test_a_named_pipe_as_an_input_file_is_refused_not_waited_on(
    honest: Path, tmp_path: Path, command: tuple[str, ...], what: str
) -> None:
    # A FIFO nobody writes to blocked the command in `open` forever, silently.
    fifo = tmp_path / "task.toml"
    os.mkfifo(fifo)
    values = {"fifo": str(fifo), "store": str(tmp_path / "r.db"), "ws": str(honest / "workspace")}
    args = [part.format(**values) for part in command]
    line = one_error(ilh_process(tmp_path, *args), str(fifo), "E500")
    # Certify reads its records through its own reader, which says what a pipe is not.
    assert f"cannot read {what}: it is a named pipe" in line or (
        f"{what} is not a regular file (a pipe" in line
    )


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="no /proc here")
def test_an_anonymous_pipe_is_still_read(tmp_path: Path) -> None:
    # `ilh lint <(cmd)` names /dev/fd/N, an anonymous pipe with its writer: read it.
    read_end, write_end = os.pipe()
    os.write(write_end, b"[READ: x]\n")
    os.close(write_end)
    done = subprocess.run(
        [sys.executable, "-m", "harness", "lint", f"/dev/fd/{read_end}"],
        capture_output=True, text=True, pass_fds=(read_end,), timeout=120, check=False,
    )  # fmt: skip
    os.close(read_end)
    assert done.returncode == 1, done.stderr  # linted: `[READ: x]` is an E300
    assert f"/dev/fd/{read_end}:1:7: E300" in done.stdout


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no named pipes here")
@pytest.mark.parametrize("command", [("runs", "list"), ("runs", "show", "x")])
def test_a_store_that_is_a_pipe_or_a_device_is_refused(
    tmp_path: Path, command: tuple[str, ...]
) -> None:
    fifo = tmp_path / "runs.db"
    os.mkfifo(fifo)
    for store in (str(fifo), os.devnull):
        line = one_error(ilh_process(tmp_path, *command, "--store", store), store, "E500")
        assert "is not a file" in line


def test_a_closed_stdin_is_empty_not_a_traceback(tmp_path: Path) -> None:
    # `ilh … <&-`: Python sets sys.stdin to None; `lint -` and every isatty() raised.
    done = subprocess.run(
        [sys.executable, "-m", "harness", "lint", "-"],
        capture_output=True, text=True, stdin=None, timeout=120, check=False,
        preexec_fn=lambda: os.close(0),
    )  # fmt: skip
    assert "Traceback" not in done.stderr, done.stderr
    assert done.returncode == 0, done.stderr
    assert "1 file(s): 0 error(s)" in done.stdout


def test_a_reader_that_leaves_early_does_not_change_the_runs_exit_status(
    honest: Path, tmp_path: Path
) -> None:
    # `ilh run task.toml | head -c1`: rich's broken-pipe handler exited 1 for a run whose
    # documented status is 0 (complete).
    with subprocess.Popen(
        [sys.executable, "-m", "harness", "run", "task.toml", "--store", str(tmp_path / "r.db")],
        cwd=honest, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
    ) as proc:  # fmt: skip
        assert proc.stdout is not None and proc.stderr is not None
        proc.stdout.close()  # the reader is gone before the summary is printed
        stderr = proc.stderr.read()
        assert proc.wait(timeout=120) == 0, stderr
    assert b"Traceback" not in stderr


def test_a_file_name_that_is_not_utf8_is_shown_as_its_bytes_and_the_run_goes_on(
    honest: Path,
) -> None:
    """os.listdir keeps a name's undecodable byte as half a surrogate pair; recording the
    listing that held it raised UnicodeEncodeError and the run ended in a traceback."""
    with open(os.path.join(os.fsencode(honest / "workspace"), b"bad\xffname.txt"), "wb") as f:
        f.write(b"needle\n")
    turns = [json.loads(line) for line in (honest / "agent.jsonl").read_text().splitlines()]
    grep = {"name": "grep", "arguments": {"pattern": "needle"}}
    turns.insert(1, {"text": "grep", "tool_calls": [grep], "usage": turns[0]["usage"]})
    (honest / "agent.jsonl").write_text("".join(json.dumps(t) + "\n" for t in turns))
    done = subprocess.run(
        [sys.executable, "-m", "harness", "run", "task.toml", "--json"],
        cwd=honest, capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    result = json.loads(done.stdout)
    assert result["final"]["state"] == "complete"
    exported = ilh_process(honest, "runs", "export", result["run_id"])
    assert exported.exit_code == 0, exported.output
    assert "bad\\\\xffname.txt" in exported.output  # the byte shown (a JSON-escaped backslash)
    assert ilh_process(honest, "runs", "verify", result["run_id"]).exit_code == 0


@pytest.mark.parametrize(
    ("text", "whole"),
    [
        ("plain", "plain"),
        ("a\udcffb", "a\\xffb"),  # surrogateescape's byte
        ("a\ud800b", "a\ufffdb"),  # a JSON escape's half pair
        ("\U0001f600", "\U0001f600"),  # a whole pair is one code point: kept
    ],
)
def test_whole_text(text: str, whole: str) -> None:
    from envelopes.encodable import whole_json_text, whole_text

    assert whole_text(text) == whole
    nested = json.dumps({"k": [text, {text: 1}]}, ensure_ascii=False)
    assert json.loads(whole_json_text(nested)) == {"k": [whole, {whole: 1}]}


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no named pipes here")
@pytest.mark.parametrize("command", ["show", "diff", "history"])
def test_a_soul_that_is_a_pipe_or_a_device_is_not_called_missing(
    tmp_path: Path, command: str
) -> None:
    # A FIFO given as the SOUL was reported as "no such SOUL file": it is there, it is
    # just not a file; the user looking for a typo in the path found none.
    fifo = tmp_path / "SOUL.md"
    os.mkfifo(fifo)
    for soul in (str(fifo), os.devnull):
        line = one_error(ilh_process(tmp_path, "soul", command, soul), soul, "E303")
        assert "not a regular file" in line and "no such" not in line
    missing = str(tmp_path / "nowhere.md")
    line = one_error(ilh_process(tmp_path, "soul", command, missing), missing, "E500")
    assert "no such SOUL file" in line


@pytest.mark.parametrize(
    ("old", "new", "key"),
    [
        ("limit = 6", 'limit = "6"', "budget.rounds.limit"),
        ("limit = 6", "limit = true", "budget.rounds.limit"),
        ("limit = 40000", 'limit = "40000"', "budget.tokens.limit"),
        ("reserve_audit = 4000", "reserve_audit = false", "budget.tokens.reserve_audit"),
        ("threshold = 0.85", 'threshold = "0.85"', "rubric.threshold"),
        ("threshold = 0.85", "threshold = true", "rubric.threshold"),
        ("weight = 0.7", 'weight = "0.7"', "rubric.criteria.0.weight"),
        ("[agent]\n", "[sandbox]\nprocesses = \"64\"\n\n[agent]\n", "sandbox.processes"),
        ("[agent]\n", "[sandbox]\ncpu_seconds = true\n\n[agent]\n", "sandbox.cpu_seconds"),
    ],
)  # fmt: skip
def test_a_number_written_as_text_or_a_boolean_is_the_wrong_type(
    honest: Path, old: str, new: str, key: str
) -> None:
    # `limit = true` ran a task of one round and `limit = "6"` one of six: a quoted number
    # or a boolean where the task file wants a number is a mistake to name, as a number
    # where it wants text is (`id = 3`), and as sizes and durations already refuse `true`.
    task = honest / "task.toml"
    text = task.read_text()
    assert old in text
    task.write_text(text.replace(old, new, 1))
    line = one_error(invoke("run", str(task), "--store", str(honest / "r.db")), str(task), "E301")
    assert key in line


@pytest.mark.parametrize(
    ("line", "where", "kind"),
    [
        ("[1, 2]", ":1: E301 ", "an array"),
        ('"hello"', ":1: E301 ", "a string"),
        ("null", ":1: E301 ", "null"),
        ('{"text": "x", "usage": 3}', ":1: E301 usage: ", "a number"),
        ('{"text": "x", "tool_calls": [true]}', ":1: E301 tool_calls.0: ", "true or false"),
    ],
)
def test_an_agent_script_line_that_is_no_object_says_so_in_the_files_words(
    honest: Path, line: str, where: str, kind: str
) -> None:
    # "(line): Input should be a valid dictionary or instance of ScriptedTurn" named a
    # class of the harness and a Python type; the file is JSON.
    (honest / "agent.jsonl").write_text(line + "\n")
    task = honest / "task.toml"
    message = one_error(invoke("run", str(task), "--store", str(honest / "r.db")), "", "E301")
    assert f"agent.jsonl{where}" in message
    assert message.endswith(f"should be a JSON object, not {kind}")
    assert "ScriptedTurn" not in message and "dictionary" not in message


@pytest.mark.parametrize("value", ['"5"', "true", "5.0"])
def test_a_scripted_turns_token_count_must_be_a_whole_number(honest: Path, value: str) -> None:
    # `"input_tokens": "5"` and `true` were charged as 5 and 1 token: a mistake in the
    # script that changed the budget the run was held to, silently.
    line = '{"text": "x", "usage": {"input_tokens": ' + value + ', "output_tokens": 1}}'
    (honest / "agent.jsonl").write_text(line + "\n")
    task = honest / "task.toml"
    message = one_error(invoke("run", str(task), "--store", str(honest / "r.db")), "", "E301")
    assert "agent.jsonl:1: E301 usage.input_tokens: " in message
