"""The agent's workspace tools (DESIGN §5): their specs for model providers, the call and
result models, and `dispatch`, which runs one call confined to a `Workspace`.

`dispatch` never raises for a bad call: an unknown tool, wrong arguments, a refused path
or a failed read all come back as `ToolResult(ok=False, output=<message for the
agent>, meta={"error": kind})`. `ok=True` means the tool ran; for `run_command` that
includes a failing or timed-out command (see `meta["exit_code"]`, `meta["timed_out"]`).
Outputs are plain text: the caller wraps them in `::UNTRUSTED` blocks.

Caps (all outputs stay small enough to put back into a model context):
`MAX_READ_BYTES`, `MAX_WRITE_BYTES`, `MAX_LIST_ENTRIES`, `MAX_GREP_MATCHES`,
`MAX_GREP_FILES`, `MAX_GREP_FILE_BYTES`, `MAX_GREP_LINE_CHARS`, `MAX_GREP_PATTERN_CHARS`,
`MAX_COMMAND_CHARS`, and `harness.workspace.commands.MAX_OUTPUT_BYTES` for command output.

`grep` matches in a child process with a deadline (`harness.workspace.matcher`): Python's
`re` has no timeout, and a catastrophically backtracking pattern stalled the harness.
"""

from __future__ import annotations

import codecs
import contextlib
import copy
import errno
import json
import math
import os
import re
import stat
from collections.abc import Iterator
from secrets import token_hex
from typing import Annotated, Any

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
)

from envelopes.encodable import whole_json_text, whole_text
from harness.secrets import SecretValues, harness_secrets
from harness.workspace.commands import run_shell
from harness.workspace.confined import LinkIndex, Located, checked_parts, inherit_owner
from harness.workspace.folder import (
    ToolError,
    ToolErrorKind,
    Workspace,
    show_path,
    writable_target,
)
from harness.workspace.matcher import MatchTimeout, search
from harness.workspace.sandbox import CONFINED, SandboxPolicy, SandboxUnavailable

#: read_file returns at most this many bytes of a file (with a note when cut).
MAX_READ_BYTES = 64 * 1024
#: write_file refuses content larger than this (UTF-8 bytes).
MAX_WRITE_BYTES = 1024 * 1024
#: list_files stops after this many entries.
MAX_LIST_ENTRIES = 1000
#: grep stops after this many matching lines...
MAX_GREP_MATCHES = 200
#: ...or after scanning this many files.
MAX_GREP_FILES = 5000
#: grep skips files larger than this.
MAX_GREP_FILE_BYTES = 1024 * 1024
#: grep shows at most this many characters of a matching line.
MAX_GREP_LINE_CHARS = 300
#: grep refuses longer patterns.
MAX_GREP_PATTERN_CHARS = 1000
#: Longest a `grep` may match for (`harness.workspace.matcher`: a backtracking pattern).
GREP_TIMEOUT_S = 30.0
#: run_command refuses longer command strings.
MAX_COMMAND_CHARS = 64 * 1024

#: Bytes inspected for a NUL to decide that a file is binary.
_BINARY_SNIFF_BYTES = 8192

READ_ONLY_TOOLS = frozenset({"read_file", "list_files", "grep"})


# -- argument models (strict: no coercion, no unknown keys) ---------------------------


class _Args(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


class ReadFileArgs(_Args):
    path: str = Field(description="Relative to the workspace root.")


class WriteFileArgs(_Args):
    path: str = Field(description="Relative to the workspace root.")
    content: str = Field(description="The whole new text.")


def _null_means_root(value: object) -> object:
    # Some models send `null` for an optional argument they mean to leave out.
    return "." if value is None else value


_PathOrRoot = Annotated[str, BeforeValidator(_null_means_root)]
_PATH_OR_ROOT_HELP = "Relative to the workspace root."


class ListFilesArgs(_Args):
    path: _PathOrRoot = Field(default=".", description=_PATH_OR_ROOT_HELP)


class GrepArgs(_Args):
    pattern: str = Field(description="Python regex, matched per line.")
    path: _PathOrRoot = Field(default=".", description=_PATH_OR_ROOT_HELP)


class RunCommandArgs(_Args):
    command: str = Field(description="Run by /bin/sh -c.")


# -- public models ----------------------------------------------------------------------


class ToolSpec(BaseModel):
    """A tool as a model provider needs it: name, description, JSON schema of arguments."""

    model_config = ConfigDict(frozen=True)

    name: str
    description: str
    parameters: dict[str, Any]

    def to_anthropic(self) -> dict[str, Any]:
        # Copies: a client that edits its request must not edit the shared spec.
        return {
            "name": self.name,
            "description": self.description,
            "input_schema": _json_copy(self.parameters),
        }

    def to_openai(self) -> dict[str, Any]:
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": _json_copy(self.parameters),
            },
        }


