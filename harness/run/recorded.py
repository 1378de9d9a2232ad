"""What a run records when it starts, and what `ilh run --resume` rebuilds from it.

A resumed run must be the run that was started, not whatever the files on disk say now:
an agent (or anyone) may have edited `task.toml` in between — its check turned into
`run = "true"` — or the script of a scripted agent. So the run_started event keeps
(`inputs`, covered by the hash chain and the authenticated head):

- ``task``: the task file's path, its full content as parsed and that content's sha256
  (its rubric, checks, budgets and sandbox settings are all in it);
- ``agent_script``: for a `scripted:` agent, every turn as loaded (up to
  `MAX_SCRIPT_CHARS`; beyond that the digest only, and a resume refuses a changed file).

and the run's meta keeps the model endpoint: the model URI, the base URL (`--base-url`)
and the grader model. A resume uses what was recorded; a file that changed on disk is
reported in a note (recorded and shown), never used; a flag that changes the endpoint is
used only because it was given again, and says so.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from pydantic import ValidationError

from harness.inputs.errors import InputError
from harness.inputs.task_file import Task, TaskFile, parse_task
from harness.models.interface import ModelClient
from harness.models.scripted import ScriptedClient, ScriptedTurn, load_script
from harness.record.events import Event, EventKind, canonical_json

#: Larger scripts are recorded by digest only (a scripted agent is a test fixture; a huge
#: one would bloat every copy of the record).
MAX_SCRIPT_CHARS: Final = 1_000_000

#: The NOTE payload key of the endpoint a resume used (the next resume starts from it).
ENDPOINT_NOTE: Final = "endpoint"


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def start_inputs(task: Task, client: ModelClient) -> dict[str, Any]:
    """The run_started `inputs` of a run of `task` by `client`."""
    inputs: dict[str, Any] = {"task": task_input(task)}
    if isinstance(client, ScriptedClient):
        turns = [turn.model_dump(mode="json") for turn in client.turns]
        text = canonical_json(turns)
        script: dict[str, Any] = {"name": client.name, "sha256": sha256_text(text)}
        if len(text) <= MAX_SCRIPT_CHARS:
            script["turns"] = turns
        inputs["agent_script"] = script
    return inputs


def task_input(task: Task) -> dict[str, Any]:
    if task.text is not None:
        return {
            "file": str(task.source) if task.source else None,
            "sha256": sha256_text(task.text),
            "content": task.text,
        }
    # A task built in code (the conformance suite) has no file: its validated spec is kept.
    spec = task.spec.model_dump(mode="json")
    return {
        "file": None,
        "folder": str(task.folder),
        "sha256": sha256_text(canonical_json(spec)),
        "spec": spec,
    }


# ---------------------------------------------------------------- resume: the task


@dataclass
class Rebuilt:
    """What a resume rebuilt from the record, and the notes it must record and show."""

    task: Task
    script: list[ScriptedTurn] | None = None
    notes: list[str] = field(default_factory=list)


def _refuse(run_ref: str, why: str) -> InputError:
    return InputError(run_ref, "E303", f"{why}; not resumed")


def rebuilt_task(run_ref: str, inputs: dict[str, Any]) -> Rebuilt:
    """The task as recorded when the run started, plus a note when the file on disk has
    changed (or is gone) since: the edit is never used."""
    entry = inputs.get("task")
    if not isinstance(entry, dict) or not isinstance(entry.get("sha256"), str):
        raise _refuse(
            run_ref,
            "the record holds no copy of the task (the run was started by an older ilh, "
            "which re-read task.toml on resume); start the task again",
        )
    digest = str(entry["sha256"])
    file = entry.get("file")
    content = entry.get("content")
    if isinstance(content, str):
        if sha256_text(content) != digest:
            raise _refuse(run_ref, "the recorded task does not match its recorded digest")
        where = Path(str(file)) if file else Path(run_ref)
        # A run the conformance suite started from a narrated overrun (used past the
        # limit) resumes as the task it started with.
        task = parse_task(content, where, overrun=True)
    elif isinstance(entry.get("spec"), dict):
        spec = entry["spec"]
        if sha256_text(canonical_json(spec)) != digest:
            raise _refuse(run_ref, "the recorded task does not match its recorded digest")
        try:
            parsed = TaskFile.model_validate(spec)
        except ValidationError as err:
            raise _refuse(run_ref, f"the recorded task is not valid: {err}") from None
        return Rebuilt(task=Task(spec=parsed, folder=Path(str(entry.get("folder") or "."))))
    else:
        raise _refuse(run_ref, "the record's copy of the task is unreadable")
    rebuilt = Rebuilt(task=task)
    if file:
        rebuilt.notes += _file_changed(Path(str(file)), digest, "the task file")
    return rebuilt


def _file_changed(path: Path, digest: str, what: str) -> list[str]:
    try:
        now = sha256_text(path.read_bytes().decode("utf-8", errors="replace"))
    except OSError as err:
        return [
            f"{what} {path} cannot be read now ({err.strerror or err}); the copy recorded "
            "when the run started is used"
        ]
    if now == digest:
        return []
    return [
        f"{what} {path} changed on disk since the run started (sha256 {digest[:12]}… → "
        f"{now[:12]}…); the copy recorded when the run started is used, not the edit"
    ]


def rebuilt_script(run_ref: str, inputs: dict[str, Any], task: Task, uri: str) -> Rebuilt:
    """The recorded turns of a scripted agent (when `uri` is still the recorded one)."""
    rebuilt = Rebuilt(task=task)
    entry = inputs.get("agent_script")
    scheme, _, rest = uri.partition(":")
    if scheme != "scripted" or not isinstance(entry, dict):
        return rebuilt
    digest = str(entry.get("sha256"))
    path = task.resolve(rest)
    turns = entry.get("turns")
    if isinstance(turns, list):
        try:
            script = [ScriptedTurn.model_validate(t) for t in turns]
        except ValidationError as err:
            raise _refuse(run_ref, f"the recorded agent script is not valid: {err}") from None
        if sha256_text(canonical_json(turns)) != digest:
            raise _refuse(run_ref, "the recorded agent script does not match its digest")
        rebuilt.script = script
        if _script_digest(path) != digest:
            rebuilt.notes.append(
                f"the agent script {path} changed on disk (or is gone) since the run started; "
                "the turns recorded when the run started are used, not the edit"
            )
        return rebuilt
    if _script_digest(path) != digest:  # only the digest was recorded
        raise _refuse(
            run_ref,
            f"the agent script {path} changed since the run started and the record holds "
            "only its digest (it was too large to keep)",
        )
    return rebuilt


def _script_digest(path: Path) -> str | None:
    try:
        turns = [t.model_dump(mode="json") for t in load_script(path)]
    except InputError:
        return None
    return sha256_text(canonical_json(turns))


# ------------------------------------------------------------ resume: the endpoint


@dataclass(frozen=True)
class Endpoint:
    model: str
    base_url: str | None
    grader_model: str | None

    def record(self) -> dict[str, Any]:
        return {"model": self.model, "base_url": self.base_url, "grader_model": self.grader_model}


def recorded_endpoint(meta: dict[str, Any], events: list[Event], default_model: str) -> Endpoint:
    """The endpoint the run last used: its start's meta, or the latest resume's note."""
    found: dict[str, Any] = {
        "model": meta.get("model"),
        "base_url": meta.get("base_url"),
        "grader_model": meta.get("grader_model"),
    }
    for event in reversed(events):
        note = event.payload.get(ENDPOINT_NOTE) if event.kind is EventKind.NOTE else None
        if isinstance(note, dict):
            found = note
            break
    model = found.get("model")
    base_url = found.get("base_url")
    grader = found.get("grader_model")
    return Endpoint(
        model=model if isinstance(model, str) and model else default_model,
        base_url=base_url if isinstance(base_url, str) and base_url else None,
        grader_model=grader if isinstance(grader, str) and grader else None,
    )


def _shown(value: str | None, default: str) -> str:
    return value if value else default


def chosen_endpoint(
    recorded: Endpoint, model: str | None, base_url: str | None, grader_model: str | None
) -> tuple[Endpoint, list[str]]:
    """The recorded endpoint, except where a flag was given again on resume: then the
    flag's value, with a note saying what changed."""
    notes: list[str] = []
    chosen = Endpoint(
        model=model or recorded.model,
        base_url=base_url or recorded.base_url,
        grader_model=grader_model or recorded.grader_model,
    )
    if chosen.model != recorded.model:
        notes.append(f"model changed from {recorded.model} to {chosen.model} (--model)")
    if chosen.base_url != recorded.base_url:
        default = "the provider's default endpoint"
        notes.append(
            f"endpoint changed from {_shown(recorded.base_url, default)} to "
            f"{_shown(chosen.base_url, default)} (--base-url)"
        )
    if chosen.grader_model != recorded.grader_model:
        notes.append(
            f"grader model changed from {_shown(recorded.grader_model, 'none')} to "
            f"{chosen.grader_model} (--grader-model)"
        )
    return chosen, notes


__all__ = [
    "ENDPOINT_NOTE",
    "Endpoint",
    "Rebuilt",
    "chosen_endpoint",
    "rebuilt_script",
    "rebuilt_task",
    "recorded_endpoint",
    "start_inputs",
]
