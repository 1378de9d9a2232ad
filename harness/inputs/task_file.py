"""The task file (`task.toml`, DESIGN §5): validated by pydantic, unknown keys rejected."""

from __future__ import annotations

import os
import re
import shlex
import tomllib
from pathlib import Path
from typing import Annotated, Any, Literal, Self

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from harness.inputs.bounds import MAX_ROUNDS, MAX_TIME_SECONDS, MAX_TOKENS
from harness.inputs.durations import parse_duration
from harness.inputs.errors import (
    BOM,
    BOM_MESSAGE,
    NUMBER_TOO_LONG,
    TOO_DEEP,
    InputError,
    read_utf8,
)
from harness.inputs.keys import UNKNOWN, first_error, meant, table_keys
from harness.inputs.sizes import parse_size

_TOML_POSITION = re.compile(r"\(at line (\d+), column (\d+)\)")
WEIGHT_TOLERANCE = 1e-9


class Strict(BaseModel):
    # Numbers are `strict=True` field by field: pydantic's lax mode took `limit = "6"` and
    # `limit = true` (one round) for numbers; the text fields already refuse a number.
    model_config = ConfigDict(extra="forbid", frozen=True, str_strip_whitespace=False)


#: The patterns of names in a task file (`_PATTERN_WORDS` says each in words).
_TASK_ID = r"^[A-Za-z0-9][A-Za-z0-9_.\-]{0,63}$"
_CRITERION_ID = r"^[A-Za-z_][A-Za-z0-9_]{0,63}$"
_CHECKS_NAME = r"^[A-Za-z0-9_.][A-Za-z0-9_.\-/]*$"
_MODEL_URI = r"^(anthropic|openai|local|scripted|replay):.+$"

# `json_schema_input_type` (in `Seconds`, `Bytes`): the JSON Schema (`ilh schema task`)
# accepts what people write ("90s", "2GiB"), not only the number the validator makes of it.
SingleLine = Annotated[str, Field(min_length=1, pattern=r"^[^\r\n\x00-\x08\x0b-\x1f]*$")]


class TaskSection(Strict):
    id: str = Field(pattern=_TASK_ID)
    objective: str = Field(min_length=1)
    accept: str | None = None
    done_when: str | None = None
    non_goals: str | None = None
    data: str | None = None
    workspace: str | None = None


_RESERVES = ("reserve_audit", "reserve_summary")

#: The validation context key that holds `used` (and used + reserves) within the limit:
#: set by `parse_task` for a file a person hands to `ilh`, unless `overrun=True` (the
#: conformance suite's narrated starts, a resumed run's recorded task). A `TaskFile` built
#: in code without it may start from an overrun, a state the runtime handles (it stops at
#: once with `reason:budget`) and its property tests generate.
CHECK_USED = "check_used"


_USED_HELP = (
    "usage already spent (a resumed task); with the reserves, at most the limit "
    "(used equal to the limit is an exhausted budget: the run stops at once)"
)
_RESERVE_HELP = "set aside inside the limit; used + reserves is at most the limit"


def _checks_used(info: ValidationInfo) -> bool:
    return bool((info.context or {}).get(CHECK_USED))


def used_within_limit(value: float, info: ValidationInfo) -> float:
    """`used` past the limit is a state no run of this file can be in: the run stopped
    before round 1 without saying the file was wrong. Equal to the limit stays allowed
    (an exhausted budget ends the run at once with `reason:budget`, DESIGN §5)."""
    limit = info.data.get("limit")
    if limit is None or not _checks_used(info):  # a bad limit is reported on its own
        return value
    if float(value) > limit:
        raise ValueError(
            f"used {float(value):g} is more than limit {limit:g}: a budget cannot have "
            "spent more than its limit (used equal to the limit is an exhausted budget)"
        )
    return value