def _json_copy(value: Any) -> Any:
    """A deep copy of JSON data (a JSON schema): three times faster than `copy.deepcopy`,
    whose memo is for the cycles and shared objects JSON cannot have; anything else is
    deep-copied. Every model call of every task sends the tool schemas."""
    kind = type(value)
    if kind is dict:
        return {key: _json_copy(item) for key, item in value.items()}
    if kind is list:
        return [_json_copy(item) for item in value]
    if kind is str or kind is int or kind is float or kind is bool or value is None:
        return value
    return copy.deepcopy(value)


class ToolCall(BaseModel):
    """One tool call proposed by a model. `id` is the provider's call id, if any."""

    model_config = ConfigDict(frozen=True)

    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    id: str | None = None

    @field_validator("arguments", mode="before")
    @classmethod
    def _decode_arguments(cls, value: object) -> object:
        # Providers send arguments as a JSON string; absent arguments arrive as null.
        if value is None:
            return {}
        if isinstance(value, str):
            try:
                return json.loads(value) if value.strip() else {}
            except json.JSONDecodeError:
                return value  # left for validation to refuse
        return value


class ToolResult(BaseModel):
    """The plain result of one call; the caller wraps `output` as untrusted content."""

    model_config = ConfigDict(frozen=True)

    name: str
    ok: bool
    output: str
    meta: dict[str, Any] = Field(default_factory=dict)
    id: str | None = None

    # A name in the workspace whose bytes are not UTF-8 reaches a listing, a grep line or
    # an error as half a surrogate pair: the run crashed recording it. Shown as its byte.
    @field_validator("output", "name", "id")
    @classmethod
    def _whole_text(cls, value: str | None) -> str | None:
        return None if value is None else whole_text(value)

    @field_validator("meta")
    @classmethod
    def _whole_meta(cls, value: dict[str, Any]) -> dict[str, Any]:
        try:
            dumped = json.dumps(value, ensure_ascii=False)
        except (TypeError, ValueError, RecursionError):
            return value
        whole = whole_json_text(dumped)
        return value if whole is dumped else dict(json.loads(whole))


# -- specs --------------------------------------------------------------------------------

_ARGS_MODELS: dict[str, type[_Args]] = {
    "read_file": ReadFileArgs,
    "write_file": WriteFileArgs,
    "list_files": ListFilesArgs,
    "grep": GrepArgs,
    "run_command": RunCommandArgs,
}

# Terse on purpose: every call re-sends them (the fixed prompt overhead, issue 11: at most
# 600 tokens with the contract). What all five share is said once, in the system
# contract: tools act only in the workspace, paths are relative to its root, the root is
# the default. Each description keeps only what the name and the output do not show: how
# much a read shows, a write's cap and that it makes folders, the regex dialect and that
# it matches per line, the shell and its time limit. The outputs say the rest themselves
# (a cut read or listing, a capped grep, `[exit code: N]`).
_DESCRIPTIONS: dict[str, str] = {
    "read_file": f"Shows the first {MAX_READ_BYTES // 1024} KiB.",
    "write_file": (
        f"Writes the whole file (max {MAX_WRITE_BYTES // (1024 * 1024)} MiB), making parent "
        "folders."
    ),
    "list_files": "Recursive; folders end in /.",
    "grep": "Python regex, matched per line.",
    "run_command": "Runs /bin/sh -c with a time limit.",
}


