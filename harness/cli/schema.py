"""`ilh schema task|run|grade|certificate`: the JSON Schema of what users write and of
every JSON output, generated from the pydantic models that read or produce it (so a
schema cannot drift from the code)."""

from __future__ import annotations

import json
from collections.abc import Callable

import click

SchemaOf = Callable[[], dict[str, object]]


def _task() -> dict[str, object]:
    from harness.inputs.task_file import TaskFile

    return TaskFile.model_json_schema(mode="validation")


def _run() -> dict[str, object]:
    from harness.record.results import RunResult

    return RunResult.model_json_schema(mode="serialization")


def _grade() -> dict[str, object]:
    from graders.report import GradeJSON

    return GradeJSON.model_json_schema(mode="serialization")


def _certificate() -> dict[str, object]:
    from harness.certify.certificate import certificate_schema

    return certificate_schema()


SCHEMAS: dict[str, tuple[SchemaOf, str]] = {
    "task": (_task, "task.toml (as TOML parses it)"),
    "run": (_run, "`ilh run --json`"),
    "grade": (_grade, "`ilh grade --json` (DESIGN §6, exactly)"),
    "certificate": (_certificate, "`ilh certify --json` and certificate files"),
}


def schema_for(name: str) -> dict[str, object]:
    """The JSON Schema (draft 2020-12) named `name`, with its `$schema` and a title."""
    build, what = SCHEMAS[name]
    schema = dict(build())
    schema.setdefault("$schema", "https://json-schema.org/draft/2020-12/schema")
    schema.setdefault("description", f"ilang-harness: {what}")
    return schema


@click.command()
@click.argument("name", type=click.Choice(sorted(SCHEMAS)))
def schema(name: str) -> None:
    """Print the JSON Schema of NAME: task, run, grade or certificate."""
    click.echo(json.dumps(schema_for(name), indent=2, ensure_ascii=False))