def reserves_within_limit(value: float, info: ValidationInfo) -> float:
    """The reserves are pools set aside inside `limit` (the ledger's remaining is limit −
    used − reserve_audit − reserve_summary): pools larger than what is left of the limit
    are a mistake no run can have made, and the run would stop before round 1 without
    saying why. Checked key by key, so the error names the key where the sum passed the
    limit; reaching it exactly stays allowed, as `limit = 0` is.

    Without `CHECK_USED` (the conformance suite's narrated overruns, exec-0003: used +
    reserves past the limit) `used` is left out of the sum: the reserves alone must fit."""
    limit = info.data.get("limit")
    name = info.field_name
    if limit is None or name is None:  # the limit itself was bad: that error is reported
        return value
    before = (*(("used",) if _checks_used(info) else ()), *_RESERVES[: _RESERVES.index(name)])
    if any(key not in info.data for key in before):
        return value  # an earlier key was bad: that error is reported
    total = sum(float(info.data[key]) for key in before) + float(value)
    if total > limit:
        counted = " + ".join([*(k for k in before if info.data[k]), name])
        shown = f"{name} {total:g}" if counted == name else f"{counted} = {total:g}"
        raise ValueError(
            f"{shown} is more than limit {limit:g}: the reserves are set aside inside the "
            "limit (the run would stop before round 1)"
        )
    return value


def _count(bound: int, text: str, default: int | None = None) -> Any:
    if default is None:
        return Field(ge=0, le=bound, strict=True, description=text)
    return Field(default=default, ge=0, le=bound, strict=True, description=text)


class CountBudget(Strict):
    """Tokens (and the base of rounds): every amount at most 10^12."""

    limit: int = _count(MAX_TOKENS, "at most 10^12")
    used: int = _count(MAX_TOKENS, _USED_HELP, 0)
    reserve_audit: int = _count(MAX_TOKENS, _RESERVE_HELP, 0)
    reserve_summary: int = _count(MAX_TOKENS, _RESERVE_HELP, 0)

    _used_within_limit = field_validator("used")(used_within_limit)
    _reserves_within_limit = field_validator(*_RESERVES)(reserves_within_limit)


class RoundsBudget(CountBudget):
    """Rounds: every amount at most 10^6 (a round is at least one model call)."""

    limit: int = _count(MAX_ROUNDS, "at most 10^6")
    used: int = _count(MAX_ROUNDS, _USED_HELP, 0)
    reserve_audit: int = _count(MAX_ROUNDS, _RESERVE_HELP, 0)
    reserve_summary: int = _count(MAX_ROUNDS, _RESERVE_HELP, 0)


_TIME_HELP = f"seconds, or a string like '300s', '5m', '2h'; at most {MAX_TIME_SECONDS} (a year)"


def budget_seconds(value: object) -> float:
    """A time budget's amount: a duration (`parse_duration`) of at most a year."""
    seconds = parse_duration(value)
    if seconds > MAX_TIME_SECONDS:
        raise ValueError(f"at most {MAX_TIME_SECONDS} seconds (a year), not {value!r}")
    return seconds


# The bound is checked in `budget_seconds` and shown on the number branch of the schema
# (a constraint on the float itself came out as `ge`/`le`, no JSON Schema keyword).
Seconds = Annotated[
    float,
    BeforeValidator(
        budget_seconds,
        json_schema_input_type=Annotated[float, Field(ge=0, le=MAX_TIME_SECONDS)] | str,
    ),
]


class TimeBudget(Strict):
    limit: Seconds = Field(description=_TIME_HELP)
    used: Seconds = Field(default=0.0, description=_USED_HELP)
    reserve_audit: Seconds = Field(default=0.0, description=_RESERVE_HELP)
    reserve_summary: Seconds = Field(default=0.0, description=_RESERVE_HELP)

    _used_within_limit = field_validator("used")(used_within_limit)
    _reserves_within_limit = field_validator(*_RESERVES)(reserves_within_limit)


class BudgetSection(Strict):
    rounds: RoundsBudget | None = None
    tokens: CountBudget | None = None
    time: TimeBudget | None = None


_CHECKS_REF = re.compile(r"\$\{?ILH_CHECKS\}?(?![A-Za-z0-9_])|/ilh-checks")