def _parameters_schema(model: type[_Args]) -> dict[str, Any]:
    """The model's JSON schema as sent, cut to what the model needs: the properties, their
    types and which are required. Left out, because every call re-sends them: pydantic's
    titles, `additionalProperties: false` and defaults (the argument models refuse an
    unknown key and fill a default themselves, with a message naming the tool), and an
    empty `required`. A property's description is kept only where its name does not say
    it all (the tool's description and the system contract say paths are relative to the
    workspace root)."""
    full = model.model_json_schema()
    properties: dict[str, Any] = {}
    for name, prop in full.get("properties", {}).items():
        kept = {"type": prop["type"]}
        if name not in _SELF_EXPLAINING:
            kept["description"] = prop["description"]
        properties[name] = kept
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    if full.get("required"):
        schema["required"] = list(full["required"])
    return schema


_SELF_EXPLAINING = frozenset({"path", "content", "command", "pattern"})


TOOL_SPECS: tuple[ToolSpec, ...] = tuple(
    ToolSpec(name=name, description=_DESCRIPTIONS[name], parameters=_parameters_schema(model))
    for name, model in _ARGS_MODELS.items()
)
TOOL_NAMES: frozenset[str] = frozenset(_ARGS_MODELS)


def tool_specs(*, read_only: bool = False) -> list[ToolSpec]:
    """The specs to offer a model: all five, or the read-only subset for a grader."""
    return [spec for spec in TOOL_SPECS if not read_only or spec.name in READ_ONLY_TOOLS]


# -- dispatch -------------------------------------------------------------------------------


def dispatch(
    workspace: Workspace,
    call: ToolCall,
    *,
    timeout_s: float,
    read_only: bool = False,
    sandbox: SandboxPolicy = CONFINED,
    secrets: SecretValues | None = None,
) -> ToolResult:
    """Run one tool call in `workspace`. Never raises for a bad call (see module doc).

    `timeout_s` limits `run_command` (the orchestrator passes the time left, clamped);
    `read_only=True` refuses `write_file` and `run_command` (grader mode); `sandbox`
    confines `run_command` (the default: confined, no network). The result's output and
    meta come back without `secrets` (default: the harness's own, `harness.secrets`): a
    file the user left in the workspace, a name, a command's output may hold one, and the
    result goes to the record and to the model.
    """
    result = _dispatch(workspace, call, timeout_s, read_only, sandbox)
    known = harness_secrets() if secrets is None else secrets
    output = known.redact(result.output)
    meta = known.redact_json(result.meta)
    if output is result.output and meta is result.meta:
        return result
    if output != result.output or meta != result.meta:
        # The call reached a harness secret (redacted here): the runtime records it as a
        # secret reach (a boundary breach, `harness.soul`).
        meta = {**meta, "secret_redacted": True}
    return result.model_copy(update={"output": output, "meta": meta})


def _dispatch(
    workspace: Workspace,
    call: ToolCall,
    timeout_s: float,
    read_only: bool,
    sandbox: SandboxPolicy,
) -> ToolResult:
    model = _ARGS_MODELS.get(call.name)
    if model is None:
        known = ", ".join(_ARGS_MODELS)
        return _failure(
            call, f"unknown tool {show_path(call.name)}; tools: {known}", "unknown_tool"
        )
    if read_only and call.name not in READ_ONLY_TOOLS:
        return _failure(call, f"{call.name} is not available in read-only mode", "read_only")
    if not isinstance(call.arguments, dict):  # only reachable via model_construct
        return _failure(call, f"arguments for {call.name} must be an object", "bad_arguments")
    try:
        args = model.model_validate(call.arguments)
    except ValidationError as exc:
        return _failure(call, _describe_validation(call.name, model, exc), "bad_arguments")
    try:
        output, meta = _execute(workspace, args, timeout_s, sandbox)
    except ToolError as exc:
        return _failure(call, exc.message, exc.kind)
    except FileNotFoundError:
        return _failure(call, f"{call.name}: no such file or directory", "not_found")
    except OSError as exc:
        # strerror only: str(exc) would carry absolute host paths.
        return _failure(
            call, f"{call.name} failed: {exc.strerror or type(exc).__name__}", "os_error"
        )
    except ValueError as exc:
        # Safety net for input the checks above missed (an OS call refusing a string):
        # a bad call must come back as a result, never as an exception.
        return _failure(call, f"{call.name} failed: {exc}", "invalid")
    return ToolResult(name=call.name, ok=True, output=output, meta=meta, id=call.id)