#: pytest options whose value is a path (`--rootdir=/`, `-c /etc/x.ini`): checked as the
#: paths the selection names are. The other options taking a value (`-k EXPR`, `-p NAME`)
#: are skipped with it, so an expression is never read as a path.
_PYTEST_PATH_OPTIONS = frozenset({
    "-c", "--config-file", "--rootdir", "--confcutdir", "--basetemp", "--ignore",
    "--ignore-glob", "--deselect", "--junitxml", "--junit-xml", "--log-file", "--cov",
})  # fmt: skip
_PYTEST_OTHER_VALUE_OPTIONS = frozenset({
    "-k", "-m", "-p", "-o", "-W", "-r", "-n", "--tb", "--durations", "--durations-min",
    "--maxfail", "--import-mode", "--log-level", "--log-format", "--capture", "--color",
    "--code-highlight", "--junit-prefix", "--override-ini", "--debug", "--pythonwarnings",
    "--cov-report", "--numprocesses", "--timeout", "--log-cli-level",
})  # fmt: skip


def _selection_paths(kind: str, text: str) -> list[str]:
    """The paths a `pytest`/`unittest` selection names (ValueError: not shell words)."""
    try:
        words = shlex.split(text)
    except ValueError as err:  # the grader splits it the same way, mid-grading
        raise ValueError(f"{kind} is not shell words: {err}") from None
    if kind == "unittest":
        return words
    paths: list[str] = []
    value_of: str | None = None
    for word in words:
        if value_of is not None:
            if value_of in _PYTEST_PATH_OPTIONS:
                paths.append(word)
            value_of = None
        elif word.startswith("-"):
            name, eq, value = word.partition("=")
            if name in _PYTEST_PATH_OPTIONS and eq:
                paths.append(value)
            elif not eq and (name in _PYTEST_PATH_OPTIONS or name in _PYTEST_OTHER_VALUE_OPTIONS):
                value_of = name
        else:
            paths.append(word)
    return paths


def _outside(path: str) -> bool:
    """Does `path` leave the graded tree: absolute (other than the hidden checks, mounted
    at `/ilh-checks`) or stepping up with `..`?"""
    bare = path.split("::", 1)[0]
    if bare.startswith("/") and not _CHECKS_REF.match(bare):
        return True
    return ".." in re.split(r"[/\\]", bare)


class Criterion(Strict):
    """A rubric row. Its check is at most one of: `run` (a free command), `pytest` (the
    arguments of a pytest run: paths, options) or `unittest` (a folder to discover, or a
    module, file or test name), which the harness runs itself and judges by the
    runner's report; none: model-judged."""

    id: str = Field(pattern=_CRITERION_ID)
    weight: float = Field(ge=0, le=1, strict=True)
    check: SingleLine
    run: str | None = Field(default=None, min_length=1)
    pytest: SingleLine | None = None
    unittest: SingleLine | None = None

    @field_validator("run", "pytest", "unittest")
    @classmethod
    def _run_tests_something(cls, run: str | None) -> str | None:
        # A blank command exits 0: it would pass a check that tests nothing.
        if run is not None and not run.strip():
            raise ValueError("a check command may not be blank")
        return run

    @field_validator("pytest", "unittest")
    @classmethod
    def _selection_inside(cls, text: str | None, info: ValidationInfo) -> str | None:
        # The runner runs inside the grader's sandbox, in the grading tree: a path outside
        # it (`/etc`, `../x`) is not the task's tests, and only failed there, at grading,
        # after the whole run. Refused here, naming the criterion.
        if text is None or info.field_name is None:
            return text
        for path in _selection_paths(info.field_name, text):
            if _outside(path):
                raise ValueError(
                    f"criterion {info.data.get('id', '?')}: {info.field_name} names "
                    f"{path!r}, outside the workspace; name tests inside it (relative, no "
                    "'..') or in the hidden checks ($ILH_CHECKS)"
                )
        return text

    @model_validator(mode="after")
    def _one_check(self) -> Self:
        if sum(v is not None for v in (self.run, self.pytest, self.unittest)) > 1:
            raise ValueError("a criterion has at most one of run, pytest and unittest")
        if self.unittest is not None and len(self.unittest.split()) != 1:
            raise ValueError("unittest names one folder, module, file or test")
        return self

    @property
    def uses_checks(self) -> bool:
        """Does its check use the hidden checks folder (`$ILH_CHECKS`)?"""
        text = self.run or self.pytest or self.unittest or ""
        return bool(_CHECKS_REF.search(text))