def _execute(
    workspace: Workspace, args: _Args, timeout_s: float, sandbox: SandboxPolicy
) -> tuple[str, dict[str, Any]]:
    match args:
        case ReadFileArgs():
            return read_file(workspace, args.path)
        case WriteFileArgs():
            return write_file(workspace, args.path, args.content)
        case ListFilesArgs():
            return list_files(workspace, args.path)
        case GrepArgs():
            return grep(workspace, args.pattern, args.path, min(timeout_s, GREP_TIMEOUT_S))
        case RunCommandArgs():
            return run_command(workspace, args.command, timeout_s=timeout_s, sandbox=sandbox)
    raise AssertionError(f"no implementation for {type(args).__name__}")


def _failure(call: ToolCall, message: str, kind: ToolErrorKind) -> ToolResult:
    return ToolResult(name=call.name, ok=False, output=message, meta={"error": kind}, id=call.id)


def _describe_validation(name: str, model: type[_Args], exc: ValidationError) -> str:
    problems: list[str] = []
    for error in exc.errors():
        field = ".".join(str(part) for part in error["loc"]) or "arguments"
        match error["type"]:
            case "missing":
                problems.append(f"missing required argument '{field}'")
            case "extra_forbidden":
                problems.append(f"unexpected argument {show_path(field)}")
            case "string_type":
                problems.append(f"argument '{field}' must be a string")
            case "model_type" | "dict_type":
                problems.append("arguments must be a JSON object")
            case _:
                problems.append(f"argument '{field}': {error['msg']}")
    expected = ", ".join(
        f"{key}{'' if field.is_required() else '?'}" for key, field in model.model_fields.items()
    )
    return f"bad arguments for {name}: {'; '.join(problems)} (expected: {expected})"


# -- the tools ----------------------------------------------------------------------------
# Each returns (output text, meta) or raises ToolError/OSError; dispatch turns those into
# results. They are public so harness code (e.g. evidence collection) can call them.


def read_file(workspace: Workspace, path: str) -> tuple[str, dict[str, Any]]:
    with workspace.locate(path) as found:
        if found.lstat() is None:
            raise ToolError(f"{show_path(path)} does not exist", "not_found")
        rel = found.rel
        with os.fdopen(_open_regular(found, path, workspace.link_index()), "rb") as handle:
            size = os.fstat(handle.fileno()).st_size
            data = handle.read(MAX_READ_BYTES)
    truncated = size > len(data)
    meta: dict[str, Any] = {"path": rel, "bytes": size, "truncated": truncated, "binary": False}
    if b"\x00" in data[:_BINARY_SNIFF_BYTES]:
        meta["binary"] = True
        return f"[binary file: {size} bytes; not shown]", meta
    # final=False drops a multi-byte character cut in half by the cap.
    text = codecs.getincrementaldecoder("utf-8")(errors="replace").decode(data, final=not truncated)
    if truncated:
        text += f"\n[truncated: showing the first {len(data)} of {size} bytes]"
    return text, meta


def write_file(workspace: Workspace, path: str, content: str) -> tuple[str, dict[str, Any]]:
    """Create or replace a file: the bytes go to a new file made beside the target
    (`O_CREAT | O_EXCL | O_NOFOLLOW`, in the parent's descriptor), which is then renamed
    over the target's name. A symlink swapped in at the target meanwhile is replaced, never
    written through; parent folders are made one by one, never through a symlink (see
    `harness.workspace.folder`)."""
    data = _utf8(content, "content")
    if len(data) > MAX_WRITE_BYTES:
        raise ToolError(
            f"content is {len(data)} bytes; the limit is {MAX_WRITE_BYTES}", "too_large"
        )
    if not checked_parts(path):
        raise ToolError("the path names the workspace root, not a file", "invalid")
    with workspace.locate(path, follow_last=False, missing="create") as found:
        old = writable_target(found, path)
        assert found.name is not None  # writable_target refuses the root
        rel = found.rel
        mode = stat.S_IMODE(old.st_mode) & 0o777 if old is not None else 0o644
        temp = f".ilh-write-{token_hex(8)}.tmp"
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
        fd = os.open(temp, flags, 0o600, dir_fd=found.dir_fd)
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
                os.fchmod(handle.fileno(), mode)
                inherit_owner(found.dir_fd, fd=handle.fileno())
            os.rename(temp, found.name, src_dir_fd=found.dir_fd, dst_dir_fd=found.dir_fd)
        except BaseException as exc:
            with contextlib.suppress(OSError):
                os.unlink(temp, dir_fd=found.dir_fd)
            if isinstance(exc, IsADirectoryError):
                raise ToolError(f"{show_path(path)} is a directory") from None
            raise
    created = old is None
    verb = "created" if created else "replaced"
    return f"{verb} {rel} ({len(data)} bytes)", {
        "path": rel,
        "bytes": len(data),
        "created": created,
    }