class RubricSection(Strict):
    threshold: float = Field(ge=0, le=1, strict=True)
    mode: Literal["weighted"] = "weighted"
    criteria: list[Criterion] = Field(min_length=1)
    #: Hidden checks: a folder beside task.toml, never copied into the workspace, seen
    #: only by the checks that name `$ILH_CHECKS`, read-only, in the grader's sandbox.
    checks: str | None = Field(default=None, pattern=_CHECKS_NAME)

    @field_validator("checks")
    @classmethod
    def _checks_inside(cls, checks: str | None) -> str | None:
        if checks is not None and (".." in checks.split("/") or checks.strip("/") in ("", ".")):
            raise ValueError("checks names a folder beside task.toml (no '..', not '.')")
        return checks

    @model_validator(mode="after")
    def _weights_and_ids(self) -> Self:
        ids = [c.id for c in self.criteria]
        if len(set(ids)) != len(ids):
            raise ValueError("criterion ids must be unique")
        total = sum(c.weight for c in self.criteria)
        if abs(total - 1.0) > WEIGHT_TOLERANCE:
            raise ValueError(f"criterion weights sum to {total:g}, not 1 (v4.0 §5)")
        if self.checks is None:
            for c in self.criteria:
                if c.uses_checks:
                    raise ValueError(
                        f"criterion {c.id} uses $ILH_CHECKS, but [rubric] names no "
                        'checks folder (checks = "…")'
                    )
        return self


class InitialSection(Strict):
    state: Literal["running", "stopped"]
    reason: SingleLine | None = None

    @model_validator(mode="after")
    def _stopped_has_reason(self) -> Self:
        if self.state == "stopped" and self.reason is None:
            raise ValueError("a stopped start state needs a reason (e.g. user_pause)")
        if self.state == "running" and self.reason is not None:
            raise ValueError("only a stopped start state takes a reason")
        return self


class AgentSection(Strict):
    model: str | None = Field(default=None, pattern=_MODEL_URI)
    #: The agent's SOUL file (SPEC-v5.0 Part IV): its GENEs, carried from run to run.
    #: Relative to the task folder; never inside the workspace template (see `soul_path`).
    soul: SingleLine | None = None


Bytes = Annotated[int, BeforeValidator(parse_size, json_schema_input_type=int | str)]


#: Upper bounds of the sandbox's limits. Above 2^64 `setrlimit` fails inside the sandbox's
#: start (a traceback in the middle of a run); a CPU limit near 2^62 is taken by the
#: kernel as already spent (every command killed at once). 1 PiB and 2^31-1 seconds (68
#: years) are far beyond any machine, and were tried to work.
MAX_SANDBOX_BYTES = 1 << 50
MAX_CPU_SECONDS = (1 << 31) - 1


class SandboxSection(Strict):
    """`[sandbox]`: how the agent's and the grader's commands are confined. A task file
    can open the network (`network = "host"`, recorded and shown) and set limits; it
    cannot turn the sandbox off: only the person running `ilh` can, with
    `--sandbox none`."""

    network: Literal["none", "host"] = "none"
    processes: int | None = Field(default=None, ge=8, le=65536, strict=True)
    file_size: Bytes | None = Field(default=None, ge=1024 * 1024, le=MAX_SANDBOX_BYTES)
    open_files: int | None = Field(default=None, ge=32, le=1 << 20, strict=True)
    cpu_seconds: int | None = Field(default=None, ge=1, le=MAX_CPU_SECONDS, strict=True)
    memory: Bytes | None = Field(default=None, ge=64 * 1024 * 1024, le=MAX_SANDBOX_BYTES)
    tmp_size: Bytes | None = Field(default=None, ge=1024 * 1024, le=MAX_SANDBOX_BYTES)
    disk: Bytes | None = Field(default=None, ge=16 * 1024 * 1024, le=MAX_SANDBOX_BYTES)


class HandoffSection(Strict):
    """`[handoff]`: dispatch only a certified handoff. `certificate` names an `ilh certify`
    certificate; the task's objective (or `file`, when given) must be exactly the record
    it certifies (`harness.certify.check.bind_handoff`)."""

    certificate: str = Field(min_length=1)
    file: str | None = Field(default=None, min_length=1)
    # The rigor the dispatch demands (DIYLISIS Rule 9, the Certified tier: a label claims
    # exactly its realization's rigor). Named as the certificate names it (`verdict.
    # realization`), so the demand and the certificate read alike; it is the weakest rung
    # of the ladder accepted: "refuter-subagent" refuses a generic subagent's and a
    # lint-fallback's certificate, "generic-subagent" a lint-fallback's. Absent: any.
    realization: Literal["refuter-subagent", "generic-subagent", "lint-fallback"] | None = Field(
        default=None,
        description="the weakest F5 realization the handoff's certificate may have been "
        "issued under (refuter-subagent > generic-subagent > lint-fallback); absent: any",
    )


class TaskFile(Strict):
    task: TaskSection
    budget: BudgetSection = BudgetSection()
    rubric: RubricSection | None = None
    initial: InitialSection | None = None
    agent: AgentSection | None = None
    sandbox: SandboxSection | None = None
    handoff: HandoffSection | None = None

    @field_validator("budget", mode="before")
    @classmethod
    def _budget_table(cls, value: Any) -> Any:
        return {} if value is None else value