def list_files(workspace: Workspace, path: str = ".") -> tuple[str, dict[str, Any]]:
    with workspace.locate(path) as found:
        st = found.lstat()
        if st is None:
            raise ToolError(f"{show_path(path)} does not exist", "not_found")
        rel = found.rel
        if not stat.S_ISDIR(st.st_mode):
            return rel, {"path": rel, "entries": 1, "truncated": False}
        lines: list[str] = []
        truncated = False
        for entry in workspace.walk_located(found):
            if len(lines) >= MAX_LIST_ENTRIES:
                truncated = True
                break
            if entry.kind == "dir":
                lines.append(entry.rel + "/")
            elif entry.kind == "link":
                lines.append(f"{entry.rel} -> {_link_text(entry.dir_fd, entry.name)}")
            else:
                lines.append(entry.rel)
    meta = {"path": rel, "entries": len(lines), "truncated": truncated}
    if not lines:
        return f"(no files under {rel})", meta
    if truncated:
        lines.append(f"[listing capped at {MAX_LIST_ENTRIES} entries; narrow it with path]")
    return "\n".join(lines), meta


def grep(
    workspace: Workspace, pattern: str, path: str = ".", timeout_s: float = GREP_TIMEOUT_S
) -> tuple[str, dict[str, Any]]:
    if len(pattern) > MAX_GREP_PATTERN_CHARS:
        raise ToolError(f"pattern is longer than {MAX_GREP_PATTERN_CHARS} characters")
    try:
        re.compile(pattern)
    except re.error as exc:
        raise ToolError(f"invalid regular expression: {exc}", "invalid") from exc
    links = workspace.link_index()
    names: list[str] = []  # the files whose text was sent to the matcher, in order
    skipped = 0
    capped = False

    def texts(files: Iterator[tuple[str, int, str]]) -> Iterator[str]:
        nonlocal skipped, capped
        for rel, dir_fd, name in files:
            if len(names) >= MAX_GREP_FILES:
                capped = True
                return
            text = _text_for_grep(dir_fd, name, links)
            if text is None:
                skipped += 1
                continue
            names.append(rel)
            yield text

    with workspace.locate(path) as found:
        st = found.lstat()
        if st is None:
            raise ToolError(f"{show_path(path)} does not exist", "not_found")
        if stat.S_ISDIR(st.st_mode):
            files: Iterator[tuple[str, int, str]] = (
                (e.rel, e.dir_fd, e.name) for e in workspace.walk_located(found) if e.kind == "file"
            )
        else:
            assert found.name is not None
            files = iter([(found.rel, found.dir_fd, found.name)])
        try:
            result = search(
                pattern,
                texts(files),
                cap=MAX_GREP_MATCHES,
                line_chars=MAX_GREP_LINE_CHARS,
                timeout_s=timeout_s,
            )
        except MatchTimeout as exc:
            raise ToolError(f"{exc}; simplify the pattern or narrow the path", "timeout") from None
    matches = [f"{names[index]}:{number}:{shown}" for index, number, shown in result.lines]
    matched_files: list[str] = []  # exact names: `rel:n:` in the output is ambiguous
    for index, _, _ in result.lines:
        if not matched_files or matched_files[-1] != names[index]:
            matched_files.append(names[index])
    scanned = len(names)
    truncated = result.more or capped
    meta = {
        "matches": len(matches),
        "matched_files": matched_files,
        "files_scanned": scanned,
        "files_skipped": skipped,
        "truncated": truncated,
    }
    if truncated:
        matches.append(
            f"[output capped ({MAX_GREP_MATCHES} matches or {MAX_GREP_FILES} files); "
            "narrow the pattern or path]"
        )
    return ("\n".join(matches) if matches else "(no matches)"), meta