class Task(BaseModel):
    """A validated task file and the folder its relative paths start from."""

    model_config = ConfigDict(frozen=True)

    spec: TaskFile
    folder: Path
    source: Path | None = None
    text: str | None = None
    """The file's content exactly as it was parsed: what the run record keeps, so that a
    resumed run rebuilds this task and never re-reads a file that may have changed."""

    @property
    def id(self) -> str:
        return self.spec.task.id

    def workspace_template(self) -> Path | None:
        name = self.spec.task.workspace
        if name is None:
            return None
        return self._folder_inside(name, "workspace folder", ("task", "workspace"))

    def _folder_inside(self, name: str, what: str, key: tuple[str, str]) -> Path:
        """`name` resolved against the task folder, which it may not leave: a template of
        `../../../etc` would copy the host's files (as the harness reads them) into the
        agent's workspace. It must be a folder there. Each refusal is at `key`'s line."""
        folder = self.folder.resolve()
        path = (folder / name).resolve()
        where = self.source or self.folder
        line = locate(self.text or "", key)
        if path != folder and folder not in path.parents:
            raise InputError(
                where,
                "E303",
                f"{what} {name!r} is outside the task folder {str(folder)!r}; it must be "
                "a folder beside task.toml",
                line,
            )
        if path == folder:
            raise InputError(
                where,
                "E303",
                f"{what} {name!r} is the task folder itself (task.toml and its hidden checks "
                "would be copied); name a folder inside it",
                line,
            )
        if not path.is_dir():
            # "not found" sent the person looking for a folder that was there as a file.
            found = "is a file, not a folder" if path.exists() else f"not found (looked for {path})"
            raise InputError(where, "E500", f"{what} {name!r} {found}", line)
        return path

    def checks_folder(self) -> Path | None:
        """The hidden checks folder (`[rubric] checks`), which must exist and must not be
        the workspace template or inside it (it would be copied to the agent)."""
        rubric = self.spec.rubric
        if rubric is None or rubric.checks is None:
            return None
        where = self.source or self.folder
        path = self._folder_inside(rubric.checks, "checks folder", ("rubric", "checks"))
        template = self.workspace_template()
        if template is not None and (
            path == template or template in path.parents or path in template.parents
        ):
            raise InputError(
                where,
                "E303",
                f"checks folder {rubric.checks!r} overlaps the workspace template: hidden "
                "checks must never be copied into the agent's workspace",
                locate(self.text or "", ("rubric", "checks")),
            )
        return path

    def soul_path(self) -> Path | None:
        """The agent's SOUL file (`[agent] soul`), resolved against the task folder. A SOUL
        the agent could write is never read: one inside the workspace template (copied
        into the workspace) or the hidden checks is refused (the run's own workspace is
        checked by `harness.run.setup`)."""
        agent = self.spec.agent
        if agent is None or agent.soul is None:
            return None
        where = self.source or self.folder
        path = self.resolve(agent.soul)
        for what, name in (
            ("workspace template", self.spec.task.workspace),
            ("hidden checks folder", self.spec.rubric.checks if self.spec.rubric else None),
        ):
            if name is None:
                continue
            folder = self.resolve(name)
            if path == folder or folder in path.parents:
                raise InputError(
                    where,
                    "E303",
                    f"agent.soul {agent.soul!r} is inside the {what} {name!r}: the agent "
                    "could write it; keep the SOUL outside every workspace",
                    locate(self.text or "", ("agent", "soul")),
                )
        if path.exists() and not path.is_file():
            raise InputError(where, "E303", f"agent.soul {agent.soul!r} is not a file")
        return path

    def resolve(self, relative: str) -> Path:
        return (self.folder / relative).resolve()

    def file_beside(self, name: str, key: tuple[str, str], what: str) -> Path:
        """The file `key` names, beside the task file (DESIGN §5: a task's paths are
        relative to its folder). Absent: bad input at `key`'s line that says where it was
        looked for; the read error alone named an absolute path the person never wrote,
        and no place in the task file."""
        path = self.resolve(name)
        if Path(name).is_absolute() or os.path.lexists(path):
            return path  # an absolute path keeps the read error: it names what was typed
        raise InputError(
            self.source or self.folder,
            "E500",
            f"{'.'.join(key)}: no {what} {name!r} beside the task file (looked for {path}); "
            "paths in a task file are relative to its folder",
            locate(self.text or "", key),
        )


def toml_error(path: Path, err: tomllib.TOMLDecodeError) -> InputError:
    position = _TOML_POSITION.search(str(err))
    line, col = (int(position.group(1)), int(position.group(2))) if position else (0, 0)
    message = _TOML_POSITION.sub("", str(err)).strip()
    return InputError(path, "E300", f"TOML syntax: {message}", line, col)


def locate(text: str, loc: tuple[str | int, ...]) -> int:
    """Best-effort line of a validation error's key path in the TOML text."""
    keys = [str(part) for part in loc if isinstance(part, str)]
    if not keys:
        return 0
    lines = text.splitlines()
    start = 0
    for depth in range(len(keys) - 1, 0, -1):
        header = re.compile(rf"\s*\[\[?\s*{re.escape('.'.join(keys[:depth]))}\s*\]\]?\s*(#.*)?$")
        found = next((i for i, ln in enumerate(lines) if header.match(ln)), None)
        if found is not None:
            start = found
            break
    key = re.compile(rf"\s*\"?{re.escape(keys[-1])}\"?\s*=")
    table = re.compile(rf"\s*\[\[?\s*{re.escape('.'.join(keys))}\s*\]\]?")
    for i in range(start, len(lines)):
        if key.match(lines[i]) or table.match(lines[i]):
            return i + 1
    return start + 1 if start else 0


def validation_error(path: Path, text: str, err: ValidationError) -> InputError:
    first = first_error(err.errors())
    loc = tuple(first["loc"])
    dotted = ".".join(str(p) for p in loc) or "(top level)"
    kind = first["type"]
    code = "E301" if kind.endswith(("_type", "_parsing")) else "E303"
    message = first["msg"].removeprefix("Value error, ")
    if kind == "string_pattern_mismatch":
        pattern = str((first.get("ctx") or {}).get("pattern", ""))
        message = _PATTERN_WORDS.get(pattern, message)
    if kind == UNKNOWN:
        message = f"unknown key; {_instead(loc)} (task files reject keys DESIGN §5 does not define)"
    elif kind == "missing":
        message = "required key missing"
    return InputError(path, code, f"{dotted}: {message}", locate(text, loc))