def run_command(
    workspace: Workspace, command: str, *, timeout_s: float, sandbox: SandboxPolicy = CONFINED
) -> tuple[str, dict[str, Any]]:
    if not command.strip():
        raise ToolError("command is empty")
    if len(command) > MAX_COMMAND_CHARS:
        raise ToolError(f"command is longer than {MAX_COMMAND_CHARS} characters", "too_large")
    if "\x00" in command:
        raise ToolError("command contains a NUL byte")
    _utf8(command, "command")
    if not math.isfinite(timeout_s) or timeout_s <= 0:
        raise ToolError("no time is left in the budget to run a command", "no_time")
    try:
        result = run_shell(command, workspace.root, timeout_s, sandbox=sandbox)
    except SandboxUnavailable as exc:
        raise ToolError(f"run_command refused: {exc}", "no_sandbox") from None
    output = result.output if result.output else "(no output)"
    if not output.endswith("\n"):
        output += "\n"
    if result.timed_out:
        output += (
            f"[timed out after {timeout_s:g}s; the command and its child processes were killed]"
        )
    else:
        output += f"[exit code: {result.exit_code}]"
    meta = {
        "exit_code": result.exit_code,
        "timed_out": result.timed_out,
        "duration_s": result.duration_s,
        "truncated": result.truncated,
        "output_bytes": result.output_bytes,
        "sandbox": result.sandbox,
    }
    return output, meta


# -- helpers --------------------------------------------------------------------------------


def _utf8(text: str, what: str) -> bytes:
    """`text` as UTF-8; lone surrogates (possible in JSON strings) are refused, not
    silently replaced."""
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ToolError(f"{what} is not valid Unicode text (lone surrogate)") from exc


def _open_regular(found: Located, shown: str, links: LinkIndex) -> int:
    """Open the file `found` names for reading and return the descriptor, refusing
    anything but a regular file, and a file with hard links outside the workspace.

    O_NOFOLLOW: the walk followed every symlink itself; one swapped in since is not
    followed. O_NONBLOCK: opening a FIFO the agent planted must not hang the harness (it
    has no effect on regular files).
    """
    try:
        fd = found.open(os.O_RDONLY | os.O_NONBLOCK)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise ToolError(f"{show_path(shown)} changed while it was being opened") from None
        raise
    try:
        st = os.fstat(fd)
        if stat.S_ISDIR(st.st_mode):
            raise ToolError(f"{show_path(shown)} is a directory; use list_files")
        if not stat.S_ISREG(st.st_mode):
            raise ToolError(f"{show_path(shown)} is not a regular file")
        if not links.all_inside(st):
            raise ToolError(
                f"{show_path(shown)} has hard links that are not in the workspace; refusing "
                "to read through it",
                "path_escape",
            )
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _text_for_grep(dir_fd: int, name: str, links: LinkIndex) -> str | None:
    """The file's text, or None when it is too large, binary, unreadable, not regular, or
    hard-linked to a file outside the workspace."""
    found = Located(dir_fd, name, ())
    try:
        with os.fdopen(_open_regular(found, name, links), "rb") as handle:
            if os.fstat(handle.fileno()).st_size > MAX_GREP_FILE_BYTES:
                return None
            data: bytes = handle.read(MAX_GREP_FILE_BYTES + 1)
    except (OSError, ToolError):
        return None
    if len(data) > MAX_GREP_FILE_BYTES or b"\x00" in data[:_BINARY_SNIFF_BYTES]:
        return None
    return data.decode("utf-8", errors="replace")


def _link_text(dir_fd: int, name: str) -> str:
    try:
        return os.readlink(name, dir_fd=dir_fd)
    except OSError:
        return "?"