#: What each pattern of the task file's schema asks for, in words: pydantic's message
#: quoted the regular expression ("String should match pattern '^[A-Za-z0-9]…'").
_PATTERN_WORDS = {
    _TASK_ID: (
        "a task id is 1 to 64 letters, digits, '_', '.' or '-', starting with a letter or "
        "a digit (no spaces)"
    ),
    _CRITERION_ID: (
        "a criterion id is 1 to 64 letters, digits or '_', not starting with a digit (no "
        "spaces, no '-')"
    ),
    _MODEL_URI: (
        "a model URI is SCHEME:NAME, SCHEME one of anthropic, openai, local, scripted, "
        "replay (e.g. scripted:agent.jsonl)"
    ),
    _CHECKS_NAME: ("a checks folder is a relative path of letters, digits, '_', '.', '-' and '/'"),
}


def _instead(loc: tuple[str | int, ...]) -> str:
    """What to write instead of the unknown key at the end of `loc`."""
    keys = table_keys(TaskFile, loc) or []
    close = meant(str(loc[-1]), keys)
    if close is not None:
        return f"did you mean {close!r}?"
    table = ".".join(str(part) for part in loc[:-1] if isinstance(part, str))
    if not table:
        return f"a task file takes {', '.join(f'[{k}]' for k in keys)}"
    return f"[{table}] takes {', '.join(keys)}"


def parse_toml(text: str, path: Path) -> dict[str, Any]:
    """`text` as TOML; `InputError` (E300) with its place when it is not TOML."""
    if text.startswith(BOM):
        raise InputError(path, "E300", BOM_MESSAGE, 1, 1)
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise toml_error(path, err) from None
    except RecursionError:
        raise InputError(path, "E300", f"TOML syntax: {TOO_DEEP}") from None
    except ValueError:
        raise InputError(path, "E300", f"TOML: {NUMBER_TOO_LONG}") from None


def _nul_key(value: object, loc: tuple[str | int, ...] = ()) -> tuple[str | int, ...] | None:
    """The key path of the first string (or key) in `value` holding a NUL character."""
    if isinstance(value, str):
        return loc if "\x00" in value else None
    if isinstance(value, dict):
        for key, item in value.items():
            found = _nul_key(key, (*loc, key)) or _nul_key(item, (*loc, key))
            if found is not None:
                return found
    if isinstance(value, list):
        for index, item in enumerate(value):
            found = _nul_key(item, (*loc, index))
            if found is not None:
                return found
    return None


def parse_task(text: str, path: Path, *, overrun: bool = False) -> Task:
    """The task in `text`. `overrun`: `used` may pass the limit, for the conformance
    suite's narrated starts and a resumed run's recorded task (accepted when it started)."""
    raw = parse_toml(text, path)
    # TOML lets `"\u0000"` be written; no task value means one, and as a path (workspace,
    # soul, a scripted agent) the operating system refuses it deep inside the run setup
    # with a ValueError, which was a traceback and exit 1.
    nul = _nul_key(raw)
    if nul is not None:
        dotted = ".".join(str(part) for part in nul)
        raise InputError(
            path, "E303", f"{dotted}: holds a NUL character (\\u0000)", locate(text, nul)
        )
    try:
        spec = TaskFile.model_validate(raw, context={CHECK_USED: not overrun})
    except ValidationError as err:
        raise validation_error(path, text, err) from None
    return Task(spec=spec, folder=path.resolve().parent, source=path, text=text)


def load_task(path: Path, *, overrun: bool = False) -> Task:
    text = read_utf8(path, "the task file")
    return parse_task(text, path, overrun=overrun)
